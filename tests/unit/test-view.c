/* SPDX-License-Identifier: MIT */
/*
 * The session view without FUSE: namespace and file operations through fs/view-internal.h, then
 * the delta the publish gate sees, its persistence across a reopen, and the store left untouched.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/failpoint.h"

#include "fs/view-internal.h"
#include "fs/view.h"
#include "store/store.h"
#include "tests/unit/testutil.h"
#include "tests/unit/view-util.h"

enum {
	MAX_ENTRIES = 64,
};

static const char SBX[] = "sbx";
static const char OP[] = "operation:op-1";
static const char SELF[] = "workspace_session:s1";

static struct eos_test_fixture fx;
static struct eos_digest tree_before;

#define ck_ok(r, err) \
	ck_assert_msg((r) >= 0, "line %d: %s", __LINE__, eos_error_message(&(err), (r)))

/* --- fixture --------------------------------------------------------------------------------- */

enum {
	BIG_SIZE = 3 * 1024 * 1024 + 123
}; /* above EOS_PARTIAL_MIN: copied up partially */
static char big[BIG_SIZE];

static void
big_content(void)
{
	uint32_t x = 12345;

	for (size_t i = 0; i < sizeof(big); i++) {
		x = x * 1103515245 + 12345;
		big[i] = (char)(x >> 16);
	}
}

static char *
src_path(const char *src, const char *rel)
{
	char *path = NULL;

	ck_assert_int_ge(asprintf(&path, "%s/%s", src, rel), 0);
	return path;
}

static void
src_file(const char *src, const char *rel, const char *text, unsigned mode)
{
	cleanup_free char *path = src_path(src, rel);

	eos_test_write_file(path, text, strlen(text), mode);
}

static void
setup(void)
{
	cleanup_free char *src = eos_test_tmpdir("view-src"), *ln = NULL, *big_path = NULL;
	struct eos_import_options io = { .sandbox = SBX, .threads = 1 };
	struct eos_import_result ir;
	struct eos_error err = { 0 };
	int r;

	fx = eos_test_fixture_open();
	src_file(src, "a.txt", "hello lower a", 0644);
	src_file(src, "b.txt", "bbbb", 0644);
	src_file(src, "c.txt", "ccc", 0644);
	src_file(src, "e.txt", "eee", 0644);
	src_file(src, "x.txt", "xxx", 0644);
	src_file(src, "dir/x.txt", "dir x", 0644);
	src_file(src, "dir/sub/y.txt", "dir sub y", 0644);
	src_file(src, "keep/deep/f.txt", "deep f", 0644);
	big_content();
	big_path = src_path(src, "big.bin");
	eos_test_write_file(big_path, big, BIG_SIZE, 0644);
	ln = src_path(src, "ln");
	ck_assert_int_eq(symlink("a.txt", ln), 0);
	r = eos_store_import(fx.st, src, &io, &ir, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(ir.version, 1);
	eos_test_rm_rf(src);
	tree_before = eos_test_tree_digest(fx.st, SBX, 1);
}

static void
teardown(void)
{
	eos_test_fixture_close(&fx);
}

static int
resolve(void *ctx, pid_t pid, char *out, size_t size)
{
	(void)ctx;
	if (pid != PID_OP)
		return -ENOENT;
	snprintf(out, size, "%s", OP);
	return 0;
}

static struct eos_view *
view_open(const char *session, bool create)
{
	struct eos_view_options o = { .store = fx.st,
				      .sandbox = SBX,
				      .session = session,
				      .create = create,
				      .resolve = resolve };
	struct eos_error err = { 0 };
	struct eos_view *v = NULL;
	int r = eos_view_open(&o, &v, &err);

	ck_ok(r, err);
	ck_assert_ptr_nonnull(v);
	return v;
}

static int
lookup_rc(struct eos_view *v, const char *dir, const char *name)
{
	struct eos_node *n;

	return eos_fs_lookup(v, dir[0] ? tv_lookup(v, dir) : tv_root(v), name, &n);
}

#define ck_content(v, path, want)                                                       \
	do {                                                                            \
		char buf_[256];                                                         \
		ck_assert_str_eq(tv_read_all((v), (path), buf_, sizeof(buf_)), (want)); \
	} while (0)

/* The store's file at the head, NUL-terminated into buf. */
static const char *
store_read(const char *path, char *buf, size_t size)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	struct eos_error err = { 0 };
	int r = eos_store_file_open(fx.st, SBX, 0, path, &f, &err);
	ssize_t n;

	ck_ok(r, err);
	n = eos_file_pread(f, buf, size - 1, 0, &err);
	ck_ok(n, err);
	buf[n] = 0;
	return buf;
}

static void
check_store_untouched(void)
{
	struct eos_sandbox_info info;
	struct eos_digest now;
	struct eos_error err = { 0 };
	struct eos_stat s;
	char buf[64];
	int r = eos_store_sandbox_get(fx.st, SBX, &info, &err);

	ck_ok(r, err);
	ck_assert_uint_eq(info.head, 1);
	ck_assert_str_eq(store_read("a.txt", buf, sizeof(buf)), "hello lower a");
	ck_assert_str_eq(store_read("dir/x.txt", buf, sizeof(buf)), "dir x");
	ck_assert_str_eq(store_read("keep/deep/f.txt", buf, sizeof(buf)), "deep f");
	r = eos_store_stat(fx.st, SBX, 0, "c.txt", &s, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(s.attr.mode, 0644);
	ck_assert_uint_eq(s.nxattrs, 0);
	r = eos_store_stat(fx.st, SBX, 0, "b.txt", &s, &err);
	ck_ok(r, err);
	now = eos_test_tree_digest(fx.st, SBX, 1);
	ck_assert_mem_eq(&now, &tree_before, sizeof(now));
}

/* --- delta capture --------------------------------------------------------------------------- */

struct range_copy {
	uint64_t start, end;
	char *owner;
};

struct entry_copy {
	char *path;
	enum eos_delta_change change;
	uint32_t mode, uid, gid;
	int64_t mtime_ns;
	uint64_t node, size;
	bool opaque, has_content;
	struct eos_content content;
	char *data_path, *data; /* data: the data file's bytes */
	struct range_copy *ranges;
	size_t nranges;
	char *target, *origin;
};

struct delta {
	struct entry_copy v[MAX_ENTRIES];
	size_t n;
};

static char *
dup_or_null(const char *s)
{
	char *c = s ? strdup(s) : NULL;

	ck_assert(!s || c);
	return c;
}

static char *
slurp(const char *path)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf = calloc(1, 4096);
	ssize_t n;

	ck_assert_msg(fd >= 0, "open data file '%s': %s", path, strerror(errno));
	ck_assert_ptr_nonnull(buf);
	n = read(fd, buf, 4095);
	ck_assert_int_ge(n, 0);
	return buf;
}

static int
capture_one(void *ctx, const struct eos_delta_entry *e)
{
	struct delta *d = ctx;
	struct entry_copy *c;

	ck_assert_uint_lt(d->n, MAX_ENTRIES);
	c = &d->v[d->n++];
	*c = (struct entry_copy){ .path = dup_or_null(e->path),
				  .change = e->change,
				  .mode = e->mode,
				  .uid = e->uid,
				  .gid = e->gid,
				  .mtime_ns = e->mtime_ns,
				  .node = e->node,
				  .size = e->size,
				  .opaque = e->opaque,
				  .has_content = e->content != NULL,
				  .data_path = dup_or_null(e->data_path),
				  .target = dup_or_null(e->target),
				  .origin = dup_or_null(e->origin),
				  .nranges = e->nranges };
	if (e->content)
		c->content = *e->content;
	if (e->data_path)
		c->data = slurp(e->data_path);
	c->ranges = calloc(e->nranges + 1, sizeof(*c->ranges));
	ck_assert_ptr_nonnull(c->ranges);
	for (size_t i = 0; i < e->nranges; i++)
		c->ranges[i] = (struct range_copy){ .start = e->ranges[i].start,
						    .end = e->ranges[i].end,
						    .owner = dup_or_null(e->ranges[i].owner) };
	return 0;
}

static void
delta_free(struct delta *d)
{
	for (size_t i = 0; i < d->n; i++) {
		struct entry_copy *c = &d->v[i];

		for (size_t j = 0; j < c->nranges; j++)
			free(c->ranges[j].owner);
		free(c->ranges);
		free(c->path);
		free(c->data_path);
		free(c->data);
		free(c->target);
		free(c->origin);
	}
	free(d);
}

static struct delta *
capture(struct eos_view *v)
{
	struct delta *d = calloc(1, sizeof(*d));
	struct eos_error err = { 0 };
	int r;

	ck_assert_ptr_nonnull(d);
	r = eos_view_delta(v, capture_one, d, &err);
	ck_ok(r, err);
	return d;
}

static const struct entry_copy *
entry(const struct delta *d, const char *path)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->v[i].path, path) == 0)
			return &d->v[i];
	ck_abort_msg("no delta entry for '%s'", path);
	return NULL;
}

/* One line per entry holding every field (the data file by content, not by name). */
static char *
entry_line(const struct entry_copy *c)
{
	char *s = NULL, *ranges = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&ranges, &len);

	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; i < c->nranges; i++)
		fprintf(f, "[%llu,%llu)=%s ", (unsigned long long)c->ranges[i].start,
			(unsigned long long)c->ranges[i].end,
			c->ranges[i].owner ? c->ranges[i].owner : "(null)");
	fclose(f);
	ck_assert_int_ge(
		asprintf(&s,
			 "%s %s mode=%o uid=%u gid=%u mtime=%lld node=%llu opaque=%d size=%llu "
			 "content=%d:%llu data=%s ranges=%s target=%s origin=%s",
			 c->path, eos_delta_change_name(c->change), c->mode, c->uid, c->gid,
			 (long long)c->mtime_ns, (unsigned long long)c->node, c->opaque,
			 (unsigned long long)c->size, c->has_content,
			 (unsigned long long)c->content.size, c->data ? c->data : "(none)", ranges,
			 c->target ? c->target : "(null)", c->origin ? c->origin : "(null)"),
		0);
	free(ranges);
	return s;
}

static void
expect_same_delta(const struct delta *a, const struct delta *b)
{
	ck_assert_msg(a->n == b->n, "%zu entries, then %zu", a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		cleanup_free char *la = entry_line(&a->v[i]), *lb = entry_line(&b->v[i]);

		ck_assert_msg(strcmp(la, lb) == 0, "entry %zu changed:\n  %s\n  %s", i, la, lb);
	}
}

/* Parents come before children, and each path is reported once. */
static void
expect_parents_first(const struct delta *d)
{
	for (size_t i = 0; i < d->n; i++) {
		const char *slash = strrchr(d->v[i].path, '/');
		bool parent_seen = !slash;

		for (size_t j = 0; j < d->n; j++) {
			if (j != i)
				ck_assert_msg(strcmp(d->v[i].path, d->v[j].path) != 0,
					      "'%s' reported twice", d->v[i].path);
			if (slash && j < i &&
			    strlen(d->v[j].path) == (size_t)(slash - d->v[i].path) &&
			    strncmp(d->v[j].path, d->v[i].path, (size_t)(slash - d->v[i].path)) ==
				    0)
				parent_seen = true;
		}
		ck_assert_msg(parent_seen, "'%s' comes before its parent", d->v[i].path);
	}
}

struct want_range {
	uint64_t start, end;
	const char *owner;
};

static void
expect_ranges(const struct entry_copy *c, const struct want_range *w, size_t n)
{
	ck_assert_msg(c->nranges == n, "'%s': %zu ranges, want %zu", c->path, c->nranges, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(c->ranges[i].start == w[i].start && c->ranges[i].end == w[i].end,
			      "'%s': range %zu is [%llu, %llu), want [%llu, %llu)", c->path, i,
			      (unsigned long long)c->ranges[i].start,
			      (unsigned long long)c->ranges[i].end, (unsigned long long)w[i].start,
			      (unsigned long long)w[i].end);
		ck_assert_msg(c->ranges[i].owner && strcmp(c->ranges[i].owner, w[i].owner) == 0,
			      "'%s': range %zu belongs to '%s', want '%s'", c->path, i,
			      c->ranges[i].owner ? c->ranges[i].owner : "(null)", w[i].owner);
	}
}

#define EXPECT_RANGES(c, ...)                                       \
	do {                                                        \
		const struct want_range w_[] = { __VA_ARGS__ };     \
		expect_ranges((c), w_, sizeof(w_) / sizeof(w_[0])); \
	} while (0)

/* A file whose content is in the session's data file. */
static void
expect_data(const struct entry_copy *c, const char *want)
{
	ck_assert_msg(c->data_path, "'%s' has no data file", c->path);
	ck_assert_msg(!c->has_content, "'%s' has both a data file and store content", c->path);
	ck_assert_str_eq(c->data, want);
	ck_assert_uint_eq(c->size, strlen(want));
	ck_assert_msg(strstr(c->data_path, "/sessions/sbx/s1/"), "'%s': data file '%s'", c->path,
		      c->data_path);
}

/* A file whose content is unchanged in the store. */
static void
expect_store_content(const struct entry_copy *c, uint64_t size)
{
	ck_assert_msg(c->has_content, "'%s' has no store content", c->path);
	ck_assert_msg(!c->data_path, "'%s' has a data file '%s'", c->path, c->data_path);
	ck_assert_uint_eq(c->content.size, size);
	ck_assert_uint_eq(c->size, size);
	ck_assert_uint_eq(c->nranges, 0);
}

static void
expect_entry(const struct delta *d, size_t i, const char *path, enum eos_delta_change change,
	     uint32_t mode)
{
	ck_assert_msg(i < d->n, "entry %zu ('%s') missing: only %zu entries", i, path, d->n);
	ck_assert_msg(strcmp(d->v[i].path, path) == 0, "entry %zu is '%s', want '%s'", i,
		      d->v[i].path, path);
	ck_assert_msg(d->v[i].change == change, "'%s' is %s, want %s", path,
		      eos_delta_change_name(d->v[i].change), eos_delta_change_name(change));
	if (change != EOS_DELTA_DELETE)
		ck_assert_msg(d->v[i].mode == mode, "'%s' has mode %o, want %o", path, d->v[i].mode,
			      mode);
}

/* --- the scenario ---------------------------------------------------------------------------- */

static void
change_everything(struct eos_view *v)
{
	struct stat attr = { .st_mode = 0600 }, out;

	/* a new file written by an operation, then by the session itself */
	tv_make(v, "", "new.txt", S_IFREG | 0644, NULL);
	tv_write_at(v, "new.txt", PID_OP, 0, "hello new");
	tv_write_at(v, "new.txt", PID_SESSION, 9, "XYZ");
	/* a lower file modified in place (copy-up), another deleted */
	tv_write_at(v, "a.txt", PID_OP, 0, "HE");
	ck_rc(eos_fs_unlink(v, tv_root(v), "b.txt", false), 0);
	/* a new directory with a file */
	tv_make(v, "", "newdir", S_IFDIR | 0755, NULL);
	tv_make(v, "newdir", "inner.txt", S_IFREG | 0640, NULL);
	tv_write_at(v, "newdir/inner.txt", PID_SESSION, 0, "inner");
	/* a lower directory renamed, then a file below it changed */
	ck_rc(eos_fs_rename(v, tv_root(v), "dir", tv_root(v), "moved", 0), 0);
	tv_write_at(v, "moved/x.txt", PID_SESSION, 0, "DIR");
	/* a hard link of a lower file, a chmod, an xattr, a symlink, a deep change */
	ck_rc(eos_fs_link(v, tv_lookup(v, "e.txt"), tv_root(v), "e-link"), 0);
	ck_rc(eos_fs_setattr(v, tv_lookup(v, "c.txt"), &attr, EOS_SET_MODE, &out), 0);
	ck_assert_uint_eq(out.st_mode, S_IFREG | 0600);
	ck_rc(eos_xattr_set(v, tv_lookup(v, "x.txt"), "user.k", "val", 3, 0), 0);
	tv_make(v, "", "sym", S_IFLNK | 0777, "a.txt");
	tv_write_at(v, "keep/deep/f.txt", PID_OP, 0, "DEEP");
}

/* What the view shows after change_everything(). */
static void
check_view_contents(struct eos_view *v)
{
	char buf[16];
	ssize_t n;

	ck_content(v, "new.txt", "hello newXYZ");
	ck_content(v, "a.txt", "HEllo lower a");
	ck_content(v, "moved/x.txt", "DIR x");
	ck_content(v, "moved/sub/y.txt", "dir sub y");
	ck_content(v, "e-link", "eee");
	ck_content(v, "keep/deep/f.txt", "DEEP f");
	ck_content(v, "newdir/inner.txt", "inner");
	ck_rc(lookup_rc(v, "", "b.txt"), -ENOENT);
	ck_rc(lookup_rc(v, "", "dir"), -ENOENT);
	ck_assert_ptr_eq(tv_lookup(v, "e-link"), tv_lookup(v, "e.txt"));
	ck_assert_uint_eq(tv_lookup(v, "e.txt")->nlink, 2);
	n = eos_xattr_get(v, tv_lookup(v, "x.txt"), "user.k", buf, sizeof(buf));
	ck_assert_int_eq(n, 3);
	ck_assert_mem_eq(buf, "val", 3);
	ck_assert_uint_eq(tv_lookup(v, "c.txt")->mode, S_IFREG | 0600);
}

/* Every entry of the delta after change_everything(), in order. */
static void
check_delta(const struct delta *d)
{
	const struct entry_copy *e;
	size_t i = 0;

	expect_parents_first(d);
	expect_entry(d, i++, "a.txt", EOS_DELTA_PUT, S_IFREG | 0644);
	e = entry(d, "a.txt");
	expect_data(e, "HEllo lower a");
	EXPECT_RANGES(e, { 0, 2, OP });
	ck_assert_ptr_null(e->origin);

	expect_entry(d, i++, "b.txt", EOS_DELTA_DELETE, 0);

	expect_entry(d, i++, "c.txt", EOS_DELTA_ATTR, S_IFREG | 0600);
	expect_store_content(entry(d, "c.txt"), 3);

	expect_entry(d, i++, "dir", EOS_DELTA_DELETE, 0);

	/* a hard link: a new name of e.txt's node */
	expect_entry(d, i++, "e-link", EOS_DELTA_PUT, S_IFREG | 0644);
	expect_store_content(entry(d, "e-link"), 3);
	/* every name of a linked file is a put, so that the publish links them */
	expect_entry(d, i++, "e.txt", EOS_DELTA_PUT, S_IFREG | 0644);
	expect_store_content(entry(d, "e.txt"), 3);
	ck_assert_uint_eq(entry(d, "e-link")->node, entry(d, "e.txt")->node);
	ck_assert_ptr_null(entry(d, "e.txt")->origin);

	/* unchanged directories on the way to a change */
	expect_entry(d, i++, "keep", EOS_DELTA_DIR, S_IFDIR | 0755);
	expect_entry(d, i++, "keep/deep", EOS_DELTA_DIR, S_IFDIR | 0755);
	expect_entry(d, i++, "keep/deep/f.txt", EOS_DELTA_PUT, S_IFREG | 0644);
	expect_data(entry(d, "keep/deep/f.txt"), "DEEP f");
	EXPECT_RANGES(entry(d, "keep/deep/f.txt"), { 0, 4, OP });

	/* the renamed lower directory carries its origin; its lower children are not listed */
	expect_entry(d, i++, "moved", EOS_DELTA_PUT, S_IFDIR | 0755);
	ck_assert_ptr_nonnull(entry(d, "moved")->origin);
	ck_assert_str_eq(entry(d, "moved")->origin, "dir");
	ck_assert(!entry(d, "moved")->opaque);
	expect_entry(d, i++, "moved/x.txt", EOS_DELTA_PUT, S_IFREG | 0644);
	expect_data(entry(d, "moved/x.txt"), "DIR x");
	EXPECT_RANGES(entry(d, "moved/x.txt"), { 0, 3, SELF });

	expect_entry(d, i++, "new.txt", EOS_DELTA_PUT, S_IFREG | 0644);
	e = entry(d, "new.txt");
	expect_data(e, "hello newXYZ");
	EXPECT_RANGES(e, { 0, 9, OP }, { 9, 12, SELF });
	ck_assert_ptr_null(e->origin);
	ck_assert_uint_eq(e->uid, getuid());

	expect_entry(d, i++, "newdir", EOS_DELTA_PUT, S_IFDIR | 0755);
	ck_assert_ptr_null(entry(d, "newdir")->origin);
	expect_entry(d, i++, "newdir/inner.txt", EOS_DELTA_PUT, S_IFREG | 0640);
	expect_data(entry(d, "newdir/inner.txt"), "inner");
	EXPECT_RANGES(entry(d, "newdir/inner.txt"), { 0, 5, SELF });

	expect_entry(d, i++, "sym", EOS_DELTA_PUT, S_IFLNK | 0777);
	ck_assert_ptr_nonnull(entry(d, "sym")->target);
	ck_assert_str_eq(entry(d, "sym")->target, "a.txt");

	expect_entry(d, i++, "x.txt", EOS_DELTA_ATTR, S_IFREG | 0644);
	expect_store_content(entry(d, "x.txt"), 3);

	ck_assert_msg(d->n == i, "%zu entries, want %zu (extra: '%s')", d->n, i,
		      d->n > i ? d->v[i].path : "");
}

START_TEST(test_delta_persist_reopen)
{
	struct eos_view *v = view_open("s1", true);
	struct delta *before, *after;

	change_everything(v);
	check_view_contents(v);
	before = capture(v);
	check_delta(before);
	check_store_untouched();
	eos_view_close(v);
	check_store_untouched();

	/* the same session again: the delta is intact */
	v = view_open("s1", false);
	after = capture(v);
	expect_same_delta(before, after);
	check_view_contents(v);
	delta_free(after);
	/* and the view keeps working: one more change is one more entry */
	tv_write_at(v, "c.txt", PID_OP, 3, "!");
	after = capture(v);
	ck_assert_uint_eq(after->n, before->n);
	ck_assert_str_eq(entry(after, "c.txt")->data, "ccc!");
	ck_assert_int_eq(entry(after, "c.txt")->change, EOS_DELTA_PUT);
	EXPECT_RANGES(entry(after, "c.txt"), { 3, 4, OP });
	delta_free(after);
	eos_view_close(v);
	check_store_untouched();
	delta_free(before);
}
END_TEST

/* Close and reopen session s1, checking that its delta comes back identical. */
static struct eos_view *
reopen_same(struct eos_view *v)
{
	struct delta *before = capture(v), *after;

	eos_view_close(v);
	v = view_open("s1", false);
	after = capture(v);
	expect_same_delta(before, after);
	delta_free(before);
	delta_free(after);
	return v;
}

/* A write log longer than a handful of ranges survives a reopen. */
START_TEST(test_many_ranges_persist)
{
	struct eos_view *v = view_open("s1", true);
	struct delta *d;

	tv_make(v, "", "sparse.txt", S_IFREG | 0644, NULL);
	for (int i = 0; i < 8; i++)
		tv_write_at(v, "sparse.txt", i % 2 ? PID_SESSION : PID_OP, (uint64_t)i * 10,
			    "abcde");
	d = capture(v);
	EXPECT_RANGES(entry(d, "sparse.txt"), { 0, 5, OP }, { 10, 15, SELF }, { 20, 25, OP },
		      { 30, 35, SELF }, { 40, 45, OP }, { 50, 55, SELF }, { 60, 65, OP },
		      { 70, 75, SELF });
	delta_free(d);
	v = reopen_same(v);
	eos_view_close(v);
}
END_TEST

/* Write logs belong to the inode: they follow renames and hard links, and truncation. */
START_TEST(test_writelog_follows_node)
{
	struct eos_view *v = view_open("s1", true);
	struct eos_ctx c = tv_ctx_of(PID_OP);
	struct stat attr = { .st_size = 5 }, out;
	struct eos_handle *h = NULL;
	struct delta *d;

	tv_make(v, "", "w.txt", S_IFREG | 0644, NULL);
	tv_write_at(v, "w.txt", PID_OP, 0, "0123456789");
	ck_rc(eos_fs_rename(v, tv_root(v), "w.txt", tv_root(v), "w2.txt", 0), 0);
	ck_rc(eos_fs_link(v, tv_lookup(v, "w2.txt"), tv_root(v), "w3.txt"), 0);
	tv_write_at(v, "w3.txt", PID_SESSION, 10, "ab");
	/* O_TRUNC on a lower file: no copy of the old bytes */
	ck_rc(eos_fs_open(v, &c, tv_lookup(v, "x.txt"), O_WRONLY | O_TRUNC, &h), 0);
	ck_rc(eos_fs_write(v, h, "n", 1, 0), 1);
	ck_rc(eos_fs_release(v, h), 0);
	d = capture(v);
	ck_assert_uint_eq(d->n, 3);
	expect_entry(d, 0, "w2.txt", EOS_DELTA_PUT, S_IFREG | 0644);
	expect_entry(d, 1, "w3.txt", EOS_DELTA_PUT, S_IFREG | 0644);
	ck_assert_uint_eq(d->v[0].node, d->v[1].node);
	for (int i = 0; i < 2; i++) {
		expect_data(&d->v[i], "0123456789ab");
		EXPECT_RANGES(&d->v[i], { 0, 10, OP }, { 10, 12, SELF });
	}
	expect_entry(d, 2, "x.txt", EOS_DELTA_PUT, S_IFREG | 0644);
	expect_data(&d->v[2], "n");
	EXPECT_RANGES(&d->v[2], { 0, 1, OP });
	delta_free(d);

	/* truncation cuts the log */
	ck_rc(eos_fs_setattr(v, tv_lookup(v, "w2.txt"), &attr, EOS_SET_SIZE, &out), 0);
	ck_assert_int_eq(out.st_size, 5);
	v = reopen_same(v);
	d = capture(v);
	expect_data(entry(d, "w3.txt"), "01234");
	EXPECT_RANGES(entry(d, "w3.txt"), { 0, 5, OP });
	delta_free(d);
	/* after the reopen, the same operation extends its own range */
	tv_write_at(v, "w2.txt", PID_OP, 5, "5");
	tv_write_at(v, "x.txt", PID_SESSION, 1, "o");
	d = capture(v);
	EXPECT_RANGES(entry(d, "w2.txt"), { 0, 6, OP });
	EXPECT_RANGES(entry(d, "x.txt"), { 0, 1, OP }, { 1, 2, SELF });
	delta_free(d);
	eos_view_close(v);
	check_store_untouched();
}
END_TEST

/* Replacing names: rename over a file, a directory recreated over a deleted one (opaque), a
 * created file deleted again, a lower directory renamed back, a link outliving its original. */
START_TEST(test_replace_and_opaque)
{
	struct eos_view *v = view_open("s1", true);
	struct eos_node *n = NULL;
	struct eos_ctx c = tv_ctx_of(PID_SESSION);
	struct delta *d;

	/* errors first: nothing of these may show in the delta */
	ck_rc(eos_fs_unlink(v, tv_root(v), "dir", true), -ENOTEMPTY);
	ck_rc(eos_fs_unlink(v, tv_root(v), "dir", false), -EISDIR);
	ck_rc(eos_fs_unlink(v, tv_root(v), "a.txt", true), -ENOTDIR);
	ck_rc(eos_fs_unlink(v, tv_root(v), "nosuch", false), -ENOENT);
	ck_rc(eos_fs_make(v, &c, tv_root(v), "a.txt", S_IFREG | 0644, NULL, &n), -EEXIST);
	ck_rc(eos_fs_make(v, &c, tv_root(v), "dir", S_IFDIR | 0755, NULL, &n), -EEXIST);
	ck_rc(eos_fs_rename(v, tv_root(v), "dir", tv_root(v), "a.txt", 0), -ENOTDIR);
	ck_rc(eos_fs_rename(v, tv_root(v), "a.txt", tv_root(v), "dir", 0), -EISDIR);
	ck_rc(eos_fs_rename(v, tv_root(v), "a.txt", tv_root(v), "c.txt", EOS_RENAME_NOREPLACE),
	      -EEXIST);

	ck_rc(eos_fs_rename(v, tv_root(v), "a.txt", tv_root(v), "c.txt", 0), 0);
	ck_rc(eos_fs_unlink(v, tv_lookup(v, "keep/deep"), "f.txt", false), 0);
	ck_rc(eos_fs_unlink(v, tv_lookup(v, "keep"), "deep", true), 0);
	tv_make(v, "keep", "deep", S_IFDIR | 0700, NULL);
	ck_rc(lookup_rc(v, "keep/deep", "f.txt"), -ENOENT);
	tv_make(v, "", "tmp.txt", S_IFREG | 0644, NULL);
	ck_rc(eos_fs_unlink(v, tv_root(v), "tmp.txt", false), 0);
	ck_rc(eos_fs_rename(v, tv_root(v), "dir", tv_root(v), "moved", 0), 0);
	ck_rc(eos_fs_rename(v, tv_root(v), "moved", tv_root(v), "dir", 0), 0);
	ck_rc(eos_fs_link(v, tv_lookup(v, "e.txt"), tv_root(v), "e-link"), 0);
	ck_rc(eos_fs_unlink(v, tv_root(v), "e.txt", false), 0);

	for (int round = 0; round < 2; round++) {
		d = capture(v);
		expect_parents_first(d);
		expect_entry(d, 0, "a.txt", EOS_DELTA_DELETE, 0);
		expect_entry(d, 1, "c.txt", EOS_DELTA_PUT, S_IFREG | 0644);
		expect_store_content(entry(d, "c.txt"), 13);
		ck_assert_str_eq(entry(d, "c.txt")->origin ? entry(d, "c.txt")->origin : "",
				 "a.txt");
		/* the directory renamed back is at its origin again */
		ck_assert_str_eq(d->v[2].path, "dir");
		ck_assert_msg(d->v[2].change == EOS_DELTA_DIR || d->v[2].change == EOS_DELTA_ATTR,
			      "'dir' is %s", eos_delta_change_name(d->v[2].change));
		ck_assert_ptr_null(d->v[2].origin);
		expect_entry(d, 3, "e-link", EOS_DELTA_PUT, S_IFREG | 0644);
		expect_store_content(entry(d, "e-link"), 3);
		expect_entry(d, 4, "e.txt", EOS_DELTA_DELETE, 0);
		expect_entry(d, 5, "keep", EOS_DELTA_DIR, S_IFDIR | 0755);
		expect_entry(d, 6, "keep/deep", EOS_DELTA_PUT, S_IFDIR | 0700);
		ck_assert(entry(d, "keep/deep")->opaque);
		ck_assert_uint_eq(d->n, 7);
		delta_free(d);
		ck_content(v, "c.txt", "hello lower a");
		ck_content(v, "e-link", "eee");
		ck_content(v, "dir/sub/y.txt", "dir sub y");
		ck_rc(lookup_rc(v, "", "moved"), -ENOENT);
		ck_rc(lookup_rc(v, "", "a.txt"), -ENOENT);
		ck_rc(lookup_rc(v, "", "tmp.txt"), -ENOENT);
		ck_rc(lookup_rc(v, "keep/deep", "f.txt"), -ENOENT);
		if (round == 0)
			v = reopen_same(v);
	}
	eos_view_close(v);
	check_store_untouched();
}
END_TEST

/* RENAME_EXCHANGE of a lower file and a created one: each name gets the other's node. */
START_TEST(test_exchange)
{
	struct eos_view *v = view_open("s1", true);
	struct delta *d;

	tv_make(v, "", "n.txt", S_IFREG | 0600, NULL);
	tv_write_at(v, "n.txt", PID_OP, 0, "new");
	ck_rc(eos_fs_rename(v, tv_root(v), "a.txt", tv_root(v), "n.txt", EOS_RENAME_EXCHANGE), 0);
	ck_rc(eos_fs_rename(v, tv_root(v), "a.txt", tv_root(v), "nosuch", EOS_RENAME_EXCHANGE),
	      -ENOENT);
	for (int round = 0; round < 2; round++) {
		ck_content(v, "a.txt", "new");
		ck_content(v, "n.txt", "hello lower a");
		d = capture(v);
		ck_assert_uint_eq(d->n, 2);
		expect_entry(d, 0, "a.txt", EOS_DELTA_PUT, S_IFREG | 0600);
		expect_data(&d->v[0], "new");
		EXPECT_RANGES(&d->v[0], { 0, 3, OP });
		ck_assert_ptr_null(d->v[0].origin);
		expect_entry(d, 1, "n.txt", EOS_DELTA_PUT, S_IFREG | 0644);
		expect_store_content(&d->v[1], 13);
		ck_assert_str_eq(d->v[1].origin ? d->v[1].origin : "", "a.txt");
		delta_free(d);
		if (round == 0)
			v = reopen_same(v);
	}
	eos_view_close(v);
	check_store_untouched();
}
END_TEST

/* A renamed lower directory and symlink, their old names reused, a deletion below the rename. */
START_TEST(test_rename_dir_reuse_name)
{
	struct eos_view *v = view_open("s1", true);
	struct delta *d;
	char *target = NULL;

	ck_rc(eos_fs_rename(v, tv_root(v), "dir", tv_root(v), "moved", 0), 0);
	tv_make(v, "", "dir", S_IFDIR | 0750, NULL);
	tv_make(v, "dir", "fresh.txt", S_IFREG | 0644, NULL);
	ck_rc(eos_fs_unlink(v, tv_lookup(v, "moved/sub"), "y.txt", false), 0);
	ck_rc(eos_fs_rename(v, tv_root(v), "ln", tv_root(v), "ln2", 0), 0);
	for (int round = 0; round < 2; round++) {
		ck_content(v, "moved/x.txt", "dir x");
		ck_rc(lookup_rc(v, "dir", "x.txt"), -ENOENT);
		ck_rc(lookup_rc(v, "dir", "sub"), -ENOENT);
		ck_rc(lookup_rc(v, "moved/sub", "y.txt"), -ENOENT);
		ck_rc(eos_fs_readlink(v, tv_lookup(v, "ln2"), &target), 0);
		ck_assert_str_eq(target, "a.txt");
		free(target);
		d = capture(v);
		expect_parents_first(d);
		expect_entry(d, 0, "dir", EOS_DELTA_PUT, S_IFDIR | 0750);
		ck_assert(d->v[0].opaque);
		ck_assert_ptr_null(d->v[0].origin);
		expect_entry(d, 1, "dir/fresh.txt", EOS_DELTA_PUT, S_IFREG | 0644);
		expect_entry(d, 2, "ln", EOS_DELTA_DELETE, 0);
		expect_entry(d, 3, "ln2", EOS_DELTA_PUT, S_IFLNK | 0777);
		ck_assert_str_eq(d->v[3].target ? d->v[3].target : "", "a.txt");
		ck_assert_str_eq(d->v[3].origin ? d->v[3].origin : "", "ln");
		expect_entry(d, 4, "moved", EOS_DELTA_PUT, S_IFDIR | 0755);
		ck_assert_str_eq(d->v[4].origin ? d->v[4].origin : "", "dir");
		ck_assert(!d->v[4].opaque);
		ck_assert_str_eq(d->v[5].path, "moved/sub");
		expect_entry(d, 6, "moved/sub/y.txt", EOS_DELTA_DELETE, 0);
		ck_assert_uint_eq(d->n, 7);
		delta_free(d);
		if (round == 0)
			v = reopen_same(v);
	}
	eos_view_close(v);
	check_store_untouched();
}
END_TEST

struct record_want {
	const void *key;
	size_t klen;
	bool found;
};

static int
record_match(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct record_want *w = ctx;

	(void)val;
	(void)vlen;
	if (klen == w->klen && memcmp(key, w->key, klen) == 0)
		w->found = true;
	return 0;
}

/* Whether the store still holds a delta record with this key. */
static bool
has_record(const char *session, const void *key, size_t klen)
{
	struct eos_error err = { 0 };
	struct record_want c = { key, klen, false };
	int r = eos_store_session_scan(fx.st, SBX, session, record_match, &c, &err);

	ck_ok(r, err);
	return c.found;
}

/* Nodes unlinked while still referenced are discarded on the next open: record and data. */
START_TEST(test_orphans_discarded)
{
	struct eos_view *v = view_open("s1", true);
	cleanup_free char *data = NULL;
	uint8_t key_file[9] = { 'N' }, key_dir[9] = { 'N' };
	uint64_t file_ino, dir_ino;
	struct delta *d;

	file_ino = tv_make(v, "", "o.txt", S_IFREG | 0644, NULL)->ino;
	dir_ino = tv_make(v, "", "odir", S_IFDIR | 0755, NULL)->ino;
	tv_write_at(v, "o.txt", PID_OP, 0, "orphan");
	ck_assert_int_ge(asprintf(&data, "%s/sessions/%s/s1/%016llx", fx.dir, SBX,
				  (unsigned long long)file_ino),
			 0);
	ck_assert(access(data, F_OK) == 0);
	ck_rc(eos_fs_unlink(v, tv_root(v), "o.txt", false), 0);
	ck_rc(eos_fs_unlink(v, tv_root(v), "odir", true), 0);
	d = capture(v);
	ck_assert_uint_eq(d->n, 0);
	delta_free(d);
	eos_view_close(v);

	v = view_open("s1", false);
	d = capture(v);
	ck_assert_uint_eq(d->n, 0);
	delta_free(d);
	eos_view_close(v);
	ck_assert_msg(access(data, F_OK) < 0, "data file '%s' of an unlinked file is left", data);
	for (int i = 0; i < 8; i++) {
		key_file[1 + i] = (uint8_t)(file_ino >> (56 - 8 * i));
		key_dir[1 + i] = (uint8_t)(dir_ino >> (56 - 8 * i));
	}
	ck_assert_msg(!has_record("s1", key_file, sizeof(key_file)),
		      "the record of unlinked file inode %llu is left",
		      (unsigned long long)file_ino);
	ck_assert_msg(!has_record("s1", key_dir, sizeof(key_dir)),
		      "the record of removed directory inode %llu is left",
		      (unsigned long long)dir_ino);
}
END_TEST

/*
 * A storm of creates and deletes leaves nothing behind: the node table, the directory's dirents
 * and the session's records shrink back as the files go (bench/churn measures the memory).
 */
START_TEST(test_churn_leaves_nothing)
{
	enum {
		CHURN = 100000
	};
	struct eos_view *v = view_open("s1", true);
	size_t slots = 0, records = 0;
	char name[32];

	tv_make(v, "", "churn", S_IFDIR | 0755, NULL);
	for (unsigned i = 0; i < CHURN; i++) {
		struct eos_node *n;

		snprintf(name, sizeof(name), "f%u", i);
		n = tv_make(v, "churn", name, S_IFREG | 0644, NULL);
		ck_rc(eos_fs_unlink(v, tv_lookup(v, "churn"), name, false), 0);
		eos_node_forget(v, n->ino, 1); /* the kernel's FORGET */
	}
	for (size_t i = 0; i < EOS_TABLE_SHARDS; i++)
		slots += v->shards[i].cap; /* buckets: they shrink after the nodes go */
	ck_assert_msg(slots < CHURN / 3, "%zu node slots left after %u creates and deletes", slots,
		      CHURN);
	ck_assert_uint_lt(eos_hashmap_count(&tv_lookup(v, "churn")->x->dirents), 200);
	records = eos_test_session_records(fx.st, SBX, "s1");
	ck_assert_uint_lt(records, 10);
	eos_view_close(v);
}
END_TEST

struct check_seen {
	unsigned data, dirent;
	char data_msg[1024];
};

static void
check_one(void *ctx, const char *kind, const char *message)
{
	struct check_seen *c = ctx;

	if (strcmp(kind, "session-data") == 0) {
		c->data++;
		snprintf(c->data_msg, sizeof(c->data_msg), "%s", message);
	} else if (strcmp(kind, "session-dirent") == 0) {
		c->dirent++;
	}
}

static int
check_session(struct check_seen *seen)
{
	struct eos_view_options o = {
		.store = fx.st, .sandbox = SBX, .session = "s1", .inspect = true
	};
	struct eos_error err = { 0 };
	struct eos_view *v = NULL;
	int r = eos_view_open(&o, &v, &err);

	ck_ok(r, err);
	r = eos_view_check(v, check_one, seen, &err);
	ck_ok(r, err);
	eos_view_close(v);
	return r;
}

/* fsck's session check: a file whose data file is gone, a dirent naming no node. */
START_TEST(test_check_finds_lost_data)
{
	struct eos_view *v = view_open("s1", true);
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	struct check_seen seen = { 0 };
	struct eos_error err = { 0 };
	cleanup_free char *data = NULL;
	uint8_t key[1 + 8 + 5] = { 'd', 0, 0, 0, 0, 0, 0, 0, 1, 'g', 'h', 'o', 's', 't' };
	uint8_t ghost[8] = { 0x0f, 0x27 }; /* inode 9999, little-endian */
	uint64_t ino;
	int r;

	tv_make(v, "", "kept.txt", S_IFREG | 0644, NULL);
	tv_write_at(v, "kept.txt", PID_OP, 0, "kept");
	ino = tv_make(v, "", "lost.txt", S_IFREG | 0644, NULL)->ino;
	tv_write_at(v, "lost.txt", PID_OP, 0, "lost data");
	tv_write_at(v, "a.txt", PID_OP, 0, "HELLO");
	eos_view_close(v);
	ck_rc(check_session(&seen), 0);
	ck_assert_int_ge(
		asprintf(&data, "%s/sessions/%s/s1/%016llx", fx.dir, SBX, (unsigned long long)ino),
		0);
	ck_assert_int_eq(unlink(data), 0);
	r = eos_session_batch_new(fx.st, SBX, "s1", &b, &err);
	ck_ok(r, err);
	ck_rc(eos_session_batch_put(b, key, sizeof(key), ghost, sizeof(ghost)), 0);
	r = eos_session_batch_write(b, true, &err);
	ck_ok(r, err);
	ck_rc(check_session(&seen), 2);
	ck_assert_uint_eq(seen.data, 1);
	ck_assert_uint_eq(seen.dirent, 1);
	ck_assert_msg(strstr(seen.data_msg, "'lost.txt'") && strstr(seen.data_msg, "missing"),
		      "the message does not name the file: %s", seen.data_msg);
}
END_TEST

START_TEST(test_new_session_empty_delta)
{
	struct eos_view *v = view_open("s1", true);
	struct eos_session_info info;
	struct eos_error err = { 0 };
	struct delta *d = capture(v);
	int r;

	ck_assert_uint_eq(d->n, 0);
	ck_assert(!eos_view_read_only(v));
	ck_assert_uint_eq(eos_view_version(v), 1);
	r = eos_store_session_get(fx.st, SBX, "s1", &info, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(info.version, 1);
	/* reading does not change anything */
	ck_content(v, "a.txt", "hello lower a");
	ck_content(v, "dir/sub/y.txt", "dir sub y");
	delta_free(d);
	d = capture(v);
	ck_assert_uint_eq(d->n, 0);
	delta_free(d);
	eos_view_close(v);
}
END_TEST

START_TEST(test_sessions_isolated)
{
	struct eos_view *v1 = view_open("s1", true), *v2 = view_open("s2", true);
	struct delta *d;

	tv_write_at(v1, "a.txt", PID_OP, 0, "ONE");
	tv_make(v1, "", "only1", S_IFREG | 0644, NULL);
	ck_rc(eos_fs_unlink(v2, tv_root(v2), "a.txt", false), 0);
	ck_content(v1, "a.txt", "ONElo lower a");
	ck_rc(lookup_rc(v2, "", "a.txt"), -ENOENT);
	ck_rc(lookup_rc(v2, "", "only1"), -ENOENT);
	d = capture(v2);
	ck_assert_uint_eq(d->n, 1);
	expect_entry(d, 0, "a.txt", EOS_DELTA_DELETE, 0);
	delta_free(d);
	eos_view_close(v2);
	eos_view_close(v1);
	check_store_untouched();
}
END_TEST

/* --- refusals -------------------------------------------------------------------------------- */

static struct eos_view *
view_open_ro(uint64_t version)
{
	struct eos_view_options o = { .store = fx.st, .sandbox = SBX, .version = version };
	struct eos_error err = { 0 };
	struct eos_view *v = NULL;
	int r = eos_view_open(&o, &v, &err);

	ck_ok(r, err);
	return v;
}

START_TEST(test_read_only_refuses_changes)
{
	struct eos_view *v = view_open_ro(0);
	struct eos_ctx c = tv_ctx_of(PID_OP);
	struct stat attr = { .st_mode = 0600 }, out;
	struct eos_handle *h = NULL;
	struct eos_node *n = NULL;
	struct eos_error err = { 0 };

	ck_assert(eos_view_read_only(v));
	ck_assert_uint_eq(eos_view_version(v), 1);
	ck_content(v, "a.txt", "hello lower a");
	ck_rc(eos_fs_make(v, &c, tv_root(v), "new", S_IFREG | 0644, NULL, &n), -EROFS);
	ck_rc(eos_fs_make(v, &c, tv_root(v), "d", S_IFDIR | 0755, NULL, &n), -EROFS);
	ck_rc(eos_fs_unlink(v, tv_root(v), "a.txt", false), -EROFS);
	ck_rc(eos_fs_unlink(v, tv_root(v), "dir", true), -EROFS);
	ck_rc(eos_fs_rename(v, tv_root(v), "a.txt", tv_root(v), "z.txt", 0), -EROFS);
	ck_rc(eos_fs_link(v, tv_lookup(v, "a.txt"), tv_root(v), "l"), -EROFS);
	ck_rc(eos_fs_setattr(v, tv_lookup(v, "a.txt"), &attr, EOS_SET_MODE, &out), -EROFS);
	ck_rc(eos_xattr_set(v, tv_lookup(v, "a.txt"), "user.k", "v", 1, 0), -EROFS);
	ck_rc(eos_fs_open(v, &c, tv_lookup(v, "a.txt"), O_WRONLY, &h), -EROFS);
	ck_rc(eos_fs_open(v, &c, tv_lookup(v, "a.txt"), O_RDWR, &h), -EROFS);
	ck_rc(eos_fs_open(v, &c, tv_lookup(v, "a.txt"), O_RDONLY | O_TRUNC, &h), -EROFS);
	ck_assert_ptr_null(h);
	ck_rc(eos_view_delta(v, capture_one, NULL, &err), -EINVAL);
	ck_rc(lookup_rc(v, "", "new"), -ENOENT);
	ck_assert_uint_eq(tv_lookup(v, "a.txt")->mode, S_IFREG | 0644);
	eos_view_close(v);
	/* an explicit version works the same */
	v = view_open_ro(1);
	ck_content(v, "dir/x.txt", "dir x");
	eos_view_close(v);
	check_store_untouched();
}
END_TEST

/* --- partial copy-up ---------------------------------------------------------------------------
 */

static void
big_check(struct eos_view *v, const char *model, size_t size)
{
	struct eos_ctx c = tv_ctx_of(PID_SESSION);
	cleanup_free char *buf = malloc(size + 1);
	struct eos_handle *h = NULL;
	struct stat st;
	size_t done = 0;

	ck_rc(eos_fs_getattr(v, tv_lookup(v, "big.bin"), &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, size);
	ck_rc(eos_fs_open(v, &c, tv_lookup(v, "big.bin"), O_RDONLY, &h), 0);
	while (done < size) { /* odd-sized reads cross present and lower ranges */
		ssize_t got = eos_fs_read(v, h, buf + done, EOS_MIN(size - done, 77777), done);

		ck_assert_int_gt(got, 0);
		done += (size_t)got;
	}
	ck_assert_int_eq(eos_fs_read(v, h, buf, 10, size), 0);
	ck_assert_msg(memcmp(buf, model, size) == 0, "big.bin differs from the model");
	ck_rc(eos_fs_release(v, h), 0);
}

static void
big_write(struct eos_view *v, char *model, size_t *size, uint64_t off, size_t len)
{
	struct eos_ctx c = tv_ctx_of(PID_OP);
	struct eos_handle *h = NULL;
	char chunk[4096];

	memset(chunk, (int)(off % 251) + 1, sizeof(chunk));
	ck_rc(eos_fs_open(v, &c, tv_lookup(v, "big.bin"), O_WRONLY, &h), 0);
	for (size_t done = 0; done < len; done += EOS_MIN(len - done, sizeof(chunk)))
		ck_rc(eos_fs_write(v, h, chunk, EOS_MIN(len - done, sizeof(chunk)), off + done),
		      (long)EOS_MIN(len - done, sizeof(chunk)));
	if (off > *size)
		memset(model + *size, 0, off - *size);
	for (size_t i = 0; i < len; i++)
		model[off + i] = chunk[0];
	*size = EOS_MAX(*size, off + len);
	ck_rc(eos_fs_release(v, h), 0);
}

static void
big_truncate(struct eos_view *v, char *model, size_t *size, size_t to)
{
	struct stat want = { .st_size = (off_t)to }, got;

	ck_rc(eos_fs_setattr(v, tv_lookup(v, "big.bin"), &want, EOS_SET_SIZE, &got), 0);
	if (to > *size)
		memset(model + *size, 0, to - *size);
	*size = to;
}

/* Writes to a large lower file copy only what they cover; reads merge; a reopen keeps it; the
 * delta walk hands over a complete data file. */
START_TEST(test_partial_copyup)
{
	size_t cap = 2 * BIG_SIZE, size = BIG_SIZE;
	cleanup_free char *model = malloc(cap);
	struct eos_view *v = view_open("s1", true);
	struct stat st;
	char path[4096];

	memcpy(model, big, BIG_SIZE);
	big_write(v, model, &size, BIG_SIZE, 1); /* an append */
	big_write(v, model, &size, 100000, 9000);
	big_write(v, model, &size, 2000000, 5);
	big_check(v, model, size);
	big_truncate(v, model, &size, 1500000); /* below the lower size: the tail is gone */
	big_truncate(v, model, &size, 2500000); /* and grows back as zeros */
	big_write(v, model, &size, 2400000, 100);
	big_check(v, model, size);
	eos_view_close(v);

	v = view_open("s1", false);
	big_check(v, model, size);
	struct delta *d = capture(v);
	const struct entry_copy *b = entry(d, "big.bin");
	ck_assert_ptr_nonnull(b->data_path);
	snprintf(path, sizeof(path), "%s", b->data_path);
	delta_free(d);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, size);
	cleanup_free char *flat = malloc(size);
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, flat, size, 0), (ssize_t)size);
	close(fd);
	ck_assert_msg(memcmp(flat, model, size) == 0, "the flattened data file differs");
	big_check(v, model, size);
	eos_view_close(v);
}
END_TEST

#if EOS_FAILPOINTS_COMPILED
/*
 * A lower file's first chmod writes its copy-up and the new mode in one batch (one journaled
 * image): when that batch cannot be written, the file stays lower with its old mode and times, and
 * nothing reaches the delta; once the store takes writes again, the chmod goes through and survives
 * a reopen.
 */
START_TEST(test_failed_copyup_setattr_changes_nothing)
{
	struct eos_view *v = view_open("s1", true);
	struct stat attr = { .st_mode = 0600 }, out;
	struct eos_node *c;
	struct delta *d;
	unsigned hits;
	int64_t mtime;

	/* the root is copied up by a first chmod, so that c.txt's copy-up is one batch */
	ck_rc(eos_fs_setattr(v, tv_lookup(v, "a.txt"), &attr, EOS_SET_MODE, &out), 0);
	c = tv_lookup(v, "c.txt");
	mtime = c->mtime;
	hits = eos_failpoint_hits("journal.append");
	ck_assert_int_eq(eos_failpoint_arm("journal.append", -ENOSPC), 0);
	ck_rc(eos_fs_setattr(v, c, &attr, EOS_SET_MODE, &out), -ENOSPC);
	ck_assert_uint_eq(eos_failpoint_hits("journal.append"), hits + 1); /* one batch */
	ck_assert_int_eq(eos_failpoint_arm("journal.append", 0), 0);
	ck_assert_uint_eq(c->mode, S_IFREG | 0644);
	ck_assert_int_eq(c->mtime, mtime);
	ck_assert(!(c->flags & (EOS_NODE_UPPER | EOS_NODE_DIRTY | EOS_NODE_META_CHANGED)));
	d = capture(v);
	ck_assert_uint_eq(d->n, 1);
	ck_assert_str_eq(d->v[0].path, "a.txt");
	delta_free(d);

	hits = eos_failpoint_hits("journal.append");
	ck_rc(eos_fs_setattr(v, c, &attr, EOS_SET_MODE, &out), 0);
	ck_assert_uint_eq(eos_failpoint_hits("journal.append"), hits + 1);
	ck_assert_uint_eq(out.st_mode, S_IFREG | 0600);
	ck_assert(c->flags & EOS_NODE_UPPER);
	v = reopen_same(v);
	ck_assert_uint_eq(tv_lookup(v, "c.txt")->mode, S_IFREG | 0600);
	ck_content(v, "c.txt", "ccc");
	eos_view_close(v);
	check_store_untouched();
}
END_TEST

/* A change of an upper file's mode whose journal record cannot be written changes nothing. */
START_TEST(test_failed_journal_attr_changes_nothing)
{
	struct eos_view *v = view_open("s1", true);
	struct stat attr = { .st_mode = 0600 }, out;
	struct eos_node *n = tv_make(v, "", "new.txt", S_IFREG | 0644, NULL);
	unsigned flags = n->flags;
	int64_t mtime = n->mtime, ctime = eos_node_ctime(n);

	ck_assert_int_eq(eos_failpoint_arm("journal.append", -ENOSPC), 0);
	ck_rc(eos_fs_setattr(v, n, &attr, EOS_SET_MODE, &out), -ENOSPC);
	ck_assert_int_eq(eos_failpoint_arm("journal.append", 0), 0);
	ck_assert_uint_eq(n->mode, S_IFREG | 0644);
	ck_assert_uint_eq(n->flags, flags);
	ck_assert_int_eq(n->mtime, mtime);
	ck_assert_int_eq(eos_node_ctime(n), ctime);
	v = reopen_same(v);
	n = tv_lookup(v, "new.txt");
	ck_assert_uint_eq(n->mode, S_IFREG | 0644);
	ck_rc(eos_fs_setattr(v, n, &attr, EOS_SET_MODE, &out), 0);
	ck_assert_uint_eq(out.st_mode, S_IFREG | 0600);
	v = reopen_same(v);
	ck_assert_uint_eq(tv_lookup(v, "new.txt")->mode, S_IFREG | 0600);
	/* a truncation (the kernel sends the size alone) is journaled too */
	tv_write_at(v, "new.txt", PID_OP, 0, "kept bytes");
	n = tv_lookup(v, "new.txt");
	mtime = n->mtime;
	attr.st_size = 2;
	ck_assert_int_eq(eos_failpoint_arm("journal.append", -ENOSPC), 0);
	ck_rc(eos_fs_setattr(v, n, &attr, EOS_SET_SIZE, &out), -ENOSPC);
	ck_assert_int_eq(eos_failpoint_arm("journal.append", 0), 0);
	ck_assert_uint_eq(n->size, 10);
	ck_assert_int_eq(n->mtime, mtime);
	ck_content(v, "new.txt", "kept bytes");
	v = reopen_same(v);
	ck_content(v, "new.txt", "kept bytes");
	eos_view_close(v);
}
END_TEST
#endif

START_TEST(test_open_missing)
{
	struct eos_view_options o = { .store = fx.st, .sandbox = SBX, .session = "nosuch" };
	struct eos_session_info info;
	struct eos_error err = { 0 };
	struct eos_view *v = NULL;
	int r = eos_view_open(&o, &v, &err);

	/* a missing session without create */
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_ptr_null(v);
	ck_assert_msg(strstr(err.msg, "'nosuch'"), "message '%s' does not name the session",
		      err.msg);
	eos_error_clear(&err);
	ck_rc(eos_store_session_get(fx.st, SBX, "nosuch", &info, &err), -ENOENT);

	/* a missing version */
	o = (struct eos_view_options){ .store = fx.st, .sandbox = SBX, .version = 99 };
	eos_error_clear(&err);
	r = eos_view_open(&o, &v, &err);
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_ptr_null(v);
	ck_assert_msg(err.msg[0], "no message for a missing version");

	/* a missing sandbox, with and without a session */
	o = (struct eos_view_options){
		.store = fx.st, .sandbox = "nosbx", .session = "s1", .create = true
	};
	eos_error_clear(&err);
	r = eos_view_open(&o, &v, &err);
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_msg(strstr(err.msg, "'nosbx'"), "message '%s' does not name the sandbox",
		      err.msg);
	o.session = NULL;
	eos_error_clear(&err);
	r = eos_view_open(&o, &v, &err);
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_ptr_null(v);
}
END_TEST

static Suite *
view_suite(void)
{
	Suite *s = suite_create("view");
	TCase *tc = tcase_create("view");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_delta_persist_reopen);
	tcase_add_test(tc, test_many_ranges_persist);
	tcase_add_test(tc, test_writelog_follows_node);
	tcase_add_test(tc, test_replace_and_opaque);
	tcase_add_test(tc, test_exchange);
	tcase_add_test(tc, test_rename_dir_reuse_name);
	tcase_add_test(tc, test_orphans_discarded);
	tcase_add_test(tc, test_churn_leaves_nothing);
	tcase_add_test(tc, test_check_finds_lost_data);
	tcase_add_test(tc, test_new_session_empty_delta);
	tcase_add_test(tc, test_sessions_isolated);
	tcase_add_test(tc, test_read_only_refuses_changes);
	tcase_add_test(tc, test_open_missing);
	tcase_add_test(tc, test_partial_copyup);
#if EOS_FAILPOINTS_COMPILED
	tcase_add_test(tc, test_failed_copyup_setattr_changes_nothing);
	tcase_add_test(tc, test_failed_journal_attr_changes_nothing);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(view_suite());
}
