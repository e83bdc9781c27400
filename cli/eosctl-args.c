/* SPDX-License-Identifier: MIT */
/*
 * eosctl-args: the command line, from the catalog (cli/eosctl.h). `eosctl GROUP VERB …` names the
 * operation with that cli_group and cli_verb; its words are the operation's positionals in
 * catalog order, its --options the other arguments (names with '_' → '-'). Every value goes
 * through eos_catalog_parse_word() and the whole set through eos_catalog_validate(), so a line
 * eosd would refuse is refused here, naming the option, before anything is sent. An env argument
 * may be given again (`--env A=1 --env B=2`): the objects merge, the later value of a name wins.
 * exec's command is the rest of the line (eosctl_exec_takes_words()), joined into one.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json.h"

#include "cli/eosctl.h"

static const struct eosctl_local locals[] = {
	{ "daemon", "start", "start eosd for the state directory (nothing to do when it runs)",
	  EOSCTL_ACTION_DAEMON_START },
	{ "daemon", "stop", "stop eosd (SIGTERM) and wait until it has exited",
	  EOSCTL_ACTION_DAEMON_STOP },
	{ "daemon", "status", "eosd's pid, socket and version, or \"not running\" (exit 1)",
	  EOSCTL_ACTION_DAEMON_STATUS },
	{ "top", "",
	  "a live view of the sessions and their commands, redrawn every --interval SECONDS "
	  "(default 1) until q; --count N draws N frames and exits",
	  EOSCTL_ACTION_TOP },
	{ "console", "",
	  "the web console's URL with a one-time login link (eosd is started listening on "
	  "127.0.0.1 when none runs)",
	  EOSCTL_ACTION_CONSOLE },
};

enum global {
	G_SANDBOX,
	G_REQUEST_ID,
	G_STATE_DIR,
	G_URL,
	G_TOKEN_FILE,
	G_TIMEOUT,
	G_OUTPUT,
	G_JSON,
	G_TEXT,
	G_HELP,
	G_COUNT
};

static const struct eosctl_global_opt globals[G_COUNT] = {
	[G_SANDBOX] = { "sandbox", "ID", "the sandbox the operation acts on" },
	[G_REQUEST_ID] = { "request-id", "ID",
			   "the request's id (file changes are attributed to operation:ID)" },
	[G_STATE_DIR] = { "state-dir", "DIR",
			  "eos's state directory (default: $EOS_STATE_DIR, else "
			  "$XDG_DATA_HOME/eos, as root /var/lib/eos)" },
	[G_URL] = { "url", "URL",
		    "talk to the eosd at unix:PATH or http://127.0.0.1:PORT (never starts one)" },
	[G_TOKEN_FILE] = { "token-file", "FILE",
			   "the token to send (default: <state>/tokens/<the operation's surface>)" },
	[G_TIMEOUT] = { "timeout", "SECONDS",
			"give up waiting for eosd after SECONDS (default: 120; none for "
			"long-running operations)" },
	[G_OUTPUT] = { "output", "text|json",
		       "how to print the reply (default: text on a "
		       "terminal, else json)" },
	[G_JSON] = { "json", NULL, "print the reply as one JSON document (--output json)" },
	[G_TEXT] = { "text", NULL, "print the reply as text (--output text)" },
	[G_HELP] = { "help", NULL, "show this help" },
};

static const struct eos_arg sandbox_arg = { "sandbox", EOS_ARG_ID, true, NULL,	       0,
					    0,	       NULL,	   0,	 "the sandbox" };
static const struct eos_arg request_id_arg = { "request_id", EOS_ARG_ID, false,
					       NULL,	     0,		 0,
					       NULL,	     0,		 "the request's id" };

const struct eosctl_local *
eosctl_local_commands(size_t *n)
{
	*n = EOS_ARRAY_SIZE(locals);
	return locals;
}

const struct eosctl_global_opt *
eosctl_global_options(size_t *n)
{
	*n = G_COUNT;
	return globals;
}

void
eosctl_arg_cli_name(const struct eos_arg *a, char *buf, size_t n)
{
	snprintf(buf, n, "%s", a->name);
	for (char *c = buf; *c; c++)
		if (*c == '_')
			*c = '-';
}

void
eosctl_arg_metavar(const struct eos_arg *a, char *buf, size_t n)
{
	switch (a->kind) {
	case EOS_ARG_INT:
		snprintf(buf, n, "N");
		return;
	case EOS_ARG_BOOL:
		snprintf(buf, n, "true|false");
		return;
	case EOS_ARG_EDITS:
		snprintf(buf, n, "JSON");
		return;
	case EOS_ARG_ENV:
		snprintf(buf, n, "NAME=VALUE");
		return;
	case EOS_ARG_ID:
	case EOS_ARG_VERSION:
		if (!a->positional) {
			snprintf(buf, n, a->kind == EOS_ARG_ID ? "ID" : "VERSION");
			return;
		}
		break;
	case EOS_ARG_STRING:
	case EOS_ARG_ENUM:
	case EOS_ARG_PATH:
	case EOS_ARG_HOST_PATH:
		break;
	}
	eosctl_arg_cli_name(a, buf, n);
	for (char *c = buf; *c; c++)
		*c = (*c == '-') ? '_' : (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
}

bool
eosctl_op_sandbox_positional(const struct eos_op *op)
{
	return op->needs_sandbox && (strcmp(op->cli_group, "sandbox") == 0 || !op->cli_verb[0]);
}

void
eosctl_op_cli_name(const struct eos_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s%s", op->cli_group, op->cli_verb[0] ? " " : "", op->cli_verb);
}

/* --- parser state ----------------------------------------------------------------------------- */

enum {
	POSITIONAL_MAX = 16
};

struct parser {
	int argc;
	char *const *argv;
	int i; /* the next word */
	struct eosctl_cmd *cmd;
	const char *pos[POSITIONAL_MAX];
	size_t npos;
	char *const *words; /* exec: the words after "--" */
	size_t nwords;
};

static bool
group_known(const char *group)
{
	size_t n, nl;
	const struct eos_op *ops = eos_catalog_ops(&n);
	const struct eosctl_local *l = eosctl_local_commands(&nl);

	for (size_t i = 0; i < n; i++)
		if (strcmp(ops[i].cli_group, group) == 0)
			return true;
	for (size_t i = 0; i < nl; i++)
		if (strcmp(l[i].group, group) == 0)
			return true;
	return false;
}

static const struct eosctl_local *
local_find(const char *group, const char *verb)
{
	for (size_t i = 0; i < EOS_ARRAY_SIZE(locals); i++)
		if (strcmp(locals[i].group, group) == 0 && strcmp(locals[i].verb, verb) == 0)
			return &locals[i];
	return NULL;
}

/* The value of option --name: after '=' (inline), else the next word. */
static int
option_value(struct parser *p, const char *name, const char *inline_value, const char **ret,
	     struct eos_error *err)
{
	if (inline_value) {
		*ret = inline_value;
		return 0;
	}
	if (p->i >= p->argc)
		return eos_error_set(err, -EINVAL, "option '--%s' needs a value", name);
	*ret = p->argv[p->i++];
	return 0;
}

/* --- global options --------------------------------------------------------------------------- */

/* The name of global option g on c's line: a front end renames some and offers not all (NULL). */
static const char *
global_name(const struct eosctl_cmd *c, enum global g)
{
	return c->front ? eosctl_front_global_name(c->front, globals[g].name) : globals[g].name;
}

static int
parse_timeout(const char *v, int *ret, struct eos_error *err)
{
	char *end;
	long s;

	errno = 0;
	s = strtol(v, &end, 10);
	if (errno || end == v || *end || s < 1 || s > INT_MAX / 1000)
		return eos_error_set(err, -EINVAL,
				     "option '--timeout': '%s' is not a number of seconds in [1, "
				     "%d]",
				     v, INT_MAX / 1000);
	*ret = (int)s * 1000;
	return 0;
}

static int
parse_output(const char *v, enum eosctl_output *ret, struct eos_error *err)
{
	if (strcmp(v, "text") == 0)
		*ret = EOSCTL_OUTPUT_TEXT;
	else if (strcmp(v, "json") == 0)
		*ret = EOSCTL_OUTPUT_JSON;
	else
		return eos_error_set(err, -EINVAL, "option '--output': '%s' is not text or json",
				     v);
	return 0;
}

static int
check_id_word(const struct eos_arg *a, const char *opt, const char *v, struct eos_error *err)
{
	EOS_CLEANUP(json_decrefp) json_t *j = NULL;
	int r = eos_catalog_parse_word(a, v, &j, err);

	return r < 0 ? eos_error_prefix(err, r, "option '--%s'", opt) : 0;
}

/* Store the value of global option g; the flags take none. */
static int
set_global(struct eosctl_cmd *c, enum global g, const char *v, struct eos_error *err)
{
	switch (g) {
	case G_SANDBOX:
		c->sandbox = v;
		return check_id_word(&sandbox_arg, global_name(c, g), v, err);
	case G_REQUEST_ID:
		c->request_id = v;
		return check_id_word(&request_id_arg, global_name(c, g), v, err);
	case G_STATE_DIR:
		c->state_dir = v;
		return v[0] ? 0 : eos_error_set(err, -EINVAL, "option '--state-dir' is empty");
	case G_URL:
		c->url = v;
		return 0;
	case G_TOKEN_FILE:
		c->token_file = v;
		return 0;
	case G_TIMEOUT:
		return parse_timeout(v, &c->timeout_ms, err);
	case G_OUTPUT:
		return parse_output(v, &c->output, err);
	case G_JSON:
		c->output = EOSCTL_OUTPUT_JSON;
		return 0;
	case G_TEXT:
		c->output = EOSCTL_OUTPUT_TEXT;
		return 0;
	case G_HELP:
	case G_COUNT:
		break;
	}
	return 0;
}

/* 1 when --name (value after '=' or NULL) is a global option and was taken, 0 when it is not. */
static int
global_option(struct parser *p, const char *name, const char *inline_value, struct eos_error *err)
{
	for (int g = 0; g < G_COUNT; g++) {
		const char *v = NULL, *own = global_name(p->cmd, (enum global)g);
		int r;

		if (!own || strcmp(own, name) != 0)
			continue;
		if (!globals[g].metavar && inline_value)
			return eos_error_set(err, -EINVAL, "option '--%s' takes no value", name);
		if (globals[g].metavar && (r = option_value(p, name, inline_value, &v, err)) < 0)
			return r;
		if ((r = set_global(p->cmd, (enum global)g, v, err)) < 0)
			return r;
		return 1;
	}
	return 0;
}

/* Split "--name=value" into name (in buf) and value (NULL without '='). */
static int
split_option(const char *word, char *buf, size_t n, const char **ret_value, struct eos_error *err)
{
	const char *eq = strchr(word + 2, '=');
	size_t len = eq ? (size_t)(eq - word - 2) : strlen(word + 2);

	if (len == 0 || len >= n)
		return eos_error_set(err, -EINVAL, "unknown option '%s'", word);
	memcpy(buf, word + 2, len);
	buf[len] = '\0';
	*ret_value = eq ? eq + 1 : NULL;
	return 0;
}

/* " (see 'eosctl help OP')", " (see 'PROG OP --help')" on a front end's line, or "" without op. */
static const char *
help_hint(const struct eosctl_cmd *c, char *buf, size_t n)
{
	buf[0] = '\0';
	if (c->op && c->front)
		snprintf(buf, n, " (see '%s %s --help')", c->front->prog, c->op->name);
	else if (c->op)
		snprintf(buf, n, " (see 'eosctl help %s')", c->op->name);
	return buf;
}

/* --- operation arguments ---------------------------------------------------------------------- */

/* The command-line form of an argument: --name, --no-name (booleans), --name-file (text). */
enum form {
	FORM_VALUE,
	FORM_NEGATED,
	FORM_FILE,
};

/* Whether name is a's cli name, or (with aliases) its alias (workspace-session-id → session). */
static bool
name_matches(const struct eos_arg *a, const char *name, bool aliases)
{
	char cli[128];
	char *ws;

	eosctl_arg_cli_name(a, cli, sizeof(cli));
	if (strcmp(cli, name) == 0)
		return true;
	ws = strstr(cli, "workspace-session-id");
	if (!ws || !aliases)
		return false;
	memmove(ws, "session", sizeof("session"));
	return strcmp(cli, name) == 0;
}

static const struct eos_arg *
find_option(const struct eos_op *op, const char *name, bool aliases, enum form *ret_form)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < op->nargs; i++) {
		const struct eos_arg *a = &op->args[i];
		bool text = a->kind == EOS_ARG_STRING || a->kind == EOS_ARG_EDITS;
		char stem[128];

		*ret_form = FORM_VALUE;
		if (name_matches(a, name, aliases))
			return a;
		*ret_form = FORM_NEGATED;
		if (a->kind == EOS_ARG_BOOL && strncmp(name, "no-", 3) == 0 &&
		    name_matches(a, name + 3, aliases))
			return a;
		*ret_form = FORM_FILE;
		if (text && len > 5 && len < sizeof(stem) && strcmp(name + len - 5, "-file") == 0) {
			memcpy(stem, name, len - 5);
			stem[len - 5] = '\0';
			if (name_matches(a, stem, aliases))
				return a;
		}
	}
	return NULL;
}

static int
set_arg(struct parser *p, const struct eos_arg *a, json_t *v, struct eos_error *err)
{
	json_t *had = json_object_get(p->cmd->args, a->name);

	if (had && a->kind == EOS_ARG_ENV) {
		int r = json_object_update(had, v);

		json_decref(v);
		return r < 0 ? eos_error_set(err, -ENOMEM, "out of memory") : 0;
	}
	if (had) {
		json_decref(v);
		return eos_error_set(err, -EINVAL, "argument '%s' is given twice", a->name);
	}
	if (json_object_set_new(p->cmd->args, a->name, v) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* Parse word as a value of a (a relative host path is taken from the working directory). */
static int
parse_value(const struct eos_arg *a, const char *word, json_t **ret, struct eos_error *err)
{
	cleanup_free char *abs = NULL;
	char cwd[PATH_MAX];

	if (a->kind == EOS_ARG_HOST_PATH && word[0] != '/' && word[0] != '\0') {
		if (!getcwd(cwd, sizeof(cwd)))
			return eos_error_set(err, eos_neg_errno(), "argument '%s': getcwd: %s",
					     a->name, strerror(errno));
		while (word[0] == '.' && word[1] == '/')
			word += 2;
		if (asprintf(&abs, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "",
			     strcmp(word, ".") ? word : "") < 0) {
			abs = NULL;
			return eos_error_set(err, -ENOMEM, "out of memory");
		}
		word = abs;
	}
	return eos_catalog_parse_word(a, word, ret, err);
}

static int
op_option(struct parser *p, const char *name, const char *inline_value, struct eos_error *err)
{
	enum form form;
	const struct eos_arg *a = find_option(p->cmd->op, name, !p->cmd->front, &form);
	const char *v = NULL;
	json_t *j = NULL;
	int r;

	if (!a)
		return 0;
	if (form == FORM_NEGATED) {
		if (inline_value)
			return eos_error_set(err, -EINVAL, "option '--%s' takes no value", name);
		return (r = set_arg(p, a, json_false(), err)) < 0 ? r : 1;
	}
	if (a->kind == EOS_ARG_BOOL && form == FORM_VALUE && !inline_value)
		return (r = set_arg(p, a, json_true(), err)) < 0 ? r : 1;
	if ((r = option_value(p, name, inline_value, &v, err)) < 0)
		return r;
	r = form == FORM_FILE ? eosctl_args_read_file(a, v, &j, err) : parse_value(a, v, &j, err);
	if (r < 0)
		return eos_error_prefix(err, r, "option '--%s'", name);
	return (r = set_arg(p, a, j, err)) < 0 ? r : 1;
}

/* top's own options: --interval SECONDS, --count N. 1 when taken. */
static int
top_option(struct parser *p, const char *name, const char *inline_value, struct eos_error *err)
{
	const char *v = NULL;
	char *end;
	long n;
	int r;

	if (p->cmd->action != EOSCTL_ACTION_TOP ||
	    (strcmp(name, "interval") != 0 && strcmp(name, "count") != 0))
		return 0;
	if ((r = option_value(p, name, inline_value, &v, err)) < 0)
		return r;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < 1 || n > 86400)
		return eos_error_set(err, -EINVAL,
				     "option '--%s': '%s' is not a number in [1, 86400]", name, v);
	if (name[0] == 'i')
		p->cmd->interval_ms = (int)n * 1000;
	else
		p->cmd->count = (int)n;
	return 1;
}

static int
one_option(struct parser *p, const char *word, struct eos_error *err)
{
	char name[128], hint[192];
	const char *v;
	int r;

	if ((r = split_option(word, name, sizeof(name), &v, err)) < 0)
		return r;
	if (strcmp(name, "help") == 0 && !v) {
		p->cmd->action = EOSCTL_ACTION_HELP;
		return 0;
	}
	if ((r = top_option(p, name, v, err)) != 0)
		return r < 0 ? r : 0;
	if (p->cmd->op && (r = op_option(p, name, v, err)) != 0)
		return r < 0 ? r : 0;
	if ((r = global_option(p, name, v, err)) != 0)
		return r < 0 ? r : 0;
	return eos_error_set(err, -EINVAL, "unknown option '--%s'%s", name,
			     help_hint(p->cmd, hint, sizeof(hint)));
}

/* --- positionals ------------------------------------------------------------------------------ */

static const struct eos_arg *
positional(const struct eos_op *op, unsigned k)
{
	for (size_t i = 0; i < op->nargs; i++)
		if (op->args[i].positional == k)
			return &op->args[i];
	return NULL;
}

/* exec: the words from pos[w] on and those after "--" are its one command line. */
static int
assign_command_words(struct parser *p, size_t w, struct eos_error *err)
{
	const struct eos_arg *a = positional(p->cmd->op, 1);
	size_t before = p->npos - w, n = before + p->nwords;
	cleanup_free const char **words = NULL;
	cleanup_free char *line = NULL;
	json_t *j;
	int r;

	if (n == 0)
		return 0; /* finish_op() names what is missing */
	if (!(words = calloc(n, sizeof(*words))))
		return eos_error_set(err, -ENOMEM, "out of memory");
	memcpy(words, p->pos + w, before * sizeof(*words));
	for (size_t k = 0; k < p->nwords; k++)
		words[before + k] = p->words[k];
	if ((r = eosctl_exec_join_words(words, n, &line, err)) < 0 ||
	    (r = parse_value(a, line, &j, err)) < 0)
		return r;
	return set_arg(p, a, j, err);
}

static int
assign_positionals(struct parser *p, struct eos_error *err)
{
	const struct eos_op *op = p->cmd->op;
	char hint[192];
	size_t w = 0;
	json_t *j;
	int r;

	if (eosctl_op_sandbox_positional(op) && !p->cmd->sandbox && p->npos > 0) {
		if ((r = set_global(p->cmd, G_SANDBOX, p->pos[w++], err)) < 0)
			return r;
	}
	if (eosctl_exec_takes_words(op))
		return assign_command_words(p, w, err);
	for (unsigned k = 1; w < p->npos; k++, w++) {
		const struct eos_arg *a = positional(op, k);

		if (!a)
			return eos_error_set(err, -EINVAL, "unexpected argument '%s'%s", p->pos[w],
					     help_hint(p->cmd, hint, sizeof(hint)));
		if ((r = parse_value(a, p->pos[w], &j, err)) < 0)
			return r;
		if ((r = set_arg(p, a, j, err)) < 0)
			return r;
	}
	return 0;
}

static int
missing(const struct eos_arg *a, struct eos_error *err)
{
	char name[128], meta[128];

	eosctl_arg_cli_name(a, name, sizeof(name));
	eosctl_arg_metavar(a, meta, sizeof(meta));
	if (a->positional)
		return eos_error_set(err, -EINVAL, "missing %s (argument '%s')", meta, a->name);
	if (a->kind == EOS_ARG_STRING || a->kind == EOS_ARG_EDITS)
		return eos_error_set(err, -EINVAL,
				     "missing option '--%s %s' or '--%s-file FILE' (argument '%s')",
				     name, meta, name, a->name);
	return eos_error_set(err, -EINVAL, "missing option '--%s %s' (argument '%s')", name, meta,
			     a->name);
}

static int
missing_sandbox(const struct eosctl_cmd *c, const char *cli, struct eos_error *err)
{
	if (eosctl_op_sandbox_positional(c->op) && !c->front)
		return eos_error_set(err, -EINVAL, "missing SANDBOX (the sandbox '%s' acts on)",
				     cli);
	return eos_error_set(err, -EINVAL, "missing option '--%s ID' (the sandbox '%s' acts on)",
			     global_name(c, G_SANDBOX), cli);
}

/* Everything is known: positionals to arguments, then what the catalog requires. */
static int
finish_op(struct parser *p, struct eos_error *err)
{
	const struct eos_op *op = p->cmd->op;
	EOS_CLEANUP(json_decrefp) json_t *copy = NULL;
	char cli[128];
	int r;

	if (p->cmd->front && (r = eosctl_front_check(p->cmd, err)) < 0)
		return r;
	if ((r = assign_positionals(p, err)) < 0)
		return r;
	for (size_t i = 0; i < op->nargs; i++)
		if (op->args[i].required && !json_object_get(p->cmd->args, op->args[i].name))
			return missing(&op->args[i], err);
	if (p->cmd->front)
		snprintf(cli, sizeof(cli), "%s", op->name);
	else
		eosctl_op_cli_name(op, cli, sizeof(cli));
	if (op->needs_sandbox && !p->cmd->sandbox)
		return missing_sandbox(p->cmd, cli, err);
	if (!op->needs_sandbox && !op->sandbox_optional && p->cmd->sandbox)
		return eos_error_set(err, -EINVAL, "option '--%s': '%s' acts on no sandbox",
				     global_name(p->cmd, G_SANDBOX), cli);
	if (!(copy = json_deep_copy(p->cmd->args)))
		return eos_error_set(err, -ENOMEM, "out of memory");
	return eos_catalog_validate(op, copy, err);
}

/* --- the words after GROUP VERB --------------------------------------------------------------- */

static int
parse_rest(struct parser *p, struct eos_error *err)
{
	bool only_positionals = false;
	int r;

	while (p->i < p->argc && p->cmd->action != EOSCTL_ACTION_HELP) {
		const char *w = p->argv[p->i++];

		if (!only_positionals && strcmp(w, "--") == 0) {
			only_positionals = true;
			if (p->cmd->op && eosctl_exec_takes_words(p->cmd->op)) {
				p->words = p->argv + p->i;
				p->nwords = (size_t)(p->argc - p->i);
				p->i = p->argc;
			}
		} else if (!only_positionals && strncmp(w, "--", 2) == 0) {
			if ((r = one_option(p, w, err)) < 0)
				return r;
		} else if (!only_positionals && strcmp(w, "-h") == 0) {
			p->cmd->action = EOSCTL_ACTION_HELP;
		} else if (!only_positionals && w[0] == '-' && w[1] != '\0') {
			return eos_error_set(err, -EINVAL, "unknown option '%s'", w);
		} else if (!p->cmd->op || p->npos == POSITIONAL_MAX) { /* a local takes no words */
			return eos_error_set(err, -EINVAL, "unexpected argument '%s'", w);
		} else {
			p->pos[p->npos++] = w;
		}
	}
	if (p->cmd->action == EOSCTL_ACTION_HELP || !p->cmd->op)
		return 0;
	return finish_op(p, err);
}

/* --- commands --------------------------------------------------------------------------------- */

static int
parse_help(struct parser *p, struct eos_error *err)
{
	struct eosctl_cmd *c = p->cmd;
	const char *a = p->i < p->argc ? p->argv[p->i++] : NULL;
	const char *b = p->i < p->argc ? p->argv[p->i++] : NULL;

	c->action = EOSCTL_ACTION_HELP;
	if (p->i < p->argc)
		return eos_error_set(err, -EINVAL, "unexpected argument '%s'", p->argv[p->i]);
	if (!a)
		return 0;
	if (!b && ((c->op = eos_catalog_find(a)) || (c->op = eos_catalog_find_cli(a, "")) ||
		   (c->local = local_find(a, ""))))
		return 0;
	if (!b && group_known(a)) {
		c->group = a;
		return 0;
	}
	if (b && ((c->op = eos_catalog_find_cli(a, b)) || (c->local = local_find(a, b))))
		return 0;
	return eos_error_set(err, -EINVAL, "help: unknown command '%s%s%s' (see 'eosctl --help')",
			     a, b ? " " : "", b ? b : "");
}

/* A command of one word (`eosctl trace ID`, `eosctl top`): its words follow the group. */
static int
parse_single(struct parser *p, const char *group, struct eos_error *err)
{
	struct eosctl_cmd *c = p->cmd;

	c->group = group;
	c->op = eos_catalog_find_cli(group, "");
	c->local = c->op ? NULL : local_find(group, "");
	c->action = c->op ? EOSCTL_ACTION_OP : c->local->action;
	if (c->op && !(c->args = json_object()))
		return eos_error_set(err, -ENOMEM, "out of memory");
	return parse_rest(p, err);
}

static int
parse_command(struct parser *p, const char *group, struct eos_error *err)
{
	struct eosctl_cmd *c = p->cmd;
	const char *verb = p->i < p->argc ? p->argv[p->i] : NULL;

	if (!group_known(group))
		return eos_error_set(err, -EINVAL, "unknown command '%s' (see 'eosctl --help')",
				     group);
	if (eos_catalog_find_cli(group, "") || local_find(group, ""))
		return parse_single(p, group, err);
	c->group = group;
	if (!verb || verb[0] == '-') {
		c->action = EOSCTL_ACTION_HELP;
		c->help_is_error = !verb || (strcmp(verb, "--help") != 0 && strcmp(verb, "-h"));
		return 0;
	}
	p->i++;
	c->op = eos_catalog_find_cli(group, verb);
	c->local = c->op ? NULL : local_find(group, verb);
	if (!c->op && !c->local)
		return eos_error_set(err, -EINVAL,
				     "unknown command '%s %s' (see 'eosctl %s --help')", group,
				     verb, group);
	c->action = c->op ? EOSCTL_ACTION_OP : c->local->action;
	if (c->op && !(c->args = json_object()))
		return eos_error_set(err, -ENOMEM, "out of memory");
	return parse_rest(p, err);
}

/* Options before the command: the global ones, --help and --version. */
static int
parse_leading(struct parser *p, struct eos_error *err)
{
	int r;

	while (p->i < p->argc && p->argv[p->i][0] == '-') {
		const char *w = p->argv[p->i++];

		if (strcmp(w, "--version") == 0) {
			p->cmd->action = EOSCTL_ACTION_VERSION;
			return 1;
		}
		if (strcmp(w, "--help") == 0 || strcmp(w, "-h") == 0) {
			p->cmd->action = EOSCTL_ACTION_HELP;
			return 1;
		}
		if (strncmp(w, "--", 2) != 0)
			return eos_error_set(err, -EINVAL, "unknown option '%s'", w);
		if ((r = one_option(p, w, err)) < 0)
			return r;
	}
	return 0;
}

int
eosctl_args_parse(int argc, char *const *argv, struct eosctl_cmd *cmd, struct eos_error *err)
{
	struct parser p = { .argc = argc, .argv = argv, .i = 1, .cmd = cmd };
	const char *word;
	int r;

	if ((r = parse_leading(&p, err)) != 0)
		return r < 0 ? r : 0;
	if (p.i >= argc) {
		cmd->action = EOSCTL_ACTION_HELP;
		cmd->help_is_error = true;
		return 0;
	}
	word = argv[p.i++];
	if (strcmp(word, "help") == 0)
		return parse_help(&p, err);
	if (strcmp(word, "completion") == 0) {
		cmd->action = EOSCTL_ACTION_COMPLETION;
		if (p.i < argc && strcmp(argv[p.i], "bash") == 0)
			p.i++;
		return p.i < argc ? eos_error_set(err, -EINVAL,
						  "completion: unknown shell '%s' (bash only)",
						  argv[p.i])
				  : 0;
	}
	return parse_command(&p, word, err);
}

int
eosctl_args_parse_leading(int argc, char *const *argv, int *i, struct eosctl_cmd *cmd,
			  struct eos_error *err)
{
	struct parser p = { .argc = argc, .argv = argv, .i = *i, .cmd = cmd };
	int r = parse_leading(&p, err);

	*i = p.i;
	return r;
}

int
eosctl_args_parse_op(int argc, char *const *argv, int i, struct eosctl_cmd *cmd,
		     struct eos_error *err)
{
	struct parser p = { .argc = argc, .argv = argv, .i = i, .cmd = cmd };

	assert(cmd->op && cmd->action == EOSCTL_ACTION_OP);
	if (!cmd->args && !(cmd->args = json_object()))
		return eos_error_set(err, -ENOMEM, "out of memory");
	return parse_rest(&p, err);
}

void
eosctl_cmd_release(struct eosctl_cmd *cmd)
{
	if (!cmd)
		return;
	json_decref(cmd->args);
	cmd->args = NULL;
}
