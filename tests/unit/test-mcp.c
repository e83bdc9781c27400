/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of common/mcp and common/catalog-schema: the tools generated from the catalog, the
 * JSON-RPC answers, and the life of a tools/call (checked arguments, progress, cancel, results),
 * with a fake host that keeps what is sent and the calls started.
 */
#include <check.h>
#include <string.h>

#include "common/catalog-schema.h"
#include "common/catalog.h"
#include "common/cleanup.h"
#include "common/json.h"
#include "common/mcp.h"

struct host {
	json_t *sent; /* every message sent, in order */
	struct eos_mcp_call *calls[8];
	size_t ncalls;
};

static void
host_send(void *arg, const json_t *msg)
{
	struct host *h = arg;

	json_array_append_new(h->sent, json_deep_copy(msg));
}

static void
host_start(void *arg, struct eos_mcp_call *call)
{
	struct host *h = arg;

	ck_assert_uint_lt(h->ncalls, 8);
	h->calls[h->ncalls++] = call;
}

static struct eos_mcp *
server(struct host *h, unsigned surfaces, const char *sandbox)
{
	struct eos_mcp_config cfg = { .name = "eos",
				      .version = "1",
				      .instructions = "use it",
				      .surfaces = surfaces,
				      .sandbox_id = sandbox,
				      .send = host_send,
				      .send_arg = h,
				      .start = host_start,
				      .start_arg = h };
	struct eos_mcp *m = NULL;

	h->sent = json_array();
	h->ncalls = 0;
	ck_assert_int_eq(eos_mcp_new(&cfg, &m, NULL), 0);
	return m;
}

/* Feed text, return the one message it sent (borrowed from h->sent), or NULL for none. */
static const json_t *
feed(struct eos_mcp *m, struct host *h, const char *text)
{
	size_t before = json_array_size(h->sent);

	eos_mcp_handle_text(m, text, strlen(text));
	ck_assert_uint_le(json_array_size(h->sent), before + 1);
	return json_array_size(h->sent) > before ? json_array_get(h->sent, before) : NULL;
}

static json_int_t
error_code(const json_t *reply)
{
	return json_integer_value(json_object_get(json_object_get(reply, "error"), "code"));
}

static const json_t *
result(const json_t *reply)
{
	return json_object_get(reply, "result");
}

static size_t
ops_of(unsigned surfaces)
{
	size_t n, k = 0;
	const struct eos_op *ops = eos_catalog_ops(&n);

	for (size_t i = 0; i < n; i++)
		k += (surfaces >> ops[i].surface) & 1;
	return k;
}

START_TEST(schemas_follow_the_catalog)
{
	size_t n;
	const struct eos_op *ops = eos_catalog_ops(&n);

	for (size_t i = 0; i < n; i++) {
		EOS_CLEANUP(json_decrefp) json_t *s = eos_catalog_input_schema(&ops[i], 0);
		EOS_CLEANUP(json_decrefp)
		json_t *f = eos_catalog_input_schema(&ops[i], EOS_SCHEMA_SANDBOX_FIXED);
		const json_t *props = json_object_get(s, "properties");
		const json_t *req = json_object_get(s, "required");
		size_t nreq = 0;

		ck_assert_ptr_nonnull(s);
		ck_assert_str_eq(json_string_value(json_object_get(s, "type")), "object");
		ck_assert(json_is_false(json_object_get(s, "additionalProperties")));
		ck_assert_int_eq(json_object_get(props, "sandbox_id") != NULL,
				 ops[i].needs_sandbox || ops[i].sandbox_optional);
		ck_assert_ptr_null(json_object_get(json_object_get(f, "properties"), "sandbox_id"));
		for (size_t a = 0; a < ops[i].nargs; a++) {
			const json_t *p = json_object_get(props, ops[i].args[a].name);

			ck_assert_ptr_nonnull(p);
			ck_assert_int_eq(json_object_get(p, "default") != NULL,
					 ops[i].args[a].def != NULL);
			nreq += ops[i].args[a].required;
		}
		ck_assert_uint_eq(json_array_size(req), nreq + ops[i].needs_sandbox);
	}
}
END_TEST

START_TEST(argument_kinds_become_types)
{
	const struct eos_op *op = eos_catalog_find("file_read");
	EOS_CLEANUP(json_decrefp) json_t *s = eos_catalog_input_schema(op, 0);
	const json_t *props = json_object_get(s, "properties");
	const json_t *limit = json_object_get(props, "limit");

	ck_assert_str_eq(json_string_value(json_object_get(limit, "type")), "integer");
	ck_assert_int_eq(json_integer_value(json_object_get(limit, "minimum")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(limit, "default")), 2000);
	ck_assert_ptr_nonnull(json_object_get(json_object_get(props, "path"), "pattern"));
	ck_assert_ptr_nonnull(json_object_get(json_object_get(props, "sandbox_id"), "pattern"));
	op = eos_catalog_find("file_edit");
	json_decref(s);
	s = eos_catalog_input_schema(op, 0);
	props = json_object_get(s, "properties");
	ck_assert_str_eq(
		json_string_value(json_object_get(json_object_get(props, "edits"), "type")),
		"array");
	op = eos_catalog_find("export_changes");
	json_decref(s);
	s = eos_catalog_input_schema(op, 0);
	ck_assert_uint_eq(
		json_array_size(json_object_get(
			json_object_get(json_object_get(s, "properties"), "format"), "enum")),
		4);
}
END_TEST

START_TEST(initialize_and_paging)
{
	struct host h;
	unsigned all = (1u << EOS_SURFACE_COUNT) - 1;
	struct eos_mcp *m = server(&h, all, NULL);
	const json_t *r;
	size_t total;

	r = feed(m, &h,
		 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
		 "{\"protocolVersion\":\"2024-11-05\",\"capabilities\":{}}}");
	ck_assert_str_eq(json_string_value(json_object_get(result(r), "protocolVersion")),
			 EOS_MCP_PROTOCOL_VERSION);
	ck_assert_str_eq(json_string_value(json_object_get(result(r), "instructions")), "use it");
	ck_assert_ptr_null(
		feed(m, &h, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
	r = feed(m, &h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	ck_assert_uint_eq(json_array_size(json_object_get(result(r), "tools")), EOS_MCP_PAGE_SIZE);
	ck_assert_str_eq(json_string_value(json_object_get(result(r), "nextCursor")), "20");
	r = feed(m, &h,
		 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":"
		 "{\"cursor\":\"20\"}}");
	total = 20 + json_array_size(json_object_get(result(r), "tools"));
	ck_assert_uint_eq(total, ops_of(all));
	ck_assert_ptr_null(json_object_get(result(r), "nextCursor"));
	ck_assert_uint_eq(json_array_size(eos_mcp_tools(m)), ops_of(all));
	eos_mcp_free(m);
	json_decref(h.sent);
}
END_TEST

START_TEST(protocol_errors)
{
	struct host h;
	struct eos_mcp *m = server(&h, 1u << EOS_SURFACE_OBSERVABILITY, NULL);
	const json_t *r;

	r = feed(m, &h, "{oops");
	ck_assert_int_eq(error_code(r), EOS_MCP_PARSE_ERROR);
	ck_assert(json_is_null(json_object_get(r, "id")));
	ck_assert_int_eq(error_code(feed(m, &h, "[1]")), EOS_MCP_INVALID_REQUEST);
	ck_assert_int_eq(
		error_code(feed(m, &h, "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}")),
		EOS_MCP_INVALID_REQUEST);
	ck_assert_int_eq(error_code(feed(m, &h, "{\"jsonrpc\":\"2.0\",\"id\":1}")),
			 EOS_MCP_INVALID_REQUEST);
	ck_assert_int_eq(
		error_code(feed(m, &h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x/y\"}")),
		EOS_MCP_METHOD_NOT_FOUND);
	ck_assert_int_eq(error_code(feed(m, &h,
					 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
					 "\"tools/call\",\"params\":{\"name\":\"nope\"}}")),
			 EOS_MCP_INVALID_PARAMS);
	ck_assert_int_eq(error_code(feed(m, &h,
					 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
					 "\"tools/call\",\"params\":{\"name\":"
					 "\"create_sandbox\"}}")),
			 EOS_MCP_INVALID_PARAMS); /* another surface's: not a tool here */
	ck_assert_int_eq(error_code(feed(m, &h,
					 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
					 "\"tools/list\",\"params\":[]}")),
			 EOS_MCP_INVALID_PARAMS);
	ck_assert_ptr_null(feed(m, &h, "{\"jsonrpc\":\"2.0\",\"method\":\"whatever\"}"));
	ck_assert_ptr_null(feed(m, &h, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}"));
	r = feed(m, &h, "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}");
	ck_assert_str_eq(json_string_value(json_object_get(r, "id")), "p");
	ck_assert_uint_eq(json_object_size(result(r)), 0);
	eos_mcp_free(m);
	json_decref(h.sent);
}
END_TEST

START_TEST(calls_are_checked_then_started)
{
	struct host h;
	struct eos_mcp *m = server(&h, 1u << EOS_SURFACE_RUNTIME, NULL);
	EOS_CLEANUP(json_decrefp) json_t *doc = json_pack("{s:s}", "content", "x");
	const json_t *r, *sc;

	r = feed(m, &h,
		 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
		 "{\"name\":\"file_read\",\"arguments\":{\"sandbox_id\":\"s\",\"path\":\"a\","
		 "\"limit\":0}}}");
	ck_assert(json_is_true(json_object_get(result(r), "isError")));
	sc = json_object_get(json_object_get(result(r), "structuredContent"), "error");
	ck_assert_str_eq(json_string_value(json_object_get(sc, "kind")), "invalid_request");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(sc, "message")), "limit"));
	ck_assert_uint_eq(h.ncalls, 0);

	ck_assert_ptr_null(feed(m, &h,
				"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
				"\"params\":{\"name\":\"file_read\",\"arguments\":"
				"{\"sandbox_id\":\"s\",\"path\":\"a\"},\"_meta\":"
				"{\"progressToken\":\"tok\"}}}"));
	ck_assert_uint_eq(h.ncalls, 1);
	ck_assert_uint_eq(eos_mcp_in_flight(m), 1);
	ck_assert_str_eq(eos_mcp_call_sandbox(h.calls[0]), "s");
	ck_assert_ptr_null(json_object_get(eos_mcp_call_args(h.calls[0]), "sandbox_id"));
	ck_assert_int_eq(
		json_integer_value(json_object_get(eos_mcp_call_args(h.calls[0]), "limit")), 2000);
	ck_assert(eos_mcp_call_wants_progress(h.calls[0]));
	eos_mcp_call_progress(h.calls[0], "half");
	eos_mcp_call_progress(h.calls[0], "more");
	r = json_array_get(h.sent, 1);
	ck_assert_str_eq(json_string_value(json_object_get(r, "method")), "notifications/progress");
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(json_array_get(h.sent, 2), "params"), "progress")),
			 2);
	eos_mcp_call_finish(h.calls[0], true, doc);
	r = json_array_get(h.sent, 3);
	ck_assert(json_is_false(json_object_get(result(r), "isError")));
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(result(r), "structuredContent"), "content")),
			 "x");
	ck_assert_uint_eq(eos_mcp_in_flight(m), 0);
	eos_mcp_free(m);
	json_decref(h.sent);
}
END_TEST

START_TEST(errors_and_cancel)
{
	struct host h;
	struct eos_mcp *m = server(&h, 1u << EOS_SURFACE_MANAGEMENT, NULL);
	EOS_CLEANUP(json_decrefp)
	json_t *env = json_pack("{s:{s:s,s:s,s:{}}}", "error", "kind", "not_found", "message",
				"no 's'", "details");
	const json_t *r;
	size_t before;

	feed(m, &h,
	     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
	     "{\"name\":\"inspect_sandbox\",\"arguments\":{\"sandbox_id\":\"s\"}}}");
	feed(m, &h,
	     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
	     "{\"name\":\"list_sandboxes\"}}");
	ck_assert_uint_eq(h.ncalls, 2);
	ck_assert(!eos_mcp_call_wants_progress(h.calls[0]));
	eos_mcp_call_finish(h.calls[0], false, env);
	r = json_array_get(h.sent, 0);
	ck_assert(json_is_true(json_object_get(result(r), "isError")));
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(json_object_get(result(r), "content"), 0), "text")),
			 "not_found: no 's'");
	ck_assert_ptr_null(feed(m, &h,
				"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
				"\"params\":{\"requestId\":2}}"));
	ck_assert(eos_mcp_call_cancelled(h.calls[1]));
	before = json_array_size(h.sent);
	eos_mcp_call_progress(h.calls[1], "late");
	eos_mcp_call_finish(h.calls[1], true, env);
	ck_assert_uint_eq(json_array_size(h.sent), before); /* a cancelled request: no answer */
	ck_assert_uint_eq(eos_mcp_in_flight(m), 0);
	eos_mcp_free(m);
	json_decref(h.sent);
}
END_TEST

START_TEST(one_sandbox)
{
	struct host h;
	unsigned all = (1u << EOS_SURFACE_COUNT) - 1;
	struct eos_mcp *m = server(&h, all, "sb1");
	struct eos_mcp *bad = NULL;
	struct eos_mcp_config cfg = { .surfaces = all, .sandbox_id = "../x" };
	const json_t *t;
	size_t i;

	json_array_foreach(eos_mcp_tools(m), i, t)
	{
		const char *name = json_string_value(json_object_get(t, "name"));

		ck_assert_str_ne(name, "list_sandboxes");
		ck_assert_str_ne(name, "create_sandbox");
		ck_assert_ptr_null(json_object_get(
			json_object_get(json_object_get(t, "inputSchema"), "properties"),
			"sandbox_id"));
	}
	feed(m, &h,
	     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
	     "{\"name\":\"file_list\"}}");
	ck_assert_uint_eq(h.ncalls, 1);
	ck_assert_str_eq(eos_mcp_call_sandbox(h.calls[0]), "sb1");
	eos_mcp_call_fail(h.calls[0], "io", "gone");
	ck_assert_int_eq(eos_mcp_new(&cfg, &bad, NULL), -EINVAL);
	eos_mcp_free(m);
	json_decref(h.sent);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("mcp");
	TCase *tc = tcase_create("mcp");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, schemas_follow_the_catalog);
	tcase_add_test(tc, argument_kinds_become_types);
	tcase_add_test(tc, initialize_and_paging);
	tcase_add_test(tc, protocol_errors);
	tcase_add_test(tc, calls_are_checked_then_started);
	tcase_add_test(tc, errors_and_cancel);
	tcase_add_test(tc, one_sandbox);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
