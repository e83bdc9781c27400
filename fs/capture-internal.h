/* SPDX-License-Identifier: MIT */
/*
 * fs/capture internals: the walk of eos_view_delta (capture.c) and its second pass over the
 * store's hard-link groups (capture-links.c).
 *
 * The walk follows upper dirents from the root. A lower hard-link group is one node in the view,
 * but only the names the session touched have upper dirents: the other members show through
 * their lower directories. So after the walk, every member of a group whose node the session
 * changed, or that a renamed directory carries to a new path, is emitted at the path where the
 * view shows it, so that the publish stages the whole group as one file and its links.
 * Single-threaded: one eos_view_delta call owns the struct.
 */
#pragma once

#include <stdbool.h>

#include "common/hashmap.h"

#include "fs/view-internal.h"

struct eos_capture {
	struct eos_view *v;
	eos_delta_fn fn;
	void *ctx;
	struct eos_hashmap paths; /* every path emitted (no value) */
	struct eos_hashmap dirs;  /* be64 ino → the path of every directory walked (malloc'd) */
	bool moved;		  /* a directory was renamed */
};

/*
 * Emit n at path (expected: where its parent's origin puts it, or NULL); directories are walked
 * below it. origin: for a hard-link member shown through its lower directory, its own lower
 * path (it is not renamed, whichever name the node came from), else NULL. n is not locked by
 * the caller.
 */
int eos_capture_emit(struct eos_capture *c, struct eos_node *n, const char *path,
		     const char *expected, const char *origin);

/* capture-links.c: emit the lower hard-link members the walk did not reach (after the walk). */
int eos_capture_links(struct eos_capture *c);
