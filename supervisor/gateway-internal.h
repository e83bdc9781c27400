/* SPDX-License-Identifier: MIT */
/* supervisor/gateway: what gateway.c (sockets, loop) and gateway-request.c (requests) share. */
#pragma once

#include <event2/event.h>
#include <event2/http.h>
#include <pthread.h>
#include <stddef.h>

#include "supervisor/auth.h"
#include "supervisor/gateway.h"
#include "supervisor/pool.h"

struct bufferevent;

/* One request handed to the pool; freed on the loop thread once replied. */
struct eosd_job {
	struct eosd_gateway *gw;
	struct evhttp_request *req;
	json_t *body; /* the parsed request: owns what call points into */
	eosd_handler_fn fn;
	struct eosd_auth_scope scope;
	struct eosd_caller caller;
	struct eosd_call call;
	int status;  /* the reply, set by the worker */
	char *reply; /* JSON text */
	struct eosd_job *next;
};

struct eosd_gateway {
	struct eosd *d;
	struct event_base *base;
	struct evhttp *http;
	struct eosd_pool *pool;
	struct event *done_ev; /* jobs finished: reply (event_active from workers) */
	struct event *sig_term, *sig_int;
	struct event *drain_ev, *sweep_ev;
	struct evhttp_bound_socket *bound[2];
	size_t nbound;
	char *unix_path;
	char tcp[64];
	pthread_mutex_t done_lock;
	struct eosd_job *done; /* protected by done_lock */
	size_t in_flight;      /* queued, replies not written yet; loop thread only */
	/* connections: the bufferevents handed to evhttp, one extra reference each */
	struct bufferevent *conns[EOSD_CONNECTIONS_MAX];
	size_t nconns;
	bool accepting;
};

/* gateway-request.c */
void eosd_gateway_request_cb(struct evhttp_request *req, void *arg);
void eosd_gateway_done_cb(evutil_socket_t fd, short what, void *arg);
/* Reply to every finished job (loop thread, or after the loop stopped). */
void eosd_gateway_flush_done(struct eosd_gateway *gw);
