/* SPDX-License-Identifier: MIT */
/*
 * The git index format (git's Documentation/gitformat-index.txt): a 12-byte header ("DIRC",
 * version, entry count), the entries sorted by path, extensions, and a checksum of all that.
 * An entry is ten big-endian 32-bit stat fields (ctime s/ns, mtime s/ns, dev, ino, mode, uid,
 * gid, size), the object id, 16 bits of flags (and 16 more in version 3 and later when the
 * extended bit is set), then the path: NUL-terminated and padded to a multiple of 8 bytes in
 * versions 2 and 3; in version 4 a varint of bytes to drop from the previous path and the rest,
 * NUL-terminated, without padding. Only the stat fields are rewritten, so the layout and the
 * length stay.
 */
#include "store/git-index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/digest.h"
#include "common/endian.h"

enum {
	HEADER_LEN = 12,
	STAT_FIELDS = 10,
	STAT_LEN = STAT_FIELDS * 4,
	FLAG_EXTENDED = 0x4000,
	FLAG_STAGE = 0x3000,
	FLAG_VALID = 0x8000,
	XFLAG_SKIP_WORKTREE = 0x4000,
	MODE_TYPE = 0170000,
	MODE_FILE = 0100000,
	MODE_LINK = 0120000,
	SHA256_LEN = 32,
};

/* Field positions within an entry's stat data. */
enum {
	F_CTIME_S,
	F_CTIME_NS,
	F_MTIME_S,
	F_MTIME_NS,
	F_DEV,
	F_INO,
	F_MODE,
	F_UID,
	F_GID,
	F_SIZE
};

struct index_reader {
	uint8_t *buf;
	size_t end; /* where the entries and extensions end: the checksum starts */
	size_t oid_len;
	uint32_t version;
	char *path; /* the current entry's path (version 4 builds on the previous one) */
	size_t path_len, path_cap;
};

/* Which checksum the index ends with: its length, 0 when neither matches. */
static size_t
checksum_len(const uint8_t *buf, size_t len)
{
	uint8_t sha1[EOS_SHA1_LEN];
	struct eos_digest d;

	if (len >= HEADER_LEN + EOS_SHA1_LEN && eos_sha1(buf, len - EOS_SHA1_LEN, sha1) == 0 &&
	    memcmp(sha1, buf + len - EOS_SHA1_LEN, EOS_SHA1_LEN) == 0)
		return EOS_SHA1_LEN;
	if (len >= HEADER_LEN + SHA256_LEN && eos_sha256(buf, len - SHA256_LEN, &d) == 0 &&
	    memcmp(d.b, buf + len - SHA256_LEN, SHA256_LEN) == 0)
		return SHA256_LEN;
	return 0;
}

static bool
all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* git's varint (offset encoding): 0 and *ok false on overflow or at the end. */
static uint64_t
read_varint(const uint8_t *p, size_t end, size_t *at, bool *ok)
{
	uint64_t v;
	uint8_t c;

	if (*at >= end)
		return *ok = false, 0;
	c = p[(*at)++];
	v = c & 127;
	while (c & 128) {
		v += 1;
		if (v >> 57 || *at >= end)
			return *ok = false, 0;
		c = p[(*at)++];
		v = (v << 7) + (c & 127);
	}
	return v;
}

static int
path_set(struct index_reader *rd, size_t keep, const uint8_t *suffix, size_t n)
{
	if (keep + n + 1 > rd->path_cap) {
		size_t cap = (keep + n + 1) * 2;
		char *p = realloc(rd->path, cap);

		if (!p)
			return -ENOMEM;
		rd->path = p;
		rd->path_cap = cap;
	}
	memcpy(rd->path + keep, suffix, n);
	rd->path_len = keep + n;
	rd->path[rd->path_len] = '\0';
	return 0;
}

/* Read the path of the entry whose name starts at *at; moves *at past the entry. */
static int
read_path(struct index_reader *rd, size_t entry, size_t *at)
{
	const uint8_t *nul;
	size_t keep = 0, n;
	bool ok = true;

	if (rd->version == 4) {
		uint64_t drop = read_varint(rd->buf, rd->end, at, &ok);

		if (!ok || drop > rd->path_len)
			return -EBADMSG;
		keep = rd->path_len - (size_t)drop;
	}
	nul = memchr(rd->buf + *at, '\0', rd->end - *at);
	if (!nul)
		return -EBADMSG;
	n = (size_t)(nul - (rd->buf + *at));
	if (path_set(rd, keep, rd->buf + *at, n) < 0)
		return -ENOMEM;
	*at += n + 1;
	if (rd->version != 4) {
		/* padded with 1-8 NULs to a multiple of 8 from the entry's start */
		size_t len = ((*at - 1 - entry) + 8) & ~(size_t)7;

		if (entry + len > rd->end)
			return -EBADMSG;
		*at = entry + len;
	}
	return rd->path_len ? 0 : -EBADMSG;
}

static uint16_t
get_be16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static void
stat_get(const uint8_t *p, struct eos_gitidx_stat *s)
{
	s->ctime_s = eos_get_be32(p + 4 * F_CTIME_S);
	s->ctime_ns = eos_get_be32(p + 4 * F_CTIME_NS);
	s->mtime_s = eos_get_be32(p + 4 * F_MTIME_S);
	s->mtime_ns = eos_get_be32(p + 4 * F_MTIME_NS);
	s->ino = eos_get_be32(p + 4 * F_INO);
	s->mode = eos_get_be32(p + 4 * F_MODE);
	s->uid = eos_get_be32(p + 4 * F_UID);
	s->gid = eos_get_be32(p + 4 * F_GID);
	s->size = eos_get_be32(p + 4 * F_SIZE);
}

/* Write what a view shows; dev and mode stay (git compares no device, the mode is git's own). */
static void
stat_put(uint8_t *p, const struct eos_gitidx_stat *s)
{
	eos_put_be32(p + 4 * F_CTIME_S, s->ctime_s);
	eos_put_be32(p + 4 * F_CTIME_NS, s->ctime_ns);
	eos_put_be32(p + 4 * F_MTIME_S, s->mtime_s);
	eos_put_be32(p + 4 * F_MTIME_NS, s->mtime_ns);
	eos_put_be32(p + 4 * F_INO, s->ino);
	eos_put_be32(p + 4 * F_UID, s->uid);
	eos_put_be32(p + 4 * F_GID, s->gid);
	eos_put_be32(p + 4 * F_SIZE, s->size);
}

/* Whether the entry is one git lstat()s in the work tree: a file or symlink, merged, checked out.
 */
static bool
entry_is_checked(const struct eos_gitidx_stat *s, uint16_t flags, uint16_t xflags)
{
	uint32_t type = s->mode & MODE_TYPE;

	return (type == MODE_FILE || type == MODE_LINK) && !(flags & (FLAG_STAGE | FLAG_VALID)) &&
	       !(xflags & XFLAG_SKIP_WORKTREE);
}

/* Parse the entry at *at, offer it to fresh (when not NULL), move *at past it. */
static int
refresh_entry(struct index_reader *rd, size_t *at, eos_gitidx_fresh_fn fresh, void *ctx,
	      size_t *refreshed)
{
	size_t entry = *at, pos = entry + STAT_LEN + rd->oid_len;
	struct eos_gitidx_entry e = { .oid = rd->buf + entry + STAT_LEN, .oid_len = rd->oid_len };
	struct eos_gitidx_stat view;
	uint16_t flags, xflags = 0;
	int r;

	if (pos + 2 > rd->end)
		return -EBADMSG;
	stat_get(rd->buf + entry, &e.stat);
	flags = get_be16(rd->buf + pos);
	pos += 2;
	if (flags & FLAG_EXTENDED) {
		if (rd->version < 3 || pos + 2 > rd->end)
			return -EBADMSG;
		xflags = get_be16(rd->buf + pos);
		pos += 2;
	}
	r = read_path(rd, entry, &pos);
	if (r < 0)
		return r;
	*at = pos;
	e.path = rd->path;
	if (!fresh || !entry_is_checked(&e.stat, flags, xflags) || !fresh(ctx, &e, &view))
		return 0;
	if (memcmp(&e.stat, &view, sizeof(view)) != 0) {
		stat_put(rd->buf + entry, &view);
		(*refreshed)++;
	}
	return 0;
}

/* Whether the extensions after the entries include a split index's link ("link"). */
static int
check_extensions(const struct index_reader *rd, size_t at)
{
	while (at < rd->end) {
		uint32_t size;

		if (rd->end - at < 8)
			return -EBADMSG;
		size = eos_get_be32(rd->buf + at + 4);
		if (memcmp(rd->buf + at, "link", 4) == 0)
			return -ENOTSUP;
		if (size > rd->end - at - 8)
			return -EBADMSG;
		at += 8 + (size_t)size;
	}
	return 0;
}

static int
reseal(uint8_t *buf, size_t len, size_t sum_len)
{
	struct eos_digest d;

	if (sum_len == EOS_SHA1_LEN)
		return eos_sha1(buf, len - sum_len, buf + len - sum_len);
	if (eos_sha256(buf, len - sum_len, &d) < 0)
		return -EIO;
	memcpy(buf + len - sum_len, d.b, sum_len);
	return 0;
}

static int
refresh_all(struct index_reader *rd, uint32_t count, eos_gitidx_fresh_fn fresh, void *ctx,
	    size_t *refreshed)
{
	size_t at = HEADER_LEN;
	int r;

	rd->path_len = 0;
	for (uint32_t i = 0; i < count; i++) {
		r = refresh_entry(rd, &at, fresh, ctx, refreshed);
		if (r < 0)
			return r;
	}
	return check_extensions(rd, at);
}

int
eos_git_index_refresh(uint8_t *buf, size_t len, eos_gitidx_fresh_fn fresh, void *ctx,
		      size_t *ret_refreshed)
{
	struct index_reader rd = { .buf = buf };
	size_t sum_len, refreshed = 0;
	cleanup_free char *path = NULL;
	uint32_t count;
	int r;

	*ret_refreshed = 0;
	if (len < HEADER_LEN + EOS_SHA1_LEN || memcmp(buf, "DIRC", 4) != 0)
		return -EBADMSG;
	rd.version = eos_get_be32(buf + 4);
	count = eos_get_be32(buf + 8);
	if (rd.version < 2 || rd.version > 4)
		return -EBADMSG;
	sum_len = checksum_len(buf, len);
	if (!sum_len)
		return all_zero(buf + len - EOS_SHA1_LEN, EOS_SHA1_LEN) ? -ENOTSUP : -EBADMSG;
	rd.end = len - sum_len;
	rd.oid_len = sum_len; /* a repository's object ids and checksums share their hash */
	/* a first pass only parses: a malformed index stays as it was */
	r = refresh_all(&rd, count, NULL, NULL, &refreshed);
	if (r == 0)
		r = refresh_all(&rd, count, fresh, ctx, &refreshed);
	path = rd.path;
	if (r < 0 || !refreshed)
		return r;
	r = reseal(buf, len, sum_len);
	if (r < 0)
		return r;
	*ret_refreshed = refreshed;
	return 0;
}
