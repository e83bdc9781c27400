/* SPDX-License-Identifier: MIT */
/*
 * eosctl-top: `eosctl top`, a live view of the sessions and their commands (cli/eosctl.h). It
 * asks eosd for a snapshot (the observability operation) every --interval seconds and redraws
 * the screen with plain ANSI escapes (no curses): the daemon's line, one row per session, then
 * the running commands. On a terminal, q (or Ctrl-C) quits and the terminal is restored; the
 * keyboard is read in non-canonical mode, waited for with poll() between frames. Without a
 * terminal on stdout, or with --json, each frame is printed as it comes (text, or the snapshot
 * as one JSON line), --count frames or until interrupted.
 */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/json.h"

#include "cli/eosctl.h"

enum {
	DEFAULT_INTERVAL_MS = 1000,
};

static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

struct top {
	const struct eosctl_cmd *cmd;
	bool text, screen; /* text; a terminal we redraw (raw keyboard) */
	struct termios saved;
	bool raw;
};

static void
raw_on(struct top *t)
{
	struct termios tio;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &t->saved) < 0)
		return;
	tio = t->saved;
	tio.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	tio.c_cc[VMIN] = 0;
	tio.c_cc[VTIME] = 0;
	t->raw = tcsetattr(STDIN_FILENO, TCSANOW, &tio) == 0;
	fputs("\033[?25l", stdout); /* hide the cursor */
}

static void
raw_off(struct top *t)
{
	if (t->raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
	if (t->screen)
		fputs("\033[?25h\n", stdout);
	fflush(stdout);
}

/* Wait up to ms for q on the keyboard (or a signal): true to quit. */
static bool
wait_key(const struct top *t, int ms)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	int64_t end = eos_mono_ns() + (int64_t)ms * 1000000;
	char c;

	while (!interrupted) {
		int left = (int)((end - eos_mono_ns()) / 1000000);

		if (left <= 0)
			return false;
		if (!t->raw) {
			poll(NULL, 0, left);
			continue;
		}
		if (poll(&p, 1, left) > 0 && read(STDIN_FILENO, &c, 1) == 1 &&
		    (c == 'q' || c == 'Q'))
			return true;
	}
	return true;
}

static int
frame(struct top *t, struct eosctl_session *s, const struct eos_op *op)
{
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	struct eos_error err = { 0 };
	int r = eosctl_session_call(s, op, NULL, t->cmd->sandbox, &doc, &err);

	if (r < 0) {
		raw_off(t);
		if (doc)
			return eosctl_output_error(stderr, doc, !t->text);
		return eosctl_output_local_error(stderr, "unavailable", eos_error_message(&err, r),
						 !t->text);
	}
	if (t->text) {
		if (t->screen)
			fputs("\033[H\033[2J", stdout); /* home, clear */
		eosctl_obs_render(stdout, op, doc);
		if (t->screen)
			fputs("\n(q quits)\n", stdout);
	} else
		eos_json_print_line(stdout, doc);
	fflush(stdout);
	return EOSCTL_EXIT_OK;
}

int
eosctl_top_run(const struct eosctl_cmd *cmd)
{
	const struct eos_op *op = eos_catalog_find("snapshot");
	struct top t = { .cmd = cmd, .text = eosctl_output_is_text(cmd->output) };
	struct eosctl_session *s = NULL;
	struct eos_error err = { 0 };
	int interval = cmd->interval_ms > 0 ? cmd->interval_ms : DEFAULT_INTERVAL_MS;
	int r;

	t.screen = t.text && isatty(STDOUT_FILENO);
	if ((r = eosctl_session_open(cmd, op->surface, &s, &err)) < 0)
		return eosctl_output_local_error(stderr, "unavailable", eos_error_message(&err, r),
						 !t.text);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (t.screen)
		raw_on(&t);
	r = EOSCTL_EXIT_OK;
	for (int n = 1; r == EOSCTL_EXIT_OK; n++) {
		r = frame(&t, s, op);
		if (r != EOSCTL_EXIT_OK || (cmd->count && n >= cmd->count) ||
		    wait_key(&t, interval))
			break;
	}
	if (r == EOSCTL_EXIT_OK)
		raw_off(&t);
	eosctl_session_close(s);
	return r;
}
