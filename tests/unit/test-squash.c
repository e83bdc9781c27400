/* SPDX-License-Identifier: MIT */
/*
 * Squash against a real store: a history of 30 commits (files created, rewritten, deleted,
 * directories removed and recreated, an opaque mkdir, symlinks, hard links, 1 MiB files rewritten
 * whole or in part) with leases on two middle versions. Squash must keep every retained version's
 * tree byte-identical, leave exactly the chunks those versions reference, and record the folded
 * ranges.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/digest.h"

#include "store/content.h"
#include "store/kv.h"
#include "store/store-internal.h"
#include "tests/unit/testutil.h"

enum {
	HISTORY = 30,
	LEASE_A = 10,
	LEASE_B = 20,
	BIG = 1 << 20,
};

static const char *const sandbox = "sq";

/* --- the chunks versions reference ------------------------------------------------------------ */

struct chunk_walk {
	struct eos_store *st;
	uint64_t v;
	struct eos_test_chunk_set *set;
	char **dirs;
	size_t ndirs;
	const char *dir;
};

static int
chunk_walk_one(void *ctx, const char *name, const struct eos_stat *s)
{
	struct chunk_walk *w = ctx;
	char *path = NULL;

	if (s->kind == EOS_KIND_FILE)
		eos_test_chunk_set_add_content(w->set, w->st, &s->content);
	if (s->kind != EOS_KIND_DIR)
		return 0;
	ck_assert_int_ge(asprintf(&path, "%s%s%s", w->dir, w->dir[0] ? "/" : "", name), 0);
	w->dirs = reallocarray(w->dirs, w->ndirs + 1, sizeof(*w->dirs));
	ck_assert_ptr_nonnull(w->dirs);
	w->dirs[w->ndirs++] = path;
	return 0;
}

/* Add the chunks referenced by every file visible at v below dir. */
static void
collect_chunks(struct eos_store *st, const char *id, uint64_t v, const char *dir,
	       struct eos_test_chunk_set *set)
{
	struct chunk_walk w = { .st = st, .v = v, .set = set, .dir = dir };
	struct eos_error err = { 0 };
	int r;

	r = eos_store_readdir(st, id, v, dir, NULL, chunk_walk_one, &w, &err);
	ck_assert_msg(r == 0, "readdir '%s': %s", dir, eos_error_message(&err, r));
	for (size_t i = 0; i < w.ndirs; i++) {
		collect_chunks(st, id, v, w.dirs[i], set);
		free(w.dirs[i]);
	}
	free(w.dirs);
}

static struct eos_test_chunk_set
predicted_chunks(struct eos_store *st, const char *id, const uint64_t *versions, size_t n)
{
	struct eos_test_chunk_set s = { 0 };

	for (size_t i = 0; i < n; i++)
		collect_chunks(st, id, versions[i], "", &s);
	eos_test_chunk_set_sort(&s);
	return s;
}

/* --- building the history --------------------------------------------------------------------- */

static void
check_ok(int r, const struct eos_error *err, const char *what)
{
	ck_assert_msg(r >= 0, "%s: %s", what, eos_error_message(err, r));
}

static void
put_small(struct eos_changeset *cs, const char *path, unsigned seed, size_t len)
{
	struct eos_attr a = eos_test_attr(0644);
	struct eos_error err = { 0 };
	uint8_t buf[16384];

	ck_assert_uint_le(len, sizeof(buf));
	eos_test_fill_random(buf, len, seed);
	check_ok(eos_changeset_put_file_mem(cs, path, &a, buf, len, &err), &err, path);
}

static void
put_big(struct eos_changeset *cs, const char *path, unsigned seed, unsigned patch)
{
	struct eos_attr a = eos_test_attr(0644);
	struct eos_error err = { 0 };
	cleanup_free uint8_t *buf = malloc(BIG);

	ck_assert_ptr_nonnull(buf);
	eos_test_fill_random(buf, BIG, seed);
	/* A patch rewrites 4 KiB in the middle: only the chunks around it change. */
	if (patch)
		eos_test_fill_random(buf + (size_t)patch * 37 * 1024 % (BIG - 4096), 4096,
				     1000 + patch);
	check_ok(eos_changeset_put_file_mem(cs, path, &a, buf, BIG, &err), &err, path);
}

static void
mkdir_(struct eos_changeset *cs, const char *path, bool opaque)
{
	struct eos_attr a = eos_test_attr(0755);
	struct eos_error err = { 0 };

	check_ok(eos_changeset_mkdir(cs, path, &a, opaque, &err), &err, path);
}

static void
remove_(struct eos_changeset *cs, const char *path)
{
	struct eos_error err = { 0 };

	check_ok(eos_changeset_remove(cs, path, &err), &err, path);
}

static uint64_t
commit(struct eos_changeset *cs)
{
	struct eos_commit_result res = { 0 };
	struct eos_error err = { 0 };
	int r = eos_changeset_commit(cs, 0, &res, &err);

	check_ok(r, &err, "commit");
	eos_changeset_free(cs);
	ck_assert_uint_ne(res.version, 0);
	return res.version;
}

static struct eos_changeset *
begin(struct eos_store *st)
{
	struct eos_changeset *cs = NULL;
	struct eos_error err = { 0 };

	check_ok(eos_changeset_new(st, sandbox, &cs, &err), &err, "changeset");
	return cs;
}

static void
build_base(struct eos_store *st)
{
	struct eos_attr root = eos_test_attr(0755), la = eos_test_attr(0777);
	struct eos_changeset *cs = NULL;
	struct eos_error err = { 0 };

	check_ok(eos_changeset_new_sandbox(st, sandbox, "test", &root, &cs, &err), &err, "new");
	mkdir_(cs, "src", false);
	mkdir_(cs, "src/lib", false);
	mkdir_(cs, "docs", false);
	mkdir_(cs, "big", false);
	mkdir_(cs, "gen", false);
	put_small(cs, "src/a.c", 1, 100);
	put_small(cs, "src/b.c", 2, 10000);
	put_small(cs, "src/lib/old.c", 3, 5000);
	put_small(cs, "docs/readme", 4, 300);
	put_big(cs, "big/blob1", 5, 0);
	put_big(cs, "big/blob2", 6, 0);
	check_ok(eos_changeset_symlink(cs, "link", &la, "src/a.c", &err), &err, "symlink");
	check_ok(eos_changeset_link(cs, "src/b-hard", "src/b.c", &err), &err, "link");
	ck_assert_uint_eq(commit(cs), 1);
}

/* One commit of the history: what changes at version i (2..HISTORY). */
static void
build_step(struct eos_store *st, unsigned i)
{
	struct eos_changeset *cs = begin(st);
	struct eos_attr a = eos_test_attr(0600), la = eos_test_attr(0777);
	struct eos_error err = { 0 };
	char path[64];

	snprintf(path, sizeof(path), "gen/f%u", i);
	put_small(cs, path, 100 + i, 50 + i * 300);
	if (i > 5) {
		snprintf(path, sizeof(path), "gen/f%u", i - 4);
		remove_(cs, path);
	}
	if (i % 2 == 0)
		put_small(cs, "src/a.c", 200 + i, 80 + i);
	if (i % 3 == 0)
		put_big(cs, "big/blob1", 300 + i, 0);
	if (i % 4 == 0 && i != 8)
		put_big(cs, "big/blob2", 6, i);
	if (i % 5 == 0)
		remove_(cs, "docs");
	if (i % 5 == 1) {
		mkdir_(cs, "docs", false);
		snprintf(path, sizeof(path), "docs/readme%u", i);
		put_small(cs, path, 400 + i, 2000);
	}
	switch (i) {
	case 7:
		remove_(cs, "big/blob2");
		break;
	case 9:
		put_big(cs, "big/blob2", 700, 0);
		break;
	case 12:
		mkdir_(cs, "src/lib", true);
		put_small(cs, "src/lib/new.c", 12, 7000);
		break;
	case 18:
		check_ok(eos_changeset_set_attr(cs, "src/b.c", &a, &err), &err, "set_attr");
		break;
	case 22:
		remove_(cs, "link");
		break;
	case 23:
		check_ok(eos_changeset_symlink(cs, "link", &la, "docs", &err), &err, "symlink");
		break;
	case 25:
		check_ok(eos_changeset_link(cs, "gen/hard25", "big/blob1", &err), &err, "link");
		break;
	default:
		break;
	}
	ck_assert_uint_eq(commit(cs), i);
}

static void
build_history(struct eos_store *st)
{
	build_base(st);
	for (unsigned i = 2; i <= HISTORY; i++)
		build_step(st, i);
}

/* --- checks ----------------------------------------------------------------------------------- */

static void
check_fsck_clean(struct eos_store *st)
{
	struct eos_fsck_result res = { 0 };
	struct eos_error err = { 0 };
	int r = eos_store_fsck(st, EOS_FSCK_VERIFY_CHUNKS, NULL, NULL, &res, &err);

	check_ok(r, &err, "fsck");
	ck_assert_uint_eq(res.violations, 0);
	ck_assert_uint_eq(res.garbage_chunks, 0);
}

static void
check_layers(struct eos_store *st, const struct eos_layer_info *want, size_t n)
{
	cleanup_free struct eos_layer_info *ls = NULL;
	struct eos_error err = { 0 };
	size_t got = 0;

	check_ok(eos_store_layer_list(st, sandbox, &ls, &got, &err), &err, "layer list");
	ck_assert_uint_eq(got, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(ls[i].version, want[i].version);
		ck_assert_uint_eq(ls[i].parent, want[i].parent);
		ck_assert_uint_eq(ls[i].squashed_from, want[i].squashed_from);
	}
}

static void
check_squashed(struct eos_store *st, uint64_t v)
{
	struct eos_error err = { 0 };
	struct eos_stat s;
	int r = eos_store_stat(st, sandbox, v, "", &s, &err);

	ck_assert_int_eq(r, -ENOENT);
	ck_assert_msg(strstr(err.msg, "squashed"), "version %llu: '%s'", (unsigned long long)v,
		      err.msg);
}

static void
check_chunks(struct eos_store *st, const uint64_t *retained, size_t n)
{
	struct eos_test_chunk_set want = predicted_chunks(st, sandbox, retained, n);
	struct eos_test_chunk_set got = eos_test_chunk_set_stored(st);

	ck_assert_msg(eos_test_chunk_set_eq(&want, &got), "chunks: %zu stored, %zu predicted",
		      got.n, want.n);
	eos_test_chunk_set_release(&want);
	eos_test_chunk_set_release(&got);
}

static void
lease(struct eos_store *st, const char *name, uint64_t v)
{
	struct eos_error err = { 0 };

	check_ok(eos_store_lease_acquire(st, sandbox, name, v, NULL, &err), &err, "lease");
}

static struct eos_squash_result
squash(struct eos_store *st)
{
	struct eos_squash_result res;
	struct eos_error err = { 0 };

	memset(&res, 0xa5, sizeof(res));
	check_ok(eos_store_squash(st, sandbox, &res, &err), &err, "squash");
	return res;
}

/* --- tests ------------------------------------------------------------------------------------ */

START_TEST(test_squash_keeps_retained_versions)
{
	static const uint64_t retained[] = { LEASE_A, LEASE_B, HISTORY };
	static const struct eos_layer_info want[] = {
		{ .version = LEASE_A, .parent = 0, .squashed_from = 1 },
		{ .version = LEASE_B, .parent = LEASE_A, .squashed_from = LEASE_A + 1 },
		{ .version = HISTORY, .parent = LEASE_B, .squashed_from = LEASE_B + 1 },
	};
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	struct eos_digest before[EOS_ARRAY_SIZE(retained)];
	struct eos_test_chunk_set all, survivors;
	struct eos_squash_result res;
	struct eos_sandbox_info info;
	struct eos_error err = { 0 };

	build_history(st);
	lease(st, "a", LEASE_A);
	lease(st, "b", LEASE_B);
	check_fsck_clean(st);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(retained); i++)
		before[i] = eos_test_tree_digest(st, sandbox, retained[i]);
	all = eos_test_chunk_set_stored(st);
	survivors = predicted_chunks(st, sandbox, retained, EOS_ARRAY_SIZE(retained));
	ck_assert_uint_lt(survivors.n, all.n);

	res = squash(st);
	ck_assert_uint_eq(res.layers_removed, HISTORY - EOS_ARRAY_SIZE(retained));
	ck_assert_uint_gt(res.entries_removed, 0);
	ck_assert_uint_eq(res.chunks_freed, all.n - survivors.n);
	ck_assert_uint_gt(res.bytes_freed, 0);
	/* its phases, for tracing: the plan, then the write */
	ck_assert_uint_eq(res.attempts, 1);
	ck_assert(res.plan_start > 0 && res.plan_start <= res.plan_end);
	ck_assert(res.plan_end <= res.write_start && res.write_start <= res.write_end);

	for (size_t i = 0; i < EOS_ARRAY_SIZE(retained); i++) {
		struct eos_digest d = eos_test_tree_digest(st, sandbox, retained[i]);

		ck_assert_msg(eos_digest_eq(&d, &before[i]), "version %llu changed",
			      (unsigned long long)retained[i]);
	}
	check_layers(st, want, EOS_ARRAY_SIZE(want));
	for (uint64_t v = 1; v < HISTORY; v++)
		if (v != LEASE_A && v != LEASE_B)
			check_squashed(st, v);
	check_chunks(st, retained, EOS_ARRAY_SIZE(retained));
	check_fsck_clean(st);
	check_ok(eos_store_sandbox_get(st, sandbox, &info, &err), &err, "sandbox get");
	ck_assert_uint_eq(info.base, LEASE_A);
	ck_assert_uint_eq(info.layers, EOS_ARRAY_SIZE(retained));
	ck_assert_uint_eq(info.head, HISTORY);
	eos_test_chunk_set_release(&all);
	eos_test_chunk_set_release(&survivors);
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(test_squash_again_is_noop)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	struct eos_squash_result res;
	uint64_t n;

	build_history(st);
	lease(st, "a", LEASE_A);
	squash(st);
	n = eos_test_tree_count(st, sandbox, 0);
	res = squash(st);
	ck_assert_uint_eq(res.layers_removed, 0);
	ck_assert_uint_eq(res.entries_removed, 0);
	ck_assert_uint_eq(res.chunks_freed, 0);
	ck_assert_uint_eq(res.bytes_freed, 0);
	ck_assert_uint_eq(eos_test_tree_count(st, sandbox, 0), n);
	check_fsck_clean(st);
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(test_squash_after_lease_release)
{
	static const uint64_t retained[] = { LEASE_B, HISTORY };
	static const struct eos_layer_info want[] = {
		{ .version = LEASE_B, .parent = 0, .squashed_from = 1 },
		{ .version = HISTORY, .parent = LEASE_B, .squashed_from = LEASE_B + 1 },
	};
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	struct eos_digest b, head;
	struct eos_squash_result res;
	struct eos_error err = { 0 };

	build_history(st);
	lease(st, "a", LEASE_A);
	lease(st, "b", LEASE_B);
	squash(st);
	b = eos_test_tree_digest(st, sandbox, LEASE_B);
	head = eos_test_tree_digest(st, sandbox, HISTORY);
	check_ok(eos_store_lease_release(st, sandbox, "a", &err), &err, "release");
	res = squash(st);
	ck_assert_uint_eq(res.layers_removed, 1);
	ck_assert_uint_gt(res.chunks_freed, 0);
	check_layers(st, want, EOS_ARRAY_SIZE(want));
	{
		struct eos_digest b2 = eos_test_tree_digest(st, sandbox, LEASE_B);
		struct eos_digest h2 = eos_test_tree_digest(st, sandbox, HISTORY);

		ck_assert(eos_digest_eq(&b, &b2));
		ck_assert(eos_digest_eq(&head, &h2));
	}
	check_squashed(st, LEASE_A);
	check_squashed(st, 3);
	check_chunks(st, retained, EOS_ARRAY_SIZE(retained));
	check_fsck_clean(st);
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(test_squash_then_commit)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	struct eos_attr a = eos_test_attr(0644);
	struct eos_changeset *cs;
	struct eos_layer_info l;
	struct eos_error err = { 0 };
	struct eos_digest old;
	char buf[32];
	uint64_t v;

	build_history(st);
	squash(st);
	old = eos_test_tree_digest(st, sandbox, HISTORY);
	cs = begin(st);
	check_ok(eos_changeset_put_file_mem(cs, "after.txt", &a, "after squash", 12, &err), &err,
		 "put");
	remove_(cs, "big/blob1");
	v = commit(cs);
	ck_assert_uint_eq(v, HISTORY + 1);
	check_ok(eos_store_layer_get(st, sandbox, v, &l, &err), &err, "layer get");
	ck_assert_uint_eq(l.parent, HISTORY);
	check_ok(eos_store_file_open(st, sandbox, 0, "after.txt", &f, &err), &err, "open");
	ck_assert_int_eq(eos_file_pread(f, buf, sizeof(buf), 0, &err), 12);
	ck_assert_mem_eq(buf, "after squash", 12);
	{
		struct eos_digest again = eos_test_tree_digest(st, sandbox, HISTORY);

		ck_assert(eos_digest_eq(&old, &again));
	}
	/* The next squash folds HISTORY (no longer the head) into the new head. */
	squash(st);
	check_squashed(st, HISTORY);
	check_chunks(st, &v, 1);
	check_fsck_clean(st);
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(test_squash_nothing)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	struct eos_squash_result res;
	struct eos_error err = { 0 };

	build_base(st);
	res = squash(st);
	ck_assert_uint_eq(res.layers_removed, 0);
	ck_assert_uint_eq(res.entries_removed, 0);
	ck_assert_uint_eq(res.chunks_freed, 0);
	ck_assert_int_eq(eos_store_squash(st, "nope", &res, &err), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "nope"));
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

static Suite *
squash_suite(void)
{
	Suite *s = suite_create("squash");
	TCase *tc = tcase_create("squash");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_squash_keeps_retained_versions);
	tcase_add_test(tc, test_squash_again_is_noop);
	tcase_add_test(tc, test_squash_after_lease_release);
	tcase_add_test(tc, test_squash_then_commit);
	tcase_add_test(tc, test_squash_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(squash_suite());
}
