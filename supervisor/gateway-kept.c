/* SPDX-License-Identifier: MIT */
/*
 * supervisor/gateway: streams kept open after their handler (supervisor/stream.h,
 * eosd_stream_keep: events follow). Loop thread only, but for eosd_stream_wake().
 *
 * A kept stream is on gw->kept from its handler's return until its client leaves, its source
 * ends it, or eosd stops. Its source is pulled when eosd_stream_wake() activates gw->kept_ev
 * (from the thread that has news: woken, never polled) and once when it is kept, for what came
 * between the handler's last event and then. Its connection keeps no read timeout (a follower
 * may wait long for the next event) but the write timeout, and the backlog limit of every
 * stream, still cut off a client that stops reading.
 *
 * The client leaving: libevent 2.1 keeps reading a connection while a reply is being sent, only
 * to notice its end; at EOF it detaches the unfinished request (its connection becomes NULL)
 * and frees the connection, calling the close callback set here. The request is then ours:
 * evhttp_send_reply_end() frees it.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdlib.h>

#include "supervisor/gateway-internal.h"

static void
kept_remove(struct eosd_gateway *gw, struct eosd_job *j)
{
	for (struct eosd_job **p = &gw->kept; *p; p = &(*p)->kept_next)
		if (*p == j) {
			*p = j->kept_next;
			break;
		}
	j->kept_next = NULL;
}

static void
source_close(struct eosd_job *j)
{
	if (j->keep.close)
		j->keep.close(j->keep.ctx);
	j->keep = (struct eosd_stream_source){ 0 };
}

/* The client is gone: the request is detached from its connection; free it and the job. */
static void
kept_lost_cb(struct evhttp_connection *c, void *arg)
{
	struct eosd_job *j = arg;
	struct eosd_gateway *gw = j->gw;

	(void)c;
	kept_remove(gw, j);
	source_close(j);
	evhttp_send_reply_end(j->req); /* no connection: frees the request */
	eosd_gateway_settled(gw);
	eosd_gateway_job_free(j);
}

/* The connection failed while the last chunk was being written: settled all the same. */
static void
end_lost_cb(struct evhttp_connection *c, void *arg)
{
	(void)c;
	eosd_gateway_settled(arg);
}

/* End the stream (its source done or eosd stopping): the last chunk, then settled as sent. */
static void
kept_end(struct eosd_gateway *gw, struct eosd_job *j)
{
	struct evhttp_connection *c = evhttp_request_get_connection(j->req);

	kept_remove(gw, j);
	source_close(j);
	if (c)
		evhttp_connection_set_closecb(c, end_lost_cb, gw);
	evhttp_send_reply_end(j->req);
	if (!c)
		eosd_gateway_settled(gw); /* evhttp freed req: no completion callback comes */
	eosd_gateway_job_free(j);
}

static void
emit(void *ectx, const char *name, const char *json)
{
	struct eosd_job *j = ectx;

	(void)eosd_gateway_event_format(&j->out, name, json);
}

/* Pull what is new into j's stream; false when the source ended it. */
static bool
kept_pull(struct eosd_job *j)
{
	bool more = j->keep.pull(j->keep.ctx, emit, j);

	eosd_gateway_stream_chunk(j, j->out.data, j->out.len);
	eos_buf_truncate(&j->out, 0);
	return more;
}

void
eosd_gateway_kept_add(struct eosd_gateway *gw, struct eosd_job *j)
{
	struct evhttp_connection *c = evhttp_request_get_connection(j->req);
	const struct timeval wt = { .tv_sec = EOSD_IDLE_TIMEOUT_S };

	if (!j->started || !c || gw->d->stopping) {
		j->kept_next = gw->kept; /* kept_end takes it off again */
		gw->kept = j;
		kept_end(gw, j);
		return;
	}
	evhttp_connection_set_closecb(c, kept_lost_cb, j);
	bufferevent_set_timeouts(evhttp_connection_get_bufferevent(c), NULL, &wt);
	j->kept_next = gw->kept;
	gw->kept = j;
	if (!kept_pull(j))
		kept_end(gw, j);
}

void
eosd_gateway_kept_cb(evutil_socket_t fd, short what, void *arg)
{
	struct eosd_gateway *gw = arg;
	struct eosd_job *next;

	(void)fd, (void)what;
	for (struct eosd_job *j = gw->kept; j; j = next) {
		next = j->kept_next;
		if (!kept_pull(j))
			kept_end(gw, j);
	}
}

void
eosd_gateway_kept_end_all(struct eosd_gateway *gw)
{
	while (gw->kept)
		kept_end(gw, gw->kept);
	eosd_mcp_wake(gw->mcp); /* /mcp's followers see eosd stopping and end */
}

void
eosd_gateway_kept_drop_all(struct eosd_gateway *gw)
{
	while (gw->kept) {
		struct eosd_job *j = gw->kept;

		gw->kept = j->kept_next;
		source_close(j);
		eosd_gateway_job_free(j); /* evhttp_free() frees the request with its connection */
	}
}

void
eosd_stream_wake(struct eosd *d)
{
	struct eosd_gateway *gw = d ? d->gateway : NULL;

	if (!gw)
		return;
	event_active(gw->kept_ev, EV_READ, 1);
	eosd_mcp_wake(gw->mcp); /* /mcp's followers are pulled on the pool */
}
