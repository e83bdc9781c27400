/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of eosd's publish_workspace_session and fork_workspace_session: live sessions
 * published in place and forked (eos_view_publish_live(), eos_view_fork()), called as the
 * gateway calls them, over a real store and real FUSE mounts.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/errkind.h"

#include "tests/unit/test-eosd-session-util.h"
#include "tests/unit/testutil.h"

static struct es_fixture fx;

static void
setup(void)
{
	es_open(&fx);
}

static void
teardown(void)
{
	es_close(&fx, false);
}

static void
edit(const char *session, const char *rid, const char *old, const char *new)
{
	char args[512];

	snprintf(args, sizeof(args),
		 "{\"workspace_session_id\":\"%s\",\"path\":\"a.txt\",\"edits\":"
		 "[{\"old_string\":\"%s\",\"new_string\":\"%s\"}]}",
		 session, old, new);
	json_decref(es_ok(&fx, "file_edit", rid, args));
}

static char *
read_in(const char *session, const char *path)
{
	char args[256];
	json_t *o;
	char *s;

	snprintf(args, sizeof(args), "{%s%s%s\"path\":\"%s\"}",
		 session ? "\"workspace_session_id\":\"" : "", session ? session : "",
		 session ? "\"," : "", path);
	o = es_ok(&fx, "file_read", NULL, args);
	s = strdup(es_str(o, "content"));
	json_decref(o);
	return s;
}

START_TEST(publish_live_session)
{
	cleanup_free char *head = NULL, *live = NULL, *host = NULL, *got = NULL;
	json_t *o;

	es_create(&fx, "w1");
	edit("w1", "op-x", "two", "TWO");
	json_decref(
		es_ok(&fx, "file_write", NULL,
		      "{\"workspace_session_id\":\"w1\",\"path\":\"s.txt\",\"content\":\"s\\n\"}"));
	o = es_ok(&fx, "publish_workspace_session", "pub-1", "{\"workspace_session_id\":\"w1\"}");
	ck_assert_str_eq(es_str(o, "status"), "published");
	ck_assert_str_eq(es_str(o, "version"), "L000002");
	ck_assert_str_eq(es_str(o, "owner"), "operation:pub-1");
	json_decref(o);
	head = read_in(NULL, "a.txt");
	ck_assert_str_eq(head, "one\nTWO\nthree\n");
	/* the session goes on from the new head, its delta empty, still mounted */
	o = es_ok(&fx, "inspect_workspace_session", NULL, "{\"workspace_session_id\":\"w1\"}");
	ck_assert_str_eq(es_str(o, "base_version"), "L000002");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "delta"), "paths")),
			 0);
	json_decref(o);
	host = es_mpath(&fx, "w1", "a.txt");
	got = es_slurp(host);
	ck_assert_str_eq(got, "one\nTWO\nthree\n");
	live = read_in("w1", "s.txt");
	ck_assert_str_eq(live, "s\n");

	o = es_ok(&fx, "file_blame", NULL, "{\"path\":\"a.txt\"}");
	ck_assert_str_eq(es_str(json_array_get(json_object_get(o, "ranges"), 1), "owner"),
			 "operation:op-x");
	json_decref(o);
	o = es_ok(&fx, "file_blame", NULL, "{\"path\":\"s.txt\"}");
	ck_assert_str_eq(es_str(json_array_get(json_object_get(o, "ranges"), 0), "owner"),
			 "workspace_session:w1");
	json_decref(o);

	o = es_ok(&fx, "publish_workspace_session", NULL, "{\"workspace_session_id\":\"w1\"}");
	ck_assert_str_eq(es_str(o, "status"), "no_op");
	json_decref(o);
}
END_TEST

START_TEST(publish_rejected_keeps_session)
{
	struct eos_error err = { 0 };
	cleanup_free char *kept = NULL;
	json_t *o, *c;

	es_create(&fx, "w1");
	es_create(&fx, "w2");
	edit("w1", NULL, "two", "deux");
	edit("w2", NULL, "two", "zwei");
	json_decref(
		es_ok(&fx, "publish_workspace_session", NULL, "{\"workspace_session_id\":\"w1\"}"));
	ck_assert_int_eq(es_call(&fx, "publish_workspace_session", NULL,
				 "{\"workspace_session_id\":\"w2\"}", NULL, &err),
			 -EBUSY);
	ck_assert_int_eq(es_last_kind(), EOS_ERRKIND_PUBLISH_REJECTED);
	ck_assert_msg(strstr(err.msg, "1 conflicting path"), "%s", err.msg);
	c = json_array_get(json_object_get(es_last_details(), "conflicts"), 0);
	ck_assert_str_eq(es_str(c, "path"), "a.txt");
	ck_assert_str_eq(es_str(c, "kind"), "content");
	ck_assert_uint_ge(json_array_size(json_object_get(c, "lines")), 1);
	kept = read_in("w2", "a.txt");
	ck_assert_str_eq(kept, "one\nzwei\nthree\n");
	o = es_ok(&fx, "inspect_workspace_session", NULL, "{\"workspace_session_id\":\"w2\"}");
	ck_assert_str_eq(es_str(o, "base_version"), "L000001");
	json_decref(o);
}
END_TEST

START_TEST(publish_destroy_after)
{
	cleanup_free char *head = NULL;
	json_t *o;

	es_create(&fx, "w1");
	edit("w1", NULL, "one", "1");
	o = es_ok(&fx, "publish_workspace_session", NULL,
		  "{\"workspace_session_id\":\"w1\",\"destroy_after\":true}");
	ck_assert_str_eq(es_str(o, "status"), "published");
	ck_assert(json_is_true(json_object_get(o, "destroyed")));
	json_decref(o);
	es_fails(&fx, "inspect_workspace_session", "{\"workspace_session_id\":\"w1\"}", -ENOENT,
		 "w1");
	head = read_in(NULL, "a.txt");
	ck_assert_str_eq(head, "1\ntwo\nthree\n");
}
END_TEST

START_TEST(fork_is_isolated)
{
	cleanup_free char *a = NULL, *b = NULL, *c = NULL;
	json_t *o;

	es_create(&fx, "w1");
	edit("w1", NULL, "one", "uno");
	o = es_ok(&fx, "fork_workspace_session", NULL,
		  "{\"workspace_session_id\":\"w1\",\"new_workspace_session_id\":\"f1\"}");
	ck_assert_str_eq(es_str(o, "workspace_session_id"), "f1");
	ck_assert_str_eq(es_str(o, "forked_from"), "w1");
	ck_assert_str_eq(es_str(o, "base_version"), "L000001");
	json_decref(o);
	a = read_in("f1", "a.txt");
	ck_assert_str_eq(a, "uno\ntwo\nthree\n");
	edit("f1", NULL, "two", "dos");
	edit("w1", NULL, "three", "tres");
	b = read_in("w1", "a.txt");
	ck_assert_str_eq(b, "uno\ntwo\ntres\n");
	c = read_in("f1", "a.txt");
	ck_assert_str_eq(c, "uno\ndos\nthree\n");
	es_fails(&fx, "fork_workspace_session",
		 "{\"workspace_session_id\":\"w1\",\"new_workspace_session_id\":\"f1\"}", -EEXIST,
		 "f1");
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("eosd-session-publish");
	TCase *tc = tcase_create("publish");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_unchecked_fixture(tc, NULL, es_cleanup_leftovers);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, publish_live_session);
	tcase_add_test(tc, publish_rejected_keeps_session);
	tcase_add_test(tc, publish_destroy_after);
	tcase_add_test(tc, fork_is_isolated);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	es_init();
	return eos_test_run(suite());
}
