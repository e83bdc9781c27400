/* SPDX-License-Identifier: MIT */
/*
 * supervisor/stream: events a handler sends to its client while it runs (server-sent events;
 * doc/eosd.md, "Progress events").
 *
 * A client that sends "Accept: text/event-stream" with a long-running operation of the catalog
 * gets, once the handler starts, "200 text/event-stream": the events the handler sends through
 * call->stream, then exactly one "result" event (the payload of a plain reply) or "error" event
 * (the error envelope) that the gateway makes of the handler's return. Refusals before the
 * handler runs (auth, validation, a full queue) stay plain replies with their status. Without a
 * stream call->stream is NULL, and every function here does nothing: handlers call them
 * unconditionally.
 *
 * Threads: a handler calls these from its own worker thread. An event is queued under the
 * gateway's lock and written out by the loop thread, in order; nothing here touches libevent
 * or waits for the client. A client that is gone, or that reads too slowly (its unsent backlog
 * above EOSD_STREAM_BACKLOG_MAX: eosd then cuts its connection), loses the events; the handler
 * runs to completion all the same — an import is never cancelled by a disconnect.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

struct eosd;

enum {
	EOSD_STREAM_PROGRESS_MS = 100,	   /* eosd_stream_progress(): at most one per interval */
	EOSD_STREAM_QUEUE_MAX = 1 << 20,   /* bytes of events the loop has not taken yet */
	EOSD_STREAM_BACKLOG_MAX = 4 << 20, /* bytes written to a client and not yet sent */
	EOSD_STREAM_EVENT_NAME_MAX = 32,   /* bytes of an event's name */
};

/* One request's event stream (supervisor/gateway-reply.c). */
struct eosd_stream;

/*
 * Queue the event name ([a-z_], at most EOSD_STREAM_EVENT_NAME_MAX bytes; "result" and "error"
 * are the gateway's) with data (a JSON value; the reference is stolen, NULL is ok and sends
 * nothing). 0 when queued or when there is no stream; -ENOBUFS when the loop has more than
 * EOSD_STREAM_QUEUE_MAX bytes of this stream waiting (the event is dropped); -ENOMEM.
 */
int eosd_stream_send(struct eosd_stream *s, const char *name, json_t *data);
/*
 * Queue a "progress" event with data (stolen), unless one was queued less than
 * EOSD_STREAM_PROGRESS_MS ago and force is false (then data is dropped). Force the first
 * event of each phase and the last one, so that the client sees every phase and the end.
 */
int eosd_stream_progress(struct eosd_stream *s, json_t *data, bool force);
/* Whether a client asked for events: a handler may skip building them when none did. */
bool eosd_stream_wanted(const struct eosd_stream *s);

/*
 * A stream that outlives its handler (events follow; later command output follow). The handler
 * sends what it has (eosd_stream_send), then calls eosd_stream_keep() and returns 0: the gateway
 * sends no "result" event and keeps the reply open. Whenever the source has news it calls
 * eosd_stream_wake() (any thread; cheap, wakes the loop at once: nothing polls); the loop then
 * calls pull(ctx, emit, ectx) for every kept stream, and pull hands each new event to emit
 * (name as for eosd_stream_send, JSON text). When the client leaves, when pull returns false,
 * or when eosd stops, the loop calls close(ctx) once and ends the reply. An idle kept stream
 * has no read timeout (a client that stops reading is cut off as any stream's is).
 */
typedef void (*eosd_stream_emit_fn)(void *ectx, const char *name, const char *json);
struct eosd_stream_source {
	bool (*pull)(void *ctx, eosd_stream_emit_fn emit, void *ectx); /* loop thread */
	void (*close)(void *ctx);				       /* loop thread */
	void *ctx;
};
/*
 * Keep s open with src (copied) once the handler returns 0. -ENOTCONN (src is not taken) when
 * the client asked for no stream: a handler refuses the request then.
 */
int eosd_stream_keep(struct eosd_stream *s, const struct eosd_stream_source *src);
/* Wake the loop to pull every kept stream of d's gateway; nothing when no gateway runs. */
void eosd_stream_wake(struct eosd *d);

/*
 * A stream whose events go to functions of the caller's instead of an HTTP client (eosd's MCP
 * endpoint: each event becomes a progress notification; supervisor/mcp-http.h). event(arg,
 * name, json) gets each event on the thread that sends it (throttled as above); keep(arg, src)
 * is eosd_stream_keep() (0, or a negative errno to refuse). Either may be NULL: events dropped,
 * keep refused with -ENOTCONN.
 */
struct eosd_stream_sink {
	int (*event)(void *arg, const char *name, const char *json);
	int (*keep)(void *arg, const struct eosd_stream_source *src);
	void *arg;
};
/* A stream for sink (copied); NULL when out of memory. Free with eosd_stream_free(). */
struct eosd_stream *eosd_stream_new_sink(const struct eosd_stream_sink *sink);
/* Free a stream of eosd_stream_new_sink() (NULL-safe). */
void eosd_stream_free(struct eosd_stream *s);
