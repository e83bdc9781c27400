/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdint.h>

/* Inode numbers with this bit derive from a lower identity; the others come from a counter. */
#define EOS_INO_DERIVED (UINT64_C(1) << 63)

/*
 * The inode number a session view gives a lower identity: its path in the sandbox, or its store
 * hard-link group when group is not 0. A hash with EOS_INO_DERIVED set, the same in every
 * session and mount of every sandbox and every version of eos (doc/fs.md, "Inode numbers"); the
 * import uses it too, to refresh a git index for the view (store/git-index.c).
 */
uint64_t eos_ino_derived(const char *path, uint64_t group);
