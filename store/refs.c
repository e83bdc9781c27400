/* SPDX-License-Identifier: MIT */
/*
 * Reference counts: a hash map (common/hashmap.h) of (type, digest) -> delta, applied by
 * read-modify-write into the caller's batch. See store/refs.h for the meaning of the counts.
 */
#include "store/refs.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/hashmap.h"

#include "store/content.h"
#include "store/kv.h"
#include "store/store-internal.h"

enum {
	READ_BATCH = 512, /* keys per multi-get */
};

struct eos_refdelta {
	struct eos_hashmap deltas; /* eos_ref_key() -> i64 delta */
};

void
eos_ref_key(uint8_t out[EOS_REF_KEY_LEN], enum eos_ref_type type, const struct eos_digest *d)
{
	out[0] = (uint8_t)type;
	memcpy(out + 1, d->b, EOS_DIGEST_LEN);
}

int
eos_refdelta_new(struct eos_refdelta **ret)
{
	struct eos_refdelta *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	eos_hashmap_init(&d->deltas);
	*ret = d;
	return 0;
}

void
eos_refdelta_free(struct eos_refdelta *d)
{
	if (!d)
		return;
	eos_hashmap_release(&d->deltas);
	free(d);
}

int
eos_ref_deltas_add(struct eos_hashmap *deltas, const uint8_t key[EOS_REF_KEY_LEN], int64_t delta)
{
	union eos_hashmap_value *v;
	int r = eos_hashmap_get_or_insert(deltas, key, EOS_REF_KEY_LEN, &v);

	if (r < 0)
		return r;
	v->i64 += delta;
	return 0;
}

int
eos_refdelta_add(struct eos_refdelta *d, enum eos_ref_type type, const struct eos_digest *dg,
		 int64_t delta)
{
	uint8_t key[EOS_REF_KEY_LEN];

	eos_ref_key(key, type, dg);
	return eos_ref_deltas_add(&d->deltas, key, delta);
}

int
eos_refdelta_add_content(struct eos_refdelta *d, const struct eos_content *c, int64_t delta)
{
	switch (c->kind) {
	case EOS_CONTENT_CHUNK:
		return eos_refdelta_add(d, EOS_REF_CHUNK, &c->digest, delta);
	case EOS_CONTENT_MANIFEST:
		return eos_refdelta_add(d, EOS_REF_MANIFEST, &c->digest, delta);
	case EOS_CONTENT_NONE:
	case EOS_CONTENT_INLINE:
		return 0;
	}
	return -EINVAL;
}

/* The non-zero deltas of type in deltas, copied out. */
static int
ref_items_collect(struct eos_hashmap *deltas, enum eos_ref_type type, struct eos_ref_item **ret,
		  size_t *ret_n)
{
	cleanup_free struct eos_ref_item *items = NULL;
	size_t n = 0;

	items = calloc(eos_hashmap_count(deltas) ?: 1, sizeof(*items));
	if (!items)
		return -ENOMEM;
	for (struct eos_hashmap_iter it = { 0 }; eos_hashmap_next(deltas, &it);) {
		const uint8_t *key = it.key;

		if (key[0] != (uint8_t)type || it.value->i64 == 0)
			continue;
		memcpy(items[n].key, key, EOS_REF_KEY_LEN);
		items[n++].delta = it.value->i64;
	}
	*ret = TAKE_PTR(items);
	*ret_n = n;
	return 0;
}

static int
refs_decode_count(const struct eos_buf *v, const uint8_t *key, uint64_t *ret, struct eos_error *err)
{
	char hex[EOS_DIGEST_HEX_LEN + 1];

	if (v->len == 8) {
		*ret = eos_get_le64(v->data);
		return 0;
	}
	eos_digest_hex(eos_ref_key_digest(key), hex);
	return eos_error_set(err, -EBADMSG, "reference count of '%c' '%s' is corrupt (%zu bytes)",
			     key[0], hex, v->len);
}

/* eos_ref_items_read() for n <= READ_BATCH items: one multi-get. */
static int
ref_items_read_some(struct eos_store *st, struct eos_ref_item *items, size_t n,
		    struct eos_error *err)
{
	const void *keys[READ_BATCH];
	size_t klens[READ_BATCH];
	struct eos_buf vals[READ_BATCH];
	bool found[READ_BATCH];
	int r;

	for (size_t i = 0; i < n; i++) {
		keys[i] = items[i].key;
		klens[i] = EOS_REF_KEY_LEN;
		eos_buf_init(&vals[i]);
		items[i].count = 0;
	}
	r = eos_kv_multi_get(st->kv, EOS_CF_REFS, n, keys, klens, vals, found, err);
	for (size_t i = 0; i < n; i++) {
		if (r >= 0 && found[i])
			r = refs_decode_count(&vals[i], items[i].key, &items[i].count, err);
		eos_buf_release(&vals[i]);
	}
	return r < 0 ? r : 0;
}

int
eos_ref_items_read(struct eos_store *st, struct eos_ref_item *items, size_t n,
		   struct eos_error *err)
{
	for (size_t i = 0; i < n; i += READ_BATCH) {
		int r = ref_items_read_some(st, items + i, EOS_MIN(n - i, (size_t)READ_BATCH), err);

		if (r < 0)
			return r;
	}
	return 0;
}

int
eos_ref_items_load(struct eos_store *st, struct eos_hashmap *deltas, enum eos_ref_type type,
		   struct eos_ref_item **ret, size_t *ret_n, struct eos_error *err)
{
	cleanup_free struct eos_ref_item *items = NULL;
	size_t n = 0;
	int r;

	r = ref_items_collect(deltas, type, &items, &n);
	if (r >= 0)
		r = eos_ref_items_read(st, items, n, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(items);
	*ret_n = n;
	return 0;
}

int
eos_ref_item_count_after(const struct eos_ref_item *it, uint64_t *ret, struct eos_error *err)
{
	char hex[EOS_DIGEST_HEX_LEN + 1];

	if (it->delta < 0 && (uint64_t)-it->delta > it->count) {
		eos_digest_hex(eos_ref_key_digest(it->key), hex);
		return eos_error_set(err, -EBADMSG,
				     "reference count of %s '%s' would drop below zero",
				     it->key[0] == EOS_REF_CHUNK ? "chunk" : "manifest", hex);
	}
	*ret = it->count + (uint64_t)it->delta;
	return 0;
}

void
eos_ref_stage_count(struct eos_kv_batch *b, const uint8_t key[EOS_REF_KEY_LEN], uint64_t count)
{
	uint8_t v[8];

	if (count == 0) {
		eos_kv_batch_delete(b, EOS_CF_REFS, key, EOS_REF_KEY_LEN);
		return;
	}
	eos_put_le64(v, count);
	eos_kv_batch_put(b, EOS_CF_REFS, key, EOS_REF_KEY_LEN, v, sizeof(v));
}

/* A manifest appears (sign +1) or disappears (-1): one chunk reference per occurrence. */
static int
refs_expand_manifest(struct eos_store *st, struct eos_refdelta *d, const struct eos_digest *dg,
		     int sign, struct eos_error *err)
{
	cleanup_free struct eos_manifest *m = NULL;
	char hex[EOS_DIGEST_HEX_LEN + 1];
	int r;

	r = eos_manifest_read(st, dg, &m, err);
	if (r < 0) {
		eos_digest_hex(dg, hex);
		return eos_error_prefix(err, r, "manifest '%s'", hex);
	}
	for (uint32_t i = 0; i < m->n; i++) {
		r = eos_refdelta_add(d, EOS_REF_CHUNK, &m->chunks[i].digest, sign);
		if (r < 0)
			return r;
	}
	return 0;
}

static int
refs_apply_manifest(struct eos_store *st, struct eos_refdelta *d, struct eos_kv_batch *b,
		    const struct eos_ref_item *it, struct eos_refs_freed *freed,
		    struct eos_error *err)
{
	const struct eos_digest *dg = eos_ref_key_digest(it->key);
	uint64_t count = 0;
	int r;

	r = eos_ref_item_count_after(it, &count, err);
	if (r < 0)
		return r;
	if (it->count == 0 && count > 0)
		r = refs_expand_manifest(st, d, dg, +1, err);
	if (it->count > 0 && count == 0) {
		r = refs_expand_manifest(st, d, dg, -1, err);
		eos_kv_batch_delete(b, EOS_CF_MANIFESTS, dg->b, EOS_DIGEST_LEN);
		freed->manifests++;
	}
	if (r < 0)
		return r;
	eos_ref_stage_count(b, it->key, count);
	return 0;
}

/*
 * Delete chunk dg, adding its stored frame length to freed. A chunk already gone frees nothing; a
 * damaged one (RocksDB cannot read it) is deleted all the same, its size unknown.
 */
static int
refs_free_chunk(struct eos_store *st, struct eos_kv_batch *b, const struct eos_digest *dg,
		struct eos_refs_freed *freed, struct eos_error *err)
{
	struct eos_buf frame;
	struct eos_error e = { 0 };
	int r;

	eos_buf_init(&frame);
	r = eos_kv_get(st->kv, NULL, EOS_CF_CHUNKS, dg->b, EOS_DIGEST_LEN, &frame, &e);
	if (r == 0)
		freed->bytes += frame.len;
	eos_buf_release(&frame);
	if (r < 0 && r != -ENOENT && r != -EBADMSG) {
		if (err)
			*err = e;
		return r;
	}
	eos_kv_batch_delete(b, EOS_CF_CHUNKS, dg->b, EOS_DIGEST_LEN);
	freed->chunks++;
	return 0;
}

static int
refs_apply_chunk(struct eos_store *st, struct eos_refdelta *d, struct eos_kv_batch *b,
		 const struct eos_ref_item *it, struct eos_refs_freed *freed, struct eos_error *err)
{
	uint64_t count = 0;
	int r;

	(void)d;
	r = eos_ref_item_count_after(it, &count, err);
	if (r >= 0 && it->count > 0 && count == 0)
		r = refs_free_chunk(st, b, eos_ref_key_digest(it->key), freed, err);
	if (r < 0)
		return r;
	eos_ref_stage_count(b, it->key, count);
	return 0;
}

/* Apply one item's delta: stage its new count and whatever its transition frees or adds. */
typedef int (*refs_apply_fn)(struct eos_store *st, struct eos_refdelta *d, struct eos_kv_batch *b,
			     const struct eos_ref_item *it, struct eos_refs_freed *freed,
			     struct eos_error *err);

/* Apply the deltas of type in d, with their stored counts, one item at a time. */
static int
refs_apply_type(struct eos_store *st, struct eos_refdelta *d, enum eos_ref_type type,
		refs_apply_fn fn, struct eos_kv_batch *b, struct eos_refs_freed *freed,
		struct eos_error *err)
{
	cleanup_free struct eos_ref_item *items = NULL;
	size_t n = 0;
	int r;

	r = eos_ref_items_load(st, &d->deltas, type, &items, &n, err);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = fn(st, d, b, &items[i], freed, err);
	return r < 0 ? r : 0;
}

int
eos_refdelta_apply(struct eos_store *st, struct eos_refdelta *d, struct eos_kv_batch *b,
		   struct eos_refs_freed *ret, struct eos_error *err)
{
	struct eos_refs_freed freed = { 0 };
	int r;

	/* Manifests first: their transitions add chunk deltas. */
	r = refs_apply_type(st, d, EOS_REF_MANIFEST, refs_apply_manifest, b, &freed, err);
	if (r < 0)
		return r;
	r = refs_apply_type(st, d, EOS_REF_CHUNK, refs_apply_chunk, b, &freed, err);
	if (r < 0)
		return r;
	if (ret)
		*ret = freed;
	return 0;
}

int
eos_refs_get(struct eos_store *st, enum eos_ref_type type, const struct eos_digest *d,
	     uint64_t *ret, struct eos_error *err)
{
	uint8_t key[EOS_REF_KEY_LEN];
	struct eos_buf v;
	uint64_t count = 0;
	int r;

	eos_ref_key(key, type, d);
	eos_buf_init(&v);
	r = eos_kv_get(st->kv, NULL, EOS_CF_REFS, key, sizeof(key), &v, err);
	if (r == 0)
		r = refs_decode_count(&v, key, &count, err);
	eos_buf_release(&v);
	if (r < 0 && r != -ENOENT)
		return r;
	*ret = count;
	return 0;
}
