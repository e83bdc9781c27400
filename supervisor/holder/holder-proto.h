/* SPDX-License-Identifier: MIT */
/*
 * supervisor/holder/holder-proto: the messages between eosd and eos-holder (and, inside the
 * holder, between the holder and each command's supervisor), and their transport.
 *
 * Transport: a SOCK_SEQPACKET socketpair, one message per packet, at most EOS_HPROTO_MSG_MAX
 * bytes, with up to EOS_HPROTO_FDS_MAX file descriptors (SCM_RIGHTS) and, where a process
 * proves its pid, SCM_CREDENTIALS. A zero-length read is the peer's end.
 *
 * Encoding (fixed-width little-endian, no struct dumps):
 *	header:	 u16 type · u16 flags (0) · u32 seq · u32 cmd
 *	payload: the fields of the type, in the order of its struct below; u32 and u64 numbers;
 *		 a string is u32 length + bytes + NUL, the NUL counted in the length, no other NUL
 *		 inside; a byte blob is u32 length + bytes.
 * seq numbers a request (eosd picks it; replies to that request echo it; events carry 0). cmd
 * is the command a message is about (eosd picks it at exec; 0 when none).
 *
 * Decoding checks everything: the type, that the payload is exactly consumed, every length
 * against what is left and against its limit, every enumeration and range, strings for the
 * NUL rule, paths for their form. A message failing any check is refused as a whole with
 * -EBADMSG (-EPROTO for an unknown type or version); decoded strings and blobs borrow from
 * the received buffer.
 *
 * The messages, by direction (doc/holder.md has the conversation):
 *	eosd → holder: PLAN (first and once), EXEC, SIGNAL, TERMINATE, LIST, SHUTDOWN.
 *	holder → eosd: READY or SETUP_FAILED (answer to PLAN); per command STARTED (with the
 *		       command's fds), EXITED, GONE, or EXEC_FAILED alone; PROC… PROC_END (answer
 *		       to LIST); REFUSED (a request it could not take); BYE (after SHUTDOWN);
 *		       ABORTED (the namespace died under it) before it exits.
 *	inside the holder: SIGNAL, TERMINATE, LIST to a command's supervisor; EXITED, PROC,
 *		       PROC_END back; SHELL (with credentials) and EXEC_FAILED from the shell's
 *		       process before it execs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/buf.h"

enum {
	EOS_HPROTO_VERSION = 1,
	EOS_HPROTO_HEADER = 12,
	/* below the default unix socket send buffer (net.core.wmem_default, 208 KiB) */
	EOS_HPROTO_MSG_MAX = 192 * 1024,
	EOS_HPROTO_FDS_MAX = 3,
	EOS_HPROTO_CMD_MAX = 128 * 1024 - 1, /* execve's limit on one argument, NUL excluded */
	EOS_HPROTO_ENV_MAX = 1024,	     /* variables per command */
	EOS_HPROTO_PATH_MAX = 4095,
	EOS_HPROTO_MASKS_MAX = 16,
	EOS_HPROTO_BPF_MAX = 4096 * 8, /* BPF_MAXINSNS instructions of 8 bytes */
	EOS_HPROTO_HOSTNAME_MAX = 64,
	EOS_HPROTO_TEXT_MAX = 1024, /* error texts, process names and command lines */
};

enum eos_hproto_type {
	/* eosd → holder */
	EOS_HPROTO_PLAN = 1,
	EOS_HPROTO_EXEC = 2,
	EOS_HPROTO_SIGNAL = 3,
	EOS_HPROTO_TERMINATE = 4,
	EOS_HPROTO_LIST = 5,
	EOS_HPROTO_SHUTDOWN = 6,
	/* holder → eosd */
	EOS_HPROTO_READY = 64,
	EOS_HPROTO_SETUP_FAILED = 65,
	EOS_HPROTO_STARTED = 66,
	EOS_HPROTO_EXEC_FAILED = 67,
	EOS_HPROTO_EXITED = 68,
	EOS_HPROTO_GONE = 69,
	EOS_HPROTO_PROC = 70,
	EOS_HPROTO_PROC_END = 71,
	EOS_HPROTO_REFUSED = 72,
	EOS_HPROTO_BYE = 73,
	EOS_HPROTO_ABORTED = 74, /* the holder gives up (its namespace's init died); it exits */
	/* inside the holder: the shell's process proving its pid before it execs */
	EOS_HPROTO_SHELL = 96,
};

enum eos_hproto_isolation {
	EOS_HPROTO_ISOLATION_NONE = 0, /* no namespaces: commands run in the view's host path */
	EOS_HPROTO_ISOLATION_NAMESPACES = 1, /* user, mount, pid, ipc, uts (+ net) namespaces */
};

enum eos_hproto_network {
	EOS_HPROTO_NETWORK_SHARED = 0,	 /* the host's network */
	EOS_HPROTO_NETWORK_ISOLATED = 1, /* a network namespace with loopback only */
};

enum eos_hproto_exec_flags {
	EOS_HPROTO_EXEC_TTY = 1 << 0,	/* a pty (stdin, stdout, stderr); else pipes */
	EOS_HPROTO_EXEC_STDIN = 1 << 1, /* pipes: a pipe for stdin; else /dev/null */
	EOS_HPROTO_EXEC_FLAGS = (1 << 2) - 1,
};

enum eos_hproto_scope {
	EOS_HPROTO_SCOPE_GROUP = 0, /* the shell's process group */
	EOS_HPROTO_SCOPE_TREE = 1,  /* every descendant of the command's subreaper */
};

enum eos_hproto_exit_how {
	EOS_HPROTO_EXIT_CODE = 0,   /* code: the exit status */
	EOS_HPROTO_EXIT_SIGNAL = 1, /* code: the signal */
	EOS_HPROTO_EXIT_LOST = 2,   /* the subreaper was killed before it saw the shell end */
};

/* What failed in setup (SETUP_FAILED.step): eosd explains the user-namespace steps. */
enum eos_hproto_step {
	EOS_HPROTO_STEP_OTHER = 0,
	EOS_HPROTO_STEP_USERNS = 1, /* unshare(CLONE_NEWUSER | …) */
	EOS_HPROTO_STEP_IDMAP = 2,  /* writing uid_map, setgroups, gid_map */
	EOS_HPROTO_STEP_MOUNT = 3,  /* building the root */
	EOS_HPROTO_STEP_MAX = 3,
};

struct eos_hproto_plan {
	uint32_t version;		      /* EOS_HPROTO_VERSION */
	uint32_t isolation;		      /* enum eos_hproto_isolation */
	uint32_t network;		      /* enum eos_hproto_network */
	uint32_t uid, gid;		      /* mapped to 0 inside; must be the holder's own */
	uint64_t rlimit_nofile, rlimit_nproc; /* 0: leave the holder's */
	const char *view;		      /* absolute host path of the view */
	const char *hostname;		      /* [A-Za-z0-9.-], 1..EOS_HPROTO_HOSTNAME_MAX */
	uint32_t n_masks;
	const char *masks[EOS_HPROTO_MASKS_MAX]; /* absolute host directories to hide */
	const uint8_t *bpf;			 /* struct sock_filter[], host byte order */
	uint32_t bpf_len;			 /* a multiple of 8, at most EOS_HPROTO_BPF_MAX */
};

struct eos_hproto_exec {
	uint32_t flags;	     /* enum eos_hproto_exec_flags */
	uint32_t rows, cols; /* tty window size (0: leave) */
	const char *cwd;     /* relative to the workspace, a tree path ("" is its root) */
	const char *cmd;     /* bash -c argument, 1..EOS_HPROTO_CMD_MAX bytes */
	uint32_t n_env;
	const char *env[EOS_HPROTO_ENV_MAX + 1]; /* "NAME=value", NULL-terminated */
};

struct eos_hproto_failure {
	int32_t error;	  /* positive errno */
	uint32_t step;	  /* enum eos_hproto_step (SETUP_FAILED; 0 otherwise) */
	const char *text; /* "mount proc on '/proc': Operation not permitted" */
};

struct eos_hproto_started {
	uint64_t subreaper_pid, shell_pid;     /* host pids (eosd's pid namespace) */
	uint32_t subreaper_nspid, shell_nspid; /* the same inside the session */
	/* fds that come with it: tty: 1 (the master); pipes: stdout and stderr read ends, after
	 * the stdin write end when EOS_HPROTO_EXEC_STDIN (3 or 2) */
	uint32_t n_fds;
};

struct eos_hproto_exited {
	uint32_t how;  /* enum eos_hproto_exit_how */
	uint32_t code; /* exit status or signal */
	uint32_t core; /* 1 when a core was dumped */
};

struct eos_hproto_shell {
	uint32_t nspid;	       /* the shell's process, as it sees itself */
	uint32_t parent_nspid; /* its parent, the command's subreaper */
};

struct eos_hproto_proc {
	/* host pid; 0 when it could not be learned. From a subreaper to the holder: 1 when the
	 * message carries the process's credentials, whose pid the kernel translates */
	uint64_t pid;
	uint32_t nspid, ppid, pgid, sid; /* inside the session */
	uint32_t state;			 /* the letter of /proc/PID/stat */
	const char *comm, *cmdline;	 /* cmdline: arguments joined by spaces, cut */
};

struct eos_hproto_msg {
	uint16_t type; /* enum eos_hproto_type */
	uint32_t seq, cmd;
	union {
		struct eos_hproto_plan plan;
		struct eos_hproto_exec exec;
		struct {
			uint32_t signo; /* 1..64 */
			uint32_t scope; /* enum eos_hproto_scope */
		} signal;
		struct {
			uint32_t grace_ms; /* TERMINATE and SHUTDOWN */
		} terminate;
		struct {
			uint32_t version;
			uint32_t isolation;
			uint64_t init_pid; /* host pid of the namespace's init; 0 without */
		} ready;
		struct eos_hproto_failure failure; /* SETUP_FAILED, EXEC_FAILED, REFUSED, ABORTED */
		struct eos_hproto_started started;
		struct eos_hproto_exited exited;
		struct {
			uint32_t lost; /* 1: the subreaper was killed, descendants may live on */
		} gone;
		struct eos_hproto_proc proc;
		struct eos_hproto_shell shell;
	} u;
};

/*
 * Encode m into b (reset first). The encoder checks nothing a decoder would refuse: callers
 * validate their input (eos_hproto_check()) before. 0 or -ENOMEM; -EMSGSIZE when the message
 * would exceed EOS_HPROTO_MSG_MAX.
 */
int eos_hproto_encode(const struct eos_hproto_msg *m, struct eos_buf *b);
/* Decode and validate n bytes at p into *m (strings borrowed from p). 0, -EBADMSG, -EPROTO. */
int eos_hproto_decode(const void *p, size_t n, struct eos_hproto_msg *m);
/*
 * Validate a message as the decoder would (the encoder's caller uses it): 0 or -EINVAL with
 * *ret_why naming the field (static string).
 */
int eos_hproto_check(const struct eos_hproto_msg *m, const char **ret_why);

/* A relative tree path as EXEC's cwd accepts: "" or names joined by '/', no "." or "..". */
bool eos_hproto_tree_path_ok(const char *s);
/* An absolute host path: starts with '/', no empty, "." or ".." component (a lone "/" is ok). */
bool eos_hproto_abs_path_ok(const char *s);

/*
 * Send one message with fds (n_fds ≤ EOS_HPROTO_FDS_MAX) and, when cred_pid > 0, credentials
 * naming that pid (with the caller's uid and gid). MSG_NOSIGNAL. 0 or -errno (-EAGAIN on a
 * non-blocking socket whose buffer is full).
 */
int eos_hproto_send(int sock, const struct eos_buf *b, const int *fds, size_t n_fds,
		    pid_t cred_pid);

/* What eos_hproto_recv() received besides the bytes. */
struct eos_hproto_anc {
	int fds[EOS_HPROTO_FDS_MAX]; /* received fds (O_CLOEXEC), owned by the caller */
	size_t n_fds;
	pid_t cred_pid; /* from SCM_CREDENTIALS in the receiver's pid namespace; 0 when none */
};

/*
 * Receive one message into buf[cap] (cap ≥ EOS_HPROTO_MSG_MAX + 1). *ret_len = its length,
 * 0 at the peer's end. A truncated message or truncated ancillary data is -EMSGSIZE (its fds
 * closed); more fds than EOS_HPROTO_FDS_MAX likewise. anc may be NULL (fds then closed).
 * 0 or -errno (-EAGAIN on a non-blocking socket with nothing to read).
 */
int eos_hproto_recv(int sock, void *buf, size_t cap, size_t *ret_len, struct eos_hproto_anc *anc);
/* Close the fds still held in anc (those set to -1 are skipped). NULL-safe. */
void eos_hproto_anc_close(struct eos_hproto_anc *anc);
