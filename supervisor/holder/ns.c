/* SPDX-License-Identifier: MIT */
/*
 * supervisor/holder/ns: the session's namespaces and its init.
 *
 * The holder unshares user, mount, pid, ipc, uts (and net) in one call — the user namespace is
 * created first and owns the others — maps 0 inside to its own uid and gid (setgroups denied),
 * then forks init, the first process of the new pid namespace. Init builds the root (a fresh
 * /proc must be mounted by a process of the pid namespace it shows), pivots into it and hands
 * the holder an O_PATH fd of the new root, into which the holder chroots: the holder's own root
 * is then the session's whatever pivot_root(2) did to it, and every command it forks starts
 * there. Init then only reaps orphans, and SIGTERMs the whole namespace when the holder asks.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "supervisor/holder/holder.h"

static int
write_file(const char *path, const char *text)
{
	cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t n = strlen(text);

	if (fd < 0)
		return -errno;
	if (write(fd, text, n) != (ssize_t)n)
		return errno ? -errno : -EIO;
	return 0;
}

static int
map_ids(const struct holder *h, struct holder_failure *f)
{
	char line[64];
	int r;

	snprintf(line, sizeof(line), "0 %u 1\n", h->plan.uid);
	r = write_file("/proc/self/uid_map", line);
	if (r < 0)
		return holder_fail(f, -r, EOS_HPROTO_STEP_IDMAP, "write uid_map");
	r = write_file("/proc/self/setgroups", "deny");
	if (r < 0)
		return holder_fail(f, -r, EOS_HPROTO_STEP_IDMAP, "write setgroups");
	snprintf(line, sizeof(line), "0 %u 1\n", h->plan.gid);
	r = write_file("/proc/self/gid_map", line);
	if (r < 0)
		return holder_fail(f, -r, EOS_HPROTO_STEP_IDMAP, "write gid_map");
	return 0;
}

/* The init loop: reap, SIGTERM everything when the holder (outside, pid 0 here) asks. */
static void __attribute__((noreturn)) init_serve(int sock)
{
	sigset_t set;
	int sfd;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		_exit(1);
	for (;;) {
		struct pollfd pfd[2] = { { sfd, POLLIN, 0 }, { sock, POLLIN, 0 } };
		struct signalfd_siginfo si;

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			_exit(1);
		if (pfd[1].revents)
			_exit(0); /* the holder is gone (PR_SET_PDEATHSIG kills us too) */
		while (read(sfd, &si, sizeof(si)) == sizeof(si))
			/* from inside the namespace the sender has a pid: ignore it */
			if (si.ssi_signo == SIGTERM && si.ssi_pid == 0)
				kill(-1, SIGTERM);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
}

/* Init: build the root, hand it over, serve. Never returns. */
static void __attribute__((noreturn))
init_main(struct holder *h, struct holder_rootfs *rf, int sock)
{
	struct holder_failure f = { 0 };
	struct eos_hproto_msg m = { .type = EOS_HPROTO_READY };
	struct pollfd pfd = { sock, POLLIN, 0 };
	int root;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || poll(&pfd, 1, 0) != 0)
		_exit(1); /* the holder died before PR_SET_PDEATHSIG held */
	if (holder_rootfs_run(rf, &f) < 0) {
		holder_send_failure(h, sock, EOS_HPROTO_SETUP_FAILED, 0, 0, &f);
		_exit(1);
	}
	root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		holder_fail(&f, errno, EOS_HPROTO_STEP_MOUNT, "open the new root");
		holder_send_failure(h, sock, EOS_HPROTO_SETUP_FAILED, 0, 0, &f);
		_exit(1);
	}
	m.u.ready.version = EOS_HPROTO_VERSION;
	m.u.ready.isolation = EOS_HPROTO_ISOLATION_NAMESPACES;
	if (holder_send(h, sock, &m, &root, 1, 0) < 0)
		_exit(1);
	close(root);
	int keep[] = { sock };
	if (holder_keep_fds(keep, 1) < 0)
		_exit(1);
	init_serve(keep[0]);
}

/* Wait for init's answer; on READY chroot into the root it sends. */
static int
await_init(struct holder *h, struct holder_failure *f)
{
	struct eos_hproto_anc anc;
	struct eos_hproto_msg m;
	size_t n = 0;
	int r = eos_hproto_recv(h->init_sock, holder_rbuf, sizeof(holder_rbuf), &n, &anc);

	if (r < 0)
		return holder_fail(f, -r, EOS_HPROTO_STEP_MOUNT, "read init's answer");
	if (n == 0)
		return holder_fail(f, ECHILD, EOS_HPROTO_STEP_MOUNT, "init exited during setup");
	r = eos_hproto_decode(holder_rbuf, n, &m);
	if (r == 0 && m.type == EOS_HPROTO_SETUP_FAILED) {
		eos_hproto_anc_close(&anc);
		f->error = m.u.failure.error;
		f->step = m.u.failure.step;
		snprintf(f->text, sizeof(f->text), "%s", m.u.failure.text);
		return -f->error;
	}
	if (r < 0 || m.type != EOS_HPROTO_READY || anc.n_fds != 1) {
		eos_hproto_anc_close(&anc);
		return holder_fail(f, EPROTO, EOS_HPROTO_STEP_MOUNT, "init's answer");
	}
	r = fchdir(anc.fds[0]) < 0 || chroot(".") < 0 || chdir("/") < 0 ? -errno : 0;
	eos_hproto_anc_close(&anc);
	if (r < 0)
		return holder_fail(f, -r, EOS_HPROTO_STEP_MOUNT, "enter the new root");
	return 0;
}

static int
fork_init(struct holder *h, struct holder_rootfs *rf, struct holder_failure *f)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return holder_fail(f, errno, 0, "socketpair");
	/* pivot_root moves the root and cwd of every process that uses the old root */
	if (chdir("/") < 0)
		return holder_fail(f, errno, 0, "chdir '/'");
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return holder_fail(f, errno, 0, "fork init");
	}
	if (pid == 0) {
		close(sv[0]);
		init_main(h, rf, sv[1]);
	}
	close(sv[1]);
	h->init_pid = pid;
	h->init_sock = sv[0];
	return await_init(h, f);
}

int
holder_ns_setup(struct holder *h, struct holder_failure *f)
{
	struct holder_rootfs *rf = NULL;
	int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
	int r;

	if (h->plan.network == EOS_HPROTO_NETWORK_ISOLATED)
		flags |= CLONE_NEWNET;
	r = holder_rootfs_plan(h, &rf, f);
	if (r < 0)
		return r;
	if (unshare(flags) < 0) {
		r = holder_fail(f, errno, EOS_HPROTO_STEP_USERNS,
				"create the namespaces (unshare)");
		holder_rootfs_free(rf);
		return r;
	}
	/* credentials changed: make sure the parent-death signal still holds */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != h->parent) {
		holder_rootfs_free(rf);
		return holder_fail(f, ESRCH, 0, "eosd exited");
	}
	r = map_ids(h, f);
	if (r == 0)
		r = fork_init(h, rf, f);
	holder_rootfs_free(rf);
	return r;
}

bool
holder_ns_reap(struct holder *h, pid_t pid, int status)
{
	if (h->init_pid <= 0 || pid != h->init_pid)
		return false;
	h->init_reaped = true;
	h->init_status = status;
	return true;
}
