/* SPDX-License-Identifier: MIT */
/*
 * eos_store_squash, eos_squash_run and eos_squash_flush: make the plan (store/squash.c, no
 * lock), then under st->write_lock check it against the current head and leases, stage the
 * reference counts (store/squash-refs.c) and write the one synced batch. The header comment of
 * store/squash.c argues why this is correct against concurrent commits, leases and staging.
 * Failpoint "squash.before_write" fires under the lock, before the write.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/failpoint.h"
#include "common/log.h"

#include "store/kv.h"
#include "store/sandbox.h"
#include "store/squash.h"
#include "store/store-internal.h"

static int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* One squash in progress, across its attempts. */
struct run {
	struct eos_store *st;
	const char *id;
	uint64_t sbx;
	const struct eos_squash_options *opts;
	struct eos_squash_result res;
	struct eos_squash_timing t;
};

/*
 * Caller holds st->write_lock. 1 when the plan still holds: the sandbox exists, and every lease
 * below the planned head pins a version the plan retains. 0 when it must be made again.
 */
static int
plan_valid(const struct eos_squash_plan *p, struct eos_error *err)
{
	cleanup_free uint64_t *leases = NULL;
	size_t n = 0;
	uint64_t head = 0;
	int r = eos_sandbox_head(p->st, p->sbx, &head, err);

	if (r == -ENOENT)
		return eos_error_set(err, r, "sandbox '%s' does not exist", p->id);
	if (r == 0)
		r = eos_lease_versions(p->st, p->sbx, &leases, &n, err);
	if (r < 0)
		return eos_error_prefix(err, r, "squash '%s'", p->id);
	if (head < p->head)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (leases[i] < p->head &&
		    !bsearch(&leases[i], p->keep, p->nkeep, sizeof(*p->keep), u64_cmp))
			return 0;
	return 1;
}

/*
 * A squash frees space but its batch also puts (reference counts, layer records): like other
 * small records, it is written down to the hard reserve (store/space.h).
 */
static int
squash_batch_write(struct eos_store *st, struct eos_kv_batch *b, struct eos_error *err)
{
	int r = eos_space_check(&st->space, EOS_SPACE_RECORD, eos_kv_batch_bytes(b), err);

	return r ?: eos_kv_batch_write(st->kv, b, true, err);
}

/* Caller holds st->write_lock and checked the plan: stage the counts and write. */
static int
write_locked(struct eos_squash_plan *p, struct run *run, struct eos_error *err)
{
	bool exclusive = eos_store_exclusive_try(p->st);
	int64_t t0 = eos_mono_ns();
	bool deferred = false;
	int r;

	r = eos_squash_refs_stage(p->st, p->refs, p->batch, exclusive, &run->res, &deferred, err);
	if (r == 0 && (r = EOS_FAILPOINT("squash.before_write")) < 0)
		eos_error_set(err, r, "squash '%s': failpoint 'squash.before_write'", p->id);
	if (r == 0 && eos_kv_batch_count(p->batch) > 0)
		r = squash_batch_write(p->st, p->batch, err);
	if (exclusive) {
		eos_store_exclusive_end(p->st);
		run->t.exclusive_ns += eos_mono_ns() - t0;
	}
	run->t.deferred = run->t.deferred || deferred;
	return r < 0 ? eos_error_prefix(err, r, "squash '%s'", p->id) : 0;
}

/* 1 when written (or nothing to write), 0 when the plan was invalidated, or -errno. */
static int
squash_write(struct eos_squash_plan *p, struct run *run, struct eos_error *err)
{
	int64_t t0;
	int r;

	if (eos_kv_batch_count(p->batch) == 0 && eos_squash_refs_empty(p->refs))
		return 1;
	run->res.write_start = eos_mono_ns();
	pthread_mutex_lock(&p->st->write_lock);
	t0 = eos_mono_ns();
	r = plan_valid(p, err);
	if (r > 0)
		r = write_locked(p, run, err) ?: 1;
	run->t.locked_ns += eos_mono_ns() - t0;
	pthread_mutex_unlock(&p->st->write_lock);
	run->res.write_end = eos_mono_ns();
	return r;
}

static int
squash_once(struct run *run, unsigned attempt, struct eos_error *err)
{
	struct eos_squash_plan p = {
		.st = run->st, .id = run->id, .sbx = run->sbx, .cancel = run->opts->cancel
	};
	int64_t t0 = eos_mono_ns();
	int r = eos_squash_plan_make(&p, err);

	run->res.plan_start = t0;
	run->res.plan_end = eos_mono_ns();
	run->res.write_start = run->res.write_end = 0;
	run->res.attempts = attempt;
	run->t.plan_ns += run->res.plan_end - t0;
	run->t.attempts = attempt;
	if (r == 0 && run->opts->after_plan)
		run->opts->after_plan(run->opts->ctx, attempt);
	if (r == 0)
		r = squash_write(&p, run, err);
	if (r > 0) {
		run->res.layers_removed = p.layers_removed;
		run->res.entries_removed = p.entries_removed;
	}
	eos_squash_plan_release(&p);
	return r;
}

static void
log_run(const struct run *run, int r)
{
	const struct eos_squash_timing *t = &run->t;

	if (r < 0)
		return;
	eos_log_debug("squash '%s': %llu layers and %llu entries removed, %llu chunks freed%s; "
		      "plan %lld us, writer lock %lld us, exclusive %lld us, %u attempts",
		      run->id, (unsigned long long)run->res.layers_removed,
		      (unsigned long long)run->res.entries_removed,
		      (unsigned long long)run->res.chunks_freed,
		      t->deferred ? " (more deferred)" : "", (long long)(t->plan_ns / 1000),
		      (long long)(t->locked_ns / 1000), (long long)(t->exclusive_ns / 1000),
		      t->attempts);
}

/* Give back the space of what the squash deleted (store/reclaim.c). */
static void
squash_reclaim(struct eos_store *st, uint64_t sbx, const struct eos_squash_result *res)
{
	enum eos_reclaim_flags flags = 0;

	if (res->entries_removed > 0 || res->layers_removed > 0)
		flags |= EOS_RECLAIM_ENTRIES;
	if (res->chunks_freed > 0)
		flags |= EOS_RECLAIM_OBJECTS;
	if (flags)
		eos_store_reclaim(st, sbx, flags);
}

int
eos_squash_run(struct eos_store *st, const char *sandbox, const struct eos_squash_options *opts,
	       struct eos_squash_result *ret, struct eos_squash_timing *timing,
	       struct eos_error *err)
{
	static const struct eos_squash_options none = { 0 };
	struct run run = { .st = st, .id = sandbox, .opts = opts ? opts : &none };
	unsigned attempt = 0;
	int r = eos_sandbox_id_check(sandbox, err);

	r = r ?: eos_sandbox_resolve(st, sandbox, &run.sbx, err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&st->squash_lock);
	while (r == 0) {
		if (++attempt > EOS_SQUASH_ATTEMPTS) {
			r = eos_error_set(
				err, -EAGAIN,
				"squash '%s': leases changed during %d attempts, try again",
				sandbox, EOS_SQUASH_ATTEMPTS);
			break;
		}
		r = squash_once(&run, attempt, err);
	}
	pthread_mutex_unlock(&st->squash_lock);
	log_run(&run, r);
	if (r >= 0)
		squash_reclaim(st, run.sbx, &run.res);
	if (timing)
		*timing = run.t;
	if (r < 0)
		return r;
	if (ret)
		*ret = run.res;
	return 0;
}

int
eos_store_squash(struct eos_store *st, const char *sandbox, struct eos_squash_result *ret,
		 struct eos_error *err)
{
	return eos_squash_run(st, sandbox, NULL, ret, NULL, err);
}

/* Caller holds st->squash_lock. Lock order as gc's: the exclusive side, then the writer lock. */
static int
flush_locked(struct eos_store *st, int64_t wait_ns, struct eos_squash_result *res,
	     struct eos_error *err)
{
	EOS_CLEANUP(eos_squash_refs_freep) struct eos_squash_refs *refs = NULL;
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	int r = 0;

	if (eos_squash_refs_new(&refs) < 0 || eos_kv_batch_new(&b) < 0)
		return eos_error_set(err, -ENOMEM, "squash: out of memory");
	r = eos_squash_refs_prepare(st, refs, err);
	if (r < 0 || eos_squash_refs_empty(refs))
		return r;
	if (!eos_store_exclusive_when_idle(st, wait_ns))
		return 0;
	pthread_mutex_lock(&st->write_lock);
	r = eos_squash_refs_stage(st, refs, b, true, res, NULL, err);
	if (r == 0 && eos_kv_batch_count(b) > 0)
		r = squash_batch_write(st, b, err);
	pthread_mutex_unlock(&st->write_lock);
	eos_store_exclusive_end(st);
	return r;
}

int
eos_squash_flush(struct eos_store *st, int64_t wait_ns, uint64_t *ret_freed, struct eos_error *err)
{
	struct eos_squash_result res = { 0 };
	int r;

	pthread_mutex_lock(&st->squash_lock);
	r = flush_locked(st, wait_ns, &res, err);
	pthread_mutex_unlock(&st->squash_lock);
	if (r < 0)
		return eos_error_prefix(err, r, "free squashed chunks");
	squash_reclaim(st, 0, &res);
	if (ret_freed)
		*ret_freed = res.chunks_freed;
	return 0;
}
