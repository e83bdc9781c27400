/* SPDX-License-Identifier: MIT */
/*
 * eos_store_squash: fold the layers that neither the head nor a lease needs into the next
 * retained layer.
 *
 * Retained set R = {head} ∪ lease versions. For every r in R the tree visible at r is walked from
 * the root; in each visible directory (floor f) the resolver of a name is its newest record with
 * version <= r. A resolver with version >= f is "kept" (or, when it is a whiteout, a whiteout
 * candidate). A candidate is kept only when its (parent, name) group also keeps an older record:
 * otherwise nothing below it needs hiding. Every other record of the sandbox is deleted, which
 * cannot change what any r in R resolves to. Layer records of non-retained versions are folded
 * into the next retained one (squashed_from records the range).
 *
 * Kept keys live in a sorted array (bytewise, as RocksDB orders them), so the group of a key is
 * adjacent to it and membership is a binary search.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/error.h"

#include "store/entry.h"
#include "store/kv.h"
#include "store/refs.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

enum {
	VERSION_LEN = 8, /* the trailing be64 ~version of an entry key */
};

/* --- a sorted set of byte strings ------------------------------------------------------------- */

struct keyref {
	size_t off;
	size_t len;
};

struct keyset {
	struct eos_buf arena;
	struct keyref *refs;
	size_t n, cap;
};

static void
keyset_init(struct keyset *ks)
{
	eos_buf_init(&ks->arena);
	ks->refs = NULL;
	ks->n = ks->cap = 0;
}

static void
keyset_release(struct keyset *ks)
{
	eos_buf_release(&ks->arena);
	free(ks->refs);
	ks->refs = NULL;
	ks->n = ks->cap = 0;
}

static int
keyset_add(struct keyset *ks, const void *key, size_t len)
{
	if (eos_buf_array_reserve(&ks->refs, &ks->cap, ks->n, sizeof(*ks->refs), 256) < 0)
		return -ENOMEM;
	ks->refs[ks->n] = (struct keyref){ .off = ks->arena.len, .len = len };
	if (eos_buf_append(&ks->arena, key, len) < 0)
		return -ENOMEM;
	ks->n++;
	return 0;
}

static const uint8_t *
keyset_key(const struct keyset *ks, size_t i)
{
	return ks->arena.data + ks->refs[i].off;
}

static int
bytes_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int c = memcmp(a, b, EOS_MIN(alen, blen));

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static int
keyref_cmp(const void *a, const void *b, void *arg)
{
	const struct keyref *x = a, *y = b;
	const uint8_t *base = arg;

	return bytes_cmp(base + x->off, x->len, base + y->off, y->len);
}

/* Sort and drop duplicates (their arena bytes stay unused). */
static void
keyset_sort(struct keyset *ks)
{
	size_t out = 0;

	if (ks->n == 0)
		return;
	qsort_r(ks->refs, ks->n, sizeof(*ks->refs), keyref_cmp, ks->arena.data);
	for (size_t i = 1; i < ks->n; i++)
		if (keyref_cmp(&ks->refs[out], &ks->refs[i], ks->arena.data) != 0)
			ks->refs[++out] = ks->refs[i];
	ks->n = out + 1;
}

/* Index of the first key >= key (n when none). The set must be sorted. */
static size_t
keyset_lower_bound(const struct keyset *ks, const void *key, size_t len)
{
	size_t lo = 0, hi = ks->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (bytes_cmp(keyset_key(ks, mid), ks->refs[mid].len, key, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool
keyset_contains(const struct keyset *ks, const void *key, size_t len)
{
	size_t i = keyset_lower_bound(ks, key, len);

	return i < ks->n && bytes_cmp(keyset_key(ks, i), ks->refs[i].len, key, len) == 0;
}

/* --- walking the trees of the retained versions ----------------------------------------------- */

struct squash {
	struct eos_store *st;
	const char *id;
	uint64_t sbx;
	struct keyset kept;
	struct keyset whiteouts; /* candidates */
};

/* A directory to visit after the listing of its parent finished (no nested iterators). */
struct subdir {
	char *path;
	uint64_t floor;
};

struct list_ctx {
	struct squash *sq;
	const char *dir;
	size_t dlen;
	uint64_t floor;
	struct subdir *subdirs;
	size_t n, cap;
	int error;
};

static void
list_ctx_release(struct list_ctx *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->subdirs[i].path);
	free(c->subdirs);
}

static int
mark(struct squash *sq, const char *dir, size_t dlen, const char *name, size_t nlen,
     const struct eos_entry *e)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	int r;

	r = eos_entry_key(&key, sq->sbx, dir, dlen, name, nlen, e->st.version);
	if (r < 0)
		return r;
	if (e->st.kind == EOS_KIND_WHITEOUT)
		return keyset_add(&sq->whiteouts, key.data, key.len);
	return keyset_add(&sq->kept, key.data, key.len);
}

static int
push_subdir(struct list_ctx *c, const char *name, size_t nlen, uint64_t floor)
{
	char *path = NULL;

	if (eos_buf_array_reserve(&c->subdirs, &c->cap, c->n, sizeof(*c->subdirs), 16) < 0)
		return -ENOMEM;
	if (asprintf(&path, "%.*s%s%.*s", (int)c->dlen, c->dir, c->dlen ? "/" : "", (int)nlen,
		     name) < 0)
		return -ENOMEM;
	c->subdirs[c->n++] = (struct subdir){ .path = path, .floor = floor };
	return 0;
}

static int
list_one(void *ctx, const char *name, size_t nlen, const struct eos_entry *e)
{
	struct list_ctx *c = ctx;
	int r;

	if (e->st.version < c->floor)
		return 0;
	r = mark(c->sq, c->dir, c->dlen, name, nlen, e);
	if (r == 0 && e->st.kind == EOS_KIND_DIR)
		r = push_subdir(c, name, nlen, e->st.floor);
	if (r < 0) {
		c->error = r;
		return 1;
	}
	return 0;
}

static int
walk_dir(struct squash *sq, uint64_t v, const char *dir, uint64_t floor, struct eos_error *err)
{
	EOS_CLEANUP(list_ctx_release)
	struct list_ctx c = { .sq = sq, .dir = dir, .dlen = strlen(dir), .floor = floor };
	int r;

	r = eos_entry_list(sq->st, NULL, sq->sbx, v, dir, c.dlen, floor, NULL,
			   EOS_ENTRY_LIST_WHITEOUTS | EOS_ENTRY_LIST_BELOW_FLOOR, list_one, &c,
			   err);
	if (c.error < 0)
		return eos_error_set(err, c.error, "squash '%s': list '%s': %s", sq->id, dir,
				     strerror(-c.error));
	if (r < 0)
		return r;
	for (size_t i = 0; i < c.n; i++) {
		r = walk_dir(sq, v, c.subdirs[i].path, c.subdirs[i].floor, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int
walk_version(struct squash *sq, uint64_t v, struct eos_error *err)
{
	EOS_CLEANUP(eos_entry_release) struct eos_entry root = { 0 };
	int r;

	eos_entry_init(&root);
	r = eos_entry_get_raw(sq->st, NULL, sq->sbx, v, "", 0, "", 0, &root, err);
	if (r == -ENOENT || (r == 0 && root.st.kind != EOS_KIND_DIR))
		return eos_error_set(err, -EBADMSG,
				     "squash '%s': no root directory at version %llu", sq->id,
				     (unsigned long long)v);
	if (r < 0)
		return r;
	r = mark(sq, "", 0, "", 0, &root);
	if (r < 0)
		return r;
	return walk_dir(sq, v, "", root.st.floor, err);
}

/* True when the key right after whiteout key w in the sorted kept set is of w's group. */
static bool
group_keeps_older(const struct keyset *kept, const uint8_t *w, size_t len)
{
	size_t i = keyset_lower_bound(kept, w, len);

	if (i >= kept->n || kept->refs[i].len != len || len < VERSION_LEN)
		return false;
	return memcmp(keyset_key(kept, i), w, len - VERSION_LEN) == 0;
}

static int
resolve_whiteouts(struct squash *sq)
{
	struct keyset keep = { 0 };
	int r = 0;

	keyset_init(&keep);
	keyset_sort(&sq->kept);
	keyset_sort(&sq->whiteouts);
	for (size_t i = 0; i < sq->whiteouts.n && r == 0; i++) {
		const uint8_t *w = keyset_key(&sq->whiteouts, i);
		size_t len = sq->whiteouts.refs[i].len;

		if (group_keeps_older(&sq->kept, w, len))
			r = keyset_add(&keep, w, len);
	}
	for (size_t i = 0; i < keep.n && r == 0; i++)
		r = keyset_add(&sq->kept, keyset_key(&keep, i), keep.refs[i].len);
	keyset_release(&keep);
	if (r == 0)
		keyset_sort(&sq->kept);
	return r;
}

/* --- deleting entries ------------------------------------------------------------------------- */

static int
drop_entry(struct squash *sq, struct eos_refdelta *d, const uint8_t *k, size_t klen,
	   const uint8_t *v, size_t vlen, struct eos_error *err)
{
	EOS_CLEANUP(eos_entry_release) struct eos_entry e = { 0 };
	struct eos_entry_key_parts parts;
	int r;

	eos_entry_init(&e);
	r = eos_entry_key_decode(k, klen, &parts);
	if (r == 0)
		r = eos_entry_decode(v, vlen, parts.version, &e);
	if (r < 0)
		return eos_error_set(err, -EBADMSG, "squash '%s': corrupt entry record", sq->id);
	if (e.st.kind != EOS_KIND_FILE)
		return 0;
	return eos_refdelta_add_content(d, &e.st.content, -1);
}

static int
drop_entries(struct squash *sq, struct eos_kv_batch *b, struct eos_refdelta *d, uint64_t *ret_n,
	     struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	uint8_t lo[8], hi[8];
	int r;

	eos_put_be64(lo, sq->sbx);
	eos_put_be64(hi, sq->sbx + 1);
	r = eos_kv_iter_new(sq->st->kv, EOS_CF_ENTRIES, NULL, hi, sizeof(hi),
			    EOS_KV_ITER_NO_CACHE_FILL, &it);
	if (r < 0)
		return eos_error_set(err, r, "squash '%s': iterate entries", sq->id);
	for (eos_kv_iter_seek(it, lo, sizeof(lo)); eos_kv_iter_valid(it); eos_kv_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = eos_kv_iter_key(it, &klen);
		const uint8_t *v;

		if (keyset_contains(&sq->kept, k, klen))
			continue;
		v = eos_kv_iter_value(it, &vlen);
		r = drop_entry(sq, d, k, klen, v, vlen, err);
		if (r < 0)
			return r;
		eos_kv_batch_delete(b, EOS_CF_ENTRIES, k, klen);
		(*ret_n)++;
	}
	return eos_kv_iter_status(it, err);
}

/* --- folding layer records -------------------------------------------------------------------- */

struct layers {
	struct eos_layer_info *v;
	size_t n, cap;
};

static int
layers_push(struct layers *ls, const struct eos_layer_info *l)
{
	if (eos_buf_array_reserve(&ls->v, &ls->cap, ls->n, sizeof(*ls->v), 32) < 0)
		return -ENOMEM;
	ls->v[ls->n++] = *l;
	return 0;
}

/* All layer records of the sandbox, oldest first (key order). */
static int
layers_load(struct squash *sq, struct layers *ls, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	uint8_t lo[8], hi[8];
	int r;

	eos_put_be64(lo, sq->sbx);
	eos_put_be64(hi, sq->sbx + 1);
	r = eos_kv_iter_new(sq->st->kv, EOS_CF_LAYERS, NULL, hi, sizeof(hi), 0, &it);
	if (r < 0)
		return eos_error_set(err, r, "squash '%s': iterate layers", sq->id);
	for (eos_kv_iter_seek(it, lo, sizeof(lo)); eos_kv_iter_valid(it); eos_kv_iter_next(it)) {
		struct eos_layer_info l;
		size_t klen, vlen;
		const uint8_t *k = eos_kv_iter_key(it, &klen);
		const uint8_t *v = eos_kv_iter_value(it, &vlen);

		r = klen == 16 ? eos_layer_record_decode(v, vlen, eos_get_be64(k + 8), &l)
			       : -EBADMSG;
		if (r < 0)
			return eos_error_set(err, -EBADMSG, "squash '%s': corrupt layer record",
					     sq->id);
		r = layers_push(ls, &l);
		if (r < 0)
			return r;
	}
	return eos_kv_iter_status(it, err);
}

static bool
is_retained(const uint64_t *keep, size_t n, uint64_t v)
{
	for (size_t i = 0; i < n; i++)
		if (keep[i] == v)
			return true;
	return false;
}

/* Extend into's squashed range down to from (0 = none) and add the counts of c. */
static void
merge_layer(struct eos_layer_info *into, uint64_t from, const struct eos_layer_info *c)
{
	if (from && (!into->squashed_from || from < into->squashed_from))
		into->squashed_from = from;
	into->created += c->created;
	into->modified += c->modified;
	into->deleted += c->deleted;
	into->bytes += c->bytes;
}

static int
stage_layer(struct eos_kv_batch *b, uint64_t sbx, const struct eos_layer_info *l)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	int r;

	r = eos_layer_key(&key, sbx, l->version);
	if (r == 0)
		r = eos_layer_record_encode(l, &val);
	if (r < 0)
		return r;
	eos_kv_batch_put(b, EOS_CF_LAYERS, key.data, key.len, val.data, val.len);
	return 0;
}

static int
stage_layer_delete(struct eos_kv_batch *b, uint64_t sbx, uint64_t v)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	int r = eos_layer_key(&key, sbx, v);

	if (r < 0)
		return r;
	eos_kv_batch_delete(b, EOS_CF_LAYERS, key.data, key.len);
	return 0;
}

/*
 * Walk the layers oldest first: non-retained ones (older than the head) are deleted and folded
 * into the next retained one, whose record is rewritten when its parent or range changes.
 */
static int
fold_layers(struct squash *sq, const struct layers *ls, const uint64_t *keep, size_t nkeep,
	    struct eos_kv_batch *b, uint64_t *ret_removed)
{
	struct eos_layer_info acc = { 0 };
	uint64_t prev = 0;
	bool folded = false;
	int r;

	for (size_t i = 0; i < ls->n; i++) {
		const struct eos_layer_info *l = &ls->v[i];

		if (!is_retained(keep, nkeep, l->version)) {
			if (l->version > keep[nkeep - 1])
				continue; /* beyond the head: not ours to judge (fsck reports it) */
			merge_layer(&acc, l->squashed_from ? l->squashed_from : l->version, l);
			folded = true;
			(*ret_removed)++;
			r = stage_layer_delete(b, sq->sbx, l->version);
			if (r < 0)
				return r;
			continue;
		}
		if (folded || l->parent != prev) {
			struct eos_layer_info nl = *l;

			nl.parent = prev;
			merge_layer(&nl, acc.squashed_from, &acc);
			r = stage_layer(b, sq->sbx, &nl);
			if (r < 0)
				return r;
		}
		acc = (struct eos_layer_info){ 0 };
		folded = false;
		prev = l->version;
	}
	return 0;
}

/* --- the operation ---------------------------------------------------------------------------- */

static bool
has_layer(const struct layers *ls, uint64_t v)
{
	for (size_t i = 0; i < ls->n; i++)
		if (ls->v[i].version == v)
			return true;
	return false;
}

/* R = {head} ∪ lease versions, sorted and unique; each must have a layer record. */
static int
retained_versions(struct squash *sq, const struct layers *ls, uint64_t **ret, size_t *ret_n,
		  struct eos_error *err)
{
	cleanup_free uint64_t *keep = NULL;
	uint64_t head;
	size_t n = 0;
	int r;

	r = eos_sandbox_head(sq->st, sq->sbx, &head, err);
	if (r == 0)
		r = eos_lease_versions(sq->st, sq->sbx, &keep, &n, err);
	if (r < 0)
		return r;
	if (n == 0 || keep[n - 1] < head) {
		uint64_t *p = reallocarray(keep, n + 1, sizeof(*p));

		if (!p)
			return -ENOMEM;
		keep = p;
		keep[n++] = head;
	}
	for (size_t i = 0; i < n; i++)
		if (keep[i] > head || !has_layer(ls, keep[i]))
			return eos_error_set(
				err, -EBADMSG,
				"squash '%s': retained version %llu has no layer record", sq->id,
				(unsigned long long)keep[i]);
	*ret = TAKE_PTR(keep);
	*ret_n = n;
	return 0;
}

static void
squash_release(struct squash *sq)
{
	keyset_release(&sq->kept);
	keyset_release(&sq->whiteouts);
}

static int
squash_stage(struct squash *sq, struct eos_kv_batch *b, struct eos_refdelta *d,
	     struct eos_squash_result *res, struct eos_error *err)
{
	struct layers ls = { 0 };
	cleanup_free uint64_t *keep = NULL;
	size_t nkeep = 0;
	int r;

	r = layers_load(sq, &ls, err);
	if (r == 0)
		r = retained_versions(sq, &ls, &keep, &nkeep, err);
	for (size_t i = 0; r == 0 && i < nkeep; i++)
		r = walk_version(sq, keep[i], err);
	if (r == 0)
		r = resolve_whiteouts(sq);
	if (r == 0)
		r = drop_entries(sq, b, d, &res->entries_removed, err);
	if (r == 0)
		r = fold_layers(sq, &ls, keep, nkeep, b, &res->layers_removed);
	free(ls.v);
	return r;
}

static int
squash_locked(struct eos_store *st, const char *id, struct eos_squash_result *res,
	      struct eos_error *err)
{
	EOS_CLEANUP(squash_release) struct squash sq = { .st = st, .id = id };
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	EOS_CLEANUP(eos_refdelta_freep) struct eos_refdelta *d = NULL;
	struct eos_refs_freed freed = { 0 };
	int r;

	keyset_init(&sq.kept);
	keyset_init(&sq.whiteouts);
	r = eos_sandbox_resolve(st, id, &sq.sbx, err);
	if (r < 0)
		return r;
	if (eos_kv_batch_new(&b) < 0 || eos_refdelta_new(&d) < 0)
		return eos_error_set(err, -ENOMEM, "squash '%s': out of memory", id);
	r = squash_stage(&sq, b, d, res, err);
	if (r < 0)
		return r == -ENOMEM ? eos_error_set(err, r, "squash '%s': out of memory", id) : r;
	if (eos_kv_batch_count(b) == 0) {
		*res = (struct eos_squash_result){ 0 };
		return 0;
	}
	r = eos_refdelta_apply(st, d, b, &freed, err);
	if (r == 0)
		r = eos_kv_batch_write(st->kv, b, true, err);
	if (r < 0)
		return eos_error_prefix(err, r, "squash '%s'", id);
	res->chunks_freed = freed.chunks;
	res->bytes_freed = freed.bytes;
	return 0;
}

int
eos_store_squash(struct eos_store *st, const char *sandbox, struct eos_squash_result *ret,
		 struct eos_error *err)
{
	struct eos_squash_result res = { 0 };
	int r;

	r = eos_sandbox_id_check(sandbox, err);
	if (r < 0)
		return r;
	eos_store_exclusive_begin(st);
	pthread_mutex_lock(&st->write_lock);
	r = squash_locked(st, sandbox, &res, err);
	pthread_mutex_unlock(&st->write_lock);
	eos_store_exclusive_end(st);
	if (r == 0 && ret)
		*ret = res;
	return r;
}
