/* SPDX-License-Identifier: MIT */
/*
 * eosd: the eos daemon. Owns the store of its state directory, serves the workspace sessions
 * and answers the gateway (doc/eosd.md). Start-up: state and runtime directories, the
 * single-instance lock, the store, the tokens, the sessions, the gateway, eosd.json; then,
 * without -f, the parent exits 0 (1 with the error when start-up failed).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/statedir.h"

#include "supervisor/auth.h"
#include "supervisor/cgroup.h"
#include "supervisor/commands.h"
#include "supervisor/gateway.h"
#include "supervisor/obs.h"
#include "supervisor/runfiles.h"
#include "supervisor/session.h"

struct args {
	const char *state_dir;
	const char *unix_path; /* --listen unix:PATH */
	const char *tcp;       /* --listen tcp:HOST:PORT */
	bool foreground, listen_any;
	bool no_obs;		     /* --no-obs, or EOS_OBS=0|off */
	struct eosd_obs_options obs; /* --obs-max-records, --obs-max-bytes (or the env) */
	uint64_t transcripts;	     /* --transcripts N: commands whose transcripts are kept */
};

static const char usage_text[] =
	"usage: eosd [--state-dir DIR] [-f] [--listen unix:PATH] [--listen tcp:127.0.0.1:PORT]\n"
	"            [--listen-any] [--version] [--help]\n"
	"\n"
	"The eos daemon: owns the store in DIR/store, serves the workspace sessions and answers\n"
	"POST /v1/<surface>/<operation> on its socket (see doc/eosd.md; eosctl drives it).\n"
	"\n"
	"  --state-dir DIR     state directory (default: $EOS_STATE_DIR, /var/lib/eos for root,\n"
	"                      else $XDG_DATA_HOME/eos)\n"
	"  -f, --foreground    stay in the foreground (default: fork once ready)\n"
	"  --listen unix:PATH  the socket (default: RUNTIME/KEY/eosd.sock, RUNTIME being\n"
	"                      $EOS_RUNTIME_DIR, /run/eos for root, else $XDG_RUNTIME_DIR/eos,\n"
	"                      and KEY a hash of the state directory)\n"
	"  --listen tcp:HOST:PORT  also listen on TCP (loopback only unless --listen-any;\n"
	"                      an IPv6 HOST in brackets: tcp:[::1]:PORT)\n"
	"  --listen-any        allow a non-loopback TCP address\n"
	"  --obs-max-records N keep at most N telemetry records (default: $EOS_OBS_MAX_RECORDS,\n"
	"                      else 200000)\n"
	"  --obs-max-bytes N   keep at most N bytes of them (default: $EOS_OBS_MAX_BYTES, else\n"
	"                      64 MiB; suffixes K, M, G)\n"
	"  --no-obs            record no telemetry (also EOS_OBS=0)\n"
	"  --transcripts N     keep the transcripts of the newest N commands (default:\n"
	"                      $EOS_TRANSCRIPTS, else 512)\n"
	"  --version           print the version\n"
	"  --help              print this help\n";

static int usage(const char *fmt, ...) EOS_PRINTF(1, 2);

static int
usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("eosd: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n(eosd --help lists the options)\n", stderr);
	return 2;
}

static int
parse_listen(struct args *a, const char *spec)
{
	if (strncmp(spec, "unix:", 5) == 0 && spec[5] == '/')
		a->unix_path = spec + 5;
	else if (strncmp(spec, "tcp:", 4) == 0)
		a->tcp = spec + 4;
	else
		return usage("--listen '%s': use unix:/ABSOLUTE/PATH or tcp:127.0.0.1:PORT", spec);
	return 0;
}

/* A count or a size ("64M"): 1 to 2^50; 0 when v is not one. */
static uint64_t
parse_size(const char *v)
{
	char *end = NULL;
	unsigned long long n;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || end == v || v[0] == '-')
		return 0;
	if (*end == 'K' || *end == 'k')
		n <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		n <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		n <<= 30, end++;
	return *end || n == 0 || n > (1ULL << 50) ? 0 : n;
}

static int
set_size(uint64_t *out, const char *what, const char *v)
{
	*out = parse_size(v);
	return *out ? 0 : usage("%s '%s': expected a number from 1 (K, M, G allowed)", what, v);
}

/* Telemetry's settings from the environment; options given later override them. */
static int
obs_from_env(struct args *a)
{
	const char *off = getenv("EOS_OBS"), *recs = getenv("EOS_OBS_MAX_RECORDS");
	const char *bytes = getenv("EOS_OBS_MAX_BYTES");

	a->no_obs = off && (!strcmp(off, "0") || !strcmp(off, "off") || !strcmp(off, "no"));
	if (recs && *recs && set_size(&a->obs.limits.max_records, "EOS_OBS_MAX_RECORDS", recs))
		return 2;
	if (bytes && *bytes && set_size(&a->obs.limits.max_bytes, "EOS_OBS_MAX_BYTES", bytes))
		return 2;
	if (getenv("EOS_TRANSCRIPTS") && *getenv("EOS_TRANSCRIPTS") &&
	    set_size(&a->transcripts, "EOS_TRANSCRIPTS", getenv("EOS_TRANSCRIPTS")))
		return 2;
	return 0;
}

/* 0 to run, 1 when done (--help, --version), 2 for a usage error. */
static int
parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "listen", required_argument, NULL, 'l' },
		{ "listen-any", no_argument, NULL, 'a' },
		{ "obs-max-records", required_argument, NULL, 'R' },
		{ "obs-max-bytes", required_argument, NULL, 'B' },
		{ "no-obs", no_argument, NULL, 'N' },
		{ "transcripts", required_argument, NULL, 'T' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	if (obs_from_env(a) != 0)
		return 2;
	while ((c = getopt_long(argc, argv, "+f", opts, NULL)) != -1) {
		switch (c) {
		case 'R':
			if (set_size(&a->obs.limits.max_records, "--obs-max-records", optarg))
				return 2;
			break;
		case 'B':
			if (set_size(&a->obs.limits.max_bytes, "--obs-max-bytes", optarg))
				return 2;
			break;
		case 'N':
			a->no_obs = true;
			break;
		case 'T':
			if (set_size(&a->transcripts, "--transcripts", optarg) ||
			    a->transcripts > 1000000)
				return a->transcripts > 1000000
					       ? usage("--transcripts '%s': at most 1000000",
						       optarg)
					       : 2;
			break;
		case 's':
			a->state_dir = optarg;
			break;
		case 'f':
			a->foreground = true;
			break;
		case 'l':
			if (parse_listen(a, optarg) != 0)
				return 2;
			break;
		case 'a':
			a->listen_any = true;
			break;
		case 'V':
			printf("eosd %s\n", PACKAGE_VERSION);
			return 1;
		case 'h':
			fputs(usage_text, stdout);
			return 1;
		default:
			return usage("%s", "unknown option");
		}
	}
	if (optind < argc)
		return usage("unexpected argument '%s'", argv[optind]);
	return 0;
}

/* --- directories ------------------------------------------------------------------------------ */

static int
resolve_state(const struct args *a, struct eosd *d, struct eos_error *err)
{
	cleanup_free char *state = NULL;
	char real[PATH_MAX];
	int r;

	if (a->state_dir)
		state = strdup(a->state_dir);
	else if (eos_default_state_dir(&state) < 0)
		return eos_error_set(err, -ENOENT,
				     "no state directory: pass --state-dir or set EOS_STATE_DIR");
	if (!state)
		return -ENOMEM;
	r = eosd_runfiles_mkdirs(state, err);
	if (r < 0)
		return r;
	if (!realpath(state, real))
		return eos_error_set(err, eos_neg_errno(), "state directory '%s': %m", state);
	d->state_dir = strdup(real);
	if (!d->state_dir || asprintf(&d->store_dir, "%s/store", real) < 0)
		return -ENOMEM;
	return 0;
}

static int
resolve_dirs(const struct args *a, struct eosd *d, char **ret_sock, struct eos_error *err)
{
	int r = resolve_state(a, d, err);

	if (r < 0)
		return r;
	r = eosd_runfiles_runtime_dir(d->state_dir, &d->runtime_dir, err);
	r = r < 0 ? r : eosd_runfiles_mkdirs(d->runtime_dir, err);
	if (r < 0)
		return r;
	if (!a->unix_path)
		return eosd_runfiles_socket(d->runtime_dir, ret_sock, err);
	*ret_sock = strdup(a->unix_path);
	return *ret_sock ? 0 : -ENOMEM;
}

/* --- start and stop --------------------------------------------------------------------------- */

struct daemon {
	struct eosd d;
	int lock_fd;
	bool sessions;
	struct eosd_gateway *gw;
};

static int
open_store(struct eosd *d, struct eos_error *err)
{
	struct eos_store_options opts = { .create = true, .owner_name = "eosd" };
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int r = eos_store_wait_from_env(&opts.wait_ms, err);

	/* RocksDB's compactions get half the cores: the daemon's threads stay within 2 x cores
	 * + 8 (doc/eosd.md, "Threads") */
	opts.threads = (unsigned)EOS_MAX(1, cores / 2);

	if (r < 0)
		return r;
	return eos_store_open(d->store_dir, &opts, &d->store, err);
}

/* The last component of the runtime dir: the key of this state directory (doc/eosd.md). */
static const char *
runtime_key(const struct eosd *d)
{
	const char *slash = strrchr(d->runtime_dir, '/');

	return slash ? slash + 1 : d->runtime_dir;
}

static int
start(struct daemon *dm, const struct args *a, const char *sock, struct eos_error *err)
{
	struct eosd_gateway_options gopts = { sock, a->tcp, a->listen_any };
	struct eosd *d = &dm->d;
	int r;

	r = eosd_runfiles_lock(d->state_dir, &dm->lock_fd, err);
	r = r < 0 ? r : open_store(d, err);
	r = r < 0 || a->no_obs ? r : eosd_obs_new(d->store, &a->obs, &d->obs, err);
	r = r < 0 ? r : eosd_cgroups_new(runtime_key(d), d->obs, &d->cgroups, err);
	r = r < 0 ? r : eosd_auth_open(d->state_dir, &d->auth, err);
	r = r < 0 ? r : eosd_commands_new(d, (unsigned)a->transcripts, &d->commands, err);
	if (r < 0)
		return r;
	r = eosd_sessions_start(d, err);
	if (r < 0)
		return eos_error_prefix(err, r, "start the sessions");
	dm->sessions = true;
	r = eosd_gateway_new(d, &gopts, &dm->gw, err);
	r = r < 0 ? r
		  : eosd_runfiles_write(d->state_dir, sock, eosd_gateway_tcp(dm->gw),
					d->runtime_dir, err);
	return r;
}

static void
stop(struct daemon *dm)
{
	struct eosd *d = &dm->d;

	d->stopping = true;
	eosd_commands_quiesce(d->commands); /* replies waiting for commands go out now */
	eosd_gateway_free(dm->gw);	    /* waits for running handlers, removes the socket */
	eosd_commands_free(d->commands);    /* every session's processes end */
	d->commands = NULL;
	if (dm->sessions)
		eosd_sessions_stop(d);
	eosd_cgroups_free(d->cgroups);
	eosd_obs_free(d->obs); /* writes what is still queued */
	eosd_auth_free(d->auth);
	eos_store_close(d->store);
	if (d->state_dir && dm->lock_fd >= 0)
		eosd_runfiles_remove(d->state_dir);
	if (dm->lock_fd >= 0)
		close(dm->lock_fd);
	free(d->state_dir);
	free(d->store_dir);
	free(d->runtime_dir);
}

/* --- the background ----------------------------------------------------------------------------
 */

/* The parent: wait for the child's word ("" ready, else its error) and exit with it. */
static int
wait_child(int fd, const char *state_dir)
{
	char msg[EOS_ERROR_MSG_MAX + 1];
	size_t len = 0;
	ssize_t n;

	while (len < sizeof(msg) - 1 && (n = read(fd, msg + len, sizeof(msg) - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += (size_t)n;
	}
	msg[len] = '\0';
	if (len == 1 && msg[0] == '\n')
		return 0;
	if (len == 0)
		fprintf(stderr, "eosd: start-up failed (see '%s/eosd.log')\n", state_dir);
	else
		fprintf(stderr, "eosd: %s\n", msg);
	return 1;
}

/* Fork: the parent waits; the child returns with *ret_fd to notify. */
static int
go_background(const char *state_dir, int *ret_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		perror("eosd: fork");
		exit(1);
	}
	if (pid > 0) {
		close(p[1]);
		exit(wait_child(p[0], state_dir));
	}
	close(p[0]);
	(void)setsid();
	*ret_fd = p[1];
	return 0;
}

/* Ready: tell the parent, and send the output to <state>/eosd.log from now on. */
static void
detach(int notify_fd, const char *state_dir)
{
	cleanup_free char *log = NULL;
	int fd;

	if (notify_fd < 0)
		return;
	(void)!write(notify_fd, "\n", 1);
	close(notify_fd);
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		close(fd);
	}
	if (asprintf(&log, "%s/eosd.log", state_dir) >= 0 &&
	    (fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) >= 0) {
		dup2(fd, STDERR_FILENO);
		close(fd);
	}
}

static int
fail(int notify_fd, int r, const struct eos_error *err)
{
	const char *msg = eos_error_message(err, r);

	if (notify_fd >= 0)
		(void)!write(notify_fd, msg, strlen(msg));
	else
		eos_log_error("%s", msg);
	return 1;
}

int
main(int argc, char **argv)
{
	struct daemon dm = { .lock_fd = -1 };
	struct eos_error err = { 0 };
	cleanup_free char *sock = NULL;
	struct args a = { 0 };
	int notify = -1, r;

	eos_log_set_program("eosd");
	eos_log_init_from_env();
	r = parse_args(argc, argv, &a);
	if (r != 0)
		return r == 1 ? 0 : 2;
	signal(SIGPIPE, SIG_IGN);
	dm.d.started_ns = eos_mono_ns();
	r = resolve_dirs(&a, &dm.d, &sock, &err);
	if (r < 0)
		return fail(-1, r, &err);
	if (!a.foreground)
		go_background(dm.d.state_dir, &notify);
	r = start(&dm, &a, sock, &err);
	if (r < 0) {
		stop(&dm);
		return fail(notify, r, &err);
	}
	eos_log_info("ready in %.1f ms: socket '%s'",
		     (double)(eos_mono_ns() - dm.d.started_ns) / 1e6, sock);
	detach(notify, dm.d.state_dir);
	r = eosd_gateway_run(dm.gw, &err);
	if (r < 0)
		eos_log_error("%s", err.msg);
	stop(&dm);
	eos_log_info("stopped");
	return r < 0 ? 1 : 0;
}
