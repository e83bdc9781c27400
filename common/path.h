/* SPDX-License-Identifier: MIT */
/*
 * Safe handling of paths inside a sandbox tree.
 *
 * A tree path is relative, its components separated by single '/', none empty, "." or "..", none
 * longer than EOS_NAME_MAX bytes, the whole at most EOS_PATH_MAX bytes; the root is "". Paths from
 * users, archives and layers are checked with these functions before use, and a rejected path
 * gets a message naming it and the rule it breaks.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

enum {
	EOS_NAME_MAX = 255,
	EOS_PATH_MAX = 4095,
};

/* Check one component of n bytes: non-empty, not "." / "..", no '/' or NUL, <= EOS_NAME_MAX. */
int eos_name_check(const char *name, size_t n, struct eos_error *err);

/* Check a tree path (strict form above; "" is the root and is accepted). */
int eos_path_check(const char *path, struct eos_error *err);

/*
 * Normalise user input into a tree path: drop leading '/', "./" components and repeated or
 * trailing slashes; reject "..", over-long names and paths. Caller owns *ret (free()).
 */
int eos_path_normalize(const char *in, char **ret, struct eos_error *err);

/*
 * Split a tree path into parent and name: "a/b/c" -> parent length 3 ("a/b"), name "c";
 * "c" -> parent length 0, name "c". The root "" has no name: *ret_name = "" and length 0.
 */
void eos_path_split(const char *path, size_t *ret_parent_len, const char **ret_name);

/* Join parent and name ("" parent gives name). Caller owns *ret (free()). */
int eos_path_join(const char *parent, const char *name, char **ret);

/* True when path equals dir or lies below it ("" contains everything). */
bool eos_path_is_below(const char *path, const char *dir);

/*
 * Host directories: create every missing directory above the host path `path` with mode, and
 * with `self` path itself too (mkdir -p). Existing directories are fine. 0 or -errno.
 */
int eos_mkdir_parents(const char *path, unsigned mode, bool self);
/*
 * Remove path and everything below it (like rm -rf; symlinks are removed, never followed). A
 * missing path is not an error. 0 or the first -errno.
 */
int eos_rm_rf(const char *path);
/*
 * Host files: read exactly len bytes of fd from offset 0 into buf. 0, -errno, or -ENODATA when
 * the file ends first (it shrank since its size was taken).
 */
int eos_pread_all(int fd, void *buf, size_t len);
