/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/digest.h"

#include "store/cache.h"
#include "tests/unit/testutil.h"

enum {
	SHARDS = 16, /* the cache's shard count: capacity is split evenly */
};

EOS_DEFINE_CLEANUP(struct eos_chunk_cache *, eos_chunk_cache_free)

/*
 * Digest number i. The first byte picks the shard (its low four bits), so digests with the same
 * `shard` compete for one shard's capacity.
 */
static struct eos_digest
digest_of(unsigned shard, unsigned i)
{
	struct eos_digest d = { { 0 } };

	d.b[0] = (uint8_t)((i << 4) | (shard & 15));
	d.b[1] = (uint8_t)(i >> 4);
	d.b[2] = (uint8_t)(i >> 12);
	d.b[31] = 0xaa;
	return d;
}

/* A malloc()ed buffer of len bytes whose content is derived from i. */
static uint8_t *
data_of(unsigned i, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(p);
	for (size_t k = 0; k < len; k++)
		p[k] = (uint8_t)(i * 31 + k);
	return p;
}

static bool
data_ok(const struct eos_cached_chunk *ch, unsigned i, size_t len)
{
	if (ch->len != len)
		return false;
	for (size_t k = 0; k < len; k++)
		if (ch->data[k] != (uint8_t)(i * 31 + k))
			return false;
	return true;
}

static void
put(struct eos_chunk_cache *c, unsigned shard, unsigned i, size_t len)
{
	struct eos_digest d = digest_of(shard, i);
	struct eos_cached_chunk *ch = NULL;

	ck_assert_int_eq(eos_chunk_cache_put(c, &d, data_of(i, len), len, &ch), 0);
	ck_assert(data_ok(ch, i, len));
	eos_cached_chunk_unref(ch);
}

static bool
cached(struct eos_chunk_cache *c, unsigned shard, unsigned i)
{
	struct eos_digest d = digest_of(shard, i);
	struct eos_cached_chunk *ch = NULL;

	if (eos_chunk_cache_get(c, &d, &ch) < 0)
		return false;
	eos_cached_chunk_unref(ch);
	return true;
}

START_TEST(test_hit_and_miss)
{
	EOS_CLEANUP(eos_chunk_cache_freep) struct eos_chunk_cache *c = NULL;
	EOS_CLEANUP(eos_cached_chunk_unrefp) struct eos_cached_chunk *ch = NULL;
	struct eos_digest d = digest_of(3, 1);
	uint64_t hits, misses;

	ck_assert_int_eq(eos_chunk_cache_new(1 << 20, &c), 0);
	ck_assert_int_eq(eos_chunk_cache_get(c, &d, &ch), -ENOENT);
	put(c, 3, 1, 1000);
	ck_assert_int_eq(eos_chunk_cache_get(c, &d, &ch), 0);
	ck_assert(data_ok(ch, 1, 1000));
	ck_assert(!cached(c, 3, 2));
	eos_chunk_cache_counters(c, &hits, &misses);
	ck_assert_uint_eq(hits, 1);
	ck_assert_uint_eq(misses, 2);
}
END_TEST

START_TEST(test_put_existing_returns_cached_copy)
{
	EOS_CLEANUP(eos_chunk_cache_freep) struct eos_chunk_cache *c = NULL;
	struct eos_cached_chunk *a = NULL, *b = NULL;
	struct eos_digest d = digest_of(0, 9);

	ck_assert_int_eq(eos_chunk_cache_new(1 << 20, &c), 0);
	ck_assert_int_eq(eos_chunk_cache_put(c, &d, data_of(9, 500), 500, &a), 0);
	ck_assert_int_eq(eos_chunk_cache_put(c, &d, data_of(9, 500), 500, &b), 0);
	ck_assert_ptr_eq(a, b);
	ck_assert_ptr_eq(a->data, b->data);
	eos_cached_chunk_unref(a);
	eos_cached_chunk_unref(b);
}
END_TEST

/* Fill p with data_of(i)'s bytes. */
static uint8_t *
fill(uint8_t *p, unsigned i, size_t len)
{
	ck_assert_ptr_nonnull(p);
	for (size_t k = 0; k < len; k++)
		p[k] = (uint8_t)(i * 31 + k);
	return p;
}

/*
 * Memory from eos_chunk_cache_alloc() is what the cache keeps (a put copies nothing) when the
 * cache would keep the chunk, and malloc()'s otherwise; either kind goes back by a put, an unref
 * or eos_chunk_cache_free_data() (ASan checks every free matches).
 */
START_TEST(test_alloc_in_place)
{
	EOS_CLEANUP(eos_chunk_cache_freep) struct eos_chunk_cache *c = NULL;
	EOS_CLEANUP(eos_chunk_cache_freep) struct eos_chunk_cache *none = NULL;
	struct eos_cached_chunk *ch = NULL;
	struct eos_digest d = digest_of(2, 7), big = digest_of(2, 8);
	size_t shard = (1 << 20) / SHARDS;
	uint8_t *p;

	ck_assert_int_eq(eos_chunk_cache_new(1 << 20, &c), 0);
	p = fill(eos_chunk_cache_alloc(c, 1000), 7, 1000);
	ck_assert(eos_chunk_cache_prefault_due(c)); /* fresh pool memory was used */
	eos_chunk_cache_prefault(c);
	ck_assert(!eos_chunk_cache_prefault_due(c));
	ck_assert_int_eq(eos_chunk_cache_put(c, &d, p, 1000, &ch), 0);
	ck_assert_ptr_eq(ch->data, p);
	ck_assert(data_ok(ch, 7, 1000));
	eos_cached_chunk_unref(ch);
	ck_assert(cached(c, 2, 7));
	/* larger than a shard: handed back uncached, from malloc */
	p = fill(eos_chunk_cache_alloc(c, shard + 1), 8, shard + 1);
	ck_assert_int_eq(eos_chunk_cache_put(c, &big, p, shard + 1, &ch), 0);
	ck_assert(data_ok(ch, 8, shard + 1));
	eos_cached_chunk_unref(ch);
	ck_assert(!cached(c, 2, 8));
	eos_chunk_cache_free_data(c, eos_chunk_cache_alloc(c, 4096), 4096);
	eos_chunk_cache_free_data(c, eos_chunk_cache_alloc(c, shard + 1), shard + 1);
	ck_assert_int_eq(eos_chunk_cache_new(0, &none), 0);
	p = fill(eos_chunk_cache_alloc(none, 0), 1, 0);
	ck_assert_int_eq(eos_chunk_cache_put(none, &d, p, 0, &ch), 0);
	eos_cached_chunk_unref(ch);
	ck_assert(!eos_chunk_cache_prefault_due(none));
	eos_chunk_cache_prefault(none);
}
END_TEST

START_TEST(test_eviction_by_bytes_lru)
{
	EOS_CLEANUP(eos_chunk_cache_freep) struct eos_chunk_cache *c = NULL;

	/* 300 bytes per shard: three 100-byte chunks fit in shard 5. */
	ck_assert_int_eq(eos_chunk_cache_new(SHARDS * 300, &c), 0);
	put(c, 5, 1, 100);
	put(c, 5, 2, 100);
	put(c, 5, 3, 100);
	ck_assert(cached(c, 5, 1) && cached(c, 5, 2) && cached(c, 5, 3));
	ck_assert(cached(c, 5, 1)); /* 1 is now the most recent, 2 the least */
	put(c, 5, 4, 100);
	ck_assert(!cached(c, 5, 2));
	ck_assert(cached(c, 5, 1) && cached(c, 5, 3) && cached(c, 5, 4));
	put(c, 5, 5, 250); /* needs 250 bytes: evicts until it fits */
	ck_assert(cached(c, 5, 5));
	ck_assert(!cached(c, 5, 1) && !cached(c, 5, 3) && !cached(c, 5, 4));
	/* Other shards are independent. */
	put(c, 6, 1, 300);
	ck_assert(cached(c, 5, 5) && cached(c, 6, 1));
	/* A chunk larger than a shard is handed back but not cached. */
	put(c, 7, 1, 301);
	ck_assert(!cached(c, 7, 1));
}
END_TEST

START_TEST(test_reference_outlives_eviction)
{
	EOS_CLEANUP(eos_chunk_cache_freep) struct eos_chunk_cache *c = NULL;
	struct eos_cached_chunk *ch = NULL;
	struct eos_digest d = digest_of(2, 1);

	ck_assert_int_eq(eos_chunk_cache_new(SHARDS * 1000, &c), 0);
	put(c, 2, 1, 1000);
	ck_assert_int_eq(eos_chunk_cache_get(c, &d, &ch), 0);
	for (unsigned i = 2; i < 10; i++)
		put(c, 2, i, 1000);
	ck_assert(!cached(c, 2, 1));
	ck_assert(data_ok(ch, 1, 1000));
	eos_cached_chunk_unref(ch);
	/* Freeing the cache while a reader holds a reference keeps the chunk valid too. */
	d = digest_of(2, 9);
	ck_assert_int_eq(eos_chunk_cache_get(c, &d, &ch), 0);
	eos_chunk_cache_free(TAKE_PTR(c));
	ck_assert(data_ok(ch, 9, 1000));
	eos_cached_chunk_unref(ch);
}
END_TEST

START_TEST(test_capacity_zero)
{
	EOS_CLEANUP(eos_chunk_cache_freep) struct eos_chunk_cache *c = NULL;
	struct eos_cached_chunk *a = NULL, *b = NULL;
	struct eos_digest d = digest_of(1, 1);
	uint64_t hits, misses;

	ck_assert_int_eq(eos_chunk_cache_new(0, &c), 0);
	ck_assert_int_eq(eos_chunk_cache_put(c, &d, data_of(1, 64), 64, &a), 0);
	ck_assert_int_eq(eos_chunk_cache_put(c, &d, data_of(1, 64), 64, &b), 0);
	ck_assert_ptr_ne(a, b);
	ck_assert(data_ok(a, 1, 64) && data_ok(b, 1, 64));
	eos_cached_chunk_unref(a);
	eos_cached_chunk_unref(b);
	ck_assert(!cached(c, 1, 1));
	put(c, 1, 2, 0);
	ck_assert(!cached(c, 1, 2));
	eos_chunk_cache_counters(c, &hits, &misses);
	ck_assert_uint_eq(hits, 0);
	ck_assert_uint_eq(misses, 2);
	eos_cached_chunk_unref(NULL);
}
END_TEST

enum {
	THREADS = 4,
	THREAD_OPS = 20000,
	KEYS = 400,
};

struct worker {
	struct eos_chunk_cache *c;
	unsigned seed;
	unsigned bad;
	unsigned hits;
};

static void
worker_op(struct worker *w, unsigned i)
{
	struct eos_digest d = digest_of(i, i);
	struct eos_cached_chunk *ch = NULL;
	size_t len = 100 + i % 900;

	if (eos_chunk_cache_get(w->c, &d, &ch) == 0) {
		w->hits++;
	} else if (eos_chunk_cache_put(w->c, &d, data_of(i, len), len, &ch) < 0) {
		w->bad++;
		return;
	}
	if (!data_ok(ch, i, len))
		w->bad++;
	eos_cached_chunk_unref(ch);
}

static void *
worker_run(void *arg)
{
	struct worker *w = arg;

	for (unsigned n = 0; n < THREAD_OPS; n++) {
		w->seed = w->seed * 1103515245u + 12345u;
		worker_op(w, (w->seed >> 8) % KEYS);
	}
	return NULL;
}

START_TEST(test_concurrent_get_put)
{
	EOS_CLEANUP(eos_chunk_cache_freep) struct eos_chunk_cache *c = NULL;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	uint64_t hits, misses, whits = 0;

	/* About a third of the keys fit: lots of eviction while others hold references. */
	ck_assert_int_eq(eos_chunk_cache_new(KEYS * 550 / 3, &c), 0);
	for (unsigned i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .c = c, .seed = i + 1 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		ck_assert_uint_eq(w[i].bad, 0);
		whits += w[i].hits;
	}
	eos_chunk_cache_counters(c, &hits, &misses);
	ck_assert_uint_eq(hits + misses, THREADS * THREAD_OPS);
	ck_assert_uint_eq(hits, whits);
	ck_assert_uint_gt(hits, 0);
	ck_assert_uint_gt(misses, 0);
}
END_TEST

static Suite *
cache_suite(void)
{
	Suite *s = suite_create("cache");
	TCase *tc = tcase_create("cache");

	tcase_add_test(tc, test_hit_and_miss);
	tcase_add_test(tc, test_put_existing_returns_cached_copy);
	tcase_add_test(tc, test_alloc_in_place);
	tcase_add_test(tc, test_eviction_by_bytes_lru);
	tcase_add_test(tc, test_reference_outlives_eviction);
	tcase_add_test(tc, test_capacity_zero);
	tcase_add_test(tc, test_concurrent_get_put);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(cache_suite());
}
