/* SPDX-License-Identifier: MIT */
/*
 * supervisor/daemon: what every part of eosd shares — the daemon's context and the contract of
 * an operation handler.
 *
 * A request arrives on the gateway (loop thread), is authenticated and validated against the
 * catalog (common/catalog.h), and its handler runs on a worker thread of the bounded pool, never
 * on the loop: a handler may block (store reads, imports, publishes). It receives the validated
 * arguments with their defaults filled in and returns:
 *	0 and *out, a new JSON object (the reply's payload), or
 *	a negative errno with a message in err; the gateway answers with the errno's kind
 *	(common/errkind.h) unless the handler set call->kind (e.g. publish_rejected) and, for
 *	details, call->details (a new reference, e.g. the conflicts of a rejected publish).
 * Handlers of different requests run at once: the parts they share lock themselves. A
 * long-running operation may send events to its client meanwhile (call->stream,
 * supervisor/stream.h).
 */
#pragma once

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/catalog.h"
#include "common/error.h"

#include "store/store.h"

struct eosd_sessions; /* supervisor/session.c */
struct eosd_auth;     /* supervisor/auth.c */
struct eosd_stream;   /* supervisor/stream.h */
struct eosd_obs;      /* supervisor/obs.h */
struct eosd_cgroups;  /* supervisor/cgroup.h */
struct eosd_gateway;  /* supervisor/gateway.h */
struct eosd_commands; /* supervisor/commands.h */
struct eosd_pool;     /* supervisor/pool.h */

struct eosd {
	struct eos_store *store; /* owned by the daemon for its whole life */
	char *state_dir;	 /* $EOS_STATE_DIR, $XDG_DATA_HOME/eos, or /var/lib/eos */
	char *store_dir;	 /* <state_dir>/store */
	char *runtime_dir;	 /* $XDG_RUNTIME_DIR/eos, /tmp/eos-<uid>, or /run/eos (0700) */
	struct eosd_sessions *sessions;
	struct eosd_auth *auth;
	int64_t started_ns;    /* CLOCK_MONOTONIC at start */
	_Atomic bool stopping; /* SIGTERM seen: admit nothing new */
	/* telemetry (NULL: turned off): spans, events, samples (supervisor/obs.h) */
	struct eosd_obs *obs;
	/* the sessions' cgroups and their sampler (supervisor/cgroup.h); NULL in some tests */
	struct eosd_cgroups *cgroups;
	/* every session's holder and commands (supervisor/commands.h); NULL in some tests */
	struct eosd_commands *commands;
	/* the handlers' worker pool while the gateway runs, else NULL */
	struct eosd_pool *pool;
	/* the gateway while it runs (eosd_stream_wake()), else NULL */
	struct eosd_gateway *gateway;
	_Atomic uint64_t requests; /* requests whose handler ran (served, failed or refused) */
};

/* Who is calling: the scope of the token that authenticated the request. */
struct eosd_caller {
	enum eos_surface surface;
	const char *sandbox;  /* a token limited to one sandbox: its id; else NULL */
	const char *token_id; /* tokens minted by issue_token; NULL for the surface tokens */
};

struct eosd_call {
	const struct eos_op *op;
	const char *request_id; /* the request's request_id, or NULL */
	const char *sandbox_id; /* set whenever op->needs_sandbox */
	json_t *args;		/* validated, defaults filled (borrowed) */
	const struct eosd_caller *caller;
	/* the client's event stream (supervisor/stream.h), or NULL when it asked for none */
	struct eosd_stream *stream;
	/* out, optional: the error kind to answer with (-1: from the errno), and details */
	int kind;
	json_t *details;
	/*
	 * in: the client asked for the result's content itself as the reply's body (Accept:
	 * application/octet-stream; set by the gateway, false elsewhere). A handler that has such
	 * content (export_changes) may then set body_fd, a descriptor the gateway reads from
	 * offset 0 and closes (a memfd: writing it out never waits for a disk), with body_type (its
	 * Content-Type) and body_name (the attachment's file name); out then travels in the
	 * reply's header X-EOS-Result. Left at -1: a plain JSON reply.
	 */
	bool body_wanted;
	int body_fd;
	char body_type[64];
	char body_name[160];
	/*
	 * Set by the gateway: a handler that would wait (a command's yield) may instead arrange
	 * for someone to call finish(call, r, out, err) later — exactly once, from any thread,
	 * out stolen — and return EOSD_DEFERRED, freeing its worker. NULL where nobody would
	 * answer later (a handler called directly): the handler waits then.
	 */
	void (*finish)(struct eosd_call *c, int r, json_t *out, const struct eos_error *err);
};

enum {
	EOSD_DEFERRED = 1, /* a handler's return: call->finish() answers later */
};

typedef int (*eosd_handler_fn)(struct eosd *d, struct eosd_call *call, json_t **out,
			       struct eos_error *err);
