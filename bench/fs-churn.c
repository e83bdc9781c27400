/* SPDX-License-Identifier: MIT */
/*
 * fs-churn: the create-and-delete storm of bench/churn (see bench/README.md, "churn").
 *
 *	fs-churn DIR --files N --pid PID [--every K]
 *
 * Creates DIR (which must not exist) with 100 subdirectories, then N times: creates a file of
 * 100 bytes in one of them (round robin), closes it and unlinks it, so at most one file exists
 * at a time. Every K files (default N / 10) and at the end it prints "files<TAB>N<TAB>rss_kib<TAB>
 * KIB" with the resident memory of process PID (the serving eosfs), read from
 * /proc/PID/status. The first failure is reported on stderr and the exit status is 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

enum {
	CHURN_DIRS = 100,
	CHURN_SIZE = 100,
};

struct churn_opts {
	const char *dir;
	unsigned long files, every;
	long pid;
};

static long
rss_kib(long pid)
{
	char path[64], line[256];
	cleanup_fclose FILE *f = NULL;
	long kib = -1;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	return kib;
}

static int
fail(const char *what, const char *path)
{
	fprintf(stderr, "fs-churn: %s '%s': %s\n", what, path, strerror(errno));
	return 1;
}

static int
one_file(const char *dir, unsigned long i)
{
	static const char data[CHURN_SIZE] = "churn";
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/d%02lu/f%lu", dir, i % CHURN_DIRS, i);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail("create", path);
	if (write(fd, data, sizeof(data)) != (ssize_t)sizeof(data)) {
		close(fd);
		return fail("write", path);
	}
	if (close(fd) < 0)
		return fail("close", path);
	return unlink(path) < 0 ? fail("unlink", path) : 0;
}

static int
parse(int argc, char **argv, struct churn_opts *o)
{
	static const struct option opts[] = { { "files", required_argument, NULL, 'n' },
					      { "pid", required_argument, NULL, 'p' },
					      { "every", required_argument, NULL, 'e' },
					      { 0 } };
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'n')
			o->files = strtoul(optarg, NULL, 10);
		else if (c == 'p')
			o->pid = strtol(optarg, NULL, 10);
		else if (c == 'e')
			o->every = strtoul(optarg, NULL, 10);
		else
			return -1;
	}
	if (optind + 1 != argc || o->files == 0 || o->pid <= 0)
		return -1;
	o->dir = argv[optind];
	if (o->every == 0)
		o->every = o->files / 10 ? o->files / 10 : 1;
	return 0;
}

int
main(int argc, char **argv)
{
	struct churn_opts o = { 0 };
	char path[4096];

	if (parse(argc, argv, &o) < 0) {
		fputs("usage: fs-churn DIR --files N --pid PID [--every K]\n", stderr);
		return 2;
	}
	if (mkdir(o.dir, 0755) < 0)
		return fail("mkdir", o.dir);
	for (unsigned i = 0; i < CHURN_DIRS; i++) {
		snprintf(path, sizeof(path), "%s/d%02u", o.dir, i);
		if (mkdir(path, 0755) < 0)
			return fail("mkdir", path);
	}
	printf("files\t0\trss_kib\t%ld\n", rss_kib(o.pid));
	for (unsigned long i = 0; i < o.files; i++) {
		if (one_file(o.dir, i))
			return 1;
		if ((i + 1) % o.every == 0 || i + 1 == o.files) {
			printf("files\t%lu\trss_kib\t%ld\n", i + 1, rss_kib(o.pid));
			fflush(stdout);
		}
	}
	return 0;
}
