/* SPDX-License-Identifier: MIT */
/* eos-store read-only commands: ls, cat, stat, log, leases (see cli/eos-store.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/json.h"
#include "common/path.h"

#include "cli/eos-store.h"

enum {
	CAT_PIECE = 1 << 20, /* bytes per pread */
};

json_t *
tool_json_rows(const void *items, size_t n, size_t size, tool_row_fn row)
{
	json_t *rows = json_array();

	for (size_t i = 0; rows && i < n; i++)
		if (eos_json_push(rows, row((const char *)items + i * size)) < 0) {
			json_decref(rows);
			rows = NULL;
		}
	return rows;
}

static json_t *
skipped_row(const void *item)
{
	return json_pack("{s:o,s:s}", "path", tool_json_str(*(char *const *)item), "kind",
			 "socket");
}

json_t *
tool_json_skipped(char *const *paths, size_t n)
{
	return tool_json_rows(paths, n, sizeof(*paths), skipped_row);
}

json_t *
tool_json_rdev(uint64_t rdev)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%u:%u", major(rdev), minor(rdev));
	return json_string(buf);
}

/* --- ls --------------------------------------------------------------------------------------- */

static json_t *
sandbox_row(const void *item)
{
	const struct eos_sandbox_info *sb = item;

	return json_pack("{s:o,s:o,s:o,s:I,s:o,s:o}", "id", tool_json_str(sb->id), "head",
			 tool_json_layer(sb->head), "base", tool_json_layer(sb->base), "layers",
			 (json_int_t)sb->layers, "created", tool_json_time(sb->created_ns),
			 "source", tool_json_str(sb->source));
}

static int
list_sandboxes(struct tool *t)
{
	cleanup_free struct eos_sandbox_info *sbs = NULL;
	EOS_CLEANUP(json_decrefp) json_t *rows = NULL;
	struct eos_error err = { 0 };
	size_t n = 0;
	int r;

	r = tool_open(t, false);
	if (r != TOOL_OK)
		return r;
	r = eos_store_sandbox_list(t->st, &sbs, &n, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	rows = tool_json_rows(sbs, n, sizeof(*sbs), sandbox_row);
	if (!rows)
		return tool_failf(t, -ENOMEM, "out of memory");
	return tool_output(t, json_pack("{s:O}", "sandboxes", rows), TOOL_RENDER_TABLES);
}

/* One listing row; name last so that text tables read like ls -l. */
static json_t *
entry_row(const char *name, const struct eos_stat *s)
{
	json_t *row = json_pack("{s:s,s:o,s:I,s:o,s:o,s:o}", "kind", tool_kind_name(s->kind),
				"mode", tool_json_mode(s->attr.mode), "size", (json_int_t)s->size,
				"mtime", tool_json_time(s->attr.mtime_ns), "version",
				tool_json_layer(s->version), "name", tool_json_str(name));

	/* a device's "major:minor" follows its name, as a symlink's target does */
	if (row && eos_kind_has_rdev(s->kind) &&
	    eos_json_set(row, "rdev", tool_json_rdev(s->rdev)) < 0) {
		json_decref(row);
		return NULL;
	}
	return row;
}

struct ls_ctx {
	json_t *rows;
	const char *dir; /* the listed directory */
	char **paths;	 /* tree paths of the rows, for readlink */
	size_t n, cap;
};

static void
ls_ctx_release(struct ls_ctx *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->paths[i]);
	free(c->paths);
	json_decref(c->rows);
}

static int
ls_push(struct ls_ctx *c, char *path, const char *name, const struct eos_stat *s)
{
	if (eos_buf_array_reserve(&c->paths, &c->cap, c->n, sizeof(*c->paths), 64) < 0) {
		free(path);
		return -ENOMEM;
	}
	c->paths[c->n++] = path;
	return eos_json_push(c->rows, entry_row(name, s));
}

/* eos_readdir_fn: one child of c->dir. */
static int
ls_add(void *ctx, const char *name, const struct eos_stat *s)
{
	struct ls_ctx *c = ctx;
	char *path = NULL;

	if (eos_path_join(c->dir, name, &path) < 0)
		return -ENOMEM;
	return ls_push(c, path, name, s);
}

/* Add "target" to the symlink rows (after the scan: no store reads inside its callback). */
static int
ls_add_targets(struct eos_store *st, const char *sandbox, uint64_t v, struct ls_ctx *c,
	       struct eos_error *err)
{
	for (size_t i = 0; i < c->n; i++) {
		json_t *row = json_array_get(c->rows, i);
		cleanup_free char *target = NULL;
		int r;

		if (strcmp(json_string_value(json_object_get(row, "kind")), "symlink") != 0)
			continue;
		r = eos_store_readlink(st, sandbox, v, c->paths[i], &target, err);
		if (r < 0)
			return r;
		if (eos_json_set(row, "target", tool_json_str(target)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Fill c with the listing of path: its children, or the path itself when not a directory. */
static int
ls_collect(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
	   struct ls_ctx *c, struct eos_error *err)
{
	const char *name;
	struct eos_stat s;
	char *copy;
	size_t plen;
	int r;

	r = eos_store_stat(st, sandbox, v, path, &s, err);
	if (r < 0)
		return r;
	c->dir = path;
	if (s.kind == EOS_KIND_DIR)
		r = eos_store_readdir(st, sandbox, v, path, NULL, ls_add, c, err);
	else {
		eos_path_split(path, &plen, &name);
		copy = strdup(path);
		r = copy ? ls_push(c, copy, name, &s) : -ENOMEM;
	}
	if (r < 0)
		return r;
	return ls_add_targets(st, sandbox, v, c, err);
}

static int
list_dir(struct tool *t, const struct tool_args *a)
{
	EOS_CLEANUP(ls_ctx_release) struct ls_ctx c = { .rows = json_array() };
	cleanup_free char *path = NULL;
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	uint64_t v;
	int r;

	if (!c.rows)
		return tool_failf(t, -ENOMEM, "out of memory");
	r = tool_sandbox_path(t, a, &sb, &v, &path);
	if (r != TOOL_OK)
		return r;
	r = ls_collect(t->st, sb.id, v, path, &c, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	return tool_output(t,
			   json_pack("{s:o,s:o,s:o,s:O}", "sandbox", tool_json_str(sb.id),
				     "version", tool_json_layer(v), "path", tool_json_str(path),
				     "entries", c.rows),
			   TOOL_RENDER_TABLES);
}

int
tool_cmd_ls(struct tool *t, const struct tool_args *a)
{
	if (!a->sandbox && (a->npos > 0 || a->version))
		return tool_usage(t, "ls PATH and --version need --sandbox ID");
	if (!a->sandbox)
		return list_sandboxes(t);
	return list_dir(t, a);
}

/* --- cat -------------------------------------------------------------------------------------- */

/* Write all of buf to fd; -EPIPE when the reader went away. */
static int
write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return eos_neg_errno();
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Copy the whole file to stdout in CAT_PIECE reads. */
static int
cat_stream(struct eos_file *f, const char *path, struct eos_error *err)
{
	cleanup_free char *buf = malloc(CAT_PIECE);
	uint64_t off = 0;
	ssize_t n;
	int r;

	if (!buf)
		return eos_error_set(err, -ENOMEM, "out of memory");
	while ((n = eos_file_pread(f, buf, CAT_PIECE, off, err)) > 0) {
		r = write_all(STDOUT_FILENO, buf, (size_t)n);
		if (r == -EPIPE)
			return 0;
		if (r < 0)
			return eos_error_set(err, r, "write to stdout: %s", strerror(-r));
		off += (uint64_t)n;
	}
	if (n < 0)
		return eos_error_prefix(err, (int)n, "read '%s'", path);
	return 0;
}

int
tool_cmd_cat(struct tool *t, const struct tool_args *a)
{
	EOS_CLEANUP(eos_file_closep) struct eos_file *f = NULL;
	cleanup_free char *path = NULL;
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	uint64_t v;
	int r;

	r = tool_sandbox_path(t, a, &sb, &v, &path);
	if (r != TOOL_OK)
		return r;
	r = eos_store_file_open(t->st, sb.id, v, path, &f, &err);
	if (r >= 0)
		r = cat_stream(f, path, &err);
	return r < 0 ? tool_fail(t, r, &err) : TOOL_OK;
}

/* --- stat ------------------------------------------------------------------------------------- */

static int
xattr_add(void *ctx, const char *name, const void *value, size_t len)
{
	(void)value;
	return eos_json_push(
		ctx, json_pack("{s:o,s:I}", "name", tool_json_str(name), "size", (json_int_t)len));
}

static json_t *
stat_doc(const char *sandbox, const char *path, const struct eos_stat *s)
{
	return json_pack("{s:o,s:o,s:s,s:o,s:I,s:I,s:o,s:I,s:o,s:o,s:I,s:I,s:I}", "sandbox",
			 tool_json_str(sandbox), "path", tool_json_str(path), "kind",
			 tool_kind_name(s->kind), "mode", tool_json_mode(s->attr.mode), "uid",
			 (json_int_t)s->attr.uid, "gid", (json_int_t)s->attr.gid, "mtime",
			 tool_json_time(s->attr.mtime_ns), "mtime_ns", (json_int_t)s->attr.mtime_ns,
			 "version", tool_json_layer(s->version), "floor", tool_json_layer(s->floor),
			 "link_group", (json_int_t)s->link_group, "size", (json_int_t)s->size,
			 "nxattrs", (json_int_t)s->nxattrs);
}

/* Kind-specific fields: content of files, target of symlinks, xattrs of everything. */
static int
stat_details(struct eos_store *st, const char *sandbox, uint64_t v, const char *path,
	     const struct eos_stat *s, json_t *doc, struct eos_error *err)
{
	cleanup_free char *target = NULL;
	json_t *xattrs = json_array();
	int r = 0;

	if (s->kind == EOS_KIND_FILE)
		r = eos_json_set(doc, "content_kind", json_string(tool_content_kind_name(
							      s->content.kind))) ?:
		    eos_json_set(doc, "content_size", eos_json_u64(s->content.size)) ?:
		    eos_json_set(doc, "digest", eos_json_digest(&s->content.digest)) ?:
		    eos_json_set(doc, "inline_len", eos_json_u64(s->content.inline_len));
	if (r == 0 && s->kind == EOS_KIND_SYMLINK) {
		r = eos_store_readlink(st, sandbox, v, path, &target, err);
		if (r == 0)
			r = eos_json_set(doc, "target", tool_json_str(target));
	}
	if (r == 0 && eos_kind_has_rdev(s->kind))
		r = eos_json_set(doc, "rdev", tool_json_rdev(s->rdev));
	if (r == 0 && s->nxattrs > 0 && xattrs)
		r = eos_store_xattrs(st, sandbox, v, path, xattr_add, xattrs, err);
	if (r == 0)
		return eos_json_set(doc, "xattrs", xattrs);
	json_decref(xattrs);
	return r;
}

int
tool_cmd_stat(struct tool *t, const struct tool_args *a)
{
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	cleanup_free char *path = NULL;
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	struct eos_stat s;
	uint64_t v;
	int r;

	r = tool_sandbox_path(t, a, &sb, &v, &path);
	if (r != TOOL_OK)
		return r;
	r = eos_store_stat(t->st, sb.id, v, path, &s, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	doc = stat_doc(sb.id, path, &s);
	if (!doc)
		return tool_failf(t, -ENOMEM, "out of memory");
	r = stat_details(t->st, sb.id, v, path, &s, doc, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	return tool_output(t, TAKE_PTR(doc), TOOL_RENDER_ALL);
}

/* --- log -------------------------------------------------------------------------------------- */

static json_t *
layer_row(const void *item)
{
	const struct eos_layer_info *l = item;

	return json_pack("{s:o,s:o,s:o,s:o,s:I,s:I,s:I,s:I,s:o}", "id", tool_json_layer(l->version),
			 "parent", tool_json_layer(l->parent), "owner", tool_json_str(l->owner),
			 "created", tool_json_time(l->created_ns), "paths_created",
			 (json_int_t)l->created, "paths_modified", (json_int_t)l->modified,
			 "paths_deleted", (json_int_t)l->deleted, "bytes", (json_int_t)l->bytes,
			 "squashed_from", tool_json_layer(l->squashed_from));
}

int
tool_cmd_log(struct tool *t, const struct tool_args *a)
{
	cleanup_free struct eos_layer_info *layers = NULL;
	EOS_CLEANUP(json_decrefp) json_t *rows = NULL;
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	size_t n = 0;
	int r;

	r = tool_sandbox(t, a->sandbox, &sb);
	if (r != TOOL_OK)
		return r;
	r = eos_store_layer_list(t->st, sb.id, &layers, &n, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	rows = tool_json_rows(layers, n, sizeof(*layers), layer_row);
	if (!rows)
		return tool_failf(t, -ENOMEM, "out of memory");
	return tool_output(t,
			   json_pack("{s:o,s:o,s:O}", "sandbox", tool_json_str(sb.id), "head",
				     tool_json_layer(sb.head), "layers", rows),
			   TOOL_RENDER_TABLES);
}

/* --- leases ----------------------------------------------------------------------------------- */

static json_t *
lease_row(const void *item)
{
	const struct eos_lease_info *l = item;

	return json_pack("{s:o,s:o,s:o}", "name", tool_json_str(l->name), "version",
			 tool_json_layer(l->version), "created", tool_json_time(l->created_ns));
}

int
tool_cmd_leases(struct tool *t, const struct tool_args *a)
{
	cleanup_free struct eos_lease_info *leases = NULL;
	EOS_CLEANUP(json_decrefp) json_t *rows = NULL;
	struct eos_error err = { 0 };
	struct eos_sandbox_info sb;
	size_t n = 0;
	int r;

	r = tool_sandbox(t, a->sandbox, &sb);
	if (r != TOOL_OK)
		return r;
	r = eos_store_lease_list(t->st, sb.id, &leases, &n, &err);
	if (r < 0)
		return tool_fail(t, r, &err);
	rows = tool_json_rows(leases, n, sizeof(*leases), lease_row);
	if (!rows)
		return tool_failf(t, -ENOMEM, "out of memory");
	return tool_output(t,
			   json_pack("{s:o,s:O}", "sandbox", tool_json_str(sb.id), "leases", rows),
			   TOOL_RENDER_TABLES);
}
