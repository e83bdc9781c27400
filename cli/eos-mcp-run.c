/* SPDX-License-Identifier: MIT */
/*
 * eos-mcp-run: one tools/call against eosd. The call runs on a thread of its own so that the
 * stdin loop keeps answering (ping, tools/list, a cancel) while eosd works; it opens its own
 * eosctl session (cli/eosctl.h), so that nothing of the client is shared between threads.
 *
 * A long-running operation with a progressToken asks eosd for its progress events and turns each
 * into notifications/progress. A command's reply (an operation with yield_time_ms: exec_command,
 * write_command_stdin) is waited for in steps of STEP_MS until the yield the caller asked for:
 * each step that finds the command running is a progress notification, and a cancel between two
 * steps sends "\u0003" to the command, as Ctrl-C would. The steps' outputs are joined, so the
 * result is what one reply with that yield would have been.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/errkind.h"
#include "common/json.h"
#include "common/mcp.h"

#include "cli/eos-mcp.h"
#include "cli/eosctl.h"

enum {
	STEP_MS = 500,		/* the longest a command's reply is waited for between two looks */
	CANCEL_YIELD_MS = 5000, /* for a cancelled command to end */
};

struct job {
	struct eos_mcp_host *host;
	struct eos_mcp_call *call;
	struct eosctl_session *s;
	const char *kind; /* the error kind of a local failure, when not its errno's */
	bool endless;	  /* events follow: it ends only when let go */
};

/* Whether the client cancelled the call; with or_closing, or its stdin ended. */
static bool
cancelled(struct job *j, bool or_closing)
{
	bool c;

	pthread_mutex_lock(&j->host->lock);
	c = eos_mcp_call_cancelled(j->call) || (or_closing && j->host->closing);
	pthread_mutex_unlock(&j->host->lock);
	return c;
}

static void
progress(struct job *j, const char *message)
{
	pthread_mutex_lock(&j->host->lock);
	eos_mcp_call_progress(j->call, message);
	pthread_mutex_unlock(&j->host->lock);
}

/* --- progress events -------------------------------------------------------------------------- */

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

/* eosd's progress event → "create_sandbox: import files 1200/3000 bytes 9830400/28675500". */
static void
progress_event(struct job *j, const char *data)
{
	EOS_CLEANUP(json_decrefp) json_t *doc = json_loads(data, 0, NULL);
	const char *phase = json_string_value(json_object_get(doc, "phase"));
	char msg[256];

	snprintf(msg, sizeof(msg), "%s: %.32s", eos_mcp_call_op(j->call)->name,
		 phase ? phase : "working");
	count_text(doc, "paths", msg, sizeof(msg));
	count_text(doc, "files", msg, sizeof(msg));
	count_text(doc, "bytes", msg, sizeof(msg));
	progress(j, msg);
}

/*
 * An event of eosd's stream: progress as above; each event of events follow (and a note of
 * those dropped) as its JSON, "event: {...}".
 */
static void
on_event(void *arg, const char *name, const char *data)
{
	struct job *j = arg;
	cleanup_free char *msg = NULL;

	if (strcmp(name, "progress") == 0) {
		progress_event(j, data);
		return;
	}
	if (asprintf(&msg, "%s: %s", name, data) >= 0)
		progress(j, msg);
}

static bool
hook_cancelled(void *arg)
{
	struct job *j = arg;

	return cancelled(j, j->endless);
}

/* --- commands --------------------------------------------------------------------------------- */

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

/* What the steps printed so far, and whether any reply was cut. */
struct joined {
	struct eos_buf out;
	bool truncated;
};

static void
join_output(struct joined *o, const json_t *doc)
{
	const json_t *v = json_object_get(doc, "output");

	if (json_is_string(v))
		eos_buf_append(&o->out, json_string_value(v), json_string_length(v));
	o->truncated = o->truncated || json_is_true(json_object_get(doc, "output_truncated"));
}

/* Another step: write_command_stdin with chars (may be ""), waiting at most yield_ms. */
static int
step(struct job *j, const char *cmd_id, const char *chars, int yield_ms, int max_out,
     json_t **ret_doc, struct eos_error *err)
{
	const struct eos_op *op = eos_catalog_find("write_command_stdin");
	EOS_CLEANUP(json_decrefp) json_t *args = NULL;

	if (!op)
		return eos_error_set(err, -ENOSYS, "the catalog has no write_command_stdin");
	args = json_pack("{s:s,s:s,s:i,s:i}", "command_session_id", cmd_id, "chars", chars,
			 "yield_time_ms", yield_ms, "max_output_bytes", max_out);
	if (!args)
		return eos_error_set(err, -ENOMEM, "out of memory");
	return eosctl_session_call(j->s, op, args, eos_mcp_call_sandbox(j->call), ret_doc, err);
}

/* "cmd-17: running, 1.5 s, 120 bytes of output" */
static void
command_progress(struct job *j, const json_t *doc, const struct joined *o)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "%s: running, %.1f s, %zu bytes of output",
		 json_string_value(json_object_get(doc, "command_session_id")) ?: "command",
		 (double)json_integer_value(json_object_get(doc, "wall_time_ms")) / 1000,
		 o->out.len);
	progress(j, msg);
}

/* Wait for the command of *doc (running) in steps until deadline_ns, or cancel it. */
static int
follow_command(struct job *j, json_t **doc, struct joined *o, int64_t deadline_ns, int max_out,
	       struct eos_error *err)
{
	int r = 0;

	while (r == 0 && running(*doc)) {
		const char *id = json_string_value(json_object_get(*doc, "command_session_id"));
		int64_t left_ms = (deadline_ns - eos_mono_ns()) / 1000000;
		bool cancel = cancelled(j, false);
		json_t *next = NULL;

		if (!id || (!cancel && left_ms <= 0))
			break;
		if (!cancel)
			command_progress(j, *doc, o);
		r = step(j, id, cancel ? "\003" : "",
			 cancel ? CANCEL_YIELD_MS : (int)EOS_MIN(left_ms, STEP_MS),
			 EOS_MAX(max_out - (int)o->out.len, 0), &next, err);
		if (!next)
			break;
		json_decref(*doc);
		*doc = next;
		join_output(o, next);
		if (cancel)
			break;
	}
	return r;
}

static int
run_command(struct job *j, json_t **ret_doc, struct eos_error *err)
{
	const struct eos_op *op = eos_mcp_call_op(j->call);
	const json_t *given = eos_mcp_call_args(j->call);
	int yield = int_arg(given, "yield_time_ms", 1000);
	int max_out = int_arg(given, "max_output_bytes", 65536);
	int64_t deadline = eos_mono_ns() + (int64_t)yield * 1000000;
	EOS_CLEANUP(json_decrefp) json_t *args = json_deep_copy(given);
	struct joined o = { 0 };
	int r;

	if (!args || eos_json_set(args, "yield_time_ms", json_integer(EOS_MIN(yield, STEP_MS))) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	r = eosctl_session_call(j->s, op, args, eos_mcp_call_sandbox(j->call), ret_doc, err);
	if (r < 0 || !*ret_doc)
		return r;
	join_output(&o, *ret_doc);
	r = follow_command(j, ret_doc, &o, deadline, max_out, err);
	if (json_is_string(json_object_get(*ret_doc, "output")))
		eos_json_set(*ret_doc, "output",
			     json_stringn(o.out.data ? (const char *)o.out.data : "", o.out.len));
	if (json_object_get(*ret_doc, "output_truncated"))
		eos_json_set(*ret_doc, "output_truncated", json_boolean(o.truncated));
	eos_buf_release(&o.out);
	return r;
}

/* --- one call --------------------------------------------------------------------------------- */

static int
run_op(struct job *j, json_t **ret_doc, struct eos_error *err)
{
	const struct eos_op *op = eos_mcp_call_op(j->call);
	const struct eosctl_call_hooks hooks = { .on_event = on_event,
						 .cancelled = hook_cancelled,
						 .arg = j };

	if (eos_catalog_arg(op, "yield_time_ms"))
		return run_command(j, ret_doc, err);
	/* a stream that ends only when the client leaves needs somewhere to go */
	j->endless = json_is_true(json_object_get(eos_mcp_call_args(j->call), "follow"));
	if (j->endless && !eos_mcp_call_wants_progress(j->call)) {
		j->kind = "invalid_request";
		return eos_error_set(err, -EINVAL,
				     "%s: follow sends each event as a progress notification "
				     "until the request is cancelled: give a progressToken",
				     op->name);
	}
	return eosctl_session_call_hooks(j->s, op, eos_mcp_call_args(j->call),
					 eos_mcp_call_sandbox(j->call), &hooks, ret_doc, err);
}

static int
open_session(struct job *j, struct eos_error *err)
{
	int r;

	pthread_mutex_lock(&j->host->open_lock);
	r = eosctl_session_open(&j->host->cmd, eos_mcp_call_op(j->call)->surface, &j->s, err);
	pthread_mutex_unlock(&j->host->open_lock);
	return r;
}

static void *
job_main(void *arg)
{
	struct job *j = arg;
	struct eos_error err = { 0 };
	json_t *doc = NULL;
	int r;

	r = open_session(j, &err);
	if (r == 0)
		r = run_op(j, &doc, &err);
	pthread_mutex_lock(&j->host->lock);
	if (doc)
		eos_mcp_call_finish(j->call, r == 0, doc);
	else
		eos_mcp_call_fail(j->call,
				  j->kind ?: eos_errkind_name(eos_errkind_of(r < 0 ? r : -EIO)),
				  eos_error_message(&err, r < 0 ? r : -EIO));
	pthread_cond_broadcast(&j->host->idle);
	pthread_mutex_unlock(&j->host->lock);
	json_decref(doc);
	eosctl_session_close(j->s);
	free(j);
	return NULL;
}

void
eos_mcp_host_start(void *arg, struct eos_mcp_call *call)
{
	struct eos_mcp_host *host = arg;
	struct job *j = calloc(1, sizeof(*j));
	pthread_attr_t attr;
	pthread_t t;
	int r = j ? 0 : ENOMEM;

	if (j) {
		*j = (struct job){ .host = host, .call = call };
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		r = pthread_create(&t, &attr, job_main, j);
		pthread_attr_destroy(&attr);
	}
	if (r != 0) {
		free(j);
		eos_mcp_call_fail(call, "out_of_memory", "eos-mcp cannot start a thread");
	}
}
