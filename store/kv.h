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
	EOS_CF_OBS,	  /* sandbox·time·seq -> observations (supervisor) */
	EOS_CF_COUNT,
};

/* The on-disk name of a column family ("chunks", …). */
const char *eos_kv_cf_name(enum eos_cf cf);

struct eos_kv_options {
	unsigned threads; /* background jobs; 0 = number of cores */
	bool create;	  /* create the database when missing */
};

struct eos_kv;
struct eos_kv_batch;
struct eos_kv_iter;
struct eos_kv_snapshot;

/* Open (or create) the database at path with every column family. Caller owns *ret. */
int eos_kv_open(const char *path, const struct eos_kv_options *opts, struct eos_kv **ret,
		struct eos_error *err);
/* Close; NULL-safe. Iterators, snapshots and batches must be freed first. */
void eos_kv_close(struct eos_kv *kv);

/*
 * Read key into *ret (contents replaced). snap may be NULL (latest). -ENOENT when absent
 * (err untouched then, so callers can word it), -EIO with RocksDB's message otherwise.
 */
int eos_kv_get(struct eos_kv *kv, const struct eos_kv_snapshot *snap, enum eos_cf cf,
	       const void *key, size_t klen, struct eos_buf *ret, struct eos_error *err);
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
void eos_kv_iter_free(struct eos_kv_iter *it);
void eos_kv_iter_seek(struct eos_kv_iter *it, const void *key, size_t klen);
void eos_kv_iter_seek_first(struct eos_kv_iter *it);
void eos_kv_iter_next(struct eos_kv_iter *it);
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
};

/*
 * Run scan s. Returns 0; the first negative return of fn (err is left to fn); or an iterator
 * failure with err "iterate '<cf>'" (followed by RocksDB's message when it has one).
 */
int eos_kv_scan(struct eos_kv *kv, const struct eos_kv_scan *s, struct eos_error *err);

/* Flush every memtable to disk (waits). */
int eos_kv_flush(struct eos_kv *kv, struct eos_error *err);
/* Compact one column family fully (reclaims deleted and overwritten data). */
int eos_kv_compact(struct eos_kv *kv, enum eos_cf cf, struct eos_error *err);
/* Integer property of cf ("rocksdb.estimate-num-keys", "rocksdb.total-sst-files-size", …). */
int eos_kv_property_u64(struct eos_kv *kv, enum eos_cf cf, const char *name, uint64_t *ret);
