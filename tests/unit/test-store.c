/* SPDX-License-Identifier: MIT */
/* Unit tests of store/store.c: opening, the owner lock, the format check, layer ids. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	ck_assert_msg(strstr(err.msg, "has format 2") && strstr(err.msg, "upgrade eos"), "%s",
		      err.msg);
	/* the refusal released the owner lock and changed nothing: the same answer again */
	ck_assert_int_eq(open_store(dir, false, &st, &err), -EPROTONOSUPPORT);
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
	tcase_add_test(tc, second_owner_refused_with_pid);
	tcase_add_test(tc, newer_format_refused);
	tcase_add_test(tc, unknown_old_format_is_corrupt);
	tcase_add_test(tc, layer_ids);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(store_suite());
}
