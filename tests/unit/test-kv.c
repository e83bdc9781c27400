/* SPDX-License-Identifier: MIT */
/* store/kv against a real RocksDB in a temp dir. */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/error.h"

#include "store/kv.h"
#include "tests/unit/testutil.h"

/* One database in a fresh temp dir per test. */
struct fixture {
	char *dir;
	struct eos_kv *kv;
};

static void
fixture_init(struct fixture *f)
{
	f->dir = eos_test_tmpdir("kv");
	f->kv = eos_test_kv_open(f->dir, true);
}

static void
fixture_reopen(struct fixture *f)
{
	eos_kv_close(f->kv);
	f->kv = eos_test_kv_open(f->dir, false);
}

static void
fixture_release(struct fixture *f)
{
	eos_kv_close(f->kv);
	eos_test_rm_rf(f->dir);
	free(f->dir);
}

static void
put(struct eos_kv *kv, enum eos_cf cf, const char *k, const char *v)
{
	struct eos_error err = { 0 };
	int r = eos_kv_put(kv, cf, k, strlen(k), v, strlen(v), false, &err);

	ck_assert_msg(r == 0, "put '%s': %s", k, eos_error_message(&err, r));
}

/* Assert k reads as v through snap (v NULL: absent). */
static void
expect_snap(struct eos_kv *kv, const struct eos_kv_snapshot *snap, enum eos_cf cf, const char *k,
	    const char *v)
{
	struct eos_error err = { 0 };
	struct eos_buf b;
	int r;

	eos_buf_init(&b);
	r = eos_kv_get(kv, snap, cf, k, strlen(k), &b, &err);
	if (!v) {
		ck_assert_msg(r == -ENOENT, "'%s' in '%s': expected absent, got %d", k,
			      eos_kv_cf_name(cf), r);
	} else {
		ck_assert_msg(r == 0, "get '%s': %s", k, eos_error_message(&err, r));
		ck_assert_uint_eq(b.len, strlen(v));
		ck_assert_mem_eq(b.data, v, b.len);
	}
	eos_buf_release(&b);
}

static void
expect(struct eos_kv *kv, enum eos_cf cf, const char *k, const char *v)
{
	expect_snap(kv, NULL, cf, k, v);
}

static void
flush(struct eos_kv *kv)
{
	struct eos_error err = { 0 };
	int r = eos_kv_flush(kv, &err);

	ck_assert_msg(r == 0, "flush: %s", eos_error_message(&err, r));
}

START_TEST(test_cf_names)
{
	static const char *const names[] = { "default", "chunks", "refs",    "manifests", "entries",
					     "layers",	"meta",	  "session", "blame",	  "obs" };

	ck_assert_uint_eq(EOS_ARRAY_SIZE(names), EOS_CF_COUNT);
	for (unsigned i = 0; i < EOS_CF_COUNT; i++)
		ck_assert_str_eq(eos_kv_cf_name((enum eos_cf)i), names[i]);
	ck_assert_ptr_null(eos_kv_cf_name(EOS_CF_COUNT));
}
END_TEST

START_TEST(test_open_missing)
{
	struct eos_kv_options o = { .create = false };
	struct eos_error err = { 0 };
	struct eos_kv *kv = NULL;
	cleanup_free char *dir = eos_test_tmpdir("kv");
	cleanup_free char *missing = NULL;
	int r;

	/* An existing but empty directory is no database either. */
	r = eos_kv_open(dir, &o, &kv, &err);
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_ptr_null(kv);
	ck_assert_msg(strstr(err.msg, "does not exist") && strstr(err.msg, dir), "%s", err.msg);
	ck_assert_int_ne(asprintf(&missing, "%s/nope", dir), -1);
	eos_error_clear(&err);
	r = eos_kv_open(missing, &o, &kv, &err);
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_ptr_null(kv);
	ck_assert_msg(strstr(err.msg, "'") && strstr(err.msg, "nope"), "%s", err.msg);
	/* And nothing was created on the way. */
	ck_assert_int_ne(access(missing, F_OK), 0);
	eos_test_rm_rf(dir);
}
END_TEST

START_TEST(test_reopen_every_cf)
{
	struct fixture f;
	char k[32], v[32];

	fixture_init(&f);
	for (unsigned i = 0; i < EOS_CF_COUNT; i++) {
		snprintf(k, sizeof(k), "key-%u-of-%s", i, eos_kv_cf_name((enum eos_cf)i));
		snprintf(v, sizeof(v), "value-%u", i);
		put(f.kv, (enum eos_cf)i, k, v);
	}
	/* Not flushed: the WAL alone must bring everything back. */
	fixture_reopen(&f);
	for (unsigned i = 0; i < EOS_CF_COUNT; i++) {
		snprintf(k, sizeof(k), "key-%u-of-%s", i, eos_kv_cf_name((enum eos_cf)i));
		snprintf(v, sizeof(v), "value-%u", i);
		expect(f.kv, (enum eos_cf)i, k, v);
		/* Each key lives in its own column family only. */
		expect(f.kv, (enum eos_cf)((i + 1) % EOS_CF_COUNT), k, NULL);
	}
	flush(f.kv);
	fixture_reopen(&f);
	for (unsigned i = 0; i < EOS_CF_COUNT; i++) {
		snprintf(k, sizeof(k), "key-%u-of-%s", i, eos_kv_cf_name((enum eos_cf)i));
		snprintf(v, sizeof(v), "value-%u", i);
		expect(f.kv, (enum eos_cf)i, k, v);
	}
	fixture_release(&f);
}
END_TEST

START_TEST(test_get_missing)
{
	struct fixture f;
	struct eos_error err = { 0 };
	struct eos_buf b;

	fixture_init(&f);
	eos_buf_init(&b);
	ck_assert_int_eq(eos_buf_append_str(&b, "previous"), 0);
	ck_assert_int_eq(eos_kv_get(f.kv, NULL, EOS_CF_META, "nope", 4, &b, &err), -ENOENT);
	/* err untouched so callers can word the miss themselves. */
	ck_assert_int_eq(err.code, 0);
	ck_assert_str_eq(err.msg, "");
	ck_assert_int_eq(eos_kv_exists(f.kv, EOS_CF_META, "nope", 4, &err), 0);
	eos_buf_release(&b);
	fixture_release(&f);
}
END_TEST

START_TEST(test_put_get_delete)
{
	struct fixture f;
	struct eos_error err = { 0 };
	struct eos_buf b;

	fixture_init(&f);
	eos_buf_init(&b);
	ck_assert_int_eq(eos_kv_put(f.kv, EOS_CF_REFS, "k", 1, "v1", 2, true, &err), 0);
	ck_assert_int_eq(eos_kv_exists(f.kv, EOS_CF_REFS, "k", 1, &err), 1);
	/* The buffer's contents are replaced, not appended to. */
	ck_assert_int_eq(eos_buf_append_str(&b, "garbage that is longer"), 0);
	ck_assert_int_eq(eos_kv_get(f.kv, NULL, EOS_CF_REFS, "k", 1, &b, &err), 0);
	ck_assert_uint_eq(b.len, 2);
	ck_assert_str_eq((const char *)b.data, "v1");
	put(f.kv, EOS_CF_REFS, "k", "second");
	expect(f.kv, EOS_CF_REFS, "k", "second");
	/* Empty keys and values are legal. */
	ck_assert_int_eq(eos_kv_put(f.kv, EOS_CF_META, "", 0, "", 0, false, &err), 0);
	ck_assert_int_eq(eos_kv_get(f.kv, NULL, EOS_CF_META, "", 0, &b, &err), 0);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_int_eq(eos_kv_delete(f.kv, EOS_CF_REFS, "k", 1, true, &err), 0);
	expect(f.kv, EOS_CF_REFS, "k", NULL);
	ck_assert_int_eq(eos_kv_exists(f.kv, EOS_CF_REFS, "k", 1, &err), 0);
	/* Deleting a missing key is not an error. */
	ck_assert_int_eq(eos_kv_delete(f.kv, EOS_CF_REFS, "k", 1, false, &err), 0);
	/* Still deleted after a flush and a reopen. */
	flush(f.kv);
	fixture_reopen(&f);
	expect(f.kv, EOS_CF_REFS, "k", NULL);
	eos_buf_release(&b);
	fixture_release(&f);
}
END_TEST

START_TEST(test_exists_after_flush)
{
	struct fixture f;
	struct eos_error err = { 0 };
	char k[16];

	fixture_init(&f);
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "c%03d", i);
		put(f.kv, EOS_CF_CHUNKS, k, "frame");
	}
	flush(f.kv);
	fixture_reopen(&f);
	/* From SSTs (bloom filters in play), hits and misses both answer exactly. */
	for (int i = 0; i < 200; i++) {
		snprintf(k, sizeof(k), "c%03d", i);
		ck_assert_int_eq(eos_kv_exists(f.kv, EOS_CF_CHUNKS, k, strlen(k), &err), i < 100);
	}
	fixture_release(&f);
}
END_TEST

static struct eos_kv_batch *
batch_new(void)
{
	struct eos_kv_batch *b = NULL;

	ck_assert_int_eq(eos_kv_batch_new(&b), 0);
	ck_assert_ptr_nonnull(b);
	return b;
}

static void
batch_write(struct eos_kv *kv, struct eos_kv_batch *b)
{
	struct eos_error err = { 0 };
	int r = eos_kv_batch_write(kv, b, true, &err);

	ck_assert_msg(r == 0, "batch write: %s", eos_error_message(&err, r));
}

START_TEST(test_batch_cross_cf)
{
	struct fixture f;
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *unused = NULL;
	const struct eos_kv_snapshot *before;

	fixture_init(&f);
	put(f.kv, EOS_CF_META, "old", "x");
	b = batch_new();
	eos_kv_batch_put(b, EOS_CF_CHUNKS, "c", 1, "chunk", 5);
	eos_kv_batch_put(b, EOS_CF_REFS, "r", 1, "1", 1);
	eos_kv_batch_put(b, EOS_CF_ENTRIES, "entry-key-12345678", 18, "rec", 3);
	eos_kv_batch_delete(b, EOS_CF_META, "old", 3);
	ck_assert_uint_eq(eos_kv_batch_count(b), 4);
	/* Nothing is visible before the write. */
	expect(f.kv, EOS_CF_CHUNKS, "c", NULL);
	expect(f.kv, EOS_CF_META, "old", "x");
	before = eos_kv_snapshot_new(f.kv);
	batch_write(f.kv, b);
	expect(f.kv, EOS_CF_CHUNKS, "c", "chunk");
	expect(f.kv, EOS_CF_REFS, "r", "1");
	expect(f.kv, EOS_CF_ENTRIES, "entry-key-12345678", "rec");
	expect(f.kv, EOS_CF_META, "old", NULL);
	/* The batch stays owned and intact. */
	ck_assert_uint_eq(eos_kv_batch_count(b), 4);
	/* A snapshot from before sees none of it. */
	expect_snap(f.kv, before, EOS_CF_CHUNKS, "c", NULL);
	expect_snap(f.kv, before, EOS_CF_REFS, "r", NULL);
	expect_snap(f.kv, before, EOS_CF_META, "old", "x");
	eos_kv_snapshot_free(f.kv, before);
	/* A batch that is never written leaves nothing, even after reopening. */
	unused = batch_new();
	eos_kv_batch_put(unused, EOS_CF_CHUNKS, "ghost", 5, "g", 1);
	eos_kv_batch_put(unused, EOS_CF_REFS, "ghost", 5, "g", 1);
	eos_kv_batch_free(TAKE_PTR(unused));
	fixture_reopen(&f);
	expect(f.kv, EOS_CF_CHUNKS, "ghost", NULL);
	expect(f.kv, EOS_CF_REFS, "ghost", NULL);
	expect(f.kv, EOS_CF_REFS, "r", "1");
	fixture_release(&f);
}
END_TEST

/* A reader thread checking that three column families always agree under snapshots. */
struct atomic_reader {
	struct eos_kv *kv;
	volatile bool stop;
	unsigned checks;
	unsigned torn;
};

static int
read_counter(struct eos_kv *kv, const struct eos_kv_snapshot *s, enum eos_cf cf, uint64_t *v)
{
	struct eos_buf b;
	int r;

	eos_buf_init(&b);
	r = eos_kv_get(kv, s, cf, "counter", 7, &b, NULL);
	*v = r == 0 && b.len == 8 ? eos_get_le64(b.data) : 0;
	eos_buf_release(&b);
	return r;
}

static void *
atomic_reader_run(void *arg)
{
	struct atomic_reader *ar = arg;

	while (!__atomic_load_n(&ar->stop, __ATOMIC_ACQUIRE)) {
		const struct eos_kv_snapshot *s = eos_kv_snapshot_new(ar->kv);
		uint64_t a, b, c;

		read_counter(ar->kv, s, EOS_CF_CHUNKS, &a);
		read_counter(ar->kv, s, EOS_CF_REFS, &b);
		read_counter(ar->kv, s, EOS_CF_LAYERS, &c);
		if (a != b || b != c)
			ar->torn++;
		__atomic_add_fetch(&ar->checks, 1, __ATOMIC_RELEASE);
		eos_kv_snapshot_free(ar->kv, s);
	}
	return NULL;
}

START_TEST(test_batch_atomic_concurrent)
{
	struct fixture f;
	struct atomic_reader ar = { 0 };
	pthread_t t;
	uint64_t i = 0;

	fixture_init(&f);
	ar.kv = f.kv;
	ck_assert_int_eq(pthread_create(&t, NULL, atomic_reader_run, &ar), 0);
	/* At least 500 batches, and keep going until the reader really raced with them. */
	while (++i <= 500 || (__atomic_load_n(&ar.checks, __ATOMIC_ACQUIRE) < 200 && i < 1000000)) {
		EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = batch_new();
		struct eos_error err = { 0 };
		uint8_t v[8];

		eos_put_le64(v, i);
		eos_kv_batch_put(b, EOS_CF_CHUNKS, "counter", 7, v, 8);
		eos_kv_batch_put(b, EOS_CF_REFS, "counter", 7, v, 8);
		eos_kv_batch_put(b, EOS_CF_LAYERS, "counter", 7, v, 8);
		ck_assert_int_eq(eos_kv_batch_write(f.kv, b, false, &err), 0);
	}
	__atomic_store_n(&ar.stop, true, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_uint_ge(ar.checks, 200);
	ck_assert_uint_eq(ar.torn, 0);
	fixture_release(&f);
}
END_TEST

START_TEST(test_delete_range)
{
	struct fixture f;
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	char k[16];

	fixture_init(&f);
	for (int i = 0; i < 20; i++) {
		snprintf(k, sizeof(k), "k%02d", i);
		put(f.kv, EOS_CF_SESSION, k, "v");
		put(f.kv, EOS_CF_OBS, k, "v");
	}
	/* Half of them reach an SST first: the range tombstone must cover both. */
	flush(f.kv);
	b = batch_new();
	eos_kv_batch_delete_range(b, EOS_CF_SESSION, "k05", 3, "k15", 3);
	ck_assert_uint_eq(eos_kv_batch_count(b), 1);
	batch_write(f.kv, b);
	for (int i = 0; i < 20; i++) {
		snprintf(k, sizeof(k), "k%02d", i);
		expect(f.kv, EOS_CF_SESSION, k, i >= 5 && i < 15 ? NULL : "v");
		/* Other column families are untouched. */
		expect(f.kv, EOS_CF_OBS, k, "v");
	}
	fixture_reopen(&f);
	expect(f.kv, EOS_CF_SESSION, "k05", NULL);
	expect(f.kv, EOS_CF_SESSION, "k14", NULL);
	expect(f.kv, EOS_CF_SESSION, "k15", "v");
	fixture_release(&f);
}
END_TEST

START_TEST(test_multi_get)
{
	static const char *const keys[] = { "a", "missing", "b", "", "zz" };
	static const size_t klens[] = { 1, 7, 1, 0, 2 };
	struct fixture f;
	struct eos_error err = { 0 };
	struct eos_buf vals[5];
	bool found[5];

	fixture_init(&f);
	put(f.kv, EOS_CF_MANIFESTS, "a", "alpha");
	put(f.kv, EOS_CF_MANIFESTS, "b", "beta");
	flush(f.kv);
	put(f.kv, EOS_CF_MANIFESTS, "zz", "from the memtable");
	for (int i = 0; i < 5; i++) {
		eos_buf_init(&vals[i]);
		found[i] = i == 1; /* must be overwritten */
	}
	ck_assert_int_eq(eos_kv_multi_get(f.kv, EOS_CF_MANIFESTS, 5, (const void *const *)keys,
					  klens, vals, found, &err),
			 0);
	ck_assert(found[0] && !found[1] && found[2] && !found[3] && found[4]);
	ck_assert_str_eq((const char *)vals[0].data, "alpha");
	ck_assert_str_eq((const char *)vals[2].data, "beta");
	ck_assert_str_eq((const char *)vals[4].data, "from the memtable");
	ck_assert_uint_eq(vals[1].len, 0);
	/* n == 0 is a no-op. */
	ck_assert_int_eq(eos_kv_multi_get(f.kv, EOS_CF_MANIFESTS, 0, NULL, NULL, NULL, NULL, &err),
			 0);
	for (int i = 0; i < 5; i++)
		eos_buf_release(&vals[i]);
	fixture_release(&f);
}
END_TEST

/* Collect the keys an iterator yields from its current position into "k1,k2,…". */
static void
collect(struct eos_kv_iter *it, char *out, size_t cap)
{
	struct eos_error err = { 0 };
	size_t used = 0;

	out[0] = '\0';
	for (; eos_kv_iter_valid(it); eos_kv_iter_next(it)) {
		size_t klen;
		const uint8_t *k = eos_kv_iter_key(it, &klen);
		int n = snprintf(out + used, cap - used, "%s%.*s", used ? "," : "", (int)klen,
				 (const char *)k);

		ck_assert(n > 0 && (size_t)n < cap - used);
		used += (size_t)n;
	}
	ck_assert_int_eq(eos_kv_iter_status(it, &err), 0);
}

START_TEST(test_iter)
{
	struct fixture f;
	struct eos_kv_iter *it = NULL;
	char upper[] = "c";
	size_t vlen;
	char got[256];

	fixture_init(&f);
	put(f.kv, EOS_CF_LAYERS, "a", "1");
	put(f.kv, EOS_CF_LAYERS, "b", "2");
	flush(f.kv);
	put(f.kv, EOS_CF_LAYERS, "c", "3");
	put(f.kv, EOS_CF_LAYERS, "d", "4");
	put(f.kv, EOS_CF_META, "bb", "other cf");

	ck_assert_int_eq(eos_kv_iter_new(f.kv, EOS_CF_LAYERS, NULL, NULL, 0, 0, &it), 0);
	eos_kv_iter_seek_first(it);
	ck_assert(eos_kv_iter_valid(it));
	ck_assert_mem_eq(eos_kv_iter_value(it, &vlen), "1", 1);
	ck_assert_uint_eq(vlen, 1);
	collect(it, got, sizeof(got));
	ck_assert_str_eq(got, "a,b,c,d");
	/* Seek lands on the first key >= the target. */
	eos_kv_iter_seek(it, "bb", 2);
	collect(it, got, sizeof(got));
	ck_assert_str_eq(got, "c,d");
	eos_kv_iter_seek(it, "z", 1);
	ck_assert(!eos_kv_iter_valid(it));
	eos_kv_iter_free(it);

	/* Exclusive upper bound, copied: the caller's bytes may change afterwards. */
	ck_assert_int_eq(eos_kv_iter_new(f.kv, EOS_CF_LAYERS, NULL, upper, 1,
					 EOS_KV_ITER_NO_CACHE_FILL, &it),
			 0);
	upper[0] = 'z';
	eos_kv_iter_seek(it, "a", 1);
	collect(it, got, sizeof(got));
	ck_assert_str_eq(got, "a,b");
	eos_kv_iter_free(it);

	/* An empty upper bound is an empty range. */
	ck_assert_int_eq(eos_kv_iter_new(f.kv, EOS_CF_LAYERS, NULL, "", 0, 0, &it), 0);
	eos_kv_iter_seek_first(it);
	ck_assert(!eos_kv_iter_valid(it));
	eos_kv_iter_free(it);
	eos_kv_iter_free(NULL);
	fixture_release(&f);
}
END_TEST

/* An entries-style key: prefix bytes + an 8-byte big-endian inverted version. */
static size_t
entry_key(uint8_t *out, const char *prefix, size_t plen, uint64_t version)
{
	memcpy(out, prefix, plen);
	eos_put_be64(out + plen, ~version);
	return plen + 8;
}

static unsigned
count_same_prefix(struct eos_kv *kv, const char *prefix, size_t plen, uint64_t at,
		  enum eos_kv_iter_flags flags, uint64_t *first)
{
	EOS_CLEANUP(eos_kv_iter_freep) struct eos_kv_iter *it = NULL;
	uint8_t seek[64];
	size_t n = entry_key(seek, prefix, plen, at);
	unsigned count = 0;

	ck_assert_int_eq(eos_kv_iter_new(kv, EOS_CF_ENTRIES, NULL, NULL, 0, flags, &it), 0);
	*first = 0;
	for (eos_kv_iter_seek(it, seek, n); eos_kv_iter_valid(it); eos_kv_iter_next(it)) {
		size_t klen;
		const uint8_t *k = eos_kv_iter_key(it, &klen);

		if (count++ == 0 && klen == plen + 8 && memcmp(k, prefix, plen) == 0)
			*first = ~eos_get_be64(k + plen);
	}
	ck_assert_int_eq(eos_kv_iter_status(it, NULL), 0);
	return count;
}

static void
check_same_prefix(struct eos_kv *kv)
{
	/* Two names in one directory: "sb/dir\0x\0" and "sb/dir\0y\0"; binary prefix bytes. */
	static const char px[] = "sb\x01/dir\0x\0";
	static const char py[] = "sb\x01/dir\0y\0";
	uint64_t first;

	/* Newest version <= 7 of x is 5; the prefix iteration stops before y's keys. */
	ck_assert_uint_eq(
		count_same_prefix(kv, px, sizeof(px) - 1, 7, EOS_KV_ITER_SAME_PREFIX, &first), 3);
	ck_assert_uint_eq(first, 5);
	ck_assert_uint_eq(count_same_prefix(kv, px, sizeof(px) - 1, UINT64_MAX,
					    EOS_KV_ITER_SAME_PREFIX, &first),
			  4);
	ck_assert_uint_eq(first, 9);
	ck_assert_uint_eq(
		count_same_prefix(kv, py, sizeof(py) - 1, 100, EOS_KV_ITER_SAME_PREFIX, &first), 2);
	/* A name that does not exist yields nothing. */
	ck_assert_uint_eq(
		count_same_prefix(kv, "sb\x01/dir\0w\0", 10, 100, EOS_KV_ITER_SAME_PREFIX, &first),
		0);
	/* Total order crosses into the next prefix: x (3 keys <= 7) + y (2) + z (1). */
	ck_assert_uint_eq(count_same_prefix(kv, px, sizeof(px) - 1, 7, 0, &first), 6);
}

START_TEST(test_iter_same_prefix)
{
	static const uint64_t xv[] = { 1, 3, 5, 9 }, yv[] = { 2, 4 };
	struct fixture f;
	struct eos_error err = { 0 };
	uint8_t k[64];
	size_t n;

	fixture_init(&f);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(xv); i++) {
		n = entry_key(k, "sb\x01/dir\0x\0", 10, xv[i]);
		ck_assert_int_eq(eos_kv_put(f.kv, EOS_CF_ENTRIES, k, n, "x", 1, false, &err), 0);
	}
	for (size_t i = 0; i < EOS_ARRAY_SIZE(yv); i++) {
		n = entry_key(k, "sb\x01/dir\0y\0", 10, yv[i]);
		ck_assert_int_eq(eos_kv_put(f.kv, EOS_CF_ENTRIES, k, n, "y", 1, false, &err), 0);
	}
	n = entry_key(k, "sb\x01/dir\0z\0", 10, 1);
	ck_assert_int_eq(eos_kv_put(f.kv, EOS_CF_ENTRIES, k, n, "z", 1, false, &err), 0);
	/* From the memtable (memtable prefix bloom)... */
	check_same_prefix(f.kv);
	/* ...and from SSTs with their prefix bloom filters, after a reopen. */
	flush(f.kv);
	fixture_reopen(&f);
	check_same_prefix(f.kv);
	ck_assert_int_eq(eos_kv_compact(f.kv, EOS_CF_ENTRIES, &err), 0);
	check_same_prefix(f.kv);
	fixture_release(&f);
}
END_TEST

/* The newest version of entry prefix p seen through a taken iterator (0: none); it stays taken. */
static uint64_t
taken_version(struct eos_kv *kv, const char *p, size_t plen, struct eos_kv_iter **ret)
{
	uint8_t seek[64];
	size_t n = entry_key(seek, p, plen, UINT64_MAX), klen;
	const uint8_t *k;

	ck_assert_int_eq(eos_kv_iter_take(kv, EOS_CF_ENTRIES, EOS_KV_ITER_SAME_PREFIX, ret), 0);
	eos_kv_iter_seek(*ret, seek, n);
	ck_assert_int_eq(eos_kv_iter_status(*ret, NULL), 0);
	if (!eos_kv_iter_valid(*ret))
		return 0;
	k = eos_kv_iter_key(*ret, &klen);
	ck_assert_uint_eq(klen, plen + 8);
	return ~eos_get_be64(k + plen);
}

/* Put version v of entry prefix p, by a put or in a batch with a write to another family. */
static void
put_version(struct eos_kv *kv, const char *p, size_t plen, uint64_t v, bool batch)
{
	EOS_CLEANUP(eos_kv_batch_freep) struct eos_kv_batch *b = NULL;
	struct eos_error err = { 0 };
	uint8_t k[64];
	size_t n = entry_key(k, p, plen, v);

	if (!batch) {
		ck_assert_int_eq(eos_kv_put(kv, EOS_CF_ENTRIES, k, n, "x", 1, false, &err), 0);
		return;
	}
	ck_assert_int_eq(eos_kv_batch_new(&b), 0);
	eos_kv_batch_put(b, EOS_CF_META, "m", 1, "v", 1);
	eos_kv_batch_put(b, EOS_CF_ENTRIES, k, n, "x", 1);
	ck_assert_int_eq(eos_kv_batch_write(kv, b, false, &err), 0);
}

/*
 * Pooled point-lookup iterators read what a new iterator would: one given back is taken again
 * while nothing was written, and never after a write, a batch, a flush or a compaction of its
 * family; one still held when a write lands does not go back to the pool.
 */
START_TEST(test_iter_take)
{
	static const char px[] = "sb\x01/dir\0x\0";
	const size_t plen = sizeof(px) - 1;
	struct fixture f;
	struct eos_kv_iter *a, *b, *held;
	struct eos_error err = { 0 };

	fixture_init(&f);
	ck_assert_uint_eq(taken_version(f.kv, px, plen, &a), 0);
	eos_kv_iter_free(a);
	ck_assert_uint_eq(taken_version(f.kv, px, plen, &b), 0);
	ck_assert_ptr_eq(a, b); /* nothing written: the same iterator again */
	eos_kv_iter_free(b);

	put_version(f.kv, px, plen, 3, false);
	ck_assert_uint_eq(taken_version(f.kv, px, plen, &a), 3);
	ck_assert_uint_eq(taken_version(f.kv, px, plen, &held), 3);
	eos_kv_iter_free(a);
	put_version(f.kv, px, plen, 5, true);
	eos_kv_iter_free(held); /* stale: destroyed, not pooled */
	ck_assert_uint_eq(taken_version(f.kv, px, plen, &a), 5);
	ck_assert_uint_eq(taken_version(f.kv, px, plen, &b), 5);
	eos_kv_iter_free(a);
	eos_kv_iter_free(b);

	/* A write to another family leaves the pool alone. */
	put(f.kv, EOS_CF_SESSION, "s", "v");
	ck_assert_uint_eq(taken_version(f.kv, px, plen, &held), 5);
	ck_assert_msg(held == a || held == b, "a write to 'session' emptied the entries pool");
	eos_kv_iter_free(held);

	/* Flushes and compactions empty it: idle iterators would pin replaced files. */
	flush(f.kv);
	ck_assert_uint_eq(taken_version(f.kv, px, plen, &held), 5);
	ck_assert_msg(held != a && held != b, "an iterator older than a flush was taken");
	eos_kv_iter_free(held);
	ck_assert_uint_eq(taken_version(f.kv, px, plen, &a), 5);
	eos_kv_iter_free(a);
	ck_assert_int_eq(eos_kv_compact(f.kv, EOS_CF_ENTRIES, &err), 0);
	ck_assert_uint_eq(taken_version(f.kv, px, plen, &b), 5);
	ck_assert_msg(a != b, "an iterator older than a compaction was taken");
	eos_kv_iter_free(b);

	/* A delete through the pool's family is seen at once. */
	{
		uint8_t k[64];
		size_t n = entry_key(k, px, plen, 5);

		ck_assert_int_eq(eos_kv_delete(f.kv, EOS_CF_ENTRIES, k, n, false, &err), 0);
	}
	ck_assert_uint_eq(taken_version(f.kv, px, plen, &a), 3);
	eos_kv_iter_free(a);

	/* Scans (total order, no cache fill) have pools of their own, emptied by writes too. */
	ck_assert_int_eq(eos_kv_iter_take(f.kv, EOS_CF_ENTRIES, EOS_KV_ITER_NO_CACHE_FILL, &b), 0);
	ck_assert_ptr_ne(a, b);
	eos_kv_iter_free(b);
	ck_assert_int_eq(eos_kv_iter_take(f.kv, EOS_CF_ENTRIES, EOS_KV_ITER_NO_CACHE_FILL, &a), 0);
	ck_assert_ptr_eq(a, b);
	eos_kv_iter_free(a);
	put_version(f.kv, "sb\x01/dir\0w\0", plen, 7, false);
	ck_assert_int_eq(eos_kv_iter_take(f.kv, EOS_CF_ENTRIES, EOS_KV_ITER_NO_CACHE_FILL, &a), 0);
	eos_kv_iter_seek_first(a); /* a total-order scan sees the new name first */
	ck_assert(eos_kv_iter_valid(a));
	{
		size_t kn;
		const uint8_t *k = eos_kv_iter_key(a, &kn);

		ck_assert_uint_eq(kn, plen + 8);
		ck_assert_mem_eq(k, "sb\x01/dir\0w\0", plen);
	}
	eos_kv_iter_free(a);
	fixture_release(&f); /* closes with idle iterators in the pool */
}
END_TEST

START_TEST(test_snapshot)
{
	struct fixture f;
	struct eos_kv_iter *it = NULL;
	const struct eos_kv_snapshot *s;
	char got[64];

	fixture_init(&f);
	put(f.kv, EOS_CF_META, "k", "v1");
	put(f.kv, EOS_CF_META, "gone", "here");
	s = eos_kv_snapshot_new(f.kv);
	ck_assert_ptr_nonnull(s);
	put(f.kv, EOS_CF_META, "k", "v2");
	put(f.kv, EOS_CF_META, "new", "n");
	ck_assert_int_eq(eos_kv_delete(f.kv, EOS_CF_META, "gone", 4, false, NULL), 0);
	/* Flushing must not lose what the snapshot still needs. */
	flush(f.kv);
	expect_snap(f.kv, s, EOS_CF_META, "k", "v1");
	expect_snap(f.kv, s, EOS_CF_META, "new", NULL);
	expect_snap(f.kv, s, EOS_CF_META, "gone", "here");
	expect(f.kv, EOS_CF_META, "k", "v2");
	expect(f.kv, EOS_CF_META, "gone", NULL);

	ck_assert_int_eq(eos_kv_iter_new(f.kv, EOS_CF_META, s, NULL, 0, 0, &it), 0);
	eos_kv_iter_seek_first(it);
	collect(it, got, sizeof(got));
	ck_assert_str_eq(got, "gone,k");
	eos_kv_iter_free(it);
	ck_assert_int_eq(eos_kv_iter_new(f.kv, EOS_CF_META, NULL, NULL, 0, 0, &it), 0);
	eos_kv_iter_seek_first(it);
	collect(it, got, sizeof(got));
	ck_assert_str_eq(got, "k,new");
	eos_kv_iter_free(it);
	eos_kv_snapshot_free(f.kv, s);
	eos_kv_snapshot_free(f.kv, NULL);
	fixture_release(&f);
}
END_TEST

static unsigned
count_blob_files(const char *dir)
{
	cleanup_closedir DIR *d = opendir(dir);
	struct dirent *de;
	unsigned n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (strlen(de->d_name) > 5 &&
		    strcmp(de->d_name + strlen(de->d_name) - 5, ".blob") == 0)
			n++;
	return n;
}

START_TEST(test_large_values_blob)
{
	enum {
		N = 4,
		SIZE = 1 << 20
	};
	struct fixture f;
	struct eos_error err = { 0 };
	struct eos_buf b;
	cleanup_free uint8_t *data = malloc((size_t)N * SIZE);
	uint64_t blobs = 0;

	ck_assert_ptr_nonnull(data);
	eos_test_fill_random(data, (size_t)N * SIZE, 42);
	fixture_init(&f);
	eos_buf_init(&b);
	for (uint8_t i = 0; i < N; i++)
		ck_assert_int_eq(eos_kv_put(f.kv, EOS_CF_CHUNKS, &i, 1, data + (size_t)i * SIZE,
					    SIZE, false, &err),
				 0);
	put(f.kv, EOS_CF_CHUNKS, "small", "stays inline");
	flush(f.kv);
	fixture_reopen(&f);
	ck_assert_uint_gt(count_blob_files(f.dir), 0);
	ck_assert_int_eq(eos_kv_property_u64(f.kv, EOS_CF_CHUNKS, "rocksdb.num-blob-files", &blobs),
			 0);
	ck_assert_uint_gt(blobs, 0);
	for (uint8_t i = 0; i < N; i++) {
		ck_assert_int_eq(eos_kv_get(f.kv, NULL, EOS_CF_CHUNKS, &i, 1, &b, &err), 0);
		ck_assert_uint_eq(b.len, SIZE);
		ck_assert(memcmp(b.data, data + (size_t)i * SIZE, SIZE) == 0);
	}
	expect(f.kv, EOS_CF_CHUNKS, "small", "stays inline");
	/* Compaction keeps them readable (it rewrites only the keys and blob references). */
	ck_assert_int_eq(eos_kv_compact(f.kv, EOS_CF_CHUNKS, &err), 0);
	ck_assert_int_eq(eos_kv_get(f.kv, NULL, EOS_CF_CHUNKS, &(uint8_t){ 3 }, 1, &b, &err), 0);
	ck_assert(memcmp(b.data, data + 3 * (size_t)SIZE, SIZE) == 0);
	eos_buf_release(&b);
	fixture_release(&f);
}
END_TEST

/* What eos_kv_get_with()'s callback saw: a copy of the value, and how often it ran. */
struct seen {
	struct eos_buf val;
	int calls;
	int result;
};

static int
see_value(void *ctx, const void *val, size_t len)
{
	struct seen *s = ctx;

	s->calls++;
	eos_buf_truncate(&s->val, 0);
	ck_assert_int_eq(eos_buf_append(&s->val, val, len), 0);
	return s->result;
}

/*
 * eos_kv_get_with() hands the callback the value itself, from the memtable and from a blob file
 * alike, returns what the callback returns, and does not call it for a missing key.
 */
START_TEST(test_get_with)
{
	struct fixture f;
	struct eos_error err = { 0 };
	struct seen s = { .result = 0 };
	uint8_t big[20000];

	eos_test_fill_random(big, sizeof(big), 7);
	fixture_init(&f);
	eos_buf_init(&s.val);
	ck_assert_int_eq(eos_kv_get_with(f.kv, EOS_CF_CHUNKS, "none", 4, see_value, &s, &err),
			 -ENOENT);
	ck_assert_int_eq(s.calls, 0);
	put(f.kv, EOS_CF_CHUNKS, "small", "in the memtable");
	ck_assert_int_eq(eos_kv_get_with(f.kv, EOS_CF_CHUNKS, "small", 5, see_value, &s, &err), 0);
	ck_assert_int_eq(s.calls, 1);
	ck_assert_uint_eq(s.val.len, strlen("in the memtable"));
	ck_assert(memcmp(s.val.data, "in the memtable", s.val.len) == 0);
	ck_assert_int_eq(eos_kv_put(f.kv, EOS_CF_CHUNKS, "big", 3, big, sizeof(big), false, &err),
			 0);
	flush(f.kv);
	fixture_reopen(&f);
	s.result = -EBADMSG;
	ck_assert_int_eq(eos_kv_get_with(f.kv, EOS_CF_CHUNKS, "big", 3, see_value, &s, &err),
			 -EBADMSG);
	ck_assert_int_eq(s.calls, 2);
	ck_assert_uint_eq(s.val.len, sizeof(big));
	ck_assert(memcmp(s.val.data, big, sizeof(big)) == 0);
	eos_buf_release(&s.val);
	fixture_release(&f);
}
END_TEST

START_TEST(test_property_and_compact)
{
	struct fixture f;
	struct eos_error err = { 0 };
	uint64_t v = 12345;
	char k[16];

	fixture_init(&f);
	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "key%04d", i);
		put(f.kv, EOS_CF_REFS, k, "some value bytes");
	}
	ck_assert_int_eq(eos_kv_property_u64(f.kv, EOS_CF_REFS, "rocksdb.estimate-num-keys", &v),
			 0);
	ck_assert_uint_ge(v, 900);
	ck_assert_int_eq(eos_kv_property_u64(f.kv, EOS_CF_OBS, "rocksdb.estimate-num-keys", &v), 0);
	ck_assert_uint_eq(v, 0);
	flush(f.kv);
	ck_assert_int_eq(eos_kv_property_u64(f.kv, EOS_CF_REFS, "rocksdb.total-sst-files-size", &v),
			 0);
	ck_assert_uint_gt(v, 0);
	/* Unknown properties fail and leave *ret alone. */
	v = 7;
	ck_assert_int_lt(eos_kv_property_u64(f.kv, EOS_CF_REFS, "rocksdb.no-such-thing", &v), 0);
	ck_assert_uint_eq(v, 7);
	/* Delete everything, compact: the SSTs go away and the data stays deleted. */
	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "key%04d", i);
		ck_assert_int_eq(eos_kv_delete(f.kv, EOS_CF_REFS, k, strlen(k), false, &err), 0);
	}
	flush(f.kv);
	ck_assert_int_eq(eos_kv_compact(f.kv, EOS_CF_REFS, &err), 0);
	ck_assert_int_eq(eos_kv_property_u64(f.kv, EOS_CF_REFS, "rocksdb.total-sst-files-size", &v),
			 0);
	ck_assert_uint_eq(v, 0);
	expect(f.kv, EOS_CF_REFS, "key0500", NULL);
	fixture_release(&f);
}
END_TEST

static Suite *
kv_suite(void)
{
	Suite *s = suite_create("kv");
	TCase *tc = tcase_create("kv");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_cf_names);
	tcase_add_test(tc, test_open_missing);
	tcase_add_test(tc, test_reopen_every_cf);
	tcase_add_test(tc, test_get_missing);
	tcase_add_test(tc, test_put_get_delete);
	tcase_add_test(tc, test_exists_after_flush);
	tcase_add_test(tc, test_batch_cross_cf);
	tcase_add_test(tc, test_batch_atomic_concurrent);
	tcase_add_test(tc, test_delete_range);
	tcase_add_test(tc, test_multi_get);
	tcase_add_test(tc, test_iter);
	tcase_add_test(tc, test_iter_same_prefix);
	tcase_add_test(tc, test_iter_take);
	tcase_add_test(tc, test_snapshot);
	tcase_add_test(tc, test_large_values_blob);
	tcase_add_test(tc, test_get_with);
	tcase_add_test(tc, test_property_and_compact);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(kv_suite());
}
