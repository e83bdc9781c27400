/* SPDX-License-Identifier: MIT */
/*
 * squash-block: how long a squash blocks publishes (bench/README.md, section "squash").
 *
 *	squash-block --store DIR [--files 100000] [--layers 50] [--changes 20] [--seconds 1]
 *
 * Builds a sandbox of FILES small files (one change set, in directories of 1000) and LAYERS
 * layers on top, each rewriting CHANGES base files, adding 5 and removing 2, so that every layer
 * but the head is squashable. A second sandbox, "pub", is the prober's. Then twice, a prober
 * thread loops back to back (SECONDS of baseline first), eos_store_squash() runs, and the prober
 * stops 0.2 s after it:
 *  - idle: the prober only moves a lease of "pub" (eos_store_lease_acquire: it takes the writer
 *    lock, no change set), so no change set is alive and the squash frees chunks itself. A
 *    probe overlapping the squash waits at most for the time the squash holds the writer lock.
 *  - busy (after LAYERS more layers): the prober publishes one-file change sets to "pub". Commits
 *    of all sandboxes share the writer lock and the pins, so it waits exactly as publishes to the
 *    squashed sandbox would (those would also add layers for the squash to fold: thousands per
 *    second here). A change set is nearly always alive, so the squash leaves the chunks it frees
 *    listed for later.
 * The figures use the public API only: the squash's wall time, and the prober's latencies before
 * and during it (the longest one during the squash bounds the time publishes were blocked).
 * With EOS_LOG=debug the squash also logs its own timing to stderr: planning (no lock), writer
 * lock and exclusive side held.
 *
 * Output: one line per figure, "name<TAB>value<TAB>unit", on stdout; progress on stderr.
 * DIR must not hold a store yet (it is created; remove it afterwards).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"

#include "bench/bench-util.h"
#include "store/store.h"

enum {
	FILES_PER_DIR = 1000,
	FILE_MIN = 300, /* above EOS_INLINE_MAX: every file is a chunk */
	FILE_SPREAD = 1200,
	ADDED_PER_LAYER = 5,
	REMOVED_PER_LAYER = 2,
	MAX_SAMPLES = 1 << 20,
};

static const char sandbox[] = "bench";
static const char pub_sandbox[] = "pub";

struct opts {
	const char *store;
	unsigned files, layers, changes;
	unsigned seconds;
};

static int
fail(const char *what, const struct eos_error *err, int r)
{
	return bench_fail("squash-block", what, err, r);
}

/* Deterministic bytes for (seed, i). */
static void
fill(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
}

static int
put(struct eos_changeset *cs, const char *path, uint64_t seed, struct eos_error *err)
{
	struct eos_attr a = { .mode = 0644, .mtime_ns = 1700000000000000000LL };
	uint8_t buf[FILE_MIN + FILE_SPREAD];
	size_t len = FILE_MIN + seed % FILE_SPREAD;

	fill(buf, len, seed);
	return eos_changeset_put_file_mem(cs, path, &a, buf, len, err);
}

static void
base_path(char *out, size_t n, unsigned i)
{
	snprintf(out, n, "d%03u/f%05u", i / FILES_PER_DIR, i);
}

static int
build_base(struct eos_store *st, const struct opts *o, struct eos_error *err)
{
	struct eos_attr root = { .mode = 0755 }, dir = { .mode = 0755 };
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	char path[64];
	int r = eos_changeset_new_sandbox(st, sandbox, "squash-block", &root, &cs, err);

	for (unsigned d = 0; r == 0 && d * FILES_PER_DIR < o->files; d++) {
		snprintf(path, sizeof(path), "d%03u", d);
		r = eos_changeset_mkdir(cs, path, &dir, false, err);
	}
	for (unsigned i = 0; r == 0 && i < o->files; i++) {
		base_path(path, sizeof(path), i);
		r = put(cs, path, i, err);
	}
	return r ?: eos_changeset_commit(cs, 0, NULL, err);
}

/* Layer number l: rewrite changes base files, add some, remove two added earlier. */
static int
add_layer(struct eos_store *st, const struct opts *o, unsigned l, struct eos_error *err)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	char path[64];
	int r = eos_changeset_new(st, sandbox, &cs, err);

	for (unsigned i = 0; r == 0 && i < o->changes; i++) {
		base_path(path, sizeof(path), (l * 7919u + i * 104729u) % o->files);
		r = put(cs, path, ((uint64_t)l << 32) + i, err);
	}
	for (unsigned i = 0; r == 0 && i < ADDED_PER_LAYER; i++) {
		snprintf(path, sizeof(path), "d000/new-%u-%u", l, i);
		r = put(cs, path, ((uint64_t)l << 40) + i, err);
	}
	for (unsigned i = 0; r == 0 && l > 0 && i < REMOVED_PER_LAYER; i++) {
		snprintf(path, sizeof(path), "d000/new-%u-%u", l - 1, i);
		r = eos_changeset_remove(cs, path, err);
	}
	return r ?: eos_changeset_commit(cs, 0, NULL, err);
}

static int
add_layers(struct eos_store *st, const struct opts *o, unsigned from, struct eos_error *err)
{
	for (unsigned l = from; l < from + o->layers; l++) {
		int r = add_layer(st, o, l, err);

		if (r < 0)
			return r;
	}
	return 0;
}

static void
report_squash(const char *run, const struct eos_squash_result *res, int64_t wall_ns)
{
	char name[96];

	snprintf(name, sizeof(name), "squash.%s.wall", run);
	bench_report(name, (double)wall_ns / 1e6, "ms");
	snprintf(name, sizeof(name), "squash.%s.layers_removed", run);
	bench_report(name, (double)res->layers_removed, "layers");
	snprintf(name, sizeof(name), "squash.%s.entries_removed", run);
	bench_report(name, (double)res->entries_removed, "entries");
	snprintf(name, sizeof(name), "squash.%s.chunks_freed", run);
	bench_report(name, (double)res->chunks_freed, "chunks");
}

/* --- the prober ------------------------------------------------------------------------------- */

struct prober {
	struct eos_store *st;
	bool publish; /* publish change sets, else move a lease */
	atomic_bool stop;
	int64_t *start, *latency; /* per probe */
	size_t n;
	int error;
	struct eos_error err;
};

static int
probe_one(struct prober *p, uint64_t i)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	char path[64];
	int r;

	if (!p->publish)
		return eos_store_lease_acquire(p->st, pub_sandbox, "probe", 0, NULL, &p->err);
	r = eos_changeset_new(p->st, pub_sandbox, &cs, &p->err);
	snprintf(path, sizeof(path), "pub-%" PRIu64, i % 64);
	r = r ?: put(cs, path, ((uint64_t)1 << 48) + i, &p->err);
	return r ?: eos_changeset_commit(cs, 0, NULL, &p->err);
}

static void *
prober_run(void *arg)
{
	struct prober *p = arg;

	while (!atomic_load(&p->stop) && p->n < MAX_SAMPLES) {
		int64_t t0 = eos_mono_ns();

		p->error = probe_one(p, p->n);
		if (p->error < 0)
			break;
		p->start[p->n] = t0;
		p->latency[p->n++] = eos_mono_ns() - t0;
	}
	return NULL;
}

static int
i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Publishes whose interval [start, end) overlaps [lo, hi): count, median and max latency. */
static void
report_latencies(const struct prober *p, const char *what, int64_t lo, int64_t hi)
{
	cleanup_free int64_t *v = calloc(p->n ?: 1, sizeof(*v));
	char name[96];
	size_t n = 0;

	if (!v)
		return;
	for (size_t i = 0; i < p->n; i++)
		if (p->start[i] < hi && p->start[i] + p->latency[i] > lo)
			v[n++] = p->latency[i];
	qsort(v, n, sizeof(*v), i64_cmp);
	snprintf(name, sizeof(name), "%s.count", what);
	bench_report(name, (double)n, "probes");
	if (n == 0)
		return;
	snprintf(name, sizeof(name), "%s.median", what);
	bench_report(name, (double)v[n / 2] / 1e6, "ms");
	snprintf(name, sizeof(name), "%s.max", what);
	bench_report(name, (double)v[n - 1] / 1e6, "ms");
}

static void
sleep_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

static int
pub_create(struct eos_store *st, struct eos_error *err)
{
	EOS_CLEANUP(eos_changeset_freep) struct eos_changeset *cs = NULL;
	struct eos_attr root = { .mode = 0755 };
	int r = eos_changeset_new_sandbox(st, pub_sandbox, "squash-block", &root, &cs, err);

	return r ?: eos_changeset_commit(cs, 0, NULL, err);
}

/* Squash while a prober runs; report both. */
static int
probed_squash(struct eos_store *st, const struct opts *o, const char *run, bool publish)
{
	struct prober p = { .st = st, .publish = publish };
	struct eos_squash_result res = { 0 };
	struct eos_error err = { 0 };
	char what[64];
	int64_t t0, t1, b0;
	pthread_t th;
	int r;

	p.start = calloc(MAX_SAMPLES, sizeof(*p.start));
	p.latency = calloc(MAX_SAMPLES, sizeof(*p.latency));
	if (!p.start || !p.latency || pthread_create(&th, NULL, prober_run, &p) != 0)
		return fail("prober", &err, -ENOMEM);
	b0 = eos_mono_ns();
	sleep_s(o->seconds);
	t0 = eos_mono_ns();
	r = eos_store_squash(st, sandbox, &res, &err);
	t1 = eos_mono_ns();
	sleep_s(0.2);
	atomic_store(&p.stop, true);
	pthread_join(th, NULL);
	if (r < 0)
		return fail("squash", &err, r);
	if (p.error < 0)
		return fail("probe", &p.err, p.error);
	report_squash(run, &res, t1 - t0);
	snprintf(what, sizeof(what), "%s.%s.baseline", run, publish ? "publish" : "lease");
	report_latencies(&p, what, b0, t0);
	snprintf(what, sizeof(what), "%s.%s.during_squash", run, publish ? "publish" : "lease");
	report_latencies(&p, what, t0, t1);
	free(p.start);
	free(p.latency);
	return 0;
}

static int
run(const struct opts *o)
{
	struct eos_store_options so = { .create = true };
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = NULL;
	struct eos_error err = { 0 };
	int64_t t0;
	int r;

	r = eos_store_open(o->store, &so, &st, &err);
	if (r < 0)
		return fail("open", &err, r);
	fprintf(stderr, "building a base of %u files and %u layers\n", o->files, o->layers);
	t0 = eos_mono_ns();
	r = build_base(st, o, &err);
	if (r < 0)
		return fail("base", &err, r);
	bench_report("base.files", o->files, "files");
	bench_report("base.commit", (double)(eos_mono_ns() - t0) / 1e9, "s");
	r = add_layers(st, o, 0, &err);
	if (r < 0)
		return fail("layers", &err, r);
	bench_report("base.squashable_layers", o->layers, "layers");
	r = pub_create(st, &err);
	if (r < 0)
		return fail("the prober's sandbox", &err, r);
	fprintf(stderr, "squashing while a lease moves\n");
	r = probed_squash(st, o, "idle", false);
	if (r < 0)
		return r;
	fprintf(stderr, "adding %u layers, squashing while publishing\n", o->layers);
	r = add_layers(st, o, o->layers, &err);
	if (r < 0)
		return fail("layers", &err, r);
	return probed_squash(st, o, "busy", true);
}

static int
usage(void)
{
	fputs("usage: squash-block --store DIR [--files N] [--layers N] [--changes N] "
	      "[--seconds S]\n",
	      stderr);
	return EXIT_FAILURE;
}

static bool
parse_uint(const char *s, unsigned *ret)
{
	char *end = NULL;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > 10000000)
		return false;
	*ret = (unsigned)v;
	return true;
}

int
main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "store", required_argument, NULL, 's' },
		{ "files", required_argument, NULL, 'f' },
		{ "layers", required_argument, NULL, 'l' },
		{ "changes", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .files = 100000, .layers = 50, .changes = 20, .seconds = 1 };
	int c;

	eos_log_set_program("squash-block");
	eos_log_init_from_env();
	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		bool ok = true;

		if (c == 's')
			o.store = optarg;
		else if (c == 'f')
			ok = parse_uint(optarg, &o.files);
		else if (c == 'l')
			ok = parse_uint(optarg, &o.layers);
		else if (c == 'c')
			ok = parse_uint(optarg, &o.changes);
		else if (c == 'S')
			ok = parse_uint(optarg, &o.seconds);
		else
			ok = false;
		if (!ok)
			return usage();
	}
	if (!o.store || optind != argc)
		return usage();
	return run(&o) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
