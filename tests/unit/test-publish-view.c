/* SPDX-License-Identifier: MIT */
/*
 * Sessions changed through the view (fs/, without a mount) and published with
 * eos_view_publish(): states the gate's own tests, which stage change sets directly, never
 * reach. Each test is the smallest case of one bug tests/integration/publish-model.sh found.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "fs/view-internal.h"
#include "fs/view.h"
#include "store/store.h"
#include "tests/unit/publish-util.h"
#include "tests/unit/testutil.h"

/* --- driving a view --------------------------------------------------------------------------- */

static struct eos_view *
view_open(const char *session)
{
	struct eos_view_options o = { .store = pu_st, .sandbox = pu_sbx, .session = session };
	struct eos_error err = { 0 };
	struct eos_view *v = NULL;
	int r = eos_view_open(&o, &v, &err);

	ck_ok(r, err);
	return v;
}

/* The node at path ("" is the root). */
static struct eos_node *
node_at(struct eos_view *v, const char *path)
{
	cleanup_free char *copy = strdup(path);
	struct eos_node *n = eos_node_get(v, EOS_ROOT_INO);
	char *save = NULL;

	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int r = eos_fs_lookup(v, n, c, &n);

		ck_assert_msg(r == 0, "lookup '%s' ('%s'): %s", path, c, strerror(-r));
	}
	return n;
}

static struct eos_ctx
ctx(void)
{
	return (struct eos_ctx){ .uid = getuid(), .gid = getgid(), .pid = getpid() };
}

static void
make(struct eos_view *v, const char *dir, const char *name, uint32_t mode)
{
	struct eos_ctx c = ctx();
	struct eos_node *n = NULL;
	int r = eos_fs_make(v, &c, node_at(v, dir), name, mode, NULL, &n);

	ck_assert_msg(r == 0, "make '%s' in '%s': %s", name, dir, strerror(-r));
}

static void
write_at(struct eos_view *v, const char *path, uint64_t off, const char *text)
{
	struct eos_ctx c = ctx();
	struct eos_handle *h = NULL;
	int r = eos_fs_open(v, &c, node_at(v, path), O_WRONLY, &h);

	ck_assert_msg(r == 0, "open '%s': %s", path, strerror(-r));
	ck_assert_int_eq(eos_fs_write(v, h, text, strlen(text), off), (ssize_t)strlen(text));
	ck_assert_int_eq(eos_fs_release(v, h), 0);
}

static void
rename_path(struct eos_view *v, const char *d1, const char *n1, const char *d2, const char *n2)
{
	int r = eos_fs_rename(v, node_at(v, d1), n1, node_at(v, d2), n2, 0);

	ck_assert_msg(r == 0, "rename '%s' in '%s': %s", n1, d1, strerror(-r));
}

static void
unlink_path(struct eos_view *v, const char *dir, const char *name, bool is_dir)
{
	int r = eos_fs_unlink(v, node_at(v, dir), name, is_dir);

	ck_assert_msg(r == 0, "unlink '%s' in '%s': %s", name, dir, strerror(-r));
}

static void
chmod_path(struct eos_view *v, const char *path, unsigned mode)
{
	struct stat a = { .st_mode = mode }, out;

	ck_assert_int_eq(eos_fs_setattr(v, node_at(v, path), &a, EOS_SET_MODE, &out), 0);
}

/* Close the view and publish its session: it must be published (or, with no_op, a no-op). */
static void
publish_as(struct eos_view *v, const char *session, bool no_op)
{
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	int r;

	eos_view_close(v);
	r = eos_view_publish(pu_st, pu_sbx, session, NULL, &res, &err);
	ck_ok(r, err);
	ck_assert_msg(res.status == EOS_PUBLISH_PUBLISHED ||
			      (no_op && res.status == EOS_PUBLISH_NO_OP),
		      "%s", pu_result_str(&res));
	eos_publish_result_release(&res);
	pu_fsck_clean();
}

static void
publish(struct eos_view *v, const char *session)
{
	publish_as(v, session, false);
}

static struct eos_stat
head_stat(const char *path)
{
	struct eos_error err = { 0 };
	struct eos_stat s;
	int r = eos_store_stat(pu_st, pu_sbx, 0, path, &s, &err);

	ck_ok(r, err);
	return s;
}

/* path and other are one hard-link group at the head. */
static void
expect_linked(const char *path, const char *other)
{
	struct eos_stat a = head_stat(path), b = head_stat(other);

	ck_assert_msg(a.link_group && a.link_group == b.link_group,
		      "'%s' (group %llu) and '%s' (group %llu) are not linked", path,
		      (unsigned long long)a.link_group, other, (unsigned long long)b.link_group);
}

/* --- tests ------------------------------------------------------------------------------------ */

static const struct pu_op base[] = {
	PU_F("a.txt", "lower a\n"),
	PU_D("dir"),
	PU_F("dir/x.txt", "dir x\n"),
	PU_D("empty"),
	PU_F("f", "linked\n"),
	PU_LINK("g", "f"),
	PU_D("d"),
	PU_F("d/h", "h\n"),
	PU_LINK("k", "d/h"),
	PU_F("d/plain", "plain\n"),
	PU_D("src2"),
	PU_F("src2/x.txt", "src2 x\n"),
	PU_F("src2/y.txt", "y\n"),
	PU_NONE,
};

/* A sandbox of base, session "s" on it and its view open. */
static struct eos_view *
on_base(void)
{
	pu_sandbox(base);
	pu_session("s", 1);
	return view_open("s");
}

/* A created file that was never written has no data file: it publishes as an empty file. */
START_TEST(test_empty_created_file)
{
	struct eos_view *v = on_base();

	make(v, "", "e", S_IFREG | 0640);
	make(v, "dir", "e2", S_IFREG | 0644);
	publish(v, "s");
	pu_expect_file(0, "e", "", 0640);
	pu_expect_file(0, "dir/e2", "", 0644);
}
END_TEST

/* A directory the session created, renamed where a lower directory was, hides its children. */
START_TEST(test_created_dir_over_lower_dir)
{
	struct eos_view *v = on_base();

	make(v, "", "new", S_IFDIR | 0755);
	make(v, "new", "n.txt", S_IFREG | 0644);
	write_at(v, "new/n.txt", 0, "n\n");
	rename_path(v, "", "dir", "", "moved");
	rename_path(v, "", "new", "", "dir");
	/* and over an empty lower directory, which rename replaces */
	make(v, "", "new2", S_IFDIR | 0700);
	rename_path(v, "", "new2", "", "empty");
	publish(v, "s");
	pu_expect_absent(0, "dir/x.txt");
	pu_expect_file(0, "dir/n.txt", "n\n", 0644);
	pu_expect_file(0, "moved/x.txt", "dir x\n", 0644);
	ck_assert_uint_eq(head_stat("empty").attr.mode & 07777, 0700);
}
END_TEST

/* A write through one name of a lower hard-link group changes every name. */
START_TEST(test_lower_link_written)
{
	struct eos_view *v = on_base();

	write_at(v, "g", 0, "LINKED");
	publish(v, "s");
	pu_expect_file(0, "f", "LINKED\n", 0644);
	pu_expect_file(0, "g", "LINKED\n", 0644);
	expect_linked("f", "g");
}
END_TEST

/* A lower hard-link member carried by a renamed directory stays linked; so does a chmod. */
START_TEST(test_lower_link_moved_and_chmod)
{
	struct eos_view *v = on_base();

	rename_path(v, "", "d", "", "e");
	chmod_path(v, "g", 0600);
	publish(v, "s");
	pu_expect_absent(0, "d/h");
	pu_expect_file(0, "e/h", "h\n", 0644);
	pu_expect_file(0, "e/plain", "plain\n", 0644);
	expect_linked("e/h", "k");
	pu_expect_file(0, "f", "linked\n", 0600);
	pu_expect_file(0, "g", "linked\n", 0600);
	expect_linked("f", "g");
}
END_TEST

/*
 * A name deleted in a moved directory is no removal at the destination, even where the base
 * has that path (the directory the move replaced had a child of that name).
 */
START_TEST(test_deleted_in_moved_dir)
{
	struct eos_view *v = on_base();

	unlink_path(v, "src2", "x.txt", false);
	unlink_path(v, "dir", "x.txt", false);
	unlink_path(v, "", "dir", true);
	rename_path(v, "", "src2", "", "dir");
	publish(v, "s");
	pu_expect_absent(0, "dir/x.txt");
	pu_expect_absent(0, "src2");
	pu_expect_file(0, "dir/y.txt", "y\n", 0644);
}
END_TEST

/* Two sessions rename one directory to the same name: the second merges with the first. */
static void
rename_in_two_sessions(const char *from, const char *to)
{
	struct eos_view *v = on_base();

	pu_session("t", 1);
	rename_path(v, "", from, "", to);
	publish(v, "s");
	v = view_open("t");
	rename_path(v, "", from, "", to);
	publish_as(v, "t", true);
	pu_expect_absent(0, from);
}

START_TEST(test_same_rename_in_two_sessions)
{
	rename_in_two_sessions("src2", "same");
	pu_expect_file(0, "same/x.txt", "src2 x\n", 0644);
	pu_expect_file(0, "same/y.txt", "y\n", 0644);
}
END_TEST

/* The second session relinks the group's members the same way: no conflict. */
START_TEST(test_same_linked_rename_in_two_sessions)
{
	rename_in_two_sessions("d", "same");
	pu_expect_file(0, "same/h", "h\n", 0644);
	pu_expect_file(0, "same/plain", "plain\n", 0644);
	expect_linked("same/h", "k");
}
END_TEST

/*
 * A member that shows only through its lower directory is no rename of the name the session
 * wrote the group through and then deleted, even where the head deleted that name too.
 */
START_TEST(test_written_member_deleted)
{
	static const struct pu_op rm_f[] = { PU_RM("f"), PU_NONE };
	struct eos_view *v = on_base();

	write_at(v, "f", 0, "LINKED");
	unlink_path(v, "", "f", false);
	ck_assert_uint_eq(pu_changeset(rm_f), 2);
	publish(v, "s");
	pu_expect_absent(0, "f");
	pu_expect_file(0, "g", "LINKED\n", 0644);
}
END_TEST

/* The root's own attributes and xattrs are changes too. */
START_TEST(test_root_attributes)
{
	struct eos_view *v = on_base();
	struct eos_stat s;

	ck_assert_int_eq(eos_xattr_set(v, node_at(v, ""), "user.root", "r", 1, 0), 0);
	chmod_path(v, "", 0750);
	publish(v, "s");
	s = head_stat("");
	ck_assert_uint_eq(s.attr.mode & 07777, 0750);
	ck_assert_uint_eq(s.nxattrs, 1);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("publish-view");
	TCase *tc = tcase_create("view");

	tcase_add_unchecked_fixture(tc, pu_suite_setup, pu_suite_teardown);
	tcase_add_checked_fixture(tc, pu_setup, pu_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_empty_created_file);
	tcase_add_test(tc, test_created_dir_over_lower_dir);
	tcase_add_test(tc, test_lower_link_written);
	tcase_add_test(tc, test_lower_link_moved_and_chmod);
	tcase_add_test(tc, test_deleted_in_moved_dir);
	tcase_add_test(tc, test_same_rename_in_two_sessions);
	tcase_add_test(tc, test_same_linked_rename_in_two_sessions);
	tcase_add_test(tc, test_written_member_deleted);
	tcase_add_test(tc, test_root_attributes);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(suite());
}
