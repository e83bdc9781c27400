/* SPDX-License-Identifier: MIT */
/*
 * Figures of publish-bench: sample statistics, the figure list, and its two outputs: TSV
 * ("name<TAB>value<TAB>unit") and Markdown tables (the form bench/README.md records).
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#include "bench/publish.h"

void
pb_progress(const char *fmt, ...)
{
	va_list ap;

	fputs("publish-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

uint64_t
pb_quantile(uint64_t *samples, size_t n, double q)
{
	size_t i;

	if (n == 0)
		return 0;
	qsort(samples, n, sizeof(*samples), cmp_u64);
	i = (size_t)(q * (double)(n - 1) + 0.5);
	return samples[i < n ? i : n - 1];
}

static int
figure_add(struct pb_report *r, double value, const char *unit, const char *fmt, va_list ap)
{
	struct pb_figure *f;

	if (eos_buf_array_reserve(&r->v, &r->cap, r->n, sizeof(*r->v), 64) < 0)
		return -ENOMEM;
	f = &r->v[r->n++];
	vsnprintf(f->name, sizeof(f->name), fmt, ap);
	snprintf(f->unit, sizeof(f->unit), "%s", unit);
	f->value = value;
	return 0;
}

int
pb_figure(struct pb_report *r, double value, const char *unit, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = figure_add(r, value, unit, fmt, ap);
	va_end(ap);
	return ret;
}

double
pb_figure_get(const struct pb_report *r, const char *fmt, ...)
{
	char name[sizeof(r->v->name)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	for (size_t i = r->n; i-- > 0;)
		if (strcmp(r->v[i].name, name) == 0)
			return r->v[i].value;
	return NAN;
}

int
pb_figure_stats(struct pb_report *r, uint64_t *samples, size_t n, const char *prefix)
{
	double median = (double)pb_quantile(samples, n, 0.5) / 1e6;
	double p95 = (double)pb_quantile(samples, n, 0.95) / 1e6;

	return pb_figure(r, median, "ms", "%s.median", prefix)
		       ?: pb_figure(r, p95, "ms", "%s.p95", prefix);
}

void
pb_print_tsv(const struct pb_report *r)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct pb_figure *f = &r->v[i];

		if (f->value > -1e15 && f->value < 1e15 && f->value == (double)(int64_t)f->value)
			printf("%s\t%.0f\t%s\n", f->name, f->value, f->unit);
		else
			printf("%s\t%.4g\t%s\n", f->name, f->value, f->unit);
	}
}

void
pb_report_release(struct pb_report *r)
{
	free(r->v);
	*r = (struct pb_report){ 0 };
}

/* --- tables ----------------------------------------------------------------------------------- */

/* A figure in ms with about three significant digits, or "—" when not measured. */
static const char *
fmt_ms(double v, char *out, size_t size)
{
	if (isnan(v))
		snprintf(out, size, "—");
	else if (v < 1)
		snprintf(out, size, "%.3f", v);
	else if (v < 10)
		snprintf(out, size, "%.2f", v);
	else if (v < 100)
		snprintf(out, size, "%.1f", v);
	else
		snprintf(out, size, "%.0f", v);
	return out;
}

/* "median / p95" of figure prefix. */
static const char *
fmt_pair(const struct pb_report *r, const char *prefix, char *out, size_t size)
{
	char a[32], b[32];

	snprintf(out, size, "%s / %s", fmt_ms(pb_figure_get(r, "%s.median", prefix), a, sizeof(a)),
		 fmt_ms(pb_figure_get(r, "%s.p95", prefix), b, sizeof(b)));
	return out;
}

static void
print_trees(const struct pb_bench *b)
{
	const struct pb_report *r = &b->report;

	printf("| base | files | directories | mean file depth | MB | import (s) |\n| --- | ---: | "
	       "---: | ---: | ---: | ---: |\n");
	for (size_t i = 0; i < b->ntrees; i++) {
		const char *l = b->trees[i].label;

		printf("| %s | %.0f | %.0f | %.2f | %.1f | %.2f |\n", l,
		       pb_figure_get(r, "tree.%s.files", l), pb_figure_get(r, "tree.%s.dirs", l),
		       pb_figure_get(r, "tree.%s.mean_depth", l),
		       pb_figure_get(r, "tree.%s.bytes", l) / 1e6,
		       pb_figure_get(r, "import.%s.seconds", l));
	}
}

static void
print_latency(const struct pb_bench *b, const char *section, const char *title)
{
	const struct pb_report *r = &b->report;
	char prefix[64], c1[64], c2[64], c3[64];

	if (isnan(pb_figure_get(r, "%s.reps", section)))
		return;
	printf("\n%s, ms, median / p95 of %.0f publishes:\n\n", title,
	       pb_figure_get(r, "%s.reps", section));
	printf("| base | files | prepare | writer lock | total |\n| --- | ---: | ---: | ---: | ---: "
	       "|\n");
	for (size_t i = 0; i < b->ntrees; i++) {
		for (size_t j = 0; j < b->o->deltas.n; j++) {
			uint64_t d = b->o->deltas.v[j];
			const char *l = b->trees[i].label;

			snprintf(prefix, sizeof(prefix), "%s.%s.d%" PRIu64, section, l, d);
			if (isnan(pb_figure_get(r, "%s.total.median", prefix)))
				continue;
			snprintf(prefix, sizeof(prefix), "%s.%s.d%" PRIu64 ".prepare", section, l,
				 d);
			fmt_pair(r, prefix, c1, sizeof(c1));
			snprintf(prefix, sizeof(prefix), "%s.%s.d%" PRIu64 ".lock", section, l, d);
			fmt_pair(r, prefix, c2, sizeof(c2));
			snprintf(prefix, sizeof(prefix), "%s.%s.d%" PRIu64 ".total", section, l, d);
			fmt_pair(r, prefix, c3, sizeof(c3));
			printf("| %s | %" PRIu64 " | %s | %s | %s |\n", l, d, c1, c2, c3);
		}
	}
}

static void
print_flat(const struct pb_bench *b, const char *section)
{
	const struct pb_report *r = &b->report;
	bool header = false;

	for (size_t j = 0; j < b->o->deltas.n; j++) {
		uint64_t d = b->o->deltas.v[j];
		double total = pb_figure_get(r, "%s.d%" PRIu64 ".flat.total", section, d);

		if (isnan(total))
			continue;
		if (!header)
			printf("\nFlatness (%s), median on base %s / median on base %s (target ≈ "
			       "1.0):\n\n| files | total | writer lock | prepare |\n| --- | ---: | "
			       "---: | ---: |\n",
			       section, b->trees[b->ntrees - 1].label, b->trees[0].label);
		header = true;
		printf("| %" PRIu64 " | %.2f | %.2f | %.2f |\n", d, total,
		       pb_figure_get(r, "%s.d%" PRIu64 ".flat.lock", section, d),
		       pb_figure_get(r, "%s.d%" PRIu64 ".flat.prepare", section, d));
	}
}

static void
print_concurrent(const struct pb_bench *b)
{
	const struct pb_report *r = &b->report;
	char prefix[64], c1[64], c2[64], c3[32];

	if (isnan(pb_figure_get(r, "concurrent.seconds")))
		return;
	printf("\nConcurrent sessions on base %s, each publishing its own %d files (9 modified, 1 "
	       "created) for %.1f s per row; ms, median / p95:\n\n",
	       b->trees[b->ntrees - 1].label, PB_CONCURRENT_DELTA,
	       pb_figure_get(r, "concurrent.seconds"));
	printf("| threads | publishes | publishes/s | total | writer lock | prepare (median) | all "
	       "published, layers match |\n| ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
	for (size_t i = 0; i < b->o->threads.n; i++) {
		uint64_t n = b->o->threads.v[i];

		if (isnan(pb_figure_get(r, "concurrent.t%" PRIu64 ".publishes", n)))
			continue;
		snprintf(prefix, sizeof(prefix), "concurrent.t%" PRIu64 ".total", n);
		fmt_pair(r, prefix, c1, sizeof(c1));
		snprintf(prefix, sizeof(prefix), "concurrent.t%" PRIu64 ".lock", n);
		fmt_pair(r, prefix, c2, sizeof(c2));
		printf("| %" PRIu64 " | %.0f | %.1f | %s | %s | %s | %s |\n", n,
		       pb_figure_get(r, "concurrent.t%" PRIu64 ".publishes", n),
		       pb_figure_get(r, "concurrent.t%" PRIu64 ".per_s", n), c1, c2,
		       fmt_ms(pb_figure_get(r, "concurrent.t%" PRIu64 ".prepare.median", n), c3,
			      sizeof(c3)),
		       pb_figure_get(r, "concurrent.t%" PRIu64 ".ok", n) == 1 ? "yes" : "**no**");
	}
}

static void
print_git_row(const struct pb_report *r, const char *l, uint64_t d)
{
	char prefix[64], c1[64], c2[64];
	double ratio = pb_figure_get(r, "git.%s.d%" PRIu64 ".session_over_git", l, d);

	snprintf(prefix, sizeof(prefix), "git.%s.d%" PRIu64, l, d);
	fmt_pair(r, prefix, c1, sizeof(c1));
	snprintf(prefix, sizeof(prefix), "git_fsync.%s.d%" PRIu64, l, d);
	fmt_pair(r, prefix, c2, sizeof(c2));
	if (isnan(ratio))
		printf("| %s | %" PRIu64 " | %s | %s | — |\n", l, d, c1, c2);
	else
		printf("| %s | %" PRIu64 " | %s | %s | %.*f |\n", l, d, c1, c2, ratio < 0.1 ? 3 : 2,
		       ratio);
}

static void
print_git(const struct pb_bench *b)
{
	const struct pb_report *r = &b->report;

	if (isnan(pb_figure_get(r, "git.reps")))
		return;
	printf("\nReference, not a peer: `git add FILES && git commit` of the same kind of change "
	       "in a git repository of the same tree, ms, median / p95 of %.0f:\n\n",
	       pb_figure_get(r, "git.reps"));
	printf("| base | files | git (defaults) | git, core.fsync=all | eos session total / git "
	       "(defaults) |\n| --- | ---: | ---: | ---: | ---: |\n");
	for (size_t i = 0; i < b->ntrees; i++)
		for (size_t j = 0; j < b->o->deltas.n; j++)
			if (!isnan(pb_figure_get(&b->report, "git.%s.d%" PRIu64 ".median",
						 b->trees[i].label, b->o->deltas.v[j])))
				print_git_row(r, b->trees[i].label, b->o->deltas.v[j]);
}

static void
print_targets(const struct pb_bench *b)
{
	const struct pb_report *r = &b->report;
	const char *l = b->trees[b->ntrees - 1].label;
	double ratio = pb_figure_get(r, "target.d%d.%s.over_target", PB_TARGET_DELTA, l);
	char m[32];

	if (isnan(ratio))
		return;
	printf("\nTarget: %d files on a %s-file base ≤ %d ms median (session publish): %s ms, "
	       "measured / target = %.2f (%s).\n",
	       PB_TARGET_DELTA, l, PB_TARGET_MS,
	       fmt_ms(pb_figure_get(r, "session.%s.d%d.total.median", l, PB_TARGET_DELTA), m,
		      sizeof(m)),
	       ratio, ratio <= 1 ? "met" : "missed");
}

void
pb_print_table(const struct pb_bench *b)
{
	print_trees(b);
	print_latency(b, "session", "Publish latency, sessions (the product path)");
	print_flat(b, "session");
	print_latency(b, "plain", "Publish latency, plain change sets based on the head");
	print_flat(b, "plain");
	print_concurrent(b);
	print_git(b);
	print_targets(b);
}
