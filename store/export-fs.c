/* SPDX-License-Identifier: MIT */
/*
 * Host tree helpers of the dir export (see store/export.h). Every walk goes from an open
 * directory to a child with *at() calls and O_NOFOLLOW, so a symlink in a destination is handled
 * as the link it is and never leads out of the tree.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/path.h"

#include "store/export.h"

enum {
	COPY_PIECE = 128 << 10,
	XATTR_LIST_MAX_LEN = 64 << 10,
	XATTR_VALUE_MAX_LEN = 64 << 10,
};

int
eos_export_fs_opendir(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	return fd >= 0 ? fd : eos_neg_errno();
}

/* --- removal ---------------------------------------------------------------------------------- */

static int
remove_children(int parent, const char *name, const struct stat *sb)
{
	cleanup_closedir DIR *dir = NULL;
	int fd = eos_export_fs_opendir(parent, name);

	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	/* We may own a directory we cannot write: removing its children needs write access. */
	if ((sb->st_mode & 0700) != 0700)
		(void)fchmod(fd, (sb->st_mode & 07777) | 0700);
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return eos_neg_errno();
	}
	for (;;) {
		struct dirent *de;
		int r;

		errno = 0;
		de = readdir(dir);
		if (!de)
			return errno ? eos_neg_errno() : 0;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((r = eos_export_fs_remove(dirfd(dir), de->d_name)) < 0)
			return r;
	}
}

int
eos_export_fs_remove(int parent, const char *name)
{
	struct stat sb;
	int r;

	if (fstatat(parent, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : eos_neg_errno();
	if (S_ISDIR(sb.st_mode) && (r = remove_children(parent, name, &sb)) < 0)
		return r;
	if (unlinkat(parent, name, S_ISDIR(sb.st_mode) ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT)
		return eos_neg_errno();
	return 0;
}

/* --- extended attributes ---------------------------------------------------------------------- */

static void
copy_xattr(int src_fd, int dst_fd, const char *name, uint8_t *buf)
{
	ssize_t n = fgetxattr(src_fd, name, buf, XATTR_VALUE_MAX_LEN);

	if (n >= 0)
		(void)fsetxattr(dst_fd, name, buf, (size_t)n, 0);
}

void
eos_export_fs_copy_xattrs(int src_fd, int dst_fd)
{
	cleanup_free char *names = NULL;
	cleanup_free uint8_t *value = NULL;
	ssize_t n = flistxattr(src_fd, NULL, 0);

	if (n <= 0 || n > XATTR_LIST_MAX_LEN)
		return;
	names = malloc((size_t)n + 1);
	value = malloc(XATTR_VALUE_MAX_LEN);
	if (!names || !value || (n = flistxattr(src_fd, names, (size_t)n)) <= 0)
		return;
	names[n] = '\0';
	for (char *p = names; p < names + n; p += strlen(p) + 1)
		copy_xattr(src_fd, dst_fd, p, value);
}

/* --- hard-link copy --------------------------------------------------------------------------- */

struct link_walk {
	dev_t dev;
	bool root; /* running as root: copies keep their owner */
	eos_export_dir_fn fn;
	void *ctx;
	struct eos_error *err;
};

static int
walk_fail(struct link_walk *w, int code, const char *what, const char *path)
{
	return eos_error_set(w->err, code, "%s '%s': %s", what, path, strerror(-code));
}

static int
copy_bytes(int in, int out)
{
	cleanup_free uint8_t *buf = malloc(COPY_PIECE);
	ssize_t n;
	int r;

	if (!buf)
		return -ENOMEM;
	while ((n = read(in, buf, COPY_PIECE)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return eos_neg_errno();
		if ((r = eos_export_write_all(out, buf, (size_t)n)) < 0)
			return r;
	}
	return 0;
}

/* A regular file the kernel would not link (protected_hardlinks): copy it with its attributes. */
static int
copy_file(struct link_walk *w, int src, int dst, const char *name, const struct stat *sb)
{
	cleanup_close int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), out = -1;
	struct timespec ts[2] = { sb->st_atim, sb->st_mtim };
	int r;

	if (in < 0)
		return eos_neg_errno();
	out = openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return eos_neg_errno();
	if ((r = copy_bytes(in, out)) < 0)
		return r;
	eos_export_fs_copy_xattrs(in, out);
	if ((w->root && fchown(out, sb->st_uid, sb->st_gid) < 0) ||
	    fchmod(out, sb->st_mode & 07777) < 0 || futimens(out, ts) < 0)
		return eos_neg_errno();
	return 0;
}

static int
copy_symlink(struct link_walk *w, int src, int dst, const char *name, const struct stat *sb)
{
	struct timespec ts[2] = { sb->st_atim, sb->st_mtim };
	char target[PATH_MAX];
	ssize_t n = readlinkat(src, name, target, sizeof(target) - 1);

	if (n < 0)
		return eos_neg_errno();
	target[n] = '\0';
	if (symlinkat(target, dst, name) < 0 ||
	    (w->root && fchownat(dst, name, sb->st_uid, sb->st_gid, AT_SYMLINK_NOFOLLOW) < 0) ||
	    utimensat(dst, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return eos_neg_errno();
	return 0;
}

static int link_dir(struct link_walk *w, int src, int dst, const char *path);

static int
link_subdir(struct link_walk *w, int src, int dst, const char *path, const char *name,
	    const struct stat *sb)
{
	cleanup_close int s = -1, d = -1;
	int r;

	if (mkdirat(dst, name, 0700) < 0)
		return walk_fail(w, eos_neg_errno(), "create directory", path);
	s = eos_export_fs_opendir(src, name);
	if (s < 0)
		return walk_fail(w, s, "open directory", path);
	d = eos_export_fs_opendir(dst, name);
	if (d < 0)
		return walk_fail(w, d, "open directory", path);
	eos_export_fs_copy_xattrs(s, d);
	r = w->fn(w->ctx, path, sb);
	return r ?: link_dir(w, s, d, path);
}

static int
link_one(struct link_walk *w, int src, int dst, const char *parent, const char *name)
{
	cleanup_free char *path = NULL;
	struct stat sb;
	int r;

	if (eos_path_join(parent, name, &path) < 0)
		return -ENOMEM;
	if (fstatat(src, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return walk_fail(w, eos_neg_errno(), "stat", path);
	if (sb.st_dev != w->dev)
		return eos_error_set(w->err, -EXDEV, "'%s' is a mount point", path);
	if (S_ISDIR(sb.st_mode))
		return link_subdir(w, src, dst, path, name, &sb);
	if (linkat(src, name, dst, name, 0) == 0)
		return 0;
	if (errno != EPERM && errno != EACCES && errno != EMLINK)
		return walk_fail(w, eos_neg_errno(), "link", path);
	if (S_ISREG(sb.st_mode))
		r = copy_file(w, src, dst, name, &sb);
	else if (S_ISLNK(sb.st_mode))
		r = copy_symlink(w, src, dst, name, &sb);
	else
		r = -EPERM;
	return r < 0 ? walk_fail(w, r, "copy", path) : 0;
}

static int
link_dir(struct link_walk *w, int src, int dst, const char *path)
{
	cleanup_closedir DIR *dir = NULL;
	int fd = openat(src, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return walk_fail(w, eos_neg_errno(), "open directory", path[0] ? path : ".");
	}
	for (;;) {
		struct dirent *de;
		int r;

		errno = 0;
		de = readdir(dir);
		if (!de && errno)
			return walk_fail(w, eos_neg_errno(), "list", path[0] ? path : ".");
		if (!de)
			return 0;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((r = link_one(w, src, dst, path, de->d_name)) < 0)
			return r;
	}
}

int
eos_export_fs_link_tree(int src, int dst, eos_export_dir_fn fn, void *ctx, struct eos_error *err)
{
	struct link_walk w = { .root = geteuid() == 0, .fn = fn, .ctx = ctx, .err = err };
	struct stat sb;

	if (fstat(src, &sb) < 0)
		return eos_error_set(err, eos_neg_errno(), "stat the destination: %s",
				     strerror(errno));
	w.dev = sb.st_dev;
	return link_dir(&w, src, dst, "");
}
