/* SPDX-License-Identifier: MIT */
/*
 * A full disk is an error, never a crash (issue 9, item 5), and space comes back (item 7): stores
 * on small tmpfs filesystems, filled by imports and by a filler file to every level around eos'
 * reserves (store/space.h). Each test runs in a mount namespace of its own (root), or in a user
 * and mount namespace (other users), so its tmpfs disappears with it.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "store/kv.h"
#include "store/space.h"
#include "store/store-internal.h"
#include "store/store.h"
#include "tests/unit/testutil.h"

#define MIB ((uint64_t)1 << 20)
#define KIB ((uint64_t)1 << 10)

#define ck_ok(r, err) \
	ck_assert_msg((r) >= 0, "line %d: %s", __LINE__, eos_error_message(&(err), (r)))

/* r is -ENOSPC and err names the store directory dir (r is evaluated once). */
#define ck_full(r, err, dir) expect_full(__LINE__, (r), &(err), (dir))

static void
expect_full(int line, int r, struct eos_error *err, const char *dir)
{
	ck_assert_msg(r == -ENOSPC, "line %d: expected ENOSPC, got %d: %s", line, r,
		      eos_error_message(err, r));
	ck_assert_msg(strstr(err->msg, dir) != NULL, "line %d: message does not name '%s': %s",
		      line, dir, err->msg);
	eos_error_clear(err);
}

static void
write_id_map(const char *file, const char *text)
{
	cleanup_close int fd = open(file, O_WRONLY | O_CLOEXEC);

	ck_assert_msg(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text),
		      "write '%s': %s", file, strerror(errno));
}

/* A mount namespace of this process alone: as root directly, else inside a user namespace. */
static void
enter_namespace(void)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (uid != 0) {
		ck_assert_msg(unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0,
			      "cannot make a user namespace for a tmpfs (%s): run as root",
			      strerror(errno));
		write_id_map("/proc/self/setgroups", "deny");
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
		write_id_map("/proc/self/uid_map", map);
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
		write_id_map("/proc/self/gid_map", map);
	} else {
		ck_assert_msg(unshare(CLONE_NEWNS) == 0, "unshare: %s", strerror(errno));
	}
	ck_assert_msg(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0,
		      "make mounts private: %s", strerror(errno));
}

/* A fresh tmpfs of mib MiB; its store is <dir>/s. Caller frees dir. */
static char *
small_fs_new(unsigned mib)
{
	char opts[32];
	char *dir = eos_test_tmpdir("fs");

	snprintf(opts, sizeof(opts), "size=%um,mode=0700", mib);
	ck_assert_msg(mount("tmpfs", dir, "tmpfs", 0, opts) == 0, "mount tmpfs on '%s': %s", dir,
		      strerror(errno));
	return dir;
}

static uint64_t
fs_avail(const char *dir)
{
	struct statvfs sv;

	ck_assert_int_eq(statvfs(dir, &sv), 0);
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

static uint64_t
fs_used(const char *dir)
{
	struct statvfs sv;

	ck_assert_int_eq(statvfs(dir, &sv), 0);
	return (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
}

/*
 * Fill dir's filesystem with <dir>/filler until `leave` bytes are available (page-exact). The
 * store sees it at its next statvfs(): call space_of() before expecting it to.
 */
static void
fill_to(const char *dir, uint64_t leave)
{
	static char zero[1 << 20];
	cleanup_free char *path = NULL;
	cleanup_close int fd = -1;
	uint64_t avail;

	ck_assert_int_ge(asprintf(&path, "%s/filler", dir), 0);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	memset(zero, 'z', sizeof(zero));
	while ((avail = fs_avail(dir)) > leave) {
		size_t n = (size_t)EOS_MIN(avail - leave, (uint64_t)sizeof(zero));

		ck_assert_msg(write(fd, zero, n) == (ssize_t)n, "fill '%s': %s", path,
			      strerror(errno));
	}
}

static void
unfill(const char *dir)
{
	cleanup_free char *path = NULL;

	ck_assert_int_ge(asprintf(&path, "%s/filler", dir), 0);
	unlink(path);
}

/* A tree of n random files of size bytes each under a fresh host directory. Caller frees. */
static char *
make_tree(unsigned n, size_t size, uint64_t seed)
{
	cleanup_free uint8_t *data = malloc(size ? size : 1);
	char *dir = eos_test_tmpdir("src");
	char path[512];

	ck_assert_ptr_nonnull(data);
	for (unsigned i = 0; i < n; i++) {
		eos_test_fill_random(data, size, seed * 1000 + i);
		snprintf(path, sizeof(path), "%s/d%u/f%u", dir, i % 4, i);
		eos_test_write_file(path, data, size, 0644);
	}
	return dir;
}

static struct eos_store *
store_open(const char *fs, struct eos_error *err, int *ret)
{
	struct eos_store_options o = { .create = true, .cache_bytes = 4 << 20 };
	cleanup_free char *dir = NULL;
	struct eos_store *st = NULL;

	ck_assert_int_ge(asprintf(&dir, "%s/s", fs), 0);
	*ret = eos_store_open(dir, &o, &st, err);
	return st;
}

static struct eos_store *
store_open_ok(const char *fs)
{
	struct eos_error err = { 0 };
	int r;
	struct eos_store *st = store_open(fs, &err, &r);

	ck_ok(r, err);
	return st;
}

static int
import_tree(struct eos_store *st, const char *src, const char *id, struct eos_error *err)
{
	struct eos_import_options o = { .sandbox = id, .threads = 2 };
	struct eos_import_result res;

	return eos_store_import(st, src, &o, &res, err);
}

/* Publish one file of len random bytes as a plain change set on the head. */
static int
publish_file(struct eos_store *st, const char *sandbox, const char *path, size_t len, uint64_t seed,
	     struct eos_error *err)
{
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	struct eos_publish_options o = { .sandbox = sandbox, .owner = "operation:test" };
	cleanup_free uint8_t *data = malloc(len ? len : 1);
	struct eos_publish_file f = { .attr = eos_test_attr(0644), .len = len };
	struct eos_publish_result res = { 0 };
	int r;

	ck_assert_ptr_nonnull(data);
	eos_test_fill_random(data, len, seed);
	f.data = data;
	r = eos_publish_begin(st, &o, &p, err);
	r = r ?: eos_publish_put_file(p, path, &f, err);
	r = r ?: eos_publish_commit(p, &res, err);
	if (r == 0)
		ck_assert_int_eq(res.status, EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
	return r;
}

/* One session batch of one put (put) or one delete of key in session ws of sandbox a. */
static int
session_put(struct eos_store *st, const char *ws, const char *key, bool put, struct eos_error *err)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	int r = eos_session_batch_new(st, "a", ws, &b, err);

	ck_ok(r, *err);
	if (put)
		ck_assert_int_eq(eos_session_batch_put(b, key, strlen(key), "value", 5), 0);
	else
		ck_assert_int_eq(eos_session_batch_delete(b, key, strlen(key)), 0);
	return eos_session_batch_write(b, true, err);
}

static uint64_t
head_of(struct eos_store *st, const char *id)
{
	struct eos_sandbox_info info;
	struct eos_error err = { 0 };
	int r = eos_store_sandbox_get(st, id, &info, &err);

	ck_ok(r, err);
	return info.head;
}

static bool
sandbox_exists(struct eos_store *st, const char *id)
{
	struct eos_sandbox_info info;

	return eos_store_sandbox_get(st, id, &info, NULL) == 0;
}

/* The tree of sandbox id at its head has digest d. */
static bool
same_tree(struct eos_store *st, const char *id, const struct eos_digest *d)
{
	struct eos_digest now = eos_test_tree_digest(st, id, 0);

	return memcmp(&now, d, sizeof(now)) == 0;
}

static void
expect_fsck_clean(struct eos_store *st)
{
	struct eos_fsck_result res = { 0 };
	struct eos_error err = { 0 };
	int r = eos_store_fsck(st, EOS_FSCK_VERIFY_CHUNKS, NULL, NULL, &res, &err);

	ck_ok(r, err);
	ck_assert_uint_eq(res.violations, 0);
}

static struct eos_store_space
space_of(struct eos_store *st)
{
	struct eos_store_space sp;
	struct eos_error err = { 0 };
	int r = eos_store_space(st, &sp, &err);

	ck_ok(r, err);
	return sp;
}

static void
setup(void)
{
	enter_namespace();
}

/* --- the reserves ----------------------------------------------------------------------------- */

START_TEST(test_plan_sizes)
{
	struct eos_space_plan p;

	eos_space_plan_for(0, &p);
	ck_assert_uint_eq(p.soft, 0);
	ck_assert_uint_eq(p.hard, 0);
	/* a 64 MiB store keeps more than three quarters of its filesystem usable */
	eos_space_plan_for(64 * MIB, &p);
	ck_assert_uint_lt(p.soft, 16 * MIB);
	ck_assert_uint_ge(p.soft, p.hard + MIB);
	ck_assert_uint_ge(p.hard, 2 * p.memtables + p.wal + p.compaction);
	ck_assert_uint_le(p.write_buffer, p.memtables);
	/* a 1 TB disk loses less than 0.5 % */
	eos_space_plan_for(1000ULL * 1000 * MIB, &p);
	ck_assert_uint_lt(p.soft, 1000ULL * 1000 * MIB / 200);
	ck_assert_uint_eq(p.memtables, 256 * MIB);
}
END_TEST

/* --- item 5: filling the store ------------------------------------------------------------------
 */

/* Import 4 MiB trees until the store refuses one: every refusal is clean. */
START_TEST(test_import_until_full)
{
	cleanup_free char *fs = small_fs_new(32);
	cleanup_free char *store = NULL;
	struct eos_store *st = store_open_ok(fs);
	struct eos_error err = { 0 };
	struct eos_digest digests[16];
	char id[16];
	unsigned n = 0;
	int r = 0;

	ck_assert_int_ge(asprintf(&store, "%s/s", fs), 0);
	for (; n < 16; n++) {
		cleanup_free char *src = make_tree(8, 512 * KIB, n + 1);

		snprintf(id, sizeof(id), "s%u", n);
		r = import_tree(st, src, id, &err);
		eos_test_rm_rf(src);
		if (r < 0)
			break;
		digests[n] = eos_test_tree_digest(st, id, 0);
	}
	ck_assert_uint_lt(n, 16);
	ck_assert_uint_ge(n, 3);
	ck_full(r, err, store);
	/* nothing of the refused import is visible, the others are intact */
	ck_assert(!sandbox_exists(st, id));
	expect_fsck_clean(st);
	for (unsigned i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "s%u", i);
		ck_assert(same_tree(st, id, &digests[i]));
	}
	/* eos stopped before RocksDB could run short */
	ck_assert_uint_ge(space_of(st).free_bytes, space_of(st).hard_reserve / 2);
	/* space comes back in the same process */
	ck_ok(eos_store_sandbox_destroy(st, "s0", &err), err);
	ck_ok(eos_store_gc(st, NULL, &err), err);
	cleanup_free char *src = make_tree(8, 512 * KIB, 99);
	ck_ok(import_tree(st, src, "again", &err), err);
	expect_fsck_clean(st);
	eos_store_close(st);
	eos_test_rm_rf(src);
}
END_TEST

/* Where to fill to, relative to the reserves of the store. */
enum level {
	LEVEL_SOFT, /* just below the soft reserve: small records still go through */
	LEVEL_HARD, /* just below the hard reserve: only deletes */
	LEVEL_LOW,  /* 1.5 MiB: the database still opens for writing */
	LEVEL_NONE, /* 128 KiB: too little to open it for writing, it opens read-only */
	LEVEL_COUNT,
};

static uint64_t
level_bytes(const struct eos_store_space *sp, enum level l)
{
	switch (l) {
	case LEVEL_SOFT:
		return sp->soft_reserve - 256 * KIB;
	case LEVEL_HARD:
		return sp->hard_reserve - 256 * KIB;
	case LEVEL_LOW:
		return 3 * MIB / 2;
	case LEVEL_NONE:
	case LEVEL_COUNT:
		break;
	}
	return 128 * KIB;
}

/* Two sandboxes (a with three layers to squash, b to destroy) and a session on a. */
static struct eos_store *
levels_setup(const char *fs)
{
	cleanup_free char *src = make_tree(8, 512 * KIB, 7);
	struct eos_store *st = store_open_ok(fs);
	struct eos_error err = { 0 };

	ck_ok(import_tree(st, src, "a", &err), err);
	ck_ok(import_tree(st, src, "b", &err), err);
	ck_ok(publish_file(st, "a", "d0/f0", 300 * KIB, 1, &err), err);
	ck_ok(publish_file(st, "a", "d0/f0", 300 * KIB, 2, &err), err);
	ck_ok(eos_store_session_create(st, "a", "ws", 0, NULL, &err), err);
	ck_ok(session_put(st, "ws", "old", true, &err), err);
	eos_test_rm_rf(src);
	return st;
}

/* Growing writes are refused and change nothing. */
static void
level_expect_growth_refused(struct eos_store *st, const char *store, uint64_t head)
{
	cleanup_free char *src = make_tree(1, 100 * KIB, 3);
	struct eos_error err = { 0 };

	ck_full(import_tree(st, src, "c", &err), err, store);
	ck_assert(!sandbox_exists(st, "c"));
	ck_full(publish_file(st, "a", "new", 200 * KIB, 4, &err), err, store);
	ck_assert_uint_eq(head_of(st, "a"), head);
	ck_full(eos_store_space_check(st, 64 * KIB, &err), err, store);
	eos_test_rm_rf(src);
}

/* Everything works again once space is back. */
static void
level_expect_all_works(struct eos_store *st)
{
	cleanup_free char *src = make_tree(2, 200 * KIB, 5);
	struct eos_error err = { 0 };

	ck_ok(import_tree(st, src, "c", &err), err);
	ck_ok(publish_file(st, "a", "new", 200 * KIB, 6, &err), err);
	ck_ok(eos_store_session_create(st, "a", "ws2", 0, NULL, &err), err);
	ck_ok(session_put(st, "ws2", "again", true, &err), err);
	ck_ok(eos_store_squash(st, "a", NULL, &err), err);
	expect_fsck_clean(st);
	eos_test_rm_rf(src);
}

/* Small records go through down to the hard reserve, deletes always. */
static void
level_expect_records(struct eos_store *st, const char *store, bool records, uint64_t head)
{
	struct eos_error err = { 0 };
	int r = session_put(st, "ws", "new", true, &err);

	if (records)
		ck_ok(r, err);
	else
		ck_full(r, err, store);
	ck_ok(session_put(st, "ws", "old", false, &err), err);
	r = eos_store_squash(st, "a", NULL, &err);
	if (records)
		ck_ok(r, err);
	else
		ck_full(r, err, store);
	ck_assert_uint_eq(head_of(st, "a"), head);
}

/* Close and open again at this fill level; below the floor for writing it opens read-only. */
static struct eos_store *
level_reopen(struct eos_store *st, const char *fs, const char *store, enum level l)
{
	cleanup_free struct eos_sandbox_info *sbs = NULL;
	struct eos_error err = { 0 };
	size_t n = 0;

	eos_store_close(st);
	st = store_open_ok(fs);
	ck_ok(eos_store_sandbox_list(st, &sbs, &n, &err), err);
	ck_assert_uint_eq(n, 2);
	expect_fsck_clean(st);
	if (l == LEVEL_NONE)
		ck_full(eos_store_sandbox_destroy(st, "b", &err), err, store);
	return st;
}

START_TEST(test_levels)
{
	cleanup_free char *fs = small_fs_new(64);
	cleanup_free char *store = NULL;
	struct eos_store *st = levels_setup(fs);
	struct eos_store_stats stats;
	struct eos_store_space sp;
	struct eos_error err = { 0 };
	uint64_t head = head_of(st, "a");
	enum level l = (enum level)_i;

	ck_assert_int_ge(asprintf(&store, "%s/s", fs), 0);
	ck_ok(eos_store_stats(st, &stats, &err), err); /* flushes the memtables */
	sp = space_of(st);
	fill_to(fs, level_bytes(&sp, l));
	space_of(st); /* the store's statvfs() cache sees the filler now, not in 100 ms */
	level_expect_growth_refused(st, store, head);
	level_expect_records(st, store, l == LEVEL_SOFT, head);
	expect_fsck_clean(st);
	st = level_reopen(st, fs, store, l);
	if (l != LEVEL_NONE) {
		ck_ok(eos_store_session_remove(st, "a", "ws", &err), err);
		ck_ok(eos_store_sandbox_destroy(st, "b", &err), err);
		ck_ok(eos_store_gc(st, NULL, &err), err);
		expect_fsck_clean(st);
	}
	unfill(fs);
	if (l == LEVEL_NONE) {
		eos_store_close(st);
		st = store_open_ok(fs);
	}
	level_expect_all_works(st);
	eos_store_close(st);
}
END_TEST

/* Session records of bytes random (incompressible) bytes in all, in one batch. */
static void
session_fill(struct eos_store *st, size_t bytes)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	struct eos_error err = { 0 };
	uint8_t val[4096];
	char key[32];

	ck_ok(eos_session_batch_new(st, "a", "ws", &b, &err), err);
	for (size_t i = 0; i * sizeof(val) < bytes; i++) {
		eos_test_fill_random(val, sizeof(val), i);
		snprintf(key, sizeof(key), "fill%zu", i);
		ck_assert_int_eq(eos_session_batch_put(b, key, strlen(key), val, sizeof(val)), 0);
	}
	ck_ok(eos_session_batch_write(b, true, &err), err);
}

/* A flush that fails for lack of space stops RocksDB's writes; it resumes once space is back. */
START_TEST(test_background_error_recovers)
{
	cleanup_free char *fs = small_fs_new(64);
	cleanup_free char *store = NULL;
	cleanup_free char *src = make_tree(1, 400 * KIB, 11);
	struct eos_store *st = store_open_ok(fs);
	struct eos_digest d;
	struct eos_error err = { 0 };
	int r = -ENOSPC;

	ck_assert_int_ge(asprintf(&store, "%s/s", fs), 0);
	ck_ok(import_tree(st, src, "a", &err), err);
	ck_ok(eos_store_session_create(st, "a", "ws", 0, NULL, &err), err);
	d = eos_test_tree_digest(st, "a", 0);
	ck_ok(eos_kv_flush(st->kv, &err), err); /* and the WAL files of the import go */
	session_fill(st, 256 * KIB);
	/* the records are in a memtable: no room for the table they are flushed to */
	fill_to(fs, 64 * KIB);
	space_of(st);
	ck_full(eos_kv_flush(st->kv, &err), err, store);
	/* writes fail (deletes too: RocksDB stopped), naming the store; reads go on */
	ck_full(session_put(st, "ws", "k", false, &err), err, store);
	ck_assert(same_tree(st, "a", &d));
	unfill(fs);
	/* RocksDB's SstFileManager retries every 5 s once there is room for a memtable */
	for (int i = 0; i < 600 && r == -ENOSPC; i++) {
		eos_error_clear(&err);
		r = session_put(st, "ws", "k", false, &err);
		if (r == -ENOSPC)
			usleep(100 * 1000);
	}
	ck_ok(r, err);
	ck_ok(import_tree(st, src, "b", &err), err);
	expect_fsck_clean(st);
	eos_store_close(st);
	/* and the store opens again with everything in it */
	st = store_open_ok(fs);
	expect_fsck_clean(st);
	d = eos_test_tree_digest(st, "b", 0);
	ck_assert(same_tree(st, "a", &d));
	eos_store_close(st);
	eos_test_rm_rf(src);
}
END_TEST

/* --- item 7: space comes back ----------------------------------------------------------------- */

/* Bytes the store takes on its own tmpfs, after RocksDB wrote out its memtables. */
static uint64_t
store_used(struct eos_store *st, const char *fs)
{
	struct eos_store_stats stats;
	struct eos_error err = { 0 };

	ck_ok(eos_store_stats(st, &stats, &err), err);
	return fs_used(fs);
}

/*
 * What `what` added to the store on fs (over 30 MiB) went again: within 10 % of the size before
 * it. RocksDB deletes the files a compaction made obsolete in its background thread, just after
 * the compaction returns: wait for that (up to a minute).
 */
static void
expect_space_back(const char *fs, uint64_t before, uint64_t full, const char *what)
{
	uint64_t after = fs_used(fs);

	ck_assert_uint_gt(full, before + 30 * MIB);
	for (int i = 0; i < 600 && after > before + before / 10; i++) {
		usleep(100 * 1000);
		after = fs_used(fs);
	}
	ck_assert_msg(after <= before + before / 10,
		      "%.1f MiB before %s, %.1f MiB with it, %.1f MiB after it was deleted",
		      (double)before / MIB, what, (double)full / MIB, (double)after / MIB);
}

START_TEST(test_destroy_gives_space_back)
{
	cleanup_free char *fs = small_fs_new(512);
	cleanup_free char *base = make_tree(16, 512 * KIB, 21);
	cleanup_free char *big = make_tree(64, 512 * KIB, 22);
	struct eos_store *st = store_open_ok(fs);
	struct eos_error err = { 0 };
	uint64_t before, full;

	ck_ok(import_tree(st, base, "base", &err), err);
	before = store_used(st, fs);
	ck_ok(import_tree(st, big, "big", &err), err);
	full = store_used(st, fs);
	ck_ok(eos_store_sandbox_destroy(st, "big", &err), err);
	ck_ok(eos_store_gc(st, NULL, &err), err);
	expect_space_back(fs, before, full, "the sandbox");
	expect_fsck_clean(st);
	eos_store_close(st);
	eos_test_rm_rf(base);
	eos_test_rm_rf(big);
}
END_TEST

/* Rewrite every file of the n-file tree of make_tree() in one publish. */
static void
publish_rewrite(struct eos_store *st, const char *sandbox, unsigned n, size_t size, uint64_t seed)
{
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	struct eos_publish_options o = { .sandbox = sandbox, .owner = "operation:test" };
	cleanup_free uint8_t *data = malloc(size);
	struct eos_publish_result res = { 0 };
	struct eos_error err = { 0 };
	char path[64];

	ck_assert_ptr_nonnull(data);
	ck_ok(eos_publish_begin(st, &o, &p, &err), err);
	for (unsigned i = 0; i < n; i++) {
		struct eos_publish_file f = { .attr = eos_test_attr(0644), .len = size };

		eos_test_fill_random(data, size, seed * 1000 + i);
		f.data = data;
		snprintf(path, sizeof(path), "d%u/f%u", i % 4, i);
		ck_ok(eos_publish_put_file(p, path, &f, &err), err);
	}
	ck_ok(eos_publish_commit(p, &res, &err), err);
	ck_assert_int_eq(res.status, EOS_PUBLISH_PUBLISHED);
	eos_publish_result_release(&res);
}

START_TEST(test_squash_gives_space_back)
{
	cleanup_free char *fs = small_fs_new(512);
	cleanup_free char *src = make_tree(32, 512 * KIB, 31);
	struct eos_store *st = store_open_ok(fs);
	struct eos_squash_result res = { 0 };
	struct eos_error err = { 0 };
	uint64_t before, full;

	ck_ok(import_tree(st, src, "s", &err), err);
	before = store_used(st, fs);
	publish_rewrite(st, "s", 32, 512 * KIB, 32);
	publish_rewrite(st, "s", 32, 512 * KIB, 33);
	full = store_used(st, fs);
	ck_ok(eos_store_squash(st, "s", &res, &err), err);
	ck_assert_uint_eq(res.layers_removed, 2);
	expect_space_back(fs, before, full, "two rewrites");
	expect_fsck_clean(st);
	eos_store_close(st);
	eos_test_rm_rf(src);
}
END_TEST

static Suite *
space_suite(void)
{
	Suite *s = suite_create("space");
	TCase *tc = tcase_create("space");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_plan_sizes);
	tcase_add_test(tc, test_import_until_full);
	tcase_add_loop_test(tc, test_levels, 0, LEVEL_COUNT);
	tcase_add_test(tc, test_background_error_recovers);
	tcase_add_test(tc, test_destroy_gives_space_back);
	tcase_add_test(tc, test_squash_gives_space_back);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return eos_test_run(space_suite());
}
