/* SPDX-License-Identifier: MIT */
/* cli/http-internal: what http.c (connecting, sending) and http-reply.c (reading) share. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"

#include "cli/http.h"

struct eosctl_http_conn {
	int fd;
	const struct eosctl_endpoint *ep; /* borrowed */
	int timeout_ms;
	int64_t deadline_ns; /* CLOCK_MONOTONIC; 0: none */
	eosctl_http_tick_fn tick;
	void *tick_arg;
	struct eos_buf in; /* bytes read and not yet consumed from pos on */
	size_t pos;
	bool eof;
};

/* Wait until c->fd has events (POLLIN, POLLOUT), ticking; -ETIMEDOUT past the deadline. */
int eosctl_http_wait(struct eosctl_http_conn *c, short events, struct eos_error *err);

/* Read one whole reply from c into *resp (status, headers, body). */
int eosctl_http_read_reply(struct eosctl_http_conn *c, struct eosctl_http_response *resp,
			   struct eos_error *err);
