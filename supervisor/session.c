/* SPDX-License-Identifier: MIT */
/* supervisor/session: placeholder handlers until the sessions of eosd are built. */
#include "supervisor/session.h"

#include <errno.h>

int
eosd_sessions_start(struct eosd *d, struct eos_error *err)
{
	(void)d, (void)err;
	return 0;
}

void
eosd_sessions_stop(struct eosd *d)
{
	(void)d;
}

size_t
eosd_sessions_count(struct eosd *d, const char *sandbox)
{
	(void)d, (void)sandbox;
	return 0;
}

int
eosd_sessions_destroy_all(struct eosd *d, const char *sandbox, struct eos_error *err)
{
	(void)d, (void)sandbox, (void)err;
	return 0;
}

size_t
eosd_sessions_served(struct eosd *d)
{
	(void)d;
	return 0;
}

int
eosd_op_create_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				 struct eos_error *err)
{
	(void)d, (void)c, (void)out;
	return eos_error_set(err, -ENOSYS, "%s: not built yet", c->op->name);
}

int
eosd_op_list_workspace_sessions(struct eosd *d, struct eosd_call *c, json_t **out,
				struct eos_error *err)
{
	(void)d, (void)c, (void)out;
	return eos_error_set(err, -ENOSYS, "%s: not built yet", c->op->name);
}

int
eosd_op_inspect_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				  struct eos_error *err)
{
	(void)d, (void)c, (void)out;
	return eos_error_set(err, -ENOSYS, "%s: not built yet", c->op->name);
}

int
eosd_op_publish_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				  struct eos_error *err)
{
	(void)d, (void)c, (void)out;
	return eos_error_set(err, -ENOSYS, "%s: not built yet", c->op->name);
}

int
eosd_op_destroy_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				  struct eos_error *err)
{
	(void)d, (void)c, (void)out;
	return eos_error_set(err, -ENOSYS, "%s: not built yet", c->op->name);
}

int
eosd_op_mount_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				struct eos_error *err)
{
	(void)d, (void)c, (void)out;
	return eos_error_set(err, -ENOSYS, "%s: not built yet", c->op->name);
}

int
eosd_op_unmount_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				  struct eos_error *err)
{
	(void)d, (void)c, (void)out;
	return eos_error_set(err, -ENOSYS, "%s: not built yet", c->op->name);
}

int
eosd_op_fork_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
			       struct eos_error *err)
{
	(void)d, (void)c, (void)out;
	return eos_error_set(err, -ENOSYS, "%s: not built yet", c->op->name);
}

int
eosd_op_file_read(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	(void)d, (void)c, (void)out;
	return eos_error_set(err, -ENOSYS, "%s: not built yet", c->op->name);
}

int
eosd_op_file_write(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	(void)d, (void)c, (void)out;
	return eos_error_set(err, -ENOSYS, "%s: not built yet", c->op->name);
}

int
eosd_op_file_edit(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	(void)d, (void)c, (void)out;
	return eos_error_set(err, -ENOSYS, "%s: not built yet", c->op->name);
}

int
eosd_op_file_list(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	(void)d, (void)c, (void)out;
	return eos_error_set(err, -ENOSYS, "%s: not built yet", c->op->name);
}

int
eosd_op_file_blame(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	(void)d, (void)c, (void)out;
	return eos_error_set(err, -ENOSYS, "%s: not built yet", c->op->name);
}
