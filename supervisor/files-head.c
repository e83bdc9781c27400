/* SPDX-License-Identifier: MIT */
/*
 * supervisor/files-head: file operations without a session — reads of the head through the
 * store, writes through the publish gate owned by operation:<request_id> (as `eos-store write`),
 * and file_blame.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/json.h"

#include "supervisor/commands.h"
#include "supervisor/files.h"
#include "supervisor/obs.h"
#include "supervisor/ops.h"
#include "supervisor/session-internal.h"

/*
 * path at version (0: the head) must be a regular file (symlinks are not followed at the
 * head).
 */
static int
stat_file(struct eosd *d, const char *sandbox, uint64_t version, const char *path,
	  struct eos_stat *st, struct eos_error *err)
{
	int r = eos_store_stat(d->store, sandbox, version, path, st, err);

	if (r == 0 && st->kind != EOS_KIND_FILE)
		r = eos_error_set(err, st->kind == EOS_KIND_DIR ? -EISDIR : -EINVAL,
				  "path '%s': a %s, not a regular file", path,
				  eos_kind_name(st->kind));
	return r;
}

int
eosd_head_read(struct eosd *d, struct eosd_call *c, const char *path, json_t **out,
	       struct eos_error *err)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	cleanup_free char *block = malloc(EOSD_BLOCK);
	struct eosd_lines l;
	struct eos_stat st;
	uint64_t off = 0;
	ssize_t n = 1;
	const char *ver = json_string_value(json_object_get(c->args, "version"));
	uint64_t version = 0;
	int r = block ? 0 : -ENOMEM;

	if (r == 0 && ver && eos_layer_id_parse(ver, &version) < 0)
		r = eos_error_set(err, -EINVAL, "argument 'version': '%s' is not a layer id", ver);
	r = r ?: stat_file(d, c->sandbox_id, version, path, &st, err);
	r = r ?: eos_store_file_open_content(d->store, &st.content, &f, err);
	if (r < 0)
		return r == -ENOMEM ? eos_error_set(err, r, "out of memory") : r;
	eosd_lines_init(&l, (uint64_t)json_integer_value(json_object_get(c->args, "offset")),
			(uint64_t)json_integer_value(json_object_get(c->args, "limit")));
	while (r == 0 && n > 0) {
		n = eos_file_pread(f, block, EOSD_BLOCK, off, err);
		if (n < 0)
			r = (int)n;
		else if (eosd_lines_feed(&l, block, (size_t)n) < 0)
			r = eos_error_set(err, -ENOMEM, "out of memory");
		off += n > 0 ? (uint64_t)n : 0;
	}
	if (r == 0 && !(*out = eosd_lines_json(&l, path)))
		r = eos_error_set(err, -ENOMEM, "out of memory");
	eos_buf_release(&l.out);
	return r;
}

static int
list_one(void *ctx, const char *name, const struct eos_stat *st)
{
	return eos_json_push(ctx, json_pack("{s:o,s:s,s:o,s:o}", "name",
					    eos_json_bytes(name, strlen(name)), "kind",
					    eos_kind_name(st->kind), "size", eos_json_u64(st->size),
					    "mode", json_sprintf("%04o", st->attr.mode & 07777)));
}

int
eosd_head_list(struct eosd *d, struct eosd_call *c, const char *path, json_t **out,
	       struct eos_error *err)
{
	EOS_CLEANUP(json_decrefp) json_t *rows = json_array();
	struct eos_stat st;
	int r = rows ? eos_store_stat(d->store, c->sandbox_id, 0, path, &st, err) : -ENOMEM;

	if (r == 0 && st.kind != EOS_KIND_DIR)
		r = eos_error_set(err, -ENOTDIR, "path '%s': a %s, not a directory", path,
				  eos_kind_name(st.kind));
	r = r ?: eos_store_readdir(d->store, c->sandbox_id, 0, path, NULL, list_one, rows, err);
	if (r == 0 && !(*out = json_pack("{s:s,s:O}", "path", path, "entries", rows)))
		r = -ENOMEM;
	return r == -ENOMEM ? eos_error_set(err, r, "out of memory") : r;
}

int
eosd_head_load(struct eosd *d, const char *sandbox, const char *path, struct eos_buf *text,
	       uint64_t *ret_version, uint32_t *ret_mode, struct eos_error *err)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	struct eos_sandbox_info sb;
	struct eos_stat st;
	ssize_t n;
	int r = eos_store_sandbox_get(d->store, sandbox, &sb, err);

	r = r ?: stat_file(d, sandbox, 0, path, &st, err);
	if (r == 0 && st.size > EOSD_EDIT_MAX)
		r = eos_error_set(err, -EFBIG,
				  "path '%s': %llu bytes, above the %d MiB file_edit takes", path,
				  (unsigned long long)st.size, EOSD_EDIT_MAX >> 20);
	r = r ?: eos_store_file_open(d->store, sandbox, sb.head, path, &f, err);
	if (r == 0 && eos_buf_reserve(text, st.size) < 0)
		r = eos_error_set(err, -ENOMEM, "out of memory");
	if (r < 0)
		return r;
	n = eos_file_pread(f, text->data, st.size, 0, err);
	if (n < 0)
		return (int)n;
	text->len = (size_t)n;
	if (text->data)
		text->data[n] = 0;
	*ret_version = sb.head;
	*ret_mode = st.attr.mode;
	return 0;
}

/* --- writes ------------------------------------------------------------------------------------
 */

static json_t *
write_json(const char *path, const char *rid, const char *owner,
	   const struct eos_publish_result *res)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o}", "path", path, "request_id", rid, "owner",
			 owner, "status", eos_publish_status_name(res->status), "version",
			 res->version ? eosd_json_version(res->version) : json_null(), "head",
			 eosd_json_version(res->head), "bytes", eos_json_u64(res->bytes));
}

int
eosd_head_write(struct eosd *d, struct eosd_call *c, const char *path, const struct eos_buf *text,
		uint64_t base, json_t **out, struct eos_error *err)
{
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	char rid[64], owner[EOS_OWNER_MAX + 1];
	struct eos_publish_result res = { 0 };
	struct eos_publish_file f = {
		.attr = { .mode = 0644,
			  .uid = getuid(),
			  .gid = getgid(),
			  .mtime_ns = eos_wall_ns() },
		.data = text->data ? (const void *)text->data : "",
		.len = text->len,
	};
	struct eos_write_range range = { .start = 0, .end = text->len, .owner = owner };
	struct eos_publish_options o = { .sandbox = c->sandbox_id, .owner = owner, .base = base };
	const char *id = eosd_request_id(c, rid, sizeof(rid));
	int r;

	snprintf(owner, sizeof(owner), "operation:%s", id);
	f.ranges = &range;
	f.nranges = text->len ? 1 : 0;
	r = eos_publish_begin(d->store, &o, &p, err);
	r = r ?: eos_publish_stage_parents(p, path, &f.attr, err);
	r = r ?: eos_publish_put_file(p, path, &f, err);
	r = r ?: eos_publish_commit(p, &res, err);
	eosd_obs_publish(d->obs, c->sandbox_id, NULL, &res, r, err);
	if (r == 0 && res.status == EOS_PUBLISH_REJECTED)
		r = eos_error_set(err, -ESTALE,
				  "path '%s': changed at the head meanwhile and the edit does not "
				  "merge: %s",
				  path, res.nconflicts ? res.conflicts[0].message : "conflict");
	else if (r == 0 && !(*out = write_json(path, id, owner, &res)))
		r = eos_error_set(err, -ENOMEM, "out of memory");
	eos_publish_result_release(&res);
	return r;
}

/* --- blame -------------------------------------------------------------------------------------
 */

/* The session an owner wrote from: workspace_session:<ws>, or a command of the sandbox (running
 * or retained) that ran in one; NULL when it is not known (an operation:<request id>, original). */
static json_t *
owner_session(struct eosd *d, const char *sandbox, const char *owner)
{
	struct eosd_command_place at;
	const char *ws = "workspace_session:", *op = "operation:";

	if (!strncmp(owner, ws, strlen(ws)))
		return json_string(owner + strlen(ws));
	if (!d->commands || strncmp(owner, op, strlen(op)) ||
	    eosd_commands_where(d->commands, owner + strlen(op), &at) < 0 ||
	    strcmp(at.sandbox, sandbox) || !at.session[0])
		return NULL;
	return json_string(at.session);
}

static json_t *
blame_row(struct eosd *d, const char *sandbox, const struct eos_blame_range *b)
{
	json_t *row = json_pack("{s:I,s:I,s:s}", "start_line", (json_int_t)b->start_line,
				"line_count", (json_int_t)b->line_count, "owner", b->owner);
	json_t *ws = row ? owner_session(d, sandbox, b->owner) : NULL;

	if (ws && json_object_set_new(row, "workspace_session_id", ws) < 0) {
		json_decref(row);
		return NULL;
	}
	return row;
}

int
eosd_op_file_blame(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	cleanup_free struct eos_blame_range *v = NULL;
	const char *path = json_string_value(json_object_get(c->args, "path"));
	const char *ver = json_string_value(json_object_get(c->args, "version"));
	EOS_CLEANUP(json_decrefp) json_t *rows = json_array();
	struct eos_sandbox_info sb;
	uint64_t version = 0;
	size_t n = 0;
	int r = eosd_path_check(path, err);

	if (r == 0 && ver && eos_layer_id_parse(ver, &version) < 0)
		r = eos_error_set(err, -EINVAL, "argument 'version': '%s' is not a layer id", ver);
	r = r ?: eos_store_sandbox_get(d->store, c->sandbox_id, &sb, err);
	if (r == 0 && version == 0)
		version = sb.head;
	r = r ?: eos_store_blame(d->store, c->sandbox_id, version, path, &v, &n, err);
	for (size_t i = 0; r == 0 && rows && i < n; i++)
		r = eos_json_push(rows, blame_row(d, c->sandbox_id, &v[i]));
	if (r == 0 && !(rows && (*out = json_pack("{s:s,s:o,s:O}", "path", path, "version",
						  eosd_json_version(version), "ranges", rows))))
		r = -ENOMEM;
	return r == -ENOMEM ? eos_error_set(err, r, "out of memory") : r;
}
