/* SPDX-License-Identifier: MIT */
/*
 * supervisor/commands: the engine thread and the sessions' holders (supervisor/commands.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "common/path.h"

#include "supervisor/cgroup.h"
#include "supervisor/commands-internal.h"
#include "supervisor/obs.h"
#include "supervisor/ops.h"
#include "supervisor/seccomp.h"
#include "supervisor/session.h"

enum {
	TAG_WAKE = 1,
	TAG_HOLDER = 2,
	TAG_OUTPUT = 3
};

#define TAG(t, fd) (((uint64_t)(t) << 32) | (uint32_t)(fd))

void
cmds_wake(struct eosd_commands *c)
{
	uint64_t one = 1;

	(void)!write(c->wakefd, &one, sizeof(one));
}

int
cmds_watch(struct eosd_commands *c, int fd, uint64_t data)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = data };

	return epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

void
cmds_unwatch(struct eosd_commands *c, int fd)
{
	if (fd >= 0)
		(void)epoll_ctl(c->epfd, EPOLL_CTL_DEL, fd, NULL);
}

struct ns *
ns_find(struct eosd_commands *c, const char *sandbox, const char *session)
{
	for (struct ns *n = c->nss; n; n = n->next)
		if (!strcmp(n->sandbox, sandbox) && !strcmp(n->session, session))
			return n;
	return NULL;
}

static struct ns *
ns_by_fd(struct eosd_commands *c, int fd)
{
	for (struct ns *n = c->nss; n; n = n->next)
		if (n->h && eosd_holder_fd(n->h) == fd)
			return n;
	return NULL;
}

/* --- options kept beside a session ------------------------------------------------------------ */

static char *
opts_path(struct eosd_commands *c, const char *sandbox, const char *session)
{
	char *p = NULL;

	if (asprintf(&p, "%s/sessions/%s.%s.json", c->dir, sandbox, session) < 0)
		return NULL;
	return p;
}

static void
opts_save(struct eosd_commands *c, const char *sandbox, const char *session,
	  const struct eosd_ns_opts *o)
{
	cleanup_free char *p = opts_path(c, sandbox, session), *tmp = NULL;
	EOS_CLEANUP(json_decrefp)
	json_t *doc = json_pack("{s:s,s:s,s:b}", "isolation",
				o->isolation == EOSD_HOLDER_NONE ? "none" : "namespaces", "network",
				o->network == EOSD_HOLDER_ISOLATED ? "isolated" : "shared",
				"implicit", o->implicit);

	if (!p || !doc || asprintf(&tmp, "%s.tmp", p) < 0)
		return;
	if (json_dump_file(doc, tmp, JSON_COMPACT) < 0 || rename(tmp, p) < 0)
		eos_log_error("eosd: cannot keep the options of session '%s': %m", session);
}

static void
opts_load(struct eosd_commands *c, const char *sandbox, const char *session, struct eosd_ns_opts *o)
{
	cleanup_free char *p = opts_path(c, sandbox, session);
	EOS_CLEANUP(json_decrefp) json_t *doc = p ? json_load_file(p, 0, NULL) : NULL;
	const char *iso = json_string_value(json_object_get(doc, "isolation"));
	const char *net = json_string_value(json_object_get(doc, "network"));

	*o = (struct eosd_ns_opts){ 0 };
	o->isolation = iso && !strcmp(iso, "none") ? EOSD_HOLDER_NONE : EOSD_HOLDER_NAMESPACES;
	o->network = net && !strcmp(net, "isolated") ? EOSD_HOLDER_ISOLATED : EOSD_HOLDER_SHARED;
	o->implicit = json_is_true(json_object_get(doc, "implicit"));
}

/* --- holders ---------------------------------------------------------------------------------- */

/* The engine's turn: spawn what was asked (this thread lives as long as eosd). */
static void
spawn_wanted(struct eosd_commands *c)
{
	for (struct ns *n = c->nss; n; n = n->next) {
		struct eos_error err = { 0 };
		const char *masks[2] = { c->masks[0], c->masks[1] };
		struct eosd_holder_plan p = {
			.isolation = n->o.isolation,
			.network = n->o.network,
			.view = n->view_path,
			.hostname = "eos",
			.masks = masks,
			.n_masks = 2,
			.seccomp = c->bpf,
			.seccomp_len = c->bpf_len,
			.rlimit_nofile = 65536,
			.rlimit_nproc = 4096, /* counted in the session's user namespace */
		};

		if (!n->want_spawn)
			continue;
		n->want_spawn = false;
		if (eosd_holder_spawn(c->holder_path, &p, &n->h, &err) < 0 ||
		    cmds_watch(c, eosd_holder_fd(n->h), TAG(TAG_HOLDER, eosd_holder_fd(n->h))) <
			    0) {
			eosd_holder_free(n->h);
			n->h = NULL;
			n->state = NS_FAILED;
			snprintf(n->error, sizeof(n->error), "cannot start eos-holder '%s': %s",
				 c->holder_path, err.msg[0] ? err.msg : strerror(errno));
			continue;
		}
		n->pid = eosd_holder_pid(n->h);
		n->ready_by_ns = eos_mono_ns() + (int64_t)EOSD_HOLDER_READY_MS * 1000000;
		if (c->d->cgroups) {
			struct eosd_cgroup *g = NULL;

			if (eosd_cgroup_create(c->d->cgroups, n->sandbox, n->session, &g, NULL) ==
			    0)
				(void)eosd_cgroup_attach(g, n->pid, NULL);
		}
	}
}

static void
holder_gone(struct eosd_commands *c, struct ns *n, const char *why)
{
	cmds_unwatch(c, eosd_holder_fd(n->h));
	eosd_holder_free(n->h);
	n->h = NULL;
	cmd_holder_lost(c, n);
	if (n->state == NS_STOPPING)
		return;
	if (n->state == NS_STARTING)
		n->state = NS_FAILED;
	else if (n->state == NS_READY) {
		n->state = NS_EXITED;
		eosd_obs_event(c->d->obs, "workspace_session.holder_exited", n->sandbox, n->session,
			       json_pack("{s:s}", "reason", why));
	}
	if (!n->error[0])
		snprintf(n->error, sizeof(n->error), "the session's holder (pid %d) %s",
			 (int)n->pid, why);
}

static void
on_ns_event(struct eosd_commands *c, struct ns *n, struct eosd_holder_event *ev)
{
	struct cmd *x;

	switch (ev->kind) {
	case EOSD_HOLDER_READY:
		n->state = NS_READY;
		break;
	case EOSD_HOLDER_SETUP_FAILED:
		n->state = NS_FAILED;
		snprintf(n->error, sizeof(n->error), "the session's namespace: %s", ev->message);
		break;
	case EOSD_HOLDER_PROC: {
		char state[2] = { ev->proc.state, '\0' };

		if (n->procs)
			eos_json_push(n->procs,
				      json_pack("{s:i,s:i,s:i,s:i,s:s,s:s,s:s}", "pid",
						(int)ev->proc.nspid, "host_pid", (int)ev->proc.pid,
						"ppid", (int)ev->proc.ppid, "pgid",
						(int)ev->proc.pgid, "state", state, "comm",
						ev->proc.comm, "cmdline", ev->proc.cmdline));
		break;
	}
	case EOSD_HOLDER_PROC_END:
		n->listing = false;
		break;
	case EOSD_HOLDER_ABORTED:
		snprintf(n->error, sizeof(n->error), "the session's holder gave up: %s",
			 ev->message);
		break;
	case EOSD_HOLDER_REFUSED:
		if (n->listing && ev->seq)
			n->listing = false;
		eos_log_error("eosd: holder of session '%s' refused a request: %s", n->session,
			      ev->message);
		break;
	case EOSD_HOLDER_STARTED:
	case EOSD_HOLDER_EXEC_FAILED:
	case EOSD_HOLDER_EXITED:
	case EOSD_HOLDER_GONE:
		if ((x = cmd_by_hid(c, ev->cmd)) && x->ns == n)
			cmd_on_event(c, x, ev);
		break;
	case EOSD_HOLDER_BYE:
	case EOSD_HOLDER_DIED: /* DIED: read_holder() */
		break;
	}
}

static void
read_holder(struct eosd_commands *c, struct ns *n)
{
	for (;;) {
		struct eosd_holder_event ev = {
			.fd_pty = -1, .fd_stdin = -1, .fd_stdout = -1, .fd_stderr = -1
		};
		struct eos_error err = { 0 };
		int r = eosd_holder_next(n->h, &ev, &err);

		if (r == -EAGAIN)
			return;
		if (r < 0 || ev.kind == EOSD_HOLDER_DIED) {
			eosd_holder_event_release(&ev);
			holder_gone(c, n, r < 0 ? "broke the protocol" : "exited");
			return;
		}
		on_ns_event(c, n, &ev);
		eosd_holder_event_release(&ev);
	}
}

/* Holders past their ready deadline fail; returns the nearest deadline left (0: none). */
static int64_t
ready_deadlines(struct eosd_commands *c, int64_t now)
{
	int64_t next = 0;

	for (struct ns *n = c->nss; n; n = n->next) {
		if (n->state != NS_STARTING || !n->h)
			continue;
		if (now >= n->ready_by_ns) {
			snprintf(n->error, sizeof(n->error),
				 "the session's holder was not ready after %d ms",
				 EOSD_HOLDER_READY_MS);
			holder_gone(c, n, "was not ready in time");
			continue;
		}
		if (!next || n->ready_by_ns < next)
			next = n->ready_by_ns;
	}
	return next;
}

/* The earlier of two deadlines (0: none). */
static int64_t
earliest(int64_t a, int64_t b)
{
	return a && b ? EOS_MIN(a, b) : a ? a : b;
}

static void *
engine(void *arg)
{
	struct eosd_commands *c = arg;
	struct epoll_event evs[32];

	pthread_mutex_lock(&c->lock);
	while (!c->quit) {
		int64_t now = eos_mono_ns();
		struct waiter *done = NULL;
		int64_t t1 = ready_deadlines(c, now), t2 = cmds_timeouts(c, now);
		int64_t t3 = cmds_waiters(c, now, &done);
		int64_t next = earliest(earliest(t1, t2), t3);
		int timeout = next ? (int)EOS_MIN((next - now) / 1000000 + 1, INT_MAX) : -1;

		/* deferred replies go out as soon as eosd stops (SIGTERM sets d->stopping) */
		if (c->waiters && (timeout < 0 || timeout > 100))
			timeout = 100;
		int n;

		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		cmds_waiters_finish(done);
		n = done ? 0 : epoll_wait(c->epfd, evs, EOS_ARRAY_SIZE(evs), timeout);
		pthread_mutex_lock(&c->lock);
		for (int i = 0; i < n; i++) {
			int tag = (int)(evs[i].data.u64 >> 32), fd = (int)(uint32_t)evs[i].data.u64;
			struct ns *ns;

			if (tag == TAG_WAKE) {
				uint64_t v;
				(void)!read(c->wakefd, &v, sizeof(v));
			} else if (tag == TAG_HOLDER && (ns = ns_by_fd(c, fd))) {
				read_holder(c, ns);
			} else if (tag == TAG_OUTPUT) {
				for (struct cmd *x = c->cmds; x; x = x->next)
					if (x->fd_out == fd || x->fd_err == fd) {
						cmd_on_output(c, x, fd);
						break;
					}
			}
		}
		spawn_wanted(c);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* --- start, stop ------------------------------------------------------------------------------ */

/* $EOS_HOLDER, else beside eosd in a build tree (holder/eos-holder), else libexec. */
static const char *
holder_path(void)
{
	static char buf[PATH_MAX + 32];
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (getenv("EOS_HOLDER") && getenv("EOS_HOLDER")[0])
		return getenv("EOS_HOLDER");
	if (access(eosd_holder_default_path(), X_OK) == 0)
		return eosd_holder_default_path();
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		if ((slash = strrchr(exe, '/'))) {
			*slash = '\0';
			snprintf(buf, sizeof(buf), "%s/holder/eos-holder", exe);
			if (access(buf, X_OK) == 0)
				return buf;
		}
	}
	return eosd_holder_default_path();
}

int
eosd_commands_new(struct eosd *d, unsigned keep, struct eosd_commands **ret, struct eos_error *err)
{
	struct eosd_commands *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return eos_error_set(err, -ENOMEM, "out of memory");
	c->d = d;
	c->keep = keep ? keep : EOSD_TRANSCRIPTS_DEFAULT;
	c->epfd = c->wakefd = -1;
	c->next_hid = 1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->pidlock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->holder_path = holder_path();
	c->masks[0] = realpath(d->state_dir, NULL);
	c->masks[1] = realpath(d->runtime_dir, NULL);
	r = eosd_seccomp_build(&c->bpf, &c->bpf_len, err);
	if (r == 0 && (!c->masks[0] || !c->masks[1]))
		r = eos_error_set(err, -errno, "resolve eosd's state and runtime directories: %m");
	if (r == 0 && asprintf(&c->dir, "%s/commands", d->state_dir) < 0)
		r = eos_error_set(err, -ENOMEM, "out of memory");
	r = r ?: store_open(c, err);
	if (r == 0 && ((c->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
		       (c->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0))
		r = eos_error_set(err, -errno, "epoll: %m");
	if (r == 0 && cmds_watch(c, c->wakefd, TAG(TAG_WAKE, c->wakefd)) < 0)
		r = eos_error_set(err, -errno, "epoll: %m");
	if (r == 0 && (r = -pthread_create(&c->thread, NULL, engine, c)) < 0)
		eos_error_set(err, r, "start the command engine: %s", strerror(-r));
	c->started = r == 0;
	if (r < 0) {
		eosd_commands_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

static bool
no_waiters(void *ctx)
{
	return ((struct eosd_commands *)ctx)->waiters == NULL;
}

void
eosd_commands_quiesce(struct eosd_commands *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->quiesced = true;
	cmds_wake(c);
	cmds_wait_until(c, no_waiters, c, eos_mono_ns() + 5000000000LL);
	pthread_mutex_unlock(&c->lock);
}

/* Ask n's holder to end everything and wait (bounded) for it to go. Lock held. */
static void
ns_end_locked(struct eosd_commands *c, struct ns *n)
{
	int64_t until = eos_mono_ns() + (int64_t)(EOSD_SHUTDOWN_GRACE_MS + 2000) * 1000000;

	n->state = NS_STOPPING;
	n->want_spawn = false;
	if (n->h)
		(void)eosd_holder_shutdown(n->h, EOSD_SHUTDOWN_GRACE_MS, NULL);
	while (n->h && c->started && eos_mono_ns() < until) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	}
	if (n->h) /* SIGKILL: its namespace dies with it */
		holder_gone(c, n, "was killed");
}

static void
ns_unlink(struct eosd_commands *c, struct ns *n)
{
	for (struct ns **p = &c->nss; *p; p = &(*p)->next)
		if (*p == n) {
			*p = n->next;
			break;
		}
	json_decref(n->procs);
	free(n->view_path);
	free(n);
}

void
eosd_commands_free(struct eosd_commands *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	while (c->nss) {
		ns_end_locked(c, c->nss);
		ns_unlink(c, c->nss);
	}
	c->quit = true;
	pthread_mutex_unlock(&c->lock);
	if (c->started) {
		cmds_wake(c);
		pthread_join(c->thread, NULL);
	}
	while (c->cmds) {
		struct cmd *x = c->cmds;

		c->cmds = x->next;
		cmd_close_fds(c, x);
		if (x->fd_log >= 0)
			close(x->fd_log);
		json_decref(x->publish);
		free(x->cmdline);
		free(x);
	}
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->wakefd >= 0)
		close(c->wakefd);
	free(c->bpf);
	free(c->dir);
	free(c->masks[0]);
	free(c->masks[1]);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->pidlock);
	pthread_cond_destroy(&c->cond);
	free(c);
}

void
cmds_wait_until(struct eosd_commands *c, bool (*pred)(void *), void *ctx, int64_t deadline)
{
	while (!pred(ctx) && eos_mono_ns() < deadline) {
		struct timespec ts;
		int64_t ms = EOS_MIN((deadline - eos_mono_ns()) / 1000000 + 1, 100);

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += ms / 1000;
		ts.tv_nsec += (ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	}
}

static bool
ns_settled(void *ctx)
{
	const struct ns *n = ctx;

	return n->state != NS_STARTING || (!n->h && !n->want_spawn);
}

void
eosd_commands_ns_opts(struct eosd_commands *c, const char *sandbox, const char *session,
		      struct eosd_ns_opts *ret)
{
	const struct ns *n;

	pthread_mutex_lock(&c->lock);
	if ((n = ns_find(c, sandbox, session)))
		*ret = n->o;
	else
		opts_load(c, sandbox, session, ret);
	pthread_mutex_unlock(&c->lock);
}

int
eosd_commands_ns_start(struct eosd_commands *c, const char *sandbox, const char *session,
		       const char *view_path, const struct eosd_ns_opts *o, bool wait,
		       struct eos_error *err)
{
	struct ns *n;
	int r = 0;

	pthread_mutex_lock(&c->lock);
	if ((n = ns_find(c, sandbox, session))) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	n = calloc(1, sizeof(*n));
	if (!n || !(n->view_path = strdup(view_path))) {
		free(n);
		pthread_mutex_unlock(&c->lock);
		return eos_error_set(err, -ENOMEM, "out of memory");
	}
	snprintf(n->sandbox, sizeof(n->sandbox), "%s", sandbox);
	snprintf(n->session, sizeof(n->session), "%s", session);
	if (o) {
		n->o = *o;
		opts_save(c, sandbox, session, o);
	} else {
		opts_load(c, sandbox, session, &n->o);
	}
	n->state = NS_STARTING;
	n->want_spawn = true;
	n->next = c->nss;
	c->nss = n;
	cmds_wake(c);
	if (wait) {
		cmds_wait_until(c, ns_settled, n,
				eos_mono_ns() + (int64_t)(EOSD_HOLDER_READY_MS + 1000) * 1000000);
		if (n->state != NS_READY) {
			r = eos_error_set(err, n->state == NS_FAILED ? -EPERM : -ETIMEDOUT, "%s",
					  n->error[0] ? n->error
						      : "the session's holder did not start");
			ns_end_locked(c, n);
			ns_unlink(c, n);
		}
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

void
eosd_commands_ns_stop(struct eosd_commands *c, const char *sandbox, const char *session)
{
	cleanup_free char *p = opts_path(c, sandbox, session);
	struct ns *n;

	pthread_mutex_lock(&c->lock);
	if ((n = ns_find(c, sandbox, session))) {
		ns_end_locked(c, n);
		ns_unlink(c, n);
	}
	if (c->d->cgroups) {
		struct eosd_cgroup *g = eosd_cgroup_find(c->d->cgroups, sandbox, session);

		if (g)
			(void)eosd_cgroup_remove(g, NULL);
	}
	pthread_mutex_unlock(&c->lock);
	if (p)
		unlink(p);
}

int
eosd_commands_ns_busy(struct eosd_commands *c, const char *sandbox, const char *session,
		      struct eos_error *err)
{
	char ids[512] = "";
	size_t len = 0, n = 0;

	pthread_mutex_lock(&c->lock);
	for (struct cmd *x = c->cmds; x; x = x->next)
		if (x->state != CMD_EXITED && !x->gone && !strcmp(x->sandbox, sandbox) &&
		    !strcmp(x->session, session)) {
			if (len < sizeof(ids) - 40)
				len += (size_t)snprintf(ids + len, sizeof(ids) - len, "%s%s",
							n ? ", " : "", x->id);
			n++;
		}
	pthread_mutex_unlock(&c->lock);
	if (n == 0)
		return 0;
	return eos_error_set(err, -EBUSY,
			     "session '%s' has %zu running command%s (%s): wait for %s or cancel "
			     "%s (write_command_stdin with \\u0003)",
			     session, n, n == 1 ? "" : "s", ids, n == 1 ? "it" : "them",
			     n == 1 ? "it" : "them");
}

static const char *
ns_state_name(enum ns_state s)
{
	static const char *const names[] = { "starting", "ready", "failed", "holder_exited",
					     "stopping" };
	return names[s];
}

static bool
list_done(void *ctx)
{
	return !((struct ns *)ctx)->listing;
}

json_t *
eosd_commands_ns_json(struct eosd_commands *c, const char *sandbox, const char *session,
		      bool processes)
{
	json_t *doc = NULL, *cmds = json_array();
	struct ns *n;

	pthread_mutex_lock(&c->lock);
	n = ns_find(c, sandbox, session);
	if (n && processes && n->h && n->state == NS_READY && !n->listing) {
		json_decref(n->procs);
		n->procs = json_array();
		n->listing = eosd_holder_list(n->h, 0, NULL) > 0;
		cmds_wait_until(c, list_done, n, eos_mono_ns() + 1000000000LL);
	}
	for (struct cmd *x = c->cmds; n && cmds && x; x = x->next)
		if (x->ns == n && !x->gone)
			eos_json_push(cmds,
				      json_pack("{s:s,s:s,s:o,s:s}", "command_session_id", x->id,
						"cmd", x->cmdline, "started",
						eosd_json_time_ms(x->started_wall), "status",
						x->state == CMD_EXITED ? "background" : "running"));
	if (n)
		doc = json_pack(
			"{s:{s:i,s:s,s:s?},s:s,s:s,s:s,s:O}", "holder", "pid", (int)n->pid, "state",
			ns_state_name(n->state), "error", n->error[0] ? n->error : NULL,
			"isolation", n->o.isolation == EOSD_HOLDER_NONE ? "none" : "namespaces",
			"network", n->o.network == EOSD_HOLDER_ISOLATED ? "isolated" : "shared",
			"finalize", n->o.implicit ? "publish_then_destroy" : "retain", "commands",
			cmds);
	if (doc && processes && n->procs)
		eos_json_set(doc, "processes", json_incref(n->procs));
	pthread_mutex_unlock(&c->lock);
	json_decref(cmds);
	return doc;
}

/* --- provenance ------------------------------------------------------------------------------- */

/* The parent of pid from /proc/PID/stat (field 4), or -1. */
static pid_t
parent_of(pid_t pid)
{
	char path[64], buf[512];
	ssize_t n;
	int fd;
	char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold anything, but not after the last ')' */
	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return -1;
	return (pid_t)strtol(p + 4, NULL, 10);
}

int
eosd_commands_resolve(struct eosd_commands *c, pid_t pid, char *out, size_t size)
{
	for (int hop = 0; hop < 64 && pid > 1; hop++) {
		bool found = false;

		pthread_mutex_lock(&c->pidlock);
		for (size_t i = 0; i < c->npids && !found; i++)
			if (c->pids[i].pid == pid) {
				snprintf(out, size, "operation:%s", c->pids[i].id);
				found = true;
			}
		pthread_mutex_unlock(&c->pidlock);
		if (found)
			return 0;
		if (c->npids == 0)
			break;
		pid = parent_of(pid);
	}
	return -ENOENT;
}
