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
#include "tests/unit/testutil.h"
#include "tests/unit/view-util.h"

static const char SBX[] = "sbx";
static const char BASE_A[] = "line1\nline2\nline3\nline4\nline5\n";

#define ck_ok(r, err) \
	ck_assert_msg((r) >= 0, "line %d: %s", __LINE__, eos_error_message(&(err), (r)))

static char *store_dir;
static struct eos_store *st;

/* A session view mounted in-process and served by one thread. */
struct live {
	struct eos_view *v;
	struct eos_view_mount *m;
	pthread_t server;
	char *mnt;
};

static struct live lv;

static void
src_file(const char *src, const char *rel, const char *text)
{
	cleanup_free char *path = NULL;

	ck_assert_int_ge(asprintf(&path, "%s/%s", src, rel), 0);
	eos_test_write_file(path, text, strlen(text), 0644);
}

static void
import_base(void)
{
	cleanup_free char *src = eos_test_tmpdir("live-src");
	struct eos_import_options io = { .sandbox = SBX, .threads = 1 };
	struct eos_error err = { 0 };
	struct eos_import_result ir;
	int r;

	src_file(src, "a.txt", BASE_A);
	src_file(src, "dir/b.txt", "bee\n");
	src_file(src, "old/c.txt", "c\n");
	r = eos_store_import(st, src, &io, &ir, &err);
	ck_ok(r, err);
	eos_test_rm_rf(src);
}

static struct eos_view *
view_open(const char *session, bool inspect)
{
	struct eos_view_options o = {
		.store = st, .sandbox = SBX, .session = session, .create = true, .inspect = inspect
	};
	struct eos_error err = { 0 };
	struct eos_view *v = NULL;
	int r = eos_view_open(&o, &v, &err);

	ck_ok(r, err);
	return v;
}

static void *
serve_main(void *arg)
{
	struct eos_view_mount *m = arg;

	eos_view_mount_serve(m, NULL);
	return NULL;
}

static void
live_start(const char *session)
{
	struct eos_error err = { 0 };
	int r;

	lv.v = view_open(session, false);
	lv.mnt = eos_test_tmpdir("live-mnt");
	r = eos_view_mount(lv.v, lv.mnt, NULL, &lv.m, &err);
	ck_ok(r, err);
	ck_assert_int_eq(pthread_create(&lv.server, NULL, serve_main, lv.m), 0);
}

static void
live_stop(void)
{
	if (!lv.m)
		return;
	eos_view_mount_stop(lv.m);
	pthread_join(lv.server, NULL);
	eos_view_mount_free(lv.m);
	eos_view_close(lv.v);
	rmdir(lv.mnt);
	free(lv.mnt);
	lv = (struct live){ 0 };
}

static void
setup(void)
{
	st = eos_test_store_new(&store_dir);
	import_base();
}

static void
teardown(void)
{
	live_stop();
	eos_store_close(st);
	eos_test_rm_rf(store_dir);
	free(store_dir);
}

/* --- helpers ---------------------------------------------------------------------------------- */

static char *
mnt_path(const char *rel)
{
	char *p = NULL;

	ck_assert_int_ge(asprintf(&p, "%s/%s", lv.mnt, rel), 0);
	return p;
}

static int
mnt_open(const char *rel, int flags)
{
	cleanup_free char *p = mnt_path(rel);
	int fd = open(p, flags | O_CLOEXEC, 0644);

	ck_assert_msg(fd >= 0, "open '%s': %s", p, strerror(errno));
	return fd;
}

/* The whole file at fd from offset 0, NUL-terminated into buf. */
static const char *
fd_read(int fd, char *buf, size_t size)
{
	ssize_t got = pread(fd, buf, size - 1, 0);

	ck_assert_msg(got >= 0, "pread: %s", strerror(errno));
	buf[got] = 0;
	return buf;
}

static const char *
mnt_read(const char *rel, char *buf, size_t size)
{
	cleanup_close int fd = mnt_open(rel, O_RDONLY);

	return fd_read(fd, buf, size);
}

static void
mnt_write(const char *rel, const char *text)
{
	cleanup_close int fd = mnt_open(rel, O_WRONLY | O_CREAT | O_TRUNC);

	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
}

static bool
mnt_exists(const char *rel)
{
	cleanup_free char *p = mnt_path(rel);
	struct stat s;

	return lstat(p, &s) == 0;
}

static uint64_t
head_of(void)
{
	struct eos_sandbox_info info;
	struct eos_error err = { 0 };
	int r = eos_store_sandbox_get(st, SBX, &info, &err);

	ck_ok(r, err);
	return info.head;
}

/* The content of path at the head, NUL-terminated into buf ("" and false when absent). */
static bool
head_read(const char *path, char *buf, size_t size)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	ssize_t got;

	buf[0] = 0;
	if (eos_store_file_open(st, SBX, head_of(), path, &f, NULL) < 0)
		return false;
	got = eos_file_pread(f, buf, size - 1, 0, NULL);
	ck_assert_int_ge(got, 0);
	buf[got] = 0;
	return true;
}

static int
count_one(void *ctx, const struct eos_delta_entry *e)
{
	(void)e;
	(*(size_t *)ctx)++;
	return 0;
}

static size_t
delta_entries(struct eos_view *v)
{
	struct eos_error err = { 0 };
	size_t n = 0;
	int r = eos_view_delta(v, count_one, &n, &err);

	ck_ok(r, err);
	return n;
}

static enum eos_publish_status
publish_live(void)
{
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	int r = eos_view_publish_live(lv.v, lv.m, NULL, &res, &err);
	enum eos_publish_status s;

	ck_ok(r, err);
	s = res.status;
	eos_publish_result_release(&res);
	return s;
}

/* Session name sets path's content to text through the view's operations, then publishes. */
static void
other_publishes(const char *name, const char *path, const char *text)
{
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	struct eos_view *v = view_open(name, false);
	struct eos_ctx c = tv_ctx_of(PID_SESSION);
	struct eos_handle *h = NULL;
	struct eos_node *n = NULL;
	int r;

	if (eos_fs_lookup(v, tv_root(v), path, &n) < 0)
		n = tv_make(v, "", path, S_IFREG | 0644, NULL);
	ck_rc(eos_fs_open(v, &c, n, O_WRONLY | O_TRUNC, &h), 0);
	ck_rc(eos_fs_write(v, h, text, strlen(text), 0), strlen(text));
	ck_rc(eos_fs_release(v, h), 0);
	eos_view_close(v);
	r = eos_view_publish(st, SBX, name, NULL, &res, &err);
	ck_ok(r, err);
	ck_assert_int_eq(res.status, EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
}

/* A process appending lines to a file of the mount for as long as the test runs. */
struct appender {
	pthread_t thread;
	atomic_bool stop;
	atomic_uint lines;
	int fd;
	int failed; /* errno of a failed or short write */
};

static void *
append_main(void *arg)
{
	struct appender *a = arg;

	while (!atomic_load(&a->stop)) {
		char line[32];
		int len = snprintf(line, sizeof(line), "w%06u\n", atomic_load(&a->lines));

		if (write(a->fd, line, (size_t)len) != len) {
			a->failed = errno ? errno : EIO;
			break;
		}
		atomic_fetch_add(&a->lines, 1);
	}
	return NULL;
}

static void
appender_start(struct appender *a, const char *rel)
{
	*a = (struct appender){ .fd = mnt_open(rel, O_WRONLY | O_CREAT | O_APPEND) };
	ck_assert_int_eq(pthread_create(&a->thread, NULL, append_main, a), 0);
	while (atomic_load(&a->lines) < 10)
		usleep(1000);
}

/* Stop; every line written is in text, in order. */
static void
appender_stop(struct appender *a)
{
	atomic_store(&a->stop, true);
	pthread_join(a->thread, NULL);
	close(a->fd);
	ck_assert_msg(a->failed == 0, "a write failed: %s", strerror(a->failed));
}

static void
appender_check(const struct appender *a, const char *text)
{
	unsigned n = atomic_load(&a->lines);

	ck_assert_uint_eq(strlen(text), (size_t)n * 8);
	for (unsigned i = 0; i < n; i++) {
		char line[32];

		snprintf(line, sizeof(line), "w%06u\n", i);
		ck_assert_msg(memcmp(text + (size_t)i * 8, line, 8) == 0, "line %u is lost", i);
	}
}

/* --- tests ------------------------------------------------------------------------------------ */

/* A file kept open and written through a live publish: merged bytes on the next read, the
 * session empty on the new head, later writes land in the new delta and publish again. */
START_TEST(test_open_file_survives_publish)
{
	static char buf[1 << 20], buf2[1 << 20];
	struct appender ap;
	int fd;

	live_start("s1");
	fd = mnt_open("a.txt", O_RDWR);
	ck_assert_int_eq(pwrite(fd, "LINE1", 5, 0), 5);
	appender_start(&ap, "log.txt");
	ck_assert_int_eq(publish_live(), EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(eos_view_version(lv.v), head_of());
	ck_assert(head_read("a.txt", buf, sizeof(buf)));
	ck_assert_str_eq(buf, "LINE1\nline2\nline3\nline4\nline5\n");
	ck_assert_str_eq(fd_read(fd, buf, sizeof(buf)), "LINE1\nline2\nline3\nline4\nline5\n");
	ck_assert_str_eq(mnt_read("a.txt", buf, sizeof(buf)),
			 "LINE1\nline2\nline3\nline4\nline5\n");
	/* later writes: the new delta, published again */
	ck_assert_int_eq(pwrite(fd, "LINE2", 5, 6), 5);
	ck_assert_str_eq(fd_read(fd, buf, sizeof(buf)), "LINE1\nLINE2\nline3\nline4\nline5\n");
	ck_assert_int_eq(publish_live(), EOS_PUBLISH_PUBLISHED);
	ck_assert(head_read("a.txt", buf, sizeof(buf)));
	ck_assert_str_eq(buf, "LINE1\nLINE2\nline3\nline4\nline5\n");
	close(fd);
	appender_stop(&ap);
	ck_assert_int_eq(publish_live(), EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(delta_entries(lv.v), 0);
	ck_assert(head_read("log.txt", buf, sizeof(buf)));
	appender_check(&ap, buf);
	ck_assert_str_eq(mnt_read("log.txt", buf2, sizeof(buf2)), buf);
}
END_TEST

/* Nothing changed: the session's delta is as before and published later as it is. */
START_TEST(test_rejected_keeps_session)
{
	char buf[256];
	uint64_t version;

	live_start("s1");
	mnt_write("a.txt", "mine\n");
	mnt_write("new.txt", "new\n");
	other_publishes("s2", "a.txt", "theirs\n");
	version = eos_view_version(lv.v);
	ck_assert_uint_eq(delta_entries(lv.v), 2);
	ck_assert_int_eq(publish_live(), EOS_PUBLISH_REJECTED);
	ck_assert_uint_eq(eos_view_version(lv.v), version);
	ck_assert_uint_eq(delta_entries(lv.v), 2);
	ck_assert_str_eq(mnt_read("a.txt", buf, sizeof(buf)), "mine\n");
	ck_assert_str_eq(mnt_read("new.txt", buf, sizeof(buf)), "new\n");
	ck_assert(!head_read("new.txt", buf, sizeof(buf)));
	mnt_write("more.txt", "more\n"); /* still writable */
	ck_assert_str_eq(mnt_read("more.txt", buf, sizeof(buf)), "more\n");
	ck_assert_uint_eq(delta_entries(lv.v), 3);
}
END_TEST

/* Another session changed other lines of the file and created a file: the view shows both. */
START_TEST(test_merge_shows_merged_file)
{
	char buf[256];
	int fd;

	live_start("s1");
	ck_assert(!mnt_exists("theirs.txt")); /* the kernel now caches its absence */
	fd = mnt_open("a.txt", O_RDWR);
	ck_assert_int_eq(pwrite(fd, "MINE1", 5, 0), 5);
	ck_assert_str_eq(fd_read(fd, buf, sizeof(buf)), "MINE1\nline2\nline3\nline4\nline5\n");
	other_publishes("s2", "a.txt", "line1\nline2\nline3\nline4\nTHEIR5\n");
	other_publishes("s3", "theirs.txt", "theirs\n");
	ck_assert_int_eq(publish_live(), EOS_PUBLISH_PUBLISHED);
	ck_assert_str_eq(fd_read(fd, buf, sizeof(buf)), "MINE1\nline2\nline3\nline4\nTHEIR5\n");
	ck_assert_str_eq(mnt_read("a.txt", buf, sizeof(buf)),
			 "MINE1\nline2\nline3\nline4\nTHEIR5\n");
	ck_assert_str_eq(mnt_read("theirs.txt", buf, sizeof(buf)), "theirs\n");
	ck_assert_uint_eq(delta_entries(lv.v), 0);
	close(fd);
}
END_TEST

static size_t
list_names(const char *rel, char *out, size_t size)
{
	cleanup_free char *p = mnt_path(rel);
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

	live_start("s1");
	c = mnt_path("old/c.txt");
	d1 = mnt_path("dir");
	d2 = mnt_path("dir2");
	nd = mnt_path("newdir");
	ck_assert_int_eq(unlink(c), 0);
	ck_assert_int_eq(rename(d1, d2), 0);
	ck_assert_int_eq(mkdir(nd, 0755), 0);
	mnt_write("newdir/f.txt", "f\n");
	ck_assert_int_eq(publish_live(), EOS_PUBLISH_PUBLISHED);
	ck_assert_uint_eq(delta_entries(lv.v), 0);
	ck_assert(!mnt_exists("old/c.txt"));
	ck_assert(!mnt_exists("dir"));
	ck_assert_str_eq(mnt_read("dir2/b.txt", buf, sizeof(buf)), "bee\n");
	ck_assert_str_eq(mnt_read("newdir/f.txt", buf, sizeof(buf)), "f\n");
	ck_assert_uint_eq(list_names("", buf, sizeof(buf)), 4);
	ck_assert(strstr(buf, "dir2 ") && strstr(buf, "newdir ") && strstr(buf, "old "));
	ck_assert_uint_eq(list_names("old", buf, sizeof(buf)), 0);
	ck_assert(head_read("dir2/b.txt", buf, sizeof(buf)));
	ck_assert(!head_read("dir/b.txt", buf, sizeof(buf)));
	/* the names work on in the new delta */
	ck_assert_int_eq(rename(d2, d1), 0);
	ck_assert_int_eq(rmdir(c) == 0 ? 0 : errno, ENOENT);
	ck_assert_int_eq(publish_live(), EOS_PUBLISH_PUBLISHED);
	ck_assert(head_read("dir/b.txt", buf, sizeof(buf)));
	ck_assert_str_eq(mnt_read("dir/b.txt", buf, sizeof(buf)), "bee\n");
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
	struct eos_view_options o = { .sandbox = SBX, .session = "s1", .create = true };
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	char path[4096];
	int fd, r;

	if ((r = eos_store_open(dir, NULL, &st, &err)) < 0)
		return crash_fail("open the store", &err, r);
	o.store = st;
	if ((r = eos_view_open(&o, &lv.v, &err)) < 0 ||
	    (r = eos_view_mount(lv.v, mnt, NULL, &lv.m, &err)) < 0)
		return crash_fail("mount", &err, r);
	if (pthread_create(&lv.server, NULL, serve_main, lv.m) != 0)
		return crash_fail("serve", NULL, 0);
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

static void
unmount_dead(const char *mnt)
{
	cleanup_free char *cmd = NULL;

	if (umount2(mnt, MNT_DETACH) == 0)
		return;
	ck_assert_int_ge(asprintf(&cmd, "fusermount3 -uz '%s'", mnt), 0);
	ck_assert_int_eq(system(cmd), 0);
}

static void
run_crash_child(const char *failpoint, const char *mnt)
{
	cleanup_free char *env = NULL;
	int status;
	pid_t pid;

	ck_assert_int_ge(asprintf(&env, "%s=kill", failpoint), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		setenv("EOS_FAILPOINTS", env, 1);
		execl("/proc/self/exe", "test-publish-live", "crash-child", store_dir, mnt, NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	unmount_dead(mnt);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "'%s': the child ended with status %d instead of being killed", failpoint,
		      status);
}

static void
fsck_one(void *ctx, const char *kind, const char *message)
{
	(void)ctx;
	fprintf(stderr, "fsck: %s: %s\n", kind, message);
}

static void
check_clean(void)
{
	struct eos_fsck_result res;
	struct eos_error err = { 0 };
	struct eos_view *v = view_open("s1", true);
	int r = eos_store_fsck(st, 0, fsck_one, NULL, &res, &err);

	ck_ok(r, err);
	ck_assert_uint_eq(res.violations, 0);
	r = eos_view_check(v, fsck_one, NULL, &err);
	ck_ok(r, err);
	ck_assert_int_eq(r, 0);
	eos_view_close(v);
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
	run_crash_child(CRASHES[_i].failpoint, mnt);
	ck_ok(eos_store_open(store_dir, NULL, &st, &err), err);
	check_clean();
	ck_ok(eos_store_session_get(st, SBX, "s1", &info, &err), err);
	ck_assert_uint_eq(info.version, head_of());
	ck_assert_uint_eq(head_of(), CRASHES[_i].published ? 2 : 1);
	v = view_open("s1", false);
	ck_assert_str_eq(tv_read_all(v, "a.txt", buf, sizeof(buf)),
			 "CRASH\nline2\nline3\nline4\nline5\n");
	ck_assert_str_eq(tv_read_all(v, "new.txt", buf, sizeof(buf)), "new\n");
	ck_assert_uint_eq(delta_entries(v), CRASHES[_i].published ? 0 : 2);
	eos_view_close(v);
	ck_assert(head_read("new.txt", buf, sizeof(buf)) == CRASHES[_i].published);
	check_clean();
	rmdir(mnt);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("publish-live");
	TCase *tc = tcase_create("live");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_open_file_survives_publish);
	tcase_add_test(tc, test_rejected_keeps_session);
	tcase_add_test(tc, test_merge_shows_merged_file);
	tcase_add_test(tc, test_namespace_after_reset);
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
	return eos_test_run(suite());
}
