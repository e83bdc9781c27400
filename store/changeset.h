/* SPDX-License-Identifier: MIT */
/*
 * store/changeset: internals of change sets (eos_changeset_* in store/store.h), shared by
 * store/changeset.c (staging) and store/commit.c (commit). Never included outside store/ and
 * tests/.
 *
 * Staging. eos_changeset_new() resolves the sandbox, pins the store (eos_store_pin(); free
 * unpins, so squash, destroy and gc cannot delete chunks while the change set lives) and creates
 * a content writer. put_file_mem/fd hash, chunk, compress and write chunks at once in the
 * caller's thread without any store lock. Staging is thread-safe: cs->lock protects the staged
 * op list, the path map and the state; content work runs outside it. Each op records a path
 * (copied, checked with eos_path_check(); the root "" only for mkdir and set_attr of an existing
 * sandbox, whose root is otherwise untouchable), its kind, attributes, content, symlink target or
 * link target, the opaque flag and xattr edits. A path staged twice is -EEXIST "'p' is staged
 * twice". A new sandbox (eos_changeset_new_sandbox()) gets id "eos-" + 12 random hex digits when
 * none is given; its root directory takes the given attributes (NULL: 0755, the caller's uid
 * and gid, now).
 *
 * Commit (eos_changeset_commit()), under st->write_lock:
 *  1. Head H (0 for a new sandbox, whose id must not exist: -EEXIST "sandbox 'x' exists");
 *     expected_head != 0 and != H is -ESTALE "head of sandbox 'x' is L000005, expected L000003".
 *     The new version is V = H + 1.
 *  2. Ops are sorted by path in byte order (parents precede their children). For each op the
 *     state "before" is its entry at H seen through this change set: a path with an ancestor that
 *     this change set removes, turns into a non-directory or gives a new floor (opaque mkdir, or
 *     mkdir where no directory was) has no "before". All reads use one snapshot.
 *  3. Validation: the parent must be a directory after this change set (at H or staged), else
 *     -ENOENT "parent 'a/b' of 'a/b/c' does not exist" / -ENOTDIR "… is not a directory"; a path
 *     staged below a path this change set removes or turns into a non-directory is -EINVAL naming
 *     both.
 *  4. Records at V, per op:
 *     put_file  FILE with the content and attr, link group 0, xattrs = the staged ones.
 *     mkdir     DIR; keeps the floor of a directory that was there (unless opaque), else
 *               floor = V (older children become invisible). Kept directories keep their xattrs.
 *     symlink   SYMLINK, target 1..4095 bytes, size = its length.
 *     mknod     FIFO, CHR or BLK with its rdev (devices only), size 0, no content.
 *     remove    WHITEOUT; the path must exist ("remove 'x': no such path at L000003").
 *     set_attr  the "before" record with the new attr (must exist); when anything changes the
 *               path leaves its link group (link_group 0). Keeps xattrs.
 *     link      a copy of the target's record (content, attr, xattrs, group). The target must be
 *               a regular file staged here or visible at H (-EPERM for a directory, -EINVAL
 *               naming the kind for a symlink, fifo or device). A target
 *               without a group gets one from the sandbox record's next_link_group (1 for a new
 *               sandbox) and is (re)written at V with it.
 *     Staged xattr edits (set or remove, in order) apply on top of the record's xattrs.
 *     An op whose record equals "before" (kind, attr, floor, group, size, content, target,
 *     xattrs) is a no-op; counts: created (no "before"), modified, deleted (remove). A change set
 *     of no-ops only (not creating a sandbox) writes nothing and reports version 0.
 *  5. One batch written with sync=true: entry records at key(parent, name, V); +1 reference per
 *     new FILE record with chunk or manifest content (store/refs.h); the layer record (parent H,
 *     owner: set, or "import" for a new sandbox, else "unknown"; counts; bytes = sum of the
 *     sizes of written put_file contents); head = V; the sandbox record when a group was
 *     allocated; for a new sandbox also its number, 0·"sandbox:"id, N·"info" and the root
 *     directory record (parent "", name "", floor 1).
 *  Failpoints "commit.lock", "commit.head", "commit.validate", "commit.refs", "commit.layer" and
 *  "commit.before_write" fire before the write; any failure writes nothing. After a commit
 *  attempt (successful or not) the change set is spent: staging and committing again fail with
 *  -EINVAL.
 *
 * Commits never lower a reference count (they only add records), so they never delete chunks.
 *
 * Files: store/changeset.c (staging), store/commit.c (the commit driver: before states and
 * parent checks, the batch, head and layer records), store/commit-record.c (hard-link
 * resolution and the record each op writes, with its xattrs).
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"
#include "common/hashmap.h"

#include "store/entry.h"
#include "store/sandbox.h"
#include "store/store.h"

struct eos_content_writer;
struct eos_kv_batch;
struct eos_kv_snapshot;
struct eos_refdelta;

/* --- staged operations ------------------------------------------------------------------------ */

enum eos_op_kind {
	EOS_OP_PUT_FILE,
	EOS_OP_MKDIR,
	EOS_OP_SYMLINK,
	EOS_OP_LINK,
	EOS_OP_REMOVE,
	EOS_OP_SET_ATTR,
	EOS_OP_MKNOD,
};

/* One staged xattr change: set name to value, or (value == NULL) remove it. */
struct eos_xattr_edit {
	char *name;
	uint8_t *value;
	size_t len;
};

struct eos_op {
	char *path;
	enum eos_op_kind kind;
	struct eos_attr attr;	    /* all but LINK and REMOVE */
	struct eos_content content; /* PUT_FILE */
	char *target;		    /* SYMLINK: target; LINK: path of the link target */
	bool opaque;		    /* MKDIR */
	enum eos_kind node;	    /* MKNOD: FIFO, CHR or BLK */
	uint64_t rdev;		    /* MKNOD: the device (CHR, BLK) */
	size_t nedits;
	struct eos_xattr_edit *edits;
	bool dropped; /* resolved away by the publish gate: not committed */
};

enum eos_changeset_state {
	EOS_CHANGESET_OPEN,
	EOS_CHANGESET_COMMITTING,
	EOS_CHANGESET_COMMITTED,
	EOS_CHANGESET_FAILED,
};

struct eos_changeset {
	struct eos_store *st;
	char sandbox[EOS_SANDBOX_ID_MAX + 1];
	uint64_t sbx; /* 0 for a new sandbox (allocated by the commit) */
	bool new_sandbox;
	char *source;	      /* new sandbox only */
	struct eos_attr root; /* new sandbox only */
	char *owner;	      /* NULL: default */
	bool pinned;
	struct eos_content_writer *writer;

	pthread_mutex_t lock; /* protects the fields below */
	enum eos_changeset_state state;
	struct eos_op **ops;
	size_t nops, cap;
	struct eos_hashmap paths; /* op path (without NUL) -> struct eos_op * */
};

/*
 * Take the ops out of an open change set for the commit (state becomes COMMITTING, so staging
 * fails from now on). -EINVAL "change set already committed" / "… failed" otherwise.
 */
int eos_changeset_begin_commit(struct eos_changeset *cs, struct eos_error *err);
/* Mark the end of a commit attempt: COMMITTED or FAILED. */
void eos_changeset_end_commit(struct eos_changeset *cs, bool ok);

/* --- commit internals (store/commit.c and store/commit-record.c) ------------------------------ */

/* The commit-time state of one staged op. */
struct eos_commit_plan {
	struct eos_op *op;
	struct eos_entry *before;	   /* its entry at H through this change set; NULL = none */
	enum eos_kind kind;		   /* kind after the commit (WHITEOUT for a remove) */
	uint64_t floor;			   /* directories */
	uint64_t group;			   /* link group of the new record */
	struct eos_commit_plan *src;	   /* LINK: staged source (never a LINK itself) */
	const struct eos_entry *src_entry; /* LINK: unstaged source */
	bool linking, linked;		   /* LINK: resolution in progress / done */
	bool written;			   /* a record was staged at V (not a no-op) */
};

/* A link target that is not staged: its record at H, rewritten at V when it gets a group. */
struct eos_commit_link_source {
	struct eos_entry e;
	bool rewrite;
	char path[];
};

/* One commit attempt, set up and released by store/commit.c. */
struct eos_commit {
	struct eos_changeset *cs;
	struct eos_store *st;
	const struct eos_kv_snapshot *snap;
	uint64_t sbx, head, version;
	struct eos_commit_plan *plans;
	size_t n;
	/* Path maps; keys are paths without their NUL, values pointers. */
	struct eos_hashmap staged;  /* path -> struct eos_commit_plan */
	struct eos_hashmap dirs;    /* path -> directory state at H (private to commit.c) */
	struct eos_hashmap sources; /* path -> struct eos_commit_link_source */
	struct eos_sandbox_record record;
	bool record_loaded, record_dirty;
	struct eos_kv_batch *batch;
	struct eos_refdelta *refs;
	struct eos_buf key, val;
	bool changed;
	struct eos_commit_result res;
};

/* commit.c */

/*
 * Called by eos_changeset_commit_locked() once the batch holds everything but before it is
 * written (only when something changes): add more records to cx->batch. Non-zero aborts.
 */
typedef int (*eos_commit_hook_fn)(void *ctx, struct eos_commit *cx, struct eos_error *err);

/*
 * eos_changeset_commit() for a caller that already holds st->write_lock (the publish gate):
 * hook (may be NULL) adds its records to the same batch.
 */
int eos_changeset_commit_locked(struct eos_changeset *cs, uint64_t expected_head,
				eos_commit_hook_fn hook, void *ctx, struct eos_commit_result *ret,
				struct eos_error *err);
/* The staged op of path, or NULL. Only while the change set is open; caller serialises. */
struct eos_op *eos_changeset_op(struct eos_changeset *cs, const char *path);

/*
 * The entry of path at H seen through this change set's staged ancestors (the path's own op is
 * not looked at): 1 and *ret (caller owns; free with eos_commit_entry_free()), 0 when there is
 * none, or -errno.
 */
int eos_commit_overlay_lookup(struct eos_commit *cx, const char *path, struct eos_entry **ret,
			      struct eos_error *err);
/* eos_entry_release() and free() a heap-allocated entry. NULL-safe. */
void eos_commit_entry_free(struct eos_entry *e);

/* commit-record.c */

/*
 * Load the sandbox record into cx->record once (for a new sandbox: a fresh one with the id,
 * source and creation time); next_link_group is at least 1 afterwards.
 */
int eos_commit_load_record(struct eos_commit *cx, struct eos_error *err);
/*
 * Pass 2: resolve every LINK plan to its source, a staged plan or a record at H (then kept in
 * cx->sources), allocating link groups from cx->record where a source has none. Fails with
 * -ELOOP (links in a cycle), -EPERM (a directory target), -EINVAL (a symlink target), -ENOENT
 * (no such target), or a lookup or allocation error.
 */
int eos_commit_link_all(struct eos_commit *cx, struct eos_error *err);
/* Whether a and b have the same mode, owner and mtime. */
bool eos_commit_attr_equal(const struct eos_attr *a, const struct eos_attr *b);
/* Same record, the version aside. */
bool eos_commit_entry_equal(const struct eos_entry *a, const struct eos_entry *b);
/* Build the record op p writes at V into rec (initialised by the caller). 0 or -ENOMEM. */
int eos_commit_plan_record(const struct eos_commit *cx, const struct eos_commit_plan *p,
			   struct eos_entry *rec);
