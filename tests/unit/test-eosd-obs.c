/* SPDX-License-Identifier: MIT */
/*
 * supervisor/obs, obs-follow, cgroup and the observability handlers, over a real store and a
 * struct eosd built by hand (test-eosd-session-util.h): spans nest per thread and end with the
 * statuses their errno calls for; a full queue drops and counts; flush jobs on the pool write
 * the queue and stop; a writer held by a failpoint blocks neither recording nor a publish;
 * followers are woken by the recording thread itself (no polling) and see only their filter;
 * snapshot marks a broken sandbox partial; cgroups are unavailable with a reason, or sample a
 * busy process as root.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/failpoint.h"
#include "common/json.h"
#include "common/path.h"

#include "supervisor/cgroup.h"
#include "supervisor/obs-internal.h"
#include "supervisor/ops.h"
#include "supervisor/pool.h"
#include "tests/unit/test-eosd-session-util.h"
#include "tests/unit/testutil.h"

static struct es_fixture f;

static void
open_obs(size_t queue_max)
{
	struct eosd_obs_options o = { .queue_max = queue_max };
	struct eos_error err = { 0 };

	es_open(&f);
	ck_assert_msg(eosd_obs_new(f.d.store, &o, &f.d.obs, &err) == 0, "%s", err.msg);
}

static void
close_obs(void)
{
	eosd_cgroups_free(f.d.cgroups);
	f.d.cgroups = NULL;
	eosd_obs_free(f.d.obs);
	f.d.obs = NULL;
	es_close(&f, false);
}

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The trace of ctx, as the trace operation answers it. */
static json_t *
trace_of(const struct eosd_trace_ctx *ctx)
{
	char hex[EOSD_OBS_TRACE_HEX], args[128];

	eosd_obs_trace_id_hex(ctx->trace_id, hex);
	snprintf(args, sizeof(args), "{\"trace_id\":\"%s\"}", hex);
	return es_ok(&f, "trace", NULL, args);
}

/* The span named name anywhere below the nodes of list, or NULL. */
static const json_t *
find(const json_t *list, const char *name)
{
	size_t i;
	json_t *s;

	json_array_foreach(list, i, s)
	{
		const json_t *in;

		if (!strcmp(es_str(s, "name"), name))
			return s;
		if ((in = find(json_object_get(s, "children"), name)))
			return in;
	}
	return NULL;
}

START_TEST(test_spans_nest_and_end)
{
	struct eosd_span root, a, b, c;
	struct eos_error err = { 0 };
	struct eosd_trace_ctx ctx;
	EOS_CLEANUP(json_decrefp) json_t *t = NULL;
	const json_t *n;

	open_obs(0);
	eosd_span_begin_root(f.d.obs, &root, "daemon.dispatch", 0, 0);
	ctx = eosd_span_context(&root);
	eosd_span_begin(f.d.obs, &a, "outer", "sb");
	eosd_span_begin(f.d.obs, &b, "inner", "sb");
	eosd_obs_event(f.d.obs, "thing.happened", "sb", NULL, json_pack("{s:i}", "n", 7));
	eos_error_set(&err, -EIO, "broken");
	eosd_span_end(&b, -EIO, &err);
	eosd_span_begin(f.d.obs, &c, "timer", NULL);
	eosd_span_end(&c, -ETIMEDOUT, NULL);
	eosd_span_end(&a, -ECANCELED, NULL);
	/* a span ended: the one begun before it is current again */
	ck_assert_uint_eq(eosd_obs_context().span_id, root.ctx.span_id);
	eosd_span_end(&root, 0, NULL);
	ck_assert_uint_eq(eosd_obs_context().span_id, 0);
	t = trace_of(&ctx);
	ck_assert(json_is_true(json_object_get(t, "complete")));
	n = json_object_get(t, "spans");
	ck_assert_uint_eq(json_array_size(n), 1);
	ck_assert_str_eq(es_str(find(n, "daemon.dispatch"), "status"), "completed");
	ck_assert_str_eq(es_str(find(n, "outer"), "status"), "cancelled");
	ck_assert_str_eq(es_str(find(n, "inner"), "status"), "error");
	ck_assert_str_eq(es_str(json_object_get(find(n, "inner"), "attributes"), "error"),
			 "broken");
	ck_assert_str_eq(es_str(find(n, "timer"), "status"), "timed_out");
	/* nesting: inner and timer below outer, outer below the root */
	ck_assert_ptr_nonnull(find(json_object_get(find(n, "outer"), "children"), "inner"));
	ck_assert_ptr_nonnull(find(json_object_get(find(n, "outer"), "children"), "timer"));
	ck_assert_ptr_null(find(json_object_get(find(n, "inner"), "children"), "timer"));
	/* the event inline, in the span it happened in */
	ck_assert_str_eq(
		es_str(json_array_get(json_object_get(find(n, "inner"), "events"), 0), "name"),
		"thing.happened");
	close_obs();
}
END_TEST

START_TEST(test_full_queue_drops_and_counts)
{
	struct eosd_obs_counters c;
	struct eos_error err = { 0 };
	struct eos_obs_stats st;

	open_obs(4);
	for (int i = 0; i < 10; i++)
		eosd_obs_event(f.d.obs, "thing.happened", "sb", NULL, NULL);
	eosd_obs_counters(f.d.obs, &c);
	ck_assert_uint_eq(c.recorded, 4);
	ck_assert_uint_eq(c.dropped, 6);
	ck_assert_uint_eq(c.queued, 4);
	ck_assert_int_eq(eosd_obs_sync(f.d.obs, &err), 0);
	eosd_obs_counters(f.d.obs, &c);
	ck_assert_uint_eq(c.written, 4);
	ck_assert_uint_eq(c.queued, 0);
	ck_assert_int_eq(eos_store_obs_stats(f.d.store, &st, &err), 0);
	ck_assert_uint_eq(st.records, 4);
	close_obs();
}
END_TEST

/* Wait (generously) until the recorder has written n records. */
static void
wait_written(uint64_t n)
{
	struct eosd_obs_counters c;

	for (int i = 0; i < 2000; i++) {
		eosd_obs_counters(f.d.obs, &c);
		if (c.written >= n)
			return;
		sleep_ms(10);
	}
	ck_abort_msg("only %llu of %llu records written", (unsigned long long)c.written,
		     (unsigned long long)n);
}

START_TEST(test_flush_jobs_write_then_stop)
{
	struct eosd_pool *pool = NULL;
	struct eos_error err = { 0 };
	bool scheduled;

	open_obs(0);
	ck_assert_int_eq(eosd_pool_new(1, 16, &pool, &err), 0);
	eosd_obs_attach(f.d.obs, pool);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 50; i++)
			eosd_obs_event(f.d.obs, "thing.happened", "sb", NULL, NULL);
		wait_written(50 * (uint64_t)(round + 1));
		/* the job ends once the queue is empty: nothing is left running */
		for (int i = 0; i < 1000; i++) {
			pthread_mutex_lock(&f.d.obs->lock);
			scheduled = f.d.obs->scheduled;
			pthread_mutex_unlock(&f.d.obs->lock);
			if (!scheduled)
				break;
			sleep_ms(10);
		}
		ck_assert(!scheduled);
	}
	eosd_obs_attach(f.d.obs, NULL);
	eosd_pool_free(pool);
	close_obs();
}
END_TEST

#if EOS_FAILPOINTS_COMPILED
static bool
exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* The writer held: recording goes on (into the queue, then dropped), a publish completes. */
START_TEST(test_stalled_writer_blocks_nothing)
{
	struct eosd_pool *pool = NULL;
	struct eos_error err = { 0 };
	struct eosd_obs_counters c;
	cleanup_free char *go = NULL, *waiting = NULL;
	EOS_CLEANUP(json_decrefp) json_t *res = NULL;

	open_obs(64);
	ck_assert(asprintf(&go, "%s/go", f.dir) > 0 && asprintf(&waiting, "%s.waiting", go) > 0);
	ck_assert_int_eq(eos_failpoint_arm_wait("obs.flush", go), 0);
	ck_assert_int_eq(eosd_pool_new(1, 16, &pool, &err), 0);
	eosd_obs_attach(f.d.obs, pool);
	eosd_obs_event(f.d.obs, "first.happened", "sb", NULL, NULL);
	for (int i = 0; i < 2000 && !exists(waiting); i++)
		sleep_ms(10);
	ck_assert_msg(exists(waiting), "the flush job never reached its write");
	/* held: everything below returns all the same */
	for (int i = 0; i < 200; i++)
		eosd_obs_event(f.d.obs, "thing.happened", "sb", NULL, NULL);
	es_create(&f, "w1");
	json_decref(
		es_ok(&f, "file_write", NULL,
		      "{\"workspace_session_id\":\"w1\",\"path\":\"a.txt\",\"content\":\"1\\n\"}"));
	res = es_ok(&f, "publish_workspace_session", NULL, "{\"workspace_session_id\":\"w1\"}");
	ck_assert_str_eq(es_str(res, "status"), "published");
	eosd_obs_counters(f.d.obs, &c);
	ck_assert_uint_eq(c.written, 0);
	ck_assert_uint_gt(c.dropped, 0); /* the queue of 64 filled up and dropped the rest */
	ck_assert_uint_le(c.queued, 64);
	ck_assert_int_eq(mkdir(go, 0700), 0);
	wait_written(c.recorded);
	eosd_obs_attach(f.d.obs, NULL);
	eosd_pool_free(pool);
	eos_failpoint_arm("obs.flush", 0);
	close_obs();
}
END_TEST
#endif

/* --- followers ----------------------------------------------------------------------------------
 */

static int notified;

static void
count_notify(void *ctx)
{
	(void)ctx;
	notified++;
}

struct pulled {
	char names[16][64];
	size_t n;
	unsigned dropped;
};

static void
collect(void *ctx, const char *name, const char *json)
{
	struct pulled *p = ctx;
	EOS_CLEANUP(json_decrefp) json_t *ev = json_loads(json, 0, NULL);

	if (!strcmp(name, "dropped")) {
		p->dropped += (unsigned)json_integer_value(json_object_get(ev, "events"));
		return;
	}
	ck_assert_ptr_nonnull(ev);
	if (p->n < 16)
		snprintf(p->names[p->n++], 64, "%s", es_str(ev, "name"));
}

START_TEST(test_followers_are_woken)
{
	struct eosd_obs_filter flt = { .name = "workspace_session.", .sandbox = "sb" };
	struct eosd_obs_follower *fol = NULL, *all = NULL;
	struct eos_obs_pos from;
	struct pulled p = { 0 }, q = { 0 };

	open_obs(0);
	eosd_obs_set_notify(f.d.obs, count_notify, NULL);
	eosd_obs_event(f.d.obs, "workspace_session.created", "sb", "w0", NULL);
	ck_assert_int_eq(notified, 0); /* nobody follows: nothing is kept, nobody woken */
	ck_assert_int_eq(eosd_obs_follow(f.d.obs, &flt, &fol, &from), 0);
	ck_assert_int_eq(eosd_obs_follow(f.d.obs, NULL, &all, &from), 0);
	ck_assert(eosd_obs_follower_pull(fol, collect, &p));
	ck_assert_uint_eq(p.n, 0); /* what came before is not followed */
	eosd_obs_event(f.d.obs, "workspace_session.created", "sb", "w1", NULL);
	/* woken by the recording call itself, before it returned */
	ck_assert_int_eq(notified, 1);
	eosd_obs_event(f.d.obs, "layer.published", "sb", NULL, NULL);
	eosd_obs_event(f.d.obs, "workspace_session.created", "other", "w2", NULL);
	ck_assert_int_eq(notified, 3);
	ck_assert(eosd_obs_follower_pull(fol, collect, &p));
	ck_assert_uint_eq(p.n, 1);
	ck_assert_str_eq(p.names[0], "workspace_session.created");
	ck_assert(eosd_obs_follower_pull(fol, collect, &p));
	ck_assert_uint_eq(p.n, 1); /* nothing new */
	/* one that falls more than the ring behind is told how many it missed */
	for (int i = 0; i < EOSD_OBS_RING + 10; i++)
		eosd_obs_event(f.d.obs, "thing.happened", NULL, NULL, NULL);
	ck_assert(eosd_obs_follower_pull(all, collect, &q));
	ck_assert_uint_eq(q.dropped, 3 + 10);
	eosd_obs_unfollow(fol);
	eosd_obs_unfollow(all);
	close_obs();
}
END_TEST

/* --- snapshot and cgroups -----------------------------------------------------------------------
 */

#if EOS_FAILPOINTS_COMPILED
START_TEST(test_snapshot_partial_node)
{
	EOS_CLEANUP(json_decrefp) json_t *s = NULL;
	const json_t *sb, *e;

	open_obs(0);
	es_create(&f, "w1");
	ck_assert_int_eq(eos_failpoint_arm("obs.snapshot.sb", -EIO), 0);
	s = es_ok(&f, "snapshot", NULL, "{}");
	eos_failpoint_arm("obs.snapshot.sb", 0);
	sb = json_array_get(json_object_get(s, "sandboxes"), 0);
	ck_assert_str_eq(es_str(sb, "status"), "partial");
	e = json_array_get(json_object_get(sb, "errors"), 0);
	ck_assert_str_eq(es_str(e, "part"), "layers");
	ck_assert_ptr_nonnull(strstr(es_str(e, "error"), "obs.snapshot.sb"));
	/* the other parts answered */
	ck_assert_uint_eq(json_array_size(json_object_get(sb, "sessions")), 1);
	ck_assert_ptr_nonnull(json_object_get(s, "daemon"));
	json_decref(s);
	s = es_ok(&f, "snapshot", NULL, "{}");
	ck_assert_str_eq(es_str(json_array_get(json_object_get(s, "sandboxes"), 0), "status"),
			 "ok");
	close_obs();
}
END_TEST
#endif

/*
 * A child that, once told (a byte on *go: it is in its cgroup by then), touches 8 MiB and spins.
 * It never outlives the test, even a failed one.
 */
static unsigned armed[2]; /* calls of the sampler's timer: [0] off, [1] on */

static void
fake_timer(void *ctx, unsigned interval_ms)
{
	(void)ctx;
	ck_assert(interval_ms == 0 || interval_ms == EOSD_CGROUP_INTERVAL_MS);
	armed[interval_ms != 0]++;
}

static pid_t
busy_child(int *go)
{
	int p[2];
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		volatile unsigned long x = 0;
		char c, *mem;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(60);
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(1);
		mem = malloc(8 << 20);
		for (size_t i = 0; mem && i < (8 << 20); i += 4096)
			mem[i] = 1;
		for (;;)
			x++;
	}
	close(p[0]);
	*go = p[1];
	return pid;
}

START_TEST(test_cgroup_samples_or_says_why)
{
	struct eos_error err = { 0 };
	EOS_CLEANUP(json_decrefp) json_t *r = NULL;
	struct eosd_cgroup *g = NULL;
	const json_t *last;
	pid_t child;
	int status, go;

	open_obs(0);
	es_create(&f, "w1");
	ck_assert_int_eq(eosd_cgroups_new("test", f.d.obs, &f.d.cgroups, &err), 0);
	if (geteuid() != 0 || eosd_cgroups_mode(f.d.cgroups) == EOSD_CGROUP_NONE) {
		/* unprivileged on a v1/v2 hybrid: unavailable, with why, and not a failure */
		ck_assert_int_ne(geteuid(), 0);
		r = es_ok(&f, "cgroup", NULL, "{\"scope\":\"session\",\"id\":\"w1\"}");
		ck_assert_str_eq(es_str(r, "status"), "unavailable");
		ck_assert(strlen(es_str(r, "reason")) > 10);
		ck_assert_int_eq(eosd_cgroup_create(f.d.cgroups, "sb", "w1", &g, &err), -ENOTSUP);
		close_obs();
		return;
	}
	ck_assert_msg(eosd_cgroup_create(f.d.cgroups, "sb", "w1", &g, &err) == 0, "%s", err.msg);
	child = busy_child(&go);
	ck_assert_msg(eosd_cgroup_attach(g, child, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(write(go, "x", 1), 1);
	close(go);
	sleep_ms(200);
	eosd_cgroups_set_timer(f.d.cgroups, fake_timer, NULL);
	ck_assert_uint_eq(armed[1], 0); /* nothing runs: no timer */
	eosd_cgroup_sampling(g, true);
	ck_assert_uint_eq(armed[1], 1); /* a command started: the timer is armed, once */
	eosd_cgroups_sample(f.d.cgroups);
	sleep_ms(300);
	eosd_cgroups_sample(f.d.cgroups);
	r = es_ok(&f, "cgroup", NULL, "{\"scope\":\"session\",\"id\":\"w1\"}");
	ck_assert_str_eq(es_str(r, "status"), "available");
	ck_assert(json_is_true(json_object_get(r, "sampling")));
	ck_assert_uint_eq(json_array_size(json_object_get(r, "samples")), 2);
	last = json_array_get(json_object_get(r, "samples"), 1);
	ck_assert_int_gt(json_integer_value(json_object_get(last, "cpu_usec")), 0);
	ck_assert_int_ge(json_integer_value(json_object_get(last, "pids")), 1);
	ck_assert(json_real_value(json_object_get(last, "cpu_percent")) > 0);
	ck_assert_int_gt(json_integer_value(json_object_get(last, "memory_bytes")), 0);
	/* the command exits: sampling stops, the cgroup goes */
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	eosd_cgroup_sampling(g, false);
	ck_assert_uint_eq(armed[0], 1); /* the last one exited: the timer is off again */
	ck_assert_uint_eq(armed[1], 1);
	eosd_cgroups_sample(f.d.cgroups); /* samples nothing now */
	json_decref(r);
	r = es_ok(&f, "cgroup", NULL, "{\"scope\":\"sandbox\",\"id\":\"sb\"}");
	ck_assert(!json_is_true(json_object_get(r, "sampling")));
	ck_assert_uint_eq(json_array_size(json_object_get(r, "samples")), 2);
	ck_assert_msg(eosd_cgroup_remove(g, &err) == 0, "%s", err.msg);
	close_obs();
}
END_TEST

/* A killed eosd removes no cgroup: the next one of the same key does, at its start. */
START_TEST(test_cgroups_left_behind_are_swept)
{
	struct eosd_cgroups *cg = NULL;
	struct eos_error err = { 0 };
	cleanup_free char *top = NULL, *dir = NULL;
	struct stat st;

	ck_assert_int_eq(eosd_cgroups_new("sweep-test", NULL, &cg, &err), 0);
	if (geteuid() != 0 || eosd_cgroups_mode(cg) == EOSD_CGROUP_NONE) {
		ck_assert_int_ne(geteuid(), 0);
		eosd_cgroups_free(cg);
		return;
	}
	ck_assert_int_gt(asprintf(&top, "%s/eos-sweep-test", eosd_cgroups_base(cg)), 0);
	ck_assert_int_gt(asprintf(&dir, "%s/sb/w9", top), 0);
	ck_assert_int_eq(eos_mkdir_parents(dir, 0755, true), 0);
	eosd_cgroups_free(cg); /* it did not make w9: it leaves it, as a killed eosd would */
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_int_eq(eosd_cgroups_new("sweep-test", NULL, &cg, &err), 0);
	ck_assert_msg(stat(top, &st) < 0 && errno == ENOENT, "'%s' is still there", top);
	eosd_cgroups_free(cg);
}
END_TEST

static Suite *
obs_suite(void)
{
	Suite *s = suite_create("eosd-obs");
	TCase *tc = tcase_create("obs");

	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, NULL, es_cleanup_leftovers);
	tcase_add_test(tc, test_spans_nest_and_end);
	tcase_add_test(tc, test_full_queue_drops_and_counts);
	tcase_add_test(tc, test_flush_jobs_write_then_stop);
#if EOS_FAILPOINTS_COMPILED
	tcase_add_test(tc, test_stalled_writer_blocks_nothing);
	tcase_add_test(tc, test_snapshot_partial_node);
#endif
	tcase_add_test(tc, test_followers_are_woken);
	tcase_add_test(tc, test_cgroup_samples_or_says_why);
	tcase_add_test(tc, test_cgroups_left_behind_are_swept);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	es_init();
	return eos_test_run(obs_suite());
}
