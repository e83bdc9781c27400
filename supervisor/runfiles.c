/* SPDX-License-Identifier: MIT */
/* supervisor/runfiles: eosd.lock and eosd.json (see runfiles.h). */
#include "supervisor/runfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/digest.h"
#include "common/statedir.h"

enum {
	LOCK_WAIT_MS = 10000, /* for a killed eosd whose last threads are still exiting */
	STUCK_MS = 500,	      /* then abort its FUSE connections */
};

int
eosd_runfiles_mkdirs(const char *path, struct eos_error *err)
{
	cleanup_free char *p = strdup(path);

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1;; s++) {
		bool end = *s == '\0';

		if (*s != '/' && !end)
			continue;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return eos_error_set(err, eos_neg_errno(), "create '%s': %m", p);
		if (end)
			break;
		*s = '/';
	}
	struct stat sb;
	if (stat(path, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return eos_error_set(err, -ENOTDIR, "'%s': not a directory", path);
	return 0;
}

int
eosd_runfiles_runtime_dir(const char *state_dir, char **ret, struct eos_error *err)
{
	cleanup_free char *base = NULL;
	char hex[EOS_DIGEST_HEX_LEN + 1];
	struct eos_digest d;

	if (eos_default_runtime_dir(&base) < 0)
		return eos_error_set(
			err, -ENOENT,
			"no runtime directory: set EOS_RUNTIME_DIR or XDG_RUNTIME_DIR");
	if (eos_sha256(state_dir, strlen(state_dir), &d) < 0)
		return -ENOMEM;
	eos_digest_hex(&d, hex);
	if (asprintf(ret, "%s/%.*s", base, EOSD_RUNTIME_KEY_LEN, hex) < 0)
		return -ENOMEM;
	return 0;
}

int
eosd_runfiles_socket(const char *runtime_dir, char **ret, struct eos_error *err)
{
	struct sockaddr_un sa;
	cleanup_free char *path = NULL;

	if (asprintf(&path, "%s/eosd.sock", runtime_dir) < 0)
		return -ENOMEM;
	if (strlen(path) >= sizeof(sa.sun_path))
		return eos_error_set(err, -ENAMETOOLONG,
				     "the socket '%s' is longer than the %zu bytes a Unix socket's "
				     "path may be: set a shorter EOS_RUNTIME_DIR, or pass --listen "
				     "unix:PATH",
				     path, sizeof(sa.sun_path) - 1);
	*ret = TAKE_PTR(path);
	return 0;
}

static long
lock_holder(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *end = NULL;
	long pid;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	errno = 0;
	pid = strtol(buf, &end, 10);
	return errno || end == buf || pid <= 0 ? 0 : pid;
}

/*
 * Whether pid is a process whose threads have all been told to exit: gone, or its leader a
 * zombie. A SIGKILLed eosd's leader turns zombie before its other threads are done (one may sit
 * in a FUSE or RocksDB call), and its files (eosd.lock, the listening socket) stay open until the
 * last thread has gone, so its lock is still held for a moment.
 */
static bool
pid_exiting(long pid)
{
	char path[64], stat[256] = "";
	cleanup_fclose FILE *f = NULL;
	const char *paren;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!(f = fopen(path, "re")))
		return errno == ENOENT;
	if (!fgets(stat, sizeof(stat), f) || !(paren = strrchr(stat, ')')))
		return false;
	return paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void
unescape_octal(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/*
 * Abort the FUSE connection of the mount at mnt (device "maj:min"): through the fuse control
 * filesystem when it is mounted (the mount's owner may write its abort file), else, as root,
 * with umount2(MNT_FORCE), which aborts the connection whether or not the unmount succeeds.
 * The mount itself is never touched: a request to a dead one would hang us too.
 */
static void
abort_mount(const char *mnt, const char *majmin)
{
	const char *minor = strchr(majmin, ':');
	char path[128];
	cleanup_close int fd = -1;

	if (minor) {
		snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%s/abort", minor + 1);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd >= 0 && write(fd, "1", 1) == 1)
			return;
	}
	if (geteuid() == 0)
		(void)umount2(mnt, MNT_FORCE);
}

/*
 * A SIGKILLed eosd can be stuck exiting for good: a thread of its own (a file operation in a
 * session) waits, uninterruptibly, for the answer to a FUSE request that its dead server threads
 * had already read, and the connection closes only when that last thread has gone. Abort the
 * connections of the FUSE mounts under its <runtime>/<key>/sessions/ (they are the killed eosd's:
 * it still holds the lock of state_dir) so that it can finish.
 */
static void
abort_session_mounts(const char *state_dir)
{
	cleanup_free char *runtime = NULL, *prefix = NULL, *line = NULL;
	cleanup_fclose FILE *f = NULL;
	size_t cap = 0, plen;

	if (eosd_runfiles_runtime_dir(state_dir, &runtime, NULL) < 0 ||
	    asprintf(&prefix, "%s/sessions/", runtime) < 0 ||
	    !(f = fopen("/proc/self/mountinfo", "re")))
		return;
	plen = strlen(prefix);
	while (getline(&line, &cap, f) > 0) {
		char majmin[32], mnt[4096], fstype[64];
		const char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %31s %*s %4095s", majmin, mnt) != 2 ||
		    sscanf(sep + 3, "%63s", fstype) != 1 || strncmp(fstype, "fuse", 4) != 0)
			continue;
		unescape_octal(mnt);
		if (strncmp(mnt, prefix, plen) == 0)
			abort_mount(mnt, majmin);
	}
}

/*
 * Take the flock, waiting up to LOCK_WAIT_MS while its holder is an eosd being killed; after
 * STUCK_MS of that, abort its FUSE connections once (abort_session_mounts).
 */
static int
take_lock(int fd, const char *state_dir, long *ret_holder)
{
	struct timespec step = { 0, 10 * 1000000L };

	for (int ms = 0;; ms += 10) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK)
			return eos_neg_errno();
		*ret_holder = lock_holder(fd);
		if (ms >= LOCK_WAIT_MS || *ret_holder <= 0 || !pid_exiting(*ret_holder))
			return -EBUSY;
		if (ms == STUCK_MS)
			abort_session_mounts(state_dir);
		nanosleep(&step, NULL);
	}
}

int
eosd_runfiles_lock(const char *state_dir, int *ret_fd, struct eos_error *err)
{
	cleanup_free char *path = NULL;
	cleanup_close int fd = -1;
	char text[32];
	long pid = 0;
	int n, r;

	if (asprintf(&path, "%s/eosd.lock", state_dir) < 0)
		return -ENOMEM;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return eos_error_set(err, eos_neg_errno(), "open '%s': %m", path);
	r = take_lock(fd, state_dir, &pid);
	if (r == -EBUSY && pid > 0 && pid_exiting(pid))
		return eos_error_set(
			err, -EBUSY,
			"eosd (pid %ld) for '%s' was killed and cannot finish exiting (a "
			"request to its own FUSE mount): abort its connections (as root: "
			"umount -f each mount of its sessions)",
			pid, state_dir);
	if (r == -EBUSY && pid > 0)
		return eos_error_set(err, -EBUSY, "eosd is already running for '%s' (pid %ld)",
				     state_dir, pid);
	if (r == -EBUSY)
		return eos_error_set(err, -EBUSY, "eosd is already running for '%s'", state_dir);
	if (r < 0)
		return eos_error_set(err, r, "lock '%s': %s", path, strerror(-r));
	n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, text, (size_t)n, 0) != n)
		return eos_error_set(err, eos_neg_errno(), "write '%s': %m", path);
	/* Ours now: an eosd.json left here is a killed eosd's, and must not be taken for ours. */
	eosd_runfiles_remove(state_dir);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* Write all of text to fd. */
static int
write_all(int fd, const char *text, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, text, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? eos_neg_errno() : -EIO;
		text += n;
		len -= (size_t)n;
	}
	return 0;
}

/* fsync the directory at path, so that a rename in it is on disk. */
static int
fsync_dir(const char *path)
{
	cleanup_close int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fsync(fd) < 0)
		return eos_neg_errno();
	return 0;
}

/*
 * The temporary file is named for this process, so that no other writer (an eosd still being
 * killed, a second eosd of a broken lock) can truncate or rewrite the file after our rename.
 */
int
eosd_runfiles_write(const char *state_dir, const char *socket, const char *tcp,
		    const char *runtime_dir, struct eos_error *err)
{
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	cleanup_free char *path = NULL, *tmp = NULL, *text = NULL;
	cleanup_close int fd = -1;
	int r;

	doc = json_pack("{s:I, s:s, s:o, s:s, s:s}", "pid", (json_int_t)getpid(), "socket", socket,
			"tcp", tcp ? json_string(tcp) : json_null(), "runtime_dir", runtime_dir,
			"version", PACKAGE_VERSION);
	if (!doc || !(text = json_dumps(doc, JSON_COMPACT)) ||
	    asprintf(&path, "%s/eosd.json", state_dir) < 0 ||
	    asprintf(&tmp, "%s/.eosd.json.%ld.tmp", state_dir, (long)getpid()) < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	r = fd < 0 ? eos_neg_errno() : write_all(fd, text, strlen(text));
	r = r < 0 ? r : write_all(fd, "\n", 1);
	if (r == 0 && fsync(fd) < 0)
		r = eos_neg_errno();
	if (r < 0) {
		(void)unlink(tmp);
		return eos_error_set(err, r, "write '%s': %s", tmp, strerror(-r));
	}
	if (rename(tmp, path) < 0) {
		r = eos_neg_errno();
		(void)unlink(tmp);
		return eos_error_set(err, r, "rename '%s': %s", tmp, strerror(-r));
	}
	r = fsync_dir(state_dir);
	if (r < 0)
		return eos_error_set(err, r, "fsync '%s': %s", state_dir, strerror(-r));
	return 0;
}

void
eosd_runfiles_remove(const char *state_dir)
{
	cleanup_free char *path = NULL;

	if (asprintf(&path, "%s/eosd.json", state_dir) >= 0)
		(void)unlink(path);
}
