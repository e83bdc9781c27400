/* SPDX-License-Identifier: MIT */
/*
 * store/kv-wal: read RocksDB's write-ahead logs the way its recovery does, without RocksDB, to
 * name the damaged log (RocksDB only says "Corruption: checksum mismatch"), and to cut a log at
 * its first damaged record for eos-store recover.
 *
 * The log format (RocksDB 7.x db/log_format.h): 32 KiB blocks of records, each a header
 * (le32 masked CRC32C, le16 length, u8 type; recyclable types add le32 log number) and a
 * payload; a logical record is one FULL record or FIRST, MIDDLE…, LAST fragments; fewer bytes
 * than a header at the end of a block are padding. The CRC covers the type, the log number
 * (recyclable) and the payload. A record cut short by the end of the file is a torn tail (the
 * writer was killed in the middle of it) and accepted, as kTolerateCorruptedTailRecords does;
 * any other record that does not verify is damage.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/error.h"

#include "store/kv.h"

enum {
	WAL_BLOCK = 32768,
	WAL_HEADER = 7,
	WAL_RECYCLABLE_HEADER = 11,
	WAL_COPY_BUF = 1 << 16,
};

enum wal_type {
	WAL_ZERO = 0,
	WAL_FULL = 1,
	WAL_FIRST = 2,
	WAL_MIDDLE = 3,
	WAL_LAST = 4,
	WAL_RECYCLABLE_FULL = 5,
	WAL_RECYCLABLE_LAST = 8,
	WAL_SET_COMPRESSION = 9,
};

/* --- CRC32C (Castagnoli), as RocksDB's util/crc32c ------------------------------------------- */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void
crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t
crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	pthread_once(&crc_once, crc_init);
	while (n--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

/* RocksDB stores CRCs masked (rotated and offset) so that CRCs of CRCs stay well distributed. */
static uint32_t
crc_unmask(uint32_t masked)
{
	uint32_t rot = masked - 0xa282ead8u;

	return (rot >> 17) | (rot << 15);
}

/* --- one log ---------------------------------------------------------------------------------- */

struct wal_reader {
	int fd;
	uint64_t size;
	uint8_t block[WAL_BLOCK];
	bool in_fragment;    /* inside FIRST … LAST */
	uint64_t rec_start;  /* file offset of the current logical record's first fragment */
	const char *problem; /* set on damage */
	uint64_t damage_at;  /* file offset of the logical record holding the damage */
};

static bool
wal_damage(struct wal_reader *w, uint64_t at, const char *problem)
{
	w->problem = problem;
	w->damage_at = w->in_fragment ? w->rec_start : at;
	return false;
}

/* Follow the fragment sequence; false on damage. */
static bool
wal_fragment(struct wal_reader *w, unsigned type, uint64_t at)
{
	bool recyclable = type >= WAL_RECYCLABLE_FULL && type <= WAL_RECYCLABLE_LAST;
	unsigned t = recyclable ? type - (WAL_RECYCLABLE_FULL - WAL_FULL) : type;

	switch (t) {
	case WAL_FULL:
	case WAL_FIRST:
		if (w->in_fragment)
			return wal_damage(w, at, "a fragmented record has no end");
		w->in_fragment = t == WAL_FIRST;
		w->rec_start = at;
		return true;
	case WAL_MIDDLE:
	case WAL_LAST:
		if (!w->in_fragment)
			return wal_damage(w, at, "a fragment has no start");
		w->in_fragment = t == WAL_MIDDLE;
		return true;
	case WAL_SET_COMPRESSION:
		return true;
	default:
		return wal_damage(w, at, "unknown record type");
	}
}

/*
 * Check the records of one block of len bytes at file offset base. Returns true to go on with
 * the next block, false at the end of the log (*w->problem set when it ends in damage).
 */
static bool
wal_block(struct wal_reader *w, uint64_t base, size_t len)
{
	bool last = len < WAL_BLOCK;
	size_t pos = 0;

	while (len - pos >= WAL_HEADER) {
		const uint8_t *h = w->block + pos;
		unsigned type = h[6];
		size_t hsize = type >= WAL_RECYCLABLE_FULL && type <= WAL_RECYCLABLE_LAST
				       ? WAL_RECYCLABLE_HEADER
				       : WAL_HEADER;
		size_t length = (size_t)h[4] | (size_t)h[5] << 8;

		if (len - pos < hsize)
			break;
		if (hsize + length > len - pos)
			return last ? false : wal_damage(w, base + pos, "bad record length");
		if (type == WAL_ZERO && length == 0)
			return !last; /* preallocated space: the rest of the block is zeros */
		if (crc_unmask(eos_get_le32(h)) != crc32c(h + 6, hsize - 6 + length))
			return wal_damage(w, base + pos, "checksum mismatch");
		if (!wal_fragment(w, type, base + pos))
			return false;
		pos += hsize + length;
	}
	/* Padding at the end of a block; at the end of the file, a torn header. */
	return !last;
}

static int
wal_read(struct wal_reader *w, const char *name, struct eos_error *err)
{
	for (uint64_t off = 0;; off += WAL_BLOCK) {
		ssize_t n = pread(w->fd, w->block, WAL_BLOCK, (off_t)off);

		if (n < 0)
			return eos_error_set(err, eos_neg_errno(), "read write-ahead log '%s': %s",
					     name, strerror(errno));
		if (!wal_block(w, off, (size_t)n))
			return 0;
	}
}

/* 1 when the log at dfd/name is damaged (*w describes it), 0 when it verifies. */
static int
wal_check_file(int dfd, const char *name, struct wal_reader *w, struct eos_error *err)
{
	cleanup_close int fd = -1;
	struct stat sb;
	int r;

	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &sb) < 0)
		return eos_error_set(err, eos_neg_errno(), "open write-ahead log '%s': %s", name,
				     strerror(errno));
	w->fd = fd;
	w->size = (uint64_t)sb.st_size;
	r = wal_read(w, name, err);
	if (r < 0)
		return r;
	return w->problem != NULL;
}

/* --- every log of a database ------------------------------------------------------------------ */

/* The number of a log file name ("000033.log"), 0 when name is not one. */
static uint64_t
wal_number(const char *name)
{
	uint64_t v = 0;
	const char *p = name;

	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	return p != name && strcmp(p, ".log") == 0 ? v : 0;
}

struct wal_list {
	uint64_t *v;
	size_t n, cap;
};

static int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The numbers of the logs in dfd, in replay order. */
static int
wal_list(int dfd, const char *path, struct wal_list *ret, struct eos_error *err)
{
	DIR *d;
	struct dirent *de;
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return eos_error_set(err, eos_neg_errno(), "list '%s': %s", path, strerror(errno));
	}
	while ((de = readdir(d))) {
		uint64_t v = wal_number(de->d_name);

		if (v == 0)
			continue;
		if (eos_buf_array_reserve(&ret->v, &ret->cap, ret->n, sizeof(*ret->v), 8) < 0) {
			closedir(d);
			return eos_error_set(err, -ENOMEM, "list '%s': out of memory", path);
		}
		ret->v[ret->n++] = v;
	}
	closedir(d);
	if (ret->n)
		qsort(ret->v, ret->n, sizeof(*ret->v), u64_cmp);
	return 0;
}

static void
wal_name(uint64_t v, char out[EOS_KV_WAL_NAME_MAX])
{
	snprintf(out, EOS_KV_WAL_NAME_MAX, "%06" PRIu64 ".log", v);
}

/* Sizes of the logs after the damaged one: replay stops at the damage, so they are lost too. */
static void
wal_later(int dfd, const struct wal_list *l, size_t first, struct eos_kv_wal_damage *ret)
{
	for (size_t i = first; i < l->n; i++) {
		char name[EOS_KV_WAL_NAME_MAX];
		struct stat sb;

		wal_name(l->v[i], name);
		if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
			ret->later_bytes += (uint64_t)sb.st_size;
		ret->later_files++;
	}
}

/* A directory fd of path, or -errno with err naming it. */
static int
wal_open_dir(const char *path, struct eos_error *err)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	return fd >= 0 ? fd
		       : eos_error_set(err, eos_neg_errno(), "open '%s': %s", path,
				       strerror(errno));
}

int
eos_kv_wal_check(const char *path, struct eos_kv_wal_damage *ret, struct eos_error *err)
{
	cleanup_free struct wal_reader *w = NULL;
	cleanup_close int dfd = -1;
	struct wal_list l = { 0 };
	int r;

	*ret = (struct eos_kv_wal_damage){ 0 };
	dfd = wal_open_dir(path, err);
	if (dfd < 0)
		return dfd;
	w = malloc(sizeof(*w));
	r = w ? wal_list(dfd, path, &l, err) : eos_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; r == 0 && i < l.n; i++) {
		*w = (struct wal_reader){ .fd = -1 };
		wal_name(l.v[i], ret->file);
		r = wal_check_file(dfd, ret->file, w, err);
		if (r == 1) {
			ret->offset = w->damage_at;
			ret->dropped = w->size - w->damage_at;
			ret->problem = w->problem;
			wal_later(dfd, &l, i + 1, ret);
		}
	}
	free(l.v);
	if (r == 0)
		ret->file[0] = '\0';
	return r;
}

/* --- cutting a log at its damage -------------------------------------------------------------- */

/* Copy dfd/name into sdfd/name (a new file), durably. */
static int
wal_copy(int dfd, int sdfd, const char *name, struct eos_error *err)
{
	cleanup_free uint8_t *buf = malloc(WAL_COPY_BUF);
	cleanup_close int in = -1;
	cleanup_close int out = -1;
	ssize_t n;

	if (!buf)
		return eos_error_set(err, -ENOMEM, "copy '%s': out of memory", name);
	in = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	out = in < 0 ? -1
		     : openat(sdfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			      0600);
	if (out < 0)
		return eos_error_set(err, eos_neg_errno(), "copy '%s': %s", name, strerror(errno));
	while ((n = read(in, buf, WAL_COPY_BUF)) > 0)
		if (write(out, buf, (size_t)n) != n)
			return eos_error_set(err, errno ? eos_neg_errno() : -EIO, "copy '%s': %s",
					     name, strerror(errno ? errno : EIO));
	if (n < 0 || fsync(out) < 0)
		return eos_error_set(err, eos_neg_errno(), "copy '%s': %s", name, strerror(errno));
	return 0;
}

/* Save the damaged log and the later ones into sdfd, then cut and remove them in dfd. */
static int
wal_drop_files(int dfd, int sdfd, const struct wal_list *l, const struct eos_kv_wal_damage *d,
	       struct eos_error *err)
{
	uint64_t first = wal_number(d->file);
	char name[EOS_KV_WAL_NAME_MAX];
	int r = 0;

	for (size_t i = 0; r == 0 && i < l->n; i++) {
		if (l->v[i] < first)
			continue;
		wal_name(l->v[i], name);
		r = wal_copy(dfd, sdfd, name, err);
	}
	if (r == 0 && fsync(sdfd) < 0)
		return eos_error_set(err, eos_neg_errno(), "sync: %s", strerror(errno));
	for (size_t i = 0; r == 0 && i < l->n; i++) {
		cleanup_close int fd = -1;

		if (l->v[i] < first)
			continue;
		wal_name(l->v[i], name);
		if (l->v[i] > first) {
			if (unlinkat(dfd, name, 0) < 0)
				r = eos_error_set(err, eos_neg_errno(), "remove '%s': %s", name,
						  strerror(errno));
			continue;
		}
		fd = openat(dfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || ftruncate(fd, (off_t)d->offset) < 0 || fsync(fd) < 0)
			r = eos_error_set(err, eos_neg_errno(), "cut '%s': %s", name,
					  strerror(errno));
	}
	if (r == 0 && fsync(dfd) < 0)
		r = eos_error_set(err, eos_neg_errno(), "sync: %s", strerror(errno));
	return r;
}

int
eos_kv_wal_drop(const char *path, const struct eos_kv_wal_damage *d, const char *save_dir,
		struct eos_error *err)
{
	cleanup_close int dfd = -1;
	cleanup_close int sdfd = -1;
	struct wal_list l = { 0 };
	int r;

	dfd = wal_open_dir(path, err);
	if (dfd < 0)
		return dfd;
	if (mkdir(save_dir, 0700) < 0 && errno != EEXIST)
		return eos_error_set(err, eos_neg_errno(), "create '%s': %s", save_dir,
				     strerror(errno));
	sdfd = wal_open_dir(save_dir, err);
	if (sdfd < 0)
		return sdfd;
	r = wal_list(dfd, path, &l, err);
	if (r == 0)
		r = wal_drop_files(dfd, sdfd, &l, d, err);
	free(l.v);
	return r;
}
