/* SPDX-License-Identifier: MIT */
/*
 * supervisor/holder/proctree: a command's processes, read from /proc by its subreaper.
 *
 * The subreaper runs inside the session's pid namespace, so /proc (the session's own) names
 * every process of the session and nothing else; with isolation "none" it is the host's /proc
 * and the scan is over every process of the host. Every descendant of the subreaper is found
 * by following parent pids: orphans are re-parented to the subreaper, so a process that
 * daemonized (double fork, setsid, nohup) stays below it.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "supervisor/holder/holder.h"

/* Parse /proc/PID/stat: "pid (comm) S ppid pgrp session …"; comm may hold ") ". */
static int
read_stat(pid_t pid, struct holder_proc *p)
{
	char path[64], buf[1024];
	cleanup_close int fd = -1;
	const char *open_paren, *close_paren;
	ssize_t n;
	int ppid, pgid, sid;
	char state;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = '\0';
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren ||
	    sscanf(close_paren + 1, " %c %d %d %d", &state, &ppid, &pgid, &sid) != 4)
		return -EBADMSG;
	*p = (struct holder_proc){
		.pid = pid, .ppid = ppid, .pgid = pgid, .sid = sid, .state = state
	};
	snprintf(p->comm, sizeof(p->comm), "%.*s", (int)(close_paren - open_paren - 1),
		 open_paren + 1);
	return 0;
}

static pid_t
dirent_pid(const struct dirent *de)
{
	char *end = NULL;
	long v;

	if (!isdigit((unsigned char)de->d_name[0]))
		return 0;
	v = strtol(de->d_name, &end, 10);
	return *end || v <= 0 || v > INT32_MAX ? 0 : (pid_t)v;
}

/* Every process of /proc; processes that end while being read are left out. */
static int
read_all(struct holder_proc **ret, size_t *ret_n)
{
	cleanup_closedir DIR *d = opendir("/proc");
	struct holder_proc *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t pid = dirent_pid(de);

		if (pid == 0)
			continue;
		if (eos_buf_array_reserve(&v, &cap, n, sizeof(*v), 64) < 0) {
			free(v);
			return -ENOMEM;
		}
		if (read_stat(pid, &v[n]) == 0)
			n++;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static bool
marked(const pid_t *set, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == pid)
			return true;
	return false;
}

int
holder_proctree_scan(pid_t root, struct holder_proc **ret, size_t *ret_n)
{
	struct holder_proc *all = NULL;
	size_t n = 0, kept = 0;
	cleanup_free pid_t *in = NULL;
	bool grew = true;
	int r = read_all(&all, &n);

	if (r < 0)
		return r;
	in = malloc(sizeof(*in) * (n + 1));
	if (!in) {
		free(all);
		return -ENOMEM;
	}
	in[0] = root;
	/* move descendants to the front until a pass adds none (parents may come after
	 * their children in /proc's order) */
	while (grew) {
		grew = false;
		for (size_t i = kept; i < n; i++) {
			if (!marked(in, kept + 1, all[i].ppid))
				continue;
			struct holder_proc t = all[kept];
			all[kept] = all[i];
			all[i] = t;
			in[kept + 1] = all[kept].pid;
			kept++;
			grew = true;
		}
	}
	*ret = all;
	*ret_n = kept;
	return 0;
}

int
holder_proctree_signal(pid_t root, int sig)
{
	struct holder_proc *v = NULL;
	size_t n = 0;
	int r = holder_proctree_scan(root, &v, &n);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		kill(v[i].pid, sig);
	free(v);
	return (int)n;
}

void
holder_proctree_cmdline(pid_t pid, char *out, size_t size)
{
	char path[64];
	cleanup_close int fd = -1;
	ssize_t n;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, out, size - 1);
	if (n <= 0)
		return;
	while (n > 0 && out[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == '\0')
			out[i] = ' ';
	out[n] = '\0';
}
