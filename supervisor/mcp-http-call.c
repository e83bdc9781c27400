/* SPDX-License-Identifier: MIT */
/*
 * supervisor/mcp-http: one tools/call at /mcp. It runs the operation's handler
 * (supervisor/ops.h) on the worker pool as the gateway does — a root span of its own, the
 * token's scope as the caller, a command's reply deferred without holding a worker — and ends
 * with common/mcp.h's result (the reply, or the gateway's error envelope).
 *
 * Its reply is a stream of server-sent events when the client accepts one and the call may
 * have something to say before its end (a progressToken, a long-running operation, a command),
 * else one JSON response. What the two MCP hosts share (common/mcp-run.h) applies: eosd's events
 * become notifications/progress, a command is followed in steps of EOS_MCP_STEP_MS (each a
 * request of its own: no worker waits for a command) and a cancel becomes Ctrl-C, events follow
 * sends each event until the call is cancelled.
 *
 * A call's fields other than call are its own thread's: the worker that starts it, then the
 * thread that finishes each step (a deferred reply comes on the command engine's thread, and
 * the next step goes back to the pool).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/errkind.h"
#include "common/json.h"

#include "store/store.h"
#include "supervisor/mcp-http-internal.h"
#include "supervisor/ops.h"
#include "supervisor/pool.h"

struct eosd_mcp_call {
	struct eosd_mcp_session *s; /* a reference */
	struct eos_mcp_call *call;  /* common/mcp.h's (its mutable state under s->lock) */
	struct eosd_mcp_out out;    /* the reply (under s->lock) */
	const struct eos_op *op;    /* the operation of the step that runs */
	json_t *args;		    /* its arguments (owned) */
	struct eosd_call ec;	    /* the handler's view of the step */
	struct eosd_stream *stream; /* the handler's events → progress (when asked for) */
	bool command;		    /* followed in steps (cmd) */
	struct eos_mcp_command cmd;
	bool kept; /* events follow: kept after its handler (h->kept) */
	struct eosd_stream_source keep;
	struct eosd_mcp_call *kept_next;
	char trace[EOSD_OBS_TRACE_HEX]; /* the running step's trace */
};

static struct eosd *
daemon_of(const struct eosd_mcp_call *c)
{
	return c->s->h->d;
}

static void
call_free(struct eosd_mcp_call *c)
{
	eosd_stream_free(c->stream);
	json_decref(c->args);
	json_decref(c->ec.details);
	eos_mcp_command_release(&c->cmd);
	eosd_mcp_session_unref(c->s);
	free(c);
}

/* End c with doc (borrowed: the result, or an error envelope unless ok) and free it. */
static void
finish(struct eosd_mcp_call *c, bool ok, const json_t *doc)
{
	struct eosd_mcp_session *s = c->s;

	pthread_mutex_lock(&s->lock);
	s->out = &c->out;
	eos_mcp_call_finish(c->call, ok, doc);
	s->out = NULL;
	eosd_mcp_out_close(&c->out, 200);
	pthread_mutex_unlock(&s->lock);
	call_free(c);
}

static void
finish_fail(struct eosd_mcp_call *c, int kind, const char *message)
{
	EOS_CLEANUP(json_decrefp) json_t *env = eosd_error_envelope(kind, message, NULL, NULL);

	finish(c, false, env);
}

/* Send notifications/progress with message, when the client asked for them. */
static void
progress(struct eosd_mcp_call *c, const char *message)
{
	pthread_mutex_lock(&c->s->lock);
	c->s->out = &c->out;
	eos_mcp_call_progress(c->call, message);
	c->s->out = NULL;
	pthread_mutex_unlock(&c->s->lock);
}

/* Whether the client cancelled c; *gone: its session ended meanwhile. */
static bool
cancelled(struct eosd_mcp_call *c, bool *gone)
{
	bool r;

	pthread_mutex_lock(&c->s->lock);
	r = eos_mcp_call_cancelled(c->call);
	pthread_mutex_unlock(&c->s->lock);
	pthread_mutex_lock(&c->s->h->lock);
	*gone = c->s->gone;
	pthread_mutex_unlock(&c->s->h->lock);
	return r;
}

/* --- the handler's events --------------------------------------------------------------------- */

static int
sink_event(void *arg, const char *name, const char *json)
{
	struct eosd_mcp_call *c = arg;
	cleanup_free char *msg = eos_mcp_event_text(eos_mcp_call_op(c->call), name, json);

	if (!msg)
		return -ENOMEM;
	progress(c, msg);
	return 0;
}

/* events follow keeps its stream: c is pulled whenever telemetry has news (eosd_mcp_wake). */
static int
sink_keep(void *arg, const struct eosd_stream_source *src)
{
	struct eosd_mcp_call *c = arg;

	c->keep = *src;
	c->kept = true;
	return 0;
}

/* --- steps ------------------------------------------------------------------------------------ */

static void step_run(struct eosd_mcp_call *c);
static void step_done(struct eosd_mcp_call *c, int r, json_t *out, const struct eos_error *err);
static void kept_add(struct eosd_mcp_call *c);

static void
step_job(void *arg)
{
	step_run(arg);
}

/* call.finish of a step whose handler returned EOSD_DEFERRED (any thread, once). */
static void
step_deferred(struct eosd_call *ec, int r, json_t *out, const struct eos_error *err)
{
	struct eosd_mcp_call *c =
		(struct eosd_mcp_call *)((char *)ec - offsetof(struct eosd_mcp_call, ec));

	step_done(c, r, out, err);
}

/* The root span's attributes, as the gateway's (gateway-request.c), and the transport. */
static void
root_attrs(struct eosd_span *root, const struct eosd_mcp_call *c)
{
	eosd_span_set_sandbox(root, c->ec.sandbox_id);
	eosd_span_attr_str(root, "operation", c->op->name);
	eosd_span_attr_str(root, "surface", eos_surface_name(c->op->surface));
	eosd_span_attr_str(root, "token_id", c->s->caller.token_id);
	eosd_span_attr_str(root, "transport", "mcp");
}

/*
 * The step's checks before its handler, the gateway's: the arguments (a command's steps are
 * made here; common/mcp.h checked the call's own), the sandbox id.
 */
static int
step_check(struct eosd_mcp_call *c, struct eos_error *err)
{
	int r = c->command ? eos_catalog_validate(c->op, c->args, err) : 0;

	if (r >= 0 && c->ec.sandbox_id && (r = eos_sandbox_id_check(c->ec.sandbox_id, err)) < 0)
		eos_error_prefix(err, r, "%s: argument 'sandbox_id'", c->op->name);
	if (r < 0)
		c->ec.kind = EOS_ERRKIND_INVALID_REQUEST;
	if (r >= 0 && !eosd_ops_handler(c->op)) {
		c->ec.kind = EOS_ERRKIND_UNSUPPORTED;
		r = eos_error_set(err, -ENOSYS, "operation '%s' is not served yet", c->op->name);
	}
	return r;
}

/* Run the step's handler on this worker; its end comes to step_done(), now or deferred. */
static void
step_run(struct eosd_mcp_call *c)
{
	struct eosd *d = daemon_of(c); /* c may be gone once the handler has deferred */
	struct eos_error err = { 0 };
	struct eosd_span root;
	json_t *out = NULL;
	int r;

	json_decref(c->ec.details);
	c->ec = (struct eosd_call){ .op = c->op,
				    .sandbox_id = eos_mcp_call_sandbox(c->call),
				    .args = c->args,
				    .caller = &c->s->caller,
				    .stream = c->stream,
				    .kind = -1,
				    .body_fd = -1,
				    .finish = step_deferred };
	eosd_span_begin_root(d->obs, &root, "daemon.dispatch", eos_wall_ns(), eos_mono_ns());
	root_attrs(&root, c);
	eosd_obs_trace_hex(c->trace);
	r = step_check(c, &err);
	if (r >= 0)
		r = eosd_ops_handler(c->op)(d, &c->ec, &out, &err);
	if (r == EOSD_DEFERRED) {
		eosd_span_attr(&root, "deferred", json_true());
		eosd_span_end(&root, 0, &err);
		atomic_fetch_add(&d->requests, 1);
		return;
	}
	if (r < 0)
		eosd_span_attr_str(
			&root, "kind",
			eos_errkind_name(c->ec.kind >= 0 ? c->ec.kind : (int)eos_errkind_of(r)));
	eosd_span_end(&root, r, &err);
	atomic_fetch_add(&d->requests, 1);
	step_done(c, r, out, &err);
}

/* The handler's result as a document: the reply with its trace id, or the error envelope. */
static json_t *
step_doc(struct eosd_mcp_call *c, int r, json_t *out, const struct eos_error *err)
{
	int kind;

	if (r >= 0) {
		if (!out)
			out = json_object();
		if (json_is_object(out) && !json_object_get(out, "trace_id"))
			eos_json_set(out, "trace_id", json_string(c->trace));
		return out;
	}
	json_decref(out);
	kind = c->ec.kind >= 0 ? c->ec.kind : (int)eos_errkind_of(r);
	return eosd_error_envelope(kind, eos_error_message(err, r), TAKE_PTR(c->ec.details),
				   c->trace);
}

/* A command's step ended: the next one on the pool, or the call's end. */
static void
command_step(struct eosd_mcp_call *c, bool ok, json_t *doc)
{
	struct eosd *d = daemon_of(c);
	EOS_CLEANUP(json_decrefp) json_t *res = NULL;
	json_t *next = NULL;
	char msg[256];
	bool gone, cancel = cancelled(c, &gone);
	/* the session gone or eosd stopping: no more steps (the command runs on, as it would) */
	int64_t now = gone || d->stopping ? INT64_MAX : eos_mono_ns();
	int n = eos_mcp_command_next(&c->cmd, ok, doc, cancel && now != INT64_MAX, now, &next, msg,
				     sizeof(msg));

	if (n > 0) {
		if (msg[0])
			progress(c, msg);
		json_decref(c->args);
		c->args = next;
		c->op = eos_catalog_find("write_command_stdin");
		if (c->op && d->pool && eosd_pool_submit(d->pool, step_job, c) == 0)
			return;
		/* no room for the next step (or the pool is going): the call ends with the last
		 * reply */
	}
	if (n < 0)
		return finish_fail(c, EOS_ERRKIND_OUT_OF_MEMORY, "eosd: out of memory");
	res = eos_mcp_command_result(&c->cmd, &ok);
	finish(c, ok, res);
}

static void
step_done(struct eosd_mcp_call *c, int r, json_t *out, const struct eos_error *err)
{
	EOS_CLEANUP(json_decrefp) json_t *doc = step_doc(c, r, out, err);

	if (!doc)
		return finish_fail(c, EOS_ERRKIND_OUT_OF_MEMORY, "eosd: out of memory");
	if (c->command)
		return command_step(c, r >= 0, TAKE_PTR(doc));
	if (r >= 0 && c->kept)
		return kept_add(c);
	finish(c, r >= 0, doc);
}

/* --- start ------------------------------------------------------------------------------------ */

void
eosd_mcp_call_start(void *arg, struct eos_mcp_call *call)
{
	struct eosd_mcp_session *s = arg;
	const struct eos_op *op = eos_mcp_call_op(call);
	struct eosd_mcp_call *c = calloc(1, sizeof(*c));

	if (!c)
		return eos_mcp_call_fail(call, "out_of_memory", "eosd: out of memory");
	*c = (struct eosd_mcp_call){
		.s = s, .call = call, .op = op, .command = eos_mcp_op_is_command(op)
	};
	c->out = (struct eosd_mcp_out){ .job = TAKE_PTR(s->out->job),
					.may_stream = s->out->may_stream };
	c->out.stream = c->out.may_stream &&
			(eos_mcp_call_wants_progress(call) || op->long_running || c->command);
	if (c->out.stream)
		eosd_gateway_mcp_stream(c->out.job);
	pthread_mutex_lock(&s->h->lock);
	s->refs++;
	pthread_mutex_unlock(&s->h->lock);
	s->started = c;
}

/* What the call cannot do here: follow without a progressToken, or without a stream. */
static int
run_check(struct eosd_mcp_call *c, struct eos_error *err)
{
	int r = eos_mcp_run_check(c->call, err);

	if (r == 0 && json_is_true(json_object_get(eos_mcp_call_args(c->call), "follow")) &&
	    !c->out.stream)
		r = eos_error_set(err, -EINVAL,
				  "%s: follow sends each event as it comes: accept "
				  "text/event-stream",
				  c->op->name);
	return r;
}

void
eosd_mcp_call_run(struct eosd_mcp_call *c)
{
	const struct eosd_stream_sink sink = { sink_event, sink_keep, c };
	const json_t *args = eos_mcp_call_args(c->call); /* fixed once started: no lock */
	struct eos_error err = { 0 };
	int r = run_check(c, &err);

	if (r < 0)
		return finish_fail(c, EOS_ERRKIND_INVALID_REQUEST, eos_error_message(&err, r));
	if (c->out.stream && eos_mcp_call_wants_progress(c->call))
		c->stream = eosd_stream_new_sink(&sink); /* none without memory: no progress */
	if (c->command)
		r = eos_mcp_command_begin(&c->cmd, args, eos_mono_ns(), &c->args);
	else
		c->args = json_incref((json_t *)args);
	if (r < 0)
		return finish_fail(c, EOS_ERRKIND_OUT_OF_MEMORY, "eosd: out of memory");
	step_run(c);
}

/* --- events follow ---------------------------------------------------------------------------- */

static void
kept_add(struct eosd_mcp_call *c)
{
	struct eosd_mcp *h = c->s->h;

	pthread_mutex_lock(&h->kept_lock);
	c->kept_next = h->kept;
	h->kept = c;
	pthread_mutex_unlock(&h->kept_lock);
	eosd_mcp_wake(h); /* what came between the handler's last event and now */
}

static void
pull_emit(void *ectx, const char *name, const char *json)
{
	(void)sink_event(ectx, name, json);
}

/* End the kept call c (taken off h->kept): cancelled, its session or eosd gone, or ended. */
static void
kept_end(struct eosd_mcp_call *c, const char *why)
{
	if (c->keep.close)
		c->keep.close(c->keep.ctx);
	c->keep = (struct eosd_stream_source){ 0 };
	/* a cancelled call sends nothing (common/mcp.h), its stream just ends */
	finish_fail(c, EOS_ERRKIND_UNAVAILABLE, why);
}

/* Pull every kept call's new events; end those whose time is over (h->kept_lock held). */
static void
pull_locked(struct eosd_mcp *h)
{
	for (struct eosd_mcp_call **p = &h->kept; *p;) {
		struct eosd_mcp_call *c = *p;
		bool gone, over = cancelled(c, &gone) || gone || h->d->stopping;

		if (!over && c->keep.pull(c->keep.ctx, pull_emit, c)) {
			p = &c->kept_next;
			continue;
		}
		*p = c->kept_next;
		kept_end(c, over ? "events: follow ended (eosd is stopping, or the MCP session "
				   "ended)"
				 : "events: the event stream ended");
	}
}

static void
pull_job(void *arg)
{
	struct eosd_mcp *h = arg;

	pthread_mutex_lock(&h->kept_lock);
	h->pull_queued = false;
	pull_locked(h);
	pthread_mutex_unlock(&h->kept_lock);
}

void
eosd_mcp_wake(struct eosd_mcp *h)
{
	bool go;

	if (!h)
		return;
	pthread_mutex_lock(&h->kept_lock);
	go = h->kept && !h->pull_queued;
	h->pull_queued = h->pull_queued || go;
	pthread_mutex_unlock(&h->kept_lock);
	if (go && (!h->d->pool || eosd_pool_submit(h->d->pool, pull_job, h) < 0)) {
		pthread_mutex_lock(&h->kept_lock);
		h->pull_queued = false; /* the pool is full: the next wake tries again */
		pthread_mutex_unlock(&h->kept_lock);
	}
}

void
eosd_mcp_calls_end_kept(struct eosd_mcp *h)
{
	pthread_mutex_lock(&h->kept_lock);
	while (h->kept) {
		struct eosd_mcp_call *c = h->kept;

		h->kept = c->kept_next;
		kept_end(c, "events: follow ended (eosd is stopping)");
	}
	pthread_mutex_unlock(&h->kept_lock);
}
