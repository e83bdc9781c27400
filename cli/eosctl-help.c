/* SPDX-License-Identifier: MIT */
/*
 * eosctl-help: --help, `eosctl help OP` and the bash completion script, all generated from the
 * operation catalog (common/catalog.h) and eosctl's few own commands.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"

#include "cli/eosctl.h"

enum {
	LEFT = 30
}; /* width of the left column of argument and command lists */

void
eosctl_help_usage_arg(FILE *f, const struct eos_arg *a)
{
	char name[128], meta[128];

	eosctl_arg_cli_name(a, name, sizeof(name));
	eosctl_arg_metavar(a, meta, sizeof(meta));
	if (a->positional)
		fprintf(f, a->required ? " %s" : " [%s]", meta);
	else if (a->kind == EOS_ARG_BOOL)
		fprintf(f, " [--%s]", name);
	else
		fprintf(f, a->required ? " --%s %s" : " [--%s %s]", name, meta);
}

void
eosctl_help_usage_line(FILE *f, const struct eos_op *op)
{
	char cli[128];

	eosctl_op_cli_name(op, cli, sizeof(cli));
	fprintf(f, "eosctl %s", cli);
	if (eosctl_op_sandbox_positional(op))
		fprintf(f, " SANDBOX");
	for (unsigned k = 1; k <= op->nargs; k++)
		for (size_t i = 0; i < op->nargs; i++)
			if (op->args[i].positional == k)
				eosctl_help_usage_arg(f, &op->args[i]);
	if (op->needs_sandbox && !eosctl_op_sandbox_positional(op))
		fprintf(f, " --sandbox ID");
	if (op->sandbox_optional)
		fprintf(f, " [--sandbox ID]");
	for (int req = 1; req >= 0; req--)
		for (size_t i = 0; i < op->nargs; i++)
			if (!op->args[i].positional && op->args[i].required == req)
				eosctl_help_usage_arg(f, &op->args[i]);
}

/* --- lists of commands ------------------------------------------------------------------------ */

static void
command_line(FILE *f, const char *group, const char *verb, const char *help)
{
	char left[128];

	snprintf(left, sizeof(left), "%s%s%s", group, verb[0] ? " " : "", verb);
	fprintf(f, "  %-*s %s\n", LEFT - 2, left, help);
}

static void
global_options(FILE *f)
{
	size_t n;
	const struct eosctl_global_opt *g = eosctl_global_options(&n);

	fprintf(f, "\noptions of every command:\n");
	for (size_t i = 0; i < n; i++) {
		char left[128];

		snprintf(left, sizeof(left), "--%s%s%s", g[i].name, g[i].metavar ? " " : "",
			 g[i].metavar ? g[i].metavar : "");
		fprintf(f, "  %-*s %s\n", LEFT - 2, left, g[i].help);
	}
}

static void
exit_statuses(FILE *f)
{
	fprintf(f, "\nexit status: 0 done, 1 the operation failed (the error on stderr), 2 a usage "
		   "error (nothing sent), 3 a publish the gate rejected\n");
}

/* The commands of group (all groups when NULL); the number listed. */
static size_t
list_commands(FILE *f, const char *group)
{
	size_t n, nl, listed = 0;
	const struct eos_op *ops = eos_catalog_ops(&n);
	const struct eosctl_local *l = eosctl_local_commands(&nl);

	for (size_t i = 0; i < n; i++)
		if (!group || strcmp(ops[i].cli_group, group) == 0) {
			command_line(f, ops[i].cli_group, ops[i].cli_verb, ops[i].help);
			listed++;
		}
	for (size_t i = 0; i < nl; i++)
		if (!group || strcmp(l[i].group, group) == 0) {
			command_line(f, l[i].group, l[i].verb, l[i].help);
			listed++;
		}
	return listed;
}

void
eosctl_help_all(FILE *f)
{
	fprintf(f, "usage: eosctl GROUP VERB [ARGUMENT...] [--OPTION VALUE...]\n"
		   "       eosctl help GROUP VERB | eosctl help OPERATION\n"
		   "       eosctl completion bash\n\n"
		   "the lifecycle command line over eosd (starts eosd when none answers)\n\n"
		   "commands:\n");
	list_commands(f, NULL);
	global_options(f);
	exit_statuses(f);
}

int
eosctl_help_group(FILE *f, const char *group)
{
	fprintf(f, "usage: eosctl %s VERB [ARGUMENT...] [--OPTION VALUE...]\n\ncommands:\n", group);
	if (list_commands(f, group) == 0)
		return -ENOENT;
	fprintf(f, "\n'eosctl help %s VERB' shows a command's arguments\n", group);
	return 0;
}

/* --- one operation ---------------------------------------------------------------------------- */

/* "integer in [1, 2147483647]; default: 1; also --no-force" */
static void
arg_details(const struct eos_arg *a, bool aliases, struct eos_buf *b)
{
	char line[512], name[128];

	eosctl_arg_cli_name(a, name, sizeof(name));
	snprintf(line, sizeof(line), "%s", eos_arg_kind_name(a->kind));
	eos_buf_append_str(b, line);
	if (a->kind == EOS_ARG_INT) {
		snprintf(line, sizeof(line), " in [%" PRId64 ", %" PRId64 "]", a->min, a->max);
		eos_buf_append_str(b, line);
	}
	if (a->kind == EOS_ARG_ENUM) {
		eos_buf_append_str(b, ", one of:");
		for (const char *const *v = a->values; *v; v++) {
			eos_buf_append_str(b, " ");
			eos_buf_append_str(b, *v);
		}
	}
	eos_buf_append_str(b, a->required ? "; required" : "");
	if (a->def) {
		snprintf(line, sizeof(line), "; default: %s", a->def);
		eos_buf_append_str(b, line);
	}
	if (aliases && strstr(a->name, "workspace_session_id")) {
		snprintf(line, sizeof(line), "; alias --%.*ssession", (int)(strlen(name) - 20),
			 name);
		eos_buf_append_str(b, line);
	}
	if (a->kind == EOS_ARG_BOOL) {
		snprintf(line, sizeof(line), "; --no-%s for false", name);
		eos_buf_append_str(b, line);
	}
	if (a->kind == EOS_ARG_STRING || a->kind == EOS_ARG_EDITS) {
		snprintf(line, sizeof(line), "; or --%s-file FILE (- for stdin)", name);
		eos_buf_append_str(b, line);
	}
}

void
eosctl_help_arg(FILE *f, const struct eos_arg *a, bool aliases, const char *note)
{
	char name[128], meta[128], left[300];
	struct eos_buf b;

	eosctl_arg_cli_name(a, name, sizeof(name));
	eosctl_arg_metavar(a, meta, sizeof(meta));
	if (a->positional)
		snprintf(left, sizeof(left), "%s", meta);
	else if (a->kind == EOS_ARG_BOOL)
		snprintf(left, sizeof(left), "--%s", name);
	else
		snprintf(left, sizeof(left), "--%s %s", name, meta);
	eos_buf_init(&b);
	arg_details(a, aliases, &b);
	note = note ? note : "";
	if (strlen(left) > LEFT - 2)
		fprintf(f, "  %s\n  %-*s %s%s\n", left, LEFT - 2, "", note, a->help);
	else
		fprintf(f, "  %-*s %s%s\n", LEFT - 2, left, note, a->help);
	fprintf(f, "  %-*s (%s)\n", LEFT - 2, "", b.len ? (const char *)b.data : "");
	eos_buf_release(&b);
}

void
eosctl_help_op(FILE *f, const struct eos_op *op)
{
	fprintf(f, "usage: ");
	eosctl_help_usage_line(f, op);
	fprintf(f, "\n\n%s\n(operation %s of the %s surface%s%s%s)\n", op->help, op->name,
		eos_surface_name(op->surface), op->read_only ? "; read-only" : "",
		op->destructive ? "; destructive" : "", op->long_running ? "; long-running" : "");
	if (op->nargs > 0 || op->needs_sandbox || op->sandbox_optional)
		fprintf(f, "\narguments:\n");
	if (op->needs_sandbox)
		fprintf(f, "  %-*s the sandbox\n  %-*s (id; required)\n", LEFT - 2,
			eosctl_op_sandbox_positional(op) ? "SANDBOX (or --sandbox ID)"
							 : "--sandbox ID",
			LEFT - 2, "");
	if (op->sandbox_optional)
		fprintf(f, "  %-*s this sandbox only\n  %-*s (id; default: every sandbox)\n",
			LEFT - 2, "--sandbox ID", LEFT - 2, "");
	for (unsigned k = 1; k <= op->nargs; k++)
		for (size_t i = 0; i < op->nargs; i++)
			if (op->args[i].positional == k)
				eosctl_help_arg(f, &op->args[i], true, NULL);
	for (size_t i = 0; i < op->nargs; i++)
		if (!op->args[i].positional)
			eosctl_help_arg(f, &op->args[i], true, NULL);
	global_options(f);
	exit_statuses(f);
}

void
eosctl_help_local(FILE *f, const struct eosctl_local *l)
{
	fprintf(f, "usage: eosctl %s%s%s%s\n\n%s\n", l->group, l->verb[0] ? " " : "", l->verb,
		l->action == EOSCTL_ACTION_TOP ? " [--interval SECONDS] [--count N]" : "", l->help);
	global_options(f);
	exit_statuses(f);
}

/* --- bash completion -------------------------------------------------------------------------- */

static void
completion_verbs(FILE *f)
{
	size_t n, nl;
	const struct eos_op *ops = eos_catalog_ops(&n);
	const struct eosctl_local *l = eosctl_local_commands(&nl);
	const char *last = "";

	fprintf(f, "_eosctl_groups='");
	for (size_t i = 0; i < n; i++)
		if (strcmp(ops[i].cli_group, last) != 0)
			fprintf(f, "%s ", (last = ops[i].cli_group));
	for (size_t i = 0; i < nl; i++)
		if (!l[i].verb[0])
			fprintf(f, "%s ", l[i].group);
	fprintf(f, "help completion'\n\n_eosctl_verbs() {\n\tcase $1 in\n");
	last = "";
	for (size_t i = 0; i < n; i++) {
		if (strcmp(ops[i].cli_group, last) != 0) {
			fprintf(f, "%s\t%s) echo '", last[0] ? "'\n\t\t;;\n" : "",
				ops[i].cli_group);
			last = ops[i].cli_group;
		}
		fprintf(f, "%s ", ops[i].cli_verb);
		for (size_t j = 0; j < nl && (i + 1 == n || strcmp(ops[i + 1].cli_group, last));
		     j++)
			if (strcmp(l[j].group, last) == 0)
				fprintf(f, "%s ", l[j].verb);
	}
	fprintf(f, "'\n\t\t;;\n\tcompletion) echo bash ;;\n\tesac\n}\n\n");
}

static void
completion_opts_of(FILE *f, const struct eos_op *op)
{
	fprintf(f, "\t'%s %s') echo '", op->cli_group, op->cli_verb);
	if (op->needs_sandbox || op->sandbox_optional)
		fprintf(f, "--sandbox ");
	for (size_t i = 0; i < op->nargs; i++) {
		const struct eos_arg *a = &op->args[i];
		char name[128];

		eosctl_arg_cli_name(a, name, sizeof(name));
		fprintf(f, "--%s ", name);
		if (strstr(a->name, "workspace_session_id"))
			fprintf(f, "--%.*ssession ", (int)(strlen(name) - 20), name);
		if (a->kind == EOS_ARG_BOOL)
			fprintf(f, "--no-%s ", name);
		if (a->kind == EOS_ARG_STRING || a->kind == EOS_ARG_EDITS)
			fprintf(f, "--%s-file ", name);
	}
	fprintf(f, "' ;;\n");
}

static void
completion_opts(FILE *f)
{
	size_t n, ng;
	const struct eos_op *ops = eos_catalog_ops(&n);
	const struct eosctl_global_opt *g = eosctl_global_options(&ng);

	fprintf(f, "_eosctl_global_opts='");
	for (size_t i = 0; i < ng; i++)
		fprintf(f, "--%s ", g[i].name);
	fprintf(f, "'\n_eosctl_global_takes_value='");
	for (size_t i = 0; i < ng; i++)
		if (g[i].metavar)
			fprintf(f, "--%s ", g[i].name);
	fprintf(f, "'\n\n_eosctl_opts() {\n\tcase $1 in\n");
	for (size_t i = 0; i < n; i++)
		completion_opts_of(f, &ops[i]);
	fprintf(f, "\t'top ') echo '--interval --count' ;;\n");
	fprintf(f, "\tesac\n}\n\n");
}

/* The groups that are commands of one word (verb ""): their words follow the group. */
static void
completion_single(FILE *f)
{
	size_t n, nl;
	const struct eos_op *ops = eos_catalog_ops(&n);
	const struct eosctl_local *l = eosctl_local_commands(&nl);

	fprintf(f, "_eosctl_single='");
	for (size_t i = 0; i < n; i++)
		if (!ops[i].cli_verb[0])
			fprintf(f, "%s ", ops[i].cli_group);
	for (size_t i = 0; i < nl; i++)
		if (!l[i].verb[0])
			fprintf(f, "%s ", l[i].group);
	fprintf(f, "'\n\n");
}

/* Values of an option ("GROUP VERB:--opt"), files for host paths and --*-file. */
static void
completion_values(FILE *f)
{
	size_t n;
	const struct eos_op *ops = eos_catalog_ops(&n);

	fprintf(f, "_eosctl_values() {\n\tcase $1 in\n");
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < ops[i].nargs; j++) {
			const struct eos_arg *a = &ops[i].args[j];
			char name[128];

			eosctl_arg_cli_name(a, name, sizeof(name));
			if (a->kind == EOS_ARG_ENUM) {
				fprintf(f, "\t'%s %s:--%s'", ops[i].cli_group, ops[i].cli_verb,
					name);
				if (a->positional)
					fprintf(f, " | '%s %s:@%u'", ops[i].cli_group,
						ops[i].cli_verb, a->positional);
				fprintf(f, ") echo '");
				for (const char *const *v = a->values; *v; v++)
					fprintf(f, "%s ", *v);
				fprintf(f, "' ;;\n");
			} else if (a->kind == EOS_ARG_HOST_PATH) {
				fprintf(f, "\t'%s %s:--%s') echo @files ;;\n", ops[i].cli_group,
					ops[i].cli_verb, name);
				if (a->positional)
					fprintf(f, "\t'%s %s:@%u') echo @files ;;\n",
						ops[i].cli_group, ops[i].cli_verb, a->positional);
			}
		}
	fprintf(f, "\t*:--*-file) echo @files ;;\n"
		   "\t*:--state-dir) echo @dirs ;;\n"
		   "\t*:--output) echo 'text json' ;;\n"
		   "\tesac\n}\n\n");
}

/* The completion function: finds GROUP and VERB, then completes what may come next. */
static const char completion_main[] =
	"_eosctl_reply() {\n"
	"\tcase $1 in\n"
	"\t@files) mapfile -t COMPREPLY < <(compgen -f -- \"$2\") ;;\n"
	"\t@dirs) mapfile -t COMPREPLY < <(compgen -d -- \"$2\") ;;\n"
	"\t*) mapfile -t COMPREPLY < <(compgen -W \"$1\" -- \"$2\") ;;\n"
	"\tesac\n"
	"}\n\n"
	"_eosctl() {\n"
	"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
	"\tlocal i w words=() skip='' v\n"
	"\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	"\t\tw=${COMP_WORDS[i]}\n"
	"\t\tif [[ -n $skip ]]; then skip=; continue; fi\n"
	"\t\tif [[ \" $_eosctl_global_takes_value \" == *\" $w \"* ]]; then skip=1; continue; fi\n"
	"\t\t[[ $w == -* ]] && continue\n"
	"\t\twords+=(\"$w\")\n"
	"\tdone\n"
	"\tlocal key='' at=1\n"
	"\tif ((${#words[@]} >= 1)) && [[ \" $_eosctl_single \" == *\" ${words[0]} \"* ]]; then\n"
	"\t\tkey=\"${words[0]} \" at=0\n"
	"\telif ((${#words[@]} >= 2)); then\n"
	"\t\tkey=\"${words[0]} ${words[1]}\"\n"
	"\tfi\n"
	"\tif [[ -n $key && $prev == -* ]]; then\n"
	"\t\tv=$(_eosctl_values \"$key:$prev\")\n"
	"\t\tif [[ -n $v ]]; then _eosctl_reply \"$v\" \"$cur\"; return; fi\n"
	"\tfi\n"
	"\tif [[ $prev == --state-dir || $prev == --token-file ]]; then\n"
	"\t\t_eosctl_reply \"$(_eosctl_values \"x x:$prev\")\" \"$cur\"; return\n"
	"\tfi\n"
	"\tif [[ $cur == -* ]]; then\n"
	"\t\t_eosctl_reply \"$([[ -n $key ]] && _eosctl_opts \"$key\") $_eosctl_global_opts\" "
	"\"$cur\"\n"
	"\t\treturn\n"
	"\tfi\n"
	"\tif [[ ${words[0]} != help && -n $key ]]; then\n"
	"\t\tv=$(_eosctl_values \"$key:@$((${#words[@]} - at))\")\n"
	"\t\t[[ -n $v ]] && _eosctl_reply \"$v\" \"$cur\"\n"
	"\t\treturn 0\n"
	"\tfi\n"
	"\tcase ${#words[@]} in\n"
	"\t0) _eosctl_reply \"$_eosctl_groups\" \"$cur\" ;;\n"
	"\t1) if [[ ${words[0]} == help ]]; then _eosctl_reply \"$_eosctl_groups\" \"$cur\"\n"
	"\t   else _eosctl_reply \"$(_eosctl_verbs \"${words[0]}\")\" \"$cur\"; fi ;;\n"
	"\t*) ((${#words[@]} == 2)) && [[ ${words[0]} == help ]] &&\n"
	"\t\t_eosctl_reply \"$(_eosctl_verbs \"${words[1]}\")\" \"$cur\" ;;\n"
	"\tesac\n"
	"\treturn 0\n"
	"}\n\n"
	"complete -F _eosctl eosctl\n";

void
eosctl_help_completion_bash(FILE *f)
{
	fprintf(f,
		"# bash completion for eosctl, generated from the operation catalog by\n"
		"# `eosctl completion bash`; load it with: source <(eosctl completion bash)\n\n");
	completion_single(f);
	completion_verbs(f);
	completion_opts(f);
	completion_values(f);
	fputs(completion_main, f);
}
