/* SPDX-License-Identifier: MIT */
/*
 * The eos store: every sandbox's LayerStack in one RocksDB database (see doc/store-format.md).
 *
 * Vocabulary. A sandbox (id "eos-<hex>" or a caller-chosen id) is one imported tree plus its
 * history. A version is a layer number (1 = the import, the "base"); its id is "L000001". The head
 * is the newest version. A lease pins a version so that squash keeps it readable. Paths are tree
 * paths as in common/path.h: relative, '/'-separated, the root is "".
 *
 * Calling sequence.
 *	eos_store_open()                       one process owns a store directory at a time
 *	  reads: eos_store_stat/readdir/readlink/file_open at any retained version
 *	  writes: eos_changeset_new() → stage (put_file_*, mkdir, symlink, link, remove, set_attr)
 *	          → eos_changeset_commit() → eos_changeset_free()
 *	  maintenance: squash, gc, destroy, fsck
 *	eos_store_close()
 *
 * Threads. A struct eos_store may be used from any number of threads at once. Reads never block
 * writers (RocksDB snapshots / MVCC keys). Content staging (hashing, chunking, compression, chunk
 * writes) runs in the caller's thread without any store lock, so many threads may stage into one
 * changeset concurrently. Commits of all sandboxes serialise on one short writer lock (only
 * re-checks and one synced WriteBatch run under it). Squash plans without any lock and holds the
 * writer lock only for its batch; it frees chunks whose count reaches zero only when no changeset
 * is alive at that moment, else it lists them for a later squash or gc. Destroy and gc wait until
 * no changeset is alive and block new changesets while they run: never call them from a thread
 * that holds a changeset.
 *
 * Errors. Every function returns 0 (or a count) on success and a negative errno on failure, and
 * fills the optional `err` with a message naming the subject. ENOENT: no such sandbox, version or
 * path; EBADMSG: corrupt data (the message names the digest or key); ESTALE: the expected base is
 * no longer the head; EBUSY: the store is owned by another process (message names its pid);
 * EPROTONOSUPPORT: the store has a newer format; EINVAL: bad argument (message names it).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cleanup.h"
#include "common/digest.h"
#include "common/error.h"

enum {
	EOS_SANDBOX_ID_MAX = 64, /* [A-Za-z0-9._-], first character alphanumeric */
	EOS_LEASE_NAME_MAX = 128,
	EOS_OWNER_MAX = 200,
	EOS_LAYER_ID_LEN = 16, /* buffer size for "L000001" forms, NUL included */
	EOS_INLINE_MAX = 256,  /* files up to this size live inside their entry */
	EOS_XATTR_VALUE_MAX = 65536,
};

/* What a path is. Values are stored on disk: never renumber. */
enum eos_kind {
	EOS_KIND_NONE = 0, /* not present (lookup found nothing or a whiteout) */
	EOS_KIND_DIR = 1,
	EOS_KIND_FILE = 2,
	EOS_KIND_SYMLINK = 3,
	EOS_KIND_WHITEOUT = 4, /* deletion marker; never returned by stat/readdir */
	EOS_KIND_FIFO = 5,     /* named pipe: attributes only (store format 2) */
	EOS_KIND_CHR = 6,      /* character device: attributes and rdev (store format 2) */
	EOS_KIND_BLK = 7,      /* block device: attributes and rdev (store format 2) */
};

/*
 * The kind of a host file type (S_IFMT bits of mode): EOS_KIND_NONE for sockets and anything
 * else the store does not hold.
 */
enum eos_kind eos_kind_of_mode(uint32_t mode);
/* The S_IFMT bits of kind (0 for NONE and WHITEOUT). */
uint32_t eos_kind_mode(enum eos_kind k);
/* "directory", "file", "symlink", "fifo", "character device", "block device" (messages). */
const char *eos_kind_name(enum eos_kind k);
/* Whether entries of kind k carry a device number (CHR and BLK). */
bool eos_kind_has_rdev(enum eos_kind k);

/* Where a file's bytes are. Values are stored on disk: never renumber. */
enum eos_content_kind {
	EOS_CONTENT_NONE = 0,	  /* directory, symlink or whiteout */
	EOS_CONTENT_INLINE = 1,	  /* bytes inside the entry (size <= EOS_INLINE_MAX) */
	EOS_CONTENT_CHUNK = 2,	  /* exactly one chunk; its key is the file digest */
	EOS_CONTENT_MANIFEST = 3, /* a chunk list in the manifests CF, keyed by the file digest */
};

/* A file's content reference: what an entry stores. Plain value type. */
struct eos_content {
	enum eos_content_kind kind;
	uint64_t size;
	struct eos_digest digest; /* SHA-256 of the whole content (also for inline data) */
	uint32_t inline_len;
	uint8_t inline_data[EOS_INLINE_MAX];
};

/* Attributes a caller sets on an entry. mode holds permission bits (07777) only. */
struct eos_attr {
	uint32_t mode;
	uint32_t uid;
	uint32_t gid;
	int64_t mtime_ns; /* nanoseconds since the epoch */
};

/* What stat and readdir report about a visible path. Plain value type. */
struct eos_stat {
	enum eos_kind kind;
	struct eos_attr attr;
	uint64_t version;    /* the version that wrote this entry */
	uint64_t floor;	     /* directories: child versions below this are invisible */
	uint64_t link_group; /* hard-link group (0 = none); members share content and attr */
	uint64_t size;	     /* file: content size; symlink: target length; dir: 0 */
	uint64_t rdev;	     /* CHR and BLK: the device, as makedev(major, minor); else 0 */
	uint32_t nxattrs;
	struct eos_content content; /* files only */
};

struct eos_store_options {
	size_t cache_bytes; /* decompressed-chunk LRU; 0 = default (256 MiB) */
	unsigned threads;   /* RocksDB background threads; 0 = number of cores */
	int zstd_level;	    /* 0 = default (3) */
	bool create;	    /* create the store directory when missing */
	/*
	 * Squash a sandbox automatically, in a background thread, once it has more than this many
	 * layers that neither the head nor a lease needs (0 = never; see eos_store_set_autosquash).
	 */
	unsigned squash_threshold;
	/*
	 * When another process owns the store and is shutting down (it is closing the store, or
	 * every mount it serves is unmounted: see eos_store_set_serving), wait this many ms for it
	 * to finish: 0 = the default (5 s), negative = fail at once (eos_store_wait_from_env).
	 */
	int64_t wait_ms;
	/*
	 * Called once when the open starts waiting for such an owner, with the message to show
	 * ("store 'S' is being closed by pid N: waiting up to 5.0 s"); may be NULL.
	 */
	void (*on_wait)(void *ctx, const char *message);
	void *on_wait_ctx;
	/*
	 * The owning program's name, written into the owner lock ("eosd"), or NULL. An opener
	 * refused by an owner that named itself "eosd" is told that eosd (pid N) owns the store
	 * and to use eosctl instead.
	 */
	const char *owner_name;
};

struct eos_store;
struct eos_file;
struct eos_changeset;

/* --- store ------------------------------------------------------------------------------------ */

/*
 * Open (and with opts->create, create) the store in directory dir. Checks the directory first
 * (what it holds, its owner and modes: doc/store-format.md, "Directory layout"), then takes the
 * owner lock dir/owner.lock; when another process holds it, fails with -EBUSY naming that pid
 * (after waiting up to opts->wait_ms while that process is shutting down). Refuses a store
 * whose format is newer than this build's (-EPROTONOSUPPORT); upgrades an older format it reads
 * by rewriting the format record (doc/store-format.md). opts may be NULL.
 * Caller owns *ret; close with eos_store_close().
 *
 * Damage (doc/store-format.md, "Recovery") never opens with acknowledged data silently missing:
 * a damaged write-ahead log fails with -EBADMSG naming the log and the byte, and saying that
 * eos_store_recover() (eos-store recover) or a backup are the way out; a damaged MANIFEST fails
 * likewise naming it. A table file RocksDB cannot open does not fail the open: the reads that
 * need it fail (-EBADMSG naming it), eos_store_damage() says so, and eos_store_fsck() reports
 * what it holds.
 */
int eos_store_open(const char *dir, const struct eos_store_options *opts, struct eos_store **ret,
		   struct eos_error *err);
/*
 * Close and release the owner lock, which says "closing" meanwhile (openers wait for us).
 * NULL-safe. No changeset or file may be alive.
 */
void eos_store_close(struct eos_store *st);
EOS_DEFINE_CLEANUP(struct eos_store *, eos_store_close)

/*
 * Record in the owner lock that this process serves the mounts with these device numbers (the
 * st_dev of each mount point, n <= 128), as eosfs does once it serves them: when all of them are
 * unmounted, another opener knows the owner is shutting down and waits for it instead of failing
 * at once. n = 0 clears the record.
 */
int eos_store_set_serving(struct eos_store *st, const dev_t *devs, size_t n, struct eos_error *err);
/*
 * The wait_ms that $EOS_STORE_WAIT asks for: seconds, fractions allowed, "0" = do not wait (-1);
 * 0 (the default) when unset or empty. -EINVAL naming the value when it is not 0 to 86400.
 */
int eos_store_wait_from_env(int64_t *ret_ms, struct eos_error *err);

/*
 * NULL, or why the open found the store damaged (RocksDB's message naming the table file it
 * could not open). Borrowed from st.
 */
const char *eos_store_damage(const struct eos_store *st);

/* What eos_store_recover() dropped. */
struct eos_store_recovery {
	bool dropped;	       /* false: every write-ahead log verified, nothing changed */
	char log[64];	       /* the damaged log, inside dir/db */
	const char *problem;   /* what is wrong with it (static) */
	uint64_t offset;       /* the writes from this byte of log on were dropped */
	uint64_t bytes, files; /* bytes dropped, logs cut or removed */
	char saved[64];	       /* where the copies are, inside dir: "lost+found/wal-<time>" */
};

/*
 * Make a store whose write-ahead log is damaged open again: keep every write before the first
 * damaged record and drop that record and everything after it (the later logs too), as RocksDB's
 * point-in-time recovery would, after copying the logs involved to ret->saved. Takes the owner
 * lock; the store is closed when it returns. Sandboxes written by the dropped writes are then
 * missing or older: run eos_store_fsck(). 0 with ret->dropped false when no log is damaged.
 */
int eos_store_recover(const char *dir, struct eos_store_recovery *ret, struct eos_error *err);

/* The on-disk format number this build writes and reads. */
unsigned eos_store_format_version(void);

/*
 * Whether the store's filesystem can take `bytes` more while keeping eos's reserve free: 0, or
 * -ENOSPC with a message naming the store, the free space and the reserve. Cheap (cached
 * statvfs, refreshed often enough that `bytes`-sized steps cannot overrun the reserve) and
 * thread-safe: the view calls it before every write to a session data file.
 */
int eos_store_space_check(struct eos_store *st, uint64_t bytes, struct eos_error *err);
/* The same for records that keep existing things working: only the hard reserve is kept. */
int eos_store_record_room(struct eos_store *st, uint64_t bytes, struct eos_error *err);

/* The store's filesystem and eos's reserves on it (doc/store-format.md, "Free space"). */
struct eos_store_space {
	uint64_t fs_bytes;     /* size of the filesystem (0: unknown, nothing is reserved) */
	uint64_t free_bytes;   /* available to unprivileged users now */
	uint64_t soft_reserve; /* below this, imports, publishes and new file data are refused */
	uint64_t hard_reserve; /* below this, everything but deletes is refused */
};

/* Fill *ret (a fresh statvfs()). */
int eos_store_space(struct eos_store *st, struct eos_store_space *ret, struct eos_error *err);

/* --- layer ids -------------------------------------------------------------------------------- */

/* Format version v as "L000001" (at least 6 digits) into out[EOS_LAYER_ID_LEN]. */
void eos_layer_id_format(uint64_t v, char *out);
/* Parse "L000001", "L1" or "1". Returns 0 or -EINVAL. */
int eos_layer_id_parse(const char *s, uint64_t *ret);

/* --- sandboxes -------------------------------------------------------------------------------- */

struct eos_sandbox_info {
	char id[EOS_SANDBOX_ID_MAX + 1];
	char source[256]; /* what was imported ("dir:/usr/include", "tar:x.tar.zst"), truncated */
	uint64_t head;
	uint64_t base;	 /* oldest retained version */
	uint64_t layers; /* number of retained layers */
	int64_t created_ns;
};

/* Check a sandbox id ("" and bad characters rejected, with a message naming the id). */
int eos_sandbox_id_check(const char *id, struct eos_error *err);
/* Fill *ret for sandbox id, or -ENOENT. */
int eos_store_sandbox_get(struct eos_store *st, const char *id, struct eos_sandbox_info *ret,
			  struct eos_error *err);
/* List all sandboxes sorted by id. Caller owns *ret (free()). */
int eos_store_sandbox_list(struct eos_store *st, struct eos_sandbox_info **ret, size_t *ret_n,
			   struct eos_error *err);
/*
 * Delete the sandbox: all its entries, layers, leases, sessions and blame in one synced batch,
 * dropping its chunk references (chunks reaching zero are deleted in that batch). Observations
 * naming it stay until retention drops them (eos_store_obs_append).
 */
int eos_store_sandbox_destroy(struct eos_store *st, const char *id, struct eos_error *err);

/* --- layers ----------------------------------------------------------------------------------- */

struct eos_layer_info {
	uint64_t version;
	uint64_t parent;	/* previous retained version, 0 for the base */
	uint64_t squashed_from; /* when squash folded versions (squashed_from..version-1) in; else 0
				 */
	int64_t created_ns;
	char owner[EOS_OWNER_MAX + 1]; /* "import", "workspace_session:ws-1", "operation:req-9" */
	uint64_t created;	       /* paths created */
	uint64_t modified;	       /* paths whose content, type or attributes changed */
	uint64_t deleted;	       /* paths deleted */
	uint64_t bytes;		       /* bytes of file content written by this layer */
};

/* The layer record of version v, or -ENOENT (naming the squash that removed it, if any). */
int eos_store_layer_get(struct eos_store *st, const char *sandbox, uint64_t v,
			struct eos_layer_info *ret, struct eos_error *err);
/* All retained layers, oldest first. Caller owns *ret (free()). */
int eos_store_layer_list(struct eos_store *st, const char *sandbox, struct eos_layer_info **ret,
			 size_t *ret_n, struct eos_error *err);

/* What a retained layer holds in the store (eos_store_layer_usage). */
struct eos_layer_usage {
	uint64_t version;
	uint64_t files;		/* file records it wrote (content changed or new) */
	uint64_t logical_bytes; /* their content bytes */
	/*
	 * Bytes it added to the store, as stored (chunks compressed): inline content, and the
	 * chunks and manifests no older retained layer of the sandbox references. Chunks shared
	 * with other sandboxes count in each sandbox's layer that first uses them.
	 */
	uint64_t stored_bytes;
	uint64_t
		shared_bytes; /* stored bytes of chunks it references that an older layer brought */
	bool stored_known;    /* false: the read budget ran out before this layer */
};

/*
 * Per retained layer of sandbox (oldest first, one entry per eos_store_layer_list() layer), from
 * one scan of the sandbox's entries and a read of the chunks and manifests they name, at most
 * max_read bytes of them (0: 256 MiB); past that, stored_known is false. Caller owns *ret.
 */
int eos_store_layer_usage(struct eos_store *st, const char *sandbox, uint64_t max_read,
			  struct eos_layer_usage **ret, size_t *ret_n, struct eos_error *err);

/* --- leases ----------------------------------------------------------------------------------- */

struct eos_lease_info {
	char name[EOS_LEASE_NAME_MAX + 1];
	uint64_t version;
	int64_t created_ns;
};

/*
 * Pin version v (0 = the current head) under name, persisted (a restart keeps it). Re-acquiring
 * an existing name moves it. *ret_version (may be NULL) receives the pinned version.
 */
int eos_store_lease_acquire(struct eos_store *st, const char *sandbox, const char *name, uint64_t v,
			    uint64_t *ret_version, struct eos_error *err);
/* Drop the lease; -ENOENT when there is none of that name. */
int eos_store_lease_release(struct eos_store *st, const char *sandbox, const char *name,
			    struct eos_error *err);
/* All leases of the sandbox, sorted by name. Caller owns *ret (free()). */
int eos_store_lease_list(struct eos_store *st, const char *sandbox, struct eos_lease_info **ret,
			 size_t *ret_n, struct eos_error *err);

/* --- reading ---------------------------------------------------------------------------------- */

/*
 * Resolve path at version v (0 = head): one seek per path component. -ENOENT when absent,
 * -ENOTDIR when a component is not a directory, -ENOENT naming the squash when v is not retained.
 */
int eos_store_stat(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		   struct eos_stat *ret, struct eos_error *err);

/*
 * Resolve one name inside directory dir_path whose stat the caller already holds (dir), at
 * version v: exactly one seek. The FUSE view's lookup. Returns -ENOENT when absent.
 */
int eos_store_lookup_child(struct eos_store *st, const char *sandbox, uint64_t v,
			   const char *dir_path, const struct eos_stat *dir, const char *name,
			   struct eos_stat *ret, struct eos_error *err);

/* Called once per visible child, in byte order of names; return non-zero to stop early. */
typedef int (*eos_readdir_fn)(void *ctx, const char *name, const struct eos_stat *st);

/*
 * List directory path at version v with one prefix scan. Calls fn per visible child (whiteouts
 * and entries below the directory's floor are skipped). Returns 0, fn's non-zero value, or -errno.
 * start_after (may be NULL) resumes after that name.
 */
int eos_store_readdir(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		      const char *start_after, eos_readdir_fn fn, void *ctx, struct eos_error *err);

/* Symlink target of path at v. Caller owns *ret (free()). */
int eos_store_readlink(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		       char **ret, struct eos_error *err);

/* Extended attributes of path at v: names and values. Caller owns the callback's nothing. */
typedef int (*eos_xattr_fn)(void *ctx, const char *name, const void *value, size_t len);
int eos_store_xattrs(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		     eos_xattr_fn fn, void *ctx, struct eos_error *err);

/*
 * A version of a sandbox resolved once, for a reader that reads it many times (the FUSE view):
 * the eos_tree_* calls behave as the eos_store_* calls of the same name at that version, without
 * the search of the sandbox's name and the read of the version's layer record each of those
 * makes. Open it while the version is retained (the caller holds a lease on it, or it is the
 * head); it stays valid as long as that lease. Thread-safe (read-only). Caller owns *ret
 * (eos_tree_free()); it borrows st, valid until eos_store_close().
 */
struct eos_tree;
int eos_store_tree_open(struct eos_store *st, const char *sandbox, uint64_t v,
			struct eos_tree **ret, struct eos_error *err);
void eos_tree_free(struct eos_tree *t);
EOS_DEFINE_CLEANUP(struct eos_tree *, eos_tree_free)
/* The version resolved (0 was the head at open). */
uint64_t eos_tree_version(const struct eos_tree *t);
int eos_tree_stat(const struct eos_tree *t, const char *path, struct eos_stat *ret,
		  struct eos_error *err);
int eos_tree_lookup_child(const struct eos_tree *t, const char *dir_path,
			  const struct eos_stat *dir, const char *name, struct eos_stat *ret,
			  struct eos_error *err);
/* As eos_store_readdir, except that the blocks it reads do not enter the block cache: a listing
 * is a scan, and a walk of a large tree would fill the cache with what its point lookups need
 * less (the view builds a listed file's node from the listing). dir, when not NULL, is path's
 * entry at t's version (its kind and floor are used), which saves resolving path from the root. */
int eos_tree_readdir(const struct eos_tree *t, const char *path, const struct eos_stat *dir,
		     const char *start_after, eos_readdir_fn fn, void *ctx, struct eos_error *err);
int eos_tree_readlink(const struct eos_tree *t, const char *path, char **ret,
		      struct eos_error *err);
int eos_tree_xattrs(const struct eos_tree *t, const char *path, eos_xattr_fn fn, void *ctx,
		    struct eos_error *err);

/* Open the file at path, version v, for reading. Caller owns *ret; eos_file_close(). */
int eos_store_file_open(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
			struct eos_file **ret, struct eos_error *err);
/* Open content directly (the FUSE view holds the stat). Copies c. */
int eos_store_file_open_content(struct eos_store *st, const struct eos_content *c,
				struct eos_file **ret, struct eos_error *err);
uint64_t eos_file_size(const struct eos_file *f);
/*
 * Read up to len bytes at offset off into buf; decompresses only the chunks that overlap the
 * range (through the chunk cache). Returns the number of bytes read (0 at or past the end), or
 * -EBADMSG naming the digest when a chunk is corrupt. Thread-safe for one file handle.
 */
ssize_t eos_file_pread(struct eos_file *f, void *buf, size_t len, uint64_t off,
		       struct eos_error *err);
void eos_file_close(struct eos_file *f);
EOS_DEFINE_CLEANUP(struct eos_file *, eos_file_close)

/*
 * Work the chunk cache would rather do off the read path — populating its memory just ahead of
 * use, so that a read that misses does not pay the page faults (store/chunk-mem.h) — for a host
 * with a background thread of its own: the store starts none. eos_store_background_due() is
 * cheap and lock-free and says whether eos_store_background() has anything to do. Both are
 * thread-safe; a host that calls neither reads exactly as fast as before.
 */
bool eos_store_background_due(struct eos_store *st);
void eos_store_background(struct eos_store *st);

/* --- writing: change sets --------------------------------------------------------------------- */

/*
 * A change set is one future layer. Calling sequence:
 *	eos_changeset_new()            or eos_changeset_new_sandbox() to create a sandbox
 *	eos_changeset_put_file_*()     stage content: hashes, chunks, compresses and writes chunks
 *now, eos_changeset_mkdir() …        in the calling thread, without any store lock; thread-safe:
 *	                               several threads may stage into one change set at once
 *	eos_changeset_commit()         under the writer lock: re-read head, validate, one synced
 *batch eos_changeset_free()           always; freeing without commit aborts (staged chunks become
 *	                               garbage that eos_store_gc() reclaims)
 * A path may be staged at most once per change set (-EEXIST naming it). All path arguments are
 * copied; they must pass eos_path_check().
 */
int eos_changeset_new(struct eos_store *st, const char *sandbox, struct eos_changeset **ret,
		      struct eos_error *err);
/*
 * A change set that creates sandbox id (NULL = generate "eos-<12 hex>") when committed, with
 * root directory attributes root and the given source description. Commit fails with -EEXIST
 * when the id exists. The id is available at once through eos_changeset_sandbox().
 */
int eos_changeset_new_sandbox(struct eos_store *st, const char *id, const char *source,
			      const struct eos_attr *root, struct eos_changeset **ret,
			      struct eos_error *err);
const char *eos_changeset_sandbox(const struct eos_changeset *cs);
/* Who the layer belongs to ("import", "workspace_session:ws-1", …). Copies owner. */
int eos_changeset_set_owner(struct eos_changeset *cs, const char *owner, struct eos_error *err);

/* Create or replace a regular file with len bytes from data. */
int eos_changeset_put_file_mem(struct eos_changeset *cs, const char *path,
			       const struct eos_attr *attr, const void *data, size_t len,
			       struct eos_error *err);
/* Create or replace a regular file with the bytes of fd from its current offset to EOF. */
int eos_changeset_put_file_fd(struct eos_changeset *cs, const char *path,
			      const struct eos_attr *attr, int fd, struct eos_error *err);
/* Create or replace a regular file with content already in the store (e.g. from a stat). */
int eos_changeset_put_file_content(struct eos_changeset *cs, const char *path,
				   const struct eos_attr *attr, const struct eos_content *c,
				   struct eos_error *err);
/*
 * Create a directory, or update the attributes of an existing one. With opaque, the directory
 * replaces whatever was there: its floor becomes the new version, hiding all older children.
 */
int eos_changeset_mkdir(struct eos_changeset *cs, const char *path, const struct eos_attr *attr,
			bool opaque, struct eos_error *err);
int eos_changeset_symlink(struct eos_changeset *cs, const char *path, const struct eos_attr *attr,
			  const char *target, struct eos_error *err);
/*
 * Create a fifo (kind EOS_KIND_FIFO, rdev 0) or a device (EOS_KIND_CHR / EOS_KIND_BLK with its
 * rdev, makedev(major, minor)). -EINVAL naming the path for any other kind, or rdev on a fifo.
 */
int eos_changeset_mknod(struct eos_changeset *cs, const char *path, const struct eos_attr *attr,
			enum eos_kind kind, uint64_t rdev, struct eos_error *err);
/* Make path a hard link of target (staged in this change set or present at the head). */
int eos_changeset_link(struct eos_changeset *cs, const char *path, const char *target,
		       struct eos_error *err);
/* Delete path (and, for a directory, everything below it) with one whiteout. */
int eos_changeset_remove(struct eos_changeset *cs, const char *path, struct eos_error *err);
/* Change only the attributes of an existing path (content kept). */
int eos_changeset_set_attr(struct eos_changeset *cs, const char *path, const struct eos_attr *attr,
			   struct eos_error *err);
/* Set (value != NULL) or remove (value == NULL) one xattr of a path staged in this change set. */
int eos_changeset_set_xattr(struct eos_changeset *cs, const char *path, const char *name,
			    const void *value, size_t len, struct eos_error *err);

struct eos_commit_result {
	uint64_t version; /* the new head; 0 when nothing changed (no layer written) */
	uint64_t created, modified, deleted, bytes;
};

/*
 * Validate against the current head and write one synced batch: entries, refs, layer record,
 * head (and the sandbox record for a new sandbox). expected_head != 0 makes the commit fail with
 * -ESTALE when the head moved. A change set that changes nothing writes nothing and reports
 * version 0. On any failure nothing is written. A change set can be committed once.
 */
int eos_changeset_commit(struct eos_changeset *cs, uint64_t expected_head,
			 struct eos_commit_result *ret, struct eos_error *err);
/* Release the change set (aborting it when not committed). NULL-safe. */
void eos_changeset_free(struct eos_changeset *cs);
EOS_DEFINE_CLEANUP(struct eos_changeset *, eos_changeset_free)

/* --- import ----------------------------------------------------------------------------------- */

/* What an import is doing (struct eos_import_status). */
enum eos_import_phase {
	EOS_IMPORT_SCAN = 1,   /* listing the source: the walk, or an archive's first read */
	EOS_IMPORT_STAGE = 2,  /* file contents hashed, chunked, compressed and written */
	EOS_IMPORT_COMMIT = 3, /* all staged: the one synced batch that creates the sandbox */
};

/* An import's progress, for eos_import_options.progress. */
struct eos_import_status {
	enum eos_import_phase phase;
	uint64_t files, bytes; /* file contents staged so far */
	/* the files (with content; further hard links not counted) and bytes to stage: known from
	 * STAGE on (0 during SCAN); bytes may end above total_bytes when a file grows meanwhile */
	uint64_t total_files, total_bytes;
};

struct eos_import_options {
	const char *sandbox; /* id to create; NULL = generated */
	unsigned threads;    /* 0 = number of cores */
	/*
	 * Progress callback (may be NULL), called from the importing thread only: once as each
	 * phase begins, during STAGE at most every 100 ms, and once when all is staged.
	 */
	void (*progress)(void *ctx, const struct eos_import_status *s);
	void *progress_ctx;
	/*
	 * Import every work tree's .git/index byte for byte. By default the stat data of the
	 * entries that still describe the imported files is rewritten to what a session view shows,
	 * so the first `git status` in a view re-reads none of them (doc/fs.md, "Imported git
	 * indexes").
	 */
	bool keep_git_index;
};

struct eos_import_result {
	char sandbox[EOS_SANDBOX_ID_MAX + 1];
	uint64_t version;
	uint64_t files, dirs, symlinks, hardlinks, bytes;
	uint64_t specials;    /* fifos and devices */
	uint64_t git_entries; /* git index entries refreshed for the views (keep_git_index) */
	/*
	 * Sockets found and not imported (runtime objects: the store keeps no sockets), by tree
	 * path in walk order. Owned: release with eos_import_result_release().
	 */
	char **skipped;
	size_t nskipped;
};
/* Free the skipped list (the counts stay). NULL-safe. */
void eos_import_result_release(struct eos_import_result *r);

/*
 * Import a host directory tree, or a .tar / .tar.zst / .tar.gz / .tar.xz archive (by content,
 * not name), as a new sandbox whose base layer is version 1. Regular files, directories, symlinks,
 * fifos, character and block devices (with their device numbers; never opened), hard links of
 * regular files, permission bits, uid/gid and mtimes are kept; a hard link of any other kind
 * becomes an equal entry of its own. Sockets are skipped and listed in ret->skipped. Other file
 * types are refused (-EINVAL, the message lists their paths), as are unreadable files (-EACCES,
 * listed). Either the whole sandbox is committed or nothing is. ret's list is owned by the
 * caller (eos_import_result_release()); it is left untouched on failure.
 */
int eos_store_import(struct eos_store *st, const char *src, const struct eos_import_options *opts,
		     struct eos_import_result *ret, struct eos_error *err);

/* --- workspace sessions ----------------------------------------------------------------------- */

/*
 * A session is a lease on a version (named "session:<name>") plus a private delta: opaque
 * key/value records the FUSE view (fs/) keeps in the session column family, and a data
 * directory <store>/sessions/<sandbox>/<name> for file contents. Names follow the sandbox id
 * rules ([A-Za-z0-9._-], first character alphanumeric, at most EOS_SESSION_NAME_MAX bytes).
 */
enum {
	EOS_SESSION_NAME_MAX = 64
};

struct eos_session_info {
	char name[EOS_SESSION_NAME_MAX + 1];
	uint64_t version; /* the leased version the delta applies to */
	int64_t created_ns;
};

int eos_session_name_check(const char *name, struct eos_error *err);
/* Create session name on version v (0 = head): record and lease in one batch. -EEXIST if it
 * exists. ret may be NULL. */
int eos_store_session_create(struct eos_store *st, const char *sandbox, const char *name,
			     uint64_t v, struct eos_session_info *ret, struct eos_error *err);
/* The session's record, or -ENOENT "session 'n' of sandbox 's' does not exist". */
int eos_store_session_get(struct eos_store *st, const char *sandbox, const char *name,
			  struct eos_session_info *ret, struct eos_error *err);
/* All sessions of the sandbox sorted by name. Caller owns *ret (free()). */
int eos_store_session_list(struct eos_store *st, const char *sandbox, struct eos_session_info **ret,
			   size_t *ret_n, struct eos_error *err);
/* Delete the session: its records and lease (one synced batch), then its data directory. */
int eos_store_session_remove(struct eos_store *st, const char *sandbox, const char *name,
			     struct eos_error *err);
/*
 * Create session name as a copy of session from: the same version (leased anew) and every delta
 * record of from, in one synced batch with the new session's record and lease, so that a crash
 * leaves either no session or the whole copy. -EEXIST when name exists, -ENOENT when from does
 * not. Data files are the caller's: copy them into name's data directory first. The caller
 * keeps from's records still meanwhile. ret may be NULL.
 */
int eos_store_session_copy(struct eos_store *st, const char *sandbox, const char *from,
			   const char *name, struct eos_session_info *ret, struct eos_error *err);
/* Path of the session's data directory (created with mode 0700 when missing). Caller owns. */
int eos_store_session_dir(struct eos_store *st, const char *sandbox, const char *name, char **ret,
			  struct eos_error *err);

/* Called per delta record of a session, in key order; non-zero stops the scan. */
typedef int (*eos_session_scan_fn)(void *ctx, const void *key, size_t klen, const void *val,
				   size_t vlen);
int eos_store_session_scan(struct eos_store *st, const char *sandbox, const char *name,
			   eos_session_scan_fn fn, void *ctx, struct eos_error *err);

/*
 * A batch of delta record changes, applied atomically by eos_session_batch_write (which empties
 * the batch for reuse). Not thread-safe: one batch per thread. Keys are 1..1024 bytes.
 */
struct eos_session_batch;
int eos_session_batch_new(struct eos_store *st, const char *sandbox, const char *name,
			  struct eos_session_batch **ret, struct eos_error *err);
int eos_session_batch_put(struct eos_session_batch *b, const void *key, size_t klen,
			  const void *val, size_t vlen);
int eos_session_batch_delete(struct eos_session_batch *b, const void *key, size_t klen);
/*
 * Mark b as freeing space (the view's unlink and rmdir): written at any fill level, as a batch of
 * deletes is, though it holds small puts (a whiteout, the parent's times). Until the next write.
 */
void eos_session_batch_freeing(struct eos_session_batch *b);
/*
 * What b holds, as a sequence of u8 op (EOS_SESSION_OP_*) · le32 key length · key · le32 value
 * length · value (empty for a delete); keys as given to put and delete. For a caller that
 * journals a batch before it is written (fs/journal.c).
 */
enum {
	EOS_SESSION_OP_PUT = 'P',
	EOS_SESSION_OP_DELETE = 'D'
};
const void *eos_session_batch_ops(const struct eos_session_batch *b, size_t *ret_len);
/* One record of such a sequence (key and value borrowed from it). */
struct eos_session_op {
	uint8_t op;
	const uint8_t *key, *val;
	size_t klen, vlen;
};
/*
 * Read the next record of the sequence at *p (*left bytes), advancing both: 1, 0 at its end, or
 * -EBADMSG for a malformed record (an unknown op, a key of 0 or over 1024 bytes, a delete with
 * a value, a length past the end).
 */
int eos_session_ops_next(const uint8_t **p, size_t *left, struct eos_session_op *ret);
/* Whether b frees space (deletes only, or marked freeing): written at any fill level. */
bool eos_session_batch_frees(const struct eos_session_batch *b);
/* Whether the store has room for b now (-ENOSPC as eos_session_batch_write would refuse it). */
int eos_session_batch_room(struct eos_session_batch *b, struct eos_error *err);
/* Empty b without writing it. */
void eos_session_batch_clear(struct eos_session_batch *b);
/*
 * Apply; sync=true waits for the write-ahead log to reach the disk. A batch holding puts is
 * refused with -ENOSPC below the hard reserve (doc/store-format.md, "Free space") unless it frees.
 */
int eos_session_batch_write(struct eos_session_batch *b, bool sync, struct eos_error *err);
void eos_session_batch_free(struct eos_session_batch *b);
EOS_DEFINE_CLEANUP(struct eos_session_batch *, eos_session_batch_free)

/* --- publishing: the optimistic-concurrency gate (doc/publish.md) ----------------------------- */

/*
 * A publish is one future layer made from changes against a base version. Calling sequence (in
 * the style of a git ref transaction):
 *	eos_publish_begin()       sandbox, session (or a plain change set), base version, owner
 *	eos_publish_put_file() …  stage changes: paths are checked and copied, nothing is read yet
 *	eos_publish_prepare()     read, hash, chunk, compress and write new content and compute
 *	                          line ownership against the base, without any store lock
 *	eos_publish_commit()      under the writer lock: re-read the head, re-check every staged
 *	                          path against (base, head], merge, then one synced batch, or reject
 *	eos_publish_free()        always; freeing an uncommitted publish aborts it
 * Ownership: all arguments are copied; data files named by put_file are read by prepare (and by
 * commit, for merges) and never modified. Threads: one publish is driven by one thread; any number
 * of publishes may run at once (their commits serialise on the writer lock, nothing else does).
 * A session publish that is PUBLISHED also resets the session atomically in the same batch: its
 * delta records are deleted and its lease moves to the new head (its data directory is removed
 * after the batch, unless keep_session_dir); a REJECTED or failed one leaves the session exactly
 * as it was.
 */
struct eos_publish;

/* Write log: bytes [start, end) of a staged file were last written by operation `owner`. */
struct eos_write_range {
	uint64_t start, end;
	const char *owner; /* "operation:req-91" */
};

struct eos_publish_options {
	const char *sandbox;
	const char
		*session; /* the workspace session whose delta this is; NULL: a plain change set */
	/*
	 * The version the changes were made against. 0: the session's leased version; for a plain
	 * change set, the head at commit time (blind writes: each replaces what it names, in
	 * commit order, and nothing is checked).
	 */
	uint64_t base;
	/*
	 * Owner of the layer and of new lines no write range claims. NULL:
	 * "workspace_session:<name>" for a session, else "unknown".
	 */
	const char *owner;
	/*
	 * A session publish leaves the session's data directory in place (its owner empties it
	 * itself: a live view still reads its data files until it follows the new version).
	 */
	bool keep_session_dir;
};

/* One staged regular file: exactly one of data_path, data (with len) and content is set. */
struct eos_publish_file {
	struct eos_attr attr;
	const char *data_path; /* content: the bytes of this host file, or */
	const void *data;      /* these len bytes (copied), or */
	size_t len;
	const struct eos_content *content;    /* content already in the store (unchanged bytes) */
	const struct eos_write_range *ranges; /* who wrote which bytes of it (copied) */
	size_t nranges;
	const char *origin; /* the base path it was renamed from (its line owners carry over), or
			       NULL */
};

int eos_publish_begin(struct eos_store *st, const struct eos_publish_options *opts,
		      struct eos_publish **ret, struct eos_error *err);
/* The base version the staged changes are checked against. */
uint64_t eos_publish_base(const struct eos_publish *p);
int eos_publish_put_file(struct eos_publish *p, const char *path, const struct eos_publish_file *f,
			 struct eos_error *err);
/* With opaque, the directory replaces whatever was there (hides every older child). */
int eos_publish_mkdir(struct eos_publish *p, const char *path, const struct eos_attr *attr,
		      bool opaque, struct eos_error *err);
/*
 * Before a blind write of the whole regular file at path (eos-store write, eosd's file_write
 * without a session): when the head has path, take its mode and owners into *attr (-EISDIR
 * naming it when it is not a regular file); else stage every missing directory above it (0755,
 * attr's owners and mtime), as mkdir -p would.
 */
int eos_publish_stage_parents(struct eos_publish *p, const char *path, struct eos_attr *attr,
			      struct eos_error *err);
int eos_publish_symlink(struct eos_publish *p, const char *path, const struct eos_attr *attr,
			const char *target, struct eos_error *err);
/* A fifo or a device, as eos_changeset_mknod(). */
int eos_publish_mknod(struct eos_publish *p, const char *path, const struct eos_attr *attr,
		      enum eos_kind kind, uint64_t rdev, struct eos_error *err);
/* Make path a hard link of target (staged here or present at the base). */
int eos_publish_link(struct eos_publish *p, const char *path, const char *target,
		     struct eos_error *err);
/* Delete path (a directory with everything below it). */
int eos_publish_remove(struct eos_publish *p, const char *path, struct eos_error *err);
/* Change only the attributes of a path present at the base. */
int eos_publish_set_attr(struct eos_publish *p, const char *path, const struct eos_attr *attr,
			 struct eos_error *err);
/*
 * Path (staged) came from origin at the base: moved there itself, or with a moved directory.
 * When the publish also removes origin, it is a rename, and a head that no longer has origin
 * (deleted or renamed since the base) makes it a RENAME conflict. eos_publish_file's origin
 * says the same for a file.
 */
int eos_publish_set_origin(struct eos_publish *p, const char *path, const char *origin,
			   struct eos_error *err);
/* Set (value != NULL) or remove an xattr of a path staged in this publish. */
int eos_publish_set_xattr(struct eos_publish *p, const char *path, const char *name,
			  const void *value, size_t len, struct eos_error *err);
/* Read and store new content, compute line ownership; no lock held. Idempotent. */
int eos_publish_prepare(struct eos_publish *p, struct eos_error *err);

enum eos_publish_status {
	EOS_PUBLISH_PUBLISHED = 1, /* one new layer */
	EOS_PUBLISH_NO_OP = 2,	   /* nothing left to change after resolution: no layer */
	EOS_PUBLISH_REJECTED = 3,  /* conflicts: nothing written, every conflict listed */
};
/* "published", "no_op", "rejected". */
const char *eos_publish_status_name(enum eos_publish_status s);

/* Values are reported by name ("content", "binary", …): never rely on the numbers. */
enum eos_conflict_kind {
	EOS_CONFLICT_CONTENT = 1,   /* overlapping text edits, or different insertions at a point */
	EOS_CONFLICT_BINARY,	    /* either side binary and the sides differ */
	EOS_CONFLICT_TOO_LARGE,	    /* either side above the text-merge limit and they differ */
	EOS_CONFLICT_DELETE_MODIFY, /* the session deleted what the head modified */
	EOS_CONFLICT_MODIFY_DELETE, /* the session modified what the head deleted */
	EOS_CONFLICT_TYPE,	    /* file / directory / symlink changed on either side */
	EOS_CONFLICT_DIRECTORY,	    /* the session removed or replaced a directory the head changed
				     * below (detail names the descendant) */
	EOS_CONFLICT_PARENT,	    /* the head removed or replaced a parent of a session path */
	EOS_CONFLICT_MODE,	    /* both changed the permission bits, differently */
	EOS_CONFLICT_SYMLINK,	    /* both changed a symlink's target, differently */
	EOS_CONFLICT_DEVICE,	    /* both changed a device's number, differently */
	EOS_CONFLICT_RENAME,	    /* the session renamed a path the head no longer has (detail
				     * names the source; path is the destination) */
};
const char *eos_conflict_kind_name(enum eos_conflict_kind k);

enum {
	/*
	 * "absent", "dir:0755", "file:0644:<sha256 hex>", "symlink:<hex>", "fifo:0644",
	 * "chr:0600:<major>:<minor>", "blk:0600:<major>:<minor>"
	 */
	EOS_FINGERPRINT_MAX = 96,
	EOS_MERGE_TEXT_MAX = 8 << 20, /* larger files are never merged line by line */
};

/* A conflicting region of a text file; lines are 1-based, a count of 0 is an insertion point. */
struct eos_conflict_lines {
	uint32_t base_start, base_count;
	uint32_t head_start, head_count;
	uint32_t session_start, session_count;
};

struct eos_conflict {
	char *path;
	enum eos_conflict_kind kind;
	char *detail; /* DIRECTORY: the descendant the head changed; PARENT: the parent; else NULL
		       */
	char base_fp[EOS_FINGERPRINT_MAX], head_fp[EOS_FINGERPRINT_MAX],
		session_fp[EOS_FINGERPRINT_MAX];
	struct eos_conflict_lines *lines; /* CONTENT: every conflicting region */
	size_t nlines;
	char *message; /* one line naming the path and what happened on each side */
};

/*
 * k as the JSON object eosd and eos-store both answer (doc/sessions.md: path, kind, detail, the
 * three fingerprints, lines, message): a new jansson json_t the caller owns, or NULL on OOM.
 */
struct json_t;
struct json_t *eos_conflict_json(const struct eos_conflict *k);

/*
 * When each phase of a publish began and ended, on CLOCK_MONOTONIC (ns; 0: the phase did not
 * run), so that a caller can trace a publish without the store knowing of tracing.
 */
struct eos_publish_phases {
	/* the session's delta staged into the publish (eos_view_publish*() in fs/ fills these) */
	int64_t capture_start, capture_end;
	int64_t prepare_start, prepare_end; /* content written, line owners computed: no lock */
	int64_t lock_wait_start;	    /* commit: waiting for the writer lock from here */
	int64_t lock_acquired;
	int64_t check_end;     /* every path decided against the head, text merges included */
	int64_t merge_end;     /* line owners of what merges changed recomputed (0: rejected) */
	int64_t commit_end;    /* the batch written (0: rejected, nothing to write) */
	int64_t lock_released; /* the end of the commit */
	int64_t merge_ns;      /* of the check's time, what the three-way text merges took */
};

struct eos_publish_result {
	enum eos_publish_status status;
	uint64_t base;	  /* the version the changes were made against */
	uint64_t head;	  /* the head they were checked against */
	uint64_t version; /* PUBLISHED: the new head; else 0 */
	char owner[EOS_OWNER_MAX + 1];
	uint64_t created, modified, deleted, bytes; /* as in the layer record */
	uint64_t merged;			    /* paths three-way merged with the head */
	uint64_t staged;			    /* paths staged */
	int64_t prepare_ns, lock_ns, total_ns;	    /* lock_ns: time under the writer lock */
	struct eos_publish_phases phases;
	struct eos_conflict *conflicts; /* REJECTED: every conflict, by path */
	size_t nconflicts;
	/*
	 * Paths of the session left out of the publish (sockets: runtime objects the store does
	 * not keep; what the base had there is deleted), filled by eos_view_publish().
	 */
	char **skipped;
	size_t nskipped;
};
void eos_publish_result_release(struct eos_publish_result *r);

/*
 * Prepare (when not done) and commit. Returns 0 with ret->status PUBLISHED, NO_OP or REJECTED, or
 * a negative errno when the publish could not be decided (I/O, corrupt store, …); in every case
 * but PUBLISHED nothing was written. A publish is committed once (-EINVAL afterwards).
 */
int eos_publish_commit(struct eos_publish *p, struct eos_publish_result *ret,
		       struct eos_error *err);
void eos_publish_free(struct eos_publish *p);
EOS_DEFINE_CLEANUP(struct eos_publish *, eos_publish_free)

/* --- blame: who wrote each line (store/blame.c) ----------------------------------------------- */

#define EOS_OWNER_ORIGINAL "original" /* lines never touched since the import */
#define EOS_OWNER_UNKNOWN  "unknown"  /* lines whose writer cannot be known */

struct eos_blame_range {
	uint32_t start_line; /* 1-based */
	uint32_t line_count;
	const char
		*owner; /* "original", "unknown", "workspace_session:ws-17", "operation:req-91" */
};

/*
 * Line owners of the file at path, version v (0 = head): coalesced ranges covering every line
 * (none for an empty file; one range for a binary file). Works at every retained version.
 * -ENOENT for a missing path, -EISDIR for a directory, -EINVAL "'p' is a fifo, not a file" for a
 * symlink, fifo or device. Caller owns *ret: one
 * allocation, owner strings included (free()).
 */
int eos_store_blame(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
		    struct eos_blame_range **ret, size_t *ret_n, struct eos_error *err);

/* --- export: the published delta between two versions (store/export*.c) ---------------------- */

enum eos_export_format {
	EOS_EXPORT_DIR = 1, /* applied onto an existing destination directory */
	EOS_EXPORT_TAR = 2, /* OCI layer: deletions as .wh.<name>, opaque dirs as .wh..wh..opq */
	EOS_EXPORT_TAR_ZST = 3, /* the same, zstd-compressed */
	EOS_EXPORT_PATCH = 4,	/* unified diff with git's extended headers (git apply) */
};
/* "dir", "tar", "tar-zst", "patch"; -EINVAL naming s otherwise. */
int eos_export_format_parse(const char *s, enum eos_export_format *ret, struct eos_error *err);

/* An export's progress, for eos_export_options.progress. */
struct eos_export_status {
	uint64_t paths, total_paths; /* paths written so far, of those the format writes */
	uint64_t files, bytes;	     /* files and content bytes written so far */
};

struct eos_export_options {
	const char *sandbox;
	uint64_t from; /* 0: the oldest retained version (the base) */
	uint64_t to;   /* 0: the head */
	enum eos_export_format format;
	const char
		*dest; /* DIR: the directory to apply onto; others: the file to create, or NULL: */
	int fd;	       /* … write the archive or patch to this descriptor */
	/*
	 * Progress callback (may be NULL), called from the exporting thread only: once the
	 * changes are known (before that, the export is comparing the versions), at most every
	 * 100 ms while they are written, and once when all are written.
	 */
	void (*progress)(void *ctx, const struct eos_export_status *s);
	void *progress_ctx;
};

struct eos_export_result {
	uint64_t from, to;
	uint64_t files, dirs, symlinks, deleted, renamed;
	uint64_t specials; /* fifos and devices */
	uint64_t bytes;	   /* file content bytes written */
};

/*
 * Export what changed between from and to. A destination inside the store directory or the eos
 * state directory (eos_default_state_dir()), "/" or the home directory itself is refused (-EINVAL
 * naming it); symlinks are never followed out of a DIR
 * destination. A DIR export is applied in a staging directory and renamed into place: an
 * interrupted export leaves the destination as it was or complete. Fifos and devices become tar
 * members, or nodes of a DIR export (devices only where the exporting user may create them:
 * -EPERM naming the path otherwise); a PATCH cannot hold them (-EINVAL naming the path).
 */
int eos_store_export(struct eos_store *st, const struct eos_export_options *opts,
		     struct eos_export_result *ret, struct eos_error *err);

/* --- maintenance ------------------------------------------------------------------------------ */

struct eos_squash_result {
	uint64_t layers_removed;
	uint64_t entries_removed;
	uint64_t chunks_freed;
	uint64_t bytes_freed; /* stored (compressed) bytes of freed chunks */
	/*
	 * When the last plan was made and its batch written, on CLOCK_MONOTONIC (ns): the write
	 * from waiting for the writer lock to releasing it (0 when there was nothing to write).
	 */
	int64_t plan_start, plan_end, write_start, write_end;
	unsigned attempts; /* plans made (more than 1 when leases moved under one) */
};

/*
 * Fold every run of layers that neither the head nor a lease needs into the next retained layer:
 * delete entry versions no retained version can see, drop their chunk references (freeing chunks
 * that reach zero when no changeset is alive, else listed for later) and record the squashed
 * range. Every retained version reads byte-identically before and after. Planned without a lock;
 * one synced batch under the writer lock. -EAGAIN when leases kept moving under the plan.
 */
int eos_store_squash(struct eos_store *st, const char *sandbox, struct eos_squash_result *ret,
		     struct eos_error *err);

/*
 * Automatic squash: after each publish, a sandbox with more than threshold layers that neither
 * the head nor a lease needs is squashed by a background thread (0 turns it off). Publishes are
 * blocked only while the squash writes its batch.
 */
void eos_store_set_autosquash(struct eos_store *st, unsigned threshold);
/* Wait until no automatic squash is queued or running (tests, shutdown). */
void eos_store_autosquash_wait(struct eos_store *st);

/* Delete chunks and manifests that no reference count covers (left by aborted stagings). */
int eos_store_gc(struct eos_store *st, uint64_t *ret_freed, struct eos_error *err);

enum eos_fsck_flags {
	EOS_FSCK_VERIFY_CHUNKS = 1 << 0, /* decode every chunk and compare its digest (slow) */
};

/* Called for every violation found; kind is a short tag ("refcount", "missing-chunk", …). */
typedef void (*eos_fsck_fn)(void *ctx, const char *kind, const char *message);

struct eos_fsck_result {
	uint64_t violations;
	uint64_t entries, chunks, manifests, sandboxes;
	uint64_t blame;		 /* blame records checked */
	uint64_t garbage_chunks; /* unreferenced chunks: not a violation, reclaimable by gc */
	/* Damage (each also a violation): RocksDB cannot read it, or it does not decode. */
	uint64_t damaged;	  /* reports of unreadable keys, records, chunks, manifests */
	uint64_t damaged_records; /* of those, about records other than chunks and manifests */
	uint64_t damaged_paths; /* entries (sandbox · version · path) whose content is damaged */
	uint64_t damaged_sandboxes; /* sandboxes with anything damaged */
};

/*
 * Check every invariant (doc/store-format.md, "Invariants"). Returns 0 even with violations.
 *
 * Reads every key and value of every column family (with RocksDB's checksums verified: every
 * table block and every blob), so damage anywhere is found. fsck goes on past each unreadable
 * stretch and reports it ("damaged-keys": column family, key range and the sandboxes it
 * covers), every unreadable or corrupt chunk and manifest ("damaged-chunk", "corrupt-chunk",
 * "damaged-manifest"), every entry whose content they hold ("damaged-path": sandbox, version,
 * path), and one summary per damaged sandbox ("damaged-sandbox"). Without
 * EOS_FSCK_VERIFY_CHUNKS, chunks are checksummed by RocksDB but not decoded.
 */
int eos_store_fsck(struct eos_store *st, enum eos_fsck_flags flags, eos_fsck_fn fn, void *ctx,
		   struct eos_fsck_result *ret, struct eos_error *err);

struct eos_store_stats {
	uint64_t sandboxes;
	uint64_t chunks, chunk_raw_bytes, chunk_stored_bytes;
	uint64_t manifests, entries;
	uint64_t disk_bytes; /* SST + blob + WAL files on disk */
	uint64_t cache_hits, cache_misses;
};

/* Counts by scanning (chunks, entries) and RocksDB properties (disk). Flushes memtables first. */
int eos_store_stats(struct eos_store *st, struct eos_store_stats *ret, struct eos_error *err);

/* --- observations: spans, events and samples (store/obs.c, doc/observability.md) -------------- */

/*
 * The store keeps what its owner observes of itself — spans of operations, domain events and
 * resource samples — in the obs column family, in the order they were recorded, with a bounded
 * retention: eos_store_obs_append() writes a batch of records and, when the bounds are passed,
 * deletes the oldest ones in the same call. Records outlive their sandbox (a destroy keeps the
 * records of its own trace). Writes are not synced: a crash of the process loses nothing
 * written, a power loss may lose the last seconds. Threads: appends serialise on their own lock
 * (never the writer lock); scans run beside them on a consistent view.
 */

enum eos_obs_type {
	EOS_OBS_SPAN = 1,   /* an operation or a phase of one: start, duration, status */
	EOS_OBS_EVENT = 2,  /* a domain event ("layer.published"): a moment */
	EOS_OBS_SAMPLE = 3, /* a resource sample of a cgroup */
};

/* A span's outcome; values are stored: never renumber. */
enum eos_obs_status {
	EOS_OBS_STATUS_NONE = 0, /* events and samples */
	EOS_OBS_COMPLETED = 1,
	EOS_OBS_ERROR = 2,
	EOS_OBS_CANCELLED = 3,
	EOS_OBS_TIMED_OUT = 4,
};
/* "completed", "error", "cancelled", "timed_out" (NULL for NONE or an unknown value). */
const char *eos_obs_status_name(enum eos_obs_status s);

enum {
	EOS_OBS_TRACE_ID_LEN = 16, /* bytes of a trace id */
	EOS_OBS_NAME_MAX = 128,	   /* bytes of a record's name */
	EOS_OBS_ATTRS_MAX = 65536, /* bytes of a record's attributes */
	EOS_OBS_DEFAULT_RECORDS = 200000,
	EOS_OBS_DEFAULT_BYTES = 64 << 20,
};

/* Where a record sits in the column family: its key. Keys only grow (eos_store_obs_append). */
struct eos_obs_pos {
	uint64_t time; /* ns since the epoch when it was recorded (never going back) */
	uint64_t seq;  /* tells apart the records of one ns */
};

/* One record. Strings are NUL-terminated; "" means none. */
struct eos_obs_record {
	struct eos_obs_pos pos;
	enum eos_obs_type type;
	enum eos_obs_status status; /* spans */
	int64_t start_ns;    /* spans: when it began; events, samples: when (ns since epoch) */
	int64_t duration_ns; /* spans; else 0 */
	uint8_t trace_id[EOS_OBS_TRACE_ID_LEN]; /* all zero: none */
	uint64_t span_id;			/* spans: its id; events: the span it happened in */
	uint64_t parent_id;			/* spans: the parent span, 0 for a trace's root */
	const char *name;			/* "layerstack.publish", "layer.published" */
	const char *sandbox;
	const char *session;
	const char *attrs; /* a JSON object's text, or "" */
};

/* Retention: the oldest records go when either bound is passed (0: the default). */
struct eos_obs_limits {
	uint64_t max_records;
	uint64_t max_bytes; /* keys and values */
};

/* What the column family holds. */
struct eos_obs_stats {
	uint64_t records, bytes;
	struct eos_obs_pos first, last; /* all zero when empty */
	uint64_t trimmed; /* records deleted by retention since the store was created */
};

/*
 * Append n records (their positions strictly above every record's already written, and
 * increasing), then, when the records or bytes pass a bound of lim (NULL: the defaults), delete
 * the oldest records until both are at most 15/16 of their bound (so that a trim happens once
 * per sixteenth of the bound, not at every append). -EINVAL naming the record for a position
 * that does not grow or a field too long; nothing is written then. Not synced.
 */
int eos_store_obs_append(struct eos_store *st, const struct eos_obs_record *recs, size_t n,
			 const struct eos_obs_limits *lim, struct eos_error *err);

/* The counts, sizes and ends of the records (from a record kept beside them: no scan). */
int eos_store_obs_stats(struct eos_store *st, struct eos_obs_stats *ret, struct eos_error *err);

/* Called per record of a scan, borrowed for the call; a non-zero return stops the scan. */
typedef int (*eos_obs_fn)(void *ctx, const struct eos_obs_record *r);

struct eos_obs_query {
	struct eos_obs_pos from; /* the first position (inclusive); zero: the oldest */
	struct eos_obs_pos to;	 /* the end (exclusive); zero: the newest */
	bool reverse;		 /* newest first */
	unsigned types;		 /* (1 << EOS_OBS_SPAN) | …; 0: every type */
};

/*
 * Call fn for every record of q's range and types, in order. Returns 0, fn's non-zero return,
 * or -errno; a record that does not decode fails the scan with -EBADMSG naming its position.
 */
int eos_store_obs_scan(struct eos_store *st, const struct eos_obs_query *q, eos_obs_fn fn,
		       void *ctx, struct eos_error *err);
