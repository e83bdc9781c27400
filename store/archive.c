/* SPDX-License-Identifier: MIT */
/*
 * libarchive behind eos' conventions (see store/archive.h): the only file that includes
 * <archive.h>.
 */
#include "store/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/cleanup.h"

EOS_DEFINE_CLEANUP(struct archive *, archive_read_free)
EOS_DEFINE_CLEANUP(struct archive *, archive_write_free)
EOS_DEFINE_CLEANUP(struct archive_entry *, archive_entry_free)

struct eos_archive_reader {
	struct archive *a;
	size_t index; /* headers read so far */
};

struct eos_archive_writer {
	struct archive *a;
	bool closed;
};

/* libarchive's failure as -errno: its I/O and memory errors pass through, the rest is bad input. */
static int
archive_fail(struct archive *a, const char *what, struct eos_error *err)
{
	const char *msg = archive_error_string(a);
	int e = archive_errno(a);
	int code =
		e == ENOMEM || e == EIO || e == ENOSPC || e == EACCES || e == EPIPE ? -e : -EINVAL;

	return eos_error_set(err, code, "%s: %s", what, msg ? msg : "unknown libarchive error");
}

static int
no_memory(struct eos_error *err)
{
	return eos_error_set(err, -ENOMEM, "out of memory");
}

/* --- reading ---------------------------------------------------------------------------------- */

int
eos_archive_reader_open(int fd, size_t block, struct eos_archive_reader **ret,
			struct eos_error *err)
{
	EOS_CLEANUP(archive_read_freep) struct archive *a = archive_read_new();
	struct eos_archive_reader *rd;

	if (!a)
		return no_memory(err);
	if (archive_read_support_filter_all(a) < ARCHIVE_WARN ||
	    archive_read_support_format_tar(a) != ARCHIVE_OK)
		return archive_fail(a, "set up libarchive", err);
	if (archive_read_open_fd(a, fd, block) != ARCHIVE_OK)
		return archive_fail(a, "open archive", err);
	rd = calloc(1, sizeof(*rd));
	if (!rd)
		return no_memory(err);
	rd->a = TAKE_PTR(a);
	*ret = rd;
	return 0;
}

void
eos_archive_reader_free(struct eos_archive_reader *rd)
{
	if (!rd)
		return;
	archive_read_free(rd->a);
	free(rd);
}

static enum eos_archive_type
type_of(mode_t type)
{
	switch (type) {
	case AE_IFREG:
		return EOS_ARCHIVE_FILE;
	case AE_IFDIR:
		return EOS_ARCHIVE_DIR;
	case AE_IFLNK:
		return EOS_ARCHIVE_SYMLINK;
	case AE_IFIFO:
		return EOS_ARCHIVE_FIFO;
	case AE_IFSOCK:
		return EOS_ARCHIVE_SOCKET;
	case AE_IFCHR:
		return EOS_ARCHIVE_CHAR;
	case AE_IFBLK:
		return EOS_ARCHIVE_BLOCK;
	default:
		return EOS_ARCHIVE_OTHER;
	}
}

static void
entry_fill(struct archive_entry *e, struct eos_archive_entry *ret)
{
	const char *p = archive_entry_pathname(e);

	*ret = (struct eos_archive_entry){ 0 };
	ret->path = p ? p : archive_entry_pathname_utf8(e);
	p = archive_entry_hardlink(e);
	ret->hardlink = p ? p : archive_entry_hardlink_utf8(e);
	ret->type = type_of(archive_entry_filetype(e));
	if (ret->type == EOS_ARCHIVE_SYMLINK) {
		p = archive_entry_symlink(e);
		ret->symlink = p ? p : archive_entry_symlink_utf8(e);
	}
	ret->perm = archive_entry_perm(e) & 07777;
	ret->uid = archive_entry_uid(e);
	ret->gid = archive_entry_gid(e);
	ret->mtime_set = archive_entry_mtime_is_set(e);
	ret->mtime_sec = archive_entry_mtime(e);
	ret->mtime_nsec = archive_entry_mtime_nsec(e);
	ret->size_set = archive_entry_size_is_set(e);
	ret->size = archive_entry_size(e);
	if (ret->type == EOS_ARCHIVE_CHAR || ret->type == EOS_ARCHIVE_BLOCK)
		ret->rdev = makedev((unsigned)archive_entry_rdevmajor(e),
				    (unsigned)archive_entry_rdevminor(e));
}

int
eos_archive_reader_next(struct eos_archive_reader *rd, struct eos_archive_entry *ret,
			struct eos_error *err)
{
	struct archive_entry *e;
	char what[64];
	int r = archive_read_next_header(rd->a, &e);

	if (r == ARCHIVE_EOF)
		return 0;
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
		snprintf(what, sizeof(what), "read archive entry %zu", rd->index + 1);
		return archive_fail(rd->a, what, err);
	}
	rd->index++;
	entry_fill(e, ret);
	return 1;
}

int
eos_archive_reader_data(struct eos_archive_reader *rd, const char *what, const void **ret_p,
			size_t *ret_len, int64_t *ret_off, struct eos_error *err)
{
	la_int64_t off;
	int r = archive_read_data_block(rd->a, ret_p, ret_len, &off);

	if (r == ARCHIVE_EOF)
		return 0;
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return archive_fail(rd->a, what, err);
	*ret_off = off;
	return 1;
}

/* --- writing ---------------------------------------------------------------------------------- */

int
eos_archive_writer_open(int fd, enum eos_archive_filter filter, struct eos_archive_writer **ret,
			struct eos_error *err)
{
	EOS_CLEANUP(archive_write_freep) struct archive *a = archive_write_new();
	struct eos_archive_writer *w;
	int r = ARCHIVE_OK;

	if (!a)
		return no_memory(err);
	/* Extended attributes as SCHILY.xattr records only: what GNU tar and OCI tools read. */
	if (archive_write_set_format_pax(a) != ARCHIVE_OK ||
	    archive_write_set_format_option(a, "pax", "xattrheader", "SCHILY") != ARCHIVE_OK)
		return archive_fail(a, "set up libarchive", err);
	switch (filter) {
	case EOS_ARCHIVE_FILTER_NONE:
		break;
	case EOS_ARCHIVE_FILTER_ZSTD:
		r = archive_write_add_filter_zstd(a);
		break;
	}
	if (r != ARCHIVE_OK)
		return archive_fail(a, "set up the zstd filter", err);
	if (archive_write_open_fd(a, fd) != ARCHIVE_OK)
		return archive_fail(a, "open archive for writing", err);
	w = calloc(1, sizeof(*w));
	if (!w) {
		archive_write_fail(a);
		return no_memory(err);
	}
	w->a = TAKE_PTR(a);
	*ret = w;
	return 0;
}

static mode_t
filetype_of(enum eos_archive_type type)
{
	switch (type) {
	case EOS_ARCHIVE_DIR:
		return AE_IFDIR;
	case EOS_ARCHIVE_SYMLINK:
		return AE_IFLNK;
	case EOS_ARCHIVE_FIFO:
		return AE_IFIFO;
	case EOS_ARCHIVE_CHAR:
		return AE_IFCHR;
	case EOS_ARCHIVE_BLOCK:
		return AE_IFBLK;
	case EOS_ARCHIVE_FILE:
	case EOS_ARCHIVE_SOCKET:
	case EOS_ARCHIVE_OTHER:
		break;
	}
	return AE_IFREG;
}

static void
header_fill(struct archive_entry *ae, const struct eos_archive_entry *e)
{
	archive_entry_copy_pathname(ae, e->path);
	archive_entry_set_filetype(ae, filetype_of(e->type));
	archive_entry_set_perm(ae, e->perm & 07777);
	archive_entry_set_uid(ae, e->uid);
	archive_entry_set_gid(ae, e->gid);
	if (e->mtime_set)
		archive_entry_set_mtime(ae, e->mtime_sec, e->mtime_nsec);
	if (e->hardlink) {
		archive_entry_copy_hardlink(ae, e->hardlink);
		archive_entry_set_size(ae, 0);
	} else {
		archive_entry_set_size(ae, e->type == EOS_ARCHIVE_FILE ? e->size : 0);
	}
	if (e->type == EOS_ARCHIVE_SYMLINK && e->symlink)
		archive_entry_copy_symlink(ae, e->symlink);
	if (e->type == EOS_ARCHIVE_CHAR || e->type == EOS_ARCHIVE_BLOCK) {
		archive_entry_set_rdevmajor(ae, major(e->rdev));
		archive_entry_set_rdevminor(ae, minor(e->rdev));
	}
	for (size_t i = 0; i < e->nxattrs; i++)
		archive_entry_xattr_add_entry(ae, e->xattrs[i].name, e->xattrs[i].value,
					      e->xattrs[i].len);
}

int
eos_archive_writer_header(struct eos_archive_writer *w, const struct eos_archive_entry *e,
			  struct eos_error *err)
{
	EOS_CLEANUP(archive_entry_freep) struct archive_entry *ae = archive_entry_new();
	char what[128];

	if (!ae)
		return no_memory(err);
	header_fill(ae, e);
	if (archive_write_header(w->a, ae) < ARCHIVE_WARN) {
		snprintf(what, sizeof(what), "write archive entry '%.100s'", e->path);
		return archive_fail(w->a, what, err);
	}
	return 0;
}

int
eos_archive_writer_data(struct eos_archive_writer *w, const void *p, size_t len,
			struct eos_error *err)
{
	while (len > 0) {
		la_ssize_t n = archive_write_data(w->a, p, len);

		if (n < 0)
			return archive_fail(w->a, "write archive data", err);
		if (n == 0)
			return eos_error_set(err, -EINVAL, "archive data beyond the member's size");
		p = (const uint8_t *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

int
eos_archive_writer_close(struct eos_archive_writer *w, struct eos_error *err)
{
	w->closed = true;
	if (archive_write_close(w->a) != ARCHIVE_OK)
		return archive_fail(w->a, "finish archive", err);
	return 0;
}

void
eos_archive_writer_free(struct eos_archive_writer *w)
{
	if (!w)
		return;
	/* Never pad and terminate a failed archive: a truncated one must look truncated. */
	if (!w->closed)
		archive_write_fail(w->a);
	archive_write_free(w->a);
	free(w);
}
