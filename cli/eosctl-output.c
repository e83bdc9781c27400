/* SPDX-License-Identifier: MIT */
/*
 * eosctl-output: printing replies and errors. With --json (or when stdout is not a terminal) a
 * reply is its one JSON document, on one line. As text, an object is "key: value" lines, a nested
 * object indented below its key, a list of objects a table (columns: the scalar fields, in the
 * order they first appear), multi-line strings a block of their own; file_read prints the file's
 * lines as they are. No rendering knows a reply's fields beyond these rules, so a field eosd adds
 * shows without a change here. A command's result (exec, stdin) is its output then a status line,
 * and `lines` the transcript's lines themselves; what else those replies say goes to stderr.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json.h"
#include "common/quote.h"

#include "cli/eosctl.h"

enum {
	TABLE_COLUMNS_MAX = 32
};

bool
eosctl_output_is_text(enum eosctl_output o)
{
	return o == EOSCTL_OUTPUT_TEXT || (o == EOSCTL_OUTPUT_AUTO && isatty(STDOUT_FILENO));
}

static bool
is_scalar(const json_t *v)
{
	return !json_is_object(v) && !json_is_array(v);
}

static bool
is_block(const json_t *v)
{
	return json_is_string(v) && strchr(json_string_value(v), '\n');
}

/* A scalar (or anything, compactly) as text; *owned keeps what must be freed. */
static const char *
scalar_text(const json_t *v, char **owned)
{
	*owned = NULL;
	if (!v || json_is_null(v))
		return "-";
	if (json_is_string(v))
		return eos_quote_cstr(json_string_value(v), false, owned);
	*owned = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	return *owned ? *owned : "?";
}

static bool
is_table(const json_t *v)
{
	size_t i;
	json_t *e;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return false;
	json_array_foreach(v, i, e) if (!json_is_object(e)) return false;
	return true;
}

/* --- tables ----------------------------------------------------------------------------------- */

struct table {
	const char *col[TABLE_COLUMNS_MAX];
	size_t width[TABLE_COLUMNS_MAX];
	size_t ncol;
};

static void
table_columns(struct table *t, const json_t *rows)
{
	size_t i;
	json_t *row, *v;
	const char *key;

	json_array_foreach(rows, i, row) json_object_foreach((json_t *)row, key, v)
	{
		size_t c = 0;

		while (c < t->ncol && strcmp(t->col[c], key) != 0)
			c++;
		if (c == t->ncol && t->ncol < TABLE_COLUMNS_MAX) {
			t->col[t->ncol] = key;
			t->width[t->ncol++] = strlen(key);
		}
		if (c < t->ncol) {
			cleanup_free char *owned = NULL;
			size_t w = strlen(scalar_text(v, &owned)); /* EOS_MAX evaluates twice */

			t->width[c] = EOS_MAX(t->width[c], w);
		}
	}
}

static void
table_row(FILE *f, const struct table *t, const json_t *row, int indent)
{
	fprintf(f, "%*s", indent, "");
	for (size_t c = 0; c < t->ncol; c++) {
		cleanup_free char *owned = NULL;
		const char *s = row ? scalar_text(json_object_get(row, t->col[c]), &owned) : NULL;
		char head[128];

		if (!row) {
			size_t k;

			for (k = 0; t->col[c][k] && k + 1 < sizeof(head); k++)
				head[k] = (char)(t->col[c][k] >= 'a' && t->col[c][k] <= 'z'
							 ? t->col[c][k] - 'a' + 'A'
							 : t->col[c][k]);
			head[k] = '\0';
			s = head;
		}
		if (c + 1 == t->ncol)
			fprintf(f, "%s\n", s);
		else
			fprintf(f, "%-*s  ", (int)t->width[c], s);
	}
}

static void
print_table(FILE *f, const json_t *rows, int indent)
{
	struct table t = { 0 };
	size_t i;
	json_t *row;

	table_columns(&t, rows);
	table_row(f, &t, NULL, indent);
	json_array_foreach(rows, i, row) table_row(f, &t, row, indent);
}

/* --- objects ---------------------------------------------------------------------------------- */

static void print_object(FILE *f, const json_t *o, int indent);

static void
print_list(FILE *f, const char *key, const json_t *v, int indent)
{
	size_t i;
	json_t *e;

	if (is_table(v)) {
		fprintf(f, "%*s%s:\n", indent, "", key);
		print_table(f, v, indent + 2);
		return;
	}
	fprintf(f, "%*s%s:%s", indent, "", key, json_array_size(v) ? "" : " (none)");
	json_array_foreach(v, i, e)
	{
		cleanup_free char *owned = NULL;

		fprintf(f, "%s%s", i ? ", " : " ", scalar_text(e, &owned));
	}
	fprintf(f, "\n");
}

static void
print_object(FILE *f, const json_t *o, int indent)
{
	const char *key;
	json_t *v;
	size_t w = 0;

	json_object_foreach((json_t *)o, key, v) if (is_scalar(v) && !is_block(v)) w =
		EOS_MAX(w, strlen(key));
	json_object_foreach((json_t *)o, key, v)
	{
		cleanup_free char *owned = NULL;

		if (is_scalar(v) && !is_block(v))
			fprintf(f, "%*s%s:%*s %s\n", indent, "", key, (int)(w - strlen(key)), "",
				scalar_text(v, &owned));
	}
	json_object_foreach((json_t *)o, key, v)
	{
		if (json_is_object(v)) {
			fprintf(f, "%*s%s:%s\n", indent, "", key,
				json_object_size(v) ? "" : " (none)");
			print_object(f, v, indent + 2);
		} else if (json_is_array(v)) {
			print_list(f, key, v, indent);
		} else if (is_block(v)) {
			fprintf(f, "%*s%s:\n%s", indent, "", key, json_string_value(v));
		}
	}
}

/* A document that is one list ({"sandboxes": [...]}) prints as just the table. */
static bool
print_single_list(FILE *f, const json_t *doc)
{
	const char *key;
	json_t *v;

	if (json_object_size(doc) != 1)
		return false;
	json_object_foreach((json_t *)doc, key, v)
	{
		if (!json_is_array(v))
			return false;
		if (json_array_size(v) == 0)
			fprintf(f, "(no %s)\n", key);
		else if (is_table(v))
			print_table(f, v, 0);
		else
			print_list(f, key, v, 0);
	}
	return true;
}

/* file_read: the lines themselves; what else the reply says goes to stderr. */
static void
print_file_read(FILE *f, const json_t *doc)
{
	const json_t *content = json_object_get(doc, "content");
	json_int_t offset = json_integer_value(json_object_get(doc, "offset"));
	json_int_t lines = json_integer_value(json_object_get(doc, "lines"));
	const json_t *total = json_object_get(doc, "total_lines");

	fwrite(json_string_value(content), 1, json_string_length(content), f);
	if (!json_is_true(json_object_get(doc, "truncated")))
		return;
	if (offset > 0 && json_is_integer(total))
		fprintf(stderr,
			"eosctl: lines %lld-%lld of %lld; the next ones with --offset %lld\n",
			(long long)offset, (long long)(offset + lines - 1),
			(long long)json_integer_value(total), (long long)(offset + lines));
	else
		fprintf(stderr, "eosctl: more lines follow (use --offset and --limit)\n");
}

/* --- commands (exec_command, write_command_stdin, read_command_lines) ------------------------- */

static const char *
field(const json_t *doc, const char *key)
{
	const char *s = json_string_value(json_object_get(doc, key));

	return s ? s : "?";
}

void
eosctl_output_command_status(FILE *f, const char *prefix, const json_t *doc)
{
	const json_t *code = json_object_get(doc, "exit_code");
	const char *sig = json_string_value(json_object_get(doc, "signal"));
	json_int_t ms = json_integer_value(json_object_get(doc, "wall_time_ms"));

	fprintf(f, "%s%s: %s", prefix, field(doc, "command_session_id"), field(doc, "status"));
	if (sig)
		fprintf(f, ", killed by %s", sig);
	if (json_is_integer(code))
		fprintf(f, ", exit code %lld", (long long)json_integer_value(code));
	fprintf(f, ", %lld.%03lld s", (long long)(ms / 1000), (long long)(ms % 1000));
	if (json_is_true(json_object_get(doc, "background")))
		fprintf(f, "; processes it started still run in its session");
	fprintf(f, "\n");
}

void
eosctl_output_command_cut(FILE *f, const json_t *doc)
{
	fprintf(f,
		"eosctl: output was left out (more than max_output_bytes in one reply); all of "
		"it: eosctl lines %s %s\n",
		field(doc, "sandbox_id"), field(doc, "command_session_id"));
}

/* "conflicts in a.txt, src/b.c" */
static void
print_conflict_paths(FILE *f, const json_t *conflicts)
{
	size_t i;
	json_t *c;

	fprintf(f, "conflicts in");
	json_array_foreach(conflicts, i, c)
	{
		cleanup_free char *q = NULL;
		const char *path = json_string_value(json_object_get(c, "path"));

		fprintf(f, "%s %s", i ? "," : "", path ? eos_quote_cstr(path, false, &q) : "?");
	}
	fprintf(f, "%s", json_array_size(conflicts) ? "" : " (none listed)");
}

int
eosctl_output_command_publish(FILE *f, const json_t *doc)
{
	const json_t *p = json_object_get(doc, "publish");
	const char *status = json_string_value(json_object_get(p, "status"));
	const char *ws = field(doc, "workspace_session_id");
	cleanup_free char *owned = NULL, *q = NULL;

	if (!status)
		return EOSCTL_EXIT_OK;
	if (strcmp(status, "no_op") == 0)
		return EOSCTL_EXIT_OK; /* it changed nothing: nothing to say */
	if (strcmp(status, "published") == 0) {
		if (f)
			fprintf(f, "eosctl: implicit session '%s' published as version %s\n", ws,
				scalar_text(json_object_get(p, "version"), &owned));
		return EOSCTL_EXIT_OK;
	}
	if (strstr(status, "rejected")) {
		if (f) {
			fprintf(f, "eosctl: implicit session '%s': publish rejected, ", ws);
			print_conflict_paths(f, json_object_get(p, "conflicts"));
			fprintf(f, "; its changes were discarded\n");
		}
		return EOSCTL_EXIT_REJECTED;
	}
	if (f)
		fprintf(f, "eosctl: implicit session '%s' not published: %s\n", ws,
			json_is_string(json_object_get(p, "message"))
				? eos_quote_cstr(field(p, "message"), true, &q)
				: status);
	return EOSCTL_EXIT_FAILED;
}

static bool
is_command_result(const struct eos_op *op, const json_t *doc)
{
	return (strcmp(op->name, "exec_command") == 0 ||
		strcmp(op->name, "write_command_stdin") == 0) &&
	       json_is_string(json_object_get(doc, "output"));
}

/* exec, stdin: the output, then a status line; the notes on stderr. */
static void
print_command_result(FILE *f, const json_t *doc)
{
	const json_t *out = json_object_get(doc, "output");
	size_t n = json_string_length(out);

	fwrite(json_string_value(out), 1, n, f);
	if (n > 0 && json_string_value(out)[n - 1] != '\n')
		fputc('\n', f);
	eosctl_output_command_status(f, "", doc);
	if (json_is_true(json_object_get(doc, "output_truncated")))
		eosctl_output_command_cut(stderr, doc);
	eosctl_output_command_publish(stderr, doc);
}

/* lines: the transcript's lines; "lines 1–200 of 1000; next: --offset 201" on stderr. */
static void
print_command_lines(FILE *f, const json_t *doc)
{
	const json_t *lines = json_object_get(doc, "lines");
	const json_t *next = json_object_get(doc, "next_offset");
	long long a = (long long)json_integer_value(json_object_get(doc, "offset"));
	long long k = (long long)json_array_size(lines);
	long long all = (long long)json_integer_value(json_object_get(doc, "line_count"));
	bool complete = json_is_true(json_object_get(doc, "complete"));
	size_t i;
	json_t *l;

	json_array_foreach(lines, i, l)
	{
		fwrite(json_string_value(l), 1, json_string_length(l), f);
		fputc('\n', f);
	}
	if (k == 0)
		fprintf(stderr, "eosctl: no lines from %lld: %lld in all%s\n", a, all,
			complete ? "" : " so far (the command still runs)");
	else if (json_is_integer(next))
		fprintf(stderr, "eosctl: lines %lld\u2013%lld of %lld; next: --offset %lld\n", a,
			a + k - 1, all, (long long)json_integer_value(next));
	else
		fprintf(stderr, "eosctl: lines %lld\u2013%lld of %lld%s\n", a, a + k - 1, all,
			complete ? " (the end)" : " so far (the command still runs)");
}

static void
print_text(FILE *f, const struct eos_op *op, const json_t *doc)
{
	if (op && strcmp(op->name, "file_read") == 0 &&
	    json_is_string(json_object_get(doc, "content"))) {
		print_file_read(f, doc);
		return;
	}
	if (op && is_command_result(op, doc)) {
		print_command_result(f, doc);
		return;
	}
	if (op && strcmp(op->name, "read_command_lines") == 0 &&
	    json_is_array(json_object_get(doc, "lines"))) {
		print_command_lines(f, doc);
		return;
	}
	if (op && eosctl_obs_render(f, op, doc))
		return;
	if (!print_single_list(f, doc))
		print_object(f, doc, 0);
}

/*
 * As text, the reply's trace_id (every reply has one: `eosctl trace ID`) is left out: it is for
 * scripts (the JSON keeps it) and for `eosctl trace --last`, not for reading.
 */
void
eosctl_output_result(FILE *f, const struct eos_op *op, const json_t *doc, bool text)
{
	EOS_CLEANUP(json_decrefp) json_t *copy = NULL;

	if (!text || !json_is_object(doc)) {
		eos_json_print_line(f, doc);
		return;
	}
	if (json_object_get(doc, "trace_id") && (!op || strcmp(op->name, "trace") != 0) &&
	    (copy = json_copy((json_t *)doc))) {
		json_object_del(copy, "trace_id");
		doc = copy;
	}
	print_text(f, op, doc);
}

/* --- errors ----------------------------------------------------------------------------------- */

/* One line-range object of a conflict: "base lines 1-3, head lines 1, session none at 4". */
static void
print_ranges(FILE *f, const json_t *r)
{
	const char *key;
	json_t *v;
	bool first = true;

	fprintf(f, "   ");
	json_object_foreach((json_t *)r, key, v)
	{
		size_t len = strlen(key);
		char count[64];
		json_int_t start = json_integer_value(v), n;

		if (len < 7 || len > 40 || strcmp(key + len - 6, "_start") != 0)
			continue;
		snprintf(count, sizeof(count), "%.*s_count", (int)(len - 6), key);
		n = json_integer_value(json_object_get(r, count));
		fprintf(f, "%s %.*s ", first ? "" : ",", (int)(len - 6), key);
		if (n <= 0)
			fprintf(f, "none at %lld", (long long)start);
		else if (n == 1)
			fprintf(f, "line %lld", (long long)start);
		else
			fprintf(f, "lines %lld-%lld", (long long)start, (long long)(start + n - 1));
		first = false;
	}
	fprintf(f, "\n");
}

/* "conflict: PATH: KIND: message", then its line ranges; without a message, the other fields. */
static void
print_conflict(FILE *f, const json_t *c)
{
	EOS_CLEANUP(json_decrefp) json_t *rest = json_deep_copy(c);
	cleanup_free char *q = NULL, *qm = NULL, *more = NULL;
	const char *path = json_string_value(json_object_get(c, "path"));
	const char *kind = json_string_value(json_object_get(c, "kind"));
	const char *msg = json_string_value(json_object_get(c, "message"));
	const json_t *lines = json_object_get(c, "lines");
	size_t i;
	json_t *r;

	if (!msg && json_is_object(rest)) {
		json_object_del(rest, "path");
		json_object_del(rest, "kind");
		if (json_object_size(rest))
			more = json_dumps(rest, JSON_COMPACT);
	}
	fprintf(f, "  conflict: %s: %s%s%s\n", path ? eos_quote_cstr(path, false, &q) : "?",
		kind ? kind : "conflict", msg || more ? ": " : "",
		msg    ? eos_quote_cstr(msg, true, &qm)
		: more ? more
		       : "");
	if (msg)
		json_array_foreach(lines, i, r) if (json_is_object(r)) print_ranges(f, r);
}

static void
print_conflicts(FILE *f, const json_t *conflicts)
{
	size_t i;
	json_t *c;

	json_array_foreach(conflicts, i, c) print_conflict(f, c);
}

int
eosctl_output_error(FILE *f, const json_t *envelope, bool json)
{
	const json_t *e = json_object_get(envelope, "error");
	const char *kind = json_string_value(json_object_get(e, "kind"));
	const char *msg = json_string_value(json_object_get(e, "message"));
	const json_t *details = json_object_get(e, "details");
	bool rejected = kind && strcmp(kind, "publish_rejected") == 0;
	cleanup_free char *q = NULL;

	if (json) {
		eos_json_print_line(f, envelope);
	} else {
		fprintf(f, "eosctl: %s: %s\n", kind ? kind : "io",
			msg ? eos_quote_cstr(msg, true, &q) : "(no message)");
		if (json_is_array(json_object_get(details, "conflicts")))
			print_conflicts(f, json_object_get(details, "conflicts"));
	}
	return rejected ? EOSCTL_EXIT_REJECTED : EOSCTL_EXIT_FAILED;
}

int
eosctl_output_local_error(FILE *f, const char *kind, const char *message, bool json)
{
	EOS_CLEANUP(json_decrefp)
	json_t *env = json_pack("{s:{s:s,s:s}}", "error", "kind", kind, "message", message);

	if (!env) {
		fprintf(f, "eosctl: %s: %s\n", kind, message);
		return EOSCTL_EXIT_FAILED;
	}
	return eosctl_output_error(f, env, json);
}
