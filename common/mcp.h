/* SPDX-License-Identifier: MIT */
/*
 * common/mcp: the Model Context Protocol server (revision 2025-11-25) over the operation
 * catalog, independent of its transport: eos-mcp feeds it the lines of its stdin and writes what
 * it sends to stdout (cli/eos-mcp.c); eosd's Streamable HTTP endpoint is to feed it request
 * bodies. It speaks JSON-RPC 2.0 — initialize, notifications/initialized, ping, tools/list (paged)
 * and tools/call, notifications/cancelled — and knows no operation by name: its tools are the
 * catalog's operations of the surfaces asked for, with the schemas of common/catalog-schema.h.
 *
 * Calling sequence:
 *	struct eos_mcp_config cfg = { .surfaces = 1u << EOS_SURFACE_RUNTIME, .send = out,
 *				      .start = run, ... };
 *	eos_mcp_new(&cfg, &m, err);
 *	for each message received:  eos_mcp_handle_text(m, text, len);
 *	  → cfg.send(arg, reply) for requests (never for notifications), at once, except for
 *	    tools/call, whose checked call goes to cfg.start(arg, call); the host runs it (calls
 *	    eosd) and ends it with eos_mcp_call_finish(call, ...), which sends the result, or
 *	    nothing when the client cancelled the request. eos_mcp_call_progress() in between sends
 *	    notifications/progress when the client asked for them.
 *	wait until eos_mcp_in_flight(m) == 0, then eos_mcp_free(m).
 *
 * Locking: none inside. A host that runs calls on other threads holds one lock around every
 * eos_mcp_*() call, the eos_mcp_call_*() ones included; cfg.send is called under it (so the
 * messages it writes never interleave). Nothing here blocks.
 *
 * Errors: a malformed message is answered -32700 (not JSON) or -32600 (not a JSON-RPC request)
 * with id null when it has no usable id; an unknown method -32601; bad params of a known method,
 * an unknown tool or cursor -32602. Bad tool arguments are not protocol errors: they are a tool
 * result with isError true and the kind invalid_request, as eosd's gateway would answer, and no
 * call is made.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/catalog.h"
#include "common/error.h"

/* The revision this server speaks (and answers every initialize with). */
#define EOS_MCP_PROTOCOL_VERSION "2025-11-25"

enum {
	EOS_MCP_PAGE_SIZE = 20, /* tools per tools/list page */
	EOS_MCP_PARSE_ERROR = -32700,
	EOS_MCP_INVALID_REQUEST = -32600,
	EOS_MCP_METHOD_NOT_FOUND = -32601,
	EOS_MCP_INVALID_PARAMS = -32602,
	EOS_MCP_INTERNAL_ERROR = -32603,
};

struct eos_mcp;
/* One tools/call in flight: created by eos_mcp_handle*(), owned by m until finished. */
struct eos_mcp_call;

/* A message to the client (borrowed: serialize it before returning). */
typedef void (*eos_mcp_send_fn)(void *arg, const json_t *msg);
/* Run call (on another thread, typically); end it with eos_mcp_call_finish(), exactly once. */
typedef void (*eos_mcp_start_fn)(void *arg, struct eos_mcp_call *call);

struct eos_mcp_config {
	const char *name;	  /* serverInfo.name ("eos") */
	const char *version;	  /* serverInfo.version */
	const char *instructions; /* initialize's instructions, or NULL */
	unsigned surfaces;	  /* 1u << EOS_SURFACE_x for each surface served */
	const char *sandbox_id;	  /* every call acts on this sandbox (NULL: the caller names it) */
	unsigned page_size;	  /* tools per page; 0: EOS_MCP_PAGE_SIZE */
	eos_mcp_send_fn send;
	void *send_arg;
	eos_mcp_start_fn start;
	void *start_arg;
};

/*
 * A server for cfg (its strings are copied). With cfg->sandbox_id, the tools are the operations
 * of one sandbox (eos_catalog_op_for_one_sandbox()) without a sandbox_id property. -EINVAL for
 * an invalid sandbox id or no surface, -ENOMEM. Caller owns *ret; free with eos_mcp_free().
 */
int eos_mcp_new(const struct eos_mcp_config *cfg, struct eos_mcp **ret, struct eos_error *err);
/* Free m (NULL-safe). It is a bug to free m while calls are in flight. */
void eos_mcp_free(struct eos_mcp *m);

/* The tools served, in catalog order (borrowed: valid until eos_mcp_free()). */
const json_t *eos_mcp_tools(const struct eos_mcp *m);
/* Calls started and not finished yet. */
size_t eos_mcp_in_flight(const struct eos_mcp *m);

/* One message as text (a line of stdio, an HTTP body): parsed, then eos_mcp_handle(). */
void eos_mcp_handle_text(struct eos_mcp *m, const char *text, size_t len);
/* One parsed message (borrowed). */
void eos_mcp_handle(struct eos_mcp *m, const json_t *msg);

/* The operation called. */
const struct eos_op *eos_mcp_call_op(const struct eos_mcp_call *c);
/* Its arguments, checked by eos_catalog_validate() with the defaults filled in (borrowed). */
json_t *eos_mcp_call_args(const struct eos_mcp_call *c);
/* The sandbox it acts on, or NULL (borrowed). */
const char *eos_mcp_call_sandbox(const struct eos_mcp_call *c);
/* Whether the client gave a progressToken: eos_mcp_call_progress() sends something. */
bool eos_mcp_call_wants_progress(const struct eos_mcp_call *c);
/* Whether the client cancelled it (notifications/cancelled): stop, then finish it. */
bool eos_mcp_call_cancelled(const struct eos_mcp_call *c);

/* Send notifications/progress {progressToken, progress (1, 2, …), message} if asked for. */
void eos_mcp_call_progress(struct eos_mcp_call *c, const char *message);
/*
 * End c: send its result — ok: doc (the operation's reply, borrowed) as structuredContent and as
 * compact JSON text; else doc is the envelope {"error":{kind,message,details}}, sent as
 * structuredContent with isError and the text "kind: message" — unless c was cancelled. Frees c.
 */
void eos_mcp_call_finish(struct eos_mcp_call *c, bool ok, const json_t *doc);
/* eos_mcp_call_finish() with the envelope {"error":{kind,message}} (a failure of the host's). */
void eos_mcp_call_fail(struct eos_mcp_call *c, const char *kind, const char *message);
