/* SPDX-License-Identifier: MIT */
/*
 * common/mcp: JSON-RPC messages, initialize, ping and tools/list (common/mcp.h); tools/call is
 * in mcp-call.c.
 */
#include "common/mcp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/catalog-schema.h"
#include "common/cleanup.h"
#include "common/json.h"
#include "common/mcp-internal.h"

/* --- sending ---------------------------------------------------------------------------------- */

static void
send_msg(struct eos_mcp *m, json_t *msg)
{
	if (msg)
		m->cfg.send(m->cfg.send_arg, msg);
	json_decref(msg);
}

void
eos_mcp_send_result(struct eos_mcp *m, const json_t *id, json_t *result)
{
	if (!result)
		result = json_object();
	send_msg(m, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

void
eos_mcp_send_error(struct eos_mcp *m, const json_t *id, int code, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	send_msg(m, json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id",
			      id ? id : json_null(), "error", "code", code, "message", text));
}

/* --- the tools -------------------------------------------------------------------------------- */

static json_t *
annotations(const struct eos_op *op)
{
	return json_pack("{s:b,s:b,s:b,s:b}", "readOnlyHint", op->read_only, "destructiveHint",
			 op->destructive, "idempotentHint", op->idempotent, "openWorldHint", 0);
}

/* The tools/list entry of op. */
static json_t *
tool_of(const struct eos_op *op, bool fixed)
{
	json_t *in = eos_catalog_input_schema(op, fixed ? EOS_SCHEMA_SANDBOX_FIXED : 0);
	json_t *out = eos_catalog_output_schema(op);
	json_t *ann = annotations(op);

	if (!in || !out || !ann) {
		json_decref(in);
		json_decref(out);
		json_decref(ann);
		return NULL;
	}
	/* the ★ that marks eos's own operations in the catalog is no part of the description */
	return json_pack("{s:s,s:s,s:o,s:o,s:o}", "name", op->name, "description",
			 strncmp(op->help, "★ ", strlen("★ ")) == 0 ? op->help + strlen("★ ")
								    : op->help,
			 "inputSchema", in, "outputSchema", out, "annotations", ann);
}

static bool
served(const struct eos_mcp *m, const struct eos_op *op)
{
	if (!(m->cfg.surfaces & (1u << op->surface)))
		return false;
	return !m->sandbox_id || eos_catalog_op_for_one_sandbox(op);
}

static int
build_tools(struct eos_mcp *m)
{
	size_t n;
	const struct eos_op *ops = eos_catalog_ops(&n);

	if (!(m->tools = json_array()) || !(m->tool_ops = calloc(n, sizeof(*m->tool_ops))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!served(m, &ops[i]))
			continue;
		if (eos_json_push(m->tools, tool_of(&ops[i], m->sandbox_id != NULL)) < 0)
			return -ENOMEM;
		m->tool_ops[m->ntools++] = &ops[i];
	}
	return 0;
}

const json_t *
eos_mcp_tools(const struct eos_mcp *m)
{
	return m->tools;
}

size_t
eos_mcp_in_flight(const struct eos_mcp *m)
{
	return m->in_flight;
}

/* --- life ------------------------------------------------------------------------------------- */

static int
copy_str(const char *s, char **ret)
{
	*ret = NULL;
	return !s || (*ret = strdup(s)) ? 0 : -ENOMEM;
}

int
eos_mcp_new(const struct eos_mcp_config *cfg, struct eos_mcp **ret, struct eos_error *err)
{
	const struct eos_arg id = { .name = "sandbox_id", .kind = EOS_ARG_ID };
	struct eos_mcp *m;
	json_t *v;
	int r;

	if ((cfg->surfaces & ((1u << EOS_SURFACE_COUNT) - 1)) == 0)
		return eos_error_set(err, -EINVAL, "no surface to serve");
	if (cfg->sandbox_id) {
		v = json_string(cfg->sandbox_id);
		r = v ? eos_catalog_check_value(&id, v, err) : -EINVAL;
		json_decref(v);
		if (r < 0)
			return r;
	}
	if (!(m = calloc(1, sizeof(*m))))
		return eos_error_set(err, -ENOMEM, "out of memory");
	m->cfg = *cfg;
	r = copy_str(cfg->name ? cfg->name : "eos", &m->name);
	r = r ?: copy_str(cfg->version ? cfg->version : "0", &m->version);
	r = r ?: copy_str(cfg->instructions, &m->instructions);
	r = r ?: copy_str(cfg->sandbox_id, &m->sandbox_id);
	r = r ?: build_tools(m);
	if (r < 0) {
		eos_mcp_free(m);
		return eos_error_set(err, r, "out of memory");
	}
	if (m->cfg.page_size == 0)
		m->cfg.page_size = EOS_MCP_PAGE_SIZE;
	*ret = m;
	return 0;
}

void
eos_mcp_free(struct eos_mcp *m)
{
	if (!m)
		return;
	free(m->name);
	free(m->version);
	free(m->instructions);
	free(m->sandbox_id);
	json_decref(m->tools);
	free(m->tool_ops);
	free(m);
}

/* --- the methods ------------------------------------------------------------------------------ */

static void
initialize(struct eos_mcp *m, const json_t *id, const json_t *params)
{
	json_t *res;

	if (!json_is_string(json_object_get(params, "protocolVersion")))
		return eos_mcp_send_error(m, id, EOS_MCP_INVALID_PARAMS,
					  "initialize: params.protocolVersion must be a string");
	/* The spec: a server answers the version asked for if it speaks it, else the one it does.
	 */
	res = json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s}}", "protocolVersion",
			EOS_MCP_PROTOCOL_VERSION, "capabilities", "tools", "listChanged", 0,
			"serverInfo", "name", m->name, "version", m->version);
	if (res && m->instructions)
		eos_json_set(res, "instructions", json_string(m->instructions));
	eos_mcp_send_result(m, id, res);
}

/* tools/list: cursor is the index of the page's first tool, as text. */
static void
tools_list(struct eos_mcp *m, const json_t *id, const json_t *params)
{
	const json_t *cur = json_object_get(params, "cursor");
	size_t from = 0, to;
	json_t *page, *res;
	char next[32], *end;

	if (cur && !json_is_null(cur)) {
		const char *s = json_string_value(cur);

		errno = 0;
		from = s && *s ? strtoul(s, &end, 10) : 0;
		if (!s || !*s || *end || errno || from == 0 || from >= m->ntools)
			return eos_mcp_send_error(m, id, EOS_MCP_INVALID_PARAMS,
						  "tools/list: invalid cursor");
	}
	to = EOS_MIN(m->ntools, from + m->cfg.page_size);
	if (!(page = json_array()))
		return eos_mcp_send_error(m, id, EOS_MCP_INTERNAL_ERROR, "out of memory");
	for (size_t i = from; i < to; i++)
		json_array_append(page, json_array_get(m->tools, i));
	res = json_pack("{s:o}", "tools", page);
	snprintf(next, sizeof(next), "%zu", to);
	if (res && to < m->ntools)
		eos_json_set(res, "nextCursor", json_string(next));
	eos_mcp_send_result(m, id, res);
}

static void
request(struct eos_mcp *m, const json_t *id, const char *method, const json_t *params)
{
	if (strcmp(method, "ping") == 0)
		return eos_mcp_send_result(m, id, json_object());
	if (strcmp(method, "initialize") == 0)
		return initialize(m, id, params);
	if (strcmp(method, "tools/list") == 0)
		return tools_list(m, id, params);
	if (strcmp(method, "tools/call") == 0)
		return eos_mcp_tools_call(m, id, params);
	eos_mcp_send_error(m, id, EOS_MCP_METHOD_NOT_FOUND, "method '%.200s' not found", method);
}

static void
notification(struct eos_mcp *m, const char *method, const json_t *params)
{
	if (strcmp(method, "notifications/cancelled") == 0)
		eos_mcp_cancel(m, params);
	/* notifications/initialized and any other: nothing to do, and never an answer */
}

/* Whether id is one JSON-RPC allows and MCP keeps: a string or an integer (not null). */
static bool
valid_id(const json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

void
eos_mcp_handle(struct eos_mcp *m, const json_t *msg)
{
	const json_t *id = json_object_get(msg, "id");
	const json_t *params = json_object_get(msg, "params");
	const char *method = json_string_value(json_object_get(msg, "method"));
	const char *version = json_string_value(json_object_get(msg, "jsonrpc"));

	if (!json_is_object(msg))
		return eos_mcp_send_error(m, NULL, EOS_MCP_INVALID_REQUEST,
					  "a message must be a JSON object (no batches)");
	if (id && !valid_id(id))
		return eos_mcp_send_error(m, NULL, EOS_MCP_INVALID_REQUEST,
					  "id must be a string or an integer");
	if (!version || strcmp(version, "2.0") != 0)
		return eos_mcp_send_error(m, id, EOS_MCP_INVALID_REQUEST,
					  "jsonrpc must be \"2.0\"");
	if (!method) {
		if (id && (json_object_get(msg, "result") || json_object_get(msg, "error")))
			return; /* a response: eos sends no requests, so none is awaited */
		return eos_mcp_send_error(m, id, EOS_MCP_INVALID_REQUEST,
					  "method must be a string");
	}
	if (params && !json_is_object(params)) {
		if (id)
			eos_mcp_send_error(m, id, EOS_MCP_INVALID_PARAMS,
					   "%.200s: params must be an object", method);
		return;
	}
	if (id)
		request(m, id, method, params);
	else
		notification(m, method, params);
}

void
eos_mcp_handle_text(struct eos_mcp *m, const char *text, size_t len)
{
	EOS_CLEANUP(json_decrefp) json_t *msg = NULL;
	json_error_t je;

	if (!(msg = json_loadb(text, len, JSON_DECODE_ANY, &je)))
		return eos_mcp_send_error(m, NULL, EOS_MCP_PARSE_ERROR, "parse error: %s", je.text);
	eos_mcp_handle(m, msg);
}
