/* SPDX-License-Identifier: MIT */
#include "tests/unit/live-util.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "fs/view-internal.h"
#include "tests/unit/testutil.h"
#include "tests/unit/view-util.h"

const char SBX[] = "sbx";
const char BASE_A[] = "line1\nline2\nline3\nline4\nline5\n";

char *store_dir;
struct eos_store *st;

struct live lv;
bool lv_writeback;

static void
lv_src_file(const char *src, const char *rel, const char *text)
{
	cleanup_free char *path = NULL;

	ck_assert_int_ge(asprintf(&path, "%s/%s", src, rel), 0);
	eos_test_write_file(path, text, strlen(text), 0644);
}

void
lv_import_base(void)
{
	cleanup_free char *src = eos_test_tmpdir("live-src"), *h1 = NULL, *h2 = NULL;
	struct eos_import_options io = { .sandbox = SBX, .threads = 1 };
	struct eos_error err = { 0 };
	struct eos_import_result ir;
	int r;

	lv_src_file(src, "a.txt", BASE_A);
	lv_src_file(src, "dir/b.txt", "bee\n");
	lv_src_file(src, "dir/e.txt", "eee\n");
	lv_src_file(src, "old/c.txt", "c\n");
	lv_src_file(src, "links/h1", "linked\n");
	ck_assert_int_ge(asprintf(&h1, "%s/links/h1", src), 0);
	ck_assert_int_ge(asprintf(&h2, "%s/links/h2", src), 0);
	ck_assert_int_eq(link(h1, h2), 0);
	r = eos_store_import(st, src, &io, &ir, &err);
	ck_ok(r, err);
	eos_test_rm_rf(src);
}

struct eos_view *
lv_view_open(const char *session, bool inspect)
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

void *
lv_serve_main(void *arg)
{
	struct eos_view_mount *m = arg;

	eos_view_mount_serve(m, NULL);
	return NULL;
}

void
lv_start(const char *session)
{
	struct eos_error err = { 0 };
	int r;

	struct eos_view_options o = { .store = st,
				      .sandbox = SBX,
				      .session = session,
				      .create = true,
				      .writeback = lv_writeback };

	r = eos_view_open(&o, &lv.v, &err);
	ck_ok(r, err);
	lv.mnt = eos_test_tmpdir("live-mnt");
	r = eos_view_mount(lv.v, lv.mnt, NULL, &lv.m, &err);
	ck_ok(r, err);
	ck_assert_int_eq(pthread_create(&lv.server, NULL, lv_serve_main, lv.m), 0);
}

void
lv_stop(void)
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

void
lv_setup(void)
{
	st = eos_test_store_new(&store_dir);
	lv_import_base();
}

void
lv_teardown(void)
{
	lv_stop();
	eos_store_close(st);
	eos_test_rm_rf(store_dir);
	free(store_dir);
}

/* --- helpers ---------------------------------------------------------------------------------- */

char *
lv_mnt_path(const char *rel)
{
	char *p = NULL;

	ck_assert_int_ge(asprintf(&p, "%s/%s", lv.mnt, rel), 0);
	return p;
}

int
lv_mnt_open(const char *rel, int flags)
{
	cleanup_free char *p = lv_mnt_path(rel);
	int fd = open(p, flags | O_CLOEXEC, 0644);

	ck_assert_msg(fd >= 0, "open '%s': %s", p, strerror(errno));
	return fd;
}

/* The whole file at fd from offset 0, NUL-terminated into buf. */
const char *
lv_fd_read(int fd, char *buf, size_t size)
{
	ssize_t got = pread(fd, buf, size - 1, 0);

	ck_assert_msg(got >= 0, "pread: %s", strerror(errno));
	buf[got] = 0;
	return buf;
}

const char *
lv_mnt_read(const char *rel, char *buf, size_t size)
{
	cleanup_close int fd = lv_mnt_open(rel, O_RDONLY);

	return lv_fd_read(fd, buf, size);
}

void
lv_mnt_write(const char *rel, const char *text)
{
	cleanup_close int fd = lv_mnt_open(rel, O_WRONLY | O_CREAT | O_TRUNC);

	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
}

bool
lv_mnt_exists(const char *rel)
{
	cleanup_free char *p = lv_mnt_path(rel);
	struct stat s;

	return lstat(p, &s) == 0;
}

uint64_t
lv_head_of(void)
{
	struct eos_sandbox_info info;
	struct eos_error err = { 0 };
	int r = eos_store_sandbox_get(st, SBX, &info, &err);

	ck_ok(r, err);
	return info.head;
}

/* The content of path at the head, NUL-terminated into buf ("" and false when absent). */
bool
lv_head_read(const char *path, char *buf, size_t size)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	ssize_t got;

	buf[0] = 0;
	if (eos_store_file_open(st, SBX, lv_head_of(), path, &f, NULL) < 0)
		return false;
	got = eos_file_pread(f, buf, size - 1, 0, NULL);
	ck_assert_int_ge(got, 0);
	buf[got] = 0;
	return true;
}

static int
lv_count_one(void *ctx, const struct eos_delta_entry *e)
{
	(void)e;
	(*(size_t *)ctx)++;
	return 0;
}

size_t
lv_delta_entries(struct eos_view *v)
{
	struct eos_error err = { 0 };
	size_t n = 0;
	int r = eos_view_delta(v, lv_count_one, &n, &err);

	ck_ok(r, err);
	return n;
}

enum eos_publish_status
lv_publish(void)
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
void
lv_other_removes(const char *name, const char *dir, const char *file)
{
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	struct eos_view *v = lv_view_open(name, false);
	int r;

	ck_rc(eos_fs_unlink(v, tv_lookup(v, dir), file, false), 0);
	eos_view_close(v);
	r = eos_view_publish(st, SBX, name, NULL, &res, &err);
	ck_ok(r, err);
	ck_assert_int_eq(res.status, EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
}

void
lv_other_publishes(const char *name, const char *path, const char *text)
{
	struct eos_publish_result res;
	struct eos_error err = { 0 };
	struct eos_view *v = lv_view_open(name, false);
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

static void *
lv_append_main(void *arg)
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

void
lv_appender_start(struct appender *a, const char *rel)
{
	*a = (struct appender){ .fd = lv_mnt_open(rel, O_WRONLY | O_CREAT | O_APPEND) };
	ck_assert_int_eq(pthread_create(&a->thread, NULL, lv_append_main, a), 0);
	while (atomic_load(&a->lines) < 10)
		usleep(1000);
}

/* Stop; every line written is in text, in order. */
void
lv_appender_stop(struct appender *a)
{
	atomic_store(&a->stop, true);
	pthread_join(a->thread, NULL);
	close(a->fd);
	ck_assert_msg(a->failed == 0, "a write failed: %s", strerror(a->failed));
}

void
lv_appender_check(const struct appender *a, const char *text)
{
	unsigned n = atomic_load(&a->lines);

	ck_assert_uint_eq(strlen(text), (size_t)n * 8);
	for (unsigned i = 0; i < n; i++) {
		char line[32];

		snprintf(line, sizeof(line), "w%06u\n", i);
		ck_assert_msg(memcmp(text + (size_t)i * 8, line, 8) == 0, "line %u is lost", i);
	}
}

/* --- checks ---------------------------------------------------------------------------------- */

static void
fsck_one(void *ctx, const char *kind, const char *message)
{
	(void)ctx;
	fprintf(stderr, "fsck: %s: %s\n", kind, message);
}

void
lv_check_clean(const char *session)
{
	struct eos_fsck_result res;
	struct eos_error err = { 0 };
	struct eos_view *v = lv_view_open(session, true);
	int r = eos_store_fsck(st, 0, fsck_one, NULL, &res, &err);

	ck_ok(r, err);
	ck_assert_uint_eq(res.violations, 0);
	r = eos_view_check(v, fsck_one, NULL, &err);
	ck_ok(r, err);
	ck_assert_int_eq(r, 0);
	eos_view_close(v);
}

/* --- crash children --------------------------------------------------------------------------- */

void
lv_unmount_dead(const char *mnt)
{
	cleanup_free char *cmd = NULL;

	if (umount2(mnt, MNT_DETACH) == 0)
		return;
	ck_assert_int_ge(asprintf(&cmd, "fusermount3 -uz '%s'", mnt), 0);
	ck_assert_int_eq(system(cmd), 0);
}

void
lv_run_child(const char *failpoint, const char *mode, const char *mnt)
{
	cleanup_free char *env = NULL;
	int status;
	pid_t pid;

	ck_assert_int_ge(asprintf(&env, "%s=kill", failpoint), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		setenv("EOS_FAILPOINTS", env, 1);
		execl("/proc/self/exe", mode, mode, store_dir, mnt, NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	lv_unmount_dead(mnt);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "'%s': the child ended with status %d instead of being killed", failpoint,
		      status);
}

/*
 * The child serves the mount it uses (doc/fs.md, "Limits"): killed, it closes its files after its
 * server thread is gone. A close sends the view a FLUSH until the mount's first one was answered
 * (ENOSYS: the kernel sends no other), so have that happen now.
 */
static int
child_first_close(const char *mnt)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/a.txt", mnt);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || close(fd) < 0) {
		fprintf(stderr, "child: open and close '%s': %s\n", path, strerror(errno));
		return -EIO;
	}
	return 0;
}

int
lv_child_mount(const char *dir, const char *mnt)
{
	struct eos_view_options o = { .sandbox = SBX, .session = "s1", .create = true };
	struct eos_error err = { 0 };
	int r = eos_store_open(dir, NULL, &st, &err);

	o.store = st;
	r = r ?: eos_view_open(&o, &lv.v, &err);
	r = r ?: eos_view_mount(lv.v, mnt, NULL, &lv.m, &err);
	if (r < 0) {
		fprintf(stderr, "child: mount '%s': %s\n", mnt, eos_error_message(&err, r));
		return r;
	}
	if (pthread_create(&lv.server, NULL, lv_serve_main, lv.m) != 0) {
		fprintf(stderr, "child: cannot start the server thread\n");
		return -EAGAIN;
	}
	return child_first_close(mnt);
}
