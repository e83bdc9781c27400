/* SPDX-License-Identifier: MIT */
/* common/mcp-internal: what mcp.c (messages, tools) and mcp-call.c (tools/call) share. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/mcp.h"

struct eos_mcp_call {
	struct eos_mcp *m;	   /* borrowed: it owns the call */
	struct eos_mcp_call *next; /* m->calls */
	json_t *id;		   /* the request's id (owned) */
	json_t *token;		   /* its progressToken, or NULL (owned) */
	const struct eos_op *op;
	json_t *args;	   /* owned */
	char *sandbox_id;  /* owned, or NULL */
	unsigned progress; /* notifications sent */
	bool cancelled;
};

struct eos_mcp {
	struct eos_mcp_config cfg; /* its strings point into the copies below */
	char *name, *version, *instructions, *sandbox_id;
	json_t *tools;			/* the tools/list entries, in catalog order */
	const struct eos_op **tool_ops; /* the operation of each */
	size_t ntools;
	struct eos_mcp_call *calls; /* in flight */
	size_t in_flight;
};

/* Send {"jsonrpc":"2.0","id":id,"result":result} (steals result). */
void eos_mcp_send_result(struct eos_mcp *m, const json_t *id, json_t *result);
/* Send a JSON-RPC error (id NULL: null). */
void eos_mcp_send_error(struct eos_mcp *m, const json_t *id, int code, const char *fmt, ...)
	EOS_PRINTF(4, 5);

/* tools/call: check params, then answer bad arguments at once or start the call. */
void eos_mcp_tools_call(struct eos_mcp *m, const json_t *id, const json_t *params);
/* notifications/cancelled. */
void eos_mcp_cancel(struct eos_mcp *m, const json_t *params);
