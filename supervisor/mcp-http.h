/* SPDX-License-Identifier: MIT */
/*
 * supervisor/mcp-http: eosd's MCP endpoint, Streamable HTTP (revision 2025-11-25) at /mcp
 * (doc/mcp.md, "Streamable HTTP"). The protocol is common/mcp.h's, fed one request body at a
 * time; each MCP session is a server of the surface its token opens (a token limited to one
 * sandbox: that sandbox's tools, without a sandbox_id), and its tools/call run the operations'
 * handlers (supervisor/ops.h) on the worker pool, as the gateway's requests do.
 *
 * The gateway's loop (gateway-mcp.c) checks what the headers say — the Origin, the method, the
 * token, the body's size — and hands the request to a worker, where eosd_mcp_serve() parses the
 * body, finds or makes the session (Mcp-Session-Id, MCP-Protocol-Version) and answers through
 * the eosd_gateway_mcp_*() functions below: a JSON reply, or a stream of server-sent events for a
 * tools/call that reports progress or may run long. Nothing here touches libevent.
 *
 * Sessions: made by an initialize without Mcp-Session-Id (the reply carries the id: 32 hex
 * digits of getrandom), bound to the token that made it (another token finds no session: 404),
 * ended by DELETE, by EOSD_MCP_IDLE_S without a request, or to make room when
 * EOSD_MCP_SESSIONS_MAX are open (the one idle longest; one with calls running is never ended
 * so). A call in flight keeps its session's memory until it ends.
 *
 * Locking: h->lock guards the table and the sessions' reference counts; each session's lock
 * guards its common/mcp.h server and where its messages go; h->kept_lock the calls that follow
 * events. Order: kept_lock → (the telemetry's lock) → a session's lock → h->lock → the
 * gateway's done_lock. No lock is held while a handler runs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

#include "supervisor/auth.h"
#include "supervisor/daemon.h"

enum {
	EOSD_MCP_SESSIONS_MAX = 64,
	EOSD_MCP_IDLE_S = 3600,
	EOSD_MCP_SESSION_ID_LEN = 32,
	EOSD_MCP_HEADER_MAX = 64, /* bytes kept of Mcp-Session-Id and MCP-Protocol-Version */
};

struct eosd_mcp;
struct eosd_job; /* one request, the gateway's (gateway-internal.h) */

/* One request to /mcp as the loop read its headers (owned by its job). */
struct eosd_mcp_request {
	bool del;			       /* DELETE, else POST */
	bool sse;			       /* its Accept names text/event-stream */
	bool has_session, has_version;	       /* the headers were sent */
	char session[EOSD_MCP_HEADER_MAX + 1]; /* Mcp-Session-Id (cut: never a valid one) */
	char version[EOSD_MCP_HEADER_MAX + 1]; /* MCP-Protocol-Version */
	struct eosd_auth_scope scope;	       /* what its bearer token reaches */
	/* set by eosd_mcp_serve(): the Mcp-Session-Id of the reply (a new session), or "" */
	char reply_session[EOSD_MCP_SESSION_ID_LEN + 1];
};

/* The endpoint's state for d (its handlers, auth and pool). Free with eosd_mcp_free(). */
int eosd_mcp_new(struct eosd *d, struct eosd_mcp **ret, struct eos_error *err);
/*
 * Free h (NULL-safe), once the worker pool is gone: a call still following events is ended
 * first (its reply goes to the gateway, which is still there).
 */
void eosd_mcp_free(struct eosd_mcp *h);

/*
 * Answer rq, whose body (a POST's; borrowed) is body[len], on a worker: exactly one reply
 * reaches j through eosd_gateway_mcp_reply(), now or when the call it started ends.
 */
void eosd_mcp_serve(struct eosd_mcp *h, struct eosd_job *j, struct eosd_mcp_request *rq,
		    const char *body, size_t len);
/* Telemetry has new events (any thread): the calls that follow them get theirs. */
void eosd_mcp_wake(struct eosd_mcp *h);

/*
 * The body of an HTTP-level refusal: a JSON-RPC error without an id, {"jsonrpc":"2.0","id":null,
 * "error":{"code":code,"message":message,"data":{"kind":<kind's name>}}}. NULL when out of
 * memory; caller frees.
 */
char *eosd_mcp_error_text(int code, int kind, const char *message);

/*
 * The gateway's side (gateway-mcp.c): where the answer to request j goes. Any thread; the calls
 * for one j are serialized by the caller: eosd_gateway_mcp_stream() at most once, then
 * eosd_gateway_mcp_event() any number of times, then eosd_gateway_mcp_reply() exactly once (j is
 * the gateway's again after it).
 */
/* Answer "200 text/event-stream" now: the messages follow as events. */
void eosd_gateway_mcp_stream(struct eosd_job *j);
/* One JSON-RPC message as an event of the stream: 0, or -ENOBUFS / -ENOMEM (dropped). */
int eosd_gateway_mcp_event(struct eosd_job *j, const char *json);
/*
 * The end: a stream ends after json (a last message; NULL: none); else status with json as
 * application/json (NULL: no body, as for 202), with rq->reply_session as Mcp-Session-Id. json
 * is stolen.
 */
void eosd_gateway_mcp_reply(struct eosd_job *j, int status, char *json);
