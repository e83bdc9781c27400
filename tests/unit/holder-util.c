/* SPDX-License-Identifier: MIT */
/* Helpers of the holder's tests (see holder-util.h). */
#include "tests/unit/holder-util.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/path.h"

#include "supervisor/seccomp.h"

static const char *const test_env[] = {
	"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
	"HOME=/tmp",
	"TERM=dumb",
	"LC_ALL=C",
};

const char *
ht_built(const char *rel)
{
	static char buf[4096];
	const char *top = getenv("top_builddir");

	snprintf(buf, sizeof(buf), "%s/%s", top ? top : ".", rel);
	return buf;
}

void
ht_plan_init(struct eosd_holder_plan *p, const char *view)
{
	static uint8_t *bpf;
	static size_t len;
	struct eos_error err = { 0 };

	if (!bpf)
		ck_assert_msg(eosd_seccomp_build(&bpf, &len, &err) == 0, "%s", err.msg);
	*p = (struct eosd_holder_plan){ .isolation = EOSD_HOLDER_NAMESPACES,
					.network = EOSD_HOLDER_SHARED,
					.view = view,
					.hostname = "eos-test",
					.seccomp = bpf,
					.seccomp_len = len,
					.rlimit_nofile = 4096 };
}

struct eosd_holder *
ht_spawn(const struct eosd_holder_plan *p)
{
	const char *path = getenv("EOS_HOLDER") ? getenv("EOS_HOLDER")
						: ht_built("supervisor/holder/eos-holder");
	struct eos_error err = { 0 };
	struct eosd_holder *h = NULL;

	ck_assert_msg(eosd_holder_spawn(path, p, &h, &err) == 0, "%s", err.msg);
	ck_assert_msg(eosd_holder_wait_ready(h, 60000, &err) == 0, "%s", err.msg);
	return h;
}

static char *views[16];
static size_t n_views;

static void
remove_views(void)
{
	for (size_t i = 0; i < n_views; i++)
		eos_rm_rf(views[i]);
}

char *
ht_view(void)
{
	char *dir = strdup("/tmp/eos-holder-view.XXXXXX");

	ck_assert_ptr_nonnull(dir);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(chmod(dir, 0755), 0);
	if (n_views == 0)
		atexit(remove_views);
	if (n_views < EOS_ARRAY_SIZE(views))
		views[n_views++] = dir;
	return dir;
}

struct eosd_holder_exec
ht_exec(const char *cmd)
{
	return (struct eosd_holder_exec){ .cmd = cmd,
					  .env = test_env,
					  .n_env = EOS_ARRAY_SIZE(test_env) };
}

void
ht_next(struct eosd_holder *h, struct eosd_holder_event *ev)
{
	struct eos_error err = { 0 };

	for (;;) {
		struct pollfd p = { eosd_holder_fd(h), POLLIN, 0 };
		int r = eosd_holder_next(h, ev, &err);

		if (r == 0)
			return;
		ck_assert_msg(r == -EAGAIN, "%s", err.msg);
		ck_assert_int_ge(poll(&p, 1, -1), 0);
	}
}

void
ht_wait(struct eosd_holder *h, enum eosd_holder_event_kind kind, struct eosd_holder_event *ev)
{
	for (;;) {
		ht_next(h, ev);
		if (ev->kind == kind)
			return;
		ck_assert_msg(ev->kind != EOSD_HOLDER_DIED, "holder died waiting for event %d: %s",
			      (int)kind, ev->message);
		eosd_holder_event_release(ev);
	}
}

/* Append what fd has; false at its end. */
static bool
drain(int fd, struct eos_buf *b)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n > 0) {
		ck_assert_int_eq(eos_buf_append(b, buf, (size_t)n), 0);
		return true;
	}
	return false;
}

struct io {
	int out, err, in;
};

static void
on_event(struct ht_result *r, struct eosd_holder_event *ev, struct io *io, const char *input,
	 bool *end)
{
	switch (ev->kind) {
	case EOSD_HOLDER_STARTED:
		r->subreaper = ev->subreaper_pid;
		r->shell = ev->shell_pid;
		io->out = ev->fd_pty >= 0 ? ev->fd_pty : ev->fd_stdout;
		io->err = ev->fd_stderr;
		io->in = ev->fd_pty >= 0 ? -1 : ev->fd_stdin;
		if (input) {
			int fd = ev->fd_pty >= 0 ? ev->fd_pty : ev->fd_stdin;
			ck_assert_int_eq(write(fd, input, strlen(input)), (ssize_t)strlen(input));
		}
		if (io->in >= 0)
			close(io->in);
		ev->fd_pty = ev->fd_stdout = ev->fd_stderr = ev->fd_stdin = -1;
		break;
	case EOSD_HOLDER_EXITED:
		r->how = ev->how;
		r->code = ev->code;
		break;
	case EOSD_HOLDER_GONE:
		r->lost = ev->lost;
		*end = true;
		break;
	case EOSD_HOLDER_EXEC_FAILED:
		r->failed = true;
		r->error = ev->error;
		snprintf(r->message, sizeof(r->message), "%s", ev->message);
		*end = true;
		break;
	case EOSD_HOLDER_REFUSED:
	case EOSD_HOLDER_DIED:
	case EOSD_HOLDER_ABORTED:
		ck_abort_msg("unexpected event %d: %s", (int)ev->kind, ev->message);
		break;
	case EOSD_HOLDER_READY:
	case EOSD_HOLDER_SETUP_FAILED:
	case EOSD_HOLDER_PROC:
	case EOSD_HOLDER_PROC_END:
	case EOSD_HOLDER_BYE:
		break;
	}
}

void
ht_run(struct eosd_holder *h, uint32_t id, const struct eosd_holder_exec *x, const char *input,
       struct ht_result *r)
{
	struct eos_error err = { 0 };
	struct io io = { -1, -1, -1 };
	bool end = false;

	memset(r, 0, sizeof(*r));
	eos_buf_init(&r->out);
	eos_buf_init(&r->err);
	ck_assert_msg(eosd_holder_exec(h, id, x, &err) > 0, "%s", err.msg);
	/* the end is GONE (or EXEC_FAILED) with every output read to its end */
	while (!end || io.out >= 0 || io.err >= 0) {
		struct pollfd p[3] = { { end ? -1 : eosd_holder_fd(h), POLLIN, 0 },
				       { io.out, POLLIN, 0 },
				       { io.err, POLLIN, 0 } };
		struct eosd_holder_event ev;

		ck_assert_int_ge(poll(p, 3, -1), 0);
		if (p[1].revents && !drain(io.out, &r->out))
			io.out = (close(io.out), -1);
		if (p[2].revents && !drain(io.err, &r->err))
			io.err = (close(io.err), -1);
		if (!p[0].revents || eosd_holder_next(h, &ev, &err) != 0)
			continue;
		on_event(r, &ev, &io, input, &end);
		eosd_holder_event_release(&ev);
	}
}

void
ht_result_release(struct ht_result *r)
{
	eos_buf_release(&r->out);
	eos_buf_release(&r->err);
}

static struct eos_buf last_output;

int
ht_sh(struct eosd_holder *h, const char *cmd)
{
	static uint32_t id = 1000;
	struct eosd_holder_exec x = ht_exec(cmd);
	struct ht_result r;

	ht_run(h, ++id, &x, NULL, &r);
	ck_assert_msg(!r.failed, "'%s': %s", cmd, r.message);
	eos_buf_release(&last_output);
	eos_buf_init(&last_output);
	eos_buf_append(&last_output, r.out.data, r.out.len);
	eos_buf_append(&last_output, r.err.data, r.err.len);
	ht_result_release(&r);
	return r.how == EOSD_HOLDER_EXIT_CODE ? r.code : 128 + r.code;
}

const char *
ht_output(void)
{
	return last_output.data ? (const char *)last_output.data : "";
}

void
ht_read_until(int fd, const char *needle, struct eos_buf *acc)
{
	while (!acc->data || !strstr((const char *)acc->data, needle)) {
		struct pollfd p = { fd, POLLIN, 0 };

		ck_assert_int_ge(poll(&p, 1, -1), 0);
		ck_assert_msg(drain(fd, acc), "output ended before '%s'", needle);
	}
}

int
ht_pidfd(pid_t pid)
{
	int fd = pidfd_open(pid, 0);

	ck_assert_msg(fd >= 0, "pidfd_open %d: %s", (int)pid, strerror(errno));
	return fd;
}

void
ht_wait_pidfd(int pidfd)
{
	struct pollfd p = { pidfd, POLLIN, 0 };

	ck_assert_int_eq(poll(&p, 1, -1), 1);
}

bool
ht_pidfd_ended(int pidfd)
{
	struct pollfd p = { pidfd, POLLIN, 0 };

	return poll(&p, 1, 0) == 1;
}
