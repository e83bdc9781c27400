/* SPDX-License-Identifier: MIT */
/* supervisor/ops: the handler table, and the token and daemon operations. */
#include "supervisor/ops.h"

#include <errno.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/errkind.h"
#include "common/json.h"

#include "supervisor/auth.h"
#include "supervisor/obs.h"
#include "supervisor/session.h"

json_t *
eosd_json_version(uint64_t v)
{
	char id[EOS_LAYER_ID_LEN];

	eos_layer_id_format(v, id);
	return json_string(id);
}

static int
op_issue_token(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const char *surface = json_string_value(json_object_get(c->args, "surface"));
	json_t *ttl = json_object_get(c->args, "ttl_seconds");
	struct eos_sandbox_info sb;
	int s = eos_surface_parse(surface ? surface : "");
	int r;

	if (s < 0)
		return eos_error_set(err, -EINVAL, "issue_token: argument 'surface': '%s'",
				     surface ? surface : "");
	r = eos_store_sandbox_get(d->store, c->sandbox_id, &sb, err);
	if (r < 0)
		return r;
	r = eosd_auth_issue(d->auth, (enum eos_surface)s, c->sandbox_id,
			    ttl ? (int64_t)json_integer_value(ttl) : 0, out, err);
	if (r == 0) /* never the token itself */
		eosd_obs_event(d->obs, "token.issued", c->sandbox_id, NULL,
			       json_pack("{s:O, s:s, s:O}", "token_id",
					 json_object_get(*out, "token_id"), "surface", surface,
					 "expires_at", json_object_get(*out, "expires_at")));
	return r;
}

static int
op_revoke_token(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const char *id = json_string_value(json_object_get(c->args, "token_id"));

	return eosd_auth_revoke(d->auth, id ? id : "", out, err);
}

/* ping: eosd answers, and says what the caller's token reaches (eos-mcp asks it so). */
static int
op_ping(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const struct eosd_caller *who = c->caller;

	(void)d, (void)err;
	if (!who) {
		*out = json_pack("{s:b}", "ok", 1);
		return *out ? 0 : -ENOMEM;
	}
	*out = json_pack("{s:b,s:{s:s,s:s?,s:s?}}", "ok", 1, "token", "surface",
			 eos_surface_name(who->surface), "sandbox_id", who->sandbox, "token_id",
			 who->token_id);
	return *out ? 0 : -ENOMEM;
}

static int
op_version(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	(void)d, (void)c, (void)err;
	*out = json_pack("{s:s, s:i}", "version", PACKAGE_VERSION, "api", 1);
	return *out ? 0 : -ENOMEM;
}

static const struct {
	const char *name;
	eosd_handler_fn fn;
} handlers[] = {
	{ "create_sandbox", eosd_op_create_sandbox },
	{ "list_sandboxes", eosd_op_list_sandboxes },
	{ "inspect_sandbox", eosd_op_inspect_sandbox },
	{ "destroy_sandbox", eosd_op_destroy_sandbox },
	{ "squash_layerstacks", eosd_op_squash_layerstacks },
	{ "export_changes", eosd_op_export_changes },
	{ "issue_token", op_issue_token },
	{ "revoke_token", op_revoke_token },
	{ "create_workspace_session", eosd_op_create_workspace_session },
	{ "list_workspace_sessions", eosd_op_list_workspace_sessions },
	{ "inspect_workspace_session", eosd_op_inspect_workspace_session },
	{ "publish_workspace_session", eosd_op_publish_workspace_session },
	{ "destroy_workspace_session", eosd_op_destroy_workspace_session },
	{ "mount_workspace_session", eosd_op_mount_workspace_session },
	{ "unmount_workspace_session", eosd_op_unmount_workspace_session },
	{ "fork_workspace_session", eosd_op_fork_workspace_session },
	{ "exec_command", eosd_op_exec_command },
	{ "write_command_stdin", eosd_op_write_command_stdin },
	{ "read_command_lines", eosd_op_read_command_lines },
	{ "file_read", eosd_op_file_read },
	{ "file_write", eosd_op_file_write },
	{ "file_edit", eosd_op_file_edit },
	{ "file_list", eosd_op_file_list },
	{ "file_blame", eosd_op_file_blame },
	{ "ping", op_ping },
	{ "version", op_version },
	{ "snapshot", eosd_op_snapshot },
	{ "trace", eosd_op_trace },
	{ "events", eosd_op_events },
	{ "cgroup", eosd_op_cgroup },
	{ "layerstack", eosd_op_layerstack },
};

json_t *
eosd_error_envelope(int kind, const char *message, json_t *details, const char *trace_id)
{
	EOS_CLEANUP(json_decrefp)
	json_t *e = json_pack("{s:s, s:s}", "kind", eos_errkind_name(kind), "message", message);

	if (!e) {
		json_decref(details);
		return NULL;
	}
	if (details && eos_json_set(e, "details", details) < 0)
		return NULL;
	if (trace_id && *trace_id && eos_json_set(e, "trace_id", json_string(trace_id)) < 0)
		return NULL;
	return json_pack("{s:O}", "error", e);
}

eosd_handler_fn
eosd_ops_handler(const struct eos_op *op)
{
	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
		if (strcmp(handlers[i].name, op->name) == 0)
			return handlers[i].fn;
	return NULL;
}
