/* SPDX-License-Identifier: MIT */
/*
 * bench/fork: a live session's costs on a base of N files (bench/README.md, "live sessions").
 *
 *	bench/fork [--files N] [--changed K] [--rounds R]
 *
 * Imports N files (100 per directory) into a store in a temp dir, mounts a session in-process
 * (fs/view.h) and measures, through plain syscalls on the mount:
 *	lookup_us     one cold lstat() per file (each one a FUSE LOOKUP of a lower file)
 *	by_name_us    the store's lookup of one name as the view made it before it held a resolved
 *	              version: eos_store_lookup_child() (a sandbox name search, a version read)
 *	by_tree_us    the same through the view's resolved version, eos_tree_lookup_child()
 *	fork_ms       eos_view_fork() of the session holding K changed files (median of R)
 *	publish_ms    eos_view_publish_live() of 10 changed files, the mount in use (median of R)
 * Each figure is one "name<TAB>value<TAB>unit" line on stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/path.h"

#include "bench/bench-util.h"
#include "fs/view.h"
#include "store/store.h"

static const char PROG[] = "bench/fork";
static const char SBX[] = "sbx";

enum {
	PER_DIR = 100,
	PUBLISHED_FILES = 10,
};

struct bench {
	unsigned files, changed, rounds;
	char tmp[64], src[128], store_dir[128], mnt[128];
	struct eos_store *st;
	struct eos_view *v;
	struct eos_view_mount *m;
	pthread_t server;
};

static double
now_s(void)
{
	return (double)eos_mono_ns() / 1e9;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static int
write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t len = (ssize_t)strlen(text);
	int ok = fd >= 0 && write(fd, text, (size_t)len) == len;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -EIO;
}

static int
make_source(struct bench *b)
{
	char path[256];

	for (unsigned i = 0; i < b->files; i++) {
		if (i % PER_DIR == 0) {
			snprintf(path, sizeof(path), "%s/d%04u", b->src, i / PER_DIR);
			if (mkdir(path, 0755) < 0)
				return -errno;
		}
		snprintf(path, sizeof(path), "%s/d%04u/f%06u", b->src, i / PER_DIR, i);
		if (write_file(path, "one\ntwo\nthree\n") < 0)
			return -EIO;
	}
	return 0;
}

static void *
serve_main(void *arg)
{
	eos_view_mount_serve(arg, NULL);
	return NULL;
}

static int
setup(struct bench *b, struct eos_error *err)
{
	struct eos_store_options so = { .create = true };
	struct eos_import_options io = { .sandbox = SBX };
	struct eos_view_options vo = { .sandbox = SBX, .session = "s1", .create = true };
	struct eos_import_result ir;
	int r;

	snprintf(b->tmp, sizeof(b->tmp), "/tmp/eos-bench-fork-XXXXXX");
	if (!mkdtemp(b->tmp))
		return eos_error_set(err, -errno, "mkdtemp: %m");
	snprintf(b->src, sizeof(b->src), "%s/src", b->tmp);
	snprintf(b->store_dir, sizeof(b->store_dir), "%s/store", b->tmp);
	snprintf(b->mnt, sizeof(b->mnt), "%s/mnt", b->tmp);
	if (mkdir(b->src, 0755) < 0 || mkdir(b->mnt, 0755) < 0 || make_source(b) < 0)
		return eos_error_set(err, -EIO, "cannot write the source tree in '%s'", b->tmp);
	r = eos_store_open(b->store_dir, &so, &b->st, err);
	r = r ?: eos_store_import(b->st, b->src, &io, &ir, err);
	vo.store = b->st;
	r = r ?: eos_view_open(&vo, &b->v, err);
	r = r ?: eos_view_mount(b->v, b->mnt, NULL, &b->m, err);
	if (r == 0 && pthread_create(&b->server, NULL, serve_main, b->m) != 0)
		r = eos_error_set(err, -EAGAIN, "cannot start the server thread");
	return r;
}

static double
cold_lookups(struct bench *b)
{
	char path[256];
	struct stat st;
	double t0 = now_s();

	for (unsigned i = 0; i < b->files; i++) {
		snprintf(path, sizeof(path), "%s/d%04u/f%06u", b->mnt, i / PER_DIR, i);
		if (lstat(path, &st) < 0)
			return -1;
	}
	return (now_s() - t0) / b->files * 1e6;
}

/* One lookup per file in the store: by sandbox name and version (tree NULL), or through tree. */
static double
store_lookups(struct bench *b, const struct eos_tree *tree, struct eos_error *err)
{
	enum {
		PASSES = 5
	};
	uint64_t v = eos_view_version(b->v);
	struct eos_stat dir, st;
	char dpath[32], name[32];
	double t0 = now_s();
	int r = 0;

	for (unsigned p = 0; p < PASSES; p++)
		for (unsigned i = 0; r == 0 && i < b->files; i++) {
			snprintf(dpath, sizeof(dpath), "d%04u", i / PER_DIR);
			snprintf(name, sizeof(name), "f%06u", i);
			if (i % PER_DIR == 0)
				r = eos_store_stat(b->st, SBX, v, dpath, &dir, err);
			r = r
				    ?: tree
				       ? eos_tree_lookup_child(tree, dpath, &dir, name, &st, err)
				       : eos_store_lookup_child(b->st, SBX, v, dpath, &dir, name,
								&st, err);
		}
	return r < 0 ? -1 : (now_s() - t0) / (b->files * PASSES) * 1e6;
}

static int
bench_lookups(struct bench *b, double *ret_name, double *ret_tree, struct eos_error *err)
{
	struct eos_tree *tree = NULL;
	int r = eos_store_tree_open(b->st, SBX, eos_view_version(b->v), &tree, err);

	for (int round = 0; r == 0 && round < 2; round++) { /* the first warms the caches */
		*ret_name = store_lookups(b, NULL, err);
		*ret_tree = store_lookups(b, tree, err);
		if (*ret_name < 0 || *ret_tree < 0)
			r = -EIO;
	}
	eos_tree_free(tree);
	return r;
}

/* Change files [first, first + n) through the mount (round r makes the bytes differ). */
static int
change(struct bench *b, unsigned first, unsigned n, unsigned r)
{
	char path[256], text[64];

	snprintf(text, sizeof(text), "one\nround %u\nthree\n", r);
	for (unsigned i = first; i < first + n && i < b->files; i++) {
		snprintf(path, sizeof(path), "%s/d%04u/f%06u", b->mnt, i / PER_DIR, i);
		if (write_file(path, text) < 0)
			return -EIO;
	}
	return 0;
}

static int
bench_fork(struct bench *b, double *ret_ms, struct eos_error *err)
{
	double *ms = calloc(b->rounds, sizeof(*ms));
	char name[32];
	int r = ms ? change(b, 0, b->changed, 0) : -ENOMEM;

	for (unsigned i = 0; r == 0 && i < b->rounds; i++) {
		double t0 = now_s();

		snprintf(name, sizeof(name), "fork-%u", i);
		r = eos_view_fork(b->v, name, err);
		ms[i] = (now_s() - t0) * 1e3;
	}
	if (r == 0)
		*ret_ms = median(ms, b->rounds);
	free(ms);
	return r;
}

static int
bench_publish(struct bench *b, double *ret_ms, struct eos_error *err)
{
	double *ms = calloc(b->rounds, sizeof(*ms));
	int r = ms ? 0 : -ENOMEM;

	for (unsigned i = 0; r == 0 && i < b->rounds; i++) {
		struct eos_publish_result res;
		double t0;

		r = change(b, b->files / 2, PUBLISHED_FILES, i + 1);
		t0 = now_s();
		r = r ?: eos_view_publish_live(b->v, b->m, NULL, &res, err);
		ms[i] = (now_s() - t0) * 1e3;
		if (r == 0 && res.status != EOS_PUBLISH_PUBLISHED)
			r = eos_error_set(err, -EIO, "the publish was %s",
					  eos_publish_status_name(res.status));
		if (r == 0)
			eos_publish_result_release(&res);
	}
	if (r == 0)
		*ret_ms = median(ms, b->rounds);
	free(ms);
	return r;
}

static void
teardown(struct bench *b)
{
	if (b->m) {
		eos_view_mount_stop(b->m);
		pthread_join(b->server, NULL);
		eos_view_mount_free(b->m);
	}
	eos_view_close(b->v);
	eos_store_close(b->st);
	if (b->tmp[0])
		eos_rm_rf(b->tmp);
}

static int
parse(int argc, char **argv, struct bench *b)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		unsigned long n = strtoul(argv[i + 1], NULL, 10);

		if (strcmp(argv[i], "--files") == 0 && n > 0)
			b->files = (unsigned)n;
		else if (strcmp(argv[i], "--changed") == 0 && n > 0)
			b->changed = (unsigned)n;
		else if (strcmp(argv[i], "--rounds") == 0 && n > 0)
			b->rounds = (unsigned)n;
		else
			return -EINVAL;
	}
	return argc % 2 == 1 ? 0 : -EINVAL;
}

int
main(int argc, char **argv)
{
	struct bench b = { .files = 1000, .changed = 100, .rounds = 5 };
	struct eos_error err = { 0 };
	double lookup_us, fork_ms = 0, publish_ms = 0, by_name = 0, by_tree = 0;
	int r = parse(argc, argv, &b);

	if (r < 0) {
		fprintf(stderr, "usage: %s [--files N] [--changed K] [--rounds R]\n", PROG);
		return 2;
	}
	r = setup(&b, &err);
	lookup_us = r == 0 ? cold_lookups(&b) : 0;
	if (r == 0 && lookup_us < 0)
		r = eos_error_set(&err, -EIO, "lstat through the mount failed");
	r = r ?: bench_lookups(&b, &by_name, &by_tree, &err);
	r = r ?: bench_fork(&b, &fork_ms, &err);
	r = r ?: bench_publish(&b, &publish_ms, &err);
	teardown(&b);
	if (r < 0)
		return bench_fail(PROG, "run", &err, r);
	bench_report("files", b.files, "files");
	bench_report("lookup_us", lookup_us, "us");
	bench_report("by_name_us", by_name, "us");
	bench_report("by_tree_us", by_tree, "us");
	bench_report("fork_ms", fork_ms, "ms");
	bench_report("publish_ms", publish_ms, "ms");
	return 0;
}
