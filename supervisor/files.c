/* SPDX-License-Identifier: MIT */
/*
 * supervisor/files: the file operations (supervisor/files.h). In a session they go through the
 * session's live view itself (fs/view.h, "path operations for a host"), never through a mount
 * of it: a syscall of eosd on its own mount would wait on eosd's own server threads (a SIGKILL
 * then leaves eosd unkillable) and at the view's live-publish gate. The view resolves paths
 * inside itself (a symlink leading out is refused), and a write names its owner (the request's
 * operation) explicitly, so its blame is exact.
 */
#include "supervisor/files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/json.h"

#include "supervisor/session-internal.h"

static const char *
arg_str(const struct eosd_call *c, const char *name)
{
	return json_string_value(json_object_get(c->args, name));
}

/* The view's error in the words the file operations have always used (doc/sessions.md). */
static int
path_error(const char *path, int r, struct eos_error *err)
{
	switch (r) {
	case -EXDEV:
	case -ELOOP:
		return eos_error_set(err, -EINVAL,
				     "path '%s': leads out of the sandbox (a symlink pointing "
				     "outside it)",
				     path);
	case -ENOENT:
		return eos_error_set(err, r, "path '%s': no such file or directory", path);
	case -EISDIR:
	case -EINVAL:
	case -ENOMEM:
	case -EIO:
		return r; /* the view's message names the path */
	default:
		return eos_error_set(err, r, "path '%s': %s", path, strerror(-r));
	}
}

/* The session's view, the session's gate held until eosd_session_put(). */
static int
session_view(struct eosd *d, struct eosd_call *c, struct eosd_session **ret, struct eos_error *err)
{
	struct eosd_session *s = NULL;
	int r = eosd_session_get(d, c->sandbox_id, arg_str(c, "workspace_session_id"), &s, err);

	if (r == 0 && !s->view)
		r = eos_error_set(err, -EIO, "session '%s' is not served: %s", s->name,
				  s->error ? s->error : "no view");
	if (r < 0) {
		eosd_session_put(d, s);
		return r;
	}
	*ret = s;
	return 0;
}

/* A regular file: -EISDIR or -EINVAL naming path otherwise. */
static int
check_regular(struct eos_view *v, const char *path, struct eos_error *err)
{
	struct stat st;
	int r = eos_view_path_stat(v, path, &st, err);

	if (r < 0)
		return path_error(path, r, err);
	if (!S_ISREG(st.st_mode))
		return eos_error_set(err, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL,
				     "path '%s': not a regular file", path);
	return 0;
}

/* Read path to its end into l (file_read) or buf (file_edit, at most EOSD_EDIT_MAX bytes). */
static int
read_all(struct eos_view *v, const char *path, struct eosd_lines *l, struct eos_buf *buf,
	 struct eos_error *err)
{
	cleanup_free char *block = malloc(EOSD_BLOCK);
	uint64_t off = 0;
	ssize_t n;
	int r = block ? check_regular(v, path, err) : eos_error_set(err, -ENOMEM, "out of memory");

	while (r == 0 && (n = eos_view_path_read(v, path, off, block, EOSD_BLOCK, err)) != 0) {
		if (n < 0)
			return path_error(path, (int)n, err);
		off += (uint64_t)n;
		if (buf && buf->len + (size_t)n > EOSD_EDIT_MAX)
			return eos_error_set(err, -EFBIG,
					     "path '%s': above the %d MiB file_edit "
					     "takes",
					     path, EOSD_EDIT_MAX >> 20);
		if (l ? eosd_lines_feed(l, block, (size_t)n)
		      : eos_buf_append(buf, block, (size_t)n))
			return eos_error_set(err, -ENOMEM, "out of memory");
	}
	return r;
}

static int
session_read(struct eosd *d, struct eosd_call *c, const char *path, json_t **out,
	     struct eos_error *err)
{
	struct eosd_session *s = NULL;
	struct eosd_lines l;
	int r = session_view(d, c, &s, err);

	if (r < 0)
		return r;
	eosd_lines_init(&l, (uint64_t)json_integer_value(json_object_get(c->args, "offset")),
			(uint64_t)json_integer_value(json_object_get(c->args, "limit")));
	r = read_all(s->view, path, &l, NULL, err);
	if (r == 0 && !(*out = eosd_lines_json(&l, path)))
		r = eos_error_set(err, -ENOMEM, "out of memory");
	eos_buf_release(&l.out);
	eosd_session_put(d, s);
	return r;
}

/* --- writes ------------------------------------------------------------------------------------
 */

static int
session_write_text(struct eosd_call *c, struct eosd_session *s, const char *path,
		   const struct eos_buf *text, json_t **out, struct eos_error *err)
{
	char owner[EOS_OWNER_MAX + 1];
	int r;

	if (c->request_id)
		snprintf(owner, sizeof(owner), "operation:%s", c->request_id);
	else
		snprintf(owner, sizeof(owner), "workspace_session:%s", s->name);
	r = eos_view_path_write(s->view, path, text->data, text->len, c->request_id ? owner : NULL,
				EOS_VIEW_WRITE_PARENTS, err);
	if (r < 0)
		return path_error(path, r, err);
	*out = json_pack("{s:s,s:s,s:s,s:o}", "path", path, "workspace_session_id", s->name,
			 "owner", owner, "bytes", eos_json_u64(text->len));
	return *out ? 0 : eos_error_set(err, -ENOMEM, "out of memory");
}

static int
session_write(struct eosd *d, struct eosd_call *c, const char *path, const struct eos_buf *text,
	      json_t **out, struct eos_error *err)
{
	struct eosd_session *s = NULL;
	int r = session_view(d, c, &s, err);

	if (r < 0)
		return r;
	r = session_write_text(c, s, path, text, out, err);
	eosd_session_put(d, s);
	return r;
}

static int
session_edit(struct eosd *d, struct eosd_call *c, const char *path, json_t **out,
	     struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf text = { 0 };
	struct eosd_session *s = NULL;
	size_t replaced = 0;
	int r = session_view(d, c, &s, err);

	if (r < 0)
		return r;
	r = read_all(s->view, path, NULL, &text, err);
	r = r ?: eosd_edits_apply(path, json_object_get(c->args, "edits"), &text, &replaced, err);
	r = r ?: session_write_text(c, s, path, &text, out, err);
	if (r == 0)
		eos_json_set(*out, "replacements", eos_json_u64(replaced));
	eosd_session_put(d, s);
	return r;
}

/* --- listing -----------------------------------------------------------------------------------
 */

static const char *
kind_of(mode_t mode)
{
	enum eos_kind k = eos_kind_of_mode(mode);

	return k == EOS_KIND_NONE ? (S_ISSOCK(mode) ? "socket" : "unknown") : eos_kind_name(k);
}

static int
list_rows(const struct eos_view_path_list *l, json_t *rows)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct eos_view_path_entry *e = &l->v[i];
		json_t *row = json_pack("{s:s,s:s,s:o,s:o}", "name", e->name, "kind",
					kind_of(e->mode), "size", eos_json_u64(e->size), "mode",
					json_sprintf("%04o", e->mode & 07777));

		if (!row || eos_json_push(rows, row) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int
session_list(struct eosd *d, struct eosd_call *c, const char *path, json_t **out,
	     struct eos_error *err)
{
	EOS_CLEANUP(json_decrefp) json_t *rows = json_array();
	struct eos_view_path_list l = { 0 };
	struct eosd_session *s = NULL;
	int r = session_view(d, c, &s, err);

	if (r < 0)
		return r;
	r = eos_view_path_list(s->view, path, &l, err);
	if (r < 0)
		r = path_error(path, r, err);
	else
		r = rows ? list_rows(&l, rows) : -ENOMEM;
	if (r == 0 && !(*out = json_pack("{s:s,s:s,s:O}", "path", path, "workspace_session_id",
					 s->name, "entries", rows)))
		r = -ENOMEM;
	eos_view_path_list_release(&l);
	eosd_session_put(d, s);
	return r == -ENOMEM ? eos_error_set(err, r, "out of memory") : r;
}

/* --- the handlers ------------------------------------------------------------------------------
 */

int
eosd_op_file_read(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const char *path = arg_str(c, "path");
	int r = eosd_path_check(path, err);

	if (r == 0 && arg_str(c, "workspace_session_id") && arg_str(c, "version"))
		r = eos_error_set(err, -EINVAL,
				  "argument 'version': reads a published version, not a session "
				  "(leave out workspace_session_id)");
	if (r < 0)
		return r;
	return arg_str(c, "workspace_session_id") ? session_read(d, c, path, out, err)
						  : eosd_head_read(d, c, path, out, err);
}

int
eosd_op_file_write(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const json_t *content = json_object_get(c->args, "content");
	const char *path = arg_str(c, "path");
	struct eos_buf text = { .data = (uint8_t *)json_string_value(content),
				.len = json_string_length(content) };
	int r = eosd_path_check(path, err);

	if (r == 0 && !path[0])
		r = eos_error_set(err, -EISDIR, "argument 'path': the root is a directory");
	if (r < 0)
		return r;
	return arg_str(c, "workspace_session_id") ? session_write(d, c, path, &text, out, err)
						  : eosd_head_write(d, c, path, &text, 0, out, err);
}

static int
head_edit(struct eosd *d, struct eosd_call *c, const char *path, json_t **out,
	  struct eos_error *err)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf text = { 0 };
	size_t replaced = 0;
	uint64_t base = 0;
	uint32_t mode = 0;
	int r = eosd_head_load(d, c->sandbox_id, path, &text, &base, &mode, err);

	r = r ?: eosd_edits_apply(path, json_object_get(c->args, "edits"), &text, &replaced, err);
	r = r ?: eosd_head_write(d, c, path, &text, base, out, err);
	if (r == 0)
		eos_json_set(*out, "replacements", eos_json_u64(replaced));
	return r;
}

int
eosd_op_file_edit(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const char *path = arg_str(c, "path");
	int r = eosd_path_check(path, err);

	if (r < 0)
		return r;
	return arg_str(c, "workspace_session_id") ? session_edit(d, c, path, out, err)
						  : head_edit(d, c, path, out, err);
}

int
eosd_op_file_list(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const char *path = arg_str(c, "path");
	int r = eosd_path_check(path ? path : "", err);

	if (r < 0)
		return r;
	return arg_str(c, "workspace_session_id")
		       ? session_list(d, c, path ? path : "", out, err)
		       : eosd_head_list(d, c, path ? path : "", out, err);
}
