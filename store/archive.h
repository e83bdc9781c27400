/* SPDX-License-Identifier: MIT */
/*
 * store/archive: tar archives through libarchive (store/archive.c is the only file that includes
 * <archive.h>). Internal to store/: the tar import reads with it, the tar export writes with it.
 *
 * Reading: eos_archive_reader_open() on a descriptor (any filter libarchive knows: zstd, gzip,
 * xz, …, detected by content; ustar, pax and GNU tar) → eos_archive_reader_next() per entry →
 * eos_archive_reader_data() for its bytes → eos_archive_reader_free().
 * Writing: eos_archive_writer_open() (pax: ustar headers plus extended headers, which keep
 * nanosecond mtimes; plain or zstd) → per entry eos_archive_writer_header() then exactly size
 * bytes of eos_archive_writer_data() → eos_archive_writer_close() (end-of-archive blocks) →
 * eos_archive_writer_free() (which does not finish a still-open archive).
 *
 * Errors: libarchive's I/O, memory, space and permission failures come back as that -errno, all
 * other failures as -EINVAL (bad input); err carries libarchive's message after a prefix naming
 * what was done. One reader or writer is used by one thread at a time.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cleanup.h"
#include "common/error.h"

enum eos_archive_type {
	EOS_ARCHIVE_FILE = 1,
	EOS_ARCHIVE_DIR,
	EOS_ARCHIVE_SYMLINK,
	EOS_ARCHIVE_FIFO,
	EOS_ARCHIVE_SOCKET,
	EOS_ARCHIVE_CHAR,
	EOS_ARCHIVE_BLOCK,
	EOS_ARCHIVE_OTHER,
};

/* An extended attribute of a member (written as a pax SCHILY.xattr record). Borrowed. */
struct eos_archive_xattr {
	const char *name;
	const void *value;
	size_t len;
};

/* One archive member's header. Strings are borrowed (see the functions). */
struct eos_archive_entry {
	const char *path;     /* NULL: the entry has no usable name */
	const char *hardlink; /* hard link target, or NULL */
	const char *symlink;  /* symlink target (EOS_ARCHIVE_SYMLINK), or NULL */
	enum eos_archive_type type;
	uint32_t perm; /* permission bits (07777) */
	int64_t uid, gid;
	bool mtime_set;
	int64_t mtime_sec;
	long mtime_nsec;
	bool size_set;
	int64_t size;				/* file data bytes (0 for everything else) */
	uint64_t rdev;				/* CHAR and BLOCK: makedev(major, minor) */
	const struct eos_archive_xattr *xattrs; /* writing only */
	size_t nxattrs;
};

/* --- reading ---------------------------------------------------------------------------------- */

struct eos_archive_reader;

/*
 * Read the archive on fd from its current offset, in reads of block bytes. The fd stays the
 * caller's. Caller owns *ret (eos_archive_reader_free()).
 */
int eos_archive_reader_open(int fd, size_t block, struct eos_archive_reader **ret,
			    struct eos_error *err);
/*
 * The next entry: 1 with *ret filled (strings valid until the next call), 0 at the end of the
 * archive, or -errno with err "read archive entry N: <libarchive's message>".
 */
int eos_archive_reader_next(struct eos_archive_reader *rd, struct eos_archive_entry *ret,
			    struct eos_error *err);
/*
 * The next data block of the current entry: 1 with *ret_p (valid until the next call),
 * *ret_len and *ret_off (its offset in the file; sparse holes are skipped), 0 at the end of the
 * entry, or -errno with err "<what>: <libarchive's message>".
 */
int eos_archive_reader_data(struct eos_archive_reader *rd, const char *what, const void **ret_p,
			    size_t *ret_len, int64_t *ret_off, struct eos_error *err);
void eos_archive_reader_free(struct eos_archive_reader *rd);
EOS_DEFINE_CLEANUP(struct eos_archive_reader *, eos_archive_reader_free)

/* --- writing ---------------------------------------------------------------------------------- */

enum eos_archive_filter {
	EOS_ARCHIVE_FILTER_NONE = 0,
	EOS_ARCHIVE_FILTER_ZSTD,
};

struct eos_archive_writer;

/* Write a new archive to fd (which stays the caller's). Caller owns *ret. */
int eos_archive_writer_open(int fd, enum eos_archive_filter filter, struct eos_archive_writer **ret,
			    struct eos_error *err);
/*
 * Write one header: path, type (FILE, DIR, SYMLINK, FIFO, CHAR or BLOCK), perm, uid, gid, mtime,
 * size (FILE), rdev (CHAR, BLOCK) and xattrs are used; hardlink, when set, makes a hard link to an
 * earlier member (size ignored).
 */
int eos_archive_writer_header(struct eos_archive_writer *w, const struct eos_archive_entry *e,
			      struct eos_error *err);
/* Write len bytes of the current member's data. */
int eos_archive_writer_data(struct eos_archive_writer *w, const void *p, size_t len,
			    struct eos_error *err);
/* Finish the archive (trailer, filter flush). The writer must still be freed. */
int eos_archive_writer_close(struct eos_archive_writer *w, struct eos_error *err);
void eos_archive_writer_free(struct eos_archive_writer *w);
EOS_DEFINE_CLEANUP(struct eos_archive_writer *, eos_archive_writer_free)
