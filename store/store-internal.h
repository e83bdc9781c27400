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
#include "store/space.h"
#include "store/store.h"

enum {
	/*
	 * The format this build writes. 2 added the entry kinds FIFO, CHR and BLK (with a device
	 * number in their records); a format-1 store is upgraded when it is opened (its records
	 * are valid format-2 records), after which an eos that reads only format 1 refuses it.
	 */
	EOS_STORE_FORMAT = 2,
	EOS_STORE_FORMAT_OLDEST = 1, /* the oldest format this build opens (and upgrades) */
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
	char *damage; /* NULL, or why the open found the store damaged (eos_store_damage) */
	struct eos_space space; /* free-space reserves of the store's filesystem */

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

	/* Observations (store/obs.c): appends serialise on obs_lock, which guards obs, the
	 * mirror of the 0·"obs" record (loaded at the first use). */
	pthread_mutex_t obs_lock;
	bool obs_loaded;
	struct eos_obs_stats obs;

	/* id -> number cache (protected by sbx_lock). */
	pthread_mutex_t sbx_lock;
	struct eos_sandbox_cache_entry *sbx_cache;
	size_t sbx_cache_n, sbx_cache_cap;
};

/*
 * Record that the store holds damage (why: one line), so that it is opened without paranoid
 * checks from then on (store.c, STORE/damaged), or with why NULL that it holds none. 0 or -errno.
 */
int eos_store_note_damage(struct eos_store *st, const char *why);

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

/*
 * Check the store directory dir before anything is changed (store/store-dir.c): a store (it has
 * db/CURRENT), or with create a missing or empty directory or what an interrupted creation left,
 * which gets db/ (mode 0700); anything else is refused naming what it holds. Then the ownership
 * and mode rules: -EPERM naming the path and the fix when the directory, owner.lock, db/, a file
 * in db/ or sessions/ belongs to another user or is writable by its group or others.
 */
int eos_store_dir_prepare(const char *dir, bool create, struct eos_error *err);

/*
 * Take the owner lock dir/owner.lock (store/owner.c) and record our pid in it; *ret_fd holds the
 * lock. While another process holds it and is shutting down, wait up to opts->wait_ms (calling
 * opts->on_wait once); -EBUSY naming the holder's pid when it holds on, or is not shutting down.
 */
int eos_owner_lock_take(const char *dir, const struct eos_store_options *opts, int *ret_fd,
			struct eos_error *err);
/* Mark the owner lock held on fd "closing": openers wait for us from now on. Best effort. */
void eos_owner_lock_closing(int fd);

/* Column families whose keys start with the be64 sandbox number (obs keys are all number 0). */
extern const enum eos_cf eos_sandbox_cfs[];
extern const size_t eos_sandbox_cfs_n;

enum eos_reclaim_flags {
	EOS_RECLAIM_SANDBOX = 1 << 0, /* every key of sandbox sbx (destroy) */
	EOS_RECLAIM_ENTRIES = 1 << 1, /* the entries of sandbox sbx (squash) */
	EOS_RECLAIM_OBJECTS = 1 << 2, /* chunks, manifests and their counts (freed objects) */
};
/*
 * Compact what was just deleted so that its disk space comes back (store/reclaim.c). Call
 * outside the store's locks; waits for the compactions. Skipped when the filesystem could not take
 * a compaction's output.
 */
void eos_store_reclaim(struct eos_store *st, uint64_t sbx, enum eos_reclaim_flags flags);
/*
 * A commit wrote stored bytes of new chunks: when that is a good part of a memtable, flush the
 * chunks memtable now (in the background) so that the next change sets' chunks go to other
 * blob files (store/reclaim.c).
 */
void eos_store_chunks_committed(struct eos_store *st, uint64_t stored);

/* Current time in ns since the epoch (CLOCK_REALTIME). */
int64_t eos_store_now_ns(void);
