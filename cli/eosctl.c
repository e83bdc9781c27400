/* SPDX-License-Identifier: MIT */
/* eosctl: the lifecycle command line over eosd (cli/eosctl.h, doc/eosctl.md). */
#include "cli/eosctl.h"

#include <stdio.h>

#include "common/log.h"

static int
usage_error(const char *prog, const struct eos_error *err)
{
	fprintf(stderr, "%s: %s\n", prog, eos_error_message(err, -22));
	return EOSCTL_EXIT_USAGE;
}

static int
help(const struct eosctl_cmd *cmd)
{
	FILE *f = cmd->help_is_error ? stderr : stdout;

	if (cmd->op)
		eosctl_help_op(f, cmd->op);
	else if (cmd->local)
		eosctl_help_local(f, cmd->local);
	else if (cmd->group)
		eosctl_help_group(f, cmd->group);
	else
		eosctl_help_all(f);
	return cmd->help_is_error ? EOSCTL_EXIT_USAGE : EOSCTL_EXIT_OK;
}

static int
dispatch(const struct eosctl_cmd *cmd)
{
	switch (cmd->action) {
	case EOSCTL_ACTION_OP:
		return eosctl_exec_takes_words(cmd->op) ? eosctl_exec_run(cmd)
							: eosctl_call_run(cmd);
	case EOSCTL_ACTION_HELP:
		return help(cmd);
	case EOSCTL_ACTION_COMPLETION:
		eosctl_help_completion_bash(stdout);
		return EOSCTL_EXIT_OK;
	case EOSCTL_ACTION_VERSION:
		printf("eosctl %s\n", PACKAGE_VERSION);
		return EOSCTL_EXIT_OK;
	case EOSCTL_ACTION_DAEMON_START:
		return eosctl_daemon_start(cmd);
	case EOSCTL_ACTION_DAEMON_STOP:
		return eosctl_daemon_stop(cmd);
	case EOSCTL_ACTION_DAEMON_STATUS:
		return eosctl_daemon_status(cmd);
	case EOSCTL_ACTION_TOP:
		return eosctl_top_run(cmd);
	case EOSCTL_ACTION_CONSOLE:
		return eosctl_console_run(cmd);
	}
	return EOSCTL_EXIT_USAGE;
}

/* eosctl as one of the upstream command lines (a link named sandbox-runtime-cli, …). */
static int
front_main(const struct eosctl_front *fe, int argc, char **argv, struct eosctl_cmd *cmd)
{
	struct eos_error err = { 0 };

	if (eosctl_front_parse(fe, argc, argv, cmd, &err) < 0)
		return usage_error(fe->prog, &err);
	return eosctl_front_run(cmd);
}

int
main(int argc, char **argv)
{
	const struct eosctl_front *fe = eosctl_front_find(argc > 0 ? argv[0] : NULL);
	struct eosctl_cmd cmd = { 0 };
	struct eos_error err = { 0 };
	int r;

	eos_log_set_program(fe ? fe->prog : "eosctl");
	eos_log_init_from_env();
	if (fe)
		r = front_main(fe, argc, argv, &cmd);
	else if (eosctl_args_parse(argc, argv, &cmd, &err) < 0)
		r = usage_error("eosctl", &err);
	else
		r = dispatch(&cmd);
	eosctl_cmd_release(&cmd);
	if (fflush(stdout) != 0 && r == EOSCTL_EXIT_OK)
		r = EOSCTL_EXIT_FAILED;
	return r;
}
