/* SPDX-License-Identifier: MIT */
/*
 * supervisor/commands-run: one command's life — start, output, exit, timeout, cancel — and the
 * replies of exec_command, write_command_stdin and read_command_lines (doc/commands.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/errkind.h"
#include "common/json.h"
#include "common/log.h"

#include "supervisor/cgroup.h"
#include "supervisor/commands-internal.h"
#include "supervisor/obs.h"
#include "supervisor/ops.h"
#include "supervisor/pool.h"
#include "supervisor/session.h"

enum {
	START_WAIT_MS = 10000, /* STARTED or EXEC_FAILED after EXEC */
	DRAIN_MS = 100,	       /* output still in the pipes when the shell has exited */
	STDIN_WAIT_MS = 1000,  /* a command that reads none of its input */
};

#define MS(x) ((int64_t)(x)*1000000)

struct cmd *
cmd_find(struct eosd_commands *c, const char *id)
{
	for (struct cmd *x = c->cmds; x; x = x->next)
		if (!strcmp(x->id, id))
			return x;
	return NULL;
}

struct cmd *
cmd_by_hid(struct eosd_commands *c, uint32_t hid)
{
	for (struct cmd *x = c->cmds; x; x = x->next)
		if (x->hid == hid && !x->gone)
			return x;
	return NULL;
}

void
cmd_close_fds(struct eosd_commands *c, struct cmd *x)
{
	int *fds[] = { &x->fd_out, &x->fd_err, &x->fd_in };

	for (size_t i = 0; i < EOS_ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0) {
			if (fds[i] != &x->fd_in)
				cmds_unwatch(c, *fds[i]);
			close(*fds[i]);
			*fds[i] = -1;
		}
}

/* --- the provenance map ----------------------------------------------------------------------- */

static void
pid_add(struct eosd_commands *c, pid_t pid, const char *id)
{
	pthread_mutex_lock(&c->pidlock);
	if (c->npids < EOS_ARRAY_SIZE(c->pids)) {
		c->pids[c->npids].pid = pid;
		snprintf(c->pids[c->npids].id, sizeof(c->pids[0].id), "%s", id);
		c->npids++;
	}
	pthread_mutex_unlock(&c->pidlock);
}

static void
pid_remove(struct eosd_commands *c, pid_t pid)
{
	pthread_mutex_lock(&c->pidlock);
	for (size_t i = 0; i < c->npids; i++)
		if (c->pids[i].pid == pid) {
			c->pids[i] = c->pids[--c->npids];
			break;
		}
	pthread_mutex_unlock(&c->pidlock);
}

/* --- events ------------------------------------------------------------------------------------
 */

static void
take_fd(struct eosd_commands *c, int *dst, int *src, bool watch)
{
	*dst = *src;
	*src = -1;
	if (*dst < 0)
		return;
	(void)fcntl(*dst, F_SETFL, fcntl(*dst, F_GETFL) | O_NONBLOCK);
	if (watch && cmds_watch(c, *dst, ((uint64_t)3 << 32) | (uint32_t)*dst) < 0)
		eos_log_error("eosd: cannot watch a command's output: %m");
}

static void finalize_start(struct eosd_commands *c, struct cmd *x);

/* The shell ended (or never ran): the command stops counting as running. */
static void
cmd_ended(struct eosd_commands *c, struct cmd *x)
{
	struct ns *n = x->ns;
	struct eosd_cgroup *g;

	if (x->state == CMD_EXITED)
		return;
	x->state = CMD_EXITED;
	x->ended_mono = eos_mono_ns();
	c->running--;
	if (n)
		n->running--;
	if (c->d->cgroups && (g = eosd_cgroup_find(c->d->cgroups, x->sandbox, x->session)))
		eosd_cgroup_sampling(g, false);
	if (x->error == 0) {
		enum eos_obs_status st = !x->end			? EOS_OBS_COMPLETED
					 : !strcmp(x->end, "cancelled") ? EOS_OBS_CANCELLED
									: EOS_OBS_TIMED_OUT;

		eosd_span_record(c->d->obs, &x->trace, "namespace.exec.run_shell", x->started_mono,
				 x->ended_mono, st,
				 json_pack("{s:s,s:i}", "command_session_id", x->id, "exit_code",
					   x->exit_code));
		eosd_obs_event_in(c->d->obs, &x->trace, "command.exited", x->sandbox, x->session,
				  json_pack("{s:s,s:i,s:s?}", "command_session_id", x->id,
					    "exit_code", x->exit_code, "end", x->end));
	}
	if (n && n->o.implicit && n->running == 0 && !n->finalizing && x->error == 0) {
		finalize_start(c, x);
		return;
	}
	x->final = true;
	store_finish(c, x);
}

static void
on_started(struct eosd_commands *c, struct cmd *x, struct eosd_holder_event *ev)
{
	struct eosd_cgroup *g;

	x->subreaper = ev->subreaper_pid;
	x->shell = ev->shell_pid;
	if (ev->fd_pty >= 0) {
		take_fd(c, &x->fd_out, &ev->fd_pty, true);
		x->fd_in = dup(x->fd_out);
		if (x->fd_in >= 0)
			(void)fcntl(x->fd_in, F_SETFD, FD_CLOEXEC);
	} else {
		take_fd(c, &x->fd_out, &ev->fd_stdout, true);
		take_fd(c, &x->fd_err, &ev->fd_stderr, true);
		take_fd(c, &x->fd_in, &ev->fd_stdin, false);
	}
	x->state = CMD_RUNNING;
	pid_add(c, x->subreaper, x->id);
	if (c->d->cgroups && (g = eosd_cgroup_find(c->d->cgroups, x->sandbox, x->session)))
		eosd_cgroup_sampling(g, true);
	eosd_obs_event_in(c->d->obs, &x->trace, "command.started", x->sandbox, x->session,
			  json_pack("{s:s,s:s,s:i}", "command_session_id", x->id, "cmd", x->cmdline,
				    "pid", (int)ev->shell_nspid));
}

void
cmd_on_event(struct eosd_commands *c, struct cmd *x, struct eosd_holder_event *ev)
{
	switch (ev->kind) {
	case EOSD_HOLDER_STARTED:
		on_started(c, x, ev);
		break;
	case EOSD_HOLDER_EXEC_FAILED:
		x->error = ev->error ? ev->error : -EIO;
		snprintf(x->message, sizeof(x->message), "%s", ev->message);
		x->gone = true;
		cmd_ended(c, x);
		break;
	case EOSD_HOLDER_EXITED:
		if (ev->how == EOSD_HOLDER_EXIT_SIGNAL) {
			x->signal = ev->code;
			x->exit_code = 128 + ev->code;
		} else {
			x->exit_code = ev->how == EOSD_HOLDER_EXIT_LOST ? 137 : ev->code;
		}
		if (x->end)
			x->exit_code = !strcmp(x->end, "cancelled") ? 130 : 124;
		cmd_ended(c, x);
		break;
	case EOSD_HOLDER_GONE:
		x->gone = true;
		pid_remove(c, x->subreaper);
		if (x->state != CMD_EXITED) { /* its subreaper was killed first */
			x->exit_code = x->end ? (!strcmp(x->end, "cancelled") ? 130 : 124) : 137;
			cmd_ended(c, x);
		}
		break;
	case EOSD_HOLDER_READY:
	case EOSD_HOLDER_SETUP_FAILED:
	case EOSD_HOLDER_PROC:
	case EOSD_HOLDER_PROC_END:
	case EOSD_HOLDER_REFUSED:
	case EOSD_HOLDER_BYE:
	case EOSD_HOLDER_ABORTED:
	case EOSD_HOLDER_DIED:
		break; /* the session's, not the command's (commands.c) */
	}
}

/* The holder is gone: its commands are too. */
void
cmd_holder_lost(struct eosd_commands *c, struct ns *n)
{
	for (struct cmd *x = c->cmds; x; x = x->next) {
		if (x->ns != n || x->gone)
			continue;
		if (x->state == CMD_STARTING) {
			x->error = -ECHILD;
			snprintf(x->message, sizeof(x->message),
				 "the session's holder exited before the command started");
		} else if (x->state == CMD_RUNNING) {
			x->exit_code = x->end ? (!strcmp(x->end, "cancelled") ? 130 : 124) : 137;
			x->signal = x->end ? 0 : SIGKILL;
		}
		x->gone = true;
		pid_remove(c, x->subreaper);
		cmd_ended(c, x);
		x->ns = NULL;
	}
}

void
cmd_on_output(struct eosd_commands *c, struct cmd *x, int fd)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n > 0) {
		store_append(x, buf, (size_t)n);
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/* its end (a pty answers EIO once nothing holds its other side) */
	cmds_unwatch(c, fd);
	close(fd);
	if (x->fd_out == fd) {
		if (x->tty && x->fd_in >= 0) {
			close(x->fd_in);
			x->fd_in = -1;
		}
		x->fd_out = -1;
	} else {
		x->fd_err = -1;
	}
}

int64_t
cmds_timeouts(struct eosd_commands *c, int64_t now)
{
	int64_t next = 0;

	for (struct cmd *x = c->cmds; x; x = x->next) {
		if (!x->deadline_mono || x->state == CMD_EXITED || x->gone || x->end)
			continue;
		if (now >= x->deadline_mono && x->ns && x->ns->h) {
			x->end = "timed_out";
			(void)eosd_holder_terminate(x->ns->h, x->hid, EOSD_CANCEL_GRACE_MS, NULL);
			continue;
		}
		if (!next || x->deadline_mono < next)
			next = x->deadline_mono;
	}
	return next;
}

/* --- implicit sessions -------------------------------------------------------------------------
 */

struct finalize_job {
	struct eosd_commands *c;
	struct cmd *x; /* stays in the list: not retired while finalizing */
	char sandbox[EOS_SANDBOX_ID_MAX + 1];
	char session[EOS_SESSION_NAME_MAX + 1];
	struct eosd_trace_ctx trace;
};

static void
finalize_run(void *arg)
{
	struct finalize_job *j = arg;
	struct eosd_commands *c = j->c;
	struct eosd_span sp;
	json_t *res;

	/* in the command's trace: command.exec → command.finalize → workspace_session.finalize */
	eosd_span_begin_in(c->d->obs, &sp, "command.finalize", &j->trace, j->sandbox);
	eosd_span_set_session(&sp, j->session);
	res = eosd_session_finalize_implicit(c->d, j->sandbox, j->session);
	eosd_span_attr(&sp, "publish", json_incref(json_object_get(res, "status")));
	eosd_span_end(&sp, 0, NULL);

	pthread_mutex_lock(&c->lock);
	j->x->publish = res;
	j->x->final = true;
	store_finish(c, j->x);
	pthread_cond_broadcast(&c->cond);
	cmds_wake(c); /* its deferred replies */
	pthread_mutex_unlock(&c->lock);
	free(j);
}

static void *
finalize_thread(void *arg)
{
	finalize_run(arg);
	return NULL;
}

static void
finalize_start(struct eosd_commands *c, struct cmd *x)
{
	struct finalize_job *j = calloc(1, sizeof(*j));
	pthread_t t;

	x->finalizing = true;
	x->ns->finalizing = true;
	if (!j) {
		x->final = true;
		return;
	}
	j->c = c;
	j->x = x;
	j->trace = x->trace;
	snprintf(j->sandbox, sizeof(j->sandbox), "%s", x->sandbox);
	snprintf(j->session, sizeof(j->session), "%s", x->session);
	if (c->d->pool && eosd_pool_submit(c->d->pool, finalize_run, j) == 0)
		return;
	/* no pool (a test without the gateway) or a full queue: a thread of its own */
	if (pthread_create(&t, NULL, finalize_thread, j) == 0) {
		pthread_detach(t);
		return;
	}
	free(j);
	x->final = true;
}

/* --- results -----------------------------------------------------------------------------------
 */

static const char *
status_of(const struct cmd *x)
{
	if (x->state != CMD_EXITED)
		return "running";
	if (x->end)
		return x->end;
	return x->exit_code == 0 ? "completed" : "error";
}

json_t *
cmd_result(const struct cmd *x)
{
	bool done = x->state == CMD_EXITED;
	int64_t end = done ? x->ended_mono : eos_mono_ns();
	json_t *doc = json_pack(
		"{s:s,s:s,s:s,s:b,s:s,s:s,s:o,s:o,s:o,s:o,s:b,s:o,s:i,s:b,s:b}",
		"command_session_id", x->id, "sandbox_id", x->sandbox, "workspace_session_id",
		x->session, "implicit_session", x->implicit, "cmd", x->cmdline, "status",
		status_of(x), "exit_code", done ? json_integer(x->exit_code) : json_null(),
		"signal",
		x->signal ? json_sprintf("SIG%s", sigabbrev_np(x->signal) ? sigabbrev_np(x->signal)
									  : "UNKNOWN")
			  : json_null(),
		"total_output_bytes", eos_json_u64(x->bytes), "line_count",
		eos_json_u64(x->lines + (x->bytes && !x->last_nl)), "transcript_truncated",
		x->truncated, "started", eosd_json_time_ms(x->started_wall), "wall_time_ms",
		(int)((end - x->started_mono) / 1000000), "background", done && !x->gone, "final",
		x->final);

	if (doc)
		eos_json_set(doc, "publish", x->publish ? json_incref(x->publish) : json_null());
	return doc;
}

/* Length of the longest prefix of p[n] that does not end inside a UTF-8 sequence. */
static size_t
utf8_whole(const unsigned char *p, size_t n)
{
	size_t i = n, back = 0;

	while (i > 0 && back < 4 && (p[i - 1] & 0xc0) == 0x80) {
		i--;
		back++;
	}
	if (i == 0)
		return n;
	{
		unsigned char b = p[i - 1];
		size_t need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;

		return need > back + 1 && b >= 0xc0 ? i - 1 : n;
	}
}

json_t *
cmd_text_json(const char *p, size_t n)
{
	json_t *s = json_stringn(p, n);
	struct eos_buf b = { 0 };

	if (s || n == 0)
		return s ? s : json_string("");
	for (size_t i = 0; i < n;) {
		size_t k = 1;
		unsigned char c = (unsigned char)p[i];
		json_t *one;

		if (c >= 0xc0)
			k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		if (i + k <= n && (one = json_stringn(p + i, k))) {
			json_decref(one);
			eos_buf_append(&b, p + i, k);
			i += k;
		} else {
			eos_buf_append(&b, "\xef\xbf\xbd", 3);
			i++;
		}
	}
	s = json_stringn(b.data ? (const char *)b.data : "", b.len);
	eos_buf_release(&b);
	return s;
}

/* The reply: the result with the output since the last reply. Lock held. */
static json_t *
reply_of(struct eosd_commands *c, struct cmd *x, size_t max_output)
{
	json_t *doc = cmd_result(x);
	uint64_t avail = x->bytes - x->replied, from = x->replied;
	size_t want = avail > max_output ? max_output : (size_t)avail, len = 0;
	cleanup_free char *text = want ? store_read(c, x->id, from, want, &len) : NULL;
	bool cut = avail > max_output;

	if (!doc)
		return NULL;
	if (!cut && x->state != CMD_EXITED && len)
		len = utf8_whole((const unsigned char *)text, len);
	eos_json_set(doc, "output", cmd_text_json(text ? text : "", len));
	eos_json_set(doc, "output_offset", eos_json_u64(from));
	eos_json_set(doc, "output_truncated", json_boolean(cut));
	x->replied = cut ? x->bytes : from + len;
	return doc;
}

/* A reply may go: the command is final and its pipes are drained (or have had their time). */
static bool
cmd_settled(void *ctx)
{
	const struct cmd *x = ctx;

	if (!x->final)
		return false;
	/* GONE follows EXITED at once unless something runs on: wait for it too, so that
	 * "background" is not claimed for a command that left nothing behind */
	return (x->fd_out < 0 && x->fd_err < 0 && x->gone) ||
	       eos_mono_ns() > x->ended_mono + MS(DRAIN_MS);
}

static bool
cmd_started(void *ctx)
{
	return ((struct cmd *)ctx)->state != CMD_STARTING;
}

/* --- deferred replies ----------------------------------------------------------------------- */

/* Answer later through call->finish: the engine makes the reply when x settles. Lock held. */
static void
defer(struct eosd_commands *c, struct eosd_call *call, struct cmd *x, int yield_ms,
      size_t max_output)
{
	struct waiter *w = calloc(1, sizeof(*w));

	if (!w) { /* no memory to wait: answer now */
		call->finish(call, 0, reply_of(c, x, max_output), NULL);
		return;
	}
	*w = (struct waiter){ .call = call,
			      .x = x,
			      .deadline = eos_mono_ns() + MS(yield_ms),
			      .max_output = max_output,
			      .next = c->waiters };
	x->waiting++;
	c->waiters = w;
	cmds_wake(c);
}

int64_t
cmds_waiters(struct eosd_commands *c, int64_t now, struct waiter **ret_done)
{
	int64_t next = 0;

	*ret_done = NULL;
	for (struct waiter **p = &c->waiters; *p;) {
		struct waiter *w = *p;
		struct cmd *x = w->x;
		bool publishing = x->finalizing && !x->final;
		int64_t due = w->deadline;

		if (x->final && (x->fd_out >= 0 || x->fd_err >= 0 || !x->gone))
			due = EOS_MIN(due, x->ended_mono + MS(DRAIN_MS));
		if (!c->quiesced && !c->d->stopping && !cmd_settled(x) &&
		    (now < w->deadline || publishing)) {
			if (!publishing && (!next || due < next))
				next = due;
			p = &w->next;
			continue;
		}
		if (x->state != CMD_EXITED)
			eosd_obs_event_in(c->d->obs, &x->trace, "command.yielded", x->sandbox,
					  x->session,
					  json_pack("{s:s}", "command_session_id", x->id));
		w->out = reply_of(c, x, w->max_output);
		x->waiting--;
		*p = w->next;
		w->next = *ret_done;
		*ret_done = w;
	}
	return next;
}

void
cmds_waiters_finish(struct waiter *done)
{
	while (done) {
		struct waiter *w = done;
		struct eos_error err = { 0 };

		done = w->next;
		if (w->out)
			w->call->finish(w->call, 0, w->out, NULL);
		else
			w->call->finish(w->call, eos_error_set(&err, -ENOMEM, "out of memory"),
					NULL, &err);
		free(w);
	}
}

/* Wait for x to settle, at most yield_ms (an implicit session's publish is always awaited). */
static void
wait_yield(struct eosd_commands *c, struct cmd *x, int yield_ms)
{
	cmds_wait_until(c, cmd_settled, x, eos_mono_ns() + MS(yield_ms));
	if (x->finalizing && !x->final)
		cmds_wait_until(c, cmd_settled, x, eos_mono_ns() + MS(120000));
}

/* --- exec --------------------------------------------------------------------------------------
 */

static int
env_push(char ***v, size_t *n, const char *name, const char *value)
{
	char **nv = reallocarray(*v, *n + 1, sizeof(char *));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	for (size_t i = 0; i < *n; i++) /* a later value replaces an earlier one */
		if (!strncmp(nv[i], name, strlen(name)) && nv[i][strlen(name)] == '=') {
			free(nv[i]);
			return asprintf(&nv[i], "%s=%s", name, value) < 0 ? -ENOMEM : 0;
		}
	if (asprintf(&nv[*n], "%s=%s", name, value) < 0)
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* The command's environment: the allow-list of doc/commands.md, then x->env. */
static int
build_env(const struct eosd_exec_req *q, const struct ns *n, char ***ret, size_t *ret_n)
{
	static const char *const passed[] = { "LANG", "LC_ALL", "TZ" };
	char pwd[4200];
	const char *k;
	json_t *v;
	int r = 0;

	*ret = NULL;
	*ret_n = 0;
	snprintf(pwd, sizeof(pwd), "%s%s%s",
		 n->o.isolation == EOSD_HOLDER_NONE ? n->view_path : "/workspace",
		 q->cwd && q->cwd[0] ? "/" : "", q->cwd ? q->cwd : "");
	r = r
		    ?: env_push(ret, ret_n, "PATH",
				"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
				"/sbin:/bin");
	r = r ?: env_push(ret, ret_n, "HOME", "/tmp");
	r = r ?: env_push(ret, ret_n, "USER", "root");
	r = r ?: env_push(ret, ret_n, "LOGNAME", "root");
	r = r ?: env_push(ret, ret_n, "SHELL", "/bin/bash");
	r = r ?: env_push(ret, ret_n, "TERM", q->tty ? "xterm-256color" : "dumb");
	r = r ?: env_push(ret, ret_n, "PWD", pwd);
	for (size_t i = 0; r == 0 && i < EOS_ARRAY_SIZE(passed); i++)
		if (getenv(passed[i]))
			r = env_push(ret, ret_n, passed[i], getenv(passed[i]));
	json_object_foreach(q->env, k, v)
	{
		if (r == 0)
			r = env_push(ret, ret_n, k, json_string_value(v));
	}
	return r;
}

static void
env_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Whether n admits a command; the kind to refuse with in *kind. Lock held. */
static int
admit(struct eosd_commands *c, struct ns *n, const struct eosd_exec_req *q, int *kind,
      struct eos_error *err)
{
	if (!n)
		return eos_error_set(err, -ENOENT,
				     "workspace session '%s' of sandbox '%s' does not exist",
				     q->session, q->sandbox);
	if (n->state == NS_EXITED) {
		*kind = EOS_ERRKIND_HOLDER_EXITED;
		return eos_error_set(
			err, -ECHILD,
			"session '%s': %s; its commands are gone: destroy it and create "
			"another",
			n->session, n->error);
	}
	if (n->state != NS_READY)
		return eos_error_set(err, n->state == NS_STARTING ? -EAGAIN : -EIO,
				     "session '%s' cannot run commands: %s", n->session,
				     n->error[0] ? n->error : "its holder is not ready yet");
	if (n->finalizing)
		return eos_error_set(err, -EBUSY,
				     "implicit session '%s' is being published and destroyed",
				     n->session);
	if (c->running >= EOSD_COMMANDS_RUNNING_MAX)
		return eos_error_set(err, -EBUSY,
				     "%d commands run already: the most eosd runs at once",
				     EOSD_COMMANDS_RUNNING_MAX);
	return 0;
}

static bool
ns_ready_or_not(void *ctx)
{
	return ((struct ns *)ctx)->state != NS_STARTING;
}

static struct cmd *
cmd_new(const struct eosd_exec_req *q, struct ns *n)
{
	struct cmd *x = calloc(1, sizeof(*x));

	if (!x || !(x->cmdline = strdup(q->cmd))) {
		free(x);
		return NULL;
	}
	x->ns = n;
	snprintf(x->sandbox, sizeof(x->sandbox), "%s", q->sandbox);
	snprintf(x->session, sizeof(x->session), "%s", q->session);
	x->implicit = n->o.implicit;
	x->fd_out = x->fd_err = x->fd_in = x->fd_log = -1;
	x->tty = q->tty;
	x->last_nl = true;
	x->trace = eosd_obs_context();
	x->started_wall = eos_wall_ns();
	x->started_mono = eos_mono_ns();
	if (q->timeout_ms)
		x->deadline_mono = x->started_mono + MS(q->timeout_ms);
	return x;
}

/* Send the EXEC and wait for it to start. Lock held; x is in the list. */
static int
start(struct eosd_commands *c, struct cmd *x, const struct eosd_exec_req *q, struct eos_error *err)
{
	char **env = NULL;
	size_t nenv = 0;
	int r = build_env(q, x->ns, &env, &nenv);
	struct eosd_holder_exec hx = { .cmd = q->cmd,
				       .cwd = q->cwd,
				       .env = (const char *const *)env,
				       .n_env = nenv,
				       .tty = q->tty,
				       .stdin_pipe = !q->tty };

	if (r < 0) {
		env_free(env, nenv);
		return eos_error_set(err, -ENOMEM, "out of memory");
	}
	r = eosd_holder_exec(x->ns->h, x->hid, &hx, err);
	env_free(env, nenv);
	if (r < 0)
		return r;
	x->ns->running++;
	c->running++;
	cmds_wait_until(c, cmd_started, x, eos_mono_ns() + MS(START_WAIT_MS));
	if (x->state == CMD_STARTING) {
		(void)eosd_holder_terminate(x->ns->h, x->hid, 0, NULL);
		return eos_error_set(err, -ETIMEDOUT, "command %s did not start within %d ms",
				     x->id, START_WAIT_MS);
	}
	if (x->error == -EXDEV) /* the holder's RESOLVE_BENEATH: a symlink out of /workspace */
		return eos_error_set(err, -EINVAL,
				     "argument 'cwd': '%s' leads out of /workspace; command not "
				     "started (%s)",
				     q->cwd, x->message);
	if (x->error)
		return eos_error_set(err, x->error, "command not started: %s", x->message);
	return 0;
}

int
eosd_commands_exec(struct eosd_commands *c, const struct eosd_exec_req *q, struct eosd_call *call,
		   json_t **out, int *kind, struct eos_error *err)
{
	struct ns *n;
	struct cmd *x;
	int r;

	pthread_mutex_lock(&c->lock);
	n = ns_find(c, q->sandbox, q->session);
	if (n && n->state == NS_STARTING)
		cmds_wait_until(c, ns_ready_or_not, n, eos_mono_ns() + MS(EOSD_HOLDER_READY_MS));
	r = admit(c, n, q, kind, err);
	if (r == 0 && !(x = cmd_new(q, n)))
		r = eos_error_set(err, -ENOMEM, "out of memory");
	if (r == 0 && (r = store_new(c, x, err)) < 0) {
		free(x->cmdline);
		free(x);
	}
	if (r == 0) {
		x->hid = c->next_hid++;
		if (c->next_hid == 0)
			c->next_hid = 1;
		x->next = c->cmds;
		c->cmds = x;
		c->ncmds++;
		r = start(c, x, q, err);
		if (r < 0 && x->state == CMD_STARTING) /* the holder never answered */
			cmd_ended(c, x);
		if (r < 0 && x->error) {
			/* never ran: forget it (its transcript is empty) */
			store_finish(c, x);
		}
	}
	if (r == 0 && call && call->finish && !c->quiesced) {
		defer(c, call, x, q->yield_ms, q->max_output);
		r = EOSD_DEFERRED;
	} else if (r == 0) {
		wait_yield(c, x, q->yield_ms);
		if (x->state != CMD_EXITED)
			eosd_obs_event(c->d->obs, "command.yielded", x->sandbox, x->session,
				       json_pack("{s:s,s:i}", "command_session_id", x->id,
						 "yield_time_ms", q->yield_ms));
		if (!(*out = reply_of(c, x, q->max_output)))
			r = eos_error_set(err, -ENOMEM, "out of memory");
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* --- stdin, lines ------------------------------------------------------------------------------
 */

static int
write_all(int fd, const char *p, size_t n, struct eos_error *err)
{
	int64_t until = eos_mono_ns() + MS(STDIN_WAIT_MS);

	while (n > 0) {
		ssize_t w = write(fd, p, n);
		struct pollfd pf = { fd, POLLOUT, 0 };

		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return eos_error_set(err, -errno, "write the command's input: %m");
		if (eos_mono_ns() >= until)
			return eos_error_set(err, -EAGAIN,
					     "the command reads none of its input: %zu bytes were "
					     "not written",
					     n);
		(void)poll(&pf, 1, 50);
	}
	return 0;
}

/*
 * Why x takes no more input: the client's error (-EINVAL), not eosd's, naming the command and
 * how it ended. A write of no chars still answers its result.
 */
static int
input_refused(const struct cmd *x, struct eos_error *err)
{
	if (x->state == CMD_EXITED)
		return eos_error_set(
			err, -EINVAL,
			"command '%s' has ended (%s, exit code %d): it reads no more "
			"input; write_command_stdin with empty chars answers its result",
			x->id, status_of(x), x->exit_code);
	return eos_error_set(err, -EINVAL, "command '%s' reads no more input: %s", x->id,
			     x->in_closed ? "its stdin was closed (close_stdin)"
					  : "it has closed its stdin");
}

/* Write chars[len] to x's input. Lock held. */
static int
input_write(struct cmd *x, const char *chars, size_t len, struct eos_error *err)
{
	int r;

	if (x->state == CMD_EXITED || x->fd_in < 0)
		return input_refused(x, err);
	r = write_all(x->fd_in, chars, len, err);
	/* EPIPE: nothing reads the pipe any more (a pty's master answers EIO instead) */
	if (r == -EPIPE || (x->tty && r == -EIO))
		return input_refused(x, err);
	if (r == 0)
		x->in_partial = chars[len - 1] != '\n' && chars[len - 1] != '\r';
	return r;
}

/*
 * End x's input (close_stdin). Pipes: close the write end. A tty stays open (it is the
 * command's stdout too): send its EOF character, which in canonical mode ends a read as
 * Ctrl-D at a terminal does — twice after a partial line, whose pending bytes the first one
 * only hands over. A command that set its terminal raw reads it as a byte. Lock held.
 */
static int
input_close(struct cmd *x, struct eos_error *err)
{
	struct termios t;
	char eof[2];
	size_t n = x->in_partial ? 2 : 1;

	if (x->state == CMD_EXITED || x->fd_in < 0)
		return 0; /* nothing reads it any more: already ended */
	if (!x->tty) {
		close(x->fd_in);
		x->fd_in = -1;
		x->in_closed = true;
		return 0;
	}
	if (tcgetattr(x->fd_in, &t) < 0)
		return eos_error_set(err, eos_neg_errno(), "read the terminal of command '%s': %m",
				     x->id);
	eof[0] = eof[1] = t.c_cc[VEOF] != _POSIX_VDISABLE ? (char)t.c_cc[VEOF] : '\x04';
	x->in_partial = false;
	return write_all(x->fd_in, eof, n, err);
}

/* The command id of the catalog: "cmd-N". */
static int
not_found(struct eosd_commands *c, const char *id, struct eos_error *err)
{
	if (store_retired(c, id))
		return eos_error_set(err, -ENOENT,
				     "command '%s' was retired: eosd keeps the transcripts of the "
				     "newest %u commands",
				     id, c->keep);
	return eos_error_set(err, -ENOENT, "command '%s' does not exist", id);
}

/* Ctrl-C or Ctrl-D: end x's whole tree (SIGTERM, grace, SIGKILL). Lock held. */
static int
cancel(struct eosd_commands *c, struct cmd *x, struct eos_error *err)
{
	int r;

	x->end = "cancelled";
	r = eosd_holder_terminate(x->ns->h, x->hid, EOSD_CANCEL_GRACE_MS, err);
	eosd_obs_event(c->d->obs, "command.cancelled", x->sandbox, x->session,
		       json_pack("{s:s}", "command_session_id", x->id));
	return r > 0 ? 0 : r;
}

int
eosd_commands_stdin(struct eosd_commands *c, const struct eosd_stdin_req *q, struct eosd_call *call,
		    json_t **out, struct eos_error *err)
{
	bool cancels = q->len == 1 && (q->chars[0] == '\x03' || q->chars[0] == '\x04');
	int yield_ms = q->yield_ms;
	struct cmd *x;
	int r = 0;

	pthread_mutex_lock(&c->lock);
	x = cmd_find(c, q->id);
	if (!x) {
		json_t *kept = store_result(c, q->id);

		pthread_mutex_unlock(&c->lock);
		if (!kept)
			return not_found(c, q->id, err);
		json_decref(kept);
		return eos_error_set(err, -EINVAL,
				     "command '%s' has ended (eosd restarted since): read its "
				     "transcript with read_command_lines",
				     q->id);
	}
	if (cancels && x->state != CMD_EXITED && !x->end && x->ns && x->ns->h) {
		r = cancel(c, x, err);
		yield_ms = EOS_MAX(yield_ms, EOSD_CANCEL_GRACE_MS + 1000);
	} else {
		r = q->len > 0 ? input_write(x, q->chars, q->len, err) : 0;
		r = r == 0 && q->close ? input_close(x, err) : r;
	}
	if (r == 0 && call && call->finish && !c->quiesced) {
		defer(c, call, x, yield_ms, q->max_output);
		r = EOSD_DEFERRED;
	} else if (r == 0) {
		wait_yield(c, x, yield_ms);
		if (!(*out = reply_of(c, x, q->max_output)))
			r = eos_error_set(err, -ENOMEM, "out of memory");
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

int
eosd_commands_lines(struct eosd_commands *c, const char *id, int64_t offset, int64_t limit,
		    json_t **out, struct eos_error *err)
{
	json_t *doc, *lines = NULL;
	struct cmd *x;
	int64_t next = 0;
	int r;

	pthread_mutex_lock(&c->lock);
	x = cmd_find(c, id);
	doc = x ? cmd_result(x) : store_result(c, id);
	if (!doc) {
		pthread_mutex_unlock(&c->lock);
		return not_found(c, id, err);
	}
	r = store_lines(c, id, offset, limit, &lines, &next, err);
	if (r == 0) {
		bool complete = x ? x->final && x->gone && x->fd_out < 0 && x->fd_err < 0 : true;

		eos_json_set(doc, "lines", lines);
		eos_json_set(doc, "offset", json_integer(offset));
		eos_json_set(doc, "next_offset", next ? json_integer(next) : json_null());
		eos_json_set(doc, "complete", json_boolean(complete));
		*out = doc;
	} else {
		json_decref(doc);
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

int
eosd_commands_where(struct eosd_commands *c, const char *id, struct eosd_command_place *ret)
{
	struct cmd *x;
	json_t *kept = NULL;

	*ret = (struct eosd_command_place){ 0 };
	pthread_mutex_lock(&c->lock);
	x = cmd_find(c, id);
	if (x) {
		snprintf(ret->sandbox, sizeof(ret->sandbox), "%s", x->sandbox);
		snprintf(ret->session, sizeof(ret->session), "%s", x->session);
	} else if ((kept = store_result(c, id))) {
		snprintf(ret->sandbox, sizeof(ret->sandbox), "%s",
			 json_string_value(json_object_get(kept, "sandbox_id")) ?: "");
		snprintf(ret->session, sizeof(ret->session), "%s",
			 json_string_value(json_object_get(kept, "workspace_session_id")) ?: "");
	}
	pthread_mutex_unlock(&c->lock);
	json_decref(kept);
	return ret->sandbox[0] ? 0 : -ENOENT;
}
