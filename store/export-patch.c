/* SPDX-License-Identifier: MIT */
/*
 * The patch export: one `diff --git` section per changed file or symlink (store/git.h writes
 * them), which `git apply` accepts on a checkout of the older version. Directories have no
 * sections (git tracks none); files below a deleted directory are deletions. A deleted and a
 * created path with the same kind and content (non-empty files: size and digest; symlinks: the
 * target) become one exact rename. Deletions come first, so that a path freed by one (a file
 * replaced by a directory, or the reverse) is free when the patch creates it again.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/hashmap.h"

#include "store/export.h"
#include "store/git.h"

enum {
	FLUSH_BYTES = 1 << 20, /* write the patch out in pieces of about this size */
};

/* One section: a deletion, a creation, a modification or a rename. */
struct pitem {
	const char *old_path, *new_path;
	const struct eos_entry *old, *new; /* NULL: absent on that side */
	size_t renamed_to; /* deletions: the creation that took it over, or SIZE_MAX */
};

struct patchx {
	struct eos_export *x;
	struct pitem *v;
	size_t n, cap;
	struct eos_buf out;
	int fd;
	struct eos_error *err;
};

static void
patchx_release(struct patchx *p)
{
	free(p->v);
	eos_buf_release(&p->out);
}

static const struct eos_entry *
file_side(const struct eos_entry *e)
{
	return e->st.kind == EOS_KIND_FILE || e->st.kind == EOS_KIND_SYMLINK ? e : NULL;
}

/* A fifo or device on either side: git's format has no way to create or delete one. */
static int
check_special(struct patchx *p, const struct eos_export_change *c)
{
	enum eos_kind k = eos_kind_has_rdev(c->new.st.kind) || c->new.st.kind == EOS_KIND_FIFO
				  ? c->new.st.kind
				  : c->old.st.kind;

	if (!eos_kind_has_rdev(k) && k != EOS_KIND_FIFO)
		return 0;
	return eos_error_set(
		p->err, -EINVAL,
		"patch: '%s' is a %s, which a patch cannot hold (export as dir or tar)", c->path,
		eos_kind_name(k));
}

static int
items_collect(struct patchx *p, const struct eos_export_diff *d)
{
	for (size_t i = 0; i < d->n; i++) {
		const struct eos_export_change *c = &d->v[i];
		const struct eos_entry *old = file_side(&c->old), *new = file_side(&c->new);
		int r = check_special(p, c);

		if (r < 0)
			return r;
		if (!old && !new)
			continue;
		if (eos_buf_array_reserve(&p->v, &p->cap, p->n, sizeof(*p->v), 64) < 0)
			return -ENOMEM;
		p->v[p->n++] = (struct pitem){
			.old_path = old ? c->path : NULL,
			.new_path = new ? c->path : NULL,
			.old = old,
			.new = new,
			.renamed_to = SIZE_MAX,
		};
	}
	return 0;
}

/* --- exact renames ---------------------------------------------------------------------------- */

/* What makes two sides the same content: kind, then size and digest, or the target. */
static int
rename_key(const struct eos_entry *e, struct eos_buf *key)
{
	eos_buf_truncate(key, 0);
	if (e->st.kind == EOS_KIND_FILE && e->st.content.size == 0)
		return 0; /* empty files are all alike: never a rename */
	if (eos_buf_append_u8(key, (uint8_t)e->st.kind) < 0)
		return -ENOMEM;
	if (e->st.kind == EOS_KIND_SYMLINK)
		return e->target && eos_buf_append_str(key, e->target) < 0 ? -ENOMEM : 0;
	if (eos_buf_append_le64(key, e->st.content.size) < 0 ||
	    eos_buf_append(key, e->st.content.digest.b, EOS_DIGEST_LEN) < 0)
		return -ENOMEM;
	return 0;
}

/* Deletions by key: the map holds the first unused one (index + 1), next[] the others. */
static int
renames_index(struct patchx *p, struct eos_hashmap *m, size_t *next, struct eos_buf *key)
{
	for (size_t i = p->n; i-- > 0;) {
		union eos_hashmap_value *v;
		int r;

		next[i] = SIZE_MAX;
		if (p->v[i].new)
			continue;
		if ((r = rename_key(p->v[i].old, key)) < 0)
			return r;
		if (key->len == 0)
			continue;
		if ((r = eos_hashmap_get_or_insert(m, key->data, key->len, &v)) < 0)
			return r;
		next[i] = v->u64 ? v->u64 - 1 : SIZE_MAX;
		v->u64 = i + 1;
	}
	return 0;
}

static int
renames_pair(struct patchx *p)
{
	EOS_CLEANUP(eos_hashmap_release) struct eos_hashmap m = { 0 };
	EOS_CLEANUP(eos_buf_release) struct eos_buf key = { 0 };
	cleanup_free size_t *next = calloc(p->n ? p->n : 1, sizeof(*next));
	int r = next ? renames_index(p, &m, next, &key) : -ENOMEM;

	for (size_t j = 0; r == 0 && j < p->n; j++) {
		struct pitem *c = &p->v[j], *del;
		union eos_hashmap_value *v;

		if (c->old || (r = rename_key(c->new, &key)) < 0 || key.len == 0)
			continue;
		v = eos_hashmap_find(&m, key.data, key.len);
		if (!v || v->u64 == 0)
			continue;
		del = &p->v[v->u64 - 1];
		v->u64 = next[v->u64 - 1] == SIZE_MAX ? 0 : next[v->u64 - 1] + 1;
		del->renamed_to = j;
		c->old_path = del->old_path;
		c->old = del->old;
	}
	return r;
}

/* --- sections --------------------------------------------------------------------------------- */

static int
buf_sink(void *ctx, const void *p, size_t len, struct eos_error *err)
{
	(void)err;
	return eos_buf_append(ctx, p, len);
}

/* The bytes of a side: a file's content or a symlink's target. */
static int
side_data(struct patchx *p, const struct eos_entry *e, const char *path, struct eos_buf *ret)
{
	if (!e)
		return 0;
	if (e->st.kind == EOS_KIND_SYMLINK)
		return e->target ? eos_buf_append_str(ret, e->target) : -EBADMSG;
	return eos_export_content(p->x, e, path, buf_sink, ret, p->err);
}

static uint32_t
side_mode(const struct eos_entry *e)
{
	if (!e)
		return 0;
	if (e->st.kind == EOS_KIND_SYMLINK)
		return S_IFLNK | 0777;
	return S_IFREG | (e->st.attr.mode & 0777);
}

static int
flush(struct patchx *p, bool all)
{
	int r;

	if (p->out.len == 0 || (!all && p->out.len < FLUSH_BYTES))
		return 0;
	r = eos_export_write_all(p->fd, p->out.data, p->out.len);
	if (r < 0)
		return eos_error_set(p->err, r, "write the patch: %s", strerror(-r));
	eos_buf_truncate(&p->out, 0);
	return 0;
}

static void
count(struct patchx *p, const struct pitem *it)
{
	struct eos_export_result *res = p->x->res;

	if (!it->new) {
		res->deleted++;
		return;
	}
	res->renamed += it->old && strcmp(it->old_path, it->new_path) != 0;
	res->files += it->new->st.kind == EOS_KIND_FILE;
	res->symlinks += it->new->st.kind == EOS_KIND_SYMLINK;
	if (it->new->st.kind == EOS_KIND_FILE)
		res->bytes += it->new->st.content.size;
}

static int
write_item(struct patchx *p, const struct pitem *it)
{
	EOS_CLEANUP(eos_buf_release) struct eos_buf a = { 0 }, b = { 0 };
	struct eos_patch_file f = {
		.old_path = it->old_path,
		.new_path = it->new_path,
		.old_mode = side_mode(it->old),
		.new_mode = side_mode(it->new),
	};
	int r = side_data(p, it->old, it->old_path, &a);

	r = r ?: side_data(p, it->new, it->new_path, &b);
	if (r < 0)
		return r;
	f.old_data = a.data;
	f.old_len = a.len;
	f.new_data = b.data;
	f.new_len = b.len;
	r = eos_git_patch(&f, &p->out, p->err);
	if (r < 0)
		return eos_error_prefix(p->err, r, "patch '%s'",
					it->new_path ? it->new_path : it->old_path);
	count(p, it);
	return flush(p, false);
}

int
eos_export_patch(struct eos_export *x, const struct eos_export_diff *d, int fd,
		 struct eos_error *err)
{
	EOS_CLEANUP(patchx_release) struct patchx p = { .x = x, .fd = fd, .err = err };
	int r = items_collect(&p, d);
	size_t done = 0;

	r = r ?: renames_pair(&p);
	if (r == 0)
		eos_export_progress(x, 0, p.n, true);
	/* Deletions first (those that became renames are written with their creation). */
	for (size_t i = 0; r == 0 && i < p.n; i++)
		if (!p.v[i].new &&p.v[i].renamed_to == SIZE_MAX) {
			r = write_item(&p, &p.v[i]);
			eos_export_progress(x, ++done, p.n, false);
		}
	for (size_t i = 0; r == 0 && i < p.n; i++)
		if (p.v[i].new) {
			r = write_item(&p, &p.v[i]);
			eos_export_progress(x, ++done, p.n, false);
		}
	r = r ?: flush(&p, true);
	if (r == 0)
		eos_export_progress(x, p.n, p.n, true);
	return r;
}
