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
