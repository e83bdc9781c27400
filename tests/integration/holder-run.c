/* SPDX-License-Identifier: MIT */
/*
 * holder-run: run one command in a session's namespace through eosd's holder client, as a
 * test tool (and a small model of what eosd's exec does).
 *
 *	holder-run [OPTIONS] --view DIR -- CMD
 *	  --none		isolation none (no namespaces)
 *	  --isolated		an isolated network (loopback only)
 *	  --tty			a pty (default: pipes)
 *	  --stdin		pass this process's stdin to the command (EOF closes it)
 *	  --cwd PATH		start in PATH inside the workspace
 *	  --mask DIR		hide DIR (repeatable)
 *	  --hostname NAME	(default eos-test)
 *	  --pids FILE		write "SUBREAPER_PID SHELL_PID INIT_PID" (host pids) at start
 *	  --wait-gone		exit only when every process of the command has ended
 * The holder is $EOS_HOLDER or $top_builddir/supervisor/holder/eos-holder. The command's
 * stdout and stderr (or the pty's output) are copied to ours. Exit status: the command's, or
 * 128 + its signal; 125 when the holder failed (the message on stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervisor/holder-client.h"
#include "supervisor/seccomp.h"

struct opts {
	struct eosd_holder_plan plan;
	const char *masks[16];
	struct eosd_holder_exec x;
	const char *pids_file;
	bool pass_stdin, wait_gone;
};

struct run {
	struct eosd_holder *h;
	int out[2]; /* the command's output fds (pty master or stdout/stderr) */
	int in;	    /* its stdin pipe or the pty master */
	bool exited, gone, pass_stdin;
	int status;
	pid_t init_pid;
};

static int
usage(void)
{
	fprintf(stderr,
		"usage: holder-run [--none] [--isolated] [--tty] [--stdin] [--cwd P] "
		"[--mask D]... [--hostname H] [--pids F] [--wait-gone] --view DIR -- CMD\n");
	return 2;
}

static int
parse(int argc, char **argv, struct opts *o)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--") == 0)
			break;
		if (strcmp(a, "--none") == 0)
			o->plan.isolation = EOSD_HOLDER_NONE;
		else if (strcmp(a, "--isolated") == 0)
			o->plan.network = EOSD_HOLDER_ISOLATED;
		else if (strcmp(a, "--tty") == 0)
			o->x.tty = true;
		else if (strcmp(a, "--stdin") == 0)
			o->pass_stdin = true;
		else if (strcmp(a, "--wait-gone") == 0)
			o->wait_gone = true;
		else if (v && strcmp(a, "--view") == 0)
			o->plan.view = argv[++i];
		else if (v && strcmp(a, "--cwd") == 0)
			o->x.cwd = argv[++i];
		else if (v && strcmp(a, "--hostname") == 0)
			o->plan.hostname = argv[++i];
		else if (v && strcmp(a, "--pids") == 0)
			o->pids_file = argv[++i];
		else if (v && strcmp(a, "--mask") == 0 && o->plan.n_masks < 16)
			o->masks[o->plan.n_masks++] = argv[++i];
		else
			return -1;
	}
	if (i + 2 != argc || !o->plan.view)
		return -1;
	o->x.cmd = argv[i + 1];
	o->plan.masks = o->masks;
	o->x.stdin_pipe = o->pass_stdin;
	return 0;
}

static char *
holder_path(void)
{
	static char buf[4096];
	const char *b = getenv("top_builddir");

	if (getenv("EOS_HOLDER"))
		return getenv("EOS_HOLDER");
	snprintf(buf, sizeof(buf), "%s/supervisor/holder/eos-holder", b ? b : ".");
	return buf;
}

static void
write_pids(const char *file, const struct eosd_holder_event *ev, pid_t init_pid)
{
	FILE *f = fopen(file, "we");

	if (!f)
		return;
	fprintf(f, "%d %d %d\n", (int)ev->subreaper_pid, (int)ev->shell_pid, (int)init_pid);
	fclose(f);
}

static int
on_event(struct run *r, const struct opts *o, struct eosd_holder_event *ev)
{
	switch (ev->kind) {
	case EOSD_HOLDER_STARTED:
		if (o->pids_file)
			write_pids(o->pids_file, ev, r->init_pid);
		r->out[0] = ev->fd_pty >= 0 ? ev->fd_pty : ev->fd_stdout;
		r->out[1] = ev->fd_stderr;
		r->in = ev->fd_pty >= 0 ? ev->fd_pty : ev->fd_stdin;
		ev->fd_pty = ev->fd_stdout = ev->fd_stderr = ev->fd_stdin = -1;
		return 0;
	case EOSD_HOLDER_EXITED:
		r->exited = true;
		r->status = ev->how == EOSD_HOLDER_EXIT_CODE ? ev->code : 128 + ev->code;
		return 0;
	case EOSD_HOLDER_GONE:
		r->gone = true;
		return 0;
	case EOSD_HOLDER_EXEC_FAILED:
	case EOSD_HOLDER_REFUSED:
	case EOSD_HOLDER_ABORTED:
	case EOSD_HOLDER_DIED:
		fprintf(stderr, "holder-run: %s\n", ev->message);
		return -1;
	case EOSD_HOLDER_READY:
	case EOSD_HOLDER_SETUP_FAILED:
	case EOSD_HOLDER_PROC:
	case EOSD_HOLDER_PROC_END:
	case EOSD_HOLDER_BYE:
		return 0;
	}
	return 0;
}

/* Copy what fd has to ours; false at its end. */
static bool
copy_out(int fd, int to)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n <= 0)
		return n < 0 && errno == EAGAIN;
	return write(to, buf, (size_t)n) == n;
}

static void
copy_in(struct run *r)
{
	char buf[65536];
	ssize_t n = read(0, buf, sizeof(buf));

	if (n > 0 && write(r->in, buf, (size_t)n) == n)
		return;
	r->pass_stdin = false;
	if (r->in >= 0 && r->out[0] != r->in)
		close(r->in);
	else if (r->in >= 0)
		(void)write(r->in, "\x04", 1); /* a tty's end of input */
}

static bool
done(const struct run *r, const struct opts *o)
{
	return r->exited && r->out[0] < 0 && r->out[1] < 0 && (!o->wait_gone || r->gone);
}

static int
loop(struct run *r, const struct opts *o)
{
	while (!done(r, o)) {
		struct pollfd p[4] = { { eosd_holder_fd(r->h), POLLIN, 0 },
				       { r->out[0], POLLIN, 0 },
				       { r->out[1], POLLIN, 0 },
				       { r->pass_stdin && r->in >= 0 ? 0 : -1, POLLIN, 0 } };
		struct eosd_holder_event ev;
		struct eos_error err = { 0 };

		if (poll(p, 4, -1) < 0)
			return 125;
		for (int i = 0; i < 2; i++)
			if (p[i + 1].revents && !copy_out(r->out[i], i + 1)) {
				close(r->out[i]);
				r->out[i] = -1;
			}
		if (p[3].revents)
			copy_in(r);
		if (!p[0].revents)
			continue;
		int rc = eosd_holder_next(r->h, &ev, &err);
		if (rc < 0 && rc != -EAGAIN) {
			fprintf(stderr, "holder-run: %s\n", err.msg);
			return 125;
		}
		if (rc == 0 && on_event(r, o, &ev) < 0)
			return 125;
		eosd_holder_event_release(&ev);
	}
	return r->status;
}

int
main(int argc, char **argv)
{
	struct opts o = { .plan = { .hostname = "eos-test", .rlimit_nofile = 4096 } };
	const char *env[] = { "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/tmp",
			      "TERM=dumb", "LC_ALL=C" };
	struct run r = { .out = { -1, -1 }, .in = -1 };
	struct eos_error err = { 0 };
	uint8_t *bpf = NULL;
	size_t bpf_len = 0;
	int rc;

	if (parse(argc, argv, &o) < 0)
		return usage();
	o.x.env = env;
	o.x.n_env = 4;
	r.pass_stdin = o.pass_stdin;
	if (eosd_seccomp_build(&bpf, &bpf_len, &err) < 0) {
		fprintf(stderr, "holder-run: %s\n", err.msg);
		return 125;
	}
	o.plan.seccomp = bpf;
	o.plan.seccomp_len = bpf_len;
	rc = eosd_holder_spawn(holder_path(), &o.plan, &r.h, &err);
	if (rc == 0)
		rc = eosd_holder_wait_ready(r.h, 30000, &err);
	if (rc == 0)
		rc = eosd_holder_exec(r.h, 1, &o.x, &err);
	if (rc < 0) {
		fprintf(stderr, "holder-run: %s\n", err.msg);
		eosd_holder_free(r.h);
		free(bpf);
		return 125;
	}
	r.init_pid = eosd_holder_init_pid(r.h);
	fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
	rc = loop(&r, &o);
	eosd_holder_free(r.h);
	free(bpf);
	return rc;
}
