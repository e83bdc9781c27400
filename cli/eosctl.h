/* SPDX-License-Identifier: MIT */
/*
 * eosctl: the lifecycle command line over eosd (doc/eosctl.md). Private to cli/eosctl*.c.
 *
 * eosctl knows no operation of its own: `eosctl GROUP VERB …` is the catalog's operation with
 * that cli_group and cli_verb (common/catalog.h), its positionals and --options are the
 * operation's arguments, and help and bash completion are generated from the same table. Only
 * `daemon start|stop|status` (which act on the process, not through it), `help` and
 * `completion` are eosctl's own.
 *
 *	main (eosctl.c)
 *	  eosctl_args_parse()      argv → struct eosctl_cmd, or a usage error (exit 2, nothing sent)
 *	  eosctl_call_run()        find eosd (eosctl-daemon.c: eosd.json, token, autostart), send
 *	                           the request (cli/http.h), render the reply (eosctl-output.c)
 *	  eosctl_exec_run()        exec: a command in a session, its output as it comes
 *	                           (eosctl-exec.c)
 *	  eosctl_daemon_*()        daemon start|stop|status
 *	  eosctl_help_*()          --help, help OP, completion bash (eosctl-help.c)
 *
 * eosctl runs single-threaded; eos-mcp (cli/eos-mcp*.c) links the same code and calls it from
 * several threads, each on its own struct eosctl_session. Nothing here is global.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/catalog.h"
#include "common/error.h"

/* Process exit statuses (doc/eosctl.md). */
enum eosctl_exit {
	EOSCTL_EXIT_OK = 0,
	EOSCTL_EXIT_FAILED = 1,	  /* the operation failed (or eosd could not be reached) */
	EOSCTL_EXIT_USAGE = 2,	  /* a bad command line; nothing was sent */
	EOSCTL_EXIT_REJECTED = 3, /* a publish the gate rejected (kind publish_rejected) */
};

enum eosctl_output {
	EOSCTL_OUTPUT_AUTO, /* text when stdout is a terminal, else JSON */
	EOSCTL_OUTPUT_TEXT,
	EOSCTL_OUTPUT_JSON,
};

enum eosctl_action {
	EOSCTL_ACTION_OP,	  /* call cmd->op */
	EOSCTL_ACTION_HELP,	  /* help of cmd->op, cmd->local, cmd->group, or everything */
	EOSCTL_ACTION_COMPLETION, /* print the bash completion script */
	EOSCTL_ACTION_VERSION,	  /* eosctl's own version */
	EOSCTL_ACTION_DAEMON_START,
	EOSCTL_ACTION_DAEMON_STOP,
	EOSCTL_ACTION_DAEMON_STATUS,
	EOSCTL_ACTION_TOP,     /* the live view of sessions (eosctl-top.c) */
	EOSCTL_ACTION_CONSOLE, /* the web console's login link (eosctl-console.c) */
};

/* A command of eosctl's own (not in the catalog). */
struct eosctl_local {
	const char *group, *verb, *help;
	enum eosctl_action action;
};

/* One of the upstream command lines (eosctl-upstream.c): eosctl limited to one surface. */
struct eosctl_front {
	const char *prog; /* "sandbox-runtime-cli" */
	enum eos_surface surface;
};

/* A parsed command line. Strings are borrowed from argv; args is owned. */
struct eosctl_cmd {
	enum eosctl_action action;
	const struct eosctl_front *front; /* the upstream line it was, or NULL: eosctl's */
	const struct eos_op *op;	  /* OP; HELP of one operation */
	const struct eosctl_local *local; /* HELP of a local command */
	const char *group;		  /* HELP of one group */
	json_t *args;			  /* OP: the arguments given, checked (owned) */
	const char *sandbox;		  /* --sandbox (or the sandbox group's first word) */
	const char *request_id;		  /* --request-id */
	const char *state_dir;		  /* --state-dir */
	const char *url;		  /* --url */
	const char *token_file;		  /* --token-file */
	int timeout_ms;			  /* --timeout (seconds on the line); 0: the default */
	enum eosctl_output output;	  /* --json, --text, --output */
	bool help_is_error;		  /* HELP because the line was incomplete: exit 2 */
	int interval_ms;		  /* top: --interval (seconds on the line); 0: 1 s */
	int count;			  /* top: --count N frames, then exit; 0: until q */
};

/* --- eosctl-args.c ---------------------------------------------------------------------------- */

/*
 * Parse argv (argv[0] is the program) into *cmd, which the caller zeroed. -EINVAL with a
 * message naming the word, option or argument at fault: an unknown command or option, a missing
 * positional or required argument, a value the catalog refuses; the errno of a --NAME-file that
 * cannot be read. Release *cmd in any case.
 */
int eosctl_args_parse(int argc, char *const *argv, struct eosctl_cmd *cmd, struct eos_error *err);
void eosctl_cmd_release(struct eosctl_cmd *cmd);
/*
 * The parts of eosctl_args_parse() a front end builds its line from (cmd->front set). Leading
 * options from argv[*i] on (global ones, --help, --version), *i moved past them: 1 when --help or
 * --version ends the line, else 0. Then the words of cmd->op (the caller sets it and action
 * EOSCTL_ACTION_OP) from argv[i] on, as after `eosctl GROUP VERB`: positionals, --options,
 * --help, "--", checked with the catalog's rules.
 */
int eosctl_args_parse_leading(int argc, char *const *argv, int *i, struct eosctl_cmd *cmd,
			      struct eos_error *err);
int eosctl_args_parse_op(int argc, char *const *argv, int i, struct eosctl_cmd *cmd,
			 struct eos_error *err);

/* The command-line name of a (its name with '_' → '-') in buf of n bytes. */
void eosctl_arg_cli_name(const struct eos_arg *a, char *buf, size_t n);
/* The metavariable of a ("PATH", "ID", "N", …) in buf of n bytes. */
void eosctl_arg_metavar(const struct eos_arg *a, char *buf, size_t n);
/*
 * Whether op takes its sandbox as its first positional word: the sandbox group, and a command
 * of one word that needs one (`eosctl layers SANDBOX`).
 */
bool eosctl_op_sandbox_positional(const struct eos_op *op);
/* The command op is on the command line: "sandbox create", or "trace" (a verb ""). */
void eosctl_op_cli_name(const struct eos_op *op, char *buf, size_t n);

/* eosctl's own commands; *n receives their number. */
const struct eosctl_local *eosctl_local_commands(size_t *n);

/* The options every command takes: name (without "--"), metavariable (NULL: a flag), help. */
struct eosctl_global_opt {
	const char *name, *metavar, *help;
};
const struct eosctl_global_opt *eosctl_global_options(size_t *n);

/*
 * The value of a read from file path ("-": standard input), for --NAME-file: a string argument
 * takes the bytes (UTF-8, up to its limit), an edits argument their JSON. Caller owns *ret.
 * Defined in eosctl-input.c.
 */
int eosctl_args_read_file(const struct eos_arg *a, const char *path, json_t **ret,
			  struct eos_error *err);

/* --- eosctl-help.c ---------------------------------------------------------------------------- */

/* Every group and command, one line each. */
void eosctl_help_all(FILE *f);
/* The commands of group; -ENOENT when no command has that group. */
int eosctl_help_group(FILE *f, const char *group);
/* One operation: usage line, help, every argument with its kind, default and help. */
void eosctl_help_op(FILE *f, const struct eos_op *op);
void eosctl_help_local(FILE *f, const struct eosctl_local *l);
/* "eosctl sandbox create SOURCE [--id ID]" */
void eosctl_help_usage_line(FILE *f, const struct eos_op *op);
/* One argument in a usage line: " PATH", " [--limit N]", " [--force]". */
void eosctl_help_usage_arg(FILE *f, const struct eos_arg *a);
/*
 * One argument in a list: its form, note (may be NULL) and help, then its kind, default and the
 * other forms it takes (the alias --session only with aliases).
 */
void eosctl_help_arg(FILE *f, const struct eos_arg *a, bool aliases, const char *note);
/* The bash completion script for eosctl. */
void eosctl_help_completion_bash(FILE *f);

/* --- eosctl-output.c -------------------------------------------------------------------------- */

/* Render op's successful reply doc on f: as one JSON line, or as text (op may be NULL). */
void eosctl_output_result(FILE *f, const struct eos_op *op, const json_t *doc, bool text);
/*
 * Report a failure on f (stderr): the envelope {"error":{kind,message,details}} as one JSON line,
 * or "eosctl: <kind>: <message>" and, for publish_rejected, one line per conflict. Returns the
 * exit status the kind calls for (1, or 3 for publish_rejected).
 */
int eosctl_output_error(FILE *f, const json_t *envelope, bool json);
/* Report a local failure (eosd unreachable, a token missing) as an envelope of kind. */
int eosctl_output_local_error(FILE *f, const char *kind, const char *message, bool json);
/* Whether output goes as text for mode o (AUTO: stdout is a terminal). */
bool eosctl_output_is_text(enum eosctl_output o);

/*
 * The text of a command's result (exec_command, write_command_stdin, read_command_lines), each
 * on f: "cmd-17: completed, exit code 0, 0.012 s" after prefix; the note that a reply's output
 * was cut, naming `eosctl lines`; the outcome of an implicit session's publish ("published as
 * version L000004", or the paths of the conflicts that rejected it). The last returns the exit
 * status that outcome calls for: 0, 1 (it failed), 3 (rejected); it prints nothing for a result
 * without one, nor when f is NULL.
 */
void eosctl_output_command_status(FILE *f, const char *prefix, const json_t *doc);
void eosctl_output_command_cut(FILE *f, const json_t *doc);
int eosctl_output_command_publish(FILE *f, const json_t *doc);

/* --- eosctl-exec.c ---------------------------------------------------------------------------- */

/*
 * Whether op takes the rest of the command line as one command (exec_command): its words after
 * the sandbox, and every word after "--", whatever it looks like.
 */
bool eosctl_exec_takes_words(const struct eos_op *op);
/*
 * The command line of words[n] (n >= 1): a single word as it is (`eosctl exec -- 'make && make
 * test'`), several joined by spaces, each one that a shell would split or expand in single
 * quotes ('\'' for a quote inside). Caller owns *ret; -ENOMEM.
 */
int eosctl_exec_join_words(const char *const *words, size_t n, char **ret, struct eos_error *err);
/*
 * eosctl exec: run cmd's command and wait for its end, printing its output as it comes (or, with
 * --json, the final result with all of it), forwarding standard input and turning SIGINT into
 * a cancel; --tty puts a terminal on stdin in raw mode meanwhile. The exit status: the
 * command's exit code, 1 (the operation failed), 3 (its implicit session's publish rejected).
 */
int eosctl_exec_run(const struct eosctl_cmd *cmd);

/* --- eosctl-daemon.c -------------------------------------------------------------------------- */

/* What <state>/eosd.json says of the running eosd. */
struct eosctl_daemon_info {
	long pid;
	char *socket;	   /* owned */
	char *tcp;	   /* owned, or NULL */
	char *version;	   /* owned, or NULL */
	char *runtime_dir; /* owned, or NULL (an eosd older than the per-state runtime dirs) */
};
void eosctl_daemon_info_release(struct eosctl_daemon_info *info);

/* The state directory: --state-dir, else eos_default_state_dir(), made absolute. */
int eosctl_daemon_state_dir(const struct eosctl_cmd *cmd, char **ret, struct eos_error *err);
/*
 * Read <state>/eosd.json; -ENOENT when there is none (no eosd, or one that exited cleanly),
 * -ESRCH when the pid it names is no live eosd (a stale file a killed eosd left).
 */
int eosctl_daemon_info_read(const char *state, struct eosctl_daemon_info *info,
			    struct eos_error *err);
/* The token for surface s: --token-file, else <state>/tokens/<surface>. Caller owns *ret. */
int eosctl_daemon_token(const struct eosctl_cmd *cmd, const char *state, enum eos_surface s,
			char **ret, struct eos_error *err);
/*
 * Start eosd for state (found beside eosctl, then in the build tree, then in PATH) and wait
 * until it is ready; -ECONNREFUSED saying how to start it when EOS_NO_AUTOSTART=1.
 */
int eosctl_daemon_autostart(const char *state, struct eos_error *err);
/* The same, eosd also listening on listen ("tcp:127.0.0.1:0"; NULL: nothing more). */
int eosctl_daemon_autostart_listen(const char *state, const char *listen, struct eos_error *err);
/* Whether an eosd answers GET /v1/health at the socket of info. */
bool eosctl_daemon_answers(const struct eosctl_daemon_info *info);

/* daemon start|stop|status; they return the exit status. */
int eosctl_daemon_start(const struct eosctl_cmd *cmd);
int eosctl_daemon_stop(const struct eosctl_cmd *cmd);
int eosctl_daemon_status(const struct eosctl_cmd *cmd);

/* --- eosctl-progress.c ------------------------------------------------------------------------ */

/* What a long-running operation draws on stderr while it runs (a terminal only). Embedded. */
struct eosctl_progress {
	const struct eos_op *op;
	int64_t start_ns;
	unsigned frame;
	bool drawn;  /* a line is on the terminal */
	bool events; /* eosd sent progress: draw at once, not after the spinner's delay */
	/* the last progress event */
	char phase[16];
	bool counts; /* it had files or bytes */
	uint64_t files, bytes, total_files, total_bytes;
	uint64_t paths, total_paths; /* an export's */
	int64_t phase_ns;	     /* when its phase began */
	uint64_t phase_bytes;	     /* bytes then (for the rate) */
};

void eosctl_progress_init(struct eosctl_progress *p, const struct eos_op *op);
/* While waiting (~10 times a second): the spinner after 300 ms, or the last event again. */
void eosctl_progress_tick(struct eosctl_progress *p);
/* A "progress" event's data (JSON text, doc/eosd.md): remember it and draw. */
void eosctl_progress_event(struct eosctl_progress *p, const char *data);
/* Erase the line drawn, if any. */
void eosctl_progress_clear(struct eosctl_progress *p);

/* --- eosctl-call.c ---------------------------------------------------------------------------- */

/* Send cmd's operation to eosd (starting it when needed) and render the reply: the exit status. */
int eosctl_call_run(const struct eosctl_cmd *cmd);

/* A connection to eosd for several calls (top): found once, autostarting eosd when needed. */
struct eosctl_session;
int eosctl_session_open(const struct eosctl_cmd *cmd, enum eos_surface s,
			struct eosctl_session **ret, struct eos_error *err);
/*
 * Call op with args (borrowed; NULL: none) and sandbox (may be NULL): *ret_doc is the reply on
 * success (200), else -EIO and *ret_doc the error envelope (or NULL, err saying why).
 */
int eosctl_session_call(struct eosctl_session *s, const struct eos_op *op, json_t *args,
			const char *sandbox, json_t **ret_doc, struct eos_error *err);
/* What a session's call reports while it runs (eosctl_session_call_hooks()). */
struct eosctl_call_hooks {
	/*
	 * With on_event, a long-running operation asks for eosd's event stream (doc/eosd.md,
	 * "Progress events"): each event but the final result or error comes here as it arrives
	 * ("progress"; events follow's "event" and "dropped"), its data valid during the call.
	 */
	void (*on_event)(void *arg, const char *name, const char *data);
	/* Asked while the call waits: true abandons it (-ECANCELED). NULL: never. */
	bool (*cancelled)(void *arg);
	void *arg;
};
/*
 * eosctl_session_call() with hooks (may be NULL): the stream's result or error event is then the
 * reply. Calls on one session are not concurrent; sessions in different threads are fine.
 */
int eosctl_session_call_hooks(struct eosctl_session *s, const struct eos_op *op, json_t *args,
			      const char *sandbox, const struct eosctl_call_hooks *hooks,
			      json_t **ret_doc, struct eos_error *err);
void eosctl_session_close(struct eosctl_session *s);

/* --- eosctl-obs.c: text of the observability replies -------------------------------------- */

/*
 * Draw doc, the reply of op, as text when op has a drawing of its own (trace: a waterfall,
 * events: one line each, layerstack: a timeline); false when it has none.
 */
bool eosctl_obs_render(FILE *f, const struct eos_op *op, const json_t *doc);
/* One event (the JSON of an "event" of events follow) as one line of text. */
void eosctl_obs_event_line(FILE *f, const json_t *ev);

/* --- eosctl-upstream.c: sandbox-manager-cli, sandbox-runtime-cli, sandbox-observability-cli --- */

/* The front end argv0 (by its basename) is, or NULL: eosctl itself. */
const struct eosctl_front *eosctl_front_find(const char *argv0);
/*
 * Parse a front end's line, `PROG [GLOBAL...] OPERATION [ARG...] [--OPTION VALUE...]`, into
 * *cmd (zeroed by the caller): OPERATION is a catalog name of fe's surface. As
 * eosctl_args_parse() otherwise; release *cmd in any case.
 */
int eosctl_front_parse(const struct eosctl_front *fe, int argc, char *const *argv,
		       struct eosctl_cmd *cmd, struct eos_error *err);
/* Run what eosctl_front_parse() parsed: the exit status (0, 1 or 2; never 3). */
int eosctl_front_run(const struct eosctl_cmd *cmd);
/*
 * What cmd (parsed on a front end's line) needs beyond the catalog's rules, checked before its
 * positionals are assigned: the runtime line's --sandbox-id. -EINVAL naming it.
 */
int eosctl_front_check(const struct eosctl_cmd *cmd, struct eos_error *err);
/* The name on fe's line of eosctl's global option name ("sandbox" → "sandbox-id"); NULL: none. */
const char *eosctl_front_global_name(const struct eosctl_front *fe, const char *name);
/* Whether op, or argument a of op, is one eos has beyond the upstream set. */
bool eosctl_front_op_is_extension(const struct eos_op *op);
bool eosctl_front_arg_is_extension(const struct eos_op *op, const struct eos_arg *a);

/* --- eosctl-console.c ------------------------------------------------------------------------- */

/*
 * eosctl console: the URL of eosd's web console with a one-time login link (POST /console/link
 * with the management token, or --token-file's); eosd is started listening on loopback TCP
 * when none runs. Exit 1 when the running eosd listens on no TCP port.
 */
int eosctl_console_run(const struct eosctl_cmd *cmd);

/* --- eosctl-top.c ----------------------------------------------------------------------------- */

/* eosctl top: redraw the snapshot every interval until q (a terminal) or count frames. */
int eosctl_top_run(const struct eosctl_cmd *cmd);
