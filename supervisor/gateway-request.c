/* SPDX-License-Identifier: MIT */
/*
 * supervisor/gateway: one request, from the loop to a worker and back. On the loop thread:
 * route, check the peer, parse the envelope, authenticate, validate, queue. On a worker: the
 * handler and the reply's text. Back on the loop (done_ev): send it. Nothing here blocks the
 * loop but JSON parsing of a body within EOSD_BODY_MAX.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errkind.h"
#include "common/json.h"
#include "common/log.h"

#include "supervisor/gateway-internal.h"
#include "supervisor/ops.h"

/* --- replies ---------------------------------------------------------------------------------- */

static void
send_text(struct evhttp_request *req, int status, const char *text)
{
	struct evbuffer *buf = evbuffer_new();

	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/json");
	if (buf) {
		evbuffer_add(buf, text, strlen(text));
		evbuffer_add(buf, "\n", 1);
	}
	evhttp_send_reply(req, status, NULL, buf);
	if (buf)
		evbuffer_free(buf);
}

/* {"error":{"kind","message","details"?}} as text, steals details. NULL on OOM. */
static char *
error_text(int kind, const char *message, json_t *details)
{
	EOS_CLEANUP(json_decrefp)
	json_t *e = json_pack("{s:s, s:s}", "kind", eos_errkind_name(kind), "message", message);
	EOS_CLEANUP(json_decrefp) json_t *root = NULL;

	if (!e) {
		json_decref(details);
		return NULL;
	}
	if (details && eos_json_set(e, "details", details) < 0)
		return NULL;
	root = json_pack("{s:O}", "error", e);
	return root ? json_dumps(root, JSON_COMPACT) : NULL;
}

static const char oom_text[] =
	"{\"error\":{\"kind\":\"out_of_memory\",\"message\":\"eosd: out of memory\"}}";

static void
send_error(struct evhttp_request *req, int kind, const char *message)
{
	cleanup_free char *text = error_text(kind, message, NULL);

	send_text(req, text ? eos_errkind_http_status(kind) : 503, text ? text : oom_text);
}

static void send_errorf(struct evhttp_request *req, int kind, const char *fmt, ...)
	EOS_PRINTF(3, 4);

static void
send_errorf(struct evhttp_request *req, int kind, const char *fmt, ...)
{
	char msg[EOS_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	send_error(req, kind, msg);
}

/* --- the worker side -------------------------------------------------------------------------- */

static void
job_free(struct eosd_job *j)
{
	json_decref(j->body);
	json_decref(j->call.details);
	free(j->reply);
	free(j);
}

/* The handler's result as the reply's status and text. */
static void
job_result(struct eosd_job *j, int r, json_t *out, const struct eos_error *err)
{
	int kind;

	if (r >= 0) {
		j->status = 200;
		j->reply = out ? json_dumps(out, JSON_COMPACT) : strdup("{}");
		return;
	}
	kind = j->call.kind >= 0 ? j->call.kind : (int)eos_errkind_of(r);
	j->status = eos_errkind_http_status(kind);
	j->reply = error_text(kind, eos_error_message(err, r), j->call.details);
	j->call.details = NULL;
}

static void
job_run(void *arg)
{
	struct eosd_job *j = arg;
	struct eosd_gateway *gw = j->gw;
	struct eos_error err = { 0 };
	json_t *out = NULL;
	int r = j->fn(gw->d, &j->call, &out, &err);

	job_result(j, r, out, &err);
	json_decref(out);
	pthread_mutex_lock(&gw->done_lock);
	j->next = gw->done;
	gw->done = j;
	pthread_mutex_unlock(&gw->done_lock);
	event_active(gw->done_ev, EV_READ, 1);
}

/* --- back on the loop ------------------------------------------------------------------------- */

void
eosd_gateway_flush_done(struct eosd_gateway *gw)
{
	struct eosd_job *list, *next;

	pthread_mutex_lock(&gw->done_lock);
	list = gw->done;
	gw->done = NULL;
	pthread_mutex_unlock(&gw->done_lock);
	for (; list; list = next) {
		next = list->next;
		if (!evhttp_request_get_connection(list->req))
			gw->in_flight--; /* the client left: evhttp frees req, completes nothing */
		send_text(list->req, list->reply ? list->status : 503,
			  list->reply ? list->reply : oom_text);
		job_free(list);
	}
}

void
eosd_gateway_done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct eosd_gateway *gw = arg;

	(void)fd, (void)what;
	eosd_gateway_flush_done(gw);
	if (gw->d->stopping && gw->in_flight == 0)
		event_base_loopexit(gw->base, NULL);
}

/* A queued request's reply is written out: only then may a stopping eosd leave its loop. */
static void
job_sent_cb(struct evhttp_request *req, void *arg)
{
	struct eosd_gateway *gw = arg;

	(void)req;
	gw->in_flight--;
	if (gw->d->stopping && gw->in_flight == 0)
		event_base_loopexit(gw->base, NULL);
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
		send_errorf(req, EOS_ERRKIND_NOT_FOUND,
			    "no such endpoint '%.200s' (POST /v1/<surface>/<operation>)", path);
		return NULL;
	}
	op = eos_catalog_find(name);
	if (!op || eos_surface_parse(surface) < 0) {
		send_errorf(req, EOS_ERRKIND_NOT_FOUND, "no such operation '%s/%s'", surface, name);
		return NULL;
	}
	if (strcmp(eos_surface_name(op->surface), surface) != 0) {
		send_errorf(req, EOS_ERRKIND_INVALID_REQUEST,
			    "operation '%s' is on the %s surface, not %s (POST /v1/%s/%s)", name,
			    eos_surface_name(op->surface), surface, eos_surface_name(op->surface),
			    name);
		return NULL;
	}
	return op;
}

static const char *
field_problem(const char *key, const json_t *v)
{
	if (strcmp(key, "request_id") == 0 || strcmp(key, "sandbox_id") == 0)
		return json_is_string(v) || json_is_null(v) ? NULL : "must be a string";
	if (strcmp(key, "args") == 0)
		return json_is_object(v) || json_is_null(v) ? NULL : "must be an object";
	return "is not a request field (request_id, sandbox_id, args)";
}

/* The body as a request envelope object; *msg says what is wrong otherwise. */
static json_t *
parse_body(struct evhttp_request *req, char *msg, size_t n)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	const char *p = len ? (const char *)evbuffer_pullup(in, -1) : "{}";
	json_error_t jerr;
	json_t *body = json_loadb(p, len ? len : 2, JSON_REJECT_DUPLICATES, &jerr);
	const char *key;
	json_t *v;

	if (!body || !json_is_object(body)) {
		snprintf(msg, n, "the body is not a JSON object%s%s", body ? "" : ": ",
			 body ? "" : jerr.text);
		json_decref(body);
		return NULL;
	}
	json_object_foreach(body, key, v)
	{
		const char *problem = field_problem(key, v);

		if (problem) {
			snprintf(msg, n, "field '%.64s' %s", key, problem);
			json_decref(body);
			return NULL;
		}
	}
	return body;
}

static const char *
body_string(json_t *body, const char *key)
{
	return json_string_value(json_object_get(body, key));
}

/* Validate the envelope and the arguments against op, filling j->call; replies on failure. */
static bool
check_call(struct evhttp_request *req, struct eosd_job *j)
{
	const struct eos_op *op = j->call.op;
	struct eos_error err = { 0 };
	json_t *args = json_object_get(j->body, "args");
	const char *sb = body_string(j->body, "sandbox_id");

	if (!json_is_object(args) &&
	    (!(args = json_object()) || eos_json_set(j->body, "args", args) < 0)) {
		send_error(req, EOS_ERRKIND_OUT_OF_MEMORY, "eosd: out of memory");
		return false;
	}
	if (eos_catalog_validate(op, args, &err) < 0) {
		send_errorf(req, EOS_ERRKIND_INVALID_REQUEST, "%s", err.msg);
		return false;
	}
	if (op->needs_sandbox && (!sb || eos_sandbox_id_check(sb, &err) < 0)) {
		send_errorf(req, EOS_ERRKIND_INVALID_REQUEST, "%s: argument 'sandbox_id': %s",
			    op->name, sb ? err.msg : "required");
		return false;
	}
	if (op->needs_sandbox && j->scope.limited && strcmp(sb, j->scope.sandbox) != 0) {
		send_errorf(req, EOS_ERRKIND_FORBIDDEN,
			    "this token is limited to sandbox '%s', not '%s'", j->scope.sandbox,
			    sb);
		return false;
	}
	j->call.args = args;
	j->call.sandbox_id = op->needs_sandbox ? sb : NULL;
	j->call.request_id = body_string(j->body, "request_id");
	return true;
}

/* Parse, authenticate and check; a job ready to queue, or NULL after replying. */
static struct eosd_job *
job_new(struct eosd_gateway *gw, struct evhttp_request *req, const struct eos_op *op)
{
	const char *auth =
		evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
	struct eosd_job *j = calloc(1, sizeof(*j));
	struct eos_error err = { 0 };
	char msg[256];
	int kind = EOS_ERRKIND_UNAUTHORIZED;

	if (!j) {
		send_error(req, EOS_ERRKIND_OUT_OF_MEMORY, "eosd: out of memory");
		return NULL;
	}
	*j = (struct eosd_job){ .gw = gw, .req = req, .fn = eosd_ops_handler(op) };
	j->call = (struct eosd_call){ .op = op, .caller = &j->caller, .kind = -1 };
	if (eosd_auth_check(gw->d->auth, auth, op, NULL, &j->scope, &kind, &err) < 0)
		send_error(req, kind, err.msg);
	else if (!(j->body = parse_body(req, msg, sizeof(msg))))
		send_error(req, EOS_ERRKIND_INVALID_REQUEST, msg);
	else if (check_call(req, j)) {
		j->caller = (struct eosd_caller){
			.surface = j->scope.surface,
			.sandbox = j->scope.limited ? j->scope.sandbox : NULL,
			.token_id = j->scope.token_id[0] ? j->scope.token_id : NULL,
		};
		return j;
	}
	job_free(j);
	return NULL;
}

static void
dispatch(struct eosd_gateway *gw, struct evhttp_request *req, const struct eos_op *op)
{
	struct eosd_job *j = job_new(gw, req, op);
	int r;

	if (!j)
		return;
	if (!j->fn) {
		send_errorf(req, EOS_ERRKIND_UNSUPPORTED, "operation '%s' is not served yet",
			    op->name);
		job_free(j);
		return;
	}
	r = eosd_pool_submit(gw->pool, job_run, j);
	if (r >= 0)
		evhttp_request_set_on_complete_cb(req, job_sent_cb, gw);
	if (r < 0) {
		send_errorf(req, r == -EBUSY ? EOS_ERRKIND_BUSY : EOS_ERRKIND_UNAVAILABLE,
			    "eosd is %s: try again",
			    r == -EBUSY ? "busy (queue full)" : "stopping");
		job_free(j);
		return;
	}
	gw->in_flight++;
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
	const struct eos_op *op;

	if (!peer_allowed(req)) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		send_error(req, EOS_ERRKIND_FORBIDDEN, "this socket serves eosd's own user only");
		return;
	}
	if (strcmp(path, "/v1/health") == 0 && cmd == EVHTTP_REQ_GET) {
		send_text(req, 200, "{\"ok\":true}");
		return;
	}
	if (!(op = route(req, path)))
		return;
	if (cmd != EVHTTP_REQ_POST)
		send_errorf(req, EOS_ERRKIND_INVALID_REQUEST, "use POST for '%s'", path);
	else if (gw->d->stopping)
		send_error(req, EOS_ERRKIND_UNAVAILABLE, "eosd is stopping");
	else if (evbuffer_get_length(evhttp_request_get_input_buffer(req)) > EOSD_BODY_MAX)
		send_errorf(req, EOS_ERRKIND_TOO_LARGE, "the body is larger than %d bytes",
			    EOSD_BODY_MAX);
	else
		dispatch(gw, req, op);
}
