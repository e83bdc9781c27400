/* SPDX-License-Identifier: MIT */
/*
 * common/catalog-schema: JSON Schemas of the operation catalog (common/catalog.h), for the MCP
 * tools (common/mcp.h) that eos-mcp serves over stdio and eosd at /mcp. Nothing here is written
 * per operation: every schema comes from the arguments' kinds, defaults, limits and help, so an
 * operation added to the catalog gets its schema at once.
 *
 * The schemas use the keywords JSON Schema draft 7 and 2020-12 share (type, properties,
 * required, additionalProperties, enum, default, minimum, maximum, minLength, maxLength, pattern,
 * minItems, maxItems, maxProperties, propertyNames), so any validator accepts them. They are a
 * description, not the check: the gateway still validates with eos_catalog_validate() (string
 * limits there count bytes, the schemas' maxLength characters).
 */
#pragma once

#include <jansson.h>

#include "common/catalog.h"

enum eos_schema_flags {
	/*
	 * The sandbox is fixed by the caller (eos-mcp --sandbox-id): no "sandbox_id" property.
	 * Without it an operation with needs_sandbox gets a required "sandbox_id", one with
	 * sandbox_optional an optional one.
	 */
	EOS_SCHEMA_SANDBOX_FIXED = 1 << 0,
};

/* The name of the property that carries a request's sandbox_id. */
#define EOS_SCHEMA_SANDBOX_PROPERTY "sandbox_id"

/*
 * The input schema of op: {"type":"object","properties":{...},"required":[...],
 * "additionalProperties":false}. Caller owns the result; NULL when out of memory.
 */
json_t *eos_catalog_input_schema(const struct eos_op *op, enum eos_schema_flags flags);

/* The schema of one argument's value (type, limits, default, help as description). */
json_t *eos_catalog_arg_schema(const struct eos_arg *arg);

/*
 * The output schema of op: an object (every reply is one), with the "trace_id" eosd adds.
 * Caller owns the result; NULL when out of memory.
 */
json_t *eos_catalog_output_schema(const struct eos_op *op);

/*
 * Whether op is offered when flags fix the sandbox: it acts on one sandbox (needs_sandbox or
 * sandbox_optional), or it is a read-only observability operation of none (ping, version).
 */
bool eos_catalog_op_for_one_sandbox(const struct eos_op *op);
