/* SPDX-License-Identifier: MIT */
/*
 * eos_store_fsck: check every invariant of doc/store-format.md over one snapshot and report each
 * violation through the caller's callback.
 *
 * Order: format key; the sandbox registry with each sandbox's record, head, layers and leases;
 * keys of unregistered sandbox numbers; blame records; the column families nothing else reads
 * (their checksums only); then fsck-content.c: every entry (decodes, sandbox registered,
 * version <= head and covered by a layer, floor <= version), collecting reference occurrences;
 * manifests expand into chunk occurrences; the recomputed counts are compared with EOS_CF_REFS in
 * both directions; last the chunk and manifest column families: referenced ones must exist (and,
 * with EOS_FSCK_VERIFY_CHUNKS, decode to their digest), unreferenced ones are garbage (not a
 * violation: gc reclaims them). Whatever RocksDB cannot read on the way is reported and skipped
 * (fsck-damage.c), and a last pass names the paths whose content is damaged.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/error.h"

#include "store/blame.h"
#include "store/fsck-internal.h"
#include "store/kv.h"
#include "store/obs.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

void
eos_fsck_report(struct eos_fsck *fs, const char *kind, const char *fmt, ...)
{
	char msg[EOS_FSCK_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fs->res.violations++;
	if (fs->fn)
		fs->fn(fs->ctx, kind, msg);
}

const char *
eos_fsck_hex_key(const uint8_t *k, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	n = EOS_MIN(n, (size_t)EOS_FSCK_HEX_KEY_MAX);
	for (i = 0; i < n; i++) {
		out[2 * i] = digits[k[i] >> 4];
		out[2 * i + 1] = digits[k[i] & 15];
	}
	out[2 * i] = '\0';
	return out;
}

/* --- iteration helper ------------------------------------------------------------------------- */

struct fsck_scan_call {
	struct eos_fsck *fs;
	enum eos_cf cf;
	const void *lo, *hi; /* the scan's bounds */
	size_t llen, hlen;
	eos_fsck_scan_fn fn;
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

/* eos_kv_damage_fn */
static int
fsck_scan_damage(void *ctx, const uint8_t *after, size_t alen, const uint8_t *resume, size_t rlen,
		 const char *msg)
{
	struct fsck_scan_call *c = ctx;
	int r;

	/* A stretch reaching the scan's bounds is described by them. */
	if (!after && c->lo) {
		after = c->lo;
		alen = c->llen;
	}
	if (!resume && c->hi) {
		resume = c->hi;
		rlen = c->hlen;
	}
	r = eos_fsck_damage(c->fs, c->cf, after, alen, resume, rlen, msg);

	return r < 0 ? eos_error_set(c->err, r, "out of memory") : 0;
}

int
eos_fsck_scan(struct eos_fsck *fs, enum eos_cf cf, const void *lo, size_t llen, const void *hi,
	      size_t hlen, bool values, eos_fsck_scan_fn fn, struct eos_error *err)
{
	struct fsck_scan_call call = {
		.fs = fs,
		.cf = cf,
		.lo = lo,
		.hi = hi,
		.llen = llen,
		.hlen = hlen,
		.fn = fn,
		.err = err,
	};
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
		.damage = fsck_scan_damage,
	};
	int r = eos_kv_scan(fs->st->kv, &s, err);

	return r < 0 ? eos_error_prefix(err, r, "fsck") : 0;
}

/* Scan the keys of cf that start with be64 sbx · prefix. */
static int
fsck_scan_prefix(struct eos_fsck *fs, enum eos_cf cf, uint64_t sbx, const char *prefix, bool values,
		 eos_fsck_scan_fn fn, struct eos_error *err)
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
	return eos_fsck_scan(fs, cf, lo.data, lo.len, hi.data, hi.len, values, fn, err);
}

/*
 * Read meta record name of sandbox sbx (s: its fsck record, NULL for the store's) at the
 * snapshot. -ENOENT when absent; -EBADMSG (reported, s marked) when RocksDB cannot read it.
 */
static int
read_meta(struct eos_fsck *fs, struct eos_fsck_sandbox *s, uint64_t sbx, const char *name,
	  struct eos_buf *val, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	struct eos_error e = { 0 };
	int r;

	r = eos_meta_key(&key, sbx, name);
	if (r < 0)
		return eos_error_set(err, r, "fsck: out of memory");
	r = eos_kv_get(fs->st->kv, fs->snap, EOS_CF_META, key.data, key.len, val, &e);
	if (r == -ENOMEM)
		return eos_error_set(err, r, "fsck: read meta '%s': out of memory", name);
	if (r < 0 && r != -ENOENT) {
		eos_fsck_read_failed(fs, s, name, &e);
		return -EBADMSG;
	}
	return r;
}

/* --- format and sandbox registry -------------------------------------------------------------- */

static int
check_format(struct eos_fsck *fs, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	int r;

	r = read_meta(fs, NULL, EOS_SANDBOX_GLOBAL, "format", &val, err);
	if (r == -ENOENT)
		eos_fsck_report(fs, "format", "format key is missing");
	else if (r == -ENOMEM)
		return r;
	else if (r < 0)
		return 0;
	else if (val.len != 4)
		eos_fsck_report(fs, "format", "format value has %zu bytes, expected 4", val.len);
	else if (eos_get_le32(val.data) != EOS_STORE_FORMAT)
		eos_fsck_report(fs, "format", "format is %u, expected %u", eos_get_le32(val.data),
				(unsigned)EOS_STORE_FORMAT);
	return 0;
}

static int
add_sandbox(struct eos_fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	const size_t plen = 8 + strlen("sandbox:");
	struct eos_fsck_sandbox *s;
	size_t idlen = klen - plen;

	if (idlen == 0 || idlen > EOS_SANDBOX_ID_MAX || vlen != 8 || eos_get_le64(v) == 0) {
		eos_fsck_report(fs, "sandbox", "registration of sandbox '%.*s' is malformed",
				(int)idlen, (const char *)k + plen);
		return 0;
	}
	if (eos_buf_array_reserve(&fs->sbx, &fs->capsbx, fs->nsbx, sizeof(*fs->sbx), 16) < 0)
		return -ENOMEM;
	s = &fs->sbx[fs->nsbx++];
	*s = (struct eos_fsck_sandbox){ .sbx = eos_get_le64(v) };
	memcpy(s->id, k + plen, idlen);
	s->id[idlen] = '\0';
	return 0;
}

static int
sandbox_cmp(const void *a, const void *b)
{
	const struct eos_fsck_sandbox *x = a, *y = b;

	return x->sbx < y->sbx ? -1 : x->sbx > y->sbx;
}

struct eos_fsck_sandbox *
eos_fsck_find_sandbox(struct eos_fsck *fs, uint64_t sbx)
{
	struct eos_fsck_sandbox key = { .sbx = sbx };

	if (fs->nsbx == 0) /* fs->sbx may be NULL: bsearch needs a valid array */
		return NULL;
	return bsearch(&key, fs->sbx, fs->nsbx, sizeof(*fs->sbx), sandbox_cmp);
}

const char *
eos_fsck_sandbox_name(struct eos_fsck *fs, uint64_t sbx, char *buf)
{
	const struct eos_fsck_sandbox *s = eos_fsck_find_sandbox(fs, sbx);

	if (s)
		return s->id;
	snprintf(buf, 32, "#%llu", (unsigned long long)sbx);
	return buf;
}

static int
load_registry(struct eos_fsck *fs, struct eos_error *err)
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
			eos_fsck_report(fs, "sandbox", "sandboxes '%s' and '%s' share number %llu",
					fs->sbx[i - 1].id, fs->sbx[i].id,
					(unsigned long long)fs->sbx[i].sbx);
	fs->res.sandboxes = fs->nsbx;
	return 0;
}

/* --- one sandbox: record, head, layers, leases ------------------------------------------------ */

static int
add_layer(struct eos_fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	struct eos_fsck_sandbox *s = fs->cur;
	struct eos_layer_info l;

	if (klen != 16 || eos_layer_record_decode(v, vlen, eos_get_be64(k + 8), &l) < 0) {
		eos_fsck_report(fs, "layer", "sandbox '%s': layer record %llu is corrupt", s->id,
				klen == 16 ? (unsigned long long)eos_get_be64(k + 8) : 0ULL);
		return 0;
	}
	if (eos_buf_array_reserve(&s->layers, &s->cap, s->nlayers, sizeof(*s->layers), 16) < 0)
		return -ENOMEM;
	s->layers[s->nlayers++] = l;
	return 0;
}

const struct eos_layer_info *
eos_fsck_find_layer(const struct eos_fsck_sandbox *s, uint64_t v, bool exact)
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
check_lease(struct eos_fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	const struct eos_fsck_sandbox *s = fs->cur;
	const size_t plen = 8 + strlen("lease:");

	if (vlen < 8) {
		eos_fsck_report(fs, "lease", "sandbox '%s': lease '%.*s' is malformed", s->id,
				(int)(klen - plen), (const char *)k + plen);
		return 0;
	}
	if (!(s->damage & EOS_FSCK_DAMAGE_LAYERS) && !eos_fsck_find_layer(s, eos_get_le64(v), true))
		eos_fsck_report(fs, "lease",
				"sandbox '%s': lease '%.*s' points to missing version %llu", s->id,
				(int)(klen - plen), (const char *)k + plen,
				(unsigned long long)eos_get_le64(v));
	return 0;
}

static int
check_record(struct eos_fsck *fs, struct eos_fsck_sandbox *s, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	struct eos_sandbox_record rec;
	int r;

	r = read_meta(fs, s, s->sbx, "info", &val, err);
	if (r == -ENOENT)
		eos_fsck_report(fs, "sandbox", "sandbox '%s': record is missing", s->id);
	else if (r == -ENOMEM)
		return r;
	else if (r < 0)
		; /* reported */
	else if (eos_sandbox_record_decode(val.data, val.len, &rec) < 0)
		eos_fsck_report(fs, "sandbox", "sandbox '%s': record is corrupt", s->id);
	else if (strcmp(rec.id, s->id) != 0)
		eos_fsck_report(fs, "sandbox", "sandbox '%s': record names '%s'", s->id, rec.id);
	r = read_meta(fs, s, s->sbx, "head", &val, err);
	if (r == -ENOENT)
		eos_fsck_report(fs, "head", "sandbox '%s': head is missing", s->id);
	else if (r == -ENOMEM)
		return r;
	else if (r < 0)
		; /* reported */
	else if (val.len != 8)
		eos_fsck_report(fs, "head", "sandbox '%s': head is malformed", s->id);
	else
		s->head = eos_get_le64(val.data);
	return 0;
}

static void
check_layers(struct eos_fsck *fs, const struct eos_fsck_sandbox *s)
{
	if (s->damage & EOS_FSCK_DAMAGE_LAYERS)
		return; /* reported: the chain cannot be followed */
	if (s->head && !eos_fsck_find_layer(s, s->head, true))
		eos_fsck_report(fs, "head", "sandbox '%s': head %llu has no layer record", s->id,
				(unsigned long long)s->head);
	for (size_t i = 0; i < s->nlayers; i++) {
		const struct eos_layer_info *l = &s->layers[i];

		if (l->parent &&
		    (l->parent >= l->version || !eos_fsck_find_layer(s, l->parent, true)))
			eos_fsck_report(fs, "layer", "sandbox '%s': layer %llu has bad parent %llu",
					s->id, (unsigned long long)l->version,
					(unsigned long long)l->parent);
		if (l->squashed_from > l->version)
			eos_fsck_report(fs, "layer",
					"sandbox '%s': layer %llu squashed from later %llu", s->id,
					(unsigned long long)l->version,
					(unsigned long long)l->squashed_from);
		if (s->head && l->version > s->head)
			eos_fsck_report(
				fs, "layer", "sandbox '%s': layer %llu is newer than head %llu",
				s->id, (unsigned long long)l->version, (unsigned long long)s->head);
	}
}

static int
check_sandbox(struct eos_fsck *fs, struct eos_fsck_sandbox *s, struct eos_error *err)
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
check_orphan_layer(struct eos_fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v,
		   size_t vlen)
{
	char hex[2 * EOS_FSCK_HEX_KEY_MAX + 1];

	(void)v;
	(void)vlen;
	if (!fs->registry_damaged && (klen < 8 || !eos_fsck_find_sandbox(fs, eos_get_be64(k))))
		eos_fsck_report(fs, "orphan-layer", "layer key '%s' of an unregistered sandbox",
				eos_fsck_hex_key(k, klen, hex));
	return 0;
}

static int
check_orphan_meta(struct eos_fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	char hex[2 * EOS_FSCK_HEX_KEY_MAX + 1];

	(void)v;
	(void)vlen;
	if (fs->registry_damaged)
		return 0;
	if (klen < 8 ||
	    (eos_get_be64(k) != EOS_SANDBOX_GLOBAL && !eos_fsck_find_sandbox(fs, eos_get_be64(k))))
		eos_fsck_report(fs, "orphan-meta", "meta key '%s' of an unregistered sandbox",
				eos_fsck_hex_key(k, klen, hex));
	return 0;
}

/* --- blame records ---------------------------------------------------------------------------- */

enum {
	BLAME_KEY_MIN = 8 + 1 + 8, /* be64 sbx · path · 0x00 · be64 version */
};

/* A blame record: its key parses, its sandbox exists, its version is not above the head, and its
 * value decodes. Records of versions squash removed stay (blame survives squash): not checked. */
static int
check_blame(struct eos_fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	EOS_CLEANUP(eos_blame_release) struct eos_blame b = { 0 };
	char hex[2 * EOS_FSCK_HEX_KEY_MAX + 1];
	const struct eos_fsck_sandbox *s;
	uint64_t version;
	int plen;

	fs->res.blame++;
	if (klen < BLAME_KEY_MIN || k[klen - 9] != 0 || memchr(k + 8, 0, klen - 17)) {
		eos_fsck_report(fs, "blame", "blame key '%s' is malformed",
				eos_fsck_hex_key(k, klen, hex));
		return 0;
	}
	plen = (int)(klen - 17);
	version = eos_get_be64(k + klen - 8);
	s = eos_fsck_find_sandbox(fs, eos_get_be64(k));
	if (!s && !fs->registry_damaged)
		eos_fsck_report(fs, "orphan-blame", "blame of '%.*s' of an unregistered sandbox",
				plen, (const char *)k + 8);
	else if (s && s->head && version > s->head)
		eos_fsck_report(
			fs, "blame-version",
			"sandbox '%s': blame of '%.*s' version %llu is newer than head %llu", s->id,
			plen, (const char *)k + 8, (unsigned long long)version,
			(unsigned long long)s->head);
	if (eos_blame_decode(v, vlen, &b) < 0)
		eos_fsck_report(fs, "blame", "blame of '%.*s' version %llu is corrupt", plen,
				(const char *)k + 8, (unsigned long long)version);
	return 0;
}

/* --- the operation ---------------------------------------------------------------------------- */

/* Column families no other check reads: their keys and values are read for the checksums. */
static int
check_readable(struct eos_fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	(void)fs;
	(void)k;
	(void)klen;
	(void)v;
	(void)vlen;
	return 0;
}

/* --- observations ---------------------------------------------------------------------------- */

static int
check_obs(struct eos_fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	char hex[2 * EOS_FSCK_HEX_KEY_MAX + 1];

	fs->obs_records++;
	fs->obs_bytes += klen + vlen;
	if (!eos_obs_record_valid(k, klen, v, vlen))
		eos_fsck_report(fs, "obs-record", "observation '%s' does not decode",
				eos_fsck_hex_key(k, klen, hex));
	return 0;
}

/* Every observation decodes, and the 0·"obs" record counts them and their bytes exactly. */
static int
fsck_obs(struct eos_fsck *fs, struct eos_error *err)
{
	struct eos_obs_stats s = { 0 };
	struct eos_error rerr = { 0 };
	int r = eos_fsck_scan(fs, EOS_CF_OBS, NULL, 0, NULL, 0, true, check_obs, err);

	if (r < 0)
		return r;
	r = eos_obs_stats_read(fs->st, fs->snap, &s, &rerr);
	if (r == -ENOENT && fs->obs_records == 0)
		return 0;
	if (r == -EBADMSG || r == -ENOENT)
		eos_fsck_report(fs, "obs-count", "%s",
				r == -ENOENT ? "observations are stored but their record 0·\"obs\" "
					       "is missing"
					     : rerr.msg);
	else if (r < 0)
		eos_fsck_read_failed(fs, NULL, "obs", &rerr);
	else if (s.records != fs->obs_records || s.bytes != fs->obs_bytes)
		eos_fsck_report(fs, "obs-count",
				"the observations' record counts %llu records and %llu bytes, the "
				"column family holds %llu and %llu",
				(unsigned long long)s.records, (unsigned long long)s.bytes,
				(unsigned long long)fs->obs_records,
				(unsigned long long)fs->obs_bytes);
	return 0;
}

static void
fsck_release(struct eos_fsck *fs)
{
	for (size_t i = 0; i < fs->nsbx; i++)
		free(fs->sbx[i].layers);
	free(fs->sbx);
	free(fs->refs.v);
	free(fs->reported);
	if (fs->snap)
		eos_kv_snapshot_free(fs->st->kv, fs->snap);
}

static int
fsck_sandboxes(struct eos_fsck *fs, struct eos_error *err)
{
	static const enum eos_cf unchecked[] = { EOS_CF_DEFAULT, EOS_CF_SESSION };
	int r;

	r = check_format(fs, err);
	if (r == 0)
		r = load_registry(fs, err);
	/* Whole families before their per-sandbox parts: damage is reported with all it covers. */
	if (r == 0)
		r = eos_fsck_scan(fs, EOS_CF_LAYERS, NULL, 0, NULL, 0, false, check_orphan_layer,
				  err);
	if (r == 0)
		r = eos_fsck_scan(fs, EOS_CF_META, NULL, 0, NULL, 0, false, check_orphan_meta, err);
	for (size_t i = 0; r == 0 && i < fs->nsbx; i++)
		r = check_sandbox(fs, &fs->sbx[i], err);
	if (r == 0)
		r = eos_fsck_scan(fs, EOS_CF_BLAME, NULL, 0, NULL, 0, true, check_blame, err);
	for (size_t i = 0; r == 0 && i < EOS_ARRAY_SIZE(unchecked); i++)
		r = eos_fsck_scan(fs, unchecked[i], NULL, 0, NULL, 0, true, check_readable, err);
	return r ?: fsck_obs(fs, err);
}

int
eos_store_fsck(struct eos_store *st, enum eos_fsck_flags flags, eos_fsck_fn fn, void *ctx,
	       struct eos_fsck_result *ret, struct eos_error *err)
{
	EOS_CLEANUP(fsck_release)
	struct eos_fsck fs = {
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
		r = eos_fsck_content(&fs, err);
	if (r == 0)
		r = eos_fsck_damaged_paths(&fs, err);
	if (r < 0)
		return r;
	/* Advisory: a store that cannot keep it still fscks. */
	eos_store_note_damage(st, fs.res.damaged ? "fsck found damage" : NULL);
	if (ret)
		*ret = fs.res;
	return 0;
}
