/* SPDX-License-Identifier: MIT */
/*
 * common/mcp-call: tools/call (common/mcp.h) — the arguments checked against the catalog, the
 * call handed to the host, its progress, its cancellation and its result.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/catalog-schema.h"
#include "common/cleanup.h"
#include "common/json.h"
#include "common/mcp-internal.h"
#include "common/mcp.h"

const struct eos_op *
eos_mcp_call_op(const struct eos_mcp_call *c)
{
	return c->op;
}

json_t *
eos_mcp_call_args(const struct eos_mcp_call *c)
{
	return c->args;
}

const char *
eos_mcp_call_sandbox(const struct eos_mcp_call *c)
{
	return c->sandbox_id;
}

bool
eos_mcp_call_wants_progress(const struct eos_mcp_call *c)
{
	return c->token != NULL;
}

bool
eos_mcp_call_cancelled(const struct eos_mcp_call *c)
{
	return c->cancelled;
}

static void
call_free(struct eos_mcp_call *c)
{
	if (!c)
		return;
	json_decref(c->id);
	json_decref(c->token);
	json_decref(c->args);
	free(c->sandbox_id);
	free(c);
}

/* --- results ---------------------------------------------------------------------------------- */

/* A tool result: structuredContent doc (an object), its text, isError. */
static json_t *
tool_result(const json_t *doc, const char *text, bool error)
{
	return json_pack("{s:[{s:s,s:s}],s:O,s:b}", "content", "type", "text", "text", text,
			 "structuredContent", doc, "isError", error);
}

static json_t *
ok_result(const json_t *doc)
{
	EOS_CLEANUP(json_decrefp) json_t *wrapped = NULL;
	cleanup_free char *text = NULL;

	if (!json_is_object(doc)) /* structuredContent must be an object */
		doc = wrapped = json_pack("{s:O}", "result", doc ? doc : json_null());
	if (!doc || !(text = json_dumps(doc, JSON_COMPACT)))
		return NULL;
	return tool_result(doc, text, false);
}

static json_t *
error_result(const json_t *envelope)
{
	const json_t *e = json_object_get(envelope, "error");
	const char *kind = json_string_value(json_object_get(e, "kind"));
	const char *message = json_string_value(json_object_get(e, "message"));
	cleanup_free char *text = NULL;

	if (!json_is_object(e))
		return NULL;
	if (asprintf(&text, "%s: %s", kind ? kind : "io", message ? message : "failed") < 0)
		return NULL;
	return tool_result(envelope, text, true);
}

/* Answer request id with the tool error {"error":{kind,message}}. */
static void
send_tool_error(struct eos_mcp *m, const json_t *id, const char *kind, const char *message)
{
	EOS_CLEANUP(json_decrefp)
	json_t *env = json_pack("{s:{s:s,s:s}}", "error", "kind", kind, "message", message);

	eos_mcp_send_result(m, id, env ? error_result(env) : NULL);
}

/* --- in flight -------------------------------------------------------------------------------- */

static void
unlink_call(struct eos_mcp *m, struct eos_mcp_call *c)
{
	for (struct eos_mcp_call **p = &m->calls; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			m->in_flight--;
			return;
		}
}

void
eos_mcp_call_finish(struct eos_mcp_call *c, bool ok, const json_t *doc)
{
	struct eos_mcp *m = c->m;
	json_t *res;

	unlink_call(m, c);
	/* The spec: the receiver of a cancellation does not answer the request cancelled. */
	if (!c->cancelled) {
		res = ok ? ok_result(doc) : error_result(doc);
		if (res)
			eos_mcp_send_result(m, c->id, res);
		else
			eos_mcp_send_error(m, c->id, EOS_MCP_INTERNAL_ERROR,
					   "%s: eosd's reply cannot be rendered", c->op->name);
	}
	call_free(c);
}

void
eos_mcp_call_fail(struct eos_mcp_call *c, const char *kind, const char *message)
{
	EOS_CLEANUP(json_decrefp)
	json_t *env = json_pack("{s:{s:s,s:s}}", "error", "kind", kind, "message", message);

	eos_mcp_call_finish(c, false, env);
}

void
eos_mcp_call_progress(struct eos_mcp_call *c, const char *message)
{
	json_t *msg;

	if (!c->token || c->cancelled)
		return;
	msg = json_pack("{s:s,s:s,s:{s:O,s:I,s:s}}", "jsonrpc", "2.0", "method",
			"notifications/progress", "params", "progressToken", c->token, "progress",
			(json_int_t)++c->progress, "message", message);
	if (msg)
		c->m->cfg.send(c->m->cfg.send_arg, msg);
	json_decref(msg);
}

void
eos_mcp_cancel(struct eos_mcp *m, const json_t *params)
{
	const json_t *id = json_object_get(params, "requestId");

	for (struct eos_mcp_call *c = m->calls; id && c; c = c->next)
		if (json_equal(c->id, (json_t *)id))
			c->cancelled = true;
	/* an unknown or finished request: the spec says to ignore it */
}

/* --- tools/call ------------------------------------------------------------------------------- */

static const struct eos_op *
find_tool(const struct eos_mcp *m, const char *name)
{
	for (size_t i = 0; i < m->ntools; i++)
		if (strcmp(m->tool_ops[i]->name, name) == 0)
			return m->tool_ops[i];
	return NULL;
}

/*
 * Take the sandbox out of args (the gateway carries it beside them): the fixed one, or the
 * sandbox_id property of an operation that has one. *ret is NULL for none.
 */
static int
take_sandbox(const struct eos_mcp *m, const struct eos_op *op, json_t *args, char **ret,
	     struct eos_error *err)
{
	const struct eos_arg id = { .name = EOS_SCHEMA_SANDBOX_PROPERTY, .kind = EOS_ARG_ID };
	json_t *v = json_object_get(args, EOS_SCHEMA_SANDBOX_PROPERTY);
	int r;

	*ret = NULL;
	if (m->sandbox_id)
		return (*ret = strdup(m->sandbox_id)) ? 0 : -ENOMEM;
	if (!op->needs_sandbox && !op->sandbox_optional)
		return 0; /* a sandbox_id is then an unknown argument of eos_catalog_validate() */
	if (!v && op->needs_sandbox)
		return eos_error_set(err, -EINVAL, "%s: missing argument '%s'", op->name,
				     EOS_SCHEMA_SANDBOX_PROPERTY);
	if (!v)
		return 0;
	if ((r = eos_catalog_check_value(&id, v, err)) < 0)
		return eos_error_prefix(err, r, "%s", op->name);
	if (!(*ret = strdup(json_string_value(v))))
		return -ENOMEM;
	json_object_del(args, EOS_SCHEMA_SANDBOX_PROPERTY);
	return 0;
}

static int
new_call(struct eos_mcp *m, const json_t *id, const struct eos_op *op, json_t *args,
	 struct eos_mcp_call **ret, struct eos_error *err)
{
	struct eos_mcp_call *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return eos_error_set(err, -ENOMEM, "out of memory");
	*c = (struct eos_mcp_call){ .m = m, .id = json_deep_copy(id), .op = op, .args = args };
	json_incref(args);
	r = c->id ? take_sandbox(m, op, args, &c->sandbox_id, err) : -ENOMEM;
	r = r ?: eos_catalog_validate(op, args, err);
	if (r < 0) {
		call_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

void
eos_mcp_tools_call(struct eos_mcp *m, const json_t *id, const json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	const json_t *given = json_object_get(params, "arguments");
	const json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
	EOS_CLEANUP(json_decrefp) json_t *args = NULL;
	struct eos_mcp_call *c = NULL;
	struct eos_error err = { 0 };
	const struct eos_op *op;
	int r;

	if (!name)
		return eos_mcp_send_error(m, id, EOS_MCP_INVALID_PARAMS,
					  "tools/call: params.name must be a string");
	if (!(op = find_tool(m, name)))
		return eos_mcp_send_error(m, id, EOS_MCP_INVALID_PARAMS, "unknown tool '%.200s'",
					  name);
	if (given && !json_is_null(given) && !json_is_object(given))
		return eos_mcp_send_error(m, id, EOS_MCP_INVALID_PARAMS,
					  "tools/call: params.arguments must be an object");
	if (token && !json_is_string(token) && !json_is_integer(token))
		return eos_mcp_send_error(m, id, EOS_MCP_INVALID_PARAMS,
					  "tools/call: _meta.progressToken must be a string or an "
					  "integer");
	args = json_is_object(given) ? json_deep_copy(given) : json_object();
	if (!args || (r = new_call(m, id, op, args, &c, &err)) < 0)
		return send_tool_error(
			m, id, !args || err.code == -ENOMEM ? "out_of_memory" : "invalid_request",
			eos_error_message(&err, -ENOMEM));
	c->token = token ? json_deep_copy(token) : NULL;
	c->next = m->calls;
	m->calls = c;
	m->in_flight++;
	m->cfg.start(m->cfg.start_arg, c);
}
