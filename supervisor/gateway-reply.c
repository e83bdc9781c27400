/* SPDX-License-Identifier: MIT */
/*
 * supervisor/gateway: replies, from the workers back to the loop. A worker never touches
 * evhttp: it queues what it has for the client on its job — event text while the handler runs,
 * the reply once it has returned — and hands the job to the loop (gw->done, event_active()).
 * On the loop, a plain request gets one reply. A streamed one (supervisor/stream.h) gets
 * "200 text/event-stream" when its handler starts (evhttp_send_reply_start()), a chunk for each
 * batch of events (evhttp_send_reply_chunk()), and a last chunk holding the "result" or "error"
 * event (evhttp_send_reply_end()).
 *
 * A client that leaves: libevent 2.1 detaches a request whose reply is not complete from its
 * failed connection (evhttp_request_get_connection() is then NULL) and leaves the request to
 * its owner. The loop then writes nothing more for it and, once the handler has returned,
 * evhttp_send_reply() or evhttp_send_reply_end() frees it. So nothing leaks, and the handler
 * is never cancelled.
 */
#include <assert.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errkind.h"
#include "common/json.h"

#include "supervisor/gateway-internal.h"
#include "supervisor/ops.h"

static const char oom_text[] =
	"{\"error\":{\"kind\":\"out_of_memory\",\"message\":\"eosd: out of memory\"}}";

/* --- plain replies ---------------------------------------------------------------------------- */

void
eosd_gateway_send_text(struct evhttp_request *req, int status, const char *text)
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

char *
eosd_gateway_error_text(int kind, const char *message, json_t *details, const char *trace_id)
{
	EOS_CLEANUP(json_decrefp)
	json_t *root = eosd_error_envelope(kind, message, details, trace_id);

	return root ? json_dumps(root, JSON_COMPACT) : NULL;
}

void
eosd_gateway_send_error(struct evhttp_request *req, int kind, const char *message)
{
	cleanup_free char *text = eosd_gateway_error_text(kind, message, NULL, NULL);

	eosd_gateway_send_text(req, text ? eos_errkind_http_status(kind) : 503,
			       text ? text : oom_text);
}

void
eosd_gateway_send_errorf(struct evhttp_request *req, int kind, const char *fmt, ...)
{
	char msg[EOS_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	eosd_gateway_send_error(req, kind, msg);
}

struct eosd_job *
eosd_gateway_job_new(struct eosd_gateway *gw, struct evhttp_request *req)
{
	struct eosd_job *j = calloc(1, sizeof(*j));

	if (j)
		j->call.body_fd = -1; /* before any free: 0 would close stdin */
	if (!j || !(j->in = evbuffer_new()) ||
	    evbuffer_add_buffer(j->in, evhttp_request_get_input_buffer(req)) < 0) {
		if (j)
			eosd_gateway_job_free(j);
		return NULL;
	}
	j->gw = gw;
	j->req = req;
	j->start_wall = eos_wall_ns();
	j->start_mono = eos_mono_ns();
	j->call.kind = -1;
	return j;
}

void
eosd_gateway_job_free(struct eosd_job *j)
{
	if (j->call.body_fd >= 0)
		close(j->call.body_fd);
	free(j->mcp);
	if (j->in)
		evbuffer_free(j->in);
	json_decref(j->body);
	json_decref(j->call.details);
	eos_buf_release(&j->events);
	eos_buf_release(&j->out);
	free(j->reply);
	free(j);
}

/* --- on the worker ---------------------------------------------------------------------------- */

/* Put j on the loop's list unless it is there (gw->done_lock held). */
static void
post_locked(struct eosd_job *j)
{
	if (j->queued)
		return;
	j->queued = true;
	j->next = j->gw->done;
	j->gw->done = j;
}

void
eosd_gateway_job_open(struct eosd_job *j)
{
	if (!j->wants_stream)
		return;
	j->stream = (struct eosd_stream){ .job = j };
	j->call.stream = &j->stream;
	eosd_gateway_job_stream(j);
}

void
eosd_gateway_job_stream(struct eosd_job *j)
{
	struct eosd_gateway *gw = j->gw;

	pthread_mutex_lock(&gw->done_lock);
	j->opened = true;
	post_locked(j);
	pthread_mutex_unlock(&gw->done_lock);
	event_active(gw->done_ev, EV_READ, 1);
}

void
eosd_gateway_job_finish(struct eosd_job *j)
{
	struct eosd_gateway *gw = j->gw; /* the loop may free j once the lock is released */

	j->call.stream = NULL;
	pthread_mutex_lock(&gw->done_lock);
	j->finished = true;
	post_locked(j);
	pthread_mutex_unlock(&gw->done_lock);
	event_active(gw->done_ev, EV_READ, 1);
}

/* Append "event: NAME\ndata: TEXT\n\n" to b; b is unchanged on failure. */
int
eosd_gateway_event_format(struct eos_buf *b, const char *name, const char *text)
{
	size_t len = b->len;

	if (eos_buf_append_str(b, "event: ") < 0 || eos_buf_append_str(b, name) < 0 ||
	    eos_buf_append_str(b, "\ndata: ") < 0 || eos_buf_append_str(b, text) < 0 ||
	    eos_buf_append_str(b, "\n\n") < 0) {
		eos_buf_truncate(b, len);
		return -ENOMEM;
	}
	return 0;
}

static bool
event_name_valid(const char *name)
{
	size_t n = strlen(name);

	return n > 0 && n <= EOSD_STREAM_EVENT_NAME_MAX &&
	       strspn(name, "abcdefghijklmnopqrstuvwxyz_") == n;
}

int
eosd_gateway_job_event(struct eosd_job *j, const char *name, const char *text)
{
	struct eosd_gateway *gw = j->gw;
	int r;

	pthread_mutex_lock(&gw->done_lock);
	if (j->events.len > EOSD_STREAM_QUEUE_MAX)
		r = -ENOBUFS;
	else if ((r = eosd_gateway_event_format(&j->events, name, text)) == 0)
		post_locked(j);
	pthread_mutex_unlock(&gw->done_lock);
	if (r == 0)
		event_active(gw->done_ev, EV_READ, 1);
	return r;
}

int
eosd_stream_send(struct eosd_stream *s, const char *name, json_t *data)
{
	EOS_CLEANUP(json_decrefp) json_t *d = data;
	cleanup_free char *text = NULL;

	if (!s || !d)
		return 0;
	assert(event_name_valid(name));
	text = json_dumps(d, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text)
		return -ENOMEM;
	if (!s->job)
		return s->sink.event ? s->sink.event(s->sink.arg, name, text) : 0;
	return eosd_gateway_job_event(s->job, name, text);
}

int
eosd_stream_progress(struct eosd_stream *s, json_t *data, bool force)
{
	int64_t now;

	if (!s) {
		json_decref(data);
		return 0;
	}
	now = eos_mono_ns();
	if (!force && now < s->next_progress_ns) {
		json_decref(data);
		return 0;
	}
	s->next_progress_ns = now + (int64_t)EOSD_STREAM_PROGRESS_MS * 1000000;
	return eosd_stream_send(s, "progress", data);
}

bool
eosd_stream_wanted(const struct eosd_stream *s)
{
	return s != NULL;
}

int
eosd_stream_keep(struct eosd_stream *s, const struct eosd_stream_source *src)
{
	if (!s)
		return -ENOTCONN;
	if (!s->job)
		return s->sink.keep ? s->sink.keep(s->sink.arg, src) : -ENOTCONN;
	s->job->keep = *src;
	s->job->kept = true;
	return 0;
}

struct eosd_stream *
eosd_stream_new_sink(const struct eosd_stream_sink *sink)
{
	struct eosd_stream *s = calloc(1, sizeof(*s));

	if (s)
		s->sink = *sink;
	return s;
}

void
eosd_stream_free(struct eosd_stream *s)
{
	free(s);
}

/* --- on the loop: settling -------------------------------------------------------------------- */

void
eosd_gateway_settled(struct eosd_gateway *gw)
{
	gw->in_flight--;
	if (gw->d->stopping && gw->in_flight == 0)
		event_base_loopexit(gw->base, NULL);
}

/* The connection closed before the reply was written out (evhttp then completes nothing). */
static void
reply_lost_cb(struct evhttp_connection *c, void *arg)
{
	(void)c;
	eosd_gateway_settled(arg);
}

/* The reply is written out: only then may a stopping eosd leave its loop. */
static void
reply_sent_cb(struct evhttp_request *req, void *arg)
{
	struct evhttp_connection *c = evhttp_request_get_connection(req);

	if (c)
		evhttp_connection_set_closecb(c, NULL, NULL);
	eosd_gateway_settled(arg);
}

void
eosd_gateway_track(struct eosd_gateway *gw, struct evhttp_request *req)
{
	evhttp_request_set_on_complete_cb(req, reply_sent_cb, gw);
	gw->in_flight++;
}

/* --- on the loop: streams --------------------------------------------------------------------- */

/* The handler started: answer 200 with the stream's headers (unless the client is gone). */
static void
stream_start(struct eosd_job *j)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(j->req);

	if (!evhttp_request_get_connection(j->req))
		return; /* the end frees the request with a plain reply */
	evhttp_add_header(h, "Content-Type", "text/event-stream");
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_send_reply_start(j->req, 200, "OK");
	j->started = true;
}

/*
 * Write len bytes of events. A client that has more than EOSD_STREAM_BACKLOG_MAX bytes unread
 * is cut off (its socket shut down: evhttp then fails the connection and detaches the request).
 */
void
eosd_gateway_stream_chunk(struct eosd_job *j, const void *p, size_t len)
{
	struct evhttp_connection *c = evhttp_request_get_connection(j->req);
	struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
	struct evbuffer *buf;
	int fd;

	if (!bev || len == 0)
		return;
	if (evbuffer_get_length(bufferevent_get_output(bev)) > EOSD_STREAM_BACKLOG_MAX) {
		fd = (int)bufferevent_getfd(bev);
		if (fd >= 0)
			(void)shutdown(fd, SHUT_RDWR);
		return;
	}
	buf = evbuffer_new();
	if (!buf || evbuffer_add(buf, p, len) < 0) {
		if (buf)
			evbuffer_free(buf);
		return; /* the events are lost; the end still comes */
	}
	evhttp_send_reply_chunk(j->req, buf);
	evbuffer_free(buf);
}

/*
 * The last chunk: the handler's reply as a "result" or "error" event; an /mcp request's reply
 * (a JSON-RPC message, or none) as its "message".
 */
static void
stream_end(struct eosd_job *j)
{
	bool ok = j->reply && j->status == 200;
	const char *name = j->mcp ? "message" : ok ? "result" : "error";
	const char *text = j->reply ? j->reply : j->mcp ? NULL : oom_text;
	struct eos_buf b;

	eos_buf_init(&b);
	if (text && eosd_gateway_event_format(&b, name, text) == 0)
		eosd_gateway_stream_chunk(j, b.data, b.len);
	eos_buf_release(&b);
	evhttp_send_reply_end(j->req);
}

/* --- on the loop: delivering ------------------------------------------------------------------ */

/*
 * A reply whose body is the content the handler gave (eosd_call.body_fd; its JSON result in
 * X-EOS-Result). evbuffer_add_file() takes the descriptor: libevent sends it as the socket
 * drains (a memfd: no read waits for a disk).
 */
static void
send_body(struct eosd_job *j)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(j->req);
	struct evbuffer *buf = evbuffer_new();
	char disposition[256];
	struct stat sb;

	snprintf(disposition, sizeof(disposition), "attachment; filename=\"%s\"",
		 j->call.body_name);
	evhttp_add_header(h, "Content-Type", j->call.body_type);
	evhttp_add_header(h, "Content-Disposition", disposition);
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_add_header(h, "X-EOS-Result", j->reply);
	if (!buf || fstat(j->call.body_fd, &sb) < 0 ||
	    evbuffer_add_file(buf, j->call.body_fd, 0, sb.st_size) < 0) {
		if (buf)
			evbuffer_free(buf);
		evhttp_clear_headers(h);
		eosd_gateway_send_error(j->req, EOS_ERRKIND_IO, "eosd: cannot send the content");
		return;
	}
	j->call.body_fd = -1; /* the evbuffer's now */
	evhttp_send_reply(j->req, 200, NULL, buf);
	evbuffer_free(buf);
}

/* The handler returned: reply, and settle now when the client is already gone. */
static void
job_reply(struct eosd_gateway *gw, struct eosd_job *j)
{
	struct evhttp_connection *c = evhttp_request_get_connection(j->req);

	if (c)
		evhttp_connection_set_closecb(c, reply_lost_cb, gw);
	if (j->started)
		stream_end(j);
	else if (j->mcp)
		eosd_gateway_mcp_send(j);
	else if (j->reply && j->status == 200 && j->call.body_fd >= 0)
		send_body(j);
	else
		eosd_gateway_send_text(j->req, j->reply ? j->status : 503,
				       j->reply ? j->reply : oom_text);
	if (!c)
		eosd_gateway_settled(gw); /* evhttp freed req */
}

/* Move what the workers handed back to loop-owned fields; the jobs taken, in a list. */
static struct eosd_job *
take_done(struct eosd_gateway *gw)
{
	struct eosd_job *list;

	pthread_mutex_lock(&gw->done_lock);
	list = gw->done;
	gw->done = NULL;
	for (struct eosd_job *j = list; j; j = j->next) {
		j->taken_next = j->next; /* j->next changes if the worker posts j again */
		j->queued = false;
		j->saw_open = j->opened;
		j->saw_finish = j->finished;
		if (j->events.len > 0 && eos_buf_append(&j->out, j->events.data, j->events.len) < 0)
			continue; /* kept for the next round */
		eos_buf_truncate(&j->events, 0);
	}
	pthread_mutex_unlock(&gw->done_lock);
	return list;
}

void
eosd_gateway_flush_done(struct eosd_gateway *gw)
{
	struct eosd_job *next;

	/* A job the worker hands back again meanwhile is on gw->done anew, for the next round;
	 * one seen finished is the loop's alone (the worker posts nothing after that). */
	for (struct eosd_job *j = take_done(gw); j; j = next) {
		next = j->taken_next;
		if (j->saw_open && !j->started)
			stream_start(j);
		if (j->started)
			eosd_gateway_stream_chunk(j, j->out.data, j->out.len);
		eos_buf_truncate(&j->out, 0);
		if (!j->saw_finish)
			continue;
		if (j->kept) {
			eosd_gateway_kept_add(gw, j);
			continue;
		}
		job_reply(gw, j);
		eosd_gateway_job_free(j);
	}
}

void
eosd_gateway_done_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	eosd_gateway_flush_done(arg);
}
