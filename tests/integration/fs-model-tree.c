/* SPDX-License-Identifier: MIT */
/*
 * fs-model: list directories and compare the view's tree with the model's: names, types,
 * permission bits, owners, sizes, contents, link counts (of directories too where the model
 * counts 2 + subdirectories), symlink targets, user.* xattrs, explicitly set mtimes, readdir's
 * d_ino against lstat's st_ino, and hard links (names share an inode in the view exactly when
 * they do in the model).
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "tests/integration/fs-model.h"

struct ino_pair {
	ino_t ino[SIDE_COUNT];
	struct ino_seen key; /* the model object; btime_sec -1 when unknown */
	char *path;
};

struct tree_cmp {
	struct ctx *c;
	unsigned diffs;
	unsigned long entries;
	struct ino_pair *pairs;
	size_t n, cap;
};

static int
cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct name *)a)->s, ((const struct name *)b)->s);
}

void
fsm_names_clear(struct names *n)
{
	for (size_t i = 0; i < n->n; i++)
		free(n->v[i].s);
	free(n->v);
	*n = (struct names){ 0 };
}

/* The sorted names of directory dfd (without . and ..); 0 or -errno. */
int
fsm_list_names(int dfd, struct names *ret)
{
	cleanup_closedir DIR *d = NULL;
	struct dirent *de;
	int fd;

	*ret = (struct names){ 0 };
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return (int)fsm_neg_errno();
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return (int)fsm_neg_errno();
	}
	for (errno = 0; (de = readdir(d)); errno = 0) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (ret->n == ret->cap) {
			ret->cap = ret->cap ? 2 * ret->cap : 32;
			ret->v = fsm_realloc(ret->v, ret->cap * sizeof(*ret->v));
		}
		ret->v[ret->n++] = (struct name){ fsm_strdup(de->d_name), de->d_ino };
	}
	if (errno) {
		int r = (int)fsm_neg_errno();

		fsm_names_clear(ret);
		return r;
	}
	if (ret->n)
		qsort(ret->v, ret->n, sizeof(*ret->v), cmp_name);
	return 0;
}

unsigned
fsm_kind_of(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return K_REG;
	case S_IFDIR:
		return K_DIR;
	case S_IFLNK:
		return K_LNK;
	case S_IFIFO:
		return K_FIFO;
	default:
		return K_OTHER;
	}
}

/* ---- comparing the trees ---- */

static void PRINTF_LIKE(3, 4) tdiff(struct tree_cmp *t, const char *path, const char *fmt, ...)
{
	va_list ap;

	if (t->diffs++ == 0 && t->c->ops == 0)
		fprintf(stderr, "fs-model: mismatch: the trees differ:\n");
	else if (t->diffs == 1)
		fprintf(stderr,
			"fs-model: mismatch seed %" PRIu64 ": trees differ after op #%lu:\n",
			t->c->seed, t->c->index);
	if (t->diffs > MAX_DIFFS)
		return;
	fprintf(stderr, "  '%s': ", path[0] ? path : ".");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

/* Remember the inode pair of path; mfd and mname name the model entry ("" for mfd itself). */
static void
add_pair(struct tree_cmp *t, const char *path, const struct stat st[SIDE_COUNT], int mfd,
	 const char *mname)
{
	int flags = AT_SYMLINK_NOFOLLOW | (mname[0] ? 0 : AT_EMPTY_PATH);
	struct ino_pair *p;
	struct statx sx;

	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 256;
		t->pairs = fsm_realloc(t->pairs, t->cap * sizeof(*t->pairs));
	}
	p = &t->pairs[t->n++];
	*p = (struct ino_pair){
		{ st[0].st_ino, st[1].st_ino },
		{ st[0].st_ino,
		  -1,
		  0,
		  st[1].st_ino,
		  S_ISREG(st[0].st_mode) || S_ISDIR(st[0].st_mode),
		  { st[0].st_mtim, st[1].st_mtim } },
		fsm_strdup(path),
	};
	if (statx(mfd, mname, flags, STATX_BTIME, &sx) == 0 && (sx.stx_mask & STATX_BTIME)) {
		p->key.btime_sec = sx.stx_btime.tv_sec;
		p->key.btime_nsec = sx.stx_btime.tv_nsec;
	}
}

/* Compare what stat shows; false when the types differ (nothing more to compare). */
static bool
compare_attrs(struct tree_cmp *t, const char *path, const struct stat st[SIDE_COUNT], long subdirs,
	      int mfd, const char *mname)
{
	const struct stat *m = &st[SIDE_MODEL], *v = &st[SIDE_VIEW];

	t->entries++;
	add_pair(t, path, st, mfd, mname);
	if ((m->st_mode & S_IFMT) != (v->st_mode & S_IFMT)) {
		tdiff(t, path, "type: model 0%o, view 0%o", (unsigned)(m->st_mode & S_IFMT),
		      (unsigned)(v->st_mode & S_IFMT));
		return false;
	}
	if (!S_ISLNK(m->st_mode) && (m->st_mode & 07777) != (v->st_mode & 07777))
		tdiff(t, path, "mode: model 0%o, view 0%o", (unsigned)(m->st_mode & 07777),
		      (unsigned)(v->st_mode & 07777));
	if (t->c->check_owner && (m->st_uid != v->st_uid || m->st_gid != v->st_gid))
		tdiff(t, path, "owner: model %u:%u, view %u:%u", (unsigned)m->st_uid,
		      (unsigned)m->st_gid, (unsigned)v->st_uid, (unsigned)v->st_gid);
	if (!S_ISDIR(m->st_mode) && m->st_size != v->st_size)
		tdiff(t, path, "size: model %jd, view %jd", (intmax_t)m->st_size,
		      (intmax_t)v->st_size);
	/* Directory link counts only where the model follows the 2 + subdirectories rule. */
	if ((!S_ISDIR(m->st_mode) || (long)m->st_nlink == 2 + subdirs) &&
	    m->st_nlink != v->st_nlink)
		tdiff(t, path, "nlink: model %ju, view %ju", (uintmax_t)m->st_nlink,
		      (uintmax_t)v->st_nlink);
	if ((S_ISREG(m->st_mode) || S_ISDIR(m->st_mode)) && fsm_set_has(&t->c->mt, m->st_ino) &&
	    (m->st_mtim.tv_sec != v->st_mtim.tv_sec || m->st_mtim.tv_nsec != v->st_mtim.tv_nsec))
		tdiff(t, path, "mtime (set explicitly): model %jd.%09ld, view %jd.%09ld",
		      (intmax_t)m->st_mtim.tv_sec, m->st_mtim.tv_nsec, (intmax_t)v->st_mtim.tv_sec,
		      v->st_mtim.tv_nsec);
	return true;
}

static void
compare_content(struct tree_cmp *t, const char *path, const int dfd[SIDE_COUNT], const char *name)
{
	static unsigned char buf[SIDE_COUNT][65536];
	cleanup_close int fd0 = -1;
	cleanup_close int fd1 = -1;
	uint64_t off = 0;

	fd0 = (int)fsm_sys(openat(dfd[0], name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
	fd1 = (int)fsm_sys(openat(dfd[1], name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
	if (fd0 < 0 || fd1 < 0) {
		tdiff(t, path, "open for reading: model %s, view %s",
		      fd0 < 0 ? strerror(-fd0) : "ok", fd1 < 0 ? strerror(-fd1) : "ok");
		return;
	}
	/* Read what the view serves, not what the page cache still holds (best effort). */
	posix_fadvise(fd1, 0, 0, POSIX_FADV_DONTNEED);
	for (;;) {
		ssize_t n0 = read(fd0, buf[0], sizeof(buf[0]));
		ssize_t n1 = read(fd1, buf[1], sizeof(buf[1]));
		ssize_t i;

		if (n0 < 0 || n1 < 0) {
			tdiff(t, path, "read at %" PRIu64 " failed on the %s: %m", off,
			      n0 < 0 ? "model" : "view");
			return;
		}
		for (i = 0; i < EOS_MIN(n0, n1) && buf[0][i] == buf[1][i]; i++)
			;
		if (n0 != n1 || i < n0) {
			tdiff(t, path, "content differs at byte %" PRIu64 " (read %zd vs %zd)",
			      off + (uint64_t)i, n0, n1);
			return;
		}
		if (n0 == 0)
			return;
		off += (uint64_t)n0;
	}
}

static void
compare_symlink(struct tree_cmp *t, const char *path, const int dfd[SIDE_COUNT], const char *name)
{
	char target[SIDE_COUNT][PATH_LEN];
	ssize_t n[SIDE_COUNT];

	for (int s = 0; s < SIDE_COUNT; s++) {
		n[s] = readlinkat(dfd[s], name, target[s], sizeof(target[s]) - 1);
		target[s][n[s] < 0 ? 0 : n[s]] = '\0';
	}
	if (n[0] != n[1] || strcmp(target[0], target[1]))
		tdiff(t, path, "symlink target: model '%s' (%zd), view '%s' (%zd)", target[0], n[0],
		      target[1], n[1]);
}

/* The sorted user.* names of an xattr list. */
static size_t
user_xattrs(char *list, ssize_t len, const char **out, size_t max)
{
	size_t n = 0;

	for (char *p = list; len > 0 && p < list + len && n < max; p += strlen(p) + 1)
		if (!strncmp(p, "user.", 5))
			out[n++] = p;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(out[j - 1], out[j]) > 0; j--) {
			const char *tmp = out[j];

			out[j] = out[j - 1];
			out[j - 1] = tmp;
		}
	return n;
}

static void
compare_xattrs(struct tree_cmp *t, const char *path)
{
	static char list[SIDE_COUNT][65536], val[SIDE_COUNT][65536];
	const char *names[SIDE_COUNT][64];
	char abs[SIDE_COUNT][PATH_LEN + 256];
	size_t n[SIDE_COUNT];

	for (int s = 0; s < SIDE_COUNT; s++) {
		ssize_t len;

		snprintf(abs[s], sizeof(abs[s]), "%s/%s", t->c->abs[s], path);
		len = llistxattr(abs[s], list[s], sizeof(list[s]));
		if (len < 0 && errno != ENOTSUP) {
			tdiff(t, path, "listxattr failed on the %s: %m", fsm_side_name(s));
			return;
		}
		n[s] = user_xattrs(list[s], len, names[s], EOS_ARRAY_SIZE(names[s]));
	}
	for (size_t i = 0; i < EOS_MAX(n[0], n[1]); i++) {
		ssize_t l0, l1;

		if (i >= n[0] || i >= n[1] || strcmp(names[0][i], names[1][i])) {
			tdiff(t, path, "xattr names: model '%s', view '%s'",
			      i < n[0] ? names[0][i] : "(none)", i < n[1] ? names[1][i] : "(none)");
			return;
		}
		l0 = lgetxattr(abs[0], names[0][i], val[0], sizeof(val[0]));
		l1 = lgetxattr(abs[1], names[1][i], val[1], sizeof(val[1]));
		if (l0 != l1 || (l0 > 0 && memcmp(val[0], val[1], (size_t)l0)))
			tdiff(t, path, "xattr '%s' value differs (%zd vs %zd bytes)", names[0][i],
			      l0, l1);
	}
}

static void compare_dir(struct tree_cmp *t, const char *path, const int dfd[SIDE_COUNT],
			const struct stat st[SIDE_COUNT]);

static void
compare_subdir(struct tree_cmp *t, const char *path, const int dfd[SIDE_COUNT], const char *name,
	       const struct stat st[SIDE_COUNT])
{
	int sub[SIDE_COUNT];

	for (int s = 0; s < SIDE_COUNT; s++)
		sub[s] = openat(dfd[s], name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub[0] >= 0 && sub[1] >= 0)
		compare_dir(t, path, sub, st);
	else
		tdiff(t, path, "cannot open the directory on the %s",
		      sub[0] < 0 ? "model" : "view");
	for (int s = 0; s < SIDE_COUNT; s++)
		if (sub[s] >= 0)
			close(sub[s]);
}

/* Compare one name present on both sides; true when it is a directory in the model. */
static bool
compare_child(struct tree_cmp *t, const char *dir, const int dfd[SIDE_COUNT], const struct name *n0,
	      const struct name *n1)
{
	cleanup_free char *path = fsm_join(dir, n0->s);
	const struct name *n[SIDE_COUNT] = { n0, n1 };
	struct stat st[SIDE_COUNT];

	for (int s = 0; s < SIDE_COUNT; s++) {
		if (fstatat(dfd[s], n0->s, &st[s], AT_SYMLINK_NOFOLLOW) < 0) {
			tdiff(t, path, "lstat failed on the %s: %m", fsm_side_name(s));
			return false;
		}
		if (st[s].st_ino != n[s]->ino)
			tdiff(t, path, "%s: readdir d_ino %ju but lstat st_ino %ju",
			      fsm_side_name(s), (uintmax_t)n[s]->ino, (uintmax_t)st[s].st_ino);
	}
	if (S_ISDIR(st[0].st_mode) && S_ISDIR(st[1].st_mode)) {
		compare_subdir(t, path, dfd, n0->s, st);
		return true;
	}
	if (!compare_attrs(t, path, st, -1, dfd[SIDE_MODEL], n0->s))
		return S_ISDIR(st[0].st_mode);
	if (S_ISREG(st[0].st_mode)) {
		compare_content(t, path, dfd, n0->s);
		if (t->c->have_xattr)
			compare_xattrs(t, path);
	} else if (S_ISLNK(st[0].st_mode)) {
		compare_symlink(t, path, dfd, n0->s);
	}
	return false;
}

static void
compare_dir(struct tree_cmp *t, const char *path, const int dfd[SIDE_COUNT],
	    const struct stat st[SIDE_COUNT])
{
	struct names n[SIDE_COUNT];
	size_t i = 0, j = 0;
	long subdirs = 0;

	for (int s = 0; s < SIDE_COUNT; s++) {
		int r = fsm_list_names(dfd[s], &n[s]);

		if (r < 0) {
			tdiff(t, path, "readdir failed on the %s: %s", fsm_side_name(s),
			      strerror(-r));
			if (s == 1)
				fsm_names_clear(&n[0]);
			return;
		}
	}
	while (i < n[0].n || j < n[1].n) {
		int cmp = i == n[0].n ? 1 : j == n[1].n ? -1 : strcmp(n[0].v[i].s, n[1].v[j].s);
		cleanup_free char *child = fsm_join(path, cmp <= 0 ? n[0].v[i].s : n[1].v[j].s);

		if (cmp < 0) {
			tdiff(t, child, "missing in the view");
			i++;
		} else if (cmp > 0) {
			tdiff(t, child, "only in the view");
			j++;
		} else {
			subdirs += compare_child(t, path, dfd, &n[0].v[i++], &n[1].v[j++]);
		}
	}
	fsm_names_clear(&n[0]);
	fsm_names_clear(&n[1]);
	compare_attrs(t, path, st, subdirs, dfd[SIDE_MODEL], "");
	if (t->c->have_xattr)
		compare_xattrs(t, path);
}

static int
cmp_pair_model(const void *a, const void *b)
{
	const struct ino_pair *x = a, *y = b;

	return (x->ino[0] > y->ino[0]) - (x->ino[0] < y->ino[0]);
}

static int
cmp_pair_view(const void *a, const void *b)
{
	const struct ino_pair *x = a, *y = b;

	return (x->ino[1] > y->ino[1]) - (x->ino[1] < y->ino[1]);
}

/* Names share an inode in the view exactly when they share one in the model. */
static void
compare_links(struct tree_cmp *t)
{
	for (int s = 0; s < SIDE_COUNT; s++) {
		qsort(t->pairs, t->n, sizeof(*t->pairs), s == 0 ? cmp_pair_model : cmp_pair_view);
		for (size_t i = 1; i < t->n; i++) {
			const struct ino_pair *a = &t->pairs[i - 1], *b = &t->pairs[i];

			if (a->ino[s] != b->ino[s] || a->ino[!s] == b->ino[!s])
				continue;
			tdiff(t, b->path,
			      "the %s shares inode %ju with '%s' but the %s has %ju and %ju",
			      fsm_side_name(s), (uintmax_t)a->ino[s], a->path, fsm_side_name(!s),
			      (uintmax_t)a->ino[!s], (uintmax_t)b->ino[!s]);
		}
	}
}

static int
cmp_seen(const void *a, const void *b)
{
	const struct ino_seen *x = a, *y = b;

	if (x->model != y->model)
		return x->model < y->model ? -1 : 1;
	if (x->btime_sec != y->btime_sec)
		return x->btime_sec < y->btime_sec ? -1 : 1;
	return (x->btime_nsec > y->btime_nsec) - (x->btime_nsec < y->btime_nsec);
}

static bool
same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Since the previous comparison, an object's mtime changed in the view exactly when it
 * changed in the model: the view must neither miss an update (make and git rely on it) nor
 * invent one (a read or a copy-up must not touch it). */
static void
check_mtime_moved(struct tree_cmp *t, const struct ino_pair *p, const struct ino_seen *old)
{
	bool m = !same_time(&old->mtime[SIDE_MODEL], &p->key.mtime[SIDE_MODEL]);
	bool v = !same_time(&old->mtime[SIDE_VIEW], &p->key.mtime[SIDE_VIEW]);

	if (m != v)
		tdiff(t, p->path,
		      "mtime changed since the previous comparison in the %s only (view %jd.%09ld -> "
		      "%jd.%09ld)",
		      m ? "model" : "view", (intmax_t)old->mtime[SIDE_VIEW].tv_sec,
		      old->mtime[SIDE_VIEW].tv_nsec, (intmax_t)p->key.mtime[SIDE_VIEW].tv_sec,
		      p->key.mtime[SIDE_VIEW].tv_nsec);
}

/* A view inode number stays the same for the life of the mount: the objects seen at the
 * previous comparison must show the same numbers now. Then remember this comparison's. */
static void
check_stable_inodes(struct tree_cmp *t)
{
	struct ctx *c = t->c;
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct ino_pair *p = &t->pairs[i];
		const struct ino_seen *old;

		if (p->key.btime_sec < 0)
			continue;
		old = c->nseen ? bsearch(&p->key, c->seen, c->nseen, sizeof(*c->seen), cmp_seen)
			       : NULL;
		if (!old)
			continue;
		if (old->view != p->key.view)
			tdiff(t, p->path, "view inode number changed from %ju to %ju",
			      (uintmax_t)old->view, (uintmax_t)p->key.view);
		else if (p->key.has_mtime && !fsm_set_has(&c->unsure, p->key.model))
			check_mtime_moved(t, p, old);
	}
	c->seen = fsm_realloc(c->seen, (t->n ? t->n : 1) * sizeof(*c->seen));
	for (size_t i = 0; i < t->n; i++)
		if (t->pairs[i].key.btime_sec >= 0)
			c->seen[n++] = t->pairs[i].key;
	qsort(c->seen, n, sizeof(*c->seen), cmp_seen);
	c->nseen = n;
	c->unsure.n = 0;
}

/* Ask the kernel to forget cached dentries, inodes and pages (root only), so that the next
 * comparison goes through lookup, FORGET and read on the view. */
static void
drop_caches(struct ctx *c)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, "3\n", 2) != 2) {
		fprintf(stderr, "fs-model: cannot drop the caches (%m), going on without\n");
		c->drop_caches = false;
	}
	if (fd >= 0)
		close(fd);
}

/* Compare the whole trees; exit 1 with the differences when they are not equal. */
unsigned long
fsm_compare_trees(struct ctx *c)
{
	struct tree_cmp t = { .c = c };
	struct stat st[SIDE_COUNT];

	alarm(CMP_TIMEOUT);
	fsm_set_crash_msg(c, "comparing the trees");
	if (c->drop_caches)
		drop_caches(c);
	for (int s = 0; s < SIDE_COUNT; s++)
		if (fstat(c->root[s], &st[s]) < 0) {
			fprintf(stderr, "fs-model: cannot stat the %s root: %m\n",
				fsm_side_name(s));
			exit(1);
		}
	compare_dir(&t, "", c->root, st);
	compare_links(&t);
	check_stable_inodes(&t);
	for (size_t i = 0; i < t.n; i++)
		free(t.pairs[i].path);
	free(t.pairs);
	alarm(0);
	c->compares++;
	if (t.diffs == 0)
		return t.entries;
	if (t.diffs > MAX_DIFFS)
		fprintf(stderr, "  ... and %u more differences\n", t.diffs - MAX_DIFFS);
	if (c->index > 0)
		fprintf(stderr, "  last op #%lu: %s\n", c->index, c->desc);
	if (c->ops > 0)
		fsm_print_replay(c, stderr);
	exit(1);
}
