/* SPDX-License-Identifier: MIT */
/* supervisor/holder-client: spawning eos-holder and its requests (see holder-client.h). */
#include "supervisor/holder-client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "supervisor/holder-client-internal.h"

#ifndef EOS_LIBEXECDIR
#define EOS_LIBEXECDIR "/usr/local/libexec"
#endif

enum {
	SEND_WAIT_MS = 1000
};

const char *
eosd_holder_default_path(void)
{
	const char *env = getenv("EOS_HOLDER");

	return env && env[0] ? env : EOS_LIBEXECDIR "/eos-holder";
}

int
eosd_holder_fd(const struct eosd_holder *h)
{
	return h->sock;
}

pid_t
eosd_holder_pid(const struct eosd_holder *h)
{
	return h->pid;
}

pid_t
eosd_holder_init_pid(const struct eosd_holder *h)
{
	return h->init_pid;
}

void
eosd_holder_reap(struct eosd_holder *h)
{
	int st = 0;

	if (h->reaped || h->pid <= 0)
		return;
	while (waitpid(h->pid, &st, 0) < 0 && errno == EINTR)
		;
	h->status = st;
	h->reaped = true;
}

void
eosd_holder_free(struct eosd_holder *h)
{
	if (!h)
		return;
	if (!h->reaped && h->pid > 0)
		kill(h->pid, SIGKILL);
	eosd_holder_reap(h);
	if (h->sock >= 0)
		close(h->sock);
	eos_buf_release(&h->out);
	free(h->rbuf);
	free(h);
}

int
eosd_holder_send_buf(struct eosd_holder *h, const struct eos_buf *b, struct eos_error *err)
{
	struct pollfd pfd = { h->sock, POLLOUT, 0 };
	int r;

	if (h->reaped)
		return eos_error_set(err, -EPIPE, "eos-holder (pid %d) is gone", (int)h->pid);
	r = eos_hproto_send(h->sock, b, NULL, 0, 0);
	if (r == -EAGAIN) {
		if (poll(&pfd, 1, SEND_WAIT_MS) == 0)
			return eos_error_set(err, -ETIMEDOUT, "eos-holder (pid %d) does not read",
					     (int)h->pid);
		r = eos_hproto_send(h->sock, b, NULL, 0, 0);
	}
	if (r == -EAGAIN)
		return eos_error_set(err, -ETIMEDOUT, "eos-holder (pid %d) does not read",
				     (int)h->pid);
	if (r == -EPIPE || r == -ECONNRESET)
		return eos_error_set(err, -EPIPE, "eos-holder (pid %d) is gone", (int)h->pid);
	return r < 0 ? eos_error_set(err, r, "send to eos-holder: %s", strerror(-r)) : 0;
}

/* Check, encode and send m; its seq is the result. */
static int
request(struct eosd_holder *h, struct eos_hproto_msg *m, struct eos_error *err)
{
	const char *why = NULL;
	int r;

	m->seq = h->seq = h->seq % INT32_MAX + 1;
	r = eos_hproto_check(m, &why);
	if (r < 0)
		return eos_error_set(err, -EINVAL, "eos-holder request: bad %s", why);
	r = eos_hproto_encode(m, &h->out);
	if (r == -EMSGSIZE)
		return eos_error_set(err, -E2BIG, "eos-holder request: larger than %d bytes",
				     EOS_HPROTO_MSG_MAX);
	if (r < 0)
		return r;
	r = eosd_holder_send_buf(h, &h->out, err);
	return r < 0 ? r : (int)m->seq;
}

static int
plan_msg(const struct eosd_holder_plan *p, struct eos_hproto_msg *m, struct eos_error *err)
{
	struct eos_hproto_plan *q = &m->u.plan;

	if (p->n_masks > EOS_HPROTO_MASKS_MAX)
		return eos_error_set(err, -EINVAL, "eos-holder plan: more than %d masks",
				     EOS_HPROTO_MASKS_MAX);
	m->type = EOS_HPROTO_PLAN;
	*q = (struct eos_hproto_plan){
		.version = EOS_HPROTO_VERSION,
		.isolation = p->isolation == EOSD_HOLDER_NONE ? EOS_HPROTO_ISOLATION_NONE
							      : EOS_HPROTO_ISOLATION_NAMESPACES,
		.network = p->network == EOSD_HOLDER_ISOLATED ? EOS_HPROTO_NETWORK_ISOLATED
							      : EOS_HPROTO_NETWORK_SHARED,
		.uid = (uint32_t)getuid(),
		.gid = (uint32_t)getgid(),
		.rlimit_nofile = p->rlimit_nofile,
		.rlimit_nproc = p->rlimit_nproc,
		.view = p->view,
		.hostname = p->hostname,
		.n_masks = (uint32_t)p->n_masks,
		.bpf = p->seccomp,
		.bpf_len = p->seccomp_len > UINT32_MAX ? 0 : (uint32_t)p->seccomp_len,
	};
	for (size_t i = 0; i < p->n_masks; i++)
		q->masks[i] = p->masks[i];
	return 0;
}

/* posix_spawn the holder with the child's end of the socket at fd 3. */
static int
spawn(const char *path, int child_end, pid_t *ret, struct eos_error *err)
{
	char parent[32];
	char *argv[] = { (char *)path, (char *)"--parent", parent, NULL };
	char *envp[] = { NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int r;

	snprintf(parent, sizeof(parent), "%d", (int)getpid());
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, child_end, 3);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					      POSIX_SPAWN_SETSID);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	r = posix_spawn(ret, path, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (r != 0)
		return eos_error_set(err, -r, "spawn '%s': %s", path, strerror(r));
	return 0;
}

/* A socketpair whose child end is not fd 3 (dup2 onto itself would keep O_CLOEXEC). */
static int
make_socket(int sv[2], struct eos_error *err)
{
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return eos_error_set(err, eos_neg_errno(), "socketpair: %m");
	if (sv[1] <= 3) {
		int fd = fcntl(sv[1], F_DUPFD_CLOEXEC, 4);

		close(sv[1]);
		sv[1] = fd;
		if (fd < 0) {
			close(sv[0]);
			return eos_error_set(err, eos_neg_errno(), "fcntl: %m");
		}
	}
	return 0;
}

static int
start(struct eosd_holder *h, const char *path, const struct eos_hproto_msg *plan,
      struct eos_error *err)
{
	int sv[2] = { -1, -1 };
	int r = make_socket(sv, err);

	if (r < 0)
		return r;
	h->sock = sv[0];
	r = spawn(path, sv[1], &h->pid, err);
	close(sv[1]);
	if (r < 0)
		return r;
	if (fcntl(h->sock, F_SETFL, O_NONBLOCK) < 0)
		return eos_error_set(err, eos_neg_errno(), "fcntl: %m");
	r = eos_hproto_encode(plan, &h->out);
	if (r < 0)
		return eos_error_set(err, r, "eos-holder plan: %s", strerror(-r));
	return eosd_holder_send_buf(h, &h->out, err);
}

int
eosd_holder_spawn(const char *path, const struct eosd_holder_plan *plan, struct eosd_holder **ret,
		  struct eos_error *err)
{
	struct eos_hproto_msg m = { 0 };
	struct eosd_holder *h;
	const char *why = NULL;
	int r = plan_msg(plan, &m, err);

	if (r < 0)
		return r;
	if (eos_hproto_check(&m, &why) < 0)
		return eos_error_set(err, -EINVAL, "eos-holder plan: bad %s", why);
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->sock = -1;
	eos_buf_init(&h->out);
	h->rbuf = malloc(EOS_HPROTO_MSG_MAX + 1);
	r = h->rbuf ? start(h, path, &m, err) : -ENOMEM;
	if (r < 0) {
		eosd_holder_free(h);
		return r;
	}
	*ret = h;
	return 0;
}

int
eosd_holder_exec(struct eosd_holder *h, uint32_t cmd, const struct eosd_holder_exec *x,
		 struct eos_error *err)
{
	cleanup_free struct eos_hproto_msg *m = calloc(1, sizeof(*m));
	struct eos_hproto_exec *e;

	if (!m)
		return -ENOMEM;
	if (x->n_env > EOS_HPROTO_ENV_MAX)
		return eos_error_set(err, -E2BIG, "exec: more than %d variables",
				     EOS_HPROTO_ENV_MAX);
	m->type = EOS_HPROTO_EXEC;
	m->cmd = cmd;
	e = &m->u.exec;
	e->flags = (x->tty ? EOS_HPROTO_EXEC_TTY : 0) |
		   (x->stdin_pipe && !x->tty ? EOS_HPROTO_EXEC_STDIN : 0);
	e->rows = x->rows;
	e->cols = x->cols;
	e->cwd = x->cwd ? x->cwd : "";
	e->cmd = x->cmd;
	e->n_env = (uint32_t)x->n_env;
	for (size_t i = 0; i < x->n_env; i++)
		e->env[i] = x->env[i];
	return request(h, m, err);
}

int
eosd_holder_signal(struct eosd_holder *h, uint32_t cmd, int sig, bool tree, struct eos_error *err)
{
	struct eos_hproto_msg m = { .type = EOS_HPROTO_SIGNAL, .cmd = cmd };

	m.u.signal.signo = sig > 0 ? (uint32_t)sig : 0;
	m.u.signal.scope = tree ? EOS_HPROTO_SCOPE_TREE : EOS_HPROTO_SCOPE_GROUP;
	return request(h, &m, err);
}

int
eosd_holder_terminate(struct eosd_holder *h, uint32_t cmd, uint32_t grace_ms, struct eos_error *err)
{
	struct eos_hproto_msg m = { .type = EOS_HPROTO_TERMINATE, .cmd = cmd };

	m.u.terminate.grace_ms = grace_ms;
	return request(h, &m, err);
}

int
eosd_holder_list(struct eosd_holder *h, uint32_t cmd, struct eos_error *err)
{
	struct eos_hproto_msg m = { .type = EOS_HPROTO_LIST, .cmd = cmd };

	return request(h, &m, err);
}

int
eosd_holder_shutdown(struct eosd_holder *h, uint32_t grace_ms, struct eos_error *err)
{
	struct eos_hproto_msg m = { .type = EOS_HPROTO_SHUTDOWN };

	m.u.terminate.grace_ms = grace_ms;
	return request(h, &m, err);
}
