/* SPDX-License-Identifier: MIT */
/*
 * fs-model: execute one generated operation on one side (the model or the view), recording
 * each step's result and the bytes read back in a struct outcome (see fs-model.h).
 */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "tests/integration/fs-model.h"

static long
rec(struct outcome *o, const char *step, long r)
{
	assert(o->n < MAX_STEPS);
	o->step[o->n] = step;
	o->r[o->n++] = r;
	return r;
}

static void
capture(struct outcome *o, const void *p, size_t n)
{
	o->data = fsm_realloc(o->data, o->data_len + n);
	memcpy(o->data + o->data_len, p, n);
	o->data_len += n;
}

/* Write all of buf at off (or at the file position when off < 0): bytes written or -errno. */
static long
write_full(int fd, const unsigned char *buf, size_t len, int64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n =
			off < 0 ? write(fd, buf + done, len - done)
				: pwrite(fd, buf + done, len - done, (off_t)(off + (int64_t)done));

		if (n < 0)
			return done ? (long)done : fsm_neg_errno();
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (long)done;
}

/* Read from off up to limit bytes (or EOF) and capture them: bytes read or -errno. */
static long
read_capture(int fd, struct outcome *o, uint64_t off, uint64_t limit)
{
	unsigned char buf[65536];
	uint64_t done = 0;

	while (done < limit) {
		size_t want = limit - done < sizeof(buf) ? (size_t)(limit - done) : sizeof(buf);
		ssize_t n = pread(fd, buf, want, (off_t)(off + done));

		if (n < 0)
			return fsm_neg_errno();
		if (n == 0)
			break;
		capture(o, buf, (size_t)n);
		done += (uint64_t)n;
	}
	return (long)done;
}

static void
rec_fstat(struct outcome *o, int fd, bool with_nlink)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		rec(o, "fstat", fsm_neg_errno());
		return;
	}
	/* Directory sizes differ between file systems: only the type is comparable. */
	if (S_ISDIR(st.st_mode)) {
		rec(o, "fstat.isdir", 1);
		return;
	}
	rec(o, "fstat.size", (long)st.st_size);
	if (with_nlink)
		rec(o, "fstat.nlink", (long)st.st_nlink);
}

/* Open path: the descriptor or -errno. Descriptor numbers differ between the sides, so
 * the step records 0 for success. */
static int
x_open(struct outcome *o, int root, const char *path, int flags, mode_t mode)
{
	int fd = (int)fsm_sys(openat(root, path, flags | O_CLOEXEC, mode));

	rec(o, "open", fd < 0 ? fd : 0);
	return fd;
}

static void
x_close(struct outcome *o, int fd)
{
	rec(o, "close", fsm_sys(close(fd)));
}

static void
x_create(const struct op *op, int root, struct outcome *o)
{
	int fd;

	umask(op->umask);
	fd = x_open(o, root, op->path, op->oflags, op->mode);
	if (fd < 0)
		return;
	rec(o, "write", write_full(fd, op->buf, op->len, -1));
	rec_fstat(o, fd, true);
	x_close(o, fd);
}

static void
x_write(const struct op *op, int root, struct outcome *o)
{
	int fd = x_open(o, root, op->path, O_WRONLY | op->oflags2, 0);

	if (fd < 0)
		return;
	rec(o, "pwrite", write_full(fd, op->buf, op->len, (int64_t)op->off));
	if (op->variant)
		rec(o, "fsync", fsm_sys(fsync(fd)));
	rec_fstat(o, fd, false);
	x_close(o, fd);
}

static void
x_append(const struct op *op, int root, struct outcome *o)
{
	int flags = (op->variant ? O_RDWR : O_WRONLY) | O_APPEND | op->oflags2;
	int fd = x_open(o, root, op->path, flags, 0);

	if (fd < 0)
		return;
	/* Linux appends a pwrite on an O_APPEND descriptor whatever its offset. */
	if (op->variant)
		rec(o, "pwrite@0", fsm_sys(pwrite(fd, op->buf, op->len, 0)));
	else
		rec(o, "write", write_full(fd, op->buf, op->len, -1));
	rec_fstat(o, fd, false);
	x_close(o, fd);
}

static void
x_truncate(const struct op *op, int root, struct outcome *o)
{
	int fd;

	if (!op->variant) {
		rec(o, "truncate", fsm_sys(truncate(op->path, (off_t)op->off)));
		return;
	}
	fd = x_open(o, root, op->path, O_WRONLY | op->oflags2, 0);
	if (fd < 0)
		return;
	rec(o, "ftruncate", fsm_sys(ftruncate(fd, (off_t)op->off)));
	rec_fstat(o, fd, false);
	x_close(o, fd);
}

static void
x_otrunc(const struct op *op, int root, struct outcome *o)
{
	int flags = (op->variant ? O_RDWR : O_WRONLY) | O_TRUNC | op->oflags2;
	int fd = x_open(o, root, op->path, flags, 0);

	if (fd < 0)
		return;
	rec_fstat(o, fd, false);
	rec(o, "write", write_full(fd, op->buf, op->len, -1));
	if (op->variant)
		rec(o, "read-back", read_capture(fd, o, 0, op->len + 1));
	x_close(o, fd);
}

static void
x_read(const struct op *op, int root, struct outcome *o)
{
	int fd = x_open(o, root, op->path, O_RDONLY | op->oflags2, 0);

	if (fd < 0)
		return;
	rec_fstat(o, fd, true);
	if (op->variant)
		rec(o, "read-all", read_capture(fd, o, 0, MAX_CAPTURE));
	else
		rec(o, "pread", read_capture(fd, o, op->off, op->len));
	x_close(o, fd);
}

static void
x_rename(const struct op *op, int root, struct outcome *o)
{
	rec(o, "renameat2",
	    fsm_sys(syscall(SYS_renameat2, root, op->path, root, op->path2, (unsigned)op->arg)));
}

static void
x_utimens(const struct op *op, int root, struct outcome *o)
{
	rec(o, "utimensat", fsm_sys(utimensat(root, op->path, op->times, op->arg)));
}

static void
x_xattr(const struct op *op, struct outcome *o)
{
	unsigned char buf[65536];
	long n;

	if (op->kind == OP_SETXATTR) {
		rec(o, "setxattr",
		    fsm_sys(setxattr(op->path, op->path2, op->buf, op->len, op->arg)));
	} else if (op->kind == OP_RMXATTR) {
		rec(o, "removexattr", fsm_sys(removexattr(op->path, op->path2)));
	} else {
		n = rec(o, "getxattr", fsm_sys(getxattr(op->path, op->path2, buf, sizeof(buf))));
		if (n > 0)
			capture(o, buf, (size_t)n);
	}
}

/* Open, unlink (or rename another file over) the name, then use the descriptor. */
static void
x_open_unlink(const struct op *op, int root, struct outcome *o)
{
	struct stat st;
	int fd = x_open(o, root, op->path, O_RDWR | op->oflags2, 0);

	if (fd < 0)
		return;
	if (op->variant)
		rec(o, "rename-over", fsm_sys(renameat(root, op->path2, root, op->path)));
	else
		rec(o, "unlink", fsm_sys(unlinkat(root, op->path, 0)));
	rec(o, "pwrite", write_full(fd, op->buf, op->len, (int64_t)op->off));
	rec_fstat(o, fd, true);
	rec(o, "read-all", read_capture(fd, o, 0, MAX_CAPTURE));
	x_close(o, fd);
	rec(o, "lstat-after", fsm_sys(fstatat(root, op->path, &st, AT_SYMLINK_NOFOLLOW)));
}

static void
x_stat(const struct ctx *c, const struct op *op, int root, struct outcome *o)
{
	struct stat st;
	char target[PATH_LEN];
	long n;

	if (rec(o, "stat", fsm_sys(fstatat(root, op->path, &st, op->arg))) < 0)
		return;
	rec(o, "type", (long)(st.st_mode & S_IFMT));
	rec(o, "perm", (long)(st.st_mode & 07777));
	if (c->check_owner) {
		rec(o, "uid", (long)st.st_uid);
		rec(o, "gid", (long)st.st_gid);
	}
	if (S_ISDIR(st.st_mode))
		return;
	rec(o, "size", (long)st.st_size);
	rec(o, "nlink", (long)st.st_nlink);
	if (!S_ISLNK(st.st_mode))
		return;
	n = rec(o, "readlink", fsm_sys(readlinkat(root, op->path, target, sizeof(target))));
	if (n > 0)
		capture(o, target, (size_t)n);
}

/* Write through a shared mapping, inside the file's current size, then read it back. */
static void
x_mmap(const struct op *op, int root, struct outcome *o)
{
	struct stat st;
	size_t maplen;
	void *p;
	int fd = x_open(o, root, op->path, O_RDWR | op->oflags2, 0);

	if (fd < 0)
		return;
	if (rec(o, "fstat", fsm_sys(fstat(fd, &st))) < 0 || rec(o, "size", (long)st.st_size) < 0 ||
	    op->off >= (uint64_t)st.st_size) {
		x_close(o, fd);
		return;
	}
	maplen = (size_t)EOS_MIN(op->len, (uint64_t)st.st_size - op->off);
	p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)op->off);
	if (rec(o, "mmap", p == MAP_FAILED ? fsm_neg_errno() : 0) == 0) {
		memcpy(p, op->buf, maplen);
		rec(o, "msync", fsm_sys(msync(p, maplen, MS_SYNC)));
		munmap(p, maplen);
	}
	rec(o, "pread", read_capture(fd, o, op->off, maplen));
	x_close(o, fd);
}

static void
x_copy_range(const struct op *op, int root, struct outcome *o)
{
	loff_t in_off = (loff_t)op->off, out_off = (loff_t)op->off2;
	int in = x_open(o, root, op->path, O_RDONLY | op->oflags, 0), out;

	if (in < 0)
		return;
	out = x_open(o, root, op->path2, O_WRONLY | op->oflags2, 0);
	if (out >= 0) {
		rec(o, "copy_file_range",
		    fsm_sys(copy_file_range(in, &in_off, out, &out_off, op->len, 0)));
		rec_fstat(o, out, false);
		x_close(o, out);
	}
	x_close(o, in);
}

static void
x_fallocate(const struct op *op, int root, struct outcome *o)
{
	int fd = x_open(o, root, op->path, O_WRONLY | op->oflags2, 0);

	if (fd < 0)
		return;
	rec(o, "fallocate", fsm_sys(fallocate(fd, op->arg, (off_t)op->off, (off_t)op->len)));
	rec_fstat(o, fd, false);
	x_close(o, fd);
}

/* Use a descriptor that stays open across operations (while its file is renamed, unlinked,
 * replaced, chmod-ed by the operations in between). */
static void
x_fd(struct ctx *c, enum side s, struct outcome *o)
{
	const struct op *op = &c->op;
	int *fd = &c->fds[s][op->slot];

	switch ((enum fd_action)op->variant) {
	case FD_OPEN:
		*fd = x_open(o, c->root[s], op->path, op->oflags, 0);
		if (*fd < 0)
			*fd = -1;
		return;
	case FD_PWRITE:
		rec(o, "pwrite", write_full(*fd, op->buf, op->len, (int64_t)op->off));
		break;
	case FD_PREAD:
		rec(o, "pread", read_capture(*fd, o, op->off, op->len));
		return;
	case FD_FTRUNCATE:
		rec(o, "ftruncate", fsm_sys(ftruncate(*fd, (off_t)op->off)));
		break;
	case FD_FSTAT:
		break;
	case FD_CLOSE:
		x_close(o, *fd);
		*fd = -1;
		return;
	}
	rec_fstat(o, *fd, true);
}

/* Names seen by a getdents64 loop; the buffer is small so that the listing takes several
 * calls and each one resumes at the offset where the last one stopped. */
struct seen_names {
	char **v;
	size_t n, cap;
};

static void
seen_add(struct seen_names *sn, const char *name)
{
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return;
	if (sn->n == sn->cap) {
		sn->cap = sn->cap ? 2 * sn->cap : 32;
		sn->v = fsm_realloc(sn->v, sn->cap * sizeof(*sn->v));
	}
	sn->v[sn->n++] = fsm_strdup(name);
}

/* One getdents64 call: the bytes it returned (0 at the end) or -errno. */
static long
read_some(int fd, struct seen_names *sn)
{
	char buf[512] __attribute__((aligned(8)));
	long n = fsm_sys(syscall(SYS_getdents64, fd, buf, 64)); /* two short names */

	if (n == -EINVAL) /* the next name does not fit in 64 bytes */
		n = fsm_sys(syscall(SYS_getdents64, fd, buf, sizeof(buf)));

	for (long pos = 0; pos < n;) {
		unsigned short reclen;

		memcpy(&reclen, buf + pos + offsetof(struct dirent64, d_reclen), sizeof(reclen));
		seen_add(sn, buf + pos + offsetof(struct dirent64, d_name));
		if (reclen == 0)
			return -EIO;
		pos += reclen;
	}
	return n;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Entries listed twice, and names that existed throughout but were never listed. These are
 * absolute rules: a model that breaks them (tmpfs on Linux 6.18 lists entries twice after an
 * unlink during the listing) is noted and not held against the view. */
static void
rec_listing(enum side s, struct outcome *o, struct seen_names *sn, const struct names *before,
	    const char *victim)
{
	long dups = 0, missing = 0;

	if (sn->n)
		qsort(sn->v, sn->n, sizeof(*sn->v), cmp_str);
	for (size_t i = 1; i < sn->n; i++)
		dups += !strcmp(sn->v[i - 1], sn->v[i]);
	for (size_t i = 0; i < before->n; i++) {
		const char *key = before->v[i].s;

		if (strcmp(key, victim) &&
		    (!sn->n || !bsearch(&key, sn->v, sn->n, sizeof(*sn->v), cmp_str)))
			missing++;
	}
	if (s == SIDE_MODEL && (dups || missing)) {
		fprintf(stderr,
			"fs-model: note: the model's file system listed %ld entries twice and missed "
			"%ld during a changing readdir, ignoring\n",
			dups, missing);
		dups = missing = 0;
	}
	rec(o, "duplicates", dups);
	rec(o, "missing", missing);
}

/* List a directory in small steps, removing an entry (path2) and creating one (name3) after
 * op->len entries: every entry that stays must be listed exactly once. */
static void
x_readdir(const struct op *op, enum side s, int root, struct outcome *o)
{
	struct seen_names sn = { 0 };
	struct names before;
	long r = 1;
	int fd = x_open(o, root, op->path, O_RDONLY | O_DIRECTORY, 0), nfd;

	if (fd < 0)
		return;
	if (rec(o, "list-before", fsm_list_names(fd, &before)) < 0) {
		x_close(o, fd);
		return;
	}
	while (sn.n < op->len && (r = read_some(fd, &sn)) > 0)
		;
	rec(o, "unlink", fsm_sys(unlinkat(fd, op->path2, 0)));
	nfd = (int)rec(
		o, "create",
		fsm_sys(openat(fd, op->name3, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644)));
	if (nfd >= 0)
		o->r[o->n - 1] = close(nfd);
	while (r > 0)
		r = read_some(fd, &sn);
	rec(o, "getdents", r);
	rec_listing(s, o, &sn, &before, op->path2);
	fsm_names_clear(&before);
	for (size_t i = 0; i < sn.n; i++)
		free(sn.v[i]);
	free(sn.v);
	x_close(o, fd);
}

void
fsm_run_side(struct ctx *c, enum side s, struct outcome *o)
{
	const struct op *op = &c->op;
	int root = c->root[s];

	/* The path-only calls (truncate, *xattr) resolve against the working directory. */
	if (fchdir(root) < 0) {
		fprintf(stderr, "fs-model: cannot enter the %s root: %m\n", fsm_side_name(s));
		exit(2);
	}
	switch (op->kind) {
	case OP_CREATE:
		x_create(op, root, o);
		break;
	case OP_WRITE:
		x_write(op, root, o);
		break;
	case OP_APPEND:
		x_append(op, root, o);
		break;
	case OP_TRUNCATE:
		x_truncate(op, root, o);
		break;
	case OP_OTRUNC:
		x_otrunc(op, root, o);
		break;
	case OP_READ:
		x_read(op, root, o);
		break;
	case OP_UNLINK:
		rec(o, "unlink", fsm_sys(unlinkat(root, op->path, 0)));
		break;
	case OP_MKDIR:
		umask(op->umask);
		rec(o, "mkdir", fsm_sys(mkdirat(root, op->path, op->mode)));
		break;
	case OP_RMDIR:
		rec(o, "rmdir", fsm_sys(unlinkat(root, op->path, AT_REMOVEDIR)));
		break;
	case OP_RENAME:
		x_rename(op, root, o);
		break;
	case OP_SYMLINK:
		rec(o, "symlink", fsm_sys(symlinkat(op->path2, root, op->path)));
		break;
	case OP_LINK:
		rec(o, "link", fsm_sys(linkat(root, op->path, root, op->path2, 0)));
		break;
	case OP_CHMOD:
		rec(o, "chmod", fsm_sys(fchmodat(root, op->path, op->mode, 0)));
		break;
	case OP_UTIMENS:
		x_utimens(op, root, o);
		break;
	case OP_SETXATTR:
	case OP_RMXATTR:
	case OP_GETXATTR:
		x_xattr(op, o);
		break;
	case OP_OPEN_UNLINK:
		x_open_unlink(op, root, o);
		break;
	case OP_MKFIFO:
		umask(op->umask);
		rec(o, "mkfifo", fsm_sys(mkfifoat(root, op->path, op->mode)));
		break;
	case OP_STAT:
		x_stat(c, op, root, o);
		break;
	case OP_MMAP:
		x_mmap(op, root, o);
		break;
	case OP_COPY_RANGE:
		x_copy_range(op, root, o);
		break;
	case OP_FALLOCATE:
		x_fallocate(op, root, o);
		break;
	case OP_FD:
		x_fd(c, s, o);
		break;
	case OP_READDIR:
		x_readdir(op, s, root, o);
		break;
	case OP_COUNT:
		assert(false);
		break;
	}
}
