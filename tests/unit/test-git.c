/* SPDX-License-Identifier: MIT */
/*
 * store/git: the three-way text merge (hand cases, then random merges compared with
 * `git merge-file`, whose diff3 output shows the same conflict groups) and the patch sections
 * (each case applied with `git apply --index` and plain `git apply` on a git checkout of the old
 * tree). A missing git fails the tests.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/path.h"

#include "store/git.h"
#include "tests/unit/testutil.h"

static void
require_git(void)
{
	ck_assert_msg(system("git --version >/dev/null 2>&1") == 0,
		      "git not found: these tests compare with git merge-file and git apply");
}

static void
run(const char *cmd)
{
	int st = system(cmd);

	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "'%s' failed: %d", cmd,
		      st);
}

static char *
read_file(const char *path, size_t *ret_len)
{
	struct eos_buf b;
	char chunk[4096];
	ssize_t n;
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open '%s': %m", path);
	eos_buf_init(&b);
	ck_assert_int_eq(eos_buf_reserve(&b, 1), 0);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		ck_assert_int_eq(eos_buf_append(&b, chunk, (size_t)n), 0);
	ck_assert_int_ge(n, 0);
	return (char *)eos_buf_steal(&b, ret_len);
}

/* ---- text helpers ---- */

START_TEST(test_text_helpers)
{
	ck_assert(!eos_text_is_binary("", 0));
	ck_assert(!eos_text_is_binary("plain\n", 6));
	ck_assert(!eos_text_is_binary("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14));
	ck_assert(eos_text_is_binary("a\0b", 3));
	ck_assert(eos_text_is_binary("caf\xe9", 4));	      /* Latin-1 */
	ck_assert(eos_text_is_binary("\xc0\xaf", 2));	      /* overlong '/' */
	ck_assert(eos_text_is_binary("\xed\xa0\x80", 3));     /* surrogate */
	ck_assert(eos_text_is_binary("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
	ck_assert(eos_text_is_binary("\xe2\x82", 2));	      /* truncated */
	ck_assert_uint_eq(eos_text_lines("", 0), 0);
	ck_assert_uint_eq(eos_text_lines("a", 1), 1);
	ck_assert_uint_eq(eos_text_lines("a\n", 2), 1);
	ck_assert_uint_eq(eos_text_lines("a\nb", 3), 2);
	ck_assert_uint_eq(eos_text_lines("\n\n", 2), 2);
	ck_assert_uint_eq(eos_text_lines("a\r\nb\r\n", 6), 2);
}
END_TEST

/* ---- merge ---- */

static void
merge(const char *base, const char *head, const char *ours, struct eos_merge3 *m)
{
	struct eos_error err = { 0 };
	int r = eos_git_merge3(base, strlen(base), head, strlen(head), ours, strlen(ours), m, &err);

	ck_assert_msg(r == 0, "merge: %d %s", r, err.msg);
}

static void
expect_clean(const char *base, const char *head, const char *ours, const char *want)
{
	struct eos_merge3 m;

	merge(base, head, ours, &m);
	ck_assert_msg(m.clean, "expected a clean merge");
	ck_assert_uint_eq(m.nregions, 0);
	ck_assert_uint_eq(m.len, strlen(want));
	ck_assert(memcmp(m.data, want, m.len) == 0);
	eos_merge3_release(&m);
	eos_merge3_release(&m);
}

static void
expect_region(const struct eos_merge3 *m, size_t i, uint32_t bs, uint32_t bc, uint32_t hs,
	      uint32_t hc, uint32_t ss, uint32_t sc)
{
	const struct eos_conflict_lines *c = &m->regions[i];

	ck_assert_uint_lt(i, m->nregions);
	ck_assert_msg(
		c->base_start == bs && c->base_count == bc && c->head_start == hs &&
			c->head_count == hc && c->session_start == ss && c->session_count == sc,
		"region %zu: base %u+%u head %u+%u session %u+%u", i, c->base_start, c->base_count,
		c->head_start, c->head_count, c->session_start, c->session_count);
}

START_TEST(test_merge_clean)
{
	/* the scenario */
	expect_clean("one\ntwo\n", "ONE\ntwo\n", "one\ntwo\ntail\n", "ONE\ntwo\ntail\n");
	expect_clean("one\ntwo\n", "one\ntwo\ntail\n", "ONE\ntwo\n", "ONE\ntwo\ntail\n");
	/* identical changes, one side unchanged, nothing changed */
	expect_clean("a\nb\nc\n", "a\nX\nc\n", "a\nX\nc\n", "a\nX\nc\n");
	expect_clean("a\nb\nc\n", "a\nb\nc\n", "a\nY\nc\n", "a\nY\nc\n");
	expect_clean("a\nb\nc\n", "a\nb\nc\n", "a\nb\nc\n", "a\nb\nc\n");
	/* both created the same file; both emptied it */
	expect_clean("", "new\n", "new\n", "new\n");
	expect_clean("a\nb\n", "", "", "");
	/* CRLF kept */
	expect_clean("1\r\n2\r\n3\r\n4\r\n5\r\n", "X\r\n2\r\n3\r\n4\r\n5\r\n",
		     "1\r\n2\r\n3\r\n4\r\nY\r\n", "X\r\n2\r\n3\r\n4\r\nY\r\n");
	/* a missing final newline kept, on either side */
	expect_clean("1\n2\n3\n4\n5", "X\n2\n3\n4\n5", "1\n2\n3\n4\nY", "X\n2\n3\n4\nY");
	expect_clean("1\n2\n3\n4\n5\n", "X\n2\n3\n4\n5\n", "1\n2\n3\n4\n5", "X\n2\n3\n4\n5");
	expect_clean("1\n2\n3\n4\n5", "X\n2\n3\n4\n5", "1\n2\n3\n4\n5\n", "X\n2\n3\n4\n5\n");
	/* mixed line endings are not normalised */
	expect_clean("a\r\nb\nc\r\nd\ne\n", "A\r\nb\nc\r\nd\ne\n", "a\r\nb\nc\r\nd\nE\n",
		     "A\r\nb\nc\r\nd\nE\n");
	/* trailing whitespace is content */
	expect_clean("a \nb\nc\nd\ne\n", "a \nb\nc\nd\nE\n", "a\t\nb\nc\nd\ne\n",
		     "a\t\nb\nc\nd\nE\n");
}
END_TEST

START_TEST(test_merge_conflicts)
{
	struct eos_merge3 m;

	/* overlapping edits of line 2 */
	merge("a\nb\nc\n", "a\nH\nc\n", "a\nS\nc\n", &m);
	ck_assert(!m.clean);
	ck_assert_ptr_null(m.data);
	ck_assert_uint_eq(m.nregions, 1);
	expect_region(&m, 0, 2, 1, 2, 1, 2, 1);
	eos_merge3_release(&m);

	/* insertions at the same point with different text (after line 1) */
	merge("a\nb\n", "a\nH1\nH2\nb\n", "a\nS\nb\n", &m);
	ck_assert(!m.clean);
	ck_assert_uint_eq(m.nregions, 1);
	expect_region(&m, 0, 2, 0, 2, 2, 2, 1);
	eos_merge3_release(&m);

	/* both created the file with different content */
	merge("", "x\ny\n", "z\n", &m);
	ck_assert(!m.clean);
	ck_assert_uint_eq(m.nregions, 1);
	expect_region(&m, 0, 1, 0, 1, 2, 1, 1);
	eos_merge3_release(&m);

	/* every region is reported: three separate conflicts and a clean change between */
	merge("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "H\n2\n3\n4\nH5\n6\n7\n8\n9\nH10\n",
	      "S\n2\nS3\n4\nS5\nS6\n7\n8\n9\nS10\nS11\n", &m);
	ck_assert(!m.clean);
	ck_assert_uint_eq(m.nregions, 3);
	expect_region(&m, 0, 1, 1, 1, 1, 1, 1);
	expect_region(&m, 1, 5, 2, 5, 2, 5, 2);
	expect_region(&m, 2, 10, 1, 10, 1, 10, 2);
	eos_merge3_release(&m);

	/* edits of adjacent lines conflict, as in git */
	merge("a\nb\nc\nd\n", "a\nB\nc\nd\n", "a\nb\nC\nd\n", &m);
	ck_assert(!m.clean);
	expect_region(&m, 0, 2, 2, 2, 2, 2, 2);
	eos_merge3_release(&m);

	/* the head deleted lines the session changed */
	merge("a\nb\nc\nd\ne\n", "a\ne\n", "a\nb\nC\nd\ne\n", &m);
	ck_assert(!m.clean);
	expect_region(&m, 0, 2, 3, 2, 0, 2, 3);
	eos_merge3_release(&m);

	/* a final newline added on one side, the last line changed on the other */
	merge("a\nb\nc", "a\nb\nc\n", "a\nb\nC", &m);
	ck_assert(!m.clean);
	expect_region(&m, 0, 3, 1, 3, 1, 3, 1);
	eos_merge3_release(&m);
}
END_TEST

/*
 * Lines of text for comparing conflict blocks, each without its '\n'. git ends an unterminated
 * last line with "\n" or "\r\n" inside a conflict block, so such a line is kept with a '\1'
 * mark and equals both.
 */
struct line_list {
	char **v;
	size_t n;
};

static void
line_list_add(struct line_list *l, const char *p, size_t n)
{
	bool unterminated = n == 0 || p[n - 1] != '\n';

	if (!unterminated)
		n--;
	l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	ck_assert_ptr_nonnull(l->v);
	ck_assert_int_ge(asprintf(&l->v[l->n++], "%.*s%s", (int)n, p, unterminated ? "\1" : ""), 0);
}

static void
line_list_release(struct line_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	*l = (struct line_list){ 0 };
}

static bool
line_eq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la > 0 && a[la - 1] == '\1')
		return (lb == la - 1 || (lb == la && b[lb - 1] == '\r')) &&
		       memcmp(a, b, la - 1) == 0;
	if (lb > 0 && b[lb - 1] == '\1')
		return line_eq(b, a);
	return strcmp(a, b) == 0;
}

static bool
line_list_eq(const struct line_list *a, const struct line_list *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!line_eq(a->v[i], b->v[i]))
			return false;
	return true;
}

/* Lines [start, start + count) (1-based) of text. */
static void
text_range(const char *text, uint32_t start, uint32_t count, struct line_list *out)
{
	const char *p = text;

	for (uint32_t line = 1; *p && line < start + count; line++) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p + 1) : strlen(p);

		if (line >= start)
			line_list_add(out, p, n);
		p += n;
	}
}

/* One conflict block of `git merge-file --diff3` output: head, base and session lines. */
struct block {
	struct line_list side[3];
};

/* Parse the diff3 conflict blocks of out; returns how many. */
static size_t
parse_diff3(const char *out, struct block *blocks, size_t max)
{
	size_t nb = 0;
	int part = -1;

	for (const char *p = out; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p + 1) : strlen(p);

		if (strncmp(p, "<<<<<<<", 7) == 0) {
			ck_assert_uint_lt(nb, max);
			blocks[nb] = (struct block){ 0 };
			part = 0;
		} else if (strncmp(p, "|||||||", 7) == 0) {
			part = 1;
		} else if (strncmp(p, "=======", 7) == 0) {
			part = 2;
		} else if (strncmp(p, ">>>>>>>", 7) == 0) {
			part = -1, nb++;
		} else if (part >= 0) {
			line_list_add(&blocks[nb].side[part], p, n);
		}
		p += n;
	}
	return nb;
}

static void
write_text(const char *dir, const char *name, const char *text)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	eos_test_write_file(path, text, strlen(text), 0644);
}

/* Run git merge-file (diff3 style or not) on the three texts; returns its exit status and
 * *ret_out (caller frees). */
static int
git_merge_file(const char *dir, bool diff3, char **ret_out)
{
	char cmd[8192], path[4096];
	size_t len;
	int st;

	snprintf(cmd, sizeof(cmd), "cd '%s' && git merge-file -p %s head base session >out", dir,
		 diff3 ? "--diff3" : "");
	st = system(cmd);
	ck_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) < 127);
	snprintf(path, sizeof(path), "%s/out", dir);
	*ret_out = read_file(path, &len);
	return WEXITSTATUS(st);
}

/* Whether region c of the texts shows the lines of block b. */
static bool
region_is_block(const struct eos_conflict_lines *c, const char *base, const char *head,
		const char *ours, const struct block *b)
{
	struct line_list want[3] = { 0 };
	bool same = true;

	text_range(head, c->head_start, c->head_count, &want[0]);
	text_range(base, c->base_start, c->base_count, &want[1]);
	text_range(ours, c->session_start, c->session_count, &want[2]);
	for (int s = 0; s < 3; s++) {
		same = same && line_list_eq(&want[s], &b->side[s]);
		line_list_release(&want[s]);
	}
	return same;
}

/*
 * The regions of m must be git's diff3 conflict blocks, in order, except blocks whose sides
 * agree (git's zealous merge resolves those; the diff3 style keeps them). git ends an
 * unterminated last line with a newline in a block, so a region can also look like such a block.
 */
static void
check_regions(const struct eos_merge3 *m, const char *base, const char *head, const char *ours,
	      const char *diff3)
{
	struct block blocks[64];
	size_t nb = parse_diff3(diff3, blocks, EOS_ARRAY_SIZE(blocks)), k = 0;

	for (size_t i = 0; i < nb; i++) {
		if (k < m->nregions &&
		    region_is_block(&m->regions[k], base, head, ours, &blocks[i]))
			k++;
		else
			ck_assert_msg(line_list_eq(&blocks[i].side[0], &blocks[i].side[2]),
				      "git's conflict %zu is not region %zu", i, k);
		for (int s = 0; s < 3; s++)
			line_list_release(&blocks[i].side[s]);
	}
	ck_assert_uint_eq(k, m->nregions);
}

/* A random edit of base: lines kept, dropped, replaced or inserted, sometimes CRLF or without
 * the final newline. */
static char *
random_edit(const char *base, uint64_t *seed, unsigned density)
{
	bool edit = density > 0;
	static const char *const words[] = { "a", "b", "c", "d", "e", "f" };
	struct eos_buf b;
	const char *p = base;
	size_t len;

	eos_buf_init(&b);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p + 1) : strlen(p);
		uint64_t r;

		eos_test_fill_random(seed, sizeof(*seed), *seed + 7);
		r = edit ? *seed % density : 9;
		if (r == 0 || r == 1)
			ck_assert_int_eq(eos_buf_append_str(&b, words[(*seed >> 8) % 6]), 0);
		if (r == 1 || r == 2)
			ck_assert_int_eq(eos_buf_append_str(&b, (*seed >> 16) & 1 ? "\r\n" : "\n"),
					 0);
		if (r >= 2)
			ck_assert_int_eq(eos_buf_append(&b, p, n), 0);
		if (r == 3)
			ck_assert_int_eq(eos_buf_append_str(&b, "x\n"), 0);
		p += n;
	}
	if (!edit) {
		for (int i = 0; i < 12; i++) {
			eos_test_fill_random(seed, sizeof(*seed), *seed + 3);
			ck_assert_int_eq(eos_buf_append_str(&b, words[*seed % 6]), 0);
			if (i < 11 || *seed % 4)
				ck_assert_int_eq(
					eos_buf_append_str(&b, (*seed >> 9) % 5 ? "\n" : "\r\n"),
					0);
		}
	} else if (b.len > 0 && (*seed >> 20) % 8 == 0 && b.data[b.len - 1] == '\n') {
		eos_buf_truncate(&b, b.len - 1);
	}
	ck_assert_int_eq(eos_buf_append_u8(&b, 0), 0);
	return (char *)eos_buf_steal(&b, &len);
}

START_TEST(test_merge_against_git)
{
	cleanup_free char *dir = NULL;
	uint64_t seed = 42 + (uint64_t)_i * 1000003;
	unsigned clean = 0, conflicts = 0, regions = 0;

	require_git();
	dir = eos_test_tmpdir("merge");
	for (int round = 0; round < 150; round++) {
		unsigned density = 6 + (unsigned)round % 30; /* one line in density/4 edited */
		cleanup_free char *base = random_edit("", &seed, 0);
		cleanup_free char *head = random_edit(base, &seed, density);
		cleanup_free char *ours = random_edit(base, &seed, density);
		cleanup_free char *plain = NULL, *diff3 = NULL;
		struct eos_merge3 m;
		int st;

		write_text(dir, "base", base);
		write_text(dir, "head", head);
		write_text(dir, "session", ours);
		st = git_merge_file(dir, false, &plain);
		git_merge_file(dir, true, &diff3);
		merge(base, head, ours, &m);
		ck_assert_msg(m.clean == (st == 0), "round %d: clean %d, git %d", round, m.clean,
			      st);
		if (m.clean) {
			ck_assert_uint_eq(m.len, strlen(plain));
			ck_assert(memcmp(m.data, plain, m.len) == 0);
			clean++;
		} else {
			check_regions(&m, base, head, ours, diff3);
			conflicts++;
			regions += (unsigned)m.nregions;
		}
		eos_merge3_release(&m);
	}
	fprintf(stderr, "merge (random %d): %u clean, %u conflicting with %u regions\n", _i, clean,
		conflicts, regions);
	ck_assert_uint_gt(clean, 10);
	ck_assert_uint_gt(conflicts, 10);
	eos_test_rm_rf(dir);
}
END_TEST

/* ---- patches ---- */

enum {
	REG = S_IFREG | 0644,
	EXE = S_IFREG | 0755,
	LNK = S_IFLNK | 0777,
};

/* A case: one file pair; the old side is checked out, the patch applied, the new side checked. */
struct pcase {
	const char *name;
	const char *old_path, *new_path;
	uint32_t old_mode, new_mode;
	const char *old_data, *new_data;
	size_t old_len, new_len; /* 0: strlen */
};

static size_t
pcase_len(const char *data, size_t len)
{
	return len ? len : data ? strlen(data) : 0;
}

static struct eos_patch_file
pcase_file(const struct pcase *c, const char *prefix, char *oldp, char *newp, size_t size)
{
	snprintf(oldp, size, "%s%s", prefix, c->old_path ? c->old_path : "");
	snprintf(newp, size, "%s%s", prefix, c->new_path ? c->new_path : "");
	return (struct eos_patch_file){
		.old_path = c->old_path ? oldp : NULL,
		.new_path = c->new_path ? newp : NULL,
		.old_mode = c->old_path ? c->old_mode : 0,
		.new_mode = c->new_path ? c->new_mode : 0,
		.old_data = c->old_data,
		.old_len = pcase_len(c->old_data, c->old_len),
		.new_data = c->new_data,
		.new_len = pcase_len(c->new_data, c->new_len),
	};
}

static void
put_entry(const char *root, const char *rel, uint32_t mode, const void *data, size_t len)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (S_ISLNK(mode)) {
		cleanup_free char *target = strndup(data, len);
		char *slash = strrchr(path, '/');

		*slash = '\0';
		ck_assert_int_eq(eos_mkdir_parents(path, 0755, true), 0);
		*slash = '/';
		ck_assert_msg(symlink(target, path) == 0, "symlink '%s': %m", path);
	} else {
		eos_test_write_file(path, data, len, mode & 0777);
		ck_assert_int_eq(chmod(path, mode & 0777), 0);
	}
}

static void
check_entry(const char *root, const char *rel, uint32_t mode, const void *data, size_t len)
{
	char path[4096], target[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	ck_assert_msg(lstat(path, &st) == 0, "'%s' missing after git apply", rel);
	if (S_ISLNK(mode)) {
		ssize_t n = readlink(path, target, sizeof(target));

		ck_assert_msg(S_ISLNK(st.st_mode), "'%s' is not a symlink", rel);
		ck_assert_msg((size_t)n == len && memcmp(target, data, len) == 0,
			      "'%s': wrong target", rel);
	} else {
		size_t n = 0;
		cleanup_free char *got = NULL;

		ck_assert_msg(S_ISREG(st.st_mode), "'%s' is not a file", rel);
		ck_assert_msg(!!(st.st_mode & 0100) == !!(mode & 0100), "'%s': wrong mode %o", rel,
			      st.st_mode);
		got = read_file(path, &n);
		ck_assert_msg(n == len && memcmp(got, data, len) == 0, "'%s': wrong content", rel);
	}
}

static void
check_absent(const char *root, const char *rel)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	ck_assert_msg(lstat(path, &st) < 0 && errno == ENOENT, "'%s' still exists", rel);
}

/* A git repository holding the old side of every case (under prefix i/ for case i). */
static void
make_repo(const char *root, const struct pcase *cases, size_t n)
{
	char cmd[8192], oldp[1024], newp[1024], prefix[32];

	snprintf(cmd, sizeof(cmd), "git init -q '%s'", root);
	run(cmd);
	snprintf(cmd, sizeof(cmd), "%s/keep.txt", root);
	eos_test_write_file(cmd, "keep\n", 5, 0644);
	for (size_t i = 0; i < n; i++) {
		struct eos_patch_file f;

		snprintf(prefix, sizeof(prefix), "%zu/", i);
		f = pcase_file(&cases[i], prefix, oldp, newp, sizeof(oldp));
		if (f.old_path)
			put_entry(root, f.old_path, f.old_mode, f.old_data, f.old_len);
	}
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && git add -A && git -c user.name=eos -c user.email=eos@test "
		 "-c core.autocrlf=false commit -qm base",
		 root);
	run(cmd);
}

static void
check_repo(const char *root, const struct pcase *cases, size_t n)
{
	char oldp[1024], newp[1024], prefix[32];

	check_entry(root, "keep.txt", REG, "keep\n", 5);
	for (size_t i = 0; i < n; i++) {
		struct eos_patch_file f;

		snprintf(prefix, sizeof(prefix), "%zu/", i);
		f = pcase_file(&cases[i], prefix, oldp, newp, sizeof(oldp));
		if (f.old_path && (!f.new_path || strcmp(f.old_path, f.new_path) != 0))
			check_absent(root, f.old_path);
		if (f.new_path)
			check_entry(root, f.new_path, f.new_mode, f.new_data, f.new_len);
	}
}

/* The patch of cases[0..n) (case i under i/), written to path. */
static void
make_patch(const struct pcase *cases, size_t n, const char *path)
{
	struct eos_buf out;
	char oldp[1024], newp[1024], prefix[32];
	struct eos_error err = { 0 };
	FILE *f;

	eos_buf_init(&out);
	for (size_t i = 0; i < n; i++) {
		struct eos_patch_file pf;
		int r;

		snprintf(prefix, sizeof(prefix), "%zu/", i);
		pf = pcase_file(&cases[i], prefix, oldp, newp, sizeof(oldp));
		r = eos_git_patch(&pf, &out, &err);
		ck_assert_msg(r == 0, "patch '%s': %d %s", cases[i].name, r, err.msg);
	}
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(out.data, 1, out.len, f), out.len);
	fclose(f);
	eos_buf_release(&out);
}

/* Apply the patch of the cases on a fresh checkout, with --index and without. */
static void
apply_cases(const struct pcase *cases, size_t n)
{
	cleanup_free char *dir = eos_test_tmpdir("patch");
	char root[1024], patch[1024], cmd[4096];

	snprintf(patch, sizeof(patch), "%s/p.diff", dir);
	make_patch(cases, n, patch);
	for (int index = 0; index < 2; index++) {
		snprintf(root, sizeof(root), "%s/repo%d", dir, index);
		make_repo(root, cases, n);
		snprintf(cmd, sizeof(cmd), "cd '%s' && git apply %s '%s'", root,
			 index ? "--index" : "", patch);
		run(cmd);
		check_repo(root, cases, n);
		if (index) {
			/* the index matches the tree */
			snprintf(cmd, sizeof(cmd), "cd '%s' && git diff --quiet", root);
			run(cmd);
		}
	}
	eos_test_rm_rf(dir);
}

static const char bin_old[] = "\x00\x01\x02binary\x00\xff\xfe data\n\x00";
static const char bin_new[] = "\x00\x01\x03binary\x00\xff\xfe DATA\n\x00\x00\x7f";

static const struct pcase cases[] = {
	{ "modify", "m.txt", "m.txt", REG, REG, "a\nb\nc\nd\ne\nf\ng\nh\n",
	  "a\nB\nc\nd\ne\nf\ng\nH\n" },
	{ "create", NULL, "new.txt", 0, REG, NULL, "hello\nworld\n" },
	{ "delete", "gone.txt", NULL, REG, 0, "bye\n", NULL },
	{ "rename", "old name.txt", "new name.txt", REG, REG, "same\ncontent\n",
	  "same\ncontent\n" },
	{ "rename+edit", "r1.txt", "dir/r2.txt", REG, REG, "1\n2\n3\n4\n5\n6\n",
	  "1\n2\n3\nfour\n5\n6\n" },
	{ "rename+mode", "rm1", "rm2", REG, EXE, "x\n", "x\n" },
	{ "chmod +x", "run.sh", "run.sh", REG, EXE, "#!/bin/sh\n", "#!/bin/sh\n" },
	{ "chmod -x", "norun.sh", "norun.sh", EXE, REG, "#!/bin/sh\n", "#!/bin/sh\n" },
	{ "mode+edit", "me.sh", "me.sh", REG, EXE, "echo 1\n", "echo 2\n" },
	{ "symlink create", NULL, "link", 0, LNK, NULL, "target/file" },
	{ "symlink retarget", "link2", "link2", LNK, LNK, "a", "b/c" },
	{ "symlink delete", "link3", NULL, LNK, 0, "x y", NULL },
	{ "file to symlink", "t1", "t1", REG, LNK, "was a file\n", "now/a/link" },
	{ "symlink to file", "t2", "t2", LNK, REG, "was/a/link", "now a file\n" },
	{ "binary create", NULL, "b.bin", 0, REG, NULL, bin_new, 0, sizeof(bin_new) },
	{ "binary modify", "b2.bin", "b2.bin", REG, REG, bin_old, bin_new, sizeof(bin_old),
	  sizeof(bin_new) },
	{ "binary delete", "b3.bin", NULL, REG, 0, bin_old, NULL, sizeof(bin_old), 0 },
	{ "text to binary", "tb", "tb", REG, REG, "text\n", bin_new, 0, sizeof(bin_new) },
	{ "binary rename+edit", "b4.bin", "b5.bin", REG, REG, bin_old, bin_new, sizeof(bin_old),
	  sizeof(bin_new) },
	{ "latin1", "l1.txt", "l1.txt", REG, REG, "caf\xe9\n", "CAF\xc9\n" },
	{ "crlf", "w.txt", "w.txt", REG, REG, "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\nd\r\n" },
	{ "crlf to lf", "w2.txt", "w2.txt", REG, REG, "a\r\nb\r\n", "a\nb\n" },
	{ "no newline old", "n1.txt", "n1.txt", REG, REG, "a\nb", "a\nb\n" },
	{ "no newline new", "n2.txt", "n2.txt", REG, REG, "a\nb\n", "a\nb" },
	{ "no newline both", "n3.txt", "n3.txt", REG, REG, "a\nb", "a\nc" },
	{ "no newline create", NULL, "n4.txt", 0, REG, NULL, "x" },
	{ "empty create", NULL, "empty", 0, REG, NULL, "" },
	{ "empty delete", "empty2", NULL, REG, 0, "", NULL },
	{ "emptied", "e3", "e3", REG, REG, "full\n", "" },
	{ "filled", "e4", "e4", REG, REG, "", "full\n" },
	{ "spaces", "dir with space/a b.txt", "dir with space/a b.txt", REG, REG, "1\n", "2\n" },
	{ "space create", NULL, "x y/new file", 0, REG, NULL, "n\n" },
	{ "quoted", "q\"t\\ab\tc", "q\"t\\ab\tc", REG, REG, "1\n", "2\n" },
	{ "utf8 name", "caf\xc3\xa9.txt", "na\xc3\xafve.txt", REG, REG, "u\n", "u\nv\n" },
	{ "diff lookalike", "dl.txt", "dl.txt", REG, REG, "--- a\n+++ b\n@@ x\n",
	  "--- a\n+++ c\n@@ x\ndiff --git a/x b/x\n" },
};

START_TEST(test_patch_each)
{
	require_git();
	apply_cases(&cases[_i], 1);
}
END_TEST

START_TEST(test_patch_all_at_once)
{
	require_git();
	apply_cases(cases, EOS_ARRAY_SIZE(cases));
}
END_TEST

START_TEST(test_patch_large_binary_delta)
{
	enum {
		N = 256 * 1024
	};
	cleanup_free char *a = malloc(N), *b = malloc(N);
	struct pcase c = { "large binary", "big.bin", "big.bin", REG, REG, NULL, NULL, N, N };

	require_git();
	ck_assert(a && b);
	eos_test_fill_random(a, N, 7);
	a[0] = '\0';
	memcpy(b, a, N);
	memcpy(b + N / 2, "changed", 7);
	c.old_data = a, c.new_data = b;
	apply_cases(&c, 1);
}
END_TEST

START_TEST(test_patch_format)
{
	struct eos_patch_file f = {
		.old_path = "a.txt",
		.new_path = "a.txt",
		.old_mode = REG,
		.new_mode = REG | 0600, /* git only knows the executable bit: unchanged */
		.old_data = "x\n",
		.old_len = 2,
		.new_data = "x\n",
		.new_len = 2,
	};
	struct eos_error err = { 0 };
	struct eos_buf out;

	eos_buf_init(&out);
	ck_assert_int_eq(eos_buf_append_str(&out, "keep"), 0);
	ck_assert_int_eq(eos_git_patch(&f, &out, &err), 0);
	ck_assert_uint_eq(out.len, 4);
	f.new_data = "y\n";
	ck_assert_int_eq(eos_git_patch(&f, &out, &err), 0);
	ck_assert_str_eq((char *)out.data, "keepdiff --git a/a.txt b/a.txt\n"
					   "index 587be6b4c3f93f93c489c0111bba5596147a26cb.."
					   "975fbec8256d3e8a3797e7a3611380f27c49f4ac 100644\n"
					   "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+y\n");
	/* bad input leaves out unchanged */
	eos_buf_truncate(&out, 4);
	f.new_path = "../x";
	ck_assert_int_eq(eos_git_patch(&f, &out, &err), -EINVAL);
	f.new_path = "/abs";
	ck_assert_int_eq(eos_git_patch(&f, &out, &err), -EINVAL);
	f.new_path = "a//b";
	ck_assert_int_eq(eos_git_patch(&f, &out, &err), -EINVAL);
	f.new_path = "a.txt";
	f.new_mode = S_IFDIR | 0755;
	ck_assert_int_eq(eos_git_patch(&f, &out, &err), -EINVAL);
	f.old_path = f.new_path = NULL;
	ck_assert_int_eq(eos_git_patch(&f, &out, &err), -EINVAL);
	ck_assert_uint_eq(out.len, 4);
	eos_buf_release(&out);
}
END_TEST

#ifndef EOS_MERGE_ROUNDS
#define EOS_MERGE_ROUNDS 4
#endif

static Suite *
git_suite(void)
{
	Suite *s = suite_create("git");
	TCase *tc = tcase_create("merge");

	tcase_add_test(tc, test_text_helpers);
	tcase_add_test(tc, test_merge_clean);
	tcase_add_test(tc, test_merge_conflicts);
	tcase_add_loop_test(tc, test_merge_against_git, 0, EOS_MERGE_ROUNDS);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	tc = tcase_create("patch");
	tcase_add_test(tc, test_patch_format);
	tcase_add_loop_test(tc, test_patch_each, 0, EOS_ARRAY_SIZE(cases));
	tcase_add_test(tc, test_patch_all_at_once);
	tcase_add_test(tc, test_patch_large_binary_delta);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	/* git without the user's or the system's configuration (autocrlf, apply.whitespace...) */
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
	return eos_test_run(git_suite());
}
