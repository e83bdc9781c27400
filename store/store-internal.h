/* SPDX-License-Identifier: MIT */
/*
 * store internals shared by the store's modules (never included outside store/ and tests/).
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/cache.h"
#include "store/kv.h"
#include "store/store.h"

enum {
	EOS_STORE_FORMAT = 1,
};

struct eos_sandbox_cache_entry {
	char id[EOS_SANDBOX_ID_MAX + 1];
	uint64_t sbx;
};

struct eos_autosquash;

struct eos_store {
	char *dir;
	int lock_fd; /* flock()ed dir/owner.lock, holds our pid */
	struct eos_kv *kv;
	struct eos_chunk_cache *cache;
	int zstd_level;

	/* Serialises every batch that reads then writes refs, heads, leases or meta. */
	pthread_mutex_t write_lock;

	/* Chunk-deletion exclusion: changesets pin, squash/destroy/gc take it exclusively. */
	pthread_mutex_t pin_lock;
	pthread_cond_t pin_cond;
	unsigned pins;
	bool exclusive;

	/* One squash at a time (squash-write.c); the automatic policy (autosquash.c). */
	pthread_mutex_t squash_lock;
	struct eos_autosquash *autosquash;

	/* id -> number cache (protected by sbx_lock). */
	pthread_mutex_t sbx_lock;
	struct eos_sandbox_cache_entry *sbx_cache;
	size_t sbx_cache_n, sbx_cache_cap;
};

/* Pin the store against chunk deletion (changeset lifetime). Waits while exclusive. */
void eos_store_pin(struct eos_store *st);
void eos_store_unpin(struct eos_store *st);
/* Wait until no pins and take the exclusive side (destroy, gc). */
void eos_store_exclusive_begin(struct eos_store *st);
void eos_store_exclusive_end(struct eos_store *st);
/* Take the exclusive side only if that needs no waiting (no pins, not held): true when taken. */
bool eos_store_exclusive_try(struct eos_store *st);
/*
 * Wait up to timeout_ns for a moment with no pins, without holding new pins back meanwhile, and
 * take the exclusive side then: true when taken.
 */
bool eos_store_exclusive_when_idle(struct eos_store *st, int64_t timeout_ns);

/* Remove the data directory of session name of sandbox (name NULL: of all its sessions). */
int eos_session_dirs_remove(struct eos_store *st, const char *sandbox, const char *name,
			    struct eos_error *err);

/* Stage lease name of sbx on version v into b (the caller holds st->write_lock). */
int eos_lease_stage(struct eos_kv_batch *b, uint64_t sbx, const char *name, uint64_t v);
/*
 * Stage the reset of session name after its delta was published as version v: its delta
 * records deleted, its record and lease ("session:<name>") moved to v. 0 or -ENOMEM.
 */
int eos_session_stage_reset(struct eos_kv_batch *b, uint64_t sbx, const char *name, uint64_t v,
			    int64_t created_ns);

/*
 * A publish made a new layer in sandbox: queue an automatic squash check (store/autosquash.c).
 * Called outside the writer lock; never blocks.
 */
void eos_autosquash_notify(struct eos_store *st, const char *sandbox);
/* Set up the automatic squash policy at open (no thread yet). 0 or -ENOMEM. */
int eos_autosquash_init(struct eos_store *st, unsigned threshold);
/* Stop and join its thread (a running plan is cancelled) and free it; at close, before the kv. */
void eos_autosquash_shutdown(struct eos_store *st);

/* Current time in ns since the epoch (CLOCK_REALTIME). */
int64_t eos_store_now_ns(void);
