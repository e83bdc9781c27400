/* SPDX-License-Identifier: MIT */
/* Unit tests of common/hashmap: insert, get, update, iteration, growth, binary keys. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/endian.h"
#include "common/hashmap.h"

#include "tests/unit/testutil.h"

enum {
	MANY_KEYS = 100000,
};

/* An 8-byte binary key for i, with NUL bytes in it for small i. */
static void
key_of(uint8_t out[8], uint64_t i)
{
	eos_put_le64(out, i * 0x100000001ULL);
}

START_TEST(test_insert_get_update)
{
	struct eos_hashmap m = { 0 };
	union eos_hashmap_value *v = NULL, *again = NULL;
	int a = 1, b = 2;

	ck_assert_uint_eq(eos_hashmap_count(&m), 0);
	ck_assert_ptr_null(eos_hashmap_get(&m, "a", 1));
	ck_assert_ptr_null(eos_hashmap_find(&m, "a", 1));
	ck_assert_int_eq(eos_hashmap_put(&m, "a", 1, &a), 0);
	ck_assert_int_eq(eos_hashmap_put(&m, "b", 1, &b), 0);
	ck_assert_int_eq(eos_hashmap_put(&m, "a", 1, &b), -EEXIST);
	ck_assert_ptr_eq(eos_hashmap_get(&m, "a", 1), &a);
	ck_assert_ptr_eq(eos_hashmap_get(&m, "b", 1), &b);
	ck_assert_ptr_null(eos_hashmap_get(&m, "c", 1));
	ck_assert_uint_eq(eos_hashmap_count(&m), 2);

	ck_assert_int_eq(eos_hashmap_get_or_insert(&m, "n", 1, &v), 1);
	ck_assert_int_eq(v->i64, 0);
	v->i64 += 5;
	ck_assert_int_eq(eos_hashmap_get_or_insert(&m, "n", 1, &again), 0);
	ck_assert_ptr_eq(again, v);
	again->i64 -= 7;
	ck_assert_int_eq(eos_hashmap_find(&m, "n", 1)->i64, -2);
	ck_assert_uint_eq(eos_hashmap_count(&m), 3);

	eos_hashmap_release(&m);
	ck_assert_uint_eq(eos_hashmap_count(&m), 0);
	ck_assert_ptr_null(eos_hashmap_get(&m, "a", 1));
	ck_assert_int_eq(eos_hashmap_put(&m, "a", 1, &b), 0);
	ck_assert_ptr_eq(eos_hashmap_get(&m, "a", 1), &b);
	eos_hashmap_release(&m);
	eos_hashmap_release(NULL);
}
END_TEST

START_TEST(test_keys_are_copied)
{
	struct eos_hashmap m;
	char key[16] = "some/path";
	struct eos_hashmap_iter it = { 0 };

	eos_hashmap_init(&m);
	ck_assert_int_eq(eos_hashmap_put(&m, key, strlen(key), key), 0);
	memcpy(key, "XXXX", 4);
	ck_assert_ptr_eq(eos_hashmap_get(&m, "some/path", 9), key);
	ck_assert_ptr_null(eos_hashmap_get(&m, key, strlen(key)));
	ck_assert(eos_hashmap_next(&m, &it));
	ck_assert_uint_eq(it.klen, 9);
	ck_assert(memcmp(it.key, "some/path", 9) == 0);
	ck_assert(it.key != (const void *)key);
	eos_hashmap_release(&m);
}
END_TEST

START_TEST(test_iterate)
{
	struct eos_hashmap m = { 0 };
	struct eos_hashmap_iter it = { 0 };
	union eos_hashmap_value *v;
	uint8_t seen[100] = { 0 };
	size_t n = 0;
	char k[8];

	ck_assert(!eos_hashmap_next(&m, &it));
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		ck_assert_int_eq(eos_hashmap_get_or_insert(&m, k, strlen(k), &v), 1);
		v->u64 = (uint64_t)i;
	}
	while (eos_hashmap_next(&m, &it)) {
		ck_assert_uint_lt(it.value->u64, 100);
		snprintf(k, sizeof(k), "k%d", (int)it.value->u64);
		ck_assert_uint_eq(it.klen, strlen(k));
		ck_assert(memcmp(it.key, k, it.klen) == 0);
		ck_assert_int_eq(seen[it.value->u64]++, 0);
		it.value->u64 += 1000; /* update in place */
		n++;
	}
	ck_assert_uint_eq(n, 100);
	ck_assert(!eos_hashmap_next(&m, &it));
	ck_assert_uint_eq(eos_hashmap_find(&m, "k42", 3)->u64, 1042);
	eos_hashmap_release(&m);
}
END_TEST

START_TEST(test_many_keys_with_growth)
{
	struct eos_hashmap m = { 0 };
	struct eos_hashmap_iter it = { 0 };
	union eos_hashmap_value *v;
	uint8_t k[8];
	size_t n = 0;

	for (uint64_t i = 0; i < MANY_KEYS; i++) {
		key_of(k, i);
		ck_assert_int_eq(eos_hashmap_get_or_insert(&m, k, sizeof(k), &v), 1);
		v->u64 = i;
	}
	ck_assert_uint_eq(eos_hashmap_count(&m), MANY_KEYS);
	ck_assert_uint_ge(m.cap, 2 * (size_t)MANY_KEYS);
	for (uint64_t i = 0; i < MANY_KEYS; i++) {
		key_of(k, i);
		v = eos_hashmap_find(&m, k, sizeof(k));
		ck_assert_ptr_nonnull(v);
		ck_assert_uint_eq(v->u64, i);
	}
	key_of(k, MANY_KEYS);
	ck_assert_ptr_null(eos_hashmap_find(&m, k, sizeof(k)));
	while (eos_hashmap_next(&m, &it)) {
		ck_assert_uint_eq(it.klen, 8);
		ck_assert_uint_eq(eos_get_le64(it.key), it.value->u64 * 0x100000001ULL);
		n++;
	}
	ck_assert_uint_eq(n, MANY_KEYS);
	eos_hashmap_release(&m);
}
END_TEST

START_TEST(test_binary_keys_with_nul)
{
	struct eos_hashmap m = { 0 };
	const uint8_t k1[] = { 0, 0, 0 }, k2[] = { 0, 0, 1 }, k3[] = { 'a', 0, 'b' };
	const uint8_t k4[] = { 'a', 0, 'c' };
	int v[4];

	ck_assert_int_eq(eos_hashmap_put(&m, k1, sizeof(k1), &v[0]), 0);
	ck_assert_int_eq(eos_hashmap_put(&m, k2, sizeof(k2), &v[1]), 0);
	ck_assert_int_eq(eos_hashmap_put(&m, k3, sizeof(k3), &v[2]), 0);
	ck_assert_int_eq(eos_hashmap_put(&m, k4, sizeof(k4), &v[3]), 0);
	ck_assert_uint_eq(eos_hashmap_count(&m), 4);
	ck_assert_ptr_eq(eos_hashmap_get(&m, k1, sizeof(k1)), &v[0]);
	ck_assert_ptr_eq(eos_hashmap_get(&m, k2, sizeof(k2)), &v[1]);
	ck_assert_ptr_eq(eos_hashmap_get(&m, k3, sizeof(k3)), &v[2]);
	ck_assert_ptr_eq(eos_hashmap_get(&m, k4, sizeof(k4)), &v[3]);
	ck_assert_ptr_null(eos_hashmap_get(&m, "a", 1));
	ck_assert_ptr_null(eos_hashmap_get(&m, "a\0b\0", 4));
	eos_hashmap_release(&m);
}
END_TEST

START_TEST(test_equal_prefix_keys)
{
	static const char text[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	struct eos_hashmap m = { 0 };
	const uint8_t zeros[24] = { 0 };
	union eos_hashmap_value *v;

	/* Every prefix of text, the empty key included, is a distinct key. */
	for (size_t len = 0; len < sizeof(text); len++) {
		ck_assert_int_eq(eos_hashmap_get_or_insert(&m, text, len, &v), 1);
		v->u64 = len;
	}
	for (size_t len = 0; len < sizeof(text); len++)
		ck_assert_uint_eq(eos_hashmap_find(&m, text, len)->u64, len);
	ck_assert_uint_eq(eos_hashmap_find(&m, "", 0)->u64, 0);
	/* Runs of NUL bytes differ only in their length. */
	for (size_t len = 1; len <= sizeof(zeros); len++)
		ck_assert_int_eq(eos_hashmap_put(&m, zeros, len, (void *)(uintptr_t)len), 0);
	for (size_t len = 1; len <= sizeof(zeros); len++)
		ck_assert_ptr_eq(eos_hashmap_get(&m, zeros, len), (void *)(uintptr_t)len);
	ck_assert_uint_eq(eos_hashmap_count(&m), sizeof(text) + sizeof(zeros));
	ck_assert(eos_hashmap_hash("ab", 2) != eos_hashmap_hash("ab\0", 3));
	ck_assert(eos_hashmap_hash(zeros, 8) != eos_hashmap_hash(zeros, 16));
	eos_hashmap_release(&m);
}
END_TEST

START_TEST(test_long_keys)
{
	struct eos_hashmap m = { 0 };
	cleanup_free uint8_t *big = malloc(3 * 1024 * 1024);
	union eos_hashmap_value *v;

	/* Keys larger than a key block get a block of their own. */
	ck_assert_ptr_nonnull(big);
	memset(big, 'z', 3 * 1024 * 1024);
	ck_assert_int_eq(eos_hashmap_get_or_insert(&m, big, 3 * 1024 * 1024, &v), 1);
	ck_assert_int_eq(eos_hashmap_get_or_insert(&m, big, 3 * 1024 * 1024 - 1, &v), 1);
	ck_assert_int_eq(eos_hashmap_get_or_insert(&m, big, 5000, &v), 1);
	ck_assert_int_eq(eos_hashmap_get_or_insert(&m, big, 3 * 1024 * 1024, &v), 0);
	ck_assert_uint_eq(eos_hashmap_count(&m), 3);
	eos_hashmap_release(&m);
}
END_TEST

static bool
keep_even(const union eos_hashmap_value *v, void *ctx)
{
	(void)ctx;
	return v->u64 % 2 == 0;
}

/* Compaction keeps exactly the accepted entries, findable and updatable afterwards. */
START_TEST(test_compact)
{
	struct eos_hashmap m = { 0 };
	union eos_hashmap_value *v;
	uint8_t k[8];

	for (uint64_t i = 0; i < MANY_KEYS; i++) {
		key_of(k, i);
		ck_assert_int_eq(eos_hashmap_get_or_insert(&m, k, sizeof(k), &v), 1);
		v->u64 = i;
	}
	ck_assert_int_eq(eos_hashmap_compact(&m, keep_even, NULL), 0);
	ck_assert_uint_eq(eos_hashmap_count(&m), MANY_KEYS / 2);
	for (uint64_t i = 0; i < MANY_KEYS; i++) {
		key_of(k, i);
		v = eos_hashmap_find(&m, k, sizeof(k));
		if (i % 2) {
			ck_assert_ptr_null(v);
			continue;
		}
		ck_assert_ptr_nonnull(v);
		ck_assert_uint_eq(v->u64, i);
	}
	ck_assert_int_eq(eos_hashmap_get_or_insert(&m, k, sizeof(k), &v), 1); /* odd: gone */
	eos_hashmap_release(&m);
	ck_assert_int_eq(eos_hashmap_compact(&m, keep_even, NULL), 0); /* empty map */
	ck_assert_uint_eq(eos_hashmap_count(&m), 0);
}
END_TEST

static Suite *
hashmap_suite(void)
{
	Suite *s = suite_create("hashmap");
	TCase *tc = tcase_create("hashmap");

	tcase_set_timeout(tc, 60); /* 100 000 keys take seconds on a loaded machine */
	tcase_add_test(tc, test_insert_get_update);
	tcase_add_test(tc, test_keys_are_copied);
	tcase_add_test(tc, test_iterate);
	tcase_add_test(tc, test_many_keys_with_growth);
	tcase_add_test(tc, test_binary_keys_with_nul);
	tcase_add_test(tc, test_equal_prefix_keys);
	tcase_add_test(tc, test_long_keys);
	tcase_add_test(tc, test_compact);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(hashmap_suite());
}
