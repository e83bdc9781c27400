/* SPDX-License-Identifier: MIT */
#include "store/kv.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/failpoint.h"

#include "store/space.h"

#define KV_MIB ((size_t)1 << 20)

enum {
	/* Entry keys end in an 8-byte inverted version; the rest is the prefix. */
	KV_VERSION_BYTES = 8,
	/* Bits per key of every bloom filter: ~1% false positives. */
	KV_BLOOM_BITS = 10,
	/* Values of at least this size go to blob files (chunks only). */
	KV_MIN_BLOB_BYTES = 4096,
	/* Churned column families: an SST with half of any window of this many keys deleted is
	 * compacted at once. */
	KV_CHURN_WINDOW = 16384,
	/* RocksDB's BottommostLevelCompaction::kForce and kForceOptimized. */
	KV_BOTTOMMOST_FORCE = 2,
	KV_BOTTOMMOST_FORCE_OPTIMIZED = 3,
	/* Level-0 files that stall writes in a damaged database: never. */
	KV_L0_UNBOUNDED = 1 << 30,
	KV_LZ4 = rocksdb_lz4_compression,
	KV_NONE = rocksdb_no_compression,
	/* RocksDB's InfoLogLevel::HEADER_LEVEL: only what DB::Open() writes. */
	KV_LOG_HEADER = 5,
	/* Idle iterators kept per column family and kind (eos_kv_iter_take). */
	KV_POOL_MAX = 8,
	/* Kinds: every combination of enum eos_kv_iter_flags. */
	KV_POOL_KINDS = 4,
};

/* A pooled iterator older than this is made anew: it would pin what flushes have replaced. */
#define KV_POOL_AGE_NS 1000000000LL

/*
 * Per column family tuning. Memtables are sized by write volume: chunks and entries take the
 * bulk of every import, the small metadata families get modest buffers so ten column families
 * don't pin gigabytes of memtables.
 */
struct kv_cf_tuning {
	const char *name;    /* on disk: never rename */
	int compression;     /* rocksdb_*_compression for SST files */
	size_t write_buffer; /* memtable size */
	bool bloom;	     /* whole-key bloom filter (point lookups that often miss) */
	bool prefix;	     /* entries: prefix extractor + prefix bloom instead of whole keys */
	bool blob;	     /* BlobDB: large values live in blob files, SSTs keep only keys */
	bool churn;	     /* records deleted soon after they are written (session deltas) */
};

static const struct kv_cf_tuning kv_tuning[EOS_CF_COUNT] = {
	[EOS_CF_DEFAULT] = { "default", KV_LZ4, 4 * KV_MIB },
	/*
	 * Values are zstd frames already: compressing them again only burns CPU. Bloom because
	 * import probes every new chunk for dedup and most probes miss.
	 */
	[EOS_CF_CHUNKS] = { "chunks", KV_NONE, 64 * KV_MIB, .bloom = true, .blob = true },
	/* Read-modify-write on every publish: bloom makes missing refs cheap. */
	[EOS_CF_REFS] = { "refs", KV_LZ4, 32 * KV_MIB, .bloom = true },
	[EOS_CF_MANIFESTS] = { "manifests", KV_LZ4, 16 * KV_MIB },
	/* Keys share long sandbox·path prefixes, which LZ4 and prefix encoding shrink well. */
	[EOS_CF_ENTRIES] = { "entries", KV_LZ4, 64 * KV_MIB, .prefix = true },
	[EOS_CF_LAYERS] = { "layers", KV_LZ4, 8 * KV_MIB },
	[EOS_CF_META] = { "meta", KV_LZ4, 8 * KV_MIB },
	/*
	 * Session deltas churn: a create-and-delete storm writes and deletes every record again.
	 * A small memtable keeps a serving process's memory flat, and files that are mostly
	 * deletions are compacted early so the tombstones give their space back.
	 */
	[EOS_CF_SESSION] = { "session", KV_LZ4, 4 * KV_MIB, .churn = true },
	[EOS_CF_BLAME] = { "blame", KV_LZ4, 16 * KV_MIB },
	/*
	 * Observations (store/obs.c): small records appended in time order and trimmed from the
	 * oldest end by range deletes. A small memtable keeps a daemon's memory flat.
	 */
	[EOS_CF_OBS] = { "obs", KV_LZ4, 4 * KV_MIB },
};

/*
 * Everything here is immutable after eos_kv_open(), so concurrent readers and writers only
 * share RocksDB objects, which are thread-safe.
 *
 * Ownership of the tuning objects: the block cache is a handle we destroy ourselves (tables
 * hold their own reference). Filter policies and the entries prefix extractor are handed over
 * to the table and column family options (RocksDB's C API resets a shared_ptr with them), so
 * they are never destroyed here: that would be a double free. Table options are copied into the
 * table factory; we keep them alive anyway, next to the options, until after the DB is closed.
 */
/*
 * Idle iterators of one column family and kind (flags). An iterator reads the database as it was
 * when it was made, so one is taken again only while no write to its column family has ended
 * since (*gen, the family's generation, bumped after every write, flush and compaction of it,
 * which also free the idle ones).
 */
struct kv_pool {
	pthread_mutex_t lock;
	struct eos_kv_iter *idle[KV_POOL_MAX];
	atomic_size_t n; /* changed under lock; read without it to pass an empty pool by */
	atomic_uint_fast64_t *gen;
};

struct eos_kv {
	struct kv_pool pool[EOS_CF_COUNT][KV_POOL_KINDS];
	atomic_uint_fast64_t gen[EOS_CF_COUNT];
	rocksdb_t *db;
	rocksdb_column_family_handle_t *cf[EOS_CF_COUNT];
	rocksdb_options_t *db_opts;
	rocksdb_options_t *cf_opts[EOS_CF_COUNT];
	rocksdb_block_based_table_options_t *table_opts[EOS_CF_COUNT];
	rocksdb_cache_t *block_cache;
	rocksdb_readoptions_t *read_latest;
	rocksdb_writeoptions_t *write_sync;
	rocksdb_writeoptions_t *write_nosync;
	char *damage;		     /* the open found a damaged table file: RocksDB's message */
	struct eos_space_plan space; /* all 0: the big-disk sizes */
	char *name;		     /* the database in messages */
	bool read_only;		     /* opened for reading only: no room to open it for writing */
};

struct eos_kv_iter {
	rocksdb_iterator_t *it;
	rocksdb_readoptions_t *ro;
	struct kv_pool *pool; /* taken from it (eos_kv_iter_free gives it back), else NULL */
	uint64_t gen;	      /* the pool's generation before it was made */
	int64_t born_ns;      /* CLOCK_MONOTONIC_COARSE */
	/* The upper bound slice points here: it must outlive the iterator. */
	size_t ulen;
	uint8_t upper[];
};

/* The pool (below the iterators): writers tell it what they wrote; close empties it. */
static void kv_pool_drain(struct kv_pool *p);
static void kv_wrote(struct eos_kv *kv, enum eos_cf cf);
static void kv_wrote_batch(struct eos_kv *kv, uint32_t cfs);
static_assert(EOS_CF_COUNT <= 32, "a batch records its column families in 32 bits");

/* Operations recorded by a batch; replayed into a rocksdb_writebatch_t by batch_write. */
enum kv_op {
	KV_OP_PUT,
	KV_OP_DELETE,
	KV_OP_DELETE_RANGE,
};

/*
 * Batches are created without a database, but RocksDB write batches need column family
 * handles, which belong to an open database. So a batch records its operations in a log
 * (op u8, cf u8, LE64 key length, key, LE64 value length, value; the value of a range delete
 * is its end key) and eos_kv_batch_write() replays it with the database's handles.
 */
struct eos_kv_batch {
	struct eos_buf log;
	size_t count;
	int error; /* sticky -ENOMEM of a failed append (the adders return void) */
};

EOS_DEFINE_CLEANUP(rocksdb_readoptions_t *, rocksdb_readoptions_destroy)
EOS_DEFINE_CLEANUP(rocksdb_pinnableslice_t *, rocksdb_pinnableslice_destroy)
EOS_DEFINE_CLEANUP(rocksdb_writebatch_t *, rocksdb_writebatch_destroy)
EOS_DEFINE_CLEANUP(rocksdb_flushoptions_t *, rocksdb_flushoptions_destroy)
EOS_DEFINE_CLEANUP(rocksdb_compactoptions_t *, rocksdb_compactoptions_destroy)
EOS_DEFINE_CLEANUP(struct eos_kv *, eos_kv_close)

const char *
eos_kv_cf_name(enum eos_cf cf)
{
	if ((unsigned)cf >= EOS_CF_COUNT)
		return NULL;
	return kv_tuning[cf].name;
}

/*
 * The errno of a RocksDB status message: -EBADMSG for Status::Corruption (damage on disk,
 * doc/error-handling.md), -ENOSPC for Status::NoSpace() (a write, flush or compaction met a full
 * filesystem, or the database stopped writes after one), else -EIO.
 */
static int
kv_errno(const char *msg)
{
	static const char corruption[] = "Corruption:";

	if (strncmp(msg, corruption, sizeof(corruption) - 1) == 0)
		return -EBADMSG;
	return strstr(msg, "No space left on device") ? -ENOSPC : -EIO;
}

/* Fill err with "ctx: msg" (ctx formatted), free RocksDB's msg and return kv_errno(msg). */
static int kv_fail(struct eos_error *err, char *msg, const char *fmt, ...) EOS_PRINTF(3, 4);

static int
kv_fail(struct eos_error *err, char *msg, const char *fmt, ...)
{
	char ctx[EOS_ERROR_MSG_MAX];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	r = eos_error_set(err, kv_errno(msg), "%s: %s", ctx, msg);
	rocksdb_free(msg);
	return r;
}

/*
 * A write or flush failed with r: out of space, the message names the store. RocksDB stops writes
 * after a failed flush or WAL write and resumes by itself once the filesystem has room for its
 * largest memtable again (its SstFileManager polls every 5 s; doc/store-format.md, "Free space").
 */
static int
kv_full(const struct eos_kv *kv, struct eos_error *err, int r)
{
	if (r != -ENOSPC)
		return r;
	return eos_error_prefix(err, r, "store '%s' is out of space", kv->name);
}

/* The entries prefix: the key minus its trailing version. Borrows the key (no copy). */
static char *
kv_entries_prefix(void *state, const char *key, size_t len, size_t *ret_len)
{
	(void)state;
	*ret_len = len - KV_VERSION_BYTES;
	return (char *)key;
}

static unsigned char
kv_entries_in_domain(void *state, const char *key, size_t len)
{
	(void)state;
	(void)key;
	return len > KV_VERSION_BYTES;
}

/* Only used by the deprecated in-range filtering; no key is a prefix by itself. */
static unsigned char
kv_entries_in_range(void *state, const char *key, size_t len)
{
	(void)state;
	(void)key;
	(void)len;
	return 0;
}

/* Recorded in SST properties: changing it disables the prefix bloom of existing files. */
static const char *
kv_entries_prefix_name(void *state)
{
	(void)state;
	return "eos.entries-prefix.v1";
}

/* The C API calls the destructor unconditionally; there is no state to free. */
static void
kv_entries_prefix_destroy(void *state)
{
	(void)state;
}

/*
 * entries: point-in-time lookups are one Seek() inside one sandbox·parent·name prefix, so a
 * prefix bloom (in SSTs and in the memtable) answers "no such name" without reading data
 * blocks. Whole-key filtering is useless there (lookups never know the exact version).
 */
static void
kv_tune_entries(rocksdb_options_t *o, rocksdb_block_based_table_options_t *tb)
{
	rocksdb_options_set_prefix_extractor(
		o, rocksdb_slicetransform_create(NULL, kv_entries_prefix_destroy, kv_entries_prefix,
						 kv_entries_in_domain, kv_entries_in_range,
						 kv_entries_prefix_name));
	rocksdb_options_set_memtable_prefix_bloom_size_ratio(o, 0.1);
	rocksdb_block_based_options_set_whole_key_filtering(tb, 0);
}

/*
 * chunks: BlobDB keeps large frames out of the LSM tree, so compactions move only keys and
 * blob references (no write amplification of chunk data). A blob file is deleted once
 * compactions have dropped every reference to it, which is how deleted chunks give their space
 * back (eos_kv_compact_range() after destroy, gc and squash). Blob GC stays off: with random
 * (digest) keys every compaction into the base level reads all older references, so it rewrote
 * the live blobs of the oldest quarter of all blob files again and again, and needed that much
 * free space while doing it (doc/store-format.md, "Reclaiming space").
 */
static void
kv_tune_blob(rocksdb_options_t *o)
{
	rocksdb_options_set_enable_blob_files(o, 1);
	rocksdb_options_set_min_blob_size(o, KV_MIN_BLOB_BYTES);
	rocksdb_options_set_blob_file_size(o, 256 * KV_MIB);
	rocksdb_options_set_blob_compression_type(o, rocksdb_no_compression);
	rocksdb_options_set_enable_blob_gc(o, 0);
}

/*
 * Sizes for the filesystem (store/space.h): memtables, WAL, tables, blobs, LOG and MANIFEST stay
 * within what the store's reserves cover, so RocksDB never needs more than they keep free.
 */
static void
kv_tune_cf_space(const struct eos_kv *kv, rocksdb_options_t *o, const struct kv_cf_tuning *t)
{
	const struct eos_space_plan *p = &kv->space;

	if (p->fs_bytes == 0)
		return;
	rocksdb_options_set_write_buffer_size(o, EOS_MIN(t->write_buffer, p->write_buffer));
	rocksdb_options_set_target_file_size_base(o, p->table_file);
	rocksdb_options_set_max_compaction_bytes(o, p->compaction);
	if (t->blob)
		rocksdb_options_set_blob_file_size(o, p->blob_file);
}

/*
 * No fallocate(): RocksDB preallocates WAL, table and blob files by up to 1.1 times their target
 * size, which on a small filesystem eats the free space the reserves count on (and on tmpfs or
 * ext4 a failed preallocation may leave blocks taken until the file is closed).
 *
 * The info LOG only gets what DB::Open() writes: in the Debian build of 7.8, a LOG line that fails
 * to write (ENOSPC) makes the next one abort the process, and RocksDB logs errors in a loop while
 * a filesystem is full. The statuses eos receives carry the errors themselves.
 */
static void
kv_tune_db_space(struct eos_kv *kv)
{
	const struct eos_space_plan *p = &kv->space;
	rocksdb_options_t *o = rocksdb_options_create();
	char *msg = NULL;

	rocksdb_options_set_info_log_level(kv->db_opts, KV_LOG_HEADER);
	if (p->fs_bytes > 0) {
		rocksdb_options_set_db_write_buffer_size(kv->db_opts, p->memtables);
		/* never above the 64 MiB of kv_tune_db(): less WAL only takes less space */
		rocksdb_options_set_max_total_wal_size(kv->db_opts,
						       EOS_MIN(p->wal, (uint64_t)64 * KV_MIB));
		rocksdb_options_set_max_log_file_size(kv->db_opts, p->log_file);
		rocksdb_options_set_keep_log_file_num(kv->db_opts, EOS_SPACE_LOG_FILES);
		rocksdb_options_set_max_manifest_file_size(kv->db_opts, p->manifest);
	}
	rocksdb_get_options_from_string(kv->db_opts, "allow_fallocate=false", o, &msg);
	if (msg) {
		/* a known option: only a RocksDB without it fails, and then it preallocates */
		rocksdb_free(msg);
		rocksdb_options_destroy(o);
		return;
	}
	rocksdb_options_destroy(kv->db_opts);
	kv->db_opts = o;
}

static void
kv_tune_cf(struct eos_kv *kv, enum eos_cf cf)
{
	const struct kv_cf_tuning *t = &kv_tuning[cf];
	rocksdb_options_t *o = rocksdb_options_create_copy(kv->db_opts);
	rocksdb_block_based_table_options_t *tb = rocksdb_block_based_options_create();

	/* One LRU block cache shared by every column family bounds read memory globally. */
	rocksdb_block_based_options_set_block_cache(tb, kv->block_cache);
	/* Full (not block-based) filters: they also serve batched MultiGet. */
	if (t->bloom || t->prefix)
		rocksdb_block_based_options_set_filter_policy(
			tb, rocksdb_filterpolicy_create_bloom_full(KV_BLOOM_BITS));
	if (t->prefix)
		kv_tune_entries(o, tb);
	if (t->blob)
		kv_tune_blob(o);
	if (t->churn)
		rocksdb_options_add_compact_on_deletion_collector_factory(o, KV_CHURN_WINDOW,
									  KV_CHURN_WINDOW / 2);
	rocksdb_options_set_compression(o, t->compression);
	rocksdb_options_set_write_buffer_size(o, t->write_buffer);
	kv_tune_cf_space(kv, o, t);
	/* The factory copies the table options: set it last. */
	rocksdb_options_set_block_based_table_factory(o, tb);
	kv->cf_opts[cf] = o;
	kv->table_opts[cf] = tb;
}

static unsigned
kv_threads(const struct eos_kv_options *opts)
{
	long n;

	if (opts->threads > 0)
		return opts->threads;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

/*
 * Acknowledged writes must never go missing silently. RocksDB's default WAL recovery
 * (kPointInTimeRecovery) stops replaying at the first bad record and opens anyway, so a
 * damaged log used to drop every write after it without a word. kTolerateCorruptedTailRecords
 * still accepts a record cut short at the very end of a log (a crash while writing it; such a
 * write was never acknowledged) and fails the open on any other damage. Paranoid checks make
 * RocksDB report that damage at all (without them it skips bad records) and refuse table files
 * it cannot open.
 */
static void
kv_tune_recovery(rocksdb_options_t *o)
{
	rocksdb_options_set_wal_recovery_mode(o, rocksdb_tolerate_corrupted_tail_records_recovery);
	rocksdb_options_set_paranoid_checks(o, 1);
}

static void
kv_tune_db(struct eos_kv *kv, const struct eos_kv_options *opts)
{
	rocksdb_options_t *o = rocksdb_options_create();
	unsigned threads = kv_threads(opts);

	kv->db_opts = o;
	rocksdb_options_set_create_if_missing(o, opts->create);
	/*
	 * Always: RocksDB creates column families one at a time, so a process killed while creating
	 * a store leaves some missing, and the store must still open afterwards.
	 */
	rocksdb_options_set_create_missing_column_families(o, 1);
	kv_tune_recovery(o);
	/* Size RocksDB's background pools to the machine (or the caller's choice)... */
	rocksdb_options_increase_parallelism(o, (int)threads);
	/* ...with at least one flush and one compaction able to run side by side. */
	rocksdb_options_set_max_background_jobs(o, (int)EOS_MAX(threads, 2u));
	/* Write back SST and blob files progressively instead of in one burst at fsync. */
	rocksdb_options_set_bytes_per_sync(o, KV_MIB);
	/*
	 * Rarely written column families would otherwise keep old WAL files alive: a session's
	 * delta traffic behind an import that is still in a memtable kept up to this much of WAL
	 * on disk, so it is kept well below the memtables' total.
	 */
	rocksdb_options_set_max_total_wal_size(o, 64 * KV_MIB);
	/* Bounded space amplification whatever the database size. */
	rocksdb_options_set_level_compaction_dynamic_level_bytes(o, 1);
	/* The info LOG lives in the state dir: keep it bounded. */
	rocksdb_options_set_keep_log_file_num(o, 4);
	rocksdb_options_set_max_log_file_size(o, 16 * KV_MIB);
	kv_tune_db_space(kv);
	kv->block_cache = rocksdb_cache_create_lru(64 * KV_MIB);
	for (unsigned i = 0; i < EOS_CF_COUNT; i++)
		kv_tune_cf(kv, (enum eos_cf)i);
	kv->read_latest = rocksdb_readoptions_create();
	kv->write_sync = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(kv->write_sync, 1);
	kv->write_nosync = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(kv->write_nosync, 0);
}

/* A database opened read-only refuses writes: the filesystem had no room to open it otherwise. */
static int
kv_writable(const struct eos_kv *kv, struct eos_error *err)
{
	if (!kv->read_only)
		return 0;
	return eos_error_set(err, -ENOSPC,
			     "store '%s' is full: it was opened read-only, there was no room to "
			     "open its database for writing: free space on its filesystem",
			     kv->name);
}

/* Without create, a missing database is -ENOENT (RocksDB would only say "invalid argument"). */
static int
kv_check_exists(const char *path, struct eos_error *err)
{
	cleanup_close int dfd = -1;
	struct stat st;

	dfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstatat(dfd, "CURRENT", &st, 0) < 0) {
		int r = eos_neg_errno();

		if (r == -ENOENT)
			return eos_error_set(err, r, "store '%s' does not exist", path);
		return eos_error_set(err, r, "store '%s': %s", path, strerror(-r));
	}
	return 0;
}

/*
 * Read-only, RocksDB creates no file (no LOG, MANIFEST, OPTIONS or WAL) and replays the WAL into
 * memory only: a store opens that way even on a full filesystem.
 */
static void
kv_open_db(struct eos_kv *kv, const char *path, char **msg)
{
	const rocksdb_options_t *const *cf_opts = (const rocksdb_options_t *const *)kv->cf_opts;
	const char *names[EOS_CF_COUNT];

	for (unsigned i = 0; i < EOS_CF_COUNT; i++)
		names[i] = kv_tuning[i].name;
	if (kv->read_only)
		kv->db = rocksdb_open_for_read_only_column_families(kv->db_opts, path, EOS_CF_COUNT,
								    names, cf_opts, kv->cf, 0, msg);
	else
		kv->db = rocksdb_open_column_families(kv->db_opts, path, EOS_CF_COUNT, names,
						      cf_opts, kv->cf, msg);
}

/* -EBADMSG naming the first damaged write-ahead log of path, 0 when every log verifies. */
static int
kv_check_wal(const char *path, struct eos_error *err)
{
	struct eos_kv_wal_damage d;
	int r = eos_kv_wal_check(path, &d, err);

	if (r <= 0)
		return r;
	return eos_error_set(err, -EBADMSG,
			     "write-ahead log '%s/%s' is damaged at byte %llu (%s): the %llu bytes "
			     "of writes from there on cannot be replayed",
			     path, d.file, (unsigned long long)d.offset, d.problem,
			     (unsigned long long)(d.dropped + d.later_bytes));
}

/*
 * RocksDB could not open a table file (its message names one): a damaged or missing .sst (a
 * missing one is also looked for as .ldb, the name it is reported by).
 */
static bool
kv_table_failed(const char *msg)
{
	bool table = strstr(msg, ".sst") || strstr(msg, ".ldb");

	return table && (kv_errno(msg) == -EBADMSG || strstr(msg, "No such file"));
}

/*
 * Open a database that holds damage RocksDB refuses with paranoid checks: a table file it cannot
 * open (the plain open fails), or a block a compaction cannot read (with paranoid checks RocksDB
 * then stops every write: an unrecoverable background error). Without them, that file fails only
 * the reads that need it and a compaction that meets the damage fails alone and is retried, so
 * fsck can say what is damaged and destroy, gc and the rest keep working. RocksDB also skips bad
 * log records without them, so the logs are verified first. Level 0 may then grow in a column
 * family whose compactions keep failing: it must not stall writes.
 */
static int
kv_open_degraded(struct eos_kv *kv, const char *path, struct eos_error *err)
{
	char *msg = NULL;
	int r = kv_check_wal(path, err);

	if (r < 0)
		return r;
	rocksdb_options_set_paranoid_checks(kv->db_opts, 0);
	for (unsigned i = 0; i < EOS_CF_COUNT; i++) {
		rocksdb_options_set_level0_slowdown_writes_trigger(kv->cf_opts[i], KV_L0_UNBOUNDED);
		rocksdb_options_set_level0_stop_writes_trigger(kv->cf_opts[i], KV_L0_UNBOUNDED);
	}
	kv_open_db(kv, path, &msg);
	if (msg)
		return kv_fail(err, msg, "store '%s' is damaged", path);
	return 0;
}

/*
 * The plain open failed with msg (taken). Damage in a write-ahead log always fails; a table file
 * RocksDB cannot open is left to the reads that need it (kv_open_degraded); anything else (a
 * damaged MANIFEST) fails.
 */
static int
kv_open_damaged(struct eos_kv *kv, const char *path, char *msg, struct eos_error *err)
{
	int r;

	if (kv_errno(msg) != -EBADMSG && !kv_table_failed(msg))
		return kv_fail(err, msg, "open store '%s'", path);
	r = kv_check_wal(path, err);
	if (r < 0) {
		rocksdb_free(msg);
		return r;
	}
	if (!kv_table_failed(msg))
		return kv_fail(err, msg, "store '%s' is damaged", path);
	kv->damage = strdup(msg);
	rocksdb_free(msg);
	if (!kv->damage)
		return eos_error_set(err, -ENOMEM, "open store '%s': out of memory", path);
	return kv_open_degraded(kv, path, err);
}

int
eos_kv_open(const char *path, const struct eos_kv_options *opts, struct eos_kv **ret,
	    struct eos_error *err)
{
	static const struct eos_kv_options defaults = { 0 };
	EOS_CLEANUP(eos_kv_closep) struct eos_kv *kv = NULL;
	char *msg = NULL;
	int r;

	if (!opts)
		opts = &defaults;
	if (!opts->create) {
		r = kv_check_exists(path, err);
		if (r < 0)
			return r;
	}
	kv = calloc(1, sizeof(*kv));
	if (kv) {
		for (unsigned i = 0; i < EOS_CF_COUNT; i++)
			for (unsigned k = 0; k < KV_POOL_KINDS; k++) {
				pthread_mutex_init(&kv->pool[i][k].lock, NULL);
				kv->pool[i][k].gen = &kv->gen[i];
			}
		kv->name = strdup(opts->name ? opts->name : path);
	}
	if (!kv || !kv->name)
		return eos_error_set(err, -ENOMEM, "open store '%s': out of memory", path);
	if (opts->space)
		kv->space = *opts->space;
	kv->read_only = opts->read_only;
	kv_tune_db(kv, opts);
	if (opts->damaged) {
		r = kv_open_degraded(kv, path, err);
		if (r < 0)
			return r;
	} else {
		kv_open_db(kv, path, &msg);
		if (msg && (r = kv_open_damaged(kv, path, msg, err)) < 0)
			return r;
	}
	*ret = TAKE_PTR(kv);
	return 0;
}

bool
eos_kv_stopped_by_damage(struct eos_kv *kv)
{
	static const char probe[] = "eos.probe";
	uint64_t errors = 0;
	char *msg = NULL;
	bool damaged;

	/* Nothing to ask unless a flush or compaction failed since the open. */
	if (rocksdb_property_int(kv->db, "rocksdb.background-errors", &errors) != 0 || errors == 0)
		return false;
	/* A stopped database fails every write with its background error. */
	rocksdb_delete_cf(kv->db, kv->write_nosync, kv->cf[EOS_CF_DEFAULT], probe,
			  sizeof(probe) - 1, &msg);
	damaged = msg && kv_errno(msg) == -EBADMSG;
	rocksdb_free(msg);
	return damaged;
}

const char *
eos_kv_damage(const struct eos_kv *kv)
{
	return kv->damage;
}

void
eos_kv_close(struct eos_kv *kv)
{
	if (!kv)
		return;
	/* Iterators and handles go before the database, the options and the cache after it. */
	for (unsigned i = 0; i < EOS_CF_COUNT; i++) {
		for (unsigned k = 0; k < KV_POOL_KINDS; k++) {
			kv_pool_drain(&kv->pool[i][k]);
			pthread_mutex_destroy(&kv->pool[i][k].lock);
		}
		if (kv->cf[i])
			rocksdb_column_family_handle_destroy(kv->cf[i]);
	}
	if (kv->db)
		rocksdb_close(kv->db);
	for (unsigned i = 0; i < EOS_CF_COUNT; i++) {
		if (kv->cf_opts[i])
			rocksdb_options_destroy(kv->cf_opts[i]);
		if (kv->table_opts[i])
			rocksdb_block_based_options_destroy(kv->table_opts[i]);
	}
	if (kv->db_opts)
		rocksdb_options_destroy(kv->db_opts);
	if (kv->block_cache)
		rocksdb_cache_destroy(kv->block_cache);
	if (kv->read_latest)
		rocksdb_readoptions_destroy(kv->read_latest);
	if (kv->write_sync)
		rocksdb_writeoptions_destroy(kv->write_sync);
	if (kv->write_nosync)
		rocksdb_writeoptions_destroy(kv->write_nosync);
	free(kv->damage);
	free(kv->name);
	free(kv);
}

static const rocksdb_snapshot_t *
kv_snap(const struct eos_kv_snapshot *s)
{
	return (const rocksdb_snapshot_t *)s;
}

/* Read options reading at snap: NULL means the shared "latest" options (*tmp stays NULL). */
static const rocksdb_readoptions_t *
kv_read_opts(struct eos_kv *kv, const struct eos_kv_snapshot *snap, rocksdb_readoptions_t **tmp)
{
	if (!snap)
		return kv->read_latest;
	*tmp = rocksdb_readoptions_create();
	rocksdb_readoptions_set_snapshot(*tmp, kv_snap(snap));
	return *tmp;
}

static rocksdb_writeoptions_t *
kv_write_opts(struct eos_kv *kv, bool sync)
{
	return sync ? kv->write_sync : kv->write_nosync;
}

/* Replace the contents of ret with a pinned value. */
static int
kv_copy_value(const rocksdb_pinnableslice_t *v, struct eos_buf *ret, enum eos_cf cf,
	      struct eos_error *err)
{
	size_t len;
	const char *p = rocksdb_pinnableslice_value(v, &len);
	int r;

	eos_buf_truncate(ret, 0);
	r = eos_buf_append(ret, p, len);
	if (r < 0)
		return eos_error_set(err, r, "read from '%s': out of memory", kv_tuning[cf].name);
	return 0;
}

int
eos_kv_get(struct eos_kv *kv, const struct eos_kv_snapshot *snap, enum eos_cf cf, const void *key,
	   size_t klen, struct eos_buf *ret, struct eos_error *err)
{
	EOS_CLEANUP(rocksdb_readoptions_destroyp) rocksdb_readoptions_t *tmp = NULL;
	EOS_CLEANUP(rocksdb_pinnableslice_destroyp) rocksdb_pinnableslice_t *v = NULL;
	const rocksdb_readoptions_t *ro;
	char *msg = NULL;

	assert((unsigned)cf < EOS_CF_COUNT);
	ro = kv_read_opts(kv, snap, &tmp);
	v = rocksdb_get_pinned_cf(kv->db, ro, kv->cf[cf], key, klen, &msg);
	if (msg)
		return kv_fail(err, msg, "read from '%s'", kv_tuning[cf].name);
	if (!v)
		return -ENOENT;
	return kv_copy_value(v, ret, cf, err);
}

int
eos_kv_get_with(struct eos_kv *kv, enum eos_cf cf, const void *key, size_t klen, eos_kv_value_fn fn,
		void *ctx, struct eos_error *err)
{
	EOS_CLEANUP(rocksdb_pinnableslice_destroyp) rocksdb_pinnableslice_t *v = NULL;
	char *msg = NULL;
	const char *p;
	size_t len;

	assert((unsigned)cf < EOS_CF_COUNT);
	v = rocksdb_get_pinned_cf(kv->db, kv->read_latest, kv->cf[cf], key, klen, &msg);
	if (msg)
		return kv_fail(err, msg, "read from '%s'", kv_tuning[cf].name);
	if (!v)
		return -ENOENT;
	p = rocksdb_pinnableslice_value(v, &len);
	return fn(ctx, p, len);
}

int
eos_kv_exists(struct eos_kv *kv, enum eos_cf cf, const void *key, size_t klen,
	      struct eos_error *err)
{
	EOS_CLEANUP(rocksdb_pinnableslice_destroyp) rocksdb_pinnableslice_t *v = NULL;
	unsigned char found = 0;
	char *msg = NULL, *val = NULL;
	size_t vlen = 0;
	unsigned char may;

	assert((unsigned)cf < EOS_CF_COUNT);
	/*
	 * Memtables and cached blocks/filters only, no I/O: a 0 is definite (dedup misses stop
	 * here), and a value found on the way (recent writes) answers without a second lookup.
	 */
	may = rocksdb_key_may_exist_cf(kv->db, kv->read_latest, kv->cf[cf], key, klen, &val, &vlen,
				       NULL, 0, &found);
	rocksdb_free(val);
	if (!may)
		return 0;
	if (found)
		return 1;
	v = rocksdb_get_pinned_cf(kv->db, kv->read_latest, kv->cf[cf], key, klen, &msg);
	if (msg)
		return kv_fail(err, msg, "read from '%s'", kv_tuning[cf].name);
	return v != NULL;
}

/* Consume the results of a batched MultiGet (every slot is freed, even after an error). */
static int
kv_multi_collect(enum eos_cf cf, size_t n, rocksdb_pinnableslice_t **values, char **errs,
		 struct eos_buf *vals, bool *found, struct eos_error *err)
{
	int r = 0;

	for (size_t i = 0; i < n; i++) {
		found[i] = values[i] != NULL;
		if (errs[i] && r == 0)
			r = kv_fail(err, errs[i], "read from '%s'", kv_tuning[cf].name);
		else if (errs[i])
			rocksdb_free(errs[i]);
		if (values[i] && r == 0)
			r = kv_copy_value(values[i], &vals[i], cf, err);
		if (values[i])
			rocksdb_pinnableslice_destroy(values[i]);
	}
	return r;
}

int
eos_kv_multi_get(struct eos_kv *kv, enum eos_cf cf, size_t n, const void *const *keys,
		 const size_t *klens, struct eos_buf *vals, bool *found, struct eos_error *err)
{
	cleanup_free rocksdb_pinnableslice_t **values = NULL;
	cleanup_free char **errs = NULL;

	assert((unsigned)cf < EOS_CF_COUNT);
	if (n == 0)
		return 0;
	values = calloc(n, sizeof(*values));
	errs = calloc(n, sizeof(*errs));
	if (!values || !errs)
		return eos_error_set(err, -ENOMEM, "read from '%s': out of memory",
				     kv_tuning[cf].name);
	rocksdb_batched_multi_get_cf(kv->db, kv->read_latest, kv->cf[cf], n,
				     (const char *const *)keys, klens, values, errs, false);
	return kv_multi_collect(cf, n, values, errs, vals, found, err);
}

int
eos_kv_put(struct eos_kv *kv, enum eos_cf cf, const void *key, size_t klen, const void *val,
	   size_t vlen, bool sync, struct eos_error *err)
{
	char *msg = NULL;
	int r = kv_writable(kv, err);

	assert((unsigned)cf < EOS_CF_COUNT);
	if (r < 0)
		return r;
	rocksdb_put_cf(kv->db, kv_write_opts(kv, sync), kv->cf[cf], key, klen, val, vlen, &msg);
	kv_wrote(kv, cf);
	if (msg)
		return kv_full(kv, err, kv_fail(err, msg, "write to '%s'", kv_tuning[cf].name));
	return 0;
}

int
eos_kv_delete(struct eos_kv *kv, enum eos_cf cf, const void *key, size_t klen, bool sync,
	      struct eos_error *err)
{
	char *msg = NULL;
	int r = kv_writable(kv, err);

	assert((unsigned)cf < EOS_CF_COUNT);
	if (r < 0)
		return r;
	rocksdb_delete_cf(kv->db, kv_write_opts(kv, sync), kv->cf[cf], key, klen, &msg);
	kv_wrote(kv, cf);
	if (msg)
		return kv_full(kv, err, kv_fail(err, msg, "delete from '%s'", kv_tuning[cf].name));
	return 0;
}

int
eos_kv_batch_new(struct eos_kv_batch **ret)
{
	struct eos_kv_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	eos_buf_init(&b->log);
	*ret = b;
	return 0;
}

void
eos_kv_batch_free(struct eos_kv_batch *b)
{
	if (!b)
		return;
	eos_buf_release(&b->log);
	free(b);
}

static int
kv_batch_append(struct eos_buf *log, enum kv_op op, enum eos_cf cf, const void *key, size_t klen,
		const void *val, size_t vlen)
{
	int r = eos_buf_reserve(log, 2 + 2 * sizeof(uint64_t) + klen + vlen);

	if (r == 0)
		r = eos_buf_append_u8(log, (uint8_t)op);
	if (r == 0)
		r = eos_buf_append_u8(log, (uint8_t)cf);
	if (r == 0)
		r = eos_buf_append_le64(log, klen);
	if (r == 0)
		r = eos_buf_append(log, key, klen);
	if (r == 0)
		r = eos_buf_append_le64(log, vlen);
	if (r == 0)
		r = eos_buf_append(log, val, vlen);
	return r;
}

static void
kv_batch_add(struct eos_kv_batch *b, enum kv_op op, enum eos_cf cf, const void *key, size_t klen,
	     const void *val, size_t vlen)
{
	size_t mark = b->log.len;
	int r;

	assert((unsigned)cf < EOS_CF_COUNT);
	if (b->error < 0)
		return;
	r = kv_batch_append(&b->log, op, cf, key, klen, val, vlen);
	if (r < 0) {
		eos_buf_truncate(&b->log, mark);
		b->error = r;
		return;
	}
	b->count++;
}

void
eos_kv_batch_put(struct eos_kv_batch *b, enum eos_cf cf, const void *key, size_t klen,
		 const void *val, size_t vlen)
{
	kv_batch_add(b, KV_OP_PUT, cf, key, klen, val, vlen);
}

void
eos_kv_batch_delete(struct eos_kv_batch *b, enum eos_cf cf, const void *key, size_t klen)
{
	kv_batch_add(b, KV_OP_DELETE, cf, key, klen, NULL, 0);
}

void
eos_kv_batch_delete_range(struct eos_kv_batch *b, enum eos_cf cf, const void *begin, size_t blen,
			  const void *end, size_t elen)
{
	kv_batch_add(b, KV_OP_DELETE_RANGE, cf, begin, blen, end, elen);
}

size_t
eos_kv_batch_count(const struct eos_kv_batch *b)
{
	return b->count;
}

size_t
eos_kv_batch_bytes(const struct eos_kv_batch *b)
{
	return b->log.len;
}

/* Decode one logged operation: op and cf are validated, key and value borrowed from the log. */
static int
kv_batch_next(struct eos_reader *rd, enum kv_op *op, enum eos_cf *cf, struct eos_reader *parts)
{
	uint8_t o, c;
	uint64_t klen, vlen;
	const uint8_t *k, *v;
	int r;

	if ((r = eos_reader_u8(rd, &o)) < 0 || (r = eos_reader_u8(rd, &c)) < 0 ||
	    (r = eos_reader_le64(rd, &klen)) < 0 || (r = eos_reader_bytes(rd, klen, &k)) < 0 ||
	    (r = eos_reader_le64(rd, &vlen)) < 0 || (r = eos_reader_bytes(rd, vlen, &v)) < 0)
		return r;
	if (o > KV_OP_DELETE_RANGE || c >= EOS_CF_COUNT)
		return -EBADMSG;
	*op = (enum kv_op)o;
	*cf = (enum eos_cf)c;
	/* parts[0] is the key, parts[1] the value (or range end). */
	eos_reader_init(&parts[0], k, klen);
	eos_reader_init(&parts[1], v, vlen);
	return 0;
}

/* Replay the batch's log into wb with kv's column family handles; *cfs: a bit per family. */
static int
kv_batch_fill(struct eos_kv *kv, const struct eos_kv_batch *b, rocksdb_writebatch_t *wb,
	      uint32_t *cfs)
{
	struct eos_reader rd, s[2];
	enum kv_op op;
	enum eos_cf cf;
	int r;

	eos_reader_init(&rd, b->log.data, b->log.len);
	while (!eos_reader_done(&rd)) {
		const char *k, *v;

		r = kv_batch_next(&rd, &op, &cf, s);
		if (r < 0)
			return r;
		k = (const char *)s[0].p;
		v = (const char *)s[1].p;
		*cfs |= UINT32_C(1) << cf;
		switch (op) {
		case KV_OP_PUT:
			rocksdb_writebatch_put_cf(wb, kv->cf[cf], k, s[0].left, v, s[1].left);
			break;
		case KV_OP_DELETE:
			rocksdb_writebatch_delete_cf(wb, kv->cf[cf], k, s[0].left);
			break;
		case KV_OP_DELETE_RANGE:
			rocksdb_writebatch_delete_range_cf(wb, kv->cf[cf], k, s[0].left, v,
							   s[1].left);
			break;
		}
	}
	return 0;
}

int
eos_kv_batch_write(struct eos_kv *kv, struct eos_kv_batch *b, bool sync, struct eos_error *err)
{
	EOS_CLEANUP(rocksdb_writebatch_destroyp) rocksdb_writebatch_t *wb = NULL;
	uint32_t cfs = 0;
	char *msg = NULL;
	int r;

	if (b->error < 0)
		return eos_error_set(err, b->error, "write batch: out of memory");
	r = kv_writable(kv, err);
	if (r < 0)
		return r;
	r = EOS_FAILPOINT("kv.batch_write");
	if (r < 0)
		return eos_error_set(err, r, "write batch: failpoint 'kv.batch_write'");
	wb = rocksdb_writebatch_create();
	r = kv_batch_fill(kv, b, wb, &cfs);
	if (r < 0)
		return eos_error_set(err, r, "write batch: corrupt operation log");
	rocksdb_write(kv->db, kv_write_opts(kv, sync), wb, &msg);
	kv_wrote_batch(kv, cfs);
	if (msg)
		return kv_full(kv, err,
			       kv_fail(err, msg, "write batch of %zu operations", b->count));
	return 0;
}

const struct eos_kv_snapshot *
eos_kv_snapshot_new(struct eos_kv *kv)
{
	return (const struct eos_kv_snapshot *)rocksdb_create_snapshot(kv->db);
}

void
eos_kv_snapshot_free(struct eos_kv *kv, const struct eos_kv_snapshot *s)
{
	if (s)
		rocksdb_release_snapshot(kv->db, kv_snap(s));
}

static rocksdb_readoptions_t *
kv_iter_read_opts(struct eos_kv_iter *it, const struct eos_kv_snapshot *snap,
		  enum eos_kv_iter_flags flags)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();

	if (snap)
		rocksdb_readoptions_set_snapshot(ro, kv_snap(snap));
	if (flags & EOS_KV_ITER_SAME_PREFIX)
		rocksdb_readoptions_set_prefix_same_as_start(ro, 1);
	else
		rocksdb_readoptions_set_total_order_seek(ro, 1);
	if (flags & EOS_KV_ITER_NO_CACHE_FILL)
		rocksdb_readoptions_set_fill_cache(ro, 0);
	if (it->ulen != SIZE_MAX)
		rocksdb_readoptions_set_iterate_upper_bound(ro, (const char *)it->upper, it->ulen);
	return ro;
}

int
eos_kv_iter_new(struct eos_kv *kv, enum eos_cf cf, const struct eos_kv_snapshot *snap,
		const void *upper, size_t ulen, enum eos_kv_iter_flags flags,
		struct eos_kv_iter **ret)
{
	struct eos_kv_iter *it;

	assert((unsigned)cf < EOS_CF_COUNT);
	if (!upper)
		ulen = 0;
	it = malloc(sizeof(*it) + ulen);
	if (!it)
		return -ENOMEM;
	/* SIZE_MAX marks "no upper bound" (an empty bound is a valid, empty range). */
	it->ulen = upper ? ulen : SIZE_MAX;
	it->pool = NULL;
	if (ulen)
		memcpy(it->upper, upper, ulen);
	it->ro = kv_iter_read_opts(it, snap, flags);
	it->it = rocksdb_create_iterator_cf(kv->db, it->ro, kv->cf[cf]);
	*ret = it;
	return 0;
}

static void
kv_iter_destroy(struct eos_kv_iter *it)
{
	if (!it)
		return;
	/* The iterator reads its options (and our bound) until destroyed. */
	if (it->it)
		rocksdb_iter_destroy(it->it);
	if (it->ro)
		rocksdb_readoptions_destroy(it->ro);
	free(it);
}

/* --- pooled iterators ------------------------------------------------------------------------- */

static int64_t
kv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* it still reads what a new iterator would, and is young enough to be taken again. */
static bool
kv_pool_fresh(const struct eos_kv_iter *it, int64_t now)
{
	return it->gen == atomic_load(it->pool->gen) && now - it->born_ns < KV_POOL_AGE_NS;
}

static void
kv_pool_drain(struct kv_pool *p)
{
	struct eos_kv_iter *idle[KV_POOL_MAX];
	size_t n;

	/* every write drains its family's pools: most are empty (a storm looks nothing up) */
	if (atomic_load_explicit(&p->n, memory_order_relaxed) == 0)
		return;
	pthread_mutex_lock(&p->lock);
	n = p->n;
	memcpy(idle, p->idle, n * sizeof(*idle));
	p->n = 0;
	pthread_mutex_unlock(&p->lock);
	while (n)
		kv_iter_destroy(idle[--n]);
}

/* cf was written, flushed or compacted: its idle iterators read (and pin) what was before. */
static void
kv_wrote(struct eos_kv *kv, enum eos_cf cf)
{
	atomic_fetch_add(&kv->gen[cf], 1);
	for (unsigned k = 0; k < KV_POOL_KINDS; k++)
		kv_pool_drain(&kv->pool[cf][k]);
}

static void
kv_wrote_batch(struct eos_kv *kv, uint32_t cfs)
{
	for (unsigned i = 0; i < EOS_CF_COUNT; i++)
		if (cfs & (UINT32_C(1) << i))
			kv_wrote(kv, (enum eos_cf)i);
}

static void
kv_pool_give(struct eos_kv_iter *it)
{
	struct kv_pool *p = it->pool;
	char *msg = NULL;

	rocksdb_iter_get_error(it->it, &msg);
	if (!msg && kv_pool_fresh(it, kv_now_ns())) {
		pthread_mutex_lock(&p->lock);
		if (p->n < KV_POOL_MAX) {
			p->idle[p->n++] = it;
			it = NULL;
		}
		pthread_mutex_unlock(&p->lock);
	}
	rocksdb_free(msg);
	kv_iter_destroy(it);
}

int
eos_kv_iter_take(struct eos_kv *kv, enum eos_cf cf, enum eos_kv_iter_flags flags,
		 struct eos_kv_iter **ret)
{
	struct kv_pool *p;
	uint64_t gen;
	int64_t now = kv_now_ns();
	struct eos_kv_iter *it = NULL;
	int r;

	assert((unsigned)cf < EOS_CF_COUNT && (unsigned)flags < KV_POOL_KINDS);
	p = &kv->pool[cf][flags];
	gen = atomic_load(p->gen);
	pthread_mutex_lock(&p->lock);
	if (p->n)
		it = p->idle[--p->n];
	pthread_mutex_unlock(&p->lock);
	if (it && kv_pool_fresh(it, now)) {
		*ret = it;
		return 0;
	}
	kv_iter_destroy(it);
	/* gen was read before the iterator is made: a write in between makes it stale, not wrong */
	r = eos_kv_iter_new(kv, cf, NULL, NULL, 0, flags, &it);
	if (r < 0)
		return r;
	it->pool = p;
	it->gen = gen;
	it->born_ns = now;
	*ret = it;
	return 0;
}

void
eos_kv_iter_free(struct eos_kv_iter *it)
{
	if (it && it->pool)
		kv_pool_give(it);
	else
		kv_iter_destroy(it);
}

void
eos_kv_iter_seek(struct eos_kv_iter *it, const void *key, size_t klen)
{
	rocksdb_iter_seek(it->it, key, klen);
}

void
eos_kv_iter_seek_first(struct eos_kv_iter *it)
{
	rocksdb_iter_seek_to_first(it->it);
}

void
eos_kv_iter_next(struct eos_kv_iter *it)
{
	rocksdb_iter_next(it->it);
}

void
eos_kv_iter_seek_last(struct eos_kv_iter *it)
{
	rocksdb_iter_seek_to_last(it->it);
}

void
eos_kv_iter_seek_for_prev(struct eos_kv_iter *it, const void *key, size_t klen)
{
	rocksdb_iter_seek_for_prev(it->it, key, klen);
}

void
eos_kv_iter_prev(struct eos_kv_iter *it)
{
	rocksdb_iter_prev(it->it);
}

bool
eos_kv_iter_valid(const struct eos_kv_iter *it)
{
	return rocksdb_iter_valid(it->it) != 0;
}

const uint8_t *
eos_kv_iter_key(const struct eos_kv_iter *it, size_t *ret_len)
{
	assert(eos_kv_iter_valid(it));
	return (const uint8_t *)rocksdb_iter_key(it->it, ret_len);
}

const uint8_t *
eos_kv_iter_value(const struct eos_kv_iter *it, size_t *ret_len)
{
	assert(eos_kv_iter_valid(it));
	return (const uint8_t *)rocksdb_iter_value(it->it, ret_len);
}

int
eos_kv_iter_status(const struct eos_kv_iter *it, struct eos_error *err)
{
	char *msg = NULL;

	rocksdb_iter_get_error(it->it, &msg);
	if (msg)
		return kv_fail(err, msg, "iterate");
	return 0;
}

int
eos_kv_flush(struct eos_kv *kv, struct eos_error *err)
{
	EOS_CLEANUP(rocksdb_flushoptions_destroyp) rocksdb_flushoptions_t *fo = NULL;
	char *msg = NULL;

	if (kv->read_only)
		return 0; /* nothing of it is written: nothing to flush */
	fo = rocksdb_flushoptions_create();
	rocksdb_flushoptions_set_wait(fo, 1);
	for (unsigned i = 0; i < EOS_CF_COUNT; i++) {
		rocksdb_flush_cf(kv->db, fo, kv->cf[i], &msg);
		kv_wrote(kv, (enum eos_cf)i);
		if (msg)
			return kv_full(kv, err, kv_fail(err, msg, "flush '%s'", kv_tuning[i].name));
	}
	return 0;
}

void
eos_kv_flush_async(struct eos_kv *kv, enum eos_cf cf)
{
	EOS_CLEANUP(rocksdb_flushoptions_destroyp) rocksdb_flushoptions_t *fo = NULL;
	char *msg = NULL;

	assert((unsigned)cf < EOS_CF_COUNT);
	if (kv->read_only)
		return;
	fo = rocksdb_flushoptions_create();
	rocksdb_flushoptions_set_wait(fo, 0);
	rocksdb_flush_cf(kv->db, fo, kv->cf[cf], &msg);
	rocksdb_free(msg); /* a failed flush stops writes: they report it */
}

size_t
eos_kv_write_buffer(const struct eos_kv *kv, enum eos_cf cf)
{
	assert((unsigned)cf < EOS_CF_COUNT);
	return rocksdb_options_get_write_buffer_size(kv->cf_opts[cf]);
}

int
eos_kv_compact(struct eos_kv *kv, enum eos_cf cf, struct eos_error *err)
{
	EOS_CLEANUP(rocksdb_compactoptions_destroyp) rocksdb_compactoptions_t *co = NULL;

	(void)err; /* RocksDB's C API reports no compaction error */
	assert((unsigned)cf < EOS_CF_COUNT);
	if (kv->read_only)
		return 0;
	co = rocksdb_compactoptions_create();
	/*
	 * Rewrite the bottommost level too: otherwise data already there keeps its tombstones and
	 * overwritten versions, and blob GC never revisits the files holding deleted chunks.
	 */
	rocksdb_compactoptions_set_bottommost_level_compaction(co, KV_BOTTOMMOST_FORCE);
	rocksdb_compact_range_cf_opt(kv->db, kv->cf[cf], co, NULL, 0, NULL, 0);
	kv_wrote(kv, cf);
	return 0;
}

int
eos_kv_compact_range(struct eos_kv *kv, enum eos_cf cf, const void *lo, size_t llen, const void *hi,
		     size_t hlen)
{
	EOS_CLEANUP(rocksdb_compactoptions_destroyp) rocksdb_compactoptions_t *co = NULL;

	assert((unsigned)cf < EOS_CF_COUNT);
	if (kv->read_only)
		return 0;
	co = rocksdb_compactoptions_create();
	/*
	 * Tombstones meet the data they delete when they are compacted down into its level, so the
	 * bottommost level is only rewritten when it already holds both (kForceOptimized).
	 */
	rocksdb_compactoptions_set_bottommost_level_compaction(co, KV_BOTTOMMOST_FORCE_OPTIMIZED);
	rocksdb_compact_range_cf_opt(kv->db, kv->cf[cf], co, lo, lo ? llen : 0, hi, hi ? hlen : 0);
	kv_wrote(kv, cf);
	return 0;
}

int
eos_kv_property_u64(struct eos_kv *kv, enum eos_cf cf, const char *name, uint64_t *ret)
{
	uint64_t v;

	assert((unsigned)cf < EOS_CF_COUNT);
	/* Unknown names and non-integer properties both fail. */
	if (rocksdb_property_int_cf(kv->db, kv->cf[cf], name, &v) != 0)
		return -EINVAL;
	*ret = v;
	return 0;
}
