/* SPDX-License-Identifier: MIT */
/*
 * eosctl-exec: `eosctl exec`, a command in a session (cli/eosctl.h, doc/commands.md). One call of
 * exec_command with a short yield, then write_command_stdin again and again until the command has
 * ended, each reply's output printed as it comes:
 *
 *	exec_command {cmd, …, yield_time_ms: 250}        → output, command_session_id
 *	while running (or not final yet):
 *	    write_command_stdin {id, chars: what stdin had, or "\u0003" after SIGINT}
 *	                                                 → output
 *	exit with the command's exit code (3: its implicit session's publish was rejected)
 *
 * Standard input is read without blocking (poll, never O_NONBLOCK: the descriptor is shared with
 * the shell) and sent as it comes; at its end the next call closes the command's stdin
 * (close_stdin: a pipe's end, or the pty's EOF character), so `cat` and `wc` end as in a shell.
 * SIGINT, SIGTERM and SIGHUP cancel the command instead of ending eosctl, which then waits for
 * the cancelled result; a third one seen between two replies (a call is not interrupted) gives
 * up waiting. With --tty and a terminal on stdin, that terminal is raw while the command runs
 * (keys go to the remote pty as they are, Ctrl-C among them) and restored on every way out.
 */
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/errkind.h"
#include "common/json.h"

#include "cli/eosctl.h"

enum {
	STREAM_YIELD_MS = 250,	     /* each reply's wait, unless --yield-time-ms */
	STREAM_OUTPUT_MAX = 1 << 20, /* bytes of output per reply, unless --max-output-bytes */
	ROUND_MIN_MS = 50,	     /* a round lasts this long at least (a yield of 0) */
	INPUT_MAX = 64 << 10,	     /* bytes of stdin sent in one call */
	GIVE_UP_SIGNALS = 3,	     /* signals after which eosctl stops waiting */
	EXIT_INTERRUPTED = 130,
};

static const char *const shell_plain =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-";

bool
eosctl_exec_takes_words(const struct eos_op *op)
{
	return strcmp(op->name, "exec_command") == 0;
}

static int
append_word(struct eos_buf *b, const char *w)
{
	int r = 0;

	if (w[0] && strspn(w, shell_plain) == strlen(w))
		return eos_buf_append_str(b, w);
	r = eos_buf_append_str(b, "'");
	for (const char *q; r == 0 && (q = strchr(w, '\'')); w = q + 1) {
		r = eos_buf_append(b, w, (size_t)(q - w));
		r = r ?: eos_buf_append_str(b, "'\\''");
	}
	r = r ?: eos_buf_append_str(b, w);
	return r ?: eos_buf_append_str(b, "'");
}

int
eosctl_exec_join_words(const char *const *words, size_t n, char **ret, struct eos_error *err)
{
	struct eos_buf b;
	int r = 0;

	assert(n >= 1);
	if (n == 1) {
		*ret = strdup(words[0]);
		return *ret ? 0 : eos_error_set(err, -ENOMEM, "out of memory");
	}
	eos_buf_init(&b);
	for (size_t i = 0; i < n && r == 0; i++) {
		r = i ? eos_buf_append_str(&b, " ") : 0;
		r = r ?: append_word(&b, words[i]);
	}
	if (r < 0) {
		eos_buf_release(&b);
		return eos_error_set(err, -ENOMEM, "out of memory");
	}
	*ret = (char *)eos_buf_steal(&b, NULL);
	return 0;
}

/* --- the run ---------------------------------------------------------------------------------- */

/* Signals received (SIGINT, SIGTERM, SIGHUP): the first cancels, GIVE_UP_SIGNALS stop waiting. */
static volatile sig_atomic_t signals_seen;

static void
on_signal(int sig)
{
	(void)sig;
	signals_seen++;
}

static const int handled[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };

struct exec {
	const struct eosctl_cmd *cmd;
	struct eosctl_session *s;
	bool json; /* --json: one document at the end */
	bool raw;  /* the terminal on stdin is raw: restore saved */
	struct termios saved;
	struct sigaction old[EOS_ARRAY_SIZE(handled)];
	bool stdin_open; /* stdin may have more */
	bool close_due;	 /* stdin ended: the next call closes the command's stdin */
	int yield_ms, max_output;
	bool cancelled;	       /* a cancel was sent */
	bool out_broken;       /* stdout failed: cancel, and print no more */
	json_t *last;	       /* the latest reply (owned) */
	json_t *first_offset;  /* its output_offset in the first reply (owned) */
	struct eos_buf all;    /* --json: the output of every reply */
	bool cut;	       /* a reply's output was cut */
	unsigned char held[4]; /* a UTF-8 sequence that a read() cut */
	size_t nheld;
};

static void
signals_on(struct exec *x)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(handled); i++) {
		sa.sa_handler = handled[i] == SIGPIPE ? SIG_IGN : on_signal;
		sigaction(handled[i], &sa, &x->old[i]);
	}
}

static void
signals_off(struct exec *x)
{
	for (size_t i = 0; i < EOS_ARRAY_SIZE(handled); i++)
		sigaction(handled[i], &x->old[i], NULL);
}

static void
raw_on(struct exec *x)
{
	struct termios tio;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &x->saved) < 0)
		return;
	tio = x->saved;
	cfmakeraw(&tio);
	x->raw = tcsetattr(STDIN_FILENO, TCSANOW, &tio) == 0;
}

/* Restore the terminal (again: nothing to do); before anything is printed on stderr. */
static void
raw_off(struct exec *x)
{
	if (x->raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &x->saved);
	x->raw = false;
}

static const char *
str(const json_t *doc, const char *key)
{
	const char *s = json_string_value(json_object_get(doc, key));

	return s ? s : "";
}

static bool
running(const json_t *doc)
{
	return strcmp(str(doc, "status"), "running") == 0;
}

/* Not over yet: running, or ended with output or its session's publish still to come. */
static bool
pending(const json_t *doc)
{
	return running(doc) || json_is_false(json_object_get(doc, "final"));
}

/* A reply: its output printed (or kept, --json), and it becomes the latest. */
static void
take_reply(struct exec *x, json_t *doc)
{
	const json_t *out = json_object_get(doc, "output");
	size_t n = json_string_length(out);

	if (!x->first_offset)
		x->first_offset = json_incref(json_object_get(doc, "output_offset"));
	x->cut = x->cut || json_is_true(json_object_get(doc, "output_truncated"));
	if (x->json && eos_buf_append(&x->all, json_string_value(out), n) < 0)
		x->cut = true;
	if (!x->json && !x->out_broken && n > 0 &&
	    (fwrite(json_string_value(out), 1, n, stdout) != n || fflush(stdout) != 0))
		x->out_broken = true;
	json_decref(x->last);
	x->last = doc;
}

/* The reply of op to args in *ret; else -EIO and the envelope in *ret (or NULL, err says why). */
static int
request(struct exec *x, const char *op, json_t *args, json_t **ret, struct eos_error *err)
{
	*ret = NULL;
	if (!args)
		return eos_error_set(err, -ENOMEM, "out of memory");
	return eosctl_session_call(x->s, eos_catalog_find(op), args, x->cmd->sandbox, ret, err);
}

/* Report a failed request (r, and its envelope doc or err): the exit status. */
static int
report(struct exec *x, int r, const json_t *doc, const struct eos_error *err)
{
	raw_off(x);
	if (doc)
		return eosctl_output_error(stderr, doc, x->json);
	return eosctl_output_local_error(stderr, eos_errkind_name(eos_errkind_of(r)),
					 eos_error_message(err, r), x->json);
}

static int
start(struct exec *x)
{
	EOS_CLEANUP(json_decrefp) json_t *args = json_deep_copy(x->cmd->args);
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	struct eos_error err = { 0 };
	int r;

	if (args && !json_object_get(args, "yield_time_ms"))
		eos_json_set(args, "yield_time_ms", json_integer(x->yield_ms));
	if (args && !json_object_get(args, "max_output_bytes"))
		eos_json_set(args, "max_output_bytes", json_integer(x->max_output));
	if ((r = request(x, "exec_command", args, &doc, &err)) < 0)
		return report(x, r, doc, &err);
	take_reply(x, TAKE_PTR(doc));
	return 0;
}

/* --- standard input --------------------------------------------------------------------------- */

/* Length of the longest prefix of p[n] that does not end inside a UTF-8 sequence. */
static size_t
utf8_whole(const unsigned char *p, size_t n)
{
	size_t i = n, back = 0, need;

	while (i > 0 && back < 3 && (p[i - 1] & 0xc0) == 0x80) {
		i--;
		back++;
	}
	if (i == 0 || p[i - 1] < 0xc0)
		return n;
	need = p[i - 1] >= 0xf0 ? 4 : p[i - 1] >= 0xe0 ? 3 : 2;
	return need > back + 1 ? i - 1 : n;
}

/* What stdin has now (waiting up to ms for it), as a JSON string; "" at its end or for none. */
static json_t *
read_input(struct exec *x, int ms)
{
	unsigned char buf[INPUT_MAX + sizeof(x->held)];
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	size_t n = x->nheld, whole;
	ssize_t got = 0;

	if (!x->stdin_open || x->out_broken) {
		poll(NULL, 0, ms);
		return json_string("");
	}
	memcpy(buf, x->held, x->nheld);
	if (poll(&p, 1, ms) > 0 && (got = read(STDIN_FILENO, buf + n, INPUT_MAX)) <= 0)
		x->close_due = !(x->stdin_open = got < 0 && (errno == EINTR || errno == EAGAIN));
	n += got > 0 ? (size_t)got : 0;
	whole = x->stdin_open ? utf8_whole(buf, n) : n;
	x->nheld = n - whole;
	memcpy(x->held, buf + whole, x->nheld);
	return eos_json_bytes((const char *)buf, whole);
}

/* The chars of the next round: a cancel for a new signal (or a broken stdout), else stdin. */
static json_t *
next_chars(struct exec *x, int ms)
{
	if (!running(x->last))
		return json_string("");
	if ((signals_seen > 0 || x->out_broken) && !x->cancelled) {
		x->cancelled = true;
		return json_string("\x03");
	}
	return read_input(x, ms);
}

/* --- the rounds ------------------------------------------------------------------------------- */

static json_t *
stdin_args(const struct exec *x, json_t *chars)
{
	return json_pack("{s:s,s:o,s:i,s:i,s:b}", "command_session_id",
			 str(x->last, "command_session_id"), "chars", chars, "yield_time_ms",
			 x->yield_ms, "max_output_bytes", x->max_output, "close_stdin",
			 x->close_due);
}

/*
 * One write_command_stdin. Input the command cannot take (it has just ended, or closed its
 * stdin) is dropped with a warning and the round is done again without it.
 */
static int
round_once(struct exec *x)
{
	json_t *chars = next_chars(x, x->yield_ms < ROUND_MIN_MS ? ROUND_MIN_MS - x->yield_ms : 0);
	bool input = json_string_length(chars) > 0 && strcmp(json_string_value(chars), "\x03");
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	struct eos_error err = { 0 };
	int r = request(x, "write_command_stdin", stdin_args(x, chars), &doc, &err);

	if (r < 0 && input && doc) {
		raw_off(x);
		fprintf(stderr, "eosctl: input not delivered: %s, ignoring\n",
			str(json_object_get(doc, "error"), "message"));
		x->stdin_open = false;
		json_decref(TAKE_PTR(doc));
		r = request(x, "write_command_stdin", stdin_args(x, json_string("")), &doc, &err);
	}
	if (r < 0)
		return report(x, r, doc, &err);
	x->close_due = false; /* sent once */
	take_reply(x, TAKE_PTR(doc));
	return 0;
}

static int
give_up(struct exec *x)
{
	raw_off(x);
	fprintf(stderr,
		"eosctl: interrupted again: not waiting for '%s' any more (it may still run)\n",
		str(x->last, "command_session_id"));
	return EXIT_INTERRUPTED;
}

/* --- the end ---------------------------------------------------------------------------------- */

/* --json: the final result with the output of every reply. */
static int
print_final(struct exec *x)
{
	EOS_CLEANUP(json_decrefp) json_t *doc = json_copy(x->last);

	if (!doc ||
	    eos_json_set(doc, "output", eos_json_bytes((const char *)x->all.data, x->all.len)) < 0)
		return eosctl_output_local_error(stderr, "out_of_memory", "out of memory", true);
	eos_json_set(doc, "output_offset", json_incref(x->first_offset));
	eos_json_set(doc, "output_truncated", json_boolean(x->cut));
	eos_json_print_line(stdout, doc);
	return 0;
}

/* An end that its exit code does not tell: cancelled, timed out, killed by a signal. */
static bool
unusual_end(const json_t *doc)
{
	const char *status = str(doc, "status");

	return strcmp(status, "completed") != 0 &&
	       (strcmp(status, "error") != 0 || json_is_string(json_object_get(doc, "signal")));
}

/* Ended: the notes, and the exit status (the command's, unless its publish failed). */
static int
finish(struct exec *x)
{
	const json_t *code = json_object_get(x->last, "exit_code");
	int r = 0;

	raw_off(x);
	if (x->json)
		r = print_final(x);
	else if (x->cut)
		eosctl_output_command_cut(stderr, x->last);
	if (!x->json && unusual_end(x->last))
		eosctl_output_command_status(stderr, "eosctl: ", x->last);
	r = r ?: eosctl_output_command_publish(x->json ? NULL : stderr, x->last);
	if (r)
		return r;
	if (!json_is_integer(code) || json_integer_value(code) < 0 ||
	    json_integer_value(code) > 255)
		return EOSCTL_EXIT_FAILED;
	return (int)json_integer_value(code);
}

static int
run(struct exec *x)
{
	int r = start(x);

	while (r == 0 && pending(x->last)) {
		if (signals_seen >= GIVE_UP_SIGNALS)
			return give_up(x);
		r = round_once(x);
	}
	return r ? r : finish(x);
}

int
eosctl_exec_run(const struct eosctl_cmd *cmd)
{
	const json_t *y = json_object_get(cmd->args, "yield_time_ms");
	const json_t *m = json_object_get(cmd->args, "max_output_bytes");
	struct exec x = {
		.cmd = cmd,
		.json = cmd->output == EOSCTL_OUTPUT_JSON,
		.stdin_open = true,
		.yield_ms = y ? (int)json_integer_value(y) : STREAM_YIELD_MS,
		.max_output = m ? (int)json_integer_value(m) : STREAM_OUTPUT_MAX,
	};
	struct eos_error err = { 0 };
	int r;

	eos_buf_init(&x.all);
	if ((r = eosctl_session_open(cmd, cmd->op->surface, &x.s, &err)) < 0)
		return eosctl_output_local_error(stderr, eos_errkind_name(eos_errkind_of(r)),
						 eos_error_message(&err, r), x.json);
	signals_seen = 0;
	signals_on(&x);
	if (json_is_true(json_object_get(cmd->args, "tty")))
		raw_on(&x);
	r = run(&x);
	raw_off(&x);
	signals_off(&x);
	eosctl_session_close(x.s);
	json_decref(x.last);
	json_decref(x.first_offset);
	eos_buf_release(&x.all);
	return r;
}
