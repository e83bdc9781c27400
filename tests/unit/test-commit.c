/* SPDX-License-Identifier: MIT */
/* Change sets and commits against a real store: visibility of every path at every version. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"

#include "store/content.h"
#include "store/entry.h"
#include "store/kv.h"
#include "store/refs.h"
#include "store/store-internal.h"
#include "store/store.h"
#include "tests/unit/testutil.h"

enum {
	BIG_LEN = 300 * 1024,
	NVERSIONS = 10,
	THREADS = 4,
	FILES_PER_THREAD = 50,
};

static struct eos_store *st;
static char *dir;

static void
setup(void)
{
	st = eos_test_store_new(&dir);
}

static void
teardown(void)
{
	eos_store_close(st);
	eos_test_rm_rf(dir);
	free(dir);
}

#define ck_ok(r, err) \
	ck_assert_msg((r) >= 0, "line %d: %s", __LINE__, eos_error_message(&(err), (r)))

/* --- staging helpers -------------------------------------------------------------------------- */

static struct eos_changeset *
cs_create(const char *id)
{
	struct eos_attr root = eos_test_attr(0755);
	struct eos_error err = { 0 };
	struct eos_changeset *cs = NULL;
	int r = eos_changeset_new_sandbox(st, id, "test:commit", &root, &cs, &err);

	ck_ok(r, err);
	return cs;
}

static struct eos_changeset *
cs_open(const char *sandbox)
{
	struct eos_error err = { 0 };
	struct eos_changeset *cs = NULL;
	int r = eos_changeset_new(st, sandbox, &cs, &err);

	ck_ok(r, err);
	return cs;
}

static void
put_mode(struct eos_changeset *cs, const char *path, const void *data, size_t len, unsigned mode)
{
	struct eos_attr a = eos_test_attr(mode);
	struct eos_error err = { 0 };
	int r = eos_changeset_put_file_mem(cs, path, &a, data, len, &err);

	ck_ok(r, err);
}

static void
put(struct eos_changeset *cs, const char *path, const char *text)
{
	put_mode(cs, path, text, strlen(text), 0644);
}

/* 300 KiB of pseudo-random bytes; variant 2 has 7 bytes inserted at the front. */
static uint8_t *
big_data(int variant, size_t *ret_len)
{
	uint8_t *p = malloc(BIG_LEN + 7);
	size_t off = variant == 2 ? 7 : 0;

	ck_assert_ptr_nonnull(p);
	memcpy(p, "INSERT!", off);
	eos_test_fill_random(p + off, BIG_LEN, 1);
	*ret_len = BIG_LEN + off;
	return p;
}

static void
put_big(struct eos_changeset *cs, const char *path, int variant)
{
	size_t len;
	cleanup_free uint8_t *p = big_data(variant, &len);

	put_mode(cs, path, p, len, 0644);
}

static void
mkdir_mode(struct eos_changeset *cs, const char *path, unsigned mode, bool opaque)
{
	struct eos_attr a = eos_test_attr(mode);
	struct eos_error err = { 0 };
	int r = eos_changeset_mkdir(cs, path, &a, opaque, &err);

	ck_ok(r, err);
}

static void
mk(struct eos_changeset *cs, const char *path)
{
	mkdir_mode(cs, path, 0755, false);
}

static void
sym(struct eos_changeset *cs, const char *path, const char *target)
{
	struct eos_attr a = eos_test_attr(0777);
	struct eos_error err = { 0 };
	int r = eos_changeset_symlink(cs, path, &a, target, &err);

	ck_ok(r, err);
}

static void
rm(struct eos_changeset *cs, const char *path)
{
	struct eos_error err = { 0 };
	int r = eos_changeset_remove(cs, path, &err);

	ck_ok(r, err);
}

static void
ln(struct eos_changeset *cs, const char *path, const char *target)
{
	struct eos_error err = { 0 };
	int r = eos_changeset_link(cs, path, target, &err);

	ck_ok(r, err);
}

static void
chmod_(struct eos_changeset *cs, const char *path, unsigned mode)
{
	struct eos_attr a = eos_test_attr(mode);
	struct eos_error err = { 0 };
	int r = eos_changeset_set_attr(cs, path, &a, &err);

	ck_ok(r, err);
}

/* Commit and free cs; returns the result. */
static struct eos_commit_result
commit_ok(struct eos_changeset *cs)
{
	struct eos_commit_result res = { 0 };
	struct eos_error err = { 0 };
	int r = eos_changeset_commit(cs, 0, &res, &err);

	eos_changeset_free(cs);
	ck_ok(r, err);
	return res;
}

/* Commit, free cs and return the error code; *err receives the message. */
static int
commit_fail(struct eos_changeset *cs, uint64_t expected, struct eos_error *err)
{
	struct eos_commit_result res = { 0 };
	int r = eos_changeset_commit(cs, expected, &res, err);

	eos_changeset_free(cs);
	ck_assert_msg(r < 0, "commit unexpectedly succeeded (version %llu)",
		      (unsigned long long)res.version);
	return r;
}

/* --- reading helpers -------------------------------------------------------------------------- */

static uint8_t *
read_file(const char *sandbox, uint64_t v, const char *path, size_t *ret_len)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	struct eos_error err = { 0 };
	uint8_t *buf;
	size_t size;
	ssize_t n;
	int r = eos_store_file_open(st, sandbox, v, path, &f, &err);

	ck_ok(r, err);
	size = eos_file_size(f);
	buf = malloc(size + 1);
	ck_assert_ptr_nonnull(buf);
	n = eos_file_pread(f, buf, size, 0, &err);
	ck_assert_msg(n == (ssize_t)size, "read '%s' at %llu: %zd of %zu bytes: %s", path,
		      (unsigned long long)v, n, size, eos_error_message(&err, (int)n));
	*ret_len = size;
	return buf;
}

static void
check_content(const char *sandbox, uint64_t v, const char *path, const void *want, size_t len)
{
	size_t n;
	cleanup_free uint8_t *got = read_file(sandbox, v, path, &n);

	ck_assert_msg(n == len && memcmp(got, want, len) == 0,
		      "content of '%s' at %llu differs (%zu vs %zu bytes)", path,
		      (unsigned long long)v, n, len);
}

static struct eos_stat
stat_ok(const char *sandbox, uint64_t v, const char *path)
{
	struct eos_error err = { 0 };
	struct eos_stat s;
	int r = eos_store_stat(st, sandbox, v, path, &s, &err);

	ck_assert_msg(r == 0, "stat '%s' at %llu: %s", path, (unsigned long long)v,
		      eos_error_message(&err, r));
	return s;
}

struct names {
	char *v[64];
	size_t n;
};

static int
collect_name(void *ctx, const char *name, const struct eos_stat *s)
{
	struct names *ns = ctx;

	(void)s;
	ck_assert_uint_lt(ns->n, EOS_ARRAY_SIZE(ns->v));
	ns->v[ns->n++] = strdup(name);
	return 0;
}

static void
names_release(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	ns->n = 0;
}

static uint64_t
layer_count(const char *sandbox)
{
	cleanup_free struct eos_layer_info *ls = NULL;
	struct eos_error err = { 0 };
	size_t n = 0;
	int r = eos_store_layer_list(st, sandbox, &ls, &n, &err);

	ck_ok(r, err);
	return n;
}

/* --- the scripted history --------------------------------------------------------------------- */

/*
 * Cells: "-" absent, "d" directory, "f:<text>" file, "b:<variant>" the big file, "l:<target>"
 * symlink. Every path the history ever creates has a row, so listings must match exactly.
 */
struct row {
	const char *path;
	const char *cell[NVERSIONS];
};

static const struct row history[] = {
	{ "", { "d", "d", "d", "d", "d", "d", "d", "d", "d", "d" } },
	{ "d", { "d", "d", "-", "d", "d", "d", "d", "d", "d", "d" } },
	{ "d/a", { "f:a1", "f:a2", "-", "-", "-", "-", "f:a7", "f:a7", "f:a7", "f:a7" } },
	{ "d/b", { "f:b1", "-", "-", "-", "-", "-", "-", "-", "f:b9", "f:b9" } },
	{ "d/c", { "-", "f:c2", "-", "-", "-", "-", "-", "-", "-", "-" } },
	{ "d/sub", { "d", "d", "-", "-", "-", "-", "-", "-", "-", "-" } },
	{ "d/sub/x", { "f:x1", "f:x1", "-", "-", "-", "-", "-", "-", "-", "-" } },
	{ "d/new", { "-", "-", "-", "f:n4", "f:n4", "f:n4", "-", "-", "-", "-" } },
	{ "d/after", { "-", "-", "-", "-", "-", "-", "f:af7", "f:af7", "f:af7", "f:af7" } },
	{ "d/sub2", { "-", "-", "-", "-", "-", "-", "-", "-", "-", "d" } },
	{ "d/sub2/y", { "-", "-", "-", "-", "-", "-", "-", "-", "-", "f:y10" } },
	{ "f", { "f:f1", "f:f1", "f:f3", "f:f3", "f:f3", "f:f3", "f:f3", "f:f3", "f:f3", "f:f3" } },
	{ "s", { "l:f", "l:f", "l:f", "l:f", "l:f", "l:f", "l:f", "l:top", "l:top", "l:top" } },
	{ "r", { "d", "d", "d", "d", "f:r5", "d", "d", "d", "d", "d" } },
	{ "r/old", { "f:old1", "f:old1", "f:old1", "f:old1", "-", "-", "-", "-", "-", "-" } },
	{ "r/old2", { "-", "f:o2", "f:o2", "f:o2", "-", "-", "-", "-", "-", "-" } },
	{ "r/fresh", { "-", "-", "-", "-", "-", "f:fr6", "f:fr6", "f:fr6", "f:fr6", "f:fr6" } },
	{ "big", { "b:1", "b:1", "b:1", "b:1", "b:1", "b:1", "b:1", "b:1", "b:1", "b:2" } },
	{ "top",
	  { "f:top1", "f:top1", "f:top1", "f:top1", "f:top1", "f:top1", "f:top1", "f:top1",
	    "f:top1", "f:top1" } },
	{ "hl", { "-", "-", "-", "-", "-", "-", "-", "f:f3", "-", "-" } },
	{ "hl2", { "-", "-", "-", "-", "-", "-", "-", "-", "-", "f:b9" } },
};

static const char *const history_id = "hist";

static void
build_history_1_5(void)
{
	struct eos_changeset *cs = cs_create(history_id);

	/* V1: the base. */
	mk(cs, "d");
	put(cs, "d/a", "a1");
	put(cs, "d/b", "b1");
	mk(cs, "d/sub");
	put(cs, "d/sub/x", "x1");
	put(cs, "f", "f1");
	sym(cs, "s", "f");
	mk(cs, "r");
	put(cs, "r/old", "old1");
	put_big(cs, "big", 1);
	put(cs, "top", "top1");
	ck_assert_uint_eq(commit_ok(cs).version, 1);
	/* V2: modify, create, delete. */
	cs = cs_open(history_id);
	put(cs, "d/a", "a2");
	put(cs, "d/c", "c2");
	rm(cs, "d/b");
	put(cs, "r/old2", "o2");
	ck_assert_uint_eq(commit_ok(cs).version, 2);
	/* V3: delete a directory with children, modify, attribute-only change. */
	cs = cs_open(history_id);
	rm(cs, "d");
	put(cs, "f", "f3");
	chmod_(cs, "top", 0600);
	ck_assert_uint_eq(commit_ok(cs).version, 3);
	/* V4: re-create the directory: its old children stay hidden. */
	cs = cs_open(history_id);
	mk(cs, "d");
	put(cs, "d/new", "n4");
	ck_assert_uint_eq(commit_ok(cs).version, 4);
	/* V5: replace a directory by a file. */
	cs = cs_open(history_id);
	put(cs, "r", "r5");
	ck_assert_uint_eq(commit_ok(cs).version, 5);
}

static void
build_history_6_10(void)
{
	struct eos_changeset *cs = cs_open(history_id);

	/* V6: and back to a directory. */
	mk(cs, "r");
	put(cs, "r/fresh", "fr6");
	ck_assert_uint_eq(commit_ok(cs).version, 6);
	/* V7: opaque mkdir over an existing directory: new floor, old children hidden. */
	cs = cs_open(history_id);
	mkdir_mode(cs, "d", 0755, true);
	put(cs, "d/after", "af7");
	put(cs, "d/a", "a7");
	ck_assert_uint_eq(commit_ok(cs).version, 7);
	/* V8: symlink retarget, hard link to an unstaged file. */
	cs = cs_open(history_id);
	sym(cs, "s", "top");
	ln(cs, "hl", "f");
	ck_assert_uint_eq(commit_ok(cs).version, 8);
	/* V9: re-create a deleted name, remove a link, attribute-only change of a directory. */
	cs = cs_open(history_id);
	put(cs, "d/b", "b9");
	rm(cs, "hl");
	chmod_(cs, "d", 0700);
	ck_assert_uint_eq(commit_ok(cs).version, 9);
	/* V10: new directory, hard link to an unstaged file, big file with an insertion. */
	cs = cs_open(history_id);
	mk(cs, "d/sub2");
	put(cs, "d/sub2/y", "y10");
	ln(cs, "hl2", "d/b");
	put_big(cs, "big", 2);
	ck_assert_uint_eq(commit_ok(cs).version, 10);
}

static void
check_absent_in(const char *sandbox, uint64_t v, const char *path)
{
	struct eos_error err = { 0 };
	struct eos_stat s;
	int r = eos_store_stat(st, sandbox, v, path, &s, &err);

	ck_assert_msg(r == -ENOENT || r == -ENOTDIR, "'%s' at %llu: expected absent, got %d (%s)",
		      path, (unsigned long long)v, r, r < 0 ? eos_error_message(&err, r) : "found");
}

static void
check_symlink(uint64_t v, const char *path, const char *target)
{
	struct eos_error err = { 0 };
	cleanup_free char *got = NULL;
	int r = eos_store_readlink(st, history_id, v, path, &got, &err);

	ck_ok(r, err);
	ck_assert_str_eq(got, target);
}

static void
check_cell(uint64_t v, const char *path, const char *cell)
{
	struct eos_stat s;
	size_t len;

	if (strcmp(cell, "-") == 0) {
		check_absent_in(history_id, v, path);
		return;
	}
	s = stat_ok(history_id, v, path);
	switch (cell[0]) {
	case 'd':
		ck_assert_msg(s.kind == EOS_KIND_DIR, "'%s' at %llu is no directory", path,
			      (unsigned long long)v);
		break;
	case 'f':
		ck_assert_msg(s.kind == EOS_KIND_FILE, "'%s' at %llu is no file", path,
			      (unsigned long long)v);
		ck_assert_uint_eq(s.size, strlen(cell + 2));
		check_content(history_id, v, path, cell + 2, strlen(cell + 2));
		break;
	case 'b': {
		cleanup_free uint8_t *p = big_data(cell[2] - '0', &len);

		ck_assert_int_eq(s.kind, EOS_KIND_FILE);
		check_content(history_id, v, path, p, len);
		break;
	}
	case 'l':
		ck_assert_int_eq(s.kind, EOS_KIND_SYMLINK);
		ck_assert_uint_eq(s.size, strlen(cell + 2));
		check_symlink(v, path, cell + 2);
		break;
	default:
		ck_abort_msg("bad cell '%s'", cell);
	}
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The listing of directory path at v must be exactly its rows present at v, in byte order. */
static void
check_listing(uint64_t v, const char *path)
{
	struct names got = { 0 };
	const char *want[64];
	struct eos_error err = { 0 };
	size_t n = 0, plen = strlen(path);
	int r;

	for (size_t i = 0; i < EOS_ARRAY_SIZE(history); i++) {
		const char *p = history[i].path, *slash;

		if (strcmp(history[i].cell[v - 1], "-") == 0 || !p[0])
			continue;
		if (plen && (strncmp(p, path, plen) != 0 || p[plen] != '/'))
			continue;
		p += plen ? plen + 1 : 0;
		slash = strchr(p, '/');
		if (!slash)
			want[n++] = p;
	}
	qsort(want, n, sizeof(want[0]), name_cmp);
	r = eos_store_readdir(st, history_id, v, path, NULL, collect_name, &got, &err);
	ck_ok(r, err);
	ck_assert_msg(got.n == n, "listing of '%s' at %llu: %zu names, expected %zu", path,
		      (unsigned long long)v, got.n, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(got.v[i], want[i]);
	names_release(&got);
}

START_TEST(test_visibility_every_path_every_version)
{
	build_history_1_5();
	build_history_6_10();
	for (uint64_t v = 1; v <= NVERSIONS; v++)
		for (size_t i = 0; i < EOS_ARRAY_SIZE(history); i++) {
			const char *cell = history[i].cell[v - 1];

			check_cell(v, history[i].path, cell);
			if (strcmp(cell, "d") == 0)
				check_listing(v, history[i].path);
		}
	/* v = 0 is the head. */
	for (size_t i = 0; i < EOS_ARRAY_SIZE(history); i++)
		check_cell(0, history[i].path, history[i].cell[NVERSIONS - 1]);
	ck_assert_uint_eq(layer_count(history_id), NVERSIONS);
}
END_TEST

START_TEST(test_history_attributes_floors_links)
{
	struct eos_stat f7, f8, hl8, b10, hl10;

	build_history_1_5();
	build_history_6_10();
	ck_assert_uint_eq(stat_ok(history_id, 2, "top").attr.mode, 0644);
	ck_assert_uint_eq(stat_ok(history_id, 3, "top").attr.mode, 0600);
	ck_assert_uint_eq(stat_ok(history_id, 3, "top").version, 3);
	ck_assert_uint_eq(stat_ok(history_id, 8, "d").attr.mode, 0755);
	ck_assert_uint_eq(stat_ok(history_id, 9, "d").attr.mode, 0700);
	/* Floors: re-created at 4, opaque at 7, kept by the attribute change at 9. */
	ck_assert_uint_eq(stat_ok(history_id, 4, "d").floor, 4);
	ck_assert_uint_eq(stat_ok(history_id, 7, "d").floor, 7);
	ck_assert_uint_eq(stat_ok(history_id, 9, "d").floor, 7);
	ck_assert_uint_eq(stat_ok(history_id, 6, "r").floor, 6);
	ck_assert_uint_eq(stat_ok(history_id, 10, "d/sub2").floor, 10);
	/* Hard links: the target gets a group at 8 and is rewritten there. */
	f7 = stat_ok(history_id, 7, "f");
	f8 = stat_ok(history_id, 8, "f");
	hl8 = stat_ok(history_id, 8, "hl");
	ck_assert_uint_eq(f7.link_group, 0);
	ck_assert_uint_ne(f8.link_group, 0);
	ck_assert_uint_eq(f8.version, 8);
	ck_assert_uint_eq(hl8.link_group, f8.link_group);
	ck_assert(eos_digest_eq(&hl8.content.digest, &f8.content.digest));
	ck_assert_uint_eq(stat_ok(history_id, 10, "f").link_group, f8.link_group);
	b10 = stat_ok(history_id, 10, "d/b");
	hl10 = stat_ok(history_id, 10, "hl2");
	ck_assert_uint_ne(b10.link_group, 0);
	ck_assert_uint_ne(b10.link_group, f8.link_group);
	ck_assert_uint_eq(hl10.link_group, b10.link_group);
}
END_TEST

START_TEST(test_history_layer_records)
{
	cleanup_free struct eos_layer_info *ls = NULL;
	struct eos_error err = { 0 };
	size_t n = 0;
	int r;

	build_history_1_5();
	build_history_6_10();
	r = eos_store_layer_list(st, history_id, &ls, &n, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(n, NVERSIONS);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(ls[i].version, i + 1);
		ck_assert_uint_eq(ls[i].parent, i);
	}
	ck_assert_str_eq(ls[0].owner, "import");
	ck_assert_str_eq(ls[1].owner, "unknown");
	ck_assert_uint_eq(ls[0].created, 11);
	ck_assert_uint_eq(ls[0].bytes, 2 + 2 + 2 + 2 + 4 + BIG_LEN + 4);
	/* V2: d/c and r/old2 created, d/a modified, d/b deleted. */
	ck_assert_uint_eq(ls[1].created, 2);
	ck_assert_uint_eq(ls[1].modified, 1);
	ck_assert_uint_eq(ls[1].deleted, 1);
	ck_assert_uint_eq(ls[1].bytes, 6);
	/* V3: d deleted, f and top modified. */
	ck_assert_uint_eq(ls[2].deleted, 1);
	ck_assert_uint_eq(ls[2].modified, 2);
	ck_assert_uint_eq(ls[2].created, 0);
	/* V5: r turned into a file: a modification. */
	ck_assert_uint_eq(ls[4].modified, 1);
	/* V8: s retargeted, hl created (the target's rewrite is no change of its own). */
	ck_assert_uint_eq(ls[7].modified, 1);
	ck_assert_uint_eq(ls[7].created, 1);
}
END_TEST

/* --- basics ----------------------------------------------------------------------------------- */

static void
check_basic_listing(void)
{
	static const char *const want[] = { "a.txt", "big.bin", "d", "empty", "hl", "s" };
	struct names ns = { 0 };
	struct eos_error err = { 0 };
	int r = eos_store_readdir(st, "basic", 1, "", NULL, collect_name, &ns, &err);

	ck_ok(r, err);
	ck_assert_uint_eq(ns.n, EOS_ARRAY_SIZE(want));
	for (size_t i = 0; i < ns.n; i++)
		ck_assert_str_eq(ns.v[i], want[i]);
	names_release(&ns);
}

START_TEST(test_new_sandbox_read_back)
{
	struct eos_changeset *cs = cs_create("basic");
	struct eos_commit_result res;
	struct eos_stat s, big, hl;
	size_t len;
	cleanup_free uint8_t *p = big_data(1, &len);

	ck_assert_str_eq(eos_changeset_sandbox(cs), "basic");
	put(cs, "a.txt", "hello");
	put_mode(cs, "empty", "", 0, 0600);
	put_big(cs, "big.bin", 1);
	mk(cs, "d");
	mk(cs, "d/e");
	put(cs, "d/e/f.txt", "deep");
	sym(cs, "s", "a.txt");
	ln(cs, "hl", "big.bin");
	res = commit_ok(cs);
	ck_assert_uint_eq(res.version, 1);
	ck_assert_uint_eq(res.created, 8);
	ck_assert_uint_eq(res.modified + res.deleted, 0);
	ck_assert_uint_eq(res.bytes, 5 + 0 + BIG_LEN + 4);
	s = stat_ok("basic", 0, "");
	ck_assert_int_eq(s.kind, EOS_KIND_DIR);
	ck_assert_uint_eq(s.attr.mode, 0755);
	s = stat_ok("basic", 1, "empty");
	ck_assert_uint_eq(s.size, 0);
	ck_assert_uint_eq(s.attr.mode, 0600);
	check_content("basic", 1, "a.txt", "hello", 5);
	check_content("basic", 1, "d/e/f.txt", "deep", 4);
	check_content("basic", 1, "big.bin", p, len);
	check_content("basic", 1, "hl", p, len);
	big = stat_ok("basic", 1, "big.bin");
	hl = stat_ok("basic", 1, "hl");
	ck_assert_uint_ne(big.link_group, 0);
	ck_assert_uint_eq(big.link_group, hl.link_group);
	ck_assert_uint_eq(stat_ok("basic", 1, "s").size, 5);
	check_basic_listing();
}
END_TEST

START_TEST(test_generated_id)
{
	struct eos_changeset *cs = cs_create(NULL);
	const char *id = eos_changeset_sandbox(cs);
	char copy[EOS_SANDBOX_ID_MAX + 1];
	struct eos_sandbox_info info;
	struct eos_error err = { 0 };
	int r;

	ck_assert_uint_eq(strlen(id), 16);
	ck_assert(strncmp(id, "eos-", 4) == 0);
	ck_assert_uint_eq(strspn(id + 4, "0123456789abcdef"), 12);
	memcpy(copy, id, strlen(id) + 1);
	ck_assert_uint_eq(commit_ok(cs).version, 1);
	r = eos_store_sandbox_get(st, copy, &info, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(info.head, 1);
	ck_assert_str_eq(info.source, "test:commit");
}
END_TEST

START_TEST(test_xattrs_and_set_attr)
{
	struct eos_changeset *cs = cs_create("xa");
	struct eos_error err = { 0 };
	struct eos_stat s;
	int r;

	put(cs, "f", "x");
	r = eos_changeset_set_xattr(cs, "f", "user.a", "1", 1, &err);
	ck_ok(r, err);
	r = eos_changeset_set_xattr(cs, "f", "user.b", "22", 2, &err);
	ck_ok(r, err);
	r = eos_changeset_set_xattr(cs, "f", "user.a", NULL, 0, &err);
	ck_ok(r, err);
	r = eos_changeset_set_xattr(cs, "nope", "user.a", "1", 1, &err);
	ck_assert_int_eq(r, -ENOENT);
	commit_ok(cs);
	ck_assert_uint_eq(stat_ok("xa", 1, "f").nxattrs, 1);
	/* An attribute change keeps the xattrs and the content. */
	cs = cs_open("xa");
	chmod_(cs, "f", 0640);
	ck_assert_uint_eq(commit_ok(cs).modified, 1);
	s = stat_ok("xa", 2, "f");
	ck_assert_uint_eq(s.nxattrs, 1);
	ck_assert_uint_eq(s.attr.mode, 0640);
	check_content("xa", 2, "f", "x", 1);
	/* Replacing the file drops them. */
	cs = cs_open("xa");
	put(cs, "f", "y");
	commit_ok(cs);
	ck_assert_uint_eq(stat_ok("xa", 3, "f").nxattrs, 0);
}
END_TEST

/* --- errors ----------------------------------------------------------------------------------- */

static void
make_base(const char *id)
{
	struct eos_changeset *cs = cs_create(id);

	put(cs, "f", "file");
	mk(cs, "d");
	put(cs, "d/x", "x");
	ck_assert_uint_eq(commit_ok(cs).version, 1);
}

static void
expect_fail(struct eos_changeset *cs, int code, const char *msg)
{
	struct eos_error err = { 0 };
	int r = commit_fail(cs, 0, &err);

	ck_assert_msg(r == code, "expected %d, got %d (%s)", code, r, eos_error_message(&err, r));
	ck_assert_msg(strstr(err.msg, msg), "message '%s' lacks '%s'", err.msg, msg);
	ck_assert_uint_eq(layer_count("e"), 1);
}

START_TEST(test_errors_validation)
{
	struct eos_changeset *cs;

	make_base("e");
	cs = cs_open("e");
	put(cs, "nope/x", "1");
	expect_fail(cs, -ENOENT, "parent 'nope' of 'nope/x' does not exist");
	cs = cs_open("e");
	put(cs, "f/x", "1");
	expect_fail(cs, -ENOTDIR, "parent 'f' of 'f/x' is not a directory");
	cs = cs_open("e");
	rm(cs, "zz");
	expect_fail(cs, -ENOENT, "remove 'zz': no such path at L000001");
	cs = cs_open("e");
	chmod_(cs, "zz", 0600);
	expect_fail(cs, -ENOENT, "'zz': no such path at L000001");
	cs = cs_open("e");
	rm(cs, "d");
	put(cs, "d/y", "1");
	expect_fail(cs, -EINVAL, "'d/y' is staged below 'd'");
	cs = cs_open("e");
	put(cs, "d", "now a file");
	put(cs, "d/y", "1");
	expect_fail(cs, -EINVAL, "'d/y' is staged below 'd'");
	cs = cs_open("e");
	mkdir_mode(cs, "d", 0755, true);
	put(cs, "d/x/deeper", "1");
	expect_fail(cs, -ENOENT, "parent 'd/x' of 'd/x/deeper' does not exist");
	cs = cs_open("e");
	ln(cs, "l", "d");
	expect_fail(cs, -EPERM, "hard link to directory 'd'");
	cs = cs_open("e");
	ln(cs, "l", "missing");
	expect_fail(cs, -ENOENT, "target 'missing' does not exist");
	cs = cs_open("e");
	rm(cs, "f");
	ln(cs, "l", "f");
	expect_fail(cs, -ENOENT, "target 'f' does not exist");
}
END_TEST

START_TEST(test_errors_staging)
{
	struct eos_changeset *cs;
	struct eos_attr a = eos_test_attr(0644);
	struct eos_error err = { 0 };
	int r;

	make_base("e");
	cs = cs_open("e");
	put(cs, "g", "1");
	r = eos_changeset_put_file_mem(cs, "g", &a, "2", 1, &err);
	ck_assert_int_eq(r, -EEXIST);
	ck_assert_str_eq(err.msg, "'g' is staged twice");
	r = eos_changeset_mkdir(cs, "g", &a, false, &err);
	ck_assert_int_eq(r, -EEXIST);
	r = eos_changeset_put_file_mem(cs, "../x", &a, "2", 1, &err);
	ck_assert_int_eq(r, -EINVAL);
	r = eos_changeset_put_file_mem(cs, "/abs", &a, "2", 1, &err);
	ck_assert_int_eq(r, -EINVAL);
	r = eos_changeset_remove(cs, "", &err);
	ck_assert_int_eq(r, -EINVAL);
	a.mode = 0100644;
	r = eos_changeset_put_file_mem(cs, "h", &a, "2", 1, &err);
	ck_assert_int_eq(r, -EINVAL);
	r = eos_changeset_symlink(cs, "s", &a, "", &err);
	ck_assert_int_eq(r, -EINVAL);
	r = eos_changeset_new(st, "does-not-exist", &cs, &err);
	ck_assert_int_eq(r, -ENOENT);
	commit_ok(cs);
}
END_TEST

START_TEST(test_errors_stale_and_committed)
{
	struct eos_changeset *cs1, *cs2;
	struct eos_commit_result res;
	struct eos_error err = { 0 };
	int r;

	make_base("e");
	cs1 = cs_open("e");
	cs2 = cs_open("e");
	put(cs1, "one", "1");
	put(cs2, "two", "2");
	r = eos_changeset_commit(cs1, 1, &res, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(res.version, 2);
	/* Committed twice, or staged after the commit. */
	r = eos_changeset_commit(cs1, 0, &res, &err);
	ck_assert_int_eq(r, -EINVAL);
	ck_assert(strstr(err.msg, "already committed"));
	r = eos_changeset_mkdir(cs1, "late", &(struct eos_attr){ .mode = 0755 }, false, &err);
	ck_assert_int_eq(r, -EINVAL);
	eos_changeset_free(cs1);
	r = commit_fail(cs2, 1, &err);
	ck_assert_int_eq(r, -ESTALE);
	ck_assert_str_eq(err.msg, "head of sandbox 'e' is L000002, expected L000001");
	ck_assert_uint_eq(layer_count("e"), 2);
	check_absent_in("e", 0, "two");
}
END_TEST

START_TEST(test_errors_duplicate_sandbox)
{
	struct eos_attr root = eos_test_attr(0755);
	struct eos_changeset *cs1, *cs2 = NULL;
	struct eos_error err = { 0 };
	int r;

	cs1 = cs_create("dup");
	cs2 = cs_create("dup");
	put(cs1, "a", "1");
	put(cs2, "b", "2");
	commit_ok(cs1);
	r = commit_fail(cs2, 0, &err);
	ck_assert_int_eq(r, -EEXIST);
	ck_assert_str_eq(err.msg, "sandbox 'dup' exists");
	r = eos_changeset_new_sandbox(st, "dup", "x", &root, &cs2, &err);
	ck_assert_int_eq(r, -EEXIST);
	r = eos_changeset_new_sandbox(st, "bad/id", "x", &root, &cs2, &err);
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_uint_eq(layer_count("dup"), 1);
}
END_TEST

START_TEST(test_noop_changeset)
{
	struct eos_changeset *cs;
	struct eos_commit_result res;

	make_base("e");
	cs = cs_open("e");
	put(cs, "f", "file");
	mk(cs, "d");
	chmod_(cs, "d/x", 0644);
	res = commit_ok(cs);
	ck_assert_uint_eq(res.version, 0);
	ck_assert_uint_eq(res.created + res.modified + res.deleted + res.bytes, 0);
	ck_assert_uint_eq(layer_count("e"), 1);
	ck_assert_uint_eq(stat_ok("e", 0, "f").version, 1);
	/* An empty change set is a no-op too. */
	ck_assert_uint_eq(commit_ok(cs_open("e")).version, 0);
	/* One real change among no-ops writes only that one. */
	cs = cs_open("e");
	put(cs, "f", "file");
	put(cs, "d/x", "changed");
	res = commit_ok(cs);
	ck_assert_uint_eq(res.version, 2);
	ck_assert_uint_eq(res.modified, 1);
	ck_assert_uint_eq(stat_ok("e", 0, "f").version, 1);
}
END_TEST

/* --- reference counts ------------------------------------------------------------------------- */

struct ref_count {
	uint8_t key[EOS_REF_KEY_LEN];
	uint64_t n;
};

struct ref_table {
	struct ref_count v[4096];
	size_t n;
};

static void
ref_table_add(struct ref_table *t, enum eos_ref_type type, const struct eos_digest *d)
{
	uint8_t key[EOS_REF_KEY_LEN];

	eos_ref_key(key, type, d);
	for (size_t i = 0; i < t->n; i++)
		if (memcmp(t->v[i].key, key, sizeof(key)) == 0) {
			t->v[i].n++;
			return;
		}
	ck_assert_uint_lt(t->n, EOS_ARRAY_SIZE(t->v));
	memcpy(t->v[t->n].key, key, sizeof(key));
	t->v[t->n++].n = 1;
}

static void
ref_table_add_entries(struct ref_table *t)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	int r = eos_kv_iter_new(st->kv, EOS_CF_ENTRIES, NULL, NULL, 0, 0, &it);

	ck_assert_int_eq(r, 0);
	for (eos_kv_iter_seek_first(it); eos_kv_iter_valid(it); eos_kv_iter_next(it)) {
		struct eos_entry_key_parts kp;
		struct eos_entry e;
		size_t kn, vn;
		const uint8_t *k = eos_kv_iter_key(it, &kn), *v = eos_kv_iter_value(it, &vn);

		ck_assert_int_eq(eos_entry_key_decode(k, kn, &kp), 0);
		eos_entry_init(&e);
		ck_assert_int_eq(eos_entry_decode(v, vn, kp.version, &e), 0);
		if (e.st.kind == EOS_KIND_FILE && e.st.content.kind == EOS_CONTENT_CHUNK)
			ref_table_add(t, EOS_REF_CHUNK, &e.st.content.digest);
		if (e.st.kind == EOS_KIND_FILE && e.st.content.kind == EOS_CONTENT_MANIFEST)
			ref_table_add(t, EOS_REF_MANIFEST, &e.st.content.digest);
		eos_entry_release(&e);
	}
}

/* Every reference count equals what the entry records (and live manifests) imply. */
static void
check_refs_consistent(void)
{
	static struct ref_table t;
	size_t nmanifests;

	t.n = 0;
	ref_table_add_entries(&t);
	nmanifests = t.n;
	for (size_t i = 0; i < nmanifests; i++) {
		cleanup_free struct eos_manifest *m = NULL;
		struct eos_error err = { 0 };
		int r;

		if (t.v[i].key[0] != EOS_REF_MANIFEST)
			continue;
		r = eos_manifest_read(st, (const struct eos_digest *)(t.v[i].key + 1), &m, &err);
		ck_ok(r, err);
		for (uint32_t j = 0; j < m->n; j++)
			ref_table_add(&t, EOS_REF_CHUNK, &m->chunks[j].digest);
	}
	for (size_t i = 0; i < t.n; i++) {
		struct eos_error err = { 0 };
		uint64_t n = 0;
		int r = eos_refs_get(st, (enum eos_ref_type)t.v[i].key[0],
				     (const struct eos_digest *)(t.v[i].key + 1), &n, &err);

		ck_ok(r, err);
		ck_assert_uint_eq(n, t.v[i].n);
	}
}

START_TEST(test_refs_shared_content)
{
	struct eos_changeset *cs = cs_create("refs");
	struct eos_stat a, b;
	struct eos_error err = { 0 };
	uint64_t n = 0;
	int r;

	put_big(cs, "a", 1);
	put_big(cs, "b", 1);
	commit_ok(cs);
	a = stat_ok("refs", 1, "a");
	ck_assert_int_eq(a.content.kind, EOS_CONTENT_MANIFEST);
	b = stat_ok("refs", 1, "b");
	ck_assert(eos_digest_eq(&a.content.digest, &b.content.digest));
	r = eos_refs_get(st, EOS_REF_MANIFEST, &a.content.digest, &n, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(n, 2);
	check_refs_consistent();
	/* A link rewrites its target (+1) and adds itself (+1); old records keep theirs. */
	cs = cs_open("refs");
	ln(cs, "c", "a");
	put_big(cs, "b", 2);
	commit_ok(cs);
	r = eos_refs_get(st, EOS_REF_MANIFEST, &a.content.digest, &n, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(n, 4);
	check_refs_consistent();
	/* Removing adds a whiteout only: counts stay (the old records still exist). */
	cs = cs_open("refs");
	rm(cs, "a");
	commit_ok(cs);
	r = eos_refs_get(st, EOS_REF_MANIFEST, &a.content.digest, &n, &err);
	ck_ok(r, err);
	ck_assert_uint_eq(n, 4);
	check_refs_consistent();
}
END_TEST

START_TEST(test_refs_history)
{
	build_history_1_5();
	build_history_6_10();
	check_refs_consistent();
}
END_TEST

START_TEST(test_put_file_content)
{
	struct eos_changeset *cs = cs_create("pc");
	struct eos_attr a = eos_test_attr(0644);
	struct eos_error err = { 0 };
	struct eos_content bogus = { .kind = EOS_CONTENT_MANIFEST, .size = 1 << 20 };
	struct eos_stat s;
	size_t len;
	cleanup_free uint8_t *p = big_data(1, &len);
	int r;

	put_big(cs, "big", 1);
	commit_ok(cs);
	s = stat_ok("pc", 1, "big");
	cs = cs_open("pc");
	r = eos_changeset_put_file_content(cs, "copy", &a, &s.content, &err);
	ck_ok(r, err);
	memset(bogus.digest.b, 0xab, sizeof(bogus.digest.b));
	r = eos_changeset_put_file_content(cs, "bogus", &a, &bogus, &err);
	ck_assert_int_eq(r, -ENOENT);
	commit_ok(cs);
	check_content("pc", 2, "copy", p, len);
	check_refs_consistent();
}
END_TEST

/* --- threads ---------------------------------------------------------------------------------- */

struct stage_job {
	struct eos_changeset *cs;
	int thread;
	int failures;
};

static size_t
thread_file(int t, int j, uint8_t *buf)
{
	/* Every tenth file has the same content in all threads (dedup while racing). */
	size_t len = (size_t)(j * 997) % 70000;
	uint64_t seed = j % 10 == 0 ? 1000 + (uint64_t)j : (uint64_t)(t * 1000 + j);

	eos_test_fill_random(buf, len, seed);
	return len;
}

static void *
stage_thread(void *arg)
{
	struct stage_job *job = arg;
	struct eos_attr a = eos_test_attr(0644);
	uint8_t *buf = malloc(70000);

	for (int j = 0; buf && j < FILES_PER_THREAD; j++) {
		struct eos_error err = { 0 };
		char path[64];
		size_t len = thread_file(job->thread, j, buf);

		snprintf(path, sizeof(path), "t%d/f%02d", job->thread, j);
		if (eos_changeset_put_file_mem(job->cs, path, &a, buf, len, &err) < 0)
			job->failures++;
	}
	free(buf);
	return NULL;
}

START_TEST(test_concurrent_staging)
{
	struct eos_changeset *cs = cs_create("thr");
	struct stage_job jobs[THREADS];
	pthread_t tids[THREADS];
	struct eos_commit_result res;
	cleanup_free uint8_t *buf = malloc(70000);

	for (int t = 0; t < THREADS; t++) {
		char path[16];

		snprintf(path, sizeof(path), "t%d", t);
		mk(cs, path);
		jobs[t] = (struct stage_job){ .cs = cs, .thread = t };
		ck_assert_int_eq(pthread_create(&tids[t], NULL, stage_thread, &jobs[t]), 0);
	}
	for (int t = 0; t < THREADS; t++) {
		pthread_join(tids[t], NULL);
		ck_assert_int_eq(jobs[t].failures, 0);
	}
	res = commit_ok(cs);
	ck_assert_uint_eq(res.created, THREADS + THREADS * FILES_PER_THREAD);
	for (int t = 0; t < THREADS; t++)
		for (int j = 0; j < FILES_PER_THREAD; j++) {
			char path[64];
			size_t len = thread_file(t, j, buf);

			snprintf(path, sizeof(path), "t%d/f%02d", t, j);
			check_content("thr", 1, path, buf, len);
		}
	check_refs_consistent();
}
END_TEST

static Suite *
commit_suite(void)
{
	Suite *s = suite_create("commit");
	TCase *tc = tcase_create("commit");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_new_sandbox_read_back);
	tcase_add_test(tc, test_generated_id);
	tcase_add_test(tc, test_xattrs_and_set_attr);
	tcase_add_test(tc, test_visibility_every_path_every_version);
	tcase_add_test(tc, test_history_attributes_floors_links);
	tcase_add_test(tc, test_history_layer_records);
	tcase_add_test(tc, test_errors_validation);
	tcase_add_test(tc, test_errors_staging);
	tcase_add_test(tc, test_errors_stale_and_committed);
	tcase_add_test(tc, test_errors_duplicate_sandbox);
	tcase_add_test(tc, test_noop_changeset);
	tcase_add_test(tc, test_refs_shared_content);
	tcase_add_test(tc, test_refs_history);
	tcase_add_test(tc, test_put_file_content);
	tcase_add_test(tc, test_concurrent_staging);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(commit_suite());
}
