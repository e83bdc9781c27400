/* SPDX-License-Identifier: MIT */
/*
 * publish-model: snapshots of a tree and the expected head. A snapshot has one line per entry,
 * sorted: the path ("." for the root), its type, permission bits and link count, then for files
 * the size, a hash of the bytes and the hard-link group (the first path of the group, when it
 * has more than one), for symlinks the target, and every xattr with its value in hex. The lines
 * of SHARED_FILE are entries of their own ("shared.txt#L07"), so that each side's lines can be
 * taken from its own snapshot.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "tests/integration/publish-model.h"

struct rec {
	char *path;
	struct stat st;
	char *detail; /* type-specific fields */
	char *xattrs;
};

struct walk {
	const char *root;
	struct rec *v;
	size_t n, cap;
	struct snap *lines; /* SHARED_FILE's lines */
};

static void
snap_add(struct snap *s, char *line)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->v = mu_realloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = line;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		fprintf(stderr, "publish-model: out of memory\n");
		exit(2);
	}
	return s;
}

static __attribute__((noreturn)) void
die_path(const char *what, const char *path)
{
	fprintf(stderr, "publish-model: %s '%s': %s\n", what, path, strerror(errno));
	exit(2);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* FNV-1a over the file's bytes, also splitting SHARED_FILE into lines. */
static char *
file_detail(struct walk *w, int dfd, const char *name, const char *path, const struct stat *st)
{
	cleanup_close int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	uint64_t h = 0xcbf29ce484222325ULL, size = 0;
	bool shared = !strcmp(path, SHARED_FILE);
	char buf[65536], line[SHARED_LINE_MAX + 2];
	size_t ll = 0, nline = 0;
	ssize_t got;

	if (fd < 0)
		die_path("open", path);
	while ((got = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < got; i++) {
			h = (h ^ (uint8_t)buf[i]) * 0x100000001b3ULL;
			if (!shared)
				continue;
			if (buf[i] != '\n' && ll < SHARED_LINE_MAX) {
				line[ll++] = buf[i];
				continue;
			}
			line[ll] = '\0';
			snap_add(w->lines, xasprintf("%s#L%02zu\t%s", path, nline++, line));
			ll = 0;
		}
		size += (uint64_t)got;
	}
	if (got < 0)
		die_path("read", path);
	if (size != (uint64_t)st->st_size)
		fprintf(stderr, "publish-model: '%s': read %" PRIu64 " bytes, stat says %jd\n",
			path, size, (intmax_t)st->st_size);
	if (shared)
		return xasprintf("size=- hash=-");
	return xasprintf("size=%" PRIu64 " hash=%016" PRIx64, size, h);
}

static char *
xattr_list(const char *full)
{
	char names[65536], value[65536], *out = mu_strdup("");
	ssize_t n = llistxattr(full, names, sizeof(names));
	struct snap sorted = { 0 };

	if (n < 0)
		die_path("listxattr", full);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1)
		snap_add(&sorted, mu_strdup(names + i));
	if (sorted.n)
		qsort(sorted.v, sorted.n, sizeof(*sorted.v), cmp_str);
	for (size_t i = 0; i < sorted.n; i++) {
		ssize_t len = lgetxattr(full, sorted.v[i], value, sizeof(value));
		char *next;

		if (len < 0)
			die_path("getxattr", full);
		next = xasprintf("%s %s=", out, sorted.v[i]);
		free(out);
		out = next;
		for (ssize_t k = 0; k < len; k++) {
			next = xasprintf("%s%02x", out, (uint8_t)value[k]);
			free(out);
			out = next;
		}
		free(sorted.v[i]);
	}
	free(sorted.v);
	return out;
}

static void walk_dir(struct walk *w, int dfd, const char *rel);

static void
walk_entry(struct walk *w, int dfd, const char *name, const char *path)
{
	cleanup_free char *full = mu_join(w->root, path);
	char target[4096];
	struct rec r = { .path = mu_strdup(path[0] ? path : ".") };
	ssize_t n;

	if (fstatat(dfd, name, &r.st, AT_SYMLINK_NOFOLLOW) < 0)
		die_path("stat", path);
	if (S_ISREG(r.st.st_mode)) {
		r.detail = file_detail(w, dfd, name, path, &r.st);
	} else if (S_ISLNK(r.st.st_mode)) {
		n = readlinkat(dfd, name, target, sizeof(target) - 1);
		if (n < 0)
			die_path("readlink", path);
		target[n] = '\0';
		r.detail = xasprintf("target=%s", target);
	} else {
		r.detail = mu_strdup("");
	}
	r.xattrs = xattr_list(full);
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 256;
		w->v = mu_realloc(w->v, w->cap * sizeof(*w->v));
	}
	w->v[w->n++] = r;
	if (S_ISDIR(r.st.st_mode)) {
		cleanup_close int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (sub < 0)
			die_path("open directory", path);
		walk_dir(w, sub, path);
	}
}

static void
walk_dir(struct walk *w, int dfd, const char *rel)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_closedir DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct snap names = { 0 };
	struct dirent *de;

	if (!d)
		die_path("list", rel[0] ? rel : ".");
	for (errno = 0; (de = readdir(d)); errno = 0)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			snap_add(&names, mu_strdup(de->d_name));
	if (errno)
		die_path("list", rel[0] ? rel : ".");
	if (names.n)
		qsort(names.v, names.n, sizeof(*names.v), cmp_str);
	for (size_t i = 0; i < names.n; i++) {
		cleanup_free char *path = mu_join(rel, names.v[i]);

		walk_entry(w, dfd, names.v[i], path);
		free(names.v[i]);
	}
	free(names.v);
}

static const char *
type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	default:
		return "device";
	}
}

/* The first path (in walk order) of the file that shares r's inode, or NULL when none does. */
static const char *
group_of(const struct walk *w, const struct rec *r)
{
	if (!S_ISREG(r->st.st_mode))
		return NULL;
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].st.st_ino == r->st.st_ino && S_ISREG(w->v[i].st.st_mode))
			return &w->v[i] == r && r->st.st_nlink < 2 ? NULL : w->v[i].path;
	return NULL;
}

void
pm_snap_take(const char *root, struct snap *s)
{
	struct walk w = { .root = root, .lines = s };
	cleanup_close int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		die_path("open", root);
	*s = (struct snap){ 0 };
	walk_entry(&w, fd, ".", "");
	for (size_t i = 0; i < w.n; i++) {
		const struct rec *r = &w.v[i];
		const char *group = group_of(&w, r);

		snap_add(s, xasprintf("%s\t%s %04o nlink=%ju %s%s%s%s", r->path,
				      type_name(r->st.st_mode), (unsigned)r->st.st_mode & 07777,
				      (uintmax_t)r->st.st_nlink, r->detail, group ? " link=" : "",
				      group ? group : "", r->xattrs));
	}
	for (size_t i = 0; i < w.n; i++) {
		free(w.v[i].path);
		free(w.v[i].detail);
		free(w.v[i].xattrs);
	}
	free(w.v);
	qsort(s->v, s->n, sizeof(*s->v), cmp_str);
}

void
pm_snap_read(const char *file, struct snap *s)
{
	cleanup_fclose FILE *f = fopen(file, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f)
		die_path("open", file);
	*s = (struct snap){ 0 };
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[n - 1] = '\0';
		snap_add(s, mu_strdup(line));
	}
	free(line);
}

void
pm_snap_print(const struct snap *s, FILE *f)
{
	for (size_t i = 0; i < s->n; i++)
		fprintf(f, "%s\n", s->v[i]);
}

void
pm_snap_release(struct snap *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct snap){ 0 };
}

/* A line's key: up to the tab. */
static char
line_territory(const char *line)
{
	cleanup_free char *key = mu_strdup(line);
	char *tab = strchr(key, '\t');

	if (tab)
		*tab = '\0';
	return pm_territory(key);
}

void
pm_snap_expect(char side, const struct snap *ours, const struct snap *prev, struct snap *ret)
{
	*ret = (struct snap){ 0 };
	for (size_t i = 0; i < ours->n; i++)
		if (line_territory(ours->v[i]) == side)
			snap_add(ret, mu_strdup(ours->v[i]));
	for (size_t i = 0; i < prev->n; i++)
		if (line_territory(prev->v[i]) != side)
			snap_add(ret, mu_strdup(prev->v[i]));
	qsort(ret->v, ret->n, sizeof(*ret->v), cmp_str);
}
