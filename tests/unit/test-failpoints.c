/* SPDX-License-Identifier: MIT */
/*
 * A commit interrupted by a failpoint at any step leaves the store exactly as before: same head,
 * layers, tree, entries, meta and reference counts, and fsck reports nothing. (Built only with
 * --enable-failpoints.)
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/failpoint.h"

#include "store/kv.h"
#include "store/store-internal.h"
#include "store/store.h"
#include "tests/unit/testutil.h"

enum {
	BIG_LEN = 200 * 1024,
};

static const char *const failpoints[] = {
	"commit.lock", "commit.head",  "commit.validate",
	"commit.refs", "commit.layer", "commit.before_write",
};

/* Column families a commit writes besides chunks and manifests (staged content is garbage). */
static const enum eos_cf compared_cfs[] = {
	EOS_CF_REFS,
	EOS_CF_ENTRIES,
	EOS_CF_LAYERS,
	EOS_CF_META,
};

static struct eos_store *st;
static char *dir;

static void
setup(void)
{
	st = eos_test_store_new(&dir);
	eos_failpoint_reset();
}

static void
teardown(void)
{
	eos_failpoint_reset();
	eos_store_close(st);
	eos_test_rm_rf(dir);
	free(dir);
}

#define ck_ok(r, err) \
	ck_assert_msg((r) >= 0, "line %d: %s", __LINE__, eos_error_message(&(err), (r)))

static void
put(struct eos_changeset *cs, const char *path, const void *data, size_t len)
{
	struct eos_attr a = eos_test_attr(0644);
	struct eos_error err = { 0 };
	int r = eos_changeset_put_file_mem(cs, path, &a, data, len, &err);

	ck_ok(r, err);
}

static void
put_text(struct eos_changeset *cs, const char *path, const char *text)
{
	put(cs, path, text, strlen(text));
}

static void
put_big(struct eos_changeset *cs, const char *path, uint64_t seed)
{
	cleanup_free uint8_t *p = malloc(BIG_LEN);

	ck_assert_ptr_nonnull(p);
	eos_test_fill_random(p, BIG_LEN, seed);
	put(cs, path, p, BIG_LEN);
}

static void
mk(struct eos_changeset *cs, const char *path, bool opaque)
{
	struct eos_attr a = eos_test_attr(0755);
	struct eos_error err = { 0 };
	int r = eos_changeset_mkdir(cs, path, &a, opaque, &err);

	ck_ok(r, err);
}

static void
base_sandbox(void)
{
	struct eos_attr root = eos_test_attr(0755);
	struct eos_changeset *cs = NULL;
	struct eos_commit_result res;
	struct eos_error err = { 0 };
	int r = eos_changeset_new_sandbox(st, "fp", "test:failpoints", &root, &cs, &err);

	ck_ok(r, err);
	mk(cs, "d", false);
	put_text(cs, "d/a", "alpha");
	put_text(cs, "d/b", "beta");
	mk(cs, "old", false);
	put_text(cs, "old/x", "x");
	put_big(cs, "big", 1);
	put_big(cs, "big2", 2);
	put_text(cs, "gone", "soon");
	r = eos_changeset_commit(cs, 0, &res, &err);
	eos_changeset_free(cs);
	ck_ok(r, err);
	ck_assert_uint_eq(res.version, 1);
}

/* A change set that creates, modifies, deletes, replaces a directory and links. */
static struct eos_changeset *
stage_changes(void)
{
	struct eos_changeset *cs = NULL;
	struct eos_error err = { 0 };
	int r = eos_changeset_new(st, "fp", &cs, &err);

	ck_ok(r, err);
	put_text(cs, "d/a", "alpha, modified");
	put_text(cs, "d/new", "new file");
	put_big(cs, "big", 3);
	put_big(cs, "big3", 2);
	mk(cs, "old", true);
	put_text(cs, "old/y", "y");
	r = eos_changeset_remove(cs, "gone", &err);
	ck_ok(r, err);
	r = eos_changeset_link(cs, "d/link", "big2", &err);
	ck_ok(r, err);
	return cs;
}

/* Everything a commit may write, as one byte string per column family. */
struct state {
	struct eos_buf cf[EOS_ARRAY_SIZE(compared_cfs)];
	struct eos_digest tree;
	uint64_t head, paths;
};

static void
state_read(struct state *s)
{
	struct eos_sandbox_info info;
	struct eos_error err = { 0 };
	int r = eos_store_sandbox_get(st, "fp", &info, &err);

	ck_ok(r, err);
	s->head = info.head;
	s->tree = eos_test_tree_digest(st, "fp", info.head);
	s->paths = eos_test_tree_count(st, "fp", info.head);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(compared_cfs); i++)
		eos_test_kv_dump(st, compared_cfs[i], &s->cf[i]);
}

static void
state_release(struct state *s)
{
	for (size_t i = 0; i < EOS_ARRAY_SIZE(compared_cfs); i++)
		eos_buf_release(&s->cf[i]);
}

static void
state_check_same(const struct state *a, const struct state *b, const char *fp)
{
	ck_assert_msg(a->head == b->head, "%s: head moved", fp);
	ck_assert_msg(a->paths == b->paths, "%s: path count changed", fp);
	ck_assert_msg(eos_digest_eq(&a->tree, &b->tree), "%s: tree changed", fp);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(compared_cfs); i++)
		ck_assert_msg(a->cf[i].len == b->cf[i].len &&
				      memcmp(a->cf[i].data, b->cf[i].data, a->cf[i].len) == 0,
			      "%s: column family '%s' changed", fp,
			      eos_kv_cf_name(compared_cfs[i]));
}

static void
report_violation(void *ctx, const char *kind, const char *message)
{
	(void)ctx;
	ck_abort_msg("fsck: %s: %s", kind, message);
}

static void
check_fsck(void)
{
	struct eos_fsck_result res = { 0 };
	struct eos_error err = { 0 };
	int r = eos_store_fsck(st, EOS_FSCK_VERIFY_CHUNKS, report_violation, NULL, &res, &err);

	ck_ok(r, err);
	ck_assert_uint_eq(res.violations, 0);
}

static void
commit_with_failpoint(struct eos_changeset *cs, const char *fp)
{
	struct eos_commit_result res = { 0 };
	struct eos_error err = { 0 };
	unsigned hits = eos_failpoint_hits(fp);
	int r;

	ck_assert_int_eq(eos_failpoint_arm(fp, -EIO), 0);
	r = eos_changeset_commit(cs, 0, &res, &err);
	ck_assert_int_eq(eos_failpoint_arm(fp, 0), 0);
	ck_assert_msg(r == -EIO, "%s: commit returned %d (%s)", fp, r, eos_error_message(&err, r));
	ck_assert_msg(strstr(err.msg, fp), "%s: message '%s' does not name it", fp, err.msg);
	ck_assert_uint_gt(eos_failpoint_hits(fp), hits);
	/* The change set is spent. */
	r = eos_changeset_commit(cs, 0, &res, &err);
	ck_assert_int_eq(r, -EINVAL);
	eos_changeset_free(cs);
}

START_TEST(test_commit_failpoints_leave_store_unchanged)
{
	struct state before, after;
	struct eos_commit_result res;
	struct eos_changeset *cs;
	struct eos_error err = { 0 };
	int r;

	base_sandbox();
	state_read(&before);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(failpoints); i++) {
		commit_with_failpoint(stage_changes(), failpoints[i]);
		state_read(&after);
		state_check_same(&before, &after, failpoints[i]);
		state_release(&after);
		check_fsck();
	}
	/* The same contents commit fine afterwards. */
	cs = stage_changes();
	r = eos_changeset_commit(cs, 1, &res, &err);
	eos_changeset_free(cs);
	ck_ok(r, err);
	ck_assert_uint_eq(res.version, 2);
	ck_assert_uint_eq(res.created, 4);  /* d/new, big3, old/y, d/link */
	ck_assert_uint_eq(res.modified, 3); /* d/a, big, old (opaque) */
	ck_assert_uint_eq(res.deleted, 1);
	state_read(&after);
	ck_assert_uint_eq(after.head, 2);
	ck_assert(!eos_digest_eq(&before.tree, &after.tree));
	state_release(&after);
	state_release(&before);
	check_fsck();
}
END_TEST

START_TEST(test_new_sandbox_failpoints)
{
	struct eos_attr root = eos_test_attr(0755);
	cleanup_free struct eos_sandbox_info *list = NULL;
	struct eos_sandbox_info info;
	struct eos_buf meta_before, meta_after;
	struct eos_error err = { 0 };
	struct eos_changeset *cs;
	size_t n = 0;
	int r;

	base_sandbox();
	eos_test_kv_dump(st, EOS_CF_META, &meta_before);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(failpoints); i++) {
		cs = NULL;
		r = eos_changeset_new_sandbox(st, "fresh", "x", &root, &cs, &err);
		ck_ok(r, err);
		put_text(cs, "a", "a");
		put_big(cs, "b", 9);
		commit_with_failpoint(cs, failpoints[i]);
		r = eos_store_sandbox_get(st, "fresh", &info, &err);
		ck_assert_int_eq(r, -ENOENT);
		eos_test_kv_dump(st, EOS_CF_META, &meta_after);
		ck_assert(meta_after.len == meta_before.len &&
			  memcmp(meta_after.data, meta_before.data, meta_after.len) == 0);
		eos_buf_release(&meta_after);
		check_fsck();
	}
	eos_buf_release(&meta_before);
	r = eos_store_sandbox_list(st, &list, &n, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(n, 1);
}
END_TEST

static Suite *
failpoints_suite(void)
{
	Suite *s = suite_create("failpoints");
	TCase *tc = tcase_create("commit");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_commit_failpoints_leave_store_unchanged);
	tcase_add_test(tc, test_new_sandbox_failpoints);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(failpoints_suite());
}
