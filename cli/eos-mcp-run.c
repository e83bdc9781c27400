/* SPDX-License-Identifier: MIT */
/*
 * eos-mcp-run: one tools/call against eosd. The call runs on a thread of its own so that the
 * stdin loop keeps answering (ping, tools/list, a cancel) while eosd works; it opens its own
 * eosctl session (cli/eosctl.h), so that nothing of the client is shared between threads.
 *
 * A long-running operation with a progressToken asks eosd for its progress events and turns each
 * into notifications/progress. A command (exec_command, write_command_stdin) is followed in steps
 * (common/mcp-run.h): each step that finds it running is a progress notification, and a cancel
 * between two steps sends "\u0003" to the command, as Ctrl-C would.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/errkind.h"
#include "common/json.h"
#include "common/mcp-run.h"
#include "common/mcp.h"

#include "cli/eos-mcp.h"
#include "cli/eosctl.h"

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

/* --- events ---------------------------------------------------------------------------------- */

/* An event of eosd's stream (progress; events follow's event and dropped) as a notification. */
static void
on_event(void *arg, const char *name, const char *data)
{
	struct job *j = arg;
	cleanup_free char *msg = eos_mcp_event_text(eos_mcp_call_op(j->call), name, data);

	if (msg)
		progress(j, msg);
}

static bool
hook_cancelled(void *arg)
{
	struct job *j = arg;

	return cancelled(j, j->endless);
}

/* --- commands --------------------------------------------------------------------------------- */

/* Call op with args (stolen): ok, and the reply or error envelope in *ret_doc (or NULL). */
static int
call_op(struct job *j, const struct eos_op *op, json_t *args, json_t **ret_doc,
	struct eos_error *err)
{
	int r = eosctl_session_call(j->s, op, args, eos_mcp_call_sandbox(j->call), ret_doc, err);

	json_decref(args);
	return r;
}

/* The command of the call, followed in steps until its yield (or cancelled: Ctrl-C). */
static int
run_command(struct job *j, json_t **ret_doc, struct eos_error *err)
{
	const struct eos_op *stdin_op = eos_catalog_find("write_command_stdin");
	const struct eos_op *op = eos_mcp_call_op(j->call);
	struct eos_mcp_command cmd;
	json_t *args = NULL, *doc = NULL;
	char msg[256];
	bool ok;
	int r, n = 0;

	if (!stdin_op)
		return eos_error_set(err, -ENOSYS, "the catalog has no write_command_stdin");
	if (eos_mcp_command_begin(&cmd, eos_mcp_call_args(j->call), eos_mono_ns(), &args) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	for (r = call_op(j, op, args, &doc, err); doc; r = call_op(j, stdin_op, args, &doc, err)) {
		n = eos_mcp_command_next(&cmd, r == 0, TAKE_PTR(doc), cancelled(j, false),
					 eos_mono_ns(), &args, msg, sizeof(msg));
		if (n <= 0)
			break;
		if (msg[0])
			progress(j, msg);
	}
	/* n > 0: a step got no reply at all (r and err say why) */
	*ret_doc = n == 0 ? eos_mcp_command_result(&cmd, &ok) : NULL;
	eos_mcp_command_release(&cmd);
	if (n < 0)
		return eos_error_set(err, n, "out of memory");
	return *ret_doc && ok ? 0 : r < 0 ? r : -EIO;
}

/* --- one call --------------------------------------------------------------------------------- */

static int
run_op(struct job *j, json_t **ret_doc, struct eos_error *err)
{
	const struct eos_op *op = eos_mcp_call_op(j->call);
	const struct eosctl_call_hooks hooks = { .on_event = on_event,
						 .cancelled = hook_cancelled,
						 .arg = j };

	if (eos_mcp_op_is_command(op))
		return run_command(j, ret_doc, err);
	if (eos_mcp_run_check(j->call, err) < 0) {
		j->kind = "invalid_request";
		return -EINVAL;
	}
	/* a stream that ends only when the client leaves */
	j->endless = json_is_true(json_object_get(eos_mcp_call_args(j->call), "follow"));
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
