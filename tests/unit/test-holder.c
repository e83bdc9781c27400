/* SPDX-License-Identifier: MIT */
/*
 * Tests of eos-holder driven through eosd's client (supervisor/holder-client.h): real
 * namespaces, real processes, a plain directory as the view. Commands: output through a pty
 * and through pipes, exit codes and signals, stdin, signals to the group and the tree, cancel
 * of a whole subtree (a background child, a setsid grandchild, one that ignores SIGTERM), the
 * listing of a command's processes, the subreaper every daemonized process stays below, the
 * kill chain when eosd (here: a parent process) dies, shutdown, a killed holder, and the
 * protocol (bad requests refused, the holder goes on). Run as root and as an unprivileged
 * user (tests/integration/holder.sh).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervisor/holder-client-internal.h"
#include "tests/unit/holder-util.h"

static struct eosd_holder *
open_ns(const char *view)
{
	struct eosd_holder_plan p;

	ht_plan_init(&p, view);
	return ht_spawn(&p);
}

START_TEST(ready_namespaces)
{
	char path[64], line[256];
	struct eosd_holder *h = open_ns(ht_view());
	bool ns_pid_1 = false;
	FILE *f;

	/* init's host pid is pid 1 of its own namespace */
	ck_assert_int_gt(eosd_holder_init_pid(h), 0);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)eosd_holder_init_pid(h));
	f = fopen(path, "re");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "NSpid:", 6) == 0)
			ns_pid_1 = strstr(line, "\t1\n") != NULL;
	fclose(f);
	ck_assert_msg(ns_pid_1, "init is not pid 1 of a new pid namespace");
	ck_assert_int_eq(ht_sh(h, "test \"$(pwd)\" = /workspace && test \"$(id -u)\" = 0"), 0);
	/* the environment is exactly what was sent (bash adds PWD, SHLVL and _) */
	ck_assert_int_eq(ht_sh(h, "printenv | cut -d= -f1 | sort | tr '\\n' ' '"), 0);
	ck_assert_str_eq(ht_output(), "HOME LC_ALL PATH PWD SHLVL TERM _ ");
	eosd_holder_free(h);
}
END_TEST

START_TEST(pty_output)
{
	struct eosd_holder *h = open_ns(ht_view());
	struct eosd_holder_exec x = ht_exec("echo hello; tty; test -t 0 && test -t 1 && exit 4");
	struct ht_result r;

	x.tty = true;
	x.rows = 40;
	x.cols = 100;
	ht_run(h, 1, &x, NULL, &r);
	ck_assert(!r.failed);
	ck_assert_int_eq(r.how, EOSD_HOLDER_EXIT_CODE);
	ck_assert_int_eq(r.code, 4);
	ck_assert_msg(strstr((char *)r.out.data, "hello\r\n/dev/pts/"), "%s", (char *)r.out.data);
	ht_result_release(&r);
	x.cmd = "stty size";
	ht_run(h, 2, &x, NULL, &r);
	ck_assert_msg(strstr((char *)r.out.data, "40 100"), "%s", (char *)r.out.data);
	ht_result_release(&r);
	eosd_holder_free(h);
}
END_TEST

START_TEST(pipes_output)
{
	struct eosd_holder *h = open_ns(ht_view());
	struct eosd_holder_exec x = ht_exec("echo out; echo err >&2; test -t 1 || exit 7");
	struct ht_result r;

	ht_run(h, 1, &x, NULL, &r);
	ck_assert_int_eq(r.how, EOSD_HOLDER_EXIT_CODE);
	ck_assert_int_eq(r.code, 7);
	ck_assert_str_eq((char *)r.out.data, "out\n");
	ck_assert_str_eq((char *)r.err.data, "err\n");
	ht_result_release(&r);
	eosd_holder_free(h);
}
END_TEST

START_TEST(exit_by_signal)
{
	struct eosd_holder *h = open_ns(ht_view());
	struct eosd_holder_exec x = ht_exec("kill -SEGV $$");
	struct ht_result r;

	ht_run(h, 1, &x, NULL, &r);
	ck_assert_int_eq(r.how, EOSD_HOLDER_EXIT_SIGNAL);
	ck_assert_int_eq(r.code, SIGSEGV);
	ht_result_release(&r);
	ck_assert_int_eq(ht_sh(h, "exit 0"), 0);
	ck_assert_int_eq(ht_sh(h, "exit 255"), 255);
	ck_assert_int_eq(ht_sh(h, "kill -9 $$"), 128 + SIGKILL);
	eosd_holder_free(h);
}
END_TEST

START_TEST(stdin_pipe_and_pty)
{
	struct eosd_holder *h = open_ns(ht_view());
	struct eosd_holder_exec x = ht_exec("read x; echo \"got $x\"; cat; echo end");
	struct ht_result r;

	x.stdin_pipe = true;
	ht_run(h, 1, &x, "abc\nrest\n", &r);
	ck_assert_str_eq((char *)r.out.data, "got abc\nrest\nend\n");
	ht_result_release(&r);
	/* without stdin_pipe, stdin is /dev/null */
	ck_assert_int_eq(ht_sh(h, "cat; test \"$(readlink /proc/self/fd/0)\" = /dev/null"), 0);
	x = ht_exec("read x; echo \"got $x\"");
	x.tty = true;
	ht_run(h, 2, &x, "tty line\n", &r);
	ck_assert_msg(strstr((char *)r.out.data, "got tty line"), "%s", (char *)r.out.data);
	ck_assert_int_eq(r.code, 0);
	ht_result_release(&r);
	eosd_holder_free(h);
}
END_TEST

/* The live processes of cmd (host pids) from a LIST, as pidfds; their number. A process that
 * ended but was not reaped yet (a zombie) is left out. */
static size_t
list_pidfds(struct eosd_holder *h, uint32_t cmd, int *fds, size_t max, const char *want_comm,
	    bool *seen)
{
	struct eos_error err = { 0 };
	struct eosd_holder_event ev;
	size_t n = 0;
	int seq = eosd_holder_list(h, cmd, &err);

	ck_assert_msg(seq > 0, "%s", err.msg);
	for (;;) {
		ht_next(h, &ev);
		if (ev.kind == EOSD_HOLDER_PROC_END && ev.seq == (uint32_t)seq)
			break;
		if (ev.kind != EOSD_HOLDER_PROC || ev.proc.state == 'Z')
			continue;
		ck_assert_uint_eq(ev.cmd, cmd);
		ck_assert_msg(ev.proc.pid > 0, "no host pid for '%s'", ev.proc.comm);
		if (want_comm && strcmp(ev.proc.comm, want_comm) == 0)
			*seen = true;
		if (n < max)
			fds[n++] = ht_pidfd(ev.proc.pid);
	}
	return n;
}

START_TEST(cancel_kills_the_subtree)
{
	struct eosd_holder *h = open_ns(ht_view());
	struct eosd_holder_exec x = ht_exec("sleep 1000 & setsid sleep 1000 & "
					    "setsid sh -c 'trap \"\" TERM; sleep 1000 & wait' & "
					    "(setsid sh -c 'sleep 1000' &); echo ready; wait");
	struct eos_error err = { 0 };
	struct eosd_holder_event ev;
	struct eos_buf out;
	int fds[32];
	size_t n;
	bool seen = false;

	eos_buf_init(&out);
	ck_assert_int_gt(eosd_holder_exec(h, 7, &x, &err), 0);
	ht_wait(h, EOSD_HOLDER_STARTED, &ev);
	ht_read_until(ev.fd_stdout, "ready", &out);
	/* wait until the last background shell has started its sleep */
	while (ht_sh(h, "test $(pgrep -c -x sleep) -ge 4") != 0)
		;
	n = list_pidfds(h, 7, fds, 32, "sleep", &seen);
	ck_assert(seen);
	ck_assert_uint_ge(n, 5); /* bash, 4 sleeps (and the shells that did not exec) */
	ck_assert_int_gt(eosd_holder_terminate(h, 7, 100, &err), 0);
	ht_wait(h, EOSD_HOLDER_EXITED, &ev);
	ck_assert_int_eq(ev.how, EOSD_HOLDER_EXIT_SIGNAL);
	ck_assert_int_eq(ev.code, SIGTERM);
	ht_wait(h, EOSD_HOLDER_GONE, &ev);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(ht_pidfd_ended(fds[i]), "process %zu of %zu survived", i, n);
	ck_assert_int_eq(ht_sh(h, "pgrep -c sleep"), 1); /* none */
	eos_buf_release(&out);
	eosd_holder_free(h);
}
END_TEST

START_TEST(signal_group_and_tree)
{
	struct eosd_holder *h = open_ns(ht_view());
	struct eosd_holder_exec x = ht_exec("setsid sleep 1000 & sleep 1000; echo after");
	struct eos_error err = { 0 };
	struct eosd_holder_event ev;
	int group[8], other = -1;
	size_t n = 0;
	pid_t pgid;

	ck_assert_int_gt(eosd_holder_exec(h, 3, &x, &err), 0);
	ht_wait(h, EOSD_HOLDER_STARTED, &ev);
	pgid = ev.shell_nspid; /* the shell leads its process group */
	eosd_holder_event_release(&ev);
	while (ht_sh(h, "test $(pgrep -c -x sleep) -ge 2") != 0)
		;
	ck_assert_int_gt(eosd_holder_list(h, 3, &err), 0);
	for (ht_next(h, &ev); ev.kind != EOSD_HOLDER_PROC_END; ht_next(h, &ev)) {
		if (ev.kind != EOSD_HOLDER_PROC)
			continue;
		if (ev.proc.pgid != pgid)
			other = ht_pidfd(ev.proc.pid);
		else if (n < 8)
			group[n++] = ht_pidfd(ev.proc.pid);
	}
	ck_assert_uint_eq(n, 2); /* bash and its foreground sleep */
	ck_assert_int_ge(other, 0);
	/* the group: the shell and its foreground sleep end, the setsid one stays */
	ck_assert_int_gt(eosd_holder_signal(h, 3, SIGKILL, false, &err), 0);
	ht_wait(h, EOSD_HOLDER_EXITED, &ev);
	ck_assert_int_eq(ev.how, EOSD_HOLDER_EXIT_SIGNAL);
	ck_assert_int_eq(ev.code, SIGKILL);
	for (size_t i = 0; i < n; i++)
		ht_wait_pidfd(group[i]);
	ck_assert(!ht_pidfd_ended(other));
	/* the tree: the rest */
	ck_assert_int_gt(eosd_holder_signal(h, 3, SIGTERM, true, &err), 0);
	ht_wait(h, EOSD_HOLDER_GONE, &ev);
	ck_assert(!ev.lost);
	ck_assert(ht_pidfd_ended(other));
	eosd_holder_free(h);
}
END_TEST

/* A background process outlives its command's shell: EXITED, listed, then GONE at its end. */
START_TEST(background_survives_the_command)
{
	struct eosd_holder *h = open_ns(ht_view());
	struct eosd_holder_exec x = ht_exec(
		"nohup sleep 1000 >/dev/null 2>&1 & until pgrep -x sleep >/dev/null; do :; done; exit 5");
	struct eos_error err = { 0 };
	struct eosd_holder_event ev;
	bool seen = false;
	int fds[4];

	ck_assert_int_gt(eosd_holder_exec(h, 9, &x, &err), 0);
	ht_wait(h, EOSD_HOLDER_EXITED, &ev);
	ck_assert_int_eq(ev.code, 5);
	ck_assert_uint_eq(list_pidfds(h, 9, fds, 4, "sleep", &seen), 1);
	ck_assert(seen);
	ck_assert_int_eq(ht_sh(h, "pgrep -x sleep >/dev/null"), 0);
	ck_assert_int_gt(eosd_holder_terminate(h, 9, 0, &err), 0);
	ht_wait(h, EOSD_HOLDER_GONE, &ev);
	ck_assert(ht_pidfd_ended(fds[0]));
	eosd_holder_free(h);
}
END_TEST

/* The parent of pid on the host (/proc/PID/stat field 4), or 0. */
static pid_t
host_ppid(pid_t pid)
{
	char path[64], buf[512];
	const char *p;
	int ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 1, " %*c %d", &ppid);
	fclose(f);
	return ppid;
}

/* Every process of cmd, each found on the host by its pid from LIST, has the subreaper among
 * its host ancestors. */
static size_t
check_chains(struct eosd_holder *h, uint32_t cmd, pid_t subreaper)
{
	struct eos_error err = { 0 };
	struct eosd_holder_event ev;
	size_t n = 0;
	int seq = eosd_holder_list(h, cmd, &err);

	ck_assert_int_gt(seq, 0);
	for (ht_next(h, &ev); ev.kind != EOSD_HOLDER_PROC_END; ht_next(h, &ev)) {
		pid_t p = ev.proc.pid;

		if (ev.kind != EOSD_HOLDER_PROC || ev.proc.state == 'Z')
			continue;
		while (p > 1 && p != subreaper)
			p = host_ppid(p);
		ck_assert_msg(p == subreaper, "'%s' (%d) is not below the subreaper %d",
			      ev.proc.cmdline, (int)ev.proc.pid, (int)subreaper);
		n++;
	}
	return n;
}

START_TEST(daemons_stay_below_the_subreaper)
{
	struct eosd_holder *h = open_ns(ht_view());
	struct eosd_holder_exec x = ht_exec("(setsid sh -c 'sleep 1001' &) ; "
					    "env -i /bin/sh -c '(sleep 1002 &)'; "
					    "nohup sh -c 'sleep 1003' >/dev/null 2>&1 & "
					    "sh -c 'sh -c \"sleep 1004 &\" &'; exit 0");
	struct eos_error err = { 0 };
	struct eosd_holder_event ev;
	pid_t subreaper;

	ck_assert_int_gt(eosd_holder_exec(h, 11, &x, &err), 0);
	ht_wait(h, EOSD_HOLDER_STARTED, &ev);
	subreaper = ev.subreaper_pid;
	ck_assert_int_eq(host_ppid(ev.shell_pid), subreaper);
	eosd_holder_event_release(&ev);
	ht_wait(h, EOSD_HOLDER_EXITED, &ev);
	while (ht_sh(h, "test $(pgrep -c -x sleep) -ge 4") != 0)
		;
	ck_assert_uint_ge(check_chains(h, 11, subreaper), 4);
	ck_assert_int_gt(eosd_holder_terminate(h, 11, 0, &err), 0);
	ht_wait(h, EOSD_HOLDER_GONE, &ev);
	eosd_holder_free(h);
}
END_TEST

/*
 * The kill chain: a parent process (eosd's stand-in) spawns the holder and a command with a
 * background marker, reports their host pids, and is SIGKILLed: the holder, init, the
 * subreaper, the shell and the marker must all end.
 */
static void
parent_run(bool none, int report, const char *view)
{
	struct eosd_holder_plan p;
	struct eosd_holder_exec x = ht_exec("sleep 1000 & setsid sleep 1000 & echo ready; wait");
	struct eos_error err = { 0 };
	struct eosd_holder_event ev;
	struct eos_buf out;
	pid_t pids[8] = { 0 };
	size_t n = 0;
	struct eosd_holder *h;

	eos_buf_init(&out);
	ht_plan_init(&p, view);
	p.isolation = none ? EOSD_HOLDER_NONE : EOSD_HOLDER_NAMESPACES;
	h = ht_spawn(&p);
	ck_assert_int_gt(eosd_holder_exec(h, 1, &x, &err), 0);
	ht_wait(h, EOSD_HOLDER_STARTED, &ev);
	ht_read_until(ev.fd_stdout, "ready", &out);
	pids[n++] = eosd_holder_pid(h);
	pids[n++] = ev.subreaper_pid;
	pids[n++] = ev.shell_pid;
	if (!none)
		pids[n++] = eosd_holder_init_pid(h);
	/* both background children were forked before "ready" */
	ck_assert_int_gt(eosd_holder_list(h, 1, &err), 0);
	for (ht_next(h, &ev); ev.kind != EOSD_HOLDER_PROC_END; ht_next(h, &ev))
		if (ev.kind == EOSD_HOLDER_PROC && ev.proc.pid != pids[2] && n < 8)
			pids[n++] = ev.proc.pid;
	ck_assert_int_eq(write(report, pids, sizeof(pids)), (ssize_t)sizeof(pids));
	pause();
}

static void
kill_chain(bool none)
{
	pid_t pids[8] = { 0 };
	int pfd[2], fds[8], st;
	size_t n = 0;
	char *view = ht_view(); /* made here: the killed child would leave it behind */
	pid_t parent;

	ck_assert_int_eq(pipe(pfd), 0);
	parent = fork();
	ck_assert_int_ge(parent, 0);
	if (parent == 0) {
		close(pfd[0]);
		parent_run(none, pfd[1], view);
		_exit(1);
	}
	close(pfd[1]);
	ck_assert_int_eq(read(pfd[0], pids, sizeof(pids)), (ssize_t)sizeof(pids));
	while (n < 8 && pids[n] > 0) {
		fds[n] = ht_pidfd(pids[n]);
		n++;
	}
	ck_assert_uint_ge(n, none ? 5 : 6); /* holder, subreaper, shell, (init), 2 sleeps */
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(!ht_pidfd_ended(fds[i]), "process %d ended early", (int)pids[i]);
	ck_assert_int_eq(kill(parent, SIGKILL), 0);
	ck_assert_int_eq(waitpid(parent, &st, 0), parent);
	for (size_t i = 0; i < n; i++)
		ht_wait_pidfd(fds[i]);
}

START_TEST(parent_death_kills_everything)
{
	kill_chain(false);
}
END_TEST

START_TEST(parent_death_kills_everything_without_namespaces)
{
	kill_chain(true);
}
END_TEST

/* SHUTDOWN: SIGTERM, grace, SIGKILL for one that ignores SIGTERM; then BYE and DIED. */
START_TEST(shutdown_ends_everything)
{
	struct eosd_holder *h = open_ns(ht_view());
	struct eosd_holder_exec x =
		ht_exec("setsid sh -c 'trap \"\" TERM; echo ready; sleep 1000; sleep 1000' & wait");
	struct eos_error err = { 0 };
	struct eosd_holder_event ev;
	struct eos_buf out;
	int fds[8], init;
	size_t n;
	bool seen = false;

	eos_buf_init(&out);
	ck_assert_int_gt(eosd_holder_exec(h, 1, &x, &err), 0);
	ht_wait(h, EOSD_HOLDER_STARTED, &ev);
	ht_read_until(ev.fd_stdout, "ready", &out);
	while ((n = list_pidfds(h, 1, fds, 8, NULL, &seen)) < 3)
		for (size_t i = 0; i < n; i++)
			close(fds[i]);
	init = ht_pidfd(eosd_holder_init_pid(h));
	ck_assert_int_gt(eosd_holder_shutdown(h, 200, &err), 0);
	ht_wait(h, EOSD_HOLDER_BYE, &ev);
	ht_wait(h, EOSD_HOLDER_DIED, &ev);
	ck_assert(WIFEXITED(ev.status) && WEXITSTATUS(ev.status) == 0);
	for (size_t i = 0; i < n; i++)
		ck_assert(ht_pidfd_ended(fds[i]));
	ck_assert(ht_pidfd_ended(init));
	ck_assert_int_eq(eosd_holder_exec(h, 2, &x, &err), -EPIPE);
	eos_buf_release(&out);
	eosd_holder_free(h);
}
END_TEST

/* A holder that dies is noticed at once (its socket closes) and takes the namespace along. */
START_TEST(killed_holder_is_noticed)
{
	struct eosd_holder *h = open_ns(ht_view());
	struct eosd_holder_exec x = ht_exec("echo ready; sleep 1000");
	struct eos_error err = { 0 };
	struct eosd_holder_event ev;
	struct eos_buf out;
	int shell, init;

	eos_buf_init(&out);
	ck_assert_int_gt(eosd_holder_exec(h, 1, &x, &err), 0);
	ht_wait(h, EOSD_HOLDER_STARTED, &ev);
	ht_read_until(ev.fd_stdout, "ready", &out);
	shell = ht_pidfd(ev.shell_pid);
	init = ht_pidfd(eosd_holder_init_pid(h));
	ck_assert_int_eq(kill(eosd_holder_pid(h), SIGKILL), 0);
	ht_wait(h, EOSD_HOLDER_DIED, &ev);
	ck_assert(WIFSIGNALED(ev.status) && WTERMSIG(ev.status) == SIGKILL);
	ht_wait_pidfd(init);
	ht_wait_pidfd(shell);
	ck_assert_int_eq(eosd_holder_next(h, &ev, &err), -ESRCH);
	eos_buf_release(&out);
	eosd_holder_free(h);
}
END_TEST

/* A command may kill its own subreaper (same uid): the holder says so (EXIT_LOST, GONE lost);
 * what it left runs on under init, and ends with the session. */
START_TEST(killed_subreaper_is_reported)
{
	struct eosd_holder *h = open_ns(ht_view());
	struct eosd_holder_exec x = ht_exec("kill -9 $PPID; exec sleep 1000");
	struct eos_error err = { 0 };
	struct eosd_holder_event ev;
	int sleeper;

	ck_assert_int_gt(eosd_holder_exec(h, 4, &x, &err), 0);
	ht_wait(h, EOSD_HOLDER_STARTED, &ev);
	sleeper = ht_pidfd(ev.shell_pid);
	eosd_holder_event_release(&ev);
	ht_wait(h, EOSD_HOLDER_EXITED, &ev);
	ck_assert_int_eq(ev.how, EOSD_HOLDER_EXIT_LOST);
	ht_wait(h, EOSD_HOLDER_GONE, &ev);
	ck_assert(ev.lost);
	ck_assert(!ht_pidfd_ended(sleeper));
	ck_assert_int_gt(eosd_holder_shutdown(h, 0, &err), 0);
	ht_wait(h, EOSD_HOLDER_BYE, &ev);
	ht_wait_pidfd(sleeper);
	eosd_holder_free(h);
}
END_TEST

START_TEST(exec_failures)
{
	char *view = ht_view();
	char link[512];
	struct eosd_holder *h = open_ns(view);
	struct eosd_holder_exec x = ht_exec("pwd");
	struct eos_error err = { 0 };
	struct ht_result r;

	x.cwd = "missing";
	ht_run(h, 1, &x, NULL, &r);
	ck_assert(r.failed);
	ck_assert_int_eq(r.error, -ENOENT);
	ck_assert_str_eq(r.message, "chdir 'missing': No such file or directory");
	/* a symlink out of the workspace is not followed */
	snprintf(link, sizeof(link), "%s/out", view);
	ck_assert_int_eq(symlink("/etc", link), 0);
	x.cwd = "out";
	ht_run(h, 1, &x, NULL, &r);
	ck_assert_msg(r.failed && r.error == -EXDEV, "%s", r.message);
	x.cwd = "../x";
	ck_assert_int_eq(eosd_holder_exec(h, 2, &x, &err), -EINVAL);
	x.cwd = NULL;
	x.cmd = "";
	ck_assert_int_eq(eosd_holder_exec(h, 2, &x, &err), -EINVAL);
	x.cmd = "pwd";
	ck_assert_int_eq(eosd_holder_exec(h, 0, &x, &err), -EINVAL);
	/* the holder goes on */
	ck_assert_int_eq(ht_sh(h, "mkdir -p sub/dir"), 0);
	x.cwd = "sub/dir";
	ht_run(h, 3, &x, NULL, &r);
	ck_assert_str_eq((char *)r.out.data, "/workspace/sub/dir\n");
	ht_result_release(&r);
	eosd_holder_free(h);
}
END_TEST

START_TEST(concurrent_commands)
{
	struct eosd_holder *h = open_ns(ht_view());
	struct eosd_holder_exec x = ht_exec("read x; echo $x");
	struct eos_error err = { 0 };
	struct eosd_holder_event ev;
	int in[2] = { -1, -1 }, out[2] = { -1, -1 };

	x.stdin_pipe = true;
	for (uint32_t id = 1; id <= 2; id++)
		ck_assert_int_gt(eosd_holder_exec(h, id, &x, &err), 0);
	/* an id in use is refused */
	ck_assert_int_gt(eosd_holder_exec(h, 1, &x, &err), 0);
	for (int started = 0; started < 2;) {
		ht_next(h, &ev);
		if (ev.kind == EOSD_HOLDER_REFUSED)
			ck_assert_int_eq(ev.error, -EEXIST);
		if (ev.kind != EOSD_HOLDER_STARTED)
			continue;
		in[ev.cmd - 1] = ev.fd_stdin;
		out[ev.cmd - 1] = ev.fd_stdout;
		started++;
	}
	ck_assert_int_eq(write(in[1], "two\n", 4), 4);
	ck_assert_int_eq(write(in[0], "one\n", 4), 4);
	for (int i = 0; i < 2; i++) {
		struct eos_buf b;

		eos_buf_init(&b);
		ht_read_until(out[i], i ? "two" : "one", &b);
		eos_buf_release(&b);
	}
	for (int gone = 0; gone < 2;) {
		ht_next(h, &ev);
		gone += ev.kind == EOSD_HOLDER_GONE;
	}
	eosd_holder_free(h);
}
END_TEST

/* Raw messages straight to the holder's socket: each refused, the holder goes on. */
static void
send_raw(struct eosd_holder *h, const void *p, size_t n, int want)
{
	struct eos_buf b = { (uint8_t *)p, n, n };
	struct eos_error err = { 0 };
	struct eosd_holder_event ev;

	ck_assert_int_eq(eosd_holder_send_buf(h, &b, &err), 0);
	ht_next(h, &ev);
	ck_assert_int_eq(ev.kind, EOSD_HOLDER_REFUSED);
	ck_assert_int_eq(ev.error, want);
}

START_TEST(bad_messages_are_refused)
{
	struct eosd_holder *h = open_ns(ht_view());
	struct eos_hproto_msg m = { .type = EOS_HPROTO_EXEC, .seq = 5, .cmd = 1 };
	struct eos_buf b;
	uint8_t junk[3] = { 1, 2, 3 };
	uint8_t unknown[12] = { 200, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0 };

	send_raw(h, junk, sizeof(junk), -EBADMSG);
	send_raw(h, unknown, sizeof(unknown), -EPROTO);
	eos_buf_init(&b);
	m.u.exec.cwd = "";
	m.u.exec.cmd = "true";
	ck_assert_int_eq(eos_hproto_encode(&m, &b), 0);
	b.data[12 + 12] = 0xff; /* cwd's length: past the end */
	send_raw(h, b.data, b.len, -EBADMSG);
	b.data[12 + 12] = 1;
	b.data[12 + 16] = 'x'; /* cwd without its NUL */
	send_raw(h, b.data, b.len, -EBADMSG);
	send_raw(h, b.data, b.len - 1, -EBADMSG);
	m.type = EOS_HPROTO_BYE; /* not a request */
	ck_assert_int_eq(eos_hproto_encode(&m, &b), 0);
	send_raw(h, b.data, b.len, -EPROTO);
	eos_buf_release(&b);
	ck_assert_int_eq(ht_sh(h, "echo still here"), 0);
	ck_assert_str_eq(ht_output(), "still here\n");
	eosd_holder_free(h);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("holder");
	TCase *tc = tcase_create("commands");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, ready_namespaces);
	tcase_add_test(tc, pty_output);
	tcase_add_test(tc, pipes_output);
	tcase_add_test(tc, exit_by_signal);
	tcase_add_test(tc, stdin_pipe_and_pty);
	tcase_add_test(tc, cancel_kills_the_subtree);
	tcase_add_test(tc, signal_group_and_tree);
	tcase_add_test(tc, background_survives_the_command);
	tcase_add_test(tc, daemons_stay_below_the_subreaper);
	tcase_add_test(tc, parent_death_kills_everything);
	tcase_add_test(tc, parent_death_kills_everything_without_namespaces);
	tcase_add_test(tc, shutdown_ends_everything);
	tcase_add_test(tc, killed_holder_is_noticed);
	tcase_add_test(tc, killed_subreaper_is_reported);
	tcase_add_test(tc, exec_failures);
	tcase_add_test(tc, concurrent_commands);
	tcase_add_test(tc, bad_messages_are_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
