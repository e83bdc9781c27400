/* SPDX-License-Identifier: MIT */
/*
 * fs/ops internals: what the FUSE operation table (fs/ops.c) and the mounting and serving of a
 * view (fs/fuse-mount.c) share. These two files are the only users of libfuse.
 */
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stdbool.h>

#include "fs/view-internal.h"

struct eos_view_mount {
	struct eos_view *view;
	struct eos_owners owners; /* how replies show owners (fs/owners.c) */
	struct fuse_session *se;
	char *mountpoint;
	bool mounted;
	/* served by a host's threads (eos_view_mount_receive/process): no splice, whose per-thread
	 * pipes libfuse frees only when a thread exits */
	bool host_served;
};

/* The operation table of every mount (fs/ops.c). */
extern const struct fuse_lowlevel_ops eos_fs_ops;
