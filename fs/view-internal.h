/* SPDX-License-Identifier: MIT */
/*
 * fs/ internals: the inode model shared by the modules of the view (doc/fs.md).
 *
 * A node is one inode of the view. A node is "lower" while it only mirrors a store entry (its
 * origin path at the view's version) and "upper" once the session changed it: then it has a
 * node record in the delta, and every directory on its primary path is upper too, holding a
 * dirent (name → inode, or a whiteout) for it. Lower nodes are created by lookup and freed when
 * the kernel forgets them. Their inode number derives from their identity (origin path, or
 * hard-link group): a re-lookup, a remount or another session of the sandbox gets the same one.
 * Only a node whose number is not its identity's (a hash collision, a node kept through a live
 * publish) has an entry in the remap table, removed with the node.
 *
 * Locks: node->lock guards every field of the node except nlookup (the table shard lock).
 * Order: a parent before its children; two unrelated directories in inode-number order; table
 * and identity shard locks are innermost and never held across a call into the store.
 */
#pragma once

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "common/hashmap.h"
#include "common/ino.h"
#include "common/mutex.h"
#include "common/path.h"

#include "fs/journal.h"
#include "fs/view.h"
#include "fs/writelog.h"

enum {
	EOS_ROOT_INO = 1,
	EOS_TABLE_SHARDS = 64,
	EOS_DIRENT_ABSENT = 0,		  /* no upper dirent: look in the lower directory */
	EOS_DIRENT_WHITEOUT = UINT64_MAX, /* deleted: hides the lower name */
	EOS_PARTIAL_MIN = 1 << 20,	  /* lower files from this size are copied up partially */
	EOS_DIRLIST_FIRST = 3,		  /* first entry cookie: "." is 1, ".." is 2 */
	EOS_TIDY_AFTER = 4096,		  /* freed nodes before their memory is given back */
	EOS_KEPT_FDS = 256,		  /* data files kept open without a handle, per view */
};

struct eos_dirlist;
struct eos_listed;

enum eos_node_flags {
	EOS_NODE_UPPER = 1 << 0,	/* has a node record in the delta */
	EOS_NODE_DATA = 1 << 1,		/* file content in the session's data file <ino> */
	EOS_NODE_OPAQUE = 1 << 2,	/* directory: lower children hidden */
	EOS_NODE_META_CHANGED = 1 << 3, /* attributes changed by the session */
	EOS_NODE_CREATED = 1 << 4,	/* created by the session (no origin) */
	EOS_NODE_DIRTY = 1 << 5,	/* in-memory record newer than the stored one */
	EOS_NODE_LOG_DIRTY = 1 << 6,	/* write log newer than the stored one */
	EOS_NODE_XATTRS = 1 << 7,	/* xattrs loaded (upper nodes: always) */
	EOS_NODE_SUBDIRS = 1 << 8,	/* directory: subdirs is known */
	EOS_NODE_GONE = 1 << 9,		/* last link removed: record deleted, data file pending */
	EOS_NODE_PARTIAL = 1 << 10,	/* data file holds only the `present` ranges (partial.c) */
	EOS_NODE_QUEUED = 1 << 11,	/* waiting for the background flusher (flusher.c) */
	EOS_NODE_REMAPPED = 1 << 12,	/* its identity is in the remap table (inode.c) */
	EOS_NODE_LISTED = 1 << 13,    /* directory: its listing was read and dropped (dirlist.c) */
	EOS_NODE_NAME_OWN = 1 << 14,  /* name is x->name (else the node's path, when it has one) */
	EOS_NODE_NO_XATTRS = 1 << 15, /* its lower entry has no xattrs (until EOS_NODE_XATTRS) */
	EOS_NODE_PERSISTED = EOS_NODE_UPPER | EOS_NODE_DATA | EOS_NODE_OPAQUE |
			     EOS_NODE_META_CHANGED | EOS_NODE_CREATED | EOS_NODE_PARTIAL,
};

/*
 * What a node keeps of its origin's store entry: what lookups below a directory (kind, floor),
 * opening a file's content, loading xattrs and a live publish's reset need, in as few bytes as a
 * file's inline content allows (there is one per looked-up lower file).
 */
struct eos_lower {
	uint64_t version;
	uint64_t floor;
	uint64_t content_size;
	struct eos_digest digest;
	uint32_t nxattrs;
	uint16_t inline_len;
	uint8_t kind;	      /* enum eos_kind */
	uint8_t content_kind; /* enum eos_content_kind */
	uint8_t inline_data[];
};

struct eos_xattr {
	char *name;
	void *value;
	size_t len;
};

/*
 * What a node keeps only once it needs it (eos_node_extend): every upper node, directory, open
 * file, symlink read, device and hard-linked file has one. A node that only mirrors a lower file
 * the kernel looked up has none: its x is a zero-valued extension (data_fd -1, shared) that no
 * one writes, so that reading any field works: its directory's odir->none, or
 * &eos_node_ext_none (read-only: a write faults) for a node of no directory.
 */
struct eos_node_ext {
	struct eos_lower *lst; /* origin's store entry (dirs: lookups; files: content) */
	char *lower;	       /* origin path when it is not odir's path and the node's name */
	/* the directory a lookup built the node in (a reference), or NULL */
	struct eos_odir *odir;
	/* directories: this one's origin path for the nodes looked up in it (a reference) */
	struct eos_odir *kids;
	char *name;	 /* EOS_NODE_NAME_OWN: the node's name (NULL: none) */
	uint64_t parent; /* primary link, for copying ancestors up */
	bool shared;	 /* a zero-valued extension of no node (eos_node_ext_none, odir->none) */
	bool fd_kept;	 /* data_fd kept open with no handle (eos_view.kept_fds) */
	int64_t atime, ctime; /* ns; a node without an extension has both equal to mtime */
	uint64_t rdev;	      /* character and block devices: makedev(major, minor) */
	uint64_t link_group;  /* origin's hard-link group */
	char *target;	      /* symlink target (loaded on first readlink for lower nodes) */
	int data_fd;	      /* open data file, or -1 */
	unsigned opens;	      /* open file handles */
	/* bumped when a live publish turns the node into a mirror of the new head (reset.c):
	 * handles opened before reopen their lower content */
	uint32_t gen;
	struct eos_hashmap dirents; /* upper directories: name → ino / EOS_DIRENT_* (u64) */
	size_t dirents_absent;	    /* EOS_DIRENT_ABSENT slots in dirents (names gone again) */
	uint64_t subdirs;	    /* directories: number of subdirectories */
	struct eos_xattr *xattrs;
	size_t nxattrs;
	struct eos_dirlist *list; /* directories: listing with stable offsets, once read */
	/* writeback mode: the operation of the open writable handles (file.c) */
	uint32_t writer_op;
	unsigned writers;
	bool writer_mixed; /* handles of more than one operation are open for writing */
	struct eos_writelog log;
	/* partial copy-up (partial.c) */
	struct eos_writelog present; /* ranges of the data file that hold the file's bytes */
	uint64_t lower_limit;	     /* lower bytes below this are valid where not present */
	struct eos_file *lower_file; /* the lower content, opened for partial reads */
	/* the write journal (journal.h) */
	uint64_t jseq;	 /* newest journal record applied (stored with the record) */
	uint8_t jcopyup; /* enum eos_jcopyup: a copy-up not yet journaled or checkpointed */
};

extern const struct eos_node_ext eos_node_ext_none;

/*
 * A lower directory's origin path, shared by the nodes looked up in it: their origin is this path
 * and their own name, so a looked-up file keeps only its name. The directory's extension holds
 * one (x->kids) while its origin stays; each node built under it holds a reference, so the
 * directory's node may go first. A node without an extension points its x at the odir's `none`
 * (shared, zero-valued, never written), which is how it finds its odir without a field of its own.
 */
struct eos_odir {
	struct eos_node_ext none;
	_Atomic uint32_t refs;
	uint32_t len; /* of path */
	uint64_t ino; /* the directory's node: its children's parent */
	/* the directory's entry at the view's version `version` (0: unknown), so that a child's
	 * entry is one lookup below it instead of a walk from the root */
	uint64_t version, floor;
	char path[]; /* "" for the root */
};

/*
 * One inode of the view: this much for every looked-up lower file (doc/fs.md, "Memory"), the
 * rest in its extension.
 */
struct eos_node {
	uint64_t ino;
	struct eos_node *hnext; /* next in its table bucket (table shard lock) */
	/* never NULL: &eos_node_ext_none or its odir's none until extended, then that extension
	 * until freed */
	struct eos_node_ext *_Atomic x;
	uint64_t size;
	int64_t mtime; /* ns */
	uint32_t uid, gid;
	uint32_t nlink;
	uint32_t nlookup; /* kernel references (table shard lock; sticks at UINT32_MAX) */
	struct eos_mutex lock;
	uint16_t mode;	/* S_IFMT | permissions */
	uint16_t flags; /* enum eos_node_flags */
	/* the name a lookup found it under, the last component of its origin ("" for others) */
	char path[];
};

struct eos_table_shard {
	pthread_mutex_t lock;
	struct eos_node **buckets; /* ino → node (nodetab.c): chains through node->hnext */
	size_t cap, count;	   /* buckets, nodes */
	struct eos_hashmap ids;	   /* remap table: identity key → ino (u64; 0: free slot) */
	size_t freed;		   /* free slots in ids: dropped once they are the majority */
};

/* A view's side of its flusher (flusher.c; struct eos_view_flusher is the thread). */
struct eos_flusher {
	struct eos_view_flusher *host; /* NULL: none (read-only and inspected views) */
	bool own;		       /* host started for this view alone */
	/* host->lock: */
	atomic_bool kicked; /* in host's queue */
	bool detached;	    /* the view is closing: never queued again */
	/* lock: */
	pthread_mutex_t lock;
	uint64_t *inos; /* queued inode numbers */
	size_t n, cap;
	bool overflow; /* a node could not be queued (no memory): checkpoint every node */
};

/* pending.c: records journaled, not yet in the store (see there) */
enum {
	EOS_PENDING_COMMIT_BYTES = 256 << 10, /* pending records this large are written (flusher) */
};
/* Key to its newest value or deletion (struct eos_rec, pending.c). Zero-filled is empty. */
struct eos_recmap {
	struct eos_hashmap map;
	size_t bytes; /* keys and values held */
};
/* One record of a sorted recmap; borrowed from the map. */
struct eos_recent {
	const void *key;
	size_t klen;
	bool del;
	const void *val;
	size_t vlen;
};
struct eos_pending {
	pthread_mutex_t lock; /* m, lost */
	pthread_mutex_t commit_lock;
	struct eos_recmap m;
	bool active; /* the journal has started: record changes go through it and m */
	bool lost;   /* m could not take records (no memory): the journal is never deleted */
};

/* A small cache of pid → operation (file.c): one /proc read per process and second. */
enum {
	EOS_OPCACHE_SLOTS = 64,
	EOS_OPCACHE_TTL_NS = 1000000000
};
struct eos_opcache_slot {
	pid_t pid;
	uint32_t op;
	int64_t expires_ns;
};

/*
 * The view-wide gate (gate.c). Requests that change the view hold `writers` shared (then `all`
 * shared); every other request holds `all` shared. A live publish or a fork holds `writers`
 * exclusively while it captures the delta and the gate decides (reads go on), and a live publish
 * also holds `all` exclusively while it resets the nodes. Both locks prefer writers, so a
 * request never takes either twice: only the FUSE handlers (fs/ops.c) and the flusher take them.
 */
struct eos_gate {
	pthread_rwlock_t writers;
	pthread_rwlock_t all;
};

struct eos_view {
	struct eos_store *store;
	char *sandbox;
	char *session; /* NULL: read-only */
	char *data_dir;
	int data_dirfd;
	uint64_t version;
	struct eos_tree *tree; /* the store at version, resolved once (replaced by a reset) */
	char *self_owner;      /* "workspace_session:<name>" */
	eos_view_resolve_fn resolve;
	void *resolve_ctx;
	_Atomic uint64_t next_ino; /* below EOS_INO_DERIVED */
	_Atomic size_t remapped;   /* identities in the remap table (inode.c) */
	struct eos_table_shard shards[EOS_TABLE_SHARDS];
	struct eos_table_shard idshards[EOS_TABLE_SHARDS];
	struct eos_opstable ops; /* operation ids of write logs */
	pthread_mutex_t links_lock;
	bool links_loaded;
	bool no_opendir;  /* the kernel skips opendir/releasedir (fs/ops.c) */
	bool writeback;	  /* writeback cache asked for, and granted by the kernel at init */
	bool inspect;	  /* loaded for a check: nothing is ever written (eos_view_options) */
	uint32_t self_op; /* operation index of the session itself */
	struct eos_flusher flusher;
	struct eos_journal journal;
	struct eos_pending pending;
	pthread_mutex_t opcache_lock;
	struct eos_opcache_slot opcache[EOS_OPCACHE_SLOTS];
	struct eos_hashmap links; /* be64 link group → members at the version (links.c) */
	_Atomic uint64_t freed;	  /* nodes freed since the last eos_view_tidy() gave memory back */
	_Atomic size_t kept_fds;  /* data files kept open between handle-less requests */
	struct eos_gate gate;	  /* live publish and fork (gate.c) */
	/* a live publish committed but the view could not follow: changes are refused (EIO) and
	 * nothing is written again, the store's session is the truth (reopen the view) */
	atomic_bool broken;
	pthread_mutex_t mounts_lock;
	/* every open handle, so that closing the view frees those whose RELEASE never came (a mount
	 * torn down while files were open, a release still in flight at the unmount) */
	pthread_mutex_t handles_lock;
	struct eos_handle *handles;
	struct eos_view_mount **mounts; /* every mount serving the view (fs/ops.c) */
	size_t nmounts, mounts_cap;
};

/* An open file. */
struct eos_handle {
	struct eos_node *node;
	struct eos_file *lower; /* lower content, while the node has no data file */
	uint32_t op;		/* write log operation index, once resolved */
	bool op_resolved;
	bool writer;	    /* counted in node->writers */
	pid_t pid;	    /* the opener, resolved to an operation at the first write */
	int flags;	    /* open flags */
	uint32_t lower_gen; /* node->gen that `lower` was opened for */
	/* one request's on a file the kernel opened without asking (eos_fs_transient_begin):
	 * not in v->handles; reads the node's lower content under its lock */
	bool transient;
	struct eos_handle *prev, *next; /* in v->handles */
};

/* nodetab.c: one shard of the node table (its lock held, or the view not served) */
struct eos_node *eos_table_find(const struct eos_table_shard *s, uint64_t ino);
/* Insert n: 0, -EEXIST when its number is taken, -ENOMEM. */
int eos_table_insert(struct eos_table_shard *s, struct eos_node *n);
/* Take n out; false when it was not in s. */
bool eos_table_remove(struct eos_table_shard *s, struct eos_node *n);
struct eos_node_iter {
	size_t bucket;
	struct eos_node *next;
};
/* The next node of s (start with a zeroed it), or NULL at the end. The node returned may be
 * removed and freed before the next call; no other change may happen during the walk. */
struct eos_node *eos_table_next(const struct eos_table_shard *s, struct eos_node_iter *it);
void eos_table_release(struct eos_table_shard *s);

/* node.c and inode.c: nodes and the node table */
/* A node with an extension (created, loaded from the delta, the root), or NULL without memory. */
struct eos_node *eos_node_new(uint64_t ino);
/* A node of no extension named name, looked up in directory d (a reference taken over). */
struct eos_node *eos_node_new_lower(uint64_t ino, struct eos_odir *d, const char *name);
/* The odir of directory p's (locked, extended) children, with a reference for the caller;
 * NULL without memory or origin. */
struct eos_odir *eos_node_kids(struct eos_view *v, struct eos_node *p);
/* Another reference to d (returned). */
struct eos_odir *eos_odir_ref(struct eos_odir *d);
void eos_odir_unref(struct eos_odir *d);
void eos_node_free(struct eos_node *n);
static inline bool
eos_node_extended(const struct eos_node *n)
{
	return !n->x->shared;
}
/* The directory n was looked up in (a reference n holds), or NULL. */
static inline struct eos_odir *
eos_node_odir(const struct eos_node *n)
{
	struct eos_node_ext *x = atomic_load_explicit(&n->x, memory_order_acquire);

	if (!x->shared)
		return x->odir;
	return x == &eos_node_ext_none
		       ? NULL
		       : (struct eos_odir *)((char *)x - offsetof(struct eos_odir, none));
}
/* n's name (NULL: none). */
static inline const char *
eos_node_name(const struct eos_node *n)
{
	return n->flags & EOS_NODE_NAME_OWN ? n->x->name : n->path[0] ? n->path : NULL;
}
/* n's primary parent (0: none). */
static inline uint64_t
eos_node_parent(const struct eos_node *n)
{
	const struct eos_odir *d;

	if (eos_node_extended(n))
		return n->x->parent;
	d = eos_node_odir(n);
	return d ? d->ino : 0;
}
/* Give n (locked, or not yet shared) its extension, with its origin's store entry (x->lst)
 * when it has an origin: 0, -ENOMEM, or the store's error. Call it before reading x->lst. */
int eos_node_extend(struct eos_view *v, struct eos_node *n);
/* The extension alone (nothing read from the store): 0 or -ENOMEM. */
int eos_node_extend_bare(struct eos_node *n);
enum {
	EOS_LOWER_BUF = EOS_PATH_MAX + 1,
};
/* n's origin path at the view version (x->lower, else its odir's path and its name, composed in
 * buf of EOS_LOWER_BUF bytes), or NULL when it has none. */
const char *eos_node_lower(const struct eos_node *n, char *buf);
/* Whether n's origin is path (without composing it). */
bool eos_node_origin_is(const struct eos_node *n, const char *path);
/* Whether n has an origin. */
bool eos_node_has_lower(const struct eos_node *n);
/* Set n's origin path to a copy of path (NULL: none), extending n unless it is its path
 * already: 0 or -ENOMEM. */
int eos_node_set_lower(struct eos_node *n, const char *path);
/* Name n (extended) name (taken over; NULL: none). */
void eos_node_set_name(struct eos_node *n, char *name);
/* Set the primary parent of n (extended). */
static inline void
eos_node_set_parent(struct eos_node *n, uint64_t parent)
{
	assert(eos_node_extended(n));
	n->x->parent = parent;
}
static inline int64_t
eos_node_atime(const struct eos_node *n)
{
	return eos_node_extended(n) ? n->x->atime : n->mtime;
}
static inline int64_t
eos_node_ctime(const struct eos_node *n)
{
	return eos_node_extended(n) ? n->x->ctime : n->mtime;
}
/* Add count kernel references (table shard lock held). */
static inline void
eos_node_nlookup_add(struct eos_node *n, uint64_t count)
{
	n->nlookup = count >= UINT32_MAX - n->nlookup ? UINT32_MAX : n->nlookup + (uint32_t)count;
}
static inline void
eos_node_lock(struct eos_node *n)
{
	eos_mutex_lock(&n->lock);
}
static inline void
eos_node_unlock(struct eos_node *n)
{
	eos_mutex_unlock(&n->lock);
}
/* The node of ino, which the kernel references (NULL when unknown: a protocol error). */
struct eos_node *eos_node_get(struct eos_view *v, uint64_t ino);
/* Insert n (ino must be free). */
int eos_node_insert(struct eos_view *v, struct eos_node *n);
/* Take n out of the table and free it (a node whose creation failed: nothing references it). */
void eos_node_remove(struct eos_view *v, struct eos_node *n);
/* The node of ino with one kernel reference added (drop it with eos_node_forget), or NULL. */
struct eos_node *eos_node_get_ref(struct eos_view *v, uint64_t ino);
/* Add kernel references to an existing node. */
void eos_node_ref(struct eos_view *v, struct eos_node *n, uint64_t count);
/* Drop kernel references; frees lower or unlinked nodes reaching zero. */
void eos_node_forget(struct eos_view *v, uint64_t ino, uint64_t count);
/* The inode number the identity has in this view: its remap, else the derived one. */
int eos_node_identity(struct eos_view *v, const char *path, uint64_t group, uint64_t *ret);
/* Whether n (with an unchanging identity) is the node of the identity. */
bool eos_node_has_identity(const struct eos_node *n, const char *path, uint64_t group);
/* n (locked, in the table) is the node of its identity: remap it when its number is not the
 * derived one (a node loaded from the delta, or kept through a live publish). */
int eos_node_identity_set(struct eos_view *v, struct eos_node *n);
/* Empty the remap table (a live publish's reset, before the kept nodes set theirs again). */
void eos_node_identities_reset(struct eos_view *v);
uint64_t eos_node_alloc_ino(struct eos_view *v);
/* Fill st from n (caller holds n->lock). */
void eos_node_stat(const struct eos_node *n, struct stat *st);
/* Whether the node of lower entry st needs its extension from its creation on: directories,
 * hard-linked files, devices. */
bool eos_node_lower_extended(const struct eos_stat *st);
/* Node for a lower store entry (new or existing for its identity), with one kernel reference
 * added when ref. */
int eos_node_from_lower(struct eos_view *v, struct eos_node *parent, const char *name,
			const struct eos_stat *lst, bool ref, struct eos_node **ret);
/* What a node keeps of store entry st (malloc'd: free()), or NULL without memory. */
struct eos_lower *eos_lower_new(const struct eos_stat *st);
/* The directory stat eos_tree_lookup_child() needs, from l. */
void eos_lower_dir(const struct eos_lower *l, struct eos_stat *ret);
/* The content of a lower file, from l. */
void eos_lower_content(const struct eos_lower *l, struct eos_content *ret);
/* Open the lower content of file n (which has lst). Caller owns *ret. */
int eos_lower_open(struct eos_view *v, const struct eos_node *n, struct eos_file **ret);
/* The S_IFMT bits of a store kind, as the view shows it. */
uint32_t eos_node_kind_type(enum eos_kind k);
/* Set type, attributes, size and times of n from a store stat (and its link group and device
 * number when extended: an unextended node has neither). */
void eos_node_fill_lower(struct eos_node *n, const struct eos_stat *lst);
/* n (extended) changed now: ctime, and mtime with mtime. */
void eos_node_touch(struct eos_node *n, bool mtime);
struct timespec eos_ns_to_ts(int64_t ns);
int64_t eos_ts_to_ns(struct timespec ts);
int64_t eos_node_now_ns(void);
static inline bool
eos_node_is_dir(const struct eos_node *n)
{
	return S_ISDIR(n->mode);
}

/* dir.c: names */
/* Resolve name in directory p (locked) to its node (created for lower entries); with ref, one
 * kernel reference is added atomically. -ENOENT when absent. */
int eos_dir_child(struct eos_view *v, struct eos_node *p, const char *name, bool ref,
		  struct eos_node **ret);
/* eos_dir_child for a name p's listing gave with its lower attributes l: no store read. */
int eos_dir_child_listed(struct eos_view *v, struct eos_node *p, const char *name,
			 const struct eos_listed *l, bool ref, struct eos_node **ret);
/* Whether the lower directory of p has name (p locked). */
bool eos_dir_lower_has(struct eos_view *v, struct eos_node *p, const char *name);
/* Set the upper dirent name of p (locked) to value (ino, or EOS_DIRENT_*) in memory, once its
 * record is written (txn.c); the slot must exist already. kept: name showed value already, with
 * its type (a copy-up in place), so a listing p dropped needs no taking again. */
void eos_dir_apply(struct eos_view *v, struct eos_node *p, const char *name, uint64_t value,
		   bool kept);
/* The slot of name in p's (locked) dirents, inserted as absent when new. */
int eos_dir_slot(struct eos_node *p, const char *name);
/* Drop p's (locked) absent dirents once they are the majority (a create and delete storm). */
void eos_dir_tidy(struct eos_node *p);
/* Make sure p->subdirs is known (p locked). */
int eos_dir_count_subdirs(struct eos_view *v, struct eos_node *p);

/* What a listing keeps of a lower entry, for readdirplus to build its node without a lookup. */
struct eos_listed {
	uint64_t size;
	int64_t mtime_ns;
	uint32_t mode, uid, gid, nxattrs;
	uint8_t kind; /* enum eos_kind */
};
struct eos_dirent_snap {
	char *name;
	uint64_t ino;
	uint32_t type;		  /* S_IFMT bits */
	uint64_t cookie;	  /* readdir offset of the entry after this one (dirlist.c) */
	struct eos_listed *lower; /* a lower entry's attributes (owned; NULL: look it up) */
};
struct eos_dir_snapshot {
	struct eos_dirent_snap *v;
	size_t n, cap;
};
/* The merged listing of p (locked). */
int eos_dir_snapshot(struct eos_view *v, struct eos_node *p, struct eos_dir_snapshot *ret);
void eos_dir_snapshot_release(struct eos_dir_snapshot *s);
/* dirlist.c. Up to max entries of p with a cookie above off (locks p); caller releases. Lower
 * entries come with their attributes until a read past them (a read from off tells that the
 * kernel has every entry up to off). */
int eos_dirlist_read(struct eos_view *v, struct eos_node *p, uint64_t off, size_t max,
		     struct eos_dir_snapshot *ret);
/* p (locked) is about to change: take again the listing it dropped, if any. */
void eos_dirlist_prepare(struct eos_view *v, struct eos_node *p);
/* Name now maps to ino of the given type, or is gone (ino 0). p locked. */
void eos_dirlist_update(struct eos_node *p, const char *name, uint64_t ino, uint32_t type);
void eos_dirlist_free(struct eos_dirlist *l);
/* Whether p (locked) has no visible entries. */
int eos_dir_is_empty(struct eos_view *v, struct eos_node *p);

/* delta.c: persistence */
int eos_delta_batch(struct eos_view *v, struct eos_session_batch **ret);
int eos_delta_put_node(struct eos_view *v, struct eos_node *n, struct eos_session_batch *b);
int eos_delta_put_dirent(struct eos_node *p, const char *name, uint64_t value,
			 struct eos_session_batch *b);
int eos_delta_put_log(struct eos_view *v, struct eos_node *n, struct eos_session_batch *b);
int eos_delta_put_op(uint32_t index, const char *owner, struct eos_session_batch *b);
int eos_delta_delete_node(struct eos_node *n, struct eos_session_batch *b);
/* Stage n's (locked) record after a change: put while linked, deleted at nlink 0. */
int eos_delta_node_changed(struct eos_view *v, struct eos_node *n, struct eos_session_batch *b);
/*
 * How a batch reaches the store once the journal has started (before that, and without a
 * session journal, every batch is written as it comes, synced for EOS_COMMIT_SYNC):
 * JOURNAL, a change: its image is appended to the journal, its records join the pending ones;
 * CHECKPOINT, records that hold what the journal holds already: they join the pending ones;
 * SYNC: they join the pending ones, which are written in one synced batch;
 * DIRECT: written as it comes (records the pending ones never hold: the journal's nonce).
 */
enum eos_commit {
	EOS_COMMIT_JOURNAL,
	EOS_COMMIT_CHECKPOINT,
	EOS_COMMIT_SYNC,
	EOS_COMMIT_DIRECT
};
/* Write b (errors are logged: the kernel already saw the operation succeed). */
int eos_delta_commit(struct eos_view *v, struct eos_session_batch *b, enum eos_commit how);
/* The session's journal nonce only ('J' sorts first). */
int eos_delta_load_nonce(struct eos_view *v, struct eos_error *err);
/* Load the records, with the journal's images (sorted, newest values) over them. */
int eos_delta_load(struct eos_view *v, const struct eos_recent *over, size_t nover,
		   struct eos_error *err);
/* Persist n (locked) when dirty. */
int eos_delta_flush_node(struct eos_view *v, struct eos_node *n, enum eos_commit how);

/* pending.c */
/* Add the records of a batch's ops (eos_session_batch_ops), later values winning. */
int eos_recmap_add(struct eos_recmap *m, const void *ops, size_t len);
/* Every record, sorted by key (a bytewise order, as the store's). Caller frees *ret. */
int eos_recmap_sorted(struct eos_recmap *m, struct eos_recent **ret, size_t *ret_n);
void eos_recmap_release(struct eos_recmap *m);
void eos_pending_init(struct eos_pending *p);
void eos_pending_release(struct eos_pending *p);
/* Add a journaled batch's ops (the caller holds the journal's append lock). */
void eos_pending_add_locked(struct eos_view *v, const void *ops, size_t len);
/* Take m's records (older than any already pending); m ends empty. */
void eos_pending_absorb(struct eos_view *v, struct eos_recmap *m);
/* Write every pending record to the store in one batch (sync: synced). */
int eos_pending_commit(struct eos_view *v, bool sync);
/* Whether the pending records are large enough to be written now (flusher thread). */
bool eos_pending_due(struct eos_view *v);
/* Write them if so: a checkpoint of many nodes keeps its memory bounded. */
int eos_pending_commit_due(struct eos_view *v);
/* Drop them: a live publish replaced the records they would have written (reset.c). */
void eos_pending_discard(struct eos_view *v);

/* txn.c: a namespace operation's records, written before its change is visible */
enum {
	EOS_TXN_NODES = 6,
	EOS_TXN_DIRENTS = 4,
};
struct eos_txn_node {
	struct eos_node *n;
	unsigned flags;
	uint32_t nlink, mode, uid, gid;
	uint64_t size, parent, subdirs;
	int64_t atime, mtime, ctime; /* ns */
	uint8_t jcopyup;
	char *name;
	bool logs; /* log, present and lower_limit saved too (a truncation) */
	struct eos_writelog log, present;
	uint64_t lower_limit;
};
struct eos_txn_dirent {
	struct eos_node *p;
	char *name;
	uint64_t value;
	bool kept; /* the name keeps the inode and type it shows: listings stay as they are */
};
struct eos_txn {
	struct eos_view *v;
	struct eos_session_batch *b;
	struct eos_txn_node nodes[EOS_TXN_NODES];
	size_t nnodes;
	struct eos_txn_dirent dirents[EOS_TXN_DIRENTS];
	size_t ndirents;
};
int eos_txn_begin(struct eos_view *v, struct eos_txn *t);
/* Remember n's (locked) fields before changing them: put back when the operation fails. */
int eos_txn_save(struct eos_txn *t, struct eos_node *n);
/* Also save n's write log and present ranges (after eos_txn_save; for truncations). */
int eos_txn_save_logs(struct eos_txn *t, struct eos_node *n);
/* Stage p's dirent name → value (ino or EOS_DIRENT_*): in memory only after the write. */
int eos_txn_dirent(struct eos_txn *t, struct eos_node *p, const char *name, uint64_t value);
/* eos_txn_dirent for the node name shows already (a lower node copied up in place). */
int eos_txn_dirent_kept(struct eos_txn *t, struct eos_node *p, const char *name, uint64_t ino);
/* Stage the removal of p/name: a whiteout when the lower has it, else no dirent. */
int eos_txn_drop(struct eos_txn *t, struct eos_node *p, const char *name);
/* Save and stage n's record after a change: put while linked, deleted at nlink 0. */
int eos_txn_node(struct eos_txn *t, struct eos_node *n);
/* Write the batch, then apply the dirents; on failure restore every saved node. Ends t. */
int eos_txn_commit(struct eos_txn *t);
/* Restore every saved node and end t (the operation failed before its write). */
void eos_txn_abort(struct eos_txn *t);
/* End t keeping its changes, which the caller recorded another way (the journal); t->b unused. */
void eos_txn_keep(struct eos_txn *t);
/* Commit when r == 0, else abort; returns the outcome. */
int eos_txn_end(struct eos_txn *t, int r);

/* copyup.c */
/* Give n a node record and dirents on its primary path (locks ancestors, not n). */
int eos_copyup_meta(struct eos_view *v, struct eos_node *n);
/* The same for an operation that frees space (unlink): its records go in at any fill level. */
int eos_copyup_meta_for(struct eos_view *v, struct eos_node *n, bool freeing);
/*
 * A change to make to n in its own copy-up's batch (one store write instead of two): change()
 * runs with n locked, after n was marked upper and before its record is encoded, and cannot
 * fail; done tells whether the copy-up happened and was written with it. When n was upper
 * already, nothing is called and done stays false: the caller makes the change itself.
 */
struct eos_copyup_then {
	void (*change)(struct eos_node *n, void *ctx);
	void *ctx;
	bool done;
};
int eos_copyup_meta_then(struct eos_view *v, struct eos_node *n, bool freeing,
			 struct eos_copyup_then *then);
/* Mark n (locked) upper, its xattrs loaded; the caller stages its record (no dirents). */
int eos_copyup_record(struct eos_view *v, struct eos_node *n);
/* Give n (locked, upper) a data file; with truncate, an empty one instead of the content. */
int eos_copyup_data(struct eos_view *v, struct eos_node *n, bool truncate);
/* Open n's data file when not open (n locked). */
int eos_data_open(struct eos_view *v, struct eos_node *n);
void eos_data_path(const struct eos_node *n, char *out, size_t size);
/* Set st_blocks from n's (locked) data file, when it has one. */
void eos_data_blocks(struct eos_view *v, const struct eos_node *n, struct stat *st);

/* flusher.c */
/* Attach v to host (NULL: start a flusher of its own). */
int eos_flusher_start(struct eos_view *v, struct eos_view_flusher *host);
/* Detach v, waiting for work on it to end (closing the view writes every node afterwards). */
void eos_flusher_stop(struct eos_view *v);
/* Ask the flusher to work on v soon (its journal is due for rotation, or it freed many nodes). */
void eos_flusher_kick(struct eos_view *v);
/* After a read of stored content: kick the thread when the store has background work. */
void eos_flusher_after_read(struct eos_view *v);
/* Queue n (locked), which has journal records, for the next checkpoint. */
void eos_flusher_queue(struct eos_view *v, struct eos_node *n);
/*
 * Take the queue (*ret: malloc'd inode numbers; NULL when empty). True when a node could not be
 * queued since the last take (no memory): the caller must then checkpoint every node.
 */
bool eos_flusher_take(struct eos_view *v, uint64_t **ret, size_t *ret_n);
/* Write the records of these nodes (failures stay queued); true when every write succeeded. */
bool eos_flusher_checkpoint(struct eos_view *v, const uint64_t *inos, size_t n);

/* gate.c */
void eos_gate_init(struct eos_gate *g);
void eos_gate_destroy(struct eos_gate *g);
/* A request that changes the view: enter before, leave after its reply (also when enter says
 * false: the view is broken, refuse the request with EIO). */
bool eos_gate_write_enter(struct eos_view *v);
void eos_gate_write_leave(struct eos_view *v);
/* Any other request (always true). */
bool eos_gate_read_enter(struct eos_view *v);
void eos_gate_read_leave(struct eos_view *v);
/* Stop the requests that change the view (and the flusher); wait for those running. */
void eos_gate_close_writers(struct eos_view *v);
/* Also stop every other request (after eos_gate_close_writers). */
void eos_gate_close_all(struct eos_view *v);
/* Undo eos_gate_close_all (when taken) and eos_gate_close_writers. */
void eos_gate_open(struct eos_view *v, bool all);

/*
 * What a reset asks the kernel to forget (reset.c fills it, fs/ops.c sends it to every mount
 * after the gate is open again: a notification sent while a request waits for the gate could
 * wait for that request's kernel locks).
 */
struct eos_inval_entry {
	uint64_t parent;
	char *name;
};
struct eos_inval {
	uint64_t *inos;
	size_t n, cap;
	struct eos_inval_entry *entries;
	size_t nentries, entries_cap;
};
void eos_inval_release(struct eos_inval *iv);
/* ops.c: send iv to every mount of v. */
void eos_view_invalidate(struct eos_view *v, const struct eos_inval *iv);
/* ops.c: have the kernel write its cached writes of every mount of v (writeback; gate open). */
void eos_view_sync_mounts(struct eos_view *v);

/* reset.c: after the store moved the session to `version` with an empty delta (a live publish),
 * make the view show that version: every node the kernel knows keeps its inode number and
 * becomes a mirror of its path at the new version, or a detached node when the path is gone.
 * Gate closed to all. Fills iv. */
int eos_view_reset(struct eos_view *v, uint64_t version, struct eos_inval *iv,
		   struct eos_error *err);
/* view.c: give a fresh session's root its record (the root of a session is always upper). */
int eos_view_root_upper(struct eos_view *v);
/* journal.c: a new incarnation (new nonce, new generation) after the data directory was reset. */
int eos_journal_restart(struct eos_view *v, struct eos_error *err);
/* publish.c: stage v's delta into p (v's version must be p's base); skipped sockets are
 * returned in *ret_skipped (caller frees each and the array). */
int eos_view_stage(struct eos_view *v, struct eos_publish *p, char ***ret_skipped,
		   size_t *ret_nskipped, struct eos_error *err);

/* view.c: housekeeping on the flusher thread (memory of freed nodes). */
void eos_view_tidy(struct eos_view *v);

/* links.c: members of a store hard-link group at the view version (1 when unknown). */
uint32_t eos_links_count(struct eos_view *v, uint64_t group);
/* Call fn for every file of a hard-link group at the view version (one walk of the tree); fn
 * returns 0, or -errno to stop the walk with that error. */
typedef int (*eos_links_fn)(void *ctx, const char *path, const struct eos_stat *st);
int eos_links_walk(struct eos_view *v, eos_links_fn fn, void *ctx);

/* partial.c: n locked unless said otherwise */
int eos_partial_begin(struct eos_view *v, struct eos_node *n, int fd);
/* Read [off, off + size) merging data file and lower content; locks n. */
ssize_t eos_partial_read(struct eos_view *v, struct eos_node *n, void *buf, size_t size,
			 uint64_t off);
int eos_partial_reserve(struct eos_node *n);
void eos_partial_wrote(struct eos_node *n, uint64_t start, uint64_t end);
void eos_partial_truncate(struct eos_node *n, uint64_t size);
/* Copy every missing lower byte into the data file; the node is an ordinary copy after. */
int eos_partial_flatten(struct eos_view *v, struct eos_node *n);

/* pathops.c: remove the temporaries a file write killed half-way left (at open, no mount). */
void eos_view_path_discard_temps(struct eos_view *v);

/* xattr.c (these lock n) */
enum {
	XATTR_CREATE_FLAG = 1,
	XATTR_REPLACE_FLAG = 2
};							    /* as XATTR_CREATE/REPLACE */
int eos_xattr_load(struct eos_view *v, struct eos_node *n); /* n locked */
void eos_xattrs_free(struct eos_node *n);
ssize_t eos_xattr_get(struct eos_view *v, struct eos_node *n, const char *name, void *buf,
		      size_t size);
ssize_t eos_xattr_list(struct eos_view *v, struct eos_node *n, char *buf, size_t size);
int eos_xattr_set(struct eos_view *v, struct eos_node *n, const char *name, const void *value,
		  size_t len, int flags);

/* The caller of a request. */
struct eos_ctx {
	uid_t uid;
	gid_t gid;
	pid_t pid;
};

/* namespace.c: operations on names (take the locks they need). New nodes carry one reference. */
int eos_fs_lookup(struct eos_view *v, struct eos_node *p, const char *name, struct eos_node **ret);
/* The same for an entry p's listing gave with its lower attributes (readdirplus). */
int eos_fs_lookup_listed(struct eos_view *v, struct eos_node *p, const char *name,
			 const struct eos_listed *lower, struct eos_node **ret);
int eos_fs_make(struct eos_view *v, const struct eos_ctx *ctx, struct eos_node *p, const char *name,
		uint32_t mode, const char *target, struct eos_node **ret);
/*
 * A regular file, fifo, socket or device (rdev; the kernel asks for one only for a caller with
 * CAP_MKNOD, and the mount is nodev). -EINVAL for any other type.
 */
int eos_fs_mknod(struct eos_view *v, const struct eos_ctx *ctx, struct eos_node *p,
		 const char *name, uint32_t mode, uint64_t rdev, struct eos_node **ret);
int eos_fs_link(struct eos_view *v, struct eos_node *n, struct eos_node *p, const char *name);
int eos_fs_unlink(struct eos_view *v, struct eos_node *p, const char *name, bool dir);
enum {
	EOS_RENAME_NOREPLACE = 1 << 0,
	EOS_RENAME_EXCHANGE = 1 << 1
};
int eos_fs_rename(struct eos_view *v, struct eos_node *p1, const char *n1, struct eos_node *p2,
		  const char *n2, unsigned flags);
int eos_fs_readlink(struct eos_view *v, struct eos_node *n, char **ret);
/* Attributes of n, with the subdirectory count of directories resolved. */
int eos_fs_getattr(struct eos_view *v, struct eos_node *n, struct stat *st);

/* file.c */
enum eos_setattr {
	EOS_SET_MODE = 1 << 0,
	EOS_SET_UID = 1 << 1,
	EOS_SET_GID = 1 << 2,
	EOS_SET_SIZE = 1 << 3,
	EOS_SET_ATIME = 1 << 4,
	EOS_SET_MTIME = 1 << 5,
	EOS_SET_ATIME_NOW = 1 << 6,
	EOS_SET_MTIME_NOW = 1 << 7,
	EOS_SET_CTIME = 1 << 8,
};
int eos_fs_setattr(struct eos_view *v, struct eos_node *n, const struct stat *attr, unsigned valid,
		   struct stat *out);
int eos_fs_open(struct eos_view *v, const struct eos_ctx *ctx, struct eos_node *n, int flags,
		struct eos_handle **ret);
/* Whether the store's filesystem can take bytes more of session data (0 or -ENOSPC). */
int eos_fs_room(struct eos_view *v, uint64_t bytes);
/* statfs of the view: the store's filesystem, its free space less eos' reserve. */
struct statvfs;
int eos_fs_statfs(struct eos_view *v, struct statvfs *st);
/* The write log index of the operation pid belongs to (the session's when none claims it). */
uint32_t eos_fs_operation(struct eos_view *v, pid_t pid);
/* The data file to read from directly (>= 0), or -1: read with eos_fs_read. */
int eos_fs_read_fd(struct eos_handle *h);
ssize_t eos_fs_read(struct eos_view *v, struct eos_handle *h, void *buf, size_t size, uint64_t off);
ssize_t eos_fs_write(struct eos_view *v, struct eos_handle *h, const void *buf, size_t size,
		     uint64_t off);
int eos_fs_release(struct eos_view *v, struct eos_handle *h);
/*
 * A file the kernel opened without an OPEN (the mount answered ENOSYS: fs/ops.c): h becomes a
 * handle for one request by process pid, read-write (the kernel checked the file's mode), its
 * writes attributed to pid's operation; n counts as open until eos_fs_transient_end, so its
 * data file stays open for the reply. Between requests the data file may stay open, up to a
 * bound per view (EOS_KEPT_FDS).
 */
int eos_fs_transient_begin(struct eos_view *v, struct eos_node *n, pid_t pid, struct eos_handle *h);
void eos_fs_transient_end(struct eos_view *v, struct eos_handle *h);
/* Close n's (locked) data file, whether a handle or a handle-less request left it open. */
void eos_data_close(struct eos_view *v, struct eos_node *n);
int eos_fs_fsync(struct eos_view *v, struct eos_node *n, bool datasync);
int eos_fs_fallocate(struct eos_view *v, struct eos_handle *h, int mode, uint64_t off,
		     uint64_t len);
ssize_t eos_fs_copy_range(struct eos_view *v, struct eos_handle *in, uint64_t off_in,
			  struct eos_handle *out, uint64_t off_out, size_t len);
int64_t eos_fs_lseek(struct eos_view *v, struct eos_handle *h, int64_t off, int whence);

/*
 * owners.c: the owners a mount shows and the privileges they carry (doc/fs.md "Owners"),
 * applied at the FUSE boundary only (fs/ops.c): the rest of the view keeps recorded ids.
 */
struct eos_owners {
	bool squash;
	uint32_t uid, gid;		   /* squash: shown for every recorded owner */
	uint32_t sandbox_uid, sandbox_gid; /* squash: recorded for the user's new nodes */
};
/* Resolve mode for this process; the sandbox's owner is the root node's now. */
void eos_owners_init(struct eos_view *v, enum eos_view_owners mode, struct eos_owners *ret);
/* Recorded → shown, in an attribute reply. */
void eos_owners_show(const struct eos_owners *o, struct stat *st);
/* The ids of a creating request → the ids to record. */
void eos_owners_creator(const struct eos_owners *o, struct eos_ctx *ctx);
/* valid without the uid or gid changes that would record nothing new (enum eos_setattr). */
unsigned eos_owners_setattr(const struct eos_owners *o, const struct stat *attr, unsigned valid);
/*
 * n was opened with O_TRUNC by process pid: clear its set-ID bits as the kernel does for a
 * truncate by a caller without CAP_FSETID (with FUSE_CAP_ATOMIC_O_TRUNC the kernel leaves that
 * to the view, and libfuse 3.14 has no HANDLE_KILLPRIV_V2 to tell the view who lacks it).
 */
int eos_owners_truncated(struct eos_view *v, struct eos_node *n, pid_t pid);
/* mode without the set-ID bits a write, truncate or chown clears (as the kernel's
 * should_remove_suid: set-group-ID only with group execute; directories keep both). */
uint32_t eos_owners_killed_mode(uint32_t mode);
/* Clear n's set-ID bits as eos_owners_killed_mode() says (with FUSE_HANDLE_KILLPRIV_V2 the
 * kernel flags the requests that must, fs/fuse-mount.c): 1 when the mode changed, 0, -errno. */
int eos_owners_kill_setid(struct eos_view *v, struct eos_node *n);
