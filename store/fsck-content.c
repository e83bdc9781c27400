/* SPDX-License-Identifier: MIT */
/*
 * fsck, content half (see store/fsck.c for the order): every entry, the reference counts they and
 * the manifests imply compared with EOS_CF_REFS, and the chunk and manifest column families.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/endian.h"
#include "common/error.h"

#include "store/codec.h"
#include "store/content.h"
#include "store/entry.h"
#include "store/fsck-internal.h"
#include "store/kv.h"
#include "store/refs.h"

static const char *
ref_type_name(uint8_t type)
{
	return type == EOS_REF_MANIFEST ? "manifest" : "chunk";
}

static void
ref_hex(const struct eos_fsck_ref *rc, char hex[EOS_DIGEST_HEX_LEN + 1])
{
	struct eos_digest d;

	memcpy(d.b, rc->key + 1, EOS_DIGEST_LEN);
	eos_digest_hex(&d, hex);
}

/* --- entries ---------------------------------------------------------------------------------- */

static int
add_ref(struct eos_fsck_refvec *rv, const uint8_t key[EOS_REF_KEY_LEN], uint64_t count)
{
	if (eos_buf_array_reserve(&rv->v, &rv->cap, rv->n, sizeof(*rv->v), 1024) < 0)
		return -ENOMEM;
	rv->v[rv->n] = (struct eos_fsck_ref){ .count = count, .via = SIZE_MAX };
	memcpy(rv->v[rv->n].key, key, EOS_REF_KEY_LEN);
	rv->n++;
	return 0;
}

static int
add_content_ref(struct eos_fsck *fs, const struct eos_content *c)
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
check_entry_version(struct eos_fsck *fs, const struct eos_fsck_sandbox *s,
		    const struct eos_entry_key_parts *p, const struct eos_entry *e)
{
	unsigned long long v = (unsigned long long)p->version;

	if (s->head && p->version > s->head)
		eos_fsck_report(
			fs, "entry-version",
			"sandbox '%s': entry '%.*s%s%.*s' version %llu is newer than head %llu",
			s->id, (int)p->plen, p->parent, p->plen ? "/" : "", (int)p->nlen, p->name,
			v, (unsigned long long)s->head);
	else if (!(s->damage & EOS_FSCK_DAMAGE_LAYERS) &&
		 !eos_fsck_find_layer(s, p->version, false))
		eos_fsck_report(fs, "entry-version",
				"sandbox '%s': entry '%.*s%s%.*s' version %llu has no layer", s->id,
				(int)p->plen, p->parent, p->plen ? "/" : "", (int)p->nlen, p->name,
				v);
	if (e->st.kind == EOS_KIND_DIR && e->st.floor > p->version)
		eos_fsck_report(fs, "floor",
				"sandbox '%s': directory '%.*s%s%.*s' version %llu has floor %llu",
				s->id, (int)p->plen, p->parent, p->plen ? "/" : "", (int)p->nlen,
				p->name, v, (unsigned long long)e->st.floor);
}

/* An entry record that does not decode: its path is damaged, and its reference unknown. */
static void
corrupt_entry(struct eos_fsck *fs, const struct eos_entry_key_parts *p)
{
	struct eos_fsck_sandbox *s = eos_fsck_find_sandbox(fs, p->sbx);
	char name[32];

	fs->res.damaged++;
	fs->res.damaged_records++;
	fs->counts_partial = true;
	if (s) {
		s->damage |= EOS_FSCK_DAMAGE_ENTRIES;
		s->damaged_paths++;
	}
	eos_fsck_report(fs, "entry", "sandbox '%s' version %llu: entry '%.*s%s%.*s' is corrupt",
			eos_fsck_sandbox_name(fs, p->sbx, name), (unsigned long long)p->version,
			(int)p->plen, p->parent, p->plen ? "/" : "", (int)p->nlen, p->name);
}

static int
check_entry(struct eos_fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	EOS_CLEANUP(eos_entry_release) struct eos_entry e = { 0 };
	char hex[2 * EOS_FSCK_HEX_KEY_MAX + 1];
	struct eos_entry_key_parts p;
	const struct eos_fsck_sandbox *s;

	fs->res.entries++;
	eos_entry_init(&e);
	if (eos_entry_key_decode(k, klen, &p) < 0) {
		eos_fsck_report(fs, "entry", "entry key '%s' is malformed",
				eos_fsck_hex_key(k, klen, hex));
		return 0;
	}
	if (eos_entry_decode(v, vlen, p.version, &e) < 0) {
		corrupt_entry(fs, &p);
		return 0;
	}
	s = eos_fsck_find_sandbox(fs, p.sbx);
	if (!s && !fs->registry_damaged)
		eos_fsck_report(fs, "orphan-entry",
				"entry '%.*s%s%.*s' version %llu of unregistered sandbox %llu",
				(int)p.plen, p.parent, p.plen ? "/" : "", (int)p.nlen, p.name,
				(unsigned long long)p.version, (unsigned long long)p.sbx);
	else if (s)
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
	const struct eos_fsck_ref *x = a, *y = b;

	return memcmp(x->key, y->key, EOS_REF_KEY_LEN);
}

/* Sort and merge equal keys, summing their counts. */
static void
refvec_merge(struct eos_fsck_refvec *rv)
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

struct eos_fsck_ref *
eos_fsck_find_ref(const struct eos_fsck_refvec *rv, enum eos_ref_type type, const uint8_t *digest)
{
	struct eos_fsck_ref key = { 0 };

	if (rv->n == 0) /* rv->v may be NULL: bsearch needs a valid array */
		return NULL;
	key.key[0] = (uint8_t)type;
	memcpy(key.key + 1, digest, EOS_DIGEST_LEN);
	return bsearch(&key, rv->v, rv->n, sizeof(*rv->v), refcount_cmp);
}

/* A manifest or chunk that does not decode (not RocksDB's damage: its bytes are wrong). */
static void
corrupt_object(struct eos_fsck *fs, struct eos_fsck_ref *rc, const char *kind, const char *msg)
{
	if (rc) {
		rc->damaged = true;
		rc->via = SIZE_MAX;
	}
	fs->res.damaged++;
	eos_fsck_report(fs, kind, "%s", msg);
}

/* Add the chunk occurrences of referenced manifest m to out; report missing or corrupt ones. */
static int
expand_manifest(struct eos_fsck *fs, struct eos_fsck_ref *m, struct eos_fsck_refvec *out,
		struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	cleanup_free struct eos_manifest *man = NULL;
	char hex[EOS_DIGEST_HEX_LEN + 1], msg[EOS_DIGEST_HEX_LEN + 64];
	struct eos_error e = { 0 };
	int r;

	ref_hex(m, hex);
	r = eos_kv_get(fs->st->kv, fs->snap, EOS_CF_MANIFESTS, m->key + 1, EOS_DIGEST_LEN, &val,
		       &e);
	if (r == -ENOENT) {
		eos_fsck_report(fs, "missing-manifest", "manifest '%s' is referenced but missing",
				hex);
		return 0;
	}
	if (r == -ENOMEM)
		return eos_error_set(err, r, "fsck: read manifest '%s': out of memory", hex);
	if (r < 0 || eos_manifest_decode(val.data, val.len, &man) < 0) {
		fs->counts_partial = true;
		snprintf(msg, sizeof(msg), "manifest '%s' is corrupt", hex);
		if (r < 0)
			eos_fsck_object_damaged(fs, m, e.msg);
		else
			corrupt_object(fs, m, "corrupt-manifest", msg);
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
expected_refs(struct eos_fsck *fs, struct eos_error *err)
{
	struct eos_fsck_refvec chunks = { 0 };
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
	/* Flags of manifests survive: merging only sums the counts of equal keys. */
	refvec_merge(&fs->refs);
	return 0;
}

static int
check_refkey(struct eos_fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	char hex[2 * EOS_FSCK_HEX_KEY_MAX + 1];
	struct eos_fsck_ref *rc;
	uint64_t found, expected;

	if (klen != EOS_REF_KEY_LEN || (k[0] != EOS_REF_CHUNK && k[0] != EOS_REF_MANIFEST) ||
	    vlen != 8) {
		eos_fsck_report(fs, "refcount", "reference key '%s' is malformed",
				eos_fsck_hex_key(k, klen, hex));
		return 0;
	}
	found = eos_get_le64(v);
	rc = eos_fsck_find_ref(&fs->refs, k[0], k + 1);
	if (rc)
		rc->seen = true;
	expected = rc ? rc->count : 0;
	/* With entries or manifests unreadable, a count above the recomputed one proves nothing. */
	if (expected != found && !(fs->counts_partial && expected < found)) {
		char dhex[EOS_DIGEST_HEX_LEN + 1];
		struct eos_digest d;

		memcpy(d.b, k + 1, EOS_DIGEST_LEN);
		eos_digest_hex(&d, dhex);
		eos_fsck_report(fs, "refcount", "%s '%s': expected %llu references, found %llu",
				ref_type_name(k[0]), dhex, (unsigned long long)expected,
				(unsigned long long)found);
	}
	return 0;
}

static void
check_unseen_refs(struct eos_fsck *fs)
{
	for (size_t i = 0; i < fs->refs.n; i++) {
		const struct eos_fsck_ref *rc = &fs->refs.v[i];
		char hex[EOS_DIGEST_HEX_LEN + 1];

		if (rc->seen || rc->count == 0)
			continue;
		ref_hex(rc, hex);
		eos_fsck_report(fs, "refcount", "%s '%s': expected %llu references, found 0",
				ref_type_name(rc->key[0]), hex, (unsigned long long)rc->count);
	}
}

/* --- chunks and manifests --------------------------------------------------------------------- */

static void
verify_chunk(struct eos_fsck *fs, struct eos_fsck_ref *rc, const struct eos_digest *d,
	     const uint8_t *v, size_t vlen)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf raw = { 0 };
	struct eos_error e = { 0 };
	int r;

	r = eos_codec_decode(v, vlen, d, &raw, &e);
	if (r < 0)
		corrupt_object(fs, rc, "corrupt-chunk", eos_error_message(&e, r));
}

static int
check_stored(struct eos_fsck *fs, enum eos_ref_type type, const uint8_t *k, size_t klen,
	     const uint8_t *v, size_t vlen)
{
	char hex[2 * EOS_FSCK_HEX_KEY_MAX + 1];
	struct eos_fsck_ref *rc;
	struct eos_digest d;

	if (klen != EOS_DIGEST_LEN) {
		eos_fsck_report(fs, type == EOS_REF_CHUNK ? "chunk" : "manifest",
				"%s key '%s' is malformed", ref_type_name(type),
				eos_fsck_hex_key(k, klen, hex));
		return 0;
	}
	rc = eos_fsck_find_ref(&fs->refs, type, k);
	if (rc)
		rc->present = true;
	if (!rc || rc->count == 0)
		fs->res.garbage_chunks++;
	memcpy(d.b, k, EOS_DIGEST_LEN);
	if (v)
		verify_chunk(fs, rc, &d, v, vlen);
	return 0;
}

static int
check_chunk(struct eos_fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	fs->res.chunks++;
	return check_stored(fs, EOS_REF_CHUNK, k, klen, v, vlen);
}

static int
check_manifest(struct eos_fsck *fs, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	(void)v;
	(void)vlen;
	fs->res.manifests++;
	return check_stored(fs, EOS_REF_MANIFEST, k, klen, NULL, 0);
}

static void
check_missing_chunks(struct eos_fsck *fs)
{
	for (size_t i = 0; i < fs->refs.n; i++) {
		const struct eos_fsck_ref *rc = &fs->refs.v[i];
		char hex[EOS_DIGEST_HEX_LEN + 1];

		if (rc->present || rc->count == 0 || rc->key[0] != EOS_REF_CHUNK)
			continue;
		ref_hex(rc, hex);
		eos_fsck_report(fs, "missing-chunk",
				"chunk '%s' is referenced %llu times but missing", hex,
				(unsigned long long)rc->count);
	}
}

int
eos_fsck_content(struct eos_fsck *fs, struct eos_error *err)
{
	bool verify = fs->flags & EOS_FSCK_VERIFY_CHUNKS;
	int r;

	r = eos_fsck_scan(fs, EOS_CF_ENTRIES, NULL, 0, NULL, 0, true, check_entry, err);
	if (r == 0)
		r = expected_refs(fs, err);
	if (r == 0)
		r = eos_fsck_scan(fs, EOS_CF_REFS, NULL, 0, NULL, 0, true, check_refkey, err);
	if (r < 0)
		return r;
	check_unseen_refs(fs);
	r = eos_fsck_scan(fs, EOS_CF_CHUNKS, NULL, 0, NULL, 0, verify, check_chunk, err);
	if (r == 0)
		r = eos_fsck_scan(fs, EOS_CF_MANIFESTS, NULL, 0, NULL, 0, false, check_manifest,
				  err);
	if (r < 0)
		return r;
	check_missing_chunks(fs);
	return 0;
}
