/* SPDX-License-Identifier: MIT */
/*
 * supervisor/holder/holder: eos-holder's main and its loop (see holder.h, doc/holder.md).
 *
 *	eos-holder --parent PID		(fd 3: the SOCK_SEQPACKET socket to eosd)
 *
 * Start: die with the parent (PR_SET_PDEATHSIG), close every other inherited fd, block all
 * signals, read the PLAN, set up (namespaces and root, or nothing for isolation none), answer
 * READY or SETUP_FAILED. Then serve requests until SHUTDOWN or eosd's end.
 */
#include "supervisor/holder/holder.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

uint8_t holder_rbuf[EOS_HPROTO_MSG_MAX + 1];

int
holder_fail(struct holder_failure *f, int e, enum eos_hproto_step step, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (e <= 0 || e >= 4096)
		e = EIO;
	f->error = e;
	f->step = step;
	va_start(ap, fmt);
	n = vsnprintf(f->text, sizeof(f->text), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(f->text))
		snprintf(f->text + n, sizeof(f->text) - (size_t)n, ": %s", strerror(e));
	return -e;
}

int64_t
holder_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
holder_keep_fds(int *fds, size_t n)
{
	int top = 3 + (int)n;

	for (size_t i = 0; i < n; i++)
		if (fds[i] < top) {
			fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, top);
			if (fds[i] < 0)
				return -errno;
		}
	for (size_t i = 0; i < n; i++)
		if (dup3(fds[i], 3 + (int)i, O_CLOEXEC) < 0)
			return -errno;
	for (size_t i = 0; i < n; i++)
		fds[i] = 3 + (int)i;
	if (close_range((unsigned)top, ~0U, 0) < 0)
		return -errno;
	return 0;
}

int
holder_send(struct holder *h, int sock, const struct eos_hproto_msg *m, const int *fds,
	    size_t n_fds, pid_t cred_pid)
{
	int r = eos_hproto_encode(m, &h->out);

	if (r < 0)
		return r;
	return eos_hproto_send(sock, &h->out, fds, n_fds, cred_pid);
}

int
holder_send_failure(struct holder *h, int sock, enum eos_hproto_type type, uint32_t seq,
		    uint32_t cmd, const struct holder_failure *f)
{
	struct eos_hproto_msg m = { .type = type, .seq = seq, .cmd = cmd };

	m.u.failure.error = f->error;
	m.u.failure.step = type == EOS_HPROTO_SETUP_FAILED ? f->step : 0;
	m.u.failure.text = f->text;
	return holder_send(h, sock, &m, NULL, 0, 0);
}

/* To eosd; a failed send means eosd is gone: stop everything. */
static void begin_stop(struct holder *h, uint32_t grace_ms);

static void
to_eosd(struct holder *h, const struct eos_hproto_msg *m, const int *fds, size_t n_fds)
{
	int r;

	if (h->eosd_gone)
		return;
	/* eosd reads when it can: wait for room (a dead eosd kills us by PR_SET_PDEATHSIG) */
	while ((r = holder_send(h, h->sock, m, fds, n_fds, 0)) == -EAGAIN) {
		struct pollfd p = { h->sock, POLLOUT, 0 };

		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			break;
	}
	if (r < 0) {
		h->eosd_gone = true;
		begin_stop(h, 0);
	}
}

static void
failure_to_eosd(struct holder *h, enum eos_hproto_type type, uint32_t seq, uint32_t cmd,
		const struct holder_failure *f)
{
	struct eos_hproto_msg m = { .type = type, .seq = seq, .cmd = cmd };

	m.u.failure.error = f->error;
	m.u.failure.text = f->text;
	to_eosd(h, &m, NULL, 0);
}

static void
refuse(struct holder *h, uint32_t seq, uint32_t cmd, int e, const char *text)
{
	struct holder_failure f = { .error = e };

	snprintf(f.text, sizeof(f.text), "%s", text);
	failure_to_eosd(h, EOS_HPROTO_REFUSED, seq, cmd, &f);
}

static struct holder_cmd *
cmd_find(struct holder *h, uint32_t id)
{
	for (size_t i = 0; i < h->n_cmds; i++)
		if (h->cmds[i]->id == id)
			return h->cmds[i];
	return NULL;
}

static void
cmd_remove(struct holder *h, struct holder_cmd *c)
{
	for (size_t i = 0; i < h->n_cmds; i++)
		if (h->cmds[i] == c) {
			h->cmds[i] = h->cmds[--h->n_cmds];
			break;
		}
	holder_cmd_free(c);
}

/* One subreaper fewer to wait for: the last one ends eosd's list with PROC_END. */
static void
list_release(struct holder *h)
{
	struct eos_hproto_msg m = { .type = EOS_HPROTO_PROC_END };

	if (--h->list.waiting > 0)
		return;
	h->list.active = false;
	m.seq = h->list.seq;
	to_eosd(h, &m, NULL, 0);
}

/* A subreaper's LIST answer is complete (or it is gone). */
static void
list_answered(struct holder *h, struct holder_cmd *c)
{
	if (!c->listing)
		return;
	c->listing = false;
	list_release(h);
}

static void
send_exited(struct holder *h, struct holder_cmd *c)
{
	struct eos_hproto_msg m = { .type = EOS_HPROTO_EXITED, .cmd = c->id };

	m.u.exited = c->exit;
	to_eosd(h, &m, NULL, 0);
	c->exit_sent = true;
}

static void
send_started(struct holder *h, struct holder_cmd *c)
{
	struct eos_hproto_msg m = { .type = EOS_HPROTO_STARTED, .cmd = c->id };

	m.u.started.subreaper_pid = (uint64_t)c->sub_pid;
	m.u.started.shell_pid = (uint64_t)c->shell_pid;
	m.u.started.subreaper_nspid = c->sub_nspid;
	m.u.started.shell_nspid = c->shell_nspid;
	m.u.started.n_fds = (uint32_t)c->n_io;
	to_eosd(h, &m, c->io, c->n_io);
	for (size_t i = 0; i < c->n_io; i++) {
		close(c->io[i]);
		c->io[i] = -1;
	}
	c->n_io = 0;
	c->started = true;
}

/* Whatever the command's state allows to be told now, in order; the end frees it. */
static void
cmd_progress(struct holder *h, struct holder_cmd *c)
{
	struct eos_hproto_msg m = { .type = EOS_HPROTO_GONE, .cmd = c->id };

	if (c->exe_done && !c->started && !c->failed && c->shell_pid > 0)
		send_started(h, c);
	if (c->exe_done && !c->started && !c->failed) {
		holder_fail(&c->failure, ECHILD, 0, "the command's process ended before it ran");
		c->failed = true;
	}
	if (c->started && c->exit_known && !c->exit_sent)
		send_exited(h, c);
	if (!c->reaped || !c->exe_done || c->ctl >= 0)
		return;
	list_answered(h, c);
	if (c->failed) {
		failure_to_eosd(h, EOS_HPROTO_EXEC_FAILED, 0, c->id, &c->failure);
	} else {
		if (!c->exit_sent) {
			c->exit.how = EOS_HPROTO_EXIT_LOST;
			send_exited(h, c);
		}
		m.u.gone.lost = !(WIFEXITED(c->sub_status) && WEXITSTATUS(c->sub_status) == 0);
		to_eosd(h, &m, NULL, 0);
	}
	cmd_remove(h, c);
}

/* A message of a command's subreaper (or its end). */
static void
on_ctl_msg(struct holder *h, struct holder_cmd *c, const struct eos_hproto_msg *m, pid_t cred)
{
	struct eos_hproto_msg out = *m;

	if (m->type == EOS_HPROTO_EXITED) {
		c->exit = m->u.exited;
		c->exit_known = true;
	} else if (m->type == EOS_HPROTO_PROC && c->listing) {
		out.seq = h->list.seq;
		out.cmd = c->id;
		if (h->plan.isolation == EOS_HPROTO_ISOLATION_NAMESPACES)
			out.u.proc.pid = m->u.proc.pid == 1 && cred > 0 ? (uint64_t)cred : 0;
		to_eosd(h, &out, NULL, 0);
	} else if (m->type == EOS_HPROTO_PROC_END) {
		list_answered(h, c);
	}
}

static void
ctl_closed(struct holder_cmd *c)
{
	close(c->ctl);
	c->ctl = -1;
}

/* Read what the subreaper sent; until its end when `drain` (it is dead). */
static void
read_ctl(struct holder *h, struct holder_cmd *c, bool drain)
{
	do {
		struct eos_hproto_anc anc;
		struct eos_hproto_msg m;
		size_t n = 0;
		int r = eos_hproto_recv(c->ctl, holder_rbuf, sizeof(holder_rbuf), &n, &anc);

		if (r == -EAGAIN)
			return;
		if (r < 0 || n == 0) {
			ctl_closed(c);
			return;
		}
		eos_hproto_anc_close(&anc);
		if (eos_hproto_decode(holder_rbuf, n, &m) == 0)
			on_ctl_msg(h, c, &m, anc.cred_pid);
	} while (drain);
}

/* The shell's process before exec: SHELL (its credentials), EXEC_FAILED, or its end. */
static void
read_exe(struct holder_cmd *c)
{
	struct eos_hproto_anc anc;
	struct eos_hproto_msg m;
	size_t n = 0;
	int r = eos_hproto_recv(c->exe, holder_rbuf, sizeof(holder_rbuf), &n, &anc);

	if (r == -EAGAIN)
		return;
	if (r < 0 || n == 0) {
		close(c->exe);
		c->exe = -1;
		c->exe_done = true;
		return;
	}
	eos_hproto_anc_close(&anc);
	if (eos_hproto_decode(holder_rbuf, n, &m) < 0)
		return;
	if (m.type == EOS_HPROTO_SHELL && anc.cred_pid > 0 && c->shell_pid == 0) {
		c->shell_pid = anc.cred_pid;
		c->shell_nspid = m.u.shell.nspid;
		c->sub_nspid = m.u.shell.parent_nspid;
	} else if (m.type == EOS_HPROTO_EXEC_FAILED && !c->failed) {
		c->failed = true;
		c->failure.error = m.u.failure.error;
		snprintf(c->failure.text, sizeof(c->failure.text), "%s", m.u.failure.text);
	}
}

static void
forward_to_cmd(struct holder *h, const struct eos_hproto_msg *m)
{
	struct holder_cmd *c = cmd_find(h, m->cmd);

	if (!c) {
		refuse(h, m->seq, m->cmd, ESRCH, "no such command");
		return;
	}
	if (c->ctl >= 0)
		holder_send(h, c->ctl, m, NULL, 0, 0);
}

static void
on_exec(struct holder *h, const struct eos_hproto_msg *m)
{
	struct holder_failure f = { 0 };
	struct holder_cmd *c = NULL;

	if (h->stopping) {
		refuse(h, m->seq, m->cmd, ESHUTDOWN, "the holder is shutting down");
		return;
	}
	if (cmd_find(h, m->cmd)) {
		refuse(h, m->seq, m->cmd, EEXIST, "command id in use");
		return;
	}
	if (h->n_cmds == HOLDER_CMDS_MAX) {
		refuse(h, m->seq, m->cmd, EAGAIN, "too many commands running");
		return;
	}
	if (holder_cmd_start(h, m->cmd, &m->u.exec, &c, &f) < 0) {
		failure_to_eosd(h, EOS_HPROTO_EXEC_FAILED, m->seq, m->cmd, &f);
		return;
	}
	h->cmds[h->n_cmds++] = c;
}

static void
on_list(struct holder *h, const struct eos_hproto_msg *m)
{
	struct eos_hproto_msg req = { .type = EOS_HPROTO_LIST, .seq = m->seq };

	if (h->list.active) {
		refuse(h, m->seq, m->cmd, EBUSY, "a list is already running");
		return;
	}
	if (m->cmd && !cmd_find(h, m->cmd)) {
		refuse(h, m->seq, m->cmd, ESRCH, "no such command");
		return;
	}
	h->list.active = true;
	h->list.seq = m->seq;
	h->list.waiting = 1; /* held until every subreaper is asked */
	for (size_t i = 0; i < h->n_cmds; i++) {
		struct holder_cmd *c = h->cmds[i];

		if ((m->cmd && c->id != m->cmd) || c->ctl < 0)
			continue;
		req.cmd = c->id;
		if (holder_send(h, c->ctl, &req, NULL, 0, 0) == 0) {
			c->listing = true;
			h->list.waiting++;
		}
	}
	list_release(h);
}

static void
on_request(struct holder *h, const struct eos_hproto_msg *m)
{
	if (m->type == EOS_HPROTO_EXEC)
		on_exec(h, m);
	else if (m->type == EOS_HPROTO_SIGNAL || m->type == EOS_HPROTO_TERMINATE)
		forward_to_cmd(h, m);
	else if (m->type == EOS_HPROTO_LIST)
		on_list(h, m);
	else if (m->type == EOS_HPROTO_SHUTDOWN) {
		h->bye_seq = m->seq;
		begin_stop(h, m->u.terminate.grace_ms);
	} else
		refuse(h, m->seq, m->cmd, EPROTO, "not a request");
}

static void
read_sock(struct holder *h)
{
	struct eos_hproto_anc anc;
	struct eos_hproto_msg m;
	size_t n = 0;
	int r = eos_hproto_recv(h->sock, holder_rbuf, sizeof(holder_rbuf), &n, &anc);

	if (r == -EAGAIN || r == -EINTR)
		return;
	if (r == -EMSGSIZE) {
		refuse(h, 0, 0, EMSGSIZE, "message too large");
		return;
	}
	if (r < 0 || n == 0) {
		h->eosd_gone = true;
		begin_stop(h, 0);
		return;
	}
	eos_hproto_anc_close(&anc); /* eosd sends no fds */
	r = eos_hproto_decode(holder_rbuf, n, &m);
	if (r < 0) {
		uint32_t seq = n >= 8 ? (uint32_t)holder_rbuf[4] | (uint32_t)holder_rbuf[5] << 8 |
						(uint32_t)holder_rbuf[6] << 16 |
						(uint32_t)holder_rbuf[7] << 24
				      : 0;

		refuse(h, seq, 0, -r, r == -EPROTO ? "unknown message" : "malformed message");
		return;
	}
	if (m.type == EOS_HPROTO_PLAN) {
		refuse(h, m.seq, 0, EPROTO, "the plan was already given");
		return;
	}
	on_request(h, &m);
}

static void
begin_stop(struct holder *h, uint32_t grace_ms)
{
	struct eos_hproto_msg t = { .type = EOS_HPROTO_TERMINATE };

	if (h->stopping && !h->eosd_gone)
		return;
	if (h->stopping && h->eosd_gone)
		grace_ms = 0;
	h->stopping = true;
	h->deadline = holder_now_ms() + grace_ms;
	if (h->init_pid > 0) {
		kill(h->init_pid, grace_ms ? SIGTERM : SIGKILL);
		return;
	}
	t.u.terminate.grace_ms = grace_ms;
	for (size_t i = 0; i < h->n_cmds; i++) {
		t.cmd = h->cmds[i]->id;
		if (h->cmds[i]->ctl >= 0)
			holder_send(h, h->cmds[i]->ctl, &t, NULL, 0, 0);
	}
}

static void
init_died(struct holder *h)
{
	struct holder_failure f = { .error = ECHILD };
	int st = h->init_status;

	if (h->stopping)
		return;
	snprintf(f.text, sizeof(f.text), "the session's init (pid %d) %s %d", (int)h->init_pid,
		 WIFSIGNALED(st) ? "was killed by signal" : "exited with status",
		 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	failure_to_eosd(h, EOS_HPROTO_ABORTED, 0, 0, &f);
	h->eosd_gone = true; /* nothing more is told: the session is lost */
	h->aborted = true;
	h->stopping = true;
}

static void
reap(struct holder *h)
{
	int st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		if (holder_ns_reap(h, pid, st)) {
			init_died(h);
			continue;
		}
		for (size_t i = 0; i < h->n_cmds; i++) {
			struct holder_cmd *c = h->cmds[i];

			if (c->sub_pid != pid)
				continue;
			c->reaped = true;
			c->sub_status = st;
			if (c->ctl >= 0)
				read_ctl(h, c, true);
			break;
		}
	}
}

static void
read_signals(struct holder *h)
{
	struct signalfd_siginfo si;

	while (read(h->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			reap(h);
		else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT ||
			 si.ssi_signo == SIGHUP)
			begin_stop(h, 0);
	}
}

/* Stopping: SIGKILL the namespace at the deadline (or when no command is left). */
static void
stop_step(struct holder *h)
{
	if (!h->stopping || h->init_pid <= 0 || h->init_reaped)
		return;
	if (h->n_cmds == 0 || holder_now_ms() >= h->deadline)
		kill(h->init_pid, SIGKILL);
}

static bool
stop_done(const struct holder *h)
{
	return h->stopping && h->n_cmds == 0 && (h->init_pid <= 0 || h->init_reaped);
}

enum {
	SLOT_SOCK,
	SLOT_SIG,
	SLOT_CTL,
	SLOT_EXE
};

struct slot {
	int kind;
	struct holder_cmd *c;
};

static size_t
poll_set(struct holder *h, struct pollfd *pfd, struct slot *slot)
{
	size_t n = 0;

	if (!h->eosd_gone) {
		pfd[n] = (struct pollfd){ h->sock, POLLIN, 0 };
		slot[n++] = (struct slot){ SLOT_SOCK, NULL };
	}
	pfd[n] = (struct pollfd){ h->sigfd, POLLIN, 0 };
	slot[n++] = (struct slot){ SLOT_SIG, NULL };
	for (size_t i = 0; i < h->n_cmds; i++) {
		struct holder_cmd *c = h->cmds[i];

		if (c->ctl >= 0) {
			pfd[n] = (struct pollfd){ c->ctl, POLLIN, 0 };
			slot[n++] = (struct slot){ SLOT_CTL, c };
		}
		if (c->exe >= 0) {
			pfd[n] = (struct pollfd){ c->exe, POLLIN, 0 };
			slot[n++] = (struct slot){ SLOT_EXE, c };
		}
	}
	return n;
}

static int
poll_timeout(const struct holder *h)
{
	int64_t left;

	if (!h->stopping || h->init_pid <= 0)
		return -1;
	left = h->deadline - holder_now_ms();
	return left <= 0 ? 0 : left > 60000 ? 60000 : (int)left;
}

static void
dispatch(struct holder *h, const struct pollfd *pfd, const struct slot *slot, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!pfd[i].revents)
			continue;
		switch (slot[i].kind) {
		case SLOT_SOCK:
			read_sock(h);
			break;
		case SLOT_SIG:
			read_signals(h);
			break;
		case SLOT_CTL:
			if (slot[i].c->ctl >= 0)
				read_ctl(h, slot[i].c, false);
			break;
		case SLOT_EXE:
			if (slot[i].c->exe >= 0)
				read_exe(slot[i].c);
			break;
		default:
			break;
		}
	}
}

/* Run until SHUTDOWN is done or eosd is gone and everything ended. The exit status. */
static int
loop(struct holder *h)
{
	static struct pollfd pfd[2 + 2 * HOLDER_CMDS_MAX];
	static struct slot slot[2 + 2 * HOLDER_CMDS_MAX];
	struct eos_hproto_msg bye = { .type = EOS_HPROTO_BYE };

	for (;;) {
		size_t n = poll_set(h, pfd, slot);

		if (poll(pfd, n, poll_timeout(h)) < 0 && errno != EINTR)
			return 1;
		dispatch(h, pfd, slot, n);
		/* cmd_progress() may free the command: iterate from the end */
		for (size_t i = h->n_cmds; i-- > 0;)
			cmd_progress(h, h->cmds[i]);
		stop_step(h);
		if (stop_done(h))
			break;
	}
	if (h->aborted)
		return 1;
	if (h->eosd_gone)
		return 0;
	bye.seq = h->bye_seq;
	to_eosd(h, &bye, NULL, 0);
	return 0;
}

/* PR_SET_PDEATHSIG first, then make sure the parent did not die before it took effect. */
static int
start(struct holder *h, int argc, char **argv)
{
	sigset_t all;
	char *end = NULL;
	int type = 0;
	socklen_t len = sizeof(type);

	if (argc != 3 || strcmp(argv[1], "--parent") != 0) {
		fprintf(stderr,
			"usage: eos-holder --parent PID (started by eosd, fd 3 its socket)\n");
		return -EINVAL;
	}
	errno = 0;
	h->parent = (pid_t)strtol(argv[2], &end, 10);
	if (errno || *end || h->parent <= 0)
		return -EINVAL;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != h->parent)
		return -ESRCH;
	if (getsockopt(HOLDER_SOCK_FD, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
	    type != SOCK_SEQPACKET) {
		fprintf(stderr, "eos-holder: fd 3 is not a SOCK_SEQPACKET socket\n");
		return -EBADF;
	}
	/* eosd's own fds (a /dev/fuse among them) must not live on here */
	if (close_range(HOLDER_SOCK_FD + 1, ~0U, 0) < 0 ||
	    fcntl(HOLDER_SOCK_FD, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	h->sock = HOLDER_SOCK_FD;
	sigfillset(&all);
	if (sigprocmask(SIG_SETMASK, &all, NULL) < 0)
		return -errno;
	h->sigfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
	h->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	return h->sigfd < 0 || h->devnull < 0 ? -errno : 0;
}

/* Receive and keep the PLAN (its strings borrow from a copy of the message). */
static int
read_plan(struct holder *h, struct holder_failure *f)
{
	struct eos_hproto_msg m;
	size_t n = 0;
	int r = eos_hproto_recv(h->sock, holder_rbuf, sizeof(holder_rbuf), &n, NULL);

	if (r < 0)
		return holder_fail(f, -r, 0, "read the plan");
	if (n == 0)
		return -EPIPE;
	h->plan_raw = malloc(n);
	if (!h->plan_raw)
		return holder_fail(f, ENOMEM, 0, "read the plan");
	memcpy(h->plan_raw, holder_rbuf, n);
	r = eos_hproto_decode(h->plan_raw, n, &m);
	if (r < 0 || m.type != EOS_HPROTO_PLAN)
		return holder_fail(f, r < 0 ? -r : EPROTO, 0, "read the plan");
	h->plan = m.u.plan;
	if (h->plan.uid != getuid() || h->plan.gid != getgid())
		return holder_fail(f, EINVAL, 0, "plan for uid %u gid %u, holder runs as %u %u",
				   h->plan.uid, h->plan.gid, (unsigned)getuid(),
				   (unsigned)getgid());
	return 0;
}

static int
setup(struct holder *h, struct holder_failure *f)
{
	struct eos_hproto_msg m = { .type = EOS_HPROTO_READY };
	struct stat sb;
	int r = read_plan(h, f);

	if (r < 0)
		return r;
	if (h->plan.isolation == EOS_HPROTO_ISOLATION_NAMESPACES) {
		r = holder_ns_setup(h, f);
		if (r < 0)
			return r;
		h->ws_root = "/workspace";
	} else {
		if (stat(h->plan.view, &sb) < 0)
			return holder_fail(f, errno, 0, "view '%s'", h->plan.view);
		if (!S_ISDIR(sb.st_mode))
			return holder_fail(f, ENOTDIR, 0, "view '%s'", h->plan.view);
		h->ws_root = h->plan.view;
	}
	if (fcntl(h->sock, F_SETFL, O_NONBLOCK) < 0)
		return holder_fail(f, errno, 0, "socket");
	m.u.ready.version = EOS_HPROTO_VERSION;
	m.u.ready.isolation = h->plan.isolation;
	m.u.ready.init_pid = (uint64_t)(h->init_pid > 0 ? h->init_pid : 0);
	r = holder_send(h, h->sock, &m, NULL, 0, 0);
	return r < 0 ? holder_fail(f, -r, 0, "send ready") : 0;
}

int
main(int argc, char **argv)
{
	struct holder h = { .sock = -1, .sigfd = -1, .devnull = -1, .init_sock = -1 };
	struct holder_failure f = { 0 };
	int r;

	eos_buf_init(&h.out);
	r = start(&h, argc, argv);
	if (r < 0)
		return r == -ESRCH ? 0 : 2;
	r = setup(&h, &f);
	if (r < 0) {
		/* the socket is still blocking here: the failure reaches eosd before the end */
		if (f.error)
			holder_send_failure(&h, h.sock, EOS_HPROTO_SETUP_FAILED, 0, 0, &f);
		if (h.init_pid > 0)
			kill(h.init_pid, SIGKILL);
		return 1;
	}
	return loop(&h);
}
