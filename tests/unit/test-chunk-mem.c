/* SPDX-License-Identifier: MIT */
/*
 * store/chunk-mem: the chunk cache's pool. Blocks are page-aligned, inside the pool, never
 * shared; freed blocks are reused and larger ones split; what the pool cannot serve is NULL
 * (the cache then uses malloc); the pool outlives its owner's unref while blocks are out;
 * threads allocating and releasing at once never get overlapping blocks; and a prefault makes
 * the pages past the tail resident without touching the bytes of blocks in use, also while
 * other threads write them.
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "store/chunk-mem.h"
#include "tests/unit/testutil.h"

enum {
	KIB = 1024,
	POOL = 2 * 1024 * 1024
};

START_TEST(test_blocks)
{
	struct eos_chunk_mem *m = NULL;
	uint8_t *a, *b, *again;
	int local;

	ck_assert_int_eq(eos_chunk_mem_new(POOL, &m), 0);
	a = eos_chunk_mem_alloc(m, 100);
	b = eos_chunk_mem_alloc(m, 5000);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq((uintptr_t)a % 4096, 0);
	ck_assert_uint_eq((uintptr_t)b % 4096, 0);
	ck_assert(b >= a + 4096 || a >= b + 8192); /* 1 and 2 pages, apart */
	memset(a, 0xA, 4096);
	memset(b, 0xB, 8192);
	ck_assert_ptr_null(eos_chunk_mem_alloc(m, 0));
	ck_assert_ptr_null(eos_chunk_mem_alloc(m, 256 * KIB + 1));   /* larger than any chunk */
	ck_assert(!eos_chunk_mem_release(m, &local, sizeof(local))); /* not the pool's */
	ck_assert(eos_chunk_mem_release(m, a, 100));
	again = eos_chunk_mem_alloc(m, 4000); /* the freed page comes back */
	ck_assert_ptr_eq(again, a);
	ck_assert(eos_chunk_mem_release(m, again, 4000));
	ck_assert(eos_chunk_mem_release(m, b, 5000));
	eos_chunk_mem_unref(m);
}
END_TEST

START_TEST(test_full_and_split)
{
	struct eos_chunk_mem *m = NULL;
	uint8_t *big[8], *small[4];

	ck_assert_int_eq(eos_chunk_mem_new(POOL, &m), 0);
	for (int i = 0; i < 8; i++) {
		big[i] = eos_chunk_mem_alloc(m, 256 * KIB);
		ck_assert_ptr_nonnull(big[i]);
		memset(big[i], i, 256 * KIB);
	}
	ck_assert_ptr_null(eos_chunk_mem_alloc(m, 4096)); /* full: the cache uses malloc */
	ck_assert(eos_chunk_mem_release(m, big[3], 256 * KIB));
	for (int i = 0; i < 4; i++) { /* split out of the freed block */
		small[i] = eos_chunk_mem_alloc(m, 64 * KIB);
		ck_assert_ptr_nonnull(small[i]);
		ck_assert(small[i] >= big[3] && small[i] + 64 * KIB <= big[3] + 256 * KIB);
	}
	ck_assert_ptr_null(eos_chunk_mem_alloc(m, 64 * KIB));
	for (int i = 0; i < 4; i++)
		ck_assert(eos_chunk_mem_release(m, small[i], 64 * KIB));
	for (int i = 0; i < 8; i++)
		if (i != 3)
			ck_assert(eos_chunk_mem_release(m, big[i], 256 * KIB));
	eos_chunk_mem_unref(m);
}
END_TEST

/* A chunk still read after its cache is gone stays readable until released. */
START_TEST(test_outlives_unref)
{
	struct eos_chunk_mem *m = NULL;
	uint8_t *p;

	ck_assert_int_eq(eos_chunk_mem_new(POOL, &m), 0);
	p = eos_chunk_mem_alloc(m, 64 * KIB);
	ck_assert_ptr_nonnull(p);
	eos_chunk_mem_unref(m);
	memset(p, 7, 64 * KIB);
	ck_assert_uint_eq(p[64 * KIB - 1], 7);
	ck_assert(eos_chunk_mem_release(m, p, 64 * KIB));
}
END_TEST

/* How many of the pages [p, p + len) are resident. */
static size_t
resident_pages(const uint8_t *p, size_t len)
{
	size_t n = len / 4096, count = 0;
	unsigned char *vec = calloc(n, 1);

	ck_assert_ptr_nonnull(vec);
	ck_assert_int_eq(mincore((void *)p, len, vec), 0);
	for (size_t i = 0; i < n; i++)
		count += vec[i] & 1;
	free(vec);
	return count;
}

START_TEST(test_prefault)
{
	struct eos_chunk_mem *m = NULL;
	uint8_t *a, *b, *next, *more[100];
	int n = 0;

	ck_assert(!eos_chunk_mem_prefault_due(NULL));
	eos_chunk_mem_prefault(NULL);
	ck_assert_int_eq(eos_chunk_mem_new(8 * POOL, &m), 0);
	ck_assert(!eos_chunk_mem_prefault_due(m)); /* an idle pool touches nothing */
	a = eos_chunk_mem_alloc(m, 64 * KIB);
	ck_assert_ptr_nonnull(a);
	memset(a, 0x5A, 64 * KIB);
	ck_assert(eos_chunk_mem_prefault_due(m));
	/* past the huge page the write faulted in (all of it, with transparent huge pages) */
	next = (uint8_t *)(((uintptr_t)a + POOL) / POOL * POOL);
	ck_assert_uint_eq(resident_pages(next, POOL), 0);
	eos_chunk_mem_prefault(m);
	ck_assert(!eos_chunk_mem_prefault_due(m));
	/* at least 4 MiB past the tail, rounded to a huge page: resident */
	ck_assert_uint_eq(resident_pages(a + 64 * KIB, 2 * POOL), 2 * POOL / 4096);
	for (size_t k = 0; k < 64 * KIB; k++)
		ck_assert_uint_eq(a[k], 0x5A);
	/* the next blocks come from there, and the pool asks again only near its end */
	b = eos_chunk_mem_alloc(m, 64 * KIB);
	ck_assert_ptr_eq(b, a + 64 * KIB);
	ck_assert(!eos_chunk_mem_prefault_due(m));
	while (n < 100 && !eos_chunk_mem_prefault_due(m)) {
		more[n] = eos_chunk_mem_alloc(m, 64 * KIB);
		ck_assert_ptr_nonnull(more[n]);
		n++;
	}
	ck_assert(eos_chunk_mem_prefault_due(m));
	eos_chunk_mem_unref(m);
	while (n > 0)
		ck_assert(eos_chunk_mem_release(m, more[--n], 64 * KIB));
	ck_assert(eos_chunk_mem_release(m, b, 64 * KIB));
	ck_assert(eos_chunk_mem_release(m, a, 64 * KIB)); /* the last one unmaps the pool */
}
END_TEST

/* A pool of one huge page: prefaults stop at its end, and a closed pool prefaults nothing. */
START_TEST(test_prefault_bounds)
{
	struct eos_chunk_mem *m = NULL;
	uint8_t *a, *big[8];
	int n = 0;

	ck_assert_int_eq(eos_chunk_mem_new(POOL, &m), 0);
	a = eos_chunk_mem_alloc(m, 4096);
	ck_assert_ptr_nonnull(a);
	eos_chunk_mem_prefault(m);
	ck_assert(!eos_chunk_mem_prefault_due(m));
	while (n < 8 && (big[n] = eos_chunk_mem_alloc(m, 256 * KIB)))
		n++;
	ck_assert_int_eq(n, 7);			   /* the rest of the one huge page */
	ck_assert(!eos_chunk_mem_prefault_due(m)); /* everything is populated already */
	eos_chunk_mem_unref(m);
	eos_chunk_mem_prefault(m); /* closed: a no-op, and the pool stays until the release */
	a[0] = 1;
	while (n > 0)
		ck_assert(eos_chunk_mem_release(m, big[--n], 256 * KIB));
	ck_assert(eos_chunk_mem_release(m, a, 4096));
}
END_TEST

struct worker {
	struct eos_chunk_mem *m;
	unsigned seed;
	uint8_t tag;
};

static void *
churn(void *arg)
{
	struct worker *w = arg;
	uint8_t *held[16] = { 0 };
	size_t len[16] = { 0 };

	for (int round = 0; round < 20000; round++) {
		int i = rand_r(&w->seed) % 16;

		if (held[i]) {
			for (size_t k = 0; k < len[i]; k += 997)
				ck_assert_uint_eq(held[i][k], w->tag); /* nobody else wrote here */
			ck_assert(eos_chunk_mem_release(w->m, held[i], len[i]));
			held[i] = NULL;
			continue;
		}
		len[i] = 1 + (size_t)rand_r(&w->seed) % (256 * KIB);
		held[i] = eos_chunk_mem_alloc(w->m, len[i]);
		if (held[i])
			memset(held[i], w->tag, len[i]);
	}
	for (int i = 0; i < 16; i++)
		if (held[i])
			ck_assert(eos_chunk_mem_release(w->m, held[i], len[i]));
	return NULL;
}

/* The host's thread: prefaults whenever one is due, until told to stop. */
struct prefaulter {
	struct eos_chunk_mem *m;
	atomic_bool stop;
	unsigned runs;
};

static void *
prefault_loop(void *arg)
{
	struct prefaulter *p = arg;

	while (!atomic_load(&p->stop)) {
		if (eos_chunk_mem_prefault_due(p->m)) {
			eos_chunk_mem_prefault(p->m);
			p->runs++;
		}
		sched_yield();
	}
	return NULL;
}

START_TEST(test_threads)
{
	struct eos_chunk_mem *m = NULL;
	struct prefaulter pf = { 0 };
	struct worker w[4];
	pthread_t t[4], pt;

	ck_assert_int_eq(eos_chunk_mem_new(64 * POOL, &m), 0);
	pf.m = m;
	ck_assert_int_eq(pthread_create(&pt, NULL, prefault_loop, &pf), 0);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .m = m,
					.seed = 15u + (unsigned)i,
					.tag = (uint8_t)(0x10 + i) };
		ck_assert_int_eq(pthread_create(&t[i], NULL, churn, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	atomic_store(&pf.stop, true);
	pthread_join(pt, NULL);
	ck_assert_uint_gt(pf.runs, 0);
	eos_chunk_mem_unref(m);
}
END_TEST

static Suite *
chunk_mem_suite(void)
{
	Suite *s = suite_create("chunk-mem");
	TCase *tc = tcase_create("pool");

	tcase_add_test(tc, test_blocks);
	tcase_add_test(tc, test_full_and_split);
	tcase_add_test(tc, test_outlives_unref);
	tcase_add_test(tc, test_prefault);
	tcase_add_test(tc, test_prefault_bounds);
	tcase_add_test(tc, test_threads);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(chunk_mem_suite());
}
