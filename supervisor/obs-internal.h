/* SPDX-License-Identifier: MIT */
/*
 * supervisor/obs internals: the recorder shared by obs.c (queue, flush jobs, spans, events) and
 * obs-follow.c (the ring of recent events and its followers). Never included outside them and
 * tests.
 *
 * Locks. obs->lock guards the queue, the counters, the pool, the last position, the ring and
 * the followers; it is held for list and pointer work only (never across a store call or a
 * notify). obs->flush_lock is held by whoever writes to the store (a flush job or a sync) for
 * the whole write, so that batches reach the store in position order; it is taken before
 * obs->lock, never after.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "supervisor/obs.h"

enum {
	EOSD_OBS_RING = 1024, /* recent events kept for followers */
};

/* A record waiting to be written: rec's strings point into text, attrs is dumped at the write. */
struct eosd_obs_item {
	struct eosd_obs_item *next;
	struct eos_obs_record rec;
	json_t *attrs;
	char text[]; /* name, sandbox and session, each NUL-terminated */
};

/* An event kept for followers. */
struct eosd_obs_ring_entry {
	uint64_t seq; /* 0: empty */
	char *name, *sandbox;
	char *json; /* eosd_obs_event_json() as text */
};

struct eosd_obs_follower {
	struct eosd_obs *obs; /* NULL once the recorder is gone */
	char *name, *sandbox; /* the filter (NULL: any) */
	uint64_t cursor;      /* the last ring seq handed on */
	struct eosd_obs_follower *next;
};

struct eosd_obs {
	struct eos_store *st;
	struct eos_obs_limits limits;
	size_t queue_max;
	pthread_mutex_t flush_lock;
	pthread_mutex_t lock;
	struct eosd_obs_item *head, **tail;
	struct eos_obs_pos last; /* of the last record queued */
	struct eosd_pool *pool;
	bool scheduled;	    /* a flush job is queued or running */
	bool write_failing; /* the last write failed (logged once until one succeeds) */
	struct eosd_obs_counters c;
	/* followers */
	struct eosd_obs_ring_entry ring[EOSD_OBS_RING];
	uint64_t ring_seq; /* of the newest entry */
	struct eosd_obs_follower *followers;
	_Atomic size_t nfollowers; /* read without the lock on the recording path */
	void (*notify)(void *ctx);
	void *notify_ctx;
};

/*
 * obs-follow.c: keep an event for the followers — its name, sandbox (NULL: none) and JSON text
 * (stolen) — overwriting the oldest; obs->lock held.
 */
void eosd_obs_ring_push(struct eosd_obs *obs, const char *name, const char *sandbox, char *json);
/* obs-follow.c: detach every follower and empty the ring (eosd_obs_free). */
void eosd_obs_followers_release(struct eosd_obs *obs);
