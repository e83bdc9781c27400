/* SPDX-License-Identifier: MIT */
/*
 * eos_store_export(): round trips of every format on hand-made and random histories.
 *
 * For a pair of versions (from, to) the `from` tree is checked out to disk from the store, the
 * export is applied onto it, and the result is compared with the `to` tree read from the store:
 *   dir      eos_store_export() onto the checkout: equal exactly (kinds, bytes, targets, modes,
 *            mtimes to the nanosecond, owners when root);
 *   tar      the real tar command extracts the layer after its whiteouts were applied (OCI
 *            semantics: .wh.name deletes, .wh..wh..opq empties the directory below): equal exactly;
 *   patch    git init + commit of the checkout, then `git apply --index`: same files and symlinks,
 *            bytes, targets and executable bits (all git tracks). git must be installed.
 * Plus the refusals (/, $HOME, the eos state directory, the store directory, symlinks leading out
 * of the destination, invalid names in a crafted layer) and interrupted dir exports (failpoints).
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/failpoint.h"
#include "common/path.h"

#include "store/entry.h"
#include "store/kv.h"
#include "store/sandbox.h"
#include "store/store.h"
#include "tests/unit/testutil.h"

enum {
	BIG_LEN = 300 * 1024,
	RANDOM_HISTORIES = 8,
	RANDOM_COMMITS = 7,
	NAME_POOL = 6,
	MAX_DEPTH = 3,
};

static const int64_t T0 = 1700000000LL * 1000000000LL;

static struct eos_store *st;
static char *store_dir;
static char *work;    /* per-test scratch directory */
static char ctx[128]; /* what is being checked (messages) */

static void
setup(void)
{
	st = eos_test_store_new(&store_dir);
	work = eos_test_tmpdir("export");
	ctx[0] = '\0';
}

static void
teardown(void)
{
	eos_store_close(st);
	eos_test_rm_rf(store_dir);
	eos_test_rm_rf(work);
	free(store_dir);
	free(work);
}

static char *
pjoin(const char *a, const char *b)
{
	char *p = NULL;

	ck_assert_int_ge(asprintf(&p, "%s%s%s", a, a[0] && b[0] ? "/" : "", b), 0);
	return p;
}

static void run(const char *fmt, ...) EOS_PRINTF(1, 2);

static void
run(const char *fmt, ...)
{
	cleanup_free char *cmd = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&cmd, fmt, ap), 0);
	va_end(ap);
	r = system(cmd);
	ck_assert_msg(r != -1 && WIFEXITED(r) && WEXITSTATUS(r) == 0, "%s: command failed: %s", ctx,
		      cmd);
}

struct rng {
	uint64_t x;
};

static uint64_t
rnd(struct rng *g)
{
	g->x ^= g->x << 13;
	g->x ^= g->x >> 7;
	g->x ^= g->x << 17;
	return g->x;
}

/* Random histories set this: entries then get random owners (when root). */
static struct rng *owners;

static struct eos_attr
attr_of(unsigned mode, int64_t mtime_ns)
{
	struct eos_attr a = eos_test_attr(mode);

	a.mtime_ns = mtime_ns;
	if (owners && geteuid() == 0) {
		a.uid = rnd(owners) % 2 ? 0 : 1234;
		a.gid = rnd(owners) % 2 ? 0 : 4321;
	}
	return a;
}

/* --- building histories ----------------------------------------------------------------------- */

static struct eos_changeset *
cs_new(const char *sandbox, bool create)
{
	struct eos_attr root = attr_of(0755, T0);
	struct eos_changeset *cs = NULL;
	struct eos_error err = { 0 };
	int r = create ? eos_changeset_new_sandbox(st, sandbox, "test", &root, &cs, &err)
		       : eos_changeset_new(st, sandbox, &cs, &err);

	ck_assert_msg(r == 0, "changeset: %s", eos_error_message(&err, r));
	return cs;
}

static uint64_t
cs_commit(struct eos_changeset *cs)
{
	struct eos_commit_result res = { 0 };
	struct eos_error err = { 0 };
	int r = eos_changeset_commit(cs, 0, &res, &err);

	ck_assert_msg(r == 0, "%s: commit: %s", ctx, eos_error_message(&err, r));
	eos_changeset_free(cs);
	return res.version;
}

static void
check_stage(int r, const struct eos_error *err, const char *what, const char *path)
{
	ck_assert_msg(r == 0, "%s: %s '%s': %s", ctx, what, path, eos_error_message(err, r));
}

static void
put(struct eos_changeset *cs, const char *path, unsigned mode, const void *data, size_t len)
{
	struct eos_attr a = attr_of(mode, T0 + 1000 * (int64_t)len + 7);
	struct eos_error err = { 0 };

	check_stage(eos_changeset_put_file_mem(cs, path, &a, data, len, &err), &err, "put", path);
}

static void
put_str(struct eos_changeset *cs, const char *path, unsigned mode, const char *s)
{
	put(cs, path, mode, s, strlen(s));
}

static void
mkd(struct eos_changeset *cs, const char *path, unsigned mode, bool opaque)
{
	struct eos_attr a = attr_of(mode, T0 + 555);
	struct eos_error err = { 0 };

	check_stage(eos_changeset_mkdir(cs, path, &a, opaque, &err), &err, "mkdir", path);
}

static void
sym(struct eos_changeset *cs, const char *path, const char *target)
{
	struct eos_attr a = attr_of(0777, T0 + 99);
	struct eos_error err = { 0 };

	check_stage(eos_changeset_symlink(cs, path, &a, target, &err), &err, "symlink", path);
}

static void
hardlink(struct eos_changeset *cs, const char *path, const char *target)
{
	struct eos_error err = { 0 };

	check_stage(eos_changeset_link(cs, path, target, &err), &err, "link", path);
}

static void
setx(struct eos_changeset *cs, const char *path, const char *name, const char *value)
{
	struct eos_error err = { 0 };

	check_stage(eos_changeset_set_xattr(cs, path, name, value, strlen(value), &err), &err,
		    "set_xattr", path);
}

static void
rm(struct eos_changeset *cs, const char *path)
{
	struct eos_error err = { 0 };

	check_stage(eos_changeset_remove(cs, path, &err), &err, "remove", path);
}

static void
chattr(struct eos_changeset *cs, const char *path, unsigned mode, int64_t mtime)
{
	struct eos_attr a = attr_of(mode, mtime);
	struct eos_error err = { 0 };

	check_stage(eos_changeset_set_attr(cs, path, &a, &err), &err, "set_attr", path);
}

/* --- reading the store ------------------------------------------------------------------------ */

struct kid {
	char *name;
	struct eos_stat st;
};

struct kids {
	struct kid *v;
	size_t n;
};

static int
kids_add(void *c, const char *name, const struct eos_stat *s)
{
	struct kids *k = c;
	struct kid *p = reallocarray(k->v, k->n + 1, sizeof(*p));

	ck_assert_ptr_nonnull(p);
	k->v = p;
	p[k->n].name = strdup(name);
	p[k->n++].st = *s;
	return 0;
}

static struct kids
store_list(const char *sb, uint64_t v, const char *path)
{
	struct eos_error err = { 0 };
	struct kids k = { 0 };
	int r = eos_store_readdir(st, sb, v, path, NULL, kids_add, &k, &err);

	ck_assert_msg(r == 0, "%s: readdir '%s': %s", ctx, path, eos_error_message(&err, r));
	return k;
}

static void
kids_free(struct kids *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->v[i].name);
	free(k->v);
}

static struct eos_stat
store_stat(const char *sb, uint64_t v, const char *path)
{
	struct eos_error err = { 0 };
	struct eos_stat s;
	int r = eos_store_stat(st, sb, v, path, &s, &err);

	ck_assert_msg(r == 0, "%s: stat '%s': %s", ctx, path, eos_error_message(&err, r));
	return s;
}

/* The whole content of a file (caller frees). */
static uint8_t *
store_read(const char *sb, uint64_t v, const char *path, uint64_t size)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	uint8_t *buf = malloc(size ? size : 1);
	struct eos_error err = { 0 };
	uint64_t off = 0;
	int r = eos_store_file_open(st, sb, v, path, &f, &err);

	ck_assert_msg(r == 0, "%s: open '%s': %s", ctx, path, eos_error_message(&err, r));
	while (off < size) {
		ssize_t n = eos_file_pread(f, buf + off, size - off, off, &err);

		ck_assert_msg(n > 0, "%s: read '%s'", ctx, path);
		off += (uint64_t)n;
	}
	return buf;
}

static char *
store_target(const char *sb, uint64_t v, const char *path)
{
	struct eos_error err = { 0 };
	char *t = NULL;
	int r = eos_store_readlink(st, sb, v, path, &t, &err);

	ck_assert_msg(r == 0, "%s: readlink '%s': %s", ctx, path, eos_error_message(&err, r));
	return t;
}

/* --- checkout: the tree at v on disk ---------------------------------------------------------- */

static void
set_attrs(const char *host, const struct eos_stat *s)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT },
				  { .tv_sec = s->attr.mtime_ns / 1000000000,
				    .tv_nsec = s->attr.mtime_ns % 1000000000 } };

	if (geteuid() == 0)
		ck_assert_int_eq(lchown(host, s->attr.uid, s->attr.gid), 0);
	if (s->kind != EOS_KIND_SYMLINK)
		ck_assert_int_eq(chmod(host, s->attr.mode), 0);
	ck_assert_int_eq(utimensat(AT_FDCWD, host, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void checkout_dir(const char *sb, uint64_t v, const char *tree, const char *host);

struct xattr_target {
	const char *host;
};

static int
xattr_set(void *c, const char *name, const void *value, size_t len)
{
	const struct xattr_target *t = c;

	ck_assert_msg(lsetxattr(t->host, name, value, len, 0) == 0, "setxattr '%s'", t->host);
	return 0;
}

static void
checkout_xattrs(const char *sb, uint64_t v, const char *tree, const char *host)
{
	struct xattr_target t = { .host = host };
	struct eos_error err = { 0 };
	int r = eos_store_xattrs(st, sb, v, tree, xattr_set, &t, &err);

	ck_assert_msg(r == 0, "%s: xattrs '%s': %s", ctx, tree, eos_error_message(&err, r));
}

static void
checkout_node(const char *sb, uint64_t v, const char *tree, const char *host,
	      const struct eos_stat *s)
{
	cleanup_free uint8_t *data = NULL;
	cleanup_free char *target = NULL;

	switch (s->kind) {
	case EOS_KIND_DIR:
		ck_assert_int_eq(mkdir(host, 0700), 0);
		checkout_dir(sb, v, tree, host);
		break;
	case EOS_KIND_FILE:
		data = store_read(sb, v, tree, s->size);
		eos_test_write_file(host, data, s->size, 0600);
		break;
	case EOS_KIND_SYMLINK:
		target = store_target(sb, v, tree);
		ck_assert_int_eq(symlink(target, host), 0);
		break;
	case EOS_KIND_FIFO:
	case EOS_KIND_CHR:
	case EOS_KIND_BLK:
		ck_assert_int_eq(mknod(host, eos_kind_mode(s->kind) | 0600, (dev_t)s->rdev), 0);
		break;
	case EOS_KIND_NONE:
	case EOS_KIND_WHITEOUT:
		ck_abort_msg("unexpected kind");
	}
	if (s->kind == EOS_KIND_DIR || s->kind == EOS_KIND_FILE)
		checkout_xattrs(sb, v, tree, host);
	set_attrs(host, s);
}

static void
checkout_dir(const char *sb, uint64_t v, const char *tree, const char *host)
{
	struct kids k = store_list(sb, v, tree);

	for (size_t i = 0; i < k.n; i++) {
		cleanup_free char *t = pjoin(tree, k.v[i].name), *h = pjoin(host, k.v[i].name);

		checkout_node(sb, v, t, h, &k.v[i].st);
	}
	kids_free(&k);
}

/* Create host and fill it with the tree of sb at v (root attributes included). */
static void
checkout(const char *sb, uint64_t v, const char *host)
{
	struct eos_stat root = store_stat(sb, v, "");

	ck_assert_int_eq(mkdir(host, 0700), 0);
	checkout_dir(sb, v, "", host);
	set_attrs(host, &root);
}

/* --- comparing a host tree with the store ----------------------------------------------------- */

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of a host directory (without "." and ".."; skip_git drops ".git"). */
static char **
host_names(const char *host, size_t *ret_n, bool skip_git)
{
	cleanup_closedir DIR *d = opendir(host);
	char **v = NULL;
	struct dirent *de;
	size_t n = 0;

	ck_assert_msg(d != NULL, "%s: opendir '%s'", ctx, host);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (skip_git && !strcmp(de->d_name, ".git")))
			continue;
		v = reallocarray(v, n + 1, sizeof(*v));
		ck_assert_ptr_nonnull(v);
		v[n++] = strdup(de->d_name);
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), name_cmp);
	*ret_n = n;
	return v;
}

static void
names_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void
compare_bytes(const char *sb, uint64_t v, const char *tree, const char *host, uint64_t size)
{
	cleanup_free uint8_t *want = store_read(sb, v, tree, size);
	cleanup_free uint8_t *got = malloc(size + 1);
	cleanup_close int fd = open(host, O_RDONLY | O_CLOEXEC);
	uint64_t off = 0;
	ssize_t n;

	ck_assert_msg(fd >= 0, "%s: open '%s'", ctx, host);
	while ((n = read(fd, got + off, size + 1 - off)) > 0)
		off += (uint64_t)n;
	ck_assert_msg(off == size, "%s: '%s' has %llu bytes, want %llu", ctx, tree,
		      (unsigned long long)off, (unsigned long long)size);
	ck_assert_msg(size == 0 || memcmp(want, got, size) == 0, "%s: '%s' differs", ctx, tree);
}

static void
compare_target(const char *sb, uint64_t v, const char *tree, const char *host)
{
	cleanup_free char *want = store_target(sb, v, tree);
	char got[4096];
	ssize_t n = readlink(host, got, sizeof(got) - 1);

	ck_assert_msg(n >= 0, "%s: readlink '%s'", ctx, host);
	got[n] = '\0';
	ck_assert_msg(strcmp(want, got) == 0, "%s: '%s' -> '%s', want '%s'", ctx, tree, got, want);
}

struct xattr_list {
	char **v;
	size_t n;
};

static void
xattr_push(struct xattr_list *l, const char *name, const void *value, size_t len)
{
	char *item = NULL;

	ck_assert_int_ge(asprintf(&item, "%s=%.*s", name, (int)len, (const char *)value), 0);
	l->v = reallocarray(l->v, l->n + 1, sizeof(*l->v));
	ck_assert_ptr_nonnull(l->v);
	l->v[l->n++] = item;
}

static int
xattr_add(void *c, const char *name, const void *value, size_t len)
{
	xattr_push(c, name, value, len);
	return 0;
}

/* The "user." extended attributes of a host path, as sorted "name=value" strings. */
static void
host_xattrs(const char *host, struct xattr_list *l)
{
	char names[4096], value[4096];
	ssize_t n = llistxattr(host, names, sizeof(names));

	for (char *p = names; n > 0 && p < names + n; p += strlen(p) + 1) {
		ssize_t len;

		if (strncmp(p, "user.", 5) != 0)
			continue;
		len = lgetxattr(host, p, value, sizeof(value));
		ck_assert_int_ge(len, 0);
		xattr_push(l, p, value, (size_t)len);
	}
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), name_cmp);
}

/* The host path has the store path's extended attributes. */
static void
compare_xattrs(const char *sb, uint64_t v, const char *tree, const char *host)
{
	struct xattr_list want = { 0 }, got = { 0 };
	struct eos_error err = { 0 };
	int r = eos_store_xattrs(st, sb, v, tree, xattr_add, &want, &err);

	ck_assert_msg(r == 0, "%s: xattrs '%s': %s", ctx, tree, eos_error_message(&err, r));
	if (want.n > 1)
		qsort(want.v, want.n, sizeof(*want.v), name_cmp);
	host_xattrs(host, &got);
	ck_assert_msg(want.n == got.n, "%s: '%s' has %zu xattrs, want %zu", ctx, tree, got.n,
		      want.n);
	for (size_t i = 0; i < want.n; i++)
		ck_assert_msg(strcmp(want.v[i], got.v[i]) == 0, "%s: '%s' xattr '%s', want '%s'",
			      ctx, tree, got.v[i], want.v[i]);
	names_free(want.v, want.n);
	names_free(got.v, got.n);
}

static mode_t
kind_type(enum eos_kind k)
{
	return k == EOS_KIND_DIR ? S_IFDIR : k == EOS_KIND_SYMLINK ? S_IFLNK : S_IFREG;
}

static void compare_dir(const char *sb, uint64_t v, const char *tree, const char *host);

/* Exact comparison of one path (attributes, then content or children). */
static void
compare_node(const char *sb, uint64_t v, const char *tree, const char *host,
	     const struct eos_stat *s)
{
	struct stat hs;

	ck_assert_msg(lstat(host, &hs) == 0, "%s: '%s' is missing", ctx, tree);
	ck_assert_msg((hs.st_mode & S_IFMT) == kind_type(s->kind), "%s: '%s' has the wrong kind",
		      ctx, tree);
	if (s->kind != EOS_KIND_SYMLINK)
		ck_assert_msg((hs.st_mode & 07777) == s->attr.mode, "%s: '%s' mode %o, want %o",
			      ctx, tree, hs.st_mode & 07777, s->attr.mode);
	ck_assert_msg(
		(int64_t)hs.st_mtim.tv_sec * 1000000000 + hs.st_mtim.tv_nsec == s->attr.mtime_ns,
		"%s: '%s' mtime %lld.%09ld, want %lld", ctx, tree, (long long)hs.st_mtim.tv_sec,
		hs.st_mtim.tv_nsec, (long long)s->attr.mtime_ns);
	if (geteuid() == 0)
		ck_assert_msg(hs.st_uid == s->attr.uid && hs.st_gid == s->attr.gid,
			      "%s: '%s' owner %u:%u, want %u:%u", ctx, tree, hs.st_uid, hs.st_gid,
			      s->attr.uid, s->attr.gid);
	if (s->kind != EOS_KIND_SYMLINK)
		compare_xattrs(sb, v, tree, host);
	if (s->kind == EOS_KIND_FILE)
		compare_bytes(sb, v, tree, host, s->size);
	else if (s->kind == EOS_KIND_SYMLINK)
		compare_target(sb, v, tree, host);
	else
		compare_dir(sb, v, tree, host);
}

static void
compare_dir(const char *sb, uint64_t v, const char *tree, const char *host)
{
	struct kids k = store_list(sb, v, tree);
	size_t n = 0;
	char **names = host_names(host, &n, false);

	for (size_t i = 0; i < EOS_MAX(k.n, n); i++) {
		const char *want = i < k.n ? k.v[i].name : "(nothing)";
		const char *got = i < n ? names[i] : "(nothing)";

		ck_assert_msg(strcmp(want, got) == 0, "%s: in '%s': found '%s', want '%s'", ctx,
			      tree, got, want);
	}
	for (size_t i = 0; i < k.n; i++) {
		cleanup_free char *t = pjoin(tree, k.v[i].name), *h = pjoin(host, k.v[i].name);

		compare_node(sb, v, t, h, &k.v[i].st);
	}
	kids_free(&k);
	names_free(names, n);
}

/* host equals the tree of sb at v exactly. */
static void
compare_tree(const char *sb, uint64_t v, const char *host)
{
	struct eos_stat root = store_stat(sb, v, "");

	compare_node(sb, v, "", host, &root);
}

/* --- comparing what git tracks ---------------------------------------------------------------- */

/* Every file and symlink below tree (store side), as "path" strings, sorted. */
static void
git_store_files(const char *sb, uint64_t v, const char *tree, struct kids *out)
{
	struct kids k = store_list(sb, v, tree);

	for (size_t i = 0; i < k.n; i++) {
		cleanup_free char *t = pjoin(tree, k.v[i].name);

		if (k.v[i].st.kind == EOS_KIND_DIR)
			git_store_files(sb, v, t, out);
		else
			kids_add(out, t, &k.v[i].st);
	}
	kids_free(&k);
}

static void
git_host_files(const char *root, const char *tree, struct kids *out)
{
	cleanup_free char *host = pjoin(root, tree);
	size_t n = 0;
	char **names = host_names(host, &n, !tree[0]);

	for (size_t i = 0; i < n; i++) {
		cleanup_free char *t = pjoin(tree, names[i]), *h = pjoin(root, t);
		struct eos_stat s = { 0 };
		struct stat hs;

		ck_assert_int_eq(lstat(h, &hs), 0);
		if (S_ISDIR(hs.st_mode)) {
			git_host_files(root, t, out);
			continue;
		}
		s.kind = S_ISLNK(hs.st_mode) ? EOS_KIND_SYMLINK : EOS_KIND_FILE;
		s.attr.mode = hs.st_mode & 07777;
		s.size = (uint64_t)hs.st_size;
		kids_add(out, t, &s);
	}
	names_free(names, n);
}

static int
kid_cmp(const void *a, const void *b)
{
	return strcmp(((const struct kid *)a)->name, ((const struct kid *)b)->name);
}

/* The git work tree at host has the files and symlinks of sb at v (bytes, targets, exec bit). */
static void
compare_git(const char *sb, uint64_t v, const char *host)
{
	struct kids want = { 0 }, got = { 0 };

	git_store_files(sb, v, "", &want);
	git_host_files(host, "", &got);
	if (want.n > 1)
		qsort(want.v, want.n, sizeof(*want.v), kid_cmp);
	if (got.n > 1)
		qsort(got.v, got.n, sizeof(*got.v), kid_cmp);
	for (size_t i = 0; i < EOS_MAX(want.n, got.n); i++) {
		const struct kid *w = i < want.n ? &want.v[i] : NULL,
				 *g = i < got.n ? &got.v[i] : NULL;
		cleanup_free char *h = NULL;

		ck_assert_msg(w && g && strcmp(w->name, g->name) == 0,
			      "%s: git tree has '%s', want '%s'", ctx, g ? g->name : "(nothing)",
			      w ? w->name : "(nothing)");
		ck_assert_msg(w->st.kind == g->st.kind, "%s: '%s' has the wrong kind", ctx,
			      w->name);
		h = pjoin(host, w->name);
		if (w->st.kind == EOS_KIND_SYMLINK) {
			compare_target(sb, v, w->name, h);
			continue;
		}
		ck_assert_msg(!!(w->st.attr.mode & 0100) == !!(g->st.attr.mode & 0100),
			      "%s: '%s' executable bit differs", ctx, w->name);
		compare_bytes(sb, v, w->name, h, w->st.size);
	}
	kids_free(&want);
	kids_free(&got);
}

/* --- the exports ------------------------------------------------------------------------------ */

struct progress_seen {
	unsigned calls;
	struct eos_export_status last;
};

static void
on_progress(void *arg, const struct eos_export_status *s)
{
	struct progress_seen *p = arg;

	ck_assert_uint_le(s->paths, s->total_paths);
	ck_assert_uint_ge(s->paths, p->last.paths);
	p->calls++;
	p->last = *s;
}

/* Export, and check the progress reported: it ends with every path, file and byte written. */
static struct eos_export_result
export_ok(const char *sb, uint64_t from, uint64_t to, enum eos_export_format f, const char *dest)
{
	struct progress_seen seen = { 0 };
	struct eos_export_options o = { .sandbox = sb,
					.from = from,
					.to = to,
					.format = f,
					.dest = dest,
					.fd = -1,
					.progress = on_progress,
					.progress_ctx = &seen };
	struct eos_export_result res = { 0 };
	struct eos_error err = { 0 };
	int r = eos_store_export(st, &o, &res, &err);

	ck_assert_msg(r == 0, "%s: export: %s", ctx, eos_error_message(&err, r));
	ck_assert_uint_eq(res.from, from ? from : res.from);
	ck_assert_msg(seen.calls > 0 || res.files == 0, "%s: no progress reported", ctx);
	if (seen.calls) {
		ck_assert_uint_eq(seen.last.paths, seen.last.total_paths);
		ck_assert_uint_eq(seen.last.files, res.files);
		ck_assert_uint_eq(seen.last.bytes, res.bytes);
	}
	return res;
}

/* Export to dest expecting failure code; returns the message (static). */
static const char *
export_fail(const char *sb, uint64_t from, uint64_t to, enum eos_export_format f, const char *dest,
	    int code)
{
	static struct eos_error err;
	struct eos_export_options o = {
		.sandbox = sb, .from = from, .to = to, .format = f, .dest = dest, .fd = -1
	};
	int r;

	eos_error_clear(&err);
	r = eos_store_export(st, &o, NULL, &err);
	ck_assert_msg(r == code, "%s: export returned %d (%s), want %d", ctx, r,
		      eos_error_message(&err, r), code);
	return err.msg;
}

/* Apply an OCI layer onto dir: whiteouts first (they only hide what is below), then extract. */
static void
tar_apply(const char *layer, const char *dir, bool zstd)
{
	cleanup_free char *cmd = NULL;
	FILE *p;
	char line[8192];

	ck_assert_int_ge(asprintf(&cmd, "tar %s -tf '%s'", zstd ? "--zstd" : "", layer), 0);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		char *m = line, *slash, *base;
		size_t len = strlen(m);

		while (len && (m[len - 1] == '\n' || m[len - 1] == '/'))
			m[--len] = '\0';
		if (strncmp(m, "./", 2) == 0)
			m += 2;
		slash = strrchr(m, '/');
		base = slash ? slash + 1 : m;
		if (strncmp(base, ".wh.", 4) != 0)
			continue;
		*base = '\0';
		if (strcmp(base + 1, "wh..wh..opq") == 0) {
			cleanup_free char *d = pjoin(dir, m);
			size_t n = 0;
			char **names = host_names(d, &n, false);

			for (size_t i = 0; i < n; i++) {
				cleanup_free char *c = pjoin(d, names[i]);

				eos_test_rm_rf(c);
			}
			names_free(names, n);
		} else {
			cleanup_free char *victim = NULL;

			ck_assert_int_ge(asprintf(&victim, "%s/%s%s", dir, m, base + 4), 0);
			eos_test_rm_rf(victim);
		}
	}
	ck_assert_int_eq(pclose(p), 0);
	run("tar %s -xf '%s' -C '%s' --numeric-owner --xattrs --xattrs-include='user.*' "
	    "--exclude='.wh.*'",
	    zstd ? "--zstd" : "", layer, dir);
}

/* Every format round-trips from -> to. */
static void
check_round_trips(const char *sb, uint64_t from, uint64_t to)
{
	cleanup_free char *dir = pjoin(work, "dir"), *tar = pjoin(work, "tar"),
			  *zst = pjoin(work, "zst"), *git = pjoin(work, "git"),
			  *layer = pjoin(work, "layer.tar"), *zlayer = pjoin(work, "layer.tar.zst"),
			  *patch = pjoin(work, "x.patch");
	size_t base = strlen(ctx);

	snprintf(ctx + base, sizeof(ctx) - base, " L%llu..L%llu dir", (unsigned long long)from,
		 (unsigned long long)to);
	checkout(sb, from, dir);
	export_ok(sb, from, to, EOS_EXPORT_DIR, dir);
	compare_tree(sb, to, dir);

	snprintf(ctx + base, sizeof(ctx) - base, " L%llu..L%llu tar", (unsigned long long)from,
		 (unsigned long long)to);
	checkout(sb, from, tar);
	export_ok(sb, from, to, EOS_EXPORT_TAR, layer);
	tar_apply(layer, tar, false);
	compare_tree(sb, to, tar);

	snprintf(ctx + base, sizeof(ctx) - base, " L%llu..L%llu tar-zst", (unsigned long long)from,
		 (unsigned long long)to);
	checkout(sb, from, zst);
	export_ok(sb, from, to, EOS_EXPORT_TAR_ZST, zlayer);
	tar_apply(zlayer, zst, true);
	compare_tree(sb, to, zst);

	snprintf(ctx + base, sizeof(ctx) - base, " L%llu..L%llu patch", (unsigned long long)from,
		 (unsigned long long)to);
	/* A git checkout of from: what git tracks (empty directories are not). */
	checkout(sb, from, git);
	run("cd '%s' && git -c init.defaultBranch=main init -q && git add -A && "
	    "git -c user.name=eos -c user.email=eos@example.com commit -q --allow-empty -m base "
	    "&& git clean -fdq",
	    git);
	export_ok(sb, from, to, EOS_EXPORT_PATCH, patch);
	run("cd '%s' && git apply --index --allow-empty '%s'", git, patch);
	compare_git(sb, to, git);

	ctx[base] = '\0';
	eos_test_rm_rf(dir);
	eos_test_rm_rf(tar);
	eos_test_rm_rf(zst);
	eos_test_rm_rf(git);
}

/* --- the hand-made history -------------------------------------------------------------------- */

static void
fill_text(char *buf, size_t n, const char *word)
{
	size_t off = 0;

	for (int i = 0; off + 40 < n; i++)
		off += (size_t)snprintf(buf + off, n - off, "%s line %d\n", word, i);
	buf[off] = '\0';
}

/* v1: the base; v2 and v3: every kind of change, some of them in two steps. */
static uint64_t
scenario(const char *sb, uint64_t *ret_v2)
{
	static uint8_t big[BIG_LEN], bin[1000];
	char text[2000];
	struct eos_changeset *cs = cs_new(sb, true);

	eos_test_fill_random(big, sizeof(big), 1);
	eos_test_fill_random(bin, sizeof(bin), 2);
	bin[10] = 0;
	fill_text(text, sizeof(text), "renamed");
	put_str(cs, "keep.txt", 0644, "keep\n");
	put_str(cs, "mod.txt", 0644, "one\ntwo\n");
	put_str(cs, "del.txt", 0644, "bye\n");
	put_str(cs, "ren-src.txt", 0644, text);
	put_str(cs, "mode.sh", 0644, "#!/bin/sh\necho hi\n");
	sym(cs, "link", "keep.txt");
	put_str(cs, "f2d", 0644, "file then dir\n");
	mkd(cs, "d2f", 0755, false);
	put_str(cs, "d2f/x", 0644, "below\n");
	sym(cs, "l2f", "keep.txt");
	put_str(cs, "f2l", 0644, "file then link\n");
	mkd(cs, "deldir", 0755, false);
	put_str(cs, "deldir/a", 0644, "a\n");
	mkd(cs, "deldir/sub", 0700, false);
	put_str(cs, "deldir/sub/b", 0600, "b\n");
	mkd(cs, "opq", 0755, false);
	put_str(cs, "opq/old1", 0644, "old\n");
	put_str(cs, "opq/keep", 0644, "same\n");
	mkd(cs, "opq/sub", 0755, false);
	put_str(cs, "opq/sub/x", 0644, "x\n");
	put(cs, "bin.dat", 0644, bin, sizeof(bin));
	put(cs, "big.bin", 0644, big, sizeof(big));
	put(cs, "empty", 0644, "", 0);
	mkd(cs, "with space", 0755, false);
	put_str(cs, "with space/file name.txt", 0644, "spaced\n");
	put_str(cs, "noeol.txt", 0644, "no newline");
	mkd(cs, "attrdir", 0755, false);
	put_str(cs, "attrdir/f", 0644, "f\n");
	ck_assert_uint_eq(cs_commit(cs), 1);

	cs = cs_new(sb, false);
	put_str(cs, "mod.txt", 0644, "one\nTWO\nthree\n");
	rm(cs, "del.txt");
	rm(cs, "ren-src.txt");
	mkd(cs, "renamed", 0755, false);
	put_str(cs, "renamed/dst.txt", 0644, text);
	chattr(cs, "mode.sh", 0755, T0 + 5);
	sym(cs, "link", "mod.txt");
	rm(cs, "f2d");
	rm(cs, "d2f");
	rm(cs, "l2f");
	rm(cs, "f2l");
	rm(cs, "deldir");
	mkd(cs, "opq", 0750, true);
	put_str(cs, "opq/keep", 0644, "same\n");
	put_str(cs, "opq/new", 0644, "new\n");
	bin[500] ^= 0xff;
	put(cs, "bin.dat", 0644, bin, sizeof(bin));
	big[BIG_LEN / 2] ^= 0xff;
	put(cs, "big.bin", 0644, big, sizeof(big));
	put_str(cs, "with space/new file.txt", 0644, "new spaced\n");
	put(cs, "empty2", 0600, "", 0);
	put_str(cs, "noeol.txt", 0644, "no newline either");
	mkd(cs, "newdir", 0755, false);
	mkd(cs, "attrdir", 0700, false);
	put_str(cs, "hl1", 0644, "linked twice\n");
	hardlink(cs, "hl2", "hl1");
	put_str(cs, "xattr.txt", 0644, "with an xattr\n");
	setx(cs, "xattr.txt", "user.eos", "one");
	mkd(cs, "xdir", 0755, false);
	setx(cs, "xdir", "user.eos", "dir");
	*ret_v2 = cs_commit(cs);

	cs = cs_new(sb, false);
	mkd(cs, "f2d", 0755, false);
	put_str(cs, "d2f", 0755, "now a file\n");
	put_str(cs, "l2f", 0644, "was a link\n");
	sym(cs, "f2l", "mod.txt");
	mkd(cs, "newdir/a", 0755, false);
	put_str(cs, "empty", 0755, "");
	put_str(cs, "xattr.txt", 0644, "with an xattr\n");
	setx(cs, "xattr.txt", "user.eos", "two");
	setx(cs, "xattr.txt", "user.more", "");
	return cs_commit(cs);
}

START_TEST(test_scenario_round_trips)
{
	uint64_t v2 = 0, v3;
	struct eos_changeset *cs;

	snprintf(ctx, sizeof(ctx), "scenario");
	v3 = scenario("sb", &v2);
	cs = cs_new("sb", false);
	put_str(cs, "f2d/inner", 0644, "inside\n");
	put_str(cs, "newdir/a/b.txt", 0644, "deep\n");
	cs_commit(cs);
	check_round_trips("sb", 1, 4);
	check_round_trips("sb", 1, v2);
	check_round_trips("sb", v2, v3);
	check_round_trips("sb", v2, 4);
	check_round_trips("sb", v3, 4);
}
END_TEST

static bool
file_contains(const char *path, const char *needle)
{
	cleanup_free char *cmd = NULL;
	int r;

	ck_assert_int_ge(asprintf(&cmd, "grep -qF -- '%s' '%s'", needle, path), 0);
	r = system(cmd);
	return r != -1 && WIFEXITED(r) && WEXITSTATUS(r) == 0;
}

START_TEST(test_patch_renames_and_counts)
{
	cleanup_free char *patch = pjoin(work, "x.patch");
	struct eos_export_result res;
	uint64_t v2 = 0;

	snprintf(ctx, sizeof(ctx), "renames");
	scenario("sb", &v2);
	res = export_ok("sb", 1, v2, EOS_EXPORT_PATCH, patch);
	ck_assert_uint_eq(res.from, 1);
	ck_assert_uint_eq(res.to, v2);
	ck_assert_uint_eq(res.renamed, 1);
	ck_assert(file_contains(patch, "rename from ren-src.txt"));
	ck_assert(file_contains(patch, "rename to renamed/dst.txt"));
	ck_assert(file_contains(patch, "deleted file mode"));
	ck_assert(file_contains(patch, "deldir/sub/b"));
	ck_assert(file_contains(patch, "GIT binary patch"));
	ck_assert(file_contains(patch, "old mode 100644"));
	/* Directories and files below a deleted one: counted as deletions in the patch. */
	ck_assert_uint_ge(res.deleted, 3);
}
END_TEST

START_TEST(test_tar_layer_members)
{
	cleanup_free char *layer = pjoin(work, "l.tar"), *list = pjoin(work, "list");
	uint64_t v2 = 0;

	snprintf(ctx, sizeof(ctx), "tar members");
	scenario("sb", &v2);
	export_ok("sb", 1, v2, EOS_EXPORT_TAR, layer);
	run("tar -tf '%s' > '%s'", layer, list);
	ck_assert(file_contains(list, ".wh.del.txt"));
	ck_assert(file_contains(list, ".wh.deldir"));
	ck_assert(file_contains(list, "opq/.wh..wh..opq"));
	ck_assert(file_contains(list, "opq/keep")); /* unchanged, but below an opaque directory */
	ck_assert(!file_contains(list, "deldir/sub"));
	ck_assert(!file_contains(list, "keep.txt"));
	run("tar -tvf '%s' > '%s'", layer, list);
	ck_assert(file_contains(list, "hl2 link to hl1"));
}
END_TEST

START_TEST(test_same_version_is_empty)
{
	cleanup_free char *dir = pjoin(work, "d"), *layer = pjoin(work, "l.tar"),
			  *patch = pjoin(work, "p"), *list = pjoin(work, "list"), *stage = NULL;
	struct eos_export_result res;
	struct stat sb;
	uint64_t v2 = 0;

	snprintf(ctx, sizeof(ctx), "empty delta");
	scenario("sb", &v2);
	checkout("sb", v2, dir);
	res = export_ok("sb", v2, v2, EOS_EXPORT_DIR, dir);
	ck_assert_uint_eq(res.files + res.dirs + res.symlinks + res.deleted, 0);
	compare_tree("sb", v2, dir);
	stage = pjoin(work, ".d.eos-export");
	ck_assert_int_ne(lstat(stage, &sb), 0);
	export_ok("sb", v2, v2, EOS_EXPORT_TAR, layer);
	run("tar -tf '%s' > '%s'", layer, list);
	ck_assert(lstat(list, &sb) == 0 && sb.st_size == 0);
	export_ok("sb", v2, v2, EOS_EXPORT_PATCH, patch);
	ck_assert(lstat(patch, &sb) == 0 && sb.st_size == 0);
}
END_TEST

/* --- random histories ------------------------------------------------------------------------- */

/* Every visible path at v with its kind ("" excluded), parents before children. */
static void
tree_paths(const char *sb, uint64_t v, const char *tree, struct kids *out)
{
	struct kids k = store_list(sb, v, tree);

	for (size_t i = 0; i < k.n; i++) {
		cleanup_free char *t = pjoin(tree, k.v[i].name);

		kids_add(out, t, &k.v[i].st);
		if (k.v[i].st.kind == EOS_KIND_DIR)
			tree_paths(sb, v, t, out);
	}
	kids_free(&k);
}

static size_t
depth_of(const char *path)
{
	size_t d = path[0] ? 1 : 0;

	for (; *path; path++)
		d += *path == '/';
	return d;
}

/* A path that is not yet in the tree or is (a replacement), below an existing directory. */
static char *
random_path(struct rng *g, const struct kids *tree)
{
	static const char *const pool[NAME_POOL] = { "a", "b", "c d", "e.txt", "F", "g-h" };
	const char *parent = "";
	size_t tries = 0;

	while (tries++ < 8) {
		const struct kid *k;

		if (tree->n == 0 || rnd(g) % 3 == 0)
			break;
		k = &tree->v[rnd(g) % tree->n];
		if (k->st.kind == EOS_KIND_DIR && depth_of(k->name) < MAX_DEPTH) {
			parent = k->name;
			break;
		}
	}
	return pjoin(parent, pool[rnd(g) % NAME_POOL]);
}

static bool
overlaps(char **staged, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (eos_path_is_below(path, staged[i]) || eos_path_is_below(staged[i], path))
			return true;
	return false;
}

static void
random_content(struct rng *g, struct eos_changeset *cs, const char *path, unsigned mode)
{
	static uint8_t buf[BIG_LEN];
	size_t len = 0;
	uint64_t kind = rnd(g) % 12;

	if (kind < 6) {
		for (int i = 0, n = (int)(rnd(g) % 30); i < n; i++)
			len += (size_t)snprintf((char *)buf + len, 64, "line %d %llu\n", i,
						(unsigned long long)(rnd(g) % 4));
		if (kind == 5 && len)
			len--; /* no final newline */
	} else if (kind < 9) {
		len = 1 + rnd(g) % 3000;
		eos_test_fill_random(buf, len, rnd(g));
		buf[0] = 0;
	} else if (kind < 11) {
		len = 0;
	} else {
		len = 70000 + rnd(g) % (BIG_LEN - 70000);
		eos_test_fill_random(buf, len, rnd(g));
	}
	put(cs, path, mode, buf, len);
}

static unsigned
random_mode(struct rng *g, bool dir)
{
	static const unsigned files[] = { 0644, 0600, 0755, 0700 };
	static const unsigned dirs[] = { 0755, 0700, 0750 };

	return dir ? dirs[rnd(g) % 3] : files[rnd(g) % 4];
}

/* Stage one random operation on path; false when it does not apply. */
static bool
random_op(struct rng *g, struct eos_changeset *cs, const struct kids *tree, const char *path,
	  const struct kid *existing)
{
	char target[32];

	switch (rnd(g) % 8) {
	case 0:
	case 1:
	case 2:
		random_content(g, cs, path, random_mode(g, false));
		return true;
	case 3:
		mkd(cs, path, random_mode(g, true), existing && rnd(g) % 2);
		return true;
	case 4:
		snprintf(target, sizeof(target), "target-%llu", (unsigned long long)(rnd(g) % 5));
		sym(cs, path, target);
		return true;
	case 5:
	case 6:
		if (!existing)
			return false;
		rm(cs, path);
		return true;
	default:
		if (!existing)
			return false;
		chattr(cs, path,
		       existing->st.kind == EOS_KIND_SYMLINK
			       ? 0777
			       : random_mode(g, existing->st.kind == EOS_KIND_DIR),
		       T0 + (int64_t)(rnd(g) % 1000000000000ULL));
		(void)tree;
		return true;
	}
}

static const struct kid *
find_path(const struct kids *tree, const char *path)
{
	for (size_t i = 0; i < tree->n; i++)
		if (strcmp(tree->v[i].name, path) == 0)
			return &tree->v[i];
	return NULL;
}

static uint64_t
random_commit(struct rng *g, const char *sb, uint64_t head)
{
	struct kids tree = { 0 };
	struct eos_changeset *cs = cs_new(sb, false);
	char *staged[16];
	size_t n = 0, want = 1 + rnd(g) % 6;
	uint64_t v;

	tree_paths(sb, head, "", &tree);
	for (int tries = 0; n < want && tries < 40; tries++) {
		bool pick = tree.n && rnd(g) % 2;
		char *path = pick ? strdup(tree.v[rnd(g) % tree.n].name) : random_path(g, &tree);
		const struct kid *existing = find_path(&tree, path);

		if (overlaps(staged, n, path) || !random_op(g, cs, &tree, path, existing)) {
			free(path);
			continue;
		}
		staged[n++] = path;
	}
	v = cs_commit(cs);
	for (size_t i = 0; i < n; i++)
		free(staged[i]);
	kids_free(&tree);
	return v ? v : head;
}

/* EOS_TEST_EXPORT_HISTORIES=N runs N histories (default RANDOM_HISTORIES), for soak runs. */
START_TEST(test_random_histories)
{
	const char *env = getenv("EOS_TEST_EXPORT_HISTORIES");
	int histories = env ? (int)strtol(env, NULL, 10) : RANDOM_HISTORIES;

	for (int h = 0; h < histories; h++) {
		struct rng g = { .x = 0x9E3779B97F4A7C15ULL * (uint64_t)(h + 1) };
		char sb[32];
		uint64_t head;
		struct eos_changeset *cs;

		snprintf(sb, sizeof(sb), "rand-%d", h);
		snprintf(ctx, sizeof(ctx), "history %d", h);
		owners = &g;
		cs = cs_new(sb, true);
		put_str(cs, "a", 0644, "base\n");
		mkd(cs, "b", 0755, false);
		put_str(cs, "b/a", 0644, "base b/a\n");
		head = cs_commit(cs);
		for (int c = 0; c < RANDOM_COMMITS; c++)
			head = random_commit(&g, sb, head);
		owners = NULL;
		check_round_trips(sb, 1, head);
		if (head > 2) {
			uint64_t a = 1 + rnd(&g) % (head - 1), b = a + 1 + rnd(&g) % (head - a);

			check_round_trips(sb, a, b);
		}
	}
}
END_TEST

/* --- refusals --------------------------------------------------------------------------------- */

static uint64_t
small_history(const char *sb)
{
	struct eos_changeset *cs = cs_new(sb, true);

	mkd(cs, "sub", 0755, false);
	put_str(cs, "sub/f", 0644, "old\n");
	put_str(cs, "top", 0644, "t\n");
	mkd(cs, "del", 0755, false);
	put_str(cs, "del/x", 0644, "x\n");
	cs_commit(cs);
	cs = cs_new(sb, false);
	put_str(cs, "sub/f", 0644, "new\n");
	put_str(cs, "top", 0644, "T2\n");
	rm(cs, "del");
	mkd(cs, "sub2", 0755, false);
	put_str(cs, "sub2/g", 0644, "g\n");
	return cs_commit(cs);
}

START_TEST(test_refuses_destinations)
{
	cleanup_free char *home = pjoin(work, "home"), *inside = pjoin(store_dir, "inside"),
			  *tar = pjoin(store_dir, "x.tar"), *parent = NULL;
	const char *slash = strrchr(store_dir, '/');
	const char *old_home = getenv("HOME");
	cleanup_free char *saved = old_home ? strdup(old_home) : NULL;
	const char *msg;

	snprintf(ctx, sizeof(ctx), "refusals");
	small_history("sb");
	msg = export_fail("sb", 1, 2, EOS_EXPORT_DIR, "/", -EINVAL);
	ck_assert_msg(strstr(msg, "'/'") && strstr(msg, "root directory"), "message: %s", msg);

	ck_assert_int_eq(mkdir(home, 0700), 0);
	ck_assert_int_eq(setenv("HOME", home, 1), 0);
	msg = export_fail("sb", 1, 2, EOS_EXPORT_DIR, home, -EINVAL);
	ck_assert_msg(strstr(msg, home) && strstr(msg, "home directory"), "message: %s", msg);
	if (saved)
		setenv("HOME", saved, 1);
	else
		unsetenv("HOME");

	/* the eos state directory is refused too, wherever the store itself is */
	ck_assert_int_eq(setenv("EOS_STATE_DIR", work, 1), 0);
	msg = export_fail("sb", 1, 2, EOS_EXPORT_DIR, home, -EINVAL);
	ck_assert_msg(strstr(msg, "inside the eos state directory"), "message: %s", msg);
	unsetenv("EOS_STATE_DIR");

	ck_assert_int_eq(mkdir(inside, 0700), 0);
	msg = export_fail("sb", 1, 2, EOS_EXPORT_DIR, inside, -EINVAL);
	ck_assert_msg(strstr(msg, "inside the store directory"), "message: %s", msg);
	msg = export_fail("sb", 1, 2, EOS_EXPORT_TAR, tar, -EINVAL);
	ck_assert_msg(strstr(msg, "inside the store directory"), "message: %s", msg);

	parent = strndup(store_dir, (size_t)(slash - store_dir));
	msg = export_fail("sb", 1, 2, EOS_EXPORT_DIR, parent, -EINVAL);
	ck_assert_msg(strstr(msg, "contains the store directory"), "message: %s", msg);
	msg = export_fail("sb", 2, 1, EOS_EXPORT_PATCH, home, -EINVAL);
	ck_assert_msg(strstr(msg, "newer"), "message: %s", msg);
}
END_TEST

static void
assert_file(const char *path, const char *want)
{
	char got[256] = { 0 };
	cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open '%s'", path);
	ck_assert_int_ge(read(fd, got, sizeof(got) - 1), 0);
	ck_assert_msg(strcmp(got, want) == 0, "'%s' holds '%s', want '%s'", path, got, want);
}

START_TEST(test_symlink_in_dest_not_followed)
{
	cleanup_free char *out = pjoin(work, "outside"), *victim = pjoin(out, "f"),
			  *victim2 = pjoin(out, "x"), *dest = pjoin(work, "dest"),
			  *sub = pjoin(dest, "sub"), *top = pjoin(dest, "top"),
			  *del = pjoin(dest, "del"), *stage = pjoin(work, ".dest.eos-export");
	struct eos_stat root;
	const char *msg;
	struct stat sb;
	uint64_t v2;

	snprintf(ctx, sizeof(ctx), "symlink escape");
	v2 = small_history("sb");
	eos_test_write_file(victim, "victim", 6, 0644);
	eos_test_write_file(victim2, "victim", 6, 0644);

	/* A directory the delta changes is a symlink out of the destination: refused, named. */
	checkout("sb", 1, dest);
	eos_test_rm_rf(sub);
	ck_assert_int_eq(symlink(out, sub), 0);
	msg = export_fail("sb", 1, v2, EOS_EXPORT_DIR, dest, -ENOTDIR);
	ck_assert_msg(strstr(msg, "'sub'") && strstr(msg, "symlink"), "message: %s", msg);
	assert_file(victim, "victim");
	ck_assert(lstat(sub, &sb) == 0 && S_ISLNK(sb.st_mode));
	ck_assert_int_ne(lstat(stage, &sb), 0);

	/* Symlinks where the delta writes or deletes: replaced or removed themselves. */
	eos_test_rm_rf(dest);
	checkout("sb", 1, dest);
	eos_test_rm_rf(top);
	ck_assert_int_eq(symlink(victim, top), 0);
	eos_test_rm_rf(del);
	ck_assert_int_eq(symlink(out, del), 0);
	root = store_stat("sb", 1, "");
	set_attrs(dest, &root); /* the export keeps the destination's own mtime: make it L1's */
	export_ok("sb", 1, v2, EOS_EXPORT_DIR, dest);
	assert_file(victim, "victim");
	assert_file(victim2, "victim");
	assert_file(top, "T2\n");
	ck_assert_int_ne(lstat(del, &sb), 0);
	compare_tree("sb", v2, dest);
}
END_TEST

/* A record with an invalid name, written at version v straight into the entries. */
static void
craft_entry(const char *sb, uint64_t v, const char *parent, const char *name)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 }, val = { 0 };
	struct eos_entry e;
	uint64_t sbx = 0;

	ck_assert_int_eq(eos_sandbox_resolve(st, sb, &sbx, NULL), 0);
	eos_entry_init(&e);
	e.st.kind = EOS_KIND_FILE;
	e.st.attr = attr_of(0644, T0);
	e.st.content.kind = EOS_CONTENT_INLINE;
	e.st.content.size = 4;
	e.st.content.inline_len = 4;
	memcpy(e.st.content.inline_data, "evil", 4);
	ck_assert_int_eq(eos_sha256("evil", 4, &e.st.content.digest), 0);
	ck_assert_int_eq(eos_entry_key(&key, sbx, parent, strlen(parent), name, strlen(name), v),
			 0);
	ck_assert_int_eq(eos_entry_encode(&e, &val), 0);
	eos_test_kv_put(st, EOS_CF_ENTRIES, &key, val.data, val.len);
}

START_TEST(test_crafted_names_refused)
{
	static const char *const names[] = { "..", "a/b", "." };
	cleanup_free char *dest = pjoin(work, "dest"), *tar = pjoin(work, "x.tar"),
			  *patch = pjoin(work, "x.patch");

	snprintf(ctx, sizeof(ctx), "crafted");
	for (size_t i = 0; i < EOS_ARRAY_SIZE(names); i++) {
		char sb[16], want[16];
		const char *msg;
		uint64_t v2;

		snprintf(sb, sizeof(sb), "evil-%zu", i);
		snprintf(want, sizeof(want), "'%s'", names[i]);
		v2 = small_history(sb);
		craft_entry(sb, v2, i == 2 ? "sub" : "", names[i]);
		checkout(sb, 1, dest);
		msg = export_fail(sb, 1, v2, EOS_EXPORT_DIR, dest, -EBADMSG);
		ck_assert_msg(strstr(msg, want), "message: %s", msg);
		msg = export_fail(sb, 1, v2, EOS_EXPORT_TAR, tar, -EBADMSG);
		ck_assert_msg(strstr(msg, want), "message: %s", msg);
		msg = export_fail(sb, 1, v2, EOS_EXPORT_PATCH, patch, -EBADMSG);
		ck_assert_msg(strstr(msg, want), "message: %s", msg);
		compare_tree(sb, 1, dest);
		eos_test_rm_rf(dest);
	}
}
END_TEST

/* --- interrupted dir exports ------------------------------------------------------------------ */

#if EOS_FAILPOINTS_COMPILED
START_TEST(test_interrupted_dir_export)
{
	static const char *const points[] = { "export.dir.apply", "export.dir.swap" };
	cleanup_free char *dest = pjoin(work, "dest"), *stage = pjoin(work, ".dest.eos-export"),
			  *junk = pjoin(stage, "junk/file");
	struct stat sb;
	uint64_t v2 = 0, v3;

	snprintf(ctx, sizeof(ctx), "interrupted");
	v3 = scenario("sb", &v2);
	checkout("sb", 1, dest);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(points); i++) {
		ck_assert_int_eq(eos_failpoint_arm(points[i], -EIO), 0);
		export_fail("sb", 1, v3, EOS_EXPORT_DIR, dest, -EIO);
		eos_failpoint_reset();
		compare_tree("sb", 1, dest);
		ck_assert_msg(lstat(stage, &sb) != 0, "staging left after %s", points[i]);
	}
	/* What a killed export leaves (staging or the old tree) goes on the next run. */
	eos_test_write_file(junk, "junk", 4, 0644);
	ck_assert_int_eq(chmod(stage, 0500), 0);
	export_ok("sb", 1, v3, EOS_EXPORT_DIR, dest);
	ck_assert_int_ne(lstat(stage, &sb), 0);
	compare_tree("sb", v3, dest);
}
END_TEST
#endif

START_TEST(test_bad_options)
{
	struct eos_export_options o = { .sandbox = "nope", .format = EOS_EXPORT_TAR, .fd = 1 };
	enum eos_export_format f;
	struct eos_error err = { 0 };

	ck_assert_int_eq(eos_export_format_parse("tar-zst", &f, NULL), 0);
	ck_assert_int_eq(f, EOS_EXPORT_TAR_ZST);
	ck_assert_int_eq(eos_export_format_parse("zip", &f, &err), -EINVAL);
	ck_assert(strstr(err.msg, "'zip'"));
	ck_assert_int_eq(eos_store_export(st, &o, NULL, &err), -ENOENT);
	o.format = EOS_EXPORT_DIR;
	ck_assert_int_eq(eos_store_export(st, &o, NULL, &err), -EINVAL);
}
END_TEST

static Suite *
export_suite(void)
{
	Suite *s = suite_create("export");
	TCase *tc = tcase_create("export");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_scenario_round_trips);
	tcase_add_test(tc, test_patch_renames_and_counts);
	tcase_add_test(tc, test_tar_layer_members);
	tcase_add_test(tc, test_same_version_is_empty);
	tcase_add_test(tc, test_random_histories);
	tcase_add_test(tc, test_refuses_destinations);
	tcase_add_test(tc, test_symlink_in_dest_not_followed);
	tcase_add_test(tc, test_crafted_names_refused);
#if EOS_FAILPOINTS_COMPILED
	tcase_add_test(tc, test_interrupted_dir_export);
#endif
	tcase_add_test(tc, test_bad_options);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	cleanup_free char *root = NULL;
	int r;

	/* The checkouts belong to random owners: git must not refuse them as "dubious". */
	setenv("GIT_CONFIG_COUNT", "1", 1);
	setenv("GIT_CONFIG_KEY_0", "safe.directory", 1);
	setenv("GIT_CONFIG_VALUE_0", "*", 1);
	if (system("git --version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "test-export: git is required (patch round trips)\n");
		return EXIT_FAILURE;
	}
	/* Every test's directories live below one that goes even when a test fails. */
	root = eos_test_tmpdir("export-run");
	setenv("TMPDIR", root, 1);
	r = eos_test_run(export_suite());
	eos_test_rm_rf(root);
	return r;
}
