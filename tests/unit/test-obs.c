/* SPDX-License-Identifier: MIT */
/*
 * store/obs: observations appended, scanned forwards and backwards by range and type, positions
 * that must grow, retention by count and by bytes (the oldest go, at the bound, and the counts
 * kept beside the records stay exact), everything kept across a reopen, and a sandbox's destroy
 * leaving the records that name it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/error.h"

#include "store/kv.h"
#include "store/store.h"
#include "tests/unit/testutil.h"

/* Record k: a span at time 1000 + k, or an event when k is odd. */
static struct eos_obs_record
rec(uint64_t k, char *name, size_t n, const char *attrs)
{
	snprintf(name, n, "thing.%llu", (unsigned long long)k);
	return (struct eos_obs_record){
		.pos = { 1000 + k, k },
		.type = k % 2 ? EOS_OBS_EVENT : EOS_OBS_SPAN,
		.status = k % 2 ? EOS_OBS_STATUS_NONE : EOS_OBS_COMPLETED,
		.start_ns = (int64_t)(900 + k),
		.duration_ns = k % 2 ? 0 : 100,
		.trace_id = { 1, 2, 3, (uint8_t)k },
		.span_id = k + 7,
		.parent_id = k / 2,
		.name = name,
		.sandbox = "sb",
		.session = k % 3 ? "ws-1" : "",
		.attrs = attrs,
	};
}

/* Append records [from, to) one batch at a time of batch records. */
static void
append_range(struct eos_store *st, uint64_t from, uint64_t to, size_t batch,
	     const struct eos_obs_limits *lim, const char *attrs)
{
	struct eos_obs_record v[64];
	char names[64][32];
	struct eos_error err = { 0 };

	ck_assert_uint_le(batch, 64);
	while (from < to) {
		size_t n = 0;

		for (; n < batch && from < to; n++, from++)
			v[n] = rec(from, names[n], sizeof(names[n]), attrs);
		ck_assert_msg(eos_store_obs_append(st, v, n, lim, &err) == 0, "%s", err.msg);
	}
}

struct seen {
	uint64_t seq[512];
	size_t n;
	bool check_fields;
};

static int
collect(void *ctx, const struct eos_obs_record *r)
{
	struct seen *s = ctx;
	char name[32];

	if (s->check_fields) {
		snprintf(name, sizeof(name), "thing.%llu", (unsigned long long)r->pos.seq);
		ck_assert_str_eq(r->name, name);
		ck_assert_uint_eq(r->pos.time, 1000 + r->pos.seq);
		ck_assert_int_eq(r->start_ns, (int64_t)(900 + r->pos.seq));
		ck_assert_int_eq(r->type, r->pos.seq % 2 ? EOS_OBS_EVENT : EOS_OBS_SPAN);
		ck_assert_int_eq(r->status,
				 r->pos.seq % 2 ? EOS_OBS_STATUS_NONE : EOS_OBS_COMPLETED);
		ck_assert_uint_eq(r->trace_id[3], (uint8_t)r->pos.seq);
		ck_assert_uint_eq(r->span_id, r->pos.seq + 7);
		ck_assert_uint_eq(r->parent_id, r->pos.seq / 2);
		ck_assert_str_eq(r->sandbox, "sb");
		ck_assert_str_eq(r->session, r->pos.seq % 3 ? "ws-1" : "");
		ck_assert_str_eq(r->attrs, "{\"k\":1}");
	}
	ck_assert_uint_lt(s->n, 512);
	s->seq[s->n++] = r->pos.seq;
	return 0;
}

static void
scan(struct eos_store *st, const struct eos_obs_query *q, struct seen *s)
{
	struct eos_error err = { 0 };

	s->n = 0;
	ck_assert_msg(eos_store_obs_scan(st, q, collect, s, &err) == 0, "%s", err.msg);
}

START_TEST(test_append_and_scan)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct seen s = { .check_fields = true };
	struct eos_obs_stats stats;
	struct eos_error err = { 0 };

	append_range(f.st, 0, 40, 7, NULL, "{\"k\":1}");
	scan(f.st, NULL, &s);
	ck_assert_uint_eq(s.n, 40);
	for (size_t i = 0; i < 40; i++)
		ck_assert_uint_eq(s.seq[i], i);
	/* newest first, a range [from, to), one type */
	scan(f.st,
	     &(struct eos_obs_query){ .from = { 1010, 10 }, .to = { 1020, 20 }, .reverse = true },
	     &s);
	ck_assert_uint_eq(s.n, 10);
	ck_assert_uint_eq(s.seq[0], 19);
	ck_assert_uint_eq(s.seq[9], 10);
	scan(f.st, &(struct eos_obs_query){ .types = 1u << EOS_OBS_EVENT, .reverse = true }, &s);
	ck_assert_uint_eq(s.n, 20);
	ck_assert_uint_eq(s.seq[0], 39);
	scan(f.st, &(struct eos_obs_query){ .from = { 1035, 0 } }, &s);
	ck_assert_uint_eq(s.n, 5);
	ck_assert_uint_eq(s.seq[0], 35);
	ck_assert_int_eq(eos_store_obs_stats(f.st, &stats, &err), 0);
	ck_assert_uint_eq(stats.records, 40);
	ck_assert_uint_eq(stats.first.seq, 0);
	ck_assert_uint_eq(stats.last.seq, 39);
	ck_assert_uint_eq(stats.trimmed, 0);
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_positions_must_grow)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_obs_record v[2];
	char n0[32], n1[32];
	struct eos_obs_stats stats;
	struct eos_error err = { 0 };
	struct seen s = { 0 };

	append_range(f.st, 5, 6, 1, NULL, "");
	v[0] = rec(6, n0, sizeof(n0), "");
	v[1] = rec(4, n1, sizeof(n1), "");
	ck_assert_int_eq(eos_store_obs_append(f.st, v, 2, NULL, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "observation 1 ('thing.4')"), "%s", err.msg);
	v[1] = rec(7, n1, sizeof(n1), "");
	v[1].name = "";
	ck_assert_int_eq(eos_store_obs_append(f.st, v, 2, NULL, &err), -EINVAL);
	/* nothing of a refused batch is written */
	scan(f.st, NULL, &s);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_int_eq(eos_store_obs_stats(f.st, &stats, &err), 0);
	ck_assert_uint_eq(stats.records, 1);
	eos_test_fixture_close(&f);
}
END_TEST

/* Recount what the column family holds and compare with the kept counts. */
static void
expect_exact_stats(struct eos_store *st)
{
	struct eos_obs_stats stats;
	struct eos_error err = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf dump = { 0 };
	struct seen s = { 0 };
	uint64_t records = 0;

	ck_assert_int_eq(eos_store_obs_stats(st, &stats, &err), 0);
	eos_test_kv_dump(st, EOS_CF_OBS, &dump);
	/* the dump is lp key · lp value per record: 8 bytes of lengths each */
	scan(st, NULL, &s);
	records = s.n;
	ck_assert_uint_eq(stats.records, records);
	ck_assert_uint_eq(stats.bytes + 8 * records, dump.len);
	if (records) {
		ck_assert_uint_eq(stats.first.seq, s.seq[0]);
		ck_assert_uint_eq(stats.last.seq, s.seq[records - 1]);
	}
}

START_TEST(test_retention_by_count)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	const struct eos_obs_limits lim = { .max_records = 64 };
	struct eos_obs_stats stats;
	struct eos_error err = { 0 };
	struct seen s = { 0 };

	append_range(f.st, 0, 64, 8, &lim, "");
	ck_assert_int_eq(eos_store_obs_stats(f.st, &stats, &err), 0);
	ck_assert_uint_eq(stats.records, 64); /* at the bound: nothing goes yet */
	append_range(f.st, 64, 65, 1, &lim, "");
	/* one past the bound: the oldest go, down to 15/16 of it */
	scan(f.st, NULL, &s);
	ck_assert_uint_eq(s.n, 60);
	ck_assert_uint_eq(s.seq[0], 5);
	ck_assert_uint_eq(s.seq[59], 64);
	expect_exact_stats(f.st);
	for (uint64_t k = 65; k < 400; k += 5) {
		append_range(f.st, k, k + 5, 5, &lim, "");
		ck_assert_int_eq(eos_store_obs_stats(f.st, &stats, &err), 0);
		ck_assert_uint_le(stats.records, 64);
		ck_assert_uint_eq(stats.last.seq, k + 4);
	}
	scan(f.st, NULL, &s);
	ck_assert_uint_eq(s.seq[s.n - 1], 399);
	ck_assert_uint_eq(s.seq[0], 400 - s.n); /* exactly the newest are kept */
	ck_assert_uint_eq(stats.trimmed, 400 - s.n);
	expect_exact_stats(f.st);
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_retention_by_bytes)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	char attrs[600];
	struct eos_obs_stats stats;
	struct eos_error err = { 0 };
	struct eos_obs_limits lim = { .max_records = 100000, .max_bytes = 16384 };
	struct seen s = { 0 };

	memset(attrs, 'a', sizeof(attrs) - 1);
	attrs[0] = '"';
	attrs[sizeof(attrs) - 2] = '"';
	attrs[sizeof(attrs) - 1] = '\0';
	append_range(f.st, 0, 200, 10, &lim, attrs);
	ck_assert_int_eq(eos_store_obs_stats(f.st, &stats, &err), 0);
	ck_assert_uint_le(stats.bytes, 16384);
	ck_assert_uint_gt(stats.bytes, 16384 - 16384 / 16 - 2 * 700);
	scan(f.st, NULL, &s);
	ck_assert_uint_eq(s.seq[s.n - 1], 199);
	ck_assert_uint_eq(s.seq[0], 200 - s.n);
	expect_exact_stats(f.st);
	/* a batch larger than the bound keeps only its newest records */
	lim.max_bytes = 2048;
	append_range(f.st, 200, 210, 10, &lim, attrs);
	scan(f.st, NULL, &s);
	ck_assert_uint_eq(s.seq[s.n - 1], 209);
	ck_assert_uint_le(s.n, 3);
	expect_exact_stats(f.st);
	eos_test_fixture_close(&f);
}
END_TEST

START_TEST(test_kept_across_reopen)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	const struct eos_obs_limits lim = { .max_records = 32 };
	struct eos_obs_stats before, after;
	struct eos_error err = { 0 };
	struct seen s = { .check_fields = true };
	struct eos_obs_record r;
	char name[32];

	append_range(f.st, 0, 50, 5, &lim, "{\"k\":1}");
	ck_assert_int_eq(eos_store_obs_stats(f.st, &before, &err), 0);
	eos_store_close(f.st);
	ck_assert_int_eq(eos_store_open(f.dir, NULL, &f.st, &err), 0);
	ck_assert_int_eq(eos_store_obs_stats(f.st, &after, &err), 0);
	ck_assert_mem_eq(&before, &after, sizeof(before));
	scan(f.st, NULL, &s);
	ck_assert_uint_eq(s.n, before.records);
	/* the last position is remembered: an older one is refused after the reopen too */
	r = rec(10, name, sizeof(name), "");
	ck_assert_int_eq(eos_store_obs_append(f.st, &r, 1, &lim, &err), -EINVAL);
	append_range(f.st, 50, 60, 5, &lim, "{\"k\":1}");
	expect_exact_stats(f.st);
	eos_test_fixture_close(&f);
}
END_TEST

/* Records naming a sandbox outlive it; fsck accepts them. */
START_TEST(test_destroy_keeps_records)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_attr root = eos_test_attr(0755);
	struct eos_changeset *cs = NULL;
	struct eos_commit_result res;
	struct eos_fsck_result fr;
	struct eos_error err = { 0 };
	struct seen s = { 0 };

	ck_assert_int_eq(eos_changeset_new_sandbox(f.st, "sb", "test", &root, &cs, &err), 0);
	ck_assert_int_eq(eos_changeset_commit(cs, 0, &res, &err), 0);
	eos_changeset_free(cs);
	append_range(f.st, 0, 10, 10, NULL, "");
	ck_assert_int_eq(eos_store_sandbox_destroy(f.st, "sb", &err), 0);
	scan(f.st, NULL, &s);
	ck_assert_uint_eq(s.n, 10);
	ck_assert_int_eq(eos_store_fsck(f.st, 0, NULL, NULL, &fr, &err), 0);
	ck_assert_uint_eq(fr.violations, 0);
	eos_test_fixture_close(&f);
}
END_TEST

static void
count_kind(void *ctx, const char *kind, const char *message)
{
	unsigned *n = ctx;

	(void)message;
	if (!strcmp(kind, "obs-record"))
		n[0]++;
	if (!strcmp(kind, "obs-count"))
		n[1]++;
}

/* fsck: a record that does not decode, and counts that no longer match. */
START_TEST(test_fsck_observations)
{
	struct eos_test_fixture f = eos_test_fixture_open();
	struct eos_fsck_result fr;
	struct eos_error err = { 0 };
	struct eos_buf k = { 0 };
	unsigned n[2] = { 0 };

	append_range(f.st, 0, 10, 10, NULL, "");
	ck_assert_int_eq(eos_store_fsck(f.st, 0, count_kind, n, &fr, &err), 0);
	ck_assert_uint_eq(fr.violations, 0);
	ck_assert_int_eq(eos_buf_append_be64(&k, 0), 0);
	ck_assert_int_eq(eos_buf_append_be64(&k, 5000), 0);
	ck_assert_int_eq(eos_buf_append_be64(&k, 1), 0);
	eos_test_kv_put(f.st, EOS_CF_OBS, &k, "junk", 4);
	ck_assert_int_eq(eos_store_fsck(f.st, 0, count_kind, n, &fr, &err), 0);
	ck_assert_uint_eq(n[0], 1);
	ck_assert_uint_eq(n[1], 1);
	ck_assert_uint_eq(fr.violations, 2);
	eos_buf_release(&k);
	eos_test_fixture_close(&f);
}
END_TEST

static Suite *
obs_suite(void)
{
	Suite *s = suite_create("obs");
	TCase *tc = tcase_create("obs");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_append_and_scan);
	tcase_add_test(tc, test_positions_must_grow);
	tcase_add_test(tc, test_retention_by_count);
	tcase_add_test(tc, test_retention_by_bytes);
	tcase_add_test(tc, test_kept_across_reopen);
	tcase_add_test(tc, test_destroy_keeps_records);
	tcase_add_test(tc, test_fsck_observations);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(obs_suite());
}
