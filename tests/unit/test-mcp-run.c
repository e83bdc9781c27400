/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of common/mcp-run: eosd's events as progress text, and a command followed in steps
 * (the yield cut into steps, outputs joined, the deadline, a cancel as Ctrl-C, a failed step).
 */
#include <check.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/json.h"
#include "common/mcp-run.h"

enum {
	MS = 1000000,
};

static json_t *
doc_of(const char *text)
{
	json_t *d = json_loads(text, 0, NULL);

	ck_assert_ptr_nonnull(d);
	return d;
}

START_TEST(event_text)
{
	const struct eos_op *op = eos_catalog_find("create_sandbox");
	cleanup_free char *p = NULL, *e = NULL, *w = NULL;

	ck_assert_ptr_nonnull(op);
	p = eos_mcp_event_text(op, "progress",
			       "{\"phase\":\"import\",\"files\":12,\"bytes\":30,\"total_files\":40,"
			       "\"total_bytes\":100}");
	ck_assert_str_eq(p, "create_sandbox: import files 12/40 bytes 30/100");
	e = eos_mcp_event_text(op, "event", "{\"name\":\"x\"}");
	ck_assert_str_eq(e, "event: {\"name\":\"x\"}");
	w = eos_mcp_event_text(op, "progress", "not json");
	ck_assert_str_eq(w, "create_sandbox: working");
	ck_assert(eos_mcp_op_is_command(eos_catalog_find("exec_command")));
	ck_assert(eos_mcp_op_is_command(eos_catalog_find("write_command_stdin")));
	ck_assert(!eos_mcp_op_is_command(op));
}
END_TEST

static const char *
str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static json_int_t
num(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

START_TEST(steps_until_the_end)
{
	EOS_CLEANUP(json_decrefp) json_t *args = doc_of("{\"cmd\":\"x\",\"yield_time_ms\":2000}");
	EOS_CLEANUP(json_decrefp) json_t *first = NULL, *next = NULL, *res = NULL;
	struct eos_mcp_command m;
	char msg[128];
	bool ok = false;

	ck_assert_int_eq(eos_mcp_command_begin(&m, args, 0, &first), 0);
	ck_assert_int_eq(num(first, "yield_time_ms"), EOS_MCP_STEP_MS);
	ck_assert_str_eq(str(first, "cmd"), "x");
	/* running after the first step: another, "" to only wait, a progress message */
	ck_assert_int_eq(
		eos_mcp_command_next(&m, true,
				     doc_of("{\"status\":\"running\",\"command_session_id\":"
					    "\"cmd-1\",\"output\":\"a\",\"wall_time_ms\":"
					    "500,\"output_truncated\":false}"),
				     false, 500 * (int64_t)MS, &next, msg, sizeof(msg)),
		1);
	ck_assert_str_eq(str(next, "command_session_id"), "cmd-1");
	ck_assert_str_eq(str(next, "chars"), "");
	ck_assert_int_eq(num(next, "yield_time_ms"), EOS_MCP_STEP_MS);
	ck_assert_int_eq(num(next, "max_output_bytes"), 65536 - 1);
	ck_assert_str_eq(msg, "cmd-1: running, 0.5 s, 1 bytes of output");
	json_decref(TAKE_PTR(next));
	/* 300 ms left: the step waits that long */
	ck_assert_int_eq(
		eos_mcp_command_next(&m, true,
				     doc_of("{\"status\":\"running\",\"command_session_id\":"
					    "\"cmd-1\",\"output\":\"b\",\"output_truncated\":"
					    "true}"),
				     false, 1700 * (int64_t)MS, &next, msg, sizeof(msg)),
		1);
	ck_assert_int_eq(num(next, "yield_time_ms"), 300);
	json_decref(TAKE_PTR(next));
	/* it ended: done, the outputs joined, truncated if any step was */
	ck_assert_int_eq(
		eos_mcp_command_next(&m, true,
				     doc_of("{\"status\":\"completed\",\"command_session_id\":"
					    "\"cmd-1\",\"output\":\"c\",\"output_truncated\":"
					    "false}"),
				     false, 1800 * (int64_t)MS, &next, msg, sizeof(msg)),
		0);
	ck_assert_ptr_null(next);
	res = eos_mcp_command_result(&m, &ok);
	ck_assert(ok);
	ck_assert_str_eq(str(res, "output"), "abc");
	ck_assert(json_is_true(json_object_get(res, "output_truncated")));
	eos_mcp_command_release(&m);
}
END_TEST

START_TEST(deadline_cancel_and_failure)
{
	EOS_CLEANUP(json_decrefp) json_t *args = doc_of("{\"yield_time_ms\":100}");
	EOS_CLEANUP(json_decrefp) json_t *first = NULL, *next = NULL, *res = NULL;
	const char *running = "{\"status\":\"running\",\"command_session_id\":\"cmd-2\","
			      "\"output\":\"\"}";
	struct eos_mcp_command m;
	char msg[128];
	bool ok = true;

	/* the yield has passed: running is the answer */
	ck_assert_int_eq(eos_mcp_command_begin(&m, args, 0, &first), 0);
	ck_assert_int_eq(num(first, "yield_time_ms"), 100);
	ck_assert_int_eq(eos_mcp_command_next(&m, true, doc_of(running), false, 100 * (int64_t)MS,
					      &next, msg, sizeof(msg)),
			 0);
	res = eos_mcp_command_result(&m, &ok);
	ck_assert_str_eq(str(res, "status"), "running");
	eos_mcp_command_release(&m);
	json_decref(TAKE_PTR(res));
	json_decref(TAKE_PTR(first));

	/* cancelled: Ctrl-C in the next step, no progress, and that step is the last */
	ck_assert_int_eq(eos_mcp_command_begin(&m, args, 0, &first), 0);
	ck_assert_int_eq(
		eos_mcp_command_next(&m, true, doc_of(running), true, 0, &next, msg, sizeof(msg)),
		1);
	ck_assert_str_eq(str(next, "chars"), "\003");
	ck_assert_int_eq(num(next, "yield_time_ms"), EOS_MCP_CANCEL_YIELD_MS);
	ck_assert_str_eq(msg, "");
	json_decref(TAKE_PTR(next));
	ck_assert_int_eq(
		eos_mcp_command_next(&m, true, doc_of(running), true, 0, &next, msg, sizeof(msg)),
		0);
	eos_mcp_command_release(&m);
	json_decref(TAKE_PTR(first));

	/* a step that fails ends it with its envelope */
	ck_assert_int_eq(eos_mcp_command_begin(&m, args, 0, &first), 0);
	ck_assert_int_eq(eos_mcp_command_next(&m, false,
					      doc_of("{\"error\":{\"kind\":\"not_found\","
						     "\"message\":\"no\"}}"),
					      false, 0, &next, msg, sizeof(msg)),
			 0);
	res = eos_mcp_command_result(&m, &ok);
	ck_assert(!ok);
	ck_assert_ptr_nonnull(json_object_get(res, "error"));
	eos_mcp_command_release(&m);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("mcp-run");
	TCase *tc = tcase_create("mcp-run");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, event_text);
	tcase_add_test(tc, steps_until_the_end);
	tcase_add_test(tc, deadline_cancel_and_failure);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
