/* SPDX-License-Identifier: MIT */
/*
 * fsck, damage: what RocksDB cannot read (a table block or file whose checksum fails, a blob
 * whose CRC fails, a record it cannot find its file for), and what that takes away.
 *
 * A scan hands over each unreadable stretch of keys (eos_kv_scan's damage callback). In a
 * column family keyed by sandbox, the stretch is reported with its bounds and the sandboxes it
 * covers, which are marked so that their checks that need the missing records stay quiet. In the
 * chunk and manifest families, every referenced object inside the stretch is read on its own: the
 * unreadable ones are damaged. In refs, the counts inside are left unchecked. Point reads that
 * fail (meta records, manifests) are damage too. A last pass finds every entry whose content is
 * a damaged chunk or manifest (or a manifest holding a damaged chunk) and names it: sandbox,
 * version, path; then one summary per damaged sandbox.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/endian.h"
#include "common/error.h"

#include "store/content.h"
#include "store/entry.h"
#include "store/fsck-internal.h"
#include "store/kv.h"

enum {
	KEY_TEXT_MAX = 160,   /* bytes of a key's description */
	SCAN_KEY_MAX = 64,    /* bytes of a stretch's bound compared with digests */
	SANDBOX_LIST_MAX = 4, /* sandboxes named per stretch, then "and N more" */
};

static int
key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = memcmp(a, b, EOS_MIN(alen, blen));

	return c ? c : (alen > blen) - (alen < blen);
}

/* --- describing keys -------------------------------------------------------------------------- */

static uint64_t
key_sandbox(const uint8_t *k, size_t n)
{
	uint8_t b[8] = { 0 };

	memcpy(b, k, EOS_MIN(n, sizeof(b)));
	return eos_get_be64(b);
}

/* The printable start of a byte string, quoted: at most max bytes, up to the first NUL. */
static int
printable(const uint8_t *p, size_t n, char *out, size_t outlen)
{
	size_t i;

	for (i = 0; i < n && i < 64 && p[i] >= 0x20 && p[i] < 0x7f; i++)
		;
	return snprintf(out, outlen, "'%.*s'", (int)i, (const char *)p);
}

static const char *
ref_letter(uint8_t type)
{
	return type == EOS_REF_MANIFEST ? "manifest" : type == EOS_REF_CHUNK ? "chunk" : "?";
}

/* A key of the entries family that does not decode (a bisection bound): "near path 'd/f'". */
static void
entry_near(const uint8_t *p, size_t n, char *out, size_t outlen)
{
	const uint8_t *nul = memchr(p, 0, n);
	size_t plen = nul ? (size_t)(nul - p) : n;
	const uint8_t *name = nul ? nul + 1 : p + n;
	size_t left = (size_t)(p + n - name), nlen;

	nlen = memchr(name, 0, left) ? (size_t)((const uint8_t *)memchr(name, 0, left) - name)
				     : left;
	snprintf(out, outlen, "near path '%.*s%s%.*s'", (int)EOS_MIN(plen, (size_t)64),
		 (const char *)p, plen && nlen ? "/" : "", (int)EOS_MIN(nlen, (size_t)64),
		 (const char *)name);
}

/* A key of cf in words: "sandbox 'a' path 'd/f' version 3", "sandbox 'a' 'head", hex. */
static void
describe_key(struct eos_fsck *fs, enum eos_cf cf, const uint8_t *k, size_t n, char *out)
{
	struct eos_entry_key_parts p;
	char name[32], rest[96], hex2[EOS_DIGEST_HEX_LEN + 1];

	if (cf == EOS_CF_ENTRIES && eos_entry_key_decode(k, n, &p) == 0) {
		snprintf(out, KEY_TEXT_MAX, "sandbox '%s' path '%.*s%s%.*s' version %llu",
			 eos_fsck_sandbox_name(fs, p.sbx, name), (int)p.plen, p.parent,
			 p.plen ? "/" : "", (int)p.nlen, p.name, (unsigned long long)p.version);
		return;
	}
	if (cf == EOS_CF_CHUNKS || cf == EOS_CF_MANIFESTS || cf == EOS_CF_REFS ||
	    cf == EOS_CF_DEFAULT || n < 8) {
		char hex[2 * EOS_FSCK_HEX_KEY_MAX + 1];
		size_t skip = cf == EOS_CF_REFS && n > 0;

		/* a digest in full (a reference key: its type letter, then the digest) */
		if (n >= skip + EOS_DIGEST_LEN && cf != EOS_CF_DEFAULT) {
			struct eos_digest d;

			memcpy(d.b, k + skip, EOS_DIGEST_LEN);
			eos_digest_hex(&d, hex2);
			snprintf(out, KEY_TEXT_MAX, "%s%s'%s'", skip ? ref_letter(k[0]) : "",
				 skip ? " " : "", hex2);
			return;
		}
		snprintf(out, KEY_TEXT_MAX, "'%s'", eos_fsck_hex_key(k, n, hex));
		return;
	}
	if (cf == EOS_CF_LAYERS && n >= 16)
		snprintf(rest, sizeof(rest), "version %llu",
			 (unsigned long long)eos_get_be64(k + 8));
	else if (cf == EOS_CF_ENTRIES)
		entry_near(k + 8, n - 8, rest, sizeof(rest));
	else
		printable(k + 8, n - 8, rest, sizeof(rest));
	if (key_sandbox(k, n) == EOS_SANDBOX_GLOBAL)
		snprintf(out, KEY_TEXT_MAX, "the store's %s", rest);
	else
		snprintf(out, KEY_TEXT_MAX, "sandbox '%s' %s",
			 eos_fsck_sandbox_name(fs, key_sandbox(k, n), name), rest);
}

static bool
zeros(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/* "after X and before Y", "from the start to Y", … into out[2 * KEY_TEXT_MAX + 32]. */
static void
describe_range(struct eos_fsck *fs, enum eos_cf cf, const uint8_t *after, size_t alen,
	       const uint8_t *resume, size_t rlen, char *out)
{
	char a[KEY_TEXT_MAX] = "", b[KEY_TEXT_MAX] = "";
	const char *to = resume ? "and before " : "to the end";

	if (after)
		describe_key(fs, cf, after, alen, a);
	if (resume)
		describe_key(fs, cf, resume, rlen, b);
	/* A digest followed by zeros (the bisection's bound just past it): that digest is in. */
	if (resume && (cf == EOS_CF_CHUNKS || cf == EOS_CF_MANIFESTS) && rlen > EOS_DIGEST_LEN &&
	    zeros(resume + EOS_DIGEST_LEN, rlen - EOS_DIGEST_LEN)) {
		to = "through ";
		describe_key(fs, cf, resume, EOS_DIGEST_LEN, b);
	}
	snprintf(out, 2 * KEY_TEXT_MAX + 32, "%s%s %s%s", after ? "after " : "from the start", a,
		 to, b);
}

/* --- stretches of sandbox keys ---------------------------------------------------------------- */

static unsigned
cf_damage(enum eos_cf cf)
{
	if (cf == EOS_CF_META)
		return EOS_FSCK_DAMAGE_META;
	if (cf == EOS_CF_LAYERS)
		return EOS_FSCK_DAMAGE_LAYERS;
	if (cf == EOS_CF_ENTRIES)
		return EOS_FSCK_DAMAGE_ENTRIES;
	return EOS_FSCK_DAMAGE_OTHER;
}

/*
 * Mark the registered sandboxes numbered lo..hi and list them (at most SANDBOX_LIST_MAX) into
 * out[256].
 */
static void
cover_sandboxes(struct eos_fsck *fs, enum eos_cf cf, uint64_t lo, uint64_t hi, char *out)
{
	size_t n = 0, len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < fs->nsbx; i++) {
		struct eos_fsck_sandbox *s = &fs->sbx[i];

		if (s->sbx < lo || s->sbx > hi)
			continue;
		s->damage |= cf_damage(cf);
		if (n++ < SANDBOX_LIST_MAX && len < 200)
			len += (size_t)snprintf(out + len, 256 - len, "%s'%s'", n > 1 ? ", " : "",
						s->id);
	}
	if (n > SANDBOX_LIST_MAX)
		snprintf(out + len, 256 - len, " and %zu more", n - SANDBOX_LIST_MAX);
}

/* Whether a stretch of meta keys reaches into the registry, 0·"sandbox:"…. */
static bool
covers_registry(const uint8_t *after, size_t alen, const uint8_t *resume, size_t rlen)
{
	static const uint8_t first[] = { 0,   0,   0,	0,   0,	  0,   0,   0,
					 's', 'a', 'n', 'd', 'b', 'o', 'x', ':' };
	static const uint8_t end[] = { 0,   0,	 0,   0,   0,	0,   0,	  0,
				       's', 'a', 'n', 'd', 'b', 'o', 'x', ';' };

	return (!after || key_cmp(after, alen, end, sizeof(end)) < 0) &&
	       (!resume || key_cmp(resume, rlen, first, sizeof(first)) > 0);
}

static void
damaged_sandbox_keys(struct eos_fsck *fs, enum eos_cf cf, const uint8_t *after, size_t alen,
		     const uint8_t *resume, size_t rlen, const char *msg, bool again)
{
	uint64_t lo = after ? key_sandbox(after, alen) : 0;
	uint64_t hi = resume ? key_sandbox(resume, rlen) : UINT64_MAX;
	char range[2 * KEY_TEXT_MAX + 32], list[256];

	/* A stretch that ends where sandbox hi's keys begin does not reach into it. */
	if (resume && hi > lo) {
		size_t i = 8;

		while (i < rlen && resume[i] == 0)
			i++;
		hi -= i >= rlen;
	}
	if (cf == EOS_CF_ENTRIES)
		fs->counts_partial = true;
	if (cf == EOS_CF_META && covers_registry(after, alen, resume, rlen))
		fs->registry_damaged = true;
	cover_sandboxes(fs, cf, lo, hi, list);
	if (again)
		return;
	describe_range(fs, cf, after, alen, resume, rlen, range);
	eos_fsck_report(fs, "damaged-keys", "'%s' keys %s are unreadable%s%s%s: %s",
			eos_kv_cf_name(cf), range, list[0] ? " (sandboxes " : "", list,
			list[0] ? ")" : "", msg);
}

/* --- chunks, manifests, reference counts ------------------------------------------------------ */

/* The first reference whose key is above bound (or, when equal is set, at or above it). */
static size_t
refs_bound(const struct eos_fsck *fs, const uint8_t *bound, size_t blen, bool equal)
{
	size_t lo = 0, hi = fs->refs.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = key_cmp(fs->refs.v[mid].key, EOS_REF_KEY_LEN, bound, blen);

		if (c < 0 || (c == 0 && !equal))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The references [*first, *end) whose keys (type · digest) lie strictly between after and resume
 * (NULL: unbounded), where those are keys of cf: digests in chunks and manifests (prefixed with
 * their type here), reference keys in refs.
 */
static void
refs_between(const struct eos_fsck *fs, enum eos_cf cf, const uint8_t *after, size_t alen,
	     const uint8_t *resume, size_t rlen, size_t *first, size_t *end)
{
	uint8_t type = cf == EOS_CF_CHUNKS ? EOS_REF_CHUNK : EOS_REF_MANIFEST;
	uint8_t lo[1 + SCAN_KEY_MAX] = { type }, hi[1 + SCAN_KEY_MAX] = { type };
	size_t llen = 1, hlen = 1;

	if (cf == EOS_CF_REFS) {
		*first = after ? refs_bound(fs, after, alen, false) : 0;
		*end = resume ? refs_bound(fs, resume, rlen, true) : fs->refs.n;
		return;
	}
	llen += after ? EOS_MIN(alen, (size_t)SCAN_KEY_MAX) : 0;
	if (after)
		memcpy(lo + 1, after, llen - 1);
	hlen += resume ? EOS_MIN(rlen, (size_t)SCAN_KEY_MAX) : 0;
	if (resume)
		memcpy(hi + 1, resume, hlen - 1);
	else
		hi[0]++; /* every key of type */
	*first = refs_bound(fs, lo, llen, false);
	*end = refs_bound(fs, hi, hlen, true);
}

/* Read one referenced object inside a damaged stretch of cf: present, missing or damaged. */
static int
probe_object(struct eos_fsck *fs, enum eos_cf cf, struct eos_fsck_ref *rc, uint64_t *damaged)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	struct eos_error e = { 0 };
	int r;

	r = eos_kv_get(fs->st->kv, fs->snap, cf, rc->key + 1, EOS_DIGEST_LEN, &val, &e);
	if (r == -ENOMEM)
		return r;
	if (r == 0)
		rc->present = true;
	else if (r != -ENOENT && !rc->damaged)
		eos_fsck_object_damaged(fs, rc, e.msg);
	*damaged += rc->damaged;
	return 0;
}

static int
damaged_objects(struct eos_fsck *fs, enum eos_cf cf, const uint8_t *after, size_t alen,
		const uint8_t *resume, size_t rlen, const char *msg, bool again)
{
	const char *what = cf == EOS_CF_CHUNKS ? "chunk" : "manifest";
	char range[2 * KEY_TEXT_MAX + 32];
	uint64_t inside = 0, damaged = 0;
	size_t first, end;
	int r;

	refs_between(fs, cf, after, alen, resume, rlen, &first, &end);
	for (size_t i = first; i < end; i++) {
		if (fs->refs.v[i].count == 0)
			continue;
		inside++;
		r = probe_object(fs, cf, &fs->refs.v[i], &damaged);
		if (r < 0)
			return r;
	}
	if (again)
		return 0;
	describe_range(fs, cf, after, alen, resume, rlen, range);
	eos_fsck_report(
		fs, "damaged-keys",
		"'%s' keys %s are unreadable: %s (%llu referenced %s%s there, %llu unreadable)",
		eos_kv_cf_name(cf), range, msg, (unsigned long long)inside, what,
		inside == 1 ? "" : "s", (unsigned long long)damaged);
	return 0;
}

static void
damaged_counts(struct eos_fsck *fs, const uint8_t *after, size_t alen, const uint8_t *resume,
	       size_t rlen, const char *msg, bool again)
{
	char range[2 * KEY_TEXT_MAX + 32];
	size_t first, end;

	refs_between(fs, EOS_CF_REFS, after, alen, resume, rlen, &first, &end);
	for (size_t i = first; i < end; i++)
		fs->refs.v[i].seen = fs->refs.v[i].unverified = true;
	if (again)
		return;
	describe_range(fs, EOS_CF_REFS, after, alen, resume, rlen, range);
	eos_fsck_report(
		fs, "damaged-keys",
		"'refs' keys %s are unreadable: %s (the reference counts of %zu chunks and "
		"manifests cannot be checked; publish, squash, destroy and gc fail where they "
		"need them)",
		range, msg, end - first);
}

/*
 * Whether the stretch of cf RocksDB described with msg was reported already: scans of a prefix
 * and of the whole family meet the same damaged block (RocksDB names its file and offset).
 * Remembers it otherwise (-ENOMEM when it cannot).
 */
static int
reported_before(struct eos_fsck *fs, enum eos_cf cf, const char *msg)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)cf;

	for (const char *p = msg; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	for (size_t i = 0; i < fs->nreported; i++)
		if (fs->reported[i] == h)
			return 1;
	if (eos_buf_array_reserve(&fs->reported, &fs->capreported, fs->nreported,
				  sizeof(*fs->reported), 16) < 0)
		return -ENOMEM;
	fs->reported[fs->nreported++] = h;
	return 0;
}

int
eos_fsck_damage(struct eos_fsck *fs, enum eos_cf cf, const uint8_t *after, size_t alen,
		const uint8_t *resume, size_t rlen, const char *msg)
{
	int again;

	if (fs->quiet_damage)
		return 0;
	again = reported_before(fs, cf, msg);
	if (again < 0)
		return again;
	fs->res.damaged += !again;
	if (cf != EOS_CF_CHUNKS && cf != EOS_CF_MANIFESTS)
		fs->res.damaged_records += !again;
	switch (cf) {
	case EOS_CF_CHUNKS:
	case EOS_CF_MANIFESTS:
		return damaged_objects(fs, cf, after, alen, resume, rlen, msg, again);
	case EOS_CF_REFS:
		damaged_counts(fs, after, alen, resume, rlen, msg, again);
		return 0;
	case EOS_CF_DEFAULT:
	case EOS_CF_ENTRIES:
	case EOS_CF_LAYERS:
	case EOS_CF_META:
	case EOS_CF_SESSION:
	case EOS_CF_BLAME:
	case EOS_CF_OBS:
	case EOS_CF_COUNT:
	default:
		damaged_sandbox_keys(fs, cf, after, alen, resume, rlen, msg, again);
		return 0;
	}
}

void
eos_fsck_read_failed(struct eos_fsck *fs, struct eos_fsck_sandbox *s, const char *what,
		     const struct eos_error *err)
{
	fs->res.damaged++;
	fs->res.damaged_records++;
	if (s)
		s->damage |= EOS_FSCK_DAMAGE_META;
	eos_fsck_report(fs, "damaged-record", "%s%s%s record '%s' is unreadable: %s",
			s ? "sandbox '" : "the store's", s ? s->id : "", s ? "':" : "", what,
			err->msg);
}

void
eos_fsck_object_damaged(struct eos_fsck *fs, struct eos_fsck_ref *rc, const char *msg)
{
	char hex[EOS_DIGEST_HEX_LEN + 1];
	struct eos_digest d;
	bool chunk = rc->key[0] == EOS_REF_CHUNK;

	rc->damaged = rc->present = true;
	rc->via = SIZE_MAX;
	fs->res.damaged++;
	memcpy(d.b, rc->key + 1, EOS_DIGEST_LEN);
	eos_digest_hex(&d, hex);
	eos_fsck_report(fs, chunk ? "damaged-chunk" : "damaged-manifest",
			"%s '%s' is unreadable: %s", chunk ? "chunk" : "manifest", hex, msg);
}

/* --- what the damaged objects take away ------------------------------------------------------- */

/* A readable manifest holding a damaged chunk is damaged too (through that chunk). */
static int
propagate_manifest(struct eos_fsck *fs, struct eos_fsck_ref *m)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	cleanup_free struct eos_manifest *man = NULL;
	int r;

	r = eos_kv_get(fs->st->kv, fs->snap, EOS_CF_MANIFESTS, m->key + 1, EOS_DIGEST_LEN, &val,
		       NULL);
	if (r == -ENOMEM)
		return r;
	if (r < 0 || eos_manifest_decode(val.data, val.len, &man) < 0)
		return 0; /* reported by the content pass */
	for (uint32_t i = 0; i < man->n; i++) {
		struct eos_fsck_ref *c =
			eos_fsck_find_ref(&fs->refs, EOS_REF_CHUNK, man->chunks[i].digest.b);

		if (c && c->damaged) {
			m->damaged = true;
			m->via = (size_t)(c - fs->refs.v);
			return 0;
		}
	}
	return 0;
}

/* "chunk 'x' is unreadable or corrupt", "manifest 'm' holds damaged chunk 'x'" into out. */
static void
describe_cause(const struct eos_fsck *fs, const struct eos_fsck_ref *rc, char *out, size_t outlen)
{
	char hex[EOS_DIGEST_HEX_LEN + 1], chex[EOS_DIGEST_HEX_LEN + 1];
	struct eos_digest d;

	memcpy(d.b, rc->key + 1, EOS_DIGEST_LEN);
	eos_digest_hex(&d, hex);
	if (rc->via == SIZE_MAX) {
		snprintf(out, outlen, "%s '%s' is unreadable or corrupt",
			 rc->key[0] == EOS_REF_CHUNK ? "chunk" : "manifest", hex);
		return;
	}
	memcpy(d.b, fs->refs.v[rc->via].key + 1, EOS_DIGEST_LEN);
	eos_digest_hex(&d, chex);
	snprintf(out, outlen, "manifest '%s' holds damaged chunk '%s'", hex, chex);
}

static int
check_damaged_path(struct eos_fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v,
		   size_t vlen)
{
	EOS_CLEANUP(eos_entry_release) struct eos_entry e = { 0 };
	const struct eos_content *c = &e.st.content;
	char layer[EOS_LAYER_ID_LEN], name[32], cause[256];
	struct eos_entry_key_parts p;
	struct eos_fsck_sandbox *s;
	struct eos_fsck_ref *rc;

	eos_entry_init(&e);
	if (eos_entry_key_decode(k, klen, &p) < 0 || eos_entry_decode(v, vlen, p.version, &e) < 0)
		return 0; /* reported by the content pass */
	if (e.st.kind != EOS_KIND_FILE ||
	    (c->kind != EOS_CONTENT_CHUNK && c->kind != EOS_CONTENT_MANIFEST))
		return 0;
	rc = eos_fsck_find_ref(&fs->refs,
			       c->kind == EOS_CONTENT_CHUNK ? EOS_REF_CHUNK : EOS_REF_MANIFEST,
			       c->digest.b);
	if (!rc || !rc->damaged)
		return 0;
	s = eos_fsck_find_sandbox(fs, p.sbx);
	if (s) {
		s->damage |= EOS_FSCK_DAMAGE_CONTENT;
		s->damaged_paths++;
	}
	fs->res.damaged_paths++;
	eos_layer_id_format(p.version, layer);
	describe_cause(fs, rc, cause, sizeof(cause));
	eos_fsck_report(fs, "damaged-path", "sandbox '%s' version %s: '%.*s%s%.*s' is damaged: %s",
			eos_fsck_sandbox_name(fs, p.sbx, name), layer, (int)p.plen, p.parent,
			p.plen ? "/" : "", (int)p.nlen, p.name, cause);
	return 0;
}

/* "3 paths have damaged content, entries, layer records" into out: what of s is damaged. */
static void
describe_sandbox(const struct eos_fsck_sandbox *s, char *out, size_t outlen)
{
	static const struct {
		unsigned bit;
		const char *what;
	} parts[] = {
		{ EOS_FSCK_DAMAGE_ENTRIES, "entry records (paths at some versions)" },
		{ EOS_FSCK_DAMAGE_LAYERS, "layer records" },
		{ EOS_FSCK_DAMAGE_META, "its record, head or leases" },
		{ EOS_FSCK_DAMAGE_OTHER, "blame or session records" },
	};
	size_t len = 0;

	out[0] = '\0';
	if (s->damaged_paths)
		len = (size_t)snprintf(out, outlen, "%llu path%s damaged content",
				       (unsigned long long)s->damaged_paths,
				       s->damaged_paths == 1 ? " has" : "s have");
	for (size_t i = 0; i < EOS_ARRAY_SIZE(parts) && len < outlen; i++)
		if (s->damage & parts[i].bit)
			len += (size_t)snprintf(out + len, outlen - len, "%sunreadable %s",
						len ? "; " : "", parts[i].what);
}

static void
summarise(struct eos_fsck *fs)
{
	char what[256];

	for (size_t i = 0; i < fs->nsbx; i++) {
		const struct eos_fsck_sandbox *s = &fs->sbx[i];

		if (!s->damage)
			continue;
		fs->res.damaged_sandboxes++;
		describe_sandbox(s, what, sizeof(what));
		eos_fsck_report(fs, "damaged-sandbox", "sandbox '%s' is damaged: %s", s->id, what);
	}
	if (fs->registry_damaged)
		eos_fsck_report(
			fs, "damaged-sandbox",
			"the sandbox registry is partly unreadable: sandboxes may be missing "
			"from this report, or named by number");
}

int
eos_fsck_damaged_paths(struct eos_fsck *fs, struct eos_error *err)
{
	bool any = false;
	int r = 0;

	for (size_t i = 0; i < fs->refs.n && !any; i++)
		any = fs->refs.v[i].damaged;
	for (size_t i = 0; any && r == 0 && i < fs->refs.n; i++) {
		struct eos_fsck_ref *m = &fs->refs.v[i];

		if (m->key[0] == EOS_REF_MANIFEST && m->count && !m->damaged)
			r = propagate_manifest(fs, m);
	}
	if (r < 0)
		return eos_error_set(err, r, "fsck: out of memory");
	if (any) {
		fs->quiet_damage = true;
		r = eos_fsck_scan(fs, EOS_CF_ENTRIES, NULL, 0, NULL, 0, true, check_damaged_path,
				  err);
		fs->quiet_damage = false;
	}
	if (r == 0)
		summarise(fs);
	return r;
}
