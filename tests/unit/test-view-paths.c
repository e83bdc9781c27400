/* SPDX-License-Identifier: MIT */
/*
 * The view's path operations for a host (fs/view.h, fs/pathops.c): a real store, a session view
 * opened without a mount, and one mounted and served in-process to see that the kernel shows
 * what eos_view_path_write wrote. A crash test forks a child that writes and SIGKILLs itself
 * right after the write returned.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "fs/view-internal.h"
#include "fs/view.h"
#include "store/store.h"
#include "tests/unit/live-util.h"
#include "tests/unit/testutil.h"
#include "tests/unit/view-util.h"

/* path's whole content in v, NUL-terminated into buf. */
static const char *
pv_read(struct eos_view *v, const char *path, char *buf, size_t size)
{
	struct eos_error err = { 0 };
	ssize_t n = eos_view_path_read(v, path, 0, buf, size - 1, &err);

	ck_assert_msg(n >= 0, "read '%s': %s", path, eos_error_message(&err, (int)n));
	buf[n] = '\0';
	return buf;
}

static void
pv_write(struct eos_view *v, const char *path, const char *text, const char *owner)
{
	struct eos_error err = { 0 };
	int r = eos_view_path_write(v, path, text, strlen(text), owner, EOS_VIEW_WRITE_PARENTS,
				    &err);

	ck_ok(r, err);
}

/* The call failed with code and a message naming path. */
static void
pv_refused(int r, const struct eos_error *err, int code, const char *path)
{
	ck_assert_msg(r == code, "'%s': got %d (%s), want %d", path, r, err->msg, code);
	ck_assert_msg(strstr(err->msg, path), "'%s' not named in '%s'", path, err->msg);
}

/* The owner of every line of path at the head: one range. */
static void
pv_blame_is(const char *path, const char *owner)
{
	struct eos_blame_range *b = NULL;
	struct eos_error err = { 0 };
	size_t n = 0;
	int r = eos_store_blame(st, SBX, 0, path, &b, &n, &err);

	ck_ok(r, err);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(b[0].owner, owner);
	free(b);
}

START_TEST(test_read_write_list_stat)
{
	struct eos_view *v = lv_view_open("s1", false);
	struct eos_view_path_list l = { 0 };
	struct eos_error err = { 0 };
	struct stat stb;
	char buf[256];

	ck_assert_str_eq(pv_read(v, "a.txt", buf, sizeof(buf)), BASE_A);
	ck_assert_int_eq(eos_view_path_read(v, "a.txt", 6, buf, 5, &err), 5);
	ck_assert(!memcmp(buf, "line2", 5));
	ck_assert_int_eq(eos_view_path_read(v, "a.txt", 1000, buf, 5, &err), 0);
	pv_write(v, "n/m/new.txt", "fresh\n", "operation:req-1");
	ck_assert_str_eq(pv_read(v, "n/m/new.txt", buf, sizeof(buf)), "fresh\n");
	ck_ok(eos_view_path_stat(v, "n/m/new.txt", &stb, &err), err);
	ck_assert(S_ISREG(stb.st_mode));
	ck_assert_uint_eq(stb.st_mode & 07777, 0644);
	ck_assert_uint_eq(stb.st_size, 6);
	ck_ok(eos_view_path_stat(v, "n/m", &stb, &err), err);
	ck_assert(S_ISDIR(stb.st_mode));
	/* an existing file: replaced, its mode kept */
	pv_write(v, "a.txt", "A\n", NULL);
	ck_assert_str_eq(pv_read(v, "a.txt", buf, sizeof(buf)), "A\n");
	pv_write(v, "dir/b.txt", "", "operation:req-2");
	ck_assert_str_eq(pv_read(v, "dir/b.txt", buf, sizeof(buf)), "");
	ck_ok(eos_view_path_list(v, "", &l, &err), err);
	ck_assert_uint_eq(l.n, 5); /* a.txt dir links n old: no temporary left */
	ck_assert_str_eq(l.v[0].name, "a.txt");
	ck_assert_uint_eq(l.v[0].size, 2);
	ck_assert(S_ISREG(l.v[0].mode));
	ck_assert_str_eq(l.v[1].name, "dir");
	ck_assert(S_ISDIR(l.v[1].mode));
	ck_assert_str_eq(l.v[3].name, "n");
	eos_view_path_list_release(&l);
	ck_ok(eos_view_path_list(v, "n/m", &l, &err), err);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_str_eq(l.v[0].name, "new.txt");
	eos_view_path_list_release(&l);
	eos_view_close(v);
	/* reopened: all of it is in the session */
	v = lv_view_open("s1", false);
	ck_assert_str_eq(pv_read(v, "n/m/new.txt", buf, sizeof(buf)), "fresh\n");
	ck_assert_str_eq(pv_read(v, "a.txt", buf, sizeof(buf)), "A\n");
	eos_view_close(v);
}
END_TEST

/* A replaced file keeps its extended attributes; a temporary a killed write left behind goes at
 * the next open, and only such a name. */
START_TEST(test_write_keeps_xattrs_drops_temps)
{
	struct eos_view *v = lv_view_open("s1", false);
	struct eos_view_path_list l = { 0 };
	struct eos_error err = { 0 };
	struct eos_node *n = tv_lookup(v, "a.txt");
	char buf[64];

	ck_assert_int_eq(eos_xattr_set(v, n, "user.tag", "kept", 4, 0), 0);
	eos_node_forget(v, n->ino, 1);
	pv_write(v, "a.txt", "new\n", NULL);
	n = tv_lookup(v, "a.txt");
	ck_assert_int_eq(eos_xattr_get(v, n, "user.tag", buf, sizeof(buf)), 4);
	ck_assert(!memcmp(buf, "kept", 4));
	eos_node_forget(v, n->ino, 1);
	/* what a write killed between its two steps leaves, and names that only look alike */
	pv_write(v, "dir/.eos-write.1f2e.692e0b3c.7", "half\n", NULL);
	pv_write(v, "dir/.eos-write.notes", "mine\n", NULL);
	pv_write(v, "dir/x.eos-write.1.2.3", "mine\n", NULL);
	eos_view_close(v);
	v = lv_view_open("s1", false);
	ck_ok(eos_view_path_list(v, "dir", &l, &err), err);
	ck_assert_uint_eq(l.n, 4);
	ck_assert_str_eq(l.v[0].name, ".eos-write.notes");
	ck_assert_str_eq(l.v[1].name, "b.txt");
	ck_assert_str_eq(l.v[2].name, "e.txt");
	ck_assert_str_eq(l.v[3].name, "x.eos-write.1.2.3");
	eos_view_path_list_release(&l);
	n = tv_lookup(v, "a.txt");
	ck_assert_int_eq(eos_xattr_get(v, n, "user.tag", buf, sizeof(buf)), 4);
	eos_node_forget(v, n->ino, 1);
	eos_view_close(v);
}
END_TEST

START_TEST(test_refusals)
{
	struct eos_view *v = lv_view_open("s1", false);
	struct eos_view_path_list l = { 0 };
	struct eos_error err = { 0 };
	char buf[64];

	tv_make(v, "", "out", S_IFLNK | 0777, "/etc");
	tv_make(v, "", "up", S_IFLNK | 0777, "dir/../../x");
	tv_make(v, "", "in", S_IFLNK | 0777, "dir");
	tv_make(v, "", "loop", S_IFLNK | 0777, "loop");
	ck_assert_str_eq(pv_read(v, "in/b.txt", buf, sizeof(buf)), "bee\n");
	pv_write(v, "in/via.txt", "via\n", NULL); /* a symlink inside is followed */
	ck_assert_str_eq(pv_read(v, "dir/via.txt", buf, sizeof(buf)), "via\n");
	pv_refused((int)eos_view_path_read(v, "../x", 0, buf, 1, &err), &err, -EINVAL, "../x");
	pv_refused((int)eos_view_path_read(v, "dir/../a.txt", 0, buf, 1, &err), &err, -EINVAL,
		   "dir/../a.txt");
	pv_refused((int)eos_view_path_read(v, "/etc/passwd", 0, buf, 1, &err), &err, -EINVAL,
		   "/etc/passwd");
	pv_refused((int)eos_view_path_read(v, "out/passwd", 0, buf, 1, &err), &err, -EXDEV,
		   "out/passwd");
	pv_refused(eos_view_path_write(v, "out/x", "x", 1, NULL, 0, &err), &err, -EXDEV, "out/x");
	pv_refused(eos_view_path_list(v, "out", &l, &err), &err, -EXDEV, "out");
	pv_refused((int)eos_view_path_read(v, "up", 0, buf, 1, &err), &err, -EXDEV, "up");
	pv_refused((int)eos_view_path_read(v, "loop", 0, buf, 1, &err), &err, -ELOOP, "loop");
	pv_refused((int)eos_view_path_read(v, "dir", 0, buf, 1, &err), &err, -EISDIR, "dir");
	pv_refused(eos_view_path_write(v, "dir", "x", 1, NULL, 0, &err), &err, -EISDIR, "dir");
	pv_refused(eos_view_path_write(v, "", "x", 1, NULL, 0, &err), &err, -EISDIR, "''");
	pv_refused(eos_view_path_list(v, "a.txt", &l, &err), &err, -ENOTDIR, "a.txt");
	pv_refused((int)eos_view_path_read(v, "nope", 0, buf, 1, &err), &err, -ENOENT, "nope");
	pv_refused(eos_view_path_write(v, "x/y", "x", 1, NULL, 0, &err), &err, -ENOENT, "x/y");
	pv_refused(eos_view_path_write(v, "a.txt/y", "x", 1, NULL, EOS_VIEW_WRITE_PARENTS, &err),
		   &err, -ENOTDIR, "a.txt/y");
	ck_assert_str_eq(pv_read(v, "a.txt", buf, sizeof(buf)), BASE_A);
	eos_view_close(v);
}
END_TEST

/* Blame is the owner a write named, after a publish of the closed session. */
START_TEST(test_blame_after_publish)
{
	struct eos_view *v = lv_view_open("s1", false);
	struct eos_publish_result res = { 0 };
	struct eos_error err = { 0 };
	int r;

	pv_write(v, "a.txt", "one\ntwo\n", "operation:req-9");
	pv_write(v, "w.txt", "mine\n", NULL);
	pv_write(v, "n/o.txt", "o\n", "workspace_session:ws-1");
	eos_view_close(v);
	r = eos_view_publish(st, SBX, "s1", NULL, &res, &err);
	ck_ok(r, err);
	ck_assert_int_eq(res.status, EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
	pv_blame_is("a.txt", "operation:req-9");
	pv_blame_is("w.txt", "workspace_session:s1");
	pv_blame_is("n/o.txt", "workspace_session:ws-1");
}
END_TEST

/* Mounted: the kernel shows each write at once, also where it had the old bytes or a negative
 * entry cached. */
START_TEST(test_mount_sees_writes)
{
	char buf[256];

	lv_start("s1");
	ck_assert_str_eq(lv_mnt_read("a.txt", buf, sizeof(buf)), BASE_A);
	ck_assert(!lv_mnt_exists("q/r.txt"));
	ck_assert(!lv_mnt_exists("q"));
	pv_write(lv.v, "a.txt", "NEW\n", "operation:req-3");
	ck_assert_str_eq(lv_mnt_read("a.txt", buf, sizeof(buf)), "NEW\n");
	pv_write(lv.v, "q/r.txt", "r\n", NULL);
	ck_assert_str_eq(lv_mnt_read("q/r.txt", buf, sizeof(buf)), "r\n");
	lv_mnt_write("q/r.txt", "from the mount\n");
	ck_assert_str_eq(pv_read(lv.v, "q/r.txt", buf, sizeof(buf)), "from the mount\n");
	pv_write(lv.v, "q/r.txt", "again\n", NULL);
	ck_assert_str_eq(lv_mnt_read("q/r.txt", buf, sizeof(buf)), "again\n");
}
END_TEST

struct writer {
	pthread_t thread;
	atomic_bool stop;
	atomic_uint done; /* writes returned 0 */
	int failed;	  /* the first failure */
	char last[32];	  /* what the last write wrote */
};

static void *
writer_main(void *arg)
{
	struct writer *w = arg;
	struct eos_error err = { 0 };

	while (!atomic_load(&w->stop)) {
		char text[32];
		int r;

		snprintf(text, sizeof(text), "w%u\n", atomic_load(&w->done));
		r = eos_view_path_write(lv.v, "p.txt", text, strlen(text), "operation:req-w",
					EOS_VIEW_WRITE_PARENTS, &err);
		if (r < 0) {
			w->failed = r;
			break;
		}
		memcpy(w->last, text, sizeof(text));
		atomic_fetch_add(&w->done, 1);
	}
	return NULL;
}

/* Writes go on through live publishes: each waits (never fails) while the gate decides and then
 * lands in the new delta; the last one is what the view, the mount and the head show. */
START_TEST(test_write_through_live_publish)
{
	struct writer w = { 0 };
	char buf[256], head[256];

	lv_start("s1");
	pv_write(lv.v, "p.txt", "start\n", "operation:req-w");
	ck_assert_int_eq(pthread_create(&w.thread, NULL, writer_main, &w), 0);
	while (atomic_load(&w.done) < 3)
		sched_yield();
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	atomic_store(&w.stop, true);
	pthread_join(w.thread, NULL);
	ck_assert_int_eq(w.failed, 0);
	ck_assert_str_eq(pv_read(lv.v, "p.txt", buf, sizeof(buf)), w.last);
	ck_assert_str_eq(lv_mnt_read("p.txt", buf, sizeof(buf)), w.last);
	/* a write after a publish is in the new delta, not at the head */
	pv_write(lv.v, "p.txt", "after\n", "operation:req-a");
	ck_assert(lv_head_read("p.txt", head, sizeof(head)));
	ck_assert_str_ne(head, "after\n");
	ck_assert_uint_ge(lv_delta_entries(lv.v), 1);
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert(lv_head_read("p.txt", head, sizeof(head)));
	ck_assert_str_eq(head, "after\n");
	pv_blame_is("p.txt", "operation:req-a");
	lv_check_clean("s1");
}
END_TEST

/* A child writes and is SIGKILLed right after the write returned: the reopened view has it. */
START_TEST(test_kill_after_write)
{
	struct eos_error err = { 0 };
	struct eos_view *v;
	char buf[256];
	int status;
	pid_t pid;

	eos_store_close(st);
	st = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct eos_view_options o = { .sandbox = SBX, .session = "s1", .create = true };
		struct eos_view *cv = NULL;
		int r = eos_store_open(store_dir, NULL, &o.store, &err);

		r = r ?: eos_view_open(&o, &cv, &err);
		r = r
			    ?: eos_view_path_write(cv, "k/killed.txt", "survives\n", 9,
						   "operation:req-k", EOS_VIEW_WRITE_PARENTS, &err);
		r = r
			    ?: eos_view_path_write(cv, "a.txt", "replaced\n", 9, "operation:req-k",
						   0, &err);
		if (r == 0)
			kill(getpid(), SIGKILL);
		fprintf(stderr, "child: %s\n", err.msg);
		_exit(2);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_ok(eos_store_open(store_dir, NULL, &st, &err), err);
	v = lv_view_open("s1", false);
	ck_assert_str_eq(pv_read(v, "k/killed.txt", buf, sizeof(buf)), "survives\n");
	ck_assert_str_eq(pv_read(v, "a.txt", buf, sizeof(buf)), "replaced\n");
	eos_view_close(v);
	lv_check_clean("s1");
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("view-paths");
	TCase *tc = tcase_create("paths");

	tcase_add_checked_fixture(tc, lv_setup, lv_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_read_write_list_stat);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_write_keeps_xattrs_drops_temps);
	tcase_add_test(tc, test_blame_after_publish);
	tcase_add_test(tc, test_mount_sees_writes);
	tcase_add_test(tc, test_write_through_live_publish);
	tcase_add_test(tc, test_kill_after_write);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(suite());
}
