/* SPDX-License-Identifier: MIT */
/*
 * eos_store_import(): directory and tar round trips against the host tree, sockets skipped and
 * listed, refusal of unreadable files (all named, nothing committed), archive path checks,
 * sandbox ids.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/failpoint.h"

#include "store/store.h"
#include "tests/unit/testutil.h"

enum {
	MIB = 1 << 20,
	NOBODY = 65534,
};

#if EOS_FAILPOINTS_COMPILED
static const bool have_failpoints = true;
static void
arm(const char *name, int code)
{
	ck_assert(eos_failpoint_arm(name, code) == 0);
}
#else
static const bool have_failpoints = false;
static void
arm(const char *name, int code)
{
	(void)name;
	(void)code;
}
#endif

static char *
pjoin(const char *a, const char *b)
{
	char *s = NULL;

	if (!b[0])
		ck_assert(asprintf(&s, "%s", a) >= 0);
	else if (!a[0])
		ck_assert(asprintf(&s, "%s", b) >= 0);
	else
		ck_assert(asprintf(&s, "%s/%s", a, b) >= 0);
	return s;
}

static void
make_dir(const char *root, const char *rel, unsigned mode)
{
	cleanup_free char *p = pjoin(root, rel);

	ck_assert_msg(mkdir(p, mode) == 0 || errno == EEXIST, "mkdir '%s'", p);
	ck_assert(chmod(p, mode) == 0);
}

enum fill {
	FILL_RANDOM,
	FILL_TEXT,
};

static void
make_file(const char *root, const char *rel, size_t len, enum fill fill, unsigned mode)
{
	cleanup_free char *p = pjoin(root, rel);
	cleanup_free uint8_t *buf = malloc(len ? len : 1);

	ck_assert(buf);
	if (fill == FILL_RANDOM)
		eos_test_fill_random(buf, len, len + 7);
	for (size_t i = 0; fill == FILL_TEXT && i < len; i++)
		buf[i] = "the quick brown fox jumps over the lazy dog\n"[i % 44];
	eos_test_write_file(p, buf, len, mode);
}

static void
make_symlink(const char *root, const char *rel, const char *target)
{
	cleanup_free char *p = pjoin(root, rel);

	ck_assert_msg(symlink(target, p) == 0, "symlink '%s'", p);
}

static void
make_link(const char *root, const char *from, const char *to)
{
	cleanup_free char *a = pjoin(root, from);
	cleanup_free char *b = pjoin(root, to);

	ck_assert_msg(link(a, b) == 0, "link '%s'", b);
}

static unsigned mtime_counter;

static int
set_mtime(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	unsigned i = mtime_counter++;
	struct timespec ts[2] = {
		{ .tv_sec = 1600000000 + (time_t)i * 1000,
		  .tv_nsec = (long)(i * 123456789u % 999999999u) + 1 },
	};

	(void)sb;
	(void)flag;
	(void)ftw;
	ts[1] = ts[0];
	ck_assert_msg(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW) == 0, "utimensat '%s'",
		      path);
	return 0;
}

/* The generated tree of the round-trip tests. */
static char *
build_tree(void)
{
	char *root = eos_test_tmpdir("tree");
	char longname[256];

	memset(longname, 'n', 255);
	longname[255] = '\0';
	make_dir(root, "sub", 0755);
	make_dir(root, "sub/deeper", 0755);
	make_dir(root, "sub/deeper/deepest", 0750);
	make_dir(root, "sub/deeper/empty", 0755);
	make_dir(root, "links", 0755);
	make_dir(root, "hard", 0755);
	make_dir(root, "odd", 0755);
	make_dir(root, "modes", 0755);
	make_dir(root, "modes/private", 0700);
	make_file(root, "empty", 0, FILL_RANDOM, 0644);
	make_file(root, "one", 1, FILL_RANDOM, 0644);
	make_file(root, "b255", 255, FILL_RANDOM, 0644);
	make_file(root, "b256", 256, FILL_RANDOM, 0644);
	make_file(root, "b257", 257, FILL_RANDOM, 0644);
	make_file(root, "four_k", 4096, FILL_RANDOM, 0644);
	make_file(root, "k100", 100 << 10, FILL_RANDOM, 0644);
	make_file(root, "rand3m", 3 * MIB, FILL_RANDOM, 0644);
	make_file(root, "text3m", 3 * MIB, FILL_TEXT, 0644);
	make_file(root, "sub/deeper/deepest/file.txt", 1000, FILL_TEXT, 0644);
	make_file(root, "modes/private/secret", 10, FILL_TEXT, 0600);
	make_symlink(root, "links/rel", "../one");
	make_symlink(root, "links/abs", "/etc/passwd");
	make_symlink(root, "links/dangling", "does/not/exist");
	make_file(root, "hard/a", 5000, FILL_RANDOM, 0640);
	make_link(root, "hard/a", "hard/b");
	make_link(root, "hard/a", "sub/c");
	make_file(root, "odd/with space", 3, FILL_TEXT, 0644);
	make_file(root, "odd/new\nline", 4, FILL_TEXT, 0644);
	make_file(root, "odd/ü日本", 5, FILL_TEXT, 0644);
	make_file(root, "odd/-leading-dash", 6, FILL_TEXT, 0644);
	make_file(root, "odd/.hidden", 7, FILL_TEXT, 0644);
	{
		cleanup_free char *p = pjoin("odd", longname);

		make_file(root, p, 8, FILL_TEXT, 0644);
	}
	make_file(root, "modes/m600", 11, FILL_TEXT, 0600);
	make_file(root, "modes/m755", 12, FILL_TEXT, 0755);
	make_file(root, "modes/m444", 13, FILL_TEXT, 0444);
	make_file(root, "modes/suid", 14, FILL_TEXT, 04755);
	mtime_counter = 0;
	ck_assert(nftw(root, set_mtime, 16, FTW_DEPTH | FTW_PHYS) == 0);
	return root;
}

static struct eos_import_result
import_ok(struct eos_store *st, const char *src, const char *id)
{
	struct eos_import_options o = { .sandbox = id, .threads = 2 };
	struct eos_import_result res = { 0 };
	struct eos_error err = { 0 };
	int r = eos_store_import(st, src, &o, &res, &err);

	ck_assert_msg(r == 0, "import '%s': %s", src, eos_error_message(&err, r));
	ck_assert_uint_eq(res.version, 1);
	return res;
}

/* --- comparing a sandbox with the host tree --------------------------------------------------- */

struct names {
	char **v;
	size_t n;
};

static void
names_release(struct names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static int
names_add(void *ctx, const char *name, const struct eos_stat *st)
{
	struct names *l = ctx;

	(void)st;
	l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	ck_assert(l->v);
	l->v[l->n++] = strdup(name);
	return 0;
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
host_names(const char *dir, struct names *l)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	ck_assert_msg(d, "opendir '%s'", dir);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			names_add(l, de->d_name, NULL);
	closedir(d);
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), str_cmp);
}

static void
store_names(struct eos_store *st, const char *sandbox, const char *rel, struct names *l)
{
	struct eos_error err = { 0 };
	int r = eos_store_readdir(st, sandbox, 0, rel, NULL, names_add, l, &err);

	ck_assert_msg(r == 0, "readdir '%s': %s", rel, eos_error_message(&err, r));
}

struct host_cmp {
	struct eos_store *st;
	const char *sandbox;
	const char *root;
	ino_t ino[8]; /* hard-linked inodes seen and their link groups */
	uint64_t group[8];
	size_t ngroups;
	size_t paths;
};

static uint8_t *
read_host(const char *path, size_t len)
{
	uint8_t *buf = malloc(len + 1);
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert(buf && fd >= 0);
	ck_assert(read(fd, buf, len + 1) == (ssize_t)len);
	return buf;
}

static void
cmp_content(struct host_cmp *c, const char *rel, const char *host, uint64_t size)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	cleanup_free uint8_t *want = read_host(host, size);
	cleanup_free uint8_t *got = malloc(size + 16);
	struct eos_error err = { 0 };
	size_t done = 0;
	int r = eos_store_file_open(c->st, c->sandbox, 0, rel, &f, &err);

	ck_assert_msg(r == 0, "open '%s': %s", rel, eos_error_message(&err, r));
	ck_assert_uint_eq(eos_file_size(f), size);
	while (done < size) {
		ssize_t n = eos_file_pread(f, got + done, EOS_MIN(size - done, 100000), done, &err);

		ck_assert_msg(n > 0, "read '%s' at %zu: %s", rel, done,
			      eos_error_message(&err, (int)n));
		done += (size_t)n;
	}
	ck_assert_msg(memcmp(got, want, size) == 0, "content of '%s' differs", rel);
	ck_assert_int_eq(eos_file_pread(f, got, 16, size, &err), 0);
	if (size > 2000) {
		ck_assert_int_eq(eos_file_pread(f, got, 1000, size / 2, &err), 1000);
		ck_assert(memcmp(got, want + size / 2, 1000) == 0);
	}
}

static void
cmp_link_group(struct host_cmp *c, const char *rel, const struct stat *hs, uint64_t group)
{
	if (hs->st_nlink < 2) {
		ck_assert_msg(group == 0, "'%s' has link group %llu", rel,
			      (unsigned long long)group);
		return;
	}
	ck_assert_msg(group != 0, "hard link '%s' has no link group", rel);
	for (size_t i = 0; i < c->ngroups; i++) {
		if (c->ino[i] == hs->st_ino) {
			ck_assert_msg(c->group[i] == group, "'%s' left its link group", rel);
			return;
		}
		ck_assert_msg(c->group[i] != group, "'%s' shares another inode's group", rel);
	}
	ck_assert(c->ngroups < EOS_ARRAY_SIZE(c->ino));
	c->ino[c->ngroups] = hs->st_ino;
	c->group[c->ngroups++] = group;
}

static void cmp_path(struct host_cmp *c, const char *rel);

static void
cmp_dir(struct host_cmp *c, const char *rel, const char *host)
{
	EOS_CLEANUP(names_release) struct names want = { 0 };
	EOS_CLEANUP(names_release) struct names got = { 0 };

	host_names(host, &want);
	store_names(c->st, c->sandbox, rel, &got);
	ck_assert_msg(got.n == want.n, "'%s' lists %zu names, the host %zu", rel, got.n, want.n);
	for (size_t i = 0; i < want.n; i++) {
		cleanup_free char *child = pjoin(rel, want.v[i]);

		ck_assert_msg(strcmp(got.v[i], want.v[i]) == 0, "'%s': '%s' listed, expected '%s'",
			      rel, got.v[i], want.v[i]);
		cmp_path(c, child);
	}
}

static void
cmp_path(struct host_cmp *c, const char *rel)
{
	cleanup_free char *host = pjoin(c->root, rel);
	struct eos_error err = { 0 };
	struct eos_stat es;
	struct stat hs;
	int r;

	ck_assert(lstat(host, &hs) == 0);
	r = eos_store_stat(c->st, c->sandbox, 0, rel, &es, &err);
	ck_assert_msg(r == 0, "stat '%s': %s", rel, eos_error_message(&err, r));
	ck_assert_msg(es.attr.mode == (hs.st_mode & 07777), "mode of '%s': %o != %o", rel,
		      es.attr.mode, hs.st_mode & 07777);
	ck_assert_msg(es.attr.mtime_ns == hs.st_mtim.tv_sec * 1000000000LL + hs.st_mtim.tv_nsec,
		      "mtime of '%s' differs", rel);
	ck_assert(es.attr.uid == hs.st_uid && es.attr.gid == hs.st_gid);
	c->paths++;
	if (S_ISDIR(hs.st_mode)) {
		ck_assert_msg(es.kind == EOS_KIND_DIR, "'%s' is not a directory", rel);
		cmp_dir(c, rel, host);
	} else if (S_ISREG(hs.st_mode)) {
		ck_assert_msg(es.kind == EOS_KIND_FILE, "'%s' is not a file", rel);
		ck_assert_uint_eq(es.size, (uint64_t)hs.st_size);
		cmp_content(c, rel, host, es.size);
		cmp_link_group(c, rel, &hs, es.link_group);
	} else {
		cleanup_free char *got = NULL;
		char want[4096];
		ssize_t n = readlink(host, want, sizeof(want) - 1);

		ck_assert(S_ISLNK(hs.st_mode) && n > 0);
		want[n] = '\0';
		ck_assert_msg(es.kind == EOS_KIND_SYMLINK, "'%s' is not a symlink", rel);
		ck_assert(eos_store_readlink(c->st, c->sandbox, 0, rel, &got, &err) == 0);
		ck_assert_str_eq(got, want);
		ck_assert_uint_eq(es.size, (uint64_t)n);
	}
}

/* Compare every path of the sandbox with the host tree (and the other way round). */
static size_t
compare_with_host(struct eos_store *st, const char *sandbox, const char *root)
{
	struct host_cmp c = { .st = st, .sandbox = sandbox, .root = root };

	cmp_path(&c, "");
	ck_assert_uint_eq(c.ngroups, 1);
	return c.paths;
}

/* --- comparing two sandboxes ------------------------------------------------------------------ */

static void
cmp_sandboxes(struct eos_store *st, const char *a, const char *b, const char *rel)
{
	EOS_CLEANUP(names_release) struct names na = { 0 };
	EOS_CLEANUP(names_release) struct names nb = { 0 };
	struct eos_stat sa, sb;

	ck_assert(eos_store_stat(st, a, 0, rel, &sa, NULL) == 0);
	ck_assert_msg(eos_store_stat(st, b, 0, rel, &sb, NULL) == 0, "'%s' missing in %s", rel, b);
	ck_assert_msg(sa.kind == sb.kind && sa.size == sb.size, "'%s' differs", rel);
	ck_assert_msg(memcmp(&sa.attr, &sb.attr, sizeof(sa.attr)) == 0, "attr of '%s' differs",
		      rel);
	ck_assert_msg((sa.link_group != 0) == (sb.link_group != 0), "link of '%s' differs", rel);
	ck_assert(sa.content.kind == sb.content.kind);
	ck_assert_msg(sa.kind != EOS_KIND_FILE ||
			      eos_digest_eq(&sa.content.digest, &sb.content.digest),
		      "content of '%s' differs", rel);
	if (sa.kind != EOS_KIND_DIR)
		return;
	store_names(st, a, rel, &na);
	store_names(st, b, rel, &nb);
	ck_assert_uint_eq(na.n, nb.n);
	for (size_t i = 0; i < na.n; i++) {
		cleanup_free char *child = pjoin(rel, na.v[i]);

		ck_assert_str_eq(na.v[i], nb.v[i]);
		cmp_sandboxes(st, a, b, child);
	}
}

static void run(const char *fmt, ...) EOS_PRINTF(1, 2);

static void
run(const char *fmt, ...)
{
	cleanup_free char *cmd = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	ck_assert(r >= 0);
	r = system(cmd);
	ck_assert_msg(r == 0, "'%s' failed (%d)", cmd, r);
}

static size_t
count_sandboxes(struct eos_store *st)
{
	cleanup_free struct eos_sandbox_info *list = NULL;
	size_t n = 0;

	ck_assert(eos_store_sandbox_list(st, &list, &n, NULL) == 0);
	return n;
}

/* --- tests ------------------------------------------------------------------------------------ */

struct progress_seen {
	unsigned calls;
	enum eos_import_phase phase;
	uint64_t files, bytes, total_files, total_bytes;
};

static void
on_progress(void *ctx, const struct eos_import_status *s)
{
	struct progress_seen *p = ctx;

	/* Phases only move forward; the totals are known from STAGE on. */
	ck_assert_int_ge(s->phase, p->phase);
	if (s->phase == EOS_IMPORT_SCAN)
		ck_assert_uint_eq(s->total_files, 0);
	p->phase = s->phase;
	p->calls++;
	p->files = s->files;
	p->bytes = s->bytes;
	p->total_files = s->total_files;
	p->total_bytes = s->total_bytes;
}

START_TEST(test_dir_round_trip)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = build_tree();
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	struct progress_seen seen = { 0 };
	struct eos_import_options o = { .threads = 3,
					.progress = on_progress,
					.progress_ctx = &seen };
	struct eos_import_result res = { 0 };
	struct eos_sandbox_info info;
	struct eos_error err = { 0 };
	cleanup_free char *source = NULL;
	int r;

	r = eos_store_import(st, tree, &o, &res, &err);
	ck_assert_msg(r == 0, "import: %s", eos_error_message(&err, r));
	ck_assert_uint_eq(res.version, 1);
	ck_assert_msg(strncmp(res.sandbox, "eos-", 4) == 0, "id '%s'", res.sandbox);
	/* 24 regular file names, 3 of them one inode; 9 directories below the root. */
	ck_assert_uint_eq(res.files, 22);
	ck_assert_uint_eq(res.hardlinks, 2);
	ck_assert_uint_eq(res.dirs, 9);
	ck_assert_uint_eq(res.symlinks, 3);
	ck_assert_uint_eq(res.bytes, 6 * MIB + (100 << 10) + 4096 + 257 + 256 + 255 + 1 + 5000 +
					     1000 + 10 + 3 + 4 + 5 + 6 + 7 + 8 + 11 + 12 + 13 + 14);
	ck_assert_uint_ge(seen.calls, 3);
	ck_assert_int_eq(seen.phase, EOS_IMPORT_COMMIT);
	ck_assert_uint_eq(seen.files, res.files);
	ck_assert_uint_eq(seen.bytes, res.bytes);
	ck_assert_uint_eq(seen.total_files, res.files);
	ck_assert_uint_eq(seen.total_bytes, res.bytes);
	ck_assert_uint_eq(compare_with_host(st, res.sandbox, tree), 1 + 9 + 24 + 3);
	ck_assert(eos_store_sandbox_get(st, res.sandbox, &info, NULL) == 0);
	ck_assert(asprintf(&source, "dir:%s", tree) > 0);
	ck_assert_str_eq(info.source, source);
	ck_assert_uint_eq(info.head, 1);
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

START_TEST(test_tar_round_trip)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = build_tree();
	cleanup_free char *work = eos_test_tmpdir("tar");
	cleanup_free char *tar = pjoin(work, "x.tar");
	cleanup_free char *zst = pjoin(work, "x.tar.zst");
	cleanup_free char *gz = pjoin(work, "x.tgz");
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	struct progress_seen seen = { 0 };
	struct eos_import_options o = { .sandbox = "from-zst",
					.progress = on_progress,
					.progress_ctx = &seen };
	struct eos_import_result d, t, z = { 0 }, g;
	struct eos_sandbox_info info;
	struct eos_error err = { 0 };
	int r;

	/* pax keeps nanosecond mtimes (the gnu format stores whole seconds only). */
	run("tar -C '%s' --format=pax -cf '%s' .", tree, tar);
	run("tar -C '%s' --format=pax --zstd -cf '%s' .", tree, zst);
	run("tar -C '%s' --format=pax -czf '%s' .", tree, gz);
	d = import_ok(st, tree, "from-dir");
	t = import_ok(st, tar, "from-tar");
	r = eos_store_import(st, zst, &o, &z, &err);
	ck_assert_msg(r == 0, "import '%s': %s", zst, eos_error_message(&err, r));
	/* An archive's totals come from its first read. */
	ck_assert_int_eq(seen.phase, EOS_IMPORT_COMMIT);
	ck_assert_uint_eq(seen.total_files, z.files);
	ck_assert_uint_eq(seen.total_bytes, z.bytes);
	ck_assert_uint_eq(seen.files, z.files);
	g = import_ok(st, gz, "from-gz");
	ck_assert_uint_eq(compare_with_host(st, "from-tar", tree), 1 + 9 + 24 + 3);
	ck_assert_uint_eq(compare_with_host(st, "from-zst", tree), 1 + 9 + 24 + 3);
	cmp_sandboxes(st, "from-dir", "from-tar", "");
	cmp_sandboxes(st, "from-dir", "from-zst", "");
	cmp_sandboxes(st, "from-dir", "from-gz", "");
	ck_assert(d.files == t.files && t.files == z.files && z.files == g.files);
	ck_assert(d.hardlinks == t.hardlinks && d.dirs == t.dirs && d.symlinks == t.symlinks);
	ck_assert(d.bytes == t.bytes && d.bytes == z.bytes);
	ck_assert(eos_store_sandbox_get(st, "from-zst", &info, NULL) == 0);
	ck_assert(strncmp(info.source, "tar:/", 5) == 0);
	eos_test_rm_rf(work);
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

/* A fifo is imported (fifos and devices in depth: test-nodes.c); a socket is skipped, listed. */
START_TEST(test_sockets_skipped)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = eos_test_tmpdir("special");
	cleanup_free char *fifo = pjoin(tree, "sub/a fifo");
	cleanup_free char *sock = pjoin(tree, "sock");
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	struct eos_import_result res = { 0 };
	struct eos_stat s;

	make_file(tree, "sub/regular", 100, FILL_TEXT, 0644);
	ck_assert(mkfifo(fifo, 0640) == 0);
	eos_test_make_socket(sock);
	res = import_ok(st, tree, "s");
	ck_assert_uint_eq(res.files, 1);
	ck_assert_uint_eq(res.specials, 1);
	ck_assert_uint_eq(res.nskipped, 1);
	ck_assert_str_eq(res.skipped[0], "sock");
	ck_assert_int_eq(eos_store_stat(st, "s", 0, "sub/a fifo", &s, NULL), 0);
	ck_assert_int_eq(s.kind, EOS_KIND_FIFO);
	ck_assert_uint_eq(s.attr.mode, 0640);
	ck_assert_int_eq(eos_store_stat(st, "s", 0, "sock", &s, NULL), -ENOENT);
	eos_import_result_release(&res);
	ck_assert_ptr_null(res.skipped);
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

START_TEST(test_many_sockets_listed)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = eos_test_tmpdir("socks");
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	struct eos_import_result res = { 0 };

	for (int i = 0; i < 50; i++) {
		char name[32];
		cleanup_free char *p = NULL;

		snprintf(name, sizeof(name), "sock-%02d", i);
		p = pjoin(tree, name);
		eos_test_make_socket(p);
	}
	res = import_ok(st, tree, "many");
	ck_assert_uint_eq(res.nskipped, 50);
	ck_assert_str_eq(res.skipped[0], "sock-00");
	ck_assert_str_eq(res.skipped[49], "sock-49");
	ck_assert_uint_eq(eos_test_tree_count(st, "many", 0), 0);
	eos_import_result_release(&res);
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

/* Import tree into a fresh store; exits 0 when refused with -EACCES naming both paths. */
static int
unreadable_check(const char *tree)
{
	char sdir[] = "/tmp/eos-test-store-nobody-XXXXXX";
	struct eos_store_options so = { .create = true, .cache_bytes = 8 << 20 };
	struct eos_store *st = NULL;
	cleanup_free struct eos_sandbox_info *list = NULL;
	struct eos_error err = { 0 };
	size_t n = 1;
	int r;

	if (!mkdtemp(sdir) || eos_store_open(sdir, &so, &st, &err) < 0) {
		fprintf(stderr, "open store: %s\n", err.msg);
		return 2;
	}
	r = eos_store_import(st, tree, NULL, NULL, &err);
	fprintf(stderr, "import as uid %u: %d %s\n", (unsigned)geteuid(), r, err.msg);
	if (r == -EACCES && strstr(err.msg, "'secret'") &&
	    strstr(err.msg, "'closed' (directory)") && strstr(err.msg, "2 files are unreadable"))
		r = eos_store_sandbox_list(st, &list, &n, NULL) == 0 && n == 0 ? 0 : 3;
	else
		r = 1;
	eos_store_close(st);
	eos_test_rm_rf(sdir);
	return r;
}

static int
chown_nobody(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return lchown(path, NOBODY, NOBODY);
}

START_TEST(test_unreadable_refused)
{
	cleanup_free char *tree = eos_test_tmpdir("unreadable");
	cleanup_free char *secret = pjoin(tree, "secret");
	cleanup_free char *closed = pjoin(tree, "closed");
	int status = 0;
	pid_t pid;

	make_file(tree, "readable", 10, FILL_TEXT, 0644);
	make_file(tree, "secret", 10, FILL_TEXT, 0644);
	make_dir(tree, "closed", 0755);
	make_file(tree, "closed/inside", 10, FILL_TEXT, 0644);
	ck_assert(chmod(tree, 0755) == 0);
	if (geteuid() != 0) {
		ck_assert(chmod(secret, 0) == 0 && chmod(closed, 0) == 0);
		ck_assert_int_eq(unreadable_check(tree), 0);
		chmod(closed, 0755);
		eos_test_rm_rf(tree);
		return;
	}
	/* root reads everything: check as nobody, on a tree nobody owns */
	ck_assert(nftw(tree, chown_nobody, 16, FTW_PHYS) == 0);
	ck_assert(chmod(secret, 0) == 0 && chmod(closed, 0) == 0);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(4);
		_exit(unreadable_check(tree));
	}
	ck_assert(waitpid(pid, &status, 0) == pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "import as nobody: status %d (see stderr)", status);
	eos_test_rm_rf(tree);
}
END_TEST

START_TEST(test_tar_dotdot_refused)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = eos_test_tmpdir("dotdot");
	cleanup_free char *work = eos_test_tmpdir("dotdot-tar");
	cleanup_free char *tar = pjoin(work, "evil.tar");
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	struct eos_error err = { 0 };

	make_file(tree, "x", 10, FILL_TEXT, 0644);
	make_file(tree, "ok", 10, FILL_TEXT, 0644);
	run("tar -C '%s' -P --transform='s,^\\./x,../x,' -cf '%s' ./ok ./x 2>/dev/null", tree, tar);
	ck_assert_int_eq(eos_store_import(st, tar, NULL, NULL, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "'../x'"), "message: %s", err.msg);
	ck_assert_uint_eq(count_sandboxes(st), 0);
	eos_test_rm_rf(work);
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

START_TEST(test_tar_later_entry_wins)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = eos_test_tmpdir("append");
	cleanup_free char *work = eos_test_tmpdir("append-tar");
	cleanup_free char *tar = pjoin(work, "x.tar");
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	struct eos_import_result res;
	struct eos_stat a, b, c;
	char buf[64];

	/* a and b are one inode; then a is replaced (b keeps the old bytes), and c links the new a
	 */
	make_file(tree, "d/a", 6, FILL_TEXT, 0644);
	make_link(tree, "d/a", "d/b");
	run("tar -C '%s' -cf '%s' d", tree, tar);
	run("rm '%s/d/a' '%s/d/b' && printf 'second version' > '%s/d/a' && ln '%s/d/a' '%s/d/c'",
	    tree, tree, tree, tree, tree);
	run("tar -C '%s' -rf '%s' d/a d/c", tree, tar);
	res = import_ok(st, tar, NULL);
	ck_assert_uint_eq(res.files, 2);
	ck_assert_uint_eq(res.hardlinks, 1);
	ck_assert(eos_store_stat(st, res.sandbox, 0, "d/a", &a, NULL) == 0);
	ck_assert(eos_store_stat(st, res.sandbox, 0, "d/b", &b, NULL) == 0);
	ck_assert(eos_store_stat(st, res.sandbox, 0, "d/c", &c, NULL) == 0);
	ck_assert_uint_eq(a.size, 14);
	ck_assert_uint_eq(b.size, 6);
	ck_assert(a.link_group != 0 && a.link_group == c.link_group && b.link_group == 0);
	ck_assert(eos_store_file_open(st, res.sandbox, 0, "d/c", &f, NULL) == 0);
	ck_assert_int_eq(eos_file_pread(f, buf, sizeof(buf), 0, NULL), 14);
	ck_assert(memcmp(buf, "second version", 14) == 0);
	eos_test_rm_rf(work);
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

/* Members above the in-memory limit go through a temporary file; sparse members keep holes. */
START_TEST(test_tar_big_and_sparse_members)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = eos_test_tmpdir("sparse");
	cleanup_free char *work = eos_test_tmpdir("sparse-tar");
	cleanup_free char *dense = pjoin(work, "dense.tar");
	cleanup_free char *sparse = pjoin(work, "sparse.tar.zst");
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	struct eos_import_result d, s;

	make_file(tree, "big", 2 * MIB, FILL_TEXT, 0644);
	make_file(tree, "small", 300000, FILL_RANDOM, 0644);
	make_file(tree, "hard/x", 10, FILL_TEXT, 0644);
	make_link(tree, "hard/x", "hard/y");
	/* 40 MiB with data at the start, the middle and the end; a small file with a hole */
	run("cd '%s' && printf head >> big && truncate -s 20M big && printf middle >> big && "
	    "truncate -s 40M big && printf tail >> big && truncate -s 1M small && printf end >> small",
	    tree);
	run("tar -C '%s' --format=pax -cf '%s' .", tree, dense);
	run("tar -C '%s' --format=pax -S --zstd -cf '%s' .", tree, sparse);
	d = import_ok(st, dense, "dense");
	s = import_ok(st, sparse, "sparse");
	ck_assert_uint_eq(compare_with_host(st, "dense", tree), 1 + 1 + 4);
	ck_assert_uint_eq(compare_with_host(st, "sparse", tree), 1 + 1 + 4);
	ck_assert_uint_eq(d.bytes, 40 * MIB + 4 + MIB + 3 + 10);
	ck_assert_uint_eq(s.bytes, d.bytes);
	eos_test_rm_rf(work);
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

/* Parents may come after their children, or not at all (then they are created 0755). */
/*
 * A work tree's git index in an archive is refreshed from the content: the entry of a member
 * above the in-memory limit (hashed through its temporary file) too, and not one whose bytes
 * differ from what git hashed. Imports without options read indexes as well (a directory
 * import without them once dereferenced NULL at its first index).
 */
START_TEST(test_tar_git_index)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = eos_test_tmpdir("gitrepo");
	cleanup_free char *work = eos_test_tmpdir("gitrepo-tar");
	cleanup_free char *tar = pjoin(work, "repo.tar");
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	struct eos_import_result res = { 0 };
	struct eos_error err = { 0 };

	run("cd '%s' && git init -q . && printf 'small\\n' > small && printf 'old\\n' > changed && "
	    "truncate -s 33M big && touch -d '2020-01-01 00:00:00' small changed big && "
	    "git add -A && git -c user.name=t -c user.email=t@example.com commit -qm one && "
	    "printf 'new\\n' > changed && touch -d '2020-01-01 00:00:00' changed",
	    tree);
	run("tar -C '%s' -cf '%s' .", tree, tar);
	ck_assert_int_eq(eos_store_import(st, tar, NULL, &res, &err), 0);
	ck_assert_uint_eq(res.git_entries, 2); /* small and big, not changed */
	eos_import_result_release(&res);
	/* the directory import compares stat data: changed's is not the index's any more */
	ck_assert_int_eq(eos_store_import(st, tree, NULL, &res, &err), 0);
	ck_assert_uint_eq(res.git_entries, 2);
	eos_import_result_release(&res);
	eos_test_rm_rf(work);
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

START_TEST(test_tar_implicit_parents)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = eos_test_tmpdir("parents");
	cleanup_free char *work = eos_test_tmpdir("parents-tar");
	cleanup_free char *tar = pjoin(work, "x.tar");
	cleanup_free char *dpath = pjoin(tree, "d");
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	struct eos_import_result res;
	struct eos_stat d, e, f, root;
	struct stat hs;

	make_dir(tree, "d", 0755);
	make_dir(tree, "d/e", 0750);
	make_file(tree, "d/e/f", 5, FILL_TEXT, 0600);
	ck_assert(chmod(dpath, 0711) == 0 && stat(dpath, &hs) == 0);
	run("tar -C '%s' --format=pax --no-recursion -cf '%s' d/e/f d", tree, tar);
	res = import_ok(st, tar, NULL);
	ck_assert_uint_eq(res.files, 1);
	ck_assert_uint_eq(res.dirs, 2);
	ck_assert(eos_store_stat(st, res.sandbox, 0, "", &root, NULL) == 0);
	ck_assert(eos_store_stat(st, res.sandbox, 0, "d", &d, NULL) == 0);
	ck_assert(eos_store_stat(st, res.sandbox, 0, "d/e", &e, NULL) == 0);
	ck_assert(eos_store_stat(st, res.sandbox, 0, "d/e/f", &f, NULL) == 0);
	ck_assert_uint_eq(root.attr.mode, 0755);
	ck_assert_uint_eq(d.attr.mode, 0711);
	ck_assert_int_eq(d.attr.mtime_ns, hs.st_mtim.tv_sec * 1000000000LL + hs.st_mtim.tv_nsec);
	ck_assert(e.kind == EOS_KIND_DIR && e.attr.mode == 0755);
	ck_assert(f.kind == EOS_KIND_FILE && f.attr.mode == 0600 && f.size == 5);
	eos_test_rm_rf(work);
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

START_TEST(test_empty_sources)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = eos_test_tmpdir("empty");
	cleanup_free char *work = eos_test_tmpdir("empty-tar");
	cleanup_free char *tar = pjoin(work, "x.tar");
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	struct eos_import_result a, b;

	run("tar -C '%s' -cf '%s' .", tree, tar);
	a = import_ok(st, tree, NULL);
	b = import_ok(st, tar, NULL);
	ck_assert(a.files + a.dirs + a.symlinks + a.hardlinks + a.bytes == 0);
	ck_assert(b.files + b.dirs + b.symlinks + b.hardlinks + b.bytes == 0);
	ck_assert_uint_eq(eos_test_tree_count(st, a.sandbox, 0), 0);
	ck_assert_uint_eq(count_sandboxes(st), 2);
	eos_test_rm_rf(work);
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

struct xattr_seen {
	int n;
	bool value_ok;
};

static int
xattr_seen_one(void *ctx, const char *name, const void *value, size_t len)
{
	struct xattr_seen *x = ctx;

	x->n++;
	if (strcmp(name, "user.origin") == 0)
		x->value_ok = len == 5 && memcmp(value, "hello", 5) == 0;
	return 0;
}

/* The user.* xattrs of files and directories are imported with them. */
START_TEST(test_xattrs_imported)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = eos_test_tmpdir("xattr");
	cleanup_free char *file = pjoin(tree, "f"), *dir_d = pjoin(tree, "d");
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	struct eos_import_result a;
	struct xattr_seen x = { 0 };
	struct eos_error err = { 0 };

	run("echo x > '%s' && mkdir '%s/d'", file, tree);
	if (setxattr(file, "user.origin", "hello", 5, 0) < 0)
		ck_abort_msg("setxattr on '%s': %s (the test tree must support user xattrs)", file,
			     strerror(errno));
	ck_assert_int_eq(setxattr(dir_d, "user.origin", "hello", 5, 0), 0);
	a = import_ok(st, tree, NULL);
	ck_assert_int_eq(eos_store_xattrs(st, a.sandbox, 0, "f", xattr_seen_one, &x, &err), 0);
	ck_assert_int_eq(x.n, 1);
	ck_assert(x.value_ok);
	x = (struct xattr_seen){ 0 };
	ck_assert_int_eq(eos_store_xattrs(st, a.sandbox, 0, "d", xattr_seen_one, &x, &err), 0);
	ck_assert_int_eq(x.n, 1);
	ck_assert(x.value_ok);
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

/* A failure in a worker thread or in the commit leaves no sandbox and a consistent store. */
START_TEST(test_failure_leaves_nothing)
{
	static const char *const points[] = { "content.chunk_write", "commit.before_write" };
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = eos_test_tmpdir("fail");
	cleanup_free char *work = eos_test_tmpdir("fail-tar");
	cleanup_free char *tar = pjoin(work, "x.tar.zst");
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	struct eos_fsck_result fr = { 0 };
	struct eos_error err = { 0 };

	if (!have_failpoints) {
		fprintf(stderr, "test_failure_leaves_nothing: skipped (no --enable-failpoints)\n");
		return;
	}
	for (int i = 0; i < 40; i++) {
		char name[32];

		snprintf(name, sizeof(name), "d%d/f%02d", i % 4, i);
		make_file(tree, name, 10000 + (size_t)i, FILL_RANDOM, 0644);
	}
	run("tar -C '%s' --zstd -cf '%s' .", tree, tar);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(points); i++) {
		arm(points[i], -EIO);
		ck_assert_int_eq(eos_store_import(st, tree, NULL, NULL, &err), -EIO);
		ck_assert_msg(strstr(err.msg, "import '"), "message: %s", err.msg);
		ck_assert_int_eq(eos_store_import(st, tar, NULL, NULL, &err), -EIO);
		ck_assert_msg(strstr(err.msg, "import '"), "message: %s", err.msg);
		arm(points[i], 0);
	}
	ck_assert_uint_eq(count_sandboxes(st), 0);
	ck_assert(eos_store_fsck(st, EOS_FSCK_VERIFY_CHUNKS, NULL, NULL, &fr, NULL) == 0);
	ck_assert_uint_eq(fr.violations, 0);
	import_ok(st, tree, NULL);
	import_ok(st, tar, NULL);
	ck_assert(eos_store_fsck(st, EOS_FSCK_VERIFY_CHUNKS, NULL, NULL, &fr, NULL) == 0);
	ck_assert_uint_eq(fr.violations, 0);
	eos_test_rm_rf(work);
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

START_TEST(test_not_an_archive)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *work = eos_test_tmpdir("junk");
	cleanup_free char *junk = pjoin(work, "junk.tar");
	cleanup_free char *missing = pjoin(work, "missing");
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	struct eos_error err = { 0 };

	make_file(work, "junk.tar", 5000, FILL_RANDOM, 0644);
	ck_assert_int_eq(eos_store_import(st, junk, NULL, NULL, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "is neither a directory nor a tar archive"), "message: %s",
		      err.msg);
	ck_assert_msg(strstr(err.msg, junk), "message: %s", err.msg);
	ck_assert_int_eq(eos_store_import(st, missing, NULL, NULL, &err), -ENOENT);
	ck_assert_uint_eq(count_sandboxes(st), 0);
	eos_test_rm_rf(work);
	eos_test_rm_rf(sdir);
}
END_TEST

START_TEST(test_sandbox_id)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = eos_test_tmpdir("ids");
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&sdir);
	struct eos_import_options o = { .sandbox = "my-box.1" };
	struct eos_import_result res = { 0 };
	struct eos_error err = { 0 };
	struct eos_sandbox_info info;

	make_file(tree, "f", 10, FILL_TEXT, 0644);
	ck_assert_int_eq(eos_store_import(st, tree, &o, &res, &err), 0);
	ck_assert_str_eq(res.sandbox, "my-box.1");
	ck_assert(eos_store_sandbox_get(st, "my-box.1", &info, NULL) == 0);
	ck_assert_int_eq(eos_store_import(st, tree, &o, &res, &err), -EEXIST);
	ck_assert_msg(strstr(err.msg, "my-box.1"), "message: %s", err.msg);
	o.sandbox = "bad/id";
	ck_assert_int_eq(eos_store_import(st, tree, &o, &res, &err), -EINVAL);
	ck_assert_uint_eq(count_sandboxes(st), 1);
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

/* The bytes of the store's write-ahead logs: what its next open would replay. */
static uint64_t
wal_bytes(const char *store_dir)
{
	cleanup_free char *db = pjoin(store_dir, "db");
	cleanup_closedir DIR *d = opendir(db);
	uint64_t total = 0;
	struct dirent *e;

	ck_assert_msg(d, "opendir '%s'", db);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		cleanup_free char *p = NULL;
		struct stat sb;

		if (len < 4 || strcmp(e->d_name + len - 4, ".log") != 0)
			continue;
		p = pjoin(db, e->d_name);
		ck_assert_int_eq(stat(p, &sb), 0);
		total += (uint64_t)sb.st_size;
	}
	return total;
}

/* An import is written out of the WAL, so that the next open does not replay megabytes of it
 * (eosd is ready in tens of milliseconds after a stop that follows an import). */
START_TEST(test_import_leaves_little_wal)
{
	cleanup_free char *sdir = NULL;
	cleanup_free char *tree = eos_test_tmpdir("wal");
	struct eos_store *st = eos_test_store_new(&sdir);

	for (int i = 0; i < 2000; i++) {
		char rel[32];

		snprintf(rel, sizeof(rel), "f%04d", i);
		make_file(tree, rel, 2048 + (size_t)i, FILL_RANDOM, 0644);
	}
	import_ok(st, tree, "big");
	eos_store_close(st);
	ck_assert_msg(wal_bytes(sdir) < 256 * 1024, "%" PRIu64 " bytes of WAL after the close",
		      wal_bytes(sdir));
	eos_test_rm_rf(tree);
	eos_test_rm_rf(sdir);
}
END_TEST

static Suite *
import_suite(void)
{
	Suite *s = suite_create("import");
	TCase *tc = tcase_create("import");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_dir_round_trip);
	tcase_add_test(tc, test_tar_round_trip);
	tcase_add_test(tc, test_sockets_skipped);
	tcase_add_test(tc, test_many_sockets_listed);
	tcase_add_test(tc, test_unreadable_refused);
	tcase_add_test(tc, test_tar_dotdot_refused);
	tcase_add_test(tc, test_tar_later_entry_wins);
	tcase_add_test(tc, test_tar_big_and_sparse_members);
	tcase_add_test(tc, test_tar_implicit_parents);
	tcase_add_test(tc, test_empty_sources);
	tcase_add_test(tc, test_xattrs_imported);
	tcase_add_test(tc, test_failure_leaves_nothing);
	tcase_add_test(tc, test_not_an_archive);
	tcase_add_test(tc, test_tar_git_index);
	tcase_add_test(tc, test_sandbox_id);
	tcase_add_test(tc, test_import_leaves_little_wal);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(import_suite());
}
