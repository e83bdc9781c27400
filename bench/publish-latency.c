/* SPDX-License-Identifier: MIT */
/*
 * One timed publish, and the latency sections of publish-bench: every delta size on every base,
 * in interleaved rounds (round r publishes each (base, size) once), so that the store's growth
 * and the machine's noise fall on every configuration alike.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/path.h"

#include "bench/publish.h"

static const char latency_session[] = "bench-latency";

/* --- one publish ------------------------------------------------------------------------------ */

static struct eos_attr
file_attr(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (struct eos_attr){ .mode = 0644,
				  .uid = geteuid(),
				  .gid = getegid(),
				  .mtime_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec };
}

static int
data_path(const char *dir, size_t k, char *out, size_t size, struct eos_error *err)
{
	int n = snprintf(out, size, "%s/e%zu", dir, k);

	if (n < 0 || (size_t)n >= size)
		return eos_error_set(err, -ENAMETOOLONG, "'%s': path too long", dir);
	return 0;
}

/* The data file of each edit, as an editor (or the FUSE view) would have left it. */
static int
write_data(const char *dir, const struct pb_delta *d, struct eos_buf *buf, struct eos_error *err)
{
	char path[PATH_MAX];
	int r = 0;

	for (size_t k = 0; r >= 0 && k < d->n; k++) {
		const struct pb_edit *e = &d->edits[k];

		r = data_path(dir, k, path, sizeof(path), err);
		if (r >= 0 && pb_content(e->id, e->size, e->gen, buf) < 0)
			r = eos_error_set(err, -ENOMEM, "content: out of memory");
		if (r >= 0)
			r = pb_write_file(path, buf->data, buf->len, err);
	}
	return r;
}

static int
stage(struct eos_publish *p, const struct pb_delta *d, const char *dir, struct eos_error *err)
{
	struct eos_publish_file f = { .attr = file_attr() };
	char path[PATH_MAX];
	int r = 0;

	for (size_t k = 0; r >= 0 && k < d->n; k++) {
		r = data_path(dir, k, path, sizeof(path), err);
		f.data_path = path;
		r = r ?: eos_publish_put_file(p, d->edits[k].path, &f, err);
	}
	return r;
}

/* The publish's first file at its new version must hold the bytes written. */
static int
verify(const struct pb_target *tg, const struct pb_edit *e, uint64_t v, struct eos_buf *buf,
       struct eos_error *err)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	cleanup_free uint8_t *got = NULL;
	ssize_t n = 0;
	int r = pb_content(e->id, e->size, e->gen, buf);

	r = r < 0 ? eos_error_set(err, r, "verify: out of memory")
		  : eos_store_file_open(tg->st, tg->sandbox, v, e->path, &f, err);
	if (r < 0)
		return r;
	got = malloc(buf->len + 1);
	if (!got)
		return eos_error_set(err, -ENOMEM, "verify: out of memory");
	if (eos_file_size(f) == buf->len)
		n = eos_file_pread(f, got, buf->len + 1, 0, err);
	if (n < 0)
		return (int)n;
	if (eos_file_size(f) != buf->len || (size_t)n != buf->len || memcmp(got, buf->data, n))
		return eos_error_set(err, -EBADMSG,
				     "'%s' at L%06" PRIu64 " is not what was published", e->path,
				     v);
	return 0;
}

static int
check_result(const struct pb_target *tg, const struct eos_publish_result *res,
	     struct eos_error *err)
{
	if (res->status == EOS_PUBLISH_PUBLISHED)
		return 0;
	return eos_error_set(err, -EPROTO, "publish to '%s'%s%s: %s, not published%s%s",
			     tg->sandbox, tg->session ? " from session " : "",
			     tg->session ? tg->session : "", eos_publish_status_name(res->status),
			     res->nconflicts ? ": " : "",
			     res->nconflicts ? res->conflicts[0].message : "");
}

static int
timed_publish(const struct pb_target *tg, const struct pb_delta *d, const char *dir,
	      struct eos_publish_result *res, struct pb_sample *ret, struct eos_error *err)
{
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	struct eos_publish_options o = { .sandbox = tg->sandbox, .session = tg->session };
	struct eos_sandbox_info info;
	uint64_t t0;
	int r = 0;

	if (!tg->session) /* a caller of a plain change set knows its base */
		r = eos_store_sandbox_get(tg->st, tg->sandbox, &info, err);
	o.base = r >= 0 && !tg->session ? info.head : 0;
	t0 = (uint64_t)eos_mono_ns();
	r = r ?: eos_publish_begin(tg->st, &o, &p, err);
	r = r ?: stage(p, d, dir, err);
	r = r ?: eos_publish_commit(p, res, err);
	eos_publish_free(TAKE_PTR(p));
	*ret = (struct pb_sample){ .total_ns = (uint64_t)eos_mono_ns() - t0,
				   .prepare_ns = (uint64_t)res->prepare_ns,
				   .lock_ns = (uint64_t)res->lock_ns };
	return r;
}

int
pb_publish(const struct pb_target *tg, const struct pb_delta *d, struct eos_buf *scratch,
	   struct pb_sample *ret, struct eos_error *err)
{
	cleanup_free char *dir = NULL;
	struct eos_publish_result res = { 0 };
	int r;

	if (tg->session)
		r = eos_store_session_dir(tg->st, tg->sandbox, tg->session, &dir, err);
	else
		r = (dir = strdup(tg->stage)) ? 0 : eos_error_set(err, -ENOMEM, "out of memory");
	r = r ?: write_data(dir, d, scratch, err);
	r = r ?: timed_publish(tg, d, dir, &res, ret, err);
	r = r ?: check_result(tg, &res, err);
	if (r >= 0 && tg->verify && d->n)
		r = verify(tg, &d->edits[0], res.version, scratch, err);
	eos_publish_result_release(&res);
	return r;
}

/* --- the latency sections --------------------------------------------------------------------- */

/* The samples of one (base, delta size). */
struct config {
	size_t tree;
	uint64_t delta;
	uint64_t *prepare, *lock, *total;
	size_t n;
};

struct latency {
	struct pb_bench *b;
	const char *section; /* "session" or "plain" */
	bool sessions;
	struct config *cfg;
	size_t ncfg;
	struct pb_pool pools[PB_MAX_LIST];
	uint64_t heads[PB_MAX_LIST], layers[PB_MAX_LIST], publishes[PB_MAX_LIST], serial, rng;
	struct eos_buf scratch;
	char *stage;
};

static void
latency_release(struct latency *L)
{
	for (size_t i = 0; i < L->ncfg; i++) {
		free(L->cfg[i].prepare);
		free(L->cfg[i].lock);
		free(L->cfg[i].total);
	}
	free(L->cfg);
	for (size_t i = 0; i < PB_MAX_LIST; i++)
		pb_pool_release(&L->pools[i]);
	eos_buf_release(&L->scratch);
	if (L->stage)
		pb_remove_tree(L->stage);
	free(L->stage);
}

static int
add_configs(struct latency *L, struct eos_error *err)
{
	const struct pb_opts *o = L->b->o;

	L->cfg = calloc(L->b->ntrees * o->deltas.n, sizeof(*L->cfg));
	if (!L->cfg)
		return eos_error_set(err, -ENOMEM, "latency: out of memory");
	for (size_t i = 0; i < L->b->ntrees; i++) {
		for (size_t j = 0; j < o->deltas.n; j++) {
			struct config *c = &L->cfg[L->ncfg];
			uint64_t d = o->deltas.v[j];

			if (d - d / 10 > L->b->trees[i].nfiles) {
				pb_progress("%s: no delta of %" PRIu64 " files on base %s",
					    L->section, d, L->b->trees[i].label);
				continue;
			}
			*c = (struct config){ .tree = i, .delta = d };
			c->prepare = calloc(o->reps, sizeof(uint64_t));
			c->lock = calloc(o->reps, sizeof(uint64_t));
			c->total = calloc(o->reps, sizeof(uint64_t));
			L->ncfg++;
			if (!c->prepare || !c->lock || !c->total)
				return eos_error_set(err, -ENOMEM, "latency: out of memory");
		}
	}
	return 0;
}

static int
latency_init(struct latency *L, struct pb_bench *b, bool sessions, struct eos_error *err)
{
	struct eos_sandbox_info info;
	int r;

	*L = (struct latency){ .b = b,
			       .section = sessions ? "session" : "plain",
			       .sessions = sessions,
			       .rng = sessions ? 1 : 2 };
	eos_buf_init(&L->scratch);
	if (eos_path_join(b->work, "stage-latency", &L->stage) < 0)
		return eos_error_set(err, -ENOMEM, "latency: out of memory");
	if (mkdir(L->stage, 0700) < 0 && errno != EEXIST)
		return eos_error_set(err, eos_neg_errno(), "mkdir '%s': %m", L->stage);
	for (size_t i = 0; i < b->ntrees; i++) {
		if (pb_pool_init(&L->pools[i], &b->trees[i], 0, 1) < 0)
			return eos_error_set(err, -ENOMEM, "latency: out of memory");
		r = eos_store_sandbox_get(b->st, b->sandboxes[i], &info, err);
		if (r >= 0 && sessions)
			r = eos_store_session_create(b->st, b->sandboxes[i], latency_session, 0,
						     NULL, err);
		if (r < 0)
			return r;
		L->heads[i] = info.head;
		L->layers[i] = info.layers;
	}
	return add_configs(L, err);
}

static int
run_one(struct latency *L, struct config *c, bool record, struct eos_error *err)
{
	struct pb_target tg = { .st = L->b->st,
				.sandbox = L->b->sandboxes[c->tree],
				.session = L->sessions ? latency_session : NULL,
				.stage = L->stage,
				.verify = true };
	struct pb_delta d;
	struct pb_sample s;
	int r = pb_delta_make(&L->b->trees[c->tree], &L->pools[c->tree], &L->rng, c->delta,
			      L->sessions ? "s" : "p", &L->serial, &d);

	if (r < 0) {
		pb_delta_release(&d);
		return eos_error_set(err, r, "delta of %" PRIu64 " files: %s", c->delta,
				     r == -ERANGE ? "the base is too small" : "out of memory");
	}
	r = pb_publish(&tg, &d, &L->scratch, &s, err);
	pb_delta_release(&d);
	if (r < 0)
		return r;
	L->publishes[c->tree]++;
	if (record) {
		c->prepare[c->n] = s.prepare_ns;
		c->lock[c->n] = s.lock_ns;
		c->total[c->n++] = s.total_ns;
	}
	return 0;
}

static int
run_rounds(struct latency *L, struct eos_error *err)
{
	unsigned rounds = PB_WARMUP + L->b->o->reps;
	uint64_t t0 = (uint64_t)eos_mono_ns();
	int r = 0;

	for (unsigned round = 0; r >= 0 && round < rounds; round++) {
		for (size_t i = 0; r >= 0 && i < L->ncfg; i++)
			r = run_one(L, &L->cfg[i], round >= PB_WARMUP, err);
		if (round + 1 == rounds || (uint64_t)eos_mono_ns() - t0 > 10000000000u) {
			pb_progress("%s: round %u of %u done", L->section, round + 1, rounds);
			t0 = (uint64_t)eos_mono_ns();
		}
	}
	return r;
}

/* Every publish made exactly one layer (nothing squashes: the store has no threshold). */
static int
check_layers(struct latency *L, struct eos_error *err)
{
	struct eos_sandbox_info info;

	for (size_t i = 0; i < L->b->ntrees; i++) {
		int r = eos_store_sandbox_get(L->b->st, L->b->sandboxes[i], &info, err);

		if (r < 0)
			return r;
		if (info.head != L->heads[i] + L->publishes[i] ||
		    info.layers != L->layers[i] + L->publishes[i])
			return eos_error_set(err, -EPROTO,
					     "sandbox '%s': head L%06" PRIu64 " and %" PRIu64
					     " layers after %" PRIu64 " publishes on L%06" PRIu64,
					     L->b->sandboxes[i], info.head, info.layers,
					     L->publishes[i], L->heads[i]);
	}
	return 0;
}

static int
record_config(struct latency *L, struct config *c)
{
	struct pb_report *rep = &L->b->report;
	const char *l = L->b->trees[c->tree].label;
	char prefix[64];
	int r;

	snprintf(prefix, sizeof(prefix), "%s.%s.d%" PRIu64 ".prepare", L->section, l, c->delta);
	r = pb_figure_stats(rep, c->prepare, c->n, prefix);
	snprintf(prefix, sizeof(prefix), "%s.%s.d%" PRIu64 ".lock", L->section, l, c->delta);
	r = r ?: pb_figure_stats(rep, c->lock, c->n, prefix);
	snprintf(prefix, sizeof(prefix), "%s.%s.d%" PRIu64 ".total", L->section, l, c->delta);
	return r ?: pb_figure_stats(rep, c->total, c->n, prefix);
}

/* Largest base over smallest, per delta size and part. */
static int
record_flat(struct latency *L)
{
	static const char *const parts[] = { "total", "lock", "prepare" };
	struct pb_report *rep = &L->b->report;
	const char *lo = L->b->trees[0].label, *hi = L->b->trees[L->b->ntrees - 1].label;
	int r = 0;

	for (size_t j = 0; r >= 0 && L->b->ntrees > 1 && j < L->b->o->deltas.n; j++) {
		uint64_t d = L->b->o->deltas.v[j];

		for (size_t k = 0; r >= 0 && k < EOS_ARRAY_SIZE(parts); k++) {
			double a = pb_figure_get(rep, "%s.%s.d%" PRIu64 ".%s.median", L->section,
						 hi, d, parts[k]);
			double b = pb_figure_get(rep, "%s.%s.d%" PRIu64 ".%s.median", L->section,
						 lo, d, parts[k]);

			if (!isnan(a) && !isnan(b) && b > 0)
				r = pb_figure(rep, a / b, "ratio", "%s.d%" PRIu64 ".flat.%s",
					      L->section, d, parts[k]);
		}
	}
	return r;
}

static int
record_target(struct latency *L)
{
	struct pb_report *rep = &L->b->report;
	const char *l = L->b->trees[L->b->ntrees - 1].label;
	double m = pb_figure_get(rep, "session.%s.d%d.total.median", l, PB_TARGET_DELTA);

	if (!L->sessions || isnan(m))
		return 0;
	return pb_figure(rep, m / PB_TARGET_MS, "ratio", "target.d%d.%s.over_target",
			 PB_TARGET_DELTA, l);
}

static int
record_all(struct latency *L)
{
	int r = pb_figure(&L->b->report, L->b->o->reps, "publishes", "%s.reps", L->section);

	for (size_t i = 0; r >= 0 && i < L->ncfg; i++)
		r = record_config(L, &L->cfg[i]);
	r = r ?: record_flat(L);
	return r ?: record_target(L);
}

static void
remove_sessions(struct latency *L)
{
	for (size_t i = 0; L->sessions && i < L->b->ntrees; i++)
		eos_store_session_remove(L->b->st, L->b->sandboxes[i], latency_session, NULL);
}

int
pb_run_latency(struct pb_bench *b, bool sessions, struct eos_error *err)
{
	struct latency L;
	int r = latency_init(&L, b, sessions, err);

	if (r >= 0)
		pb_progress("%s: %zu configurations, %u rounds (%d untimed)", L.section, L.ncfg,
			    PB_WARMUP + b->o->reps, PB_WARMUP);
	r = r ?: run_rounds(&L, err);
	r = r ?: check_layers(&L, err);
	if (r >= 0 && record_all(&L) < 0)
		r = eos_error_set(err, -ENOMEM, "latency: out of memory");
	remove_sessions(&L);
	latency_release(&L);
	return r;
}
