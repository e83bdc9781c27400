/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of common/: errors, buffers and readers, paths, digests, JSON, quoting, failpoints,
 * the futex mutex.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/endian.h"
#include "common/errkind.h"
#include "common/error.h"
#include "common/failpoint.h"
#include "common/json.h"
#include "common/mutex.h"
#include "common/path.h"
#include "common/quote.h"

#include "tests/unit/testutil.h"

START_TEST(error_set_and_prefix)
{
	struct eos_error err = { 0 };

	ck_assert_int_eq(eos_error_set(&err, -ENOENT, "open '%s'", "a/b"), -ENOENT);
	ck_assert_str_eq(err.msg, "open 'a/b'");
	ck_assert_int_eq(eos_error_prefix(&err, -ENOENT, "import '%s'", "/src"), -ENOENT);
	ck_assert_str_eq(err.msg, "import '/src': open 'a/b'");
	eos_error_clear(&err);
	ck_assert_int_eq(eos_error_prefix(&err, -EACCES, "read 'x'"), -EACCES);
	ck_assert_str_eq(err.msg, "read 'x': Permission denied");
	ck_assert_int_eq(eos_error_set(NULL, -EIO, "ignored"), -EIO);
	ck_assert_int_eq(eos_error_prefix(NULL, -EIO, "ignored"), -EIO);
	ck_assert_str_eq(eos_error_message(NULL, -ENOENT), "No such file or directory");
}
END_TEST

START_TEST(error_prefix_truncates_safely)
{
	struct eos_error err = { 0 };
	char big[2000];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	eos_error_set(&err, -EINVAL, "%s", big);
	ck_assert_uint_eq(strlen(err.msg), EOS_ERROR_MSG_MAX - 1);
	eos_error_prefix(&err, -EINVAL, "ctx");
	ck_assert_uint_eq(strlen(err.msg), EOS_ERROR_MSG_MAX - 1);
	ck_assert(strncmp(err.msg, "ctx: xxx", 8) == 0);
}
END_TEST

START_TEST(neg_errno_never_zero)
{
	errno = 0;
	ck_assert_int_eq(eos_neg_errno(), -EIO);
	errno = EACCES;
	ck_assert_int_eq(eos_neg_errno(), -EACCES);
}
END_TEST

START_TEST(buf_append_and_steal)
{
	struct eos_buf b;
	uint8_t *p;
	size_t n;

	eos_buf_init(&b);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(eos_buf_append_str(&b, "ab"), 0);
	ck_assert_uint_eq(b.len, 2000);
	ck_assert_int_eq(b.data[b.len], '\0');
	eos_buf_truncate(&b, 3);
	ck_assert_str_eq((char *)b.data, "aba");
	p = eos_buf_steal(&b, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_ptr_null(b.data);
	free(p);
	eos_buf_release(&b);
	eos_buf_release(NULL);
}
END_TEST

START_TEST(buf_reader_round_trip)
{
	struct eos_buf b;
	struct eos_reader r;
	const uint8_t *s;
	size_t slen;
	uint8_t u8;
	uint32_t u32;
	uint64_t u64;

	eos_buf_init(&b);
	ck_assert_int_eq(eos_buf_append_u8(&b, 7), 0);
	ck_assert_int_eq(eos_buf_append_le32(&b, 0xdeadbeef), 0);
	ck_assert_int_eq(eos_buf_append_le64(&b, 0x0102030405060708ULL), 0);
	ck_assert_int_eq(eos_buf_append_lp(&b, "hello", 5), 0);
	eos_reader_init(&r, b.data, b.len);
	ck_assert_int_eq(eos_reader_u8(&r, &u8), 0);
	ck_assert_uint_eq(u8, 7);
	ck_assert_int_eq(eos_reader_le32(&r, &u32), 0);
	ck_assert_uint_eq(u32, 0xdeadbeef);
	ck_assert_int_eq(eos_reader_le64(&r, &u64), 0);
	ck_assert_uint_eq(u64, 0x0102030405060708ULL);
	ck_assert_int_eq(eos_reader_lp(&r, 100, &s, &slen), 0);
	ck_assert_uint_eq(slen, 5);
	ck_assert(memcmp(s, "hello", 5) == 0);
	ck_assert(eos_reader_done(&r));
	ck_assert_int_eq(eos_reader_u8(&r, &u8), -EBADMSG);
	/* every truncation of the record fails cleanly */
	for (size_t cut = 0; cut < b.len; cut++) {
		int rc;

		eos_reader_init(&r, b.data, cut);
		rc = eos_reader_u8(&r, &u8);
		if (rc == 0)
			rc = eos_reader_le32(&r, &u32);
		if (rc == 0)
			rc = eos_reader_le64(&r, &u64);
		if (rc == 0)
			rc = eos_reader_lp(&r, 100, &s, &slen);
		ck_assert_int_eq(rc, -EBADMSG);
	}
	/* a length prefix above the limit is rejected */
	eos_reader_init(&r, b.data + 13, b.len - 13);
	ck_assert_int_eq(eos_reader_lp(&r, 4, &s, &slen), -EBADMSG);
	eos_buf_release(&b);
}
END_TEST

START_TEST(endian_helpers)
{
	uint8_t p[8];

	eos_put_be64(p, 0x0102030405060708ULL);
	ck_assert_uint_eq(p[0], 1);
	ck_assert_uint_eq(p[7], 8);
	ck_assert_uint_eq(eos_get_be64(p), 0x0102030405060708ULL);
	eos_put_le64(p, 0x0102030405060708ULL);
	ck_assert_uint_eq(p[0], 8);
	ck_assert_uint_eq(eos_get_le64(p), 0x0102030405060708ULL);
	eos_put_le32(p, 0xa1b2c3d4);
	ck_assert_uint_eq(p[0], 0xd4);
	ck_assert_uint_eq(eos_get_le32(p), 0xa1b2c3d4);
}
END_TEST

START_TEST(path_check_rules)
{
	struct eos_error err = { 0 };
	char name[300];

	ck_assert_int_eq(eos_path_check("", &err), 0);
	ck_assert_int_eq(eos_path_check("a/b c/ü日本", &err), 0);
	ck_assert_int_eq(eos_path_check("a/../b", &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "'a/../b'"));
	ck_assert_int_eq(eos_path_check("/etc/passwd", &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "absolute"));
	ck_assert_int_eq(eos_path_check("a//b", &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "empty"));
	ck_assert_int_eq(eos_path_check("a/./b", &err), -EINVAL);
	ck_assert_int_eq(eos_path_check("a/", &err), -EINVAL);
	memset(name, 'n', 255);
	name[255] = '\0';
	ck_assert_int_eq(eos_path_check(name, &err), 0);
	memset(name, 'n', 256);
	name[256] = '\0';
	ck_assert_int_eq(eos_path_check(name, &err), -ENAMETOOLONG);
	ck_assert_ptr_nonnull(strstr(err.msg, "256 bytes"));
	ck_assert_int_eq(eos_name_check("a\0b", 3, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "NUL"));
	ck_assert_int_eq(eos_name_check("a/b", 3, &err), -EINVAL);
	ck_assert_int_eq(eos_name_check("", 0, &err), -EINVAL);
}
END_TEST

START_TEST(path_check_total_length)
{
	struct eos_error err = { 0 };
	char *p = malloc(5000);

	for (int i = 0; i < 4998; i += 2) {
		p[i] = 'a';
		p[i + 1] = '/';
	}
	p[4998] = 'a';
	p[4999] = '\0';
	ck_assert_int_eq(eos_path_check(p, &err), -ENAMETOOLONG);
	ck_assert_int_eq(eos_path_normalize(p, &(char *){ NULL }, &err), -ENAMETOOLONG);
	free(p);
}
END_TEST

static void
expect_normal(const char *in, const char *want)
{
	cleanup_free char *out = NULL;
	struct eos_error err = { 0 };

	ck_assert_msg(eos_path_normalize(in, &out, &err) == 0, "normalize '%s': %s", in, err.msg);
	ck_assert_str_eq(out, want);
}

START_TEST(path_normalize_user_input)
{
	struct eos_error err = { 0 };
	char *out = NULL;

	expect_normal("/a/b", "a/b");
	expect_normal("./a//b/", "a/b");
	expect_normal("/", "");
	expect_normal("", "");
	expect_normal("a/./b/.", "a/b");
	ck_assert_int_eq(eos_path_normalize("a/../../etc", &out, &err), -EINVAL);
	ck_assert_ptr_null(out);
	ck_assert_ptr_nonnull(strstr(err.msg, "'a/../../etc'"));
}
END_TEST

START_TEST(path_split_join_below)
{
	const char *name;
	size_t plen;
	char *j = NULL;

	eos_path_split("a/b/c", &plen, &name);
	ck_assert_uint_eq(plen, 3);
	ck_assert_str_eq(name, "c");
	eos_path_split("c", &plen, &name);
	ck_assert_uint_eq(plen, 0);
	ck_assert_str_eq(name, "c");
	eos_path_split("", &plen, &name);
	ck_assert_uint_eq(plen, 0);
	ck_assert_str_eq(name, "");
	ck_assert_int_eq(eos_path_join("a/b", "c", &j), 0);
	ck_assert_str_eq(j, "a/b/c");
	free(j);
	ck_assert_int_eq(eos_path_join("", "c", &j), 0);
	ck_assert_str_eq(j, "c");
	free(j);
	ck_assert(eos_path_is_below("a/b/c", "a/b"));
	ck_assert(eos_path_is_below("a/b", "a/b"));
	ck_assert(!eos_path_is_below("a/bc", "a/b"));
	ck_assert(eos_path_is_below("x", ""));
}
END_TEST

/* rm -rf: the tree goes, what a symlink in it points at stays, a missing path is fine. */
START_TEST(rm_rf_removes_tree_not_link_targets)
{
	cleanup_free char *dir = eos_test_tmpdir("rmrf");
	cleanup_free char *keep = eos_test_tmpdir("rmrf-keep");
	cleanup_free char *cmd = NULL;
	struct stat sb;

	ck_assert(asprintf(&cmd,
			   "mkdir -p '%s/a/b' && echo x > '%s/a/b/f' && echo y > '%s/k' && "
			   "ln -s '%s' '%s/a/link'",
			   dir, dir, keep, keep, dir) > 0);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(eos_rm_rf(dir), 0);
	ck_assert(lstat(dir, &sb) < 0 && errno == ENOENT);
	ck_assert(lstat(keep, &sb) == 0);
	ck_assert_int_eq(eos_rm_rf(dir), 0);
	ck_assert_int_eq(eos_rm_rf(keep), 0);
	ck_assert(lstat(keep, &sb) < 0);
}
END_TEST

START_TEST(digest_known_vectors)
{
	struct eos_digest d, d2;
	struct eos_sha256 *ctx = NULL;
	char hex[EOS_DIGEST_HEX_LEN + 1];

	ck_assert_int_eq(eos_sha256("abc", 3, &d), 0);
	eos_digest_hex(&d, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	ck_assert_int_eq(eos_sha256("", 0, &d), 0);
	eos_digest_hex(&d, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	ck_assert_int_eq(eos_digest_from_hex(hex, &d2), 0);
	ck_assert(eos_digest_eq(&d, &d2));
	ck_assert_int_eq(eos_digest_from_hex("zz", &d2), -EINVAL);
	hex[10] = 'g';
	ck_assert_int_eq(eos_digest_from_hex(hex, &d2), -EINVAL);
	/* streaming equals one-shot, and the context is reusable after final */
	ck_assert_int_eq(eos_sha256_new(&ctx), 0);
	for (int round = 0; round < 2; round++) {
		ck_assert_int_eq(eos_sha256_update(ctx, "a", 1), 0);
		ck_assert_int_eq(eos_sha256_update(ctx, "bc", 2), 0);
		ck_assert_int_eq(eos_sha256_final(ctx, &d2), 0);
		ck_assert_int_eq(eos_sha256("abc", 3, &d), 0);
		ck_assert(eos_digest_eq(&d, &d2));
	}
	eos_sha256_free(ctx);
}
END_TEST

/* The streaming SHA-1 / SHA-256 git's object ids use: git hash-object of "hello\n". */
START_TEST(digest_md_git_blob)
{
	static const uint8_t blob_sha1[EOS_SHA1_LEN] = { 0xce, 0x01, 0x36, 0x25, 0x03, 0x0b, 0xa8,
							 0xdb, 0xa9, 0x06, 0xf7, 0x56, 0x96, 0x7f,
							 0x9e, 0x9c, 0xa3, 0x94, 0x46, 0x4a };
	struct eos_md *md = NULL;
	uint8_t out[EOS_DIGEST_LEN];
	struct eos_digest d;

	ck_assert_int_eq(eos_md_new(EOS_SHA1_LEN, &md), 0);
	ck_assert_int_eq(eos_md_update(md, "blob 6", 7), 0); /* with its NUL */
	ck_assert_int_eq(eos_md_update(md, "hello\n", 6), 0);
	ck_assert_int_eq(eos_md_final(md, out), 0);
	ck_assert_mem_eq(out, blob_sha1, EOS_SHA1_LEN);
	eos_md_free(md);
	md = NULL;
	ck_assert_int_eq(eos_md_new(EOS_DIGEST_LEN, &md), 0);
	ck_assert_int_eq(eos_md_update(md, "ab", 2), 0);
	ck_assert_int_eq(eos_md_update(md, "c", 1), 0);
	ck_assert_int_eq(eos_md_final(md, out), 0);
	ck_assert_int_eq(eos_sha256("abc", 3, &d), 0);
	ck_assert_mem_eq(out, d.b, EOS_DIGEST_LEN);
	eos_md_free(md);
	ck_assert_int_eq(eos_md_new(16, &md), -EINVAL);
}
END_TEST

START_TEST(json_helpers)
{
	EOS_CLEANUP(json_decrefp) json_t *o = json_object();
	struct eos_error err = { 0 };
	char *s;

	ck_assert_int_eq(eos_json_set(o, "small", eos_json_u64(42)), 0);
	ck_assert_int_eq(eos_json_set(o, "big", eos_json_u64(UINT64_MAX)), 0);
	ck_assert_int_eq(eos_json_set(o, "name", eos_json_bytes("a\xff\0b", 4)), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "small")), 42);
	ck_assert_str_eq(json_string_value(json_object_get(o, "big")), "18446744073709551615");
	ck_assert_str_eq(json_string_value(json_object_get(o, "name")), "a\xef\xbf\xbd\xef\xbf\xbd"
									"b");
	ck_assert_int_eq(eos_json_set(o, "null", NULL), -ENOMEM);
	eos_error_set(&err, -ENOENT, "sandbox 'x' does not exist");
	json_t *e = eos_json_error("not_found", -ENOENT, &err);
	s = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);
	ck_assert_str_eq(s, "{\"error\":{\"code\":2,\"kind\":\"not_found\",\"message\":\"sandbox "
			    "'x' does not exist\"}}");
	free(s);
	json_decref(e);
}
END_TEST

/* Quote s as text output does (bare: escape only) and compare with want. */
static void
check_quote(const char *s, bool bare, const char *want)
{
	cleanup_free char *owned = NULL;
	const char *got = eos_quote_cstr(s, bare, &owned);

	ck_assert_msg(strcmp(got, want) == 0, "quote of '%s': got '%s', want '%s'", s, got, want);
	ck_assert(owned ? got == owned : got == s);
}

START_TEST(quote_like_git)
{
	struct eos_buf b;

	check_quote("plain name.txt", false, "plain name.txt");
	check_quote("\xc3\xbcn\xc3\xaf", false, "\xc3\xbcn\xc3\xaf"); /* UTF-8 passes through */
	check_quote("a\nb", false, "\"a\\nb\"");
	check_quote("a\a\b\t\v\f\r", false, "\"a\\a\\b\\t\\v\\f\\r\"");
	check_quote("q\"x", false, "\"q\\\"x\"");
	check_quote("back\\sl", false, "\"back\\\\sl\"");
	check_quote("\001\033[2J\177", false, "\"\\001\\033[2J\\177\"");
	/* bare: messages that quote their subject themselves */
	check_quote("open 'a\nb': No such file", true, "open 'a\\nb': No such file");
	check_quote("say \"hi\"", true, "say \"hi\"");
	check_quote("x\\y", true, "x\\\\y");
	ck_assert(!eos_quote_needed("ok", 2));
	ck_assert(eos_quote_needed("a\0b", 3)); /* NUL is a control byte too */
	eos_buf_init(&b);
	ck_assert_int_eq(eos_quote_append(&b, "n\0", 2), 0);
	ck_assert_int_eq(eos_quote_append(&b, " ok", 3), 0);
	ck_assert_str_eq((const char *)b.data, "\"n\\000\" ok");
	eos_buf_release(&b);
}
END_TEST

START_TEST(errkind_names_statuses_and_errnos)
{
	ck_assert_str_eq(eos_errkind_name(eos_errkind_of(-ENOENT)), "not_found");
	ck_assert_str_eq(eos_errkind_name(eos_errkind_of(-ENOSPC)), "no_space");
	ck_assert_str_eq(eos_errkind_name(eos_errkind_of(-EBADMSG)), "corrupt");
	ck_assert_str_eq(eos_errkind_name(eos_errkind_of(-12345)), "io");
	ck_assert_int_eq(eos_errkind_http_status(EOS_ERRKIND_INVALID_REQUEST), 400);
	ck_assert_int_eq(eos_errkind_http_status(EOS_ERRKIND_UNAUTHORIZED), 401);
	ck_assert_int_eq(eos_errkind_http_status(EOS_ERRKIND_NOT_FOUND), 404);
	ck_assert_str_eq(eos_errkind_name(EOS_ERRKIND_COUNT), "io");
	/* every kind has a distinct name that parses back to it */
	for (int k = 0; k < EOS_ERRKIND_COUNT; k++) {
		const char *name = eos_errkind_name(k);

		ck_assert_ptr_nonnull(name);
		ck_assert_int_eq(eos_errkind_parse(name), k);
		ck_assert_int_ge(eos_errkind_http_status(k), 400);
	}
	ck_assert_int_eq(eos_errkind_parse("no-such-kind"), -EINVAL);
}
END_TEST

enum {
	MUTEX_THREADS = 4,
	MUTEX_ROUNDS = 200000,
};

struct mutex_shared {
	struct eos_mutex m;
	uint64_t counter; /* guarded by m, deliberately not atomic */
};

static void *
mutex_worker(void *arg)
{
	struct mutex_shared *s = arg;

	for (int i = 0; i < MUTEX_ROUNDS; i++) {
		eos_mutex_lock(&s->m);
		s->counter++;
		if (i % 1000 == 0)
			usleep(10); /* held across a sleep: the others wait in the kernel */
		eos_mutex_unlock(&s->m);
	}
	return NULL;
}

/* Contended increments all land, trylock fails while held and succeeds once released. */
START_TEST(mutex_excludes_and_trylock)
{
	struct mutex_shared s = { 0 };
	pthread_t t[MUTEX_THREADS];

	ck_assert_uint_eq(sizeof(struct eos_mutex), 4);
	for (int i = 0; i < MUTEX_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, mutex_worker, &s), 0);
	for (int i = 0; i < MUTEX_THREADS; i++)
		pthread_join(t[i], NULL);
	ck_assert_uint_eq(s.counter, (uint64_t)MUTEX_THREADS * MUTEX_ROUNDS);
	ck_assert(eos_mutex_trylock(&s.m));
	ck_assert(!eos_mutex_trylock(&s.m));
	eos_mutex_unlock(&s.m);
	ck_assert(eos_mutex_trylock(&s.m));
	eos_mutex_unlock(&s.m);
}
END_TEST

static Suite *
common_suite(void)
{
	Suite *s = suite_create("common");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, error_set_and_prefix);
	tcase_add_test(tc, error_prefix_truncates_safely);
	tcase_add_test(tc, neg_errno_never_zero);
	tcase_add_test(tc, buf_append_and_steal);
	tcase_add_test(tc, buf_reader_round_trip);
	tcase_add_test(tc, endian_helpers);
	tcase_add_test(tc, path_check_rules);
	tcase_add_test(tc, path_check_total_length);
	tcase_add_test(tc, path_normalize_user_input);
	tcase_add_test(tc, path_split_join_below);
	tcase_add_test(tc, rm_rf_removes_tree_not_link_targets);
	tcase_add_test(tc, digest_known_vectors);
	tcase_add_test(tc, digest_md_git_blob);
	tcase_add_test(tc, json_helpers);
	tcase_add_test(tc, quote_like_git);
	tcase_add_test(tc, errkind_names_statuses_and_errnos);
	tcase_add_test(tc, mutex_excludes_and_trylock);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(common_suite());
}
