/* SPDX-License-Identifier: MIT */
/*
 * fs/view: a workspace session's view — the store at the session's leased version below, the
 * session's private delta on top — served as a FUSE low-level filesystem (doc/fs.md).
 *
 * Calling sequence.
 *	eos_view_open()          load (or start) the session's delta; no mount needed
 *	  eos_view_mount()       mount the view at a directory (fs/fuse-mount.c)
 *	  eos_view_mount_serve() serve requests on libfuse's threads until unmounted or stopped,
 *	  or eos_view_mount_receive() + eos_view_mount_process() on the host's own threads
 *	  eos_view_mount_free()  unmount (if still mounted) and free
 *	  eos_view_delta()       enumerate the session's changes (the publish gate's input)
 *	eos_view_close()         write pending metadata and free
 *
 * Threads. Requests run on many threads at once: each inode has its own lock, the inode table is
 * sharded, and no request takes a view-wide lock. eos_view_delta() may run while the view is
 * mounted and served; it locks one directory at a time.
 *
 * Persistence. Every change is durable against a crash of the serving process once its request
 * is answered: namespace operations and attribute changes write their records to the store's
 * session column family (unsynced) before they become visible; writes append a record to the
 * session's write journal (fs/journal.h), which the next open replays. fsync and fsyncdir make
 * a file durable against a power loss too (doc/fs.md, "Persistence").
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

#include "store/store.h"

enum {
	EOS_OPERATION_MAX = 200, /* bytes of an operation id, as in a layer owner */
};

/*
 * Map the pid of a process opening a file to the operation it belongs to: write the owner string
 * ("operation:req-91") into out[size] and return 0, or return -ENOENT when no operation claims
 * it (the write is then attributed to the session itself). Called from worker threads.
 */
typedef int (*eos_view_resolve_fn)(void *ctx, pid_t pid, char *out, size_t size);

/* The resolver eosfs uses: EOS_OPERATION=<id> in /proc/<pid>/environ gives "operation:<id>". */
int eos_view_resolve_environ(void *ctx, pid_t pid, char *out, size_t size);

/*
 * A view's background work — switching its write journal to a new generation once it has grown,
 * which writes the records of the nodes it mentions, and giving the memory of freed nodes back —
 * runs on a flusher thread. A host serving many views makes one and names it in each view's
 * options, so that the number of threads does not grow with the views; a view without one
 * starts its own. The thread sleeps while no view has work: a view wakes it when its journal
 * reaches the rotation size or it freed many nodes.
 */
struct eos_view_flusher;
int eos_view_flusher_new(struct eos_view_flusher **ret, struct eos_error *err);
/* Join the thread and free. It is a bug to call it before every view using it is closed.
 * NULL-safe. */
void eos_view_flusher_free(struct eos_view_flusher *f);
EOS_DEFINE_CLEANUP(struct eos_view_flusher *, eos_view_flusher_free)

struct eos_view_options {
	struct eos_store *store;
	const char *sandbox;
	const char *session; /* NULL: a read-only view of `version` */
	bool create;	     /* create the session (leased on the head) when it does not exist */
	uint64_t version;    /* read-only views: the version shown (0 = head) */
	eos_view_resolve_fn resolve; /* NULL: every write belongs to the session */
	void *resolve_ctx;
	/*
	 * Let the kernel cache writes (FUSE writeback cache). Writes then reach the view in
	 * batches through any writable handle of the file, so they are attributed per file: to
	 * the operation holding it open for writing, or to the session while handles of several
	 * operations are open at once. Without it, every write(2) is attributed to its own handle.
	 */
	bool writeback;
	/* the thread that does the view's background work (see struct eos_view_flusher); NULL:
	 * the view starts one of its own */
	struct eos_view_flusher *flusher;
	/*
	 * Load a session as the last process left it, writing nothing (its journal is replayed in
	 * memory only, nothing is cleaned up): for checks (eos_view_check). Such a view must not be
	 * mounted or changed.
	 */
	bool inspect;
};

struct eos_view;

/*
 * Open the view: for a session, load its delta (creating the session when opts->create and it
 * does not exist); for a read-only view, check the version. -ENOENT names a missing sandbox,
 * session or version. Caller owns *ret.
 */
int eos_view_open(const struct eos_view_options *opts, struct eos_view **ret,
		  struct eos_error *err);
/* Write pending metadata (sizes, times, write logs); sync waits for the disk. */
int eos_view_persist(struct eos_view *v, bool sync, struct eos_error *err);
/* Persist and free. NULL-safe. No mount may be alive. */
void eos_view_close(struct eos_view *v);
EOS_DEFINE_CLEANUP(struct eos_view *, eos_view_close)

uint64_t eos_view_version(const struct eos_view *v);
bool eos_view_read_only(const struct eos_view *v);

/*
 * Check a session's delta against its data files (the view was opened with inspect): every file
 * whose content is in the session has its data file, of the file's size; every dirent names a
 * node. Calls fn(ctx, kind, message) per violation ("session-data", "session-dirent"); returns
 * the number of violations, or -errno when the check could not run.
 */
typedef void (*eos_view_check_fn)(void *ctx, const char *kind, const char *message);
int eos_view_check(struct eos_view *v, eos_view_check_fn fn, void *ctx, struct eos_error *err);

/* --- serving (fs/ops.c) ----------------------------------------------------------------------- */

struct eos_view_mount;

/* How a mount shows the owners recorded in the store (doc/fs.md "Owners"). */
enum eos_view_owners {
	EOS_VIEW_OWNERS_AUTO = 0, /* identity when the process's euid is 0, else squash */
	EOS_VIEW_OWNERS_IDENTITY, /* every file shows the uid and gid the store recorded */
	/* every file shows the process's euid and egid; the mounting user's new files are
	 * recorded with the owner of the sandbox's root directory, and chown/chgrp to the user
	 * keeps the recorded ids */
	EOS_VIEW_OWNERS_SQUASH,
};

struct eos_view_mount_options {
	const char *fuse_opts; /* extra comma-separated FUSE mount options, or NULL */
	enum eos_view_owners owners;
	/* served by the caller's threads through eos_view_mount_receive() and
	 * eos_view_mount_process(), never by eos_view_mount_serve() */
	bool host_served;
};

/*
 * Mount v at mountpoint (an existing empty directory: -ENOTEMPTY names it otherwise); opts NULL
 * means the defaults. The mount is always nosuid,nodev with default_permissions (the kernel
 * checks modes), and allow_other when the process's euid is 0: -EINVAL refuses fuse_opts that
 * would undo this (suid, dev). As non-root, fusermount3 mounts.
 */
int eos_view_mount(struct eos_view *v, const char *mountpoint,
		   const struct eos_view_mount_options *opts, struct eos_view_mount **ret,
		   struct eos_error *err);
/* The check eos_view_mount() makes of mountpoint first (a caller may make it before anything). */
int eos_view_mountpoint_check(const char *path, struct eos_error *err);
/* Serve requests until unmounted (fusermount3 -u) or eos_view_mount_stop(). 0 or -errno. */
int eos_view_mount_serve(struct eos_view_mount *m, struct eos_error *err);
/* Ask a serving mount to stop (any thread, async-signal-unsafe). */
void eos_view_mount_stop(struct eos_view_mount *m);
/* The requests of FUSE opcode op (<linux/fuse.h>: FUSE_OPEN, FUSE_READ, …) the mount has
 * received so far; 0 for an opcode beyond EOS_VIEW_OPCODES. */
enum {
	EOS_VIEW_OPCODES = 64,
};
uint64_t eos_view_mount_requests(const struct eos_view_mount *m, unsigned op);
/* Unmount when still mounted, free. NULL-safe. A host-served mount must be out of the host's
 * threads first (none of them in eos_view_mount_receive() or _process() with it). */
void eos_view_mount_free(struct eos_view_mount *m);
EOS_DEFINE_CLEANUP(struct eos_view_mount *, eos_view_mount_free)

/*
 * Serving many mounts from a host's bounded pool of threads (eosd): the host polls each mount's
 * fd for input (EPOLLIN; the fd is non-blocking) and, on a thread of its pool, reads one request
 * with eos_view_mount_receive() and answers it with eos_view_mount_process(). Several threads
 * may receive and process requests of one mount at once; each thread has its own buffer.
 *
 * A request may wait inside eos_view_mount_process() (at the view's gate during a live publish
 * or a fork, for the store), but never for another request of any mount: a pool of any size
 * makes progress. The pool does not own mounts: eos_view_mount_free() unmounts (which closes
 * the fd) only once the host has taken the mount out of its threads.
 */
struct eos_view_rbuf;
/* A receive buffer (about 1 MiB: the largest request). Caller owns *ret. */
int eos_view_rbuf_new(struct eos_view_rbuf **ret);
void eos_view_rbuf_free(struct eos_view_rbuf *b);
EOS_DEFINE_CLEANUP(struct eos_view_rbuf *, eos_view_rbuf_free)
/* The /dev/fuse fd of a host-served mount (non-blocking), valid until eos_view_mount_free(). */
int eos_view_mount_fd(const struct eos_view_mount *m);
/*
 * Read one request of m into b without waiting: 1 when one was read (process it), 0 when none
 * was pending, -ENODEV once the mount has ended (unmounted from outside, the connection aborted,
 * or eos_view_mount_stop()), another -errno on a read error.
 */
int eos_view_mount_receive(struct eos_view_mount *m, struct eos_view_rbuf *b);
/* Answer the request that eos_view_mount_receive() read into b from m. */
void eos_view_mount_process(struct eos_view_mount *m, struct eos_view_rbuf *b);

/* --- the delta, for the publish gate ---------------------------------------------------------- */

enum eos_delta_change {
	EOS_DELTA_DELETE = 1, /* path removed (and everything below it) */
	EOS_DELTA_PUT = 2,    /* path created, renamed here, or its content/type changed */
	EOS_DELTA_ATTR = 3,   /* only attributes (mode, owner, times, xattrs) changed */
	EOS_DELTA_DIR = 4,    /* unchanged directory on the way to changes below it */
};

/* "delete", "put", "attr", "dir". */
const char *eos_delta_change_name(enum eos_delta_change c);

/* Write log: bytes [start, end) of the file were last written by operation `owner`. */
struct eos_delta_range {
	uint64_t start, end;
	const char *owner;
};

/* One extended attribute of a delta entry. */
struct eos_delta_xattr {
	const char *name;
	const void *value;
	size_t len;
};

struct eos_delta_entry {
	const char *path;
	enum eos_delta_change change;
	uint32_t mode; /* S_IFMT | permission bits */
	uint32_t uid, gid;
	int64_t mtime_ns;
	uint64_t node; /* inode number: entries sharing one are hard links of each other */
	bool opaque;   /* directory that hides all older children (created over a deletion) */
	bool renamed;  /* moved here itself (not only with a renamed parent) from origin */
	/* files */
	uint64_t size;
	const char *data_path;		   /* content in this file, or NULL: */
	const struct eos_content *content; /* … content unchanged, still in the store */
	const struct eos_delta_range *ranges;
	size_t nranges;
	const char *target; /* symlinks */
	uint64_t rdev;	    /* character and block devices: makedev(major, minor) */
	const char *origin; /* the lower path this entry came from, when not `path` (renamed itself
			     * or with an ancestor), else NULL */
	const struct eos_delta_xattr *xattrs; /* every xattr it has now (not for DELETE) */
	size_t nxattrs;
};

/*
 * Call fn for every change of the session, parents before children (a deleted path is reported
 * once, not its descendants; the root, path "", only when its attributes or xattrs changed;
 * every name of a hard-linked file as a put). Runs beside a mounted view without blocking it for
 * long: each directory is copied under its lock and walked after. fn's non-zero return stops the
 * walk.
 */
typedef int (*eos_delta_fn)(void *ctx, const struct eos_delta_entry *e);
int eos_view_delta(struct eos_view *v, eos_delta_fn fn, void *ctx, struct eos_error *err);

/* --- a live session: publish in place, fork (fs/publish-live.c) ------------------------------- */

/*
 * Publish the session of v while it stays mounted and in use (v must be a writable session
 * view; m its mount, or NULL when it is not mounted). Requests that would change the view wait
 * (never fail) from the capture of the delta until the gate has decided; reads go on. On
 * PUBLISHED (and NO_OP) the session continues on the new head with an empty delta: its lease
 * moves to ret->version, its records and data files are reset, and the kernel's caches of every
 * path that changed are invalidated, so an open file reads the merged bytes on its next read.
 * On REJECTED, or any error before the commit, the session is exactly as it was. owner NULL:
 * "workspace_session:<session>". ret is released by the caller: it is filled whenever the gate
 * decided, also when the view then failed to follow (a negative return with ret->status
 * PUBLISHED: the publish is in the store and the session reset there; the view then refuses changes
 * with EIO and writes nothing more: reopen it). Must not
 * be called from a request of v's mounts (it waits for them), nor beside eos_view_close();
 * publishes and forks of one view run one after the other. Order of the writes and what a crash
 * leaves: doc/fs.md, "Live publish and fork".
 */
int eos_view_publish_live(struct eos_view *v, struct eos_view_mount *m, const char *owner,
			  struct eos_publish_result *ret, struct eos_error *err);

/*
 * Create session new_session of v's sandbox whose starting state is v's current state: the same
 * base version (leased anew) and a copy of v's delta (records and data files), in time
 * proportional to the delta, never to the base. v may be mounted and in use: its writes wait
 * for the copy. -EEXIST when new_session exists. The fork is not opened: eos_view_open() it.
 */
int eos_view_fork(struct eos_view *v, const char *new_session, struct eos_error *err);

/* --- publishing a session (fs/publish.c) ------------------------------------------------------ */

/*
 * Publish the delta of session `session` of sandbox through the store's publish gate
 * (eos_publish_*): walk its changes, stage them (files with their write logs, renames with their
 * origin, hard links as links), prepare and commit. The session must not be mounted by this
 * process (the caller closes its view first). owner NULL: "workspace_session:<session>". Returns
 * as eos_publish_commit(); ret is released by the caller (eos_publish_result_release()).
 * Fifos and devices are published as such (each name of a hard-linked one as a node of its own:
 * the store links regular files only); sockets are not (runtime objects): they are listed in
 * ret->skipped and whatever the base had at their path is deleted.
 */
int eos_view_publish(struct eos_store *st, const char *sandbox, const char *session,
		     const char *owner, struct eos_publish_result *ret, struct eos_error *err);

/* --- path operations for a host (fs/pathops.c) ------------------------------------------------ */

/*
 * A process that serves a view (eosd) reads and writes it through these calls, never through
 * syscalls on a mount of its own: such a syscall would wait on the process's own server threads
 * (a SIGKILL then leaves it unkillable) and at the view's live-publish gate.
 *
 * Paths are relative to the view's root ("" is the root): -EINVAL refuses an absolute one or one
 * with a ".." component. They are resolved component by component inside the view; a symlink on
 * the way (or at the end: read, list, stat and write all follow it) is followed only while it
 * stays inside the view: an absolute target, or one whose ".." climbs above the root, is refused
 * with -EXDEV naming the path; more than 40 symlinks give -ELOOP. Other errors: -ENOENT (missing),
 * -ENOTDIR (a file on the way, or listed), -EISDIR (a directory read or written as a file),
 * -EINVAL (not a regular file), -EIO (the view is broken: reopen it). err names the path.
 *
 * Reads and listings wait only while a live publish resets the nodes. Writes enter the gate as a
 * FUSE write does: during a live publish they wait (never fail) and land in the new delta. No
 * call may be made from a request of one of the view's mounts (it could wait for that request).
 * After a write, every mount's kernel caches of the entry and its inodes are invalidated, so a
 * process reading through any mount sees the new bytes.
 */

/* The attributes of path (symlinks followed), as a mount shows them with identity owners. */
struct stat;
int eos_view_path_stat(struct eos_view *v, const char *path, struct stat *st,
		       struct eos_error *err);

/* Read up to size bytes of regular file path from off into buf: the bytes read (fewer only at
 * the end of the file; 0 at or past it), or -errno. */
ssize_t eos_view_path_read(struct eos_view *v, const char *path, uint64_t off, void *buf,
			   size_t size, struct eos_error *err);

enum eos_view_write_flags {
	EOS_VIEW_WRITE_PARENTS = 1 << 0, /* create missing parent directories (0755) */
};

/*
 * Replace the whole content of regular file path with data[len], creating it (0644) when missing.
 * The bytes are written into a new node beside it, which is then renamed over path (each step
 * recorded as a FUSE request's are): a failure leaves the old content, and once this returns
 * the write survives a SIGKILL of the process (the next open replays it). The new file keeps the
 * old one's permission bits (set-ID cleared), owners and extended attributes; new files and
 * directories get the owners of the view's root. As with any rename over a file, processes
 * holding the old file open keep reading the old bytes, and other hard links of it keep them. A
 * crash between the two steps leaves the new node as ".eos-write.<pid>.<hex>.<hex>" in path's
 * directory, which the next eos_view_open() removes (only names of exactly that form).
 * Every written byte is attributed to owner ("operation:req-9", "workspace_session:ws-1"; NULL:
 * the session's own) in the write log, exactly as a FUSE write whose process resolved to owner.
 * flags: enum eos_view_write_flags. -EROFS on a read-only view.
 */
int eos_view_path_write(struct eos_view *v, const char *path, const void *data, size_t len,
			const char *owner, unsigned flags, struct eos_error *err);

/* One entry of a directory: name, S_IFMT | permission bits, size (as stat shows them). */
struct eos_view_path_entry {
	char *name;
	uint32_t mode;
	uint64_t size;
};
struct eos_view_path_list {
	struct eos_view_path_entry *v;
	size_t n;
};
/* The entries of directory path (symlinks followed), sorted by name, without "." and "..".
 * Release *ret with eos_view_path_list_release(). */
int eos_view_path_list(struct eos_view *v, const char *path, struct eos_view_path_list *ret,
		       struct eos_error *err);
void eos_view_path_list_release(struct eos_view_path_list *l);
