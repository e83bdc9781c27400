/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/digest.h"

#include "store/chunker.h"
#include "tests/unit/testutil.h"

enum {
	BIG = 8 << 20,
	INSERTED = 100,
};

/* Chunk lengths of p[0, n), cut as a streaming caller would (never more than max at once). */
struct cuts {
	size_t *len;
	size_t n;
};

static struct cuts
cut_all(const uint8_t *p, size_t n)
{
	struct cuts c = { .len = calloc(n / EOS_CHUNK_MIN + 2, sizeof(size_t)) };
	size_t off = 0;

	ck_assert_ptr_nonnull(c.len);
	while (off < n) {
		size_t l = eos_chunker_cut(p + off, n - off);

		ck_assert_uint_gt(l, 0);
		ck_assert_uint_le(l, n - off);
		c.len[c.n++] = l;
		off += l;
	}
	return c;
}

static uint8_t *
random_buf(size_t n, uint64_t seed)
{
	uint8_t *p = malloc(n);

	ck_assert_ptr_nonnull(p);
	eos_test_fill_random(p, n, seed);
	return p;
}

START_TEST(test_small_inputs)
{
	cleanup_free uint8_t *p = random_buf(EOS_CHUNK_MIN + 1, 1);

	ck_assert_uint_eq(eos_chunker_cut(p, 0), 0);
	ck_assert_uint_eq(eos_chunker_cut(p, 1), 1);
	ck_assert_uint_eq(eos_chunker_cut(p, EOS_CHUNK_MIN), EOS_CHUNK_MIN);
	ck_assert_uint_ge(eos_chunker_cut(p, EOS_CHUNK_MIN + 1), EOS_CHUNK_MIN);
}
END_TEST

START_TEST(test_deterministic_and_bounded)
{
	cleanup_free uint8_t *p = random_buf(BIG, 2);
	struct cuts a = cut_all(p, BIG), b = cut_all(p, BIG);
	size_t total = 0;

	ck_assert_uint_eq(a.n, b.n);
	ck_assert(memcmp(a.len, b.len, a.n * sizeof(size_t)) == 0);
	for (size_t i = 0; i < a.n; i++) {
		if (i + 1 < a.n)
			ck_assert_uint_ge(a.len[i], EOS_CHUNK_MIN);
		ck_assert_uint_le(a.len[i], EOS_CHUNK_MAX);
		total += a.len[i];
	}
	ck_assert_uint_eq(total, BIG);
	free(a.len);
	free(b.len);
}
END_TEST

/*
 * The boundaries are part of the store format (dedup against existing stores): pin the first
 * ones of a fixed input. A change here means the gear table or the masks changed.
 */
START_TEST(test_format_is_stable)
{
	static const size_t want[] = { 88032, 73351, 21640,  67081,  30870,
				       82944, 75334, 101623, 107723, 66101 };
	cleanup_free uint8_t *p = random_buf(2 << 20, 2);
	size_t off = 0;

	for (size_t i = 0; i < EOS_ARRAY_SIZE(want); i++) {
		size_t l = eos_chunker_cut(p + off, (2 << 20) - off);

		ck_assert_msg(l == want[i], "chunk %zu: %zu bytes, expected %zu", i, l, want[i]);
		off += l;
	}
}
END_TEST

/* Only the first EOS_CHUNK_MAX bytes decide a cut: streaming callers rely on it. */
START_TEST(test_cut_needs_only_max_bytes)
{
	cleanup_free uint8_t *p = random_buf(BIG, 3);
	size_t off = 0;

	while (off < BIG) {
		size_t full = eos_chunker_cut(p + off, BIG - off);
		size_t part = eos_chunker_cut(p + off, EOS_MIN((size_t)EOS_CHUNK_MAX, BIG - off));

		ck_assert_uint_eq(full, part);
		off += full;
	}
}
END_TEST

START_TEST(test_average_size)
{
	cleanup_free uint8_t *p = random_buf(4 * BIG, 4);
	struct cuts c = cut_all(p, 4 * BIG);
	size_t avg = 4 * BIG / c.n;

	ck_assert_msg(avg >= 40 * 1024 && avg <= 100 * 1024, "average chunk %zu bytes", avg);
	free(c.len);
}
END_TEST

START_TEST(test_uniform_data_bounded)
{
	cleanup_free uint8_t *p = calloc(1, 2 << 20);
	struct cuts c;

	ck_assert_ptr_nonnull(p);
	c = cut_all(p, 2 << 20);
	for (size_t i = 0; i + 1 < c.n; i++)
		ck_assert(c.len[i] >= EOS_CHUNK_MIN && c.len[i] <= EOS_CHUNK_MAX);
	free(c.len);
}
END_TEST

static struct eos_digest *
chunk_digests(const uint8_t *p, size_t n, size_t *ret_n)
{
	struct cuts c = cut_all(p, n);
	struct eos_digest *d = calloc(c.n, sizeof(*d));
	size_t off = 0;

	ck_assert_ptr_nonnull(d);
	for (size_t i = 0; i < c.n; i++) {
		ck_assert_int_eq(eos_sha256(p + off, c.len[i], &d[i]), 0);
		off += c.len[i];
	}
	free(c.len);
	*ret_n = c.n;
	return d;
}

static bool
digest_in(const struct eos_digest *d, const struct eos_digest *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (eos_digest_eq(d, &list[i]))
			return true;
	return false;
}

START_TEST(test_insert_at_front_changes_first_chunks_only)
{
	cleanup_free uint8_t *old = random_buf(BIG, 5);
	cleanup_free uint8_t *neu = malloc(BIG + INSERTED);
	cleanup_free struct eos_digest *a = NULL, *b = NULL;
	size_t na, nb, changed = 0;

	ck_assert_ptr_nonnull(neu);
	eos_test_fill_random(neu, INSERTED, 6);
	memcpy(neu + INSERTED, old, BIG);
	a = chunk_digests(old, BIG, &na);
	b = chunk_digests(neu, BIG + INSERTED, &nb);
	ck_assert_uint_gt(na, 50);
	ck_assert_msg(nb + 1 >= na && nb <= na + 1, "chunk count %zu -> %zu", na, nb);
	for (size_t i = 0; i < nb; i++) {
		if (digest_in(&b[i], a, na))
			continue;
		ck_assert_msg(i < 2, "chunk %zu of %zu changed", i, nb);
		changed++;
	}
	ck_assert_uint_ge(changed, 1);
}
END_TEST

START_TEST(test_insert_in_middle_is_local)
{
	cleanup_free uint8_t *old = random_buf(BIG, 7);
	cleanup_free uint8_t *neu = malloc(BIG + INSERTED);
	cleanup_free struct eos_digest *a = NULL, *b = NULL;
	size_t na, nb, changed = 0;

	ck_assert_ptr_nonnull(neu);
	memcpy(neu, old, BIG / 2);
	eos_test_fill_random(neu + BIG / 2, INSERTED, 8);
	memcpy(neu + BIG / 2 + INSERTED, old + BIG / 2, BIG / 2);
	a = chunk_digests(old, BIG, &na);
	b = chunk_digests(neu, BIG + INSERTED, &nb);
	for (size_t i = 0; i < nb; i++)
		changed += !digest_in(&b[i], a, na);
	ck_assert_msg(changed >= 1 && changed <= 2, "%zu chunks changed", changed);
}
END_TEST

static Suite *
chunker_suite(void)
{
	Suite *s = suite_create("chunker");
	TCase *tc = tcase_create("chunker");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_small_inputs);
	tcase_add_test(tc, test_deterministic_and_bounded);
	tcase_add_test(tc, test_format_is_stable);
	tcase_add_test(tc, test_cut_needs_only_max_bytes);
	tcase_add_test(tc, test_average_size);
	tcase_add_test(tc, test_uniform_data_bounded);
	tcase_add_test(tc, test_insert_at_front_changes_first_chunks_only);
	tcase_add_test(tc, test_insert_in_middle_is_local);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(chunker_suite());
}
