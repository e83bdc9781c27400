/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of supervisor/pool: jobs run on the workers, a full queue refuses more (-EBUSY)
 * without running them, and eosd_pool_free() runs what is queued before it joins.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

#include "supervisor/pool.h"
#include "tests/unit/testutil.h"

struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool open;
	unsigned started, ran;
};

static struct gate gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0, 0 };

/* A job that waits for the gate to open. */
static void
held_job(void *ctx)
{
	struct gate *g = ctx;

	pthread_mutex_lock(&g->lock);
	g->started++;
	pthread_cond_broadcast(&g->cond);
	while (!g->open)
		pthread_cond_wait(&g->cond, &g->lock);
	g->ran++;
	pthread_mutex_unlock(&g->lock);
}

static void
wait_started(struct gate *g, unsigned n)
{
	pthread_mutex_lock(&g->lock);
	while (g->started < n)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

START_TEST(full_queue_refuses)
{
	struct eosd_pool *p = NULL;
	struct eos_error err = { 0 };

	ck_assert_int_eq(eosd_pool_new(2, 3, &p, &err), 0);
	ck_assert_uint_eq(eosd_pool_threads(p), 2);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(eosd_pool_submit(p, held_job, &gate), 0);
	wait_started(&gate, 2); /* both workers busy, the queue empty */
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(eosd_pool_submit(p, held_job, &gate), 0);
	ck_assert_int_eq(eosd_pool_submit(p, held_job, &gate), -EBUSY);
	pthread_mutex_lock(&gate.lock);
	gate.open = true;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
	eosd_pool_free(p); /* runs the three queued jobs, then joins */
	ck_assert_uint_eq(gate.ran, 5);
}
END_TEST

START_TEST(sizes_are_checked)
{
	struct eosd_pool *p = NULL;
	struct eos_error err = { 0 };

	ck_assert_int_eq(eosd_pool_new(0, 4, &p, &err), -EINVAL);
	ck_assert_int_eq(eosd_pool_new(EOSD_POOL_THREADS_MAX + 1, 4, &p, &err), -EINVAL);
	ck_assert_int_eq(eosd_pool_new(1, 0, &p, &err), -EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_uint_ge(eosd_pool_default_threads(), 3);
	ck_assert_uint_le(eosd_pool_default_threads(), EOSD_POOL_THREADS_MAX);
	eosd_pool_free(NULL);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("eosd-pool");
	TCase *tc = tcase_create("pool");

	tcase_add_test(tc, full_queue_refuses);
	tcase_add_test(tc, sizes_are_checked);
	suite_add_tcase(s, tc);
	return eos_test_run(s);
}
