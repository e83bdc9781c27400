/* SPDX-License-Identifier: MIT */
/*
 * store-bench: micro-benchmarks of the store through its public API (store/store.h), driven by
 * bench/store (see bench/README.md for what each figure means).
 *
 *	store-bench lookup --store DIR [--depths 1,100,10000] [--iterations N]
 *		History depth vs lookup latency: for each depth D, a sandbox of 1000 files in 10
 *		directories, then one layer per commit, each rewriting the probed file (so it has
 *		one version per layer) and one other file, up to D layers. All sandboxes share the
 *		store; eos_store_stat() of the probed path at the head and at version 1 of each is
 *		then timed N times in interleaved rounds, so every depth sees the same store state.
 *	store-bench read --store DIR [--size 1G] [--drop-caches]
 *		Writes one file of that size through a change set, closes the store (with
 *		--drop-caches, also drops the kernel page cache: needs root), reopens it with an
 *empty chunk cache big enough for the file, and reads it sequentially in 1 MiB pieces twice: cold,
 *then warm. A third, untimed pass verifies every byte.
 *
 * Output: one line per figure, "name<TAB>value<TAB>unit", on stdout; progress on stderr.
 * DIR must not hold a store yet (it is created).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"

#include "store/store.h"

enum {
	BENCH_DIRS = 10,
	BENCH_FILES_PER_DIR = 100,
	BENCH_PIECE = 1 << 20, /* read size */
	BENCH_SEGMENT = 64 << 10,
	BENCH_MAX_DEPTHS = 16,
};

static const char bench_lookup_path[] = "d05/f050";
static const char bench_read_sandbox[] = "bench-read";
static const char bench_read_path[] = "big.bin";

struct bench_opts {
	const char *store;
	uint64_t size;
	unsigned iterations;
	bool drop_caches;
	uint64_t depths[BENCH_MAX_DEPTHS];
	size_t ndepths;
};

/* --- helpers ---------------------------------------------------------------------------------- */

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One figure: "name<TAB>value<TAB>unit"; whole numbers without decimals. */
static void
report(const char *name, double value, const char *unit)
{
	if (value >= 0 && value < 1e18 && value == (double)(uint64_t)value)
		printf("%s\t%" PRIu64 "\t%s\n", name, (uint64_t)value, unit);
	else
		printf("%s\t%.3f\t%s\n", name, value, unit);
	fflush(stdout);
}

static void progress(const char *fmt, ...) EOS_PRINTF(1, 2);

static void
progress(const char *fmt, ...)
{
	va_list ap;

	fputs("store-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static struct eos_attr
bench_attr(uint32_t mode)
{
	return (struct eos_attr){
		.mode = mode, .uid = 0, .gid = 0, .mtime_ns = 1700000000000000000
	};
}

static int
open_store(const char *dir, size_t cache_bytes, struct eos_store **ret, struct eos_error *err)
{
	struct eos_store_options opts = { .cache_bytes = cache_bytes, .create = true };

	return eos_store_open(dir, &opts, ret, err);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Sort samples[n] and return the value at quantile q (0..1). */
static uint64_t
quantile(uint64_t *samples, size_t n, double q)
{
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);

	qsort(samples, n, sizeof(*samples), cmp_u64);
	return samples[i < n ? i : n - 1];
}

/* --- lookup ----------------------------------------------------------------------------------- */

/* Name of the sandbox whose history has the given depth. */
static void
lookup_sandbox(uint64_t depth, char *out, size_t size)
{
	snprintf(out, size, "bench-lookup-%" PRIu64, depth);
}

static int
put_small(struct eos_changeset *cs, const char *path, uint64_t version, struct eos_error *err)
{
	struct eos_attr attr = bench_attr(0644);
	char data[96];
	int len =
		snprintf(data, sizeof(data), "%s written by version %" PRIu64 "\n", path, version);

	return eos_changeset_put_file_mem(cs, path, &attr, data, (size_t)len, err);
}

/* Version 1 of sandbox: BENCH_DIRS directories of BENCH_FILES_PER_DIR small files each. */
static int
create_tree(struct eos_store *st, const char *sandbox, struct eos_error *err)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	struct eos_attr dir_attr = bench_attr(0755);
	struct eos_commit_result res;
	char path[32];
	int r;

	r = eos_changeset_new_sandbox(st, sandbox, "bench:lookup", &dir_attr, &cs, err);
	for (unsigned d = 0; r >= 0 && d < BENCH_DIRS; d++) {
		snprintf(path, sizeof(path), "d%02u", d);
		r = eos_changeset_mkdir(cs, path, &dir_attr, false, err);
		for (unsigned f = 0; r >= 0 && f < BENCH_FILES_PER_DIR; f++) {
			snprintf(path, sizeof(path), "d%02u/f%03u", d, f);
			r = put_small(cs, path, 1, err);
		}
	}
	if (r < 0)
		return r;
	return eos_changeset_commit(cs, 0, &res, err);
}

/* Commit version v on top of v - 1: the probed file and one other file change. */
static int
commit_layer(struct eos_store *st, const char *sandbox, uint64_t v, struct eos_error *err)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	struct eos_commit_result res;
	unsigned other = (unsigned)(v % (BENCH_DIRS * BENCH_FILES_PER_DIR));
	char path[32];
	int r;

	if (other == 550) /* d05/f050 is the probed file itself */
		other++;
	snprintf(path, sizeof(path), "d%02u/f%03u", other / BENCH_FILES_PER_DIR,
		 other % BENCH_FILES_PER_DIR);
	r = eos_changeset_new(st, sandbox, &cs, err);
	if (r >= 0)
		r = put_small(cs, bench_lookup_path, v, err);
	if (r >= 0)
		r = put_small(cs, path, v, err);
	if (r >= 0)
		r = eos_changeset_commit(cs, v - 1, &res, err);
	if (r >= 0 && res.version != v)
		r = eos_error_set(err, -EIO, "commit made version %" PRIu64 ", expected %" PRIu64,
				  res.version, v);
	return r;
}

/* A sandbox whose head is version depth; report the time per commit. */
static int
build_history(struct eos_store *st, uint64_t depth, struct eos_error *err)
{
	char sandbox[64], name[64];
	uint64_t start;
	int r;

	lookup_sandbox(depth, sandbox, sizeof(sandbox));
	r = create_tree(st, sandbox, err);
	start = now_ns();
	for (uint64_t v = 2; r >= 0 && v <= depth; v++)
		r = commit_layer(st, sandbox, v, err);
	if (r >= 0 && depth > 1) {
		double secs = (double)(now_ns() - start) / 1e9;

		snprintf(name, sizeof(name), "lookup.depth%" PRIu64 ".commit_ms", depth);
		report(name, secs * 1e3 / (double)(depth - 1), "ms/layer");
	}
	return r;
}

/* The probed path at v must have been written by v. */
static int
check_version(struct eos_store *st, const char *sandbox, uint64_t v, struct eos_error *err)
{
	struct eos_stat sb;
	int r = eos_store_stat(st, sandbox, v, bench_lookup_path, &sb, err);

	if (r < 0)
		return r;
	if (sb.version != v)
		return eos_error_set(err, -EIO, "'%s' at version %" PRIu64 " has version %" PRIu64,
				     bench_lookup_path, v, sb.version);
	return 0;
}

/* Samples of eos_store_stat() for one (depth, version) probe. */
struct probe {
	const char *phase; /* "lookup" (history just written) or "lookup.flushed" */
	char sandbox[64];
	uint64_t depth, version;
	const char *what; /* "head" or "oldest" */
	uint64_t *samples;
	size_t n;
};

/* Time n more lookups of the probed path into p. */
static int
probe_run(struct eos_store *st, struct probe *p, unsigned n, struct eos_error *err)
{
	struct eos_stat sb;

	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = now_ns();
		int r = eos_store_stat(st, p->sandbox, p->version, bench_lookup_path, &sb, err);

		p->samples[p->n++] = now_ns() - t0;
		if (r < 0)
			return r;
	}
	return 0;
}

static void
probe_report(struct probe *p)
{
	char name[96];

	snprintf(name, sizeof(name), "%s.depth%" PRIu64 ".%s.median", p->phase, p->depth, p->what);
	report(name, (double)quantile(p->samples, p->n, 0.5), "ns");
	snprintf(name, sizeof(name), "%s.depth%" PRIu64 ".%s.p99", p->phase, p->depth, p->what);
	report(name, (double)quantile(p->samples, p->n, 0.99), "ns");
}

enum {
	LOOKUP_ROUNDS = 20
};

/*
 * All depths live side by side in one store and are measured in interleaved rounds, so that
 * RocksDB's state (memtables, files, caches) and the machine's noise are the same for each.
 */
static int
measure_probes(struct eos_store *st, struct probe *probes, size_t n, unsigned iterations,
	       struct eos_error *err)
{
	unsigned per_round = iterations / LOOKUP_ROUNDS + 1;
	int r = 0;

	for (size_t i = 0; i < n; i++)
		probes[i].n = 0;
	for (size_t i = 0; r >= 0 && i < n; i++) { /* warm-up: block cache, CPU caches */
		r = probe_run(st, &probes[i], per_round, err);
		probes[i].n = 0;
	}
	for (unsigned round = 0; r >= 0 && round < LOOKUP_ROUNDS; round++)
		for (size_t i = 0; r >= 0 && i < n; i++)
			r = probe_run(st, &probes[i], per_round, err);
	for (size_t i = 0; r >= 0 && i < n; i++)
		probe_report(&probes[i]);
	return r;
}

static void
probes_free(struct probe *probes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(probes[i].samples);
	free(probes);
}

static int
probes_new(const struct bench_opts *o, struct probe **ret, size_t *ret_n)
{
	size_t n = 2 * o->ndepths;
	struct probe *probes = calloc(n, sizeof(*probes));

	if (!probes)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct probe *p = &probes[i];

		p->phase = "lookup";
		p->depth = o->depths[i / 2];
		p->what = i % 2 ? "oldest" : "head";
		p->version = i % 2 ? 1 : p->depth;
		lookup_sandbox(p->depth, p->sandbox, sizeof(p->sandbox));
		p->samples = calloc((o->iterations / LOOKUP_ROUNDS + 1) * (LOOKUP_ROUNDS + 1),
				    sizeof(*p->samples));
		if (!p->samples) {
			probes_free(probes, n);
			return -ENOMEM;
		}
	}
	*ret = probes;
	*ret_n = n;
	return 0;
}

/*
 * Measured twice: right after the history is written (it is still in RocksDB's memtable, a
 * skiplist where 10000 versions of one path cost extra cache misses), and after the store is
 * reopened (RocksDB flushes the memtable into sorted files on recovery): the steady state.
 */
static int
cmd_lookup(const struct bench_opts *o, struct eos_error *err)
{
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = NULL;
	struct probe *probes = NULL;
	size_t n = 0;
	int r;

	r = open_store(o->store, 0, &st, err);
	for (size_t i = 0; r >= 0 && i < o->ndepths; i++) {
		progress("lookup: building a sandbox of %" PRIu64 " layers", o->depths[i]);
		r = build_history(st, o->depths[i], err);
	}
	if (r < 0)
		return r;
	r = probes_new(o, &probes, &n);
	if (r < 0)
		return eos_error_set(err, r, "no memory for the lookup samples");
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = check_version(st, probes[i].sandbox, probes[i].version, err);
	if (r >= 0)
		r = measure_probes(st, probes, n, o->iterations, err);
	eos_store_close(TAKE_PTR(st));
	if (r >= 0)
		r = open_store(o->store, 0, &st, err);
	for (size_t i = 0; i < n; i++)
		probes[i].phase = "lookup.flushed";
	if (r >= 0)
		r = measure_probes(st, probes, n, o->iterations, err);
	probes_free(probes, n);
	return r;
}

/* --- read ------------------------------------------------------------------------------------- */

/*
 * Deterministic content, unique per segment (no dedup inside the file) and about half
 * compressible: each 64 KiB segment is 32 KiB of xorshift noise then 32 KiB of text.
 */
static void
fill_segment(uint8_t *buf, size_t len, uint64_t off)
{
	uint64_t x = off * 0x9e3779b97f4a7c15u + 1;
	size_t half = len / 2, i = 0;

	for (; i + 8 <= half; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(buf + i, &x, 8);
	}
	while (i < len) {
		int n = snprintf((char *)buf + i, len - i, "segment %" PRIu64 " line %zu\n", off,
				 i);

		i += n > 0 ? (size_t)n : len - i;
	}
}

static void
fill_content(uint8_t *buf, uint64_t size)
{
	for (uint64_t off = 0; off < size; off += BENCH_SEGMENT)
		fill_segment(buf + off, (size_t)EOS_MIN((uint64_t)BENCH_SEGMENT, size - off), off);
}

static int
write_file(struct eos_store *st, const uint8_t *data, uint64_t size, struct eos_error *err)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	struct eos_attr dir_attr = bench_attr(0755), file_attr = bench_attr(0644);
	struct eos_commit_result res;
	uint64_t start = now_ns();
	int r;

	r = eos_changeset_new_sandbox(st, bench_read_sandbox, "bench:read", &dir_attr, &cs, err);
	if (r >= 0)
		r = eos_changeset_put_file_mem(cs, bench_read_path, &file_attr, data, size, err);
	if (r >= 0)
		r = eos_changeset_commit(cs, 0, &res, err);
	if (r >= 0)
		report("read.write", (double)size / 1e6 / ((double)(now_ns() - start) / 1e9),
		       "MB/s");
	return r;
}

/* Read the whole file in BENCH_PIECE pieces; compare with expect when not NULL. */
static int
read_pass(struct eos_file *f, uint8_t *buf, const uint8_t *expect, uint64_t size,
	  struct eos_error *err)
{
	for (uint64_t off = 0; off < size;) {
		ssize_t n = eos_file_pread(f, buf, BENCH_PIECE, off, err);

		if (n < 0)
			return (int)n;
		if (n == 0)
			return eos_error_set(err, -EIO, "'%s': short read at %" PRIu64,
					     bench_read_path, off);
		if (expect && memcmp(buf, expect + off, (size_t)n) != 0)
			return eos_error_set(err, -EBADMSG, "'%s': wrong bytes at %" PRIu64,
					     bench_read_path, off);
		off += (uint64_t)n;
	}
	return 0;
}

static int
timed_read(struct eos_file *f, uint8_t *buf, uint64_t size, const char *name, struct eos_error *err)
{
	uint64_t start = now_ns();
	int r = read_pass(f, buf, NULL, size, err);

	if (r >= 0)
		report(name, (double)size / 1e6 / ((double)(now_ns() - start) / 1e9), "MB/s");
	return r;
}

/* Flush dirty pages and drop the kernel page cache (root only); reports whether it worked. */
static void
drop_page_cache(void)
{
	cleanup_fclose FILE *f = NULL;

	sync();
	f = fopen("/proc/sys/vm/drop_caches", "we");
	if (f && fputs("3\n", f) >= 0 && fflush(f) == 0) {
		report("read.page_cache_dropped", 1, "bool");
		return;
	}
	progress("read: cannot drop the page cache (not root?): the cold read may be warm");
	report("read.page_cache_dropped", 0, "bool");
}

static int
read_back(const struct bench_opts *o, uint8_t *buf, const uint8_t *expect, struct eos_error *err)
{
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = NULL;
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	int r;

	r = open_store(o->store, (size_t)o->size + (256u << 20), &st, err);
	if (r >= 0)
		r = eos_store_file_open(st, bench_read_sandbox, 0, bench_read_path, &f, err);
	if (r >= 0 && eos_file_size(f) != o->size)
		r = eos_error_set(err, -EIO, "'%s' has %" PRIu64 " bytes, wrote %" PRIu64,
				  bench_read_path, eos_file_size(f), o->size);
	if (r >= 0)
		r = timed_read(f, buf, o->size, "read.cold", err);
	if (r >= 0)
		r = timed_read(f, buf, o->size, "read.warm", err);
	if (r >= 0)
		r = read_pass(f, buf, expect, o->size, err);
	return r;
}

static int
cmd_read(const struct bench_opts *o, struct eos_error *err)
{
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = NULL;
	cleanup_free uint8_t *data = malloc(o->size ? o->size : 1);
	cleanup_free uint8_t *buf = malloc(BENCH_PIECE);
	int r;

	if (!data || !buf)
		return eos_error_set(err, -ENOMEM, "no memory for a %" PRIu64 "-byte file",
				     o->size);
	fill_content(data, o->size);
	report("read.size", (double)o->size, "bytes");
	progress("read: writing %s", bench_read_path);
	r = open_store(o->store, 0, &st, err);
	if (r >= 0)
		r = write_file(st, data, o->size, err);
	eos_store_close(TAKE_PTR(st));
	if (r < 0)
		return r;
	if (o->drop_caches)
		drop_page_cache();
	progress("read: reading %s", bench_read_path);
	return read_back(o, buf, data, err);
}

/* --- command line ----------------------------------------------------------------------------- */

static int
parse_u64(const char *s, uint64_t *ret)
{
	char *end = NULL;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *s == '-')
		return -EINVAL;
	*ret = v;
	return (int)(end - s);
}

/* "1G", "256M", "64K" or a byte count; binary multiples. */
static int
parse_size(const char *s, uint64_t *ret)
{
	uint64_t v;
	int n = parse_u64(s, &v);
	unsigned shift;

	if (n < 0)
		return n;
	switch (s[n] | 0x20) {
	case 'g':
		shift = 30;
		break;
	case 'm':
		shift = 20;
		break;
	case 'k':
		shift = 10;
		break;
	default:
		shift = 0;
		break;
	}
	if (s[n] != '\0' && (shift == 0 || s[n + 1] != '\0'))
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -ERANGE;
	*ret = v << shift;
	return 0;
}

/* "1,100,10000": strictly increasing depths >= 1. */
static int
parse_depths(const char *s, struct bench_opts *o)
{
	o->ndepths = 0;
	while (*s) {
		uint64_t v;
		int n = parse_u64(s, &v);

		if (n < 0 || v < 1 || o->ndepths == BENCH_MAX_DEPTHS ||
		    (o->ndepths > 0 && v <= o->depths[o->ndepths - 1]))
			return -EINVAL;
		o->depths[o->ndepths++] = v;
		s += n;
		if (*s == ',')
			s++;
		else if (*s != '\0')
			return -EINVAL;
	}
	return o->ndepths > 0 ? 0 : -EINVAL;
}

static int
usage(void)
{
	fputs("usage: store-bench lookup --store DIR [--depths 1,100,10000] [--iterations N]\n"
	      "       store-bench read --store DIR [--size 1G] [--drop-caches]\n",
	      stderr);
	return 2;
}

static int
parse_option(int c, const char *arg, struct bench_opts *o)
{
	uint64_t v;

	switch (c) {
	case 's':
		o->store = arg;
		return 0;
	case 'z':
		return parse_size(arg, &o->size);
	case 'n':
		if (parse_u64(arg, &v) < 0 || v < 1 || v > 10000000 ||
		    arg[strspn(arg, "0123456789")])
			return -EINVAL;
		o->iterations = (unsigned)v;
		return 0;
	case 'd':
		return parse_depths(arg, o);
	case 'c':
		o->drop_caches = true;
		return 0;
	default:
		return -EINVAL;
	}
}

static int
parse_args(int argc, char **argv, struct bench_opts *o)
{
	static const struct option options[] = {
		{ "store", required_argument, NULL, 's' },
		{ "size", required_argument, NULL, 'z' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "depths", required_argument, NULL, 'd' },
		{ "drop-caches", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct bench_opts){ .size = 1u << 30, .iterations = 20000 };
	parse_depths("1,100,10000", o);
	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		if (parse_option(c, optarg, o) < 0) {
			fprintf(stderr, "store-bench: bad option '%s'\n", argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (!o->store || optind != argc) {
		fprintf(stderr, "store-bench: %s\n",
			o->store ? "unexpected argument" : "--store DIR is required");
		return -EINVAL;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct eos_error err = { 0 };
	struct bench_opts o;
	const char *cmd = argc > 1 ? argv[1] : "";
	int r;

	if (strcmp(cmd, "lookup") != 0 && strcmp(cmd, "read") != 0)
		return usage();
	if (parse_args(argc - 1, argv + 1, &o) < 0)
		return usage();
	r = strcmp(cmd, "lookup") == 0 ? cmd_lookup(&o, &err) : cmd_read(&o, &err);
	if (r < 0) {
		fprintf(stderr, "store-bench: %s: %s\n", cmd, eos_error_message(&err, r));
		return 1;
	}
	return 0;
}
