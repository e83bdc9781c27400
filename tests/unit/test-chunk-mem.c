/* SPDX-License-Identifier: MIT */
/*
 * store/chunk-mem: the chunk cache's pool. Blocks are page-aligned, inside the pool, never
 * shared; freed blocks are reused and larger ones split; what the pool cannot serve is NULL
 * (the cache then uses malloc); the pool outlives its owner's unref while blocks are out; and
 * threads allocating and releasing at once never get overlapping blocks.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

START_TEST(test_threads)
{
	struct eos_chunk_mem *m = NULL;
	struct worker w[4];
	pthread_t t[4];

	ck_assert_int_eq(eos_chunk_mem_new(8 * POOL, &m), 0);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .m = m,
					.seed = 15u + (unsigned)i,
					.tag = (uint8_t)(0x10 + i) };
		ck_assert_int_eq(pthread_create(&t[i], NULL, churn, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
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
