/* SPDX-License-Identifier: MIT */
/* Unit tests of common/catalog: the table's own rules and argument validation. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "common/catalog.h"
#include "common/cleanup.h"
#include "common/json.h"

/* Validate the JSON text args against op name; return the result, message in err. */
static int
validate(const char *name, const char *args, json_t **out, struct eos_error *err)
{
	const struct eos_op *op = eos_catalog_find(name);
	json_t *a = json_loads(args, 0, NULL);
	int r;

	ck_assert_ptr_nonnull(op);
	ck_assert_ptr_nonnull(a);
	r = eos_catalog_validate(op, a, err);
	if (out)
		*out = a;
	else
		json_decref(a);
	return r;
}

/* validate() must fail with -EINVAL and a message holding want. */
static void
refused(const char *name, const char *args, const char *want)
{
	struct eos_error err = { 0 };

	ck_assert_int_eq(validate(name, args, NULL, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
}

START_TEST(table_is_consistent)
{
	size_t n;
	const struct eos_op *ops = eos_catalog_ops(&n);

	ck_assert_uint_gt(n, 20);
	for (size_t i = 0; i < n; i++) {
		const struct eos_op *op = &ops[i];
		unsigned pos = 0;

		ck_assert_ptr_eq(eos_catalog_find(op->name), op);
		ck_assert_ptr_eq(eos_catalog_find_cli(op->cli_group, op->cli_verb), op);
		ck_assert_uint_lt(op->surface, EOS_SURFACE_COUNT);
		ck_assert(op->help && *op->help);
		for (size_t j = 0; j < op->nargs; j++) {
			const struct eos_arg *a = &op->args[j];
			json_t *d;

			ck_assert_ptr_eq(eos_catalog_arg(op, a->name), a);
			ck_assert(a->help && *a->help);
			/* positions count 1, 2, … in table order */
			if (a->positional)
				ck_assert_uint_eq(a->positional, ++pos);
			if (!a->def)
				continue;
			/* a default is valid for its own argument, and never on a required one */
			ck_assert(!a->required);
			d = json_loads(a->def, JSON_DECODE_ANY, NULL);
			ck_assert_msg(d && eos_catalog_check_value(a, d, NULL) == 0, "%s.%s",
				      op->name, a->name);
			json_decref(d);
		}
	}
	ck_assert_ptr_null(eos_catalog_find("no_such_op"));
}
END_TEST

START_TEST(defaults_are_filled)
{
	EOS_CLEANUP(json_decrefp) json_t *a = NULL;

	ck_assert_int_eq(validate("file_read", "{\"path\": \"src/a.c\"}", &a, NULL), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(a, "offset")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(a, "limit")), 2000);
	ck_assert_int_eq(validate("list_sandboxes", "{}", NULL, NULL), 0);
	ck_assert_int_eq(eos_catalog_validate(eos_catalog_find("ping"), NULL, NULL), 0);
}
END_TEST

START_TEST(bad_arguments_are_named)
{
	refused("list_sandboxes", "{\"bogus\": 1}", "unknown argument 'bogus'");
	refused("file_read", "{}", "missing argument 'path'");
	refused("file_read", "{\"path\": 3}", "'path': must be a string");
	refused("file_read", "{\"path\": \"a\", \"offset\": 0}", "'offset': 0 is out of range");
	refused("file_read", "{\"path\": \"a\", \"limit\": \"9\"}", "'limit': must be an integer");
	refused("file_read", "{\"path\": \"/etc/passwd\"}", "'/etc/passwd' is absolute");
	refused("file_read", "{\"path\": \"a/../../b\"}", "'path'");
	refused("destroy_sandbox", "{\"force\": 1}", "'force': must be true or false");
	refused("export_changes", "{\"format\": \"zip\"}", "'zip' is not one of");
	refused("export_changes", "{\"format\": \"tar\", \"to\": \"Lx\"}", "not a version");
	refused("create_sandbox", "{\"source\": \"rel/dir\"}", "not an absolute host path");
	refused("create_sandbox", "{\"source\": \"/x\", \"id\": \"a b\"}", "'id'");
	refused("create_sandbox", "{\"source\": \"/x\", \"id\": \".hidden\"}", "'id'");
	refused("file_edit", "{\"path\": \"a\", \"edits\": []}", "1 to 1000 edits");
	refused("file_edit", "{\"path\": \"a\", \"edits\": [{\"old_string\": \"x\"}]}",
		"needs old_string and new_string");
	refused("file_edit",
		"{\"path\": \"a\", \"edits\": [{\"old_string\": \"x\", \"new_string\": \"y\","
		" \"all\": true}]}",
		"unknown field 'all'");
	refused("file_edit",
		"{\"path\": \"a\", \"edits\": [{\"old_string\": \"\", \"new_string\": \"y\"}]}",
		"old_string is empty");
}
END_TEST

START_TEST(words_parse_by_kind)
{
	const struct eos_op *op = eos_catalog_find("file_read");
	json_t *v = NULL;

	ck_assert_int_eq(eos_catalog_parse_word(eos_catalog_arg(op, "limit"), "10", &v, NULL), 0);
	ck_assert_int_eq(json_integer_value(v), 10);
	json_decref(v);
	ck_assert_int_eq(eos_catalog_parse_word(eos_catalog_arg(op, "limit"), "ten", &v, NULL),
			 -EINVAL);
	op = eos_catalog_find("destroy_sandbox");
	ck_assert_int_eq(eos_catalog_parse_word(eos_catalog_arg(op, "force"), "true", &v, NULL), 0);
	ck_assert(json_is_true(v));
	json_decref(v);
	ck_assert_int_eq(eos_surface_parse("runtime"), EOS_SURFACE_RUNTIME);
	ck_assert_int_eq(eos_surface_parse("root"), -EINVAL);
	ck_assert_str_eq(eos_surface_name(EOS_SURFACE_OBSERVABILITY), "observability");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("catalog");
	TCase *tc = tcase_create("catalog");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, table_is_consistent);
	tcase_add_test(tc, defaults_are_filled);
	tcase_add_test(tc, bad_arguments_are_named);
	tcase_add_test(tc, words_parse_by_kind);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
