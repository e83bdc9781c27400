/* SPDX-License-Identifier: MIT */
/*
 * Publishing a mounted session in place (eos_view_publish_live): a real store, a real FUSE mount
 * served in-process, and plain syscalls on the mount (the test thread and a writer thread), as a
 * process using the session would. A crash test re-executes this binary as a child that mounts,
 * writes and publishes with a failpoint armed to SIGKILL it, then checks that either outcome is
 * complete and the store and the session check clean.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
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

/* A file kept open and written through a live publish: merged bytes on the next read, the
 * session empty on the new head, later writes land in the new delta and publish again. */
START_TEST(test_open_file_survives_publish)
{
	static char buf[1 << 20], buf2[1 << 20];
	struct appender ap;
	int fd;

	lv_start("s1");
	fd = lv_mnt_open("a.txt", O_RDWR);
	ck_assert_int_eq(pwrite(fd, "LINE1", 5, 0), 5);
	lv_appender_start(&ap, "log.txt");
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(eos_view_version(lv.v), lv_head_of());
	ck_assert(lv_head_read("a.txt", buf, sizeof(buf)));
	ck_assert_str_eq(buf, "LINE1\nline2\nline3\nline4\nline5\n");
	ck_assert_str_eq(lv_fd_read(fd, buf, sizeof(buf)), "LINE1\nline2\nline3\nline4\nline5\n");
	ck_assert_str_eq(lv_mnt_read("a.txt", buf, sizeof(buf)),
			 "LINE1\nline2\nline3\nline4\nline5\n");
	/* later writes: the new delta, published again */
	ck_assert_int_eq(pwrite(fd, "LINE2", 5, 6), 5);
	ck_assert_str_eq(lv_fd_read(fd, buf, sizeof(buf)), "LINE1\nLINE2\nline3\nline4\nline5\n");
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert(lv_head_read("a.txt", buf, sizeof(buf)));
	ck_assert_str_eq(buf, "LINE1\nLINE2\nline3\nline4\nline5\n");
	close(fd);
	lv_appender_stop(&ap);
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(lv_delta_entries(lv.v), 0);
	ck_assert(lv_head_read("log.txt", buf, sizeof(buf)));
	lv_appender_check(&ap, buf);
	ck_assert_str_eq(lv_mnt_read("log.txt", buf2, sizeof(buf2)), buf);
}
END_TEST

/*
 * Files open without an OPEN (doc/fs.md, "Caching"): the mount answers its first OPEN, CREATE and
 * FLUSH with ENOSYS and sees none of them again, nor a RELEASE (new files come by MKNOD); reads
 * and writes do what they do on ext4, open(O_TRUNC) truncates (a SETATTR), and a read of cached
 * pages asks nothing.
 */
START_TEST(test_files_open_without_open)
{
	char buf[256];
	uint64_t reads;
	int fd;

	lv_start("s1");
	ck_assert_str_eq(lv_mnt_read("a.txt", buf, sizeof(buf)), BASE_A);
	reads = eos_view_mount_requests(lv.m, FUSE_READ);
	ck_assert_uint_ge(reads, 1);
	ck_assert_str_eq(lv_mnt_read("a.txt", buf, sizeof(buf)), BASE_A);
	ck_assert_uint_eq(eos_view_mount_requests(lv.m, FUSE_READ), reads);
	fd = lv_mnt_open("a.txt", O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, "short\n", 6), 6);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_str_eq(lv_mnt_read("a.txt", buf, sizeof(buf)), "short\n");
	fd = lv_mnt_open("a.txt", O_RDWR);
	ck_assert_int_eq(pwrite(fd, "S", 1, 0), 1);
	ck_assert_str_eq(lv_fd_read(fd, buf, sizeof(buf)), "Short\n");
	ck_assert_int_eq(close(fd), 0);
	lv_mnt_write("new1.txt", "one\n");
	lv_mnt_write("new2.txt", "two\n");
	ck_assert_str_eq(lv_mnt_read("new2.txt", buf, sizeof(buf)), "two\n");
	ck_assert_uint_eq(eos_view_mount_requests(lv.m, FUSE_CREATE), 1);
	ck_assert_uint_eq(eos_view_mount_requests(lv.m, FUSE_MKNOD), 2);
	ck_assert_uint_eq(eos_view_mount_requests(lv.m, FUSE_OPEN), 1);
	ck_assert_uint_eq(eos_view_mount_requests(lv.m, FUSE_FLUSH), 1);
	ck_assert_uint_eq(eos_view_mount_requests(lv.m, FUSE_RELEASE), 0);
	ck_assert_uint_ge(eos_view_mount_requests(lv.m, FUSE_SETATTR), 1);
	ck_assert(lv_head_read("a.txt", buf, sizeof(buf)));
	ck_assert_str_eq(buf, BASE_A); /* nothing published: the head is as it was */
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert(lv_head_read("a.txt", buf, sizeof(buf)));
	ck_assert_str_eq(buf, "Short\n");
	ck_assert(lv_head_read("new1.txt", buf, sizeof(buf)));
	ck_assert_str_eq(buf, "one\n");
}
END_TEST

/* Nothing changed: the session's delta is as before and published later as it is. */
START_TEST(test_rejected_keeps_session)
{
	char buf[256];
	uint64_t version;

	lv_start("s1");
	lv_mnt_write("a.txt", "mine\n");
	lv_mnt_write("new.txt", "new\n");
	lv_other_publishes("s2", "a.txt", "theirs\n");
	version = eos_view_version(lv.v);
	ck_assert_uint_eq(lv_delta_entries(lv.v), 2);
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_REJECTED);
	ck_assert_uint_eq(eos_view_version(lv.v), version);
	ck_assert_uint_eq(lv_delta_entries(lv.v), 2);
	ck_assert_str_eq(lv_mnt_read("a.txt", buf, sizeof(buf)), "mine\n");
	ck_assert_str_eq(lv_mnt_read("new.txt", buf, sizeof(buf)), "new\n");
	ck_assert(!lv_head_read("new.txt", buf, sizeof(buf)));
	lv_mnt_write("more.txt", "more\n"); /* still writable */
	ck_assert_str_eq(lv_mnt_read("more.txt", buf, sizeof(buf)), "more\n");
	ck_assert_uint_eq(lv_delta_entries(lv.v), 3);
}
END_TEST

/* Another session changed other lines of the file and created a file: the view shows both. */
START_TEST(test_merge_shows_merged_file)
{
	char buf[256];
	int fd;

	lv_start("s1");
	ck_assert(!lv_mnt_exists("theirs.txt")); /* the kernel now caches its absence */
	fd = lv_mnt_open("a.txt", O_RDWR);
	ck_assert_int_eq(pwrite(fd, "MINE1", 5, 0), 5);
	ck_assert_str_eq(lv_fd_read(fd, buf, sizeof(buf)), "MINE1\nline2\nline3\nline4\nline5\n");
	lv_other_publishes("s2", "a.txt", "line1\nline2\nline3\nline4\nTHEIR5\n");
	lv_other_publishes("s3", "theirs.txt", "theirs\n");
	ck_assert(lv_mnt_exists("dir/b.txt")); /* the kernel now caches it */
	lv_other_removes("s4", "dir", "b.txt");
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert(!lv_mnt_exists("dir/b.txt"));
	ck_assert_str_eq(lv_fd_read(fd, buf, sizeof(buf)), "MINE1\nline2\nline3\nline4\nTHEIR5\n");
	ck_assert_str_eq(lv_mnt_read("a.txt", buf, sizeof(buf)),
			 "MINE1\nline2\nline3\nline4\nTHEIR5\n");
	ck_assert_str_eq(lv_mnt_read("theirs.txt", buf, sizeof(buf)), "theirs\n");
	ck_assert_uint_eq(lv_delta_entries(lv.v), 0);
	close(fd);
}
END_TEST

#if EOS_FAILPOINTS_COMPILED
/* The view cannot follow a committed publish: it refuses changes, writes nothing, and the
 * session reopens empty on the new head. */
START_TEST(test_reset_failure_breaks_view)
{
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	cleanup_free char *p = NULL;
	char buf[256];
	int r;

	lv_start("s1");
	lv_mnt_write("a.txt", "mine\n");
	ck_assert_int_eq(eos_failpoint_arm("view.reset", -EIO), 0);
	r = eos_view_publish_live(lv.v, lv.m, NULL, &res, &err);
	eos_failpoint_arm("view.reset", 0);
	ck_assert_int_eq(r, -EIO);
	ck_assert_int_eq(res.status, EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
	p = lv_mnt_path("b.txt");
	ck_assert_int_lt(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644), 0);
	ck_assert_int_eq(errno, EIO);
	ck_assert_str_eq(lv_mnt_read("a.txt", buf, sizeof(buf)), "mine\n"); /* reads go on */
	ck_assert_int_eq(eos_view_publish_live(lv.v, lv.m, NULL, &res, NULL), -EIO);
	lv_stop();
	lv_check_clean("s1");
	lv.v = lv_view_open("s1", false);
	ck_assert_uint_eq(eos_view_version(lv.v), lv_head_of());
	ck_assert_uint_eq(lv_delta_entries(lv.v), 0);
	ck_assert_str_eq(tv_read_all(lv.v, "a.txt", buf, sizeof(buf)), "mine\n");
	eos_view_close(lv.v);
	lv.v = NULL;
}
END_TEST

static void
add_failpoint_tests(TCase *tc)
{
	tcase_add_test(tc, test_reset_failure_breaks_view);
}
#else
static void
add_failpoint_tests(TCase *tc)
{
	(void)tc;
}
#endif

/* A hard-linked file written through one name: both names show the bytes after the reset. */
START_TEST(test_hard_links)
{
	cleanup_free char *p1 = NULL, *p2 = NULL;
	struct stat s1, s2;
	char buf[256];
	int fd;

	lv_start("s1");
	p1 = lv_mnt_path("links/h1");
	p2 = lv_mnt_path("links/h2");
	fd = lv_mnt_open("links/h1", O_RDWR);
	ck_assert_int_eq(pwrite(fd, "LINKED", 6, 0), 6);
	ck_assert_str_eq(lv_mnt_read("links/h2", buf, sizeof(buf)), "LINKED\n");
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert(lv_head_read("links/h2", buf, sizeof(buf)));
	ck_assert_str_eq(buf, "LINKED\n");
	ck_assert_str_eq(lv_mnt_read("links/h2", buf, sizeof(buf)), "LINKED\n");
	ck_assert_int_eq(pwrite(fd, "linked", 6, 0), 6);
	ck_assert_str_eq(lv_mnt_read("links/h2", buf, sizeof(buf)), "linked\n");
	close(fd);
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert(lv_head_read("links/h1", buf, sizeof(buf)));
	ck_assert_str_eq(buf, "linked\n");
	ck_assert_int_eq(lstat(p1, &s1), 0);
	ck_assert_int_eq(lstat(p2, &s2), 0);
	ck_assert_uint_eq(s1.st_ino, s2.st_ino);
	ck_assert_uint_eq(s1.st_nlink, 2);
}
END_TEST

/* With the writeback cache: the kernel's cached writes join the publish. */
START_TEST(test_writeback_publish)
{
	char buf[256];
	int fd;

	lv_writeback = true;
	lv_start("s1");
	fd = lv_mnt_open("a.txt", O_RDWR);
	ck_assert_int_eq(pwrite(fd, "CACHE", 5, 0), 5);
	lv_other_publishes("s2", "z.txt", "z\n");
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert(lv_head_read("a.txt", buf, sizeof(buf)));
	ck_assert_str_eq(buf, "CACHE\nline2\nline3\nline4\nline5\n");
	ck_assert_str_eq(lv_fd_read(fd, buf, sizeof(buf)), "CACHE\nline2\nline3\nline4\nline5\n");
	ck_assert_int_eq(pwrite(fd, "AGAIN", 5, 6), 5);
	close(fd);
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert(lv_head_read("a.txt", buf, sizeof(buf)));
	ck_assert_str_eq(buf, "CACHE\nAGAIN\nline3\nline4\nline5\n");
}
END_TEST

/* The view mounted twice: the kernel's caches of both mounts are invalidated. */
START_TEST(test_two_mounts)
{
	cleanup_free char *mnt2 = eos_test_tmpdir("live-mnt2"), *p = NULL;
	struct eos_view_mount *m2 = NULL;
	struct eos_error err = { 0 };
	pthread_t server2;
	char buf[256];
	int fd;

	lv_start("s1");
	ck_ok(eos_view_mount(lv.v, mnt2, NULL, &m2, &err), err);
	ck_assert_int_eq(pthread_create(&server2, NULL, lv_serve_main, m2), 0);
	ck_assert_int_ge(asprintf(&p, "%s/a.txt", mnt2), 0);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_str_eq(lv_fd_read(fd, buf, sizeof(buf)), BASE_A); /* cached by mount 2 */
	lv_mnt_write("new.txt", "new\n");
	lv_other_publishes("s2", "a.txt", "line1\nline2\nline3\nline4\nTHEIR5\n");
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert_str_eq(lv_fd_read(fd, buf, sizeof(buf)), "line1\nline2\nline3\nline4\nTHEIR5\n");
	close(fd);
	free(p);
	ck_assert_int_ge(asprintf(&p, "%s/new.txt", mnt2), 0);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_str_eq(lv_fd_read(fd, buf, sizeof(buf)), "new\n");
	close(fd);
	eos_view_mount_stop(m2);
	pthread_join(server2, NULL);
	eos_view_mount_free(m2);
	rmdir(mnt2);
}
END_TEST

static size_t
list_names(const char *rel, char *out, size_t size)
{
	cleanup_free char *p = lv_mnt_path(rel);
	DIR *d = opendir(p);
	struct dirent *e;
	size_t n = 0;

	ck_assert_ptr_nonnull(d);
	out[0] = 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			strncat(out, e->d_name, size - strlen(out) - 2);
			strcat(out, " ");
			n++;
		}
	closedir(d);
	return n;
}

/* Deletes, renames and new directories, seen through the mount after the reset. */
START_TEST(test_namespace_after_reset)
{
	cleanup_free char *c = NULL, *d1 = NULL, *d2 = NULL, *nd = NULL;
	char buf[256];

	lv_start("s1");
	c = lv_mnt_path("old/c.txt");
	d1 = lv_mnt_path("dir");
	d2 = lv_mnt_path("dir2");
	nd = lv_mnt_path("newdir");
	ck_assert_int_eq(unlink(c), 0);
	ck_assert_int_eq(rename(d1, d2), 0);
	ck_assert_int_eq(mkdir(nd, 0755), 0);
	lv_mnt_write("newdir/f.txt", "f\n");
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(lv_delta_entries(lv.v), 0);
	ck_assert(!lv_mnt_exists("old/c.txt"));
	ck_assert(!lv_mnt_exists("dir"));
	ck_assert_str_eq(lv_mnt_read("dir2/b.txt", buf, sizeof(buf)), "bee\n");
	ck_assert_str_eq(lv_mnt_read("newdir/f.txt", buf, sizeof(buf)), "f\n");
	ck_assert_uint_eq(list_names("", buf, sizeof(buf)), 5);
	ck_assert(strstr(buf, "dir2 ") && strstr(buf, "newdir ") && strstr(buf, "old "));
	ck_assert_uint_eq(list_names("old", buf, sizeof(buf)), 0);
	ck_assert(lv_head_read("dir2/b.txt", buf, sizeof(buf)));
	ck_assert(!lv_head_read("dir/b.txt", buf, sizeof(buf)));
	/* the names work on in the new delta */
	ck_assert_int_eq(rename(d2, d1), 0);
	ck_assert_int_eq(rmdir(c) == 0 ? 0 : errno, ENOENT);
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	ck_assert(lv_head_read("dir/b.txt", buf, sizeof(buf)));
	ck_assert_str_eq(lv_mnt_read("dir/b.txt", buf, sizeof(buf)), "bee\n");
}
END_TEST

/*
 * A directory the kernel holds through a live publish (here an open descriptor; a working
 * directory does the same): a file first looked up in it afterwards shares an origin path that
 * knows the directory's entry at the new version, so that its own entry is one lookup below the
 * directory's (fs/node.c, origin_stat) as before the publish, not a walk from the root.
 */
START_TEST(test_lookup_after_reset_knows_directory)
{
	cleanup_free char *dir_path = NULL;
	cleanup_close int dfd = -1;
	struct eos_node *dir, *e;
	struct stat sb;
	char buf[64];

	lv_start("s1");
	dir_path = lv_mnt_path("dir");
	dfd = open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	ck_assert_str_eq(lv_mnt_read("dir/b.txt", buf, sizeof(buf)), "bee\n");
	ck_assert_int_eq(fstat(dfd, &sb), 0);
	dir = eos_node_get(lv.v, sb.st_ino);
	ck_assert_ptr_nonnull(dir);
	ck_assert_ptr_nonnull(dir->x->kids);
	ck_assert_uint_eq(dir->x->kids->version, lv.v->version);
	lv_mnt_write("a.txt", "changed\n");
	ck_assert_int_eq(lv_publish(), EOS_PUBLISH_PUBLISHED);
	/* the same node: the kernel held it */
	ck_assert_ptr_eq(eos_node_get(lv.v, sb.st_ino), dir);
	ck_assert_int_eq(fstatat(dfd, "e.txt", &sb, 0), 0);
	e = eos_node_get(lv.v, sb.st_ino);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(eos_node_odir(e));
	ck_assert_str_eq(eos_node_odir(e)->path, "dir");
	ck_assert_uint_eq(eos_node_odir(e)->version, lv.v->version);
	ck_assert_uint_eq(eos_node_odir(e)->floor, dir->x->lst->floor);
	ck_assert_str_eq(lv_mnt_read("dir/e.txt", buf, sizeof(buf)), "eee\n");
	ck_assert_str_eq(lv_mnt_read("dir/b.txt", buf, sizeof(buf)), "bee\n");
}
END_TEST

/* --- kill -9 during a live publish ------------------------------------------------------------ */

/* Where the child is killed, and whether the publish is in the store by then. */
static const struct {
	const char *failpoint;
	bool published;
} CRASHES[] = {
	{ "publish_live.prepared", false }, { "publish.before_write", false },
	{ "commit.before_write", false },   { "publish_live.committed", true },
	{ "publish_live.reset", true },
};

/* The child (this binary re-executed, EOS_FAILPOINTS set): mount, change, publish, be killed.
 * Check's assertions do not work outside a test: failures are reported on stderr. */
static int
crash_fail(const char *what, const struct eos_error *err, int r)
{
	fprintf(stderr, "crash child: %s: %s\n", what,
		err ? eos_error_message(err, r) : strerror(errno));
	return 2;
}

static int
crash_child(const char *dir, const char *mnt)
{
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	char path[4096];
	int fd, r;

	if (lv_child_mount(dir, mnt) < 0)
		return 2;
	snprintf(path, sizeof(path), "%s/a.txt", mnt);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || pwrite(fd, "CRASH", 5, 0) != 5)
		return crash_fail("write a.txt", NULL, 0);
	snprintf(path, sizeof(path), "%s/new.txt", mnt);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, "new\n", 4) != 4)
		return crash_fail("write new.txt", NULL, 0);
	r = eos_view_publish_live(lv.v, lv.m, NULL, &res, &err);
	return r < 0 ? crash_fail("publish", &err, r) : 3; /* not killed */
}

/* Killed at any step: either the publish is complete and the session empty on the new head, or
 * nothing is published and the session holds every acknowledged change. */
START_TEST(test_kill_during_publish)
{
	cleanup_free char *mnt = eos_test_tmpdir("live-crash");
	struct eos_session_info info;
	struct eos_error err = { 0 };
	char buf[256];
	struct eos_view *v;

	eos_store_close(st);
	lv_run_child(CRASHES[_i].failpoint, "crash-child", mnt);
	ck_ok(eos_store_open(store_dir, NULL, &st, &err), err);
	lv_check_clean("s1");
	ck_ok(eos_store_session_get(st, SBX, "s1", &info, &err), err);
	ck_assert_uint_eq(info.version, lv_head_of());
	ck_assert_uint_eq(lv_head_of(), CRASHES[_i].published ? 2 : 1);
	v = lv_view_open("s1", false);
	ck_assert_str_eq(tv_read_all(v, "a.txt", buf, sizeof(buf)),
			 "CRASH\nline2\nline3\nline4\nline5\n");
	ck_assert_str_eq(tv_read_all(v, "new.txt", buf, sizeof(buf)), "new\n");
	ck_assert_uint_eq(lv_delta_entries(v), CRASHES[_i].published ? 0 : 2);
	eos_view_close(v);
	ck_assert(lv_head_read("new.txt", buf, sizeof(buf)) == CRASHES[_i].published);
	lv_check_clean("s1");
	rmdir(mnt);
}
END_TEST

/*
 * The child for kills at random moments: mount s1, say so on fd 3, then publish live over and
 * over until killed. The writer is the parent: a process killed while it waits on its own
 * mount's answer would never exit (the thread that was to answer is gone).
 */
static int
loop_child(const char *dir, const char *mnt)
{
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	int r;

	if (lv_child_mount(dir, mnt) < 0 || write(3, "m", 1) != 1)
		return 2;
	for (;;) {
		if ((r = eos_view_publish_live(lv.v, lv.m, NULL, &res, &err)) < 0)
			return crash_fail("publish", &err, r);
		eos_publish_result_release(&res);
	}
}

/* Start the loop child, append `lines` lines through its mount, kill it (wherever its publishes
 * are by then). Returns the number of lines the file has now, every one acknowledged. */
static size_t
append_then_kill(const char *mnt, unsigned lines)
{
	cleanup_free char *path = NULL;
	int p[2], status, fd;
	struct stat s;
	char c;
	pid_t pid;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(p[1], 3); /* without O_CLOEXEC: the exec'd child writes to it */
		execl("/proc/self/exe", "loop-child", "loop-child", store_dir, mnt, NULL);
		_exit(127);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &c, 1), 1); /* mounted */
	close(p[0]);
	ck_assert_int_ge(asprintf(&path, "%s/log.txt", mnt), 0);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &s), 0);
	for (unsigned i = 0; i < lines; i++) {
		char line[32];

		snprintf(line, sizeof(line), "w%06u\n", (unsigned)(s.st_size / 8) + i);
		ck_assert_int_eq(write(fd, line, 8), 8);
	}
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	close(fd);
	lv_unmount_dead(mnt);
	ck_assert_msg(WIFSIGNALED(status), "the loop child exited with status %d", status);
	return (size_t)s.st_size / 8 + lines;
}

/* Killed wherever its publishes are (staging, committing, resetting, invalidating): every
 * acknowledged line is in the session's view, in order, after each of several kills. */
START_TEST(test_kill_at_random_moments)
{
	static const unsigned LINES[] = { 7, 40, 23, 90 };
	cleanup_free char *mnt = eos_test_tmpdir("live-loop");
	static char buf[1 << 16];
	struct eos_error err = { 0 };

	for (size_t k = 0; k < EOS_ARRAY_SIZE(LINES); k++) {
		struct eos_view *v;
		size_t acked, len;

		eos_store_close(st);
		acked = append_then_kill(mnt, LINES[k]);
		ck_ok(eos_store_open(store_dir, NULL, &st, &err), err);
		v = lv_view_open("s1", false);
		len = strlen(tv_read_all(v, "log.txt", buf, sizeof(buf)));
		eos_view_close(v);
		ck_assert_msg(len == acked * 8, "kill %zu: %zu bytes, %zu lines acknowledged", k,
			      len, acked);
		for (size_t n = 0; n < acked; n++) {
			char line[32];

			snprintf(line, sizeof(line), "w%06zu\n", n);
			ck_assert_msg(memcmp(buf + n * 8, line, 8) == 0, "line %zu is lost", n);
		}
	}
	lv_check_clean("s1");
	rmdir(mnt);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("publish-live");
	TCase *tc = tcase_create("live");

	tcase_add_checked_fixture(tc, lv_setup, lv_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_files_open_without_open);
	tcase_add_test(tc, test_open_file_survives_publish);
	tcase_add_test(tc, test_rejected_keeps_session);
	tcase_add_test(tc, test_merge_shows_merged_file);
	tcase_add_test(tc, test_namespace_after_reset);
	tcase_add_test(tc, test_lookup_after_reset_knows_directory);
	tcase_add_test(tc, test_writeback_publish);
	tcase_add_test(tc, test_hard_links);
	add_failpoint_tests(tc);
	tcase_add_test(tc, test_two_mounts);
	tcase_add_test(tc, test_kill_at_random_moments);
	if (EOS_FAILPOINTS_COMPILED)
		tcase_add_loop_test(tc, test_kill_during_publish, 0, (int)EOS_ARRAY_SIZE(CRASHES));
	suite_add_tcase(s, tc);
	return s;
}

int
main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "crash-child") == 0)
		return crash_child(argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "loop-child") == 0)
		return loop_child(argv[2], argv[3]);
	return eos_test_run(suite());
}
