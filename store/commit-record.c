/* SPDX-License-Identifier: MIT */
/*
 * Commit, per op: hard-link resolution (pass 2) and the record each op writes at V, with its
 * xattrs (pass 3). The driver is store/commit.c; the contract is in store/changeset.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/changeset.h"
#include "store/entry.h"
#include "store/sandbox.h"
#include "store/store-internal.h"

/* --- pass 2: hard links ----------------------------------------------------------------------- */

int
eos_commit_load_record(struct eos_commit *cx, struct eos_error *err)
{
	struct eos_sandbox_record *rec = &cx->record;
	int r;

	if (cx->record_loaded)
		return 0;
	if (cx->cs->new_sandbox) {
		memset(rec, 0, sizeof(*rec));
		memcpy(rec->id, cx->cs->sandbox, sizeof(rec->id));
		snprintf(rec->source, sizeof(rec->source), "%s", cx->cs->source);
		rec->created_ns = eos_store_now_ns();
	} else {
		r = eos_sandbox_record_get(cx->st, cx->sbx, rec, err);
		if (r < 0)
			return r;
	}
	if (rec->next_link_group == 0)
		rec->next_link_group = 1;
	cx->record_loaded = true;
	return 0;
}

static int
alloc_group(struct eos_commit *cx, uint64_t *ret, struct eos_error *err)
{
	int r = eos_commit_load_record(cx, err);

	if (r < 0)
		return r;
	*ret = cx->record.next_link_group++;
	cx->record_dirty = true;
	return 0;
}

static int
link_check_kind(const struct eos_commit_plan *p, enum eos_kind kind, struct eos_error *err)
{
	const char *target = p->op->target;

	switch (kind) {
	case EOS_KIND_FILE:
		return 0;
	case EOS_KIND_DIR:
		return eos_error_set(err, -EPERM, "hard link to directory '%s'", target);
	case EOS_KIND_SYMLINK:
	case EOS_KIND_FIFO:
	case EOS_KIND_CHR:
	case EOS_KIND_BLK:
		/* The store links regular files only. */
		return eos_error_set(err, -EINVAL,
				     "link '%s': target '%s' is a %s, not a regular file",
				     p->op->path, target, eos_kind_name(kind));
	case EOS_KIND_NONE:
	case EOS_KIND_WHITEOUT:
		break;
	}
	return eos_error_set(err, -ENOENT, "link '%s': target '%s' does not exist", p->op->path,
			     target);
}

static int
link_source_new(struct eos_commit *cx, const struct eos_commit_plan *p,
		struct eos_commit_link_source **ret, struct eos_error *err)
{
	const char *target = p->op->target;
	struct eos_entry *e = NULL;
	struct eos_commit_link_source *s;
	int r;

	r = eos_commit_overlay_lookup(cx, target, &e, err);
	if (r < 0)
		return r;
	r = link_check_kind(p, e ? e->st.kind : EOS_KIND_NONE, err);
	if (r >= 0 && !(s = calloc(1, sizeof(*s) + strlen(target) + 1)))
		r = -ENOMEM;
	if (r < 0) {
		eos_commit_entry_free(e);
		return r;
	}
	memcpy(s->path, target, strlen(target) + 1);
	s->e = *e;
	free(e);
	r = eos_hashmap_put(&cx->sources, s->path, strlen(s->path), s);
	if (r < 0) {
		eos_entry_release(&s->e);
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

static int
link_from_head(struct eos_commit *cx, struct eos_commit_plan *p, struct eos_error *err)
{
	const char *target = p->op->target;
	struct eos_commit_link_source *s = eos_hashmap_get(&cx->sources, target, strlen(target));
	int r;

	if (!s) {
		r = link_source_new(cx, p, &s, err);
		if (r < 0)
			return r;
	}
	if (s->e.st.link_group == 0) {
		r = alloc_group(cx, &s->e.st.link_group, err);
		if (r < 0)
			return r;
		s->e.st.version = cx->version;
		s->rewrite = true;
	}
	p->src_entry = &s->e;
	p->group = s->e.st.link_group;
	return 0;
}

static int link_resolve(struct eos_commit *cx, struct eos_commit_plan *p, struct eos_error *err);

static int
link_from_staged(struct eos_commit *cx, struct eos_commit_plan *p, struct eos_commit_plan *t,
		 struct eos_error *err)
{
	int r;

	if (t->op->kind == EOS_OP_LINK) {
		r = link_resolve(cx, t, err);
		if (r < 0)
			return r;
		p->src = t->src;
		p->src_entry = t->src_entry;
		p->group = t->group;
		return 0;
	}
	r = link_check_kind(p, t->kind, err);
	if (r >= 0 && t->group == 0)
		r = alloc_group(cx, &t->group, err);
	if (r < 0)
		return r;
	p->src = t;
	p->group = t->group;
	return 0;
}

static int
link_resolve(struct eos_commit *cx, struct eos_commit_plan *p, struct eos_error *err)
{
	const char *target = p->op->target;
	struct eos_commit_plan *t;
	int r;

	if (p->linked)
		return 0;
	if (p->linking)
		return eos_error_set(err, -ELOOP, "hard link '%s' loops", p->op->path);
	p->linking = true;
	t = eos_hashmap_get(&cx->staged, target, strlen(target));
	r = t ? link_from_staged(cx, p, t, err) : link_from_head(cx, p, err);
	p->linking = false;
	p->linked = r >= 0;
	return r;
}

int
eos_commit_link_all(struct eos_commit *cx, struct eos_error *err)
{
	for (size_t i = 0; i < cx->n; i++) {
		struct eos_commit_plan *p = &cx->plans[i];
		int r;

		if (p->op->kind != EOS_OP_LINK)
			continue;
		r = link_resolve(cx, p, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* --- pass 3: records -------------------------------------------------------------------------- */

static int
xattr_cmp(const void *a, const void *b)
{
	return strcmp(((const struct eos_xattr *)a)->name, ((const struct eos_xattr *)b)->name);
}

static int
xattr_find(const struct eos_entry *e, const char *name)
{
	for (uint32_t i = 0; i < e->nxattrs; i++)
		if (strcmp(e->xattrs[i].name, name) == 0)
			return (int)i;
	return -1;
}

static void
xattr_remove(struct eos_entry *e, int i)
{
	free(e->xattrs[i].name);
	free(e->xattrs[i].value);
	memmove(&e->xattrs[i], &e->xattrs[i + 1],
		(e->nxattrs - (uint32_t)i - 1) * sizeof(e->xattrs[0]));
	e->nxattrs--;
}

/* Apply one staged edit to e's xattrs (names and values are malloc()ed, as eos_entry owns them). */
static int
xattr_apply(struct eos_entry *e, const struct eos_xattr_edit *ed)
{
	int i = xattr_find(e, ed->name);
	struct eos_xattr *xs;
	uint8_t *value;

	if (!ed->value) {
		if (i >= 0)
			xattr_remove(e, i);
		return 0;
	}
	value = malloc(ed->len ? ed->len : 1);
	if (!value)
		return -ENOMEM;
	memcpy(value, ed->value, ed->len);
	if (i < 0) {
		xs = realloc(e->xattrs, (e->nxattrs + 1) * sizeof(*xs));
		if (!xs || !(xs[e->nxattrs].name = strdup(ed->name))) {
			if (xs)
				e->xattrs = xs;
			free(value);
			return -ENOMEM;
		}
		e->xattrs = xs;
		i = (int)e->nxattrs++;
	} else {
		free(e->xattrs[i].value);
	}
	e->xattrs[i].value = value;
	e->xattrs[i].len = ed->len;
	return 0;
}

static int
xattrs_apply(struct eos_entry *e, const struct eos_op *op)
{
	for (size_t i = 0; i < op->nedits; i++) {
		int r = xattr_apply(e, &op->edits[i]);

		if (r < 0)
			return r;
	}
	if (e->nxattrs > 1)
		qsort(e->xattrs, e->nxattrs, sizeof(e->xattrs[0]), xattr_cmp);
	return 0;
}

static bool
xattrs_equal(const struct eos_entry *a, const struct eos_entry *b)
{
	if (a->nxattrs != b->nxattrs)
		return false;
	for (uint32_t i = 0; i < a->nxattrs; i++) {
		int j = xattr_find(b, a->xattrs[i].name);

		if (j < 0 || b->xattrs[j].len != a->xattrs[i].len ||
		    memcmp(b->xattrs[j].value, a->xattrs[i].value, a->xattrs[i].len) != 0)
			return false;
	}
	return true;
}

bool
eos_commit_attr_equal(const struct eos_attr *a, const struct eos_attr *b)
{
	return a->mode == b->mode && a->uid == b->uid && a->gid == b->gid &&
	       a->mtime_ns == b->mtime_ns;
}

static bool
content_equal(const struct eos_content *a, const struct eos_content *b)
{
	return a->kind == b->kind && a->size == b->size && eos_digest_eq(&a->digest, &b->digest) &&
	       a->inline_len == b->inline_len && a->inline_len <= EOS_INLINE_MAX &&
	       memcmp(a->inline_data, b->inline_data, a->inline_len) == 0;
}

bool
eos_commit_entry_equal(const struct eos_entry *a, const struct eos_entry *b)
{
	if (a->st.kind != b->st.kind || !eos_commit_attr_equal(&a->st.attr, &b->st.attr) ||
	    a->st.floor != b->st.floor || a->st.link_group != b->st.link_group ||
	    a->st.size != b->st.size || a->st.rdev != b->st.rdev || !xattrs_equal(a, b))
		return false;
	if (a->st.kind == EOS_KIND_FILE && !content_equal(&a->st.content, &b->st.content))
		return false;
	if (!a->target || !b->target)
		return a->target == b->target;
	return strcmp(a->target, b->target) == 0;
}

static int
link_record(const struct eos_commit *cx, const struct eos_commit_plan *p, struct eos_entry *rec)
{
	if (p->src)
		return eos_commit_plan_record(cx, p->src, rec);
	return eos_entry_copy(rec, p->src_entry);
}

/* The record fields that come from the op (xattrs and version excluded). */
static int
plan_fields(const struct eos_commit *cx, const struct eos_commit_plan *p, struct eos_entry *rec)
{
	const struct eos_op *op = p->op;

	switch (op->kind) {
	case EOS_OP_PUT_FILE:
		rec->st.content = op->content;
		rec->st.size = op->content.size;
		break;
	case EOS_OP_MKDIR:
		/* A kept directory keeps its xattrs. */
		if (p->before && p->before->st.kind == EOS_KIND_DIR && !op->opaque)
			return eos_entry_copy(rec, p->before);
		break;
	case EOS_OP_SYMLINK:
		rec->target = strdup(op->target);
		if (!rec->target)
			return -ENOMEM;
		rec->st.size = strlen(op->target);
		break;
	case EOS_OP_MKNOD:
		rec->st.rdev = op->rdev;
		break;
	case EOS_OP_LINK:
		return link_record(cx, p, rec);
	case EOS_OP_REMOVE:
		break;
	case EOS_OP_SET_ATTR:
		return eos_entry_copy(rec, p->before);
	}
	return 0;
}

int
eos_commit_plan_record(const struct eos_commit *cx, const struct eos_commit_plan *p,
		       struct eos_entry *rec)
{
	int r = plan_fields(cx, p, rec);

	if (r < 0)
		return r;
	rec->st.kind = p->kind;
	rec->st.version = cx->version;
	rec->st.floor = p->kind == EOS_KIND_DIR ? p->floor : 0;
	rec->st.link_group = p->kind == EOS_KIND_FILE ? p->group : 0;
	if (p->op->kind != EOS_OP_LINK && p->op->kind != EOS_OP_REMOVE)
		rec->st.attr = p->op->attr;
	if (p->kind == EOS_KIND_DIR)
		rec->st.size = 0;
	return xattrs_apply(rec, p->op);
}
