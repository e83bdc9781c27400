/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of supervisor/console: logins with tokens (the management token opens every
 * surface, limited tokens one sandbox, the rules of combining them), the CSRF token, one-time
 * codes (once only), logout, a revoked token ending its session, the bound on sessions, the
 * session's JSON, and the embedded files.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/errkind.h"
#include "common/json.h"

#include "supervisor/console.h"
#include "tests/unit/testutil.h"

struct fixture {
	char *dir;
	struct eosd_auth *auth;
	struct eosd_console *console;
	char mgmt[EOSD_TOKEN_HEX_LEN + 1];
};

static void
setup(struct fixture *f)
{
	struct eos_error err = { 0 };
	char path[4096];
	FILE *in;

	f->dir = eos_test_tmpdir("console");
	ck_assert_int_eq(eosd_auth_open(f->dir, &f->auth, &err), 0);
	ck_assert_int_eq(eosd_console_new(f->auth, &f->console), 0);
	snprintf(path, sizeof(path), "%s/tokens/management", f->dir);
	ck_assert_ptr_nonnull(in = fopen(path, "re"));
	ck_assert_ptr_nonnull(fgets(f->mgmt, sizeof(f->mgmt), in));
	fclose(in);
}

static void
teardown(struct fixture *f)
{
	eosd_console_free(f->console);
	eosd_auth_free(f->auth);
	eos_test_rm_rf(f->dir);
	free(f->dir);
}

/* A token of surface limited to sandbox sb (its id into id, when not NULL). */
static char *
limited(struct fixture *f, enum eos_surface surface, const char *sb, char *id)
{
	struct eos_error err = { 0 };
	EOS_CLEANUP(json_decrefp) json_t *out = NULL;

	ck_assert_int_eq(eosd_auth_issue(f->auth, surface, sb, 0, &out, &err), 0);
	if (id)
		snprintf(id, EOSD_TOKEN_ID_MAX + 1, "%s",
			 json_string_value(json_object_get(out, "token_id")));
	return strdup(json_string_value(json_object_get(out, "token")));
}

/* eosd_console_check() of op on the login l: the errno, *kind set on refusal. */
static int
check_op(struct fixture *f, const struct eosd_console_login *l, const char *csrf, const char *op,
	 struct eosd_auth_scope *s, int *kind)
{
	struct eos_error err = { 0 };

	*kind = -1;
	return eosd_console_check(f->console, l->sid, csrf, eos_catalog_find(op), s, kind, &err);
}

START_TEST(management_opens_every_surface)
{
	struct fixture f;
	struct eosd_console_login l;
	struct eosd_auth_scope s;
	struct eos_error err = { 0 };
	const char *tokens[1];
	int kind;

	setup(&f);
	tokens[0] = f.mgmt;
	ck_assert_int_eq(eosd_console_login(f.console, tokens, 1, &l, &kind, &err), 0);
	ck_assert_uint_eq(strlen(l.sid), EOSD_CONSOLE_SECRET_LEN);
	ck_assert_str_ne(l.sid, l.csrf);
	ck_assert_int_eq(check_op(&f, &l, l.csrf, "list_sandboxes", &s, &kind), 0);
	ck_assert_int_eq(check_op(&f, &l, l.csrf, "exec_command", &s, &kind), 0);
	ck_assert_int_eq(s.surface, EOS_SURFACE_RUNTIME);
	ck_assert(!s.limited);
	ck_assert_int_eq(check_op(&f, &l, l.csrf, "events", &s, &kind), 0);
	/* the CSRF token is required, and must be the session's */
	ck_assert_int_lt(check_op(&f, &l, NULL, "ping", &s, &kind), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_FORBIDDEN);
	ck_assert_int_lt(check_op(&f, &l, l.sid, "ping", &s, &kind), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_FORBIDDEN);
	/* logout ends it */
	eosd_console_logout(f.console, l.sid);
	ck_assert_int_lt(check_op(&f, &l, l.csrf, "ping", &s, &kind), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_UNAUTHORIZED);
	teardown(&f);
}
END_TEST

START_TEST(limited_tokens_reach_their_sandbox_and_surfaces)
{
	struct fixture f;
	struct eosd_console_login l;
	struct eosd_auth_scope s;
	struct eos_error err = { 0 };
	cleanup_free char *rt = NULL, *obs = NULL, *other = NULL;
	const char *tokens[3];
	int kind;

	setup(&f);
	rt = limited(&f, EOS_SURFACE_RUNTIME, "sb1", NULL);
	obs = limited(&f, EOS_SURFACE_OBSERVABILITY, "sb1", NULL);
	other = limited(&f, EOS_SURFACE_OBSERVABILITY, "sb2", NULL);
	tokens[0] = rt, tokens[1] = obs;
	ck_assert_int_eq(eosd_console_login(f.console, tokens, 2, &l, &kind, &err), 0);
	ck_assert_int_eq(check_op(&f, &l, l.csrf, "exec_command", &s, &kind), 0);
	ck_assert(s.limited);
	ck_assert_str_eq(s.sandbox, "sb1");
	ck_assert_int_eq(check_op(&f, &l, l.csrf, "layerstack", &s, &kind), 0);
	ck_assert_int_eq(s.surface, EOS_SURFACE_OBSERVABILITY);
	ck_assert_int_lt(check_op(&f, &l, l.csrf, "list_sandboxes", &s, &kind), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_FORBIDDEN);
	/* tokens of two sandboxes, or the management token with another, are refused */
	tokens[1] = other;
	ck_assert_int_eq(eosd_console_login(f.console, tokens, 2, &l, &kind, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "same sandbox"));
	tokens[0] = f.mgmt;
	ck_assert_int_eq(eosd_console_login(f.console, tokens, 2, &l, &kind, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "management token alone"));
	tokens[0] = "nothex";
	ck_assert_int_lt(eosd_console_login(f.console, tokens, 1, &l, &kind, &err), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_UNAUTHORIZED);
	teardown(&f);
}
END_TEST

START_TEST(a_revoked_token_ends_its_session)
{
	struct fixture f;
	struct eosd_console_login l;
	struct eosd_auth_scope s;
	struct eos_error err = { 0 };
	char id[EOSD_TOKEN_ID_MAX + 1];
	cleanup_free char *rt = NULL;
	EOS_CLEANUP(json_decrefp) json_t *out = NULL;
	const char *tokens[1];
	int kind;

	setup(&f);
	rt = limited(&f, EOS_SURFACE_RUNTIME, "sb1", id);
	tokens[0] = rt;
	ck_assert_int_eq(eosd_console_login(f.console, tokens, 1, &l, &kind, &err), 0);
	ck_assert_int_eq(check_op(&f, &l, l.csrf, "file_read", &s, &kind), 0);
	ck_assert_int_eq(eosd_auth_revoke(f.auth, id, &out, &err), 0);
	ck_assert_int_lt(check_op(&f, &l, l.csrf, "file_read", &s, &kind), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_UNAUTHORIZED);
	ck_assert_ptr_null(eosd_console_session_json(f.console, l.sid, &kind, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "revoked"));
	teardown(&f);
}
END_TEST

START_TEST(a_code_logs_in_once)
{
	struct fixture f;
	struct eosd_console_login l;
	struct eos_error err = { 0 };
	struct eos_digest d;
	char code[EOSD_CONSOLE_SECRET_LEN + 1];
	int64_t expires;
	int kind;

	setup(&f);
	ck_assert_int_eq(eos_sha256(f.mgmt, strlen(f.mgmt), &d), 0);
	ck_assert_int_eq(eosd_console_code_new(f.console, &d, code, &expires, &err), 0);
	ck_assert_int_eq(eosd_console_login_code(f.console, code, &l, &kind, &err), 0);
	ck_assert_int_eq(eosd_console_login_code(f.console, code, &l, &kind, &err), -EACCES);
	ck_assert_int_eq(kind, EOS_ERRKIND_UNAUTHORIZED);
	ck_assert_int_eq(eosd_console_login_code(f.console, "0123", &l, &kind, &err), -EACCES);
	teardown(&f);
}
END_TEST

START_TEST(sessions_are_bounded_oldest_first)
{
	struct fixture f;
	struct eosd_console_login first, l;
	struct eosd_auth_scope s;
	struct eos_error err = { 0 };
	const char *tokens[1];
	int kind;

	setup(&f);
	tokens[0] = f.mgmt;
	ck_assert_int_eq(eosd_console_login(f.console, tokens, 1, &first, &kind, &err), 0);
	for (int i = 0; i < EOSD_CONSOLE_SESSIONS_MAX - 1; i++)
		ck_assert_int_eq(eosd_console_login(f.console, tokens, 1, &l, &kind, &err), 0);
	ck_assert_int_eq(check_op(&f, &first, first.csrf, "ping", &s, &kind), 0);
	/* one more: the oldest login goes (the first of equal ages) */
	ck_assert_int_eq(eosd_console_login(f.console, tokens, 1, &l, &kind, &err), 0);
	ck_assert_int_eq(check_op(&f, &l, l.csrf, "ping", &s, &kind), 0);
	ck_assert_int_lt(check_op(&f, &first, first.csrf, "ping", &s, &kind), 0);
	ck_assert_int_eq(kind, EOS_ERRKIND_UNAUTHORIZED);
	teardown(&f);
}
END_TEST

START_TEST(session_json_and_files)
{
	struct fixture f;
	struct eosd_console_login l;
	struct eos_error err = { 0 };
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	const struct eosd_console_asset *a;
	const char *tokens[1];
	int kind;

	setup(&f);
	tokens[0] = f.mgmt;
	ck_assert_int_eq(eosd_console_login(f.console, tokens, 1, &l, &kind, &err), 0);
	ck_assert_ptr_nonnull(doc = eosd_console_session_json(f.console, l.sid, &kind, &err));
	ck_assert_str_eq(json_string_value(json_object_get(doc, "csrf")), l.csrf);
	ck_assert(json_is_true(json_object_get(json_object_get(doc, "surfaces"), "runtime")));
	ck_assert(json_is_null(json_object_get(doc, "sandbox_id")));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "operations"),
							   "exec_command")),
			 "runtime");
	ck_assert_ptr_null(eosd_console_session_json(f.console, "bogus", &kind, &err));
	ck_assert_int_eq(kind, EOS_ERRKIND_UNAUTHORIZED);
	ck_assert_ptr_nonnull(a = eosd_console_asset_find("/"));
	ck_assert_ptr_nonnull(strstr((const char *)a->data, "/console/app.js"));
	ck_assert_ptr_nonnull(a = eosd_console_asset_find("/console/app.js"));
	ck_assert_str_eq(a->type, "text/javascript; charset=utf-8");
	ck_assert_ptr_null(eosd_console_asset_find("/console/nothing.js"));
	teardown(&f);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("eosd-console");
	TCase *tc = tcase_create("console");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, management_opens_every_surface);
	tcase_add_test(tc, limited_tokens_reach_their_sandbox_and_surfaces);
	tcase_add_test(tc, a_revoked_token_ends_its_session);
	tcase_add_test(tc, a_code_logs_in_once);
	tcase_add_test(tc, sessions_are_bounded_oldest_first);
	tcase_add_test(tc, session_json_and_files);
	suite_add_tcase(s, tc);
	return eos_test_run(s);
}
