/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of eosctl's command line (cli/eosctl-args.c, cli/eosctl-help.c): every operation of
 * the catalog is reachable as GROUP VERB, every usage error is refused naming the argument, help
 * lists every argument with its default, and the completion script knows every command and
 * option. All of it driven by the catalog itself, so an operation added there is tested here.
 * Also exec's own line: its command words joined (shell-quoted) into one, --env merged. And the
 * upstream command lines: every operation on its surface's line and no other, their option
 * names, the runtime line's --sandbox-id, the extensions agreeing with the catalog's marks.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/catalog.h"
#include "common/cleanup.h"
#include "common/json.h"

#include "cli/eosctl.h"

enum {
	ARGV_MAX = 64
};

/* An argv under construction; strings are copied and freed with it. */
struct line {
	char *w[ARGV_MAX];
	int n;
};

static void
push(struct line *l, const char *word)
{
	ck_assert_int_lt(l->n, ARGV_MAX - 1);
	l->w[l->n++] = strdup(word);
}

static void
line_free(struct line *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->w[i]);
	l->n = 0;
}

/* A valid word for argument a. */
static const char *
sample(const struct eos_arg *a)
{
	switch (a->kind) {
	case EOS_ARG_STRING:
		return "some text";
	case EOS_ARG_INT:
		return a->min == 1 ? "1" : "7";
	case EOS_ARG_BOOL:
		return "true";
	case EOS_ARG_ENUM:
		return a->values[0];
	case EOS_ARG_ID:
		return "id-1";
	case EOS_ARG_PATH:
		return "src/a.c";
	case EOS_ARG_HOST_PATH:
		return "/tmp";
	case EOS_ARG_VERSION:
		return "L3";
	case EOS_ARG_EDITS:
		return "[{\"old_string\":\"a\",\"new_string\":\"b\"}]";
	case EOS_ARG_ENV:
		return "NAME=value";
	}
	return "";
}

/* A word the catalog refuses for argument a, or NULL when every word is valid (strings). */
static const char *
bad_sample(const struct eos_arg *a)
{
	switch (a->kind) {
	case EOS_ARG_STRING:
		return NULL;
	case EOS_ARG_INT:
		return "ten";
	case EOS_ARG_BOOL:
		return "maybe";
	case EOS_ARG_ENUM:
		return "no-such-value";
	case EOS_ARG_ID:
		return ".hidden";
	case EOS_ARG_PATH:
		return "../escape";
	case EOS_ARG_HOST_PATH:
		return "";
	case EOS_ARG_VERSION:
		return "Lx";
	case EOS_ARG_EDITS:
		return "[]";
	case EOS_ARG_ENV:
		return "1BAD=x";
	}
	return NULL;
}

static void
push_option(struct line *l, const struct eos_arg *a, const char *value)
{
	char name[128], word[256];

	eosctl_arg_cli_name(a, name, sizeof(name));
	if (a->kind == EOS_ARG_BOOL) {
		snprintf(word, sizeof(word), "--%s=%s", name, value);
		push(l, word);
		return;
	}
	snprintf(word, sizeof(word), "--%s", name);
	push(l, word);
	push(l, value);
}

/* Whether a goes on the line as a word: a positional before the one left out, if any. */
static bool
as_word(const struct eos_arg *a, const struct eos_arg *skip)
{
	if (!a->positional || a == skip)
		return false;
	return !skip || !skip->positional || a->positional < skip->positional;
}

/*
 * The line `eosctl GROUP VERB` with every required argument of op (positionals as words, the
 * rest as options) and the sandbox; skip (if not NULL) is left out, bad gets a bad value.
 */
static void push_args(struct line *l, const struct eos_op *op, const struct eos_arg *skip,
		      const struct eos_arg *bad);

static void
op_line(struct line *l, const struct eos_op *op, const struct eos_arg *skip,
	const struct eos_arg *bad)
{
	push(l, "eosctl");
	push(l, op->cli_group);
	if (op->cli_verb[0]) /* a command of one word: `eosctl trace ID` */
		push(l, op->cli_verb);
	if (op->needs_sandbox) {
		push(l, "--sandbox");
		push(l, "sb-1");
	}
	push_args(l, op, skip, bad);
}

/* The required arguments of op but skip: positionals as words up to skip, the rest as options. */
static void
push_args(struct line *l, const struct eos_op *op, const struct eos_arg *skip,
	  const struct eos_arg *bad)
{
	for (unsigned k = 1; k <= op->nargs; k++)
		for (size_t i = 0; i < op->nargs; i++)
			if (op->args[i].positional == k && as_word(&op->args[i], skip))
				push(l,
				     &op->args[i] == bad ? bad_sample(bad) : sample(&op->args[i]));
	for (size_t i = 0; i < op->nargs; i++) {
		const struct eos_arg *a = &op->args[i];

		if (as_word(a, skip) || a == skip || (!a->required && a != bad))
			continue;
		push_option(l, a, a == bad ? bad_sample(a) : sample(a));
	}
}

static int
parse(struct line *l, struct eosctl_cmd *cmd, struct eos_error *err)
{
	eosctl_cmd_release(cmd); /* a cmd is parsed again and again in one test */
	*cmd = (struct eosctl_cmd){ 0 };
	return eosctl_args_parse(l->n, l->w, cmd, err);
}

/* The words of the last parse_words(): cmd borrows them until the next one. */
static struct line last_line;

/* Parse a NULL-terminated list of words after "eosctl". */
static int
parse_words(struct eosctl_cmd *cmd, struct eos_error *err, ...)
{
	struct line l = { 0 };
	va_list ap;
	const char *w;
	int r;

	push(&l, "eosctl");
	va_start(ap, err);
	while ((w = va_arg(ap, const char *)))
		push(&l, w);
	va_end(ap);
	r = parse(&l, cmd, err);
	line_free(&last_line);
	last_line = l;
	return r;
}

/* The line must be refused with a message holding want. */
static void
refused(const char *want, ...)
{
	struct line l = { 0 };
	struct eosctl_cmd cmd = { 0 };
	struct eos_error err = { 0 };
	va_list ap;
	const char *w;

	push(&l, "eosctl");
	va_start(ap, want);
	while ((w = va_arg(ap, const char *)))
		push(&l, w);
	va_end(ap);
	ck_assert_int_lt(parse(&l, &cmd, &err), 0);
	ck_assert_msg(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
	eosctl_cmd_release(&cmd);
	line_free(&l);
}

START_TEST(every_op_is_reachable)
{
	size_t n;
	const struct eos_op *ops = eos_catalog_ops(&n);

	for (size_t i = 0; i < n; i++) {
		struct line l = { 0 };
		struct eosctl_cmd cmd = { 0 };
		struct eos_error err = { 0 };

		op_line(&l, &ops[i], NULL, NULL);
		ck_assert_msg(parse(&l, &cmd, &err) == 0, "%s: %s", ops[i].name, err.msg);
		ck_assert_int_eq(cmd.action, EOSCTL_ACTION_OP);
		ck_assert_ptr_eq(cmd.op, &ops[i]);
		for (size_t j = 0; j < ops[i].nargs; j++)
			if (ops[i].args[j].required)
				ck_assert_ptr_nonnull(
					json_object_get(cmd.args, ops[i].args[j].name));
		if (ops[i].needs_sandbox)
			ck_assert_str_eq(cmd.sandbox, "sb-1");
		eosctl_cmd_release(&cmd);
		line_free(&l);
	}
}
END_TEST

/* The line of op without skip, or with a bad value for bad, is refused naming the argument. */
static void
refused_naming(const struct eos_op *op, const struct eos_arg *skip, const struct eos_arg *bad)
{
	const struct eos_arg *a = skip ? skip : bad;
	struct line l = { 0 };
	struct eosctl_cmd cmd = { 0 };
	struct eos_error err = { 0 };
	char want[160];

	op_line(&l, op, skip, bad);
	ck_assert_msg(parse(&l, &cmd, &err) == -EINVAL, "%s.%s accepted", op->name, a->name);
	snprintf(want, sizeof(want), "'%s'", a->name);
	ck_assert_msg(strstr(err.msg, want), "%s: '%s' lacks %s", op->name, err.msg, want);
	ck_assert_msg(!skip || strstr(err.msg, "missing"), "%s: '%s'", op->name, err.msg);
	eosctl_cmd_release(&cmd);
	line_free(&l);
}

START_TEST(every_missing_argument_is_named)
{
	size_t n;
	const struct eos_op *ops = eos_catalog_ops(&n);

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < ops[i].nargs; j++)
			if (ops[i].args[j].required)
				refused_naming(&ops[i], &ops[i].args[j], NULL);
}
END_TEST

START_TEST(every_bad_value_is_named)
{
	size_t n;
	const struct eos_op *ops = eos_catalog_ops(&n);

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < ops[i].nargs; j++)
			if (bad_sample(&ops[i].args[j]))
				refused_naming(&ops[i], NULL, &ops[i].args[j]);
}
END_TEST

START_TEST(usage_errors_name_the_word)
{
	refused("unknown command 'nosuch'", "nosuch", NULL);
	refused("unknown command 'sandbox frob'", "sandbox", "frob", NULL);
	refused("unknown option '--bogus'", "sandbox", "ls", "--bogus", NULL);
	refused("unknown option '-x'", "sandbox", "ls", "-x", NULL);
	refused("unexpected argument 'extra'", "sandbox", "ls", "extra", NULL);
	refused("option '--sandbox': 'sandbox ls' acts on no sandbox", "sandbox", "ls", "--sandbox",
		"sb", NULL);
	refused("missing SANDBOX", "sandbox", "inspect", NULL);
	refused("missing option '--sandbox ID'", "session", "ls", NULL);
	refused("option '--sandbox'", "session", "ls", "--sandbox", "a b", NULL);
	refused("option '--limit' needs a value", "file", "read", "a", "--sandbox", "s", "--limit",
		NULL);
	refused("argument 'path' is given twice", "file", "read", "a", "--path", "b", "--sandbox",
		"s", NULL);
	refused("option '--no-force' takes no value", "sandbox", "destroy", "s", "--no-force=1",
		NULL);
	refused("option '--timeout'", "sandbox", "ls", "--timeout", "0", NULL);
	refused("option '--output'", "sandbox", "ls", "--output", "xml", NULL);
	refused("option '--json' takes no value", "sandbox", "ls", "--json=1", NULL);
	refused("option '--request-id'", "sandbox", "ls", "--request-id", "", NULL);
	refused("help: unknown command 'frob'", "help", "frob", NULL);
	refused("completion: unknown shell 'zsh'", "completion", "zsh", NULL);
	refused("'/nonexistent/x'", "file", "write", "a", "--sandbox", "s", "--content-file",
		"/nonexistent/x", NULL);
}
END_TEST

START_TEST(options_aliases_and_forms)
{
	struct eosctl_cmd cmd = { 0 };
	struct eos_error err = { 0 };

	ck_assert_int_eq(parse_words(&cmd, &err, "session", "publish", "--session", "ws-1",
				     "--sandbox=sb", "--destroy-after", "--json", NULL),
			 0);
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "workspace_session_id")),
			 "ws-1");
	ck_assert(json_is_true(json_object_get(cmd.args, "destroy_after")));
	ck_assert_str_eq(cmd.sandbox, "sb");
	ck_assert_int_eq(cmd.output, EOSCTL_OUTPUT_JSON);
	eosctl_cmd_release(&cmd);

	ck_assert_int_eq(parse_words(&cmd, &err, "sandbox", "destroy", "sb", "--no-force", "--text",
				     "--timeout", "5", NULL),
			 0);
	ck_assert(json_is_false(json_object_get(cmd.args, "force")));
	ck_assert_str_eq(cmd.sandbox, "sb");
	ck_assert_int_eq(cmd.output, EOSCTL_OUTPUT_TEXT);
	ck_assert_int_eq(cmd.timeout_ms, 5000);
	eosctl_cmd_release(&cmd);

	ck_assert_int_eq(parse_words(&cmd, &err, "--state-dir", "/x", "session", "fork", "ws-1",
				     "--new-session", "ws-2", "--sandbox", "sb", NULL),
			 0);
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "new_workspace_session_id")),
			 "ws-2");
	ck_assert_str_eq(cmd.state_dir, "/x");
	eosctl_cmd_release(&cmd);

	/* -- ends the options: a path may start with a dash */
	ck_assert_int_eq(
		parse_words(&cmd, &err, "file", "read", "--sandbox", "s", "--", "-x", NULL), 0);
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "path")), "-x");
	eosctl_cmd_release(&cmd);
}
END_TEST

/* The command line eosctl_exec_join_words() makes of the NULL-terminated words. */
static void
joins_to(const char *want, ...)
{
	const char *words[16];
	size_t n = 0;
	cleanup_free char *line = NULL;
	struct eos_error err = { 0 };
	va_list ap;

	va_start(ap, want);
	while ((words[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	ck_assert_int_eq(eosctl_exec_join_words(words, n, &line, &err), 0);
	ck_assert_str_eq(line, want);
}

START_TEST(exec_words_are_joined_and_quoted)
{
	/* one word is the command line as it is: the shell reads it */
	joins_to("make && make test", "make && make test", NULL);
	joins_to("echo 'a b'", "echo 'a b'", NULL);
	joins_to("", "", NULL);
	/* several: each that a shell would split or expand is quoted */
	joins_to("echo hi", "echo", "hi", NULL);
	joins_to("ls -la ./src a_b@c%d+e=f:g,h", "ls", "-la", "./src", "a_b@c%d+e=f:g,h", NULL);
	joins_to("echo 'a b' '$HOME' '*' ''", "echo", "a b", "$HOME", "*", "", NULL);
	joins_to("printf '%s\\n' 'it'\\''s' ''\\'''", "printf", "%s\\n", "it's", "'", NULL);
	joins_to("python3 -c 'print(input())'", "python3", "-c", "print(input())", NULL);
	joins_to("echo 'a;b' '&&' '|' '~' '\\' '\n'", "echo", "a;b", "&&", "|", "~", "\\", "\n",
		 NULL);
	joins_to("echo 'caf\xc3\xa9'", "echo", "caf\xc3\xa9", NULL);
}
END_TEST

START_TEST(exec_line)
{
	struct eosctl_cmd cmd = { 0 };
	struct eos_error err = { 0 };
	const json_t *env;

	/* the words after "--" are the command, options among them included */
	ck_assert_int_eq(parse_words(&cmd, &err, "exec", "sb", "--session", "ws-1", "--tty", "--",
				     "ls", "--tty", "-la", "a b", NULL),
			 0);
	ck_assert_ptr_eq(cmd.op, eos_catalog_find("exec_command"));
	ck_assert_str_eq(cmd.sandbox, "sb");
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "cmd")), "ls --tty -la 'a b'");
	ck_assert(json_is_true(json_object_get(cmd.args, "tty")));
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "workspace_session_id")),
			 "ws-1");
	/* one word after "--" goes as it is; --sandbox leaves it to be the command */
	ck_assert_int_eq(
		parse_words(&cmd, &err, "exec", "--sandbox", "sb", "--", "make && make test", NULL),
		0);
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "cmd")), "make && make test");
	/* without "--", the words after the sandbox; more than POSITIONAL_MAX after it */
	ck_assert_int_eq(parse_words(&cmd, &err, "exec", "sb", "echo", "hi", NULL), 0);
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "cmd")), "echo hi");
	ck_assert_int_eq(parse_words(&cmd, &err, "exec", "sb", "--", "seq", "1", "2", "3", "4", "5",
				     "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16",
				     "17", "18", "19", "20", NULL),
			 0);
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "cmd")),
			 "seq 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20");
	/* --env repeats and merges, NAME=value or an object, the later value winning */
	ck_assert_int_eq(parse_words(&cmd, &err, "exec", "sb", "--env", "A=1", "--env=B=x=y",
				     "--env", "{\"C\":\"3\",\"A\":\"2\"}", "--env",
				     "D=", "--timeout-ms", "5000", "--yield-time-ms", "0", "--",
				     "env", NULL),
			 0);
	env = json_object_get(cmd.args, "env");
	ck_assert_int_eq(json_object_size(env), 4);
	ck_assert_str_eq(json_string_value(json_object_get(env, "A")), "2");
	ck_assert_str_eq(json_string_value(json_object_get(env, "B")), "x=y");
	ck_assert_str_eq(json_string_value(json_object_get(env, "C")), "3");
	ck_assert_str_eq(json_string_value(json_object_get(env, "D")), "");
	ck_assert_int_eq(json_integer_value(json_object_get(cmd.args, "timeout_ms")), 5000);
	ck_assert_int_eq(json_integer_value(json_object_get(cmd.args, "yield_time_ms")), 0);
	eosctl_cmd_release(&cmd);

	refused("missing CMD (argument 'cmd')", "exec", "sb", "--", NULL);
	refused("missing SANDBOX", "exec", "--", "echo", "hi", NULL);
	refused("argument 'env'", "exec", "sb", "--env", "NOEQUALS", "--", "true", NULL);
	refused("argument 'env'", "exec", "sb", "--env", "A=1", "--env", "9X=1", "--", "true",
		NULL);
	refused("argument 'cmd' is given twice", "exec", "sb", "--cmd", "true", "--", "false",
		NULL);
	refused("option '--timeout-ms'", "exec", "sb", "--timeout-ms", "0", "--", "true", NULL);
}
END_TEST

START_TEST(stdin_and_lines_lines)
{
	struct eosctl_cmd cmd = { 0 };
	struct eos_error err = { 0 };

	ck_assert_int_eq(parse_words(&cmd, &err, "stdin", "sb", "cmd-17", "\003", NULL), 0);
	ck_assert_ptr_eq(cmd.op, eos_catalog_find("write_command_stdin"));
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "command_session_id")),
			 "cmd-17");
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "chars")), "\003");
	ck_assert_int_eq(parse_words(&cmd, &err, "lines", "--sandbox", "sb", "cmd-17", "--offset",
				     "201", "--limit", "50", NULL),
			 0);
	ck_assert_ptr_eq(cmd.op, eos_catalog_find("read_command_lines"));
	ck_assert_int_eq(json_integer_value(json_object_get(cmd.args, "offset")), 201);
	ck_assert_int_eq(json_integer_value(json_object_get(cmd.args, "limit")), 50);
	eosctl_cmd_release(&cmd);
	refused("missing COMMAND_SESSION_ID", "lines", "sb", NULL);
	refused("unexpected argument 'x'", "lines", "sb", "cmd-1", "x", NULL);
}
END_TEST

START_TEST(host_paths_become_absolute)
{
	struct eosctl_cmd cmd = { 0 };
	struct eos_error err = { 0 };
	char cwd[4096], want[4200];

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	ck_assert_int_eq(parse_words(&cmd, &err, "sandbox", "create", "./some/dir", NULL), 0);
	snprintf(want, sizeof(want), "%s/some/dir", cwd);
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "source")), want);
	eosctl_cmd_release(&cmd);
}
END_TEST

START_TEST(content_from_a_file)
{
	char path[] = "/tmp/eosctl-content.XXXXXX";
	int fd = mkstemp(path);
	struct eosctl_cmd cmd = { 0 };
	struct eos_error err = { 0 };

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "line 1\nline 2\n", 14), 14);
	close(fd);
	ck_assert_int_eq(parse_words(&cmd, &err, "file", "write", "a.txt", "--sandbox", "s",
				     "--content-file", path, NULL),
			 0);
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "content")),
			 "line 1\nline 2\n");
	eosctl_cmd_release(&cmd);
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, "\xff\xfe", 2), 2);
	close(fd);
	refused("is not UTF-8", "file", "write", "a.txt", "--sandbox", "s", "--content-file", path,
		NULL);
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, "[{\"old_string\":\"x\",\"new_string\":\"y\"}]", 37), 37);
	close(fd);
	ck_assert_int_eq(parse_words(&cmd, &err, "file", "edit", "a.txt", "--sandbox", "s",
				     "--edits-file", path, NULL),
			 0);
	ck_assert_int_eq(json_array_size(json_object_get(cmd.args, "edits")), 1);
	eosctl_cmd_release(&cmd);
	unlink(path);
}
END_TEST

START_TEST(help_and_local_commands)
{
	struct eosctl_cmd cmd = { 0 };
	struct eos_error err = { 0 };

	ck_assert_int_eq(parse_words(&cmd, &err, NULL), 0);
	ck_assert_int_eq(cmd.action, EOSCTL_ACTION_HELP);
	ck_assert(cmd.help_is_error);
	ck_assert_int_eq(parse_words(&cmd, &err, "--help", NULL), 0);
	ck_assert(cmd.action == EOSCTL_ACTION_HELP && !cmd.help_is_error && !cmd.group);
	ck_assert_int_eq(parse_words(&cmd, &err, "help", "create_sandbox", NULL), 0);
	ck_assert_ptr_eq(cmd.op, eos_catalog_find("create_sandbox"));
	ck_assert_int_eq(parse_words(&cmd, &err, "help", "file", "blame", NULL), 0);
	ck_assert_ptr_eq(cmd.op, eos_catalog_find("file_blame"));
	ck_assert_int_eq(parse_words(&cmd, &err, "file", "--help", NULL), 0);
	ck_assert(cmd.action == EOSCTL_ACTION_HELP && !cmd.help_is_error);
	ck_assert_str_eq(cmd.group, "file");
	ck_assert_int_eq(parse_words(&cmd, &err, "file", "read", "--help", NULL), 0);
	ck_assert(cmd.action == EOSCTL_ACTION_HELP && cmd.op == eos_catalog_find("file_read"));
	eosctl_cmd_release(&cmd);
	ck_assert_int_eq(parse_words(&cmd, &err, "session", NULL), 0);
	ck_assert(cmd.action == EOSCTL_ACTION_HELP && cmd.help_is_error);
	ck_assert_int_eq(parse_words(&cmd, &err, "daemon", "status", "--state-dir", "/s", NULL), 0);
	ck_assert_int_eq(cmd.action, EOSCTL_ACTION_DAEMON_STATUS);
	ck_assert_str_eq(cmd.state_dir, "/s");
	ck_assert_int_eq(parse_words(&cmd, &err, "daemon", "stop", NULL), 0);
	ck_assert_int_eq(cmd.action, EOSCTL_ACTION_DAEMON_STOP);
	ck_assert_int_eq(parse_words(&cmd, &err, "daemon", "start", NULL), 0);
	ck_assert_int_eq(cmd.action, EOSCTL_ACTION_DAEMON_START);
	ck_assert_int_eq(parse_words(&cmd, &err, "daemon", "ping", NULL), 0);
	ck_assert_ptr_eq(cmd.op, eos_catalog_find("ping"));
	eosctl_cmd_release(&cmd);
	ck_assert_int_eq(parse_words(&cmd, &err, "--version", NULL), 0);
	ck_assert_int_eq(cmd.action, EOSCTL_ACTION_VERSION);
	refused("unexpected argument 'x'", "daemon", "stop", "x", NULL);
}
END_TEST

/* The help of op, as a string; caller frees. */
static char *
capture_op(const struct eos_op *op)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	eosctl_help_op(f, op);
	fclose(f);
	return text;
}

START_TEST(help_lists_every_argument_with_its_default)
{
	size_t n;
	const struct eos_op *ops = eos_catalog_ops(&n);

	for (size_t i = 0; i < n; i++) {
		cleanup_free char *text = capture_op(&ops[i]);

		ck_assert_msg(strstr(text, ops[i].help), "%s: no help line", ops[i].name);
		for (size_t j = 0; j < ops[i].nargs; j++) {
			const struct eos_arg *a = &ops[i].args[j];
			char name[128], want[256];

			eosctl_arg_cli_name(a, name, sizeof(name));
			if (a->positional)
				eosctl_arg_metavar(a, name, sizeof(name));
			snprintf(want, sizeof(want), "%s%s", a->positional ? "" : "--", name);
			ck_assert_msg(strstr(text, want), "%s: no %s", ops[i].name, want);
			ck_assert_msg(strstr(text, a->help), "%s: no help of %s", ops[i].name,
				      a->name);
			if (!a->def)
				continue;
			snprintf(want, sizeof(want), "default: %s", a->def);
			ck_assert_msg(strstr(text, want), "%s: no '%s'", ops[i].name, want);
		}
	}
}
END_TEST

START_TEST(completion_knows_every_command_and_option)
{
	size_t n;
	const struct eos_op *ops = eos_catalog_ops(&n);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	eosctl_help_completion_bash(f);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "complete -F _eosctl eosctl"));
	for (size_t i = 0; i < n; i++) {
		char want[256];

		snprintf(want, sizeof(want), "'%s %s') echo '", ops[i].cli_group, ops[i].cli_verb);
		ck_assert_msg(strstr(text, want), "no options of %s", ops[i].name);
		snprintf(want, sizeof(want), "%s) echo '", ops[i].cli_group);
		ck_assert_msg(strstr(text, want), "no verbs of %s", ops[i].cli_group);
		for (size_t j = 0; j < ops[i].nargs; j++) {
			char name[128];

			eosctl_arg_cli_name(&ops[i].args[j], name, sizeof(name));
			snprintf(want, sizeof(want), "--%s ", name);
			ck_assert_msg(strstr(text, want), "no %s", want);
		}
	}
	free(text);
}
END_TEST

/* --- the upstream command lines (cli/eosctl-upstream.c) --------------------------------------- */

static const char *const front_progs[EOS_SURFACE_COUNT] = {
	[EOS_SURFACE_MANAGEMENT] = "sandbox-manager-cli",
	[EOS_SURFACE_RUNTIME] = "sandbox-runtime-cli",
	[EOS_SURFACE_OBSERVABILITY] = "sandbox-observability-cli",
};

/* `PROG [--sandbox-id sb-1] OP …` on the line of surface s, as op_line() builds eosctl's. */
static void
front_line(struct line *l, enum eos_surface s, const struct eos_op *op)
{
	push(l, front_progs[s]);
	if (s == EOS_SURFACE_RUNTIME) {
		push(l, "--sandbox-id");
		push(l, "sb-1");
	}
	push(l, op->name);
	if (op->needs_sandbox && s != EOS_SURFACE_RUNTIME) {
		push(l, "--sandbox-id");
		push(l, "sb-1");
	}
	push_args(l, op, NULL, NULL);
}

static int
front_parse(struct line *l, struct eosctl_cmd *cmd, struct eos_error *err)
{
	const struct eosctl_front *fe = eosctl_front_find(l->w[0]);

	ck_assert_ptr_nonnull(fe);
	eosctl_cmd_release(cmd);
	*cmd = (struct eosctl_cmd){ 0 };
	return eosctl_front_parse(fe, l->n, l->w, cmd, err);
}

/* The words (after the program, NULL-terminated) are refused on prog's line naming want. */
static void
front_refused(const char *prog, const char *want, ...)
{
	struct line l = { 0 };
	struct eosctl_cmd cmd = { 0 };
	struct eos_error err = { 0 };
	va_list ap;
	const char *w;

	push(&l, prog);
	va_start(ap, want);
	while ((w = va_arg(ap, const char *)))
		push(&l, w);
	va_end(ap);
	ck_assert_int_eq(front_parse(&l, &cmd, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
	eosctl_cmd_release(&cmd);
	line_free(&l);
}

START_TEST(front_ends_are_found_by_name)
{
	const struct eosctl_front *fe = eosctl_front_find("/usr/bin/sandbox-runtime-cli");

	ck_assert_ptr_nonnull(fe);
	ck_assert_int_eq(fe->surface, EOS_SURFACE_RUNTIME);
	ck_assert_int_eq(eosctl_front_find("sandbox-manager-cli")->surface, EOS_SURFACE_MANAGEMENT);
	ck_assert_int_eq(eosctl_front_find("./sandbox-observability-cli")->surface,
			 EOS_SURFACE_OBSERVABILITY);
	ck_assert_ptr_null(eosctl_front_find("/usr/bin/eosctl"));
	ck_assert_ptr_null(eosctl_front_find("sandbox-runtime-cli2"));
	ck_assert_ptr_null(eosctl_front_find(NULL));
}
END_TEST

/* Every operation parses on its surface's line, and on no other. */
START_TEST(front_every_op_on_its_line_only)
{
	size_t n;
	const struct eos_op *ops = eos_catalog_ops(&n);

	for (size_t i = 0; i < n; i++)
		for (int s = 0; s < EOS_SURFACE_COUNT; s++) {
			struct line l = { 0 };
			struct eosctl_cmd cmd = { 0 };
			struct eos_error err = { 0 };
			int r;

			front_line(&l, (enum eos_surface)s, &ops[i]);
			r = front_parse(&l, &cmd, &err);
			if ((int)ops[i].surface != s) {
				ck_assert_msg(r == -EINVAL && strstr(err.msg, "surface"),
					      "%s on %s: %d %s", ops[i].name, front_progs[s], r,
					      err.msg);
			} else {
				ck_assert_msg(r == 0, "%s: %s", ops[i].name, err.msg);
				ck_assert_ptr_eq(cmd.op, &ops[i]);
				ck_assert_int_eq(cmd.action, EOSCTL_ACTION_OP);
				ck_assert_int_eq(cmd.output, EOSCTL_OUTPUT_JSON);
				if (ops[i].needs_sandbox)
					ck_assert_str_eq(cmd.sandbox, "sb-1");
			}
			eosctl_cmd_release(&cmd);
			line_free(&l);
		}
}
END_TEST

START_TEST(front_upstream_style)
{
	struct line l = { 0 };
	struct eosctl_cmd cmd = { 0 };
	struct eos_error err = { 0 };
	const char *words[] = { "sandbox-runtime-cli",
				"--sandbox-id",
				"proj",
				"exec_command",
				"make test",
				"--workspace-session-id",
				"ws-1",
				"--yield-time-ms",
				"500",
				"--timeout-ms",
				"60000" };

	for (size_t i = 0; i < EOS_ARRAY_SIZE(words); i++)
		push(&l, words[i]);
	ck_assert_int_eq(front_parse(&l, &cmd, &err), 0);
	ck_assert_str_eq(cmd.sandbox, "proj");
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "cmd")), "make test");
	ck_assert_str_eq(json_string_value(json_object_get(cmd.args, "workspace_session_id")),
			 "ws-1");
	ck_assert_int_eq(json_integer_value(json_object_get(cmd.args, "yield_time_ms")), 500);
	ck_assert_int_eq(json_integer_value(json_object_get(cmd.args, "timeout_ms")), 60000);
	eosctl_cmd_release(&cmd);
	line_free(&l);
	front_refused("sandbox-runtime-cli", "missing option '--sandbox-id ID' before", "file_list",
		      NULL);
	front_refused("sandbox-runtime-cli", "missing option '--sandbox-id ID' before",
		      "exec_command", "sb1", "true", NULL);
	front_refused("sandbox-runtime-cli", "unknown operation 'exec'", "--sandbox-id", "sb",
		      "exec", "true", NULL);
	front_refused("sandbox-runtime-cli", "unknown option '--session'", "--sandbox-id", "sb",
		      "exec_command", "true", "--session", "ws-1", NULL);
	front_refused("sandbox-manager-cli", "unknown option '--json'", "--json", "list_sandboxes",
		      NULL);
	front_refused("sandbox-manager-cli", "unknown option '--sandbox'", "inspect_sandbox",
		      "--sandbox", "sb", NULL);
	front_refused("sandbox-manager-cli", "option '--sandbox-id': 'list_sandboxes' acts on no",
		      "list_sandboxes", "--sandbox-id", "sb", NULL);
	front_refused("sandbox-observability-cli",
		      "unknown option '--bogus' (see 'sandbox-observability-cli trace --help')",
		      "trace", "--bogus", NULL);
}
END_TEST

START_TEST(front_help_lines)
{
	struct line l = { 0 };
	struct eosctl_cmd cmd = { 0 };
	struct eos_error err = { 0 };

	push(&l, "sandbox-runtime-cli");
	push(&l, "exec_command");
	push(&l, "--help");
	ck_assert_int_eq(front_parse(&l, &cmd, &err), 0);
	ck_assert_int_eq(cmd.action, EOSCTL_ACTION_HELP);
	ck_assert_str_eq(cmd.op->name, "exec_command");
	line_free(&l);
	push(&l, "sandbox-manager-cli");
	ck_assert_int_eq(front_parse(&l, &cmd, &err), 0);
	ck_assert_int_eq(cmd.action, EOSCTL_ACTION_HELP);
	ck_assert(cmd.help_is_error);
	eosctl_cmd_release(&cmd);
	line_free(&l);
}
END_TEST

/* What the catalog marks ★ (eos adds it) is an extension; the upstream set is 22 operations. */
START_TEST(front_extensions_match_the_catalog)
{
	size_t n, upstream = 0;
	const struct eos_op *ops = eos_catalog_ops(&n);

	for (size_t i = 0; i < n; i++) {
		bool ext = eosctl_front_op_is_extension(&ops[i]);

		if (strncmp(ops[i].help, "★", strlen("★")) == 0)
			ck_assert_msg(ext, "%s is marked ★ in the catalog", ops[i].name);
		upstream += !ext;
	}
	ck_assert_uint_eq(upstream, 22);
	ck_assert(eosctl_front_op_is_extension(eos_catalog_find("mount_workspace_session")));
	ck_assert(!eosctl_front_op_is_extension(eos_catalog_find("exec_command")));
	ck_assert(eosctl_front_arg_is_extension(
		eos_catalog_find("exec_command"),
		eos_catalog_arg(eos_catalog_find("exec_command"), "isolation")));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("eosctl-args");
	TCase *tf = tcase_create("upstream");
	TCase *tc = tcase_create("eosctl-args");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, every_op_is_reachable);
	tcase_add_test(tc, every_missing_argument_is_named);
	tcase_add_test(tc, every_bad_value_is_named);
	tcase_add_test(tc, usage_errors_name_the_word);
	tcase_add_test(tc, options_aliases_and_forms);
	tcase_add_test(tc, exec_words_are_joined_and_quoted);
	tcase_add_test(tc, exec_line);
	tcase_add_test(tc, stdin_and_lines_lines);
	tcase_add_test(tc, host_paths_become_absolute);
	tcase_add_test(tc, content_from_a_file);
	tcase_add_test(tc, help_and_local_commands);
	tcase_add_test(tc, help_lists_every_argument_with_its_default);
	tcase_add_test(tc, completion_knows_every_command_and_option);
	suite_add_tcase(s, tc);
	tcase_add_test(tf, front_ends_are_found_by_name);
	tcase_add_test(tf, front_every_op_on_its_line_only);
	tcase_add_test(tf, front_upstream_style);
	tcase_add_test(tf, front_help_lines);
	tcase_add_test(tf, front_extensions_match_the_catalog);
	suite_add_tcase(s, tf);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
