/* SPDX-License-Identifier: MIT */
/*
 * eosctl-daemon: finding eosd (its state directory, <state>/eosd.json, the surface tokens),
 * starting it when none answers, and `eosctl daemon start|stop|status`.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json.h"
#include "common/path.h"
#include "common/statedir.h"

#include "cli/eosctl.h"
#include "cli/http.h"

enum {
	TOKEN_FILE_MAX = 4096,
	HEALTH_TIMEOUT_MS = 2000,
	STOP_TIMEOUT_MS = 60000,
	RACE_WAIT_MS = 10000, /* for an eosd another eosctl is starting */
	LOG_TAIL_MAX = 2048,
};

void
eosctl_daemon_info_release(struct eosctl_daemon_info *info)
{
	if (!info)
		return;
	free(info->socket);
	free(info->tcp);
	free(info->version);
	free(info->runtime_dir);
	*info = (struct eosctl_daemon_info){ 0 };
}

int
eosctl_daemon_state_dir(const struct eosctl_cmd *cmd, char **ret, struct eos_error *err)
{
	cleanup_free char *dir = NULL;
	char cwd[PATH_MAX];
	int r;

	if (cmd->state_dir)
		dir = strdup(cmd->state_dir);
	else if ((r = eos_default_state_dir(&dir)) < 0)
		return eos_error_set(err, r,
				     "no state directory: set --state-dir, $EOS_STATE_DIR, "
				     "$XDG_DATA_HOME or $HOME");
	if (!dir)
		return eos_error_set(err, -ENOMEM, "out of memory");
	if (dir[0] != '/') {
		cleanup_free char *rel = TAKE_PTR(dir);

		if (!getcwd(cwd, sizeof(cwd)) || eos_path_join(cwd, rel, &dir) < 0)
			return eos_error_set(err, -ENOMEM,
					     "state directory '%s': cannot make it "
					     "absolute",
					     rel);
	}
	*ret = TAKE_PTR(dir);
	return 0;
}

/* Whether pid is alive (not a zombie) and is an eosd. */
static bool
pid_is_eosd(long pid)
{
	char path[64], comm[64] = "", stat[256] = "";
	cleanup_fclose FILE *f = NULL;
	cleanup_fclose FILE *s = NULL;
	const char *paren;

	if (pid <= 0 || kill((pid_t)pid, 0) < 0)
		return pid > 0 && errno == EPERM;
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	if ((f = fopen(path, "re")) && fgets(comm, sizeof(comm), f))
		comm[strcspn(comm, "\n")] = '\0';
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((s = fopen(path, "re")) && fgets(stat, sizeof(stat), s) &&
	    (paren = strrchr(stat, ')')) && paren[1] == ' ' && paren[2] == 'Z')
		return false;
	return strcmp(comm, "eosd") == 0;
}

int
eosctl_daemon_info_read(const char *state, struct eosctl_daemon_info *info, struct eos_error *err)
{
	cleanup_free char *path = NULL;
	EOS_CLEANUP(json_decrefp) json_t *j = NULL;
	json_error_t je;
	const char *sock, *tcp, *version, *runtime;

	if (asprintf(&path, "%s/eosd.json", state) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	if (!(j = json_load_file(path, 0, &je))) {
		if (access(path, F_OK) < 0 && errno == ENOENT)
			return eos_error_set(err, -ENOENT, "eosd is not running (no '%s')", path);
		return eos_error_set(err, -EBADMSG, "'%s': %s", path, je.text);
	}
	sock = json_string_value(json_object_get(j, "socket"));
	tcp = json_string_value(json_object_get(j, "tcp"));
	version = json_string_value(json_object_get(j, "version"));
	runtime = json_string_value(json_object_get(j, "runtime_dir"));
	if (!json_is_integer(json_object_get(j, "pid")) || !sock)
		return eos_error_set(err, -EBADMSG, "'%s': no pid or socket", path);
	/*
	 * A SIGKILLed eosd leaves its eosd.json, and its socket keeps accepting connections (that
	 * nobody answers) until its last thread has exited: never take that eosd for a live one.
	 */
	if (!pid_is_eosd((long)json_integer_value(json_object_get(j, "pid"))))
		return eos_error_set(err, -ESRCH, "eosd is not running (stale '%s', pid %ld)", path,
				     (long)json_integer_value(json_object_get(j, "pid")));
	*info = (struct eosctl_daemon_info){ .pid = (long)json_integer_value(
						     json_object_get(j, "pid")) };
	info->socket = strdup(sock);
	info->tcp = tcp ? strdup(tcp) : NULL;
	info->version = version ? strdup(version) : NULL;
	info->runtime_dir = runtime ? strdup(runtime) : NULL;
	if (!info->socket) {
		eosctl_daemon_info_release(info);
		return eos_error_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

/* --- tokens ----------------------------------------------------------------------------------- */

int
eosctl_daemon_token(const struct eosctl_cmd *cmd, const char *state, enum eos_surface s, char **ret,
		    struct eos_error *err)
{
	cleanup_free char *path = NULL;
	cleanup_fclose FILE *f = NULL;
	char buf[TOKEN_FILE_MAX + 1];
	size_t n;

	if (cmd->token_file)
		path = strdup(cmd->token_file);
	else if (asprintf(&path, "%s/tokens/%s", state, eos_surface_name(s)) < 0)
		path = NULL;
	if (!path)
		return eos_error_set(err, -ENOMEM, "out of memory");
	if (!(f = fopen(path, "re")))
		return eos_error_set(err, eos_neg_errno(), "no %s token: '%s': %s",
				     eos_surface_name(s), path, strerror(errno));
	n = fread(buf, 1, TOKEN_FILE_MAX, f);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	if (n == 0 || strcspn(buf, "\r\n \t") != n)
		return eos_error_set(err, -EINVAL, "token file '%s': not one line holding a token",
				     path);
	if (!(*ret = strdup(buf)))
		return eos_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* --- is it there ------------------------------------------------------------------------------ */

bool
eosctl_daemon_answers(const struct eosctl_daemon_info *info)
{
	struct eosctl_endpoint ep = { 0 };
	struct eosctl_http_response resp = { 0 };
	struct eosctl_http_request req = { .method = "GET",
					   .target = "/v1/health",
					   .timeout_ms = HEALTH_TIMEOUT_MS };
	bool ok = false;

	if (eosctl_endpoint_parse(info->socket, &ep, NULL) == 0 &&
	    eosctl_http_call(&ep, &req, &resp, NULL) == 0)
		ok = resp.status == 200;
	eosctl_http_response_release(&resp);
	eosctl_endpoint_release(&ep);
	return ok;
}

/* --- starting --------------------------------------------------------------------------------- */

static bool
executable(const char *path)
{
	return access(path, X_OK) == 0;
}

/* eosd beside this eosctl, else in the build tree (build/cli/eosctl, build/supervisor/eosd), else
 * in PATH. */
static int
find_eosd(char **ret, struct eos_error *err)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *path = getenv("PATH");

	if (n > 0) {
		char *slash;

		self[n] = '\0';
		if ((slash = strrchr(self, '/'))) {
			*slash = '\0';
			if (asprintf(ret, "%s/eosd", self) >= 0 && executable(*ret))
				return 0;
			free(*ret);
			if (asprintf(ret, "%s/../supervisor/eosd", self) >= 0 && executable(*ret))
				return 0;
			free(*ret);
		}
	}
	for (const char *p = path; p && *p;) {
		size_t len = strcspn(p, ":");

		if (len > 0 && asprintf(ret, "%.*s/eosd", (int)len, p) >= 0) {
			if (executable(*ret))
				return 0;
			free(*ret);
		}
		p += len + (p[len] == ':');
	}
	*ret = NULL;
	return eos_error_set(err, -ENOENT, "cannot start eosd: no eosd beside '%s' nor in PATH",
			     n > 0 ? self : "eosctl");
}

/* The end of the start-up log from offset on, for the error message. */
static void
log_tail(int fd, off_t from, char *buf, size_t n)
{
	off_t end = lseek(fd, 0, SEEK_END);
	ssize_t got;

	buf[0] = '\0';
	if (end < 0 || end <= from)
		return;
	if (end - from > (off_t)n - 1)
		from = end - (off_t)n + 1;
	got = pread(fd, buf, n - 1, from);
	buf[got > 0 ? got : 0] = '\0';
	for (size_t len = strlen(buf); len > 0 && buf[len - 1] == '\n'; len--)
		buf[len - 1] = '\0';
}

static int
spawn_and_wait(const char *eosd, const char *state, const char *listen, int log_fd, int *ret_status,
	       struct eos_error *err)
{
	char *const argv[] = { (char *)eosd,   (char *)"--state-dir",
			       (char *)state,  (char *)(listen ? "--listen" : NULL),
			       (char *)listen, NULL };
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int r;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, log_fd, 2);
	r = posix_spawn(&pid, eosd, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return eos_error_set(err, -r, "cannot start '%s': %s", eosd, strerror(r));
	while (waitpid(pid, ret_status, 0) < 0)
		if (errno != EINTR)
			return eos_error_set(err, eos_neg_errno(), "waitpid: %s", strerror(errno));
	return 0;
}

/* Wait a while for an eosd that another eosctl may be starting right now. */
static bool
wait_for_other(const char *state)
{
	struct timespec step = { 0, 50 * 1000000L };

	for (int ms = 0; ms < RACE_WAIT_MS; ms += 50) {
		struct eosctl_daemon_info info = { 0 };
		bool ok = eosctl_daemon_info_read(state, &info, NULL) == 0 &&
			  eosctl_daemon_answers(&info);

		eosctl_daemon_info_release(&info);
		if (ok)
			return true;
		nanosleep(&step, NULL);
	}
	return false;
}

/*
 * Start eosd for state (also listening on listen, or NULL) and wait until it is ready (it forks;
 * its parent exits once ready).
 */
static int
start_eosd(const char *state, const char *listen, struct eos_error *err)
{
	cleanup_free char *eosd = NULL, *log = NULL;
	cleanup_close int fd = -1;
	char tail[LOG_TAIL_MAX];
	off_t from;
	int r, status = 0;

	if ((r = find_eosd(&eosd, err)) < 0)
		return r;
	if ((r = eos_mkdir_parents(state, 0700, true)) < 0 ||
	    asprintf(&log, "%s/eosd.log", state) < 0)
		return eos_error_set(err, r < 0 ? r : -ENOMEM, "state directory '%s': %s", state,
				     strerror(r < 0 ? -r : ENOMEM));
	fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0 || (from = lseek(fd, 0, SEEK_END)) < 0)
		return eos_error_set(err, eos_neg_errno(), "'%s': %s", log, strerror(errno));
	if ((r = spawn_and_wait(eosd, state, listen, fd, &status, err)) < 0)
		return r;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (wait_for_other(state))
		return 0;
	log_tail(fd, from, tail, sizeof(tail));
	return eos_error_set(err, -ECONNREFUSED, "eosd did not start (%s %d): %s",
			     WIFEXITED(status) ? "exit status" : "signal",
			     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
			     tail[0] ? tail : "no message");
}

int
eosctl_daemon_autostart(const char *state, struct eos_error *err)
{
	return eosctl_daemon_autostart_listen(state, NULL, err);
}

int
eosctl_daemon_autostart_listen(const char *state, const char *listen, struct eos_error *err)
{
	const char *no = getenv("EOS_NO_AUTOSTART");

	if (no && strcmp(no, "1") == 0)
		return eos_error_set(err, -ECONNREFUSED,
				     "eosd is not running for state directory '%s' and "
				     "EOS_NO_AUTOSTART=1: start it with 'eosctl daemon start' (or "
				     "'eosd --state-dir %s')",
				     state, state);
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "eosctl: starting eosd for '%s'\n", state);
	return start_eosd(state, listen, err);
}

/* --- daemon start|stop|status ----------------------------------------------------------------- */

static json_t *
info_doc(const char *state, const struct eosctl_daemon_info *info, bool running)
{
	json_t *doc = json_pack("{s:b,s:s}", "running", running, "state_dir", state);

	if (doc && info->pid > 0) {
		eos_json_set(doc, "pid", json_integer(info->pid));
		eos_json_set(doc, "socket", json_string(info->socket));
		eos_json_set(doc, "tcp", info->tcp ? json_string(info->tcp) : json_null());
		eos_json_set(doc, "runtime_dir",
			     info->runtime_dir ? json_string(info->runtime_dir) : json_null());
		eos_json_set(doc, "version",
			     info->version ? json_string(info->version) : json_null());
	}
	return doc;
}

static int
local_fail(const struct eosctl_cmd *cmd, const char *kind, const struct eos_error *err, int r)
{
	return eosctl_output_local_error(stderr, kind, eos_error_message(err, r),
					 cmd->output == EOSCTL_OUTPUT_JSON);
}

static void
print_doc(const struct eosctl_cmd *cmd, json_t *doc)
{
	if (doc)
		eosctl_output_result(stdout, NULL, doc, eosctl_output_is_text(cmd->output));
	json_decref(doc);
}

int
eosctl_daemon_start(const struct eosctl_cmd *cmd)
{
	cleanup_free char *state = NULL;
	struct eosctl_daemon_info info = { 0 };
	struct eos_error err = { 0 };
	bool started = false;
	json_t *doc;
	int r;

	if ((r = eosctl_daemon_state_dir(cmd, &state, &err)) < 0)
		return local_fail(cmd, "invalid", &err, r);
	if (eosctl_daemon_info_read(state, &info, NULL) < 0 || !eosctl_daemon_answers(&info)) {
		eosctl_daemon_info_release(&info);
		if ((r = start_eosd(state, NULL, &err)) < 0 ||
		    (r = eosctl_daemon_info_read(state, &info, &err)) < 0)
			return local_fail(cmd, "unavailable", &err, r);
		started = true;
	}
	doc = info_doc(state, &info, true);
	if (doc)
		eos_json_set(doc, "started", json_boolean(started));
	print_doc(cmd, doc);
	eosctl_daemon_info_release(&info);
	return EOSCTL_EXIT_OK;
}

/* Wait until pid has exited, at most ms milliseconds. */
static bool
wait_exit(long pid, int ms)
{
	struct timespec step = { 0, 20 * 1000000L };

	for (int waited = 0; waited < ms; waited += 20) {
		if (!pid_is_eosd(pid))
			return true;
		nanosleep(&step, NULL);
	}
	return !pid_is_eosd(pid);
}

int
eosctl_daemon_stop(const struct eosctl_cmd *cmd)
{
	cleanup_free char *state = NULL;
	struct eosctl_daemon_info info = { 0 };
	struct eos_error err = { 0 };
	int r, ms = cmd->timeout_ms > 0 ? cmd->timeout_ms : STOP_TIMEOUT_MS;

	if ((r = eosctl_daemon_state_dir(cmd, &state, &err)) < 0)
		return local_fail(cmd, "invalid", &err, r);
	if (eosctl_daemon_info_read(state, &info, NULL) < 0 || !pid_is_eosd(info.pid)) {
		eosctl_daemon_info_release(&info);
		print_doc(cmd, json_pack("{s:b,s:b,s:s}", "running", false, "stopped", false,
					 "state_dir", state));
		return EOSCTL_EXIT_OK;
	}
	if (kill((pid_t)info.pid, SIGTERM) < 0) {
		eos_error_set(&err, eos_neg_errno(), "eosd (pid %ld): kill: %s", info.pid,
			      strerror(errno));
		eosctl_daemon_info_release(&info);
		return local_fail(cmd, "permission", &err, err.code);
	}
	if (!wait_exit(info.pid, ms)) {
		eos_error_set(&err, -ETIMEDOUT,
			      "eosd (pid %ld) did not exit within %d s of SIGTERM", info.pid,
			      ms / 1000);
		eosctl_daemon_info_release(&info);
		return local_fail(cmd, "timeout", &err, err.code);
	}
	print_doc(cmd, json_pack("{s:b,s:b,s:I,s:s}", "running", false, "stopped", true, "pid",
				 (json_int_t)info.pid, "state_dir", state));
	eosctl_daemon_info_release(&info);
	return EOSCTL_EXIT_OK;
}

int
eosctl_daemon_status(const struct eosctl_cmd *cmd)
{
	cleanup_free char *state = NULL;
	struct eosctl_daemon_info info = { 0 };
	struct eos_error err = { 0 };
	bool running;
	int r;

	if ((r = eosctl_daemon_state_dir(cmd, &state, &err)) < 0)
		return local_fail(cmd, "invalid", &err, r);
	if (eosctl_daemon_info_read(state, &info, NULL) < 0 || !pid_is_eosd(info.pid)) {
		eosctl_daemon_info_release(&info);
		if (eosctl_output_is_text(cmd->output))
			printf("not running (state directory '%s')\n", state);
		else
			print_doc(cmd, info_doc(state, &info, false));
		return EOSCTL_EXIT_FAILED;
	}
	running = eosctl_daemon_answers(&info);
	print_doc(cmd, info_doc(state, &info, running));
	if (!running)
		fprintf(stderr, "eosctl: unavailable: eosd (pid %ld) does not answer at '%s'\n",
			info.pid, info.socket);
	eosctl_daemon_info_release(&info);
	return running ? EOSCTL_EXIT_OK : EOSCTL_EXIT_FAILED;
}
