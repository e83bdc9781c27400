/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of store/store.c, store-dir.c and owner.c: opening, what a store directory is, its
 * ownership and modes, the owner lock, the format check, layer ids.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/endian.h"

#include "store/sandbox.h"
#include "store/store-internal.h"
#include "tests/unit/testutil.h"

static int
open_store(const char *dir, bool create, struct eos_store **ret, struct eos_error *err)
{
	struct eos_store_options o = { .create = create, .cache_bytes = 4 << 20 };

	return eos_store_open(dir, &o, ret, err);
}

START_TEST(open_missing_without_create)
{
	struct eos_error err = { 0 };
	struct eos_store *st = NULL;
	char *dir = eos_test_tmpdir("missing");
	char *sub = NULL;

	ck_assert_int_ge(asprintf(&sub, "%s/none", dir), 0);
	ck_assert_int_eq(open_store(sub, false, &st, &err), -ENOENT);
	ck_assert_ptr_null(st);
	ck_assert_msg(strstr(err.msg, "does not exist") && strstr(err.msg, sub), "%s", err.msg);
	ck_assert_int_eq(eos_store_open("", NULL, &st, &err), -EINVAL);
	free(sub);
	eos_test_rm_rf(dir);
	free(dir);
}
END_TEST

START_TEST(open_file_is_not_a_store)
{
	struct eos_error err = { 0 };
	struct eos_store *st = NULL;
	char *dir = eos_test_tmpdir("file");
	char *file = NULL;

	ck_assert_int_ge(asprintf(&file, "%s/f", dir), 0);
	eos_test_write_file(file, "x", 1, 0644);
	ck_assert_int_eq(open_store(file, true, &st, &err), -ENOTDIR);
	ck_assert_ptr_nonnull(strstr(err.msg, "not a directory"));
	free(file);
	eos_test_rm_rf(dir);
	free(dir);
}
END_TEST

/* The names in dir, sorted and joined by ',' ("" when empty). */
static void
dir_names(const char *dir, char *out, size_t n)
{
	char *cmd = NULL;
	FILE *f;
	size_t len;

	ck_assert_int_ge(asprintf(&cmd, "ls -A '%s' | paste -sd,", dir), 0);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	len = fread(out, 1, n - 1, f);
	out[len] = '\0';
	if (len && out[len - 1] == '\n')
		out[len - 1] = '\0';
	pclose(f);
	free(cmd);
}

/* Write text into dir/name (creating parents); the path is returned for the caller to free. */
static char *
put_file(const char *dir, const char *name, const char *text, unsigned mode)
{
	char *path = NULL;

	ck_assert_int_ge(asprintf(&path, "%s/%s", dir, name), 0);
	eos_test_write_file(path, text, strlen(text), mode);
	return path;
}

START_TEST(foreign_directory_is_never_a_store)
{
	struct eos_error err = { 0 };
	struct eos_store *st = NULL;
	char *dir = eos_test_tmpdir("foreign");
	char *file = put_file(dir, "notes.txt", "mine", 0644), names[256];

	ck_assert_int_eq(open_store(dir, false, &st, &err), -ENOENT);
	ck_assert_msg(strstr(err.msg, "is not an eos store") && strstr(err.msg, "notes.txt"), "%s",
		      err.msg);
	ck_assert_int_eq(open_store(dir, true, &st, &err), -ENOTEMPTY);
	ck_assert_msg(strstr(err.msg, "refusing to create a store") && strstr(err.msg, dir) &&
			      strstr(err.msg, "'notes.txt'"),
		      "%s", err.msg);
	ck_assert_ptr_null(st);
	dir_names(dir, names, sizeof(names));
	ck_assert_str_eq(names, "notes.txt"); /* no owner.lock, no db/ */
	/* an empty directory is no store either, until created */
	unlink(file);
	ck_assert_int_eq(open_store(dir, false, &st, &err), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "the directory is empty"));
	dir_names(dir, names, sizeof(names));
	ck_assert_str_eq(names, "");
	ck_assert_int_eq(open_store(dir, true, &st, &err), 0);
	eos_store_close(st);
	free(file);
	eos_test_rm_rf(dir);
	free(dir);
}
END_TEST

/* What a creation killed before RocksDB wrote db/CURRENT leaves; with data files: damage. */
START_TEST(half_created_store_is_finished_damaged_refused)
{
	struct eos_error err = { 0 };
	struct eos_store *st = NULL;
	char *dir = eos_test_tmpdir("half");
	char *path = NULL;

	free(put_file(dir, "db/LOG", "", 0644));
	free(put_file(dir, "owner.lock", "", 0600));
	ck_assert_int_eq(open_store(dir, false, &st, &err), -ENOENT);
	ck_assert_msg(strstr(err.msg, "does not exist: its creation was interrupted"), "%s",
		      err.msg);
	ck_assert_int_eq(open_store(dir, true, &st, &err), 0);
	eos_store_close(st);
	st = NULL;
	ck_assert_int_ge(asprintf(&path, "%s/db/CURRENT", dir), 0);
	ck_assert_int_eq(unlink(path), 0); /* a store whose CURRENT is lost is no half-made one */
	free(path);
	ck_assert_int_eq(open_store(dir, true, &st, &err), -EBADMSG);
	ck_assert_msg(strstr(err.msg, "is damaged") && strstr(err.msg, "db/CURRENT"), "%s",
		      err.msg);
	ck_assert_int_eq(open_store(dir, false, &st, &err), -EBADMSG);
	eos_test_rm_rf(dir);
	free(dir);
	/* session directories, too, exist only in a store that once worked */
	dir = eos_test_tmpdir("lost");
	free(put_file(dir, "sessions/sb/s1/0000000000000001", "x", 0600));
	ck_assert_int_eq(open_store(dir, true, &st, &err), -EBADMSG);
	eos_test_rm_rf(dir);
	free(dir);
}
END_TEST

static unsigned
mode_of(const char *dir, const char *name)
{
	char *path = NULL;
	struct stat sb;

	ck_assert_int_ge(asprintf(&path, "%s/%s", dir, name), 0);
	ck_assert_int_eq(stat(path, &sb), 0);
	free(path);
	return sb.st_mode & 07777;
}

/* Open dir (a store) expecting -EPERM with both needles in the message. */
static void
expect_refused(const char *dir, const char *want1, const char *want2)
{
	struct eos_error err = { 0 };
	struct eos_store *st = NULL;

	ck_assert_int_eq(open_store(dir, false, &st, &err), -EPERM);
	ck_assert_msg(strstr(err.msg, want1) && strstr(err.msg, want2), "%s", err.msg);
}

START_TEST(store_is_private_to_its_user)
{
	mode_t old = umask(0);
	struct eos_store *st = NULL;
	char *dir = NULL, *path = NULL;

	st = eos_test_store_new(&dir);
	umask(old);
	eos_store_close(st);
	ck_assert_uint_eq(mode_of(dir, "."), 0700);
	ck_assert_uint_eq(mode_of(dir, "db"), 0700);
	ck_assert_int_eq(chmod(dir, 0777), 0);
	expect_refused(dir, "writable by its group and others (mode 0777)", "chmod go-w");
	ck_assert_int_eq(chmod(dir, 0702), 0);
	expect_refused(dir, "writable by others", dir);
	ck_assert_int_eq(chmod(dir, 0755), 0); /* readable is fine: writable is not */
	ck_assert_int_ge(asprintf(&path, "%s/db/CURRENT", dir), 0);
	ck_assert_int_eq(chmod(path, 0664), 0);
	expect_refused(dir, "writable by its group", path);
	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_int_eq(open_store(dir, false, &st, NULL), 0);
	eos_store_close(st);
	free(path);
	eos_test_rm_rf(dir);
	free(dir);
}
END_TEST

/* As root: another user's store is refused, and so is ours to that user (forked, setuid). */
START_TEST(store_of_another_user_refused)
{
	struct eos_store *st = NULL;
	char *dir = NULL, *lock = NULL;
	int status = 0;
	pid_t pid;

	if (geteuid() != 0)
		return; /* needs chown; CI runs the unit tests as root */
	st = eos_test_store_new(&dir);
	eos_store_close(st);
	ck_assert_int_ge(asprintf(&lock, "%s/owner.lock", dir), 0);
	ck_assert_int_eq(chown(lock, 65534, 65534), 0);
	expect_refused(dir, "is not yours", "owned by uid 65534, not by uid 0");
	ck_assert_int_eq(chown(lock, 0, 0), 0);
	ck_assert_int_eq(chmod(dir, 0755), 0); /* let the other user look: it is still refused */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct eos_error err = { 0 };

		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		_exit(open_store(dir, false, &st, &err) == -EPERM &&
				      strstr(err.msg, "owned by uid 0, not by uid 65534")
			      ? 0
			      : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
	free(lock);
	eos_test_rm_rf(dir);
	free(dir);
}
END_TEST

/* A child process opens the store and holds it until killed. */
static pid_t
hold_store(const char *dir)
{
	int ready[2];
	char c = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct eos_store *st = NULL;

		close(ready[0]);
		if (open_store(dir, false, &st, NULL) < 0)
			_exit(1);
		if (write(ready[1], "k", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return pid;
}

START_TEST(second_owner_refused_with_pid)
{
	struct eos_error err = { 0 };
	struct eos_store *st = NULL;
	char *dir = NULL;
	char want[64];
	pid_t holder;
	int status;

	st = eos_test_store_new(&dir);
	eos_store_close(st);
	st = NULL;
	holder = hold_store(dir);
	ck_assert_int_eq(open_store(dir, false, &st, &err), -EBUSY);
	snprintf(want, sizeof(want), "in use by pid %ld", (long)holder);
	ck_assert_msg(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
	kill(holder, SIGKILL);
	waitpid(holder, &status, 0);
	/* the lock dies with its owner, even a killed one */
	ck_assert_int_eq(open_store(dir, false, &st, &err), 0);
	eos_store_close(st);
	eos_test_rm_rf(dir);
	free(dir);
}
END_TEST

/*
 * A child owns the store and records that it serves a mount of device dev, then exits once a
 * byte arrives on *ret_go (or when killed).
 */
static pid_t
hold_serving(const char *dir, dev_t dev, int *ret_go)
{
	int ready[2], go[2];
	char c = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct eos_store *st = NULL;

		close(ready[0]);
		close(go[1]);
		if (open_store(dir, false, &st, NULL) < 0 ||
		    eos_store_set_serving(st, &dev, 1, NULL) < 0 || write(ready[1], "k", 1) != 1)
			_exit(1);
		if (read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0); /* exits without closing: the kernel drops the flock */
	}
	close(ready[1]);
	close(go[0]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	*ret_go = go[1];
	return pid;
}

struct waiting {
	unsigned calls;
	char msg[EOS_ERROR_MSG_MAX];
	int go; /* written to when the wait starts (-1: not) */
};

static void
on_wait(void *ctx, const char *message)
{
	struct waiting *w = ctx;

	w->calls++;
	snprintf(w->msg, sizeof(w->msg), "%s", message);
	if (w->go >= 0)
		ck_assert_int_eq(write(w->go, "g", 1), 1);
}

static int
open_waiting(const char *dir, int64_t wait_ms, struct waiting *w, struct eos_store **ret,
	     struct eos_error *err)
{
	struct eos_store_options o = {
		.cache_bytes = 4 << 20, .wait_ms = wait_ms, .on_wait = on_wait, .on_wait_ctx = w
	};

	return eos_store_open(dir, &o, ret, err);
}

static void
reap(pid_t pid, int go)
{
	int status;

	close(go);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* An owner whose mounts are all gone is shutting down: waited for, boundedly; a serving one not. */
START_TEST(owner_shutting_down_is_waited_for)
{
	struct eos_error err = { 0 };
	struct eos_store *st = NULL;
	struct waiting w = { .go = -1 };
	char *dir = NULL, want[96];
	struct stat root;
	pid_t holder;
	int go;

	st = eos_test_store_new(&dir);
	eos_store_close(st);
	st = NULL;
	ck_assert_int_eq(stat("/", &root), 0);
	/* serving a mounted filesystem: busy at once, however long we would wait */
	holder = hold_serving(dir, root.st_dev, &go);
	ck_assert_int_eq(open_waiting(dir, 60000, &w, &st, &err), -EBUSY);
	ck_assert_uint_eq(w.calls, 0);
	reap(holder, go);
	/* serving nothing mounted (device 0:0 never is): waited for until it exits */
	holder = hold_serving(dir, makedev(0, 0), &go);
	ck_assert_int_eq(open_waiting(dir, -1, &w, &st, &err), -EBUSY); /* negative: no wait */
	ck_assert_uint_eq(w.calls, 0);
	ck_assert_int_eq(open_waiting(dir, 100, &w, &st, &err), -EBUSY);
	ck_assert_msg(strstr(err.msg, "did not finish closing it within"), "%s", err.msg);
	ck_assert_uint_eq(w.calls, 1);
	w = (struct waiting){ .go = go };
	ck_assert_int_eq(open_waiting(dir, 60000, &w, &st, &err), 0);
	ck_assert_uint_eq(w.calls, 1);
	snprintf(want, sizeof(want), "being closed by pid %ld: waiting up to 60.0 s", (long)holder);
	ck_assert_msg(strstr(w.msg, want), "'%s' lacks '%s'", w.msg, want);
	eos_store_close(st);
	reap(holder, go);
	eos_test_rm_rf(dir);
	free(dir);
}
END_TEST

START_TEST(wait_from_env)
{
	struct eos_error err = { 0 };
	int64_t ms = 7;

	ck_assert_int_eq(unsetenv("EOS_STORE_WAIT"), 0);
	ck_assert_int_eq(eos_store_wait_from_env(&ms, &err), 0);
	ck_assert_int_eq(ms, 0); /* the default */
	setenv("EOS_STORE_WAIT", "2.5", 1);
	ck_assert_int_eq(eos_store_wait_from_env(&ms, &err), 0);
	ck_assert_int_eq(ms, 2500);
	setenv("EOS_STORE_WAIT", "0", 1);
	ck_assert_int_eq(eos_store_wait_from_env(&ms, &err), 0);
	ck_assert_int_lt(ms, 0); /* do not wait */
	setenv("EOS_STORE_WAIT", "soon", 1);
	ck_assert_int_eq(eos_store_wait_from_env(&ms, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "'soon'"), "%s", err.msg);
	setenv("EOS_STORE_WAIT", "-1", 1);
	ck_assert_int_eq(eos_store_wait_from_env(&ms, &err), -EINVAL);
	unsetenv("EOS_STORE_WAIT");
}
END_TEST

static void
write_format(struct eos_store *st, uint32_t format)
{
	struct eos_buf key;
	uint8_t v[4];

	eos_buf_init(&key);
	ck_assert_int_eq(eos_meta_key(&key, EOS_SANDBOX_GLOBAL, "format"), 0);
	eos_put_le32(v, format);
	ck_assert_int_eq(eos_kv_put(st->kv, EOS_CF_META, key.data, key.len, v, 4, true, NULL), 0);
	eos_buf_release(&key);
}

START_TEST(newer_format_refused)
{
	struct eos_error err = { 0 };
	struct eos_store *st = NULL;
	char *dir = NULL;

	st = eos_test_store_new(&dir);
	ck_assert_uint_eq(eos_store_format_version(), EOS_STORE_FORMAT);
	write_format(st, EOS_STORE_FORMAT + 1);
	eos_store_close(st);
	st = NULL;
	ck_assert_int_eq(open_store(dir, false, &st, &err), -EPROTONOSUPPORT);
	ck_assert_ptr_null(st);
	ck_assert_msg(strstr(err.msg, "has format 3") && strstr(err.msg, "upgrade eos"), "%s",
		      err.msg);
	/* the refusal released the owner lock and changed nothing: the same answer again */
	ck_assert_int_eq(open_store(dir, false, &st, &err), -EPROTONOSUPPORT);
	eos_test_rm_rf(dir);
	free(dir);
}
END_TEST

static uint32_t
read_format(struct eos_store *st)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 }, val = { 0 };

	ck_assert_int_eq(eos_meta_key(&key, EOS_SANDBOX_GLOBAL, "format"), 0);
	ck_assert_int_eq(eos_kv_get(st->kv, NULL, EOS_CF_META, key.data, key.len, &val, NULL), 0);
	ck_assert_uint_eq(val.len, 4);
	return eos_get_le32(val.data);
}

/* A format-1 store (files, no fifos or devices) opens and is upgraded to format 2 in place. */
START_TEST(format_1_upgraded)
{
	struct eos_attr a = eos_test_attr(0644);
	struct eos_changeset *cs = NULL;
	struct eos_fsck_result fr = { 0 };
	struct eos_error err = { 0 };
	struct eos_store *st = NULL;
	struct eos_stat s;
	char *dir = NULL;

	st = eos_test_store_new(&dir);
	ck_assert_int_eq(eos_changeset_new_sandbox(st, "s", "test", NULL, &cs, &err), 0);
	ck_assert_int_eq(eos_changeset_put_file_mem(cs, "f", &a, "old\n", 4, &err), 0);
	ck_assert_int_eq(eos_changeset_commit(cs, 0, NULL, &err), 0);
	eos_changeset_free(cs);
	write_format(st, 1);
	eos_store_close(st);
	st = NULL;
	ck_assert_int_eq(open_store(dir, false, &st, &err), 0);
	ck_assert_uint_eq(read_format(st), EOS_STORE_FORMAT);
	ck_assert_int_eq(eos_store_stat(st, "s", 0, "f", &s, &err), 0);
	ck_assert_uint_eq(s.size, 4);
	ck_assert_int_eq(eos_store_fsck(st, EOS_FSCK_VERIFY_CHUNKS, NULL, NULL, &fr, &err), 0);
	ck_assert_uint_eq(fr.violations, 0);
	eos_store_close(st);
	eos_test_rm_rf(dir);
	free(dir);
}
END_TEST

START_TEST(unknown_old_format_is_corrupt)
{
	struct eos_error err = { 0 };
	struct eos_store *st = NULL;
	char *dir = NULL;

	st = eos_test_store_new(&dir);
	eos_store_close(st);
	st = NULL;
	ck_assert_int_eq(open_store(dir, false, &st, &err), 0);
	write_format(st, 0);
	eos_store_close(st);
	st = NULL;
	ck_assert_int_eq(open_store(dir, false, &st, &err), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err.msg, "has format 0"));
	eos_test_rm_rf(dir);
	free(dir);
}
END_TEST

START_TEST(layer_ids)
{
	char id[EOS_LAYER_ID_LEN];
	uint64_t v = 0;

	eos_layer_id_format(1, id);
	ck_assert_str_eq(id, "L000001");
	eos_layer_id_format(1234567, id);
	ck_assert_str_eq(id, "L1234567");
	ck_assert_int_eq(eos_layer_id_parse("L000042", &v), 0);
	ck_assert_uint_eq(v, 42);
	ck_assert_int_eq(eos_layer_id_parse("L7", &v), 0);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(eos_layer_id_parse("9", &v), 0);
	ck_assert_uint_eq(v, 9);
	ck_assert_int_eq(eos_layer_id_parse("L0", &v), -EINVAL);
	ck_assert_int_eq(eos_layer_id_parse("L", &v), -EINVAL);
	ck_assert_int_eq(eos_layer_id_parse("", &v), -EINVAL);
	ck_assert_int_eq(eos_layer_id_parse("L12x", &v), -EINVAL);
	ck_assert_int_eq(eos_layer_id_parse("-3", &v), -EINVAL);
	ck_assert_int_eq(eos_layer_id_parse("99999999999999999999999", &v), -EINVAL);
	ck_assert_uint_eq(v, 9); /* untouched on failure */
}
END_TEST

static Suite *
store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, open_missing_without_create);
	tcase_add_test(tc, open_file_is_not_a_store);
	tcase_add_test(tc, foreign_directory_is_never_a_store);
	tcase_add_test(tc, half_created_store_is_finished_damaged_refused);
	tcase_add_test(tc, store_is_private_to_its_user);
	tcase_add_test(tc, store_of_another_user_refused);
	tcase_add_test(tc, second_owner_refused_with_pid);
	tcase_add_test(tc, owner_shutting_down_is_waited_for);
	tcase_add_test(tc, wait_from_env);
	tcase_add_test(tc, newer_format_refused);
	tcase_add_test(tc, unknown_old_format_is_corrupt);
	tcase_add_test(tc, format_1_upgraded);
	tcase_add_test(tc, layer_ids);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(store_suite());
}
