/* SPDX-License-Identifier: MIT */
/*
 * supervisor/holder-client: eosd's side of eos-holder, the per-session namespace holder
 * (supervisor/holder/, protocol and guarantees in doc/holder.md).
 *
 * Calling sequence:
 *	eosd_holder_spawn(path, &plan, &h, err)	   posix_spawn the holder, send its plan;
 *						   returns at once
 *	eosd_holder_wait_ready(h, timeout_ms, err) block until READY (or fail, with the cause);
 *						   or poll eosd_holder_fd() and call
 *						   eosd_holder_next() until READY / SETUP_FAILED
 *	eosd_holder_exec(h, cmd, &x, err) …	   requests; their results arrive as events:
 *	eosd_holder_next(h, &ev, err)		   one event per call, -EAGAIN when none waits.
 *						   Poll eosd_holder_fd() for POLLIN (a libevent
 *						   EV_READ event fits): readable when an event waits
 *						   or the holder has gone (then DIED comes)
 *	eosd_holder_shutdown(h, grace_ms, err)	   SIGTERM everything, grace, SIGKILL: BYE, DIED
 *	eosd_holder_free(h)			   SIGKILL the holder if it runs (its namespace
 *						   dies with it), reap it, close. NULL-safe.
 *
 * Events of one command, in this order: STARTED (host pids, the command's fds), EXITED (the
 * shell's exit code or signal), GONE (its last descendant has ended: background processes
 * keep a command between EXITED and GONE); or EXEC_FAILED alone when it never ran. A command
 * id (cmd, chosen by the caller, non-zero) may be used again after GONE or EXEC_FAILED.
 * Requests that cannot be taken get REFUSED with their seq. DIED is the last event: the holder
 * exited (its socket closed) and was reaped; ABORTED before it says why when the holder
 * itself gave up (the namespace's init died): every command is then gone.
 *
 * Provenance: a command's subreaper keeps every descendant below itself (double-forked
 * daemons, setsid, nohup included), so the host pid chain of any process of the command
 * (/proc/PID/stat, field 4) reaches STARTED's subreaper_pid.
 *
 * Threads: a struct eosd_holder is used by one thread at a time (the caller serialises). The
 * holder dies with the *thread* that spawned it (PR_SET_PDEATHSIG follows the parent thread):
 * spawn from a thread that lives as long as the session, such as the loop thread.
 * Ownership: fds in an event belong to the event until taken (set the field to -1), and
 * eosd_holder_event_release() closes what is left.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

struct eosd_holder;

enum eosd_holder_isolation {
	EOSD_HOLDER_NAMESPACES = 0, /* user, mount, pid, ipc, uts (+ net) namespaces */
	EOSD_HOLDER_NONE = 1,	    /* no namespace: commands run in the view's host path */
};

enum eosd_holder_network {
	EOSD_HOLDER_SHARED = 0,	  /* the host's network */
	EOSD_HOLDER_ISOLATED = 1, /* loopback only */
};

/* What a session's holder sets up. Strings and bytes are copied by eosd_holder_spawn(). */
struct eosd_holder_plan {
	enum eosd_holder_isolation isolation;
	enum eosd_holder_network network; /* NAMESPACES only */
	const char *view;		  /* host path of the session's view (eosd's mount) */
	const char *hostname;		  /* inside; [A-Za-z0-9.-]{1,64} */
	const char *const *masks;	  /* host directories made invisible (state, runtime) */
	size_t n_masks;			  /* at most 16 */
	const uint8_t *seccomp;		  /* eosd_seccomp_build() */
	size_t seccomp_len;
	uint64_t rlimit_nofile; /* per command; 0: the holder's */
	uint64_t rlimit_nproc;	/* per command (counted per user namespace); 0: the holder's */
};

/* One command. */
struct eosd_holder_exec {
	const char *cmd;	/* run by bash --noprofile --norc -c (sh -c without bash) */
	const char *cwd;	/* inside the workspace: a relative path, "" or NULL for its root */
	const char *const *env; /* "NAME=value": the whole environment (nothing is added) */
	size_t n_env;
	bool tty;	     /* a pty; else pipes */
	bool stdin_pipe;     /* pipes: a pipe for stdin (else /dev/null) */
	unsigned rows, cols; /* tty window size; 0: the kernel's default */
};

enum eosd_holder_event_kind {
	EOSD_HOLDER_READY,	  /* set up: commands may be sent */
	EOSD_HOLDER_SETUP_FAILED, /* error, message (with cause and fix for user namespaces) */
	EOSD_HOLDER_STARTED,
	EOSD_HOLDER_EXEC_FAILED, /* error, message ("chdir 'x': No such file or directory") */
	EOSD_HOLDER_EXITED,
	EOSD_HOLDER_GONE,
	EOSD_HOLDER_PROC,     /* one process of a LIST answer */
	EOSD_HOLDER_PROC_END, /* the end of a LIST answer */
	EOSD_HOLDER_REFUSED,  /* a request (seq) was not taken: error, message */
	EOSD_HOLDER_BYE,      /* SHUTDOWN done: nothing of the session runs */
	EOSD_HOLDER_ABORTED,  /* the holder gives up: message */
	EOSD_HOLDER_DIED,     /* the holder exited: status */
};

enum eosd_holder_exit {
	EOSD_HOLDER_EXIT_CODE,	 /* code: the exit status */
	EOSD_HOLDER_EXIT_SIGNAL, /* code: the signal */
	EOSD_HOLDER_EXIT_LOST,	 /* the subreaper was killed before it saw the shell end */
};

struct eosd_holder_proc {
	pid_t pid;		      /* host pid; 0 when unknown */
	pid_t nspid, ppid, pgid, sid; /* inside the session */
	char state;		      /* R, S, D, Z, T… */
	char comm[64];
	char cmdline[1025]; /* arguments joined by spaces, cut */
};

struct eosd_holder_event {
	enum eosd_holder_event_kind kind;
	uint32_t cmd; /* the command, or 0 */
	uint32_t seq; /* the request answered, or 0 for events */
	int error;    /* negative errno: SETUP_FAILED, EXEC_FAILED, REFUSED, ABORTED */
	char message[EOS_ERROR_MSG_MAX];
	pid_t init_pid; /* READY: host pid of the namespace's init (0 for isolation none) */
	/* STARTED */
	pid_t subreaper_pid, shell_pid;	    /* host pids */
	pid_t subreaper_nspid, shell_nspid; /* inside the session */
	int fd_pty;			    /* tty: the master; else -1 */
	int fd_stdin;			    /* pipes with stdin_pipe: its write end; else -1 */
	int fd_stdout, fd_stderr;	    /* pipes: the read ends; else -1 */
	/* EXITED */
	enum eosd_holder_exit how;
	int code;
	bool core;
	bool lost;		      /* GONE: the subreaper was killed; processes may live on */
	struct eosd_holder_proc proc; /* PROC */
	int status;		      /* DIED: the wait status */
};

/*
 * Spawn the holder at path (eosd_holder_default_path()) with posix_spawn — its socket at fd 3,
 * stdin and stdout /dev/null, stderr eosd's, a new session, an empty environment — and send it
 * the plan. The caller owns *ret (eosd_holder_free()). -EINVAL naming a bad plan field.
 */
int eosd_holder_spawn(const char *path, const struct eosd_holder_plan *plan,
		      struct eosd_holder **ret, struct eos_error *err);
/* $EOS_HOLDER, else LIBEXECDIR/eos-holder. Borrowed (environment or static). */
const char *eosd_holder_default_path(void);
/* The socket to poll for POLLIN. Borrowed: valid until eosd_holder_free(). */
int eosd_holder_fd(const struct eosd_holder *h);
/* The holder's pid. */
pid_t eosd_holder_pid(const struct eosd_holder *h);
/* The host pid of the namespace's init once READY was read (0 before, and without one). */
pid_t eosd_holder_init_pid(const struct eosd_holder *h);

/*
 * Wait up to timeout_ms for READY. 0; the setup's failure (its errno, the step and, for a
 * refused user namespace, the cause and the fix); -ETIMEDOUT ("not ready after N ms": the
 * caller frees the holder); -ECHILD when it exited. Must come before any other event is read.
 */
int eosd_holder_wait_ready(struct eosd_holder *h, int timeout_ms, struct eos_error *err);

/*
 * Read one event into *ev (owned by the caller: eosd_holder_event_release()). 0; -EAGAIN when
 * none waits; -EBADMSG when the holder broke the protocol (the caller frees it); -ESRCH after
 * DIED. Never blocks, except to reap the holder once its socket has closed.
 */
int eosd_holder_next(struct eosd_holder *h, struct eosd_holder_event *ev, struct eos_error *err);
/* Close the fds the event still holds. NULL-safe. */
void eosd_holder_event_release(struct eosd_holder_event *ev);

/*
 * Requests. Each returns its seq (> 0), which REFUSED, PROC and PROC_END echo, or -errno:
 * -EINVAL naming a bad argument, -EPIPE when the holder is gone, -ETIMEDOUT when it does not
 * read for a second. Sending blocks only while the socket's buffer is full.
 */
/* Run a command as cmd (non-zero, not in use). */
int eosd_holder_exec(struct eosd_holder *h, uint32_t cmd, const struct eosd_holder_exec *x,
		     struct eos_error *err);
/* Send sig to cmd's process group (tree false) or to every process below its subreaper. */
int eosd_holder_signal(struct eosd_holder *h, uint32_t cmd, int sig, bool tree,
		       struct eos_error *err);
/* Cancel cmd: SIGTERM (and SIGCONT) to its whole subtree, then after grace_ms SIGKILL until
 * none is left; GONE follows. grace_ms 0 kills at once. */
int eosd_holder_terminate(struct eosd_holder *h, uint32_t cmd, uint32_t grace_ms,
			  struct eos_error *err);
/* List the processes of cmd (0: of every command): PROC events, then PROC_END. One list at a
 * time. */
int eosd_holder_list(struct eosd_holder *h, uint32_t cmd, struct eos_error *err);
/* End the session: SIGTERM to every process, SIGKILL after grace_ms; BYE, then DIED. */
int eosd_holder_shutdown(struct eosd_holder *h, uint32_t grace_ms, struct eos_error *err);

void eosd_holder_free(struct eosd_holder *h);

/*
 * Why the host refused a user namespace, and what to do, read from sysctls under sysctl_root
 * ("/proc/sys"): kernel.unprivileged_userns_clone = 0 (Debian), user.max_user_namespaces = 0
 * (or its limit reached, for ENOSPC), kernel.apparmor_restrict_unprivileged_userns = 1
 * (Ubuntu); otherwise a generic cause. error is the positive errno of the failed step. Writes
 * one sentence to out and returns true, or false when error is none of EPERM, EACCES, ENOSPC,
 * EINVAL, EUSERS.
 */
bool eosd_holder_userns_explain(const char *sysctl_root, int error, char *out, size_t size);
