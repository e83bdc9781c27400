/* SPDX-License-Identifier: MIT */
/*
 * store/space: how full eos lets the store's filesystem get, and RocksDB's sizes for it.
 *
 * RocksDB must never meet ENOSPC itself: the Debian build of 7.8 aborts the process on the next
 * write to a file whose previous write failed (WritableFileWriter's `sync_without_flush_called_`
 * assertion, seen on its info LOG), and a failed flush stops every write. So eos keeps two
 * reserves free on the filesystem (doc/store-format.md, "Free space"):
 *	hard  what RocksDB may still need to flush its memtables, compact and roll its logs and
 *	      MANIFEST; below it only deletes are written (destroy, gc, rm-session, lease release,
 *	      session batches holding only deletes)
 *	soft  hard plus a band for small records; below it growing writes (imports, publishes,
 *	      chunk writes, commits, new sessions and leases, the view's file data) fail with
 *	      -ENOSPC; session record puts and squash still go through down to the hard reserve
 * Both scale with the filesystem's size, and so do RocksDB's memtables, WAL, table, blob and log
 * file sizes (eos_space_plan_for()), so that a 64 MiB store stays usable and a 1 TB disk loses
 * well under 1 %.
 *
 * Calling sequence: eos_space_init() at open (before the database), eos_space_check() before each
 * growing write, eos_space_release() at close. eos_space_check() is thread-safe and cheap: it
 * reads a cached statvfs() that it refreshes every EOS_SPACE_REFRESH_NS, and sooner when the bytes
 * checked since the last refresh reach half the distance to the reserve, so steps of any size
 * cannot run past the reserve unseen (writers outside eos are seen at the next refresh).
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

enum {
	EOS_SPACE_REFRESH_NS = 100 * 1000 * 1000,
};

/* RocksDB's sizes and eos' reserves for one filesystem size. Plain value type; bytes. */
struct eos_space_plan {
	uint64_t fs_bytes;     /* size of the filesystem; 0: unknown (RocksDB's big-disk sizes) */
	uint64_t memtables;    /* all memtables together (db_write_buffer_size) */
	uint64_t write_buffer; /* most one column family's memtable may hold */
	uint64_t wal;	     /* WAL files before the oldest is flushed away (max_total_wal_size) */
	uint64_t table_file; /* target SST file size */
	uint64_t blob_file;  /* blob file size */
	uint64_t compaction; /* most input one compaction takes (max_compaction_bytes) */
	uint64_t log_file;   /* info LOG size before it rolls (EOS_SPACE_LOG_FILES are kept) */
	uint64_t manifest;   /* MANIFEST size before it rolls */
	uint64_t hard;	     /* reserve below which only deletes are written */
	uint64_t soft;	     /* reserve below which growing writes are refused */
};

enum {
	EOS_SPACE_LOG_FILES = 4, /* old info LOG files kept besides the current one */
};

/* The plan for a filesystem of fs_bytes (0: unknown, every field 0: nothing is refused). */
void eos_space_plan_for(uint64_t fs_bytes, struct eos_space_plan *ret);

/* What a write may use of the filesystem. */
enum eos_space_class {
	EOS_SPACE_GROW,	  /* data and new objects: keep the soft reserve free */
	EOS_SPACE_RECORD, /* small records that keep existing things working: keep the hard one */
};

/* The store's view of its filesystem. Embedded in struct eos_store. */
struct eos_space {
	char *dir; /* statvfs() target: the store directory */
	struct eos_space_plan plan;
	pthread_mutex_t refresh_lock; /* one statvfs() at a time */
	_Atomic uint64_t free;	   /* bytes available to unprivileged users at the last refresh */
	_Atomic int64_t stamp_ns;  /* CLOCK_MONOTONIC of the last refresh */
	_Atomic uint64_t consumed; /* bytes checked since the last refresh */
};

/* statvfs() of dir, then the plan for its size. Copies dir. 0, -ENOMEM or statvfs()'s -errno. */
int eos_space_init(struct eos_space *s, const char *dir, struct eos_error *err);
void eos_space_release(struct eos_space *s);

/*
 * Whether bytes more can be written while keeping class c's reserve free: 0, or -ENOSPC with a
 * message naming the store directory, the free space and the reserve.
 */
int eos_space_check(struct eos_space *s, enum eos_space_class c, uint64_t bytes,
		    struct eos_error *err);

/*
 * Whether the database in directory db can be opened: RocksDB writes new LOG, OPTIONS, MANIFEST
 * and WAL files and flushes what the WAL files hold. 0 or -ENOSPC naming the store.
 */
int eos_space_check_open(struct eos_space *s, const char *db, struct eos_error *err);

/* Whether directory db holds a database (its CURRENT file exists). */
bool eos_space_has_db(const char *db);

/* Free bytes now (fresh statvfs(); also refreshes the cache), or -errno. */
int eos_space_free(struct eos_space *s, uint64_t *ret);
