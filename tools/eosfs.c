/* SPDX-License-Identifier: MIT */
/*
 * eosfs: mount workspace session views (or a published version, read-only) without a daemon.
 * One process owns the store and serves every mount given on its command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/statedir.h"

#include "fs/view.h"
#include "store/store.h"

enum {
	MAX_MOUNTS = 64,
	OPT_PID_FILE = 256,
	OPT_READ_ONLY,
	OPT_VERSION,
	OPT_HELP,
	OPT_WRITEBACK,
};

struct mount {
	const char *session; /* NULL: read-only version */
	char *mountpoint;
	struct eos_view *view;
	struct eos_view_mount *m;
	pthread_t thread;
	bool running;
	_Atomic bool finished; /* the serving thread is about to return */
};

struct eosfs {
	char *store_dir;
	const char *sandbox;
	const char *fuse_opts;
	const char *pid_file;
	const char *version;
	bool read_only;
	bool foreground;
	bool writeback; /* --writeback: the kernel's writeback cache */
	struct mount mounts[MAX_MOUNTS];
	size_t n;
	const char *positional;
	struct eos_store *store;
	pthread_t main_thread;
	int ready_fd; /* pipe to the waiting parent, or -1 */
};

static void
usage(FILE *f)
{
	fputs("usage: eosfs [--store DIR] --sandbox ID --session NAME [-f] [-o OPTS] "
	      "[--pid-file F] MOUNTPOINT\n"
	      "       eosfs [--store DIR] --sandbox ID --session NAME:MOUNTPOINT "
	      "[--session NAME2:MP2 ...]\n"
	      "       eosfs [--store DIR] --sandbox ID --version L --read-only MOUNTPOINT\n"
	      "\n"
	      "Mount workspace session NAME of sandbox ID: the store at the session's leased\n"
	      "version with the session's private changes on top. A new session is created on\n"
	      "the current head; an existing one is resumed with its changes intact.\n"
	      "\n"
	      "  --store DIR        the store (default $EOS_STORE, $EOS_STATE_DIR/store,\n"
	      "                     ~/.local/share/eos/store)\n"
	      "  --sandbox ID       the sandbox\n"
	      "  --session NAME     the session; NAME:MOUNTPOINT (repeatable) serves several\n"
	      "                     sessions from this one process\n"
	      "  --version L        with --read-only: mount published version L (L000003, L3, 3)\n"
	      "  --read-only        mount a published version; writes fail with EROFS\n"
	      "  -f, --foreground   serve in the foreground (default: return once mounted)\n"
	      "  -o OPTS            extra FUSE mount options (comma-separated)\n"
	      "  --pid-file F       write the serving process id to F\n"
	      "  --writeback        let the kernel cache writes: faster small writes, but writes\n"
	      "                     are attributed per file (not per open file), SEEK_DATA/HOLE\n"
	      "                     do not see cached writes, and mtimes of files written just\n"
	      "                     before an unmount may be lost\n"
	      "  -h, --help         this text\n"
	      "\n"
	      "Unmount with `fusermount3 -u MOUNTPOINT` or SIGTERM/SIGINT to the process; it\n"
	      "exits when all its mounts are gone. Writes are attributed to the operation named\n"
	      "by EOS_OPERATION in the writing process's environment, else to the session.\n"
	      "The store is owned by one process at a time: eosfs refuses (naming the owner's\n"
	      "pid) while another process has it open.\n",
	      f);
}

static int
add_session(struct eosfs *e, char *arg)
{
	char *colon = strchr(arg, ':');

	if (e->n == MAX_MOUNTS) {
		fprintf(stderr, "eosfs: more than %d sessions\n", MAX_MOUNTS);
		return -1;
	}
	e->mounts[e->n].session = arg;
	if (colon) {
		*colon = 0;
		e->mounts[e->n].mountpoint = colon + 1;
	}
	e->n++;
	return 0;
}

static int
parse(struct eosfs *e, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "sandbox", required_argument, NULL, 'x' },
		{ "session", required_argument, NULL, 'S' },
		{ "version", required_argument, NULL, OPT_VERSION },
		{ "read-only", no_argument, NULL, OPT_READ_ONLY },
		{ "foreground", no_argument, NULL, 'f' },
		{ "pid-file", required_argument, NULL, OPT_PID_FILE },
		{ "writeback", no_argument, NULL, OPT_WRITEBACK },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "fho:", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			e->store_dir = strdup(optarg);
			break;
		case 'x':
			e->sandbox = optarg;
			break;
		case 'S':
			if (add_session(e, optarg) < 0)
				return 2;
			break;
		case OPT_VERSION:
			e->version = optarg;
			break;
		case OPT_READ_ONLY:
			e->read_only = true;
			break;
		case 'f':
			e->foreground = true;
			break;
		case 'o':
			e->fuse_opts = optarg;
			break;
		case OPT_PID_FILE:
			e->pid_file = optarg;
			break;
		case OPT_WRITEBACK:
			e->writeback = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		e->positional = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "eosfs: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	return 0;
}

static int
arg_error(const char *msg)
{
	fprintf(stderr, "eosfs: %s (see eosfs --help)\n", msg);
	return 2;
}

static int
check_args(struct eosfs *e)
{
	if (!e->sandbox)
		return arg_error("--sandbox ID is required");
	if (e->read_only) {
		if (!e->version || e->n > 0)
			return arg_error("--read-only takes --version L and no --session");
		if (!e->positional)
			return arg_error("MOUNTPOINT is missing");
		e->mounts[0] = (struct mount){ .mountpoint = (char *)e->positional };
		e->n = 1;
		return 0;
	}
	if (e->version)
		return arg_error("--version L mounts a published version: add --read-only");
	if (e->n == 0)
		return arg_error("--session NAME is required (or --version L --read-only)");
	if (e->n == 1 && !e->mounts[0].mountpoint) {
		if (!e->positional)
			return arg_error("MOUNTPOINT is missing");
		e->mounts[0].mountpoint = (char *)e->positional;
		return 0;
	}
	if (e->positional)
		return arg_error("with several sessions, give each as --session NAME:MOUNTPOINT");
	for (size_t i = 0; i < e->n; i++)
		if (!e->mounts[i].mountpoint || !e->mounts[i].mountpoint[0])
			return arg_error("with several sessions, each needs NAME:MOUNTPOINT");
	return 0;
}

/* --- start-up --------------------------------------------------------------------------------- */

static void
report(struct eosfs *e, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (e->ready_fd >= 0) {
		dprintf(e->ready_fd, "eosfs: %s\n", msg);
	} else {
		fprintf(stderr, "eosfs: %s\n", msg);
	}
}

static int
open_store(struct eosfs *e)
{
	struct eos_store_options o = { 0 };
	struct eos_error err = { 0 };
	struct stat st;
	int r;

	if (!e->store_dir && eos_default_store_dir(&e->store_dir) < 0) {
		report(e, "no store: pass --store DIR or set $EOS_STORE or $HOME");
		return -ENOENT;
	}
	if (stat(e->store_dir, &st) < 0) {
		report(e, "store '%s' does not exist (create one with eos-store import)",
		       e->store_dir);
		return -ENOENT;
	}
	r = eos_store_open(e->store_dir, &o, &e->store, &err);
	if (r < 0)
		report(e, "%s", err.msg);
	return r;
}

static int
open_views(struct eosfs *e)
{
	struct eos_error err = { 0 };
	uint64_t v = 0;

	if (e->version && eos_layer_id_parse(e->version, &v) < 0) {
		report(e, "--version '%s' is not a layer id (L000003, L3 or 3)", e->version);
		return -EINVAL;
	}
	for (size_t i = 0; i < e->n; i++) {
		struct mount *m = &e->mounts[i];
		struct eos_view_options o = { .store = e->store,
					      .sandbox = e->sandbox,
					      .session = m->session,
					      .create = true,
					      .version = v,
					      .resolve = eos_view_resolve_environ,
					      .writeback = e->writeback };
		int r = eos_view_open(&o, &m->view, &err);

		if (r == 0)
			r = eos_view_mount(m->view, m->mountpoint, e->fuse_opts, &m->m, &err);
		if (r < 0) {
			report(e, "%s", err.msg);
			return r;
		}
	}
	return 0;
}

static int
write_pid_file(struct eosfs *e)
{
	FILE *f;

	if (!e->pid_file)
		return 0;
	f = fopen(e->pid_file, "we");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0) {
		report(e, "pid file '%s': %s", e->pid_file, strerror(errno));
		return -EIO;
	}
	return 0;
}

static void
raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Without -f: the parent waits until the child mounted everything (or failed) and exits. */
static int
daemonize(struct eosfs *e)
{
	int fds[2];
	char buf[1024];
	ssize_t n;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		perror("eosfs: fork");
		return -1;
	}
	if (pid > 0) {
		close(fds[1]);
		n = read(fds[0], buf, sizeof(buf) - 1);
		if (n == 3 && memcmp(buf, "ok\n", 3) == 0)
			exit(0);
		if (n > 0)
			fwrite(buf, 1, (size_t)n, stderr);
		else
			fputs("eosfs: the serving process died while mounting\n", stderr);
		exit(1);
	}
	close(fds[0]);
	e->ready_fd = fds[1];
	setsid();
	return 0;
}

static void
ready(struct eosfs *e)
{
	int null;

	if (e->ready_fd < 0)
		return;
	if (write(e->ready_fd, "ok\n", 3) != 3)
		eos_log_error("eosfs: cannot tell the parent that the mounts are ready");
	close(e->ready_fd);
	e->ready_fd = -1;
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		close(null);
	}
}

/* --- serving ---------------------------------------------------------------------------------- */

static struct eosfs *the_eosfs;

static void *
serve(void *arg)
{
	struct mount *m = arg;
	struct eos_error err = { 0 };

	if (eos_view_mount_serve(m->m, &err) < 0)
		eos_log_error("eosfs: %s", err.msg);
	atomic_store(&m->finished, true);
	pthread_kill(the_eosfs->main_thread, SIGUSR1);
	return NULL;
}

static bool
all_done(struct eosfs *e)
{
	for (size_t i = 0; i < e->n; i++)
		if (e->mounts[i].running && atomic_load(&e->mounts[i].finished)) {
			pthread_join(e->mounts[i].thread, NULL);
			e->mounts[i].running = false;
		}
	for (size_t i = 0; i < e->n; i++)
		if (e->mounts[i].running)
			return false;
	return true;
}

static int
run(struct eosfs *e, const sigset_t *set)
{
	int sig;

	the_eosfs = e;
	e->main_thread = pthread_self();
	for (size_t i = 0; i < e->n; i++) {
		if (pthread_create(&e->mounts[i].thread, NULL, serve, &e->mounts[i]) != 0) {
			report(e, "cannot start a serving thread");
			return -EAGAIN;
		}
		e->mounts[i].running = true;
	}
	ready(e);
	while (!all_done(e)) {
		if (sigwait(set, &sig) != 0 || sig == SIGUSR1)
			continue;
		for (size_t i = 0; i < e->n; i++)
			eos_view_mount_stop(e->mounts[i].m);
	}
	return 0;
}

static void
teardown(struct eosfs *e)
{
	for (size_t i = 0; i < e->n; i++) {
		eos_view_mount_free(e->mounts[i].m);
		eos_view_close(e->mounts[i].view);
	}
	eos_store_close(e->store);
	if (e->pid_file)
		unlink(e->pid_file);
	free(e->store_dir);
}

int
main(int argc, char **argv)
{
	struct eosfs e = { .ready_fd = -1 };
	sigset_t set;
	int r = parse(&e, argc, argv);

	if (r == 0)
		r = check_args(&e);
	if (r != 0)
		return r;
	raise_fd_limit();
	if (!e.foreground && daemonize(&e) < 0)
		return 1;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	r = open_store(&e);
	r = r ?: open_views(&e);
	r = r ?: write_pid_file(&e);
	r = r ?: run(&e, &set);
	teardown(&e);
	return r < 0 ? 1 : 0;
}
