/* SPDX-License-Identifier: MIT */
/*
 * supervisor/mcp-http: what its files share — mcp-http.c (the sessions, a request's messages)
 * and mcp-http-call.c (a tools/call: its handler on the pool, progress, commands in steps,
 * events followed, cancel). Locking as in supervisor/mcp-http.h.
 */
#pragma once

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/mcp-run.h"
#include "common/mcp.h"

#include "supervisor/mcp-http.h"
#include "supervisor/obs.h"
#include "supervisor/stream.h"

/* Where a session's messages go: the reply of one /mcp request. */
struct eosd_mcp_out {
	struct eosd_job *job; /* NULL once answered (or handed to a call) */
	bool may_stream;      /* the client accepts text/event-stream */
	bool stream;	      /* the reply is a stream: notifications go as they come */
	char *response;	      /* the JSON-RPC response or error to end with (owned) */
	bool error;	      /* response is an error */
};

struct eosd_mcp_call;

struct eosd_mcp_session {
	struct eosd_mcp *h;
	char id[EOSD_MCP_SESSION_ID_LEN + 1];
	struct eosd_auth_scope scope; /* the token that made it */
	struct eosd_caller caller;    /* the handlers' view of scope (points into it) */
	pthread_mutex_t lock;
	struct eos_mcp *mcp;	       /* under lock */
	struct eosd_mcp_out *out;      /* where mcp's messages go now (under lock) */
	struct eosd_mcp_call *started; /* the call the message being handled started (lock) */
	/* under h->lock */
	unsigned refs;	 /* the table's, each request's being served, each call's */
	bool gone;	 /* out of the table: DELETE, idle, or made room for another */
	int64_t used_ns; /* CLOCK_MONOTONIC of its last request */
	struct eosd_mcp_session *next;
};

struct eosd_mcp {
	struct eosd *d;
	pthread_mutex_t lock;
	struct eosd_mcp_session *sessions; /* under lock */
	size_t nsessions;
	pthread_mutex_t kept_lock;
	struct eosd_mcp_call *kept; /* calls following events (under kept_lock) */
	bool pull_queued;	    /* a pull job is on the pool (under kept_lock) */
};

/* mcp-http.c: drop a reference to s (taken under h->lock); the last one frees it. */
void eosd_mcp_session_unref(struct eosd_mcp_session *s);
/* mcp-http.c: end out: its response, else an empty stream's end or 202 (s->lock held). */
void eosd_mcp_out_close(struct eosd_mcp_out *out, int status);

/* mcp-http-call.c: common/mcp.h's start callback (s->lock held): the call waits in s->started. */
void eosd_mcp_call_start(void *session, struct eos_mcp_call *call);
/* mcp-http-call.c: run what eosd_mcp_call_start() prepared (on a worker, no lock held). */
void eosd_mcp_call_run(struct eosd_mcp_call *c);
/* mcp-http-call.c: end every call that follows events (the pool is gone). */
void eosd_mcp_calls_end_kept(struct eosd_mcp *h);
