/* SPDX-License-Identifier: MIT */
/*
 * store/ignore: hand-written gitignore(5) cases, then the same answers as real
 * `git check-ignore --no-index` for many paths below tricky .gitignore files. A missing git
 * fails the tests (it is a build dependency of the checks, not optional).
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

#include "store/ignore.h"
#include "tests/unit/testutil.h"

/* In-memory .gitignore files: dir -> text; counts reads. */
struct mem_files {
	const char *const *files; /* dir, text, dir, text, ..., NULL */
	unsigned reads;
	int fail; /* when set: every read of "fail" returns this */
};

static int
mem_read(void *ctx, const char *dir, char **ret_text, size_t *ret_len, struct eos_error *err)
{
	struct mem_files *m = ctx;

	m->reads++;
	if (m->fail && strcmp(dir, "fail") == 0)
		return eos_error_set(err, m->fail, "injected");
	for (size_t i = 0; m->files[i]; i += 2) {
		if (strcmp(m->files[i], dir) == 0) {
			*ret_text = strdup(m->files[i + 1]);
			ck_assert_ptr_nonnull(*ret_text);
			*ret_len = strlen(*ret_text);
			return 0;
		}
	}
	return -ENOENT;
}

static bool
ignored(struct eos_ignore *ig, const char *path, bool is_dir)
{
	struct eos_error err = { 0 };
	bool ret = false;
	int r = eos_ignore_check(ig, path, is_dir, &ret, &err);

	ck_assert_msg(r == 0, "check '%s': %d %s", path, r, err.msg);
	return ret;
}

static struct eos_ignore *
ignore_new(struct mem_files *m)
{
	struct eos_ignore *ig = NULL;

	ck_assert_int_eq(eos_ignore_new(mem_read, m, &ig), 0);
	return ig;
}

START_TEST(test_basics)
{
	static const char *const files[] = {
		"",
		"# comment\n\n*.log\n!keep.log\n/top\nbuild/\ndoc/*.txt\nsp\\ \nend   \n\\#h\n\\!b\n",
		NULL,
	};
	struct mem_files m = { .files = files };
	EOS_CLEANUP(eos_ignore_freep) struct eos_ignore *ig = ignore_new(&m);

	ck_assert(ignored(ig, "a.log", false));
	ck_assert(ignored(ig, "x/y/a.log", false));
	ck_assert(!ignored(ig, "keep.log", false));
	ck_assert(!ignored(ig, "x/keep.log", false));
	ck_assert(ignored(ig, "top", false));
	ck_assert(!ignored(ig, "x/top", false));
	ck_assert(ignored(ig, "build", true));
	ck_assert(!ignored(ig, "build", false));
	ck_assert(ignored(ig, "x/build/file", false));
	ck_assert(ignored(ig, "doc/a.txt", false));
	ck_assert(!ignored(ig, "doc/sub/a.txt", false));
	ck_assert(!ignored(ig, "x/doc/a.txt", false));
	ck_assert(ignored(ig, "sp ", false));
	ck_assert(!ignored(ig, "sp", false));
	ck_assert(ignored(ig, "end", false));
	ck_assert(ignored(ig, "#h", false));
	ck_assert(ignored(ig, "!b", false));
	ck_assert(!ignored(ig, "# comment", false));
	ck_assert(!ignored(ig, "", true));
	ck_assert(ignored(ig, "/x//a.log/", false));
	/* one read per directory ("", x, x/y, x/build, doc, doc/sub), cached */
	ck_assert_uint_eq(m.reads, 6);
	ck_assert(ignored(ig, "x/y/a.log", false));
	ck_assert(ignored(ig, "x/build/file", false));
	ck_assert_uint_eq(m.reads, 6);
}
END_TEST

START_TEST(test_globs)
{
	static const char *const files[] = {
		"",
		"**/deep\na/**/z\nfoo/**\n*.[oa]\n[!x]y.c\nq?.md\nx/*/w\n[[:digit:]]*.n\n"
		"[a-c]-r\n\\\\bs\nr[]]b\n",
		NULL,
	};
	struct mem_files m = { .files = files };
	EOS_CLEANUP(eos_ignore_freep) struct eos_ignore *ig = ignore_new(&m);

	ck_assert(ignored(ig, "deep", false));
	ck_assert(ignored(ig, "p/q/deep", false));
	ck_assert(ignored(ig, "a/z", false));
	ck_assert(ignored(ig, "a/b/c/z", false));
	ck_assert(!ignored(ig, "b/a/z", false));
	ck_assert(!ignored(ig, "foo", true));
	ck_assert(ignored(ig, "foo/x", false));
	ck_assert(ignored(ig, "foo/x/y", false));
	ck_assert(ignored(ig, "k.o", false));
	ck_assert(ignored(ig, "k.a", false));
	ck_assert(!ignored(ig, "k.c", false));
	ck_assert(ignored(ig, "ay.c", false));
	ck_assert(!ignored(ig, "xy.c", false));
	ck_assert(ignored(ig, "q1.md", false));
	ck_assert(!ignored(ig, "q12.md", false));
	ck_assert(ignored(ig, "x/v/w", false));
	ck_assert(!ignored(ig, "x/v/u/w", false));
	ck_assert(ignored(ig, "7z.n", false));
	ck_assert(!ignored(ig, "z7.n", false));
	ck_assert(ignored(ig, "b-r", false));
	ck_assert(!ignored(ig, "d-r", false));
	ck_assert(ignored(ig, "\\bs", false));
	ck_assert(ignored(ig, "r]b", false));
}
END_TEST

START_TEST(test_nesting)
{
	static const char *const files[] = {
		"",	  "*.c\nout/\nnested/*\n!nested/keep\n",
		"lib",	  "!*.c\n/local\n",
		"out",	  "!*\n",
		"nested", "!ign\n",
		NULL,
	};
	struct mem_files m = { .files = files };
	EOS_CLEANUP(eos_ignore_freep) struct eos_ignore *ig = ignore_new(&m);

	ck_assert(ignored(ig, "a.c", false));
	ck_assert(!ignored(ig, "lib/a.c", false));
	ck_assert(!ignored(ig, "lib/x/a.c", false));
	ck_assert(ignored(ig, "lib/local", false));
	ck_assert(!ignored(ig, "lib/x/local", false));
	/* inside an ignored directory: cannot be re-included, its .gitignore is not read */
	ck_assert(ignored(ig, "out/x", false));
	/* the deeper .gitignore wins over the shallower */
	ck_assert(!ignored(ig, "nested/ign", false));
	ck_assert(ignored(ig, "nested/other", false));
	ck_assert(ignored(ig, "nested/other/y", false));
	ck_assert(!ignored(ig, "nested/keep", true));
	ck_assert(!ignored(ig, "nested/keep/y", false));
}
END_TEST

START_TEST(test_crlf_bom_and_errors)
{
	static const char *const files[] = {
		"", "\xef\xbb\xbf*.x\r\nlast\r", "fail", "", NULL,
	};
	struct mem_files m = { .files = files, .fail = -EIO };
	EOS_CLEANUP(eos_ignore_freep) struct eos_ignore *ig = ignore_new(&m);
	struct eos_error err = { 0 };
	bool ret = true;

	ck_assert(ignored(ig, "a.x", false));
	ck_assert(ignored(ig, "last", false));
	ck_assert_int_eq(eos_ignore_check(ig, "fail/y", false, &ret, &err), -EIO);
	ck_assert_ptr_nonnull(strstr(err.msg, "fail/.gitignore"));
	ck_assert(ret);
	eos_ignore_free(NULL);
}
END_TEST

/* ---- against git check-ignore ---- */

static void
require_git(void)
{
	ck_assert_msg(system("git --version >/dev/null 2>&1") == 0,
		      "git not found: the ignore tests compare with git check-ignore");
}

struct disk_files {
	const char *root;
};

static int
disk_read(void *ctx, const char *dir, char **ret_text, size_t *ret_len, struct eos_error *err)
{
	struct disk_files *d = ctx;
	char path[4096];
	struct eos_buf b;
	char chunk[4096];
	ssize_t n;
	cleanup_close int fd = -1;

	(void)err;
	snprintf(path, sizeof(path), "%s/%s%s.gitignore", d->root, dir, *dir ? "/" : "");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	eos_buf_init(&b);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		ck_assert_int_eq(eos_buf_append(&b, chunk, (size_t)n), 0);
	ck_assert_int_ge(n, 0);
	*ret_text = (char *)eos_buf_steal(&b, ret_len);
	if (!*ret_text)
		*ret_text = strdup("");
	return 0;
}

static const char *const tricky_root = "# root rules\n"
				       "*.log\n"
				       "!important.log\n"
				       "/rootonly\n"
				       "build/\n"
				       "doc/*.txt\n"
				       "**/deep\n"
				       "a/**/z\n"
				       "foo/**\n"
				       "trail\\ \n"
				       "spaced   \n"
				       "\\#hash\n"
				       "\\!bang\n"
				       "*.[oa]\n"
				       "[!x]y.c\n"
				       "q?.md\n"
				       "/abs/dir/\n"
				       "dironly/\n"
				       "*.tmp\n"
				       "!keep.tmp\n"
				       "nested/*\n"
				       "!nested/keepdir\n"
				       "x**/y\n"
				       "foo**/bar\n"
				       "[[:digit:]]*.num\n"
				       "[a-c]-range\n"
				       "mid/*/end\n"
				       "**/any/**\n"
				       "*\\*star\n"
				       "r[]]b\n"
				       "\n"
				       "   \n"
				       "!\n"
				       "/\n";

static const char *const tricky_lib = "*.c\n"
				      "!main.c\n"
				      "/local\n"
				      "inner/\n"
				      "data/**/*.bin\n"
				      "!/build\n"
				      "sub/deep\n";

static const char *const tricky_deeper = "!*.c\nsecret\r\n!important.log\n*.log\n";

static const char *const names[] = {
	"a",	 "b",	   "z",	      "deep",	       "build",	   "foo",    "bar",	 "x",
	"y",	 "lib",	   "sub",     "nested",	       "keepdir",  "doc",    "data",	 "main.c",
	"t.c",	 "q1.md",  "x.log",   "important.log", "keep.tmp", "o.tmp",  "f.o",	 "ay.c",
	"xy.c",	 "1.num",  "b-range", "#hash",	       "!bang",	   "trail ", "rootonly", "local",
	"inner", "secret", "dironly", "abs",	       "dir",	   "deeper", "mid",	 "end",
	"any",	 "k.bin",  "xq",      "foox",	       "a*star",   "r]b",    "spaced",	 "trail",
	"fooz",	 "x.txt",
};

struct path_set {
	char **v;
	bool *dir;
	size_t n, cap;
};

static ssize_t
path_set_find(const struct path_set *s, const char *p)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], p) == 0)
			return (ssize_t)i;
	return -1;
}

/* Add p (and its ancestors, as directories). */
static void
path_set_add(struct path_set *s, const char *p, bool dir)
{
	ssize_t i = path_set_find(s, p);
	const char *slash = strrchr(p, '/');

	if (slash) {
		cleanup_free char *parent = strndup(p, (size_t)(slash - p));
		path_set_add(s, parent, true);
	}
	if (i >= 0) {
		s->dir[i] |= dir;
		return;
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		s->dir = realloc(s->dir, s->cap * sizeof(*s->dir));
		ck_assert(s->v && s->dir);
	}
	s->v[s->n] = strdup(p);
	s->dir[s->n++] = dir;
}

static void
path_set_release(struct path_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	free(s->dir);
}

/* Fixed paths that hit each rule, then random ones from the name list. */
static void
make_paths(struct path_set *s)
{
	static const char *const fixed[] = {
		"lib/deeper/x.c",
		"lib/deeper/secret",
		"lib/deeper/important.log",
		"lib/main.c",
		"lib/t.c",
		"lib/local",
		"lib/x/local",
		"lib/inner/a",
		"lib/data/k.bin",
		"lib/data/a/b/k.bin",
		"lib/build/a",
		"lib/sub/deep",
		"nested/keepdir/a",
		"nested/b",
		"abs/dir/f",
		"x/abs/dir/f",
		"a/b/c/z",
		"a/z",
		"foo/a",
		"foox/y",
		"xq/y",
		"foox/a/bar",
		"mid/a/end",
		"mid/a/b/end",
		"p/any/q",
		"any",
		"doc/x.txt",
		"doc/a/x.txt",
		"a*star",
		"spaced",
		"trail ",
		"trail",
		"r]b",
	};
	uint64_t seed = 12345;

	for (size_t i = 0; i < EOS_ARRAY_SIZE(fixed); i++)
		path_set_add(s, fixed[i], false);
	for (int i = 0; i < 600; i++) {
		char p[512] = "";
		int depth;

		eos_test_fill_random(&seed, sizeof(seed), seed + 1);
		depth = 1 + (int)(seed % 4);
		for (int d = 0; d < depth; d++) {
			const char *n = names[(seed >> (8 + 6 * d)) % EOS_ARRAY_SIZE(names)];
			strncat(p, d ? "/" : "", sizeof(p) - strlen(p) - 1);
			strncat(p, n, sizeof(p) - strlen(p) - 1);
		}
		path_set_add(s, p, (seed >> 60) & 1);
	}
}

static void
create_paths(const char *root, const struct path_set *s)
{
	char path[4096];

	for (size_t i = 0; i < s->n; i++) {
		snprintf(path, sizeof(path), "%s/%s", root, s->v[i]);
		if (s->dir[i])
			ck_assert_int_eq(eos_mkdir_parents(path, 0755, true), 0);
		else
			eos_test_write_file(path, "x", 1, 0644);
	}
}

static char *
read_all(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	*ret_len = (size_t)ftell(f);
	rewind(f);
	text = malloc(*ret_len + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(fread(text, 1, *ret_len, f), *ret_len);
	text[*ret_len] = '\0';
	fclose(f);
	return text;
}

/* Ask git check-ignore about every path: flags[i] = ignored. */
static void
git_check_ignore(const char *root, const struct path_set *s, bool *flags)
{
	char cmd[16384], in[4096], out[4096];
	cleanup_free char *text = NULL;
	size_t len = 0, off = 0;
	FILE *f;
	int st;

	snprintf(in, sizeof(in), "%s.in", root);
	snprintf(out, sizeof(out), "%s.out", root);
	f = fopen(in, "wb");
	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; i < s->n; i++)
		fwrite(s->v[i], 1, strlen(s->v[i]) + 1, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && git init -q && git check-ignore --no-index --stdin -z <'%s' >'%s'",
		 root, in, out);
	st = system(cmd);
	ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) <= 1, "git check-ignore: %d",
		      st);
	text = read_all(out, &len);
	memset(flags, 0, s->n * sizeof(*flags));
	while (off < len) {
		ssize_t i = path_set_find(s, text + off);

		ck_assert_msg(i >= 0, "git printed unknown path '%s'", text + off);
		flags[i] = true;
		off += strlen(text + off) + 1;
	}
	unlink(in);
	unlink(out);
}

/* Compare every path of s with git; returns the number of differences (printed). */
static size_t
compare_with_git(const char *root, const struct path_set *s, size_t *ret_ignored)
{
	struct disk_files d = { .root = root };
	EOS_CLEANUP(eos_ignore_freep) struct eos_ignore *ig = NULL;
	cleanup_free bool *git = calloc(s->n ? s->n : 1, sizeof(*git));
	size_t mismatches = 0;

	ck_assert_ptr_nonnull(git);
	git_check_ignore(root, s, git);
	ck_assert_int_eq(eos_ignore_new(disk_read, &d, &ig), 0);
	*ret_ignored = 0;
	for (size_t i = 0; i < s->n; i++) {
		bool ours = ignored(ig, s->v[i], s->dir[i]);

		*ret_ignored += ours;
		if (ours != git[i]) {
			mismatches++;
			fprintf(stderr, "mismatch: '%s'%s: git %d, eos %d\n", s->v[i],
				s->dir[i] ? " (dir)" : "", git[i], ours);
		}
	}
	return mismatches;
}

static void
write_ignore(const char *root, const char *dir, const char *text)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s%s.gitignore", root, dir, *dir ? "/" : "");
	eos_test_write_file(path, text, strlen(text), 0644);
}

START_TEST(test_against_git)
{
	cleanup_free char *root = NULL;
	struct path_set s = { 0 };
	size_t mismatches, nignored = 0;

	require_git();
	root = eos_test_tmpdir("ignore");
	make_paths(&s);
	create_paths(root, &s);
	write_ignore(root, "", tricky_root);
	write_ignore(root, "lib", tricky_lib);
	write_ignore(root, "lib/deeper", tricky_deeper);
	mismatches = compare_with_git(root, &s, &nignored);
	fprintf(stderr, "ignore: %zu paths, %zu ignored, %zu mismatches\n", s.n, nignored,
		mismatches);
	ck_assert_uint_eq(mismatches, 0);
	ck_assert_uint_gt(nignored, s.n / 10);
	ck_assert_uint_lt(nignored, s.n - s.n / 10);
	path_set_release(&s);
	eos_test_rm_rf(root);
}
END_TEST

static uint64_t
next_random(uint64_t *seed)
{
	*seed ^= *seed << 13;
	*seed ^= *seed >> 7;
	*seed ^= *seed << 17;
	return *seed;
}

/* A random pattern line from glob-heavy pieces. */
static void
random_pattern(uint64_t *seed, char *out, size_t size)
{
	static const char *const pieces[] = {
		"a", "b",   "ab",    "*",	    "**",  "?",	  "[ab]", "[!a]", "/",
		"/", "\\*", "[a-b]", "[[:alpha:]]", "**/", "/**", "c",	  "[]a]", "\\a",
	};
	int n = 1 + (int)(next_random(seed) % 5);

	out[0] = '\0';
	if (next_random(seed) % 3 == 0)
		strncat(out, "!", size - strlen(out) - 1);
	for (int i = 0; i < n; i++)
		strncat(out, pieces[next_random(seed) % EOS_ARRAY_SIZE(pieces)],
			size - strlen(out) - 1);
	if (next_random(seed) % 5 == 0)
		strncat(out, "/", size - strlen(out) - 1);
	strncat(out, "\n", size - strlen(out) - 1);
}

static void
random_paths(uint64_t *seed, struct path_set *s)
{
	static const char *const parts[] = { "a", "b", "ab", "ba", "c", "aa", "*", "]a", "bab" };

	for (int i = 0; i < 120; i++) {
		char p[256] = "";
		int depth = 1 + (int)(next_random(seed) % 4);

		for (int d = 0; d < depth; d++) {
			strncat(p, d ? "/" : "", sizeof(p) - strlen(p) - 1);
			strncat(p, parts[next_random(seed) % EOS_ARRAY_SIZE(parts)],
				sizeof(p) - strlen(p) - 1);
		}
		path_set_add(s, p, next_random(seed) % 3 == 0);
	}
}

START_TEST(test_random_against_git)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull + (uint64_t)_i;
	size_t total = 0, total_ignored = 0, mismatches = 0;

	require_git();
	for (int round = 0; round < 25; round++) {
		cleanup_free char *root = eos_test_tmpdir("ignore-random");
		struct path_set s = { 0 };
		char text[4096] = "", line[256];
		size_t nignored = 0;

		random_paths(&seed, &s);
		create_paths(root, &s);
		for (int k = (int)(next_random(&seed) % 6); k < 8; k++) {
			random_pattern(&seed, line, sizeof(line));
			strncat(text, line, sizeof(text) - strlen(text) - 1);
		}
		write_ignore(root, "", text);
		text[0] = '\0';
		for (int k = 0; k < 4; k++) {
			random_pattern(&seed, line, sizeof(line));
			strncat(text, line, sizeof(text) - strlen(text) - 1);
		}
		if (path_set_find(&s, "a") >= 0 && s.dir[path_set_find(&s, "a")])
			write_ignore(root, "a", text);
		mismatches += compare_with_git(root, &s, &nignored);
		total += s.n;
		total_ignored += nignored;
		path_set_release(&s);
		eos_test_rm_rf(root);
	}
	fprintf(stderr, "ignore (random %d): %zu paths, %zu ignored, %zu mismatches\n", _i, total,
		total_ignored, mismatches);
	ck_assert_uint_eq(mismatches, 0);
}
END_TEST

#ifndef EOS_IGNORE_ROUNDS
#define EOS_IGNORE_ROUNDS 4
#endif

static Suite *
ignore_suite(void)
{
	Suite *s = suite_create("ignore");
	TCase *tc = tcase_create("ignore");

	tcase_add_test(tc, test_basics);
	tcase_add_test(tc, test_globs);
	tcase_add_test(tc, test_nesting);
	tcase_add_test(tc, test_crlf_bom_and_errors);
	tcase_add_test(tc, test_against_git);
	tcase_add_loop_test(tc, test_random_against_git, 0, EOS_IGNORE_ROUNDS);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	/* git without the user's or the system's configuration (autocrlf, apply.whitespace...) */
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
	return eos_test_run(ignore_suite());
}
