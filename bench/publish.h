/* SPDX-License-Identifier: MIT */
/*
 * publish-bench: the publish gate's benchmark (bench/publish, bench/README.md "publish").
 *
 * One invocation generates base trees of a realistic shape on the host (publish-tree.c), imports
 * each once into one store, and measures publishes through the public API (store/store.h) only:
 *	latency     sessions (the product path): deltas of 1, 10, 100, 1000 files on every base,
 *	            prepare / writer lock / total, median and p95 (publish-latency.c)
 *	plain       the same with plain change sets based on the head (publish-latency.c)
 *	concurrent  N threads, each with its own session, publishing disjoint 10-file changes for a
 *	            fixed time on the largest base (publish-concurrent.c)
 *	git         `git add` + `git commit` of the same deltas in a git repository of each base
 *	            tree, as a familiar reference (publish-git.c)
 * Figures are collected as name / value / unit (publish-report.c) and printed at the end as a
 * table, or with --tsv one per line. Progress goes to stderr.
 *
 * Threads: everything runs in the main thread except the concurrent section's workers, which
 * share only the store (thread-safe) and read-only tree data; each owns its files, its pool and
 * its samples.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"

#include "store/store.h"

enum {
	PB_MAX_LIST = 8, /* bases, deltas, thread counts */
	PB_WARMUP = 2,	 /* untimed rounds before the measured ones */
	PB_CONCURRENT_DELTA = 10,
	PB_TARGET_DELTA = 10,
	PB_TARGET_MS = 25,
	PB_CLUSTER = 5, /* neighbouring files modified together */
};

enum pb_section {
	PB_LATENCY = 1 << 0,
	PB_PLAIN = 1 << 1,
	PB_CONCURRENT = 1 << 2,
	PB_GIT = 1 << 3,
	PB_ALL = PB_LATENCY | PB_PLAIN | PB_CONCURRENT | PB_GIT,
};

struct pb_list {
	uint64_t v[PB_MAX_LIST];
	size_t n;
};

struct pb_opts {
	const char *dir; /* where the scratch directory goes */
	struct pb_list bases, deltas, threads;
	unsigned reps;
	double duration; /* seconds per thread count */
	unsigned sections;
	bool tsv, keep, quick;
	bool reopen; /* close and reopen the store after the imports (RocksDB flushes) */
};

/* --- figures (publish-report.c) -------------------------------------------------------------- */

struct pb_figure {
	char name[96];
	char unit[16];
	double value;
};

struct pb_bench;

/* Every figure of the run, in the order measured. */
struct pb_report {
	struct pb_figure *v;
	size_t n, cap;
};

void pb_progress(const char *fmt, ...) EOS_PRINTF(1, 2);
/* Sort samples[n] and return the value at quantile q (nearest rank); 0 when n is 0. */
uint64_t pb_quantile(uint64_t *samples, size_t n, double q);
/* Record one figure under a formatted name. Returns 0 or -ENOMEM. */
int pb_figure(struct pb_report *r, double value, const char *unit, const char *fmt, ...)
	EOS_PRINTF(4, 5);
/* The value of a figure, or NaN when it was not measured. */
double pb_figure_get(const struct pb_report *r, const char *fmt, ...) EOS_PRINTF(2, 3);
/* Record median and p95 of samples[n] (ns) in ms, as "<prefix>.median" and "<prefix>.p95". */
int pb_figure_stats(struct pb_report *r, uint64_t *samples, size_t n, const char *prefix);
void pb_print_tsv(const struct pb_report *r);
void pb_print_table(const struct pb_bench *b);
void pb_report_release(struct pb_report *r);

/* --- random numbers and content (publish-tree.c) --------------------------------------------- */

uint64_t pb_rand(uint64_t *state);
/* Uniform in [lo, hi]. */
uint64_t pb_rand_range(uint64_t *state, uint64_t lo, uint64_t hi);

/*
 * The bytes of text file `id` of about `size` bytes at generation gen (0: as imported; each
 * later generation differs from the base text in two lines: one rewritten, one inserted),
 * into out (cleared first). Deterministic.
 */
int pb_content(uint64_t id, uint32_t size, uint32_t gen, struct eos_buf *out);

/* --- base trees (publish-tree.c) ------------------------------------------------------------- */

struct pb_file {
	char *path;    /* relative to the tree's root */
	uint64_t id;   /* content id */
	uint32_t size; /* size of the base text */
	uint32_t gen;  /* generation last written (store or git) */
};

struct pb_tree {
	char *root; /* host directory */
	char label[24];
	uint64_t nfiles_wanted;
	struct pb_file *files;
	size_t nfiles, cap;
	uint64_t ndirs, bytes;
	uint64_t depth_sum; /* of the files' directories (1 for "a/f") */
	uint64_t created;   /* serial of files created by deltas */
};

/* Generate nfiles files under root (created). */
int pb_tree_generate(struct pb_tree *t, const char *root, uint64_t nfiles, struct eos_error *err);
void pb_tree_release(struct pb_tree *t);
/* "1k", "100k", "2500": the label of a base size. */
void pb_size_label(uint64_t n, char *out, size_t size);
int pb_write_file(const char *path, const void *data, size_t len, struct eos_error *err);
int pb_remove_tree(const char *path);

/*
 * A set of file indices to pick deltas from, in tree order (so neighbours share a directory), with
 * the number of the last delta that picked each.
 */
struct pb_pool {
	uint32_t *idx, *picked;
	uint32_t deltas;
	size_t n;
};

int pb_pool_init(struct pb_pool *p, const struct pb_tree *t, size_t part, size_t parts);
void pb_pool_release(struct pb_pool *p);

/* One file of a delta: an existing file at a new generation, or a new file. */
struct pb_edit {
	char *path;
	uint64_t id;
	uint32_t size, gen;
};

struct pb_delta {
	struct pb_edit *edits;
	size_t n;
};

/*
 * A delta of n files: about 9 in 10 existing files of pool modified (their generation bumped),
 * picked in runs of up to PB_CLUSTER neighbours from random places (as an agent edits a few
 * related files at a time), the rest new files "new-<tag>-<serial>.txt" beside existing ones.
 * Caller releases d, also on failure (-ERANGE: the pool is too small, -ENOMEM).
 */
int pb_delta_make(struct pb_tree *t, struct pb_pool *pool, uint64_t *rng, size_t n, const char *tag,
		  uint64_t *serial, struct pb_delta *d);
void pb_delta_release(struct pb_delta *d);

/* --- publishing (publish-latency.c) ---------------------------------------------------------- */

struct pb_sample {
	uint64_t prepare_ns, lock_ns, total_ns;
};

struct pb_target {
	struct eos_store *st;
	const char *sandbox;
	const char *session; /* NULL: a plain change set based on the current head */
	const char *stage;   /* plain change sets: where their data files are written */
	bool verify;	     /* read the first file back after the publish */
};

/*
 * Write the delta's data files (untimed), then publish it and time begin → commit. Fails when
 * the publish is anything but PUBLISHED (the message names the status and first conflict).
 */
int pb_publish(const struct pb_target *tg, const struct pb_delta *d, struct eos_buf *scratch,
	       struct pb_sample *ret, struct eos_error *err);

struct pb_bench {
	const struct pb_opts *o;
	struct eos_store *st;
	char *work; /* the scratch directory */
	struct pb_tree trees[PB_MAX_LIST];
	char sandboxes[PB_MAX_LIST][EOS_SANDBOX_ID_MAX + 1];
	size_t ntrees;
	struct pb_report report;
};

int pb_run_latency(struct pb_bench *b, bool sessions, struct eos_error *err);
int pb_run_concurrent(struct pb_bench *b, struct eos_error *err);
int pb_run_git(struct pb_bench *b, struct eos_error *err);
