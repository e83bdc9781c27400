/* SPDX-License-Identifier: MIT */
/*
 * The automatic squash policy and the squash planned without a lock: thresholds, leases and the
 * head respected, retained versions byte-identical, concurrent committers while background
 * squashes run, close while a squash is queued or running, a plan invalidated by a lease, and
 * chunk freeing deferred while a change set is alive.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/digest.h"

#include "store/squash.h"
#include "store/store-internal.h"
#include "tests/unit/testutil.h"

enum {
	WORKERS = 4,
	WORKER_COMMITS = 30,
	BIG = 300 * 1024, /* more than one chunk: a manifest */
};

static const char *const sandbox = "as";

/* --- helpers ---------------------------------------------------------------------------------- */

static void
check_ok(int r, const struct eos_error *err, const char *what)
{
	ck_assert_msg(r >= 0, "%s: %s", what, eos_error_message(err, r));
}

static struct eos_store *
store_open(const char *dir, unsigned threshold)
{
	struct eos_store_options o = { .create = true, .squash_threshold = threshold };
	struct eos_error err = { 0 };
	struct eos_store *st = NULL;

	check_ok(eos_store_open(dir, &o, &st, &err), &err, "open");
	return st;
}

static struct eos_changeset *
begin(struct eos_store *st)
{
	struct eos_changeset *cs = NULL;
	struct eos_error err = { 0 };

	check_ok(eos_changeset_new(st, sandbox, &cs, &err), &err, "changeset");
	return cs;
}

static void
put(struct eos_changeset *cs, const char *path, uint64_t seed, size_t len)
{
	struct eos_attr a = eos_test_attr(0644);
	struct eos_error err = { 0 };
	cleanup_free uint8_t *buf = malloc(len ?: 1);

	ck_assert_ptr_nonnull(buf);
	eos_test_fill_random(buf, len, seed);
	check_ok(eos_changeset_put_file_mem(cs, path, &a, buf, len, &err), &err, path);
}

static void
mkdir_(struct eos_changeset *cs, const char *path)
{
	struct eos_attr a = eos_test_attr(0755);
	struct eos_error err = { 0 };

	check_ok(eos_changeset_mkdir(cs, path, &a, false, &err), &err, path);
}

static uint64_t
commit(struct eos_changeset *cs)
{
	struct eos_commit_result res = { 0 };
	struct eos_error err = { 0 };

	check_ok(eos_changeset_commit(cs, 0, &res, &err), &err, "commit");
	eos_changeset_free(cs);
	ck_assert_uint_ne(res.version, 0);
	return res.version;
}

/* Version 1: directories d0..d3 with nfiles small files spread over them. */
static void
build_base(struct eos_store *st, unsigned nfiles)
{
	struct eos_attr root = eos_test_attr(0755);
	struct eos_changeset *cs = NULL;
	struct eos_error err = { 0 };
	char path[64];

	check_ok(eos_changeset_new_sandbox(st, sandbox, "test", &root, &cs, &err), &err, "new");
	for (unsigned d = 0; d < WORKERS; d++) {
		snprintf(path, sizeof(path), "d%u", d);
		mkdir_(cs, path);
	}
	for (unsigned i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "d%u/base%u", i % WORKERS, i);
		put(cs, path, 1000000 + i, 300 + i % 2000);
	}
	put(cs, "file", 1, 5000);
	ck_assert_uint_eq(commit(cs), 1);
}

/* One layer: rewrite "file" (its old chunk becomes squashable) and add a file. */
static uint64_t
step(struct eos_store *st, unsigned i)
{
	struct eos_changeset *cs = begin(st);
	char path[64];

	put(cs, "file", 100 + i, 5000 + i);
	snprintf(path, sizeof(path), "d0/step%u", i);
	put(cs, path, 200 + i, i % 3 ? 700 : BIG);
	return commit(cs);
}

static size_t
layer_count(struct eos_store *st)
{
	cleanup_free struct eos_layer_info *ls = NULL;
	struct eos_error err = { 0 };
	size_t n = 0;

	check_ok(eos_store_layer_list(st, sandbox, &ls, &n, &err), &err, "layer list");
	return n;
}

static bool
layer_exists(struct eos_store *st, uint64_t v)
{
	struct eos_layer_info l;
	struct eos_error err = { 0 };

	return eos_store_layer_get(st, sandbox, v, &l, &err) == 0;
}

static void
lease(struct eos_store *st, const char *name, uint64_t v)
{
	struct eos_error err = { 0 };

	check_ok(eos_store_lease_acquire(st, sandbox, name, v, NULL, &err), &err, "lease");
}

static struct eos_fsck_result
fsck(struct eos_store *st)
{
	struct eos_fsck_result res = { 0 };
	struct eos_error err = { 0 };

	check_ok(eos_store_fsck(st, EOS_FSCK_VERIFY_CHUNKS, NULL, NULL, &res, &err), &err, "fsck");
	ck_assert_uint_eq(res.violations, 0);
	return res;
}

static void
notify_wait(struct eos_store *st)
{
	eos_autosquash_notify(st, sandbox);
	eos_store_autosquash_wait(st);
}

static void
check_file(struct eos_store *st, uint64_t v, const char *path, uint64_t seed, size_t len)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	cleanup_free uint8_t *want = malloc(len ?: 1);
	cleanup_free uint8_t *got = malloc(len + 1);
	struct eos_error err = { 0 };
	ssize_t n;

	ck_assert(want && got);
	eos_test_fill_random(want, len, seed);
	check_ok(eos_store_file_open(st, sandbox, v, path, &f, &err), &err, path);
	n = eos_file_pread(f, got, len + 1, 0, &err);
	ck_assert_msg(n == (ssize_t)len, "'%s': read %zd of %zu bytes", path, n, len);
	ck_assert_msg(memcmp(want, got, len) == 0, "'%s' differs", path);
}

static bool
path_exists(struct eos_store *st, uint64_t v, const char *path)
{
	struct eos_error err = { 0 };
	struct eos_stat s;

	return eos_store_stat(st, sandbox, v, path, &s, &err) == 0;
}

/* --- thresholds ------------------------------------------------------------------------------- */

START_TEST(test_threshold_zero_never_squashes)
{
	struct eos_test_fixture f = eos_test_fixture_open();

	build_base(f.st, 10);
	for (unsigned i = 2; i <= 8; i++) {
		step(f.st, i);
		notify_wait(f.st);
	}
	ck_assert_uint_eq(layer_count(f.st), 8);
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_threshold_squashes_after_n_plus_one)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_digest lease_tree, head_tree, after;

	eos_store_set_autosquash(f.st, 3);
	build_base(f.st, 10);
	notify_wait(f.st);
	for (unsigned i = 2; i <= 4; i++) {
		step(f.st, i);
		notify_wait(f.st);
		ck_assert_uint_eq(layer_count(f.st), i); /* unneeded: 1..i-1, at most 3 */
	}
	/* The 4th unneeded layer: everything folds into the head (version 5). */
	ck_assert_uint_eq(step(f.st, 5), 5);
	head_tree = eos_test_tree_digest(f.st, sandbox, 5);
	notify_wait(f.st);
	ck_assert_uint_eq(layer_count(f.st), 1);
	after = eos_test_tree_digest(f.st, sandbox, 5);
	ck_assert(eos_digest_eq(&head_tree, &after));

	/* A lease keeps version 6: unneeded are 5, 7, 8 (3) after version 9, then 4 after 10. */
	step(f.st, 6);
	lease(f.st, "keep", 6);
	lease_tree = eos_test_tree_digest(f.st, sandbox, 6);
	for (unsigned i = 7; i <= 9; i++) {
		step(f.st, i);
		notify_wait(f.st);
	}
	ck_assert_uint_eq(layer_count(f.st), 5);
	step(f.st, 10);
	head_tree = eos_test_tree_digest(f.st, sandbox, 10);
	notify_wait(f.st);
	ck_assert_uint_eq(layer_count(f.st), 2);
	ck_assert(layer_exists(f.st, 6) && layer_exists(f.st, 10));
	after = eos_test_tree_digest(f.st, sandbox, 6);
	ck_assert(eos_digest_eq(&lease_tree, &after));
	after = eos_test_tree_digest(f.st, sandbox, 10);
	ck_assert(eos_digest_eq(&head_tree, &after));
	check_file(f.st, 6, "file", 106, 5006);
	ck_assert_uint_eq(fsck(f.st).garbage_chunks, 0);
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_threshold_option_and_runtime_change)
{
	char *dir = eos_test_tmpdir("autosquash");
	struct eos_store *st = store_open(dir, 2);

	build_base(st, 10);
	for (unsigned i = 2; i <= 4; i++) {
		step(st, i);
		notify_wait(st);
	}
	ck_assert_uint_eq(layer_count(st), 1); /* 3 unneeded > 2 after version 4 */
	eos_store_set_autosquash(st, 0);
	for (unsigned i = 5; i <= 9; i++) {
		step(st, i);
		notify_wait(st);
	}
	ck_assert_uint_eq(layer_count(st), 6);
	eos_store_set_autosquash(st, 4);
	notify_wait(st);
	ck_assert_uint_eq(layer_count(st), 1);
	/* Unknown and destroyed sandboxes are skipped quietly. */
	eos_autosquash_notify(st, "nope");
	eos_autosquash_notify(st, "bad/id");
	eos_store_autosquash_wait(st);
	fsck(st);
	eos_store_close(st);
	eos_test_rm_rf(dir);
	free(dir);
}
END_TEST

/* --- concurrent committers -------------------------------------------------------------------- */

struct worker {
	struct eos_store *st;
	unsigned k;
	uint64_t versions[WORKER_COMMITS];
};

static uint64_t
worker_seed(unsigned k, unsigned i)
{
	return ((uint64_t)k << 32) | i;
}

static size_t
worker_len(unsigned i)
{
	return i % 7 == 3 ? BIG : 300 + i * 97;
}

static void
worker_commit(struct worker *w, unsigned i)
{
	struct eos_changeset *cs = begin(w->st);
	struct eos_error err = { 0 };
	char path[64];

	snprintf(path, sizeof(path), "d%u/f%u", w->k, i);
	put(cs, path, worker_seed(w->k, i), worker_len(i));
	snprintf(path, sizeof(path), "d%u/cur", w->k);
	put(cs, path, worker_seed(w->k, i) + 7, worker_len(i + 1));
	if (i >= 5) {
		snprintf(path, sizeof(path), "d%u/f%u", w->k, i - 5);
		check_ok(eos_changeset_remove(cs, path, &err), &err, path);
	}
	w->versions[i] = commit(cs);
	eos_autosquash_notify(w->st, sandbox);
}

static void *
worker_run(void *arg)
{
	struct worker *w = arg;

	for (unsigned i = 0; i < WORKER_COMMITS; i++)
		worker_commit(w, i);
	return NULL;
}

static void
check_worker(struct eos_store *st, const struct worker *w)
{
	char path[64];

	for (unsigned i = 0; i < WORKER_COMMITS; i++) {
		snprintf(path, sizeof(path), "d%u/f%u", w->k, i);
		if (i + 5 < WORKER_COMMITS)
			ck_assert_msg(!path_exists(st, 0, path), "'%s' was not removed", path);
		else
			check_file(st, 0, path, worker_seed(w->k, i), worker_len(i));
	}
	snprintf(path, sizeof(path), "d%u/cur", w->k);
	check_file(st, 0, path, worker_seed(w->k, WORKER_COMMITS - 1) + 7,
		   worker_len(WORKER_COMMITS));
}

/* While the workers run: move a lease to the head and check its tree stays the same. */
static void
watch_leases(struct eos_store *st, atomic_bool *done)
{
	struct eos_error err = { 0 };

	while (!atomic_load(done)) {
		struct eos_digest a, b;
		uint64_t v = 0;

		check_ok(eos_store_lease_acquire(st, sandbox, "watch", 0, &v, &err), &err, "lease");
		a = eos_test_tree_digest(st, sandbox, v);
		usleep(20000);
		b = eos_test_tree_digest(st, sandbox, v);
		ck_assert_msg(eos_digest_eq(&a, &b), "leased version %llu changed",
			      (unsigned long long)v);
	}
}

struct joiner {
	pthread_t *t;
	atomic_bool *done;
};

static void *
join_all(void *arg)
{
	struct joiner *j = arg;

	for (unsigned k = 0; k < WORKERS; k++)
		pthread_join(j->t[k], NULL);
	atomic_store(j->done, true);
	return NULL;
}

START_TEST(test_concurrent_committers)
{
	char *dir = eos_test_tmpdir("autosquash");
	struct eos_store *st = store_open(dir, 2);
	struct worker w[WORKERS];
	pthread_t t[WORKERS], jt;
	atomic_bool done = false;
	struct joiner j = { .t = t, .done = &done };
	struct eos_squash_result res;
	struct eos_error err = { 0 };
	struct eos_sandbox_info info;

	build_base(st, 200);
	for (unsigned k = 0; k < WORKERS; k++) {
		w[k] = (struct worker){ .st = st, .k = k };
		ck_assert_int_eq(pthread_create(&t[k], NULL, worker_run, &w[k]), 0);
	}
	ck_assert_int_eq(pthread_create(&jt, NULL, join_all, &j), 0);
	watch_leases(st, &done);
	pthread_join(jt, NULL);
	eos_store_autosquash_wait(st);

	check_ok(eos_store_sandbox_get(st, sandbox, &info, &err), &err, "sandbox get");
	ck_assert_uint_eq(info.head, 1 + WORKERS * WORKER_COMMITS); /* no commit lost */
	for (unsigned k = 0; k < WORKERS; k++)
		check_worker(st, &w[k]);
	fsck(st);
	ck_assert_uint_lt(layer_count(st), 1 + WORKERS * WORKER_COMMITS);
	/* Nothing alive now: a squash frees what the background ones had to leave. */
	check_ok(eos_store_lease_release(st, sandbox, "watch", &err), &err, "release");
	check_ok(eos_store_squash(st, sandbox, &res, &err), &err, "squash");
	ck_assert_uint_eq(fsck(st).garbage_chunks, 0);
	ck_assert_uint_eq(layer_count(st), 1);
	for (unsigned k = 0; k < WORKERS; k++)
		check_worker(st, &w[k]);
	eos_store_close(st);
	eos_test_rm_rf(dir);
	free(dir);
}
END_TEST

/* --- close while queued or running ------------------------------------------------------------ */

static void
close_during_squash(unsigned delay_us)
{
	char *dir = eos_test_tmpdir("autosquash");
	struct eos_store *st = store_open(dir, 1);
	struct eos_digest head, after;
	struct timespec t0, t1;

	build_base(st, 30000);
	for (unsigned i = 2; i <= 8; i++)
		step(st, i);
	head = eos_test_tree_digest(st, sandbox, 0);
	eos_autosquash_notify(st, sandbox);
	if (delay_us)
		usleep(delay_us);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	eos_store_close(st);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 10);
	st = store_open(dir, 0);
	after = eos_test_tree_digest(st, sandbox, 8);
	ck_assert(eos_digest_eq(&head, &after));
	fsck(st);
	eos_store_close(st);
	eos_test_rm_rf(dir);
	free(dir);
}

START_TEST(test_close_while_queued)
{
	close_during_squash(0);
}
END_TEST

START_TEST(test_close_while_running)
{
	close_during_squash(20000);
}
END_TEST

/* --- a plan invalidated between planning and writing ------------------------------------------ */

struct hook {
	struct eos_store *st;
	unsigned leases; /* attempts that lease an old version */
	uint64_t v;
	bool commit; /* commit a new layer and lease it instead */
};

static void
after_plan(void *ctx, unsigned attempt)
{
	struct hook *h = ctx;
	char name[32];

	if (h->commit && attempt == 1) {
		h->v = step(h->st, 100);
		lease(h->st, "new", h->v);
		return;
	}
	if (attempt > h->leases)
		return;
	snprintf(name, sizeof(name), "late%u", attempt);
	lease(h->st, name, h->v + attempt - 1);
}

static struct eos_digest
digests_of(struct eos_store *st, struct eos_digest *out, uint64_t from, uint64_t to)
{
	for (uint64_t v = from; v <= to; v++)
		out[v - from] = eos_test_tree_digest(st, sandbox, v);
	return out[0];
}

START_TEST(test_lease_between_plan_and_write)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct hook h = { .st = f.st, .leases = 1, .v = 3 };
	struct eos_squash_options opts = { .after_plan = after_plan, .ctx = &h };
	struct eos_squash_timing t = { 0 };
	struct eos_squash_result res = { 0 };
	struct eos_error err = { 0 };
	struct eos_digest before[8], d;

	build_base(f.st, 20);
	for (unsigned i = 2; i <= 8; i++)
		step(f.st, i);
	digests_of(f.st, before, 1, 8);
	check_ok(eos_squash_run(f.st, sandbox, &opts, &res, &t, &err), &err, "squash");
	ck_assert_uint_eq(t.attempts, 2);
	ck_assert_uint_eq(res.layers_removed, 6);
	ck_assert_uint_eq(layer_count(f.st), 2);
	ck_assert(layer_exists(f.st, 3));
	d = eos_test_tree_digest(f.st, sandbox, 3);
	ck_assert(eos_digest_eq(&d, &before[2]));
	check_file(f.st, 3, "file", 103, 5003);
	d = eos_test_tree_digest(f.st, sandbox, 8);
	ck_assert(eos_digest_eq(&d, &before[7]));
	ck_assert_uint_eq(fsck(f.st).garbage_chunks, 0);
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_leases_keep_invalidating)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct hook h = { .st = f.st, .leases = EOS_SQUASH_ATTEMPTS, .v = 2 };
	struct eos_squash_options opts = { .after_plan = after_plan, .ctx = &h };
	struct eos_squash_timing t = { 0 };
	struct eos_error err = { 0 };
	struct eos_digest before[8], d;

	build_base(f.st, 20);
	for (unsigned i = 2; i <= 8; i++)
		step(f.st, i);
	digests_of(f.st, before, 1, 8);
	ck_assert_int_eq(eos_squash_run(f.st, sandbox, &opts, NULL, &t, &err), -EAGAIN);
	ck_assert_ptr_nonnull(strstr(err.msg, "'as'"));
	ck_assert_uint_eq(t.attempts, EOS_SQUASH_ATTEMPTS);
	ck_assert_uint_eq(t.locked_ns > 0, 1);
	ck_assert_uint_eq(layer_count(f.st), 8);
	for (uint64_t v = 1; v <= 8; v++) {
		d = eos_test_tree_digest(f.st, sandbox, v);
		ck_assert(eos_digest_eq(&d, &before[v - 1]));
	}
	fsck(f.st);
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_new_layer_between_plan_and_write)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct hook h = { .st = f.st, .commit = true };
	struct eos_squash_options opts = { .after_plan = after_plan, .ctx = &h };
	struct eos_squash_timing t = { 0 };
	struct eos_squash_result res = { 0 };
	struct eos_error err = { 0 };
	struct eos_digest head, d;

	build_base(f.st, 20);
	for (unsigned i = 2; i <= 6; i++)
		step(f.st, i);
	head = eos_test_tree_digest(f.st, sandbox, 6);
	check_ok(eos_squash_run(f.st, sandbox, &opts, &res, &t, &err), &err, "squash");
	ck_assert_uint_eq(t.attempts, 1);
	ck_assert_uint_eq(h.v, 7);
	ck_assert_uint_eq(res.layers_removed, 5);
	ck_assert_uint_eq(layer_count(f.st), 2); /* 6 (the planned head) and 7 */
	d = eos_test_tree_digest(f.st, sandbox, 6);
	ck_assert(eos_digest_eq(&d, &head));
	check_file(f.st, 7, "file", 200, 5100);
	ck_assert_uint_eq(fsck(f.st).garbage_chunks, 0);
	eos_test_fixture_close(&f);
}
END_TEST

/* --- freeing deferred while a change set is alive --------------------------------------------- */

START_TEST(test_free_deferred_while_changeset_alive)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_squash_timing t = { 0 };
	struct eos_squash_result res = { 0 };
	struct eos_error err = { 0 };
	struct eos_changeset *cs;
	uint64_t freed = 0;

	build_base(f.st, 5);
	for (unsigned i = 2; i <= 4; i++)
		step(f.st, i);
	/* Staged while "file"'s version-1 content is referenced: its chunk is not written again. */
	cs = begin(f.st);
	put(cs, "again", 1, 5000);
	check_ok(eos_squash_run(f.st, sandbox, NULL, &res, &t, &err), &err, "squash");
	ck_assert_uint_eq(res.layers_removed, 3);
	ck_assert_uint_eq(res.chunks_freed, 0);
	ck_assert(t.deferred);
	ck_assert_int_eq(t.exclusive_ns, 0);
	ck_assert_uint_eq(commit(cs), 5);
	check_file(f.st, 5, "again", 1, 5000);
	ck_assert_uint_gt(fsck(f.st).garbage_chunks, 0);
	check_ok(eos_squash_flush(f.st, 0, &freed, &err), &err, "flush");
	ck_assert_uint_gt(freed, 0);
	ck_assert_uint_eq(fsck(f.st).garbage_chunks, 0);
	check_file(f.st, 5, "again", 1, 5000);
	/* A squash with nothing alive frees directly. */
	step(f.st, 6);
	check_ok(eos_squash_run(f.st, sandbox, NULL, &res, &t, &err), &err, "squash");
	ck_assert_uint_gt(res.chunks_freed, 0);
	ck_assert(!t.deferred);
	ck_assert_uint_eq(fsck(f.st).garbage_chunks, 0);
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_background_frees_when_idle)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_changeset *cs;

	eos_store_set_autosquash(f.st, 1);
	build_base(f.st, 5);
	step(f.st, 2);
	step(f.st, 3);
	cs = begin(f.st); /* alive: the squash cannot free, nor can the flush after it */
	notify_wait(f.st);
	ck_assert_uint_eq(layer_count(f.st), 1);
	ck_assert_uint_gt(fsck(f.st).garbage_chunks, 0);
	eos_changeset_free(cs);
	notify_wait(f.st); /* nothing to squash: frees what the squash listed */
	ck_assert_uint_eq(fsck(f.st).garbage_chunks, 0);
	check_file(f.st, 3, "file", 103, 5003);
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_gc_drops_the_free_list)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_squash_result res = { 0 };
	struct eos_error err = { 0 };
	struct eos_changeset *cs;
	uint64_t freed = 0;

	build_base(f.st, 5);
	for (unsigned i = 2; i <= 4; i++)
		step(f.st, i);
	cs = begin(f.st);
	check_ok(eos_store_squash(f.st, sandbox, &res, &err), &err, "squash");
	eos_changeset_free(cs);
	check_ok(eos_store_gc(f.st, &freed, &err), &err, "gc");
	ck_assert_uint_gt(freed, 0);
	ck_assert_uint_eq(fsck(f.st).garbage_chunks, 0);
	check_ok(eos_squash_flush(f.st, 0, &freed, &err), &err, "flush");
	ck_assert_uint_eq(freed, 0);
	eos_test_fixture_close(&f);
}
END_TEST

static Suite *
autosquash_suite(void)
{
	Suite *s = suite_create("autosquash");
	TCase *tc = tcase_create("autosquash");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_threshold_zero_never_squashes);
	tcase_add_test(tc, test_threshold_squashes_after_n_plus_one);
	tcase_add_test(tc, test_threshold_option_and_runtime_change);
	tcase_add_test(tc, test_concurrent_committers);
	tcase_add_test(tc, test_close_while_queued);
	tcase_add_test(tc, test_close_while_running);
	tcase_add_test(tc, test_lease_between_plan_and_write);
	tcase_add_test(tc, test_leases_keep_invalidating);
	tcase_add_test(tc, test_new_layer_between_plan_and_write);
	tcase_add_test(tc, test_free_deferred_while_changeset_alive);
	tcase_add_test(tc, test_background_frees_when_idle);
	tcase_add_test(tc, test_gc_drops_the_free_list);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(autosquash_suite());
}
