/* SPDX-License-Identifier: MIT */
/*
 * supervisor/mcp-http: the /mcp endpoint's sessions, and the messages of one request
 * (supervisor/mcp-http.h). A POST carries one JSON-RPC message (batches are gone since
 * 2025-06-18): a request is answered with its response — 200 application/json, or the stream a
 * tools/call chose (mcp-http-call.c) —, a notification or response with 202 and no body, or a
 * 400 carrying the error when it is not a valid message.
 */
#include "supervisor/mcp-http.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/errkind.h"
#include "common/json.h"

#include "supervisor/mcp-http-internal.h"

char *
eosd_mcp_error_text(int code, int kind, const char *message)
{
	EOS_CLEANUP(json_decrefp)
	json_t *m =
		json_pack("{s:s,s:n,s:{s:i,s:s,s:{s:s}}}", "jsonrpc", "2.0", "id", "error", "code",
			  code, "message", message, "data", "kind", eos_errkind_name(kind));

	return m ? json_dumps(m, JSON_COMPACT) : NULL;
}

static void refuse(struct eosd_job *j, int status, int code, int kind, const char *fmt, ...)
	EOS_PRINTF(5, 6);

static void
refuse(struct eosd_job *j, int status, int code, int kind, const char *fmt, ...)
{
	char msg[EOS_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	eosd_gateway_mcp_reply(j, status, eosd_mcp_error_text(code, kind, msg));
}

/* --- where messages go ------------------------------------------------------------------------ */

void
eosd_mcp_out_close(struct eosd_mcp_out *out, int status)
{
	struct eosd_job *j = TAKE_PTR(out->job);
	char *text = TAKE_PTR(out->response);

	if (!j)
		free(text);
	else if (out->stream)
		eosd_gateway_mcp_reply(j, 200, text);
	else
		eosd_gateway_mcp_reply(j, text ? status : 202, text);
}

/*
 * common/mcp.h's send callback (s->lock held): a response is kept to end the reply with; a
 * notification (progress) goes at once on a stream, and nowhere in a JSON reply.
 */
static void
session_send(void *arg, const json_t *msg)
{
	struct eosd_mcp_session *s = arg;
	struct eosd_mcp_out *out = s->out;
	bool response = json_object_get(msg, "id") != NULL;
	char *text;

	if (!out || !out->job || (!response && !out->stream))
		return;
	if (!(text = json_dumps(msg, JSON_COMPACT)))
		return;
	if (response) {
		free(out->response);
		out->response = text;
		out->error = json_object_get(msg, "error") != NULL;
		return;
	}
	(void)eosd_gateway_mcp_event(out->job, text);
	free(text);
}

/* --- sessions --------------------------------------------------------------------------------- */

static void
session_free(struct eosd_mcp_session *s)
{
	eos_mcp_free(s->mcp);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void
eosd_mcp_session_unref(struct eosd_mcp_session *s)
{
	struct eosd_mcp *h = s->h;
	bool last;

	pthread_mutex_lock(&h->lock);
	last = --s->refs == 0;
	pthread_mutex_unlock(&h->lock);
	if (last)
		session_free(s);
}

/* Unref each session of list (linked by next; the table's references). */
static void
unref_list(struct eosd_mcp_session *list)
{
	while (list) {
		struct eosd_mcp_session *s = list;

		list = s->next;
		eosd_mcp_session_unref(s);
	}
}

/* Take *p out of the table onto *dropped (h->lock held). */
static void
remove_locked(struct eosd_mcp *h, struct eosd_mcp_session **p, struct eosd_mcp_session **dropped)
{
	struct eosd_mcp_session *s = *p;

	*p = s->next;
	s->gone = true;
	s->next = *dropped;
	*dropped = s;
	h->nsessions--;
}

/* Whether s has nothing but the table's reference and no request for EOSD_MCP_IDLE_S. */
static bool
expired(const struct eosd_mcp_session *s, int64_t now)
{
	return s->refs == 1 && now - s->used_ns > (int64_t)EOSD_MCP_IDLE_S * 1000000000;
}

/*
 * Make room for a session (h->lock held): end the expired ones, then, at the cap, the idle one
 * used longest ago. The sessions taken out go onto *dropped.
 */
static void
prune_locked(struct eosd_mcp *h, int64_t now, struct eosd_mcp_session **dropped)
{
	struct eosd_mcp_session **oldest = NULL;

	for (struct eosd_mcp_session **p = &h->sessions; *p;) {
		if (expired(*p, now)) {
			remove_locked(h, p, dropped);
			continue;
		}
		if ((*p)->refs == 1 && (!oldest || (*p)->used_ns < (*oldest)->used_ns))
			oldest = p;
		p = &(*p)->next;
	}
	if (h->nsessions >= EOSD_MCP_SESSIONS_MAX && oldest)
		remove_locked(h, oldest, dropped);
}

/* Put s in the table (a reference of its own); -EBUSY when every session is busy. */
static int
session_insert(struct eosd_mcp_session *s)
{
	struct eosd_mcp *h = s->h;
	struct eosd_mcp_session *dropped = NULL;
	int64_t now = eos_mono_ns();
	int r = 0;

	pthread_mutex_lock(&h->lock);
	prune_locked(h, now, &dropped);
	if (h->nsessions >= EOSD_MCP_SESSIONS_MAX) {
		r = -EBUSY;
	} else {
		s->next = h->sessions;
		h->sessions = s;
		h->nsessions++;
		s->refs++;
		s->used_ns = now;
	}
	pthread_mutex_unlock(&h->lock);
	unref_list(dropped);
	return r;
}

static bool
same_token(const struct eosd_auth_scope *a, const struct eosd_auth_scope *b)
{
	return a->surface == b->surface && a->limited == b->limited &&
	       strcmp(a->sandbox, b->sandbox) == 0 && strcmp(a->token_id, b->token_id) == 0;
}

/* The session rq names, made by rq's token (a reference), or NULL. */
static struct eosd_mcp_session *
session_find(struct eosd_mcp *h, const struct eosd_mcp_request *rq)
{
	struct eosd_mcp_session *found = NULL, *dropped = NULL;
	int64_t now = eos_mono_ns();

	if (strlen(rq->session) != EOSD_MCP_SESSION_ID_LEN)
		return NULL;
	pthread_mutex_lock(&h->lock);
	for (struct eosd_mcp_session **p = &h->sessions; *p && !found; p = &(*p)->next) {
		struct eosd_mcp_session *s = *p;

		if (!eosd_auth_equal(s->id, rq->session, EOSD_MCP_SESSION_ID_LEN) ||
		    !same_token(&s->scope, &rq->scope))
			continue;
		if (expired(s, now)) {
			remove_locked(h, p, &dropped);
			break;
		}
		s->refs++;
		s->used_ns = now;
		found = s;
	}
	pthread_mutex_unlock(&h->lock);
	unref_list(dropped);
	return found;
}

static int
session_new(struct eosd_mcp *h, const struct eosd_auth_scope *scope, struct eosd_mcp_session **ret,
	    struct eos_error *err)
{
	struct eosd_mcp_session *s = calloc(1, sizeof(*s));
	struct eos_mcp_config cfg;
	int r;

	if (!s)
		return eos_error_set(err, -ENOMEM, "out of memory");
	*s = (struct eosd_mcp_session){ .h = h, .scope = *scope, .refs = 1 };
	s->caller =
		(struct eosd_caller){ .surface = s->scope.surface,
				      .sandbox = s->scope.limited ? s->scope.sandbox : NULL,
				      .token_id = s->scope.token_id[0] ? s->scope.token_id : NULL };
	pthread_mutex_init(&s->lock, NULL);
	cfg = (struct eos_mcp_config){ .name = "eos",
				       .version = PACKAGE_VERSION,
				       .instructions = eos_mcp_instructions,
				       .surfaces = 1u << scope->surface,
				       .sandbox_id = s->caller.sandbox,
				       .send = session_send,
				       .send_arg = s,
				       .start = eosd_mcp_call_start,
				       .start_arg = s };
	r = eosd_auth_random_hex(s->id, EOSD_MCP_SESSION_ID_LEN / 2);
	r = r < 0 ? eos_error_set(err, r, "getrandom failed") : eos_mcp_new(&cfg, &s->mcp, err);
	if (r < 0) {
		session_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* --- a request -------------------------------------------------------------------------------- */

enum msg_kind {
	MSG_OTHER,   /* a notification, a response, or no valid message */
	MSG_REQUEST, /* a method and an id: answered */
	MSG_INITIALIZE,
};

static enum msg_kind
classify(const json_t *msg)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	const json_t *id = json_object_get(msg, "id");

	if (!method || !(json_is_string(id) || json_is_integer(id)))
		return MSG_OTHER;
	return strcmp(method, "initialize") == 0 ? MSG_INITIALIZE : MSG_REQUEST;
}

/*
 * The session of rq (a reference): the one Mcp-Session-Id names, or a new one (not in the table
 * yet) for an initialize without it. NULL after refusing the request.
 */
static struct eosd_mcp_session *
session_of(struct eosd_mcp *h, struct eosd_job *j, const struct eosd_mcp_request *rq,
	   enum msg_kind kind)
{
	struct eosd_mcp_session *s = NULL;
	struct eos_error err = { 0 };
	int r;

	if (!rq->has_session && kind != MSG_INITIALIZE) {
		refuse(j, 400, EOS_MCP_INVALID_REQUEST, EOS_ERRKIND_INVALID_REQUEST,
		       "Mcp-Session-Id is required: only initialize comes without one");
		return NULL;
	}
	if (!rq->has_session) {
		if ((r = session_new(h, &rq->scope, &s, &err)) < 0)
			refuse(j, 500, EOS_MCP_INTERNAL_ERROR, (int)eos_errkind_of(r), "%s",
			       eos_error_message(&err, r));
		return s;
	}
	if (!(s = session_find(h, rq))) {
		refuse(j, 404, EOS_MCP_INVALID_REQUEST, EOS_ERRKIND_NOT_FOUND,
		       "no MCP session '%s' for this token (ended, or never made): initialize "
		       "again",
		       rq->session);
		return NULL;
	}
	if (kind != MSG_INITIALIZE && rq->has_version &&
	    strcmp(rq->version, EOS_MCP_PROTOCOL_VERSION) != 0) {
		eosd_mcp_session_unref(s);
		refuse(j, 400, EOS_MCP_INVALID_REQUEST, EOS_ERRKIND_INVALID_REQUEST,
		       "MCP-Protocol-Version '%s' is not the session's (%s)", rq->version,
		       EOS_MCP_PROTOCOL_VERSION);
		return NULL;
	}
	return s;
}

/* A new session answered its initialize (s->lock held): into the table, its id to the client. */
static void
admit(struct eosd_mcp_session *s, struct eosd_mcp_out *out, struct eosd_mcp_request *rq)
{
	if (!out->response || out->error)
		return; /* a failed initialize makes no session */
	if (session_insert(s) < 0) {
		free(out->response);
		out->response = eosd_mcp_error_text(EOS_MCP_INTERNAL_ERROR, EOS_ERRKIND_BUSY,
						    "eosd's MCP sessions are all busy: try again");
		eosd_mcp_out_close(out, 503);
		return;
	}
	snprintf(rq->reply_session, sizeof(rq->reply_session), "%s", s->id);
}

static bool
is_cancel(const json_t *msg)
{
	const char *method = json_string_value(json_object_get(msg, "method"));

	return method && strcmp(method, "notifications/cancelled") == 0;
}

/* Hand msg to s's server; answer, or let the call it started run on this worker. */
static void
handle(struct eosd_mcp_session *s, struct eosd_job *j, struct eosd_mcp_request *rq,
       const json_t *msg, enum msg_kind kind)
{
	struct eosd_mcp_out out = { .job = j, .may_stream = rq->sse };
	struct eosd_mcp_call *started;

	pthread_mutex_lock(&s->lock);
	s->out = &out;
	eos_mcp_handle(s->mcp, msg);
	s->out = NULL;
	started = TAKE_PTR(s->started);
	if (!rq->has_session)
		admit(s, &out, rq);
	eosd_mcp_out_close(&out, kind == MSG_OTHER ? 400 : 200);
	pthread_mutex_unlock(&s->lock);
	if (is_cancel(msg))
		eosd_mcp_wake(s->h); /* a call following events stops */
	if (started)
		eosd_mcp_call_run(started);
}

/* DELETE: the session ends; calls in flight run to their end, their replies still sent. */
static void
serve_delete(struct eosd_mcp *h, struct eosd_job *j, const struct eosd_mcp_request *rq)
{
	struct eosd_mcp_session *s, *dropped = NULL;

	if (!rq->has_session)
		return refuse(j, 400, EOS_MCP_INVALID_REQUEST, EOS_ERRKIND_INVALID_REQUEST,
			      "DELETE needs the Mcp-Session-Id of the session to end");
	if (!(s = session_find(h, rq)))
		return refuse(j, 404, EOS_MCP_INVALID_REQUEST, EOS_ERRKIND_NOT_FOUND,
			      "no MCP session '%s' for this token", rq->session);
	pthread_mutex_lock(&h->lock);
	for (struct eosd_mcp_session **p = &h->sessions; *p; p = &(*p)->next)
		if (*p == s) {
			remove_locked(h, p, &dropped);
			break;
		}
	pthread_mutex_unlock(&h->lock);
	unref_list(dropped);
	eosd_mcp_wake(h); /* its calls following events end */
	eosd_gateway_mcp_reply(j, 204, NULL);
	eosd_mcp_session_unref(s);
}

void
eosd_mcp_serve(struct eosd_mcp *h, struct eosd_job *j, struct eosd_mcp_request *rq,
	       const char *body, size_t len)
{
	EOS_CLEANUP(json_decrefp) json_t *msg = NULL;
	struct eosd_mcp_session *s;
	enum msg_kind kind;
	json_error_t je;

	if (rq->del)
		return serve_delete(h, j, rq);
	if (!(msg = json_loadb(body, len, JSON_DECODE_ANY, &je)))
		return refuse(j, 400, EOS_MCP_PARSE_ERROR, EOS_ERRKIND_INVALID_REQUEST,
			      "parse error: %s", je.text);
	kind = classify(msg);
	if (!(s = session_of(h, j, rq, kind)))
		return;
	handle(s, j, rq, msg, kind);
	eosd_mcp_session_unref(s);
}

/* --- life ------------------------------------------------------------------------------------- */

int
eosd_mcp_new(struct eosd *d, struct eosd_mcp **ret, struct eos_error *err)
{
	struct eosd_mcp *h = calloc(1, sizeof(*h));

	if (!h)
		return eos_error_set(err, -ENOMEM, "out of memory");
	h->d = d;
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->kept_lock, NULL);
	*ret = h;
	return 0;
}

void
eosd_mcp_free(struct eosd_mcp *h)
{
	struct eosd_mcp_session *dropped = NULL;

	if (!h)
		return;
	eosd_mcp_calls_end_kept(h);
	pthread_mutex_lock(&h->lock);
	while (h->sessions)
		remove_locked(h, &h->sessions, &dropped);
	pthread_mutex_unlock(&h->lock);
	/* no call is in flight any more: the pool ran its last jobs, the commands answered */
	unref_list(dropped);
	pthread_mutex_destroy(&h->kept_lock);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
