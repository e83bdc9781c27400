/* SPDX-License-Identifier: MIT */
/*
 * eosfs: mount workspace session views (or a published version, read-only) without a daemon.
 * One process owns the store and serves every mount given on its command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/quote.h"
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
	OPT_OWNERS,
};

struct mount {
	const char *session; /* NULL: read-only version */
	char *mountpoint;
	struct eos_view *view;
	struct eos_view_mount *m;
	bool created; /* this eosfs created the session: removed again if start-up fails */
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
	enum eos_view_owners owners;
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
	      "  --owners MODE      how files show the owners the store recorded: 'identity'\n"
	      "                     (as recorded; the default as root) or 'squash' (every\n"
	      "                     file is yours, your new files are recorded with the\n"
	      "                     owner of the sandbox's root; the default otherwise)\n"
	      "  --writeback        let the kernel cache writes: faster small writes, but writes\n"
	      "                     are attributed per file (not per open file), SEEK_DATA/HOLE\n"
	      "                     do not see cached writes, and mtimes of files written just\n"
	      "                     before an unmount may be lost\n"
	      "  -h, --help         this text\n"
	      "\n"
	      "The kernel checks access against the modes and owners shown; as root the mounts\n"
	      "are open to other users (allow_other). Mounts are always nosuid,nodev.\n"
	      "Unmount with `fusermount3 -u MOUNTPOINT` or SIGTERM/SIGINT to the process; it\n"
	      "exits when all its mounts are gone. Writes are attributed to the operation named\n"
	      "by EOS_OPERATION in the writing process's environment, else to the session.\n"
	      "The store is owned by one process at a time: eosfs refuses (naming the owner's\n"
	      "pid) while another process has it open, after waiting up to $EOS_STORE_WAIT\n"
	      "seconds (default 5) for one that is shutting down. A start-up that fails leaves\n"
	      "no new session behind.\n",
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
parse_owners(const char *arg, enum eos_view_owners *ret)
{
	if (strcmp(arg, "identity") == 0)
		*ret = EOS_VIEW_OWNERS_IDENTITY;
	else if (strcmp(arg, "squash") == 0)
		*ret = EOS_VIEW_OWNERS_SQUASH;
	else {
		fprintf(stderr, "eosfs: --owners '%s': expected 'identity' or 'squash'\n", arg);
		return -1;
	}
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
		{ "owners", required_argument, NULL, OPT_OWNERS },
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
		case OPT_OWNERS:
			if (parse_owners(optarg, &e->owners) < 0)
				return 2;
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
	cleanup_free char *q = NULL;
	const char *text;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	text = eos_quote_cstr(msg, true, &q); /* a crafted name never forges a line */
	if (e->ready_fd >= 0) {
		dprintf(e->ready_fd, "eosfs: %s\n", text);
	} else {
		fprintf(stderr, "eosfs: %s\n", text);
	}
}

/* Opening waits for an owner that is shutting down; stderr is still the caller's terminal. */
static void
say_waiting(void *ctx, const char *message)
{
	cleanup_free char *q = NULL;

	(void)ctx;
	fprintf(stderr, "eosfs: %s\n", eos_quote_cstr(message, true, &q));
}

static int
open_store(struct eosfs *e)
{
	struct eos_store_options o = { .on_wait = say_waiting };
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
	r = eos_store_wait_from_env(&o.wait_ms, &err);
	r = r ?: eos_store_open(e->store_dir, &o, &e->store, &err);
	if (r < 0)
		report(e, "%s", err.msg);
	return r;
}

/* Two mounts of one session, or two sessions on one mount point, cannot both be served. */
static int
check_unique(struct eosfs *e, size_t i)
{
	const struct mount *m = &e->mounts[i];

	for (size_t j = 0; j < i; j++) {
		if (m->session && e->mounts[j].session &&
		    !strcmp(m->session, e->mounts[j].session)) {
			report(e, "session '%s' is given twice", m->session);
			return -EINVAL;
		}
		if (strcmp(m->mountpoint, e->mounts[j].mountpoint) == 0) {
			report(e, "mountpoint '%s' is given twice", m->mountpoint);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * Check everything that can be checked before the store changes: a failed start-up must not
 * leave a new session (and its lease) behind. What only mounting can tell (FUSE options, the
 * mount itself) is undone by teardown() instead.
 */
static int
preflight(struct eosfs *e, uint64_t *ret_version)
{
	struct eos_sandbox_info sb;
	struct eos_error err = { 0 };
	int r;

	if (e->version && eos_layer_id_parse(e->version, ret_version) < 0) {
		report(e, "--version '%s' is not a layer id (L000003, L3 or 3)", e->version);
		return -EINVAL;
	}
	r = eos_store_sandbox_get(e->store, e->sandbox, &sb, &err);
	for (size_t i = 0; i < e->n && r == 0; i++) {
		const struct mount *m = &e->mounts[i];

		r = m->session ? eos_session_name_check(m->session, &err) : 0;
		r = r ?: eos_view_mountpoint_check(m->mountpoint, &err);
		if (r == 0 && (r = check_unique(e, i)) < 0)
			return r;
	}
	if (r < 0)
		report(e, "%s", err.msg);
	return r;
}

static int
open_views(struct eosfs *e)
{
	const struct eos_view_mount_options mo = { .fuse_opts = e->fuse_opts, .owners = e->owners };
	struct eos_session_info info;
	struct eos_error err = { 0 };
	uint64_t v = 0;
	int r = preflight(e, &v);

	if (r < 0)
		return r;
	for (size_t i = 0; i < e->n; i++) {
		struct mount *m = &e->mounts[i];
		struct eos_view_options o = { .store = e->store,
					      .sandbox = e->sandbox,
					      .session = m->session,
					      .create = true,
					      .version = v,
					      .resolve = eos_view_resolve_environ,
					      .writeback = e->writeback };

		m->created = m->session && eos_store_session_get(e->store, e->sandbox, m->session,
								 &info, NULL) == -ENOENT;
		r = eos_view_open(&o, &m->view, &err);
		if (r == 0)
			r = eos_view_mount(m->view, m->mountpoint, &mo, &m->m, &err);
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

/*
 * One malloc arena per core instead of glibc's eight: each of the sixteen serving threads would
 * otherwise get an arena of its own, and arenas keep what a storm of creates and deletes freed
 * (bench/churn: eosfs settled 14 MB above its start with the default, 5 MB with this).
 */
static void
limit_arenas(void)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	mallopt(M_ARENA_MAX, (int)EOS_MAX(cores, 2L));
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

/*
 * What the serving child says on fd: "ok\n" as soon as every mount is live, else its error
 * messages until it exits (end of file: it has torn everything down and closed the store).
 */
static ssize_t
read_report(int fd, char *buf, size_t size)
{
	size_t have = 0;
	ssize_t n;

	while (have < size && (n = read(fd, buf + have, size - have)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		have += (size_t)n;
		if (have == 3 && memcmp(buf, "ok\n", 3) == 0)
			break;
	}
	/* a report longer than buf: drain the rest, so the wait is for the child's exit */
	while (have == size && read(fd, (char[256]){ 0 }, 256) > 0)
		;
	return (ssize_t)have;
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
		n = read_report(fds[0], buf, sizeof(buf));
		if (n == 3 && memcmp(buf, "ok\n", 3) == 0)
			exit(0);
		if (n > 0)
			fwrite(buf, 1, (size_t)n, stderr);
		else
			fputs("eosfs: the serving process died while mounting\n", stderr);
		/* the child has closed the store: a command run next finds it free */
		waitpid(pid, NULL, 0);
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

/*
 * Tell later openers of the store which mounts we serve (the device of each mount point, through
 * our own serving threads): once all are unmounted, we are shutting down and they wait for us.
 */
static void
note_serving(struct eosfs *e)
{
	struct eos_error err = { 0 };
	dev_t devs[MAX_MOUNTS];
	struct stat sb;
	size_t n = 0;

	for (size_t i = 0; i < e->n; i++)
		if (stat(e->mounts[i].mountpoint, &sb) == 0)
			devs[n++] = sb.st_dev;
	if (eos_store_set_serving(e->store, devs, n, &err) < 0)
		eos_log_warn("eosfs: %s, ignoring", err.msg);
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
	note_serving(e);
	ready(e);
	while (!all_done(e)) {
		if (sigwait(set, &sig) != 0 || sig == SIGUSR1)
			continue;
		for (size_t i = 0; i < e->n; i++)
			eos_view_mount_stop(e->mounts[i].m);
	}
	return 0;
}

/* With failed (start-up did not finish), also remove the sessions this process created. */
static void
teardown(struct eosfs *e, bool failed)
{
	struct eos_error err = { 0 };

	for (size_t i = 0; i < e->n; i++) {
		struct mount *m = &e->mounts[i];

		eos_view_mount_free(m->m);
		eos_view_close(m->view);
		if (failed && m->created &&
		    eos_store_session_remove(e->store, e->sandbox, m->session, &err) < 0)
			report(e, "cannot remove the new session '%s' again: %s", m->session,
			       err.msg);
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
	bool started;
	sigset_t set;
	int r = parse(&e, argc, argv);

	if (r == 0)
		r = check_args(&e);
	if (r != 0)
		return r;
	raise_fd_limit();
	limit_arenas();
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
	started = r == 0;
	r = r ?: run(&e, &set);
	teardown(&e, !started);
	return r < 0 ? 1 : 0;
}
