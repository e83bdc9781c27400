/* SPDX-License-Identifier: MIT */
/*
 * eos_store_layer_usage: what each retained layer of a sandbox holds, logically and as stored
 * (store/store.h). One scan of the sandbox's entries on a snapshot collects, per layer, the
 * content its file records name; then the layers are walked oldest first with the set of chunks
 * seen so far, so that a chunk counts as stored in the first layer that names it and as shared in
 * the later ones. A chunk's stored size is the length of its value (its codec frame), read once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/endian.h"
#include "common/hashmap.h"

#include "store/content.h"
#include "store/entry.h"
#include "store/kv.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

enum {
	USAGE_READ_DEFAULT = 256 << 20,
};

/* Content a layer names: a chunk or a manifest digest. */
struct ref {
	size_t layer;
	bool manifest;
	struct eos_digest d;
};

struct usage {
	struct eos_store *st;
	const struct eos_kv_snapshot *snap;
	struct eos_layer_info *layers;
	struct eos_layer_usage *u;
	size_t n;
	struct ref *refs;
	size_t nrefs, cap;
	struct eos_hashmap seen; /* key: 'c'/'m' · digest, value: stored length + 1 */
	uint64_t budget;
};

/* The retained layer that holds version v: the first whose version is >= v. */
static size_t
layer_of(const struct usage *u, uint64_t v)
{
	size_t lo = 0, hi = u->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (u->layers[mid].version < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int
scan_entry(void *ctx, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	struct usage *u = ctx;
	struct eos_entry_key_parts kp;
	EOS_CLEANUP(eos_entry_release) struct eos_entry e = { 0 };
	struct eos_layer_usage *lu;
	size_t i;

	if (eos_entry_key_decode(k, klen, &kp) < 0 || eos_entry_decode(v, vlen, kp.version, &e) < 0)
		return 0; /* fsck's business */
	if (e.st.kind != EOS_KIND_FILE || (i = layer_of(u, kp.version)) >= u->n)
		return 0;
	lu = &u->u[i];
	lu->files++;
	lu->logical_bytes += e.st.size;
	if (e.st.content.kind == EOS_CONTENT_INLINE) {
		lu->stored_bytes += e.st.content.inline_len;
		return 0;
	}
	if (e.st.content.kind != EOS_CONTENT_CHUNK && e.st.content.kind != EOS_CONTENT_MANIFEST)
		return 0;
	if (eos_buf_array_reserve(&u->refs, &u->cap, u->nrefs, sizeof(*u->refs), 64) < 0)
		return -ENOMEM;
	u->refs[u->nrefs++] =
		(struct ref){ i, e.st.content.kind == EOS_CONTENT_MANIFEST, e.st.content.digest };
	return 0;
}

/* The stored length of chunk or manifest d, and whether it was seen before (0 / 1), or -errno. */
static int
stored_len(struct usage *u, enum eos_cf cf, const struct eos_digest *d, uint64_t *ret,
	   struct eos_buf *val, struct eos_error *err)
{
	uint8_t key[1 + EOS_DIGEST_LEN];
	union eos_hashmap_value *slot;
	int r;

	key[0] = cf == EOS_CF_MANIFESTS ? 'm' : 'c';
	memcpy(key + 1, d->b, EOS_DIGEST_LEN);
	r = eos_hashmap_get_or_insert(&u->seen, key, sizeof(key), &slot);
	if (r < 0)
		return eos_error_set(err, r, "layer usage: out of memory");
	if (r == 0) {
		*ret = slot->u64 - 1;
		return 1;
	}
	r = eos_kv_get(u->st->kv, u->snap, cf, d->b, EOS_DIGEST_LEN, val, err);
	slot->u64 = (r == 0 ? val->len : 0) + 1;
	*ret = slot->u64 - 1;
	u->budget -= EOS_MIN(u->budget, *ret);
	return r == -ENOENT ? 0 : r; /* a missing object: fsck's business, counted as 0 */
}

static int
count_chunk(struct usage *u, struct eos_layer_usage *lu, const struct eos_digest *d,
	    struct eos_buf *val, struct eos_error *err)
{
	uint64_t len;
	int r = stored_len(u, EOS_CF_CHUNKS, d, &len, val, err);

	if (r < 0)
		return r;
	if (r)
		lu->shared_bytes += len;
	else
		lu->stored_bytes += len;
	return 0;
}

static int
count_ref(struct usage *u, const struct ref *f, struct eos_buf *val, struct eos_error *err)
{
	struct eos_layer_usage *lu = &u->u[f->layer];
	cleanup_free struct eos_manifest *m = NULL;
	uint64_t len;
	int r;

	if (!f->manifest)
		return count_chunk(u, lu, &f->d, val, err);
	r = stored_len(u, EOS_CF_MANIFESTS, &f->d, &len, val, err);
	if (r != 0) /* seen: its chunks were counted with it */
		return r < 0 ? r : 0;
	lu->stored_bytes += len;
	if (eos_manifest_decode(val->data, val->len, &m) < 0)
		return 0;
	for (uint32_t i = 0; i < m->n && r == 0; i++)
		r = count_chunk(u, lu, &m->chunks[i].digest, val, err);
	return r;
}

static int
by_layer(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;

	return (x->layer > y->layer) - (x->layer < y->layer);
}

/* Walk the refs oldest layer first, within the budget. */
static int
count_refs(struct usage *u, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	int r = 0;

	if (u->nrefs > 0) /* refs is NULL then, which qsort may not be given */
		qsort(u->refs, u->nrefs, sizeof(*u->refs), by_layer);
	for (size_t i = 0; i < u->n; i++)
		u->u[i].stored_known = true;
	for (size_t i = 0; r == 0 && i < u->nrefs; i++) {
		if (u->budget == 0) {
			for (size_t l = u->refs[i].layer; l < u->n; l++)
				u->u[l].stored_known = false;
			break;
		}
		r = count_ref(u, &u->refs[i], &val, err);
	}
	return r;
}

static int
usage_run(struct usage *u, uint64_t sbx, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf lo = { 0 };
	uint8_t hi[8];
	struct eos_kv_scan s = { .cf = EOS_CF_ENTRIES,
				 .snap = u->snap,
				 .values = true,
				 .flags = EOS_KV_ITER_NO_CACHE_FILL,
				 .fn = scan_entry,
				 .ctx = u };
	int r = eos_entry_sandbox_prefix(&lo, sbx);

	if (r < 0)
		return eos_error_set(err, r, "layer usage: out of memory");
	eos_put_be64(hi, sbx + 1);
	s.lo = lo.data;
	s.llen = lo.len;
	s.hi = hi;
	s.hlen = sizeof(hi);
	r = eos_kv_scan(u->st->kv, &s, err);
	return r ?: count_refs(u, err);
}

int
eos_store_layer_usage(struct eos_store *st, const char *sandbox, uint64_t max_read,
		      struct eos_layer_usage **ret, size_t *ret_n, struct eos_error *err)
{
	struct usage u = { .st = st, .budget = max_read ? max_read : USAGE_READ_DEFAULT };
	uint64_t sbx;
	int r = eos_sandbox_resolve(st, sandbox, &sbx, err);

	r = r ?: eos_store_layer_list(st, sandbox, &u.layers, &u.n, err);
	if (r == 0 && !(u.u = calloc(u.n ? u.n : 1, sizeof(*u.u))))
		r = eos_error_set(err, -ENOMEM, "layer usage: out of memory");
	if (r == 0) {
		for (size_t i = 0; i < u.n; i++)
			u.u[i].version = u.layers[i].version;
		u.snap = eos_kv_snapshot_new(st->kv);
		r = u.snap ? usage_run(&u, sbx, err) : -ENOMEM;
		if (u.snap)
			eos_kv_snapshot_free(st->kv, u.snap);
	}
	free(u.layers);
	free(u.refs);
	eos_hashmap_release(&u.seen);
	if (r < 0) {
		free(u.u);
		return eos_error_prefix(err, r, "layer usage of '%s'", sandbox);
	}
	*ret = u.u;
	*ret_n = u.n;
	return 0;
}
