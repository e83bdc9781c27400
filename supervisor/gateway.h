/* SPDX-License-Identifier: MIT */
/*
 * supervisor/gateway: eosd's HTTP/1.1 + JSON front (libevent evhttp; the gateway's files are the
 * only ones that include libevent). It listens on a Unix socket (0600, the peer's uid checked
 * with SO_PEERCRED: eosd's uid or root) and optionally on loopback TCP, routes
 * POST /v1/<surface>/<operation>, authenticates (supervisor/auth.h), validates against the
 * catalog and runs the handler (supervisor/ops.h) on the worker pool; the reply goes back on the
 * loop thread. GET /v1/health answers without a token.
 *
 * Limits (doc/eosd.md): EOSD_BODY_MAX bytes of body, EOSD_HEADERS_MAX of headers,
 * EOSD_IDLE_TIMEOUT_S without progress on a connection, EOSD_CONNECTIONS_MAX open connections
 * (beyond them nothing more is accepted until one closes).
 *
 * Calling sequence: eosd_gateway_new() (binds; the store, auth and sessions are ready) →
 * eosd_gateway_run() (the loop, until SIGTERM or SIGINT and the in-flight requests are done, at
 * most EOSD_DRAIN_S) → eosd_gateway_free(). One thread drives the gateway.
 */
#pragma once

#include <stdbool.h>

#include "common/cleanup.h"
#include "common/error.h"

#include "supervisor/daemon.h"

enum {
	EOSD_BODY_MAX = (64 << 20) + (64 << 10), /* a 64 MiB string argument and its envelope */
	/* evhttp cuts a body above EOSD_BODY_MAX + this (a bare 413), the gateway answers a body
	 * above EOSD_BODY_MAX with 413 too_large */
	EOSD_BODY_SLACK = 1 << 20,
	EOSD_HEADERS_MAX = 64 << 10,
	EOSD_IDLE_TIMEOUT_S = 30,
	EOSD_CONNECTIONS_MAX = 256,
	EOSD_DRAIN_S = 30,
};

struct eosd_gateway_options {
	const char *unix_path; /* the socket to create (an old socket there is replaced) */
	const char *tcp;       /* "HOST:PORT" (loopback unless listen_any), or NULL */
	bool listen_any;
};

struct eosd_gateway;

/* Bind the sockets and set up the loop. Caller owns *ret; free with eosd_gateway_free(). */
int eosd_gateway_new(struct eosd *d, const struct eosd_gateway_options *opts,
		     struct eosd_gateway **ret, struct eos_error *err);
/* The TCP address bound ("127.0.0.1:40123"), or NULL. Borrowed from gw. */
const char *eosd_gateway_tcp(const struct eosd_gateway *gw);
/* Serve until SIGTERM or SIGINT, then drain (bounded). */
int eosd_gateway_run(struct eosd_gateway *gw, struct eos_error *err);
/* Wait for the workers, send what they finished, close every connection. NULL-safe. */
void eosd_gateway_free(struct eosd_gateway *gw);
EOS_DEFINE_CLEANUP(struct eosd_gateway *, eosd_gateway_free)
