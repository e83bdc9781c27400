/* SPDX-License-Identifier: MIT */
/*
 * Helpers for unit tests of the session view without FUSE (fs/view-internal.h): resolve paths,
 * create nodes, write and read files through the view's own operations. They abort the test on
 * failure (ck_assert), so tests read as straight-line behaviour.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/view-internal.h"

#define ck_rc(expr, want)                                                                 \
	do {                                                                              \
		long got_ = (long)(expr);                                                 \
		ck_assert_msg(got_ == (long)(want), "line %d: %s returned %ld, want %ld", \
			      __LINE__, #expr, got_, (long)(want));                       \
	} while (0)

enum {
	PID_OP = 100,	   /* the test resolvers map this pid to an operation */
	PID_SESSION = 200, /* … and this one to nothing: the session's own write */
};

/* The root node of v. */
struct eos_node *tv_root(struct eos_view *v);
/* The node at path ('/'-separated, relative to the root). */
struct eos_node *tv_lookup(struct eos_view *v, const char *path);
/* A caller with this process's uid and gid and the given pid. */
struct eos_ctx tv_ctx_of(pid_t pid);
/* Create name in directory dir (a path, "" for the root). */
struct eos_node *tv_make(struct eos_view *v, const char *dir, const char *name, uint32_t mode,
			 const char *target);
/* Open path for writing as pid, write text at off, release. */
void tv_write_at(struct eos_view *v, const char *path, pid_t pid, uint64_t off, const char *text);
/* The whole content of path in the view, NUL-terminated into buf. */
const char *tv_read_all(struct eos_view *v, const char *path, char *buf, size_t size);
