/* SPDX-License-Identifier: MIT */
/*
 * eosctl-upstream: the upstream command lines, sandbox-manager-cli, sandbox-runtime-cli and
 * sandbox-observability-cli (cli/eosctl.h, doc/eosctl.md "The upstream command lines"). They are
 * eosctl under another name (a link to it), each limited to one surface of the catalog:
 *
 *	sandbox-runtime-cli --sandbox-id ID OPERATION [ARG...] [--OPTION VALUE...]
 *
 * OPERATION is the catalog's name (exec_command), its options the catalog's argument names in
 * kebab case (--workspace-session-id); positionals as eosctl takes them (exec_command CMD). The
 * words are parsed by eosctl's own parser (eosctl_args_parse_op()), which knows the line is a
 * front end's by cmd->front: --sandbox-id for eosctl's --sandbox, no --session alias, no output
 * options. The reply is sent by eosctl's call (eosctl_call_run()): always one JSON line, an
 * exec_command one call (its result, running or not; eosd's status "error" and exit_code for a
 * command that failed, still exit 0), the error envelope on stderr with exit 1 (also for a
 * rejected publish, 3 in eosctl), usage errors exit 2 before anything is sent.
 */
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"

#include "cli/eosctl.h"

enum {
	LEFT = 30 /* width of the left column, as in eosctl's help */
};

static const struct eosctl_front fronts[] = {
	{ "sandbox-manager-cli", EOS_SURFACE_MANAGEMENT },
	{ "sandbox-runtime-cli", EOS_SURFACE_RUNTIME },
	{ "sandbox-observability-cli", EOS_SURFACE_OBSERVABILITY },
};

/* The operations upstream has (DESIGN §6); every other one of the catalog is an eos extension. */
static const char *const upstream_ops[] = {
	"create_sandbox",
	"list_sandboxes",
	"inspect_sandbox",
	"destroy_sandbox",
	"squash_layerstacks",
	"export_changes",
	"issue_token",
	"exec_command",
	"write_command_stdin",
	"read_command_lines",
	"file_read",
	"file_write",
	"file_edit",
	"file_blame",
	"create_workspace_session",
	"publish_workspace_session",
	"destroy_workspace_session",
	"snapshot",
	"trace",
	"events",
	"cgroup",
	"layerstack",
};

/* Arguments of upstream operations that upstream does not have. */
static const struct {
	const char *op, *arg;
} extension_args[] = {
	{ "create_workspace_session", "isolation" },
	{ "exec_command", "isolation" },
	{ "file_read", "version" },
};

/* eosctl's global options on a front end's line (those not here are not offered: --json…). */
static const struct {
	const char *eosctl, *front;
	bool extension;
} front_globals[] = {
	{ "sandbox", "sandbox-id", false },
	{ "request-id", "request-id", false },
	{ "state-dir", "state-dir", true },
	{ "url", "url", true },
	{ "token-file", "token-file", true },
	{ "timeout", "timeout", true },
	{ "help", "help", false },
};

const struct eosctl_front *
eosctl_front_find(const char *argv0)
{
	const char *base = argv0 ? strrchr(argv0, '/') : NULL;

	base = base ? base + 1 : argv0;
	for (size_t i = 0; base && i < EOS_ARRAY_SIZE(fronts); i++)
		if (strcmp(fronts[i].prog, base) == 0)
			return &fronts[i];
	return NULL;
}

/* The program of surface s's line. */
static const char *
front_prog(enum eos_surface s)
{
	for (size_t i = 0; i < EOS_ARRAY_SIZE(fronts); i++)
		if (fronts[i].surface == s)
			return fronts[i].prog;
	return "eosctl";
}

const char *
eosctl_front_global_name(const struct eosctl_front *fe, const char *name)
{
	(void)fe;
	for (size_t i = 0; i < EOS_ARRAY_SIZE(front_globals); i++)
		if (strcmp(front_globals[i].eosctl, name) == 0)
			return front_globals[i].front;
	return NULL;
}

bool
eosctl_front_op_is_extension(const struct eos_op *op)
{
	for (size_t i = 0; i < EOS_ARRAY_SIZE(upstream_ops); i++)
		if (strcmp(upstream_ops[i], op->name) == 0)
			return false;
	return true;
}

bool
eosctl_front_arg_is_extension(const struct eos_op *op, const struct eos_arg *a)
{
	for (size_t i = 0; i < EOS_ARRAY_SIZE(extension_args); i++)
		if (strcmp(extension_args[i].op, op->name) == 0 &&
		    strcmp(extension_args[i].arg, a->name) == 0)
			return true;
	return false;
}

/* --- the line --------------------------------------------------------------------------------- */

static int
find_op(const struct eosctl_front *fe, const char *word, const struct eos_op **ret,
	struct eos_error *err)
{
	const struct eos_op *op = eos_catalog_find(word);

	if (!op)
		return eos_error_set(err, -EINVAL, "unknown operation '%s' (see '%s --help')", word,
				     fe->prog);
	if (op->surface != fe->surface)
		return eos_error_set(err, -EINVAL,
				     "operation '%s' is of the %s surface, not %s (use %s)", word,
				     eos_surface_name(op->surface), eos_surface_name(fe->surface),
				     front_prog(op->surface));
	*ret = op;
	return 0;
}

int
eosctl_front_parse(const struct eosctl_front *fe, int argc, char *const *argv,
		   struct eosctl_cmd *cmd, struct eos_error *err)
{
	int i = 1, r;

	cmd->front = fe;
	cmd->output = EOSCTL_OUTPUT_JSON;
	if ((r = eosctl_args_parse_leading(argc, argv, &i, cmd, err)) != 0)
		return r < 0 ? r : 0;
	if (i >= argc) {
		cmd->action = EOSCTL_ACTION_HELP;
		cmd->help_is_error = true;
		return 0;
	}
	if ((r = find_op(fe, argv[i++], &cmd->op, err)) < 0)
		return r;
	cmd->action = EOSCTL_ACTION_OP;
	return eosctl_args_parse_op(argc, argv, i, cmd, err);
}

int
eosctl_front_check(const struct eosctl_cmd *cmd, struct eos_error *err)
{
	if (cmd->front->surface == EOS_SURFACE_RUNTIME && cmd->op->needs_sandbox && !cmd->sandbox)
		return eos_error_set(err, -EINVAL,
				     "missing option '--sandbox-id ID' before the operation (the "
				     "sandbox '%s' acts on)",
				     cmd->op->name);
	return 0;
}

/* --- help ------------------------------------------------------------------------------------- */

/* The catalog's help of op without its ★ (the mark of what eos adds). */
static const char *
op_help(const struct eos_op *op)
{
	return strncmp(op->help, "★ ", strlen("★ ")) == 0 ? op->help + strlen("★ ") : op->help;
}

static const char *
extension_note(bool ext)
{
	return ext ? "(eos extension) " : "";
}

static void
help_globals(FILE *f, const struct eosctl_front *fe)
{
	size_t n;
	const struct eosctl_global_opt *g = eosctl_global_options(&n);

	fprintf(f, "\noptions of every operation:\n");
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < EOS_ARRAY_SIZE(front_globals); k++) {
			char left[128];

			if (strcmp(front_globals[k].eosctl, g[i].name) != 0)
				continue;
			snprintf(left, sizeof(left), "--%s%s%s", front_globals[k].front,
				 g[i].metavar ? " " : "", g[i].metavar ? g[i].metavar : "");
			fprintf(f, "  %-*s %s%s%s\n", LEFT - 2, left,
				extension_note(front_globals[k].extension), g[i].help,
				k == 0 && fe->surface == EOS_SURFACE_RUNTIME
					? " (required, before the operation)"
					: "");
		}
	fprintf(f,
		"\noutput: one JSON line on stdout (exit 0; a command that failed is status "
		"\"error\" with its exit_code, still exit 0); the error envelope "
		"{\"error\":{\"kind\",\"message\",\"details\"}} on stderr (exit 1); a usage error "
		"exits 2 and sends nothing\n");
}

static void
help_all(FILE *f, const struct eosctl_front *fe)
{
	const char *sb = fe->surface == EOS_SURFACE_RUNTIME ? " --sandbox-id ID" : "";
	size_t n;
	const struct eos_op *ops = eos_catalog_ops(&n);

	fprintf(f,
		"usage: %s%s OPERATION [ARGUMENT...] [--OPTION VALUE...]\n"
		"       %s OPERATION --help\n\n"
		"the %s operations of eos, in the upstream command-line style (eosctl under "
		"another name)\n\noperations:\n",
		fe->prog, sb, fe->prog, eos_surface_name(fe->surface));
	for (size_t i = 0; i < n; i++)
		if (ops[i].surface == fe->surface)
			fprintf(f, "  %-*s %s%s\n", LEFT - 2, ops[i].name,
				extension_note(eosctl_front_op_is_extension(&ops[i])),
				op_help(&ops[i]));
	help_globals(f, fe);
}

static void
usage_line(FILE *f, const struct eosctl_front *fe, const struct eos_op *op)
{
	bool runtime = fe->surface == EOS_SURFACE_RUNTIME;

	fprintf(f, "usage: %s%s %s", fe->prog, runtime ? " --sandbox-id ID" : "", op->name);
	for (unsigned k = 1; k <= op->nargs; k++)
		for (size_t i = 0; i < op->nargs; i++)
			if (op->args[i].positional == k)
				eosctl_help_usage_arg(f, &op->args[i]);
	if (op->needs_sandbox && !runtime)
		fprintf(f, " --sandbox-id ID");
	if (op->sandbox_optional)
		fprintf(f, " [--sandbox-id ID]");
	for (int req = 1; req >= 0; req--)
		for (size_t i = 0; i < op->nargs; i++)
			if (!op->args[i].positional && op->args[i].required == req)
				eosctl_help_usage_arg(f, &op->args[i]);
	fprintf(f, "\n");
}

/* "the positionals are options too: --cmd CMD" for op. */
static void
positional_forms(FILE *f, const struct eos_op *op)
{
	const char *sep = "\nthe positionals are options too:";

	for (size_t i = 0; i < op->nargs; i++) {
		char name[128], meta[128];

		if (!op->args[i].positional)
			continue;
		eosctl_arg_cli_name(&op->args[i], name, sizeof(name));
		eosctl_arg_metavar(&op->args[i], meta, sizeof(meta));
		fprintf(f, "%s --%s %s", sep, name, meta);
		sep = ",";
	}
	if (sep[0] == ',')
		fprintf(f, "\n");
}

static void
help_op(FILE *f, const struct eosctl_front *fe, const struct eos_op *op)
{
	usage_line(f, fe, op);
	fprintf(f, "\n%s%s\n(operation %s of the %s surface%s%s%s)\n",
		extension_note(eosctl_front_op_is_extension(op)), op_help(op), op->name,
		eos_surface_name(op->surface), op->read_only ? "; read-only" : "",
		op->destructive ? "; destructive" : "", op->long_running ? "; long-running" : "");
	if (op->nargs > 0 || op->needs_sandbox || op->sandbox_optional)
		fprintf(f, "\narguments:\n");
	if (op->needs_sandbox || op->sandbox_optional)
		fprintf(f, "  %-*s %s\n  %-*s (id; %s)\n", LEFT - 2, "--sandbox-id ID",
			op->needs_sandbox ? "the sandbox" : "this sandbox only", LEFT - 2, "",
			op->needs_sandbox ? "required" : "default: every sandbox");
	for (unsigned k = 1; k <= op->nargs; k++)
		for (size_t i = 0; i < op->nargs; i++)
			if (op->args[i].positional == k)
				eosctl_help_arg(f, &op->args[i], false,
						extension_note(eosctl_front_arg_is_extension(
							op, &op->args[i])));
	for (size_t i = 0; i < op->nargs; i++)
		if (!op->args[i].positional)
			eosctl_help_arg(
				f, &op->args[i], false,
				extension_note(eosctl_front_arg_is_extension(op, &op->args[i])));
	positional_forms(f, op);
	help_globals(f, fe);
}

/* --- running ---------------------------------------------------------------------------------- */

static int
help(const struct eosctl_cmd *cmd)
{
	FILE *f = cmd->help_is_error ? stderr : stdout;

	if (cmd->op)
		help_op(f, cmd->front, cmd->op);
	else
		help_all(f, cmd->front);
	return cmd->help_is_error ? EOSCTL_EXIT_USAGE : EOSCTL_EXIT_OK;
}

int
eosctl_front_run(const struct eosctl_cmd *cmd)
{
	int r;

	switch (cmd->action) {
	case EOSCTL_ACTION_OP:
		/* One call, exec_command too: its reply, running or not, is the output. */
		r = eosctl_call_run(cmd);
		return r == EOSCTL_EXIT_REJECTED ? EOSCTL_EXIT_FAILED : r;
	case EOSCTL_ACTION_HELP:
		return help(cmd);
	case EOSCTL_ACTION_VERSION:
		printf("%s (eos) %s\n", cmd->front->prog, PACKAGE_VERSION);
		return EOSCTL_EXIT_OK;
	case EOSCTL_ACTION_COMPLETION:
	case EOSCTL_ACTION_DAEMON_START:
	case EOSCTL_ACTION_DAEMON_STOP:
	case EOSCTL_ACTION_DAEMON_STATUS:
	case EOSCTL_ACTION_TOP:
	case EOSCTL_ACTION_CONSOLE:
		break; /* eosctl's own commands: not on a front end's line */
	}
	return EOSCTL_EXIT_USAGE;
}
