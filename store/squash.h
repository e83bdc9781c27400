/* SPDX-License-Identifier: MIT */
/*
 * store/squash: internals of squash, shared by store/squash.c (the plan: tree walks, entry
 * deletions, layer records), store/squash-refs.c (reference counts and the freeing of chunks),
 * store/squash-write.c (validation under the writer lock, the batch, eos_store_squash) and
 * store/autosquash.c (the automatic policy). Never included outside store/, tests/ and bench/.
 *
 * Calling sequence (eos_squash_run does it): st->squash_lock → plan on a snapshot, no lock →
 * st->write_lock → check the plan against the current head and leases → stage the reference
 * counts → one synced batch → unlock. See the header comment of store/squash-write.c for why
 * this is correct against concurrent commits and staging.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

#include "store/store.h"

struct eos_content;
struct eos_kv_batch;
struct eos_kv_snapshot;
struct eos_squash_refs;

struct eos_squash_options {
	const atomic_bool *cancel; /* may be NULL; once true, planning stops with -ECANCELED */
	/* Tests: called after each plan, before the writer lock is taken (attempt counts from 1).
	 */
	void (*after_plan)(void *ctx, unsigned attempt);
	void *ctx;
};

/* Where a squash spent its time (CLOCK_MONOTONIC). */
struct eos_squash_timing {
	int64_t plan_ns;      /* planning on snapshots, no lock held (all attempts) */
	int64_t locked_ns;    /* holding st->write_lock: commits (publishes) wait meanwhile */
	int64_t exclusive_ns; /* of which also the exclusive side: new change sets wait too */
	unsigned attempts;    /* plans made; more than 1 when a plan was invalidated */
	bool deferred;	      /* objects reaching zero references were left for later */
};

/*
 * Squash sandbox (eos_store_squash with options and timing). A plan invalidated by a lease on
 * a version it folds is made again, at most EOS_SQUASH_ATTEMPTS times, then -EAGAIN.
 * opts, ret and timing may be NULL.
 */
enum {
	EOS_SQUASH_ATTEMPTS = 3,
};
int eos_squash_run(struct eos_store *st, const char *sandbox, const struct eos_squash_options *opts,
		   struct eos_squash_result *ret, struct eos_squash_timing *timing,
		   struct eos_error *err);

/*
 * Free the chunks and manifests that earlier squashes listed and that still have no references,
 * at the first moment within wait_ns (0: now or never) when no change set is alive; new change
 * sets are held back only while it writes. *ret_freed (may be NULL) counts freed chunks.
 */
int eos_squash_flush(struct eos_store *st, int64_t wait_ns, uint64_t *ret_freed,
		     struct eos_error *err);

/* --- the plan (store/squash.c) ---------------------------------------------------------------- */

struct eos_squash_plan {
	struct eos_store *st;
	const char *id;
	uint64_t sbx;
	const atomic_bool *cancel;
	const struct eos_kv_snapshot *snap; /* owned */
	uint64_t head;			    /* the head at the snapshot */
	uint64_t *keep;			    /* retained versions (head, leases <= head), sorted */
	size_t nkeep;
	struct eos_kv_batch *batch;   /* entry deletions and layer records (owned) */
	struct eos_squash_refs *refs; /* the references the deleted entries held (owned) */
	uint64_t layers_removed;
	uint64_t entries_removed;
};

/*
 * Fill p (st, id, sbx and cancel set by the caller) from a new snapshot: walk every retained
 * version, stage the deletion of every entry none of them sees and the folded layer records,
 * collect and prepare the reference decrements. No lock is taken. Release with
 * eos_squash_plan_release() in any case.
 */
int eos_squash_plan_make(struct eos_squash_plan *p, struct eos_error *err);
void eos_squash_plan_release(struct eos_squash_plan *p);

/* --- references (store/squash-refs.c) --------------------------------------------------------- */

/*
 * Objects a squash left with zero references while a change set was alive are listed in one
 * global meta record 0·"free:" be64-time, whose value is their reference keys (type byte ·
 * digest, store/refs.h) back to back. A squash or eos_squash_flush() holding the exclusive side
 * deletes the listed objects still without references and the records; gc deletes them all.
 */
#define EOS_SQUASH_FREE_PREFIX "free:"

int eos_squash_refs_new(struct eos_squash_refs **ret);
void eos_squash_refs_free(struct eos_squash_refs *r);
EOS_DEFINE_CLEANUP(struct eos_squash_refs *, eos_squash_refs_free)
/* A deleted entry with content c drops one reference (no-op for inline and no content). */
int eos_squash_refs_drop(struct eos_squash_refs *r, const struct eos_content *c);
/*
 * No lock held: predict what reaches zero, read those manifests and the stored sizes of those
 * chunks, and read the list of objects earlier squashes left.
 */
int eos_squash_refs_prepare(struct eos_store *st, struct eos_squash_refs *r, struct eos_error *err);
/* Nothing to decrement and nothing left by earlier squashes. */
bool eos_squash_refs_empty(const struct eos_squash_refs *r);
/*
 * Caller holds st->write_lock. Read the current counts, stage the new ones into b, and for
 * objects reaching zero: with exclusive (the caller holds the exclusive side), stage their
 * deletion and that of the listed objects still without references; without, list them.
 * Adds to res->chunks_freed and res->bytes_freed; *ret_deferred is set when it listed any.
 */
int eos_squash_refs_stage(struct eos_store *st, struct eos_squash_refs *r, struct eos_kv_batch *b,
			  bool exclusive, struct eos_squash_result *res, bool *ret_deferred,
			  struct eos_error *err);
