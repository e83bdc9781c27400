/* SPDX-License-Identifier: MIT */
/* eos-store: workspace session commands (sessions, delta, rm-session). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/json.h"

#include "cli/eos-store.h"
#include "fs/view.h"

static json_t *
session_row(const void *item)
{
	const struct eos_session_info *s = item;

	return json_pack("{s:o,s:o,s:o}", "name", tool_json_str(s->name), "version",
			 tool_json_layer(s->version), "created", tool_json_time(s->created_ns));
}

int
tool_cmd_sessions(struct tool *t, const struct tool_args *a)
{
	cleanup_free struct eos_session_info *v = NULL;
	EOS_CLEANUP(json_decrefp) json_t *rows = NULL;
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	size_t n = 0;
	int r = tool_sandbox(t, a->sandbox, &sb);

	if (r != TOOL_OK)
		return r;
	r = eos_store_session_list(t->st, sb.id, &v, &n, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	rows = tool_json_rows(v, n, sizeof(*v), session_row);
	if (!rows)
		return tool_failf(t, -ENOMEM, "out of memory");
	return tool_output(
		t, json_pack("{s:o,s:O}", "sandbox", tool_json_str(sb.id), "sessions", rows),
		TOOL_RENDER_TABLES);
}

static const char *
type_name(uint32_t mode)
{
	if ((mode & S_IFMT) == 0)
		return "-";
	if (S_ISSOCK(mode))
		return "socket"; /* never published: eos_view_publish() lists it as skipped */
	return tool_kind_name(eos_kind_of_mode(mode));
}

static json_t *
writes_of(const struct eos_delta_entry *e)
{
	json_t *w = json_array();

	for (size_t i = 0; w && i < e->nranges; i++)
		if (eos_json_push(
			    w, json_pack("{s:o,s:o,s:o}", "start", eos_json_u64(e->ranges[i].start),
					 "end", eos_json_u64(e->ranges[i].end), "owner",
					 tool_json_str(e->ranges[i].owner ? e->ranges[i].owner
									  : "unknown"))) < 0) {
			json_decref(w);
			return NULL;
		}
	return w;
}

static int
delta_row(void *ctx, const struct eos_delta_entry *e)
{
	json_t *row = json_pack(
		"{s:o,s:s,s:s,s:o,s:o,s:o,s:o,s:b,s:o,s:o}", "path", tool_json_str(e->path),
		"change", eos_delta_change_name(e->change), "type", type_name(e->mode), "mode",
		e->mode ? tool_json_mode(e->mode & 07777) : json_null(), "node",
		eos_json_u64(e->node), "size", eos_json_u64(e->size), "origin",
		e->origin ? tool_json_str(e->origin) : json_null(), "renamed", e->renamed, "target",
		e->target ? tool_json_str(e->target) : json_null(), "writes", writes_of(e));

	if (row && (S_ISCHR(e->mode) || S_ISBLK(e->mode)) &&
	    eos_json_set(row, "rdev", tool_json_rdev(e->rdev)) < 0) {
		json_decref(row);
		return -ENOMEM;
	}
	return eos_json_push(ctx, row);
}

int
tool_cmd_delta(struct tool *t, const struct tool_args *a)
{
	EOS_CLEANUP(eos_view_closep) struct eos_view *v = NULL;
	EOS_CLEANUP(json_decrefp) json_t *rows = json_array();
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	int r = tool_sandbox(t, a->sandbox, &sb);

	if (r != TOOL_OK)
		return r;
	struct eos_view_options o = { .store = t->st, .sandbox = sb.id, .session = a->pos[0] };
	r = eos_view_open(&o, &v, &err);
	if (r == 0)
		r = rows ? eos_view_delta(v, delta_row, rows, &err) : -ENOMEM;
	if (r < 0)
		return tool_fail(t, r, &err);
	return tool_output(t,
			   json_pack("{s:o,s:o,s:o,s:O}", "sandbox", tool_json_str(sb.id),
				     "session", tool_json_str(a->pos[0]), "version",
				     tool_json_layer(eos_view_version(v)), "changes", rows),
			   TOOL_RENDER_TABLES);
}

int
tool_cmd_rm_session(struct tool *t, const struct tool_args *a)
{
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	int r = tool_sandbox(t, a->sandbox, &sb);

	if (r != TOOL_OK)
		return r;
	r = eos_store_session_remove(t->st, sb.id, a->pos[0], &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	return tool_output(t,
			   json_pack("{s:o,s:o,s:b}", "sandbox", tool_json_str(sb.id), "session",
				     tool_json_str(a->pos[0]), "removed", 1),
			   TOOL_RENDER_ALL);
}
