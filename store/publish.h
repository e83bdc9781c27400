/* SPDX-License-Identifier: MIT */
/*
 * store/publish: internals of the publish gate (eos_publish_* in store/store.h; doc/publish.md).
 * Never included outside store/ and tests/.
 *
 * A publish wraps one change set (store/changeset.h), created by eos_publish_begin(): it pins the
 * store, so no chunk written by prepare can be deleted before the commit.
 *
 * Staging (store/publish.c) records each change as a struct eos_pub_op: a path, what the session
 * wants there, and for files where the bytes come from and who wrote them.
 *
 * Prepare (store/publish-prepare.c), no lock: every op is staged into the change set as is
 * (file content read, hashed, chunked, compressed and written); for every op the entry at the
 * base is looked up once (base_st); files get their line owners computed against the base's
 * file (or the origin's, for a rename), kept with the base entry's version they assume.
 *
 * Commit (store/publish-commit.c), under st->write_lock:
 *  1. Head H. For each op, the entry at H (head_st). An op whose path has the same visible entry
 *     at base and H (same version, or absent on both) is taken as is; so is every op of a plain
 *     change set without a base (blind write). Others are resolved (store/publish-check.c):
 *     taken, dropped (no-op: H already has it), merged (store/publish-merge.c: content, mode,
 *     symlink target), or a conflict. Paths ignored by the base's .gitignore files are taken
 *     (last writer wins). Removing or replacing a directory also needs no record below it in
 *     (base, H] (one key-range scan, store/publish-check.c), and a created path needs its parent
 *     to be a directory at H (or staged). A rename (an op with an origin the publish removes)
 *     needs H to still have its source.
 *  2. Any conflict: REJECTED, nothing written, the change set is dropped.
 *  3. Else the change set is committed with eos_changeset_commit_locked(); its hook adds to the
 *     same batch one blame record per file record written at V (store/publish-blame.c), and for
 *     a session the reset of its delta, record and lease (eos_session_stage_reset()).
 *  Failpoints: "publish.lock" (lock taken), "publish.check" (after the checks),
 *  "publish.merge" (after merges), "publish.blame" (blame records staged), "publish.before_write"
 *  (in the hook, last); any failure writes nothing.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/hashmap.h"

#include "store/blame.h"
#include "store/changeset.h"
#include "store/entry.h"
#include "store/store.h"

struct eos_ignore;

enum eos_pub_kind {
	EOS_PUB_FILE,
	EOS_PUB_MKDIR,
	EOS_PUB_SYMLINK,
	EOS_PUB_LINK,
	EOS_PUB_REMOVE,
	EOS_PUB_ATTR,
	EOS_PUB_NODE, /* a fifo or a device */
};

struct eos_pub_op {
	char *path;
	enum eos_pub_kind kind;
	struct eos_attr attr;
	bool opaque;	    /* MKDIR */
	char *target;	    /* SYMLINK: target; LINK: the link target's path */
	enum eos_kind node; /* NODE: FIFO, CHR or BLK */
	uint64_t rdev;	    /* NODE: the device */
	/* FILE: where the bytes come from (one of data_path, data, has_content) */
	char *data_path;
	uint8_t *data;
	size_t len;
	bool has_content;
	struct eos_content content; /* also set by prepare for every FILE: the staged content */
	struct eos_write_range *ranges;
	size_t nranges;
	char *origin; /* the base path it came from (eos_publish_set_origin, or the file's) */
	struct eos_xattr_edit *edits; /* in order; value NULL = remove */
	size_t nedits;
	/* prepare */
	bool base_found;
	struct eos_entry base; /* the entry at the base (base_found) */
	bool blame_ready;
	uint64_t blame_prev_version; /* version of the entry blame was computed against; 0: none */
	struct eos_blame blame;
	/* commit */
	bool head_found;
	struct eos_entry head; /* the entry at the head (head_found) */
	bool resolved;	       /* decided: taken, dropped or merged (not a conflict) */
};

struct eos_publish {
	struct eos_store *st;
	char sandbox[EOS_SANDBOX_ID_MAX + 1];
	uint64_t sbx;
	char *session; /* NULL: a plain change set */
	int64_t session_created_ns;
	bool keep_session_dir; /* eos_publish_options.keep_session_dir */
	uint64_t base;	       /* 0: blind (a plain change set without a base) */
	bool blind;
	char owner[EOS_OWNER_MAX + 1];
	struct eos_changeset *cs;

	struct eos_pub_op **ops;
	size_t nops, cap;
	struct eos_hashmap paths; /* path -> struct eos_pub_op */
	bool prepared, committed;
	int64_t prepare_ns;
	int64_t prepare_start, prepare_end; /* CLOCK_MONOTONIC, for eos_publish_phases */
};

/* --- publish.c -------------------------------------------------------------------------------- */

/* The op staged at path, or NULL. */
struct eos_pub_op *eos_pub_find(struct eos_publish *p, const char *path);
/* Read all of a file's content from the store into *ret (malloc'd). */
int eos_pub_read_content(struct eos_store *st, const struct eos_content *c, uint8_t **ret,
			 size_t *ret_len, struct eos_error *err);
/* Read a host file into *ret (malloc'd); -EFBIG when it is larger than max. */
int eos_pub_read_path(const char *path, size_t max, uint8_t **ret, size_t *ret_len,
		      struct eos_error *err);
/* The fingerprint of an entry (NULL: absent) into out[EOS_FINGERPRINT_MAX]. */
void eos_pub_fingerprint(const struct eos_stat *s, const char *target, char *out);

/* --- publish-prepare.c ------------------------------------------------------------------------ */

int eos_pub_prepare(struct eos_publish *p, struct eos_error *err);

/* --- publish-blame.c -------------------------------------------------------------------------- */

/*
 * Line owners of op's new content (content c; data/len when already in memory, else NULL), with
 * prev the file it replaces (NULL: none) at version prev_version of the sandbox, and ours the
 * session's bytes when a merge produced c. Result in op->blame.
 */
struct eos_pub_blame_args {
	const struct eos_content *c;
	const uint8_t *data;
	size_t len;
	const struct eos_stat *prev;
	const char *prev_path;
	const uint8_t *ours;
	size_t ours_len;
};
int eos_pub_blame(struct eos_publish *p, struct eos_pub_op *op, const struct eos_pub_blame_args *a,
		  struct eos_error *err);
/*
 * The owners a record of content c keeps from prev (at prev_path): prev's when the bytes are the
 * same, else all "unknown". Into ret (initialised). snap may be NULL.
 */
int eos_pub_blame_carry(struct eos_publish *p, const struct eos_kv_snapshot *snap,
			const struct eos_content *c, const char *prev_path,
			const struct eos_stat *prev, struct eos_blame *ret, struct eos_error *err);
/* The commit hook's part: a blame record for every file record written at cx->version. */
int eos_pub_stage_blame(struct eos_publish *p, struct eos_commit *cx, struct eos_error *err);

/* --- publish-check.c -------------------------------------------------------------------------- */

/* The conflicts found so far (commit time). */
struct eos_pub_conflicts {
	struct eos_conflict *v;
	size_t n, cap;
};

struct eos_pub_check {
	struct eos_publish *p;
	uint64_t head;
	const struct eos_kv_snapshot *snap;
	struct eos_pub_conflicts conflicts;
	struct eos_ignore *ignore;
	uint64_t merged;
	int64_t merge_ns; /* time in three-way text merges */
};

/* Decide op when nothing was published since the base: take it, or drop a removal of nothing. */
int eos_pub_check_unchanged(struct eos_pub_check *c, struct eos_pub_op *op);
/* Decide op against the head (op->head filled): take, drop, merge or record a conflict. */
int eos_pub_check_op(struct eos_pub_check *c, struct eos_pub_op *op, struct eos_error *err);
/*
 * After every op was checked: a rename (an op with an origin the publish removes) whose source
 * the head no longer has, to a destination the head left as the base had it, is a RENAME
 * conflict naming both paths.
 */
int eos_pub_check_renames(struct eos_pub_check *c, struct eos_error *err);
/* Record a conflict at op (detail may be NULL). */
int eos_pub_conflict(struct eos_pub_check *c, const struct eos_pub_op *op,
		     enum eos_conflict_kind kind, const char *detail, const char *fmt, ...)
	EOS_PRINTF(5, 6);
void eos_pub_conflicts_release(struct eos_pub_conflicts *cs);

/* --- publish-merge.c -------------------------------------------------------------------------- */

/* Both sides changed file op (op->base, op->head, op->content): merge into the change set. */
int eos_pub_merge_file(struct eos_pub_check *c, struct eos_pub_op *op, struct eos_error *err);
/*
 * Three-way merge of permission bits and owner: *ret = the merged attr, false when both sides
 * changed the permission bits differently.
 */
bool eos_pub_merge_attr(const struct eos_attr *base, const struct eos_attr *head,
			const struct eos_attr *ours, struct eos_attr *ret);
/*
 * eos_pub_merge_attr of op's attributes with the head's against base: 1 and *ret, 0 when a MODE
 * conflict was recorded, or -ENOMEM.
 */
int eos_pub_merge_op_attr(struct eos_pub_check *c, struct eos_pub_op *op,
			  const struct eos_attr *base, struct eos_attr *ret);
