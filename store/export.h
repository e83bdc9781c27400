/* SPDX-License-Identifier: MIT */
/*
 * store/export: the parts of eos_store_export() shared by its files (internal to store/).
 *
 *	export.c        options, versions, destination checks, output files, dispatch
 *	export-diff.c   what changed between two versions (struct eos_export_diff)
 *	export-fs.c     host tree helpers: no-follow walks, removal, the hard-link copy
 *	export-dir.c    DIR: staging directory, apply, attributes, swap
 *	export-tar.c    TAR / TAR_ZST: an OCI layer through store/archive.h
 *	export-patch.c  PATCH: git sections through store/git.h, exact renames
 *
 * The diff is computed once from one RocksDB snapshot, while the store is pinned (squash and gc
 * wait), so every content it names stays readable until the export ends.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#include "store/entry.h"
#include "store/store.h"

struct eos_kv_snapshot;

/* Why a change is listed (flags of struct eos_export_change). */
enum eos_export_change_flags {
	/* The directory is at both versions, but replaced in between: its old children are hidden.
	 */
	EOS_EXPORT_OPAQUE = 1 << 0,
	/* A deletion below a directory this delta deletes or turns into a non-directory. */
	EOS_EXPORT_BELOW_REMOVED = 1 << 1,
	/* A deletion below an EOS_EXPORT_OPAQUE directory (full diffs only). */
	EOS_EXPORT_BELOW_OPAQUE = 1 << 2,
	/* Identical at both versions: listed because a full diff needs all of an opaque directory.
	 */
	EOS_EXPORT_SAME = 1 << 3,
};

/*
 * One changed path. old is the visible entry at from, new the one at to; st.kind is
 * EOS_KIND_NONE for a side where the path is absent. A kind change is one change with both sides
 * set. The root is the path "".
 */
struct eos_export_change {
	char *path;
	struct eos_entry old, new;
	unsigned flags; /* enum eos_export_change_flags */
};

/* Every change, parents before children, siblings in byte order of names. Owns everything. */
struct eos_export_diff {
	struct eos_export_change *v;
	size_t n, cap;
};

void eos_export_diff_release(struct eos_export_diff *d);

/* One export run. */
struct eos_export {
	struct eos_store *st;
	const char *sandbox;
	uint64_t sbx;
	uint64_t from, to;
	int64_t to_created_ns; /* creation time of version to */
	const struct eos_kv_snapshot *snap;
	struct eos_export_result *res;
	const struct eos_export_options *opts;
	int64_t next_progress_ns;
};

/*
 * Report paths of total written (with the result's files and bytes) to the options' progress
 * callback: at most every 100 ms, always with force.
 */
void eos_export_progress(struct eos_export *x, uint64_t paths, uint64_t total, bool force);

/*
 * Compute the changes between x->from and x->to. With full, every path below an opaque
 * directory is listed (EOS_EXPORT_SAME when unchanged), as a layer that hides the old children
 * must carry the whole directory. A name that is not a valid path component anywhere in the
 * delta fails with -EBADMSG naming it.
 */
int eos_export_diff(struct eos_export *x, bool full, struct eos_export_diff *ret,
		    struct eos_error *err);

/* Called with consecutive pieces of a file's content; a negative return stops the copy. */
typedef int (*eos_export_sink_fn)(void *ctx, const void *p, size_t len, struct eos_error *err);

/* Feed the content of file entry e (at path, for messages) to fn in pieces. */
int eos_export_content(struct eos_export *x, const struct eos_entry *e, const char *path,
		       eos_export_sink_fn fn, void *ctx, struct eos_error *err);

/* Write all len bytes of p to fd (retrying short writes and EINTR): 0 or -errno. */
int eos_export_write_all(int fd, const void *p, size_t len);

/* --- host trees (export-fs.c): dirfd-relative walks that never follow a symlink ----------------
 */

struct stat;

/* Open directory name below dirfd: the fd, or -errno (-ELOOP or -ENOTDIR when it is none). */
int eos_export_fs_opendir(int dirfd, const char *name);
/* Remove name below dirfd with everything under it; an absent name is success. */
int eos_export_fs_remove(int dirfd, const char *name);
/* Copy the extended attributes of src_fd to dst_fd, best effort (what may not be set is left). */
void eos_export_fs_copy_xattrs(int src_fd, int dst_fd);

/* Called per directory a copy creates (path relative to the copied root), with its source stat. */
typedef int (*eos_export_dir_fn)(void *ctx, const char *path, const struct stat *sb);

/*
 * Fill the empty directory dst with a hard-link copy of directory src: directories are created
 * anew (mode 0700, extended attributes copied; fn records their attributes for later), all other
 * files are hard-linked, or copied where the kernel refuses the link. A mount point below src
 * fails with -EXDEV. Messages name the path below src.
 */
int eos_export_fs_link_tree(int src, int dst, eos_export_dir_fn fn, void *ctx,
			    struct eos_error *err);

/* The formats. dest_dir is the checked, absolute destination directory. */
int eos_export_dir(struct eos_export *x, const struct eos_export_diff *d, const char *dest_dir,
		   struct eos_error *err);
int eos_export_tar(struct eos_export *x, const struct eos_export_diff *d, int fd, bool zstd,
		   struct eos_error *err);
int eos_export_patch(struct eos_export *x, const struct eos_export_diff *d, int fd,
		     struct eos_error *err);
