/* SPDX-License-Identifier: MIT */
/*
 * store/ignore: .gitignore matching (gitignore(5) semantics, pure C).
 *
 * Internal to store/. The publish gate skips the conflict check for paths ignored by the
 * .gitignore files of the base version. Rules: blank lines and '#' comments, trailing spaces
 * trimmed unless escaped, '\' escapes, '!' negation, a trailing '/' matches directories only, a
 * '/' at the start or in the middle anchors the pattern to its .gitignore's directory (otherwise
 * it matches a name at any depth below it), '*', '?', '[...]' (never matching '/'), and '**' in
 * "**" + "/", "/" + "**" and "/" + "**" + "/". The last matching pattern of a file wins, and a
 * deeper .gitignore takes precedence over shallower ones; a path inside an ignored directory is
 * ignored and cannot be re-included.
 *
 * Calling sequence: eos_ignore_new() with a reader callback, any number of eos_ignore_check(),
 * eos_ignore_free(). Each directory's .gitignore is read at most once, on first need, and cached.
 * Not thread-safe: one struct eos_ignore per thread (or lock around it).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "common/cleanup.h"
#include "common/error.h"

struct eos_ignore;

/*
 * Read directory dir's .gitignore ("" = the root; otherwise a relative path without leading or
 * trailing '/'): 0 with *ret_text (malloc'd; caller frees) and *ret_len; -ENOENT when there is
 * none; other -errno on failure.
 */
typedef int (*eos_ignore_read_fn)(void *ctx, const char *dir, char **ret_text, size_t *ret_len,
				  struct eos_error *err);

/* New matcher reading through read(ctx, ...); ctx is borrowed. 0 or -ENOMEM. Caller frees *ret. */
int eos_ignore_new(eos_ignore_read_fn read, void *ctx, struct eos_ignore **ret);

/*
 * Whether path (is_dir: a directory) is ignored by the .gitignore files of its ancestor
 * directories, each read once through read and cached. path is relative to the root, '/'
 * separated (a leading '/' and repeated '/' are tolerated); the root itself is never ignored.
 * 0 with *ret set, or the reader's -errno (other than -ENOENT) prefixed with the .gitignore's
 * path, or -ENOMEM; *ret is untouched on failure.
 */
int eos_ignore_check(struct eos_ignore *ig, const char *path, bool is_dir, bool *ret,
		     struct eos_error *err);

/* NULL-safe. */
void eos_ignore_free(struct eos_ignore *ig);
EOS_DEFINE_CLEANUP(struct eos_ignore *, eos_ignore_free)
