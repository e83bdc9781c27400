/* SPDX-License-Identifier: MIT */
/*
 * publish-bench: the publish gate's benchmark (see bench/publish.h for the sections and
 * bench/README.md for what each figure means).
 *
 *	publish-bench [--quick] [--tsv] [--dir DIR] [--reps N] [--only SECTION[,SECTION]]
 *	              [--bases N,N] [--deltas N,...] [--threads N,...] [--duration S] [--keep]
 *	              [--reopen]
 *
 * Everything happens in a new scratch directory under DIR (default $EOS_BENCH_DIR, $TMPDIR or
 * /tmp), removed at the end unless --keep: the base trees, the store, and the git repositories.
 */
#include "bench/publish.h"

#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/path.h"

static const struct {
	const char *name;
	enum pb_section bit;
} sections[] = {
	{ "latency", PB_LATENCY },
	{ "plain", PB_PLAIN },
	{ "concurrent", PB_CONCURRENT },
	{ "git", PB_GIT },
};

/* --- set-up ----------------------------------------------------------------------------------- */

static int
make_work(struct pb_bench *b, struct eos_error *err)
{
	const char *parent = b->o->dir;
	char tmpl[PATH_MAX];
	int n;

	if (!parent)
		parent = getenv("EOS_BENCH_DIR");
	if (!parent)
		parent = getenv("TMPDIR");
	if (!parent || !*parent)
		parent = "/tmp";
	n = snprintf(tmpl, sizeof(tmpl), "%s/eos-publish.XXXXXX", parent);
	if (n < 0 || (size_t)n >= sizeof(tmpl))
		return eos_error_set(err, -ENAMETOOLONG, "scratch directory in '%s': name too long",
				     parent);
	if (!mkdtemp(tmpl))
		return eos_error_set(err, eos_neg_errno(), "scratch directory in '%s': %m", parent);
	b->work = strdup(tmpl);
	return b->work ? 0 : eos_error_set(err, -ENOMEM, "out of memory");
}

static int
open_store(struct pb_bench *b, struct eos_error *err)
{
	struct eos_store_options so = { .create = true };
	cleanup_free char *dir = NULL;

	if (eos_path_join(b->work, "store", &dir) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	return eos_store_open(dir, &so, &b->st, err);
}

/* Generate base i on the host and import it as sandbox "base-<label>". */
static int
make_base(struct pb_bench *b, size_t i, struct eos_error *err)
{
	struct eos_import_options io = { .sandbox = b->sandboxes[i] };
	struct pb_tree *t = &b->trees[i];
	struct eos_import_result res;
	char root[PATH_MAX], label[24];
	uint64_t t0 = (uint64_t)eos_mono_ns();
	int r;

	pb_size_label(b->o->bases.v[i], label, sizeof(label));
	snprintf(b->sandboxes[i], sizeof(b->sandboxes[i]), "base-%s", label);
	snprintf(root, sizeof(root), "%s/tree-%s", b->work, label);
	pb_progress("generating base %s (%" PRIu64 " files)", label, b->o->bases.v[i]);
	r = pb_tree_generate(t, root, b->o->bases.v[i], err);
	b->ntrees++; /* released even when half made */
	if (r < 0)
		return r;
	pb_progress("base %s: %zu files, %" PRIu64 " directories, %.1f MB in %.1f s; importing",
		    label, t->nfiles, t->ndirs, (double)t->bytes / 1e6,
		    (double)((uint64_t)eos_mono_ns() - t0) / 1e9);
	t0 = (uint64_t)eos_mono_ns();
	r = eos_store_import(b->st, root, &io, &res, err);
	if (r < 0)
		return r;
	if (pb_figure(&b->report, (double)t->nfiles, "files", "tree.%s.files", label) < 0 ||
	    pb_figure(&b->report, (double)t->ndirs, "dirs", "tree.%s.dirs", label) < 0 ||
	    pb_figure(&b->report, (double)t->bytes, "bytes", "tree.%s.bytes", label) < 0 ||
	    pb_figure(&b->report, (double)t->depth_sum / (double)t->nfiles, "levels",
		      "tree.%s.mean_depth", label) < 0 ||
	    pb_figure(&b->report, (double)((uint64_t)eos_mono_ns() - t0) / 1e9, "s",
		      "import.%s.seconds", label) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

static int
run(struct pb_bench *b, struct eos_error *err)
{
	unsigned s = b->o->sections;
	int r = make_work(b, err);

	r = r ?: open_store(b, err);
	for (size_t i = 0; r >= 0 && i < b->o->bases.n; i++)
		r = make_base(b, i, err);
	if (r >= 0 && b->o->reopen) { /* RocksDB writes its memtables to sorted files */
		eos_store_close(TAKE_PTR(b->st));
		r = open_store(b, err);
	}
	if (r >= 0 && (s & PB_LATENCY))
		r = pb_run_latency(b, true, err);
	if (r >= 0 && (s & PB_PLAIN))
		r = pb_run_latency(b, false, err);
	if (r >= 0 && (s & PB_CONCURRENT))
		r = pb_run_concurrent(b, err);
	if (r >= 0 && (s & PB_GIT))
		r = pb_run_git(b, err); /* last: it changes the host trees */
	return r;
}

static void
bench_release(struct pb_bench *b)
{
	eos_store_close(b->st);
	for (size_t i = 0; i < b->ntrees; i++)
		pb_tree_release(&b->trees[i]);
	if (b->work && b->o->keep)
		pb_progress("scratch directory kept: %s", b->work);
	else if (b->work && pb_remove_tree(b->work) != 0)
		pb_progress("cannot remove the scratch directory '%s'", b->work);
	free(b->work);
	pb_report_release(&b->report);
}

/* --- command line ----------------------------------------------------------------------------- */

/* "1,10,100": up to PB_MAX_LIST numbers in [1, max]. */
static int
parse_list(const char *s, uint64_t max, struct pb_list *l)
{
	l->n = 0;
	while (*s) {
		char *end = NULL;
		unsigned long long v;

		errno = 0;
		v = strtoull(s, &end, 10);
		if (errno || end == s || *s == '-' || v < 1 || v > max || l->n == PB_MAX_LIST)
			return -EINVAL;
		l->v[l->n++] = v;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -EINVAL;
	}
	return l->n ? 0 : -EINVAL;
}

static int
parse_sections(const char *s, unsigned *ret)
{
	*ret = 0;
	while (*s) {
		size_t len = strcspn(s, ","), i;

		for (i = 0; i < EOS_ARRAY_SIZE(sections); i++)
			if (strlen(sections[i].name) == len && !strncmp(s, sections[i].name, len))
				break;
		if (i == EOS_ARRAY_SIZE(sections))
			return -EINVAL;
		*ret |= sections[i].bit;
		s += len + (s[len] == ',');
	}
	return *ret ? 0 : -EINVAL;
}

static int
parse_seconds(const char *s, double *ret)
{
	char *end = NULL;

	errno = 0;
	*ret = strtod(s, &end);
	return errno || end == s || *end || !(*ret > 0 && *ret <= 3600) ? -EINVAL : 0;
}

static void
set_quick(struct pb_opts *o)
{
	o->quick = true;
	parse_list("1000,10000", 10000000, &o->bases);
	parse_list("1,10,100", 100000, &o->deltas);
	o->reps = 5;
	o->duration = 0.5;
}

static int
parse_option(int c, const char *arg, struct pb_opts *o)
{
	uint64_t v;
	struct pb_list l;

	switch (c) {
	case 'q':
		set_quick(o);
		return 0;
	case 't':
		o->tsv = true;
		return 0;
	case 'k':
		o->keep = true;
		return 0;
	case 'R':
		o->reopen = true;
		return 0;
	case 'd':
		o->dir = arg;
		return 0;
	case 'r':
		if (parse_list(arg, 100000, &l) < 0 || l.n != 1)
			return -EINVAL;
		v = l.v[0];
		o->reps = (unsigned)v;
		return 0;
	case 'o':
		return parse_sections(arg, &o->sections);
	case 'b':
		return parse_list(arg, 10000000, &o->bases);
	case 'D':
		return parse_list(arg, 100000, &o->deltas);
	case 'T':
		return parse_list(arg, 256, &o->threads);
	case 's':
		return parse_seconds(arg, &o->duration);
	}
	return -EINVAL;
}

static int
usage(void)
{
	fputs("usage: publish-bench [--quick] [--tsv] [--dir DIR] [--reps N] [--only "
	      "SECTION[,SECTION]]\n"
	      "                     [--bases N,N] [--deltas N,...] [--threads N,...] [--duration "
	      "S] [--keep] [--reopen]\n"
	      "sections: latency, plain, concurrent, git\n",
	      stderr);
	return 2;
}

static int
parse_args(int argc, char **argv, struct pb_opts *o)
{
	static const struct option options[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "tsv", no_argument, NULL, 't' },
		{ "keep", no_argument, NULL, 'k' },
		{ "reopen", no_argument, NULL, 'R' },
		{ "dir", required_argument, NULL, 'd' },
		{ "reps", required_argument, NULL, 'r' },
		{ "only", required_argument, NULL, 'o' },
		{ "bases", required_argument, NULL, 'b' },
		{ "deltas", required_argument, NULL, 'D' },
		{ "threads", required_argument, NULL, 'T' },
		{ "duration", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct pb_opts){ .reps = 30, .duration = 5, .sections = PB_ALL };
	parse_list("1000,100000", 10000000, &o->bases);
	parse_list("1,10,100,1000", 100000, &o->deltas);
	parse_list("1,4,16", 256, &o->threads);
	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		if (parse_option(c, optarg, o) < 0) {
			fprintf(stderr, "publish-bench: bad option '%s'\n", argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "publish-bench: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct eos_error err = { 0 };
	struct pb_opts o;
	struct pb_bench b = { .o = &o };
	int r;

	if (parse_args(argc, argv, &o) < 0)
		return usage();
	r = run(&b, &err);
	if (r < 0) {
		fprintf(stderr, "publish-bench: %s\n", eos_error_message(&err, r));
		bench_release(&b);
		return 1;
	}
	if (o.tsv)
		pb_print_tsv(&b.report);
	else
		pb_print_table(&b);
	bench_release(&b);
	return 0;
}
