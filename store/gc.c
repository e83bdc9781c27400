/* SPDX-License-Identifier: MIT */
/*
 * eos_store_gc: delete chunks and manifests that no reference count covers. Such records are
 * left by aborted or interrupted stagings: content is written before the commit that counts it.
 * Runs exclusively (no change set is alive), so nothing in flight can be about to reference them.
 * It also drops the list of objects squashes left (0·"free:", store/squash.h): gc covers them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/error.h"

#include "store/kv.h"
#include "store/refs.h"
#include "store/sandbox.h"
#include "store/squash.h"
#include "store/store-internal.h"

enum {
	GC_BATCH = 1000, /* keys per multi-get of their reference counts */
};

/* One round of up to GC_BATCH candidate keys of one column family. */
struct gc_round {
	enum eos_cf cf;
	enum eos_ref_type type;
	size_t n;
	uint8_t keys[GC_BATCH][EOS_DIGEST_LEN];
	uint8_t refkeys[GC_BATCH][EOS_REF_KEY_LEN];
	const void *refptrs[GC_BATCH];
	size_t reflens[GC_BATCH];
	struct eos_buf vals[GC_BATCH];
	bool found[GC_BATCH];
};

static void
gc_round_free(struct gc_round *g)
{
	for (size_t i = 0; i < GC_BATCH; i++)
		eos_buf_release(&g->vals[i]);
	free(g);
}
EOS_DEFINE_CLEANUP(struct gc_round *, gc_round_free)

/* Stage the deletion of every key of the round without a reference count. */
static int
gc_flush(struct eos_store *st, struct gc_round *g, struct eos_kv_batch *b, uint64_t *freed,
	 struct eos_error *err)
{
	int r;

	if (g->n == 0)
		return 0;
	for (size_t i = 0; i < g->n; i++) {
		struct eos_digest d;

		memcpy(d.b, g->keys[i], EOS_DIGEST_LEN);
		eos_ref_key(g->refkeys[i], g->type, &d);
		g->refptrs[i] = g->refkeys[i];
		g->reflens[i] = EOS_REF_KEY_LEN;
	}
	r = eos_kv_multi_get(st->kv, EOS_CF_REFS, g->n, g->refptrs, g->reflens, g->vals, g->found,
			     err);
	if (r < 0)
		return eos_error_prefix(err, r, "gc: read reference counts");
	for (size_t i = 0; i < g->n; i++)
		if (!g->found[i]) {
			eos_kv_batch_delete(b, g->cf, g->keys[i], EOS_DIGEST_LEN);
			(*freed)++;
		}
	g->n = 0;
	return 0;
}

struct gc_scan_call {
	struct eos_store *st;
	struct gc_round *g;
	struct eos_kv_batch *b;
	uint64_t *freed;
	struct eos_error *err;
};

/* eos_kv_scan_fn: collect one key, and check a round's reference counts when it is full. */
static int
gc_key(void *ctx, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	struct gc_scan_call *c = ctx;

	(void)v;
	(void)vlen;
	if (klen != EOS_DIGEST_LEN)
		return 0;
	memcpy(c->g->keys[c->g->n++], k, EOS_DIGEST_LEN);
	return c->g->n == GC_BATCH ? gc_flush(c->st, c->g, c->b, c->freed, c->err) : 0;
}

/* eos_kv_damage_fn: what RocksDB cannot read stays (fsck reports it); gc goes on past it. */
static int
gc_skip_damage(void *ctx, const uint8_t *after, size_t alen, const uint8_t *resume, size_t rlen,
	       const char *msg)
{
	(void)ctx;
	(void)after;
	(void)alen;
	(void)resume;
	(void)rlen;
	(void)msg;
	return 0;
}

/* Scan cf in key order; keys that are not digests are left alone (fsck reports them). */
static int
gc_scan(struct eos_store *st, struct gc_round *g, struct eos_kv_batch *b, uint64_t *freed,
	struct eos_error *err)
{
	struct gc_scan_call call = { .st = st, .g = g, .b = b, .freed = freed, .err = err };
	struct eos_kv_scan s = {
		.cf = g->cf,
		.flags = EOS_KV_ITER_NO_CACHE_FILL,
		.fn = gc_key,
		.ctx = &call,
		.damage = gc_skip_damage,
	};
	int r;

	r = eos_kv_scan(st->kv, &s, err);
	if (r < 0)
		return eos_error_prefix(err, r, "gc");
	return gc_flush(st, g, b, freed, err);
}

/* Stage the deletion of every 0·"free:" key. */
static int
gc_drop_free_list(struct eos_kv_batch *b)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf lo = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf hi = { 0 };
	int r = eos_meta_key(&lo, EOS_SANDBOX_GLOBAL, EOS_SQUASH_FREE_PREFIX);

	r = r ?: eos_buf_append(&hi, lo.data, lo.len);
	if (r < 0)
		return r;
	hi.data[hi.len - 1]++;
	eos_kv_batch_delete_range(b, EOS_CF_META, lo.data, lo.len, hi.data, hi.len);
	return 0;
}

static int
gc_locked(struct eos_store *st, uint64_t *freed, struct eos_error *err)
{
	static const struct {
		enum eos_cf cf;
		enum eos_ref_type type;
	} kinds[] = {
		{ EOS_CF_MANIFESTS, EOS_REF_MANIFEST },
		{ EOS_CF_CHUNKS, EOS_REF_CHUNK },
	};
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	EOS_CLEANUP(gc_round_freep) struct gc_round *g = NULL;
	int r;

	g = calloc(1, sizeof(*g));
	if (!g || eos_kv_batch_new(&b) < 0)
		return eos_error_set(err, -ENOMEM, "gc: out of memory");
	for (size_t i = 0; i < EOS_ARRAY_SIZE(kinds); i++) {
		g->cf = kinds[i].cf;
		g->type = kinds[i].type;
		r = gc_scan(st, g, b, freed, err);
		if (r < 0)
			return r;
	}
	if (eos_kv_batch_count(b) == 0)
		return 0;
	if (gc_drop_free_list(b) < 0)
		return eos_error_set(err, -ENOMEM, "gc: out of memory");
	r = eos_kv_batch_write(st->kv, b, true, err);
	if (r < 0)
		return eos_error_prefix(err, r, "gc");
	return 0;
}

int
eos_store_gc(struct eos_store *st, uint64_t *ret_freed, struct eos_error *err)
{
	uint64_t freed = 0;
	int r;

	eos_store_exclusive_begin(st);
	pthread_mutex_lock(&st->write_lock);
	r = gc_locked(st, &freed, err);
	pthread_mutex_unlock(&st->write_lock);
	eos_store_exclusive_end(st);
	if (r == 0 && freed > 0)
		eos_store_reclaim(st, 0, EOS_RECLAIM_OBJECTS);
	if (r == 0 && ret_freed)
		*ret_freed = freed;
	return r;
}
