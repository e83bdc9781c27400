/* SPDX-License-Identifier: MIT */
/*
 * supervisor/commands internals, shared by commands.c (the engine thread, holders),
 * commands-run.c (commands: start, output, results) and commands-store.c (transcripts).
 * Everything here is guarded by c->lock unless it says otherwise.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "supervisor/commands.h"
#include "supervisor/obs.h"

enum ns_state {
	NS_STARTING, /* spawned, READY not yet read */
	NS_READY,
	NS_FAILED, /* setup failed: error */
	NS_EXITED, /* the holder died: holder_exited */
	NS_STOPPING,
};

struct ns {
	char sandbox[EOS_SANDBOX_ID_MAX + 1];
	char session[EOS_SESSION_NAME_MAX + 1];
	struct eosd_ns_opts o;
	char *view_path;
	struct eosd_holder *h; /* NULL before the engine spawned it, and after DIED */
	enum ns_state state;
	char error[2 * EOS_ERROR_MSG_MAX];
	bool want_spawn;     /* the engine spawns it on its next turn */
	int64_t ready_by_ns; /* STARTING: the ready handshake's deadline */
	pid_t pid;	     /* the holder's */
	unsigned running;    /* commands whose shell has not exited */
	bool listing;	     /* a LIST is being answered */
	bool finalizing;     /* implicit: being published and destroyed */
	json_t *procs;	     /* the LIST's processes so far */
	struct ns *next;
};

enum cmd_state {
	CMD_STARTING, /* EXEC sent */
	CMD_RUNNING,
	CMD_EXITED, /* the shell ended; background processes may remain until GONE */
};

struct cmd {
	char id[32];
	uint64_t seq;
	uint32_t hid; /* the holder's id for it */
	struct ns *ns;
	char sandbox[EOS_SANDBOX_ID_MAX + 1];
	char session[EOS_SESSION_NAME_MAX + 1];
	char *cmdline;
	bool implicit;
	enum cmd_state state;
	bool gone;	 /* GONE (or never started): nothing of it runs */
	const char *end; /* NULL, "cancelled" or "timed_out": what ended it */
	int exit_code;	 /* once exited */
	int signal;	 /* killed by a signal: its number */
	int error;	 /* EXEC_FAILED: negative errno */
	char message[EOS_ERROR_MSG_MAX];
	pid_t subreaper, shell;	   /* host pids */
	int fd_out, fd_err, fd_in; /* the pty master in fd_out when tty; -1 when closed */
	bool tty;
	bool in_closed;	  /* pipes: close_stdin closed fd_in */
	bool in_partial;  /* tty: the last input written did not end a line */
	int fd_log;	  /* the transcript, append */
	uint64_t bytes;	  /* in the transcript */
	uint64_t lines;	  /* newlines in it, plus one when it ends without one */
	bool last_nl;	  /* its last byte was a newline (or it is empty) */
	bool truncated;	  /* output past EOSD_TRANSCRIPT_MAX was dropped */
	uint64_t replied; /* bytes handed out in replies */
	int64_t started_wall, started_mono, ended_mono;
	int64_t deadline_mono;	     /* the timeout (0: none) */
	bool finalizing;	     /* implicit: its session is being published */
	bool final;		     /* exited and, for an implicit session's last, finalized */
	unsigned waiting;	     /* deferred replies waiting for it (not retired meanwhile) */
	json_t *publish;	     /* implicit: the publish's outcome */
	struct eosd_trace_ctx trace; /* exec_command's command.exec span: its later records */
	struct cmd *next;
};

/* A deferred reply (call->finish) waiting for its command to settle or its yield to pass. */
struct waiter {
	struct eosd_call *call;
	struct cmd *x;
	int64_t deadline;
	size_t max_output;
	json_t *out; /* the reply, once made */
	struct waiter *next;
};

struct eosd_commands {
	struct eosd *d;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* broadcast on every change a waiter may want */
	pthread_t thread;
	bool started;
	bool quit;
	int epfd, wakefd;
	char *dir; /* <state>/commands */
	unsigned keep;
	uint64_t next_seq;
	uint64_t oldest_seq; /* the oldest transcript still kept */
	struct ns *nss;
	struct waiter *waiters;
	bool quiesced;	  /* eosd stops: no reply waits any more */
	struct cmd *cmds; /* newest first: running and retained */
	size_t ncmds;
	unsigned running;
	uint32_t next_hid;
	uint8_t *bpf;
	size_t bpf_len;
	const char *holder_path;
	char *masks[2];
	/* the pids of running commands' subreapers, for the resolver (pidlock) */
	pthread_mutex_t pidlock;
	struct {
		pid_t pid;
		char id[32];
	} pids[EOSD_COMMANDS_RUNNING_MAX];
	size_t npids;
};

/* commands.c */
void cmds_wake(struct eosd_commands *c);
struct ns *ns_find(struct eosd_commands *c, const char *sandbox, const char *session);
/* Watch fd for input (the engine's epoll set); data names what it is. */
int cmds_watch(struct eosd_commands *c, int fd, uint64_t data);
void cmds_unwatch(struct eosd_commands *c, int fd);

/* commands-run.c */
struct cmd *cmd_find(struct eosd_commands *c, const char *id);
struct cmd *cmd_by_hid(struct eosd_commands *c, uint32_t hid);
void cmd_on_event(struct eosd_commands *c, struct cmd *x, struct eosd_holder_event *ev);
void cmd_on_output(struct eosd_commands *c, struct cmd *x, int fd);
void cmd_holder_lost(struct eosd_commands *c, struct ns *ns);
/* The nearest timeout of a running command (0: none); kills those past theirs. */
int64_t cmds_timeouts(struct eosd_commands *c, int64_t now);
void cmd_close_fds(struct eosd_commands *c, struct cmd *x);

/* commands-store.c: transcripts and ids */
int store_open(struct eosd_commands *c, struct eos_error *err);
int store_new(struct eosd_commands *c, struct cmd *x, struct eos_error *err);
void store_append(struct cmd *x, const char *p, size_t n);
/* x ended: write its final result beside its transcript and retire the oldest. */
void store_finish(struct eosd_commands *c, struct cmd *x);
/* Up to max bytes of x's transcript from offset (a new string of *ret_len bytes). */
char *store_read(struct eosd_commands *c, const char *id, uint64_t offset, size_t max,
		 size_t *ret_len);
/* The kept result of a command that is no longer in memory (after a restart), or NULL. */
json_t *store_result(struct eosd_commands *c, const char *id);
bool store_retired(struct eosd_commands *c, const char *id);
int store_lines(struct eosd_commands *c, const char *id, int64_t offset, int64_t limit,
		json_t **ret_lines, int64_t *ret_next, struct eos_error *err);
/* The result of x as doc/commands.md shows it (no output). */
json_t *cmd_result(const struct cmd *x);
/*
 * Make the replies of the waiters whose command settled or whose yield passed (all of them
 * once quiesced) and move them to *ret_done; returns the nearest time one is due (0: none).
 */
int64_t cmds_waiters(struct eosd_commands *c, int64_t now, struct waiter **ret_done);
/* Send the replies of done and free them (the lock not held). */
void cmds_waiters_finish(struct waiter *done);
/* p[n] as a JSON string, bytes that are not UTF-8 replaced by U+FFFD (commands-run.c). */
json_t *cmd_text_json(const char *p, size_t n);
/* Wait (lock held) until pred(ctx) or deadline (CLOCK_MONOTONIC ns). */
void cmds_wait_until(struct eosd_commands *c, bool (*pred)(void *), void *ctx, int64_t deadline);
