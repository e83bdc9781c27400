/* SPDX-License-Identifier: MIT */
/* common/catalog: look-ups and argument validation over the table of catalog-ops.c. */
#include "common/catalog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/path.h"

static const char *const surfaces[EOS_SURFACE_COUNT] = { "management", "runtime", "observability" };

static const char *const kind_names[] = {
	[EOS_ARG_STRING] = "string",
	[EOS_ARG_INT] = "integer",
	[EOS_ARG_BOOL] = "boolean",
	[EOS_ARG_ENUM] = "enum",
	[EOS_ARG_ID] = "id",
	[EOS_ARG_PATH] = "path",
	[EOS_ARG_HOST_PATH] = "host_path",
	[EOS_ARG_VERSION] = "version",
	[EOS_ARG_EDITS] = "edits",
	[EOS_ARG_ENV] = "env",
};

const char *
eos_surface_name(enum eos_surface s)
{
	return (unsigned)s < EOS_SURFACE_COUNT ? surfaces[s] : "unknown";
}

int
eos_surface_parse(const char *name)
{
	for (int s = 0; s < EOS_SURFACE_COUNT; s++)
		if (strcmp(surfaces[s], name) == 0)
			return s;
	return -EINVAL;
}

const char *
eos_arg_kind_name(enum eos_arg_kind k)
{
	return (unsigned)k <= EOS_ARG_ENV ? kind_names[k] : "unknown";
}

const struct eos_op *
eos_catalog_find(const char *name)
{
	size_t n;
	const struct eos_op *all = eos_catalog_ops(&n);

	for (size_t i = 0; i < n; i++)
		if (strcmp(all[i].name, name) == 0)
			return &all[i];
	return NULL;
}

const struct eos_op *
eos_catalog_find_cli(const char *group, const char *verb)
{
	size_t n;
	const struct eos_op *all = eos_catalog_ops(&n);

	for (size_t i = 0; i < n; i++)
		if (strcmp(all[i].cli_group, group) == 0 && strcmp(all[i].cli_verb, verb) == 0)
			return &all[i];
	return NULL;
}

const struct eos_arg *
eos_catalog_arg(const struct eos_op *op, const char *name)
{
	for (size_t i = 0; i < op->nargs; i++)
		if (strcmp(op->args[i].name, name) == 0)
			return &op->args[i];
	return NULL;
}

/* --- one value -------------------------------------------------------------------------------- */

static int
check_id(const struct eos_arg *a, const char *s, struct eos_error *err)
{
	size_t n = strlen(s);

	if (n == 0 || n > EOS_CATALOG_ID_MAX || s[0] == '.')
		return eos_error_set(err, -EINVAL,
				     "argument '%s': an id has 1 to %d characters and does not "
				     "start with '.'",
				     a->name, EOS_CATALOG_ID_MAX);
	if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n)
		return eos_error_set(err, -EINVAL,
				     "argument '%s': an id holds only letters, digits, '.', '_' "
				     "and '-'",
				     a->name);
	return 0;
}

static int
check_path(const struct eos_arg *a, const char *s, struct eos_error *err)
{
	cleanup_free char *norm = NULL;
	struct eos_error why = { 0 };

	if (s[0] == '/')
		return eos_error_set(err, -EINVAL,
				     "argument '%s': '%s' is absolute: paths are relative to the "
				     "sandbox root",
				     a->name, s);
	if (eos_path_normalize(s, &norm, &why) < 0)
		return eos_error_set(err, -EINVAL, "argument '%s': %s", a->name,
				     eos_error_message(&why, -EINVAL));
	return 0;
}

static int
check_version(const struct eos_arg *a, const char *s, struct eos_error *err)
{
	const char *d = (s[0] == 'L') ? s + 1 : s;
	char *end;

	errno = 0;
	if (*d < '0' || *d > '9' || (strtoull(d, &end, 10), errno) != 0 || *end != '\0')
		return eos_error_set(err, -EINVAL,
				     "argument '%s': '%s' is not a version (L000003, L3 or 3)",
				     a->name, s);
	return 0;
}

static int
check_edit(const struct eos_arg *a, size_t i, const json_t *e, struct eos_error *err)
{
	const char *key;
	json_t *v;

	if (!json_is_object(e))
		return eos_error_set(err, -EINVAL, "argument '%s': edit %zu is not an object",
				     a->name, i + 1);
	json_object_foreach((json_t *)e, key, v)
	{
		bool str = strcmp(key, "old_string") == 0 || strcmp(key, "new_string") == 0;

		if (!str && strcmp(key, "replace_all") != 0)
			return eos_error_set(err, -EINVAL,
					     "argument '%s': edit %zu has an unknown field '%s'",
					     a->name, i + 1, key);
		if (str ? !json_is_string(v) : !json_is_boolean(v))
			return eos_error_set(err, -EINVAL,
					     "argument '%s': edit %zu: '%s' must be a %s", a->name,
					     i + 1, key, str ? "string" : "boolean");
	}
	if (!json_object_get(e, "old_string") || !json_object_get(e, "new_string"))
		return eos_error_set(err, -EINVAL,
				     "argument '%s': edit %zu needs old_string and new_string",
				     a->name, i + 1);
	if (json_string_length(json_object_get(e, "old_string")) == 0)
		return eos_error_set(err, -EINVAL, "argument '%s': edit %zu: old_string is empty",
				     a->name, i + 1);
	return 0;
}

static int
check_edits(const struct eos_arg *a, const json_t *v, struct eos_error *err)
{
	size_t max = a->max > 0 ? (size_t)a->max : EOS_CATALOG_EDITS_MAX;
	size_t n = json_array_size(v);
	int r;

	if (!json_is_array(v))
		return eos_error_set(err, -EINVAL, "argument '%s': must be an array of edits",
				     a->name);
	if (n == 0 || n > max)
		return eos_error_set(err, -EINVAL, "argument '%s': 1 to %zu edits, not %zu",
				     a->name, max, n);
	for (size_t i = 0; i < n; i++)
		if ((r = check_edit(a, i, json_array_get(v, i), err)) < 0)
			return r;
	return 0;
}

/* An environment name: [A-Za-z_][A-Za-z0-9_]*, at most 128 bytes. */
static bool
env_name_ok(const char *k)
{
	size_t n = strlen(k);

	return n > 0 && n <= 128 && !(k[0] >= '0' && k[0] <= '9') &&
	       strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == n;
}

static int
check_env(const struct eos_arg *a, const json_t *v, struct eos_error *err)
{
	size_t max = a->max > 0 ? (size_t)a->max : EOS_CATALOG_ENV_MAX;
	const char *k;
	json_t *x;

	if (!json_is_object(v))
		return eos_error_set(err, -EINVAL,
				     "argument '%s': must be an object of names and string values",
				     a->name);
	if (json_object_size(v) > max)
		return eos_error_set(err, -EINVAL, "argument '%s': at most %zu variables, not %zu",
				     a->name, max, json_object_size(v));
	json_object_foreach((json_t *)v, k, x)
	{
		if (!env_name_ok(k))
			return eos_error_set(err, -EINVAL,
					     "argument '%s': '%s' is not a variable name "
					     "([A-Za-z_][A-Za-z0-9_]*, at most 128 bytes)",
					     a->name, k);
		if (!json_is_string(x))
			return eos_error_set(err, -EINVAL, "argument '%s': '%s' must be a string",
					     a->name, k);
		if (json_string_length(x) > EOS_CATALOG_ENV_VALUE_MAX ||
		    strlen(json_string_value(x)) != json_string_length(x))
			return eos_error_set(err, -EINVAL,
					     "argument '%s': the value of '%s' holds a NUL byte or "
					     "is longer than %d bytes",
					     a->name, k, EOS_CATALOG_ENV_VALUE_MAX);
	}
	return 0;
}

static int
check_int(const struct eos_arg *a, const json_t *v, struct eos_error *err)
{
	json_int_t x;

	if (!json_is_integer(v))
		return eos_error_set(err, -EINVAL, "argument '%s': must be an integer", a->name);
	x = json_integer_value(v);
	if (x < a->min || x > a->max)
		return eos_error_set(err, -EINVAL,
				     "argument '%s': %lld is out of range [%lld, %lld]", a->name,
				     (long long)x, (long long)a->min, (long long)a->max);
	return 0;
}

static int
check_enum(const struct eos_arg *a, const char *s, struct eos_error *err)
{
	for (const char *const *e = a->values; *e; e++)
		if (strcmp(*e, s) == 0)
			return 0;
	return eos_error_set(err, -EINVAL, "argument '%s': '%s' is not one of the allowed values",
			     a->name, s);
}

static int
check_string(const struct eos_arg *a, const json_t *v, struct eos_error *err)
{
	size_t max = a->max > 0 ? (size_t)a->max : EOS_CATALOG_STRING_MAX;
	const char *s = json_string_value(v);

	if (!s)
		return eos_error_set(err, -EINVAL, "argument '%s': must be a string", a->name);
	if (json_string_length(v) > max)
		return eos_error_set(err, -EINVAL, "argument '%s': longer than %zu bytes", a->name,
				     max);
	if (a->kind != EOS_ARG_STRING && strlen(s) != json_string_length(v))
		return eos_error_set(err, -EINVAL, "argument '%s': holds a NUL byte", a->name);
	if (a->kind == EOS_ARG_ENUM)
		return check_enum(a, s, err);
	if (a->kind == EOS_ARG_ID)
		return check_id(a, s, err);
	if (a->kind == EOS_ARG_PATH)
		return check_path(a, s, err);
	if (a->kind == EOS_ARG_VERSION)
		return check_version(a, s, err);
	if (a->kind == EOS_ARG_HOST_PATH &&
	    (s[0] != '/' || json_string_length(v) > EOS_CATALOG_PATH_MAX))
		return eos_error_set(err, -EINVAL,
				     "argument '%s': '%s' is not an absolute host path", a->name,
				     s);
	return 0;
}

int
eos_catalog_check_value(const struct eos_arg *a, const json_t *v, struct eos_error *err)
{
	if (a->kind == EOS_ARG_INT)
		return check_int(a, v, err);
	if (a->kind == EOS_ARG_EDITS)
		return check_edits(a, v, err);
	if (a->kind == EOS_ARG_ENV)
		return check_env(a, v, err);
	if (a->kind == EOS_ARG_BOOL && !json_is_boolean(v))
		return eos_error_set(err, -EINVAL, "argument '%s': must be true or false", a->name);
	if (a->kind == EOS_ARG_BOOL)
		return 0;
	return check_string(a, v, err); /* the other kinds' values are strings */
}

/* --- a whole request -------------------------------------------------------------------------- */

/* Add the defaults of op's arguments that args lacks. */
static int
fill_defaults(const struct eos_op *op, json_t *args, struct eos_error *err)
{
	for (size_t i = 0; i < op->nargs; i++) {
		const struct eos_arg *a = &op->args[i];
		json_t *d;

		if (!a->def || json_object_get(args, a->name))
			continue;
		d = json_loads(a->def, JSON_DECODE_ANY, NULL);
		if (!d || json_object_set_new(args, a->name, d) < 0)
			return eos_error_set(err, -ENOMEM, "argument '%s': out of memory", a->name);
	}
	return 0;
}

int
eos_catalog_validate(const struct eos_op *op, json_t *args, struct eos_error *err)
{
	const char *key;
	json_t *v;
	int r;

	if (args && !json_is_object(args))
		return eos_error_set(err, -EINVAL, "%s: args must be an object", op->name);
	json_object_foreach(args, key, v)
	{
		const struct eos_arg *a = eos_catalog_arg(op, key);

		if (!a)
			return eos_error_set(err, -EINVAL, "%s: unknown argument '%s'", op->name,
					     key);
		if ((r = eos_catalog_check_value(a, v, err)) < 0)
			return eos_error_prefix(err, r, "%s", op->name);
	}
	for (size_t i = 0; i < op->nargs; i++)
		if (op->args[i].required && !json_object_get(args, op->args[i].name))
			return eos_error_set(err, -EINVAL, "%s: missing argument '%s'", op->name,
					     op->args[i].name);
	return args ? fill_defaults(op, args, err) : 0;
}

/* --- command-line words ----------------------------------------------------------------------- */

/* An env word: a JSON object, or NAME=value (one variable). */
static json_t *
env_word(const char *word)
{
	const char *eq = strchr(word, '=');
	cleanup_free char *name = NULL;

	if (word[0] == '{')
		return json_loads(word, 0, NULL);
	if (!eq || !(name = strndup(word, (size_t)(eq - word))))
		return NULL;
	return json_pack("{s:s}", name, eq + 1);
}

static json_t *
word_value(const struct eos_arg *a, const char *word)
{
	char *end;
	long long x;

	if (a->kind == EOS_ARG_INT) {
		errno = 0;
		x = strtoll(word, &end, 10);
		return (errno || end == word || *end) ? NULL : json_integer(x);
	}
	if (a->kind == EOS_ARG_BOOL)
		return (strcmp(word, "true") == 0 || strcmp(word, "false") == 0)
			       ? json_boolean(word[0] == 't')
			       : NULL;
	if (a->kind == EOS_ARG_EDITS)
		return json_loads(word, 0, NULL);
	if (a->kind == EOS_ARG_ENV)
		return env_word(word);
	return json_string(word);
}

int
eos_catalog_parse_word(const struct eos_arg *a, const char *word, json_t **ret,
		       struct eos_error *err)
{
	json_t *v = word_value(a, word);
	int r;

	if (!v)
		return eos_error_set(err, -EINVAL, "argument '%s': '%s' is not a %s", a->name, word,
				     eos_arg_kind_name(a->kind));
	if ((r = eos_catalog_check_value(a, v, err)) < 0) {
		json_decref(v);
		return r;
	}
	*ret = v;
	return 0;
}
