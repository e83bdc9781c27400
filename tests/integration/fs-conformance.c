/* SPDX-License-Identifier: MIT */
/*
 * fs-conformance: syscall-level conformance checks of a filesystem (the eos session view, and
 * any native filesystem as the reference), printed as TAP. See usage() for the options.
 *
 * It creates DIR/NAME and runs each group of checks in its own subdirectory there; every check is
 * one TAP line asserting exact results and errno values, and a failure is followed by "# " lines
 * naming the call, the path and the errno. The work directory is left in place (except the big
 * file and the many-entry directory) so that a wrapper can compare it across a remount. The
 * "lower" group works on files of DIR itself (the base tree) named by the --lower-* options.
 * Exit status: 0 when every check passed, 1 when one failed, 2 on a usage error.
 */
#include "tests/integration/fs-conformance.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

enum {
	MIB = 1024 * 1024,
	APPEND_WRITERS = 4,
	APPEND_RECORDS = 1000,
	APPEND_RECORD = 64,
	RD_OLD = 300,
	RD_NEW = 100,
	CHILD_MISMATCH = 250,
	CHILD_BROKEN = 251,
};

enum group_flags {
	GROUP_WRITE = 1 << 0,	  /* needs the writable work directory */
	GROUP_READ_ONLY = 1 << 1, /* runs only with --read-only */
	GROUP_LOWER = 1 << 2,	  /* runs on DIR itself, in both modes */
};

typedef int (*child_fn)(void *arg);

int tap_count;
int tap_failed;
static char notes[8192];
static size_t notes_len;
static char where[512] = ".";

static const char write_marker[] = "eos-conformance appended\n";
static const char link_marker[] = "eos-conformance via link\n";

/* --- TAP and check steps ---------------------------------------------------------------- */

static const char *
ename(int e)
{
	const char *s = strerrorname_np(e);

	return s ? s : "unknown errno";
}

__attribute__((format(printf, 1, 2))) static void
note(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (char *c = line; *c; c++)
		if (*c == '\n')
			*c = '?';
	n = snprintf(notes + notes_len, sizeof(notes) - notes_len, "# %s\n", line);
	if (n > 0)
		notes_len = notes_len + (size_t)n >= sizeof(notes) ? sizeof(notes) - 1
								   : notes_len + (size_t)n;
}

__attribute__((format(printf, 1, 2))) static void
info(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
}

/* One TAP line; a failure prints the notes gathered by the steps since the last line. */
__attribute__((format(printf, 2, 3))) bool
tap(bool pass, const char *fmt, ...)
{
	char desc[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	tap_count++;
	if (!pass)
		tap_failed++;
	printf("%sok %d - %s\n", pass ? "" : "not ", tap_count, desc);
	if (!pass)
		fputs(notes, stdout);
	notes_len = 0;
	notes[0] = '\0';
	fflush(stdout);
	return pass;
}

void
tap_skip(const char *desc, const char *reason)
{
	tap_count++;
	printf("ok %d - %s # SKIP %s\n", tap_count, desc, reason);
	notes_len = 0;
	notes[0] = '\0';
	fflush(stdout);
}

/* The call returned r >= 0. */
bool
sc(long r, const char *op, const char *path)
{
	int e = errno;

	if (r >= 0)
		return true;
	note("%s '%s/%s' failed: %s (%s)", op, where, path, ename(e), strerror(e));
	return false;
}

/* The call failed with want (or alt). */
bool
se2(long r, int want, int alt, const char *op, const char *path)
{
	int e = errno;

	if (r < 0 && (e == want || e == alt))
		return true;
	if (r >= 0)
		note("%s '%s/%s' succeeded, expected %s", op, where, path, ename(want));
	else
		note("%s '%s/%s' failed with %s (%s), expected %s", op, where, path, ename(e),
		     strerror(e), ename(want));
	return false;
}

bool
se(long r, int want, const char *op, const char *path)
{
	return se2(r, want, want, op, path);
}

bool
eq(long long got, long long want, const char *what, const char *path)
{
	if (got == want)
		return true;
	note("%s of '%s/%s': got %lld, expected %lld", what, where, path, got, want);
	return false;
}

bool
eqo(unsigned got, unsigned want, const char *what, const char *path)
{
	if (got == want)
		return true;
	note("%s of '%s/%s': got 0%o, expected 0%o", what, where, path, got, want);
	return false;
}

/* A child's result (0 or an errno) is want (or alt). */
static bool
eq_errno(int got, int want, int alt, const char *what, const char *path)
{
	if (got == want || got == alt)
		return true;
	if (got == CHILD_MISMATCH || got == CHILD_BROKEN)
		note("%s '%s/%s': the child saw a wrong result", what, where, path);
	else
		note("%s '%s/%s': got %s, expected %s", what, where, path,
		     got ? ename(got) : "success", want ? ename(want) : "success");
	return false;
}

bool
truth(bool cond, const char *what, const char *path)
{
	if (!cond)
		note("%s: not true for '%s/%s'", what, where, path);
	return cond;
}

/* --- file helpers --------------------------------------------------------------------------- */

bool
write_all(int fd, const void *buf, size_t len, const char *path)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (!sc(n, "write", path))
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

bool
put_mode(int dfd, const char *path, const void *data, size_t len, mode_t mode)
{
	cleanup_close int fd = openat(dfd, path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, mode);

	return sc(fd, "create", path) && write_all(fd, data, len, path);
}

bool
put(int dfd, const char *path, const char *s)
{
	return put_mode(dfd, path, s, strlen(s), 0644);
}

/* The file at fd holds exactly want[0..len). */
static bool
fd_has(int fd, const void *want, size_t len, const char *path)
{
	cleanup_free char *buf = malloc(len + 1);
	size_t got = 0, i;

	if (!buf)
		return truth(false, "memory", path);
	while (got < len + 1) {
		ssize_t n = pread(fd, buf + got, len + 1 - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (!sc(n, "read", path))
			return false;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (!eq((long long)got, (long long)len, "bytes read", path))
		return false;
	for (i = 0; i < len && buf[i] == ((const char *)want)[i]; i++)
		;
	if (i < len)
		note("content of '%s/%s' differs at byte %zu", where, path, i);
	return i == len;
}

static bool
has(int dfd, const char *path, const void *want, size_t len)
{
	cleanup_close int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);

	return sc(fd, "open", path) && fd_has(fd, want, len, path);
}

bool
has_str(int dfd, const char *path, const char *s)
{
	return has(dfd, path, s, strlen(s));
}

bool
lst(int dfd, const char *path, struct stat *st)
{
	return sc(fstatat(dfd, path, st, AT_SYMLINK_NOFOLLOW), "lstat", path);
}

static bool
gone(int dfd, const char *path)
{
	struct stat st;

	return se(fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW), ENOENT, "lstat", path);
}

/* openat must fail with want (or alt); an unexpected descriptor is closed. */
bool
open_fails(int dfd, const char *path, int flags, int want, int alt)
{
	int fd = openat(dfd, path, flags | O_CLOEXEC, 0644);
	bool r = se2(fd, want, alt, "open", path);

	if (fd >= 0)
		close(fd);
	return r;
}

static bool
nlink_is(int dfd, const char *path, long want)
{
	struct stat st;

	return lst(dfd, path, &st) && eq((long long)st.st_nlink, want, "st_nlink", path);
}

static long long
ino_of(int dfd, const char *path)
{
	struct stat st;

	return lst(dfd, path, &st) ? (long long)st.st_ino : -1;
}

int
wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return CHILD_BROKEN;
	return WIFEXITED(status) ? WEXITSTATUS(status) : CHILD_BROKEN;
}

/* Run fn in a forked child and return its result: 0, an errno, or CHILD_*. */
static int
in_child(child_fn fn, void *arg)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return CHILD_BROKEN;
	if (pid == 0)
		_exit(fn(arg) & 0xff);
	return wait_child(pid);
}

static uint64_t
fnv(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static uint64_t
mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* snprintf for short strings; false (and the string cut) when it did not fit. */
__attribute__((format(printf, 3, 4))) static bool
fmt(char *buf, size_t cap, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, cap, f, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < cap;
}

/* The path of name in the group's directory, for calls without an *at() form. */
const char *
path_in(struct fsc *t, const char *name)
{
	fmt(t->pathbuf, sizeof(t->pathbuf), "%s/%s", t->gpath, name);
	return t->pathbuf;
}

/* --- basic file I/O ----------------------------------------------------------------------------
 */

static void
g_basic(struct fsc *t)
{
	cleanup_close int fd = openat(t->g, "f", O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
	char buf[64] = { 0 };
	struct stat st;

	tap(sc(fd, "create", "f"), "create a new file with O_CREAT|O_EXCL");
	tap(write_all(fd, "hello world", 11, "f") && sc(pwrite(fd, "W", 1, 6), "pwrite", "f"),
	    "write and pwrite into the new file");
	tap(eq(pread(fd, buf, sizeof(buf), 0), 11, "pread length", "f") &&
		    truth(memcmp(buf, "hello World", 11) == 0, "pread content", "f"),
	    "pread reads back what was written");
	tap(eq(read(fd, buf, sizeof(buf)), 0, "read at end of file", "f"), "read at EOF returns 0");
	tap(sc(close(TAKE_FD(fd)), "close", "f"), "close succeeds");
	tap(has_str(t->g, "f", "hello World"), "reopened file has the exact content");
	fd = openat(t->g, "f", O_RDONLY | O_CLOEXEC);
	tap(se(write(fd, "x", 1), EBADF, "write on O_RDONLY", "f"),
	    "write on a read-only fd -> EBADF");
	tap(sc(fstat(fd, &st), "fstat", "f") && eq(st.st_size, 11, "st_size", "f") &&
		    truth(S_ISREG(st.st_mode), "S_ISREG", "f"),
	    "fstat reports a regular file of the written size");
	tap(open_fails(t->g, "missing", O_RDONLY, ENOENT, ENOENT),
	    "open of a missing file -> ENOENT");
	tap(open_fails(t->g, "f", O_CREAT | O_EXCL | O_WRONLY, EEXIST, EEXIST),
	    "O_CREAT|O_EXCL on an existing file -> EEXIST");
	tap(open_fails(t->g, "f", O_RDONLY | O_DIRECTORY, ENOTDIR, ENOTDIR),
	    "O_DIRECTORY on a file -> ENOTDIR");
	tap(open_fails(t->g, "f/x", O_RDONLY, ENOTDIR, ENOTDIR),
	    "a path through a file -> ENOTDIR");
	tap(open_fails(t->g, ".", O_WRONLY, EISDIR, EISDIR),
	    "open of a directory for write -> EISDIR");
	tap(open_fails(t->g, "missing-dir/f", O_CREAT | O_WRONLY, ENOENT, ENOENT),
	    "create in a missing directory -> ENOENT");
	close(TAKE_FD(fd));
	fd = openat(t->g, "f", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	tap(sc(fd, "open", "f") && has_str(t->g, "f", "hello World"),
	    "O_CREAT without O_EXCL keeps an existing file's content");
	close(TAKE_FD(fd));
	fd = openat(t->g, "f", O_TRUNC | O_WRONLY | O_CLOEXEC);
	tap(sc(fd, "open O_TRUNC", "f") && sc(fstat(fd, &st), "fstat", "f") &&
		    eq(st.st_size, 0, "st_size", "f") && has_str(t->g, "f", ""),
	    "O_TRUNC empties the file");
	tap(sc(pwrite(fd, "z", 1, 9999), "pwrite", "f") && sc(fstat(fd, &st), "fstat", "f") &&
		    eq(st.st_size, 10000, "st_size", "f"),
	    "pwrite past the end extends the size");
	tap(eq(lseek(fd, 0, SEEK_END), 10000, "lseek SEEK_END", "f"),
	    "lseek SEEK_END gives the size");
}

/* --- O_APPEND ------------------------------------------------------------------------------- */

static void
append_writer(int dfd, int w)
{
	char rec[APPEND_RECORD];
	int fd = openat(dfd, "log", O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0)
		_exit(CHILD_BROKEN);
	for (int r = 0; r < APPEND_RECORDS; r++) {
		memset(rec, 'a' + w, sizeof(rec));
		fmt(rec, sizeof(rec), "w%d r%06d ", w, r);
		rec[strlen(rec)] = ' ';
		rec[APPEND_RECORD - 1] = '\n';
		if (write(fd, rec, sizeof(rec)) != (ssize_t)sizeof(rec))
			_exit(CHILD_BROKEN);
	}
	_exit(0);
}

/* Every record is whole and each writer's records appear in order, all of them. */
static bool
append_records_ok(const char *buf, size_t len)
{
	int next[APPEND_WRITERS] = { 0 };

	for (size_t off = 0; off + APPEND_RECORD <= len; off += APPEND_RECORD) {
		char rec[APPEND_RECORD + 1];
		int w = -1, r = -1, n = 0;

		memcpy(rec, buf + off, APPEND_RECORD);
		rec[APPEND_RECORD] = '\0';

		if (sscanf(rec, "w%d r%d %n", &w, &r, &n) != 2 || w < 0 || w >= APPEND_WRITERS ||
		    r != next[w] || rec[APPEND_RECORD - 1] != '\n') {
			note("torn or misplaced record at offset %zu", off);
			return false;
		}
		for (int i = n; i < APPEND_RECORD - 1; i++)
			if (rec[i] != 'a' + w) {
				note("torn record at offset %zu (byte %d)", off, i);
				return false;
			}
		next[w]++;
	}
	return true;
}

static void
g_append(struct fsc *t)
{
	cleanup_close int fd = openat(t->g, "a", O_CREAT | O_RDWR | O_APPEND | O_CLOEXEC, 0644);
	const size_t total = (size_t)APPEND_WRITERS * APPEND_RECORDS * APPEND_RECORD;
	cleanup_free char *buf = malloc(total + 1);
	pid_t pids[APPEND_WRITERS];
	int bad = 0;
	ssize_t n;

	tap(sc(fd, "create", "a") && write_all(fd, "012", 3, "a") &&
		    sc(lseek(fd, 0, SEEK_SET), "lseek", "a") && write_all(fd, "345", 3, "a") &&
		    has_str(t->g, "a", "012345"),
	    "O_APPEND writes at the end even after lseek to 0");
	tap(put(t->g, "log", ""), "create the shared log file");
	fflush(stdout);
	for (int w = 0; w < APPEND_WRITERS; w++) {
		pids[w] = fork();
		if (pids[w] == 0)
			append_writer(t->g, w);
	}
	for (int w = 0; w < APPEND_WRITERS; w++)
		bad += pids[w] < 0 || wait_child(pids[w]) != 0;
	tap(eq(bad, 0, "failed writers", "log"),
	    "%d O_APPEND writer processes write %d records each", APPEND_WRITERS, APPEND_RECORDS);
	close(TAKE_FD(fd));
	fd = openat(t->g, "log", O_RDONLY | O_CLOEXEC);
	n = buf && fd >= 0 ? pread(fd, buf, total + 1, 0) : -1;
	tap(sc(n, "read", "log") && eq(n, (long long)total, "size", "log"),
	    "the concurrent O_APPEND log has the exact total size");
	tap(n == (ssize_t)total && append_records_ok(buf, total),
	    "no O_APPEND record is torn, lost or reordered");
}

/* --- sparse files, truncate, fallocate, copy_file_range ----------------------------------------
 */

static bool
zeros_at(int fd, off_t off, size_t len, const char *path)
{
	char buf[4096];

	while (len > 0) {
		size_t chunk = len < sizeof(buf) ? len : sizeof(buf);
		ssize_t n = pread(fd, buf, chunk, off);

		if (!sc(n, "read", path) || !eq(n, (long long)chunk, "bytes read", path))
			return false;
		for (size_t i = 0; i < chunk; i++)
			if (buf[i]) {
				note("byte %lld of '%s/%s' is not zero",
				     (long long)off + (long long)i, where, path);
				return false;
			}
		off += (off_t)chunk;
		len -= chunk;
	}
	return true;
}

static void
g_sparse(struct fsc *t)
{
	cleanup_close int fd = openat(t->g, "s", O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	char data[4096];
	struct stat st;
	const off_t far = MIB, size = MIB + 4096;

	memset(data, 'd', sizeof(data));
	tap(sc(fd, "create", "s") && sc(pwrite(fd, data, 4096, 0), "pwrite", "s") &&
		    sc(pwrite(fd, data, 4096, far), "pwrite", "s"),
	    "write 4 KiB at 0 and at 1 MiB");
	tap(sc(fstat(fd, &st), "fstat", "s") && eq(st.st_size, size, "st_size", "s"),
	    "the sparse file has the right size");
	tap(zeros_at(fd, 4096, (size_t)(far - 4096), "s"), "the hole reads as zeros");
	tap(eq(lseek(fd, 0, SEEK_DATA), 0, "SEEK_DATA from 0", "s") &&
		    eq(lseek(fd, 0, SEEK_HOLE), 4096, "SEEK_HOLE from 0", "s"),
	    "SEEK_DATA/SEEK_HOLE find the first extent");
	tap(eq(lseek(fd, 4096, SEEK_DATA), far, "SEEK_DATA from 4096", "s") &&
		    eq(lseek(fd, far, SEEK_HOLE), size, "SEEK_HOLE from 1 MiB", "s"),
	    "SEEK_DATA skips the hole, SEEK_HOLE finds the implicit hole at EOF");
	tap(se(lseek(fd, size, SEEK_DATA), ENXIO, "SEEK_DATA at EOF", "s"),
	    "SEEK_DATA at EOF -> ENXIO");
}

static void
g_truncate(struct fsc *t)
{
	cleanup_close int fd = openat(t->g, "t", O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	struct stat st;

	tap(sc(fd, "create", "t") && write_all(fd, "0123456789abcdef", 16, "t") &&
		    sc(ftruncate(fd, 100000), "ftruncate", "t") &&
		    sc(fstat(fd, &st), "fstat", "t") && eq(st.st_size, 100000, "st_size", "t") &&
		    zeros_at(fd, 16, 100000 - 16, "t"),
	    "ftruncate grows the file with zeros");
	tap(sc(ftruncate(fd, 10), "ftruncate", "t") && has_str(t->g, "t", "0123456789"),
	    "ftruncate shrinks the file");
	tap(sc(ftruncate(fd, 20), "ftruncate", "t") && zeros_at(fd, 10, 10, "t") &&
		    has(t->g, "t", "0123456789\0\0\0\0\0\0\0\0\0\0", 20),
	    "growing after a shrink reads zeros, not the old bytes");
	tap(sc(truncate(path_in(t, "t"), 5), "truncate", "t") && has_str(t->g, "t", "01234"),
	    "truncate by path shrinks the file");
}

static void
g_fallocate(struct fsc *t)
{
	cleanup_close int fd = openat(t->g, "fa", O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	struct stat st;

	tap(sc(fd, "create", "fa") && sc(fallocate(fd, 0, 0, MIB), "fallocate", "fa") &&
		    sc(fstat(fd, &st), "fstat", "fa") && eq(st.st_size, MIB, "st_size", "fa") &&
		    zeros_at(fd, 0, MIB, "fa"),
	    "fallocate mode 0 grows the size and reads zeros");
	tap(sc(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 2 * MIB), "fallocate KEEP_SIZE", "fa") &&
		    sc(fstat(fd, &st), "fstat", "fa") && eq(st.st_size, MIB, "st_size", "fa") &&
		    truth(st.st_blocks * 512LL >= 2LL * MIB, "st_blocks covers 2 MiB", "fa"),
	    "fallocate FALLOC_FL_KEEP_SIZE allocates without changing the size");
	tap(sc(pwrite(fd, "xxxxxxxx", 8, 4096), "pwrite", "fa") &&
		    sc(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 8192),
		       "fallocate PUNCH_HOLE", "fa") &&
		    zeros_at(fd, 0, 8192, "fa") && sc(fstat(fd, &st), "fstat", "fa") &&
		    eq(st.st_size, MIB, "st_size", "fa"),
	    "fallocate FALLOC_FL_PUNCH_HOLE zeroes the range and keeps the size");
}

static void
g_copy(struct fsc *t)
{
	enum {
		LEN = 300000
	};
	cleanup_free char *data = malloc(LEN);
	cleanup_free char *want = malloc(105000);
	cleanup_close int in = -1;
	cleanup_close int out = -1;
	loff_t off_in = 1000, off_out = 0;
	ssize_t n = -1;

	for (int i = 0; data && i < LEN; i++)
		data[i] = (char)mix64((uint64_t)i);
	tap(data && put_mode(t->g, "src", data, LEN, 0644), "create the copy source");
	in = openat(t->g, "src", O_RDONLY | O_CLOEXEC);
	out = openat(t->g, "dst", O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	if (in >= 0 && out >= 0)
		n = copy_file_range(in, &off_in, out, &off_out, 100000, 0);
	tap(sc(n, "copy_file_range", "dst") && eq(n, 100000, "bytes copied", "dst") &&
		    eq(off_in, 101000, "off_in", "src") && eq(off_out, 100000, "off_out", "dst") &&
		    has(t->g, "dst", data + 1000, 100000),
	    "copy_file_range with offsets copies the exact range");
	n = -1;
	if (in >= 0 && out >= 0 && lseek(in, LEN - 5000, SEEK_SET) >= 0 &&
	    lseek(out, 100000, SEEK_SET) >= 0)
		n = copy_file_range(in, NULL, out, NULL, 100000, 0);
	if (want) {
		memcpy(want, data + 1000, 100000);
		memcpy(want + 100000, data + LEN - 5000, 5000);
	}
	tap(sc(n, "copy_file_range", "dst") && eq(n, 5000, "bytes copied", "dst") &&
		    eq(lseek(in, 0, SEEK_CUR), LEN, "source position", "src") &&
		    eq(lseek(out, 0, SEEK_CUR), 105000, "destination position", "dst") && want &&
		    fd_has(out, want, 105000, "dst"),
	    "copy_file_range with file positions stops at EOF and moves both positions");
	tap(eq(copy_file_range(in, NULL, out, NULL, 100, 0), 0, "bytes copied at EOF", "dst"),
	    "copy_file_range at EOF returns 0");
}

static void
g_sync(struct fsc *t)
{
	cleanup_close int fd = openat(t->g, "y", O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	cleanup_close int dfd = openat(t->g, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	tap(sc(fd, "create", "y") && write_all(fd, "sync me", 7, "y") &&
		    sc(fsync(fd), "fsync", "y"),
	    "fsync of a written file");
	tap(write_all(fd, "!", 1, "y") && sc(fdatasync(fd), "fdatasync", "y"),
	    "fdatasync of a written file");
	tap(sc(dfd, "open", ".") && sc(fsync(dfd), "fsync", "."), "fsync of a directory fd");
	tap(sc(fdatasync(dfd), "fdatasync", "."), "fdatasync of a directory fd");
	tap(sc(syncfs(fd), "syncfs", "y"), "syncfs");
	tap(has_str(t->g, "y", "sync me!"), "the synced file has its content");
}

static void
g_statfs(struct fsc *t)
{
	cleanup_close int fd = openat(t->g, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct statfs sf;
	struct statvfs sv;

	tap(sc(fstatfs(t->g, &sf), "fstatfs", ".") && truth(sf.f_bsize > 0, "f_bsize > 0", ".") &&
		    truth(sf.f_blocks > 0, "f_blocks > 0", "."),
	    "fstatfs succeeds with a block size and a block count");
	tap(sc(fstatvfs(fd, &sv), "fstatvfs", ".") &&
		    truth(sv.f_namemax >= 255, "f_namemax", ".") &&
		    truth(!(sv.f_flag & ST_RDONLY), "not ST_RDONLY", "."),
	    "fstatvfs succeeds: names of 255 bytes, writable");
	tap(sc(statvfs(path_in(t, "."), &sv), "statvfs", ".") &&
		    truth(sv.f_frsize > 0, "f_frsize", "."),
	    "statvfs by path succeeds");
}

/* --- directories --------------------------------------------------------------------------- */

static void
g_dirs(struct fsc *t)
{
	struct stat st;

	tap(sc(mkdirat(t->g, "d", 0750), "mkdir", "d") && lst(t->g, "d", &st) &&
		    truth(S_ISDIR(st.st_mode), "S_ISDIR", "d") &&
		    eqo(st.st_mode & 07777, 0750, "mode", "d"),
	    "mkdir creates a directory with the given mode");
	tap(se(mkdirat(t->g, "d", 0755), EEXIST, "mkdir", "d"),
	    "mkdir of an existing name -> EEXIST");
	tap(put(t->g, "file", "x") && se(mkdirat(t->g, "file", 0755), EEXIST, "mkdir", "file"),
	    "mkdir over a file -> EEXIST");
	tap(se(mkdirat(t->g, "file/sub", 0755), ENOTDIR, "mkdir", "file/sub"),
	    "mkdir under a file -> ENOTDIR");
	tap(se(mkdirat(t->g, "nope/sub", 0755), ENOENT, "mkdir", "nope/sub"),
	    "mkdir in a missing parent -> ENOENT");
	tap(put(t->g, "d/inner", "y") &&
		    se(unlinkat(t->g, "d", AT_REMOVEDIR), ENOTEMPTY, "rmdir", "d"),
	    "rmdir of a non-empty directory -> ENOTEMPTY");
	tap(se(unlinkat(t->g, "file", AT_REMOVEDIR), ENOTDIR, "rmdir", "file"),
	    "rmdir of a file -> ENOTDIR");
	tap(se(unlinkat(t->g, "nope", AT_REMOVEDIR), ENOENT, "rmdir", "nope"),
	    "rmdir of a missing name -> ENOENT");
	tap(se(unlinkat(t->g, "d/.", AT_REMOVEDIR), EINVAL, "rmdir", "d/."),
	    "rmdir of '.' -> EINVAL");
	tap(sc(unlinkat(t->g, "d/inner", 0), "unlink", "d/inner") &&
		    sc(unlinkat(t->g, "d", AT_REMOVEDIR), "rmdir", "d") && gone(t->g, "d"),
	    "rmdir of an emptied directory");
}

static void
g_nlink(struct fsc *t)
{
	tap(sc(mkdirat(t->g, "p", 0755), "mkdir", "p") && nlink_is(t->g, "p", 2),
	    "an empty directory has nlink 2");
	tap(sc(mkdirat(t->g, "p/a", 0755), "mkdir", "p/a") &&
		    sc(mkdirat(t->g, "p/b", 0755), "mkdir", "p/b") &&
		    sc(mkdirat(t->g, "p/c", 0755), "mkdir", "p/c") && nlink_is(t->g, "p", 5),
	    "nlink is 2 + subdirectories after mkdir");
	tap(put(t->g, "p/file", "f") && sc(symlinkat("a", t->g, "p/sym"), "symlink", "p/sym") &&
		    nlink_is(t->g, "p", 5),
	    "files and symlinks do not count in a directory's nlink");
	tap(sc(unlinkat(t->g, "p/c", AT_REMOVEDIR), "rmdir", "p/c") && nlink_is(t->g, "p", 4),
	    "rmdir decrements the parent's nlink");
	tap(sc(mkdirat(t->g, "q", 0755), "mkdir", "q") &&
		    sc(renameat(t->g, "p/b", t->g, "q/b"), "rename", "p/b") &&
		    nlink_is(t->g, "p", 3) && nlink_is(t->g, "q", 3),
	    "renaming a subdirectory moves one link from the old parent to the new");
	tap(sc(renameat(t->g, "p/a", t->g, "p/a2"), "rename", "p/a") && nlink_is(t->g, "p", 3),
	    "renaming a subdirectory within its parent keeps nlink");
	tap(sc(renameat(t->g, "p/file", t->g, "q/file"), "rename", "p/file") &&
		    nlink_is(t->g, "p", 3) && nlink_is(t->g, "q", 3),
	    "renaming a file keeps both directories' nlink");
}

static void
g_unlink(struct fsc *t)
{
	tap(put(t->g, "u", "x") && sc(unlinkat(t->g, "u", 0), "unlink", "u") && gone(t->g, "u"),
	    "unlink removes the name");
	tap(open_fails(t->g, "u", O_RDONLY, ENOENT, ENOENT), "open after unlink -> ENOENT");
	tap(se(unlinkat(t->g, "u", 0), ENOENT, "unlink", "u"),
	    "unlink of a missing name -> ENOENT");
	tap(sc(mkdirat(t->g, "dir", 0755), "mkdir", "dir") &&
		    se(unlinkat(t->g, "dir", 0), EISDIR, "unlink", "dir"),
	    "unlink of a directory -> EISDIR");
	tap(put(t->g, "f", "x") && se(unlinkat(t->g, "f/", 0), ENOTDIR, "unlink", "f/"),
	    "unlink of a file with a trailing slash -> ENOTDIR");
	tap(sc(unlinkat(t->g, "f", 0), "unlink", "f") && put(t->g, "f", "again") &&
		    has_str(t->g, "f", "again"),
	    "a name can be created again after unlink");
}

/* --- rename ------------------------------------------------------------------------------- */

static void
rename_files(struct fsc *t)
{
	long long ino_a, ino_c;

	put(t->g, "a", "A");
	ino_a = ino_of(t->g, "a");
	tap(sc(renameat(t->g, "a", t->g, "b"), "rename", "a") && gone(t->g, "a") &&
		    has_str(t->g, "b", "A") && eq(ino_of(t->g, "b"), ino_a, "st_ino", "b"),
	    "rename a file: old name gone, content and inode kept");
	put(t->g, "c", "C");
	ino_c = ino_of(t->g, "c");
	tap(sc(renameat(t->g, "c", t->g, "b"), "rename", "c") && gone(t->g, "c") &&
		    has_str(t->g, "b", "C") && eq(ino_of(t->g, "b"), ino_c, "st_ino", "b"),
	    "rename over an existing file replaces it");
	tap(sc(renameat(t->g, "b", t->g, "b"), "rename", "b") && has_str(t->g, "b", "C"),
	    "rename of a file onto itself is a no-op");
	tap(sc(linkat(t->g, "b", t->g, "b2", 0), "link", "b2") &&
		    sc(renameat(t->g, "b", t->g, "b2"), "rename", "b") && has_str(t->g, "b", "C") &&
		    has_str(t->g, "b2", "C"),
	    "rename of a hard link onto its other name leaves both");
	tap(put(t->g, "n1", "N") &&
		    se(renameat2(t->g, "n1", t->g, "b", RENAME_NOREPLACE), EEXIST, "renameat2",
		       "n1") &&
		    has_str(t->g, "n1", "N") && has_str(t->g, "b", "C"),
	    "renameat2 RENAME_NOREPLACE onto an existing name -> EEXIST, both kept");
	tap(sc(renameat2(t->g, "n1", t->g, "n2", RENAME_NOREPLACE), "renameat2", "n1") &&
		    gone(t->g, "n1") && has_str(t->g, "n2", "N"),
	    "renameat2 RENAME_NOREPLACE onto a free name renames");
}

static void
rename_dirs(struct fsc *t)
{
	struct stat st, up;

	tap(sc(mkdirat(t->g, "d1", 0755), "mkdir", "d1") && put(t->g, "d1/x", "X") &&
		    sc(mkdirat(t->g, "d2", 0755), "mkdir", "d2") &&
		    sc(renameat(t->g, "d1", t->g, "d2"), "rename", "d1") && gone(t->g, "d1") &&
		    has_str(t->g, "d2/x", "X"),
	    "rename a directory over an empty directory");
	tap(sc(mkdirat(t->g, "d3", 0755), "mkdir", "d3") &&
		    se(renameat(t->g, "d3", t->g, "d2"), ENOTEMPTY, "rename", "d3") &&
		    has_str(t->g, "d2/x", "X"),
	    "rename a directory over a non-empty directory -> ENOTEMPTY");
	tap(put(t->g, "f", "F") && se(renameat(t->g, "f", t->g, "d3"), EISDIR, "rename", "f"),
	    "rename a file over a directory -> EISDIR");
	tap(se(renameat(t->g, "d3", t->g, "f"), ENOTDIR, "rename", "d3"),
	    "rename a directory over a file -> ENOTDIR");
	tap(sc(mkdirat(t->g, "d3/sub", 0755), "mkdir", "d3/sub") &&
		    se(renameat(t->g, "d3", t->g, "d3/sub/inside"), EINVAL, "rename", "d3"),
	    "rename a directory into its own subdirectory -> EINVAL");
	tap(se(renameat(t->g, "missing", t->g, "other"), ENOENT, "rename", "missing"),
	    "rename of a missing name -> ENOENT");
	tap(sc(renameat(t->g, "d2", t->g, "d3/moved"), "rename", "d2") &&
		    has_str(t->g, "d3/moved/x", "X") && lst(t->g, "d3", &st) &&
		    lst(t->g, "d3/moved/..", &up) &&
		    eq((long long)up.st_ino, (long long)st.st_ino, "st_ino of ..", "d3/moved/.."),
	    "a directory renamed into another has '..' pointing to its new parent");
}

static void
rename_exchange(struct fsc *t)
{
	long long ino_f, ino_d;
	struct stat st;

	put(t->g, "xf", "file side");
	mkdirat(t->g, "xd", 0755);
	put(t->g, "xd/inner", "dir side");
	ino_f = ino_of(t->g, "xf");
	ino_d = ino_of(t->g, "xd");
	tap(sc(renameat2(t->g, "xf", t->g, "xd", RENAME_EXCHANGE), "renameat2 EXCHANGE", "xf") &&
		    lst(t->g, "xf", &st) && truth(S_ISDIR(st.st_mode), "S_ISDIR", "xf") &&
		    eq((long long)st.st_ino, ino_d, "st_ino", "xf") &&
		    has_str(t->g, "xf/inner", "dir side") && has_str(t->g, "xd", "file side") &&
		    eq(ino_of(t->g, "xd"), ino_f, "st_ino", "xd"),
	    "renameat2 RENAME_EXCHANGE swaps a file and a directory");
	tap(se(renameat2(t->g, "xd", t->g, "nothing", RENAME_EXCHANGE), ENOENT, "renameat2", "xd"),
	    "RENAME_EXCHANGE with a missing target -> ENOENT");
	tap(se(renameat2(t->g, "xd", t->g, "xf", RENAME_EXCHANGE | RENAME_NOREPLACE), EINVAL,
	       "renameat2", "xd"),
	    "RENAME_EXCHANGE|RENAME_NOREPLACE -> EINVAL");
}

static void
g_rename(struct fsc *t)
{
	rename_files(t);
	rename_dirs(t);
	rename_exchange(t);
}

/* --- symlinks, names, hard links ------------------------------------------------------------ */

static void
g_symlink(struct fsc *t)
{
	char buf[2048], target[1001];
	struct stat st;
	ssize_t n;

	tap(sc(symlinkat("target/path/xyz", t->g, "s1"), "symlink", "s1") && lst(t->g, "s1", &st) &&
		    truth(S_ISLNK(st.st_mode), "S_ISLNK", "s1") &&
		    eq(st.st_size, 15, "st_size", "s1"),
	    "symlink creates a link; lstat sees it with the target's length");
	n = readlinkat(t->g, "s1", buf, sizeof(buf));
	tap(sc(n, "readlink", "s1") && eq(n, 15, "readlink length", "s1") &&
		    truth(memcmp(buf, "target/path/xyz", 15) == 0, "readlink target", "s1"),
	    "readlink returns the exact target");
	tap(open_fails(t->g, "s1", O_RDONLY, ENOENT, ENOENT),
	    "open of a dangling symlink -> ENOENT");
	tap(open_fails(t->g, "s1", O_CREAT | O_EXCL | O_WRONLY, EEXIST, EEXIST),
	    "O_CREAT|O_EXCL on a dangling symlink -> EEXIST");
	tap(put(t->g, "f", "through the link") && sc(symlinkat("f", t->g, "s2"), "symlink", "s2") &&
		    has_str(t->g, "s2", "through the link") &&
		    sc(fstatat(t->g, "s2", &st, 0), "stat", "s2") &&
		    eq((long long)st.st_ino, ino_of(t->g, "f"), "st_ino", "s2"),
	    "open and stat follow a symlink to its file");
	tap(open_fails(t->g, "s2", O_RDONLY | O_NOFOLLOW, ELOOP, ELOOP),
	    "O_NOFOLLOW on a symlink -> ELOOP");
	tap(sc(symlinkat("loop2", t->g, "loop1"), "symlink", "loop1") &&
		    sc(symlinkat("loop1", t->g, "loop2"), "symlink", "loop2") &&
		    open_fails(t->g, "loop1", O_RDONLY, ELOOP, ELOOP),
	    "open of a symlink loop -> ELOOP");
	tap(se(readlinkat(t->g, "f", buf, sizeof(buf)), EINVAL, "readlink", "f"),
	    "readlink of a regular file -> EINVAL");
	tap(se(symlinkat("x", t->g, "f"), EEXIST, "symlink", "f"),
	    "symlink over an existing name -> EEXIST");
	memset(target, 'T', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	n = -1;
	if (sc(symlinkat(target, t->g, "long"), "symlink", "long"))
		n = readlinkat(t->g, "long", buf, sizeof(buf));
	tap(eq(n, 1000, "readlink length", "long") &&
		    truth(memcmp(buf, target, 1000) == 0, "readlink target", "long"),
	    "a 1000-byte symlink target reads back exactly");
	tap(sc(mkdirat(t->g, "d", 0755), "mkdir", "d") && put(t->g, "d/in", "in d") &&
		    sc(symlinkat("d", t->g, "sd"), "symlink", "sd") &&
		    has_str(t->g, "sd/in", "in d"),
	    "a path through a symlink to a directory resolves");
}

static void
g_names(struct fsc *t)
{
	static const char *const odd[] = { ".wh.x",	".wh..wh..opq", "sp ace", "ünïcødé",
					   "new\nline", "-dash",	"a:b",	  "#hash" };
	char name[258];

	memset(name, 'n', sizeof(name));
	name[256] = '\0';
	tap(open_fails(t->g, name, O_CREAT | O_WRONLY, ENAMETOOLONG, ENAMETOOLONG),
	    "create with a 256-byte name -> ENAMETOOLONG");
	tap(se(mkdirat(t->g, name, 0755), ENAMETOOLONG, "mkdir", "<256 bytes>"),
	    "mkdir with a 256-byte name -> ENAMETOOLONG");
	name[255] = '\0';
	tap(put(t->g, name, "max") && has_str(t->g, name, "max") &&
		    sc(unlinkat(t->g, name, 0), "unlink", "<255 bytes>"),
	    "a 255-byte name works");
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		tap(put(t->g, odd[i], odd[i]) && has_str(t->g, odd[i], odd[i]),
		    "a file named '%s' is an ordinary file", i == 4 ? "new\\nline" : odd[i]);
	tap(put(t->g, "x", "x") && has_str(t->g, "x", "x") && has_str(t->g, ".wh.x", ".wh.x"),
	    "'x' and '.wh.x' live side by side (no magic names)");
}

static void
g_hardlink(struct fsc *t)
{
	cleanup_close int fd = -1;
	struct stat st;

	tap(put(t->g, "h1", "one") && nlink_is(t->g, "h1", 1), "a new file has nlink 1");
	tap(sc(linkat(t->g, "h1", t->g, "h2", 0), "link", "h2") && nlink_is(t->g, "h1", 2) &&
		    nlink_is(t->g, "h2", 2),
	    "link raises nlink to 2 on both names");
	tap(eq(ino_of(t->g, "h2"), ino_of(t->g, "h1"), "st_ino", "h2"),
	    "both names share one inode number");
	fd = openat(t->g, "h1", O_WRONLY | O_APPEND | O_CLOEXEC);
	tap(sc(fd, "open", "h1") && write_all(fd, " two", 4, "h1") &&
		    has_str(t->g, "h2", "one two"),
	    "a write through one name is seen through the other");
	tap(sc(mkdirat(t->g, "sub", 0755), "mkdir", "sub") &&
		    sc(linkat(t->g, "h1", t->g, "sub/h3", 0), "link", "sub/h3") &&
		    nlink_is(t->g, "h2", 3) && has_str(t->g, "sub/h3", "one two"),
	    "a link in another directory shares the inode (nlink 3)");
	tap(sc(unlinkat(t->g, "sub/h3", 0), "unlink", "sub/h3") &&
		    sc(unlinkat(t->g, "h1", 0), "unlink", "h1") && nlink_is(t->g, "h2", 1) &&
		    has_str(t->g, "h2", "one two"),
	    "unlinking the other names leaves nlink 1 and the content");
	tap(sc(fstat(fd, &st), "fstat", "h1") && eq((long long)st.st_nlink, 1, "st_nlink", "h1"),
	    "fstat of an fd opened by an unlinked name sees the remaining link count");
	tap(se(linkat(t->g, "sub", t->g, "sublink", 0), EPERM, "link", "sub"),
	    "link to a directory -> EPERM");
	tap(put(t->g, "other", "o") &&
		    se(linkat(t->g, "h2", t->g, "other", 0), EEXIST, "link", "other"),
	    "link onto an existing name -> EEXIST");
	tap(se(linkat(t->g, "missing", t->g, "m2", 0), ENOENT, "link", "missing"),
	    "link of a missing name -> ENOENT");
	tap(sc(symlinkat("h2", t->g, "sym"), "symlink", "sym") &&
		    sc(linkat(t->g, "sym", t->g, "sym2", 0), "link", "sym2") &&
		    lst(t->g, "sym2", &st) && truth(S_ISLNK(st.st_mode), "S_ISLNK", "sym2") &&
		    eq((long long)st.st_ino, ino_of(t->g, "sym"), "st_ino", "sym2") &&
		    nlink_is(t->g, "sym", 2),
	    "link of a symlink links the symlink itself");
	tap(sc(renameat(t->g, "sym2", t->g, "sub/sym3"), "rename", "sym2") &&
		    nlink_is(t->g, "sym", 2),
	    "renaming a hard link keeps the link count");
}

static void
g_openunlink(struct fsc *t)
{
	cleanup_close int fd = -1;
	cleanup_close int old = -1;
	char buf[32] = { 0 };
	struct stat st;

	put(t->g, "u", "still here");
	fd = openat(t->g, "u", O_RDWR | O_CLOEXEC);
	tap(sc(fd, "open", "u") && sc(unlinkat(t->g, "u", 0), "unlink", "u") && gone(t->g, "u"),
	    "unlink of an open file removes its name");
	tap(fd_has(fd, "still here", 10, "u"), "the open fd still reads the content");
	tap(sc(pwrite(fd, " and more", 9, 10), "pwrite", "u") &&
		    fd_has(fd, "still here and more", 19, "u"),
	    "the open fd still writes");
	tap(sc(fstat(fd, &st), "fstat", "u") && eq((long long)st.st_nlink, 0, "st_nlink", "u") &&
		    eq(st.st_size, 19, "st_size", "u"),
	    "fstat of the unlinked file: nlink 0, current size");
	tap(sc(ftruncate(fd, 5), "ftruncate", "u") && fd_has(fd, "still", 5, "u"),
	    "ftruncate of the unlinked file works");
	tap(put(t->g, "u", "new file") && has_str(t->g, "u", "new file") &&
		    fd_has(fd, "still", 5, "u"),
	    "a new file of the same name is independent of the unlinked one");
	put(t->g, "victim", "old content");
	put(t->g, "newer", "new content");
	old = openat(t->g, "victim", O_RDONLY | O_CLOEXEC);
	tap(sc(old, "open", "victim") &&
		    sc(renameat(t->g, "newer", t->g, "victim"), "rename", "newer") &&
		    has_str(t->g, "victim", "new content"),
	    "rename over an open file replaces the name");
	tap(sc(pread(old, buf, sizeof(buf), 0), "pread", "victim") &&
		    truth(strcmp(buf, "old content") == 0, "old content", "victim"),
	    "the old fd still reads the old content");
	tap(sc(fstat(old, &st), "fstat", "victim") &&
		    eq((long long)st.st_nlink, 0, "st_nlink", "victim"),
	    "the replaced file has nlink 0");
}

static void
g_fifo(struct fsc *t)
{
	cleanup_close int fd = -1;
	char c = 0;
	struct stat st;

	tap(sc(mkfifoat(t->g, "p", 0640), "mkfifo", "p") && lst(t->g, "p", &st) &&
		    truth(S_ISFIFO(st.st_mode), "S_ISFIFO", "p") &&
		    eqo(st.st_mode & 07777, 0640, "mode", "p"),
	    "mkfifo creates a fifo with the given mode");
	fd = openat(t->g, "p", O_RDWR | O_CLOEXEC);
	tap(sc(fd, "open O_RDWR", "p") && write_all(fd, "z", 1, "p") &&
		    eq(read(fd, &c, 1), 1, "read", "p") && eq(c, 'z', "byte", "p"),
	    "a fifo opened O_RDWR passes data");
	tap(se(mkfifoat(t->g, "p", 0640), EEXIST, "mkfifo", "p"),
	    "mkfifo of an existing name -> EEXIST");
	tap(sc(mknodat(t->g, "p2", S_IFIFO | 0600, 0), "mknod", "p2") && lst(t->g, "p2", &st) &&
		    truth(S_ISFIFO(st.st_mode), "S_ISFIFO", "p2"),
	    "mknod S_IFIFO creates a fifo");
}

/* --- fifos, sockets and devices (left in place for the remount check) ------------------------ */

static const char fifo_message[] = "through the fifo\n";

/* A writer in a child process, a reader in this one: the data passes through the fifo. */
static bool
fifo_pass(struct fsc *t, const char *name)
{
	char buf[sizeof(fifo_message) + 8] = { 0 };
	cleanup_close int fd = -1;
	ssize_t n, got = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int w = openat(t->g, name, O_WRONLY | O_CLOEXEC);

		_exit(w >= 0 && write(w, fifo_message, strlen(fifo_message)) ==
					      (ssize_t)strlen(fifo_message)
			      ? 0
			      : CHILD_BROKEN);
	}
	fd = openat(t->g, name, O_RDONLY | O_CLOEXEC);
	while (fd >= 0 && (n = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	return sc(pid, "fork", name) && sc(fd, "open O_RDONLY", name) &&
	       eq_errno(wait_child(pid), 0, 0, "writer", name) &&
	       truth(strcmp(buf, fifo_message) == 0, "the reader got the writer's bytes", name);
}

static bool
node_is(int dfd, const char *name, mode_t type, unsigned mode, unsigned maj, unsigned min)
{
	struct stat st;

	return lst(dfd, name, &st) && eqo(st.st_mode & S_IFMT, type, "type", name) &&
	       eqo(st.st_mode & 07777, mode, "mode", name) &&
	       eq(major(st.st_rdev), maj, "rdev major", name) &&
	       eq(minor(st.st_rdev), min, "rdev minor", name) &&
	       eq((long long)st.st_nlink, 1, "st_nlink", name) &&
	       eq(st.st_uid, geteuid(), "st_uid", name) && eq(st.st_size, 0, "st_size", name);
}

static void
nodes_fifo(struct fsc *t)
{
	tap(sc(mkfifoat(t->g, "pipe", 0640), "mkfifo", "pipe") &&
		    sc(fchmodat(t->g, "pipe", 0640, 0), "chmod", "pipe") &&
		    node_is(t->g, "pipe", S_IFIFO, 0640, 0, 0),
	    "mkfifo: a fifo with its mode, owner, nlink 1 and no rdev");
	tap(fifo_pass(t, "pipe"), "a writer and a reader in two processes talk through the fifo");
	tap(sc(linkat(t->g, "pipe", t->g, "pipe.link", 0), "link", "pipe") &&
		    nlink_is(t->g, "pipe", 2) && nlink_is(t->g, "pipe.link", 2) &&
		    eq(ino_of(t->g, "pipe"), ino_of(t->g, "pipe.link"), "st_ino", "pipe.link") &&
		    fifo_pass(t, "pipe.link"),
	    "a hard link of the fifo is the same fifo (nlink 2, one inode)");
}

/*
 * A Unix socket at name in the group's directory, bound and listening (listen) or connected:
 * the fd, or -1 with errno. The name is used relative to the directory (socket paths are short).
 */
static int
socket_at(struct fsc *t, const char *name, bool listen_on)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), r = -1, e;
	cleanup_close int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", name);
	if (fd >= 0 && cwd >= 0 && fchdir(t->g) == 0)
		r = listen_on ? bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ?: listen(fd, 4)
			      : connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	e = errno;
	if (cwd >= 0 && fchdir(cwd) < 0)
		note("cannot return to the working directory");
	if (r < 0 && fd >= 0) {
		close(fd);
		fd = -1;
	}
	errno = e;
	return fd;
}

static void
nodes_socket(struct fsc *t)
{
	cleanup_close int srv = socket_at(t, "sock", true), cli = -1, conn = -1;
	char buf[8] = { 0 };
	struct stat st;

	tap(sc(srv, "bind", "sock") && lst(t->g, "sock", &st) &&
		    truth(S_ISSOCK(st.st_mode), "S_ISSOCK", "sock") &&
		    eq((long long)st.st_nlink, 1, "st_nlink", "sock") &&
		    eq(st.st_uid, geteuid(), "st_uid", "sock"),
	    "bind() of a Unix socket creates it in the directory");
	cli = socket_at(t, "sock", false);
	conn = srv >= 0 ? accept4(srv, NULL, NULL, SOCK_CLOEXEC) : -1;
	tap(sc(cli, "connect", "sock") && sc(conn, "accept", "sock") &&
		    write_all(cli, "ping", 4, "sock") &&
		    eq(read(conn, buf, 4), 4, "read", "sock") &&
		    truth(strcmp(buf, "ping") == 0, "the server got the client's bytes", "sock"),
	    "a client connects to the socket and talks to the server");
	close(TAKE_FD(srv));
	close(TAKE_FD(cli));
	cli = socket_at(t, "sock", false);
	tap(se(cli, ECONNREFUSED, "connect", "sock"),
	    "connect after the server closed -> ECONNREFUSED (the socket file stays)");
}

/* As --uid, in a directory open to everyone: no device, but a fifo of its own. */
static int
nodes_as_user(void *arg)
{
	struct fsc *t = arg;
	struct stat st;

	if (setgroups(0, NULL) < 0 || setgid(t->gid) < 0 || setuid(t->uid) < 0)
		return CHILD_BROKEN;
	if (mknodat(t->g, "open/null", S_IFCHR | 0666, makedev(1, 3)) == 0)
		return CHILD_MISMATCH;
	if (errno != EPERM)
		return errno;
	if (mkfifoat(t->g, "open/fifo", 0600) < 0 || fstatat(t->g, "open/fifo", &st, 0) < 0)
		return errno;
	return st.st_uid == t->uid && st.st_gid == t->gid ? 0 : CHILD_MISMATCH;
}

static void
nodes_devices(struct fsc *t)
{
	struct stat st;

	if (!t->is_root) {
		tap(se(mknodat(t->g, "null", S_IFCHR | 0666, makedev(1, 3)), EPERM, "mknod",
		       "null") &&
			    se(mknodat(t->g, "loop", S_IFBLK | 0600, makedev(7, 0)), EPERM, "mknod",
			       "loop") &&
			    gone(t->g, "null") && gone(t->g, "loop"),
		    "mknod of a device without CAP_MKNOD -> EPERM");
		return;
	}
	tap(sc(mknodat(t->g, "null", S_IFCHR | 0640, makedev(1, 3)), "mknod", "null") &&
		    sc(fchmodat(t->g, "null", 0640, 0), "chmod", "null") &&
		    node_is(t->g, "null", S_IFCHR, 0640, 1, 3),
	    "mknod of a character device (1:3) as root");
	tap(sc(mknodat(t->g, "loop", S_IFBLK | 0600, makedev(7, 0)), "mknod", "loop") &&
		    node_is(t->g, "loop", S_IFBLK, 0600, 7, 0),
	    "mknod of a block device (7:0) as root");
	tap(sc(fchownat(t->g, "loop", 12, 34, AT_SYMLINK_NOFOLLOW), "chown", "loop") &&
		    lst(t->g, "loop", &st) && eq(st.st_uid, 12, "st_uid", "loop") &&
		    eq(st.st_gid, 34, "st_gid", "loop") &&
		    eq(major(st.st_rdev), 7, "major", "loop"),
	    "chown of a device keeps its number");
	if (!t->have_uid) {
		tap_skip("mknod of a device as another user", "running as root without --uid");
		return;
	}
	tap(sc(mkdirat(t->g, "open", 0777), "mkdir", "open") &&
		    sc(fchmodat(t->g, "open", 0777, 0), "chmod", "open") &&
		    eq_errno(in_child(nodes_as_user, t), 0, 0, "mknod as --uid", "open/null"),
	    "as uid %u: mknod of a device -> EPERM, mkfifo gives a fifo of its own",
	    (unsigned)t->uid);
}

static void
g_nodes(struct fsc *t)
{
	nodes_fifo(t);
	nodes_socket(t);
	nodes_devices(t);
}

/* --- attributes and inode numbers ---------------------------------------------------------- */

static bool
times_are(const struct stat *st, const struct timespec *at, const struct timespec *mt,
	  const char *path)
{
	return eq(st->st_atim.tv_sec, at->tv_sec, "atime s", path) &&
	       eq(st->st_atim.tv_nsec, at->tv_nsec, "atime ns", path) &&
	       eq(st->st_mtim.tv_sec, mt->tv_sec, "mtime s", path) &&
	       eq(st->st_mtim.tv_nsec, mt->tv_nsec, "mtime ns", path);
}

static void
attrs_times(struct fsc *t)
{
	const struct timespec ts[2] = { { 1000000000, 123456789 }, { 1234567890, 987654321 } };
	const struct timespec omit[2] = { { 0, UTIME_OMIT }, { 1300000000, 5 } };
	const struct timespec now[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };
	cleanup_close int fd = -1;
	struct stat st;
	time_t before = time(NULL);

	tap(put(t->g, "tm", "t") && sc(utimensat(t->g, "tm", ts, 0), "utimensat", "tm") &&
		    lst(t->g, "tm", &st) && times_are(&st, &ts[0], &ts[1], "tm"),
	    "utimensat sets exact nanosecond atime and mtime");
	tap(sc(utimensat(t->g, "tm", omit, 0), "utimensat", "tm") && lst(t->g, "tm", &st) &&
		    times_are(&st, &ts[0], &omit[1], "tm"),
	    "UTIME_OMIT keeps the atime while the mtime changes");
	tap(sc(utimensat(t->g, "tm", now, 0), "utimensat", "tm") && lst(t->g, "tm", &st) &&
		    truth(st.st_mtim.tv_sec >= before - 1 && st.st_mtim.tv_sec <= time(NULL) + 1,
			  "mtime is now", "tm") &&
		    eq(st.st_atim.tv_nsec, ts[0].tv_nsec, "atime ns", "tm"),
	    "UTIME_NOW sets the mtime to the current time");
	fd = openat(t->g, "tm", O_WRONLY | O_CLOEXEC);
	tap(sc(futimens(fd, ts), "futimens", "tm") && write_all(fd, "w", 1, "tm") &&
		    sc(fstat(fd, &st), "fstat", "tm") &&
		    truth(st.st_mtim.tv_sec >= before - 1, "mtime moved by the write", "tm"),
	    "a write after futimens updates the mtime");
	tap(sc(close(TAKE_FD(fd)), "close", "tm") && lst(t->g, "tm", &st) &&
		    truth(st.st_mtim.tv_sec >= before - 1, "mtime after close", "tm"),
	    "the written file's mtime stays current after close");
	tap(sc(utimensat(t->g, "tm", ts, 0), "utimensat", "tm") && lst(t->g, "tm", &st) &&
		    truth(st.st_ctim.tv_sec >= before - 1, "ctime is now", "tm"),
	    "utimensat updates the ctime to now");
	tap(sc(symlinkat("tm", t->g, "tl"), "symlink", "tl") &&
		    sc(utimensat(t->g, "tl", ts, AT_SYMLINK_NOFOLLOW), "utimensat", "tl") &&
		    lst(t->g, "tl", &st) && times_are(&st, &ts[0], &ts[1], "tl"),
	    "utimensat AT_SYMLINK_NOFOLLOW sets a symlink's own times");
}

static void
attrs_modes(struct fsc *t)
{
	cleanup_close int fd = -1;
	struct stat st;

	tap(put(t->g, "m", "m") && sc(fchmodat(t->g, "m", 0640, 0), "chmod", "m") &&
		    lst(t->g, "m", &st) && eqo(st.st_mode & 07777, 0640, "mode", "m"),
	    "chmod sets the exact mode");
	fd = openat(t->g, "m", O_RDONLY | O_CLOEXEC);
	tap(sc(fchmod(fd, 04755), "fchmod", "m") && sc(fstat(fd, &st), "fstat", "m") &&
		    eqo(st.st_mode & 07777, 04755, "mode", "m"),
	    "fchmod sets the exact mode including set-user-ID");
	tap(sc(mkdirat(t->g, "sticky", 0755), "mkdir", "sticky") &&
		    sc(fchmodat(t->g, "sticky", 01777, 0), "chmod", "sticky") &&
		    lst(t->g, "sticky", &st) && eqo(st.st_mode & 07777, 01777, "mode", "sticky"),
	    "chmod sets the sticky bit on a directory");
	if (!t->is_root) {
		tap(sc(fchownat(t->g, "m", geteuid(), getegid(), 0), "chown", "m") &&
			    lst(t->g, "m", &st) && eq(st.st_uid, geteuid(), "st_uid", "m") &&
			    eq(st.st_gid, getegid(), "st_gid", "m") &&
			    se(fchownat(t->g, "m", geteuid() == 12345 ? 12346 : 12345, (gid_t)-1,
					0),
			       EPERM, "chown", "m"),
		    "chown (unprivileged) to its own ids works, to another uid -> EPERM");
		return;
	}
	tap(sc(fchownat(t->g, "m", 12345, 23456, 0), "chown", "m") && lst(t->g, "m", &st) &&
		    eq(st.st_uid, 12345, "st_uid", "m") && eq(st.st_gid, 23456, "st_gid", "m"),
	    "chown (root) sets another uid and gid");
	tap(sc(fchownat(t->g, "m", (uid_t)-1, 0, 0), "chown", "m") && lst(t->g, "m", &st) &&
		    eq(st.st_uid, 12345, "st_uid", "m") && eq(st.st_gid, 0, "st_gid", "m"),
	    "chown with uid -1 changes only the gid");
	tap(sc(symlinkat("m", t->g, "ml"), "symlink", "ml") &&
		    sc(fchownat(t->g, "ml", 4242, 4242, AT_SYMLINK_NOFOLLOW), "lchown", "ml") &&
		    lst(t->g, "ml", &st) && eq(st.st_uid, 4242, "st_uid", "ml") &&
		    lst(t->g, "m", &st) && eq(st.st_uid, 12345, "st_uid", "m"),
	    "lchown changes the symlink, not its target");
	tap(put_mode(t->g, "zero", "z", 1, 0) && has_str(t->g, "zero", "z"),
	    "root reads a mode 0000 file (CAP_DAC_OVERRIDE)");
}

static void
g_attrs(struct fsc *t)
{
	attrs_times(t);
	attrs_modes(t);
}

static void
g_ino(struct fsc *t)
{
	long long inos[50];
	char name[32];
	bool distinct = true;
	struct stat a, b;
	cleanup_close int fd = -1;

	put(t->g, "i", "i");
	tap(lst(t->g, "i", &a) && lst(t->g, "i", &b) &&
		    eq((long long)b.st_ino, (long long)a.st_ino, "st_ino", "i"),
	    "st_ino is stable across repeated stat");
	fd = openat(t->g, "i", O_RDWR | O_CLOEXEC);
	tap(sc(fd, "open", "i") && sc(fstat(fd, &b), "fstat", "i") &&
		    eq((long long)b.st_ino, (long long)a.st_ino, "st_ino", "i") &&
		    write_all(fd, "x", 1, "i") && sc(close(TAKE_FD(fd)), "close", "i") &&
		    eq(ino_of(t->g, "i"), (long long)a.st_ino, "st_ino", "i"),
	    "st_ino is the same through fstat, after a write and after close");
	tap(sc(fchmodat(t->g, "i", 0600, 0), "chmod", "i") &&
		    sc(renameat(t->g, "i", t->g, "j"), "rename", "i") &&
		    eq(ino_of(t->g, "j"), (long long)a.st_ino, "st_ino", "j"),
	    "st_ino survives chmod and rename");
	for (int i = 0; i < 50; i++) {
		fmt(name, sizeof(name), "u%02d", i);
		inos[i] = put(t->g, name, name) ? ino_of(t->g, name) : -1;
		for (int k = 0; k < i; k++)
			distinct = distinct && inos[k] != inos[i] && inos[i] > 0;
	}
	tap(truth(distinct, "distinct inode numbers", "u*"), "50 files have 50 distinct st_ino");
	fd = openat(t->g, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	tap(sc(fd, "open", ".") && sc(fstat(fd, &a), "fstat", ".") && lst(t->g, ".", &b) &&
		    eq((long long)a.st_ino, (long long)b.st_ino, "st_ino", ".") &&
		    eq((long long)a.st_dev, (long long)b.st_dev, "st_dev", "."),
	    "a directory's st_ino and st_dev agree between fstat and stat");
}

/* --- readdir ------------------------------------------------------------------------------- */

/* The names of the directory dfd/path with their types, one "name:type;" each, sorted. */
static bool
listing(int dfd, const char *path, char *out, size_t cap, bool check_ino)
{
	char names[64][300];
	int n = 0;
	size_t len = 0;
	DIR *d;
	struct dirent *e;
	int fd = openat(dfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (!sc(fd, "open", path))
		return false;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return sc(-1, "fdopendir", path);
	}
	while ((e = readdir(d)) && n < 64) {
		struct stat st;

		fmt(names[n++], sizeof(names[0]), "%s:%d;", e->d_name, e->d_type);
		if (check_ino && strcmp(e->d_name, "..") != 0 &&
		    (!lst(dirfd(d), e->d_name, &st) ||
		     !eq((long long)e->d_ino, (long long)st.st_ino, "d_ino vs st_ino",
			 e->d_name))) {
			closedir(d);
			return false;
		}
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof(names[0]), (int (*)(const void *, const void *))strcmp);
	out[0] = '\0';
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%s", names[i]);
	return true;
}

static bool
listing_is(int dfd, const char *path, const char *want, bool check_ino)
{
	char got[4096];

	if (!listing(dfd, path, got, sizeof(got), check_ino))
		return false;
	if (strcmp(got, want) == 0)
		return true;
	note("listing of '%s/%s': got '%s', expected '%s'", where, path, got, want);
	return false;
}

static int
rd_index(const char *name)
{
	char *end;
	long i;

	if ((name[0] != 'e' && name[0] != 'n') || !name[1])
		return -1;
	i = strtol(name + 1, &end, 10);
	if (*end || i < 0 || i >= (name[0] == 'e' ? RD_OLD : RD_NEW))
		return -1;
	return name[0] == 'e' ? (int)i : RD_OLD + (int)i;
}

/* Read entries with getdents64 (small buffers, so the filesystem's offsets are used) into seen[]
 * until at least max names; return the count, -1 on error or an unexpected name. */
static int
read_dents(int fd, unsigned char *seen, int max)
{
	char buf[1024] __attribute__((aligned(8)));
	int count = 0;

	while (count < max) {
		ssize_t n = getdents64(fd, buf, sizeof(buf));

		if (!sc(n, "getdents64", "rd"))
			return -1;
		if (n == 0)
			break;
		for (ssize_t pos = 0; pos < n;) {
			const struct dirent64 *e = (const struct dirent64 *)(buf + pos);
			int i = rd_index(e->d_name);

			pos += e->d_reclen;
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if (i < 0) {
				note("unexpected name '%s' in '%s/rd'", e->d_name, where);
				return -1;
			}
			seen[i]++;
			count++;
		}
	}
	return count;
}

static bool
rd_no_dups(const unsigned char *seen, const char *pass)
{
	for (int i = 0; i < RD_OLD + RD_NEW; i++)
		if (seen[i] > 1) {
			note("%s: entry %c%03d returned %d times", pass, i < RD_OLD ? 'e' : 'n',
			     i % RD_OLD, seen[i]);
			return false;
		}
	return true;
}

/* Every name in [from, to) that was not removed (e%03d with i % 10 == 3) was seen exactly want
 * times, except those marked in except (0 times); with strict, removed names were not seen. */
static bool
rd_all(const unsigned char *seen, const unsigned char *except, int from, int to, int want,
       bool strict, const char *pass)
{
	for (int i = from; i < to; i++) {
		int w = except && except[i] ? 0 : want;

		if (i < RD_OLD && i % 10 == 3 && !strict)
			continue;
		if (i < RD_OLD && i % 10 == 3)
			w = 0;
		if (seen[i] != w) {
			note("%s: entry %c%03d returned %d times, expected %d", pass,
			     i < RD_OLD ? 'e' : 'n', i % RD_OLD, seen[i], w);
			return false;
		}
	}
	return true;
}

static void
readdir_mutate(struct fsc *t)
{
	char name[16];

	for (int i = 3; i < RD_OLD; i += 10) {
		fmt(name, sizeof(name), "rd/e%03d", i);
		unlinkat(t->g, name, 0);
	}
	for (int i = 0; i < RD_NEW; i++) {
		fmt(name, sizeof(name), "rd/n%03d", i);
		put(t->g, name, "");
	}
}

static void
readdir_offsets(struct fsc *t)
{
	unsigned char seen[RD_OLD + RD_NEW] = { 0 }, prefix[RD_OLD + RD_NEW],
				    again[RD_OLD + RD_NEW] = { 0 };
	unsigned char fresh[RD_OLD + RD_NEW] = { 0 };
	cleanup_close int fd = -1;
	char name[16];
	off_t pos = -1;
	bool made = sc(mkdirat(t->g, "rd", 0755), "mkdir", "rd");

	for (int i = 0; made && i < RD_OLD; i++) {
		fmt(name, sizeof(name), "rd/e%03d", i);
		made = put(t->g, name, "");
	}
	tap(made, "create a directory of %d entries", RD_OLD);
	fd = openat(t->g, "rd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	tap(sc(fd, "open", "rd") && read_dents(fd, seen, 100) >= 100 &&
		    sc(pos = lseek(fd, 0, SEEK_CUR), "lseek", "rd"),
	    "read the first 100 entries with getdents64");
	memcpy(prefix, seen, sizeof(prefix));
	readdir_mutate(t);
	tap(read_dents(fd, seen, 1 << 30) >= 0 && rd_no_dups(seen, "continued") &&
		    rd_all(seen, NULL, 0, RD_OLD, 1, false, "continued"),
	    "entries added and removed during iteration: no name twice, every survivor once");
	tap(pos >= 0 && sc(lseek(fd, pos, SEEK_SET), "lseek", "rd") &&
		    read_dents(fd, again, 1 << 30) >= 0 && rd_no_dups(again, "resumed") &&
		    rd_all(again, prefix, 0, RD_OLD, 1, false, "resumed"),
	    "seeking back to a saved offset resumes after the entries already read");
	tap(sc(lseek(fd, 0, SEEK_SET), "lseek", "rd") && read_dents(fd, fresh, 1 << 30) >= 0 &&
		    rd_all(fresh, NULL, 0, RD_OLD + RD_NEW, 1, true, "rewound"),
	    "a listing from offset 0 has exactly the current names");
}

static void
readdir_seekdir(struct fsc *t)
{
	long pos[40];
	char names[40][256];
	int n = 0, k;
	bool ok = true;
	struct dirent *e;
	DIR *d;
	int fd = openat(t->g, "rd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (!sc(fd, "open", "rd") || !(d = fdopendir(fd))) {
		tap(false, "telldir/seekdir return to recorded entries");
		return;
	}
	while (n < 40 && (pos[n] = telldir(d), e = readdir(d)))
		fmt(names[n++], sizeof(names[0]), "%s", e->d_name);
	for (k = n - 1; ok && k >= 0; k -= 7) {
		seekdir(d, pos[k]);
		e = readdir(d);
		ok = truth(e && strcmp(e->d_name, names[k]) == 0, "seekdir returns the same entry",
			   names[k]);
	}
	rewinddir(d);
	e = readdir(d);
	ok = ok && truth(e && strcmp(e->d_name, names[0]) == 0, "rewinddir", names[0]);
	closedir(d);
	tap(ok && n == 40, "telldir/seekdir/rewinddir return to recorded entries");
}

static void
g_readdir(struct fsc *t)
{
	tap(sc(mkdirat(t->g, "types", 0755), "mkdir", "types") && put(t->g, "types/f", "") &&
		    sc(mkdirat(t->g, "types/d", 0755), "mkdir", "types/d") &&
		    sc(symlinkat("f", t->g, "types/l"), "symlink", "types/l") &&
		    sc(mkfifoat(t->g, "types/p", 0644), "mkfifo", "types/p") &&
		    listing_is(t->g, "types", "..:4;.:4;d:4;f:8;l:10;p:1;", true),
	    "readdir lists exactly the names with their d_type and d_ino");
	tap(sc(unlinkat(t->g, "types/f", 0), "unlink", "types/f") &&
		    sc(renameat(t->g, "types/l", t->g, "types/l2"), "rename", "types/l") &&
		    listing_is(t->g, "types", "..:4;.:4;d:4;l2:10;p:1;", false),
	    "readdir reflects unlink and rename");
	tap(listing_is(t->g, "types/d", "..:4;.:4;", true),
	    "an empty directory lists '.' and '..'");
	readdir_offsets(t);
	readdir_seekdir(t);
}

/* --- scale: a many-entry directory and a big file ----------------------------------------------
 */

static bool
many_count(int dfd, long n, long *count)
{
	cleanup_free unsigned char *seen = calloc((size_t)n, 1);
	DIR *d;
	struct dirent *e;
	int fd = openat(dfd, "many", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*count = 0;
	if (!seen || !sc(fd, "open", "many"))
		return false;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return sc(-1, "fdopendir", "many");
	}
	while ((e = readdir(d))) {
		char *end;
		long i = strtol(e->d_name + 1, &end, 10);

		if (e->d_name[0] == '.')
			continue;
		if (e->d_name[0] != 'f' || *end || i < 0 || i >= n || seen[i]++) {
			note("unexpected or repeated name '%s' in '%s/many'", e->d_name, where);
			closedir(d);
			return false;
		}
		(*count)++;
	}
	closedir(d);
	return true;
}

static bool
many_each(int dfd, long n, bool create)
{
	char name[32];

	for (long i = 0; i < n; i++) {
		fmt(name, sizeof(name), "many/f%07ld", i);
		if (create) {
			int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);

			if (!sc(fd, "create", name))
				return false;
			close(fd);
		} else if (!sc(unlinkat(dfd, name, 0), "unlink", name)) {
			return false;
		}
	}
	return true;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
g_many(struct fsc *t)
{
	long count = -1;
	double t0 = now_s(), t1, t2;

	if (t->many <= 0) {
		tap_skip("a many-entry directory", "--many 0");
		return;
	}
	tap(sc(mkdirat(t->g, "many", 0755), "mkdir", "many") && many_each(t->g, t->many, true),
	    "create %ld files in one directory", t->many);
	t1 = now_s();
	tap(many_count(t->g, t->many, &count) && eq(count, t->many, "entries listed", "many") &&
		    nlink_is(t->g, "many", 2),
	    "readdir lists exactly %ld entries, each once", t->many);
	t2 = now_s();
	tap(many_each(t->g, t->many, false) &&
		    sc(unlinkat(t->g, "many", AT_REMOVEDIR), "rmdir", "many"),
	    "unlink all %ld entries and remove the directory", t->many);
	info("many: create %.2fs, list %.2fs, remove %.2fs", t1 - t0, t2 - t1, now_s() - t2);
}

static void
big_fill(uint64_t *block, long b)
{
	for (size_t i = 0; i < MIB / 8; i++)
		block[i] = mix64(((uint64_t)b << 20) | i);
}

static bool
big_write(struct fsc *t, uint64_t *block, uint64_t *sum)
{
	cleanup_close int fd = openat(t->g, "big", O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);

	if (!sc(fd, "create", "big"))
		return false;
	for (long b = 0; b < t->big_mb; b++) {
		big_fill(block, b);
		*sum = fnv(*sum, block, MIB);
		if (!write_all(fd, block, MIB, "big"))
			return false;
	}
	return sc(fsync(fd), "fsync", "big") && sc(close(TAKE_FD(fd)), "close", "big");
}

static bool
big_read(struct fsc *t, uint64_t *block, uint64_t *want, uint64_t *sum)
{
	cleanup_close int fd = openat(t->g, "big", O_RDONLY | O_CLOEXEC);
	long bad = -1;

	if (!sc(fd, "open", "big"))
		return false;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	for (long b = 0; b < t->big_mb; b++) {
		size_t got = 0;

		while (got < MIB) {
			ssize_t n = read(fd, (char *)block + got, MIB - got);

			if (!sc(n, "read", "big") || !truth(n > 0, "no early EOF", "big"))
				return false;
			got += (size_t)n;
		}
		*sum = fnv(*sum, block, MIB);
		big_fill(want, b);
		if (bad < 0 && memcmp(block, want, MIB) != 0)
			bad = b;
	}
	if (bad >= 0)
		note("block %ld (MiB) of '%s/big' differs", bad, where);
	return bad < 0;
}

static void
g_big(struct fsc *t)
{
	cleanup_free uint64_t *block = malloc(MIB);
	cleanup_free uint64_t *want = malloc(MIB);
	uint64_t wsum = 0xcbf29ce484222325ULL, rsum = wsum;
	struct stat st;
	double t0 = now_s(), t1, t2;

	if (t->big_mb <= 0) {
		tap_skip("a big file", "--big-mb 0");
		return;
	}
	tap(block && want && big_write(t, block, &wsum),
	    "write a %ld MiB file sequentially in 1 MiB blocks", t->big_mb);
	t1 = now_s();
	tap(lst(t->g, "big", &st) && eq(st.st_size, (long long)t->big_mb * MIB, "st_size", "big"),
	    "the big file has the exact size");
	tap(block && want && big_read(t, block, want, &rsum) &&
		    truth(rsum == wsum, "checksum of the data read", "big"),
	    "the big file reads back with the same checksum");
	t2 = now_s();
	info("big: write %.0f MB/s, read %.0f MB/s", (double)t->big_mb / (t1 - t0),
	     (double)t->big_mb / (t2 - t1));
	tap(sc(unlinkat(t->g, "big", 0), "unlink", "big"), "remove the big file");
}

/* --- xattrs, mmap, locks ------------------------------------------------------------------- */

static bool
xattr_listed(const char *path, const char *want)
{
	char list[4096];
	ssize_t n = listxattr(path, list, sizeof(list));
	bool found = false;

	if (!sc(n, "listxattr", path))
		return false;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(list + i) + 1) {
		if (strncmp(list + i, "user.", 5) != 0)
			continue;
		if (!want || strcmp(list + i, want) != 0) {
			note("unexpected user xattr '%s' on '%s'", list + i, path);
			return false;
		}
		found = true;
	}
	return truth(found == (want != NULL), "listxattr names exactly the user xattr", path);
}

static void
g_xattr(struct fsc *t)
{
	char f[4096], d[4096], buf[64] = { 0 };

	put(t->g, "x", "x");
	mkdirat(t->g, "xd", 0755);
	fmt(f, sizeof(f), "%s", path_in(t, "x"));
	fmt(d, sizeof(d), "%s", path_in(t, "xd"));
	tap(sc(setxattr(f, "user.eos", "value-1", 7, 0), "setxattr", "x") &&
		    eq(getxattr(f, "user.eos", buf, sizeof(buf)), 7, "getxattr size", "x") &&
		    truth(memcmp(buf, "value-1", 7) == 0, "value", "x"),
	    "setxattr/getxattr of user.eos round-trips");
	tap(eq(getxattr(f, "user.eos", NULL, 0), 7, "size query", "x"), "getxattr size query");
	tap(se(getxattr(f, "user.eos", buf, 3), ERANGE, "getxattr", "x"),
	    "getxattr into a short buffer -> ERANGE");
	tap(xattr_listed(f, "user.eos"), "listxattr lists the user xattr");
	tap(se(setxattr(f, "user.eos", "v", 1, XATTR_CREATE), EEXIST, "setxattr CREATE", "x"),
	    "XATTR_CREATE on an existing name -> EEXIST");
	tap(se(setxattr(f, "user.none", "v", 1, XATTR_REPLACE), ENODATA, "setxattr REPLACE", "x"),
	    "XATTR_REPLACE on a missing name -> ENODATA");
	tap(sc(setxattr(f, "user.eos", "", 0, XATTR_REPLACE), "setxattr REPLACE", "x") &&
		    eq(getxattr(f, "user.eos", buf, sizeof(buf)), 0, "getxattr size", "x"),
	    "an empty xattr value is kept");
	tap(se(getxattr(f, "user.missing", buf, sizeof(buf)), ENODATA, "getxattr", "x"),
	    "getxattr of a missing name -> ENODATA");
	tap(sc(removexattr(f, "user.eos"), "removexattr", "x") &&
		    se(getxattr(f, "user.eos", buf, sizeof(buf)), ENODATA, "getxattr", "x") &&
		    xattr_listed(f, NULL),
	    "removexattr removes it");
	tap(se(removexattr(f, "user.eos"), ENODATA, "removexattr", "x"),
	    "removexattr of a missing name -> ENODATA");
	tap(sc(setxattr(d, "user.dir", "on a dir", 8, 0), "setxattr", "xd") &&
		    eq(getxattr(d, "user.dir", buf, sizeof(buf)), 8, "getxattr size", "xd") &&
		    xattr_listed(d, "user.dir"),
	    "user xattrs on a directory");
	tap(sc(setxattr(f, "user.keep", "kept", 4, 0), "setxattr", "x") &&
		    sc(renameat(t->g, "x", t->g, "x2"), "rename", "x") &&
		    eq(getxattr(path_in(t, "x2"), "user.keep", buf, sizeof(buf)), 4, "size", "x2"),
	    "a user xattr follows its file through rename");
}

static void
g_mmap(struct fsc *t)
{
	enum {
		LEN = 3 * 4096
	};
	cleanup_free char *data = calloc(1, LEN);
	cleanup_close int fd = -1;
	cleanup_close int fd2 = -1;
	char buf[16] = { 0 };
	char *map = MAP_FAILED;

	memset(data, 'm', LEN);
	tap(put_mode(t->g, "mm", data, LEN, 0644), "create a 3-page file");
	fd = openat(t->g, "mm", O_RDWR | O_CLOEXEC);
	fd2 = openat(t->g, "mm", O_RDWR | O_CLOEXEC);
	if (fd >= 0)
		map = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	tap(truth(map != MAP_FAILED, "mmap MAP_SHARED", "mm"), "mmap MAP_SHARED of the file");
	if (map == MAP_FAILED)
		return;
	memcpy(map + 5000, "MMAPWRITE", 9);
	tap(sc(msync(map, LEN, MS_SYNC), "msync", "mm") &&
		    sc(pread(fd2, buf, 9, 5000), "pread", "mm") &&
		    truth(memcmp(buf, "MMAPWRITE", 9) == 0, "read sees the mapped write", "mm"),
	    "a write through a shared mapping is seen by read() after msync");
	tap(sc(pwrite(fd2, "PWRITE", 6, 9000), "pwrite", "mm") &&
		    truth(memcmp(map + 9000, "PWRITE", 6) == 0, "the mapping sees the write", "mm"),
	    "a write() is seen through the shared mapping");
	munmap(map, LEN);
	memcpy(data + 5000, "MMAPWRITE", 9);
	memcpy(data + 9000, "PWRITE", 6);
	tap(has(t->g, "mm", data, LEN), "after munmap the file has both writes");
	map = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (map != MAP_FAILED) {
		memcpy(map, "PRIVATE", 7);
		munmap(map, LEN);
	}
	tap(map != MAP_FAILED && has(t->g, "mm", data, LEN), "a MAP_PRIVATE write stays private");
}

struct lock_arg {
	int dfd;
	int op;
	short type;
	off_t start;
	off_t len;
	pid_t holder;
};

static int
child_flock(void *arg)
{
	const struct lock_arg *a = arg;
	int fd = openat(a->dfd, "lk", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return CHILD_BROKEN;
	return flock(fd, a->op) < 0 ? errno : 0;
}

static int
child_setlk(void *arg)
{
	const struct lock_arg *a = arg;
	struct flock fl = {
		.l_type = a->type, .l_whence = SEEK_SET, .l_start = a->start, .l_len = a->len
	};
	int fd = openat(a->dfd, "lk", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return CHILD_BROKEN;
	return fcntl(fd, F_SETLK, &fl) < 0 ? errno : 0;
}

static int
child_getlk(void *arg)
{
	const struct lock_arg *a = arg;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1000 };
	int fd = openat(a->dfd, "lk", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return CHILD_BROKEN;
	if (fcntl(fd, F_GETLK, &fl) < 0)
		return errno;
	return fl.l_type == F_WRLCK && fl.l_pid == a->holder && fl.l_start == a->start &&
			       fl.l_len == a->len
		       ? 0
		       : CHILD_MISMATCH;
}

static void
locks_flock(struct fsc *t, int fd)
{
	struct lock_arg a = { .dfd = t->g, .op = LOCK_EX | LOCK_NB };

	tap(sc(flock(fd, LOCK_EX), "flock LOCK_EX", "lk") &&
		    eq_errno(in_child(child_flock, &a), EWOULDBLOCK, EWOULDBLOCK, "flock", "lk"),
	    "flock LOCK_EX held here: LOCK_EX|LOCK_NB in another process -> EWOULDBLOCK");
	tap(sc(flock(fd, LOCK_UN), "flock LOCK_UN", "lk") &&
		    eq_errno(in_child(child_flock, &a), 0, 0, "flock", "lk"),
	    "after LOCK_UN another process gets LOCK_EX");
	a.op = LOCK_SH | LOCK_NB;
	tap(sc(flock(fd, LOCK_SH), "flock LOCK_SH", "lk") &&
		    eq_errno(in_child(child_flock, &a), 0, 0, "flock", "lk"),
	    "two processes share LOCK_SH");
	a.op = LOCK_EX | LOCK_NB;
	tap(eq_errno(in_child(child_flock, &a), EWOULDBLOCK, EWOULDBLOCK, "flock", "lk") &&
		    sc(flock(fd, LOCK_UN), "flock LOCK_UN", "lk"),
	    "LOCK_SH held here: LOCK_EX|LOCK_NB elsewhere -> EWOULDBLOCK");
}

static void
locks_posix(struct fsc *t, int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
	struct lock_arg a = { .dfd = t->g, .type = F_WRLCK, .start = 50, .len = 10 };

	tap(sc(fcntl(fd, F_SETLK, &fl), "F_SETLK", "lk") &&
		    eq_errno(in_child(child_setlk, &a), EAGAIN, EACCES, "F_SETLK", "lk"),
	    "F_SETLK write lock held here: a conflicting F_SETLK elsewhere -> EAGAIN");
	a.start = 200;
	tap(eq_errno(in_child(child_setlk, &a), 0, 0, "F_SETLK", "lk"),
	    "a non-overlapping F_SETLK elsewhere succeeds");
	a.start = 0;
	a.len = 100;
	a.holder = getpid();
	tap(eq_errno(in_child(child_getlk, &a), 0, 0, "F_GETLK", "lk"),
	    "F_GETLK elsewhere reports the holder's pid and range");
	fl.l_type = F_UNLCK;
	a.start = 50;
	a.len = 10;
	tap(sc(fcntl(fd, F_SETLK, &fl), "F_SETLK unlock", "lk") &&
		    eq_errno(in_child(child_setlk, &a), 0, 0, "F_SETLK", "lk"),
	    "after unlocking another process gets the lock");
}

static void
locks_wait(struct fsc *t, int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };
	int p[2];
	char c = 0;
	pid_t pid;
	double t0;
	bool ok;

	if (pipe2(p, O_CLOEXEC) < 0)
		return (void)tap(sc(-1, "pipe", "-"), "F_SETLKW waits for the holder");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int cfd = openat(t->g, "lk", O_RDWR | O_CLOEXEC);

		if (cfd < 0 || fcntl(cfd, F_SETLK, &fl) < 0 || write(p[1], "x", 1) != 1)
			_exit(CHILD_BROKEN);
		usleep(300000);
		_exit(0);
	}
	close(p[1]);
	ok = pid > 0 && truth(read(p[0], &c, 1) == 1, "the child took the lock", "lk");
	t0 = now_s();
	ok = ok && sc(fcntl(fd, F_SETLKW, &fl), "F_SETLKW", "lk") &&
	     truth(now_s() - t0 > 0.2, "F_SETLKW blocked until the holder exited", "lk");
	close(p[0]);
	if (pid > 0)
		wait_child(pid);
	fl.l_type = F_UNLCK;
	fcntl(fd, F_SETLK, &fl);
	tap(ok, "F_SETLKW waits until the other process releases the lock");
}

static void
g_locks(struct fsc *t)
{
	cleanup_close int fd = -1;
	cleanup_close int fd2 = -1;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };

	put(t->g, "lk", "lock me");
	fd = openat(t->g, "lk", O_RDWR | O_CLOEXEC);
	fd2 = openat(t->g, "lk", O_RDWR | O_CLOEXEC);
	if (!tap(sc(fd, "open", "lk") && sc(fd2, "open", "lk"), "open the lock file twice"))
		return;
	locks_flock(t, fd);
	locks_posix(t, fd);
	locks_wait(t, fd);
	tap(sc(fcntl(fd, F_OFD_SETLK, &fl), "F_OFD_SETLK", "lk") &&
		    se2(fcntl(fd2, F_OFD_SETLK, &fl), EAGAIN, EACCES, "F_OFD_SETLK", "lk"),
	    "open file description locks conflict between two opens of one process");
}

/* --- the lower layer (files of DIR given by the options) -------------------------------------- */

static bool
read_local(const char *path, char **ret, size_t *len)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;
	ssize_t n = 0;

	if (fd < 0 || fstat(fd, &st) < 0 || !(buf = malloc((size_t)st.st_size + 1))) {
		note("cannot read the reference file '%s': %s", path, ename(errno));
		return false;
	}
	for (*len = 0; *len < (size_t)st.st_size; *len += (size_t)n)
		if ((n = read(fd, buf + *len, (size_t)st.st_size - *len)) <= 0)
			break;
	*ret = buf;
	return n >= 0;
}

static void
lower_files(struct fsc *t)
{
	for (int i = 0; i < t->lower_files.n; i++) {
		const struct pair *p = &t->lower_files.v[i];
		cleanup_free char *data = NULL;
		struct stat st;
		size_t len = 0;

		tap(read_local(p->b, &data, &len) && lst(t->root, p->a, &st) &&
			    eq(st.st_size, (long long)len, "st_size", p->a) &&
			    has(t->root, p->a, data, len) && has(t->root, p->a, data, len),
		    "lower file '%s' has its exact size and content (read twice)", p->a);
	}
	for (int i = 0; i < t->lower_links.n; i++) {
		const struct pair *p = &t->lower_links.v[i];

		tap(eq(ino_of(t->root, p->b), ino_of(t->root, p->a), "st_ino", p->b) &&
			    nlink_is(t->root, p->a, 2) && nlink_is(t->root, p->b, 2),
		    "lower hard links '%s' and '%s' share one inode with nlink 2", p->a, p->b);
	}
}

static bool
append_to(int dfd, const char *path, const char *marker)
{
	cleanup_close int fd = openat(dfd, path, O_WRONLY | O_APPEND | O_CLOEXEC);

	return sc(fd, "open", path) && write_all(fd, marker, strlen(marker), path) &&
	       sc(close(TAKE_FD(fd)), "close", path);
}

/* dfd/path holds old[0..len) followed by marker. */
static bool
has_appended(int dfd, const char *path, const char *marker, const char *old, size_t len)
{
	cleanup_free char *want = malloc(len + strlen(marker));

	if (!want)
		return truth(false, "memory", path);
	memcpy(want, old, len);
	memcpy(want + len, marker, strlen(marker));
	return has(dfd, path, want, len + strlen(marker));
}

static void
lower_writes(struct fsc *t)
{
	for (int i = 0; i < t->lower_write.n; i++) {
		const struct pair *p = &t->lower_write.v[i];
		cleanup_free char *data = NULL;
		size_t len = 0;
		long long ino = ino_of(t->root, p->a);

		tap(read_local(p->b, &data, &len) && append_to(t->root, p->a, write_marker) &&
			    has_appended(t->root, p->a, write_marker, data, len) &&
			    eq(ino_of(t->root, p->a), ino, "st_ino after copy-up", p->a),
		    "append to lower file '%s': old content kept, inode kept", p->a);
	}
	for (int i = 0; i < t->lower_links.n; i++) {
		const struct pair *p = &t->lower_links.v[i];
		cleanup_free char *data = malloc(64 * MIB);
		long long ino = ino_of(t->root, p->a);
		ssize_t n = -1;
		int fd = openat(t->root, p->a, O_RDONLY | O_CLOEXEC);

		if (fd >= 0 && data)
			n = pread(fd, data, 64 * MIB, 0);
		if (fd >= 0)
			close(fd);
		tap(sc(n, "read", p->a) && append_to(t->root, p->a, link_marker) &&
			    has_appended(t->root, p->a, link_marker, data, (size_t)n) &&
			    has_appended(t->root, p->b, link_marker, data, (size_t)n) &&
			    eq(ino_of(t->root, p->b), ino, "st_ino", p->b) &&
			    nlink_is(t->root, p->b, 2),
		    "a write to lower hard link '%s' is seen through '%s'", p->a, p->b);
	}
}

static bool
hash_file(int dfd, const char *name, uint64_t *h)
{
	cleanup_close int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	char buf[65536];
	ssize_t n;

	if (!sc(fd, "open", name))
		return false;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		*h = fnv(*h, buf, (size_t)n);
	return sc(n, "read", name);
}

/* An order-independent digest of the tree under dfd/path: names, types, modes, sizes, content
 * and symlink targets. */
static bool
tree_sum(int dfd, const char *path, uint64_t seed, uint64_t *sum, long *count)
{
	int fd = openat(dfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	bool ok = sc(fd, "open", path) && d;

	while (ok && (e = readdir(d))) {
		struct stat st;
		char target[4096];
		uint64_t h = fnv(seed, e->d_name, strlen(e->d_name) + 1);
		ssize_t n;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		ok = lst(dirfd(d), e->d_name, &st);
		h = fnv(h, &st.st_mode, sizeof(st.st_mode));
		if (ok && S_ISREG(st.st_mode))
			ok = hash_file(dirfd(d), e->d_name, &h);
		if (ok && S_ISLNK(st.st_mode)) {
			n = readlinkat(dirfd(d), e->d_name, target, sizeof(target));
			ok = sc(n, "readlink", e->d_name);
			h = fnv(h, target, n > 0 ? (size_t)n : 0);
		}
		if (ok && S_ISDIR(st.st_mode))
			ok = tree_sum(dirfd(d), e->d_name, h, sum, count);
		*sum += mix64(h);
		(*count)++;
	}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	return ok;
}

static void
lower_dirs(struct fsc *t)
{
	for (int i = 0; i < t->lower_dirs.n; i++) {
		const char *from = t->lower_dirs.v[i].a;
		char to[4096];
		uint64_t before = 0, after = 0;
		long n_before = 0, n_after = 0;
		long long ino = ino_of(t->root, from);

		bool ok;

		fmt(to, sizeof(to), "%s.renamed", from);
		ok = tree_sum(t->root, from, 0, &before, &n_before) &&
		     sc(renameat(t->root, from, t->root, to), "rename", from) &&
		     gone(t->root, from) && tree_sum(t->root, to, 0, &after, &n_after) &&
		     eq(n_after, n_before, "entries", to) &&
		     truth(after == before, "same names, modes and content", to) &&
		     eq(ino_of(t->root, to), ino, "st_ino", to);
		tap(ok, "rename of lower directory '%s' (%ld entries): no EXDEV, contents intact",
		    from, n_before);
	}
}

static void
g_lower(struct fsc *t)
{
	if (!t->lower_files.n && !t->lower_links.n && !t->lower_write.n && !t->lower_dirs.n) {
		tap_skip("the lower layer", "no --lower-* option given");
		return;
	}
	lower_files(t);
	if (t->read_only)
		return;
	lower_writes(t);
	lower_dirs(t);
}

/* --- a read-only mount --------------------------------------------------------------------- */

static void
readonly_file(struct fsc *t, const char *f)
{
	const struct timespec ts[2] = { { 1, 0 }, { 2, 0 } };
	char path[4096];
	struct stat st;
	/* A non-owner may see EACCES first where the mount (not the superblock) is read-only. */
	int alt = !t->is_root && fstatat(t->root, f, &st, 0) == 0 && st.st_uid != geteuid() ? EACCES
											    : EROFS;

	fmt(path, sizeof(path), "%s/%s", t->dir, f);
	tap(open_fails(t->root, f, O_WRONLY, EROFS, alt) &&
		    open_fails(t->root, f, O_RDWR, EROFS, alt) &&
		    se2(truncate(path, 0), EROFS, alt, "truncate", f),
	    "open for write and truncate of '%s' -> EROFS", f);
	tap(se(unlinkat(t->root, f, 0), EROFS, "unlink", f) &&
		    se(renameat(t->root, f, t->root, "eos-ro-renamed"), EROFS, "rename", f) &&
		    se(linkat(t->root, f, t->root, "eos-ro-link", 0), EROFS, "link", f),
	    "unlink, rename and link of '%s' -> EROFS", f);
	tap(se(fchmodat(t->root, f, 0600, 0), EROFS, "chmod", f) &&
		    se(utimensat(t->root, f, ts, 0), EROFS, "utimensat", f) &&
		    se(setxattr(path, "user.eos", "x", 1, 0), EROFS, "setxattr", f) &&
		    se2(faccessat(t->root, f, W_OK, 0), EROFS, alt, "access W_OK", f),
	    "chmod, utimensat, setxattr and access(W_OK) of '%s' -> EROFS", f);
	if (t->is_root)
		tap(se(fchownat(t->root, f, 1, 1, 0), EROFS, "chown", f), "chown of '%s' -> EROFS",
		    f);
}

static void
g_readonly(struct fsc *t)
{
	struct statvfs sv;

	tap(sc(fstatvfs(t->root, &sv), "fstatvfs", ".") &&
		    truth(sv.f_flag & ST_RDONLY, "ST_RDONLY", "."),
	    "statvfs reports ST_RDONLY");
	tap(open_fails(t->root, "eos-ro-new", O_CREAT | O_WRONLY, EROFS, EROFS) &&
		    se(mkdirat(t->root, "eos-ro-dir", 0755), EROFS, "mkdir", "eos-ro-dir") &&
		    se(symlinkat("x", t->root, "eos-ro-sym"), EROFS, "symlink", "eos-ro-sym") &&
		    se(mkfifoat(t->root, "eos-ro-fifo", 0644), EROFS, "mkfifo", "eos-ro-fifo"),
	    "create, mkdir, symlink and mkfifo -> EROFS");
	if (t->lower_files.n)
		readonly_file(t, t->lower_files.v[0].a);
	else
		tap_skip("writes to an existing file", "no --lower-file given");
	if (t->lower_dirs.n)
		tap(se(unlinkat(t->root, t->lower_dirs.v[0].a, AT_REMOVEDIR), EROFS, "rmdir",
		       t->lower_dirs.v[0].a),
		    "rmdir of '%s' -> EROFS", t->lower_dirs.v[0].a);
}

/* --- driver -------------------------------------------------------------------------------- */

struct fsc_group {
	const char *name;
	void (*run)(struct fsc *t);
	enum group_flags flags;
};

static const struct fsc_group groups[] = {
	{ "lower", g_lower, GROUP_LOWER },
	{ "basic", g_basic, GROUP_WRITE },
	{ "append", g_append, GROUP_WRITE },
	{ "sparse", g_sparse, GROUP_WRITE },
	{ "truncate", g_truncate, GROUP_WRITE },
	{ "fallocate", g_fallocate, GROUP_WRITE },
	{ "copy", g_copy, GROUP_WRITE },
	{ "sync", g_sync, GROUP_WRITE },
	{ "statfs", g_statfs, GROUP_WRITE },
	{ "dirs", g_dirs, GROUP_WRITE },
	{ "nlink", g_nlink, GROUP_WRITE },
	{ "unlink", g_unlink, GROUP_WRITE },
	{ "rename", g_rename, GROUP_WRITE },
	{ "symlink", g_symlink, GROUP_WRITE },
	{ "names", g_names, GROUP_WRITE },
	{ "hardlink", g_hardlink, GROUP_WRITE },
	{ "openunlink", g_openunlink, GROUP_WRITE },
	{ "fifo", g_fifo, GROUP_WRITE },
	{ "nodes", g_nodes, GROUP_WRITE },
	{ "attrs", g_attrs, GROUP_WRITE },
	{ "ino", g_ino, GROUP_WRITE },
	{ "readdir", g_readdir, GROUP_WRITE },
	{ "xattr", g_xattr, GROUP_WRITE },
	{ "mmap", g_mmap, GROUP_WRITE },
	{ "locks", g_locks, GROUP_WRITE },
	{ "perm", g_perm, GROUP_WRITE },
	{ "many", g_many, GROUP_WRITE },
	{ "big", g_big, GROUP_WRITE },
	{ "readonly", g_readonly, GROUP_READ_ONLY },
};

enum {
	N_GROUPS = sizeof(groups) / sizeof(groups[0])
};

static bool
in_list(const char *list, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == '\0'))
			return true;
	return false;
}

/* Every name of the comma-separated list is a group. */
static bool
groups_known(const char *list)
{
	char copy[512], *save = NULL;

	fmt(copy, sizeof(copy), "%s", list);
	for (char *n = strtok_r(copy, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
		bool found = false;

		for (int i = 0; i < N_GROUPS; i++)
			found = found || strcmp(groups[i].name, n) == 0;
		if (!found) {
			fprintf(stderr, "fs-conformance: unknown group '%s' (see --list)\n", n);
			return false;
		}
	}
	return true;
}

static bool
group_selected(const struct fsc *t, const struct fsc_group *gr)
{
	if (gr->flags & GROUP_WRITE && t->read_only)
		return false;
	if (gr->flags & GROUP_READ_ONLY && !t->read_only)
		return false;
	if (t->only && !in_list(t->only, gr->name))
		return false;
	return !(t->skip && in_list(t->skip, gr->name));
}

static void
run_group(struct fsc *t, const struct fsc_group *gr)
{
	info("group %s", gr->name);
	if (!(gr->flags & GROUP_WRITE)) {
		t->g = t->root;
		fmt(t->gpath, sizeof(t->gpath), "%s", t->dir);
	} else {
		fmt(t->gpath, sizeof(t->gpath), "%s/%s/%s", t->dir, t->name, gr->name);
		if (!tap(sc(mkdirat(t->work, gr->name, 0755), "mkdir", gr->name) &&
				 sc(t->g = openat(t->work, gr->name,
						  O_RDONLY | O_DIRECTORY | O_CLOEXEC),
				    "open", gr->name),
			 "group %s: create its directory", gr->name))
			return;
	}
	fmt(where, sizeof(where), "%s", t->gpath);
	gr->run(t);
	if (t->g != t->root)
		close(t->g);
	t->g = -1;
}

static void
usage(FILE *out)
{
	fputs("usage: fs-conformance [OPTIONS] DIR\n"
	      "Run syscall-level filesystem conformance checks in DIR and print TAP.\n"
	      "Creates DIR/NAME (default fs-conformance.PID), one subdirectory per group.\n"
	      "\n"
	      "  --name NAME        the work directory to create in DIR\n"
	      "  --only G1,G2       run only these groups (see --list)\n"
	      "  --skip G1,G2       skip these groups\n"
	      "  --list             print the group names and exit\n"
	      "  --big-mb N         size of the big file in MiB (default 1024; 0: none)\n"
	      "  --many N           entries of the big directory (default 100000; 0: none)\n"
	      "  --uid USER|N       as root: run the permission group in a child that\n"
	      "                     drops to this uid (default: nobody)\n"
	      "  --gid N            the child's gid (default: the user's group, else uid)\n"
	      "  --read-only        DIR is a read-only mount: writes must fail with\n"
	      "                     EROFS; runs only the lower and readonly groups\n"
	      "  --lower-file R=F   DIR/R, a file of the base tree, has exactly the\n"
	      "                     content of the local file F (repeatable)\n"
	      "  --lower-link A=B   DIR/A and DIR/B are hard links of one inode with\n"
	      "                     nlink 2; a line appended to A shows in B\n"
	      "  --lower-write R=F  append a line to DIR/R (content: the local file F);\n"
	      "                     it then reads F + line, same inode (repeatable)\n"
	      "  --lower-dir R      rename directory DIR/R to DIR/R.renamed: no EXDEV,\n"
	      "                     the tree inside intact (repeatable)\n"
	      "  -h, --help         this text\n"
	      "The appended lines are \"eos-conformance appended\" (--lower-write) and\n"
	      "\"eos-conformance via link\" (--lower-link). Paths split at the first '='.\n"
	      "Exit status: 0 all passed, 1 a check failed, 2 usage error.\n",
	      out);
}

static bool
add_pair(struct pairs *ps, char *arg, bool need_eq)
{
	char *eqs = strchr(arg, '=');

	if (ps->n >= MAX_PAIRS || (need_eq && (!eqs || eqs == arg || !eqs[1]))) {
		fprintf(stderr, "fs-conformance: bad or too many values: '%s'\n", arg);
		return false;
	}
	if (eqs)
		*eqs = '\0';
	ps->v[ps->n].a = arg;
	ps->v[ps->n].b = eqs ? eqs + 1 : NULL;
	ps->n++;
	return true;
}

static bool
parse_long(const char *s, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0) {
		fprintf(stderr, "fs-conformance: bad number '%s'\n", s);
		return false;
	}
	*ret = v;
	return true;
}

static bool
parse_uid(struct fsc *t, const char *s)
{
	const struct passwd *pw = getpwnam(s);
	long v;

	if (pw) {
		t->uid = pw->pw_uid;
	} else {
		if (!parse_long(s, &v))
			return false;
		t->uid = (uid_t)v;
		pw = getpwuid(t->uid);
	}
	if (t->gid == (gid_t)-1)
		t->gid = pw ? pw->pw_gid : (gid_t)t->uid;
	t->have_uid = true;
	return true;
}

enum opt {
	OPT_NAME = 256,
	OPT_ONLY,
	OPT_SKIP,
	OPT_LIST,
	OPT_BIG,
	OPT_MANY,
	OPT_UID,
	OPT_GID,
	OPT_RO,
	OPT_LFILE,
	OPT_LLINK,
	OPT_LWRITE,
	OPT_LDIR,
};

static const struct option options[] = {
	{ "name", required_argument, NULL, OPT_NAME },
	{ "only", required_argument, NULL, OPT_ONLY },
	{ "skip", required_argument, NULL, OPT_SKIP },
	{ "list", no_argument, NULL, OPT_LIST },
	{ "big-mb", required_argument, NULL, OPT_BIG },
	{ "many", required_argument, NULL, OPT_MANY },
	{ "uid", required_argument, NULL, OPT_UID },
	{ "gid", required_argument, NULL, OPT_GID },
	{ "read-only", no_argument, NULL, OPT_RO },
	{ "lower-file", required_argument, NULL, OPT_LFILE },
	{ "lower-link", required_argument, NULL, OPT_LLINK },
	{ "lower-write", required_argument, NULL, OPT_LWRITE },
	{ "lower-dir", required_argument, NULL, OPT_LDIR },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Apply one option; returns 0 to go on, 1 to exit 0, 2 on a usage error. */
static int
apply_option(struct fsc *t, int c, char *arg)
{
	long v = 0;

	switch (c) {
	case OPT_NAME:
		t->name = arg;
		return strchr(arg, '/') || !*arg ? 2 : 0;
	case OPT_ONLY:
		t->only = arg;
		return groups_known(arg) ? 0 : 2;
	case OPT_SKIP:
		t->skip = arg;
		return groups_known(arg) ? 0 : 2;
	case OPT_LIST:
		for (int i = 0; i < N_GROUPS; i++)
			puts(groups[i].name);
		return 1;
	case OPT_BIG:
		return parse_long(arg, &t->big_mb) ? 0 : 2;
	case OPT_MANY:
		return parse_long(arg, &t->many) ? 0 : 2;
	case OPT_UID:
		return parse_uid(t, arg) ? 0 : 2;
	case OPT_GID:
		if (!parse_long(arg, &v))
			return 2;
		t->gid = (gid_t)v;
		return 0;
	case OPT_RO:
		t->read_only = true;
		return 0;
	case OPT_LFILE:
		return add_pair(&t->lower_files, arg, true) ? 0 : 2;
	case OPT_LLINK:
		return add_pair(&t->lower_links, arg, true) ? 0 : 2;
	case OPT_LWRITE:
		return add_pair(&t->lower_write, arg, true) ? 0 : 2;
	case OPT_LDIR:
		return add_pair(&t->lower_dirs, arg, false) ? 0 : 2;
	case 'h':
		usage(stdout);
		return 1;
	default:
		return 2;
	}
}

static int
parse_args(struct fsc *t, int argc, char **argv)
{
	int c, r;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1)
		if ((r = apply_option(t, c, optarg)) != 0)
			return r;
	if (optind != argc - 1) {
		fprintf(stderr, "fs-conformance: expected one directory argument\n");
		return 2;
	}
	t->dir = argv[optind];
	return 0;
}

static bool
open_dirs(struct fsc *t, char *name, size_t cap)
{
	t->root = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fmt(where, sizeof(where), "%s", t->dir);
	if (!tap(sc(t->root, "open", "."), "open the directory under test '%s'", t->dir))
		return false;
	if (t->read_only)
		return true;
	if (!t->name) {
		fmt(name, cap, "fs-conformance.%ld", (long)getpid());
		t->name = name;
	}
	t->work = -1;
	return tap(
		sc(mkdirat(t->root, t->name, 0755), "mkdir", t->name) &&
			sc(t->work = openat(t->root, t->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
			   "open", t->name),
		"create the work directory '%s'", t->name);
}

int
main(int argc, char **argv)
{
	struct fsc t = {
		.root = -1, .work = -1, .g = -1, .big_mb = 1024, .many = 100000, .gid = (gid_t)-1
	};
	char name[64];
	int r = parse_args(&t, argc, argv);

	if (r != 0) {
		if (r == 2)
			usage(stderr);
		return r == 1 ? 0 : 2;
	}
	umask(0);
	signal(SIGPIPE, SIG_IGN);
	t.is_root = geteuid() == 0;
	info("fs-conformance on '%s' as uid %u%s", t.dir, (unsigned)geteuid(),
	     t.read_only ? " (read-only)" : "");
	if (open_dirs(&t, name, sizeof(name)))
		for (int i = 0; i < N_GROUPS; i++)
			if (group_selected(&t, &groups[i]))
				run_group(&t, &groups[i]);
	printf("1..%d\n", tap_count);
	if (tap_failed)
		printf("# %d of %d checks failed\n", tap_failed, tap_count);
	return tap_failed ? 1 : 0;
}
