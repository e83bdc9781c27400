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
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

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

int
eosd_runfiles_lock(const char *state_dir, int *ret_fd, struct eos_error *err)
{
	cleanup_free char *path = NULL;
	cleanup_close int fd = -1;
	char text[32];
	int n;

	if (asprintf(&path, "%s/eosd.lock", state_dir) < 0)
		return -ENOMEM;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return eos_error_set(err, eos_neg_errno(), "open '%s': %m", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		long pid;

		if (errno != EWOULDBLOCK)
			return eos_error_set(err, eos_neg_errno(), "lock '%s': %m", path);
		pid = lock_holder(fd);
		if (pid > 0)
			return eos_error_set(err, -EBUSY,
					     "eosd is already running for '%s' (pid %ld)",
					     state_dir, pid);
		return eos_error_set(err, -EBUSY, "eosd is already running for '%s'", state_dir);
	}
	n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, text, (size_t)n, 0) != n)
		return eos_error_set(err, eos_neg_errno(), "write '%s': %m", path);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int
eosd_runfiles_write(const char *state_dir, const char *socket, const char *tcp,
		    struct eos_error *err)
{
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	cleanup_free char *path = NULL, *tmp = NULL, *text = NULL;
	cleanup_close int fd = -1;

	doc = json_pack("{s:I, s:s, s:o, s:s}", "pid", (json_int_t)getpid(), "socket", socket,
			"tcp", tcp ? json_string(tcp) : json_null(), "version", PACKAGE_VERSION);
	if (!doc || !(text = json_dumps(doc, JSON_COMPACT)) ||
	    asprintf(&path, "%s/eosd.json", state_dir) < 0 ||
	    asprintf(&tmp, "%s/.eosd.json.tmp", state_dir) < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    write(fd, "\n", 1) != 1)
		return eos_error_set(err, eos_neg_errno(), "write '%s': %m", tmp);
	if (rename(tmp, path) < 0)
		return eos_error_set(err, eos_neg_errno(), "rename '%s': %m", tmp);
	return 0;
}

void
eosd_runfiles_remove(const char *state_dir)
{
	cleanup_free char *path = NULL;

	if (asprintf(&path, "%s/eosd.json", state_dir) >= 0)
		(void)unlink(path);
}
