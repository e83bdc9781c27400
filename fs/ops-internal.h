/* SPDX-License-Identifier: MIT */
/*
 * fs/ops internals: what the FUSE operation table (fs/ops.c) and the mounting and serving of a
 * view (fs/fuse-mount.c) share. These two files are the only users of libfuse.
 */
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stdatomic.h>
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
	/* files are opened without an OPEN (FUSE_NO_OPEN_SUPPORT, fs/ops.c serve_open) */
	bool no_open;
	/*
	 * FUSE_HANDLE_KILLPRIV_V2, which libfuse 3.14 can neither ask for nor decode: the mount's
	 * I/O (fuse-mount.c) sees the kernel offer it in INIT, adds it to the reply, and notes the
	 * kill flags of each WRITE and OPEN request it reads (eos_mount_request_kills).
	 */
	uint64_t init_unique; /* the INIT request, until its reply is written */
	bool killpriv_offered;
	bool killpriv_v2; /* granted: the view clears set-ID bits on the kernel's word */
	_Atomic uint64_t requests[EOS_VIEW_OPCODES]; /* received, per opcode */
};

/* The kill flags of the request the calling thread read last (with killpriv_v2). */
enum eos_request_kills {
	EOS_KILL_WRITE = 1 << 0, /* WRITE by a caller without CAP_FSETID */
	EOS_KILL_OPEN = 1 << 1,	 /* OPEN with O_TRUNC by a caller without CAP_FSETID */
};
unsigned eos_mount_request_kills(void);

/* The operation table of every mount (fs/ops.c). */
extern const struct fuse_lowlevel_ops eos_fs_ops;
