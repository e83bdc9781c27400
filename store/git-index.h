/* SPDX-License-Identifier: MIT */
/*
 * store/git-index: refresh the stat data of a git index (`.git/index`, versions 2 to 4) for the
 * session views of an imported tree, so that the first `git status` in a view re-reads no file
 * whose content is the one the index names (doc/fs.md, "Imported git indexes").
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The stat data git keeps per entry (32-bit fields, as in the index). */
struct eos_gitidx_stat {
	uint32_t ctime_s, ctime_ns, mtime_s, mtime_ns;
	uint32_t ino, mode, uid, gid, size;
};

/* One entry of an index, as the refresh offers it. */
struct eos_gitidx_entry {
	const char *path;	     /* relative to the work tree */
	struct eos_gitidx_stat stat; /* what the index holds */
	const uint8_t *oid;	     /* the object id of the content git last hashed */
	size_t oid_len;		     /* EOS_SHA1_LEN, or 32 in a SHA-256 repository */
};

/*
 * Asked for each entry that names a regular file or a symlink at stage 0. Returns true and fills
 * *view when the entry still describes the imported file and *view is the stat data a view shows
 * of it; false leaves the entry as it is.
 */
typedef bool (*eos_gitidx_fresh_fn)(void *ctx, const struct eos_gitidx_entry *e,
				    struct eos_gitidx_stat *view);

/*
 * Rewrite, in place, the stat data of every entry of the index buf[0, len) that fresh accepts,
 * and its trailing checksum (SHA-1, or SHA-256 for a SHA-256 repository). *ret_refreshed: the
 * entries rewritten. Returns 0 (buf unchanged when none), -EBADMSG when buf is not an index
 * this parser reads (bad signature, version, checksum or entry), -ENOTSUP for a split index
 * (its entries live in another file) or an index written without a checksum, -EIO.
 */
int eos_git_index_refresh(uint8_t *buf, size_t len, eos_gitidx_fresh_fn fresh, void *ctx,
			  size_t *ret_refreshed);
