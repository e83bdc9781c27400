/* SPDX-License-Identifier: MIT */
/*
 * fs-files: the small-files workload of bench/fs (see bench/README.md).
 *
 *	fs-files DIR [--files N] [--size BYTES]
 *
 * Creates DIR (which must not exist), then N small files (default 20000 of 100 bytes) in a
 * two-level tree of 20 x 10 directories (DIR/dNN/dNN/fNNNNN), writing each file with one write();
 * then lstat()s every file; then unlinks every file and removes every directory, DIR included.
 * Each phase is timed separately and printed as "create<TAB>SECONDS", "stat<TAB>SECONDS",
 * "delete<TAB>SECONDS" on stdout. Every operation is checked: the first failure is reported on
 * stderr and the exit status is 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

enum {
	FILES_TOP_DIRS = 20,
	FILES_SUB_DIRS = 10,
	FILES_LEAVES = FILES_TOP_DIRS * FILES_SUB_DIRS,
	FILES_LEAF_MAX = 32, /* "dNN/dNN" */
	FILES_NAME_MAX = 64,
	FILES_MAX_SIZE = 1 << 20,
};

struct files_opts {
	const char *dir;
	unsigned long files;
	size_t size;
};

/* The path of leaf directory `leaf`, relative to DIR. */
static void
leaf_path(char *buf, size_t len, unsigned leaf)
{
	snprintf(buf, len, "d%02u/d%02u", leaf / FILES_SUB_DIRS, leaf % FILES_SUB_DIRS);
}

/* The path of file `i` (files are spread round-robin over the leaves), relative to DIR. */
static void
file_path(char *buf, size_t len, unsigned long i)
{
	char leaf[FILES_LEAF_MAX];

	leaf_path(leaf, sizeof(leaf), (unsigned)(i % FILES_LEAVES));
	snprintf(buf, len, "%s/f%05lu", leaf, i);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
fail(const char *what, const char *path)
{
	fprintf(stderr, "fs-files: %s '%s': %s\n", what, path, strerror(errno));
	return -1;
}

static int
make_dirs(int dfd)
{
	char path[FILES_NAME_MAX];

	for (unsigned top = 0; top < FILES_TOP_DIRS; top++) {
		snprintf(path, sizeof(path), "d%02u", top);
		if (mkdirat(dfd, path, 0755) < 0)
			return fail("mkdir", path);
	}
	for (unsigned leaf = 0; leaf < FILES_LEAVES; leaf++) {
		leaf_path(path, sizeof(path), leaf);
		if (mkdirat(dfd, path, 0755) < 0)
			return fail("mkdir", path);
	}
	return 0;
}

static int
create_file(int dfd, const char *path, const char *data, size_t size)
{
	cleanup_close int fd = -1;
	ssize_t n;

	fd = openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail("create", path);
	n = write(fd, data, size);
	if (n < 0 || (size_t)n != size)
		return fail("write", path);
	if (close(TAKE_FD(fd)) < 0)
		return fail("close", path);
	return 0;
}

static int
phase_create(int dfd, const struct files_opts *o)
{
	char path[FILES_NAME_MAX];
	cleanup_free char *data = NULL;

	data = malloc(o->size ? o->size : 1);
	if (!data) {
		fprintf(stderr, "fs-files: out of memory\n");
		return -1;
	}
	memset(data, 'x', o->size);
	if (make_dirs(dfd) < 0)
		return -1;
	for (unsigned long i = 0; i < o->files; i++) {
		file_path(path, sizeof(path), i);
		if (create_file(dfd, path, data, o->size) < 0)
			return -1;
	}
	return 0;
}

static int
phase_stat(int dfd, const struct files_opts *o)
{
	char path[FILES_NAME_MAX];
	struct stat st;

	for (unsigned long i = 0; i < o->files; i++) {
		file_path(path, sizeof(path), i);
		if (fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return fail("stat", path);
		if (!S_ISREG(st.st_mode) || (size_t)st.st_size != o->size) {
			errno = EIO;
			return fail("unexpected type or size of", path);
		}
	}
	return 0;
}

static int
phase_delete(int dfd, const struct files_opts *o)
{
	char path[FILES_NAME_MAX];

	for (unsigned long i = 0; i < o->files; i++) {
		file_path(path, sizeof(path), i);
		if (unlinkat(dfd, path, 0) < 0)
			return fail("unlink", path);
	}
	for (unsigned leaf = 0; leaf < FILES_LEAVES; leaf++) {
		leaf_path(path, sizeof(path), leaf);
		if (unlinkat(dfd, path, AT_REMOVEDIR) < 0)
			return fail("rmdir", path);
	}
	for (unsigned top = 0; top < FILES_TOP_DIRS; top++) {
		snprintf(path, sizeof(path), "d%02u", top);
		if (unlinkat(dfd, path, AT_REMOVEDIR) < 0)
			return fail("rmdir", path);
	}
	return 0;
}

/* Run one phase and print its wall time. */
static int
timed(const char *name, int (*phase)(int, const struct files_opts *), int dfd,
      const struct files_opts *o)
{
	double t0 = now();

	if (phase(dfd, o) < 0)
		return -1;
	printf("%s\t%.6f\n", name, now() - t0);
	fflush(stdout);
	return 0;
}

static int
run(const struct files_opts *o)
{
	cleanup_close int dfd = -1;

	if (mkdir(o->dir, 0755) < 0)
		return fail("mkdir", o->dir);
	dfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fail("open", o->dir);
	if (timed("create", phase_create, dfd, o) < 0 || timed("stat", phase_stat, dfd, o) < 0 ||
	    timed("delete", phase_delete, dfd, o) < 0)
		return -1;
	if (rmdir(o->dir) < 0)
		return fail("rmdir", o->dir);
	return 0;
}

static bool
parse_ulong(const char *s, unsigned long max, unsigned long *ret)
{
	char *end = NULL;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v > max)
		return false;
	*ret = v;
	return true;
}

static int
usage(void)
{
	fprintf(stderr, "usage: fs-files DIR [--files N] [--size BYTES]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "files", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct files_opts o = { .files = 20000, .size = 100 };
	unsigned long v;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!parse_ulong(optarg, 99999, &o.files))
				return usage();
			break;
		case 's':
			if (!parse_ulong(optarg, FILES_MAX_SIZE, &v))
				return usage();
			o.size = v;
			break;
		default:
			return usage();
		}
	}
	if (optind != argc - 1)
		return usage();
	o.dir = argv[optind];
	return run(&o) < 0 ? 1 : 0;
}
