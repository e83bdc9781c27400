/* SPDX-License-Identifier: MIT */
/*
 * The reference counts of a squash (store/refs.h gives their meaning). Deleted entries drop one
 * reference each; a manifest reaching zero drops one per chunk occurrence. Unlike
 * eos_refdelta_apply(), an object reaching zero is deleted only while the caller holds the
 * exclusive side (no change set alive, none can start before the batch is written); otherwise
 * it is listed in one 0·"free:" record (store/squash.h) and deleted by a later squash or
 * eos_squash_flush() that gets the exclusive side, if it still has no references then, or by gc.
 *
 * Work is split so that little happens under the writer lock: eos_squash_refs_prepare() (no
 * lock) predicts, from the current counts, which objects reach zero, and reads those manifests
 * and the stored sizes of those chunks. Counts only grow meanwhile (commits add references; the
 * only other writers that lower them, squash and destroy, are excluded by st->squash_lock and by
 * the head check of store/squash-write.c), so what really reaches zero under the lock is a subset
 * of the prediction; anything else is read under the lock as a fallback.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/hashmap.h"

#include "store/content.h"
#include "store/kv.h"
#include "store/refs.h"
#include "store/sandbox.h"
#include "store/squash.h"
#include "store/store-internal.h"

enum {
	FREE_KEY_LEN = 8 + sizeof(EOS_SQUASH_FREE_PREFIX) - 1 + 8,
};

struct eos_squash_refs {
	struct eos_hashmap deltas;    /* ref key -> i64 delta (< 0) of the deleted entries */
	struct eos_hashmap manifests; /* ref key -> struct eos_manifest * predicted to reach 0 */
	struct eos_hashmap sizes;     /* chunk digest -> u64 stored bytes (predicted or listed) */
	uint8_t (*listed)[EOS_REF_KEY_LEN]; /* objects earlier squashes left, sorted, unique */
	size_t nlisted, cap;
	uint8_t (*records)[FREE_KEY_LEN]; /* the "free:" records they were read from */
	size_t nrecords, rcap;
};

int
eos_squash_refs_new(struct eos_squash_refs **ret)
{
	struct eos_squash_refs *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	*ret = r;
	return 0;
}

void
eos_squash_refs_free(struct eos_squash_refs *r)
{
	if (!r)
		return;
	for (struct eos_hashmap_iter it = { 0 }; eos_hashmap_next(&r->manifests, &it);)
		free(it.value->ptr);
	eos_hashmap_release(&r->deltas);
	eos_hashmap_release(&r->manifests);
	eos_hashmap_release(&r->sizes);
	free(r->listed);
	free(r->records);
	free(r);
}

int
eos_squash_refs_drop(struct eos_squash_refs *r, const struct eos_content *c)
{
	uint8_t key[EOS_REF_KEY_LEN];

	if (c->kind != EOS_CONTENT_CHUNK && c->kind != EOS_CONTENT_MANIFEST)
		return 0;
	eos_ref_key(key, c->kind == EOS_CONTENT_CHUNK ? EOS_REF_CHUNK : EOS_REF_MANIFEST,
		    &c->digest);
	return eos_ref_deltas_add(&r->deltas, key, -1);
}

bool
eos_squash_refs_empty(const struct eos_squash_refs *r)
{
	return eos_hashmap_count(&r->deltas) == 0 && r->nlisted == 0;
}

/* --- preparing (no lock) ---------------------------------------------------------------------- */

static int
manifest_load(struct eos_store *st, const uint8_t *key, struct eos_manifest **ret,
	      struct eos_error *err)
{
	char hex[EOS_DIGEST_HEX_LEN + 1];
	int r = eos_manifest_read(st, eos_ref_key_digest(key), ret, err);

	if (r < 0) {
		eos_digest_hex(eos_ref_key_digest(key), hex);
		return eos_error_prefix(err, r, "squash: manifest '%s'", hex);
	}
	return 0;
}

/* -1 per chunk occurrence of manifest m into chunk deltas cd. */
static int
manifest_expand(struct eos_hashmap *cd, const struct eos_manifest *m)
{
	uint8_t key[EOS_REF_KEY_LEN];

	for (uint32_t i = 0; i < m->n; i++) {
		eos_ref_key(key, EOS_REF_CHUNK, &m->chunks[i].digest);
		if (eos_ref_deltas_add(cd, key, -1) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Copy the chunk deltas of r into cd. */
static int
chunk_deltas(struct eos_squash_refs *r, struct eos_hashmap *cd)
{
	for (struct eos_hashmap_iter it = { 0 }; eos_hashmap_next(&r->deltas, &it);) {
		const uint8_t *key = it.key;

		if (key[0] == EOS_REF_CHUNK && eos_ref_deltas_add(cd, key, it.value->i64) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Read manifests predicted to reach zero into r->manifests and expand them into cd. */
static int
predict_manifests(struct eos_store *st, struct eos_squash_refs *r, struct eos_hashmap *cd,
		  struct eos_error *err)
{
	cleanup_free struct eos_ref_item *items = NULL;
	size_t n = 0;
	uint64_t count = 0;
	int q = eos_ref_items_load(st, &r->deltas, EOS_REF_MANIFEST, &items, &n, err);

	for (size_t i = 0; q == 0 && i < n; i++) {
		struct eos_manifest *m = NULL;

		q = eos_ref_item_count_after(&items[i], &count, err);
		if (q < 0 || count > 0)
			continue;
		q = manifest_load(st, items[i].key, &m, err);
		if (q == 0 &&
		    eos_hashmap_put(&r->manifests, items[i].key, EOS_REF_KEY_LEN, m) < 0) {
			free(m);
			q = -ENOMEM;
		}
		if (q == 0)
			q = manifest_expand(cd, m);
	}
	return q;
}

/* Remember the stored size of chunk d, if it exists. */
static int
size_read(struct eos_store *st, struct eos_squash_refs *r, const struct eos_digest *d,
	  struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf frame = { 0 };
	union eos_hashmap_value *v;
	struct eos_error e = { 0 };
	int q;

	if (eos_hashmap_find(&r->sizes, d->b, EOS_DIGEST_LEN))
		return 0;
	q = eos_kv_get(st->kv, NULL, EOS_CF_CHUNKS, d->b, EOS_DIGEST_LEN, &frame, &e);
	/* Gone, or damaged (RocksDB cannot read it): freeing it frees an unknown size. */
	if (q == -ENOENT || q == -EBADMSG)
		return 0;
	if (q < 0) {
		if (err)
			*err = e;
		return q;
	}
	q = eos_hashmap_get_or_insert(&r->sizes, d->b, EOS_DIGEST_LEN, &v);
	if (q < 0)
		return q;
	v->u64 = frame.len;
	return 0;
}

static int
predict_chunks(struct eos_store *st, struct eos_squash_refs *r, struct eos_hashmap *cd,
	       struct eos_error *err)
{
	cleanup_free struct eos_ref_item *items = NULL;
	size_t n = 0;
	uint64_t count = 0;
	int q = eos_ref_items_load(st, cd, EOS_REF_CHUNK, &items, &n, err);

	for (size_t i = 0; q == 0 && i < n; i++) {
		q = eos_ref_item_count_after(&items[i], &count, err);
		if (q == 0 && count == 0)
			q = size_read(st, r, eos_ref_key_digest(items[i].key), err);
	}
	return q;
}

/* A new "free:" record key: the prefix and the time, unique as squashes are serialised. */
static int
free_record_key(struct eos_buf *out)
{
	int r = eos_meta_key(out, EOS_SANDBOX_GLOBAL, EOS_SQUASH_FREE_PREFIX);

	return r ?: eos_buf_append_be64(out, (uint64_t)eos_store_now_ns());
}

/* One "free:" record: remember it and its objects (malformed ones are left to gc). */
static int
listed_one(void *ctx, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	struct eos_squash_refs *r = ctx;
	size_t n = vlen / EOS_REF_KEY_LEN;

	if (klen != FREE_KEY_LEN || vlen % EOS_REF_KEY_LEN)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *key = v + i * EOS_REF_KEY_LEN;

		if (key[0] != EOS_REF_CHUNK && key[0] != EOS_REF_MANIFEST)
			return 0;
	}
	if (eos_buf_array_reserve(&r->records, &r->rcap, r->nrecords, sizeof(*r->records), 8) < 0 ||
	    eos_buf_array_reserve(&r->listed, &r->cap, r->nlisted + n, sizeof(*r->listed), 64) < 0)
		return -ENOMEM;
	memcpy(r->records[r->nrecords++], k, FREE_KEY_LEN);
	memcpy(r->listed + r->nlisted, v, vlen);
	r->nlisted += n;
	return 0;
}

static int
ref_key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, EOS_REF_KEY_LEN);
}

/* Sort the listed objects and drop duplicates (several squashes may list one object). */
static void
listed_unique(struct eos_squash_refs *r)
{
	size_t out = 0;

	if (r->nlisted == 0)
		return;
	if (r->nlisted > 1)
		qsort(r->listed, r->nlisted, sizeof(*r->listed), ref_key_cmp);
	for (size_t i = 1; i < r->nlisted; i++)
		if (ref_key_cmp(r->listed[out], r->listed[i]) != 0)
			memcpy(r->listed[++out], r->listed[i], EOS_REF_KEY_LEN);
	r->nlisted = out + 1;
}

static int
listed_read(struct eos_store *st, struct eos_squash_refs *r, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf lo = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf hi = { 0 };
	struct eos_kv_scan s = { .cf = EOS_CF_META, .values = true, .fn = listed_one, .ctx = r };
	int q = eos_meta_key(&lo, EOS_SANDBOX_GLOBAL, EOS_SQUASH_FREE_PREFIX);

	q = q ?: eos_buf_append(&hi, lo.data, lo.len);
	if (q < 0)
		return q;
	hi.data[hi.len - 1]++; /* "free;" bounds the scan */
	s.lo = lo.data;
	s.llen = lo.len;
	s.hi = hi.data;
	s.hlen = hi.len;
	q = eos_kv_scan(st->kv, &s, err);
	if (q < 0)
		return q;
	listed_unique(r);
	for (size_t i = 0; q == 0 && i < r->nlisted; i++)
		if (r->listed[i][0] == EOS_REF_CHUNK)
			q = size_read(st, r, eos_ref_key_digest(r->listed[i]), err);
	return q;
}

int
eos_squash_refs_prepare(struct eos_store *st, struct eos_squash_refs *r, struct eos_error *err)
{
	struct eos_hashmap cd;
	int q;

	eos_hashmap_init(&cd);
	q = chunk_deltas(r, &cd);
	q = q ?: predict_manifests(st, r, &cd, err);
	q = q ?: predict_chunks(st, r, &cd, err);
	q = q ?: listed_read(st, r, err);
	eos_hashmap_release(&cd);
	return q;
}

/* --- staging (under the writer lock) ---------------------------------------------------------- */

struct stage {
	struct eos_store *st;
	struct eos_squash_refs *r;
	struct eos_kv_batch *b;
	bool exclusive;
	bool deferred;
	struct eos_squash_result *res;
	struct eos_hashmap cd; /* chunk deltas, grown by manifests that reach zero */
	struct eos_buf zero;   /* without the exclusive side: objects reaching zero, to list */
};

/* Stage the deletion of object key (exclusive side held), counting a chunk that exists. */
static int
stage_free(struct stage *s, const uint8_t *key, struct eos_error *err)
{
	const struct eos_digest *d = eos_ref_key_digest(key);
	union eos_hashmap_value *size;
	int r;

	if (key[0] == EOS_REF_MANIFEST) {
		eos_kv_batch_delete(s->b, EOS_CF_MANIFESTS, d->b, EOS_DIGEST_LEN);
		return 0;
	}
	r = size_read(s->st, s->r, d, err); /* known unless the prediction missed it */
	if (r < 0)
		return r;
	size = eos_hashmap_find(&s->r->sizes, d->b, EOS_DIGEST_LEN);
	if (size) {
		s->res->chunks_freed++;
		s->res->bytes_freed += size->u64;
	}
	eos_kv_batch_delete(s->b, EOS_CF_CHUNKS, d->b, EOS_DIGEST_LEN);
	return 0;
}

/* Object key reached zero: delete it, or list it for later. */
static int
stage_zero(struct stage *s, const uint8_t *key, struct eos_error *err)
{
	if (s->exclusive)
		return stage_free(s, key, err);
	return eos_buf_append(&s->zero, key, EOS_REF_KEY_LEN);
}

/* Stage one "free:" record listing the objects that reached zero, if any. */
static int
stage_zero_record(struct stage *s)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	int r;

	if (s->zero.len == 0)
		return 0;
	r = free_record_key(&key);
	if (r < 0)
		return r;
	eos_kv_batch_put(s->b, EOS_CF_META, key.data, key.len, s->zero.data, s->zero.len);
	s->deferred = true;
	return 0;
}

static int
stage_manifest(struct stage *s, const struct eos_ref_item *it, struct eos_error *err)
{
	struct eos_manifest *m;
	cleanup_free struct eos_manifest *own = NULL;
	uint64_t count = 0;
	int r = eos_ref_item_count_after(it, &count, err);

	if (r < 0)
		return r;
	eos_ref_stage_count(s->b, it->key, count);
	if (count > 0)
		return 0;
	m = eos_hashmap_get(&s->r->manifests, it->key, EOS_REF_KEY_LEN);
	if (!m) {
		r = manifest_load(s->st, it->key, &own, err);
		if (r < 0)
			return r;
		m = own;
	}
	r = manifest_expand(&s->cd, m);
	return r < 0 ? r : stage_zero(s, it->key, err);
}

static int
stage_chunk(struct stage *s, const struct eos_ref_item *it, struct eos_error *err)
{
	uint64_t count = 0;
	int r = eos_ref_item_count_after(it, &count, err);

	if (r < 0)
		return r;
	eos_ref_stage_count(s->b, it->key, count);
	return count > 0 ? 0 : stage_zero(s, it->key, err);
}

/* Exclusive side held: delete the listed objects that still have no references. */
static int
stage_listed(struct stage *s, struct eos_error *err)
{
	cleanup_free struct eos_ref_item *items = NULL;
	struct eos_squash_refs *r = s->r;
	int q = 0;

	if (r->nlisted == 0)
		return 0;
	items = calloc(r->nlisted, sizeof(*items));
	if (!items)
		return -ENOMEM;
	for (size_t i = 0; i < r->nlisted; i++)
		memcpy(items[i].key, r->listed[i], EOS_REF_KEY_LEN);
	q = eos_ref_items_read(s->st, items, r->nlisted, err);
	for (size_t i = 0; q == 0 && i < r->nlisted; i++)
		if (items[i].count == 0)
			q = stage_free(s, items[i].key, err);
	for (size_t i = 0; q == 0 && i < r->nrecords; i++)
		eos_kv_batch_delete(s->b, EOS_CF_META, r->records[i], FREE_KEY_LEN);
	return q;
}

static int
stage_all(struct stage *s, struct eos_error *err)
{
	cleanup_free struct eos_ref_item *ms = NULL;
	cleanup_free struct eos_ref_item *cs = NULL;
	size_t nm = 0, nc = 0;
	int q;

	/* Listed objects first: their counts are read before this batch changes any. */
	q = s->exclusive ? stage_listed(s, err) : 0;
	q = q ?: chunk_deltas(s->r, &s->cd);
	q = q ?: eos_ref_items_load(s->st, &s->r->deltas, EOS_REF_MANIFEST, &ms, &nm, err);
	for (size_t i = 0; q == 0 && i < nm; i++)
		q = stage_manifest(s, &ms[i], err);
	q = q ?: eos_ref_items_load(s->st, &s->cd, EOS_REF_CHUNK, &cs, &nc, err);
	for (size_t i = 0; q == 0 && i < nc; i++)
		q = stage_chunk(s, &cs[i], err);
	return q ?: stage_zero_record(s);
}

int
eos_squash_refs_stage(struct eos_store *st, struct eos_squash_refs *r, struct eos_kv_batch *b,
		      bool exclusive, struct eos_squash_result *res, bool *ret_deferred,
		      struct eos_error *err)
{
	struct stage s = { .st = st, .r = r, .b = b, .exclusive = exclusive, .res = res };
	int q;

	eos_hashmap_init(&s.cd);
	eos_buf_init(&s.zero);
	q = stage_all(&s, err);
	eos_hashmap_release(&s.cd);
	eos_buf_release(&s.zero);
	if (q == -ENOMEM)
		return eos_error_set(err, q, "squash: out of memory");
	if (q == 0 && ret_deferred)
		*ret_deferred = s.deferred;
	return q;
}
