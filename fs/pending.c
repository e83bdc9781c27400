/* SPDX-License-Identifier: MIT */
/*
 * fs/pending: the session records the journal holds and the store does not yet (doc/fs.md,
 * "Persistence").
 *
 * Once a session's journal has started, the view's record changes are not written to the store
 * one batch each: a change is appended to the journal as an image of its batch (what it puts and
 * deletes), which is what makes it survive a SIGKILL, and its records join this map, newest
 * value per key. The map is written to the store as one batch (a commit) when it holds 256 KiB
 * (the flusher thread), when the journal rotates (before the old generation is deleted), when a
 * file is fsynced (a synced batch), before a fork copies the records or a live publish replaces
 * them, and when the view closes. A record rewritten many times between two commits (a
 * directory's record in a create storm) is written once. Each commit records the journal's
 * floor with it: the images it holds are not applied again at the next mount.
 *
 * Locking: lock guards the map; commit_lock orders commits, so a commit of older values never
 * lands after a commit of newer ones. Callers add under the journal's append lock (journal.c),
 * so a rotation that switched generations finds every record of the old one in the map.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/failpoint.h"
#include "common/log.h"

#include "fs/view-internal.h"

/* One record: its newest value, or its deletion. */
struct eos_rec {
	uint8_t op; /* EOS_SESSION_OP_PUT or _DELETE */
	uint32_t vlen;
	uint8_t val[];
};

static void
free_values(struct eos_hashmap *m)
{
	struct eos_hashmap_iter it = { 0 };

	while (eos_hashmap_next(m, &it))
		free(it.value->ptr);
}

void
eos_recmap_release(struct eos_recmap *m)
{
	free_values(&m->map);
	eos_hashmap_release(&m->map);
	m->bytes = 0;
}

/* Key to op (and value), replacing what the map had. */
static int
recmap_set(struct eos_recmap *m, uint8_t op, const void *key, size_t klen, const void *val,
	   size_t vlen)
{
	m->bytes += klen + vlen;
	struct eos_rec *rec = malloc(sizeof(*rec) + vlen);
	union eos_hashmap_value *slot;
	int r;

	if (!rec)
		return -ENOMEM;
	rec->op = op;
	rec->vlen = (uint32_t)vlen;
	if (vlen)
		memcpy(rec->val, val, vlen);
	r = eos_hashmap_get_or_insert(&m->map, key, klen, &slot);
	if (r < 0) {
		free(rec);
		return r;
	}
	if (slot->ptr)
		m->bytes -= klen + ((struct eos_rec *)slot->ptr)->vlen;
	free(slot->ptr);
	slot->ptr = rec;
	return 0;
}

int
eos_recmap_add(struct eos_recmap *m, const void *ops, size_t len)
{
	const uint8_t *p = ops;
	struct eos_session_op o;
	int r;

	while ((r = eos_session_ops_next(&p, &len, &o)) > 0)
		if ((r = recmap_set(m, o.op, o.key, o.klen, o.val, o.vlen)) < 0)
			return r;
	return r;
}

static int
cmp_ent(const void *a, const void *b)
{
	const struct eos_recent *x = a, *y = b;
	int c = memcmp(x->key, y->key, EOS_MIN(x->klen, y->klen));

	return c ? c : x->klen < y->klen ? -1 : x->klen > y->klen;
}

int
eos_recmap_sorted(struct eos_recmap *m, struct eos_recent **ret, size_t *ret_n)
{
	struct eos_hashmap_iter it = { 0 };
	size_t n = 0, count = eos_hashmap_count(&m->map);
	struct eos_recent *v = calloc(count ? count : 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	while (eos_hashmap_next(&m->map, &it)) {
		const struct eos_rec *rec = it.value->ptr;

		v[n++] = (struct eos_recent){ .key = it.key,
					      .klen = it.klen,
					      .del = rec->op == EOS_SESSION_OP_DELETE,
					      .val = rec->val,
					      .vlen = rec->vlen };
	}
	qsort(v, n, sizeof(*v), cmp_ent);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* Stage every record of m into b. */
static int
recmap_stage(struct eos_recmap *m, struct eos_session_batch *b)
{
	struct eos_hashmap_iter it = { 0 };
	int r = 0;

	while (r == 0 && eos_hashmap_next(&m->map, &it)) {
		const struct eos_rec *rec = it.value->ptr;

		r = rec->op == EOS_SESSION_OP_DELETE
			    ? eos_session_batch_delete(b, it.key, it.klen)
			    : eos_session_batch_put(b, it.key, it.klen, rec->val, rec->vlen);
	}
	return r;
}

/* Move the records of from (older) that into lacks into into; from ends empty. */
static int
recmap_merge_older(struct eos_recmap *into, struct eos_recmap *from)
{
	struct eos_hashmap_iter it = { 0 };
	int r = 0;

	while (eos_hashmap_next(&from->map, &it)) {
		union eos_hashmap_value *slot;
		int got = r ? r : eos_hashmap_get_or_insert(&into->map, it.key, it.klen, &slot);

		if (got == 1) {
			slot->ptr = it.value->ptr;
			it.value->ptr = NULL;
			into->bytes += it.klen + ((struct eos_rec *)slot->ptr)->vlen;
		} else if (got < 0) {
			r = got;
		}
	}
	eos_recmap_release(from);
	return r;
}

/* --- the view's pending records --------------------------------------------------------------- */

void
eos_pending_init(struct eos_pending *p)
{
	*p = (struct eos_pending){ 0 };
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->commit_lock, NULL);
}

void
eos_pending_release(struct eos_pending *p)
{
	eos_recmap_release(&p->m);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->commit_lock);
}

void
eos_pending_add_locked(struct eos_view *v, const void *ops, size_t len)
{
	struct eos_pending *p = &v->pending;
	bool due;

	pthread_mutex_lock(&p->lock);
	if (!p->lost && (EOS_FAILPOINT("pending.add") < 0 || eos_recmap_add(&p->m, ops, len) < 0)) {
		/* the journal keeps what the map lost: it is never deleted again */
		p->lost = true;
		eos_log_error("session '%s': out of memory: its journal is kept until a remount",
			      v->session);
	}
	due = p->m.bytes >= EOS_PENDING_COMMIT_BYTES;
	pthread_mutex_unlock(&p->lock);
	if (due)
		eos_flusher_kick(v); /* memory stays bounded, idle or not */
}

bool
eos_pending_due(struct eos_view *v)
{
	struct eos_pending *p = &v->pending;
	bool due;

	pthread_mutex_lock(&p->lock);
	due = p->m.bytes >= EOS_PENDING_COMMIT_BYTES;
	pthread_mutex_unlock(&p->lock);
	return due;
}

void
eos_pending_absorb(struct eos_view *v, struct eos_recmap *m)
{
	struct eos_pending *p = &v->pending;

	pthread_mutex_lock(&p->lock);
	if (recmap_merge_older(&p->m, m) < 0 && !p->lost) {
		p->lost = true;
		eos_log_error("session '%s': out of memory: its journal is kept until a remount",
			      v->session);
	}
	pthread_mutex_unlock(&p->lock);
}

static int
commit_taken(struct eos_view *v, struct eos_recmap *taken, uint64_t floor, bool sync)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	struct eos_error err;
	int r = eos_delta_batch(v, &b);

	r = r ?: recmap_stage(taken, b);
	r = r ?: floor ? eos_journal_stage_floor(v, floor, b) : 0;
	if (r == 0)
		eos_session_batch_freeing(b); /* all of it was admitted when it was journaled */
	r = r ?: eos_session_batch_write(b, sync, &err);
	if (r < 0)
		eos_log_error("session '%s': cannot write its records: %s", v->session,
			      strerror(-r));
	return r;
}

int
eos_pending_commit(struct eos_view *v, bool sync)
{
	struct eos_pending *p = &v->pending;
	struct eos_recmap taken;
	uint64_t floor;
	bool lost;
	int r = 0;

	pthread_mutex_lock(&p->commit_lock);
	/* no append in flight: every image the floor covers is in what is taken */
	pthread_rwlock_wrlock(&v->journal.lock);
	pthread_mutex_lock(&p->lock);
	floor = p->lost ? 0 : eos_journal_floor_locked(v); /* 0: the floor stays where it is */
	taken = p->m;
	p->m = (struct eos_recmap){ 0 };
	lost = p->lost;
	pthread_mutex_unlock(&p->lock);
	pthread_rwlock_unlock(&v->journal.lock);
	if (eos_hashmap_count(&taken.map) > 0 || sync)
		r = commit_taken(v, &taken, floor, sync);
	if (r < 0 && eos_hashmap_count(&taken.map) > 0) {
		/* put them back under whatever was added since (newer) */
		pthread_mutex_lock(&p->lock);
		if (recmap_merge_older(&p->m, &taken) < 0)
			p->lost = true;
		pthread_mutex_unlock(&p->lock);
	}
	eos_recmap_release(&taken);
	pthread_mutex_unlock(&p->commit_lock);
	return r ?: lost ? -ENOMEM : 0; /* what the map lost is only in the journal */
}

int
eos_pending_commit_due(struct eos_view *v)
{
	return v->pending.active && eos_pending_due(v) ? eos_pending_commit(v, false) : 0;
}

void
eos_pending_discard(struct eos_view *v)
{
	struct eos_pending *p = &v->pending;

	pthread_mutex_lock(&p->commit_lock);
	pthread_mutex_lock(&p->lock);
	eos_recmap_release(&p->m);
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&p->commit_lock);
}
