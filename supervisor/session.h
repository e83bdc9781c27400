/* SPDX-License-Identifier: MIT */
/*
 * supervisor/session: the workspace sessions eosd serves live — each one's view open and
 * mounted under the runtime directory, served in-process — and the runtime operations on them
 * and on files (the handlers follow supervisor/daemon.h's contract).
 *
 * Calling sequence: eosd_sessions_start() once the store is open (it serves every session the
 * store holds again: after a restart or a crash, dead mounts of the old daemon are detached and
 * remounted), the handlers while the daemon runs, eosd_sessions_stop() at shutdown (unmounts
 * every view and closes it; nothing acknowledged is lost). It is a bug to call a handler before
 * eosd_sessions_start() or after eosd_sessions_stop().
 */
#pragma once

#include "supervisor/daemon.h"

int eosd_sessions_start(struct eosd *d, struct eos_error *err);
void eosd_sessions_stop(struct eosd *d);

/* Sessions of sandbox the daemon serves (destroy_sandbox refuses while any exists). */
size_t eosd_sessions_count(struct eosd *d, const char *sandbox);
/* Stop and delete every session of sandbox (destroy_sandbox with force). */
int eosd_sessions_destroy_all(struct eosd *d, const char *sandbox, struct eos_error *err);
/* Sessions served and views mounted, for status. */
size_t eosd_sessions_served(struct eosd *d);
/*
 * The sessions of sandbox as snapshot shows them (doc/observability.md): each one's id, state,
 * base, mounts, created and delta ({"paths", "bytes"}), or its error; a session whose delta
 * cannot be read is listed with "status": "partial" and why. *ret: a new array.
 */
int eosd_sessions_describe(struct eosd *d, const char *sandbox, json_t **ret,
			   struct eos_error *err);

/* A session's base and the paths its delta changes (in the view's order), with their bytes. */
struct eosd_session_delta {
	uint64_t base;
	char **paths; /* owned */
	size_t n, cap;
	uint64_t bytes;
};
/* -ENOENT naming it when eosd serves no such session; -EIO when it is not served. */
int eosd_session_delta(struct eosd *d, const char *sandbox, const char *name,
		       struct eosd_session_delta *ret, struct eos_error *err);
void eosd_session_delta_release(struct eosd_session_delta *dl);

struct eosd_ns_opts; /* supervisor/commands.h */
/*
 * Create a session of sandbox named id (NULL: ws-<hex>) at version (0: the head), serve it and
 * start its holder with o (NULL: the defaults), waiting until it is ready; its name into
 * ret_name[EOS_SESSION_NAME_MAX + 1] (may be NULL) and create's answer into *out (may be NULL).
 * On failure nothing of it is left.
 */
int eosd_session_create(struct eosd *d, const char *sandbox, const char *id, uint64_t version,
			const struct eosd_ns_opts *o, char *ret_name, json_t **out,
			struct eos_error *err);
/* Destroy a session (its holder and processes, its view, its delta). */
int eosd_session_destroy(struct eosd *d, const char *sandbox, const char *name,
			 struct eos_error *err);
/* Publish an implicit session and destroy it; the publish's outcome (a new reference). */
json_t *eosd_session_finalize_implicit(struct eosd *d, const char *sandbox, const char *name);

int eosd_op_exec_command(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err);
int eosd_op_write_command_stdin(struct eosd *d, struct eosd_call *c, json_t **out,
				struct eos_error *err);
int eosd_op_read_command_lines(struct eosd *d, struct eosd_call *c, json_t **out,
			       struct eos_error *err);
int eosd_op_create_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				     struct eos_error *err);
int eosd_op_list_workspace_sessions(struct eosd *d, struct eosd_call *c, json_t **out,
				    struct eos_error *err);
int eosd_op_inspect_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				      struct eos_error *err);
int eosd_op_publish_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				      struct eos_error *err);
int eosd_op_destroy_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				      struct eos_error *err);
int eosd_op_mount_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				    struct eos_error *err);
int eosd_op_unmount_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				      struct eos_error *err);
int eosd_op_fork_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				   struct eos_error *err);
int eosd_op_file_read(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err);
int eosd_op_file_write(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err);
int eosd_op_file_edit(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err);
int eosd_op_file_list(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err);
int eosd_op_file_blame(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err);
