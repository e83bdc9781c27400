/* SPDX-License-Identifier: MIT */
/*
 * supervisor/commands-store: the commands' ids and transcripts on disk (doc/commands.md):
 * <state>/commands/cmd-N.out holds what command N printed, cmd-N.json its final result; the
 * newest `keep` are kept. Ids grow across restarts (the next one is kept in `seq`), so an id
 * below the oldest kept one was retired, not never made.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json.h"
#include "common/log.h"
#include "common/path.h"

#include "supervisor/commands-internal.h"

/* N of "cmd-N" (and of "cmd-N.out" when suffix), or 0. */
static uint64_t
seq_of(const char *name, const char *suffix)
{
	char *end;
	uint64_t n;

	if (strncmp(name, "cmd-", 4) || name[4] < '1' || name[4] > '9')
		return 0;
	n = strtoull(name + 4, &end, 10);
	return strcmp(end, suffix ? suffix : "") == 0 ? n : 0;
}

static char *
file_of(struct eosd_commands *c, uint64_t seq, const char *ext)
{
	char *p = NULL;

	return asprintf(&p, "%s/cmd-%" PRIu64 ".%s", c->dir, seq, ext) < 0 ? NULL : p;
}

static void
seq_save(struct eosd_commands *c)
{
	cleanup_free char *p = NULL;
	char buf[32];
	int fd, n;

	if (asprintf(&p, "%s/seq", c->dir) < 0)
		return;
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", c->next_seq);
	(void)!write(fd, buf, (size_t)n);
	close(fd);
}

static uint64_t
seq_load(struct eosd_commands *c)
{
	cleanup_free char *p = NULL;
	cleanup_fclose FILE *f = NULL;
	unsigned long long n = 0;

	if (asprintf(&p, "%s/seq", c->dir) < 0 || !(f = fopen(p, "re")))
		return 0;
	return fscanf(f, "%llu", &n) == 1 ? n : 0;
}

static void
remove_seq(struct eosd_commands *c, uint64_t seq)
{
	cleanup_free char *out = file_of(c, seq, "out"), *res = file_of(c, seq, "json");

	if (out)
		unlink(out);
	if (res)
		unlink(res);
}

/* Retire the oldest transcripts beyond keep (never one whose command is not final). */
static void
retire(struct eosd_commands *c)
{
	while (c->next_seq - c->oldest_seq > c->keep) {
		char id[32];
		struct cmd *x;

		snprintf(id, sizeof(id), "cmd-%" PRIu64, c->oldest_seq);
		x = cmd_find(c, id);
		if (x && (!x->final || x->waiting))
			break;
		remove_seq(c, c->oldest_seq);
		if (x) {
			for (struct cmd **p = &c->cmds; *p; p = &(*p)->next)
				if (*p == x) {
					*p = x->next;
					break;
				}
			c->ncmds--;
			cmd_close_fds(c, x);
			if (x->fd_log >= 0)
				close(x->fd_log);
			json_decref(x->publish);
			free(x->cmdline);
			free(x);
		}
		c->oldest_seq++;
	}
}

int
store_open(struct eosd_commands *c, struct eos_error *err)
{
	cleanup_free char *sessions = NULL;
	uint64_t lo = 0, hi = 0;
	DIR *dir;
	struct dirent *e;
	int r = eos_mkdir_parents(c->dir, 0700, true);

	if (r < 0)
		return eos_error_set(err, r, "create '%s': %s", c->dir, strerror(-r));
	if (asprintf(&sessions, "%s/sessions", c->dir) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	if (mkdir(sessions, 0700) < 0 && errno != EEXIST)
		return eos_error_set(err, -errno, "create '%s': %m", sessions);
	if (!(dir = opendir(c->dir)))
		return eos_error_set(err, -errno, "open '%s': %m", c->dir);
	while ((e = readdir(dir))) {
		uint64_t n = seq_of(e->d_name, ".out");

		if (!n)
			continue;
		lo = lo && lo < n ? lo : n;
		hi = hi > n ? hi : n;
	}
	closedir(dir);
	c->next_seq = EOS_MAX(EOS_MAX(seq_load(c), hi + 1), 1);
	c->oldest_seq = lo ? lo : c->next_seq;
	retire(c);
	return 0;
}

int
store_new(struct eosd_commands *c, struct cmd *x, struct eos_error *err)
{
	cleanup_free char *p = NULL;

	x->seq = c->next_seq;
	snprintf(x->id, sizeof(x->id), "cmd-%" PRIu64, x->seq);
	if (!(p = file_of(c, x->seq, "out")))
		return eos_error_set(err, -ENOMEM, "out of memory");
	x->fd_log = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (x->fd_log < 0)
		return eos_error_set(err, -errno, "create the transcript '%s': %m", p);
	c->next_seq++;
	seq_save(c);
	return 0;
}

void
store_append(struct cmd *x, const char *p, size_t n)
{
	if (x->bytes + n > EOSD_TRANSCRIPT_MAX) {
		x->truncated = true;
		n = (size_t)(EOSD_TRANSCRIPT_MAX - x->bytes);
	}
	if (n == 0 || x->fd_log < 0)
		return;
	if (write(x->fd_log, p, n) != (ssize_t)n) {
		x->truncated = true; /* a full disk: the rest is lost, and said so */
		return;
	}
	x->bytes += n;
	for (size_t i = 0; i < n; i++)
		x->lines += p[i] == '\n';
	x->last_nl = p[n - 1] == '\n';
}

void
store_finish(struct eosd_commands *c, struct cmd *x)
{
	cleanup_free char *p = file_of(c, x->seq, "json"), *tmp = NULL;
	EOS_CLEANUP(json_decrefp) json_t *doc = cmd_result(x);

	if (x->error) { /* it never ran: no transcript to keep */
		remove_seq(c, x->seq);
	} else if (p && doc && asprintf(&tmp, "%s.tmp", p) >= 0) {
		if (json_dump_file(doc, tmp, JSON_COMPACT) < 0 || rename(tmp, p) < 0)
			eos_log_error("eosd: cannot keep the result of %s: %m", x->id);
	}
	retire(c);
}

char *
store_read(struct eosd_commands *c, const char *id, uint64_t offset, size_t max, size_t *ret_len)
{
	uint64_t seq = seq_of(id, NULL);
	cleanup_free char *p = seq ? file_of(c, seq, "out") : NULL;
	char *buf = malloc(max + 1);
	int fd = p ? open(p, O_RDONLY | O_CLOEXEC) : -1;
	size_t len = 0;

	*ret_len = 0;
	if (fd < 0 || !buf) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	while (len < max) {
		ssize_t n = pread(fd, buf + len, max - len, (off_t)(offset + len));

		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*ret_len = len;
	return buf;
}

json_t *
store_result(struct eosd_commands *c, const char *id)
{
	uint64_t seq = seq_of(id, NULL);
	cleanup_free char *p = seq && seq >= c->oldest_seq ? file_of(c, seq, "json") : NULL;

	return p ? json_load_file(p, 0, NULL) : NULL;
}

bool
store_retired(struct eosd_commands *c, const char *id)
{
	uint64_t seq = seq_of(id, NULL);

	return seq && seq < c->oldest_seq;
}

int
store_lines(struct eosd_commands *c, const char *id, int64_t offset, int64_t limit,
	    json_t **ret_lines, int64_t *ret_next, struct eos_error *err)
{
	uint64_t seq = seq_of(id, NULL);
	cleanup_free char *p = seq ? file_of(c, seq, "out") : NULL;
	cleanup_fclose FILE *f = p ? fopen(p, "re") : NULL;
	json_t *lines = json_array();
	cleanup_free char *line = NULL;
	size_t cap = 0;
	int64_t no = 0;
	ssize_t n;

	*ret_next = 0;
	if (!lines)
		return eos_error_set(err, -ENOMEM, "out of memory");
	while (f && (n = getline(&line, &cap, f)) >= 0) {
		no++;
		if (no < offset)
			continue;
		if (no >= offset + limit) {
			*ret_next = no;
			break;
		}
		if (n > 0 && line[n - 1] == '\n')
			n--;
		eos_json_push(lines, cmd_text_json(line, (size_t)n));
	}
	*ret_lines = lines;
	return 0;
}
