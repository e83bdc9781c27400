/* SPDX-License-Identifier: MIT */
/*
 * store/kv: the only file that includes <rocksdb/c.h>. Wraps the RocksDB C API into eos'
 * conventions (negative errno + struct eos_error, cleanup-friendly destructors).
 *
 * Column families (enum eos_cf) and their tuning are fixed here: see doc/store-format.md.
 * All functions are thread-safe on one struct eos_kv (RocksDB is). Iterators and batches are
 * owned by one thread at a time.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/error.h"

/* Never renumber: the names, not the numbers, are on disk, but tests index by number. */
enum eos_cf {
	EOS_CF_DEFAULT = 0,
	EOS_CF_CHUNKS,	  /* sha256 -> codec frame (BlobDB, no RocksDB compression) */
	EOS_CF_REFS,	  /* type byte + sha256 -> LE64 count */
	EOS_CF_MANIFESTS, /* sha256 of a file -> chunk list */
	EOS_CF_ENTRIES,	  /* sandbox·parent·0·name·0·~version -> entry record (prefix bloom) */
	EOS_CF_LAYERS,	  /* sandbox·version -> layer record */
	EOS_CF_META,	  /* sandbox·key -> head, sandbox record, leases, format */
	EOS_CF_SESSION,	  /* sandbox·ws·path -> session delta (fs) */
	EOS_CF_BLAME,	  /* sandbox·path -> line ownership (publish) */
	EOS_CF_OBS,	  /* 0·time·seq -> observations: spans, events, samples (store/obs.c) */
	EOS_CF_COUNT,
};

/* The on-disk name of a column family ("chunks", …). */
const char *eos_kv_cf_name(enum eos_cf cf);

struct eos_space_plan;

struct eos_kv_options {
	unsigned threads; /* background jobs; 0 = number of cores */
	bool create;	  /* create the database when missing */
	bool damaged;	  /* known to hold damage: open it the way a damaged table file is */
	/*
	 * Memtable, WAL, table, blob and log file sizes for the filesystem the database lives on
	 * (store/space.h); NULL: the sizes for a big disk. Copied.
	 */
	const struct eos_space_plan *space;
	const char *name; /* what error messages call the database (the store); NULL: its path */
	/*
	 * Open for reading only (RocksDB writes nothing then): for a filesystem too full to open
	 * the database for writing. Writes fail with -ENOSPC; flush and compactions do nothing.
	 */
	bool read_only;
};

struct eos_kv;
struct eos_kv_batch;
struct eos_kv_iter;
struct eos_kv_snapshot;

/*
 * Open (or create) the database at path with every column family. Caller owns *ret.
 *
 * Write-ahead logs are replayed in full: a record torn by a crash at the very end of a log is
 * dropped (it was never acknowledged), any other damage fails the open with -EBADMSG naming the
 * log and the byte (see eos_kv_wal_check), so acknowledged writes never go missing silently. A
 * table file RocksDB cannot open (damaged footer, index or properties) fails a plain open; the
 * database is then reopened without RocksDB's paranoid checks (as with opts->damaged), which
 * leaves that file to fail each read that needs it (naming it), and eos_kv_damage() tells; other
 * damage (a MANIFEST) is -EBADMSG naming the file.
 */
int eos_kv_open(const char *path, const struct eos_kv_options *opts, struct eos_kv **ret,
		struct eos_error *err);
/*
 * NULL, or RocksDB's message about the table file the open found damaged (the database then runs
 * without paranoid checks, as with opts->damaged). Borrowed.
 */
const char *eos_kv_damage(const struct eos_kv *kv);
/*
 * Whether RocksDB stopped writing because a compaction met damage: with paranoid checks that is
 * an unrecoverable background error, every write fails (-EBADMSG naming the table file) until the
 * database is reopened, and the next compaction would stop it again unless it is reopened with
 * opts->damaged. Cheap unless a background error happened.
 */
bool eos_kv_stopped_by_damage(struct eos_kv *kv);
/* Close; NULL-safe. Iterators, snapshots and batches must be freed first. */
void eos_kv_close(struct eos_kv *kv);

/*
 * Read key into *ret (contents replaced). snap may be NULL (latest). -ENOENT when absent
 * (err untouched then, so callers can word it), -EIO with RocksDB's message otherwise.
 */
int eos_kv_get(struct eos_kv *kv, const struct eos_kv_snapshot *snap, enum eos_cf cf,
	       const void *key, size_t klen, struct eos_buf *ret, struct eos_error *err);
/*
 * As eos_kv_get() of the latest value, without copying it: fn sees RocksDB's own bytes, which
 * stay valid only until it returns. Returns fn's result, -ENOENT when absent (fn not called),
 * or -EIO with RocksDB's message.
 */
typedef int (*eos_kv_value_fn)(void *ctx, const void *val, size_t len);
int eos_kv_get_with(struct eos_kv *kv, enum eos_cf cf, const void *key, size_t klen,
		    eos_kv_value_fn fn, void *ctx, struct eos_error *err);
/* 1 when key exists, 0 when not, -errno on failure. */
int eos_kv_exists(struct eos_kv *kv, enum eos_cf cf, const void *key, size_t klen,
		  struct eos_error *err);
/*
 * Read n keys of one column family at once. vals[i] receives the value when found[i].
 * Caller provides vals (initialised eos_bufs) and found arrays of n elements.
 */
int eos_kv_multi_get(struct eos_kv *kv, enum eos_cf cf, size_t n, const void *const *keys,
		     const size_t *klens, struct eos_buf *vals, bool *found, struct eos_error *err);
/* Single write. sync=true fsyncs the WAL before returning. */
int eos_kv_put(struct eos_kv *kv, enum eos_cf cf, const void *key, size_t klen, const void *val,
	       size_t vlen, bool sync, struct eos_error *err);
int eos_kv_delete(struct eos_kv *kv, enum eos_cf cf, const void *key, size_t klen, bool sync,
		  struct eos_error *err);

/* Batches: operations are applied atomically by eos_kv_batch_write(). */
int eos_kv_batch_new(struct eos_kv_batch **ret);
void eos_kv_batch_free(struct eos_kv_batch *b);
void eos_kv_batch_put(struct eos_kv_batch *b, enum eos_cf cf, const void *key, size_t klen,
		      const void *val, size_t vlen);
void eos_kv_batch_delete(struct eos_kv_batch *b, enum eos_cf cf, const void *key, size_t klen);
/* Delete [begin, end). */
void eos_kv_batch_delete_range(struct eos_kv_batch *b, enum eos_cf cf, const void *begin,
			       size_t blen, const void *end, size_t elen);
size_t eos_kv_batch_count(const struct eos_kv_batch *b);
/* Bytes of keys and values the batch holds (about what it adds to the WAL). */
size_t eos_kv_batch_bytes(const struct eos_kv_batch *b);
/* Write the batch; sync=true makes it durable before returning. The batch stays owned. */
int eos_kv_batch_write(struct eos_kv *kv, struct eos_kv_batch *b, bool sync, struct eos_error *err);
EOS_DEFINE_CLEANUP(struct eos_kv_batch *, eos_kv_batch_free)

/* Consistent read view. Caller owns; release with eos_kv_snapshot_free(kv, s). */
const struct eos_kv_snapshot *eos_kv_snapshot_new(struct eos_kv *kv);
void eos_kv_snapshot_free(struct eos_kv *kv, const struct eos_kv_snapshot *s);

enum eos_kv_iter_flags {
	/*
	 * Point-lookup mode for EOS_CF_ENTRIES: the iterator only sees keys sharing the seek key's
	 * prefix (the key minus its trailing 8-byte version), so RocksDB can use the prefix bloom.
	 */
	EOS_KV_ITER_SAME_PREFIX = 1 << 0,
	/* Don't fill the block cache (bulk scans: fsck, squash, gc). */
	EOS_KV_ITER_NO_CACHE_FILL = 1 << 1,
};

/*
 * New iterator over cf. snap may be NULL. upper (may be NULL) is an exclusive upper bound
 * (copied). Without EOS_KV_ITER_SAME_PREFIX the iterator is total-order.
 */
int eos_kv_iter_new(struct eos_kv *kv, enum eos_cf cf, const struct eos_kv_snapshot *snap,
		    const void *upper, size_t ulen, enum eos_kv_iter_flags flags,
		    struct eos_kv_iter **ret);
/*
 * An iterator over cf with flags, no snapshot and no bound, that reads what a new one would: one
 * of kv's idle iterators of cf and flags when no write, flush or compaction of cf has ended since
 * it was made and it is less than a second old, else a new one. eos_kv_iter_free() gives it back
 * to the pool (at most 8 idle per column family and flags).
 */
int eos_kv_iter_take(struct eos_kv *kv, enum eos_cf cf, enum eos_kv_iter_flags flags,
		     struct eos_kv_iter **ret);
/* Destroys it, or gives it back to its pool when eos_kv_iter_take() made it. */
void eos_kv_iter_free(struct eos_kv_iter *it);
void eos_kv_iter_seek(struct eos_kv_iter *it, const void *key, size_t klen);
void eos_kv_iter_seek_first(struct eos_kv_iter *it);
void eos_kv_iter_next(struct eos_kv_iter *it);
/* Backwards: the last key (below the upper bound), the last key <= key, the key before. */
void eos_kv_iter_seek_last(struct eos_kv_iter *it);
void eos_kv_iter_seek_for_prev(struct eos_kv_iter *it, const void *key, size_t klen);
void eos_kv_iter_prev(struct eos_kv_iter *it);
bool eos_kv_iter_valid(const struct eos_kv_iter *it);
/* Borrowed until the iterator moves. */
const uint8_t *eos_kv_iter_key(const struct eos_kv_iter *it, size_t *ret_len);
const uint8_t *eos_kv_iter_value(const struct eos_kv_iter *it, size_t *ret_len);
/* 0, or -EIO with RocksDB's message when the iteration stopped on an error. */
int eos_kv_iter_status(const struct eos_kv_iter *it, struct eos_error *err);
EOS_DEFINE_CLEANUP(struct eos_kv_iter *, eos_kv_iter_free)

/* Called per key of a scan; v is NULL (vlen 0) unless values were asked for. < 0 stops it. */
typedef int (*eos_kv_scan_fn)(void *ctx, const uint8_t *k, size_t klen, const uint8_t *v,
			      size_t vlen);

/*
 * Called by a scan for keys it cannot read (a damaged table block or table file, a blob whose
 * checksum fails): the keys after `after` (NULL: from the scan's start) and before `resume`
 * (NULL: to the scan's end) may be unreadable, and msg is RocksDB's message (naming the table
 * file when RocksDB knows it). The scan goes on at resume. < 0 stops the scan.
 */
typedef int (*eos_kv_damage_fn)(void *ctx, const uint8_t *after, size_t alen, const uint8_t *resume,
				size_t rlen, const char *msg);

/* One range scan: the keys of cf in [lo, hi), each passed to fn(ctx, …). */
struct eos_kv_scan {
	enum eos_cf cf;
	const struct eos_kv_snapshot *snap; /* NULL: the latest state */
	const void *lo;			    /* first key; NULL: from the first key of cf */
	size_t llen;
	const void *hi; /* exclusive upper bound; NULL: to the end of cf */
	size_t hlen;
	enum eos_kv_iter_flags flags;
	bool values; /* read the values too */
	eos_kv_scan_fn fn;
	void *ctx;
	/* NULL: a key it cannot read fails the scan; else damage(ctx, …) hears of it */
	eos_kv_damage_fn damage;
};

/*
 * Run scan s. Returns 0; the first negative return of fn or damage (err is left to them); or an
 * iterator failure with err "iterate '<cf>'" (followed by RocksDB's message when it has one):
 * -EBADMSG for damage (RocksDB's "Corruption"), -EIO otherwise.
 */
int eos_kv_scan(struct eos_kv *kv, const struct eos_kv_scan *s, struct eos_error *err);

/* --- write-ahead logs (store/kv-wal.c) ------------------------------------------------------- */

enum {
	EOS_KV_WAL_NAME_MAX = 32,
};

/* The first damaged record of a database's write-ahead logs. */
struct eos_kv_wal_damage {
	char file[EOS_KV_WAL_NAME_MAX]; /* the log, inside the database directory ("000033.log") */
	const char *problem;		/* "checksum mismatch", … (static) */
	uint64_t offset;		/* where the logical record holding the damage starts */
	uint64_t dropped;		/* bytes of that log from offset on */
	uint64_t later_files, later_bytes; /* logs after it, which replay cannot reach either */
};

/*
 * Verify every record of every write-ahead log of the database at path as RocksDB's recovery
 * reads them (kTolerateCorruptedTailRecords): 1 with *ret describing the first damaged record,
 * 0 when every log verifies (a record cut short at the end of a log is a torn tail, not damage),
 * -errno when a log cannot be read. Needs no open database (and must not race one).
 */
int eos_kv_wal_check(const char *path, struct eos_kv_wal_damage *ret, struct eos_error *err);

/*
 * Drop what damage d (from eos_kv_wal_check) makes unreplayable: copy the damaged log and every
 * later one into save_dir (created 0700; its parent must exist), durably, then cut the damaged
 * log at d->offset and remove the later ones. The database must be closed.
 */
int eos_kv_wal_drop(const char *path, const struct eos_kv_wal_damage *d, const char *save_dir,
		    struct eos_error *err);

/* Flush every memtable to disk (waits). */
int eos_kv_flush(struct eos_kv *kv, struct eos_error *err);
/* Start flushing cf's memtable in the background (returns at once; errors show on later writes). */
void eos_kv_flush_async(struct eos_kv *kv, enum eos_cf cf);

/* The memtable size of cf. */
size_t eos_kv_write_buffer(const struct eos_kv *kv, enum eos_cf cf);
/* Compact one column family fully (reclaims deleted and overwritten data). */
int eos_kv_compact(struct eos_kv *kv, enum eos_cf cf, struct eos_error *err);
/*
 * Compact the keys of cf in [lo, hi] (lo or hi NULL: unbounded) after they were deleted, so that
 * their tables and blob files give the space back; flushes the memtable first when it holds keys
 * of the range. Waits. Returns 0 (RocksDB's C API reports no compaction error).
 */
int eos_kv_compact_range(struct eos_kv *kv, enum eos_cf cf, const void *lo, size_t llen,
			 const void *hi, size_t hlen);
/* Integer property of cf ("rocksdb.estimate-num-keys", "rocksdb.total-sst-files-size", …). */
int eos_kv_property_u64(struct eos_kv *kv, enum eos_cf cf, const char *name, uint64_t *ret);
