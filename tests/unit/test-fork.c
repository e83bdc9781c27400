/* SPDX-License-Identifier: MIT */
/*
 * Forking a session (eos_view_fork): a real store, the source session mounted in-process and
 * used through plain syscalls, the fork opened as a view of its own. Both go on independently
 * and both publish.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/failpoint.h"

#include "fs/view-internal.h"
#include "fs/view.h"
#include "store/store.h"
#include "tests/unit/live-util.h"
#include "tests/unit/testutil.h"
#include "tests/unit/view-util.h"

/* --- tests ------------------------------------------------------------------------------------ */

static void
fork_ok_of(struct eos_view *v, const char *name)
{
	struct eos_error err = { 0 };
	int r = eos_view_fork(v, name, &err);

	ck_ok(r, err);
}

static void
fork_ok(const char *name)
{
	fork_ok_of(lv.v, name);
}

static bool
view_has(struct eos_view *v, const char *path)
{
	struct eos_node *n = tv_root(v);
	cleanup_free char *copy = strdup(path);
	char *save = NULL;

	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
		if (eos_fs_lookup(v, n, c, &n) < 0)
			return false;
	return true;
}

static void
publish_fork(const char *name)
{
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	int r = eos_view_publish(st, SBX, name, NULL, &res, &err);

	ck_ok(r, err);
	ck_assert_int_eq(res.status, EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
}

/* The fork starts with the source's changes (journaled only, never checkpointed); then each
 * session's writes stay its own, and both publish. */
START_TEST(test_fork_holds_changes)
{
	cleanup_free char *c = NULL;
	struct eos_session_info a, b;
	struct eos_error err = { 0 };
	char buf[256];
	struct eos_view *f;
	int fd;

	lv_start("s1");
	c = lv_mnt_path("old/c.txt");
	fd = lv_mnt_open("a.txt", O_RDWR);
	ck_assert_int_eq(pwrite(fd, "LINE1", 5, 0), 5);
	lv_mnt_write("new.txt", "new\n");
	ck_assert_int_eq(unlink(c), 0);
	fork_ok("s2");
	ck_assert_int_eq(eos_view_fork(lv.v, "s2", NULL), -EEXIST);
	ck_ok(eos_store_session_get(st, SBX, "s1", &a, &err), err);
	ck_ok(eos_store_session_get(st, SBX, "s2", &b, &err), err);
	ck_assert_uint_eq(a.version, b.version);
	lv_check_clean("s2");
	f = lv_view_open("s2", false);
	ck_assert_str_eq(tv_read_all(f, "a.txt", buf, sizeof(buf)),
			 "LINE1\nline2\nline3\nline4\nline5\n");
	ck_assert_str_eq(tv_read_all(f, "new.txt", buf, sizeof(buf)), "new\n");
	ck_assert(!view_has(f, "old/c.txt"));
	ck_assert_uint_eq(lv_delta_entries(f), lv_delta_entries(lv.v));
	/* apart from here on */
	ck_assert_int_eq(pwrite(fd, "LINE3", 5, 12), 5);
	tv_write_at(f, "a.txt", PID_SESSION, 24, "LINE5");
	tv_make(f, "", "fork-only.txt", S_IFREG | 0644, NULL);
	ck_assert_str_eq(tv_read_all(f, "a.txt", buf, sizeof(buf)),
			 "LINE1\nline2\nline3\nline4\nLINE5\n");
	ck_assert_str_eq(lv_fd_read(fd, buf, sizeof(buf)), "LINE1\nline2\nLINE3\nline4\nline5\n");
	ck_assert(!lv_mnt_exists("fork-only.txt"));
	eos_view_close(f);
	/* both publish: the head has both sides */
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	publish_fork("s2");
	ck_assert(lv_head_read("a.txt", buf, sizeof(buf)));
	ck_assert_str_eq(buf, "LINE1\nline2\nLINE3\nline4\nLINE5\n");
	ck_assert(lv_head_read("fork-only.txt", buf, sizeof(buf)));
	close(fd);
	lv_check_clean("s1");
}
END_TEST

/* A fork of a session being written: no write fails, and the fork holds a prefix of them. */
START_TEST(test_fork_while_writing)
{
	struct appender ap;
	char name[16];
	static char buf[1 << 20];
	struct eos_view *f;

	lv_start("s1");
	lv_appender_start(&ap, "log.txt");
	for (int i = 0; i < 5; i++) {
		unsigned before = atomic_load(&ap.lines), len;

		snprintf(name, sizeof(name), "f%d", i);
		fork_ok(name);
		f = lv_view_open(name, false);
		tv_read_all(f, "log.txt", buf, sizeof(buf));
		len = (unsigned)strlen(buf);
		ck_assert_uint_eq(len % 8, 0);
		ck_assert_uint_ge(len / 8, before);
		for (unsigned k = 0; k < len / 8; k++) {
			char line[16];

			snprintf(line, sizeof(line), "w%06u\n", k);
			ck_assert(memcmp(buf + k * 8, line, 8) == 0);
		}
		eos_view_close(f);
	}
	lv_appender_stop(&ap);
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert(lv_head_read("log.txt", buf, sizeof(buf)));
	lv_appender_check(&ap, buf);
	lv_check_clean("f4");
}
END_TEST

/* Bad names and a read-only view are refused; a fork of a fork works. */
START_TEST(test_fork_refusals)
{
	struct eos_view_options o = { .store = st, .sandbox = SBX };
	struct eos_error err = { 0 };
	struct eos_view *ro = NULL;
	char buf[64];

	lv_start("s1");
	lv_mnt_write("x.txt", "x\n");
	ck_assert_int_eq(eos_view_fork(lv.v, "s1", NULL), -EEXIST);
	ck_assert_int_eq(eos_view_fork(lv.v, "../bad", &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "bad"));
	ck_ok(eos_view_open(&o, &ro, &err), err);
	ck_assert_int_eq(eos_view_fork(ro, "s9", NULL), -EINVAL);
	eos_view_close(ro);
	fork_ok("s2");
	lv_stop();
	lv_start("s2");
	fork_ok("s3");
	lv_stop();
	ro = lv_view_open("s3", false);
	ck_assert_str_eq(tv_read_all(ro, "x.txt", buf, sizeof(buf)), "x\n");
	eos_view_close(ro);
}
END_TEST

/* --- kill -9 during a fork ---------------------------------------------------------------------
 */

static const struct {
	const char *failpoint;
	bool forked;
} CRASHES[] = {
	{ "fork.copied", false },
	{ "fork.recorded", true },
};

/* The child: mount s1, write through it, fork it as s2, be killed (stderr says what failed). */
static int
fork_child(const char *dir, const char *mnt)
{
	struct eos_error err = { 0 };
	char path[4096];
	int fd, r;

	if (lv_child_mount(dir, mnt) < 0)
		return 2;
	snprintf(path, sizeof(path), "%s/a.txt", mnt);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || pwrite(fd, "FORKD", 5, 0) != 5)
		return fprintf(stderr, "fork child: write: %s\n", strerror(errno)), 2;
	r = eos_view_fork(lv.v, "s2", &err);
	fprintf(stderr, "fork child: not killed: %s\n", r < 0 ? eos_error_message(&err, r) : "ok");
	return 3;
}

/* Killed before or after the fork's batch: no fork at all, or the whole fork. */
START_TEST(test_kill_during_fork)
{
	cleanup_free char *mnt = eos_test_tmpdir("fork-crash");
	struct eos_session_info info;
	struct eos_error err = { 0 };
	char buf[256];
	struct eos_view *v;

	eos_store_close(st);
	lv_run_child(CRASHES[_i].failpoint, "fork-child", mnt);
	ck_ok(eos_store_open(store_dir, NULL, &st, &err), err);
	lv_check_clean("s1");
	ck_assert_int_eq(eos_store_session_get(st, SBX, "s2", &info, NULL),
			 CRASHES[_i].forked ? 0 : -ENOENT);
	v = lv_view_open("s1", false);
	ck_assert_str_eq(tv_read_all(v, "a.txt", buf, sizeof(buf)),
			 "FORKD\nline2\nline3\nline4\nline5\n");
	if (!CRASHES[_i].forked)
		fork_ok_of(v, "s2"); /* the name is free, its stray directory reused */
	eos_view_close(v);
	lv_check_clean("s2");
	v = lv_view_open("s2", false);
	ck_assert_str_eq(tv_read_all(v, "a.txt", buf, sizeof(buf)),
			 "FORKD\nline2\nline3\nline4\nline5\n");
	eos_view_close(v);
	lv_check_clean("s2");
	rmdir(mnt);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("fork");
	TCase *tc = tcase_create("fork");

	tcase_add_checked_fixture(tc, lv_setup, lv_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fork_holds_changes);
	tcase_add_test(tc, test_fork_while_writing);
	tcase_add_test(tc, test_fork_refusals);
	if (EOS_FAILPOINTS_COMPILED)
		tcase_add_loop_test(tc, test_kill_during_fork, 0, (int)EOS_ARRAY_SIZE(CRASHES));
	suite_add_tcase(s, tc);
	return s;
}

int
main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "fork-child") == 0)
		return fork_child(argv[2], argv[3]);
	return eos_test_run(suite());
}
