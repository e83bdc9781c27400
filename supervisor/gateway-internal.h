/* SPDX-License-Identifier: MIT */
/*
 * supervisor/gateway: what its files share — gateway.c (sockets, the connection cap, signals,
 * the loop), gateway-request.c (a request: loop-side checks, the worker's parsing and handler),
 * gateway-reply.c (replies, plain or streamed, from the workers back to the loop),
 * gateway-kept.c (streams kept after their handler) and gateway-mcp.c (requests to /mcp).
 */
#pragma once

#include <event2/event.h>
#include <event2/http.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#include "supervisor/auth.h"
#include "supervisor/gateway.h"
#include "supervisor/mcp-http.h"
#include "supervisor/pool.h"
#include "supervisor/stream.h"

struct bufferevent;
struct evbuffer;
struct eosd_console;

/*
 * The events of a streamed request (supervisor/stream.h): inside its job, or made by
 * eosd_stream_new_sink() for a function of the caller's (job NULL).
 */
struct eosd_stream {
	struct eosd_job *job;
	struct eosd_stream_sink sink;
	int64_t next_progress_ns; /* the handler's thread only */
};

/*
 * One request handed to the pool; freed on the loop thread once replied. A worker hands it
 * back through gw->done (under gw->done_lock) each time it has something to send: events, or
 * the reply once the handler has returned (finished); a job is on that list at most once.
 */
struct eosd_job {
	struct eosd_gateway *gw;
	struct evhttp_request *req;
	struct evbuffer *in; /* the request's body, moved out of req (parsed on the worker) */
	json_t *body;	     /* the parsed request: owns what call points into */
	eosd_handler_fn fn;
	struct eosd_auth_scope scope;
	struct eosd_caller caller;
	struct eosd_call call;
	struct eosd_stream stream;	/* call.stream points here once the handler starts */
	bool wants_stream;		/* asked for events (set on the loop before queueing) */
	int64_t start_wall, start_mono; /* when the loop took it (its root span starts there) */
	int status;			/* the reply, set by the worker before it finishes */
	char *reply;			/* JSON text */
	struct eosd_stream_source keep; /* kept open after the handler (eosd_stream_keep) */
	bool kept;
	char trace[2 * 16 +
		   1]; /* a deferred reply's trace id (hex), taken when its handler returned */
	/* protected by gw->done_lock */
	struct eos_buf events; /* event text queued by the worker, not yet taken by the loop */
	bool opened;	       /* the handler started with a stream: begin the reply */
	bool finished;	       /* status and reply are set: the worker is done with the job */
	bool queued;	       /* on gw->done */
	struct eosd_job *next; /* on gw->done */
	/* loop thread only */
	struct eos_buf out;	     /* event text taken from events, to write */
	bool saw_open, saw_finish;   /* opened, finished as last taken */
	bool started;		     /* the stream's 200 and headers are written */
	struct eosd_job *taken_next; /* in the list the loop took */
	struct eosd_job *kept_next;  /* on gw->kept */
	/* a request to /mcp (gateway-mcp.c), else NULL; owned: its events are JSON-RPC messages
	 * and its reply one message, or none (supervisor/mcp-http.h) */
	struct eosd_mcp_request *mcp;
};

/* A connection handed to evhttp (gateway.c: the connection cap and the request deadline). */
struct eosd_conn {
	struct bufferevent *bev; /* one reference of ours */
	int64_t reading_since;	 /* CLOCK_MONOTONIC ns since a request's bytes wait; 0: none */
};

struct eosd_gateway {
	struct eosd *d;
	struct eosd_console *console; /* the web console's logins (supervisor/console.h) */
	struct event_base *base;
	struct evhttp *http;
	struct eosd_pool *pool;
	struct event *done_ev;	 /* jobs finished: reply (event_active from workers) */
	struct event *kept_ev;	 /* kept streams have news (eosd_stream_wake) */
	struct event *sample_ev; /* the cgroup sampler's timer: added only while it samples */
	struct eosd_job *kept;	 /* streams kept open after their handler; loop thread only */
	struct event *sig_term, *sig_int;
	struct event *drain_ev, *sweep_ev;
	struct eosd_mcp *mcp; /* the /mcp endpoint's sessions (supervisor/mcp-http.h) */
	struct evhttp_bound_socket *bound[2];
	size_t nbound;
	char *unix_path;
	char tcp[64];
	pthread_mutex_t done_lock;
	struct eosd_job *done; /* protected by done_lock */
	size_t in_flight;      /* queued, reply not yet written nor lost; loop thread only */
	struct eosd_conn conns[EOSD_CONNECTIONS_MAX]; /* loop thread only */
	size_t nconns;
	bool accepting;
};

/* gateway.c: a request on bev's connection has been read in full (its deadline is off). */
void eosd_gateway_conn_read(struct eosd_gateway *gw, struct bufferevent *bev);

/* gateway-request.c */
void eosd_gateway_request_cb(struct evhttp_request *req, void *arg);

/* gateway-console.c: the web console (doc/console.md), on the loop */
/* Answer req when path is the console's (/, /console/...): true; false for any other path. */
bool eosd_gateway_console_route(struct eosd_gateway *gw, struct evhttp_request *req,
				const char *path);
/* Whether req authenticates with the console's cookie (and no Authorization header). */
bool eosd_gateway_console_request(struct evhttp_request *req);
/*
 * A console's request to run op: the listener and Host, the Origin, then the session and its
 * CSRF token (eosd_console_check()). 0 with *ret, or a negative errno with *ret_kind and err.
 */
int eosd_gateway_console_auth(struct eosd_gateway *gw, struct evhttp_request *req,
			      const struct eos_op *op, struct eosd_auth_scope *ret, int *ret_kind,
			      struct eos_error *err);

/* gateway-reply.c: plain replies (loop thread) */
void eosd_gateway_send_text(struct evhttp_request *req, int status, const char *text);
void eosd_gateway_send_error(struct evhttp_request *req, int kind, const char *message);
void eosd_gateway_send_errorf(struct evhttp_request *req, int kind, const char *fmt, ...)
	EOS_PRINTF(3, 4);
/*
 * {"error":{"kind","message","details"?,"trace_id"?}} as text (trace_id NULL or "": none), steals
 * details. NULL on OOM.
 */
char *eosd_gateway_error_text(int kind, const char *message, json_t *details, const char *trace_id);
/*
 * A job for req (loop thread), its body moved out of req, its times taken; NULL when out of
 * memory (nothing is answered).
 */
struct eosd_job *eosd_gateway_job_new(struct eosd_gateway *gw, struct evhttp_request *req);
/* A job refused before it was queued (the loop thread; the reply is written). */
void eosd_gateway_job_free(struct eosd_job *j);
/* gateway-reply.c: on the worker */
/* The handler is about to run: open j's stream if its client asked for one. */
void eosd_gateway_job_open(struct eosd_job *j);
/* Begin j's reply as a stream of events now (any thread). */
void eosd_gateway_job_stream(struct eosd_job *j);
/*
 * Queue the event name with text (JSON) for j's stream (any thread): 0, -ENOBUFS when more than
 * EOSD_STREAM_QUEUE_MAX bytes of it wait for the loop (the event is dropped), -ENOMEM.
 */
int eosd_gateway_job_event(struct eosd_job *j, const char *name, const char *text);
/* The worker is done with j (status and reply set): hand it to the loop. */
void eosd_gateway_job_finish(struct eosd_job *j);
/* gateway-reply.c: on the loop */
void eosd_gateway_done_cb(evutil_socket_t fd, short what, void *arg);
/* gateway-kept.c: kept streams (supervisor/stream.h), on the loop */
void eosd_gateway_kept_cb(evutil_socket_t fd, short what, void *arg);
/* The handler of finished job j kept its stream: keep it (or end it if its client is gone). */
void eosd_gateway_kept_add(struct eosd_gateway *gw, struct eosd_job *j);
/* End every kept stream (eosd stops), each with its source closed. */
void eosd_gateway_kept_end_all(struct eosd_gateway *gw);
/* The loop is gone: close the sources of streams still kept and free their jobs. */
void eosd_gateway_kept_drop_all(struct eosd_gateway *gw);
/* gateway-reply.c: SSE text "event: NAME\ndata: TEXT\n\n" appended to b. */
int eosd_gateway_event_format(struct eos_buf *b, const char *name, const char *text);
/* gateway-reply.c: write len bytes of a started stream (cuts a client too far behind). */
void eosd_gateway_stream_chunk(struct eosd_job *j, const void *p, size_t len);
/* Write what the workers handed back: events and replies (loop thread, or after it stopped). */
void eosd_gateway_flush_done(struct eosd_gateway *gw);
/* gateway-mcp.c: the hook of a request to /mcp (loop), and its reply when not streamed. */
void eosd_gateway_mcp(struct eosd_gateway *gw, struct evhttp_request *req);
void eosd_gateway_mcp_send(struct eosd_job *j);
/* One admitted request is settled: its reply written, or its client gone. */
void eosd_gateway_settled(struct eosd_gateway *gw);
/* req was queued: count it in flight until its reply is written or its client gone. */
void eosd_gateway_track(struct eosd_gateway *gw, struct evhttp_request *req);
