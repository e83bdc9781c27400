/* SPDX-License-Identifier: MIT */
/* fs/writelog: write logs (byte ranges → operation), their encoding, and the operation table. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"

#include "fs/writelog.h"
#include "tests/unit/testutil.h"

enum {
	MODEL_SIZE = 512,
	MODEL_OPS = 10000,
	MODEL_OP_IDS = 4,
	NO_OP = UINT32_MAX, /* model: byte never written */
	RANGE_WIRE = 20,    /* le64 start · le64 end · le32 op */
};

#define R(s, e, o) ((struct eos_wrange){ .start = (s), .end = (e), .op = (o) })

static void
add(struct eos_writelog *l, uint64_t start, uint64_t end, uint32_t op)
{
	int r = eos_writelog_add(l, start, end, op);

	ck_assert_msg(r == 0, "add [%llu, %llu) op %u: %d", (unsigned long long)start,
		      (unsigned long long)end, op, r);
}

/* l holds exactly the n ranges of want. */
static void
expect_log(const struct eos_writelog *l, const struct eos_wrange *want, size_t n, int line)
{
	ck_assert_msg(l->n == n, "line %d: %zu ranges, want %zu", line, l->n, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(l->v[i].start == want[i].start && l->v[i].end == want[i].end &&
				      l->v[i].op == want[i].op,
			      "line %d: range %zu is [%llu, %llu) op %u, want [%llu, %llu) op %u",
			      line, i, (unsigned long long)l->v[i].start,
			      (unsigned long long)l->v[i].end, l->v[i].op,
			      (unsigned long long)want[i].start, (unsigned long long)want[i].end,
			      want[i].op);
}

#define EXPECT(l, ...)                                                              \
	do {                                                                        \
		const struct eos_wrange want_[] = { __VA_ARGS__ };                  \
		expect_log((l), want_, sizeof(want_) / sizeof(want_[0]), __LINE__); \
	} while (0)
#define EXPECT_EMPTY(l) expect_log((l), NULL, 0, __LINE__)

/* --- add ------------------------------------------------------------------------------------- */

START_TEST(test_add_disjoint_sorted)
{
	struct eos_writelog l = { 0 };

	add(&l, 100, 200, 1);
	add(&l, 0, 10, 2);
	add(&l, 50, 60, 3);
	add(&l, 300, 301, 1);
	EXPECT(&l, R(0, 10, 2), R(50, 60, 3), R(100, 200, 1), R(300, 301, 1));
	/* empty and inverted ranges change nothing */
	add(&l, 5, 5, 9);
	add(&l, 70, 65, 9);
	EXPECT(&l, R(0, 10, 2), R(50, 60, 3), R(100, 200, 1), R(300, 301, 1));
	eos_writelog_release(&l);
	ck_assert_uint_eq(l.n, 0);
	ck_assert_ptr_null(l.v);
}
END_TEST

START_TEST(test_add_overlaps)
{
	struct eos_writelog l = { 0 };

	/* overlap the tail of one range */
	add(&l, 0, 100, 1);
	add(&l, 50, 150, 2);
	EXPECT(&l, R(0, 50, 1), R(50, 150, 2));
	/* overlap the head */
	add(&l, 140, 200, 3);
	EXPECT(&l, R(0, 50, 1), R(50, 140, 2), R(140, 200, 3));
	/* cover several ranges exactly and partly */
	add(&l, 40, 160, 4);
	EXPECT(&l, R(0, 40, 1), R(40, 160, 4), R(160, 200, 3));
	/* replace exactly one range */
	add(&l, 40, 160, 5);
	EXPECT(&l, R(0, 40, 1), R(40, 160, 5), R(160, 200, 3));
	/* cover everything and more */
	add(&l, 0, 1000, 6);
	EXPECT(&l, R(0, 1000, 6));
	eos_writelog_release(&l);
}
END_TEST

START_TEST(test_add_split)
{
	struct eos_writelog l = { 0 };

	add(&l, 0, 100, 1);
	add(&l, 40, 60, 2);
	EXPECT(&l, R(0, 40, 1), R(40, 60, 2), R(60, 100, 1));
	/* split the middle piece again, at its very first byte */
	add(&l, 40, 41, 3);
	EXPECT(&l, R(0, 40, 1), R(40, 41, 3), R(41, 60, 2), R(60, 100, 1));
	/* the same operation inside its own range: no change */
	add(&l, 70, 80, 1);
	EXPECT(&l, R(0, 40, 1), R(40, 41, 3), R(41, 60, 2), R(60, 100, 1));
	/* writing the original operation over the middle merges it all back */
	add(&l, 40, 60, 1);
	EXPECT(&l, R(0, 100, 1));
	eos_writelog_release(&l);
}
END_TEST

START_TEST(test_add_merges_adjacent_same_op)
{
	struct eos_writelog l = { 0 };

	add(&l, 0, 10, 1);
	add(&l, 10, 20, 1); /* after */
	EXPECT(&l, R(0, 20, 1));
	add(&l, 30, 40, 1);
	EXPECT(&l, R(0, 20, 1), R(30, 40, 1));
	add(&l, 20, 30, 1); /* fills the gap: both sides merge */
	EXPECT(&l, R(0, 40, 1));
	add(&l, 50, 60, 1);
	add(&l, 45, 50, 1); /* before */
	EXPECT(&l, R(0, 40, 1), R(45, 60, 1));
	/* overlapping writes of the same operation merge too */
	add(&l, 35, 47, 1);
	EXPECT(&l, R(0, 60, 1));
	eos_writelog_release(&l);
}
END_TEST

START_TEST(test_add_keeps_different_ops_apart)
{
	struct eos_writelog l = { 0 };

	add(&l, 0, 10, 1);
	add(&l, 10, 20, 2);
	add(&l, 20, 30, 1);
	EXPECT(&l, R(0, 10, 1), R(10, 20, 2), R(20, 30, 1));
	/* op 0 is an operation like any other */
	add(&l, 30, 40, 0);
	add(&l, 40, 50, 0);
	EXPECT(&l, R(0, 10, 1), R(10, 20, 2), R(20, 30, 1), R(30, 50, 0));
	/* replacing the middle by op 1 makes one range of 0..30 */
	add(&l, 10, 20, 1);
	EXPECT(&l, R(0, 30, 1), R(30, 50, 0));
	eos_writelog_release(&l);
}
END_TEST

START_TEST(test_add_large_offsets)
{
	struct eos_writelog l = { 0 };

	add(&l, UINT64_MAX - 10, UINT64_MAX, 1);
	add(&l, 0, 1, 1);
	add(&l, UINT64_MAX - 5, UINT64_MAX - 4, 2);
	EXPECT(&l, R(0, 1, 1), R(UINT64_MAX - 10, UINT64_MAX - 5, 1),
	       R(UINT64_MAX - 5, UINT64_MAX - 4, 2), R(UINT64_MAX - 4, UINT64_MAX, 1));
	eos_writelog_release(&l);
}
END_TEST

/* --- truncate -------------------------------------------------------------------------------- */

START_TEST(test_truncate)
{
	struct eos_writelog l = { 0 };

	add(&l, 0, 10, 1);
	add(&l, 20, 30, 2);
	add(&l, 40, 50, 3);
	eos_writelog_truncate(&l, 100); /* beyond everything */
	EXPECT(&l, R(0, 10, 1), R(20, 30, 2), R(40, 50, 3));
	eos_writelog_truncate(&l, 50); /* exactly at the end */
	EXPECT(&l, R(0, 10, 1), R(20, 30, 2), R(40, 50, 3));
	eos_writelog_truncate(&l, 45); /* inside a range */
	EXPECT(&l, R(0, 10, 1), R(20, 30, 2), R(40, 45, 3));
	eos_writelog_truncate(&l, 40); /* at a range's start: gone */
	EXPECT(&l, R(0, 10, 1), R(20, 30, 2));
	eos_writelog_truncate(&l, 35); /* in a gap */
	EXPECT(&l, R(0, 10, 1), R(20, 30, 2));
	eos_writelog_truncate(&l, 21); /* one byte left */
	EXPECT(&l, R(0, 10, 1), R(20, 21, 2));
	eos_writelog_truncate(&l, 5); /* drops one, cuts the other */
	EXPECT(&l, R(0, 5, 1));
	/* the log keeps working after truncation */
	add(&l, 5, 8, 1);
	EXPECT(&l, R(0, 8, 1));
	eos_writelog_truncate(&l, 0);
	EXPECT_EMPTY(&l);
	eos_writelog_truncate(&l, 0);
	EXPECT_EMPTY(&l);
	add(&l, 3, 4, 2);
	EXPECT(&l, R(3, 4, 2));
	eos_writelog_release(&l);
}
END_TEST

/* --- encode / decode ------------------------------------------------------------------------- */

static void
encode(const struct eos_writelog *l, struct eos_buf *out)
{
	int r = eos_writelog_encode(l, out);

	ck_assert_int_eq(r, 0);
}

static void
roundtrip(const struct eos_writelog *l)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf b = { 0 };
	struct eos_writelog back = { 0 };
	int r;

	encode(l, &b);
	ck_assert_uint_eq(b.len, 4 + RANGE_WIRE * l->n);
	r = eos_writelog_decode(b.data, b.len, &back);
	ck_assert_int_eq(r, 0);
	expect_log(&back, l->v, l->n, __LINE__);
	eos_writelog_release(&back);
}

START_TEST(test_encode_decode_roundtrip)
{
	struct eos_writelog l = { 0 };

	roundtrip(&l);
	add(&l, 0, 10, 1);
	roundtrip(&l);
	add(&l, 10, 20, 7);
	add(&l, 100, UINT64_MAX, UINT32_MAX);
	roundtrip(&l);
	eos_writelog_release(&l);
}
END_TEST

/* Logs longer than the initial allocation (a file written in many places). */
START_TEST(test_encode_decode_many)
{
	struct eos_writelog l = { 0 };

	for (uint64_t i = 0; i < 1000; i++)
		add(&l, i * 10, i * 10 + 5, (uint32_t)(i % 3));
	ck_assert_uint_eq(l.n, 1000);
	roundtrip(&l);
	eos_writelog_release(&l);
}
END_TEST

START_TEST(test_encode_layout)
{
	static const uint8_t want[] = {
		2,    0,    0,	  0,		    /* n */
		1,    0,    0,	  0,	0, 0, 0, 0, /* start */
		2,    0,    0,	  0,	0, 0, 0, 0, /* end */
		3,    0,    0,	  0,		    /* op */
		0,    1,    0,	  0,	0, 0, 0, 0, /* 256 */
		0,    2,    0,	  0,	0, 0, 0, 0, /* 512 */
		0x44, 0x33, 0x22, 0x11,		    /* op 0x11223344 */
	};
	EOS_CLEANUP(eos_buf_release) struct eos_buf b = { 0 };
	struct eos_writelog l = { 0 };

	add(&l, 1, 2, 3);
	add(&l, 256, 512, 0x11223344);
	encode(&l, &b);
	ck_assert_uint_eq(b.len, sizeof(want));
	ck_assert_mem_eq(b.data, want, sizeof(want));
	eos_writelog_release(&l);
}
END_TEST

/* Encoding of n raw ranges (not necessarily valid), with count as the header. */
static void
raw_encode(struct eos_buf *b, uint32_t count, const struct eos_wrange *v, size_t n)
{
	int r = eos_buf_append_le32(b, count);

	for (size_t i = 0; i < n; i++) {
		r = r ?: eos_buf_append_le64(b, v[i].start);
		r = r ?: eos_buf_append_le64(b, v[i].end);
		r = r ?: eos_buf_append_le32(b, v[i].op);
	}
	ck_assert_int_eq(r, 0);
}

static void
expect_bad(const void *p, size_t n, const char *what)
{
	struct eos_writelog l = { 0 };
	int r = eos_writelog_decode(p, n, &l);

	ck_assert_msg(r == -EBADMSG, "%s: decode returned %d, want -EBADMSG", what, r);
	ck_assert_msg(l.n == 0 && l.v == NULL, "%s: the result was touched", what);
}

static void
expect_bad_ranges(uint32_t count, const struct eos_wrange *v, size_t n, const char *what)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf b = { 0 };

	raw_encode(&b, count, v, n);
	expect_bad(b.data, b.len, what);
}

START_TEST(test_decode_rejects_malformed)
{
	const struct eos_wrange ok[] = { R(0, 10, 1), R(10, 20, 2), R(30, 40, 1) };
	const struct eos_wrange unsorted[] = { R(30, 40, 1), R(0, 10, 1) };
	const struct eos_wrange overlap[] = { R(0, 10, 1), R(9, 20, 2) };
	const struct eos_wrange dup[] = { R(0, 10, 1), R(0, 10, 1) };
	const struct eos_wrange empty[] = { R(5, 5, 1) };
	const struct eos_wrange inverted[] = { R(6, 5, 1) };
	EOS_CLEANUP(eos_buf_release) struct eos_buf b = { 0 };
	struct eos_writelog l = { 0 };
	int r;

	expect_bad_ranges(2, unsorted, 2, "unsorted");
	expect_bad_ranges(2, overlap, 2, "overlapping");
	expect_bad_ranges(2, dup, 2, "duplicate");
	expect_bad_ranges(1, empty, 1, "empty range");
	expect_bad_ranges(1, inverted, 1, "inverted range");
	expect_bad_ranges(4, ok, 3, "count larger than the ranges");
	expect_bad_ranges(2, ok, 3, "count smaller than the ranges (trailing bytes)");
	expect_bad_ranges(UINT32_MAX, ok, 3, "huge count");
	expect_bad_ranges(UINT32_MAX, NULL, 0, "huge count, no ranges");
	expect_bad_ranges(1u << 28, ok, 1, "large count");
	expect_bad("", 0, "empty input");
	expect_bad("\0\0\0", 3, "truncated count");

	/* every truncation of a valid encoding, and a trailing byte */
	raw_encode(&b, 3, ok, 3);
	for (size_t n = 0; n < b.len; n++)
		expect_bad(b.data, n, "truncated");
	ck_assert_int_eq(eos_buf_append_u8(&b, 0), 0);
	expect_bad(b.data, b.len, "trailing byte");
	r = eos_writelog_decode(b.data, b.len - 1, &l);
	ck_assert_int_eq(r, 0);
	expect_log(&l, ok, 3, __LINE__);
	eos_writelog_release(&l);
}
END_TEST

/* --- randomized check against a per-byte model ----------------------------------------------- */

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The log must be exactly the maximal runs of the model (the canonical form). */
static void
check_model(const struct eos_writelog *l, const uint32_t *model, uint64_t seed, int step)
{
	size_t k = 0;

	for (uint64_t i = 0; i < MODEL_SIZE;) {
		uint64_t j = i;

		while (j < MODEL_SIZE && model[j] == model[i])
			j++;
		if (model[i] != NO_OP) {
			ck_assert_msg(k < l->n, "seed %llu step %d: missing range [%llu, %llu)",
				      (unsigned long long)seed, step, (unsigned long long)i,
				      (unsigned long long)j);
			ck_assert_msg(
				l->v[k].start == i && l->v[k].end == j && l->v[k].op == model[i],
				"seed %llu step %d: range %zu is [%llu, %llu) op %u, want "
				"[%llu, %llu) op %u",
				(unsigned long long)seed, step, k,
				(unsigned long long)l->v[k].start, (unsigned long long)l->v[k].end,
				l->v[k].op, (unsigned long long)i, (unsigned long long)j, model[i]);
			k++;
		}
		i = j;
	}
	ck_assert_msg(k == l->n, "seed %llu step %d: %zu ranges, want %zu",
		      (unsigned long long)seed, step, l->n, k);
}

static void
random_step(struct eos_writelog *l, uint32_t *model, uint64_t *s)
{
	uint64_t a = rnd(s) % (MODEL_SIZE + 1), len = rnd(s) % 64 + (rnd(s) % 8 == 0 ? 200 : 0);
	uint64_t b = EOS_MIN(a + len, (uint64_t)MODEL_SIZE);
	uint32_t op = (uint32_t)(rnd(s) % MODEL_OP_IDS);

	if (rnd(s) % 16 == 0) {
		eos_writelog_truncate(l, a);
		for (uint64_t i = a; i < MODEL_SIZE; i++)
			model[i] = NO_OP;
		return;
	}
	add(l, a, b, op);
	for (uint64_t i = a; i < b; i++)
		model[i] = op;
}

START_TEST(test_random_against_model)
{
	static const uint64_t seeds[] = { 1, 0x5eed, 20240601 };

	for (size_t si = 0; si < EOS_ARRAY_SIZE(seeds); si++) {
		uint32_t model[MODEL_SIZE];
		struct eos_writelog l = { 0 };
		uint64_t s = seeds[si] * 0x9E3779B97F4A7C15ULL + 1;

		for (size_t i = 0; i < MODEL_SIZE; i++)
			model[i] = NO_OP;
		for (int step = 0; step < MODEL_OPS; step++) {
			random_step(&l, model, &s);
			check_model(&l, model, seeds[si], step);
			if (step % 500 == 0)
				roundtrip(&l);
		}
		roundtrip(&l);
		eos_writelog_release(&l);
	}
}
END_TEST

/* --- operation table ------------------------------------------------------------------------- */

static uint32_t
intern(struct eos_opstable *t, const char *owner, bool want_new)
{
	uint32_t i = UINT32_MAX;
	bool fresh = !want_new;
	int r = eos_opstable_intern(t, owner, &i, &fresh);

	ck_assert_int_eq(r, 0);
	ck_assert_msg(fresh == want_new, "intern '%s': new %d, want %d", owner, fresh, want_new);
	ck_assert_str_eq(eos_opstable_name(t, i), owner);
	return i;
}

START_TEST(test_opstable_intern)
{
	struct eos_opstable t;
	uint32_t a, b, c;

	eos_opstable_init(&t);
	ck_assert_ptr_null(eos_opstable_name(&t, 0));
	a = intern(&t, "operation:op-1", true);
	b = intern(&t, "workspace_session:s", true);
	c = intern(&t, "operation:op-10", true); /* a longer name sharing a prefix */
	ck_assert_uint_eq(a, 0);
	ck_assert_uint_eq(b, 1);
	ck_assert_uint_eq(c, 2);
	ck_assert_uint_eq(intern(&t, "operation:op-1", false), a);
	ck_assert_uint_eq(intern(&t, "workspace_session:s", false), b);
	ck_assert_uint_eq(intern(&t, "operation:op-10", false), c);
	ck_assert_uint_eq(intern(&t, "", true), 3);
	ck_assert_uint_eq(intern(&t, "", false), 3);
	ck_assert_ptr_null(eos_opstable_name(&t, 4));
	ck_assert_ptr_null(eos_opstable_name(&t, UINT32_MAX));
	eos_opstable_release(&t);
}
END_TEST

START_TEST(test_opstable_set)
{
	struct eos_opstable t;

	eos_opstable_init(&t);
	/* loading sets indexes out of order, with holes */
	ck_assert_int_eq(eos_opstable_set(&t, 5, "operation:five"), 0);
	ck_assert_int_eq(eos_opstable_set(&t, 2, "operation:two"), 0);
	ck_assert_str_eq(eos_opstable_name(&t, 5), "operation:five");
	ck_assert_str_eq(eos_opstable_name(&t, 2), "operation:two");
	ck_assert_ptr_null(eos_opstable_name(&t, 0));
	ck_assert_ptr_null(eos_opstable_name(&t, 3));
	ck_assert_ptr_null(eos_opstable_name(&t, 6));
	/* the same name again is fine, another name is not */
	ck_assert_int_eq(eos_opstable_set(&t, 5, "operation:five"), 0);
	ck_assert_int_eq(eos_opstable_set(&t, 5, "operation:other"), -EINVAL);
	ck_assert_str_eq(eos_opstable_name(&t, 5), "operation:five");
	/* interning finds loaded names and appends new ones after the highest index */
	ck_assert_uint_eq(intern(&t, "operation:two", false), 2);
	ck_assert_uint_eq(intern(&t, "operation:five", false), 5);
	ck_assert_uint_eq(intern(&t, "operation:new", true), 6);
	ck_assert_uint_eq(intern(&t, "operation:newer", true), 7);
	/* a hole can still be filled */
	ck_assert_int_eq(eos_opstable_set(&t, 0, "operation:zero"), 0);
	ck_assert_uint_eq(intern(&t, "operation:zero", false), 0);
	ck_assert_str_eq(eos_opstable_name(&t, 6), "operation:new");
	eos_opstable_release(&t);
}
END_TEST

/* A loaded index far beyond the current table (holes below it). */
START_TEST(test_opstable_set_far)
{
	struct eos_opstable t;

	eos_opstable_init(&t);
	ck_assert_int_eq(eos_opstable_set(&t, 1000, "operation:far"), 0);
	ck_assert_str_eq(eos_opstable_name(&t, 1000), "operation:far");
	ck_assert_ptr_null(eos_opstable_name(&t, 999));
	ck_assert_ptr_null(eos_opstable_name(&t, 0));
	ck_assert_uint_eq(intern(&t, "operation:far", false), 1000);
	ck_assert_uint_eq(intern(&t, "operation:next", true), 1001);
	ck_assert_int_eq(eos_opstable_set(&t, 5000, "operation:farther"), 0);
	ck_assert_str_eq(eos_opstable_name(&t, 5000), "operation:farther");
	eos_opstable_release(&t);
}
END_TEST

START_TEST(test_opstable_many)
{
	struct eos_opstable t;
	char name[64];

	eos_opstable_init(&t);
	for (uint32_t i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "operation:req-%u", i);
		ck_assert_uint_eq(intern(&t, name, true), i);
	}
	for (uint32_t i = 0; i < 1000; i += 7) {
		snprintf(name, sizeof(name), "operation:req-%u", i);
		ck_assert_uint_eq(intern(&t, name, false), i);
	}
	eos_opstable_release(&t);
}
END_TEST

static Suite *
writelog_suite(void)
{
	Suite *s = suite_create("writelog");
	TCase *tc = tcase_create("writelog");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_add_disjoint_sorted);
	tcase_add_test(tc, test_add_overlaps);
	tcase_add_test(tc, test_add_split);
	tcase_add_test(tc, test_add_merges_adjacent_same_op);
	tcase_add_test(tc, test_add_keeps_different_ops_apart);
	tcase_add_test(tc, test_add_large_offsets);
	tcase_add_test(tc, test_truncate);
	tcase_add_test(tc, test_encode_decode_roundtrip);
	tcase_add_test(tc, test_encode_decode_many);
	tcase_add_test(tc, test_encode_layout);
	tcase_add_test(tc, test_decode_rejects_malformed);
	tcase_add_test(tc, test_random_against_model);
	tcase_add_test(tc, test_opstable_intern);
	tcase_add_test(tc, test_opstable_set);
	tcase_add_test(tc, test_opstable_set_far);
	tcase_add_test(tc, test_opstable_many);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(writelog_suite());
}
