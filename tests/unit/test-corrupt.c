/* SPDX-License-Identifier: MIT */
/*
 * Damage on disk against a real RocksDB: write-ahead logs (eos_kv_wal_check agrees with
 * RocksDB's recovery: every torn tail opens and loses only a suffix of the writes, any other
 * damage fails the open naming the log, and eos_store_recover keeps exactly the writes before
 * it), and scans that go on past a damaged table block (eos_kv_scan's damage callback).
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endian.h"
#include "common/error.h"

#include "store/kv.h"
#include "store/store-internal.h"
#include "store/store.h"
#include "tests/unit/testutil.h"

enum {
	NKEYS = 40,	  /* synced writes into the log */
	SCAN_KEYS = 3000, /* keys of the table a scan meets damaged */
	SCAN_VALUE = 200,
};

/* Key i and its value: sizes spread over tiny to two blocks, so records get fragmented. */
static void
key_of(unsigned i, char key[16])
{
	snprintf(key, 16, "k%04u", i);
}

static size_t
value_len(unsigned i)
{
	static const size_t sizes[] = { 10, 300, 5000, 33000, 70000, 1, 32760 };

	return sizes[i % EOS_ARRAY_SIZE(sizes)] + i;
}

/* The path of the (first) write-ahead log in database directory db. Caller frees. */
static char *
find_log(const char *db)
{
	struct dirent *de;
	char *log = NULL;
	DIR *d = opendir(db);

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".log") && !log)
			ck_assert_int_ge(asprintf(&log, "%s/%s", db, de->d_name), 0);
	closedir(d);
	ck_assert_ptr_nonnull(log);
	return log;
}

/* A database whose only write-ahead log holds NKEYS synced puts; returns the log's path. */
static char *
make_log(const char *dir)
{
	struct eos_kv *kv = eos_test_kv_open(dir, true);
	cleanup_free uint8_t *v = malloc(80000);
	struct eos_error err = { 0 };

	ck_assert_ptr_nonnull(v);
	for (unsigned i = 0; i < NKEYS; i++) {
		char key[16];

		key_of(i, key);
		eos_test_fill_random(v, value_len(i), i);
		ck_assert_int_eq(
			eos_kv_put(kv, EOS_CF_META, key, strlen(key), v, value_len(i), true, &err),
			0);
	}
	eos_kv_close(kv);
	return find_log(dir);
}

static off_t
file_size(const char *path)
{
	struct stat sb;

	ck_assert_int_eq(stat(path, &sb), 0);
	return sb.st_size;
}

static void
copy_tree(const char *from, const char *to)
{
	cleanup_free char *cmd = NULL;

	ck_assert_int_ge(asprintf(&cmd, "rm -rf '%s' && cp -a '%s' '%s'", to, from, to), 0);
	ck_assert_int_eq(system(cmd), 0);
}

/* The keys present are k0 … k(n-1) for some n, each with its full value: returns n. */
static unsigned
present_prefix(struct eos_kv *kv)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf val = { 0 };
	cleanup_free uint8_t *want = malloc(80000);
	struct eos_error err = { 0 };
	unsigned n = 0;
	bool gap = false;

	ck_assert_ptr_nonnull(want);
	for (unsigned i = 0; i < NKEYS; i++) {
		char key[16];
		int r;

		key_of(i, key);
		r = eos_kv_get(kv, NULL, EOS_CF_META, key, strlen(key), &val, &err);
		ck_assert_msg(r == 0 || r == -ENOENT, "get '%s': %s", key, err.msg);
		ck_assert_msg(r == -ENOENT || !gap, "'%s' survived a lost earlier write", key);
		if (r == -ENOENT) {
			gap = true;
			continue;
		}
		eos_test_fill_random(want, value_len(i), i);
		ck_assert_uint_eq(val.len, value_len(i));
		ck_assert(memcmp(val.data, want, val.len) == 0);
		n++;
	}
	return n;
}

static void
flip(const char *path, off_t at, size_t n)
{
	cleanup_close int fd = open(path, O_RDWR | O_CLOEXEC);
	uint8_t b[64];

	ck_assert_int_ge(fd, 0);
	ck_assert_uint_le(n, sizeof(b));
	ck_assert_int_eq(pread(fd, b, n, at), (ssize_t)n);
	for (size_t i = 0; i < n; i++)
		b[i] ^= 0xff;
	ck_assert_int_eq(pwrite(fd, b, n, at), (ssize_t)n);
}

/* --- write-ahead logs ------------------------------------------------------------------------- */

static int
off_desc(const void *a, const void *b)
{
	off_t x = *(const off_t *)a, y = *(const off_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* A log cut anywhere (a crash in the middle of a write) verifies, opens, and keeps a prefix. */
START_TEST(test_wal_torn_tail)
{
	cleanup_free char *dir = eos_test_tmpdir("wal");
	cleanup_free char *work = NULL;
	cleanup_free char *log = make_log(dir);
	off_t size = file_size(log);
	unsigned last = NKEYS;

	off_t cuts[32];
	size_t ncuts = 0;

	/* From the end backwards (each cut keeps at most what the longer one kept): inside the last
	 * record's header and payload, spread over the log, around the first block boundary. */
	cuts[ncuts++] = size - 1;
	cuts[ncuts++] = size - 5;
	for (int k = 15; k >= 1; k--)
		cuts[ncuts++] = size * k / 16;
	for (int k = 11; k >= 0; k -= 4)
		cuts[ncuts++] = 32768 + k;
	cuts[ncuts++] = 32760;
	cuts[ncuts++] = 3;
	qsort(cuts, ncuts, sizeof(*cuts), off_desc);
	ck_assert_int_ge(asprintf(&work, "%s.work", dir), 0);
	for (size_t c = 0; c < ncuts; c++) {
		off_t cut = cuts[c];
		cleanup_free char *wlog = NULL;
		struct eos_kv_wal_damage d;
		struct eos_error err = { 0 };
		struct eos_kv *kv;
		unsigned n;

		copy_tree(dir, work);
		ck_assert_int_ge(asprintf(&wlog, "%s%s", work, log + strlen(dir)), 0);
		ck_assert_int_eq(truncate(wlog, cut), 0);
		ck_assert_msg(eos_kv_wal_check(work, &d, &err) == 0,
			      "a log cut at %lld of %lld is damaged: %s at %llu", (long long)cut,
			      (long long)size, d.problem, (unsigned long long)d.offset);
		kv = eos_test_kv_open(work, false);
		n = present_prefix(kv);
		eos_kv_close(kv);
		ck_assert_uint_le(n, last);
		last = n;
	}
	eos_test_rm_rf(work);
	eos_test_rm_rf(dir);
}
END_TEST

/* Damage before the end fails the open naming the log; recover keeps what precedes it. */
START_TEST(test_wal_damage)
{
	cleanup_free char *dir = eos_test_tmpdir("wal");
	cleanup_free char *work = NULL;
	cleanup_free char *log = make_log(dir);
	off_t size = file_size(log);

	ck_assert_int_ge(asprintf(&work, "%s.work", dir), 0);
	for (off_t at = 3; at < size - 16; at += size / 7) {
		cleanup_free char *wlog = NULL;
		struct eos_kv_wal_damage d;
		struct eos_error err = { 0 };
		struct eos_kv_options o = { .threads = 2 };
		struct eos_kv *kv = NULL;

		copy_tree(dir, work);
		ck_assert_int_ge(asprintf(&wlog, "%s%s", work, log + strlen(dir)), 0);
		flip(wlog, at, 16);
		ck_assert_int_eq(eos_kv_wal_check(work, &d, &err), 1);
		ck_assert_str_eq(d.file, log + strlen(dir) + 1);
		ck_assert_uint_le(d.offset, (uint64_t)at);
		ck_assert_uint_eq(d.dropped, (uint64_t)size - d.offset);
		ck_assert_int_eq(eos_kv_open(work, &o, &kv, &err), -EBADMSG);
		ck_assert_msg(strstr(err.msg, wlog) && strstr(err.msg, "is damaged at byte"),
			      "open: %s", err.msg);
		/* What recover does: cut the log at the damaged record. */
		ck_assert_int_eq(truncate(wlog, (off_t)d.offset), 0);
		kv = eos_test_kv_open(work, false);
		/* Every record that ended before the damage is kept: the writes before it. */
		ck_assert_uint_ge(present_prefix(kv), 1u * (d.offset > 0));
		eos_kv_close(kv);
	}
	eos_test_rm_rf(work);
	eos_test_rm_rf(dir);
}
END_TEST

/* eos_store_recover on a store whose log holds damage: the store opens again, logs are saved. */
START_TEST(test_store_recover)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	cleanup_free char *db = NULL;
	cleanup_free char *log = NULL;
	cleanup_free char *saved = NULL;
	struct eos_store_recovery rec;
	struct eos_error err = { 0 };
	struct eos_changeset *cs = NULL;
	struct eos_attr root = eos_test_attr(0755);
	struct eos_commit_result res = { 0 };

	ck_assert_int_eq(eos_changeset_new_sandbox(st, "lost", "test", &root, &cs, &err), 0);
	ck_assert_int_eq(eos_changeset_mkdir(cs, "d", &root, false, &err), 0);
	ck_assert_int_eq(eos_changeset_commit(cs, 0, &res, &err), 0);
	eos_changeset_free(cs);
	eos_store_close(TAKE_PTR(st));
	ck_assert_int_ge(asprintf(&db, "%s/db", dir), 0);
	{
		struct eos_kv_wal_damage d;

		ck_assert_int_eq(eos_kv_wal_check(db, &d, &err), 0);
	}
	log = find_log(db);
	flip(log, file_size(log) / 2, 16);
	ck_assert_int_eq(eos_store_open(dir, NULL, &st, &err), -EBADMSG);
	ck_assert_msg(strstr(err.msg, "eos-store recover"), "open: %s", err.msg);
	ck_assert_int_eq(eos_store_recover(dir, &rec, &err), 0);
	ck_assert(rec.dropped);
	ck_assert_int_ge(asprintf(&saved, "%s/%s/%s", dir, rec.saved, rec.log), 0);
	ck_assert_int_eq(file_size(saved), (off_t)(rec.offset + rec.bytes));
	ck_assert_int_eq(eos_store_open(dir, NULL, &st, &err), 0);
	ck_assert_int_eq(eos_store_recover(dir, &rec, &err), -EBUSY);
	eos_store_close(TAKE_PTR(st));
	ck_assert_int_eq(eos_store_recover(dir, &rec, &err), 0);
	ck_assert(!rec.dropped);
	eos_test_rm_rf(dir);
}
END_TEST

/* --- scans past damage ------------------------------------------------------------------------ */

struct seen {
	uint8_t *got;		   /* got[i]: key i was passed to the scan function */
	unsigned n, last;	   /* keys seen, and the last one (ascending order) */
	unsigned stretches;	   /* damage callbacks */
	char first_msg[256];	   /* the first damage message */
	uint8_t inside[SCAN_KEYS]; /* key i lies inside a damaged stretch */
};

static unsigned
scan_index(const uint8_t *k, size_t klen)
{
	ck_assert_uint_eq(klen, 8);
	return (unsigned)eos_get_be64(k);
}

static int
on_key(void *ctx, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
	struct seen *s = ctx;
	unsigned i = scan_index(k, klen);

	(void)v;
	ck_assert_uint_eq(vlen, SCAN_VALUE);
	ck_assert_msg(s->n == 0 || i > s->last, "key %u after %u", i, s->last);
	s->got[i] = 1;
	s->last = i;
	s->n++;
	return 0;
}

static int
key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = memcmp(a, b, EOS_MIN(alen, blen));

	return c ? c : (alen > blen) - (alen < blen);
}

/* Mark the keys strictly inside the stretch as excused (they may be unreadable). */
static int
on_damage(void *ctx, const uint8_t *after, size_t alen, const uint8_t *resume, size_t rlen,
	  const char *msg)
{
	struct seen *s = ctx;

	if (s->stretches++ == 0)
		snprintf(s->first_msg, sizeof(s->first_msg), "%s", msg);
	for (unsigned i = 0; i < SCAN_KEYS; i++) {
		uint8_t k[8];

		eos_put_be64(k, i);
		if ((!after || key_cmp(k, sizeof(k), after, alen) > 0) &&
		    (!resume || key_cmp(k, sizeof(k), resume, rlen) < 0))
			s->inside[i] = 1;
	}
	return 0;
}

/* The largest .sst file of dir (the table the keys were flushed into). */
static char *
largest_table(const char *dir)
{
	struct dirent *de;
	char *best = NULL;
	off_t size = 0;
	DIR *d = opendir(dir);

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		cleanup_free char *p = NULL;

		if (!strstr(de->d_name, ".sst"))
			continue;
		ck_assert_int_ge(asprintf(&p, "%s/%s", dir, de->d_name), 0);
		if (file_size(p) > size) {
			size = file_size(p);
			free(best);
			best = TAKE_PTR(p);
		}
	}
	closedir(d);
	ck_assert_ptr_nonnull(best);
	return best;
}

/* A damaged block in the middle of a table: a scan reports it and delivers every other key. */
START_TEST(test_scan_past_damage)
{
	cleanup_free char *dir = eos_test_tmpdir("scan");
	cleanup_free uint8_t *got = calloc(SCAN_KEYS, 1);
	cleanup_free char *table = NULL;
	struct eos_error err = { 0 };
	struct seen s = { .got = got };
	struct eos_kv_scan scan = {
		.cf = EOS_CF_BLAME,
		.values = true,
		.fn = on_key,
		.ctx = &s,
	};
	struct eos_kv *kv = eos_test_kv_open(dir, true);
	unsigned lost = 0;

	for (unsigned i = 0; i < SCAN_KEYS; i++) {
		uint8_t k[8], v[SCAN_VALUE];

		eos_put_be64(k, i);
		eos_test_fill_random(v, sizeof(v), i);
		ck_assert_int_eq(eos_kv_put(kv, EOS_CF_BLAME, k, 8, v, sizeof(v), false, &err), 0);
	}
	ck_assert_int_eq(eos_kv_flush(kv, &err), 0);
	eos_kv_close(kv);
	table = largest_table(dir);
	flip(table, file_size(table) / 3, 16);
	kv = eos_test_kv_open(dir, false);
	ck_assert_int_eq(eos_kv_scan(kv, &scan, &err), -EBADMSG);
	ck_assert_msg(strstr(err.msg, "Corruption") && strstr(err.msg, ".sst"), "%s", err.msg);
	memset(got, 0, SCAN_KEYS);
	s = (struct seen){ .got = got };
	scan.damage = on_damage;
	ck_assert_int_eq(eos_kv_scan(kv, &scan, &err), 0);
	ck_assert_uint_ge(s.stretches, 1);
	ck_assert_msg(strstr(s.first_msg, "Corruption") && strstr(s.first_msg, ".sst"), "%s",
		      s.first_msg);
	for (unsigned i = 0; i < SCAN_KEYS; i++) {
		ck_assert_msg(got[i] || s.inside[i],
			      "key %u is neither read nor in a damaged stretch", i);
		lost += !got[i];
	}
	/* One block of ~4 KiB holds ~20 keys: the stretch around it is not much larger. */
	ck_assert_uint_ge(lost, 1);
	ck_assert_uint_le(lost, 100);
	eos_kv_close(kv);
	eos_test_rm_rf(dir);
}
END_TEST

/* A new sandbox with one directory: 0 or the commit's error. */
static int
new_sandbox(struct eos_store *st, const char *id, struct eos_error *err)
{
	struct eos_attr root = eos_test_attr(0755);
	struct eos_commit_result res = { 0 };
	struct eos_changeset *cs = NULL;
	int r;

	r = eos_changeset_new_sandbox(st, id, "test", &root, &cs, err);
	if (r == 0)
		r = eos_changeset_mkdir(cs, "d", &root, false, err);
	if (r == 0)
		r = eos_changeset_commit(cs, 0, &res, err);
	eos_changeset_free(cs);
	return r;
}

/*
 * A compaction that meets a damaged block makes RocksDB (with paranoid checks) stop every write;
 * the store notes it at close and opens without paranoid checks from then on: writes, destroy and
 * gc work again, fsck reports the damage, and once it finds none the store opens normally again.
 */
START_TEST(test_compaction_meets_damage)
{
	cleanup_free char *dir = NULL;
	EOS_CLEANUP(eos_store_closep) struct eos_store *st = eos_test_store_new(&dir);
	cleanup_free char *db = NULL;
	cleanup_free char *table = NULL;
	struct eos_fsck_result res;
	struct eos_error err = { 0 };
	uint64_t freed;

	for (unsigned i = 0; i < SCAN_KEYS; i++) {
		uint8_t k[8], v[SCAN_VALUE];

		eos_put_be64(k, i);
		eos_test_fill_random(v, sizeof(v), i);
		ck_assert_int_eq(eos_kv_put(st->kv, EOS_CF_OBS, k, 8, v, sizeof(v), false, &err),
				 0);
	}
	ck_assert_int_eq(eos_kv_flush(st->kv, &err), 0);
	eos_store_close(TAKE_PTR(st));
	ck_assert_int_ge(asprintf(&db, "%s/db", dir), 0);
	table = largest_table(db);
	flip(table, file_size(table) / 3, 16);
	ck_assert_int_eq(eos_store_open(dir, NULL, &st, &err), 0);
	ck_assert_ptr_null(eos_store_damage(st));
	eos_kv_compact(st->kv, EOS_CF_OBS, &err);
	ck_assert_int_eq(new_sandbox(st, "stopped", &err), -EBADMSG);
	ck_assert_msg(strstr(err.msg, ".sst"), "%s", err.msg);
	eos_store_close(TAKE_PTR(st));
	ck_assert_int_eq(eos_store_open(dir, NULL, &st, &err), 0);
	ck_assert_ptr_nonnull(eos_store_damage(st));
	eos_kv_compact(st->kv, EOS_CF_OBS, &err);
	ck_assert_int_eq(new_sandbox(st, "works", &err), 0);
	ck_assert_int_eq(eos_store_sandbox_destroy(st, "works", &err), 0);
	ck_assert_int_eq(eos_store_gc(st, &freed, &err), 0);
	ck_assert_int_eq(eos_store_fsck(st, EOS_FSCK_VERIFY_CHUNKS, NULL, NULL, &res, &err), 0);
	ck_assert_uint_ge(res.damaged, 1);
	ck_assert_uint_eq(res.damaged, res.damaged_records);
	eos_store_close(TAKE_PTR(st));
	ck_assert_int_eq(eos_store_open(dir, NULL, &st, &err), 0);
	ck_assert_ptr_nonnull(eos_store_damage(st));
	eos_test_rm_rf(dir);
}
END_TEST

static Suite *
corrupt_suite(void)
{
	Suite *s = suite_create("corrupt");
	TCase *tc = tcase_create("corrupt");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_wal_torn_tail);
	tcase_add_test(tc, test_wal_damage);
	tcase_add_test(tc, test_store_recover);
	tcase_add_test(tc, test_scan_past_damage);
	tcase_add_test(tc, test_compaction_meets_damage);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(corrupt_suite());
}
