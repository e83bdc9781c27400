/* SPDX-License-Identifier: MIT */
/*
 * supervisor/commands: every session's namespace holder and the commands that run in it
 * (doc/commands.md). One engine thread, started by eosd_commands_new(), spawns every holder
 * (PR_SET_PDEATHSIG follows the thread that spawned it, so it must live as long as eosd), reads
 * every holder's events and every command's output into its transcript, and enforces the
 * commands' timeouts. Handlers call the functions below from worker threads; they wait (at most
 * a yield) on a condition the engine signals.
 *
 * Calling sequence: eosd_commands_new() before the sessions are served (d->commands), then
 * eosd_commands_ns_start() for each session served (create, fork, restart), the operations,
 * eosd_commands_ns_stop() when a session is destroyed, eosd_commands_free() after the gateway
 * has stopped (it shuts every holder down: nothing of any session outlives eosd).
 * Thread-safe: one mutex guards the engine's state; it is never held across a call into the
 * store or the view.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

#include "supervisor/daemon.h"
#include "supervisor/holder-client.h"

enum {
	EOSD_COMMANDS_RUNNING_MAX = 256, /* commands running at once in one eosd */
	EOSD_TRANSCRIPTS_DEFAULT = 512,	 /* transcripts kept on disk */
	EOSD_TRANSCRIPT_MAX = 64 << 20,	 /* bytes of one command's transcript */
	EOSD_HOLDER_READY_MS = 10000,	 /* a holder's setup, at most */
	EOSD_CANCEL_GRACE_MS = 2000,	 /* SIGTERM, then SIGKILL after this */
	EOSD_SHUTDOWN_GRACE_MS = 1000,	 /* a session's processes at destroy */
};

/* How a session's commands run (kept beside the session: restored at a restart). */
struct eosd_ns_opts {
	enum eosd_holder_isolation isolation;
	enum eosd_holder_network network;
	bool implicit; /* made by exec_command: published and destroyed after its last command */
};

struct eosd_commands;

/* Start the engine; transcripts go to <state_dir>/commands, keeping the newest keep (0: the
 * default). Caller owns *ret. */
int eosd_commands_new(struct eosd *d, unsigned keep, struct eosd_commands **ret,
		      struct eos_error *err);
/* Shut every holder down (their processes die), join the engine, free. NULL-safe. */
void eosd_commands_free(struct eosd_commands *c);

/*
 * Give session of sandbox its holder over the view at view_path, with o (NULL: read the options
 * kept for it, else the defaults), and keep o for a restart. wait: block until the holder is
 * ready and fail with its cause (a host that forbids user namespaces: the cause and the fix);
 * else return at once (a restart: the holder comes up meanwhile).
 */
int eosd_commands_ns_start(struct eosd_commands *c, const char *sandbox, const char *session,
			   const char *view_path, const struct eosd_ns_opts *o, bool wait,
			   struct eos_error *err);
/* The options of session's holder (its kept ones when it has none running; the defaults when
 * none were kept) into *ret. */
void eosd_commands_ns_opts(struct eosd_commands *c, const char *sandbox, const char *session,
			   struct eosd_ns_opts *ret);
/* End the session's holder and everything running in it, and forget its options. */
void eosd_commands_ns_stop(struct eosd_commands *c, const char *sandbox, const char *session);
/* -EBUSY naming the session's running commands, or 0. */
int eosd_commands_ns_busy(struct eosd_commands *c, const char *sandbox, const char *session,
			  struct eos_error *err);
/*
 * The session's part of inspect and snapshot: {"holder": {"pid", "state", "error"?},
 * "isolation", "network", "finalize", "commands": [{id, cmd, started, status}],
 * "processes": [...] (with processes: the holder's LIST, at most a second)}. New reference;
 * NULL when the session has no holder entry.
 */
json_t *eosd_commands_ns_json(struct eosd_commands *c, const char *sandbox, const char *session,
			      bool processes);

/* exec_command's arguments (borrowed). */
struct eosd_exec_req {
	const char *sandbox, *session;
	const char *cmd, *cwd;
	json_t *env; /* object or NULL */
	bool tty;
	int yield_ms;
	int64_t timeout_ms; /* 0: none */
	size_t max_output;
	bool implicit; /* the session was made for this command */
};

/*
 * Run a command and answer as doc/commands.md says (kind: the error kind to answer, or -1).
 * With call->finish (the gateway's) the reply waits for the command without holding a worker:
 * EOSD_DEFERRED, and call->finish() answers once it settles or its yield has passed; without,
 * the caller waits here.
 */
int eosd_commands_exec(struct eosd_commands *c, const struct eosd_exec_req *x,
		       struct eosd_call *call, json_t **out, int *kind, struct eos_error *err);
/* write_command_stdin's arguments (borrowed). */
struct eosd_stdin_req {
	const char *id;
	const char *chars;
	size_t len;
	bool close; /* then end the input: close the pipe, or send VEOF on a tty */
	int yield_ms;
	size_t max_output;
};

/* write_command_stdin: the same ways of answering. */
int eosd_commands_stdin(struct eosd_commands *c, const struct eosd_stdin_req *q,
			struct eosd_call *call, json_t **out, struct eos_error *err);
/* eosd is stopping: answer every deferred reply now, and defer none from now on. */
void eosd_commands_quiesce(struct eosd_commands *c);
int eosd_commands_lines(struct eosd_commands *c, const char *id, int64_t offset, int64_t limit,
			json_t **out, struct eos_error *err);
/* Where a command ran. */
struct eosd_command_place {
	char sandbox[EOS_SANDBOX_ID_MAX + 1];
	char session[EOS_SESSION_NAME_MAX + 1];
};
/* Where command id ran (running, or retained): 0, or -ENOENT (then both are ""). For the token
 * check, and to name a command's session in blame. */
int eosd_commands_where(struct eosd_commands *c, const char *id, struct eosd_command_place *ret);

/* The views' resolver: "operation:<command id>" for a process of a command, else -ENOENT. */
int eosd_commands_resolve(struct eosd_commands *c, pid_t pid, char *out, size_t size);
