/* SPDX-License-Identifier: MIT */
/*
 * supervisor/session internals: the session table shared by session.c (the table, serving,
 * mounts), session-ops.c (the session handlers) and files*.c (the file handlers).
 *
 * Locks. sessions->lock guards the table and every session's refs; it is never held across a
 * call into the store or the view. A session's gate (admission gate) serialises everything
 * that uses or changes its view and mounts: file operations, publish, fork, mount, unmount,
 * destroy; it is taken after the table lock is released (eosd_session_get()).
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "fs/view.h"
#include "supervisor/fusepool.h"
#include "supervisor/session.h"

enum {
	EOSD_SESSION_MOUNTS = 8, /* the runtime mount and up to 7 of mount_workspace_session */
};

/* One mount of a session's view, served by the daemon's FUSE workers (supervisor/fusepool.h). */
struct eosd_mount {
	char *path;
	struct eos_view_mount *m;
	uint64_t pool_id; /* its name in the FUSE workers' set; 0: not served */
};

struct eosd_session {
	char sandbox[EOS_SANDBOX_ID_MAX + 1];
	char name[EOS_SESSION_NAME_MAX + 1];
	unsigned refs; /* sessions->lock */
	pthread_mutex_t gate;
	/* under the gate: */
	bool dead; /* destroyed: handlers that waited for the gate answer not found */
	struct eos_view *view;
	struct eosd_mount mounts[EOSD_SESSION_MOUNTS]; /* [0]: <runtime>/sessions/<sb>/<name> */
	char *error; /* why it is not served (state "failed"), or NULL */
	int64_t created_ns;
};

struct eosd_sessions {
	/* what serves every session's view: the FUSE workers and the views' background thread */
	struct eosd_fusepool *fusepool;
	struct eos_view_flusher *flusher;
	pthread_mutex_t lock;
	struct eosd_session **v;
	size_t n, cap;
};

/*
 * The session of sandbox named name, referenced and with its gate held: -ENOENT naming it when
 * the daemon serves no such session (or it was destroyed meanwhile). Release with
 * eosd_session_put().
 */
int eosd_session_get(struct eosd *d, const char *sandbox, const char *name,
		     struct eosd_session **ret, struct eos_error *err);
/* Release the gate and the reference. NULL-safe. */
void eosd_session_put(struct eosd *d, struct eosd_session *s);

/*
 * Open the view of an existing store session, mount it at its runtime path and serve it, and
 * add it to the table (the gate is not held on return). On failure nothing is mounted and the
 * table is unchanged; the store session is left as it is.
 */
int eosd_session_serve(struct eosd *d, const char *sandbox, const char *name,
		       struct eosd_session **ret, struct eos_error *err);
/* Stop every mount, close the view, delete the session from the store and drop it from the
 * table; the caller holds the gate (and keeps its reference). */
int eosd_session_destroy_locked(struct eosd *d, struct eosd_session *s, struct eos_error *err);

/* <runtime>/sessions/<sandbox>/<name>. Caller owns *ret. */
int eosd_session_runtime_path(struct eosd *d, const char *sandbox, const char *name, char **ret);
/* Mount s's view at path (an existing empty directory) in slot i and start serving it. */
int eosd_mount_start(struct eosd *d, struct eosd_session *s, size_t i, const char *path,
		     struct eos_error *err);
/* Take slot i out of the FUSE workers, unmount it (when still mounted) and clear it. */
void eosd_mount_stop(struct eosd *d, struct eosd_mount *m);
/* Join and clear mounts whose serving ended (unmounted from outside), and forget them in the
 * .mounts list. Gate held. */
void eosd_session_reap(struct eosd *d, struct eosd_session *s);
/* Make sure the runtime mount (slot 0) is served, mounting it again when it was unmounted. */
int eosd_session_runtime_mount(struct eosd *d, struct eosd_session *s, struct eos_error *err);
/* Rewrite <runtime>/sessions/<sandbox>/<name>.mounts: the paths of slots 1.. (restored at
 * start). Failures are logged. */
void eosd_session_save_mounts(struct eosd *d, struct eosd_session *s);
/* At start: mount the view again at the directories the .mounts file lists. */
void eosd_session_restore_mounts(struct eosd *d, struct eosd_session *s);
/* Detach a dead (or foreign) mount left at path by a previous daemon; nothing when none. */
void eosd_mount_detach_stale(const char *path);

/* The views' eos_view_resolve_fn (ctx: the struct eosd). */
int eosd_resolve(void *ctx, pid_t pid, char *out, size_t size);

/* Fill out[size] with prefix and 12 random hex digits ("ws-" → "ws-3f09a1c2b4d5"). */
void eosd_random_id(const char *prefix, char *out, size_t size);
