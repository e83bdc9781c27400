/* SPDX-License-Identifier: MIT */
/*
 * A publish interrupted by a failpoint at any step of its commit writes nothing: the head, the
 * layers, entries, reference counts, meta records, blame records and the session's records
 * (delta, record, lease) stay byte-identical, fsck is clean, and the same changes publish fine
 * afterwards. Every publish.* failpoint must be on the path of a merging session publish; the
 * store's commit.* failpoints are covered when the publish passes them. Built only with
 * --enable-failpoints.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/failpoint.h"

#include "store/kv.h"
#include "store/store-internal.h"
#include "store/store.h"
#include "tests/unit/publish-util.h"
#include "tests/unit/testutil.h"

static const char *const publish_failpoints[] = {
	"publish.lock", "publish.check", "publish.merge", "publish.blame", "publish.before_write",
};

static const char *const commit_failpoints[] = {
	"commit.lock", "commit.head",  "commit.validate",
	"commit.refs", "commit.layer", "commit.before_write",
};

/* Column families a publish may write (chunks and manifests: staged content is garbage). */
static const enum eos_cf compared_cfs[] = {
	EOS_CF_REFS, EOS_CF_ENTRIES, EOS_CF_LAYERS, EOS_CF_META, EOS_CF_SESSION, EOS_CF_BLAME,
};

static void
setup(void)
{
	pu_setup();
	eos_failpoint_reset();
}

static void
teardown(void)
{
	eos_failpoint_reset();
	pu_teardown();
}

struct snapshot {
	struct eos_buf cf[EOS_ARRAY_SIZE(compared_cfs)];
	struct pu_state state;
};

static void
snapshot_read(struct snapshot *s)
{
	for (size_t i = 0; i < EOS_ARRAY_SIZE(compared_cfs); i++)
		eos_test_kv_dump(pu_st, compared_cfs[i], &s->cf[i]);
	pu_state_read(&s->state, "s");
}

static void
snapshot_release(struct snapshot *s)
{
	for (size_t i = 0; i < EOS_ARRAY_SIZE(compared_cfs); i++)
		eos_buf_release(&s->cf[i]);
	pu_state_release(&s->state);
}

static void
snapshot_expect_same(const struct snapshot *a, const struct snapshot *b, const char *fp)
{
	for (size_t i = 0; i < EOS_ARRAY_SIZE(compared_cfs); i++)
		ck_assert_msg(a->cf[i].len == b->cf[i].len &&
				      (a->cf[i].len == 0 ||
				       memcmp(a->cf[i].data, b->cf[i].data, a->cf[i].len) == 0),
			      "%s: column family '%s' changed", fp,
			      eos_kv_cf_name(compared_cfs[i]));
	pu_state_expect_same(&a->state, &b->state);
}

static const struct pu_op base[] = {
	PU_F("f", "1\n2\n3\n4\n5\n"), PU_F("gone", "g\n"),
	PU_F("old", "o1\no2\n"),      PU_D("d"),
	PU_F("d/a", "a\n"),	      PU_NONE,
};

static const struct pu_op head_change[] = { PU_F("f", "ONE\n2\n3\n4\n5\n"), PU_NONE };

/* The session's changes: a merge with the head, a create, a delete, a rename and a mode. */
static const struct pu_op session_changes[] = {
	PU_F("f", "1\n2\n3\n4\nFIVE\n"), PU_F("d/new", "n\n"), PU_RM("gone"),
	PU_MV("old", "moved"),		 PU_MODE("d/a", 0755), PU_NONE,
};

/* A sandbox whose session "s" (on version 1, with delta records) merges with head 2. */
static void
prepare_sandbox(void)
{
	pu_sandbox(base);
	pu_session("s", 1);
	pu_session_record("s", "delta:1", "one");
	pu_session_record("s", "delta:2", "two");
	ck_assert_int_eq(pu_publish(NULL, 1, "operation:head", head_change, NULL),
			 EOS_PUBLISH_PUBLISHED);
}

static struct eos_publish *
session_publish(void)
{
	struct eos_publish *p = pu_begin("s", 0, NULL);

	pu_stage(p, session_changes);
	return p;
}

/* The failpoints a clean session publish passes (publish.* must all be among them). */
static size_t
probe(const char **hit, size_t max)
{
	const char *all[EOS_ARRAY_SIZE(publish_failpoints) + EOS_ARRAY_SIZE(commit_failpoints)];
	unsigned before[EOS_ARRAY_SIZE(all)];
	struct eos_publish_result res;
	struct eos_publish *p;
	size_t n = 0, na = 0;

	for (size_t i = 0; i < EOS_ARRAY_SIZE(publish_failpoints); i++)
		all[na++] = publish_failpoints[i];
	for (size_t i = 0; i < EOS_ARRAY_SIZE(commit_failpoints); i++)
		all[na++] = commit_failpoints[i];
	prepare_sandbox();
	for (size_t i = 0; i < na; i++)
		before[i] = eos_failpoint_hits(all[i]);
	p = session_publish();
	ck_assert_int_eq(pu_commit(p, &res), EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(res.merged, 1);
	eos_publish_result_release(&res);
	eos_publish_free(p);
	for (size_t i = 0; i < na; i++) {
		bool passed = eos_failpoint_hits(all[i]) > before[i];

		if (i < EOS_ARRAY_SIZE(publish_failpoints))
			ck_assert_msg(passed, "a merging publish never reaches '%s'", all[i]);
		if (passed && n < max)
			hit[n++] = all[i];
	}
	return n;
}

static void
commit_with_failpoint(const char *fp)
{
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	struct eos_publish *p = session_publish();
	int r;

	ck_assert_int_eq(eos_publish_prepare(p, &err), 0);
	ck_assert_int_eq(eos_failpoint_arm(fp, -EIO), 0);
	memset(&res, 0, sizeof(res));
	r = eos_publish_commit(p, &res, &err);
	ck_assert_int_eq(eos_failpoint_arm(fp, 0), 0);
	ck_assert_msg(r == -EIO, "%s: commit returned %d (%s)", fp, r, eos_error_message(&err, r));
	ck_assert_msg(strstr(err.msg, fp), "%s: message '%s' does not name it", fp, err.msg);
	ck_assert_uint_eq(res.version, 0);
	eos_publish_result_release(&res);
	ck_assert_int_eq(eos_publish_commit(p, &res, &err), -EINVAL);
	eos_publish_free(p);
}

START_TEST(test_publish_failpoints_write_nothing)
{
	const char *hit[16];
	size_t n = probe(hit, EOS_ARRAY_SIZE(hit));
	struct snapshot before, after;
	struct eos_publish_result res;
	struct eos_publish *p;

	prepare_sandbox();
	snapshot_read(&before);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "publish-failpoints: a publish passes '%s'\n", hit[i]);
	for (size_t i = 0; i < n; i++) {
		commit_with_failpoint(hit[i]);
		snapshot_read(&after);
		snapshot_expect_same(&before, &after, hit[i]);
		snapshot_release(&after);
		pu_fsck_clean();
	}
	snapshot_release(&before);
	/* the same publish commits afterwards, and the session is reset */
	p = session_publish();
	ck_assert_int_eq(pu_commit(p, &res), EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(res.version, 3);
	eos_publish_result_release(&res);
	eos_publish_free(p);
	pu_expect_file(0, "f", "ONE\n2\n3\n4\nFIVE\n", 0644);
	pu_expect_file(0, "moved", "o1\no2\n", 0644);
	pu_expect_file(0, "d/a", "a\n", 0755);
	pu_expect_absent(0, "gone");
	pu_expect_owners(0, "f", "operation:head", EOS_OWNER_ORIGINAL, EOS_OWNER_ORIGINAL,
			 EOS_OWNER_ORIGINAL, "workspace_session:s");
	ck_assert_uint_eq(pu_delta_count("s"), 0);
	ck_assert_uint_eq(pu_session_lease("s"), 3);
	pu_fsck_clean();
}
END_TEST

/* A failed publish of a plain change set (no session) writes nothing either. */
START_TEST(test_plain_publish_failpoints)
{
	static const struct pu_op ops[] = { PU_F("f", "1\n2\n3\n4\nfive\n"), PU_F("x", "x\n"),
					    PU_NONE };
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	struct pu_state before, after;

	prepare_sandbox();
	pu_state_read(&before, NULL);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(publish_failpoints); i++) {
		const char *fp = publish_failpoints[i];
		struct eos_publish *p = pu_begin(NULL, 1, "operation:fp");
		int r;

		pu_stage(p, ops);
		ck_assert_int_eq(eos_failpoint_arm(fp, -EIO), 0);
		memset(&res, 0, sizeof(res));
		r = eos_publish_commit(p, &res, &err);
		ck_assert_int_eq(eos_failpoint_arm(fp, 0), 0);
		ck_assert_msg(r == -EIO, "%s: %d", fp, r);
		eos_publish_result_release(&res);
		eos_publish_free(p);
		pu_state_read(&after, NULL);
		pu_state_expect_same(&before, &after);
		pu_state_release(&after);
	}
	pu_state_release(&before);
	pu_fsck_clean();
}
END_TEST

static Suite *
failpoints_suite(void)
{
	Suite *s = suite_create("publish-failpoints");
	TCase *tc = tcase_create("commit");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_unchecked_fixture(tc, pu_suite_setup, pu_suite_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_publish_failpoints_write_nothing);
	tcase_add_test(tc, test_plain_publish_failpoints);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(failpoints_suite());
}
