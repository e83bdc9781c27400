/* SPDX-License-Identifier: MIT */
/*
 * The git reference of publish-bench (not a peer: git has no concurrent gate). Each base tree,
 * left on the host after its import, becomes a git repository (`git add -A`, `git commit`, timed
 * as set-up); then the same kind of deltas as the latency sections are written into the work
 * tree and committed with `git add -- FILES` + `git commit`, timed together, in interleaved
 * rounds (at most GIT_MAX_REPS measured: a commit takes seconds on a large tree), with git's
 * defaults (loose objects, the index and refs are not fsynced) and with core.fsync=all (everything
 * fsynced, as the store syncs its batch). The user's and the system's git configuration are ignored
 * (GIT_CONFIG_GLOBAL=/dev/null, GIT_CONFIG_NOSYSTEM=1).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"

#include "bench/publish.h"

static const char *const git_common[] = {
	"git",
	"-c",
	"user.name=eos-bench",
	"-c",
	"user.email=eos-bench@localhost",
	"-c",
	"gc.auto=0",
	"-c",
	"commit.gpgSign=false",
	"-c",
	"core.autocrlf=false",
};

static const char *const git_fsync[] = { "-c", "core.fsync=all", "-c", "core.fsyncMethod=fsync" };

enum {
	GIT_VARIANTS = 2,  /* defaults, core.fsync=all */
	GIT_MAX_REPS = 10, /* git is slow on large trees: at most this many measured commits */
	GIT_WARMUP = 1,
};

/* Run git -C root [fsync options] args... with stdout to /dev/null; 0 when it exits 0. */
static int
git_run(const char *root, bool fsync, const char *const *args, size_t nargs, struct eos_error *err)
{
	size_t n = EOS_ARRAY_SIZE(git_common) + EOS_ARRAY_SIZE(git_fsync) + 2 + nargs + 1, k = 0;
	cleanup_free const char **argv = calloc(n, sizeof(*argv));
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, r;

	if (!argv)
		return eos_error_set(err, -ENOMEM, "git: out of memory");
	for (size_t i = 0; i < EOS_ARRAY_SIZE(git_common); i++)
		argv[k++] = git_common[i];
	for (size_t i = 0; fsync && i < EOS_ARRAY_SIZE(git_fsync); i++)
		argv[k++] = git_fsync[i];
	argv[k++] = "-C";
	argv[k++] = root;
	for (size_t i = 0; i < nargs; i++)
		argv[k++] = args[i];
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	r = -posix_spawnp(&pid, "git", &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r < 0)
		return eos_error_set(err, r, "git %s: cannot run git", args[0]);
	if (waitpid(pid, &status, 0) < 0)
		return eos_error_set(err, eos_neg_errno(), "git %s: wait: %m", args[0]);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return eos_error_set(err, -EIO, "git %s in '%s' failed (status %d)", args[0], root,
				     status);
	return 0;
}

static int
git_setup(struct pb_bench *b, const struct pb_tree *t, struct eos_error *err)
{
	static const char *const init[] = { "init", "-q" }, *const add[] = { "add", "-A" },
				 *const commit[] = { "commit", "-q", "-m", "base" };
	uint64_t t0 = (uint64_t)eos_mono_ns();
	int r;

	pb_progress("git: a repository of base %s", t->label);
	r = git_run(t->root, false, init, EOS_ARRAY_SIZE(init), err);
	r = r ?: git_run(t->root, false, add, EOS_ARRAY_SIZE(add), err);
	r = r ?: git_run(t->root, false, commit, EOS_ARRAY_SIZE(commit), err);
	if (r >= 0 && pb_figure(&b->report, (double)((uint64_t)eos_mono_ns() - t0) / 1e9, "s",
				"git.%s.setup_seconds", t->label) < 0)
		r = eos_error_set(err, -ENOMEM, "git: out of memory");
	return r;
}

/* Write the delta into the work tree, then time git add + git commit. */
static int
git_commit(const struct pb_tree *t, const struct pb_delta *d, bool fsync, struct eos_buf *buf,
	   uint64_t *ret_ns, struct eos_error *err)
{
	static const char *const commit[] = { "commit", "-q", "-m", "bench" };
	cleanup_free const char **add = calloc(d->n + 2, sizeof(*add));
	char path[PATH_MAX];
	uint64_t t0;
	int r = add ? 0 : eos_error_set(err, -ENOMEM, "git: out of memory");

	for (size_t k = 0; r >= 0 && k < d->n; k++) {
		const struct pb_edit *e = &d->edits[k];

		snprintf(path, sizeof(path), "%s/%s", t->root, e->path);
		if (pb_content(e->id, e->size, e->gen, buf) < 0)
			return eos_error_set(err, -ENOMEM, "git: out of memory");
		r = pb_write_file(path, buf->data, buf->len, err);
		add[k + 2] = e->path;
	}
	if (r < 0)
		return r;
	add[0] = "add";
	add[1] = "--";
	t0 = (uint64_t)eos_mono_ns();
	r = git_run(t->root, fsync, add, d->n + 2, err);
	r = r ?: git_run(t->root, fsync, commit, EOS_ARRAY_SIZE(commit), err);
	*ret_ns = (uint64_t)eos_mono_ns() - t0;
	return r;
}

/* Samples of one (base, delta size, variant). */
struct git_config {
	size_t tree;
	uint64_t delta;
	bool fsync;
	uint64_t *ns;
	size_t n;
};

struct git_bench {
	struct pb_bench *b;
	struct git_config *cfg;
	size_t ncfg;
	struct pb_pool pools[PB_MAX_LIST];
	uint64_t rng, serial;
	unsigned reps;
	struct eos_buf buf;
};

static void
git_bench_release(struct git_bench *g)
{
	for (size_t i = 0; i < g->ncfg; i++)
		free(g->cfg[i].ns);
	free(g->cfg);
	for (size_t i = 0; i < PB_MAX_LIST; i++)
		pb_pool_release(&g->pools[i]);
	eos_buf_release(&g->buf);
}

static int
git_configs(struct git_bench *g, struct eos_error *err)
{
	const struct pb_opts *o = g->b->o;

	g->cfg = calloc(g->b->ntrees * o->deltas.n * GIT_VARIANTS, sizeof(*g->cfg));
	if (!g->cfg)
		return eos_error_set(err, -ENOMEM, "git: out of memory");
	for (size_t i = 0; i < g->b->ntrees; i++) {
		if (pb_pool_init(&g->pools[i], &g->b->trees[i], 0, 1) < 0)
			return eos_error_set(err, -ENOMEM, "git: out of memory");
		for (size_t j = 0; j < o->deltas.n; j++) {
			uint64_t d = o->deltas.v[j];

			if (d - d / 10 > g->b->trees[i].nfiles)
				continue;
			for (int v = 0; v < GIT_VARIANTS; v++) {
				struct git_config *c = &g->cfg[g->ncfg++];

				*c = (struct git_config){ .tree = i, .delta = d, .fsync = v == 1 };
				c->ns = calloc(o->reps, sizeof(*c->ns));
				if (!c->ns)
					return eos_error_set(err, -ENOMEM, "git: out of memory");
			}
		}
	}
	return 0;
}

static int
git_one(struct git_bench *g, struct git_config *c, bool record, struct eos_error *err)
{
	struct pb_tree *t = &g->b->trees[c->tree];
	struct pb_delta d;
	uint64_t ns;
	int r = pb_delta_make(t, &g->pools[c->tree], &g->rng, c->delta, "g", &g->serial, &d);

	if (r < 0)
		r = eos_error_set(err, r, "git: delta of %" PRIu64 " files", c->delta);
	r = r ?: git_commit(t, &d, c->fsync, &g->buf, &ns, err);
	pb_delta_release(&d);
	if (r >= 0 && record)
		c->ns[c->n++] = ns;
	return r;
}

static int
git_record(struct git_bench *g)
{
	struct pb_report *rep = &g->b->report;
	int r = pb_figure(rep, g->reps, "commits", "git.reps");

	for (size_t i = 0; r >= 0 && i < g->ncfg; i++) {
		struct git_config *c = &g->cfg[i];
		const char *l = g->b->trees[c->tree].label;
		char prefix[64];
		double eos, git;

		snprintf(prefix, sizeof(prefix), "%s.%s.d%" PRIu64, c->fsync ? "git_fsync" : "git",
			 l, c->delta);
		r = pb_figure_stats(rep, c->ns, c->n, prefix);
		eos = pb_figure_get(rep, "session.%s.d%" PRIu64 ".total.median", l, c->delta);
		git = pb_figure_get(rep, "%s.median", prefix);
		if (r >= 0 && !c->fsync && !isnan(eos) && git > 0)
			r = pb_figure(rep, eos / git, "ratio",
				      "git.%s.d%" PRIu64 ".session_over_git", l, c->delta);
	}
	return r;
}

int
pb_run_git(struct pb_bench *b, struct eos_error *err)
{
	struct git_bench g = { .b = b,
			       .rng = 3,
			       .reps = EOS_MIN(b->o->reps, (unsigned)GIT_MAX_REPS) };
	unsigned rounds = GIT_WARMUP + g.reps;
	int r = 0;

	eos_buf_init(&g.buf);
	if (setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1) < 0 ||
	    setenv("GIT_CONFIG_NOSYSTEM", "1", 1) < 0)
		r = eos_error_set(err, -ENOMEM, "git: out of memory");
	for (size_t i = 0; r >= 0 && i < b->ntrees; i++)
		r = git_setup(b, &b->trees[i], err);
	r = r ?: git_configs(&g, err);
	for (unsigned round = 0; r >= 0 && round < rounds; round++) {
		for (size_t i = 0; r >= 0 && i < g.ncfg; i++)
			r = git_one(&g, &g.cfg[i], round >= GIT_WARMUP, err);
		if (r >= 0 && (round + 1) % 5 == 0)
			pb_progress("git: round %u of %u done", round + 1, rounds);
	}
	if (r >= 0 && git_record(&g) < 0)
		r = eos_error_set(err, -ENOMEM, "git: out of memory");
	git_bench_release(&g);
	return r;
}
