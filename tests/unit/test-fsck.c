/* SPDX-License-Identifier: MIT */
/*
 * fsck, destroy, gc and stats against a real store. Each corruption is injected directly into
 * RocksDB and must be reported with its kind; destroy must leave other sandboxes intact and free
 * exactly the chunks only the destroyed sandbox used; gc must reclaim what an aborted change set
 * staged.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/digest.h"
#include "common/endian.h"

#include "store/blame.h"
#include "store/content.h"
#include "store/entry.h"
#include "store/kv.h"
#include "store/refs.h"
#include "store/sandbox.h"
#include "store/store-internal.h"
#include "tests/unit/testutil.h"

enum {
	BIG = 1 << 20,
	MAX_REPORTS = 64,
};

/* --- helpers ---------------------------------------------------------------------------------- */

static void
check_ok(int r, const struct eos_error *err, const char *what)
{
	ck_assert_msg(r >= 0, "%s: %s", what, eos_error_message(err, r));
}

static void
put_random(struct eos_changeset *cs, const char *path, uint64_t seed, size_t len)
{
	struct eos_attr a = eos_test_attr(0644);
	struct eos_error err = { 0 };
	cleanup_free uint8_t *buf = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(buf);
	eos_test_fill_random(buf, len, seed);
	check_ok(eos_changeset_put_file_mem(cs, path, &a, buf, len, &err), &err, path);
}

static void
commit(struct eos_changeset *cs)
{
	struct eos_commit_result res = { 0 };
	struct eos_error err = { 0 };

	check_ok(eos_changeset_commit(cs, 0, &res, &err), &err, "commit");
	ck_assert_uint_ne(res.version, 0);
	eos_changeset_free(cs);
}

/*
 * Sandbox id with: an inline file, a one-chunk file, a 1 MiB file shared with every sandbox
 * (seed 1), a 1 MiB file of its own (seed unique), a symlink, a hard link; then a second commit
 * rewriting the one-chunk file, and a lease on version 1.
 */
static void
build_sandbox(struct eos_store *st, const char *id, uint64_t unique)
{
	struct eos_attr root = eos_test_attr(0755), la = eos_test_attr(0777);
	struct eos_changeset *cs = NULL;
	struct eos_error err = { 0 };

	check_ok(eos_changeset_new_sandbox(st, id, "test", &root, &cs, &err), &err, "new");
	check_ok(eos_changeset_mkdir(cs, "d", &root, false, &err), &err, "mkdir");
	put_random(cs, "d/small", unique, 100);
	put_random(cs, "d/chunk", unique + 1, 20000);
	put_random(cs, "shared", 1, BIG);
	put_random(cs, "own", unique + 2, BIG);
	check_ok(eos_changeset_symlink(cs, "link", &la, "d/small", &err), &err, "symlink");
	check_ok(eos_changeset_link(cs, "d/hard", "own", &err), &err, "link");
	commit(cs);
	check_ok(eos_changeset_new(st, id, &cs, &err), &err, "changeset");
	put_random(cs, "d/chunk", unique + 3, 30000);
	commit(cs);
	check_ok(eos_store_lease_acquire(st, id, "keep", 1, NULL, &err), &err, "lease");
}

struct reports {
	size_t n;
	char kinds[MAX_REPORTS][32];
	char msgs[MAX_REPORTS][256];
};

static void
on_violation(void *ctx, const char *kind, const char *message)
{
	struct reports *r = ctx;

	if (r->n == MAX_REPORTS)
		return;
	snprintf(r->kinds[r->n], sizeof(r->kinds[r->n]), "%s", kind);
	snprintf(r->msgs[r->n], sizeof(r->msgs[r->n]), "%s", message);
	r->n++;
}

static struct eos_fsck_result
fsck(struct eos_store *st, enum eos_fsck_flags flags, struct reports *reps)
{
	struct eos_fsck_result res;
	struct eos_error err = { 0 };

	memset(reps, 0, sizeof(*reps));
	memset(&res, 0xa5, sizeof(res));
	check_ok(eos_store_fsck(st, flags, on_violation, reps, &res, &err), &err, "fsck");
	ck_assert_uint_eq(res.violations, reps->n);
	return res;
}

static void
check_clean(struct eos_store *st)
{
	struct reports reps;
	struct eos_fsck_result res = fsck(st, EOS_FSCK_VERIFY_CHUNKS, &reps);

	ck_assert_msg(res.violations == 0, "%llu violations, first: %s: %s",
		      (unsigned long long)res.violations, reps.kinds[0], reps.msgs[0]);
}

/* fsck reports kind (and, without VERIFY_CHUNKS, that only the verify pass finds it). */
static void
check_reports(struct eos_store *st, enum eos_fsck_flags flags, const char *kind)
{
	struct reports reps;
	bool found = false;

	fsck(st, flags, &reps);
	for (size_t i = 0; i < reps.n; i++)
		found = found || strcmp(reps.kinds[i], kind) == 0;
	ck_assert_msg(found, "no '%s' violation among %zu (first: %s: %s)", kind, reps.n,
		      reps.n ? reps.kinds[0] : "-", reps.n ? reps.msgs[0] : "-");
}

static uint64_t
sandbox_number(struct eos_store *st, const char *id)
{
	struct eos_error err = { 0 };
	uint64_t sbx = 0;

	check_ok(eos_sandbox_resolve(st, id, &sbx, &err), &err, "resolve");
	return sbx;
}

/* Copy the first key (and value) of cf whose value is the largest seen among the first 64. */
static void
pick_key(struct eos_store *st, enum eos_cf cf, struct eos_buf *key, struct eos_buf *val)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	size_t best = 0, i = 0;

	ck_assert_int_eq(eos_kv_iter_new(st->kv, cf, NULL, NULL, 0, 0, &it), 0);
	for (eos_kv_iter_seek_first(it); eos_kv_iter_valid(it) && i < 64;
	     eos_kv_iter_next(it), i++) {
		size_t kn, vn;
		const uint8_t *k = eos_kv_iter_key(it, &kn);
		const uint8_t *v = eos_kv_iter_value(it, &vn);

		if (vn <= best)
			continue;
		best = vn;
		eos_buf_truncate(key, 0);
		eos_buf_truncate(val, 0);
		ck_assert_int_eq(eos_buf_append(key, k, kn), 0);
		ck_assert_int_eq(eos_buf_append(val, v, vn), 0);
	}
	ck_assert_uint_gt(key->len, 0);
}

/* --- chunk sets ------------------------------------------------------------------------------- */

static void
add_file_chunks(struct eos_store *st, const char *id, uint64_t v, const char *path,
		struct eos_test_chunk_set *set)
{
	struct eos_error err = { 0 };
	struct eos_stat s;

	check_ok(eos_store_stat(st, id, v, path, &s, &err), &err, path);
	eos_test_chunk_set_add_content(set, st, &s.content);
}

/* The chunks of build_sandbox()'s files at both versions. */
static void
sandbox_chunks(struct eos_store *st, const char *id, struct eos_test_chunk_set *set)
{
	static const char *const files[] = { "d/small", "d/chunk", "shared", "own", "d/hard" };

	for (uint64_t v = 1; v <= 2; v++)
		for (size_t i = 0; i < EOS_ARRAY_SIZE(files); i++)
			add_file_chunks(st, id, v, files[i], set);
	eos_test_chunk_set_sort(set);
}

/* --- fsck ------------------------------------------------------------------------------------- */

START_TEST(test_fsck_clean)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	struct eos_store_stats stats;
	struct eos_fsck_result res;
	struct eos_error err = { 0 };
	struct reports reps;

	res = fsck(st, EOS_FSCK_VERIFY_CHUNKS, &reps);
	ck_assert_uint_eq(res.violations, 0);
	ck_assert_uint_eq(res.sandboxes, 0);
	build_sandbox(st, "one", 10);
	build_sandbox(st, "two", 20);
	res = fsck(st, EOS_FSCK_VERIFY_CHUNKS, &reps);
	ck_assert_msg(res.violations == 0, "%s: %s", reps.kinds[0], reps.msgs[0]);
	ck_assert_uint_eq(res.sandboxes, 2);
	ck_assert_uint_gt(res.entries, 10);
	ck_assert_uint_gt(res.chunks, 10);
	ck_assert_uint_ge(res.manifests, 3);
	ck_assert_uint_eq(res.garbage_chunks, 0);

	check_ok(eos_store_stats(st, &stats, &err), &err, "stats");
	ck_assert_uint_eq(stats.sandboxes, 2);
	ck_assert_uint_eq(stats.chunks, res.chunks);
	ck_assert_uint_eq(stats.manifests, res.manifests);
	ck_assert_uint_eq(stats.entries, res.entries);
	ck_assert_uint_ge(stats.chunk_raw_bytes, 3 * BIG);
	ck_assert_uint_gt(stats.chunk_stored_bytes, 0);
	ck_assert_uint_gt(stats.disk_bytes, stats.chunk_stored_bytes / 2);
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(test_fsck_refcount)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	struct eos_error err = { 0 };
	uint8_t count[8];

	build_sandbox(st, "one", 10);
	pick_key(st, EOS_CF_REFS, &key, &val);
	ck_assert_uint_eq(val.len, 8);
	eos_put_le64(count, eos_get_le64(val.data) + 1);
	eos_test_kv_put(st, EOS_CF_REFS, &key, count, sizeof(count));
	check_reports(st, 0, "refcount");
	check_ok(eos_kv_delete(st->kv, EOS_CF_REFS, key.data, key.len, true, &err), &err, "delete");
	check_reports(st, 0, "refcount");
	eos_test_kv_put(st, EOS_CF_REFS, &key, val.data, val.len);
	check_clean(st);
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(test_fsck_missing_chunk)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	struct eos_error err = { 0 };

	build_sandbox(st, "one", 10);
	pick_key(st, EOS_CF_CHUNKS, &key, &val);
	check_ok(eos_kv_delete(st->kv, EOS_CF_CHUNKS, key.data, key.len, true, &err), &err, "del");
	check_reports(st, 0, "missing-chunk");
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(test_fsck_corrupt_chunk)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	struct eos_fsck_result res;
	struct reports reps;

	build_sandbox(st, "one", 10);
	pick_key(st, EOS_CF_CHUNKS, &key, &val);
	ck_assert_uint_gt(val.len, 1000);
	val.data[val.len / 2] ^= 0x40;
	eos_test_kv_put(st, EOS_CF_CHUNKS, &key, val.data, val.len);
	ck_assert_uint_eq(fsck(st, 0, &reps).violations, 0);
	check_reports(st, EOS_FSCK_VERIFY_CHUNKS, "corrupt-chunk");
	/* The chunk, each path whose content holds it, and the sandbox's summary. */
	check_reports(st, EOS_FSCK_VERIFY_CHUNKS, "damaged-path");
	check_reports(st, EOS_FSCK_VERIFY_CHUNKS, "damaged-sandbox");
	res = fsck(st, EOS_FSCK_VERIFY_CHUNKS, &reps);
	ck_assert_uint_ge(res.damaged_paths, 1);
	ck_assert_uint_eq(res.damaged_paths, reps.n - 2);
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(test_fsck_lease_missing_version)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	uint8_t val[16];

	build_sandbox(st, "one", 10);
	ck_assert_int_eq(eos_meta_key(&key, sandbox_number(st, "one"), "lease:ghost"), 0);
	eos_put_le64(val, 99);
	eos_put_le64(val + 8, 0);
	eos_test_kv_put(st, EOS_CF_META, &key, val, sizeof(val));
	check_reports(st, 0, "lease");
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(test_fsck_garbage_entry)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf orphan = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf root = { 0 };
	struct eos_error err = { 0 };

	build_sandbox(st, "one", 10);
	ck_assert_int_eq(eos_entry_key(&key, sandbox_number(st, "one"), "d", 1, "junk", 4, 1), 0);
	eos_test_kv_put(st, EOS_CF_ENTRIES, &key, "garbage", 7);
	check_reports(st, 0, "entry");
	check_ok(eos_kv_delete(st->kv, EOS_CF_ENTRIES, key.data, key.len, true, &err), &err, "del");
	check_clean(st);
	/* A well-formed record (the root's) under an unregistered sandbox number. */
	eos_buf_truncate(&key, 0);
	ck_assert_int_eq(eos_entry_key(&key, sandbox_number(st, "one"), "", 0, "", 0, 1), 0);
	check_ok(eos_kv_get(st->kv, NULL, EOS_CF_ENTRIES, key.data, key.len, &root, &err), &err,
		 "get root");
	ck_assert_int_eq(eos_entry_key(&orphan, 4242, "", 0, "", 0, 1), 0);
	eos_test_kv_put(st, EOS_CF_ENTRIES, &orphan, root.data, root.len);
	check_reports(st, 0, "orphan-entry");
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

/* Blame records: corrupt, of an unregistered sandbox, or above the head are violations. */
START_TEST(test_fsck_blame_records)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 }, val = { 0 };
	EOS_CLEANUP(eos_blame_release) struct eos_blame b = { 0 };
	struct eos_error err = { 0 };
	uint64_t sbx;

	build_sandbox(st, "one", 10);
	sbx = sandbox_number(st, "one");
	ck_assert_int_eq(eos_blame_single(&b, 3, "operation:x"), 0);
	ck_assert_int_eq(eos_blame_encode(&b, &val), 0);
	ck_assert_int_eq(eos_blame_key(&key, sbx, "d/f", 1), 0);
	eos_test_kv_put(st, EOS_CF_BLAME, &key, val.data, val.len);
	check_clean(st);
	eos_test_kv_put(st, EOS_CF_BLAME, &key, "junk", 4);
	check_reports(st, 0, "blame");
	check_ok(eos_kv_delete(st->kv, EOS_CF_BLAME, key.data, key.len, true, &err), &err, "del");
	eos_buf_truncate(&key, 0);
	ck_assert_int_eq(eos_blame_key(&key, sbx, "d/f", 99), 0);
	eos_test_kv_put(st, EOS_CF_BLAME, &key, val.data, val.len);
	check_reports(st, 0, "blame-version");
	check_ok(eos_kv_delete(st->kv, EOS_CF_BLAME, key.data, key.len, true, &err), &err, "del");
	eos_buf_truncate(&key, 0);
	ck_assert_int_eq(eos_blame_key(&key, 4242, "d/f", 1), 0);
	eos_test_kv_put(st, EOS_CF_BLAME, &key, val.data, val.len);
	check_reports(st, 0, "orphan-blame");
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(test_fsck_head_missing_layer)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	uint8_t val[8];

	build_sandbox(st, "one", 10);
	ck_assert_int_eq(eos_meta_key(&key, sandbox_number(st, "one"), "head"), 0);
	eos_put_le64(val, 77);
	eos_test_kv_put(st, EOS_CF_META, &key, val, sizeof(val));
	check_reports(st, 0, "head");
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

/* --- destroy and gc --------------------------------------------------------------------------- */

static size_t
count_keys(struct eos_store *st, enum eos_cf cf, uint64_t sbx)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	uint8_t lo[8], hi[8];
	size_t n = 0;

	eos_put_be64(lo, sbx);
	eos_put_be64(hi, sbx + 1);
	ck_assert_int_eq(eos_kv_iter_new(st->kv, cf, NULL, hi, sizeof(hi), 0, &it), 0);
	for (eos_kv_iter_seek(it, lo, sizeof(lo)); eos_kv_iter_valid(it); eos_kv_iter_next(it))
		n++;
	return n;
}

START_TEST(test_destroy_keeps_others)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	struct eos_test_chunk_set want = { 0 }, got;
	struct eos_sandbox_info info;
	struct eos_error err = { 0 };
	struct eos_digest before, after;
	uint64_t sbx;

	build_sandbox(st, "one", 10);
	build_sandbox(st, "two", 20);
	sbx = sandbox_number(st, "one");
	before = eos_test_tree_digest(st, "two", 0);
	sandbox_chunks(st, "two", &want);

	check_ok(eos_store_sandbox_destroy(st, "one", &err), &err, "destroy");
	ck_assert_int_eq(eos_store_sandbox_get(st, "one", &info, &err), -ENOENT);
	ck_assert_int_eq(eos_store_sandbox_destroy(st, "one", &err), -ENOENT);
	for (enum eos_cf cf = EOS_CF_ENTRIES; cf <= EOS_CF_META; cf++)
		ck_assert_uint_eq(count_keys(st, cf, sbx), 0);
	after = eos_test_tree_digest(st, "two", 0);
	ck_assert(eos_digest_eq(&before, &after));
	got = eos_test_chunk_set_stored(st);
	ck_assert_msg(eos_test_chunk_set_eq(&want, &got), "chunks: %zu stored, %zu used by 'two'",
		      got.n, want.n);
	check_clean(st);
	eos_test_chunk_set_release(&got);

	/* The id is free again. */
	build_sandbox(st, "one", 30);
	check_clean(st);
	check_ok(eos_store_sandbox_destroy(st, "two", &err), &err, "destroy two");
	check_ok(eos_store_sandbox_destroy(st, "one", &err), &err, "destroy one");
	got = eos_test_chunk_set_stored(st);
	ck_assert_uint_eq(got.n, 0);
	check_clean(st);
	eos_test_chunk_set_release(&got);
	eos_test_chunk_set_release(&want);
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(test_gc_aborted_changeset)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	struct eos_test_chunk_set before, after;
	struct eos_changeset *cs = NULL;
	struct eos_fsck_result res;
	struct eos_error err = { 0 };
	struct reports reps;
	uint64_t freed = 0;

	build_sandbox(st, "one", 10);
	before = eos_test_chunk_set_stored(st);
	check_ok(eos_changeset_new(st, "one", &cs, &err), &err, "changeset");
	put_random(cs, "staged", 777, BIG);
	put_random(cs, "staged-chunk", 778, 20000);
	eos_changeset_free(cs);

	res = fsck(st, EOS_FSCK_VERIFY_CHUNKS, &reps);
	ck_assert_uint_eq(res.violations, 0);
	ck_assert_uint_gt(res.garbage_chunks, 2);
	check_ok(eos_store_gc(st, &freed, &err), &err, "gc");
	ck_assert_uint_eq(freed, res.garbage_chunks);
	res = fsck(st, EOS_FSCK_VERIFY_CHUNKS, &reps);
	ck_assert_uint_eq(res.violations, 0);
	ck_assert_uint_eq(res.garbage_chunks, 0);
	after = eos_test_chunk_set_stored(st);
	ck_assert(eos_test_chunk_set_eq(&before, &after));
	check_ok(eos_store_gc(st, &freed, &err), &err, "gc again");
	ck_assert_uint_eq(freed, 0);
	eos_test_chunk_set_release(&before);
	eos_test_chunk_set_release(&after);
	eos_store_close(TAKE_PTR(st));
	eos_test_rm_rf(dir);
}
END_TEST

static Suite *
fsck_suite(void)
{
	Suite *s = suite_create("fsck");
	TCase *tc = tcase_create("fsck");
	TCase *tm = tcase_create("maintenance");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fsck_clean);
	tcase_add_test(tc, test_fsck_refcount);
	tcase_add_test(tc, test_fsck_missing_chunk);
	tcase_add_test(tc, test_fsck_corrupt_chunk);
	tcase_add_test(tc, test_fsck_lease_missing_version);
	tcase_add_test(tc, test_fsck_garbage_entry);
	tcase_add_test(tc, test_fsck_blame_records);
	tcase_add_test(tc, test_fsck_head_missing_layer);
	suite_add_tcase(s, tc);
	tcase_set_timeout(tm, 60);
	tcase_add_test(tm, test_destroy_keeps_others);
	tcase_add_test(tm, test_gc_aborted_changeset);
	suite_add_tcase(s, tm);
	return s;
}

int
main(void)
{
	return eos_test_run(fsck_suite());
}
