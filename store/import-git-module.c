/* SPDX-License-Identifier: MIT */
/*
 * Submodules' git indexes in an import (doc/fs.md, "Imported git indexes"). A submodule
 * keeps its git directory in the superproject's, ".git/modules/<name>" (names may hold slashes,
 * and submodules nest: ".git/modules/a/modules/b"); its work tree is the directory that the
 * module's config names in core.worktree, relative to that git directory ("../../../sub"). An
 * index whose work tree the config does not name inside the import is staged as it is.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/path.h"

#include "store/import.h"

static const char MODULES[] = ".git/modules/", INDEX[] = "/index", CONFIG[] = "/config";

/* Whether path is the file tail ("/index") of a submodule's git directory. */
static bool
module_file(const char *path, const char *tail)
{
	size_t n = strlen(path), t = strlen(tail), min = sizeof(MODULES) - 1 + t;

	if (n <= min || strcmp(path + n - t, tail) != 0)
		return false;
	for (const char *m = strstr(path, MODULES); m; m = strstr(m + 1, MODULES))
		if ((m == path || m[-1] == '/') && (size_t)(path + n - m) > min)
			return true;
	return false;
}

bool
eos_import_is_module_index(const char *path)
{
	return module_file(path, INDEX);
}

bool
eos_import_is_module_config(const char *path)
{
	return module_file(path, CONFIG);
}

/* s[0..n) without the blanks around it. */
static void
trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t' || **s == '\r')) {
		(*s)++;
		(*n)--;
	}
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\r'))
		(*n)--;
}

/* Whether the line (trimmed) opens a section: *core set to whether it is [core]. */
static bool
section(const char *s, size_t n, bool *core)
{
	if (n < 2 || s[0] != '[' || s[n - 1] != ']')
		return false;
	s++;
	n -= 2;
	trim(&s, &n);
	*core = n == 4 && strncasecmp(s, "core", 4) == 0;
	return true;
}

/*
 * The value of "worktree = value" (trimmed line), unquoted; false for any other line, and for
 * a value this reader does not decode (escapes, a quote inside, a comment after it).
 */
static bool
worktree_value(const char *s, size_t n, const char **val, size_t *vlen)
{
	const char *eq = memchr(s, '=', n);
	size_t klen;

	if (!eq)
		return false;
	klen = (size_t)(eq - s);
	trim(&s, &klen);
	if (klen != 8 || strncasecmp(s, "worktree", 8) != 0)
		return false;
	*val = eq + 1;
	*vlen = n - (size_t)(eq + 1 - s);
	trim(val, vlen);
	if (*vlen >= 2 && (*val)[0] == '"' && (*val)[*vlen - 1] == '"') {
		(*val)++;
		*vlen -= 2;
	}
	return *vlen > 0 && !memchr(*val, '\\', *vlen) && !memchr(*val, '"', *vlen) &&
	       !memchr(*val, '#', *vlen) && !memchr(*val, ';', *vlen);
}

/* core.worktree of the config text (the last one, as git takes it), or NULL; -ENOMEM. */
static int
config_worktree(const char *buf, size_t len, char **ret)
{
	bool core = false;

	*ret = NULL;
	for (size_t at = 0; at < len;) {
		const char *line = buf + at, *nl = memchr(line, '\n', len - at), *val;
		size_t n = nl ? (size_t)(nl - line) : len - at, vlen;

		at += n + 1;
		trim(&line, &n);
		if (n == 0 || line[0] == '#' || line[0] == ';' || section(line, n, &core))
			continue;
		if (core && worktree_value(line, n, &val, &vlen)) {
			free(*ret);
			if (!(*ret = strndup(val, vlen)))
				return -ENOMEM;
		}
	}
	return 0;
}

/* Push or pop the n-byte component c onto the tree path in out; false when it leaves the root. */
static bool
step(struct eos_buf *out, const char *c, size_t n, int *r)
{
	if (n == 0 || (n == 1 && c[0] == '.'))
		return true;
	if (n == 2 && c[0] == '.' && c[1] == '.') {
		const char *p = (const char *)out->data;
		const char *slash = out->len ? memrchr(p, '/', out->len) : NULL;

		if (out->len == 0)
			return false;
		eos_buf_truncate(out, slash ? (size_t)(slash - p) : 0);
		return true;
	}
	*r = (out->len ? eos_buf_append(out, "/", 1) : 0) ?: eos_buf_append(out, c, n);
	return *r == 0;
}

/* dir joined with the relative path rel, ".." resolved, as a tree path; NULL outside the root. */
static int
resolve(const char *dir, const char *rel, char **ret)
{
	struct eos_buf out;
	int r = 0;
	bool inside = rel[0] != '/';

	eos_buf_init(&out);
	for (int part = 0; inside && part < 2; part++)
		for (const char *p = part ? rel : dir; inside && *p;) {
			size_t n = strcspn(p, "/");

			inside = step(&out, p, n, &r);
			p += n + (p[n] == '/');
		}
	if (inside && r == 0)
		r = eos_buf_append(&out, "", 0);
	if (r < 0 || !inside) {
		eos_buf_release(&out);
		*ret = NULL;
		return r;
	}
	*ret = (char *)eos_buf_steal(&out, NULL);
	return 0;
}

/* The module's config (dir: its git directory) into *ret, NUL-terminated; NULL when unreadable. */
static int
read_config(int root_fd, const char *dir, char **ret, size_t *len)
{
	cleanup_free char *path = NULL;
	cleanup_close int fd = -1;
	struct stat sb;

	*ret = NULL;
	if (asprintf(&path, "%s/config", dir) < 0)
		return -ENOMEM;
	fd = openat(root_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_size > EOS_IMPORT_CONFIG_MAX)
		return 0; /* no config (or not one this reads): the index is staged as it is */
	*len = (size_t)sb.st_size;
	*ret = malloc(*len + 1);
	if (!*ret)
		return -ENOMEM;
	if (eos_pread_all(fd, *ret, *len) < 0) {
		free(*ret);
		*ret = NULL;
		return 0;
	}
	(*ret)[*len] = '\0';
	return 0;
}

int
eos_import_module_work_tree_of(const char *index, const char *config, size_t len, char **ret)
{
	cleanup_free char *dir = strndup(index, strlen(index) - (sizeof(INDEX) - 1));
	cleanup_free char *worktree = NULL;
	int r;

	*ret = NULL;
	if (!dir)
		return -ENOMEM;
	r = config_worktree(config, len, &worktree);
	return r < 0 || !worktree ? r : resolve(dir, worktree, ret);
}

int
eos_import_module_work_tree(int root_fd, const char *index, char **ret)
{
	cleanup_free char *dir = strndup(index, strlen(index) - (sizeof(INDEX) - 1));
	cleanup_free char *text = NULL;
	size_t len = 0;
	int r;

	*ret = NULL;
	if (!dir)
		return -ENOMEM;
	r = read_config(root_fd, dir, &text, &len);
	return r < 0 || !text ? r : eos_import_module_work_tree_of(index, text, len, ret);
}
