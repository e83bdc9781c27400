/* SPDX-License-Identifier: MIT */
/* common/mcp-run: progress text and command steps of an MCP host (common/mcp-run.h). */
#include "common/mcp-run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/json.h"

const char eos_mcp_instructions[] =
	"eos gives each agent a private copy-on-write workspace session over one shared, "
	"immutable history of a codebase (a sandbox), runs commands in the session's own "
	"namespace, and publishes a session's changes as one new layer, merged with what others "
	"published meanwhile or rejected with the conflicting line ranges. Typical flow: "
	"create_workspace_session, then file_read / file_edit / file_write / exec_command in it "
	"(exec_command answers at its yield with status running: continue with "
	"write_command_stdin), then publish_workspace_session.";

int
eos_mcp_run_check(struct eos_mcp_call *call, struct eos_error *err)
{
	const struct eos_op *op = eos_mcp_call_op(call);

	if (json_is_true(json_object_get(eos_mcp_call_args(call), "follow")) &&
	    !eos_mcp_call_wants_progress(call))
		return eos_error_set(err, -EINVAL,
				     "%s: follow sends each event as a progress notification "
				     "until the request is cancelled: give a progressToken",
				     op->name);
	return 0;
}

/* --- progress text ---------------------------------------------------------------------------- */

/* Append " files 1200/3000" for field name of doc, when it has one, to buf of n bytes. */
static void
count_text(const json_t *doc, const char *name, char *buf, size_t n)
{
	char total[64];
	const json_t *v = json_object_get(doc, name);
	const json_t *t;
	size_t len = strlen(buf);

	snprintf(total, sizeof(total), "total_%s", name);
	t = json_object_get(doc, total);
	if (!json_is_integer(v) || len + 1 >= n)
		return;
	if (json_is_integer(t))
		snprintf(buf + len, n - len, " %s %lld/%lld", name,
			 (long long)json_integer_value(v), (long long)json_integer_value(t));
	else
		snprintf(buf + len, n - len, " %s %lld", name, (long long)json_integer_value(v));
}

char *
eos_mcp_event_text(const struct eos_op *op, const char *name, const char *data)
{
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	const char *phase;
	char msg[256];
	char *text = NULL;

	if (strcmp(name, "progress") != 0)
		return asprintf(&text, "%s: %s", name, data) < 0 ? NULL : text;
	doc = json_loads(data, 0, NULL);
	phase = json_string_value(json_object_get(doc, "phase"));
	snprintf(msg, sizeof(msg), "%s: %.32s", op->name, phase ? phase : "working");
	count_text(doc, "paths", msg, sizeof(msg));
	count_text(doc, "files", msg, sizeof(msg));
	count_text(doc, "bytes", msg, sizeof(msg));
	return strdup(msg);
}

/* --- commands --------------------------------------------------------------------------------- */

bool
eos_mcp_op_is_command(const struct eos_op *op)
{
	return eos_catalog_arg(op, "yield_time_ms") != NULL;
}

static int
int_arg(const json_t *args, const char *name, int def)
{
	const json_t *v = json_object_get(args, name);

	return json_is_integer(v) ? (int)json_integer_value(v) : def;
}

/* A command's reply: still running. */
static bool
running(const json_t *doc)
{
	const char *st = json_string_value(json_object_get(doc, "status"));

	return st && strcmp(st, "running") == 0;
}

int
eos_mcp_command_begin(struct eos_mcp_command *m, const json_t *args, int64_t now_ns,
		      json_t **ret_first)
{
	int yield = int_arg(args, "yield_time_ms", 1000);
	json_t *first = json_deep_copy(args);

	*m = (struct eos_mcp_command){ .deadline_ns = now_ns + (int64_t)yield * 1000000,
				       .max_out = int_arg(args, "max_output_bytes", 65536) };
	eos_buf_init(&m->out);
	if (!first || eos_json_set(first, "yield_time_ms",
				   json_integer(EOS_MIN(yield, EOS_MCP_STEP_MS))) < 0) {
		json_decref(first);
		return -ENOMEM;
	}
	*ret_first = first;
	return 0;
}

/* "cmd-17: running, 1.5 s, 120 bytes of output" in buf of n bytes. */
static void
command_progress(const struct eos_mcp_command *m, const char *id, char *buf, size_t n)
{
	snprintf(buf, n, "%s: running, %.1f s, %zu bytes of output", id,
		 (double)json_integer_value(json_object_get(m->doc, "wall_time_ms")) / 1000,
		 m->out.len);
}

int
eos_mcp_command_next(struct eos_mcp_command *m, bool ok, json_t *doc, bool cancelled,
		     int64_t now_ns, json_t **ret_next, char *progress, size_t n)
{
	const json_t *out = json_object_get(doc, "output");
	const char *id;
	int64_t left_ms;

	*ret_next = NULL;
	progress[0] = '\0';
	json_decref(m->doc);
	m->doc = doc;
	m->ok = ok;
	if (ok && json_is_string(out) &&
	    eos_buf_append(&m->out, json_string_value(out), json_string_length(out)) < 0)
		return -ENOMEM;
	m->truncated = m->truncated || json_is_true(json_object_get(doc, "output_truncated"));
	id = json_string_value(json_object_get(doc, "command_session_id"));
	left_ms = (m->deadline_ns - now_ns) / 1000000;
	if (!ok || m->cancel_sent || !running(doc) || !id || (!cancelled && left_ms <= 0))
		return 0;
	if (!cancelled)
		command_progress(m, id, progress, n);
	*ret_next = json_pack("{s:s,s:s,s:i,s:i}", "command_session_id", id, "chars",
			      cancelled ? "\003" : "", "yield_time_ms",
			      cancelled ? EOS_MCP_CANCEL_YIELD_MS
					: (int)EOS_MIN(left_ms, EOS_MCP_STEP_MS),
			      "max_output_bytes", EOS_MAX(m->max_out - (int)m->out.len, 0));
	m->cancel_sent = cancelled;
	return *ret_next ? 1 : -ENOMEM;
}

json_t *
eos_mcp_command_result(struct eos_mcp_command *m, bool *ret_ok)
{
	json_t *doc = TAKE_PTR(m->doc);

	*ret_ok = m->ok;
	if (!doc || !m->ok)
		return doc;
	if (json_is_string(json_object_get(doc, "output")))
		eos_json_set(
			doc, "output",
			json_stringn(m->out.data ? (const char *)m->out.data : "", m->out.len));
	if (json_object_get(doc, "output_truncated"))
		eos_json_set(doc, "output_truncated", json_boolean(m->truncated));
	return doc;
}

void
eos_mcp_command_release(struct eos_mcp_command *m)
{
	eos_buf_release(&m->out);
	json_decref(m->doc);
	m->doc = NULL;
}
