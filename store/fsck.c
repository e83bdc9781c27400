/* SPDX-License-Identifier: MIT */
/*
 * eos_store_fsck: check every invariant of doc/store-format.md over one snapshot and report each
 * violation through the caller's callback.
 *
 * Order: format key; the sandbox registry with each sandbox's record, head, layers and leases;
 * keys of unregistered sandbox numbers; every entry (decodes, sandbox registered, version <= head
 * and covered by a layer, floor <= version), collecting reference occurrences; manifests expand
 * into chunk occurrences; the recomputed counts are compared with EOS_CF_REFS in both directions;
 * last the chunk and manifest column families: referenced ones must exist (and, with
 * EOS_FSCK_VERIFY_CHUNKS, decode to their digest), unreferenced ones are garbage (not a
 * violation: gc reclaims them).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/endian.h"
#include "common/error.h"

#include "store/blame.h"
#include "store/codec.h"
#include "store/content.h"
#include "store/entry.h"
#include "store/kv.h"
#include "store/refs.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

enum {
	MSG_MAX = 512,
	HEX_KEY_MAX = 24, /* bytes of a malformed key shown in a message */
};

/* A recomputed reference count, keyed like EOS_CF_REFS. */
struct refcount {
	uint8_t key[EOS_REF_KEY_LEN];
	uint64_t count;
	bool seen;    /* a refs key exists for it */
	bool present; /* the chunk / manifest record exists */
};

struct refvec {
	struct refcount *v;
	size_t n, cap;
};

struct fsck_sandbox {
	char id[EOS_SANDBOX_ID_MAX + 1];
	uint64_t sbx;
	uint64_t head;		       /* 0 when missing */
	struct eos_layer_info *layers; /* sorted by version */
	size_t nlayers, cap;
};

struct fsck {
	struct eos_store *st;
	const struct eos_kv_snapshot *snap;
	enum eos_fsck_flags flags;
	eos_fsck_fn fn;
	void *ctx;
	struct eos_fsck_result res;
	struct fsck_sandbox *sbx; /* sorted by number */
	size_t nsbx, capsbx;
	struct refvec refs;
	struct fsck_sandbox *cur; /* the sandbox whose layers or leases are being scanned */
};

static void report(struct fsck *fs, const char *kind, const char *fmt, ...) EOS_PRINTF(3, 4);

static void
report(struct fsck *fs, const char *kind, const char *fmt, ...)
{
	char msg[MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fs->res.violations++;
	if (fs->fn)
		fs->fn(fs->ctx, kind, msg);
}

/* Hex of (the start of) a key into out[2 * HEX_KEY_MAX + 1]. */
static const char *
hex_key(const uint8_t *k, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	n = EOS_MIN(n, (size_t)HEX_KEY_MAX);
	for (i = 0; i < n; i++) {
		out[2 * i] = digits[k[i] >> 4];
		out[2 * i + 1] = digits[k[i] & 15];
	}
	out[2 * i] = '\0';
	return out;
}

static const char *
ref_type_name(uint8_t type)
{
	return type == EOS_REF_MANIFEST ? "manifest" : "chunk";
}

/* --- iteration helper ------------------------------------------------------------------------- */

typedef int (*fsck_scan_fn)(struct fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v,
			    size_t vlen);

struct fsck_scan_call {
	struct fsck *fs;
	fsck_scan_fn fn;
	struct eos_error *err;
};

/* eos_kv_scan_fn: the checks fail only for lack of memory. */
static int
fsck_scan_one(void *ctx, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	struct fsck_scan_call *c = ctx;
	int r = c->fn(c->fs, k, klen, v, vlen);

	return r < 0 ? eos_error_set(c->err, r, "out of memory") : 0;
}

/* Scan cf over [lo, hi) (NULL = unbounded), with values when values is set. */
static int
fsck_scan(struct fsck *fs, enum eos_cf cf, const void *lo, size_t llen, const void *hi, size_t hlen,
	  bool values, fsck_scan_fn fn, struct eos_error *err)
{
	struct fsck_scan_call call = { .fs = fs, .fn = fn, .err = err };
	struct eos_kv_scan s = {
		.cf = cf,
		.snap = fs->snap,
		.lo = lo,
		.llen = llen,
		.hi = hi,
		.hlen = hlen,
		.flags = EOS_KV_ITER_NO_CACHE_FILL,
		.values = values,
		.fn = fsck_scan_one,
		.ctx = &call,
	};
	int r = eos_kv_scan(fs->st->kv, &s, err);

	return r < 0 ? eos_error_prefix(err, r, "fsck") : 0;
}

/* Scan the keys of cf that start with be64 sbx · prefix. */
static int
fsck_scan_prefix(struct fsck *fs, enum eos_cf cf, uint64_t sbx, const char *prefix, bool values,
		 fsck_scan_fn fn, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf lo = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf hi = { 0 };
	int r;

	r = eos_meta_key(&lo, sbx, prefix);
	if (r == 0)
		r = eos_buf_append(&hi, lo.data, lo.len);
	if (r < 0)
		return eos_error_set(err, r, "fsck: out of memory");
	/* The upper bound: the prefix "plus one" (sbx + 1 for an empty prefix). */
	for (size_t i = hi.len; i-- > 0;) {
		if (hi.data[i] != 0xff) {
			hi.data[i]++;
			eos_buf_truncate(&hi, i + 1);
			break;
		}
	}
	return fsck_scan(fs, cf, lo.data, lo.len, hi.data, hi.len, values, fn, err);
}

/* --- format and sandbox registry -------------------------------------------------------------- */

static int
check_format(struct fsck *fs, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	int r;

	r = eos_meta_key(&key, EOS_SANDBOX_GLOBAL, "format");
	if (r < 0)
		return eos_error_set(err, r, "fsck: out of memory");
	r = eos_kv_get(fs->st->kv, fs->snap, EOS_CF_META, key.data, key.len, &val, err);
	if (r == -ENOENT) {
		report(fs, "format", "format key is missing");
		return 0;
	}
	if (r < 0)
		return eos_error_prefix(err, r, "fsck: read format");
	if (val.len != 4)
		report(fs, "format", "format value has %zu bytes, expected 4", val.len);
	else if (eos_get_le32(val.data) != EOS_STORE_FORMAT)
		report(fs, "format", "format is %u, expected %u", eos_get_le32(val.data),
		       (unsigned)EOS_STORE_FORMAT);
	return 0;
}

static int
add_sandbox(struct fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	const size_t plen = 8 + strlen("sandbox:");
	struct fsck_sandbox *s;
	size_t idlen = klen - plen;

	if (idlen == 0 || idlen > EOS_SANDBOX_ID_MAX || vlen != 8 || eos_get_le64(v) == 0) {
		report(fs, "sandbox", "registration of sandbox '%.*s' is malformed", (int)idlen,
		       (const char *)k + plen);
		return 0;
	}
	if (eos_buf_array_reserve(&fs->sbx, &fs->capsbx, fs->nsbx, sizeof(*fs->sbx), 16) < 0)
		return -ENOMEM;
	s = &fs->sbx[fs->nsbx++];
	*s = (struct fsck_sandbox){ .sbx = eos_get_le64(v) };
	memcpy(s->id, k + plen, idlen);
	s->id[idlen] = '\0';
	return 0;
}

static int
sandbox_cmp(const void *a, const void *b)
{
	const struct fsck_sandbox *x = a, *y = b;

	return x->sbx < y->sbx ? -1 : x->sbx > y->sbx;
}

static struct fsck_sandbox *
find_sandbox(struct fsck *fs, uint64_t sbx)
{
	struct fsck_sandbox key = { .sbx = sbx };

	return bsearch(&key, fs->sbx, fs->nsbx, sizeof(*fs->sbx), sandbox_cmp);
}

static int
load_registry(struct fsck *fs, struct eos_error *err)
{
	int r;

	r = fsck_scan_prefix(fs, EOS_CF_META, EOS_SANDBOX_GLOBAL, "sandbox:", true, add_sandbox,
			     err);
	if (r < 0)
		return r;
	if (fs->nsbx)
		qsort(fs->sbx, fs->nsbx, sizeof(*fs->sbx), sandbox_cmp);
	for (size_t i = 1; i < fs->nsbx; i++)
		if (fs->sbx[i].sbx == fs->sbx[i - 1].sbx)
			report(fs, "sandbox", "sandboxes '%s' and '%s' share number %llu",
			       fs->sbx[i - 1].id, fs->sbx[i].id,
			       (unsigned long long)fs->sbx[i].sbx);
	fs->res.sandboxes = fs->nsbx;
	return 0;
}

/* --- one sandbox: record, head, layers, leases ------------------------------------------------ */

static int
add_layer(struct fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	struct fsck_sandbox *s = fs->cur;
	struct eos_layer_info l;

	if (klen != 16 || eos_layer_record_decode(v, vlen, eos_get_be64(k + 8), &l) < 0) {
		report(fs, "layer", "sandbox '%s': layer record %llu is corrupt", s->id,
		       klen == 16 ? (unsigned long long)eos_get_be64(k + 8) : 0ULL);
		return 0;
	}
	if (eos_buf_array_reserve(&s->layers, &s->cap, s->nlayers, sizeof(*s->layers), 16) < 0)
		return -ENOMEM;
	s->layers[s->nlayers++] = l;
	return 0;
}

/* The layer covering version v: v itself or a squashed range ending at a later layer. */
static const struct eos_layer_info *
find_layer(const struct fsck_sandbox *s, uint64_t v, bool exact)
{
	size_t lo = 0, hi = s->nlayers;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->layers[mid].version < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->nlayers)
		return NULL;
	if (s->layers[lo].version == v)
		return &s->layers[lo];
	if (!exact && s->layers[lo].squashed_from && s->layers[lo].squashed_from <= v)
		return &s->layers[lo];
	return NULL;
}

static int
check_lease(struct fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	const struct fsck_sandbox *s = fs->cur;
	const size_t plen = 8 + strlen("lease:");

	if (vlen < 8) {
		report(fs, "lease", "sandbox '%s': lease '%.*s' is malformed", s->id,
		       (int)(klen - plen), (const char *)k + plen);
		return 0;
	}
	if (!find_layer(s, eos_get_le64(v), true))
		report(fs, "lease", "sandbox '%s': lease '%.*s' points to missing version %llu",
		       s->id, (int)(klen - plen), (const char *)k + plen,
		       (unsigned long long)eos_get_le64(v));
	return 0;
}

static int
read_meta(struct fsck *fs, uint64_t sbx, const char *name, struct eos_buf *val,
	  struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	int r;

	r = eos_meta_key(&key, sbx, name);
	if (r < 0)
		return eos_error_set(err, r, "fsck: out of memory");
	r = eos_kv_get(fs->st->kv, fs->snap, EOS_CF_META, key.data, key.len, val, err);
	if (r < 0 && r != -ENOENT)
		return eos_error_prefix(err, r, "fsck: read meta '%s'", name);
	return r;
}

static int
check_record(struct fsck *fs, struct fsck_sandbox *s, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	struct eos_sandbox_record rec;
	int r;

	r = read_meta(fs, s->sbx, "info", &val, err);
	if (r == -ENOENT)
		report(fs, "sandbox", "sandbox '%s': record is missing", s->id);
	else if (r < 0)
		return r;
	else if (eos_sandbox_record_decode(val.data, val.len, &rec) < 0)
		report(fs, "sandbox", "sandbox '%s': record is corrupt", s->id);
	else if (strcmp(rec.id, s->id) != 0)
		report(fs, "sandbox", "sandbox '%s': record names '%s'", s->id, rec.id);
	r = read_meta(fs, s->sbx, "head", &val, err);
	if (r == -ENOENT)
		report(fs, "head", "sandbox '%s': head is missing", s->id);
	else if (r < 0)
		return r;
	else if (val.len != 8)
		report(fs, "head", "sandbox '%s': head is malformed", s->id);
	else
		s->head = eos_get_le64(val.data);
	return 0;
}

static void
check_layers(struct fsck *fs, const struct fsck_sandbox *s)
{
	if (s->head && !find_layer(s, s->head, true))
		report(fs, "head", "sandbox '%s': head %llu has no layer record", s->id,
		       (unsigned long long)s->head);
	for (size_t i = 0; i < s->nlayers; i++) {
		const struct eos_layer_info *l = &s->layers[i];

		if (l->parent && (l->parent >= l->version || !find_layer(s, l->parent, true)))
			report(fs, "layer", "sandbox '%s': layer %llu has bad parent %llu", s->id,
			       (unsigned long long)l->version, (unsigned long long)l->parent);
		if (l->squashed_from > l->version)
			report(fs, "layer", "sandbox '%s': layer %llu squashed from later %llu",
			       s->id, (unsigned long long)l->version,
			       (unsigned long long)l->squashed_from);
		if (s->head && l->version > s->head)
			report(fs, "layer", "sandbox '%s': layer %llu is newer than head %llu",
			       s->id, (unsigned long long)l->version, (unsigned long long)s->head);
	}
}

static int
check_sandbox(struct fsck *fs, struct fsck_sandbox *s, struct eos_error *err)
{
	int r;

	fs->cur = s;
	r = check_record(fs, s, err);
	if (r == 0)
		r = fsck_scan_prefix(fs, EOS_CF_LAYERS, s->sbx, "", true, add_layer, err);
	if (r < 0)
		return r;
	check_layers(fs, s);
	return fsck_scan_prefix(fs, EOS_CF_META, s->sbx, "lease:", true, check_lease, err);
}

static int
check_orphan_layer(struct fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	char hex[2 * HEX_KEY_MAX + 1];

	(void)v;
	(void)vlen;
	if (klen < 8 || !find_sandbox(fs, eos_get_be64(k)))
		report(fs, "orphan-layer", "layer key '%s' of an unregistered sandbox",
		       hex_key(k, klen, hex));
	return 0;
}

static int
check_orphan_meta(struct fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	char hex[2 * HEX_KEY_MAX + 1];

	(void)v;
	(void)vlen;
	if (klen < 8 ||
	    (eos_get_be64(k) != EOS_SANDBOX_GLOBAL && !find_sandbox(fs, eos_get_be64(k))))
		report(fs, "orphan-meta", "meta key '%s' of an unregistered sandbox",
		       hex_key(k, klen, hex));
	return 0;
}

/* --- blame records -----------------------------------------------------------------------------
 */

enum {
	BLAME_KEY_MIN = 8 + 1 + 8, /* be64 sbx · path · 0x00 · be64 version */
};

/* A blame record: its key parses, its sandbox exists, its version is not above the head, and its
 * value decodes. Records of versions squash removed stay (blame survives squash): not checked. */
static int
check_blame(struct fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	EOS_CLEANUP(eos_blame_release) struct eos_blame b = { 0 };
	char hex[2 * HEX_KEY_MAX + 1];
	const struct fsck_sandbox *s;
	uint64_t version;
	int plen;

	fs->res.blame++;
	if (klen < BLAME_KEY_MIN || k[klen - 9] != 0 || memchr(k + 8, 0, klen - 17)) {
		report(fs, "blame", "blame key '%s' is malformed", hex_key(k, klen, hex));
		return 0;
	}
	plen = (int)(klen - 17);
	version = eos_get_be64(k + klen - 8);
	s = find_sandbox(fs, eos_get_be64(k));
	if (!s)
		report(fs, "orphan-blame", "blame of '%.*s' of an unregistered sandbox", plen,
		       (const char *)k + 8);
	else if (s->head && version > s->head)
		report(fs, "blame-version",
		       "sandbox '%s': blame of '%.*s' version %llu is newer than head %llu", s->id,
		       plen, (const char *)k + 8, (unsigned long long)version,
		       (unsigned long long)s->head);
	if (eos_blame_decode(v, vlen, &b) < 0)
		report(fs, "blame", "blame of '%.*s' version %llu is corrupt", plen,
		       (const char *)k + 8, (unsigned long long)version);
	return 0;
}

/* --- entries ---------------------------------------------------------------------------------- */

static int
add_ref(struct refvec *rv, const uint8_t key[EOS_REF_KEY_LEN], uint64_t count)
{
	if (eos_buf_array_reserve(&rv->v, &rv->cap, rv->n, sizeof(*rv->v), 1024) < 0)
		return -ENOMEM;
	rv->v[rv->n] = (struct refcount){ .count = count };
	memcpy(rv->v[rv->n].key, key, EOS_REF_KEY_LEN);
	rv->n++;
	return 0;
}

static int
add_content_ref(struct fsck *fs, const struct eos_content *c)
{
	uint8_t key[EOS_REF_KEY_LEN];

	switch (c->kind) {
	case EOS_CONTENT_CHUNK:
		eos_ref_key(key, EOS_REF_CHUNK, &c->digest);
		break;
	case EOS_CONTENT_MANIFEST:
		eos_ref_key(key, EOS_REF_MANIFEST, &c->digest);
		break;
	case EOS_CONTENT_NONE:
	case EOS_CONTENT_INLINE:
	default:
		return 0;
	}
	return add_ref(&fs->refs, key, 1);
}

static void
check_entry_version(struct fsck *fs, const struct fsck_sandbox *s,
		    const struct eos_entry_key_parts *p, const struct eos_entry *e)
{
	unsigned long long v = (unsigned long long)p->version;

	if (s->head && p->version > s->head)
		report(fs, "entry-version",
		       "sandbox '%s': entry '%.*s%s%.*s' version %llu is newer than head %llu",
		       s->id, (int)p->plen, p->parent, p->plen ? "/" : "", (int)p->nlen, p->name, v,
		       (unsigned long long)s->head);
	else if (!find_layer(s, p->version, false))
		report(fs, "entry-version",
		       "sandbox '%s': entry '%.*s%s%.*s' version %llu has no layer", s->id,
		       (int)p->plen, p->parent, p->plen ? "/" : "", (int)p->nlen, p->name, v);
	if (e->st.kind == EOS_KIND_DIR && e->st.floor > p->version)
		report(fs, "floor",
		       "sandbox '%s': directory '%.*s%s%.*s' version %llu has floor %llu", s->id,
		       (int)p->plen, p->parent, p->plen ? "/" : "", (int)p->nlen, p->name, v,
		       (unsigned long long)e->st.floor);
}

static int
check_entry(struct fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	EOS_CLEANUP(eos_entry_release) struct eos_entry e = { 0 };
	char hex[2 * HEX_KEY_MAX + 1];
	struct eos_entry_key_parts p;
	const struct fsck_sandbox *s;

	fs->res.entries++;
	eos_entry_init(&e);
	if (eos_entry_key_decode(k, klen, &p) < 0) {
		report(fs, "entry", "entry key '%s' is malformed", hex_key(k, klen, hex));
		return 0;
	}
	if (eos_entry_decode(v, vlen, p.version, &e) < 0) {
		report(fs, "entry", "entry '%.*s%s%.*s' version %llu of sandbox %llu is corrupt",
		       (int)p.plen, p.parent, p.plen ? "/" : "", (int)p.nlen, p.name,
		       (unsigned long long)p.version, (unsigned long long)p.sbx);
		return 0;
	}
	s = find_sandbox(fs, p.sbx);
	if (!s)
		report(fs, "orphan-entry",
		       "entry '%.*s%s%.*s' version %llu of unregistered sandbox %llu", (int)p.plen,
		       p.parent, p.plen ? "/" : "", (int)p.nlen, p.name,
		       (unsigned long long)p.version, (unsigned long long)p.sbx);
	else
		check_entry_version(fs, s, &p, &e);
	/* Orphans still count: their references were taken when they were committed. */
	if (e.st.kind != EOS_KIND_FILE)
		return 0;
	return add_content_ref(fs, &e.st.content);
}

/* --- reference counts ------------------------------------------------------------------------- */

static int
refcount_cmp(const void *a, const void *b)
{
	const struct refcount *x = a, *y = b;

	return memcmp(x->key, y->key, EOS_REF_KEY_LEN);
}

/* Sort and merge equal keys, summing their counts. */
static void
refvec_merge(struct refvec *rv)
{
	size_t out = 0;

	if (rv->n == 0)
		return;
	qsort(rv->v, rv->n, sizeof(*rv->v), refcount_cmp);
	for (size_t i = 1; i < rv->n; i++) {
		if (refcount_cmp(&rv->v[out], &rv->v[i]) == 0)
			rv->v[out].count += rv->v[i].count;
		else
			rv->v[++out] = rv->v[i];
	}
	rv->n = out + 1;
}

static struct refcount *
find_ref(const struct refvec *rv, enum eos_ref_type type, const uint8_t *digest)
{
	struct refcount key = { 0 };

	if (rv->n == 0) /* rv->v may be NULL: bsearch needs a valid array */
		return NULL;
	key.key[0] = (uint8_t)type;
	memcpy(key.key + 1, digest, EOS_DIGEST_LEN);
	return bsearch(&key, rv->v, rv->n, sizeof(*rv->v), refcount_cmp);
}

/* Add the chunk occurrences of referenced manifest m to out; report missing or corrupt ones. */
static int
expand_manifest(struct fsck *fs, struct refcount *m, struct refvec *out, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	cleanup_free struct eos_manifest *man = NULL;
	char hex[EOS_DIGEST_HEX_LEN + 1];
	struct eos_digest d;
	int r;

	memcpy(d.b, m->key + 1, EOS_DIGEST_LEN);
	eos_digest_hex(&d, hex);
	r = eos_kv_get(fs->st->kv, fs->snap, EOS_CF_MANIFESTS, d.b, EOS_DIGEST_LEN, &val, err);
	if (r == -ENOENT) {
		report(fs, "missing-manifest", "manifest '%s' is referenced but missing", hex);
		return 0;
	}
	if (r < 0)
		return eos_error_prefix(err, r, "fsck: read manifest '%s'", hex);
	if (eos_manifest_decode(val.data, val.len, &man) < 0) {
		report(fs, "corrupt-manifest", "manifest '%s' is corrupt", hex);
		return 0;
	}
	for (uint32_t i = 0; i < man->n; i++) {
		uint8_t key[EOS_REF_KEY_LEN];

		eos_ref_key(key, EOS_REF_CHUNK, &man->chunks[i].digest);
		r = add_ref(out, key, 1);
		if (r < 0)
			return eos_error_set(err, r, "fsck: out of memory");
	}
	return 0;
}

/* refs = entry occurrences merged, plus the chunk occurrences of every referenced manifest. */
static int
expected_refs(struct fsck *fs, struct eos_error *err)
{
	struct refvec chunks = { 0 };
	int r = 0;

	refvec_merge(&fs->refs);
	for (size_t i = 0; i < fs->refs.n && r == 0; i++)
		if (fs->refs.v[i].key[0] == EOS_REF_MANIFEST)
			r = expand_manifest(fs, &fs->refs.v[i], &chunks, err);
	for (size_t i = 0; i < chunks.n && r == 0; i++)
		r = add_ref(&fs->refs, chunks.v[i].key, chunks.v[i].count);
	free(chunks.v);
	if (r < 0)
		return r == -ENOMEM ? eos_error_set(err, r, "fsck: out of memory") : r;
	refvec_merge(&fs->refs);
	return 0;
}

static int
check_refkey(struct fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	char hex[2 * HEX_KEY_MAX + 1];
	struct refcount *rc;
	uint64_t found;

	if (klen != EOS_REF_KEY_LEN || (k[0] != EOS_REF_CHUNK && k[0] != EOS_REF_MANIFEST) ||
	    vlen != 8) {
		report(fs, "refcount", "reference key '%s' is malformed", hex_key(k, klen, hex));
		return 0;
	}
	found = eos_get_le64(v);
	rc = find_ref(&fs->refs, k[0], k + 1);
	if (rc)
		rc->seen = true;
	if (!rc || rc->count != found) {
		char dhex[EOS_DIGEST_HEX_LEN + 1];
		struct eos_digest d;

		memcpy(d.b, k + 1, EOS_DIGEST_LEN);
		eos_digest_hex(&d, dhex);
		report(fs, "refcount", "%s '%s': expected %llu references, found %llu",
		       ref_type_name(k[0]), dhex, rc ? (unsigned long long)rc->count : 0ULL,
		       (unsigned long long)found);
	}
	return 0;
}

static void
check_unseen_refs(struct fsck *fs)
{
	for (size_t i = 0; i < fs->refs.n; i++) {
		const struct refcount *rc = &fs->refs.v[i];
		char hex[EOS_DIGEST_HEX_LEN + 1];
		struct eos_digest d;

		if (rc->seen || rc->count == 0)
			continue;
		memcpy(d.b, rc->key + 1, EOS_DIGEST_LEN);
		eos_digest_hex(&d, hex);
		report(fs, "refcount", "%s '%s': expected %llu references, found 0",
		       ref_type_name(rc->key[0]), hex, (unsigned long long)rc->count);
	}
}

/* --- chunks and manifests --------------------------------------------------------------------- */

static void
verify_chunk(struct fsck *fs, const struct eos_digest *d, const uint8_t *v, size_t vlen)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf raw = { 0 };
	struct eos_error e = { 0 };
	int r;

	r = eos_codec_decode(v, vlen, d, &raw, &e);
	if (r < 0)
		report(fs, "corrupt-chunk", "%s", eos_error_message(&e, r));
}

static int
check_stored(struct fsck *fs, enum eos_ref_type type, const uint8_t *k, size_t klen,
	     const uint8_t *v, size_t vlen)
{
	char hex[2 * HEX_KEY_MAX + 1];
	struct refcount *rc;
	struct eos_digest d;

	if (klen != EOS_DIGEST_LEN) {
		report(fs, type == EOS_REF_CHUNK ? "chunk" : "manifest", "%s key '%s' is malformed",
		       ref_type_name(type), hex_key(k, klen, hex));
		return 0;
	}
	rc = find_ref(&fs->refs, type, k);
	if (rc)
		rc->present = true;
	if (!rc || rc->count == 0)
		fs->res.garbage_chunks++;
	memcpy(d.b, k, EOS_DIGEST_LEN);
	if (v)
		verify_chunk(fs, &d, v, vlen);
	return 0;
}

static int
check_chunk(struct fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	fs->res.chunks++;
	return check_stored(fs, EOS_REF_CHUNK, k, klen, v, vlen);
}

static int
check_manifest(struct fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	(void)v;
	(void)vlen;
	fs->res.manifests++;
	return check_stored(fs, EOS_REF_MANIFEST, k, klen, NULL, 0);
}

static void
check_missing_chunks(struct fsck *fs)
{
	for (size_t i = 0; i < fs->refs.n; i++) {
		const struct refcount *rc = &fs->refs.v[i];
		char hex[EOS_DIGEST_HEX_LEN + 1];
		struct eos_digest d;

		if (rc->present || rc->count == 0 || rc->key[0] != EOS_REF_CHUNK)
			continue;
		memcpy(d.b, rc->key + 1, EOS_DIGEST_LEN);
		eos_digest_hex(&d, hex);
		report(fs, "missing-chunk", "chunk '%s' is referenced %llu times but missing", hex,
		       (unsigned long long)rc->count);
	}
}

/* --- the operation ---------------------------------------------------------------------------- */

static void
fsck_release(struct fsck *fs)
{
	for (size_t i = 0; i < fs->nsbx; i++)
		free(fs->sbx[i].layers);
	free(fs->sbx);
	free(fs->refs.v);
	if (fs->snap)
		eos_kv_snapshot_free(fs->st->kv, fs->snap);
}

static int
fsck_sandboxes(struct fsck *fs, struct eos_error *err)
{
	int r;

	r = check_format(fs, err);
	if (r == 0)
		r = load_registry(fs, err);
	for (size_t i = 0; r == 0 && i < fs->nsbx; i++)
		r = check_sandbox(fs, &fs->sbx[i], err);
	if (r == 0)
		r = fsck_scan(fs, EOS_CF_LAYERS, NULL, 0, NULL, 0, false, check_orphan_layer, err);
	if (r == 0)
		r = fsck_scan(fs, EOS_CF_META, NULL, 0, NULL, 0, false, check_orphan_meta, err);
	if (r == 0)
		r = fsck_scan(fs, EOS_CF_BLAME, NULL, 0, NULL, 0, true, check_blame, err);
	return r;
}

static int
fsck_content(struct fsck *fs, struct eos_error *err)
{
	bool verify = fs->flags & EOS_FSCK_VERIFY_CHUNKS;
	int r;

	r = fsck_scan(fs, EOS_CF_ENTRIES, NULL, 0, NULL, 0, true, check_entry, err);
	if (r == 0)
		r = expected_refs(fs, err);
	if (r == 0)
		r = fsck_scan(fs, EOS_CF_REFS, NULL, 0, NULL, 0, true, check_refkey, err);
	if (r < 0)
		return r;
	check_unseen_refs(fs);
	r = fsck_scan(fs, EOS_CF_CHUNKS, NULL, 0, NULL, 0, verify, check_chunk, err);
	if (r == 0)
		r = fsck_scan(fs, EOS_CF_MANIFESTS, NULL, 0, NULL, 0, false, check_manifest, err);
	if (r < 0)
		return r;
	check_missing_chunks(fs);
	return 0;
}

int
eos_store_fsck(struct eos_store *st, enum eos_fsck_flags flags, eos_fsck_fn fn, void *ctx,
	       struct eos_fsck_result *ret, struct eos_error *err)
{
	EOS_CLEANUP(fsck_release)
	struct fsck fs = {
		.st = st,
		.flags = flags,
		.fn = fn,
		.ctx = ctx,
	};
	int r;

	fs.snap = eos_kv_snapshot_new(st->kv);
	if (!fs.snap)
		return eos_error_set(err, -ENOMEM, "fsck: cannot take a snapshot");
	r = fsck_sandboxes(&fs, err);
	if (r == 0)
		r = fsck_content(&fs, err);
	if (r < 0)
		return r;
	if (ret)
		*ret = fs.res;
	return 0;
}
