/* SPDX-License-Identifier: MIT */
/*
 * supervisor/holder-events: the holder's events as eosd reads them, the ready handshake, and
 * why a host refuses user namespaces (see holder-client.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "supervisor/holder-client-internal.h"
#include "supervisor/holder-client.h"

void
eosd_holder_event_release(struct eosd_holder_event *ev)
{
	if (!ev)
		return;
	int *fds[] = { &ev->fd_pty, &ev->fd_stdin, &ev->fd_stdout, &ev->fd_stderr };
	for (size_t i = 0; i < EOS_ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}

/* -1 when missing or unreadable. */
static long
read_sysctl(const char *root, const char *name)
{
	char path[512], buf[64] = "";
	cleanup_fclose FILE *f = NULL;
	char *end = NULL;
	long v;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	f = fopen(path, "re");
	if (!f || !fgets(buf, sizeof(buf), f))
		return -1;
	errno = 0;
	v = strtol(buf, &end, 10);
	return errno || end == buf ? -1 : v;
}

bool
eosd_holder_userns_explain(const char *sysctl_root, int error, char *out, size_t size)
{
	const char *none = "or create the session with isolation: none (no namespaces)";
	long clone = read_sysctl(sysctl_root, "kernel/unprivileged_userns_clone");
	long max = read_sysctl(sysctl_root, "user/max_user_namespaces");
	long aa = read_sysctl(sysctl_root, "kernel/apparmor_restrict_unprivileged_userns");

	if (error != EPERM && error != EACCES && error != ENOSPC && error != EINVAL &&
	    error != EUSERS)
		return false;
	if (max == 0)
		snprintf(
			out, size,
			"user namespaces are disabled (sysctl user.max_user_namespaces is 0); enable them with 'sysctl -w user.max_user_namespaces=15000' (and in /etc/sysctl.d/ to keep it), %s",
			none);
	else if (error == ENOSPC || error == EUSERS)
		snprintf(
			out, size,
			"the limit of user namespaces is reached (sysctl user.max_user_namespaces is %ld, or a nesting limit); raise it with 'sysctl -w user.max_user_namespaces=N', %s",
			max, none);
	else if (clone == 0 && geteuid() != 0)
		snprintf(
			out, size,
			"unprivileged user namespaces are disabled (sysctl kernel.unprivileged_userns_clone is 0); enable them with 'sysctl -w kernel.unprivileged_userns_clone=1' (and in /etc/sysctl.d/ to keep it), run eosd as root, %s",
			none);
	else if (aa == 1 && geteuid() != 0)
		snprintf(
			out, size,
			"AppArmor restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns is 1); give eos-holder an AppArmor profile that allows 'userns,' (doc/holder.md), or 'sysctl -w kernel.apparmor_restrict_unprivileged_userns=0', %s",
			none);
	else
		snprintf(
			out, size,
			"the host refuses to create user namespaces (a container's seccomp policy or a security module can forbid them); run eosd where they are allowed, %s",
			none);
	return true;
}

/* The message of a SETUP_FAILED: the holder's text, then the cause and fix where it fits. */
static void
setup_message(const struct eos_hproto_failure *f, char *out, size_t size)
{
	char why[400];
	long aa = read_sysctl("/proc/sys", "kernel/apparmor_restrict_unprivileged_userns");
	bool userns = f->step == EOS_HPROTO_STEP_USERNS || f->step == EOS_HPROTO_STEP_IDMAP ||
		      (f->step == EOS_HPROTO_STEP_MOUNT && f->error == EPERM && aa == 1);

	if (userns && eosd_holder_userns_explain("/proc/sys", f->error, why, sizeof(why)))
		snprintf(out, size, "eos-holder: %s: %s", f->text, why);
	else
		snprintf(out, size, "eos-holder: %s", f->text);
}

static void
take_started(const struct eos_hproto_msg *m, struct eos_hproto_anc *anc,
	     struct eosd_holder_event *ev)
{
	ev->subreaper_pid = (pid_t)m->u.started.subreaper_pid;
	ev->shell_pid = (pid_t)m->u.started.shell_pid;
	ev->subreaper_nspid = (pid_t)m->u.started.subreaper_nspid;
	ev->shell_nspid = (pid_t)m->u.started.shell_nspid;
	if (anc->n_fds == 1) {
		ev->fd_pty = anc->fds[0];
	} else {
		size_t i = 0;

		if (anc->n_fds == 3)
			ev->fd_stdin = anc->fds[i++];
		ev->fd_stdout = anc->fds[i++];
		ev->fd_stderr = anc->fds[i];
	}
	anc->n_fds = 0;
}

static void
take_proc(const struct eos_hproto_proc *p, struct eosd_holder_proc *q)
{
	q->pid = (pid_t)p->pid;
	q->nspid = (pid_t)p->nspid;
	q->ppid = (pid_t)p->ppid;
	q->pgid = (pid_t)p->pgid;
	q->sid = (pid_t)p->sid;
	q->state = (char)p->state;
	snprintf(q->comm, sizeof(q->comm), "%s", p->comm);
	snprintf(q->cmdline, sizeof(q->cmdline), "%s", p->cmdline);
}

/* Fill ev from a decoded message; -EBADMSG when it is not one eosd may receive. */
static int
to_event(struct eosd_holder *h, const struct eos_hproto_msg *m, struct eos_hproto_anc *anc,
	 struct eosd_holder_event *ev)
{
	static const struct {
		enum eos_hproto_type type;
		enum eosd_holder_event_kind kind;
	} map[] = {
		{ EOS_HPROTO_READY, EOSD_HOLDER_READY },
		{ EOS_HPROTO_SETUP_FAILED, EOSD_HOLDER_SETUP_FAILED },
		{ EOS_HPROTO_STARTED, EOSD_HOLDER_STARTED },
		{ EOS_HPROTO_EXEC_FAILED, EOSD_HOLDER_EXEC_FAILED },
		{ EOS_HPROTO_EXITED, EOSD_HOLDER_EXITED },
		{ EOS_HPROTO_GONE, EOSD_HOLDER_GONE },
		{ EOS_HPROTO_PROC, EOSD_HOLDER_PROC },
		{ EOS_HPROTO_PROC_END, EOSD_HOLDER_PROC_END },
		{ EOS_HPROTO_REFUSED, EOSD_HOLDER_REFUSED },
		{ EOS_HPROTO_BYE, EOSD_HOLDER_BYE },
		{ EOS_HPROTO_ABORTED, EOSD_HOLDER_ABORTED },
	};
	size_t i = 0;

	while (i < EOS_ARRAY_SIZE(map) && map[i].type != m->type)
		i++;
	if (i == EOS_ARRAY_SIZE(map))
		return -EBADMSG;
	ev->kind = map[i].kind;
	ev->cmd = m->cmd;
	ev->seq = m->seq;
	switch (ev->kind) {
	case EOSD_HOLDER_READY:
		if (m->u.ready.version != EOS_HPROTO_VERSION)
			return -EBADMSG;
		ev->init_pid = h->init_pid = (pid_t)m->u.ready.init_pid;
		h->ready = true;
		break;
	case EOSD_HOLDER_SETUP_FAILED:
		setup_message(&m->u.failure, ev->message, sizeof(ev->message));
		ev->error = -m->u.failure.error;
		break;
	case EOSD_HOLDER_EXEC_FAILED:
	case EOSD_HOLDER_REFUSED:
	case EOSD_HOLDER_ABORTED:
		snprintf(ev->message, sizeof(ev->message), "%s", m->u.failure.text);
		ev->error = -m->u.failure.error;
		break;
	case EOSD_HOLDER_STARTED:
		if (anc->n_fds != m->u.started.n_fds || anc->n_fds < 1)
			return -EBADMSG;
		take_started(m, anc, ev);
		break;
	case EOSD_HOLDER_EXITED:
		ev->how = m->u.exited.how == EOS_HPROTO_EXIT_SIGNAL ? EOSD_HOLDER_EXIT_SIGNAL
			  : m->u.exited.how == EOS_HPROTO_EXIT_LOST ? EOSD_HOLDER_EXIT_LOST
								    : EOSD_HOLDER_EXIT_CODE;
		ev->code = (int)m->u.exited.code;
		ev->core = m->u.exited.core;
		break;
	case EOSD_HOLDER_GONE:
		ev->lost = m->u.gone.lost;
		break;
	case EOSD_HOLDER_PROC:
		take_proc(&m->u.proc, &ev->proc);
		break;
	case EOSD_HOLDER_PROC_END:
	case EOSD_HOLDER_BYE:
	case EOSD_HOLDER_DIED:
		break;
	}
	return anc->n_fds > 0 ? -EBADMSG : 0;
}

static void
died(struct eosd_holder *h, struct eosd_holder_event *ev)
{
	int st;

	eosd_holder_reap(h);
	st = h->status;
	ev->kind = EOSD_HOLDER_DIED;
	ev->status = st;
	if (WIFSIGNALED(st))
		snprintf(ev->message, sizeof(ev->message),
			 "eos-holder (pid %d) was killed by signal %d", (int)h->pid, WTERMSIG(st));
	else
		snprintf(ev->message, sizeof(ev->message),
			 "eos-holder (pid %d) exited with status %d", (int)h->pid, WEXITSTATUS(st));
}

int
eosd_holder_next(struct eosd_holder *h, struct eosd_holder_event *ev, struct eos_error *err)
{
	struct eos_hproto_anc anc;
	struct eos_hproto_msg m;
	size_t n = 0;
	int r;

	*ev = (struct eosd_holder_event){
		.fd_pty = -1, .fd_stdin = -1, .fd_stdout = -1, .fd_stderr = -1
	};
	if (h->reaped)
		return eos_error_set(err, -ESRCH, "eos-holder (pid %d) has exited", (int)h->pid);
	r = eos_hproto_recv(h->sock, h->rbuf, EOS_HPROTO_MSG_MAX + 1, &n, &anc);
	if (r == -EAGAIN || r == -EINTR)
		return -EAGAIN;
	if (r == -ECONNRESET || (r == 0 && n == 0)) {
		died(h, ev);
		return 0;
	}
	if (r < 0)
		return eos_error_set(err, r, "read from eos-holder: %s", strerror(-r));
	r = eos_hproto_decode(h->rbuf, n, &m);
	if (r == 0)
		r = to_event(h, &m, &anc, ev);
	if (r < 0) {
		eos_hproto_anc_close(&anc);
		eosd_holder_event_release(ev);
		return eos_error_set(err, -EBADMSG, "eos-holder (pid %d) broke the protocol",
				     (int)h->pid);
	}
	return 0;
}

static int
remaining_ms(const struct timespec *end)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (end->tv_sec - now.tv_sec) * 1000LL + (end->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms > 3600000 ? 3600000 : (int)ms;
}

/* What the first event says about readiness: 0 ready, -EAGAIN keep waiting, or the error. */
static int
ready_answer(struct eosd_holder_event *ev, struct eos_error *err)
{
	switch (ev->kind) {
	case EOSD_HOLDER_READY:
		return 0;
	case EOSD_HOLDER_SETUP_FAILED:
		return eos_error_set(err, ev->error, "%s", ev->message);
	case EOSD_HOLDER_DIED:
		return eos_error_set(err, -ECHILD, "%s before it was ready", ev->message);
	case EOSD_HOLDER_STARTED:
	case EOSD_HOLDER_EXEC_FAILED:
	case EOSD_HOLDER_EXITED:
	case EOSD_HOLDER_GONE:
	case EOSD_HOLDER_PROC:
	case EOSD_HOLDER_PROC_END:
	case EOSD_HOLDER_REFUSED:
	case EOSD_HOLDER_BYE:
	case EOSD_HOLDER_ABORTED:
		break;
	}
	return eos_error_set(err, -EBADMSG, "eos-holder answered its plan with event %d",
			     (int)ev->kind);
}

int
eosd_holder_wait_ready(struct eosd_holder *h, int timeout_ms, struct eos_error *err)
{
	struct timespec end;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_ms / 1000;
	end.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		struct pollfd pfd = { h->sock, POLLIN, 0 };
		struct eosd_holder_event ev;

		r = poll(&pfd, 1, remaining_ms(&end));
		if (r < 0 && errno != EINTR)
			return eos_error_set(err, eos_neg_errno(), "poll: %m");
		if (r == 0)
			return eos_error_set(err, -ETIMEDOUT,
					     "eos-holder (pid %d) not ready after %d ms",
					     (int)h->pid, timeout_ms);
		r = eosd_holder_next(h, &ev, err);
		if (r == -EAGAIN)
			continue;
		if (r < 0)
			return r;
		r = ready_answer(&ev, err);
		eosd_holder_event_release(&ev);
		return r;
	}
}
