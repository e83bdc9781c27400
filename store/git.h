/* SPDX-License-Identifier: MIT */
/*
 * store/git: text merging and git patches (the only file that includes <git2.h>).
 *
 * Internal to store/. Wraps libgit2 (1.5): the three-way line merge of the publish gate
 * (git_merge_file) and the `diff --git` sections of the patch export. libgit2 is initialised once
 * per process on first use (pthread_once); every function is thread-safe and reentrant (no
 * repository is opened, everything works on buffers). Nothing returned borrows libgit2 memory.
 *
 * Errors are negative errno: -ENOMEM, -EINVAL for bad arguments, -EIO with libgit2's message in
 * err for anything libgit2 reports.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"

#include "store/store.h"

/* Whether data is binary for merging: a NUL byte or invalid UTF-8. */
bool eos_text_is_binary(const void *data, size_t len);
/* Lines of data: the number of '\n' plus one for a final unterminated line (0 for empty). */
uint32_t eos_text_lines(const void *data, size_t len);

/* The outcome of eos_git_merge3(); release with eos_merge3_release(). */
struct eos_merge3 {
	bool clean;
	uint8_t *data; /* clean: the merged bytes (malloc'd; may be NULL when len is 0) */
	size_t len;
	struct eos_conflict_lines *regions; /* !clean: every conflicting region (malloc'd) */
	size_t nregions;
};

/*
 * Three-way line merge of text (callers check binary/size first). base may be empty (both sides
 * created the file). "head" is the current head's version, "ours" the session's. Changes on
 * different lines merge, identical changes merge; overlapping changes, changes of adjacent lines
 * and different insertions at the same point conflict (as in git). A clean result is byte-exact
 * (no whitespace or end-of-line normalisation: CRLF and a missing final newline survive).
 *
 * Regions: each is one group of overlapping or touching changes of both sides that the sides
 * made differently, in order. Lines are 1-based in each text (base, head, ours = session); a
 * count of 0 is an insertion point before line start (lines + 1: at the end). Regions are git's
 * `git merge-file --diff3` conflict blocks (the tests compare them).
 *
 * 0 with ret filled (clean or not; caller releases it), or -errno (ENOMEM, EIO naming libgit2's
 * message); on failure ret is left zeroed.
 */
int eos_git_merge3(const void *base, size_t blen, const void *head, size_t hlen, const void *ours,
		   size_t olen, struct eos_merge3 *ret, struct eos_error *err);
/* Free what eos_git_merge3() allocated and zero m. NULL-safe, idempotent. */
void eos_merge3_release(struct eos_merge3 *m);

/*
 * One file of a patch. old_path NULL: created; new_path NULL: deleted; both set and different:
 * renamed (content may also differ). Modes are S_IFREG|perm or S_IFLNK|0777 (0 when absent);
 * data is the file's bytes, or the symlink's target. Everything is borrowed.
 */
struct eos_patch_file {
	const char *old_path, *new_path;
	uint32_t old_mode, new_mode;
	const void *old_data;
	size_t old_len;
	const void *new_data;
	size_t new_len;
};

/*
 * Append this file's `diff --git` section to out: git's extended headers (old mode/new mode, new
 * file mode, deleted file mode, similarity index/rename from/rename to, index lines), unified
 * hunks (with "\ No newline at end of file"), and for binary content a "GIT binary patch"
 * literal. A type change (file <-> symlink) is a deletion plus a creation. git apply must accept
 * the result on a checkout of the old tree. Paths are relative to the tree root, without a
 * leading '/'; they are quoted as git quotes them when needed. Nothing is appended for a file
 * whose paths, modes and data are all unchanged. 0, or -errno (EINVAL for a bad path or mode,
 * ENOMEM, EIO); on failure out keeps its previous contents.
 */
int eos_git_patch(const struct eos_patch_file *f, struct eos_buf *out, struct eos_error *err);
