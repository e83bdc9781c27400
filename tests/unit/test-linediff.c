/* SPDX-License-Identifier: MIT */
/*
 * The line diff of blame: optimal (a longest common subsequence) on small random inputs against a
 * brute-force LCS, exact line identity (CR/LF, final newline), and bounded time on big inputs.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/cleanup.h"

#include "store/linediff.h"
#include "tests/unit/testutil.h"

/* Lines of a text, split the way the diff splits them (borrowed). */
struct split {
	const char **p;
	size_t *len;
	uint32_t n;
};

static struct split
split_lines(const char *s, size_t n)
{
	struct split l = { 0 };
	size_t i = 0;

	l.p = calloc(n + 1, sizeof(*l.p));
	l.len = calloc(n + 1, sizeof(*l.len));
	ck_assert(l.p && l.len);
	while (i < n) {
		const char *nl = memchr(s + i, '\n', n - i);
		size_t end = nl ? (size_t)(nl - s) + 1 : n;

		l.p[l.n] = s + i;
		l.len[l.n++] = end - i;
		i = end;
	}
	return l;
}

static void
split_free(struct split *l)
{
	free(l->p);
	free(l->len);
}

static bool
line_eq(const struct split *a, uint32_t i, const struct split *b, uint32_t j)
{
	return a->len[i] == b->len[j] && memcmp(a->p[i], b->p[j], a->len[i]) == 0;
}

static uint32_t
lcs_length(const struct split *a, const struct split *b)
{
	uint32_t *t = calloc(((size_t)a->n + 1) * (b->n + 1), sizeof(*t)), r;

	ck_assert_ptr_nonnull(t);
	for (uint32_t i = 1; i <= a->n; i++)
		for (uint32_t j = 1; j <= b->n; j++) {
			uint32_t *c = &t[i * (b->n + 1) + j];

			if (line_eq(a, i - 1, b, j - 1))
				*c = t[(i - 1) * (b->n + 1) + j - 1] + 1;
			else
				*c = EOS_MAX(t[(i - 1) * (b->n + 1) + j],
					     t[i * (b->n + 1) + j - 1]);
		}
	r = t[a->n * (b->n + 1) + b->n];
	free(t);
	return r;
}

/* Check map's invariants for old -> new; return the number of kept lines. */
static uint32_t
check_map(const char *old, size_t olen, const char *new, size_t nlen, const uint32_t *map,
	  uint32_t n)
{
	struct split a = split_lines(old, olen), b = split_lines(new, nlen);
	uint32_t kept = 0, last = 0;

	ck_assert_uint_eq(n, b.n);
	ck_assert_uint_eq(n, eos_line_count(new, nlen));
	for (uint32_t j = 0; j < n; j++) {
		if (!map[j])
			continue;
		ck_assert_uint_le(map[j], a.n);
		ck_assert_uint_gt(map[j], last);
		ck_assert(line_eq(&a, map[j] - 1, &b, j));
		last = map[j];
		kept++;
	}
	split_free(&a);
	split_free(&b);
	return kept;
}

static uint32_t
map_kept(const char *old, size_t olen, const char *new, size_t nlen)
{
	cleanup_free uint32_t *map = NULL;
	struct eos_error err = { 0 };
	uint32_t n = 0;

	ck_assert_int_eq(eos_line_map(old, olen, new, nlen, &map, &n, &err), 0);
	return check_map(old, olen, new, nlen, map, n);
}

static uint64_t rng_state;

static uint32_t
rnd(uint32_t bound)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % bound);
}

/* A random text of up to max lines from a small alphabet of lines (many repeats). */
static void
random_text(struct eos_buf *b, uint32_t max)
{
	static const char *const alphabet[] = { "a\n", "b\n", "c\n", "a", "a\r\n", "\n", "dd\n" };
	uint32_t n = rnd(max + 1);

	eos_buf_truncate(b, 0);
	for (uint32_t i = 0; i < n; i++) {
		const char *s = alphabet[rnd(EOS_ARRAY_SIZE(alphabet) - 1)];

		/* the unterminated "a" only as the last line */
		ck_assert_int_eq(eos_buf_append_str(b, s), 0);
	}
	if (rnd(3) == 0)
		ck_assert_int_eq(eos_buf_append_str(b, alphabet[3]), 0);
}

START_TEST(test_random_small_is_lcs)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf a = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf b = { 0 };

	rng_state = 0x1234567 + (uint64_t)_i;
	for (int round = 0; round < 400; round++) {
		struct split sa, sb;
		uint32_t lcs;

		random_text(&a, 1 + (uint32_t)round % 40);
		random_text(&b, 1 + (uint32_t)round % 40);
		if (rnd(2) == 0) {
			/* b as an edit of a: more common structure */
			eos_buf_truncate(&b, 0);
			ck_assert_int_eq(eos_buf_append(&b, a.data, a.len / 2), 0);
			ck_assert_int_eq(eos_buf_append_str(&b, "x\nb\n"), 0);
			ck_assert_int_eq(eos_buf_append(&b, a.data + a.len / 2, a.len - a.len / 2),
					 0);
		}
		sa = split_lines((const char *)a.data, a.len);
		sb = split_lines((const char *)b.data, b.len);
		lcs = lcs_length(&sa, &sb);
		split_free(&sa);
		split_free(&sb);
		ck_assert_uint_eq(
			map_kept((const char *)a.data, a.len, (const char *)b.data, b.len), lcs);
	}
}
END_TEST

START_TEST(test_line_identity)
{
	cleanup_free uint32_t *map = NULL;
	uint32_t n = 0;

	/* a final line without newline differs from the same line with one */
	ck_assert_uint_eq(map_kept("a\nb\n", 4, "a\nb", 3), 1);
	ck_assert_uint_eq(map_kept("a\nb", 3, "a\nb\n", 4), 1);
	ck_assert_uint_eq(map_kept("a\nb", 3, "a\nb", 3), 2);
	/* CRLF differs from LF */
	ck_assert_uint_eq(map_kept("a\r\nb\r\n", 6, "a\nb\n", 4), 0);
	ck_assert_uint_eq(map_kept("a\r\nb\r\nc\n", 8, "a\r\nb\nc\n", 7), 2);
	/* a common byte suffix that starts inside a line */
	ck_assert_uint_eq(map_kept("x\na", 3, "y\na", 3), 1);
	ck_assert_uint_eq(map_kept("a", 1, "ba", 2), 0);
	ck_assert_uint_eq(map_kept("ab\n", 3, "b\n", 2), 0);
	ck_assert_uint_eq(map_kept("1\n2\n3\n", 6, "1\n3\n", 4), 2);
	/* empty sides and counts */
	ck_assert_uint_eq(map_kept("", 0, "a\n", 2), 0);
	ck_assert_uint_eq(map_kept("a\n", 2, "", 0), 0);
	ck_assert_int_eq(eos_line_map("a\n", 2, "", 0, &map, &n, NULL), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(eos_line_count("", 0), 0);
	ck_assert_uint_eq(eos_line_count("\n", 1), 1);
	ck_assert_uint_eq(eos_line_count("a", 1), 1);
	ck_assert_uint_eq(eos_line_count("a\nb", 3), 2);
	ck_assert_uint_eq(eos_line_count("a\n\n", 3), 2);
	/* NUL bytes are ordinary bytes */
	ck_assert_uint_eq(map_kept("a\0\nb\n", 5, "a\0\nc\n", 5), 1);
}
END_TEST

START_TEST(test_mapping_positions)
{
	cleanup_free uint32_t *map = NULL;
	uint32_t n = 0;
	const char *old = "1\n2\n3\n4\n5\n", *new = "0\n1\n2\n4\n5\n6\n";

	ck_assert_int_eq(eos_line_map(old, strlen(old), new, strlen(new), &map, &n, NULL), 0);
	ck_assert_uint_eq(n, 6);
	ck_assert_uint_eq(map[0], 0);
	ck_assert_uint_eq(map[1], 1);
	ck_assert_uint_eq(map[2], 2);
	ck_assert_uint_eq(map[3], 4);
	ck_assert_uint_eq(map[4], 5);
	ck_assert_uint_eq(map[5], 0);
}
END_TEST

START_TEST(test_is_text)
{
	ck_assert(eos_line_is_text("", 0));
	ck_assert(eos_line_is_text("hello\r\n", 7));
	ck_assert(eos_line_is_text("gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80", 15));
	ck_assert(!eos_line_is_text("a\0b", 3));
	ck_assert(!eos_line_is_text("\xff", 1));
	ck_assert(!eos_line_is_text("\xc3", 1));	     /* truncated */
	ck_assert(!eos_line_is_text("\xc0\x80", 2));	     /* overlong */
	ck_assert(!eos_line_is_text("\xed\xa0\x80", 3));     /* surrogate */
	ck_assert(!eos_line_is_text("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
}
END_TEST

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* About size bytes of numbered lines; every `every`-th line (when every > 0) changed by salt. */
static void
numbered_text(struct eos_buf *b, size_t size, uint32_t every, uint32_t salt)
{
	char line[64];

	eos_buf_truncate(b, 0);
	for (uint32_t i = 0; b->len < size; i++) {
		int n = snprintf(line, sizeof(line), "line %u of a big file %u\n", i,
				 every && i % every == 0 ? salt : 0);

		ck_assert_int_eq(eos_buf_append(b, line, (size_t)n), 0);
	}
}

static double
timed_map(const struct eos_buf *a, const struct eos_buf *b, uint32_t *ret_kept)
{
	cleanup_free uint32_t *map = NULL;
	uint32_t n = 0;
	double t = now_s();

	ck_assert_int_eq(eos_line_map(a->data, a->len, b->data, b->len, &map, &n, NULL), 0);
	t = now_s() - t;
	*ret_kept = 0;
	for (uint32_t i = 0; i < n; i++)
		*ret_kept += map[i] != 0;
	return t;
}

START_TEST(test_big_small_edits)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf a = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf b = { 0 };
	uint32_t kept, lines;
	double t;

	numbered_text(&a, 8 << 20, 0, 0);
	lines = eos_line_count(a.data, a.len);
	/* a few edits spread over 8 MiB */
	numbered_text(&b, 8 << 20, 20000, 1);
	t = timed_map(&a, &b, &kept);
	printf("8 MiB, %u lines, %u edits: %.3f s\n", lines, lines / 20000 + 1, t);
	ck_assert_uint_eq(kept, lines - (lines / 20000 + 1));
	/* one line inserted at the top and one removed at the end */
	eos_buf_truncate(&b, 0);
	ck_assert_int_eq(eos_buf_append_str(&b, "new first line\n"), 0);
	ck_assert_int_eq(eos_buf_append(&b, a.data, a.len - 20), 0);
	t = timed_map(&a, &b, &kept);
	printf("8 MiB, insert + truncate: %.3f s\n", t);
	ck_assert_uint_ge(kept, lines - 2);
}
END_TEST

START_TEST(test_big_different)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf a = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf b = { 0 };
	char line[32];
	uint32_t kept;
	double t;

	/* completely different: no line in common */
	numbered_text(&a, 8 << 20, 0, 0);
	numbered_text(&b, 8 << 20, 1, 7);
	t = timed_map(&a, &b, &kept);
	printf("8 MiB, all lines different: %.3f s\n", t);
	ck_assert_uint_eq(kept, 0);
	/* the same 50 000 lines in two random orders: a worst case for Myers */
	rng_state = 99;
	eos_buf_truncate(&a, 0);
	eos_buf_truncate(&b, 0);
	for (int i = 0; i < 200000; i++) {
		int n = snprintf(line, sizeof(line), "%u\n", rnd(50000));

		ck_assert_int_eq(eos_buf_append(&a, line, (size_t)n), 0);
		n = snprintf(line, sizeof(line), "%u\n", rnd(50000));
		ck_assert_int_eq(eos_buf_append(&b, line, (size_t)n), 0);
	}
	t = timed_map(&a, &b, &kept);
	printf("200 000 shuffled lines: %.3f s, %u kept\n", t, kept);
	ck_assert_uint_eq(map_kept((const char *)a.data, a.len, (const char *)b.data, b.len), kept);
}
END_TEST

static Suite *
linediff_suite(void)
{
	Suite *s = suite_create("linediff");
	TCase *tc = tcase_create("linediff");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_random_small_is_lcs, 0, 8);
	tcase_add_test(tc, test_line_identity);
	tcase_add_test(tc, test_mapping_positions);
	tcase_add_test(tc, test_is_text);
	tcase_add_test(tc, test_big_small_edits);
	tcase_add_test(tc, test_big_different);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(linediff_suite());
}
