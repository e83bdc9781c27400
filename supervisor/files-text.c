/* SPDX-License-Identifier: MIT */
/* supervisor/files-text: what the file operations share — lines, edits, paths, request ids. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"

#include "supervisor/files.h"
#include "supervisor/session-internal.h"

void
eosd_lines_init(struct eosd_lines *l, uint64_t offset, uint64_t limit)
{
	*l = (struct eosd_lines){ .offset = offset, .limit = limit, .line = 1 };
	eos_buf_init(&l->out);
}

static bool
selected(const struct eosd_lines *l)
{
	return l->line >= l->offset && l->line - l->offset < l->limit;
}

static int
take(struct eosd_lines *l, const char *p, size_t n)
{
	if (!selected(l) || l->capped)
		return 0;
	if (l->out.len + n > EOSD_READ_MAX) {
		l->capped = true;
		return 0;
	}
	return eos_buf_append(&l->out, p, n);
}

int
eosd_lines_feed(struct eosd_lines *l, const char *p, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(p, '\n', n);
		size_t len = nl ? (size_t)(nl - p) + 1 : n;

		if (take(l, p, len) < 0)
			return -ENOMEM;
		if (selected(l) && !l->in_line && !l->capped)
			l->taken++;
		l->in_line = true;
		if (nl) {
			l->line++;
			l->in_line = false;
		}
		p += len;
		n -= len;
	}
	return 0;
}

json_t *
eosd_lines_json(struct eosd_lines *l, const char *path)
{
	uint64_t total = l->line - 1 + (l->in_line ? 1 : 0);
	bool more = total >= l->offset && total - l->offset + 1 > l->taken;
	json_t *doc = json_pack("{s:s,s:o,s:I,s:I,s:I,s:b}", "path", path, "content",
				eos_json_bytes((const char *)l->out.data, l->out.len), "offset",
				(json_int_t)l->offset, "lines", (json_int_t)l->taken, "total_lines",
				(json_int_t)total, "truncated", more || l->capped);

	eos_buf_release(&l->out);
	return doc;
}

/* --- edits -------------------------------------------------------------------------------------
 */

static size_t
count_matches(const struct eos_buf *text, const char *old, size_t olen)
{
	const char *p = (const char *)text->data, *end = p + text->len;
	size_t n = 0;

	while (p && (size_t)(end - p) >= olen) {
		p = memmem(p, (size_t)(end - p), old, olen);
		if (p) {
			n++;
			p += olen;
		}
	}
	return n;
}

/* Replace the first match (or every one) of old in text by new into out. */
static int
replace(const struct eos_buf *text, const char *old, size_t olen, const char *new, size_t nlen,
	bool all, struct eos_buf *out)
{
	const char *p = (const char *)text->data, *end = p + text->len;
	int r = 0;

	while (r == 0 && p) {
		const char *m = memmem(p, (size_t)(end - p), old, olen);

		if (!m)
			break;
		r = eos_buf_append(out, p, (size_t)(m - p));
		r = r ?: eos_buf_append(out, new, nlen);
		p = m + olen;
		if (!all)
			break;
	}
	return r ?: eos_buf_append(out, p, (size_t)(end - p));
}

static int
apply_one(const char *path, size_t i, const json_t *e, struct eos_buf *text, size_t *replaced,
	  struct eos_error *err)
{
	const json_t *o = json_object_get(e, "old_string"), *nw = json_object_get(e, "new_string");
	bool all = json_is_true(json_object_get(e, "replace_all"));
	size_t olen = json_string_length(o);
	struct eos_buf out;
	size_t n = olen ? count_matches(text, json_string_value(o), olen) : 0;

	if (n == 0)
		return eos_error_set(err, -EINVAL, "edit %zu: old_string not found in '%s'", i,
				     path);
	if (n > 1 && !all)
		return eos_error_set(err, -EINVAL,
				     "edit %zu: old_string matches %zu times in '%s' (give more "
				     "context to make it unique, or set replace_all)",
				     i, n, path);
	eos_buf_init(&out);
	if (replace(text, json_string_value(o), olen, json_string_value(nw), json_string_length(nw),
		    all, &out) < 0) {
		eos_buf_release(&out);
		return eos_error_set(err, -ENOMEM, "out of memory");
	}
	eos_buf_release(text);
	*text = out;
	*replaced += all ? n : 1;
	return 0;
}

int
eosd_edits_apply(const char *path, const json_t *edits, struct eos_buf *text, size_t *ret_replaced,
		 struct eos_error *err)
{
	struct eos_buf work;
	size_t replaced = 0;
	int r = 0;

	eos_buf_init(&work);
	if (eos_buf_append(&work, text->data, text->len) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; r == 0 && i < json_array_size(edits); i++)
		r = apply_one(path, i, json_array_get(edits, i), &work, &replaced, err);
	if (r < 0) {
		eos_buf_release(&work);
		return r;
	}
	eos_buf_release(text);
	*text = work;
	*ret_replaced = replaced;
	return 0;
}

/* --- paths and ids -----------------------------------------------------------------------------
 */

int
eosd_path_check(const char *path, struct eos_error *err)
{
	if (path[0] == '/')
		return eos_error_set(err, -EINVAL,
				     "path '%s': absolute; paths are relative to the sandbox root",
				     path);
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return eos_error_set(err, -EINVAL,
					     "path '%s': '..' leads out of the sandbox", path);
		p += n + (p[n] == '/');
	}
	return 0;
}

const char *
eosd_request_id(const struct eosd_call *c, char *buf, size_t size)
{
	if (c->request_id && c->request_id[0])
		return c->request_id;
	eosd_random_id("req-", buf, size);
	return buf;
}
