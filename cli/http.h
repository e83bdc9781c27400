/* SPDX-License-Identifier: MIT */
/*
 * cli/http: the small HTTP/1.1 client eosctl talks to eosd with, over a Unix socket or a
 * loopback TCP port, with libc only.
 *
 * Calling sequence:
 *	struct eosctl_endpoint ep;
 *	struct eosctl_http_response resp = { 0 };
 *	eosctl_endpoint_parse("unix:/run/user/1000/eos/eosd.sock", &ep, err);
 *	eosctl_http_call(&ep, &req, &resp, err);
 *	... resp.status, resp.body (NUL-terminated), resp.body_len ...
 *	eosctl_http_response_release(&resp);
 *	eosctl_endpoint_release(&ep);
 *
 * One request per connection ("Connection: close"). The reply's body is framed by Content-Length,
 * by chunked transfer coding, or by the end of the connection; short reads and writes are
 * handled, a peer that closes before the end of what it announced is an error. Errors are negative
 * errnos with a message naming the endpoint: "eosd at '/run/eos/eosd.sock' does not answer:
 * Connection refused" (-ECONNREFUSED, -ENOENT: nothing listens), -ETIMEDOUT (no complete reply
 * within the timeout), -EPROTO (a malformed reply or one cut short), -EMSGSIZE (a reply above the
 * limits below). Not thread-safe per call, no global state: calls in different threads are fine.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

enum {
	EOSCTL_HTTP_HEADER_MAX = 64 << 10, /* bytes of a reply's status line and headers */
	EOSCTL_HTTP_BODY_MAX = 1 << 30,	   /* bytes of a reply's body */
};

enum eosctl_endpoint_kind {
	EOSCTL_ENDPOINT_UNIX,
	EOSCTL_ENDPOINT_TCP,
};

struct eosctl_endpoint {
	enum eosctl_endpoint_kind kind;
	char *path; /* UNIX: the socket's path (owned) */
	char *host; /* TCP: the address, "127.0.0.1" or "::1" (owned) */
	char *port; /* TCP: the port, as text (owned) */
	char *name; /* for messages: the path, or host:port (owned) */
};

/*
 * Parse "unix:PATH", an absolute PATH, or "http://HOST:PORT[/]" (HOST an IPv4 or bracketed IPv6
 * literal, or localhost) into *ep. Fills *ep only on success; free with
 * eosctl_endpoint_release(). -EINVAL naming the url otherwise.
 */
int eosctl_endpoint_parse(const char *url, struct eosctl_endpoint *ep, struct eos_error *err);
/* Free what *ep owns (NULL-safe, and safe on a zeroed endpoint). */
void eosctl_endpoint_release(struct eosctl_endpoint *ep);

/* Called about every 100 ms while a call waits (e.g. to draw a spinner). */
typedef void (*eosctl_http_tick_fn)(void *arg);
/*
 * Asked before each wait of a call (about every 100 ms, and whenever data arrived): true
 * abandons the call, which then fails with -ECANCELED (eosd is not told; it finishes the work).
 */
typedef bool (*eosctl_http_cancel_fn)(void *arg);
/*
 * One server-sent event of a streamed reply, as it arrives: its name ("message" when it names
 * none) and its data (its data lines joined by "\n"), both NUL-terminated and valid during the
 * call only.
 */
typedef void (*eosctl_http_event_fn)(void *arg, const char *name, const char *data);

struct eosctl_http_request {
	const char *method; /* "POST", "GET" */
	const char *target; /* "/v1/management/list_sandboxes" */
	const char *token;  /* sent as "Authorization: Bearer <token>", or NULL */
	const char *body;   /* sent as application/json with its Content-Length, or NULL */
	size_t body_len;
	int timeout_ms; /* for the whole call; <= 0: no limit (connecting has 10 s at most) */
	eosctl_http_tick_fn tick;
	void *tick_arg;
	eosctl_http_cancel_fn cancelled; /* NULL: never abandoned */
	void *cancel_arg;
	/*
	 * With on_event: ask for server-sent events too (Accept: text/event-stream). A reply of
	 * that Content-Type is read as it arrives and each event goes to on_event (resp->body then
	 * stays empty); a reply of any other type is read as usual.
	 */
	eosctl_http_event_fn on_event;
	void *event_arg;
};

struct eosctl_http_response {
	int status;	    /* 200, 404, … */
	char *body;	    /* owned, NUL-terminated (one byte past body_len) */
	size_t body_len;    /* bytes of body */
	char *content_type; /* owned, or NULL when the reply has none */
};

/*
 * Send req to ep and read the whole reply into *resp (which the caller zeroed). On failure *resp
 * holds nothing to free. A write that fails because the peer closed early still reads the reply
 * the peer sent before closing (a server refusing an oversize body answers then closes).
 */
int eosctl_http_call(const struct eosctl_endpoint *ep, const struct eosctl_http_request *req,
		     struct eosctl_http_response *resp, struct eos_error *err);
/* Free what *resp owns and zero it (NULL-safe). */
void eosctl_http_response_release(struct eosctl_http_response *resp);
