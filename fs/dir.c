/* SPDX-License-Identifier: MIT */
/* fs/dir: names in directories — upper dirents merged over the lower directory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/log.h"

#include "fs/view-internal.h"

static uint64_t
dirent_value(struct eos_node *p, const char *name)
{
	union eos_hashmap_value *slot = eos_hashmap_find(&p->x->dirents, name, strlen(name));

	return slot ? slot->u64 : EOS_DIRENT_ABSENT;
}

static bool
has_lower(const struct eos_node *p)
{
	return eos_node_has_lower(p) && p->x->lst && !(p->flags & EOS_NODE_OPAQUE);
}

static int
lower_lookup(struct eos_view *v, struct eos_node *p, const char *name, struct eos_stat *ret)
{
	char buf[EOS_LOWER_BUF];
	struct eos_stat dir;

	if (!has_lower(p))
		return -ENOENT;
	eos_lower_dir(p->x->lst, &dir);
	return eos_tree_lookup_child(v->tree, eos_node_lower(p, buf), &dir, name, ret, NULL);
}

int
eos_dir_child(struct eos_view *v, struct eos_node *p, const char *name, bool ref,
	      struct eos_node **ret)
{
	uint64_t d = dirent_value(p, name);
	struct eos_stat st;
	int r;

	if (d == EOS_DIRENT_WHITEOUT)
		return -ENOENT;
	if (d != EOS_DIRENT_ABSENT) {
		struct eos_node *n = eos_node_get(v, d);

		if (!n) {
			eos_log_error("view: dirent '%s' of inode %lu names missing inode %lu",
				      name, (unsigned long)p->ino, (unsigned long)d);
			return -EIO;
		}
		if (ref)
			eos_node_ref(v, n, 1);
		*ret = n;
		return 0;
	}
	r = lower_lookup(v, p, name, &st);
	if (r < 0)
		return r == -ENOTDIR ? -ENOENT : r;
	return eos_node_from_lower(v, p, name, &st, ref, ret);
}

int
eos_dir_child_listed(struct eos_view *v, struct eos_node *p, const char *name,
		     const struct eos_listed *l, bool ref, struct eos_node **ret)
{
	struct eos_stat st = {
		.kind = (enum eos_kind)l->kind,
		.attr = { .mode = l->mode, .uid = l->uid, .gid = l->gid, .mtime_ns = l->mtime_ns },
		.size = l->size,
		.nxattrs = l->nxattrs
	};

	/* the listing is of this version: valid while no upper dirent hides the name */
	if (dirent_value(p, name) != EOS_DIRENT_ABSENT || !has_lower(p))
		return eos_dir_child(v, p, name, ref, ret);
	return eos_node_from_lower(v, p, name, &st, ref, ret);
}

bool
eos_dir_lower_has(struct eos_view *v, struct eos_node *p, const char *name)
{
	struct eos_stat st;

	return lower_lookup(v, p, name, &st) == 0;
}

int
eos_dir_slot(struct eos_node *p, const char *name)
{
	union eos_hashmap_value *slot;
	int r = eos_hashmap_get_or_insert(&p->x->dirents, name, strlen(name), &slot);

	if (r == 1)
		p->x->dirents_absent++; /* a new slot is EOS_DIRENT_ABSENT: the same as none */
	return r < 0 ? r : 0;
}

void
eos_dir_apply(struct eos_view *v, struct eos_node *p, const char *name, uint64_t value, bool kept)
{
	union eos_hashmap_value *slot = eos_hashmap_find(&p->x->dirents, name, strlen(name));
	bool linked = value != EOS_DIRENT_ABSENT && value != EOS_DIRENT_WHITEOUT;
	struct eos_node *n = linked ? eos_node_get(v, value) : NULL;

	/* Before the change: the cookies it handed out. A listing is in name order, so one taken
	 * after a change that keeps every name's inode and type gives the same cookies. */
	if (!kept)
		eos_dirlist_prepare(v, p);
	if (slot) {
		if (slot->u64 == EOS_DIRENT_ABSENT && value != EOS_DIRENT_ABSENT)
			p->x->dirents_absent--;
		else if (slot->u64 != EOS_DIRENT_ABSENT && value == EOS_DIRENT_ABSENT)
			p->x->dirents_absent++;
		slot->u64 = value;
	}
	eos_dirlist_update(p, name, n ? value : 0, n ? n->mode & S_IFMT : 0);
}

static bool
dirent_present(const union eos_hashmap_value *v, void *ctx)
{
	(void)ctx;
	return v->u64 != EOS_DIRENT_ABSENT;
}

void
eos_dir_tidy(struct eos_node *p)
{
	enum {
		TIDY_MIN = 64
	};

	if (p->x->dirents_absent < TIDY_MIN ||
	    p->x->dirents_absent * 2 < eos_hashmap_count(&p->x->dirents))
		return;
	if (eos_hashmap_compact(&p->x->dirents, dirent_present, NULL) == 0)
		p->x->dirents_absent = 0;
}

/* --- listings --------------------------------------------------------------------------------- */

struct walk {
	struct eos_view *v;
	struct eos_node *p;
	struct eos_dir_snapshot *snap; /* NULL: only count or test */
	const char *lower;	       /* p's origin */
	uint64_t subdirs;
	bool any;
	bool stop_at_first;
};

static int
snap_add(struct eos_dir_snapshot *s, const char *name, uint64_t ino, uint32_t type,
	 struct eos_listed *lower)
{
	char *copy = strdup(name);

	if (!copy || eos_buf_array_reserve(&s->v, &s->cap, s->n + 1, sizeof(*s->v), 16) < 0) {
		free(copy);
		free(lower);
		return -ENOMEM;
	}
	s->v[s->n++] =
		(struct eos_dirent_snap){ .name = copy, .ino = ino, .type = type, .lower = lower };
	return 0;
}

/* What readdirplus needs of lower entry st to build its node, or NULL when its node needs the
 * whole entry (a lookup then reads it). */
static struct eos_listed *
listed_new(const struct eos_stat *st, bool *nomem)
{
	struct eos_listed *l;

	if (eos_node_lower_extended(st))
		return NULL;
	l = malloc(sizeof(*l));
	*nomem = !l;
	if (l)
		*l = (struct eos_listed){ .size = st->size,
					  .mtime_ns = st->attr.mtime_ns,
					  .mode = st->attr.mode,
					  .uid = st->attr.uid,
					  .gid = st->attr.gid,
					  .nxattrs = st->nxattrs,
					  .kind = (uint8_t)st->kind };
	return l;
}

static int
walk_upper(struct walk *w)
{
	struct eos_hashmap_iter it = { 0 };
	cleanup_free char *name = NULL;

	while (eos_hashmap_next(&w->p->x->dirents, &it)) {
		uint64_t d = it.value->u64;
		struct eos_node *n;

		if (d == EOS_DIRENT_ABSENT || d == EOS_DIRENT_WHITEOUT)
			continue;
		n = eos_node_get(w->v, d);
		if (!n)
			continue;
		w->any = true;
		if (S_ISDIR(n->mode))
			w->subdirs++;
		if (!w->snap)
			continue;
		free(name);
		name = strndup(it.key, it.klen);
		if (!name || snap_add(w->snap, name, d, n->mode & S_IFMT, NULL) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int
walk_lower_one(void *ctx, const char *name, const struct eos_stat *st)
{
	struct walk *w = ctx;
	cleanup_free char *path = NULL;
	struct eos_listed *lower;
	bool nomem = false;
	uint64_t ino;

	if (eos_hashmap_find(&w->p->x->dirents, name, strlen(name)) &&
	    dirent_value(w->p, name) != EOS_DIRENT_ABSENT)
		return 0; /* whiteout, or an upper entry already listed */
	w->any = true;
	if (st->kind == EOS_KIND_DIR)
		w->subdirs++;
	if (w->stop_at_first)
		return 1;
	if (!w->snap)
		return 0;
	if (w->lower[0] ? asprintf(&path, "%s/%s", w->lower, name) < 0 : !(path = strdup(name)))
		return -ENOMEM;
	if (eos_node_identity(w->v, path, st->link_group, &ino) < 0)
		return -ENOMEM;
	lower = listed_new(st, &nomem);
	return nomem ? -ENOMEM : snap_add(w->snap, name, ino, eos_node_kind_type(st->kind), lower);
}

static int
walk_dir(struct walk *w)
{
	char buf[EOS_LOWER_BUF];
	struct eos_stat dir;
	int r = walk_upper(w);

	if (r < 0 || (w->stop_at_first && w->any) || !has_lower(w->p))
		return r;
	w->lower = eos_node_lower(w->p, buf);
	eos_lower_dir(w->p->x->lst, &dir);
	r = eos_tree_readdir(w->v->tree, w->lower, &dir, NULL, walk_lower_one, w, NULL);
	return r < 0 ? r : 0;
}

static int
snap_cmp(const void *a, const void *b)
{
	return strcmp(((const struct eos_dirent_snap *)a)->name,
		      ((const struct eos_dirent_snap *)b)->name);
}

int
eos_dir_snapshot(struct eos_view *v, struct eos_node *p, struct eos_dir_snapshot *ret)
{
	struct walk w = { .v = v, .p = p, .snap = ret };
	int r = walk_dir(&w);

	if (r < 0) {
		eos_dir_snapshot_release(ret);
		return r;
	}
	/* Name order, whatever is upper or lower and however the dirents are hashed: the same
	 * names give the same order (and so the same cookies, dirlist.c). */
	if (ret->n > 1)
		qsort(ret->v, ret->n, sizeof(*ret->v), snap_cmp);
	p->x->subdirs = w.subdirs;
	p->flags |= EOS_NODE_SUBDIRS;
	return 0;
}

void
eos_dir_snapshot_release(struct eos_dir_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].name);
		free(s->v[i].lower);
	}
	free(s->v);
	*s = (struct eos_dir_snapshot){ 0 };
}

int
eos_dir_is_empty(struct eos_view *v, struct eos_node *p)
{
	struct walk w = { .v = v, .p = p, .stop_at_first = true };
	int r = walk_dir(&w);

	return r < 0 ? r : !w.any;
}

int
eos_dir_count_subdirs(struct eos_view *v, struct eos_node *p)
{
	struct walk w = { .v = v, .p = p };
	int r;

	if (p->flags & EOS_NODE_SUBDIRS)
		return 0;
	r = walk_dir(&w);
	if (r < 0)
		return r;
	p->x->subdirs = w.subdirs;
	p->flags |= EOS_NODE_SUBDIRS;
	return 0;
}
