/* SPDX-License-Identifier: MIT */
/*
 * space-reclaim: does disk space come back after destroy + gc and after squash, and what does
 * giving it back cost (bench/README.md, section "space")?
 *
 *	space-reclaim --store DIR [--base-mib 256] [--sandbox-mib 512] [--file-kib 512]
 *
 * destroy: a sandbox "base" of BASE MiB of random files stays all along; a sandbox "big" of
 * SANDBOX MiB is written, destroyed and gc runs. squash: a sandbox "sq" of SANDBOX MiB is written
 * and every file is rewritten with new bytes in two more layers, then squash folds them; then the
 * same with many small commits (bench_squash_small()). Disk
 * bytes are the blocks of every file under DIR (what du counts), measured after
 * eos_store_stats() has written RocksDB's memtables out; the wall time of destroy, gc and squash
 * includes the compactions that give the space back. Uses the public API only.
 *
 * Output: one line per figure, "name<TAB>value<TAB>unit", on stdout; progress on stderr.
 * DIR must not hold a store yet (it is created; remove it afterwards).
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/error.h"

#include "bench/bench-util.h"
#include "store/store.h"

#define MIB (1024.0 * 1024.0)

enum {
	SMALL_FILES = 4, /* files per small commit */
};

struct opts {
	const char *store;
	unsigned base_mib, sandbox_mib, file_kib;
};

static int
fail(const char *what, const struct eos_error *err, int r)
{
	return bench_fail("space-reclaim", what, err, r);
}

static uint64_t du_total;

static int
du_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)path;
	(void)type;
	(void)ftw;
	du_total += (uint64_t)sb->st_blocks * 512;
	return 0;
}

/* Blocks of every file under dir, after RocksDB wrote its memtables out. */
static double
disk_mib(struct eos_store *st, const char *dir)
{
	struct eos_store_stats s;

	eos_store_stats(st, &s, NULL);
	du_total = 0;
	nftw(dir, du_one, 64, FTW_PHYS);
	return (double)du_total / MIB;
}

/* Write files f<first> .. f<first+n-1> of random bytes (one change set) into sandbox id. */
static int
write_files(struct eos_store *st, const char *id, bool create, unsigned first, unsigned n,
	    uint64_t seed, const struct opts *o, struct eos_error *err)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	struct eos_attr attr = { .mode = 0644, .mtime_ns = 1700000000LL * 1000000000LL };
	size_t size = (size_t)o->file_kib * 1024;
	cleanup_free uint8_t *data = malloc(size);
	struct eos_commit_result res;
	char path[64];
	int r;

	if (!data)
		return eos_error_set(err, -ENOMEM, "out of memory");
	r = create ? eos_changeset_new_sandbox(st, id, "bench", &attr, &cs, err)
		   : eos_changeset_new(st, id, &cs, err);
	for (unsigned i = first; r == 0 && i < first + n; i++) {
		bench_fill(data, size, seed * 1000000 + i);
		snprintf(path, sizeof(path), "f%05u", i);
		r = eos_changeset_put_file_mem(cs, path, &attr, data, size, err);
	}
	return r ?: eos_changeset_commit(cs, 0, &res, err);
}

/* Files of mib MiB. */
static unsigned
files_of(const struct opts *o, unsigned mib)
{
	return (unsigned)((uint64_t)mib * 1024 / o->file_kib);
}

static int
bench_destroy(struct eos_store *st, const struct opts *o)
{
	struct eos_error err = { 0 };
	double before, with;
	int64_t t;
	int r;

	fprintf(stderr, "destroy: writing %u MiB base and %u MiB sandbox\n", o->base_mib,
		o->sandbox_mib);
	if ((r = write_files(st, "base", true, 0, files_of(o, o->base_mib), 1, o, &err)) < 0)
		return fail("write base", &err, r);
	before = disk_mib(st, o->store);
	if ((r = write_files(st, "big", true, 0, files_of(o, o->sandbox_mib), 2, o, &err)) < 0)
		return fail("write big", &err, r);
	with = disk_mib(st, o->store);
	bench_report("destroy.disk_before", before, "MiB");
	bench_report("destroy.disk_with_sandbox", with, "MiB");
	t = eos_mono_ns();
	if ((r = eos_store_sandbox_destroy(st, "big", &err)) < 0)
		return fail("destroy", &err, r);
	bench_report("destroy.seconds", (double)(eos_mono_ns() - t) / 1e9, "s");
	t = eos_mono_ns();
	if ((r = eos_store_gc(st, NULL, &err)) < 0)
		return fail("gc", &err, r);
	bench_report("gc.seconds", (double)(eos_mono_ns() - t) / 1e9, "s");
	bench_report("destroy.disk_after_gc", disk_mib(st, o->store), "MiB");
	bench_report("destroy.after_over_before", disk_mib(st, o->store) / before, "ratio");
	return 0;
}

static int
bench_squash(struct eos_store *st, const struct opts *o)
{
	struct eos_squash_result res = { 0 };
	struct eos_error err = { 0 };
	double before, with;
	int64_t t;
	int r;

	fprintf(stderr, "squash: %u MiB sandbox, rewritten twice\n", o->sandbox_mib);
	if ((r = write_files(st, "sq", true, 0, files_of(o, o->sandbox_mib), 3, o, &err)) < 0)
		return fail("write sq", &err, r);
	before = disk_mib(st, o->store);
	if ((r = write_files(st, "sq", false, 0, files_of(o, o->sandbox_mib), 4, o, &err)) < 0 ||
	    (r = write_files(st, "sq", false, 0, files_of(o, o->sandbox_mib), 5, o, &err)) < 0)
		return fail("rewrite sq", &err, r);
	with = disk_mib(st, o->store);
	bench_report("squash.disk_before_rewrites", before, "MiB");
	bench_report("squash.disk_with_3_layers", with, "MiB");
	t = eos_mono_ns();
	if ((r = eos_store_squash(st, "sq", &res, &err)) < 0)
		return fail("squash", &err, r);
	bench_report("squash.seconds", (double)(eos_mono_ns() - t) / 1e9, "s");
	bench_report("squash.disk_after", disk_mib(st, o->store), "MiB");
	bench_report("squash.after_over_before", disk_mib(st, o->store) / before, "ratio");
	return 0;
}

/*
 * The same with small commits: a sandbox "sm" of SANDBOX / 8 MiB gets SMALL_LAYERS layers, each
 * rewriting the next SMALL_FILES files (below the size after which a commit flushes the chunks
 * memtable, so consecutive commits share blob files), then squash folds them.
 */
static int
bench_squash_small(struct eos_store *st, const struct opts *o)
{
	unsigned files = files_of(o, o->sandbox_mib / 8), layers = 2 * files / SMALL_FILES;
	struct eos_squash_result res = { 0 };
	struct eos_error err = { 0 };
	double before;
	int64_t t;
	int r;

	fprintf(stderr, "squash: %u layers of %u files\n", layers, SMALL_FILES);
	if ((r = write_files(st, "sm", true, 0, files, 6, o, &err)) < 0)
		return fail("write sm", &err, r);
	before = disk_mib(st, o->store);
	for (unsigned i = 0; i < layers; i++)
		if ((r = write_files(st, "sm", false, i * SMALL_FILES % files, SMALL_FILES, 7 + i,
				     o, &err)) < 0)
			return fail("rewrite sm", &err, r);
	bench_report("squash_small.layers", layers, "layers");
	bench_report("squash_small.disk_before_rewrites", before, "MiB");
	bench_report("squash_small.disk_with_layers", disk_mib(st, o->store), "MiB");
	t = eos_mono_ns();
	if ((r = eos_store_squash(st, "sm", &res, &err)) < 0)
		return fail("squash", &err, r);
	bench_report("squash_small.seconds", (double)(eos_mono_ns() - t) / 1e9, "s");
	bench_report("squash_small.disk_after", disk_mib(st, o->store), "MiB");
	bench_report("squash_small.after_over_before", disk_mib(st, o->store) / before, "ratio");
	return 0;
}

static int
parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "base-mib", required_argument, NULL, 'b' },
		{ "sandbox-mib", required_argument, NULL, 'm' },
		{ "file-kib", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		unsigned long v = optarg ? strtoul(optarg, NULL, 10) : 0;

		if (c == 's')
			o->store = optarg;
		else if (c == 'b' && v > 0)
			o->base_mib = (unsigned)v;
		else if (c == 'm' && v > 0)
			o->sandbox_mib = (unsigned)v;
		else if (c == 'f' && v > 0)
			o->file_kib = (unsigned)v;
		else
			return -1;
	}
	return o->store && optind == argc ? 0 : -1;
}

int
main(int argc, char **argv)
{
	struct opts o = { .base_mib = 256, .sandbox_mib = 512, .file_kib = 512 };
	struct eos_store_options so = { .create = true };
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = NULL;
	struct eos_error err = { 0 };
	int r;

	if (parse(argc, argv, &o) < 0) {
		fprintf(stderr, "usage: space-reclaim --store DIR [--base-mib N] [--sandbox-mib N] "
				"[--file-kib N]\n");
		return 2;
	}
	if ((r = eos_store_open(o.store, &so, &st, &err)) < 0)
		return fail("open", &err, r);
	return bench_destroy(st, &o) ?: bench_squash(st, &o) ?: bench_squash_small(st, &o);
}
