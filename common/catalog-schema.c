/* SPDX-License-Identifier: MIT */
/* common/catalog-schema: the catalog's arguments as JSON Schema (common/catalog-schema.h). */
#include "common/catalog-schema.h"

#include <stdio.h>

#include "common/cleanup.h"
#include "common/json.h"

/* An id: what check_id() of catalog.c accepts. */
static const char ID_PATTERN[] = "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$";
/* A version: L000003, L3 or 3. */
static const char VERSION_PATTERN[] = "^L?[0-9]+$";
/* An environment name (env_name_ok() of catalog.c). */
static const char ENV_NAME_PATTERN[] = "^[A-Za-z_][A-Za-z0-9_]{0,127}$";

/* {"type": type} with description help (NULL: none). */
static json_t *
typed(const char *type, const char *help)
{
	json_t *s = json_pack("{s:s}", "type", type);

	if (s && help && eos_json_set(s, "description", json_string(help)) < 0) {
		json_decref(s);
		return NULL;
	}
	return s;
}

static json_t *
edits_schema(const struct eos_arg *a)
{
	json_int_t max = a->max > 0 ? a->max : EOS_CATALOG_EDITS_MAX;
	json_t *item =
		json_pack("{s:s,s:{s:{s:s,s:i},s:{s:s},s:{s:s}},s:[ss],s:b}", "type", "object",
			  "properties", "old_string", "type", "string", "minLength", 1,
			  "new_string", "type", "string", "replace_all", "type", "boolean",
			  "required", "old_string", "new_string", "additionalProperties", 0);
	json_t *s = typed("array", a->help);

	if (!item || !s || eos_json_set(s, "items", item) < 0 ||
	    eos_json_set(s, "minItems", json_integer(1)) < 0 ||
	    eos_json_set(s, "maxItems", json_integer(max)) < 0) {
		json_decref(s);
		return NULL;
	}
	return s;
}

static json_t *
env_schema(const struct eos_arg *a)
{
	json_int_t max = a->max > 0 ? a->max : EOS_CATALOG_ENV_MAX;
	json_t *s = typed("object", a->help);

	if (!s ||
	    eos_json_set(s, "additionalProperties",
			 json_pack("{s:s,s:i}", "type", "string", "maxLength",
				   EOS_CATALOG_ENV_VALUE_MAX)) < 0 ||
	    eos_json_set(s, "propertyNames", json_pack("{s:s}", "pattern", ENV_NAME_PATTERN)) < 0 ||
	    eos_json_set(s, "maxProperties", json_integer(max)) < 0) {
		json_decref(s);
		return NULL;
	}
	return s;
}

static json_t *
enum_values(const char *const *values)
{
	json_t *arr = json_array();

	for (const char *const *v = values; arr && v && *v; v++)
		if (eos_json_push(arr, json_string(*v)) < 0) {
			json_decref(arr);
			return NULL;
		}
	return arr;
}

/* The string kinds: their length, and the pattern or values of the kinds that have one. */
static int
string_limits(const struct eos_arg *a, json_t *s)
{
	json_int_t max = a->kind == EOS_ARG_STRING && a->max > 0 ? a->max
			 : a->kind == EOS_ARG_STRING		 ? EOS_CATALOG_STRING_MAX
			 : a->kind == EOS_ARG_ID		 ? EOS_CATALOG_ID_MAX
								 : EOS_CATALOG_PATH_MAX;

	switch (a->kind) {
	case EOS_ARG_ENUM:
		return eos_json_set(s, "enum", enum_values(a->values));
	case EOS_ARG_ID:
		return eos_json_set(s, "pattern", json_string(ID_PATTERN)) < 0 ||
				       eos_json_set(s, "maxLength", json_integer(max)) < 0
			       ? -1
			       : 0;
	case EOS_ARG_VERSION:
		return eos_json_set(s, "pattern", json_string(VERSION_PATTERN));
	case EOS_ARG_HOST_PATH:
		return eos_json_set(s, "pattern", json_string("^/")) < 0 ||
				       eos_json_set(s, "maxLength", json_integer(max)) < 0
			       ? -1
			       : 0;
	case EOS_ARG_PATH:
		return eos_json_set(s, "pattern", json_string("^([^/]|$)")) < 0 ||
				       eos_json_set(s, "maxLength", json_integer(max)) < 0
			       ? -1
			       : 0;
	case EOS_ARG_STRING:
		return eos_json_set(s, "maxLength", json_integer(max));
	case EOS_ARG_INT:
	case EOS_ARG_BOOL:
	case EOS_ARG_EDITS:
	case EOS_ARG_ENV:
		break;
	}
	return 0;
}

/* The schema of a's value, without its default. */
static json_t *
value_schema(const struct eos_arg *a)
{
	json_t *s;

	switch (a->kind) {
	case EOS_ARG_EDITS:
		return edits_schema(a);
	case EOS_ARG_ENV:
		return env_schema(a);
	case EOS_ARG_BOOL:
		return typed("boolean", a->help);
	case EOS_ARG_INT:
		s = typed("integer", a->help);
		if (s && (eos_json_set(s, "minimum", json_integer(a->min)) < 0 ||
			  eos_json_set(s, "maximum", json_integer(a->max)) < 0)) {
			json_decref(s);
			return NULL;
		}
		return s;
	case EOS_ARG_STRING:
	case EOS_ARG_ENUM:
	case EOS_ARG_ID:
	case EOS_ARG_PATH:
	case EOS_ARG_HOST_PATH:
	case EOS_ARG_VERSION:
		break;
	}
	s = typed("string", a->help);
	if (s && string_limits(a, s) < 0) {
		json_decref(s);
		return NULL;
	}
	return s;
}

json_t *
eos_catalog_arg_schema(const struct eos_arg *a)
{
	json_t *s = value_schema(a);
	json_t *def;

	if (!s || !a->def)
		return s;
	def = json_loads(a->def, JSON_DECODE_ANY, NULL);
	if (!def || eos_json_set(s, "default", def) < 0) {
		json_decref(s);
		return NULL;
	}
	return s;
}

/* The "sandbox_id" property. */
static json_t *
sandbox_schema(const struct eos_op *op)
{
	return json_pack("{s:s,s:s,s:s,s:i}", "type", "string", "pattern", ID_PATTERN,
			 "description",
			 op->needs_sandbox ? "the sandbox" : "one sandbox (default: all of them)",
			 "maxLength", EOS_CATALOG_ID_MAX);
}

static int
add_property(json_t *props, json_t *required, const char *name, json_t *schema, bool req)
{
	if (!schema || json_object_set_new(props, name, schema) < 0)
		return -1;
	return req ? eos_json_push(required, json_string(name)) : 0;
}

json_t *
eos_catalog_input_schema(const struct eos_op *op, enum eos_schema_flags flags)
{
	EOS_CLEANUP(json_decrefp) json_t *props = json_object();
	EOS_CLEANUP(json_decrefp) json_t *required = json_array();
	json_t *s;

	if (!props || !required)
		return NULL;
	if (!(flags & EOS_SCHEMA_SANDBOX_FIXED) && (op->needs_sandbox || op->sandbox_optional) &&
	    add_property(props, required, EOS_SCHEMA_SANDBOX_PROPERTY, sandbox_schema(op),
			 op->needs_sandbox) < 0)
		return NULL;
	for (size_t i = 0; i < op->nargs; i++)
		if (add_property(props, required, op->args[i].name,
				 eos_catalog_arg_schema(&op->args[i]), op->args[i].required) < 0)
			return NULL;
	s = json_pack("{s:s,s:O,s:b}", "type", "object", "properties", props,
		      "additionalProperties", 0);
	if (s && json_array_size(required) > 0 && json_object_set(s, "required", required) < 0) {
		json_decref(s);
		return NULL;
	}
	return s;
}

json_t *
eos_catalog_output_schema(const struct eos_op *op)
{
	(void)op; /* the catalog knows no reply's fields yet: every one is an object */
	return json_pack("{s:s,s:{s:{s:s,s:s}}}", "type", "object", "properties", "trace_id",
			 "type", "string", "description",
			 "the request's trace (the trace operation shows it)");
}

bool
eos_catalog_op_for_one_sandbox(const struct eos_op *op)
{
	return op->needs_sandbox || op->sandbox_optional ||
	       (op->read_only && op->surface == EOS_SURFACE_OBSERVABILITY);
}
