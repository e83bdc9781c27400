/* SPDX-License-Identifier: MIT */
/*
 * store/git-index: the stat data refresh of a git index, on indexes built here byte by byte
 * (the import test, tests/integration/git-import.sh, runs real git on real ones). Entries git
 * does not lstat keep their bytes, version 4 paths are decoded, and a malformed index — also
 * thousands of randomly damaged ones with a correct checksum — is refused with nothing changed.
 * A submodule's index finds its work tree in its git directory's config (import-git-module.c).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/endian.h"
#include "common/path.h"

#include "store/git-index.h"
#include "store/import.h"
#include "tests/unit/testutil.h"

struct test_entry {
	const char *path;
	uint32_t mode;
	uint16_t flags; /* stage bits and the like; the name length is added */
	uint16_t xflags;
};

enum {
	OID = 20
};

static void
put32(struct eos_buf *b, uint32_t v)
{
	uint8_t p[4];

	eos_put_be32(p, v);
	ck_assert_int_eq(eos_buf_append(b, p, 4), 0);
}

static void
put16(struct eos_buf *b, uint16_t v)
{
	uint8_t p[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	ck_assert_int_eq(eos_buf_append(b, p, 2), 0);
}

/* The stat data of entry i: recognisable values (ino = 100 + i, size = 10 + i). */
static void
put_stat(struct eos_buf *b, size_t i, uint32_t mode)
{
	uint32_t v[10] = {
		1000, 1, 2000, 2, 7, (uint32_t)(100 + i), mode, 0, 0, (uint32_t)(10 + i)
	};

	for (size_t k = 0; k < 10; k++)
		put32(b, v[k]);
}

static size_t
common_prefix(const char *a, const char *b)
{
	size_t n = 0;

	while (a[n] && a[n] == b[n])
		n++;
	return n;
}

static void
put_entry(struct eos_buf *b, uint32_t version, const struct test_entry *e, size_t i,
	  const char *prev)
{
	size_t start = b->len, name = strlen(e->path);
	uint8_t oid[OID];

	put_stat(b, i, e->mode);
	memset(oid, (int)(0xA0 + i), sizeof(oid));
	ck_assert_int_eq(eos_buf_append(b, oid, sizeof(oid)), 0);
	put16(b, (uint16_t)(e->flags | (e->xflags ? 0x4000 : 0) | (name < 0xFFF ? name : 0xFFF)));
	if (e->xflags)
		put16(b, e->xflags);
	if (version == 4) {
		size_t keep = common_prefix(prev, e->path), drop = strlen(prev) - keep;

		ck_assert_uint_lt(drop, 128); /* a one-byte varint */
		ck_assert_int_eq(eos_buf_append_u8(b, (uint8_t)drop), 0);
		ck_assert_int_eq(eos_buf_append(b, e->path + keep, name - keep + 1), 0);
		return;
	}
	ck_assert_int_eq(eos_buf_append(b, e->path, name), 0);
	do
		ck_assert_int_eq(eos_buf_append_u8(b, 0), 0);
	while ((b->len - start) % 8);
}

static void
seal(struct eos_buf *b)
{
	uint8_t sum[EOS_SHA1_LEN];

	ck_assert_int_eq(eos_sha1(b->data, b->len, sum), 0);
	ck_assert_int_eq(eos_buf_append(b, sum, sizeof(sum)), 0);
}

/* An index of version v with the n entries, then ext (may be NULL) and a SHA-1 checksum. */
static void
build(struct eos_buf *b, uint32_t version, const struct test_entry *e, size_t n, uint32_t count,
      const void *ext, size_t ext_len)
{
	eos_buf_truncate(b, 0);
	ck_assert_int_eq(eos_buf_append(b, "DIRC", 4), 0);
	put32(b, version);
	put32(b, count);
	for (size_t i = 0; i < n; i++)
		put_entry(b, version, &e[i], i, i ? e[i - 1].path : "");
	if (ext)
		ck_assert_int_eq(eos_buf_append(b, ext, ext_len), 0);
	seal(b);
}

struct seen {
	char paths[8][64];
	size_t n;
	bool accept;
	bool damaged; /* random bytes: no entry's object id is known */
};

static bool
fresh(void *ctx, const struct eos_gitidx_entry *e, struct eos_gitidx_stat *view)
{
	const struct eos_gitidx_stat *rec = &e->stat;
	const char *path = e->path;
	struct seen *s = ctx;

	/* the entry's object id is offered as it is: entry i's is 20 bytes of 0xA0 + i */
	ck_assert_uint_eq(e->oid_len, OID);
	if (!s->damaged && rec->ino < 0xC0DE0000u)
		for (size_t k = 0; k < OID; k++)
			ck_assert_uint_eq(e->oid[k], 0xA0 + rec->ino - 100);
	ck_assert_uint_lt(s->n, 8);
	snprintf(s->paths[s->n++], sizeof(s->paths[0]), "%s", path);
	*view = *rec;
	view->ino = 0xC0DE0000u + rec->ino;
	view->ctime_s = rec->mtime_s;
	view->ctime_ns = rec->mtime_ns;
	return s->accept;
}

static const struct test_entry mixed[] = {
	{ "a.txt", 0100644, 0, 0 },	 { "dir/conflict", 0100644, 0x2000, 0 }, /* stage 2 */
	{ "dir/link", 0120000, 0, 0 },	 { "dir/sub", 0160000, 0, 0 },		 /* a submodule */
	{ "dir/x", 0100755, 0, 0x4000 }, /* skip-worktree (version 3) */
	{ "dir/zz", 0100644, 0, 0 },
};

/* The checksum at the end of b is the SHA-1 of the rest. */
static bool
sealed(const struct eos_buf *b)
{
	uint8_t sum[EOS_SHA1_LEN];

	return eos_sha1(b->data, b->len - EOS_SHA1_LEN, sum) == 0 &&
	       memcmp(sum, b->data + b->len - EOS_SHA1_LEN, EOS_SHA1_LEN) == 0;
}

START_TEST(test_refresh_checked_entries)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf b = { 0 };
	cleanup_free uint8_t *orig = NULL;
	struct seen s = { .accept = true };
	size_t refreshed = 99;
	uint32_t version = (uint32_t)_i; /* 3 and 4: the skip-worktree entry needs extended flags */

	build(&b, version, mixed, EOS_ARRAY_SIZE(mixed), EOS_ARRAY_SIZE(mixed), NULL, 0);
	orig = malloc(b.len);
	memcpy(orig, b.data, b.len);
	ck_assert_int_eq(eos_git_index_refresh(b.data, b.len, fresh, &s, &refreshed), 0);
	/* only what git lstat()s: merged files and symlinks in the work tree */
	ck_assert_uint_eq(s.n, 3);
	ck_assert_str_eq(s.paths[0], "a.txt");
	ck_assert_str_eq(s.paths[1], "dir/link");
	ck_assert_str_eq(s.paths[2], "dir/zz");
	ck_assert_uint_eq(refreshed, 3);
	ck_assert(sealed(&b));
	/* the first entry's ctime and ino changed, its mtime, dev, mode, oid and path did not */
	ck_assert_uint_eq(eos_get_be32(b.data + 12 + 0), 2000);
	ck_assert_uint_eq(eos_get_be32(b.data + 12 + 4), 2);
	ck_assert_uint_eq(eos_get_be32(b.data + 12 + 20), 0xC0DE0000u + 100);
	ck_assert_mem_eq(b.data + 12 + 8, orig + 12 + 8, 12);	      /* mtime, dev */
	ck_assert_mem_eq(b.data + 12 + 24, orig + 12 + 24, 16 + OID); /* mode ... oid */
}
END_TEST

START_TEST(test_refused_entries_stay)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf b = { 0 };
	cleanup_free uint8_t *orig = NULL;
	struct seen s = { .accept = false };
	size_t refreshed = 99;

	build(&b, 2, mixed, 4, 4, NULL, 0);
	orig = malloc(b.len);
	memcpy(orig, b.data, b.len);
	ck_assert_int_eq(eos_git_index_refresh(b.data, b.len, fresh, &s, &refreshed), 0);
	ck_assert_uint_eq(refreshed, 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_mem_eq(b.data, orig, b.len);
}
END_TEST

/* Refused with err, every byte as it was. */
static void
assert_refused(struct eos_buf *b, int err)
{
	cleanup_free uint8_t *orig = malloc(b->len);
	struct seen s = { .accept = true };
	size_t refreshed = 99;

	memcpy(orig, b->data, b->len);
	ck_assert_int_eq(eos_git_index_refresh(b->data, b->len, fresh, &s, &refreshed), err);
	ck_assert_uint_eq(refreshed, 0);
	ck_assert_mem_eq(b->data, orig, b->len);
}

START_TEST(test_malformed)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf b = { 0 };
	static const uint8_t overlong[] = { 'T', 'R', 'E', 'E', 0, 0, 0, 200, 1, 2, 3 };
	static const uint8_t link_ext[] = { 'l', 'i', 'n', 'k', 0, 0, 0, 0 };
	static const struct test_entry v4bad[] = { { "ab", 0100644, 0, 0 },
						   { "c", 0100644, 0, 0 } };

	build(&b, 2, mixed, 4, 5, NULL, 0); /* one entry more than there are */
	assert_refused(&b, -EBADMSG);
	build(&b, 2, mixed, 4, 4, overlong, sizeof(overlong)); /* an extension past the end */
	assert_refused(&b, -EBADMSG);
	build(&b, 5, mixed, 4, 4, NULL, 0); /* no such version */
	assert_refused(&b, -EBADMSG);
	build(&b, 2, mixed + 4, 1, 1, NULL, 0); /* extended flags in version 2 */
	assert_refused(&b, -EBADMSG);
	build(&b, 4, v4bad, 2, 2, NULL, 0);
	/* the second entry's varint (after the first: 62 bytes, varint, "ab\0"; then its 62) */
	b.data[12 + 62 + 1 + 3 + 62] = 9; /* drop 9 bytes of "ab" */
	b.len -= EOS_SHA1_LEN;
	seal(&b);
	assert_refused(&b, -EBADMSG);
	build(&b, 2, mixed, 4, 4, NULL, 0);
	b.data[b.len - 1] ^= 1; /* the checksum */
	assert_refused(&b, -EBADMSG);
	build(&b, 2, mixed, 4, 4, link_ext, sizeof(link_ext)); /* a split index */
	assert_refused(&b, -ENOTSUP);
	build(&b, 2, mixed, 4, 4, NULL, 0);
	memset(b.data + b.len - EOS_SHA1_LEN, 0, EOS_SHA1_LEN); /* written without a checksum */
	assert_refused(&b, -ENOTSUP);
	b.data[0] = 'X';
	assert_refused(&b, -EBADMSG);
	assert_refused(&(struct eos_buf){ .data = b.data, .len = 20 }, -EBADMSG);
}
END_TEST

/* Random damage under a correct checksum: refused or refreshed, never a read out of bounds. */
START_TEST(test_random_damage)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf b = { 0 };
	unsigned seed = 15;

	for (int round = 0; round < 3000; round++) {
		struct seen s = { .accept = true, .damaged = true };
		uint32_t version = 2 + (uint32_t)(round % 3);
		size_t refreshed, body, flips = 1 + (size_t)(rand_r(&seed) % 4);
		size_t n =
			version == 2 ? 4 : EOS_ARRAY_SIZE(mixed); /* version 2: no extended flags */
		int r;

		build(&b, version, mixed, n, (uint32_t)n, NULL, 0);
		body = b.len - EOS_SHA1_LEN;
		if (round % 5 == 0)
			body -= (size_t)(rand_r(&seed) % 24); /* cut short */
		b.len = body;
		for (size_t k = 0; k < flips; k++)
			b.data[12 + (size_t)rand_r(&seed) % (body - 12)] = (uint8_t)rand_r(&seed);
		seal(&b);
		r = eos_git_index_refresh(b.data, b.len, fresh, &s, &refreshed);
		ck_assert_msg(r == 0 || r == -EBADMSG || r == -ENOTSUP, "round %d: %d", round, r);
	}
}
END_TEST

/* --- submodules' work trees --------------------------------------------------------------------
 */

/* The work tree the config text names for the index ".git/modules/<module>/index" ("-": none). */
static void
check_work_tree(const char *module, const char *config, const char *want)
{
	cleanup_free char *root = eos_test_tmpdir("git-module"), *dir = NULL, *path = NULL;
	cleanup_free char *index = NULL, *got = NULL;
	int fd;

	ck_assert_int_ge(asprintf(&dir, "%s/.git/modules/%s", root, module), 0);
	ck_assert_int_eq(eos_mkdir_parents(dir, 0755, true), 0);
	if (config) {
		ck_assert_int_ge(asprintf(&path, "%s/config", dir), 0);
		eos_test_write_file(path, config, strlen(config), 0644);
	}
	ck_assert_int_ge(asprintf(&index, ".git/modules/%s/index", module), 0);
	ck_assert(eos_import_is_module_index(index));
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(eos_import_module_work_tree(fd, index, &got), 0);
	close(fd);
	ck_assert_msg(strcmp(got ? got : "-", want) == 0,
		      "module '%s', config '%s': '%s', want '%s'", module,
		      config ? config : "(none)", got ? got : "-", want);
	eos_test_rm_rf(root);
}

START_TEST(test_module_work_tree)
{
	/* what git writes, a nested module, a name with a slash */
	check_work_tree("sub", "[core]\n\tworktree = ../../../sub\n", "sub");
	check_work_tree("a/modules/b", "[core]\n\tworktree = ../../../../../a/b\n", "a/b");
	check_work_tree("libs/x", "[core]\n\tworktree = ../../../../libs/x\n", "libs/x");
	/* case, quotes, CRLF, blanks, comments; the last value wins, other sections don't count */
	check_work_tree("s", "[Core]\r\n  WorkTree=\"../../../w\"  \r\n", "w");
	check_work_tree("s", "# c\n[core]\nworktree = ../../../x\n; c\nworktree = ../../../y\n",
			"y");
	check_work_tree("s", "[remote \"o\"]\n\tworktree = ../../../x\n", "-");
	check_work_tree("s", "[core \"sub\"]\n\tworktree = ../../../x\n", "-");
	/* none, outside the import, absolute, escaped or commented: the index stays as it is */
	check_work_tree("s", NULL, "-");
	check_work_tree("s", "[core]\n\tbare = false\n", "-");
	check_work_tree("s", "[core]\n\tworktree = ../../../../outside\n", "-");
	check_work_tree("s", "[core]\n\tworktree = /home/u/repo/s\n", "-");
	check_work_tree("s", "[core]\n\tworktree = ../../../a\\\"b\n", "-");
	check_work_tree("s", "[core]\n\tworktree = ../../../s # here\n", "-");
	/* the import's root itself */
	check_work_tree("s", "[core]\n\tworktree = ../../..\n", "");
}
END_TEST

/* Configs of random bytes (with the characters a config is made of, often): no crash, and a
 * work tree, when one comes out, is a tree path inside the import. */
START_TEST(test_module_random_configs)
{
	static const char alphabet[] = "[]core\"worktree = ../\\#;\n\r\t/ab.";
	cleanup_free char *root = eos_test_tmpdir("git-module-rand"), *dir = NULL, *path = NULL;
	unsigned seed = 7;
	int fd;

	ck_assert_int_ge(asprintf(&dir, "%s/.git/modules/s", root), 0);
	ck_assert_int_eq(eos_mkdir_parents(dir, 0755, true), 0);
	ck_assert_int_ge(asprintf(&path, "%s/config", dir), 0);
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	for (int round = 0; round < 3000; round++) {
		char text[96];
		size_t n = (size_t)rand_r(&seed) % sizeof(text);
		cleanup_free char *got = NULL;

		for (size_t i = 0; i < n; i++)
			text[i] = rand_r(&seed) % 4
					  ? alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)]
					  : (char)rand_r(&seed);
		if (round % 3 == 0 && n > 24)
			memcpy(text, "[core]\nworktree=../../..", 24);
		eos_test_write_file(path, text, n, 0644);
		ck_assert_int_eq(eos_import_module_work_tree(fd, ".git/modules/s/index", &got), 0);
		if (got)
			ck_assert_msg(eos_path_check(got, NULL) == 0, "round %d: '%s'", round, got);
	}
	close(fd);
	eos_test_rm_rf(root);
}
END_TEST

START_TEST(test_module_index_paths)
{
	ck_assert(eos_import_is_module_index(".git/modules/s/index"));
	ck_assert(eos_import_is_module_index("top/.git/modules/a/b/index"));
	ck_assert(!eos_import_is_module_index(".git/index"));
	ck_assert(!eos_import_is_module_index(".git/modules/index"));
	ck_assert(!eos_import_is_module_index("x.git/modules/s/index"));
	ck_assert(!eos_import_is_module_index(".git/modules/s/index.lock"));
	ck_assert(!eos_import_is_module_index("src/modules/s/index"));
}
END_TEST

static Suite *
git_index_suite(void)
{
	Suite *s = suite_create("git-index");
	TCase *tc = tcase_create("refresh");

	tcase_add_loop_test(tc, test_refresh_checked_entries, 3, 5);
	tcase_add_test(tc, test_refused_entries_stay);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_random_damage);
	suite_add_tcase(s, tc);
	tc = tcase_create("modules");
	tcase_add_test(tc, test_module_work_tree);
	tcase_add_test(tc, test_module_index_paths);
	tcase_add_test(tc, test_module_random_configs);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(git_index_suite());
}
