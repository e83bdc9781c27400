/* SPDX-License-Identifier: MIT */
/*
 * supervisor/holder: eos-holder, the single-threaded helper eosd spawns per session
 * (doc/holder.md). This header is private to the holder's files.
 *
 * Processes. The holder (host pid namespace; fd 3 the socket to eosd) creates the namespaces
 * with unshare() and forks:
 *	init (ns.c)	 pid 1 of the session's pid namespace: builds the root (rootfs.c),
 *			 pivots into it, then only reaps orphans; it dies with the holder
 *			 (PR_SET_PDEATHSIG), and the kernel kills the namespace with it.
 *	a subreaper per command (command.c), forked on EXEC: its own session, a child
 *			 subreaper; it runs the shell in a child and keeps every descendant of the
 *			 command below itself until they are all gone, signals and lists them
 *			 (proctree.c) on the holder's request.
 * With isolation "none" there is no init and no namespace: commands run in the view's host path.
 *
 * Plan in the parent, execute in the child (STYLE rule 21): everything a child needs — the
 * mount operations, argv, envp, fds — is prepared before fork(); children report failures
 * over a socket (errno and the step) and never return into the holder's loop.
 *
 * Every fd is O_CLOEXEC; all signals are blocked in the holder and read from a signalfd.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/buf.h"

#include "supervisor/holder/holder-proto.h"

enum {
	HOLDER_SOCK_FD = 3, /* the socket to eosd, as eosd's posix_spawn() places it */
	HOLDER_CMDS_MAX = 256,
	HOLDER_TEXT_MAX = 512,
	/* the subreaper rescans its subtree this often while it kills it (a process forked
	 * after one scan is found by the next) */
	HOLDER_KILL_RESCAN_MS = 50,
};

/* An error in a child or a setup step: positive errno, step, "mount proc on '/proc': …". */
struct holder_failure {
	int error;
	enum eos_hproto_step step;
	char text[HOLDER_TEXT_MAX];
};

/* Fill f (errno e) with the formatted step and ": strerror(e)"; returns -e. */
int holder_fail(struct holder_failure *f, int e, enum eos_hproto_step step, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* One command: its subreaper (our child) and what is still owed to eosd. */
struct holder_cmd {
	uint32_t id;
	pid_t sub_pid;			 /* host pid of the subreaper */
	uint32_t sub_nspid, shell_nspid; /* from the shell's SHELL message */
	pid_t shell_pid;		 /* host pid, from its credentials; 0 until then */
	int ctl;			 /* socket to the subreaper */
	int exe;			 /* socket from the shell's process until it execs */
	int io[EOS_HPROTO_FDS_MAX];	 /* for eosd, held until STARTED */
	size_t n_io;
	bool exe_done; /* exe reached its end (exec or exit) */
	bool started;  /* STARTED sent */
	bool exit_known, exit_sent;
	struct eos_hproto_exited exit;
	bool failed; /* EXEC_FAILED is owed instead */
	struct holder_failure failure;
	bool reaped; /* the subreaper was waited for */
	int sub_status;
	bool listing; /* a LIST is waiting for its PROC_END */
};

struct holder {
	int sock; /* to eosd */
	pid_t parent;
	uint8_t *plan_raw; /* the PLAN message, which plan borrows from */
	struct eos_hproto_plan plan;
	const char *ws_root; /* where commands start: "/workspace", or the view's host path */
	int sigfd;
	int devnull;
	pid_t init_pid; /* 0 without namespaces */
	int init_sock;	/* sync socket with init */
	int init_status;
	bool init_reaped;
	struct holder_cmd *cmds[HOLDER_CMDS_MAX];
	size_t n_cmds;
	struct {
		bool active;
		uint32_t seq;
		size_t waiting; /* subreapers that have not answered */
	} list;
	bool stopping;	  /* SHUTDOWN (or eosd gone): admit nothing, end everything */
	bool eosd_gone;	  /* no BYE to send */
	bool aborted;	  /* init died: ABORTED was sent */
	int64_t deadline; /* CLOCK_MONOTONIC ms of the SIGKILL, while stopping */
	uint32_t bye_seq;
	struct eos_buf out; /* encoding buffer */
};

/* The receive buffer every process of the holder uses (EOS_HPROTO_MSG_MAX + 1 bytes). */
extern uint8_t holder_rbuf[EOS_HPROTO_MSG_MAX + 1];

/* Encode m and send it on sock with fds (and credentials naming cred_pid when > 0). */
int holder_send(struct holder *h, int sock, const struct eos_hproto_msg *m, const int *fds,
		size_t n_fds, pid_t cred_pid);
/* Send a failure-shaped message (SETUP_FAILED, EXEC_FAILED, REFUSED, ABORTED). */
int holder_send_failure(struct holder *h, int sock, enum eos_hproto_type type, uint32_t seq,
			uint32_t cmd, const struct holder_failure *f);
/* CLOCK_MONOTONIC in milliseconds. */
int64_t holder_now_ms(void);
/*
 * Put fds[i] at fd 3 + i (the same fd may appear more than once) and close every fd from
 * 3 + n on; fd 0-2 stay. fds[] is updated. For a child that keeps only what it needs.
 */
int holder_keep_fds(int *fds, size_t n);

/* ns.c: create the namespaces, fork init and wait until the root is built (or failed). */
int holder_ns_setup(struct holder *h, struct holder_failure *f);
/* ns.c: a child the holder reaped: true (and init's status kept) when it was init. */
bool holder_ns_reap(struct holder *h, pid_t pid, int status);

/* rootfs.c: the root's operations, planned from h->plan in the holder, run by init. */
struct holder_rootfs;
int holder_rootfs_plan(const struct holder *h, struct holder_rootfs **ret,
		       struct holder_failure *f);
int holder_rootfs_run(struct holder_rootfs *rf, struct holder_failure *f);
void holder_rootfs_free(struct holder_rootfs *rf);

/* command.c: start the command of an EXEC (fork its subreaper); 0 or -errno with f filled. */
int holder_cmd_start(struct holder *h, uint32_t id, const struct eos_hproto_exec *e,
		     struct holder_cmd **ret, struct holder_failure *f);
void holder_cmd_free(struct holder_cmd *c);

/* harden.c: in the shell's process just before exec: rlimits, capabilities, no_new_privs,
 * seccomp. */
int holder_harden(const struct eos_hproto_plan *plan, struct holder_failure *f);

/* proctree.c: the descendants of pid `root` (from /proc, in the caller's pid namespace). */
struct holder_proc {
	pid_t pid, ppid, pgid, sid;
	char state;
	char comm[64];
};
/* All processes of /proc that descend from root (root excluded). Caller frees *ret. */
int holder_proctree_scan(pid_t root, struct holder_proc **ret, size_t *ret_n);
/* Send sig to every descendant of root; the number signalled, or -errno. */
int holder_proctree_signal(pid_t root, int sig);
/* The command line of pid, arguments joined by spaces, cut to size - 1 bytes. */
void holder_proctree_cmdline(pid_t pid, char *out, size_t size);
