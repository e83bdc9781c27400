/* SPDX-License-Identifier: MIT */
/*
 * Blame records (EOS_CF_BLAME) and the public query eos_store_blame(). The computation of a new
 * record from the previous one is in store/blame-compute.c.
 */
#include "store/blame.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/path.h"

#include "store/entry.h"
#include "store/kv.h"
#include "store/linediff.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

enum {
	BLAME_FORMAT = 1,
	BLAME_OWNER_MAX = 4096,	    /* bytes of one owner string */
	BLAME_IMPORT_VERSION = 1,   /* the import writes version 1; squash keeps entry versions */
	BLAME_READ_PIECE = 1 << 18, /* bytes per pread when counting lines */
};

void
eos_blame_init(struct eos_blame *b)
{
	*b = (struct eos_blame){ 0 };
}

void
eos_blame_release(struct eos_blame *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nowners; i++)
		free(b->owners[i]);
	free(b->owners);
	free(b->runs);
	eos_blame_init(b);
}

int
eos_blame_single(struct eos_blame *b, uint32_t lines, const char *owner)
{
	eos_blame_release(b);
	if (lines == 0)
		return 0;
	b->runs = malloc(sizeof(*b->runs));
	b->owners = malloc(sizeof(*b->owners));
	if (b->owners)
		b->owners[0] = strdup(owner);
	if (!b->runs || !b->owners || !b->owners[0]) {
		free(b->owners ? b->owners[0] : NULL);
		b->nowners = 0;
		eos_blame_release(b);
		return -ENOMEM;
	}
	b->runs[0] = (struct eos_blame_run){ .count = lines, .owner = 0 };
	b->nruns = 1;
	b->nowners = 1;
	b->lines = lines;
	return 0;
}

/* --- records ------------------------------------------------------------------------------------
 */

int
eos_blame_key(struct eos_buf *out, uint64_t sbx, const char *path, uint64_t version)
{
	int r = eos_buf_append_be64(out, sbx);

	r = r ?: eos_buf_append_str(out, path);
	r = r ?: eos_buf_append_u8(out, 0);
	return r ?: eos_buf_append_be64(out, version);
}

/*
 * Check b and number its owners in order of first use (remap[i] = new index, UINT32_MAX when
 * unused). Returns the number of coalesced runs, or -EINVAL.
 */
static int64_t
encode_plan(const struct eos_blame *b, uint32_t *remap, uint32_t *ret_nused)
{
	uint64_t sum = 0;
	int64_t nruns = 0;
	uint32_t nused = 0, prev = UINT32_MAX;

	for (size_t i = 0; i < b->nowners; i++)
		remap[i] = UINT32_MAX;
	for (size_t i = 0; i < b->nruns; i++) {
		const struct eos_blame_run *run = &b->runs[i];

		if (run->owner >= b->nowners)
			return -EINVAL;
		if (run->count == 0)
			continue;
		sum += run->count;
		if (remap[run->owner] == UINT32_MAX)
			remap[run->owner] = nused++;
		if (remap[run->owner] != prev)
			nruns++;
		prev = remap[run->owner];
	}
	if (sum != b->lines)
		return -EINVAL;
	*ret_nused = nused;
	return nruns;
}

static int
encode_owners(const struct eos_blame *b, const uint32_t *remap, uint32_t nused, struct eos_buf *out)
{
	int r = eos_buf_append_le32(out, nused);

	/* owners in their new order: first use order is the order of the runs */
	for (size_t i = 0, next = 0; r == 0 && i < b->nruns; i++) {
		const char *o = b->owners[b->runs[i].owner];
		size_t len = strlen(o);

		if (b->runs[i].count == 0 || remap[b->runs[i].owner] != next)
			continue;
		if (len == 0 || len > BLAME_OWNER_MAX)
			return -EINVAL;
		r = eos_buf_append_lp(out, o, len);
		next++;
	}
	return r;
}

static int
encode_runs(const struct eos_blame *b, const uint32_t *remap, int64_t nruns, struct eos_buf *out)
{
	uint32_t count = 0, owner = UINT32_MAX;
	int r = eos_buf_append_le32(out, (uint32_t)nruns);

	for (size_t i = 0; r == 0 && i <= b->nruns; i++) {
		bool end = i == b->nruns;

		if (!end && b->runs[i].count == 0)
			continue;
		if (!end && remap[b->runs[i].owner] == owner) {
			count += b->runs[i].count;
			continue;
		}
		if (count > 0)
			r = eos_buf_append_le32(out, count) ?: eos_buf_append_le32(out, owner);
		if (!end)
			count = b->runs[i].count, owner = remap[b->runs[i].owner];
	}
	return r;
}

int
eos_blame_encode(const struct eos_blame *b, struct eos_buf *out)
{
	cleanup_free uint32_t *remap = NULL;
	size_t start = out->len;
	uint32_t nused = 0;
	int64_t nruns;
	int r;

	remap = malloc((b->nowners ? b->nowners : 1) * sizeof(*remap));
	if (!remap)
		return -ENOMEM;
	nruns = encode_plan(b, remap, &nused);
	if (nruns < 0)
		return (int)nruns;
	r = eos_buf_append_u8(out, BLAME_FORMAT);
	r = r ?: eos_buf_append_le32(out, b->lines);
	r = r ?: encode_owners(b, remap, nused, out);
	r = r ?: encode_runs(b, remap, nruns, out);
	if (r < 0)
		eos_buf_truncate(out, start);
	return r;
}

static int
decode_owners(struct eos_reader *rd, struct eos_blame *b)
{
	uint32_t n;

	if (eos_reader_le32(rd, &n) < 0 || n > rd->left / 5)
		return -EBADMSG;
	b->owners = calloc(n ? n : 1, sizeof(*b->owners));
	if (!b->owners)
		return -ENOMEM;
	for (; b->nowners < n; b->nowners++) {
		const uint8_t *p;
		size_t len;

		if (eos_reader_lp(rd, BLAME_OWNER_MAX, &p, &len) < 0 || len == 0 ||
		    memchr(p, 0, len))
			return -EBADMSG;
		b->owners[b->nowners] = strndup((const char *)p, len);
		if (!b->owners[b->nowners])
			return -ENOMEM;
	}
	return 0;
}

/* Runs: non-empty, owners in range, adjacent owners different, every owner used, sum = lines. */
static int
decode_runs(struct eos_reader *rd, struct eos_blame *b)
{
	cleanup_free bool *used = NULL;
	uint64_t sum = 0;
	uint32_t n, nused = 0;

	if (eos_reader_le32(rd, &n) < 0 || rd->left != (size_t)n * 8)
		return -EBADMSG;
	b->runs = malloc((n ? n : 1) * sizeof(*b->runs));
	used = calloc(b->nowners ? b->nowners : 1, sizeof(*used));
	if (!b->runs || !used)
		return -ENOMEM;
	for (; b->nruns < n; b->nruns++) {
		struct eos_blame_run *run = &b->runs[b->nruns];

		if (eos_reader_le32(rd, &run->count) < 0 || eos_reader_le32(rd, &run->owner) < 0)
			return -EBADMSG;
		if (run->count == 0 || run->owner >= b->nowners)
			return -EBADMSG;
		if (b->nruns > 0 && run[-1].owner == run->owner)
			return -EBADMSG;
		sum += run->count;
		if (!used[run->owner])
			used[run->owner] = true, nused++;
	}
	return sum == b->lines && nused == b->nowners ? 0 : -EBADMSG;
}

int
eos_blame_decode(const void *p, size_t n, struct eos_blame *ret)
{
	struct eos_blame b = { 0 };
	struct eos_reader rd;
	uint8_t format;
	int r;

	eos_reader_init(&rd, p, n);
	r = eos_reader_u8(&rd, &format);
	if (r == 0 && format != BLAME_FORMAT)
		r = -EBADMSG;
	r = r ?: eos_reader_le32(&rd, &b.lines);
	r = r ?: decode_owners(&rd, &b);
	r = r ?: decode_runs(&rd, &b);
	if (r < 0) {
		eos_blame_release(&b);
		return r == -ENOMEM ? r : -EBADMSG;
	}
	eos_blame_release(ret);
	*ret = b;
	return 0;
}

int
eos_blame_stage(struct eos_kv_batch *batch, uint64_t sbx, const char *path, uint64_t version,
		const struct eos_blame *b)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	int r = eos_blame_key(&key, sbx, path, version);

	r = r ?: eos_blame_encode(b, &val);
	if (r < 0)
		return r;
	eos_kv_batch_put(batch, EOS_CF_BLAME, key.data, key.len, val.data, val.len);
	return 0;
}

int
eos_blame_for_entry(struct eos_store *st, const struct eos_kv_snapshot *snap, uint64_t sbx,
		    const char *path, const struct eos_stat *e, uint32_t lines,
		    struct eos_blame *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	EOS_CLEANUP(eos_blame_release) struct eos_blame b = { 0 };
	const char *fallback;
	int r;

	if (eos_blame_key(&key, sbx, path, e->version) < 0)
		return eos_error_set(err, -ENOMEM, "blame of '%s': out of memory", path);
	r = eos_kv_get(st->kv, snap, EOS_CF_BLAME, key.data, key.len, &val, err);
	if (r < 0 && r != -ENOENT)
		return eos_error_prefix(err, r, "blame of '%s'", path);
	if (r == 0) {
		r = eos_blame_decode(val.data, val.len, &b);
		if (r < 0)
			return eos_error_set(err, r, "blame of '%s' at version %llu: %s", path,
					     (unsigned long long)e->version,
					     r == -ENOMEM ? "out of memory" : "corrupt record");
		if (b.lines == lines) {
			eos_blame_release(ret);
			*ret = b;
			b = (struct eos_blame){ 0 };
			return 0;
		}
	}
	fallback = r == -ENOENT && e->version == BLAME_IMPORT_VERSION ? EOS_OWNER_ORIGINAL
								      : EOS_OWNER_UNKNOWN;
	if (eos_blame_single(ret, lines, fallback) < 0)
		return eos_error_set(err, -ENOMEM, "blame of '%s': out of memory", path);
	return 0;
}

/* --- eos_store_blame ----------------------------------------------------------------------------
 */

static void
entry_releasep(struct eos_entry *e)
{
	eos_entry_release(e);
}

/* The line count of file content c (eos_line_count of its bytes, streamed). */
static int
content_lines(struct eos_store *st, const struct eos_content *c, uint64_t size, uint32_t *ret,
	      struct eos_error *err)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	cleanup_free char *piece = NULL;
	uint64_t off = 0, nl = 0;
	char last = '\n';
	int r;

	r = eos_store_file_open_content(st, c, &f, err);
	if (r < 0)
		return r;
	piece = malloc(BLAME_READ_PIECE);
	if (!piece)
		return eos_error_set(err, -ENOMEM, "out of memory");
	while (off < size) {
		ssize_t n = eos_file_pread(f, piece, BLAME_READ_PIECE, off, err);

		if (n < 0)
			return (int)n;
		if (n == 0)
			return eos_error_set(err, -EBADMSG, "content ends after %llu of %llu bytes",
					     (unsigned long long)off, (unsigned long long)size);
		nl += eos_line_count(piece, (size_t)n) - (piece[n - 1] != '\n');
		last = piece[n - 1];
		off += (uint64_t)n;
	}
	nl += last != '\n';
	if (nl > UINT32_MAX)
		return eos_error_set(err, -EFBIG, "more than %u lines", UINT32_MAX);
	*ret = (uint32_t)nl;
	return 0;
}

/* The ranges of b as one allocation: the array, then each owner string once. */
static int
blame_ranges(const struct eos_blame *b, struct eos_blame_range **ret, size_t *ret_n)
{
	cleanup_free size_t *at = NULL;
	struct eos_blame_range *v;
	size_t size = (b->nruns ? b->nruns : 1) * sizeof(*v);
	uint32_t line = 1;

	at = malloc((b->nowners ? b->nowners : 1) * sizeof(*at));
	if (!at)
		return -ENOMEM;
	for (size_t i = 0; i < b->nowners; i++) {
		at[i] = size;
		size += strlen(b->owners[i]) + 1;
	}
	v = malloc(size);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < b->nowners; i++)
		memcpy((char *)v + at[i], b->owners[i], strlen(b->owners[i]) + 1);
	for (size_t i = 0; i < b->nruns; i++) {
		v[i] = (struct eos_blame_range){ .start_line = line,
						 .line_count = b->runs[i].count,
						 .owner = (char *)v + at[b->runs[i].owner] };
		line += b->runs[i].count;
	}
	*ret = v;
	*ret_n = b->nruns;
	return 0;
}

static int
blame_entry(struct eos_store *st, const char *sandbox, uint64_t sbx, const char *path,
	    const struct eos_entry *e, struct eos_blame *ret, struct eos_error *err)
{
	uint32_t lines = 0;
	int r;

	switch (e->st.kind) {
	case EOS_KIND_FILE:
		break;
	case EOS_KIND_DIR:
		return eos_error_set(err, -EISDIR, "sandbox '%s': '%s' is a directory", sandbox,
				     path);
	case EOS_KIND_SYMLINK:
	case EOS_KIND_FIFO:
	case EOS_KIND_CHR:
	case EOS_KIND_BLK:
		return eos_error_set(err, -EINVAL, "sandbox '%s': '%s' is a %s, not a file",
				     sandbox, path, eos_kind_name(e->st.kind));
	case EOS_KIND_NONE:
	case EOS_KIND_WHITEOUT:
	default:
		return eos_error_set(err, -EINVAL, "sandbox '%s': '%s' is not a regular file",
				     sandbox, path);
	}
	r = content_lines(st, &e->st.content, e->st.size, &lines, err);
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%s': blame '%s'", sandbox, path);
	r = eos_blame_for_entry(st, NULL, sbx, path, &e->st, lines, ret, err);
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%s'", sandbox);
	return 0;
}

int
eos_store_blame(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		struct eos_blame_range **ret, size_t *ret_n, struct eos_error *err)
{
	EOS_CLEANUP(entry_releasep) struct eos_entry e = { 0 };
	EOS_CLEANUP(eos_blame_release) struct eos_blame b = { 0 };
	uint64_t sbx, version;
	int r;

	r = eos_path_check(path, err);
	r = r ?: eos_sandbox_resolve(st, sandbox, &sbx, err);
	r = r ?: eos_sandbox_version(st, sbx, sandbox, v, &version, err);
	if (r < 0)
		return r;
	eos_entry_init(&e);
	r = eos_entry_resolve(st, NULL, sbx, version, path, &e, err);
	if (r < 0)
		return eos_error_prefix(err, r, "sandbox '%s'", sandbox);
	r = blame_entry(st, sandbox, sbx, path, &e, &b, err);
	if (r < 0)
		return r;
	if (blame_ranges(&b, ret, ret_n) < 0)
		return eos_error_set(err, -ENOMEM, "sandbox '%s': blame '%s': out of memory",
				     sandbox, path);
	return 0;
}
