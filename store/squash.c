/* SPDX-License-Identifier: MIT */
/*
 * The plan of a squash: fold the layers that neither the head nor a lease needs into the next
 * retained layer. Made on one RocksDB snapshot without any lock; store/squash-write.c checks it
 * under the writer lock and writes it (the argument for correctness is there).
 *
 * Retained set R = {head} ∪ lease versions <= head. For every r in R the tree visible at r is
 * walked from the root; in each visible directory (floor f) the resolver of a name is its newest
 * record with version <= r. A resolver with version >= f is "kept" (or, when it is a whiteout, a
 * whiteout candidate). A candidate is kept only when its (parent, name) group also keeps an older
 * record: otherwise nothing below it needs hiding. Every other record of the sandbox is deleted,
 * which cannot change what any r in R resolves to. Layer records of non-retained versions are
 * folded into the next retained one (squashed_from records the range).
 *
 * Kept keys live in a sorted array (bytewise, as RocksDB orders them), so the group of a key is
 * adjacent to it and membership is a binary search.
 *
 * Why planning without a lock is correct. The plan is made on snapshot S, whose head is H0; R
 * holds H0 and the leases <= H0 read after S (a lease released since only keeps more). It
 * deletes only keys S holds, all of versions <= H0. Until the write, under st->write_lock:
 *  - Commits add layers V > H0 and references, never delete. At V a name resolves either to a
 *    record newer than H0 (untouched) or to the same record as at H0, whose directory chain is
 *    then the same too: a commit gives a directory that was not visible at its head a new floor,
 *    and never lowers a floor, so nothing invisible at H0 becomes visible later. So every version
 *    >= H0 stays intact, leased or not, and the new layers' parents (>= H0) are retained.
 *  - Leases are written under st->write_lock (lease_acquire, the publish's session reset). The
 *    write re-reads them under that lock: a lease below H0 on a version R lacks invalidates the
 *    plan, which is made again (EOS_SQUASH_ATTEMPTS times, then -EAGAIN); one on a version >= H0
 *    is covered above. Check and write are atomic with respect to leases and commits.
 *  - Squashes are serialised by st->squash_lock; destroy removes the head (numbers are never
 *    reused), which the write detects (-ENOENT); gc deletes only objects without a count.
 *  - Reference counts are re-read under the lock and the decrements applied to them
 *    (store/squash-refs.c); commits only ever add to them.
 *  - Chunks and manifests: a change set alive may rely on an object it did not write because
 *    the store referenced it when it staged (or because it wrote it itself, unreferenced), and
 *    its commit adds a reference without checking that the object exists. So an object reaching
 *    zero is deleted only when eos_store_exclusive_try() takes the exclusive side WITHOUT
 *    waiting: no change set is alive, and none can start (eos_store_pin() waits) before the
 *    batch is written, after which stagers see a zero count and write the object again.
 *    Otherwise the object stays, listed under 0·"free:"; a later squash or eos_squash_flush()
 *    that gets the exclusive side deletes it if it still has no references, and gc anyway. The
 *    try never waits while the writer lock is held (gc and destroy take the exclusive side
 *    first, then the lock), so there is no deadlock.
 * Publishes wait only for the locked part: head and lease reads, one multi-get of the touched
 * counts and the synced batch; new change sets only while the exclusive side is held (the batch
 * write). bench/squash-block measures it.
 */
#include "store/squash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/error.h"

#include "store/entry.h"
#include "store/kv.h"
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
	struct eos_squash_plan *p;
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

	r = eos_entry_key(&key, sq->p->sbx, dir, dlen, name, nlen, e->st.version);
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
check_cancel(const struct eos_squash_plan *p, struct eos_error *err)
{
	if (p->cancel && atomic_load_explicit(p->cancel, memory_order_relaxed))
		return eos_error_set(err, -ECANCELED, "squash '%s': cancelled", p->id);
	return 0;
}

static int
walk_dir(struct squash *sq, uint64_t v, const char *dir, uint64_t floor, struct eos_error *err)
{
	EOS_CLEANUP(list_ctx_release)
	struct list_ctx c = { .sq = sq, .dir = dir, .dlen = strlen(dir), .floor = floor };
	const struct eos_squash_plan *p = sq->p;
	int r;

	r = check_cancel(p, err);
	if (r == 0)
		r = eos_entry_list(p->st, p->snap, p->sbx, v, dir, c.dlen, floor, NULL,
				   EOS_ENTRY_LIST_WHITEOUTS | EOS_ENTRY_LIST_BELOW_FLOOR, list_one,
				   &c, err);
	if (c.error < 0)
		return eos_error_set(err, c.error, "squash '%s': list '%s': %s", p->id, dir,
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
	const struct eos_squash_plan *p = sq->p;
	int r;

	eos_entry_init(&root);
	r = eos_entry_get_raw(p->st, p->snap, p->sbx, v, "", 0, "", 0, &root, err);
	if (r == -ENOENT || (r == 0 && root.st.kind != EOS_KIND_DIR))
		return eos_error_set(err, -EBADMSG,
				     "squash '%s': no root directory at version %llu", p->id,
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

/* Stage the deletion of entry k and drop its content's reference. Newer than the head: keep. */
static int
drop_entry(struct squash *sq, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen,
	   struct eos_error *err)
{
	EOS_CLEANUP(eos_entry_release) struct eos_entry e = { 0 };
	struct eos_squash_plan *p = sq->p;
	struct eos_entry_key_parts parts;
	int r;

	eos_entry_init(&e);
	r = eos_entry_key_decode(k, klen, &parts);
	if (r == 0 && parts.version > p->head)
		return 0;
	if (r == 0)
		r = eos_entry_decode(v, vlen, parts.version, &e);
	if (r < 0)
		return eos_error_set(err, -EBADMSG, "squash '%s': corrupt entry record", p->id);
	if (e.st.kind == EOS_KIND_FILE) {
		r = eos_squash_refs_drop(p->refs, &e.st.content);
		if (r < 0)
			return r;
	}
	eos_kv_batch_delete(p->batch, EOS_CF_ENTRIES, k, klen);
	p->entries_removed++;
	return 0;
}

static int
drop_entries(struct squash *sq, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	struct eos_squash_plan *p = sq->p;
	uint8_t lo[8], hi[8];
	int r;

	eos_put_be64(lo, p->sbx);
	eos_put_be64(hi, p->sbx + 1);
	r = eos_kv_iter_new(p->st->kv, EOS_CF_ENTRIES, p->snap, hi, sizeof(hi),
			    EOS_KV_ITER_NO_CACHE_FILL, &it);
	if (r < 0)
		return eos_error_set(err, r, "squash '%s': iterate entries", p->id);
	for (eos_kv_iter_seek(it, lo, sizeof(lo)); eos_kv_iter_valid(it); eos_kv_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = eos_kv_iter_key(it, &klen);
		const uint8_t *v;

		if (keyset_contains(&sq->kept, k, klen))
			continue;
		v = eos_kv_iter_value(it, &vlen);
		r = drop_entry(sq, k, klen, v, vlen, err);
		if (r < 0)
			return r;
	}
	return eos_kv_iter_status(it, err);
}

/* --- folding layer records -------------------------------------------------------------------- */

struct layers {
	struct eos_layer_info *v;
	size_t n, cap;
};

static void
layers_release(struct layers *ls)
{
	free(ls->v);
}

static int
layers_push(struct layers *ls, const struct eos_layer_info *l)
{
	if (eos_buf_array_reserve(&ls->v, &ls->cap, ls->n, sizeof(*ls->v), 32) < 0)
		return -ENOMEM;
	ls->v[ls->n++] = *l;
	return 0;
}

/* All layer records of the sandbox at the snapshot, oldest first (key order). */
static int
layers_load(const struct eos_squash_plan *p, struct layers *ls, struct eos_error *err)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	uint8_t lo[8], hi[8];
	int r;

	eos_put_be64(lo, p->sbx);
	eos_put_be64(hi, p->sbx + 1);
	r = eos_kv_iter_new(p->st->kv, EOS_CF_LAYERS, p->snap, hi, sizeof(hi), 0, &it);
	if (r < 0)
		return eos_error_set(err, r, "squash '%s': iterate layers", p->id);
	for (eos_kv_iter_seek(it, lo, sizeof(lo)); eos_kv_iter_valid(it); eos_kv_iter_next(it)) {
		struct eos_layer_info l;
		size_t klen, vlen;
		const uint8_t *k = eos_kv_iter_key(it, &klen);
		const uint8_t *v = eos_kv_iter_value(it, &vlen);

		r = klen == 16 ? eos_layer_record_decode(v, vlen, eos_get_be64(k + 8), &l)
			       : -EBADMSG;
		if (r < 0)
			return eos_error_set(err, -EBADMSG, "squash '%s': corrupt layer record",
					     p->id);
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
fold_layers(struct eos_squash_plan *p, const struct layers *ls)
{
	struct eos_layer_info acc = { 0 };
	uint64_t prev = 0;
	bool folded = false;
	int r;

	for (size_t i = 0; i < ls->n; i++) {
		const struct eos_layer_info *l = &ls->v[i];

		if (!is_retained(p->keep, p->nkeep, l->version)) {
			if (l->version > p->head)
				continue; /* beyond the head: not ours to judge (fsck reports it) */
			merge_layer(&acc, l->squashed_from ? l->squashed_from : l->version, l);
			folded = true;
			p->layers_removed++;
			r = stage_layer_delete(p->batch, p->sbx, l->version);
			if (r < 0)
				return r;
			continue;
		}
		if (folded || l->parent != prev) {
			struct eos_layer_info nl = *l;

			nl.parent = prev;
			merge_layer(&nl, acc.squashed_from, &acc);
			r = stage_layer(p->batch, p->sbx, &nl);
			if (r < 0)
				return r;
		}
		acc = (struct eos_layer_info){ 0 };
		folded = false;
		prev = l->version;
	}
	return 0;
}

/* --- the plan --------------------------------------------------------------------------------- */

static bool
has_layer(const struct layers *ls, uint64_t v)
{
	for (size_t i = 0; i < ls->n; i++)
		if (ls->v[i].version == v)
			return true;
	return false;
}

/* The head at the snapshot. */
static int
snapshot_head(struct eos_squash_plan *p, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	int r = eos_meta_key(&key, p->sbx, "head");

	if (r < 0)
		return r;
	r = eos_kv_get(p->st->kv, p->snap, EOS_CF_META, key.data, key.len, &val, err);
	if (r == -ENOENT)
		return eos_error_set(err, r, "sandbox '%s' does not exist", p->id);
	if (r < 0)
		return eos_error_prefix(err, r, "squash '%s'", p->id);
	if (val.len != 8)
		return eos_error_set(err, -EBADMSG, "squash '%s': head record is corrupt", p->id);
	p->head = eos_get_le64(val.data);
	return 0;
}

/*
 * R = {head} ∪ lease versions <= head, sorted and unique; each must have a layer record. The
 * leases are read after the snapshot was taken: a lease that has gone since only keeps more.
 */
static int
retained_versions(struct eos_squash_plan *p, const struct layers *ls, struct eos_error *err)
{
	cleanup_free uint64_t *keep = NULL;
	size_t n = 0, out = 0;
	uint64_t *q;
	int r;

	r = eos_lease_versions(p->st, p->sbx, &keep, &n, err);
	if (r < 0)
		return r;
	q = reallocarray(keep, n + 1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	keep = q;
	for (size_t i = 0; i < n; i++)
		if (keep[i] < p->head)
			keep[out++] = keep[i];
	keep[out++] = p->head;
	for (size_t i = 0; i < out; i++)
		if (!has_layer(ls, keep[i]))
			return eos_error_set(
				err, -EBADMSG,
				"squash '%s': retained version %llu has no layer record", p->id,
				(unsigned long long)keep[i]);
	p->keep = TAKE_PTR(keep);
	p->nkeep = out;
	return 0;
}

static void
squash_release(struct squash *sq)
{
	keyset_release(&sq->kept);
	keyset_release(&sq->whiteouts);
}

static int
plan_entries(struct eos_squash_plan *p, struct eos_error *err)
{
	EOS_CLEANUP(squash_release) struct squash sq = { .p = p };
	int r = 0;

	keyset_init(&sq.kept);
	keyset_init(&sq.whiteouts);
	for (size_t i = 0; r == 0 && i < p->nkeep; i++)
		r = walk_version(&sq, p->keep[i], err);
	if (r == 0)
		r = resolve_whiteouts(&sq);
	if (r == 0)
		r = check_cancel(p, err);
	if (r == 0)
		r = drop_entries(&sq, err);
	return r;
}

static int
plan_all(struct eos_squash_plan *p, struct eos_error *err)
{
	EOS_CLEANUP(layers_release) struct layers ls = { 0 };
	int r;

	r = snapshot_head(p, err);
	if (r == 0)
		r = layers_load(p, &ls, err);
	if (r == 0)
		r = retained_versions(p, &ls, err);
	if (r == 0)
		r = plan_entries(p, err);
	if (r == 0)
		r = fold_layers(p, &ls);
	if (r == 0)
		r = check_cancel(p, err);
	if (r == 0)
		r = eos_squash_refs_prepare(p->st, p->refs, err);
	return r;
}

int
eos_squash_plan_make(struct eos_squash_plan *p, struct eos_error *err)
{
	int r;

	p->snap = eos_kv_snapshot_new(p->st->kv);
	if (!p->snap || eos_kv_batch_new(&p->batch) < 0 || eos_squash_refs_new(&p->refs) < 0)
		return eos_error_set(err, -ENOMEM, "squash '%s': out of memory", p->id);
	r = plan_all(p, err);
	if (r == -ENOMEM)
		return eos_error_set(err, r, "squash '%s': out of memory", p->id);
	return r;
}

void
eos_squash_plan_release(struct eos_squash_plan *p)
{
	if (p->snap)
		eos_kv_snapshot_free(p->st->kv, p->snap);
	eos_kv_batch_free(p->batch);
	eos_squash_refs_free(p->refs);
	free(p->keep);
	p->snap = NULL;
	p->batch = NULL;
	p->refs = NULL;
	p->keep = NULL;
}
