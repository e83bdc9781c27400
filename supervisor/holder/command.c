/* SPDX-License-Identifier: MIT */
/*
 * supervisor/holder/command: one command — its subreaper and its shell.
 *
 * The holder forks the subreaper: setsid() (its own session; the tty's controlling process),
 * PR_SET_CHILD_SUBREAPER, then it forks the shell's process and serves the holder's requests
 * for the command's subtree until no descendant is left. The shell's process takes its own
 * process group (the foreground one on a tty), its stdio, its cwd (opened beneath the
 * workspace), proves its pid to the holder (SCM_CREDENTIALS: the kernel translates it into the
 * holder's pid namespace), hardens itself (harden.c) and execs `bash --noprofile --norc -c CMD`,
 * or `sh -c CMD` when there is no bash. A failure before exec is reported on the same socket,
 * which exec closes (O_CLOEXEC): its end without EXEC_FAILED means the exec succeeded.
 *
 * The subreaper ignores SIGTERM (a `kill -TERM -1` inside must not take it down) and reads
 * SIGCHLD and SIGUSR2 (its parent-death signal) from a signalfd. It kills its subtree when
 * asked (TERMINATE: SIGTERM, grace, then SIGKILL rescanned until none is left) and when the
 * holder goes away (without namespaces nothing else would).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "supervisor/holder/holder.h"

/* What the subreaper and the shell's process need, prepared before fork. */
struct launch {
	struct holder *h;
	uint32_t id;
	const struct eos_hproto_exec *e;
	int ctl, exe; /* the children's ends */
	int io[3];    /* the shell's stdin, stdout, stderr */
	bool tty;
};

enum {
	FD_CTL = 3,
	FD_EXE = 4,
	FD_IO = 5
}; /* the subreaper's fds after holder_keep_fds() */

static void __attribute__((noreturn)) shell_fail(struct launch *l, const struct holder_failure *f)
{
	holder_send_failure(l->h, FD_EXE, EOS_HPROTO_EXEC_FAILED, 0, l->id, f);
	_exit(127);
}

static int
enter_cwd(const struct launch *l, struct holder_failure *f)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
	cleanup_close int ws = open(l->h->ws_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int dir = -1;

	if (ws < 0)
		return holder_fail(f, errno, 0, "open the workspace '%s'", l->h->ws_root);
	if (l->e->cwd[0] == '\0')
		return fchdir(ws) < 0 ? holder_fail(f, errno, 0, "chdir '%s'", l->h->ws_root) : 0;
	dir = (int)syscall(SYS_openat2, ws, l->e->cwd, &how, sizeof(how));
	if (dir < 0 || fchdir(dir) < 0)
		return holder_fail(f, errno, 0, "chdir '%s'", l->e->cwd);
	return 0;
}

static int
take_stdio(const struct launch *l, struct holder_failure *f)
{
	if (setpgid(0, 0) < 0)
		return holder_fail(f, errno, 0, "setpgid");
	for (int i = 0; i < 3; i++)
		if (dup3(FD_IO + i, i, 0) < 0)
			return holder_fail(f, errno, 0, "dup3");
	/* SIGTTOU is still blocked: a background group may take the terminal */
	if (l->tty && tcsetpgrp(0, getpid()) < 0)
		return holder_fail(f, errno, 0, "tcsetpgrp");
	return 0;
}

static void __attribute__((noreturn)) shell_main(struct launch *l)
{
	char *bash[] = { (char *)"bash", (char *)"--noprofile", (char *)"--norc",
			 (char *)"-c",	 (char *)l->e->cmd,	NULL };
	char *sh[] = { (char *)"sh", (char *)"-c", (char *)l->e->cmd, NULL };
	char *const *envp = (char *const *)l->e->env;
	struct eos_hproto_msg m = { .type = EOS_HPROTO_SHELL, .cmd = l->id };
	struct holder_failure f = { 0 };
	sigset_t none;

	m.u.shell.nspid = (uint32_t)getpid();
	m.u.shell.parent_nspid = (uint32_t)getppid();
	if (take_stdio(l, &f) < 0 || enter_cwd(l, &f) < 0)
		shell_fail(l, &f);
	if (holder_send(l->h, FD_EXE, &m, NULL, 0, getpid()) < 0)
		_exit(127);
	if (holder_harden(&l->h->plan, &f) < 0)
		shell_fail(l, &f);
	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) < 0 ||
	    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
		holder_fail(&f, errno, 0, "prepare exec");
		shell_fail(l, &f);
	}
	execve("/bin/bash", bash, envp);
	if (errno == ENOENT) {
		execve("/bin/sh", sh, envp);
		holder_fail(&f, errno, 0, "exec '/bin/sh'");
	} else {
		holder_fail(&f, errno, 0, "exec '/bin/bash'");
	}
	shell_fail(l, &f);
}

/* The subreaper's state. */
struct sub {
	struct launch *l;
	pid_t self, shell, ppid0;
	int sigfd;
	bool ctl_open, shell_done;
	enum {
		RUN,
		GRACE,
		KILL
	} phase;
	int64_t deadline;
};

static void
sub_send(struct sub *s, const struct eos_hproto_msg *m, pid_t cred)
{
	if (s->ctl_open)
		holder_send(s->l->h, FD_CTL, m, NULL, 0, cred);
}

/* One PROC: with namespaces the message carries the process's credentials (the subreaper
 * may name any pid of a namespace its user namespace owns) so that the holder learns the
 * host pid; a process that ended meanwhile is left out. */
static void
send_proc(struct sub *s, uint32_t seq, const struct holder_proc *p)
{
	char cmdline[EOS_HPROTO_TEXT_MAX + 1];
	struct eos_hproto_msg m = { .type = EOS_HPROTO_PROC, .seq = seq, .cmd = s->l->id };
	bool ns = s->l->h->plan.isolation == EOS_HPROTO_ISOLATION_NAMESPACES;
	int r;

	holder_proctree_cmdline(p->pid, cmdline, sizeof(cmdline));
	m.u.proc = (struct eos_hproto_proc){ .pid = ns ? 1 : (uint64_t)p->pid,
					     .nspid = (uint32_t)p->pid,
					     .ppid = (uint32_t)p->ppid,
					     .pgid = (uint32_t)p->pgid,
					     .sid = (uint32_t)p->sid,
					     .state = (uint32_t)(unsigned char)p->state,
					     .comm = p->comm,
					     .cmdline = cmdline };
	if (!s->ctl_open || eos_hproto_encode(&m, &s->l->h->out) < 0)
		return;
	r = eos_hproto_send(FD_CTL, &s->l->h->out, NULL, 0, ns ? p->pid : 0);
	if (r == -EPERM) {
		m.u.proc.pid = 0;
		sub_send(s, &m, 0);
	}
}

static void
list(struct sub *s, uint32_t seq)
{
	struct eos_hproto_msg end = { .type = EOS_HPROTO_PROC_END, .seq = seq, .cmd = s->l->id };
	struct holder_proc *v = NULL;
	size_t n = 0;

	if (holder_proctree_scan(s->self, &v, &n) == 0)
		for (size_t i = 0; i < n; i++)
			send_proc(s, seq, &v[i]);
	free(v);
	sub_send(s, &end, 0);
}

static void
terminate(struct sub *s, uint32_t grace_ms)
{
	if (s->phase == KILL)
		return;
	holder_proctree_signal(s->self, SIGTERM);
	holder_proctree_signal(s->self, SIGCONT);
	s->phase = grace_ms ? GRACE : KILL;
	s->deadline = holder_now_ms() + grace_ms;
}

static void
on_request(struct sub *s, const struct eos_hproto_msg *m)
{
	if (m->type == EOS_HPROTO_SIGNAL && m->u.signal.scope == EOS_HPROTO_SCOPE_GROUP)
		kill(-s->shell, (int)m->u.signal.signo);
	else if (m->type == EOS_HPROTO_SIGNAL)
		holder_proctree_signal(s->self, (int)m->u.signal.signo);
	else if (m->type == EOS_HPROTO_TERMINATE)
		terminate(s, m->u.terminate.grace_ms);
	else if (m->type == EOS_HPROTO_LIST)
		list(s, m->seq);
}

static void
read_ctl(struct sub *s)
{
	struct eos_hproto_msg m;
	size_t n = 0;
	int r = eos_hproto_recv(FD_CTL, holder_rbuf, sizeof(holder_rbuf), &n, NULL);

	if (r == -EAGAIN || r == -EINTR)
		return;
	if (r < 0 || n == 0) {
		s->ctl_open = false; /* the holder is gone: nothing may outlive it */
		s->phase = KILL;
		return;
	}
	if (eos_hproto_decode(holder_rbuf, n, &m) == 0)
		on_request(s, &m);
}

static void
shell_ended(struct sub *s, int st)
{
	struct eos_hproto_msg m = { .type = EOS_HPROTO_EXITED, .cmd = s->l->id };

	s->shell_done = true;
	if (WIFSIGNALED(st)) {
		m.u.exited.how = EOS_HPROTO_EXIT_SIGNAL;
		m.u.exited.code = (uint32_t)WTERMSIG(st);
		m.u.exited.core = WCOREDUMP(st) ? 1 : 0;
	} else {
		m.u.exited.code = (uint32_t)WEXITSTATUS(st);
	}
	sub_send(s, &m, 0);
}

/* Reap; the last descendant gone (and the shell) ends the subreaper. */
static void
reap(struct sub *s)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		if (pid == s->shell)
			shell_ended(s, st);
	if (pid < 0 && errno == ECHILD && s->shell_done)
		_exit(0);
}

static void
read_signals(struct sub *s)
{
	struct signalfd_siginfo si;

	while (read(s->sigfd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo == SIGUSR2 && getppid() != s->ppid0)
			s->phase = KILL; /* PR_SET_PDEATHSIG: the holder died */
}

static void __attribute__((noreturn)) sub_loop(struct sub *s)
{
	for (;;) {
		struct pollfd pfd[2] = { { s->sigfd, POLLIN, 0 }, { FD_CTL, POLLIN, 0 } };
		int timeout = -1;

		if (s->phase == KILL)
			timeout = HOLDER_KILL_RESCAN_MS;
		else if (s->phase == GRACE)
			timeout = (int)EOS_MAX(s->deadline - holder_now_ms(), 0);
		if (poll(pfd, s->ctl_open ? 2 : 1, timeout) < 0 && errno != EINTR)
			_exit(1);
		if (pfd[0].revents)
			read_signals(s);
		if (s->ctl_open && pfd[1].revents)
			read_ctl(s);
		if (s->phase == GRACE && holder_now_ms() >= s->deadline)
			s->phase = KILL;
		if (s->phase == KILL)
			holder_proctree_signal(s->self, SIGKILL);
		reap(s);
	}
}

static void __attribute__((noreturn)) sub_main(struct launch *l)
{
	int fds[] = { l->ctl, l->exe, l->io[0], l->io[1], l->io[2] };
	struct sub s = { .l = l, .ctl_open = true, .phase = RUN };
	sigset_t set;

	s.ppid0 = getppid();
	if (prctl(PR_SET_PDEATHSIG, SIGUSR2) < 0 || holder_keep_fds(fds, 5) < 0 || setsid() < 0 ||
	    prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 || (l->tty && ioctl(FD_IO, TIOCSCTTY, 0) < 0))
		_exit(1);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGUSR2);
	s.sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	s.self = getpid();
	s.shell = s.sigfd < 0 ? -1 : fork();
	if (s.shell < 0)
		_exit(1);
	if (s.shell == 0)
		shell_main(l);
	setpgid(s.shell, s.shell); /* the shell does it too: whoever runs first */
	close(FD_EXE);
	for (int i = 0; i < 3; i++)
		close(FD_IO + i);
	if (getppid() != s.ppid0)
		s.phase = KILL;
	sub_loop(&s);
}

/* A pty: eosd gets the master, the shell the slave (from the session's own devpts). */
static int
open_pty(const struct eos_hproto_exec *e, struct holder_cmd *c, struct launch *l,
	 struct holder_failure *f)
{
	struct winsize ws = { .ws_row = (unsigned short)e->rows,
			      .ws_col = (unsigned short)e->cols };
	int unlock = 0, slave;

	c->io[0] = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (c->io[0] < 0)
		return holder_fail(f, errno, 0, "open '/dev/ptmx'");
	c->n_io = 1;
	if (ioctl(c->io[0], TIOCSPTLCK, &unlock) < 0)
		return holder_fail(f, errno, 0, "unlock the pty");
	if (ws.ws_row && ws.ws_col && ioctl(c->io[0], TIOCSWINSZ, &ws) < 0)
		return holder_fail(f, errno, 0, "set the window size");
	slave = ioctl(c->io[0], TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return holder_fail(f, errno, 0, "open the pty's slave");
	l->io[0] = l->io[1] = l->io[2] = slave;
	return 0;
}

/* Pipes: eosd gets [stdin's write end,] stdout's and stderr's read ends. */
static int
open_pipes(struct holder *h, const struct eos_hproto_exec *e, struct holder_cmd *c,
	   struct launch *l, struct holder_failure *f)
{
	int p[2];

	l->io[0] = h->devnull;
	for (int i = (e->flags & EOS_HPROTO_EXEC_STDIN) ? 0 : 1; i < 3; i++) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return holder_fail(f, errno, 0, "pipe");
		l->io[i] = i == 0 ? p[0] : p[1];
		c->io[c->n_io++] = i == 0 ? p[1] : p[0];
	}
	return 0;
}

static void
close_child_ends(struct holder *h, struct launch *l)
{
	int last = -1;

	for (int i = 0; i < 3; i++) {
		if (l->io[i] >= 0 && l->io[i] != h->devnull && l->io[i] != last)
			close(l->io[i]);
		last = l->io[i];
		l->io[i] = -1;
	}
	if (l->ctl >= 0)
		close(l->ctl);
	if (l->exe >= 0)
		close(l->exe);
	l->ctl = l->exe = -1;
}

static int
open_sockets(struct holder_cmd *c, struct launch *l, struct holder_failure *f)
{
	int ctl[2], exe[2], on = 1;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0)
		return holder_fail(f, errno, 0, "socketpair");
	c->ctl = ctl[0];
	l->ctl = ctl[1];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, exe) < 0)
		return holder_fail(f, errno, 0, "socketpair");
	c->exe = exe[0];
	l->exe = exe[1];
	if (setsockopt(c->exe, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) < 0 ||
	    setsockopt(c->ctl, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) < 0 ||
	    fcntl(c->exe, F_SETFL, O_NONBLOCK) < 0 || fcntl(c->ctl, F_SETFL, O_NONBLOCK) < 0)
		return holder_fail(f, errno, 0, "socket options");
	return 0;
}

void
holder_cmd_free(struct holder_cmd *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_io; i++)
		if (c->io[i] >= 0)
			close(c->io[i]);
	if (c->ctl >= 0)
		close(c->ctl);
	if (c->exe >= 0)
		close(c->exe);
	free(c);
}

int
holder_cmd_start(struct holder *h, uint32_t id, const struct eos_hproto_exec *e,
		 struct holder_cmd **ret, struct holder_failure *f)
{
	struct launch l = { .h = h, .id = id, .e = e, .ctl = -1, .exe = -1, .io = { -1, -1, -1 } };
	struct holder_cmd *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return holder_fail(f, ENOMEM, 0, "start the command");
	*c = (struct holder_cmd){ .id = id, .ctl = -1, .exe = -1, .io = { -1, -1, -1 } };
	l.tty = e->flags & EOS_HPROTO_EXEC_TTY;
	r = l.tty ? open_pty(e, c, &l, f) : open_pipes(h, e, c, &l, f);
	if (r == 0)
		r = open_sockets(c, &l, f);
	if (r == 0) {
		c->sub_pid = fork();
		if (c->sub_pid == 0)
			sub_main(&l);
		if (c->sub_pid < 0)
			r = holder_fail(f, errno, 0, "fork");
	}
	close_child_ends(h, &l);
	if (r < 0) {
		holder_cmd_free(c);
		return r;
	}
	*ret = c;
	return 0;
}
