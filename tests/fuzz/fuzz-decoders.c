/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz-decoders: one fuzz target for every decoder of on-disk data (libFuzzer entry
 * point; tests/fuzz/driver.c runs it without libFuzzer).
 *
 * Input: the first byte names the decoder, the rest is its input.
 *	'e'  entry record (eos_entry_decode), every kind (device numbers of CHR and BLK included)
 *	'k'  entry key (eos_entry_key_decode)
 *	'm'  manifest record (eos_manifest_decode)
 *	'c'  chunk frame (eos_codec_raw_len, eos_codec_decode): 32 bytes of expected digest, then
 *	     the frame (inputs shorter than a digest are a frame checked against the zero digest)
 *	'z'  chunk frame round trip: byte 0 picks the zstd level, the rest is encoded and decoded
 *	's'  sandbox record (eos_sandbox_record_decode)
 *	'l'  layer record (eos_layer_record_decode)
 *	'b'  blame record (eos_blame_decode): what decodes encodes and decodes to the same runs
 *	'r'  a program for struct eos_reader: op bytes and operands read from the input itself
 *	'p'  a path (NUL-terminated copy): eos_name_check, eos_path_check, eos_path_normalize
 *	'g'  a git index without its checksum (the target appends its SHA-1): eos_git_index_refresh,
 *	     every entry accepted and given new stat data; a second refresh finds nothing to do
 * Any other first byte picks a decoder by its value modulo their number, so every input tests
 * something. No store is opened: these are pure functions.
 *
 * Invariants, checked where cheap: a decoder returns 0 or -EBADMSG; it leaves its output
 * untouched (or released, for entries) on failure; what it accepts satisfies the record's rules,
 * encodes back to exactly the input bytes and decodes again to an equal value. A broken
 * invariant prints the line and aborts, which libFuzzer and the driver report as a crash.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/endian.h"
#include "common/error.h"
#include "common/path.h"

#include "store/blame.h"
#include "store/codec.h"
#include "store/content.h"
#include "store/entry.h"
#include "store/git-index.h"
#include "store/sandbox.h"
#include "store/store.h"

enum {
	FUZZ_VERSION = 7,		  /* the version handed to decoders that take one */
	FUZZ_ZSTD_BLOCK_MAX = 128 * 1024, /* the most a zstd block decompresses to (RFC 8878) */
	FUZZ_READER_MAX_OPS = 4096,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond) fuzz_check((cond), #cond, __LINE__)

static void
fuzz_check(bool ok, const char *what, int line)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz-decoders.c:%d: invariant broken: %s\n", line, what);
	abort();
}

/* A decoder's result: 0, or -EBADMSG for bad input (-ENOMEM is tolerated). */
static bool
decode_result_ok(int r)
{
	return r == 0 || r == -EBADMSG || r == -ENOMEM;
}

static bool
bytes_equal(const struct eos_buf *b, const uint8_t *p, size_t n)
{
	return b->len == n && (n == 0 || memcmp(b->data, p, n) == 0);
}

/* --- entries ---------------------------------------------------------------------------------- */

static void
entry_releasep(struct eos_entry *e)
{
	eos_entry_release(e);
}

static bool
content_equal(const struct eos_content *a, const struct eos_content *b)
{
	return a->kind == b->kind && a->size == b->size && eos_digest_eq(&a->digest, &b->digest) &&
	       a->inline_len == b->inline_len && a->inline_len <= EOS_INLINE_MAX &&
	       memcmp(a->inline_data, b->inline_data, a->inline_len) == 0;
}

static bool
stat_equal(const struct eos_stat *a, const struct eos_stat *b)
{
	return a->kind == b->kind && a->attr.mode == b->attr.mode && a->attr.uid == b->attr.uid &&
	       a->attr.gid == b->attr.gid && a->attr.mtime_ns == b->attr.mtime_ns &&
	       a->version == b->version && a->floor == b->floor && a->link_group == b->link_group &&
	       a->size == b->size && a->rdev == b->rdev && a->nxattrs == b->nxattrs &&
	       content_equal(&a->content, &b->content);
}

static bool
entry_equal(const struct eos_entry *a, const struct eos_entry *b)
{
	if (!stat_equal(&a->st, &b->st) || a->nxattrs != b->nxattrs)
		return false;
	if ((a->target == NULL) != (b->target == NULL) ||
	    (a->target && strcmp(a->target, b->target) != 0))
		return false;
	for (uint32_t i = 0; i < a->nxattrs; i++) {
		const struct eos_xattr *x = &a->xattrs[i], *y = &b->xattrs[i];

		if (strcmp(x->name, y->name) != 0 || x->len != y->len ||
		    (x->len && memcmp(x->value, y->value, x->len) != 0))
			return false;
	}
	return true;
}

/* The rules of a record eos_entry_decode accepted (store/entry.h). */
static void
entry_check_rules(const struct eos_entry *e)
{
	const struct eos_content *c = &e->st.content;

	FUZZ_CHECK(e->st.version == FUZZ_VERSION);
	FUZZ_CHECK(e->st.kind == EOS_KIND_DIR || e->st.kind == EOS_KIND_FILE ||
		   e->st.kind == EOS_KIND_SYMLINK || e->st.kind == EOS_KIND_WHITEOUT ||
		   e->st.kind == EOS_KIND_FIFO || e->st.kind == EOS_KIND_CHR ||
		   e->st.kind == EOS_KIND_BLK);
	FUZZ_CHECK(eos_kind_has_rdev(e->st.kind) || e->st.rdev == 0);
	FUZZ_CHECK((e->st.kind == EOS_KIND_FILE) == (c->kind != EOS_CONTENT_NONE));
	FUZZ_CHECK(e->st.kind != EOS_KIND_FILE || c->size == e->st.size);
	FUZZ_CHECK(c->kind != EOS_CONTENT_INLINE ||
		   (c->inline_len <= EOS_INLINE_MAX && c->inline_len == c->size));
	FUZZ_CHECK((e->st.kind == EOS_KIND_SYMLINK) == (e->target != NULL));
	FUZZ_CHECK(!e->target || strlen(e->target) == e->st.size);
	FUZZ_CHECK(e->st.kind == EOS_KIND_FILE || e->st.kind == EOS_KIND_SYMLINK ||
		   e->st.size == 0);
	FUZZ_CHECK(e->st.nxattrs == e->nxattrs && (e->nxattrs == 0) == (e->xattrs == NULL));
	for (uint32_t i = 0; i < e->nxattrs; i++)
		FUZZ_CHECK(e->xattrs[i].name[0] != '\0' && e->xattrs[i].len <= EOS_XATTR_VALUE_MAX);
}

static void
fuzz_entry(const uint8_t *p, size_t n)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	EOS_CLEANUP(entry_releasep) struct eos_entry again = { 0 };
	EOS_CLEANUP(entry_releasep) struct eos_entry copy = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf out = { 0 };
	int r = eos_entry_decode(p, n, FUZZ_VERSION, &e);

	FUZZ_CHECK(decode_result_ok(r));
	if (r < 0) {
		/* Released on failure. */
		FUZZ_CHECK(!e.target && !e.xattrs && e.nxattrs == 0);
		return;
	}
	entry_check_rules(&e);
	FUZZ_CHECK(eos_entry_encode(&e, &out) == 0);
	FUZZ_CHECK(bytes_equal(&out, p, n));
	FUZZ_CHECK(eos_entry_decode(out.data, out.len, FUZZ_VERSION, &again) == 0);
	FUZZ_CHECK(entry_equal(&e, &again));
	FUZZ_CHECK(eos_entry_copy(&copy, &e) == 0);
	FUZZ_CHECK(entry_equal(&e, &copy));
	/* Decoding over a filled entry releases what it held (LeakSanitizer checks). */
	FUZZ_CHECK(eos_entry_decode(p, n, FUZZ_VERSION, &copy) == 0);
	FUZZ_CHECK(entry_equal(&e, &copy));
}

static void
fuzz_entry_key(const uint8_t *p, size_t n)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf out = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf prefix = { 0 };
	struct eos_entry_key_parts k;
	int r = eos_entry_key_decode(p, n, &k);

	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	if (r < 0)
		return;
	/* The parts are borrowed from the key, in order, and hold no separator. */
	FUZZ_CHECK((const uint8_t *)k.parent == p + 8);
	FUZZ_CHECK((const uint8_t *)k.name == p + 8 + k.plen + 1);
	FUZZ_CHECK(8 + k.plen + 1 + k.nlen + 1 + 8 == n);
	FUZZ_CHECK(!memchr(k.parent, 0, k.plen) && !memchr(k.name, 0, k.nlen));
	FUZZ_CHECK(eos_entry_key(&out, k.sbx, k.parent, k.plen, k.name, k.nlen, k.version) == 0);
	FUZZ_CHECK(bytes_equal(&out, p, n));
	FUZZ_CHECK(eos_entry_dir_prefix(&prefix, k.sbx, k.parent, k.plen) == 0);
	FUZZ_CHECK(prefix.len <= n && memcmp(prefix.data, p, prefix.len) == 0);
}

/* --- manifests -------------------------------------------------------------------------------- */

static void
manifest_check_rules(const struct eos_manifest *m)
{
	uint64_t off = 0;

	FUZZ_CHECK(m->n > 0);
	for (uint32_t i = 0; i < m->n; i++) {
		FUZZ_CHECK(m->chunks[i].len > 0 && m->chunks[i].off == off);
		off += m->chunks[i].len;
	}
	FUZZ_CHECK(m->size == off);
}

static bool
manifest_equal(const struct eos_manifest *a, const struct eos_manifest *b)
{
	if (a->n != b->n || a->size != b->size)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (!eos_digest_eq(&a->chunks[i].digest, &b->chunks[i].digest) ||
		    a->chunks[i].len != b->chunks[i].len || a->chunks[i].off != b->chunks[i].off)
			return false;
	return true;
}

static void
fuzz_manifest(const uint8_t *p, size_t n)
{
	cleanup_free struct eos_manifest *m = NULL;
	cleanup_free struct eos_manifest *again = NULL;
	EOS_CLEANUP(eos_buf_release) struct eos_buf out = { 0 };
	int r = eos_manifest_decode(p, n, &m);

	FUZZ_CHECK(decode_result_ok(r));
	if (r < 0) {
		FUZZ_CHECK(m == NULL);
		return;
	}
	manifest_check_rules(m);
	FUZZ_CHECK(eos_manifest_encode(m, &out) == 0);
	FUZZ_CHECK(bytes_equal(&out, p, n));
	FUZZ_CHECK(eos_manifest_decode(out.data, out.len, &again) == 0);
	FUZZ_CHECK(manifest_equal(m, again));
}

/* --- chunk frames ----------------------------------------------------------------------------- */

static void
fuzz_codec(const uint8_t *p, size_t n)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf out = { 0 };
	struct eos_digest expect = { 0 }, got;
	struct eos_error err = { 0 };
	uint32_t raw_len = 0;
	int r, rl;

	if (n >= EOS_DIGEST_LEN) {
		memcpy(expect.b, p, EOS_DIGEST_LEN);
		p += EOS_DIGEST_LEN;
		n -= EOS_DIGEST_LEN;
	}
	rl = eos_codec_raw_len(p, n, &raw_len);
	FUZZ_CHECK(rl == 0 || rl == -EBADMSG);
	/* Stale contents of out are replaced. */
	FUZZ_CHECK(eos_buf_append_str(&out, "stale") == 0);
	r = eos_codec_decode(p, n, &expect, &out, &err);
	FUZZ_CHECK(decode_result_ok(r));
	/* What a frame decodes to is bounded by its size (zstd blocks: <= 128 KiB per 3 bytes). */
	FUZZ_CHECK(out.cap <= 2 * (n / 3 + 1) * FUZZ_ZSTD_BLOCK_MAX + 64);
	if (r < 0) {
		FUZZ_CHECK(out.len == 0 && err.code == r);
		FUZZ_CHECK(strncmp(err.msg, "chunk '", strlen("chunk '")) == 0);
		return;
	}
	FUZZ_CHECK(rl == 0 && raw_len == out.len && out.data[out.len] == '\0');
	FUZZ_CHECK(eos_sha256(out.data, out.len, &got) == 0 && eos_digest_eq(&got, &expect));
}

/* Encode p[1..n) at the zstd level byte p[0] picks, and decode it back. */
static void
fuzz_codec_round_trip(const uint8_t *p, size_t n)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf frame = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf out = { 0 };
	struct eos_error err = { 0 };
	struct eos_digest d;
	uint32_t raw_len = 0;
	int level;

	if (n == 0)
		return;
	level = p[0] % 5 - 1; /* -1 (fast) .. 3 (the store's default) */
	p++;
	n--;
	FUZZ_CHECK(eos_sha256(p, n, &d) == 0);
	FUZZ_CHECK(eos_codec_encode(p, n, level, &frame) == 0);
	FUZZ_CHECK(frame.len <= EOS_CODEC_HEADER_LEN + n); /* raw when zstd does not help */
	FUZZ_CHECK(eos_codec_raw_len(frame.data, frame.len, &raw_len) == 0 && raw_len == n);
	FUZZ_CHECK(eos_codec_decode(frame.data, frame.len, &d, &out, &err) == 0);
	FUZZ_CHECK(bytes_equal(&out, p, n));
	/* A frame checked against another digest is refused. */
	d.b[0] ^= 1;
	FUZZ_CHECK(eos_codec_decode(frame.data, frame.len, &d, &out, &err) == -EBADMSG);
}

/* --- sandbox and layer records ---------------------------------------------------------------- */

static bool
sandbox_record_equal(const struct eos_sandbox_record *a, const struct eos_sandbox_record *b)
{
	return strcmp(a->id, b->id) == 0 && strcmp(a->source, b->source) == 0 &&
	       a->created_ns == b->created_ns && a->next_link_group == b->next_link_group;
}

static void
fuzz_sandbox_record(const uint8_t *p, size_t n)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf out = { 0 };
	struct eos_sandbox_record rec, again, pristine;
	int r;

	memset(&rec, 0xa5, sizeof(rec));
	pristine = rec;
	r = eos_sandbox_record_decode(p, n, &rec);
	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	if (r < 0) {
		FUZZ_CHECK(memcmp(&rec, &pristine, sizeof(rec)) == 0);
		return;
	}
	FUZZ_CHECK(memchr(rec.id, 0, sizeof(rec.id)) && memchr(rec.source, 0, sizeof(rec.source)));
	FUZZ_CHECK(eos_sandbox_record_encode(&rec, &out) == 0);
	FUZZ_CHECK(bytes_equal(&out, p, n));
	FUZZ_CHECK(eos_sandbox_record_decode(out.data, out.len, &again) == 0);
	FUZZ_CHECK(sandbox_record_equal(&rec, &again));
}

static bool
layer_equal(const struct eos_layer_info *a, const struct eos_layer_info *b)
{
	return a->version == b->version && a->parent == b->parent &&
	       a->squashed_from == b->squashed_from && a->created_ns == b->created_ns &&
	       strcmp(a->owner, b->owner) == 0 && a->created == b->created &&
	       a->modified == b->modified && a->deleted == b->deleted && a->bytes == b->bytes;
}

static void
fuzz_layer_record(const uint8_t *p, size_t n)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf out = { 0 };
	struct eos_layer_info l, again, pristine;
	int r;

	memset(&l, 0xa5, sizeof(l));
	pristine = l;
	r = eos_layer_record_decode(p, n, FUZZ_VERSION, &l);
	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	if (r < 0) {
		FUZZ_CHECK(memcmp(&l, &pristine, sizeof(l)) == 0);
		return;
	}
	FUZZ_CHECK(l.version == FUZZ_VERSION && memchr(l.owner, 0, sizeof(l.owner)));
	FUZZ_CHECK(eos_layer_record_encode(&l, &out) == 0);
	FUZZ_CHECK(bytes_equal(&out, p, n));
	FUZZ_CHECK(eos_layer_record_decode(out.data, out.len, FUZZ_VERSION, &again) == 0);
	FUZZ_CHECK(layer_equal(&l, &again));
}

/* --- blame records --------------------------------------------------------------------------- */

/* The same lines with the same owner each, whatever the runs and owner tables look like. */
static bool
blame_equal(const struct eos_blame *a, const struct eos_blame *b)
{
	size_t ia = 0, ib = 0;
	uint32_t la = 0, lb = 0;

	if (a->lines != b->lines)
		return false;
	while (ia < a->nruns && ib < b->nruns) {
		const struct eos_blame_run *ra = &a->runs[ia], *rb = &b->runs[ib];
		uint32_t left_a = ra->count - la, left_b = rb->count - lb;
		uint32_t step = left_a < left_b ? left_a : left_b;

		if (strcmp(a->owners[ra->owner], b->owners[rb->owner]) != 0)
			return false;
		la += step;
		lb += step;
		if (la == ra->count) {
			ia++;
			la = 0;
		}
		if (lb == rb->count) {
			ib++;
			lb = 0;
		}
	}
	return true;
}

static void
fuzz_blame(const uint8_t *p, size_t n)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf out = { 0 };
	EOS_CLEANUP(eos_blame_release) struct eos_blame b = { 0 }, again = { 0 };
	int r = eos_blame_decode(p, n, &b);

	FUZZ_CHECK(decode_result_ok(r));
	if (r < 0)
		return;
	for (size_t i = 0; i < b.nruns; i++)
		FUZZ_CHECK(b.runs[i].owner < b.nowners && b.runs[i].count > 0);
	FUZZ_CHECK(eos_blame_encode(&b, &out) == 0);
	FUZZ_CHECK(eos_blame_decode(out.data, out.len, &again) == 0);
	FUZZ_CHECK(blame_equal(&b, &again));
}

/* --- the reader ------------------------------------------------------------------------------- */

enum reader_op {
	READER_U8,
	READER_LE32,
	READER_LE64,
	READER_BYTES, /* length: the next byte */
	READER_LP,    /* max: the next byte times 3 */
	READER_OPS,
};

/* Run one op at offset pos of [start, start + n); true when it succeeded. */
static bool
reader_step(struct eos_reader *rd, enum reader_op op, uint8_t arg, const uint8_t *start)
{
	size_t pos = (size_t)(rd->p - start), left = rd->left;
	const uint8_t *b = NULL;
	uint64_t v64 = 0;
	uint32_t v32 = 0;
	uint8_t v8 = 0;
	size_t len = 0;

	switch (op) {
	case READER_U8:
		if (eos_reader_u8(rd, &v8) < 0)
			return false;
		FUZZ_CHECK(v8 == start[pos] && rd->left == left - 1);
		return true;
	case READER_LE32:
		if (eos_reader_le32(rd, &v32) < 0)
			return false;
		FUZZ_CHECK(v32 == eos_get_le32(start + pos) && rd->left == left - 4);
		return true;
	case READER_LE64:
		if (eos_reader_le64(rd, &v64) < 0)
			return false;
		FUZZ_CHECK(v64 == eos_get_le64(start + pos) && rd->left == left - 8);
		return true;
	case READER_BYTES:
		if (eos_reader_bytes(rd, arg, &b) < 0)
			return false;
		FUZZ_CHECK(b == start + pos && rd->left == left - arg);
		return true;
	case READER_LP:
		if (eos_reader_lp(rd, (size_t)arg * 3, &b, &len) < 0)
			return false;
		FUZZ_CHECK(len <= (size_t)arg * 3 && len == eos_get_le32(start + pos));
		FUZZ_CHECK(b == start + pos + 4 && rd->left == left - 4 - len);
		return true;
	case READER_OPS:
		break;
	}
	return false;
}

/* Each op byte picks a get; a failed get leaves the reader anywhere inside its input. */
static void
fuzz_reader(const uint8_t *p, size_t n)
{
	struct eos_reader rd;
	uint8_t op, arg = 0;

	eos_reader_init(&rd, p, n);
	for (int i = 0; i < FUZZ_READER_MAX_OPS && eos_reader_u8(&rd, &op) == 0; i++) {
		if (op % READER_OPS == READER_BYTES || op % READER_OPS == READER_LP)
			if (eos_reader_u8(&rd, &arg) < 0)
				break;
		reader_step(&rd, (enum reader_op)(op % READER_OPS), arg, p);
		FUZZ_CHECK(rd.p >= p && rd.p <= p + n && rd.p + rd.left == p + n);
		FUZZ_CHECK(eos_reader_done(&rd) == (rd.left == 0));
	}
}

/* --- paths ------------------------------------------------------------------------------------ */

/* A path eos_path_check accepted: each component is a valid name. */
static void
path_check_components(const char *path)
{
	const char *s = path;

	FUZZ_CHECK(strlen(path) <= EOS_PATH_MAX && path[0] != '/');
	while (*s) {
		const char *slash = strchr(s, '/');
		size_t n = slash ? (size_t)(slash - s) : strlen(s);

		FUZZ_CHECK(eos_name_check(s, n, NULL) == 0);
		if (!slash)
			break;
		s = slash + 1;
	}
}

/* A tree path splits into a parent and a name that join back into it. */
static void
path_check_split(const char *path)
{
	cleanup_free char *parent = NULL;
	cleanup_free char *joined = NULL;
	const char *name;
	size_t plen;

	eos_path_split(path, &plen, &name);
	parent = strndup(path, plen);
	FUZZ_CHECK(parent != NULL);
	FUZZ_CHECK(eos_path_join(parent, name, &joined) == 0 && strcmp(joined, path) == 0);
	FUZZ_CHECK(eos_path_is_below(path, parent) && eos_path_is_below(path, path));
	FUZZ_CHECK(path[0] == '\0' || eos_name_check(name, strlen(name), NULL) == 0);
}

static void
fuzz_name(const char *s, size_t n)
{
	struct eos_error err = { 0 };
	int r = eos_name_check(s, n, &err);

	FUZZ_CHECK(r == 0 || ((r == -EINVAL || r == -ENAMETOOLONG) && err.code == r));
	if (r < 0)
		return;
	FUZZ_CHECK(n >= 1 && n <= EOS_NAME_MAX && !memchr(s, '/', n) && !memchr(s, 0, n));
	FUZZ_CHECK(strcmp(s, ".") != 0 && strcmp(s, "..") != 0);
}

static void
fuzz_path(const uint8_t *p, size_t n)
{
	cleanup_free char *s = malloc(n + 1);
	cleanup_free char *norm = NULL;
	cleanup_free char *again = NULL;
	struct eos_error err = { 0 };
	int r;

	FUZZ_CHECK(s != NULL);
	if (n)
		memcpy(s, p, n);
	s[n] = '\0';
	fuzz_name(s, n);
	r = eos_path_check(s, &err);
	FUZZ_CHECK(r == 0 || ((r == -EINVAL || r == -ENAMETOOLONG) && err.code == r));
	if (r == 0)
		path_check_components(s);
	eos_error_clear(&err);
	if (eos_path_normalize(s, &norm, &err) < 0) {
		FUZZ_CHECK(r < 0 && err.code < 0 && norm == NULL); /* valid paths normalize */
		return;
	}
	FUZZ_CHECK(eos_path_check(norm, NULL) == 0);
	FUZZ_CHECK(r < 0 || strcmp(norm, s) == 0); /* a tree path is already normal */
	FUZZ_CHECK(eos_path_normalize(norm, &again, NULL) == 0 && strcmp(again, norm) == 0);
	path_check_split(norm);
}

/* --- git index ---------------------------------------------------------------------------------
 */

/* Accept every entry, with new stat data derived from the old (idempotent: a second pass keeps it).
 */
static bool
git_fresh(void *ctx, const struct eos_gitidx_entry *e, struct eos_gitidx_stat *view)
{
	const struct eos_gitidx_stat *rec = &e->stat;

	(void)ctx;
	FUZZ_CHECK(*e->path != '\0' && e->oid_len >= 20);
	*view = *rec;
	view->ino = rec->ino | 0x80000000u;
	view->ctime_s = rec->mtime_s;
	view->ctime_ns = rec->mtime_ns;
	return true;
}

static void
fuzz_git_index(const uint8_t *p, size_t n)
{
	cleanup_free uint8_t *buf = malloc(n + EOS_SHA1_LEN);
	cleanup_free uint8_t *orig = malloc(n + EOS_SHA1_LEN);
	size_t refreshed = 0, again = 0;
	int r;

	FUZZ_CHECK(buf != NULL && orig != NULL);
	if (n)
		memcpy(buf, p, n);
	FUZZ_CHECK(eos_sha1(buf, n, buf + n) == 0);
	memcpy(orig, buf, n + EOS_SHA1_LEN);
	r = eos_git_index_refresh(buf, n + EOS_SHA1_LEN, git_fresh, NULL, &refreshed);
	FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOTSUP);
	if (r < 0 || refreshed == 0) {
		FUZZ_CHECK(refreshed == 0 && memcmp(buf, orig, n + EOS_SHA1_LEN) == 0);
		return;
	}
	/* still an index, its checksum right, and now fresh */
	FUZZ_CHECK(eos_git_index_refresh(buf, n + EOS_SHA1_LEN, git_fresh, NULL, &again) == 0);
	FUZZ_CHECK(again == 0);
}

/* --- entry point ------------------------------------------------------------------------------ */

struct fuzz_target {
	uint8_t tag;
	void (*fn)(const uint8_t *p, size_t n);
};

static const struct fuzz_target targets[] = {
	{ 'e', fuzz_entry },	    { 'k', fuzz_entry_key },	    { 'm', fuzz_manifest },
	{ 'c', fuzz_codec },	    { 'z', fuzz_codec_round_trip }, { 's', fuzz_sandbox_record },
	{ 'l', fuzz_layer_record }, { 'r', fuzz_reader },	    { 'p', fuzz_path },
	{ 'b', fuzz_blame },	    { 'g', fuzz_git_index },
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fuzz_target *t;

	if (size == 0)
		return 0;
	t = &targets[data[0] % EOS_ARRAY_SIZE(targets)];
	for (size_t i = 0; i < EOS_ARRAY_SIZE(targets); i++)
		if (targets[i].tag == data[0])
			t = &targets[i];
	t->fn(data + 1, size - 1);
	return 0;
}
