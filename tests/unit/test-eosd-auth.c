/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of supervisor/auth: the constant-time comparison, the token files, the check of a
 * bearer token against surfaces and sandboxes, and issued tokens (issue, revoke, expiry, kept
 * across a reopen, only their digest stored).
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
#include "common/errkind.h"
#include "common/json.h"

#include "supervisor/auth.h"
#include "tests/unit/testutil.h"

static char *
read_text(const char *dir, const char *name)
{
	char path[4096], *buf = calloc(1, 1 << 16);
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/tokens/%s", dir, name);
	f = fopen(path, "re");
	ck_assert_msg(f != NULL, "open %s", path);
	n = fread(buf, 1, (1 << 16) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return buf;
}

static unsigned
mode_of(const char *dir, const char *name)
{
	char path[4096];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_int_eq(stat(path, &sb), 0);
	return sb.st_mode & 07777;
}

/* Check header against op (on sandbox sb); the errno, *kind and *scope filled. */
static int
check_op(struct eosd_auth *a, const char *token, const char *op, const char *sb, int *kind,
	 struct eosd_auth_scope *scope, struct eos_error *err)
{
	char header[128] = "";

	if (token)
		snprintf(header, sizeof(header), "Bearer %s", token);
	*kind = -1;
	return eosd_auth_check(a, token ? header : NULL, eos_catalog_find(op), sb, scope, kind,
			       err);
}

START_TEST(equal_is_exact)
{
	ck_assert(eosd_auth_equal("abcd", "abcd", 4));
	ck_assert(!eosd_auth_equal("abcd", "abce", 4));
	ck_assert(!eosd_auth_equal("xbcd", "abcd", 4));
	ck_assert(eosd_auth_equal("", "", 0));
}
END_TEST

START_TEST(surface_tokens)
{
	cleanup_free char *dir = eos_test_tmpdir("auth");
	struct eosd_auth *a = NULL;
	struct eosd_auth_scope s;
	struct eos_error err = { 0 };
	cleanup_free char *mt = NULL, *rt = NULL, *mt2 = NULL;
	int kind;

	ck_assert_int_eq(eosd_auth_open(dir, &a, &err), 0);
	ck_assert_uint_eq(mode_of(dir, "tokens"), 0700);
	ck_assert_uint_eq(mode_of(dir, "tokens/management"), 0600);
	mt = read_text(dir, "management");
	rt = read_text(dir, "runtime");
	ck_assert_uint_eq(strlen(mt), 64);
	ck_assert_str_ne(mt, rt);
	ck_assert_int_eq(check_op(a, mt, "list_sandboxes", NULL, &kind, &s, &err), 0);
	ck_assert_int_eq(s.surface, EOS_SURFACE_MANAGEMENT);
	ck_assert(!s.limited);
	ck_assert_int_lt(check_op(a, rt, "list_sandboxes", NULL, &kind, &s, &err), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_FORBIDDEN);
	ck_assert_int_eq(check_op(a, rt, "ping", NULL, &kind, &s, &err), 0);
	ck_assert_int_lt(check_op(a, NULL, "ping", NULL, &kind, &s, &err), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_UNAUTHORIZED);
	ck_assert_ptr_nonnull(strstr(err.msg, "no token"));
	rt[0] = rt[0] == 'a' ? 'b' : 'a';
	ck_assert_int_lt(check_op(a, rt, "ping", NULL, &kind, &s, &err), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_UNAUTHORIZED);
	ck_assert_ptr_nonnull(strstr(err.msg, "unknown token"));
	eosd_auth_free(a);
	a = NULL;
	ck_assert_int_eq(eosd_auth_open(dir, &a, &err), 0);
	mt2 = read_text(dir, "management");
	ck_assert_str_eq(mt, mt2);
	eosd_auth_free(a);
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(token_file_mode_is_checked)
{
	cleanup_free char *dir = eos_test_tmpdir("auth");
	struct eosd_auth *a = NULL;
	struct eos_error err = { 0 };
	char path[4096];

	ck_assert_int_eq(eosd_auth_open(dir, &a, &err), 0);
	eosd_auth_free(a);
	a = NULL;
	snprintf(path, sizeof(path), "%s/tokens/runtime", dir);
	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_int_eq(eosd_auth_open(dir, &a, &err), -EPERM);
	ck_assert_ptr_nonnull(strstr(err.msg, "chmod 600"));
	eos_test_rm_rf(dir);
}
END_TEST

/* Issue a token of surface for sandbox sb; *id receives its id. Caller frees the token. */
static char *
issue(struct eosd_auth *a, enum eos_surface surface, const char *sb, int64_t ttl, char *id)
{
	struct eos_error err = { 0 };
	json_t *out = NULL;
	char *tok;

	ck_assert_int_eq(eosd_auth_issue(a, surface, sb, ttl, &out, &err), 0);
	tok = strdup(json_string_value(json_object_get(out, "token")));
	snprintf(id, EOSD_TOKEN_ID_MAX + 1, "%s",
		 json_string_value(json_object_get(out, "token_id")));
	ck_assert_str_eq(json_string_value(json_object_get(out, "sandbox_id")), sb);
	ck_assert(ttl ? json_is_integer(json_object_get(out, "expires_at"))
		      : json_is_null(json_object_get(out, "expires_at")));
	json_decref(out);
	return tok;
}

START_TEST(issued_tokens)
{
	cleanup_free char *dir = eos_test_tmpdir("auth"), *tok = NULL, *file = NULL;
	struct eosd_auth *a = NULL;
	struct eosd_auth_scope s;
	struct eos_error err = { 0 };
	char id[EOSD_TOKEN_ID_MAX + 1];
	json_t *out = NULL;
	int kind;

	ck_assert_int_eq(eosd_auth_open(dir, &a, &err), 0);
	tok = issue(a, EOS_SURFACE_RUNTIME, "sb1", 0, id);
	ck_assert_int_eq(check_op(a, tok, "file_read", "sb1", &kind, &s, &err), 0);
	ck_assert(s.limited);
	ck_assert_str_eq(s.sandbox, "sb1");
	ck_assert_str_eq(s.token_id, id);
	ck_assert_int_lt(check_op(a, tok, "file_read", "sb2", &kind, &s, &err), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_FORBIDDEN);
	ck_assert_int_lt(check_op(a, tok, "list_sandboxes", NULL, &kind, &s, &err), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_FORBIDDEN);
	file = read_text(dir, "issued.json");
	ck_assert_ptr_null(strstr(file, tok));
	ck_assert_ptr_nonnull(strstr(file, id));
	ck_assert_uint_eq(mode_of(dir, "tokens/issued.json"), 0600);

	/* kept across a reopen, then revoked */
	eosd_auth_free(a);
	a = NULL;
	ck_assert_int_eq(eosd_auth_open(dir, &a, &err), 0);
	ck_assert_int_eq(check_op(a, tok, "file_read", "sb1", &kind, &s, &err), 0);
	ck_assert_int_eq(eosd_auth_revoke(a, id, &out, &err), 0);
	json_decref(out);
	ck_assert_int_lt(check_op(a, tok, "file_read", "sb1", &kind, &s, &err), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_UNAUTHORIZED);
	ck_assert_ptr_nonnull(strstr(err.msg, "revoked"));
	ck_assert_int_eq(eosd_auth_revoke(a, "tok-none", &out, &err), -ENOENT);
	ck_assert_int_eq(eosd_auth_issue(a, EOS_SURFACE_MANAGEMENT, "sb1", 0, &out, &err), -EINVAL);
	eosd_auth_free(a);
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(issued_tokens_expire)
{
	cleanup_free char *dir = eos_test_tmpdir("auth"), *tok = NULL;
	struct eosd_auth *a = NULL;
	struct eosd_auth_scope s;
	struct eos_error err = { 0 };
	char id[EOSD_TOKEN_ID_MAX + 1];
	int kind;

	ck_assert_int_eq(eosd_auth_open(dir, &a, &err), 0);
	tok = issue(a, EOS_SURFACE_OBSERVABILITY, "sb1", 1, id);
	sleep(2);
	ck_assert_int_lt(check_op(a, tok, "ping", NULL, &kind, &s, &err), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_UNAUTHORIZED);
	ck_assert_ptr_nonnull(strstr(err.msg, "expired"));
	eosd_auth_free(a);
	eos_test_rm_rf(dir);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("eosd-auth");
	TCase *tc = tcase_create("auth");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, equal_is_exact);
	tcase_add_test(tc, surface_tokens);
	tcase_add_test(tc, token_file_mode_is_checked);
	tcase_add_test(tc, issued_tokens);
	tcase_add_test(tc, issued_tokens_expire);
	suite_add_tcase(s, tc);
	return eos_test_run(s);
}
