/* SPDX-License-Identifier: MIT */
/*
 * supervisor/gateway: one request, from the loop to a worker. On the loop thread: check the
 * peer, route, authenticate (headers only), move the body out and queue. On a worker: parse the
 * envelope, validate the arguments, run the handler (with its event stream open when the client
 * asked for one), make the reply's text and hand it back to the loop (gateway-reply.c). Nothing
 * proportional to the body's size runs on the loop.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errkind.h"
#include "common/failpoint.h"
#include "common/json.h"
#include "common/log.h"

#include "supervisor/gateway-internal.h"
#include "supervisor/obs.h"
#include "supervisor/ops.h"

/* --- the envelope (on the worker) ----------------------------------------------------------- */

static const char *
field_problem(const char *key, const json_t *v)
{
	if (strcmp(key, "request_id") == 0 || strcmp(key, "sandbox_id") == 0)
		return json_is_string(v) || json_is_null(v) ? NULL : "must be a string";
	if (strcmp(key, "args") == 0)
		return json_is_object(v) || json_is_null(v) ? NULL : "must be an object";
	return "is not a request field (request_id, sandbox_id, args)";
}

/* The body as a request envelope object, or NULL with err saying what is wrong. */
static json_t *
parse_body(struct evbuffer *in, struct eos_error *err)
{
	size_t len = evbuffer_get_length(in);
	const char *p = len ? (const char *)evbuffer_pullup(in, -1) : "{}";
	json_error_t jerr;
	json_t *body = p ? json_loadb(p, len ? len : 2, JSON_REJECT_DUPLICATES, &jerr) : NULL;
	const char *key, *problem = NULL;
	json_t *v;

	if (!body || !json_is_object(body)) {
		eos_error_set(err, -EINVAL, "the body is not a JSON object%s%s", body ? "" : ": ",
			      body ? ""
			      : p  ? jerr.text
				   : "out of memory");
		json_decref(body);
		return NULL;
	}
	json_object_foreach(body, key, v)
	{
		if ((problem = field_problem(key, v)))
			break;
	}
	if (problem) {
		eos_error_set(err, -EINVAL, "field '%.64s' %s", key, problem);
		json_decref(body);
		return NULL;
	}
	return body;
}

static const char *
body_string(json_t *body, const char *key)
{
	return json_string_value(json_object_get(body, key));
}

static int
refuse(struct eosd_job *j, int kind, int code)
{
	j->call.kind = kind;
	return code;
}

/*
 * sandbox_id for an operation that takes one: required (needs_sandbox) or optional; a token
 * limited to one sandbox gets that one when none is named and is refused another.
 */
static int
check_sandbox(struct eosd_job *j, const char **sb, struct eos_error *err)
{
	const struct eos_op *op = j->call.op;

	if (!op->needs_sandbox && !op->sandbox_optional) {
		*sb = NULL;
		return 0;
	}
	if (op->needs_sandbox && !*sb)
		return refuse(j, EOS_ERRKIND_INVALID_REQUEST,
			      eos_error_set(err, -EINVAL, "%s: argument 'sandbox_id': required",
					    op->name));
	if (*sb && eos_sandbox_id_check(*sb, err) < 0)
		return refuse(
			j, EOS_ERRKIND_INVALID_REQUEST,
			eos_error_prefix(err, -EINVAL, "%s: argument 'sandbox_id'", op->name));
	if (j->scope.limited && !*sb)
		*sb = j->scope.sandbox;
	if (j->scope.limited && strcmp(*sb, j->scope.sandbox) != 0)
		return refuse(j, EOS_ERRKIND_FORBIDDEN,
			      eos_error_set(err, -EPERM,
					    "this token is limited to sandbox '%s', not '%s'",
					    j->scope.sandbox, *sb));
	return 0;
}

/*
 * On the worker, before the handler: parse the envelope, validate the arguments against the
 * operation and check sandbox_id and the token's sandbox, filling j->call. A negative errno
 * with j->call.kind and err set otherwise.
 */
static int
job_prepare(struct eosd_job *j, struct eos_error *err)
{
	const struct eos_op *op = j->call.op;
	json_t *args;
	const char *sb;
	int r;

	if (!(j->body = parse_body(j->in, err)))
		return refuse(j, EOS_ERRKIND_INVALID_REQUEST, -EINVAL);
	args = json_object_get(j->body, "args");
	sb = body_string(j->body, "sandbox_id");
	j->call.request_id = body_string(j->body, "request_id");
	if (!json_is_object(args) &&
	    (!(args = json_object()) || eos_json_set(j->body, "args", args) < 0))
		return -ENOMEM;
	if (eos_catalog_validate(op, args, err) < 0)
		return refuse(j, EOS_ERRKIND_INVALID_REQUEST, -EINVAL);
	if ((r = check_sandbox(j, &sb, err)) < 0)
		return r;
	j->call.args = args;
	j->call.sandbox_id = sb;
	return 0;
}

/* --- the worker side -------------------------------------------------------------------------- */

/* The handler's result as the reply's status and text, with the request's trace id. */
static void
job_result(struct eosd_job *j, int r, json_t *out, const struct eos_error *err, const char *trace)
{
	int kind;

	if (r >= 0) {
		j->status = 200;
		if (!out)
			out = json_object();
		/* the trace operation's own trace_id names the trace it shows: kept */
		if (out && json_is_object(out) && trace[0] && !json_object_get(out, "trace_id"))
			eos_json_set(out, "trace_id", json_string(trace));
		j->reply = out ? json_dumps(out, JSON_COMPACT) : NULL;
		json_decref(out);
		return;
	}
	json_decref(out);
	kind = j->call.kind >= 0 ? j->call.kind : (int)eos_errkind_of(r);
	j->status = eos_errkind_http_status(kind);
	j->reply = eosd_gateway_error_text(kind, eos_error_message(err, r), j->call.details, trace);
	j->call.details = NULL;
}

/* The root span's attributes of what was asked and by whom (set before the handler runs). */
static void
root_attrs_asked(struct eosd_span *root, const struct eosd_job *j)
{
	eosd_span_set_sandbox(root, j->call.sandbox_id);
	eosd_span_attr_str(root, "operation", j->call.op->name);
	eosd_span_attr_str(root, "surface", eos_surface_name(j->call.op->surface));
	eosd_span_attr_str(root, "request_id", j->call.request_id);
	eosd_span_attr_str(root, "token_id", j->caller.token_id);
}

/* The root span's attributes of how it ended. */
static void
root_attrs_ended(struct eosd_span *root, const struct eosd_job *j, int r)
{
	eosd_span_attr_int(root, "http_status", j->status);
	if (r < 0)
		eosd_span_attr_str(root, "kind",
				   eos_errkind_name(j->call.kind >= 0 ? j->call.kind
								      : (int)eos_errkind_of(r)));
	if (j->kept)
		eosd_span_attr(root, "streaming", json_true());
}

/* call.finish of a handler that returned EOSD_DEFERRED (any thread, once). */
static void
job_finish_deferred(struct eosd_call *c, int r, json_t *out, const struct eos_error *err)
{
	struct eosd_job *j = (struct eosd_job *)((char *)c - offsetof(struct eosd_job, call));

	job_result(j, r, out, err, j->trace);
	eosd_gateway_job_finish(j);
}

static void
job_run(void *arg)
{
	struct eosd_job *j = arg;
	struct eosd *d = j->gw->d;
	struct eos_error err = { 0 };
	struct eosd_span root;
	json_t *out = NULL;
	int r;

	eosd_span_begin_root(d->obs, &root, "daemon.dispatch", j->start_wall, j->start_mono);
	eosd_span_attr_int(&root, "queued_us", (eos_mono_ns() - j->start_mono) / 1000);
	r = job_prepare(j, &err);
	if (r >= 0) {
		eosd_gateway_job_open(j);
		/* tests: hold a request in flight (wait:PATH), its stream open */
		if ((r = EOS_FAILPOINT("gateway.handler")) < 0)
			eos_error_set(&err, r, "%s: failpoint 'gateway.handler'", j->call.op->name);
	}
	root_attrs_asked(&root, j);
	/*
	 * A deferred reply may be finished — and j freed by the loop — by another thread before the
	 * handler even returns: j->trace is set first, and j is not touched after EOSD_DEFERRED.
	 */
	eosd_obs_trace_hex(j->trace);
	j->call.finish = job_finish_deferred;
	if (r >= 0)
		r = j->fn(d, &j->call, &out, &err);
	if (r == EOSD_DEFERRED) { /* answered later by call.finish: job_finish_deferred() */
		eosd_span_attr(&root, "deferred", json_true());
		eosd_span_end(&root, 0, &err);
		atomic_fetch_add(&d->requests, 1);
		return;
	}
	{
		char trace[EOSD_OBS_TRACE_HEX];

		eosd_obs_trace_hex(trace);
		job_result(j, r, out, &err, trace);
	}
	root_attrs_ended(&root, j, r);
	eosd_span_end(&root, r, &err);
	atomic_fetch_add(&d->requests, 1);
	eosd_gateway_job_finish(j);
}

/* --- the loop side ---------------------------------------------------------------------------- */

/* Unix peers must be eosd's uid or root (TCP is loopback and token only). */
static bool
peer_allowed(struct evhttp_request *req)
{
	struct evhttp_connection *c = evhttp_request_get_connection(req);
	struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
	int fd = bev ? (int)bufferevent_getfd(bev) : -1;
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	struct ucred cred;
	socklen_t clen = sizeof(cred);

	if (fd < 0 || getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		return false;
	if (sa.ss_family != AF_UNIX)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0)
		return false;
	return cred.uid == getuid() || cred.uid == 0;
}

/* "/v1/<surface>/<op>" → the operation; replies and returns NULL when there is none. */
static const struct eos_op *
route(struct evhttp_request *req, const char *path)
{
	char surface[32], name[64];
	const struct eos_op *op;
	int n = 0;

	if (sscanf(path, "/v1/%31[a-z_]/%63[A-Za-z0-9_]%n", surface, name, &n) != 2 ||
	    path[n] != '\0') {
		eosd_gateway_send_errorf(
			req, EOS_ERRKIND_NOT_FOUND,
			"no such endpoint '%.200s' (POST /v1/<surface>/<operation>)", path);
		return NULL;
	}
	op = eos_catalog_find(name);
	if (!op || eos_surface_parse(surface) < 0) {
		eosd_gateway_send_errorf(req, EOS_ERRKIND_NOT_FOUND, "no such operation '%s/%s'",
					 surface, name);
		return NULL;
	}
	if (strcmp(eos_surface_name(op->surface), surface) != 0) {
		eosd_gateway_send_errorf(
			req, EOS_ERRKIND_INVALID_REQUEST,
			"operation '%s' is on the %s surface, not %s (POST /v1/%s/%s)", name,
			eos_surface_name(op->surface), surface, eos_surface_name(op->surface),
			name);
		return NULL;
	}
	return op;
}

/* Authenticate; a job ready to queue (its body moved in), or NULL after replying. */
static struct eosd_job *
job_new(struct eosd_gateway *gw, struct evhttp_request *req, const struct eos_op *op)
{
	const char *auth =
		evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
	struct eosd_job *j = eosd_gateway_job_new(gw, req);
	struct eos_error err = { 0 };
	int kind = EOS_ERRKIND_UNAUTHORIZED;

	if (!j) {
		eosd_gateway_send_error(req, EOS_ERRKIND_OUT_OF_MEMORY, "eosd: out of memory");
		return NULL;
	}
	j->fn = eosd_ops_handler(op);
	j->call = (struct eosd_call){ .op = op, .caller = &j->caller, .kind = -1, .body_fd = -1 };
	if ((eosd_gateway_console_request(req)
		     ? eosd_gateway_console_auth(gw, req, op, &j->scope, &kind, &err)
		     : eosd_auth_check(gw->d->auth, auth, op, NULL, &j->scope, &kind, &err)) < 0) {
		eosd_gateway_send_error(req, kind, err.msg);
		eosd_gateway_job_free(j);
		return NULL;
	}
	j->caller = (struct eosd_caller){
		.surface = j->scope.surface,
		.sandbox = j->scope.limited ? j->scope.sandbox : NULL,
		.token_id = j->scope.token_id[0] ? j->scope.token_id : NULL,
	};
	return j;
}

/* Whether the client's Accept names type: "text/event-stream" (supervisor/stream.h) or
 * "application/octet-stream" (eosd_call.body_wanted). */
static bool
accepts(struct evhttp_request *req, const char *type)
{
	const char *a = evhttp_find_header(evhttp_request_get_input_headers(req), "Accept");

	return a && strcasestr(a, type);
}

/*
 * The pool refused the job: its queue is full (eosd is overloaded for the moment, not in
 * conflict with anything the caller did: busy stays for a session's admission) or eosd is
 * stopping. Either way 503 unavailable, with a hint of when to try again.
 */
static void
refuse_queue(struct evhttp_request *req, int r)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
	if (r == -EBUSY)
		eosd_gateway_send_errorf(req, EOS_ERRKIND_UNAVAILABLE,
					 "eosd is busy (its queue of requests is full): try again");
	else
		eosd_gateway_send_error(req, EOS_ERRKIND_UNAVAILABLE, "eosd is stopping");
}

static void
dispatch(struct eosd_gateway *gw, struct evhttp_request *req, const struct eos_op *op)
{
	struct eosd_job *j = job_new(gw, req, op);
	int r;

	if (!j)
		return;
	if (!j->fn) {
		eosd_gateway_send_errorf(req, EOS_ERRKIND_UNSUPPORTED,
					 "operation '%s' is not served yet", op->name);
		eosd_gateway_job_free(j);
		return;
	}
	j->wants_stream = op->long_running && accepts(req, "text/event-stream");
	j->call.body_wanted = !j->wants_stream && accepts(req, "application/octet-stream");
	r = eosd_pool_submit(gw->pool, job_run, j);
	if (r < 0) {
		refuse_queue(req, r);
		eosd_gateway_job_free(j);
		return;
	}
	eosd_gateway_track(gw, req);
}

static const char *
request_path(struct evhttp_request *req)
{
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;

	return path && path[0] ? path : "/";
}

void
eosd_gateway_request_cb(struct evhttp_request *req, void *arg)
{
	struct eosd_gateway *gw = arg;
	const char *path = request_path(req);
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	struct evhttp_connection *c = evhttp_request_get_connection(req);
	const struct eos_op *op;

	if (c)
		eosd_gateway_conn_read(gw, evhttp_connection_get_bufferevent(c));
	if (!peer_allowed(req)) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		eosd_gateway_send_error(req, EOS_ERRKIND_FORBIDDEN,
					"this socket serves eosd's own user only");
		return;
	}
	if (strcmp(path, "/v1/health") == 0 && cmd == EVHTTP_REQ_GET) {
		eosd_gateway_send_text(req, 200, "{\"ok\":true}");
		return;
	}
	if (eosd_gateway_console_route(gw, req, path))
		return;
	if (strcmp(path, "/mcp") == 0)
		return eosd_gateway_mcp(gw, req);
	if (!(op = route(req, path)))
		return;
	if (cmd != EVHTTP_REQ_POST)
		eosd_gateway_send_errorf(req, EOS_ERRKIND_INVALID_REQUEST, "use POST for '%s'",
					 path);
	else if (gw->d->stopping)
		eosd_gateway_send_error(req, EOS_ERRKIND_UNAVAILABLE, "eosd is stopping");
	else if (evbuffer_get_length(evhttp_request_get_input_buffer(req)) > EOSD_BODY_MAX)
		eosd_gateway_send_errorf(req, EOS_ERRKIND_TOO_LARGE,
					 "the body is larger than %d bytes", EOSD_BODY_MAX);
	else
		dispatch(gw, req, op);
}
