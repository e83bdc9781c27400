/* SPDX-License-Identifier: MIT */
/* cli/http-internal: what http.c (connecting, sending) and http-reply.c (reading) share. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"

#include "cli/http.h"

/* A parser of server-sent events (http-events.c). Embedded: zero it, release it. */
struct eosctl_sse {
	eosctl_http_event_fn fn;
	void *arg;
	struct eos_buf line; /* the line being read */
	struct eos_buf name; /* the event's name; empty: "message" */
	struct eos_buf data; /* its data lines, each followed by "\n" */
	bool has_data;
	bool after_cr; /* the last line ended in CR: a LF next is part of that end */
};

struct eosctl_http_conn {
	int fd;
	const struct eosctl_endpoint *ep; /* borrowed */
	int timeout_ms;
	int64_t deadline_ns; /* CLOCK_MONOTONIC; 0: none */
	eosctl_http_tick_fn tick;
	void *tick_arg;
	eosctl_http_cancel_fn cancelled;
	void *cancel_arg;
	eosctl_http_event_fn on_event; /* the request asked for events */
	void *event_arg;
	struct eosctl_sse *sse; /* the reply is a stream of events: its body goes here */
	struct eos_buf in;	/* bytes read and not yet consumed from pos on */
	size_t pos;
	bool eof;
};

/*
 * Wait until c->fd has events (POLLIN, POLLOUT), ticking; -ETIMEDOUT past the deadline,
 * -ECANCELED once c->cancelled says so.
 */
int eosctl_http_wait(struct eosctl_http_conn *c, short events, struct eos_error *err);

/*
 * Feed n bytes of an event stream to p; each event completed calls p->fn. 0, -ENOMEM, or
 * -EMSGSIZE for a line or an event above EOSCTL_HTTP_BODY_MAX.
 */
int eosctl_sse_feed(struct eosctl_sse *p, const void *bytes, size_t n);
void eosctl_sse_release(struct eosctl_sse *p);

/* Read one whole reply from c into *resp (status, headers, body). */
int eosctl_http_read_reply(struct eosctl_http_conn *c, struct eosctl_http_response *resp,
			   struct eos_error *err);
