/* SPDX-License-Identifier: MIT */
/*
 * The concurrent section of publish-bench: N threads, each with its own session on the largest
 * base and its own files (index ≡ thread mod N), publish 10-file changes back to back for a
 * fixed time. Each publish is checked against the head the other threads moved (its session's
 * base is its own previous publish); disjoint files must all merge cleanly, so every publish must
 * be PUBLISHED and the head must advance by exactly the number of publishes.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"

#include "bench/publish.h"

/* The starting gun: workers wait until go is set. */
struct start {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool go;
};

struct worker {
	struct pb_bench *b;
	size_t tree;
	struct start *start;
	uint64_t duration_ns;
	char session[EOS_SESSION_NAME_MAX + 1];
	char tag[48];
	struct pb_pool pool;
	uint64_t rng, serial;
	struct eos_buf scratch;
	uint64_t *prepare, *lock, *total; /* one per publish */
	size_t n, cap;
	uint64_t t_start, t_end;
	int r;
	struct eos_error err;
};

static int
record(struct worker *w, const struct pb_sample *s)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 256;
		uint64_t *p = reallocarray(w->prepare, cap, sizeof(uint64_t));

		if (p)
			w->prepare = p;
		p = p ? reallocarray(w->lock, cap, sizeof(uint64_t)) : NULL;
		if (p)
			w->lock = p;
		p = p ? reallocarray(w->total, cap, sizeof(uint64_t)) : NULL;
		if (!p)
			return -ENOMEM;
		w->total = p;
		w->cap = cap;
	}
	w->prepare[w->n] = s->prepare_ns;
	w->lock[w->n] = s->lock_ns;
	w->total[w->n++] = s->total_ns;
	return 0;
}

static int
work(struct worker *w)
{
	struct pb_target tg = { .st = w->b->st,
				.sandbox = w->b->sandboxes[w->tree],
				.session = w->session };
	struct pb_tree *t = &w->b->trees[w->tree];
	uint64_t deadline = w->t_start + w->duration_ns;
	int r = 0;

	while (r >= 0 && (uint64_t)eos_mono_ns() < deadline) {
		struct pb_delta d;
		struct pb_sample s;

		r = pb_delta_make(t, &w->pool, &w->rng, PB_CONCURRENT_DELTA, w->tag, &w->serial,
				  &d);
		if (r < 0)
			r = eos_error_set(&w->err, r, "delta: %s",
					  r == -ERANGE ? "too few files" : "out of memory");
		r = r ?: pb_publish(&tg, &d, &w->scratch, &s, &w->err);
		pb_delta_release(&d);
		if (r >= 0 && record(w, &s) < 0)
			r = eos_error_set(&w->err, -ENOMEM, "samples: out of memory");
	}
	return r;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	pthread_mutex_lock(&w->start->lock);
	while (!w->start->go)
		pthread_cond_wait(&w->start->cond, &w->start->lock);
	pthread_mutex_unlock(&w->start->lock);
	w->t_start = (uint64_t)eos_mono_ns();
	w->r = work(w);
	w->t_end = (uint64_t)eos_mono_ns();
	return NULL;
}

static void
workers_free(struct worker *w, size_t n)
{
	for (size_t i = 0; w && i < n && w[i].b; i++) {
		pb_pool_release(&w[i].pool);
		eos_buf_release(&w[i].scratch);
		free(w[i].prepare);
		free(w[i].lock);
		free(w[i].total);
		eos_store_session_remove(w[i].b->st, w[i].b->sandboxes[w[i].tree], w[i].session,
					 NULL);
	}
	free(w);
}

static int
workers_new(struct pb_bench *b, size_t nthreads, struct start *start, struct worker **ret,
	    struct eos_error *err)
{
	struct worker *w = calloc(nthreads, sizeof(*w));
	size_t tree = b->ntrees - 1;
	int r = 0;

	if (!w)
		return eos_error_set(err, -ENOMEM, "concurrent: out of memory");
	for (size_t i = 0; r >= 0 && i < nthreads; i++) {
		w[i] = (struct worker){ .b = b, .tree = tree, .start = start, .rng = 1000 + i };
		w[i].duration_ns = (uint64_t)(b->o->duration * 1e9);
		eos_buf_init(&w[i].scratch);
		snprintf(w[i].session, sizeof(w[i].session), "bench-c%zu-%zu", nthreads, i);
		snprintf(w[i].tag, sizeof(w[i].tag), "c%zu-%zu", nthreads, i);
		if (pb_pool_init(&w[i].pool, &b->trees[tree], i, nthreads) < 0)
			r = eos_error_set(err, -ENOMEM, "concurrent: out of memory");
		r = r
			    ?: eos_store_session_create(b->st, b->sandboxes[tree], w[i].session, 0,
							NULL, err);
	}
	if (r < 0) {
		workers_free(w, nthreads);
		return r;
	}
	*ret = w;
	return 0;
}

static void
fire(struct start *start)
{
	pthread_mutex_lock(&start->lock);
	start->go = true;
	pthread_cond_broadcast(&start->cond);
	pthread_mutex_unlock(&start->lock);
}

/* Start the threads together; join them all. */
static int
run_workers(struct worker *w, size_t n, struct start *start, struct eos_error *err)
{
	cleanup_free pthread_t *tids = calloc(n, sizeof(*tids));
	size_t started = 0;
	int r = 0;

	if (!tids)
		return eos_error_set(err, -ENOMEM, "concurrent: out of memory");
	for (; r >= 0 && started < n; started++)
		r = -pthread_create(&tids[started], NULL, worker_main, &w[started]);
	if (r < 0) { /* the threads started stop at once */
		started--;
		for (size_t i = 0; i < n; i++)
			w[i].duration_ns = 0;
	}
	fire(start);
	for (size_t i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	if (r < 0)
		return eos_error_set(err, r, "concurrent: cannot start a thread");
	for (size_t i = 0; i < n; i++)
		if (w[i].r < 0) {
			*err = w[i].err;
			return eos_error_prefix(err, w[i].r, "concurrent: thread %zu", i);
		}
	return 0;
}

/* All samples of part (0 prepare, 1 lock, 2 total) of every worker, in one array. */
static uint64_t *
gather(const struct worker *w, size_t nthreads, size_t total, int part)
{
	uint64_t *all = calloc(total ? total : 1, sizeof(*all));
	size_t k = 0;

	for (size_t i = 0; all && i < nthreads; i++) {
		const uint64_t *src = part == 0 ? w[i].prepare : part == 1 ? w[i].lock : w[i].total;

		memcpy(all + k, src, w[i].n * sizeof(*all));
		k += w[i].n;
	}
	return all;
}

static int
record_stats(struct pb_bench *b, const struct worker *w, size_t nthreads, size_t total)
{
	static const char *const parts[] = { "prepare", "lock", "total" };
	char prefix[64];
	int r = 0;

	for (int p = 0; r >= 0 && p < 3; p++) {
		cleanup_free uint64_t *all = gather(w, nthreads, total, p);

		if (!all)
			return -ENOMEM;
		snprintf(prefix, sizeof(prefix), "concurrent.t%zu.%s", nthreads, parts[p]);
		r = pb_figure_stats(&b->report, all, total, prefix);
	}
	return r;
}

/* Every publish made exactly one layer (nothing squashes: the store has no threshold). */
static bool
layers_ok(const struct eos_sandbox_info *before, const struct eos_sandbox_info *after,
	  uint64_t publishes)
{
	return after->head == before->head + publishes &&
	       after->layers == before->layers + publishes;
}

/* Throughput over the span from the first start to the last end, and the layer check. */
static int
record_run(struct pb_bench *b, const struct worker *w, size_t nthreads,
	   const struct eos_sandbox_info *before, struct eos_error *err)
{
	uint64_t first = UINT64_MAX, last = 0, total = 0;
	struct eos_sandbox_info info;
	int r = eos_store_sandbox_get(b->st, b->sandboxes[w[0].tree], &info, err);

	if (r < 0)
		return r;
	for (size_t i = 0; i < nthreads; i++) {
		first = EOS_MIN(first, w[i].t_start);
		last = EOS_MAX(last, w[i].t_end);
		total += w[i].n;
	}
	if (pb_figure(&b->report, (double)total, "publishes", "concurrent.t%zu.publishes",
		      nthreads) < 0 ||
	    pb_figure(&b->report, (double)total / ((double)(last - first) / 1e9), "1/s",
		      "concurrent.t%zu.per_s", nthreads) < 0 ||
	    pb_figure(&b->report, layers_ok(before, &info, total), "bool", "concurrent.t%zu.ok",
		      nthreads) < 0 ||
	    record_stats(b, w, nthreads, total) < 0)
		return eos_error_set(err, -ENOMEM, "concurrent: out of memory");
	if (!layers_ok(before, &info, total))
		return eos_error_set(err, -EPROTO,
				     "concurrent: head L%06" PRIu64 " and %" PRIu64
				     " layers after %" PRIu64 " publishes on L%06" PRIu64
				     " with %" PRIu64 " layers",
				     info.head, info.layers, total, before->head, before->layers);
	pb_progress("concurrent: %zu threads: %" PRIu64 " publishes, %.1f/s", nthreads, total,
		    (double)total / ((double)(last - first) / 1e9));
	return 0;
}

static int
run_threads(struct pb_bench *b, size_t nthreads, struct eos_error *err)
{
	struct start start = { .lock = PTHREAD_MUTEX_INITIALIZER,
			       .cond = PTHREAD_COND_INITIALIZER };
	struct worker *w = NULL;
	struct eos_sandbox_info info;
	int r = eos_store_sandbox_get(b->st, b->sandboxes[b->ntrees - 1], &info, err);

	r = r ?: workers_new(b, nthreads, &start, &w, err);
	r = r ?: run_workers(w, nthreads, &start, err);
	r = r ?: record_run(b, w, nthreads, &info, err);
	workers_free(w, nthreads);
	return r;
}

int
pb_run_concurrent(struct pb_bench *b, struct eos_error *err)
{
	int r = pb_figure(&b->report, b->o->duration, "s", "concurrent.seconds");

	for (size_t i = 0; r >= 0 && i < b->o->threads.n; i++) {
		pb_progress("concurrent: %" PRIu64 " threads for %.1f s", b->o->threads.v[i],
			    b->o->duration);
		r = run_threads(b, (size_t)b->o->threads.v[i], err);
	}
	return r;
}
