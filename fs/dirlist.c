/* SPDX-License-Identifier: MIT */
/*
 * fs/dirlist: directory listings with stable offsets, kept per directory instead of per open
 * handle.
 *
 * The first readdir of a directory takes its merged listing and gives every name a cookie (its
 * readdir offset), in listing order from EOS_DIRLIST_FIRST. From then on the listing is kept up
 * to date by the namespace operations (eos_dir_set): a new name gets the next cookie, a removed
 * name is dropped, a replaced one keeps its cookie. readdir(offset) returns the names whose cookie
 * is above the offset, so an offset stays valid while the directory changes: a name present
 * throughout is returned exactly once, a removed one no more, an added one at the end. No state
 * lives in the open directory, which lets the kernel skip opendir/releasedir altogether.
 *
 * A listing read to its end while the directory has not changed since it was taken is dropped
 * (the kernel keeps what it read): taken again from the same state it gives every name the same
 * cookie, and the first change of such a directory takes it again before the change applies, so
 * that offsets handed out stay valid. A walk of a large tree so keeps no listing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#include "fs/view-internal.h"

struct eos_dirlist {
	struct eos_dirent_snap *v; /* cookie order; removed entries have name NULL */
	size_t n, cap, live;
	uint64_t next_cookie;
	struct eos_hashmap index; /* name → position + 1 in v; 0 once removed */
	size_t consumed;	  /* entries below this position have no lower attributes */
	bool pristine;		  /* no change since it was taken */
};

void
eos_dirlist_free(struct eos_dirlist *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].name);
		free(l->v[i].lower);
	}
	free(l->v);
	eos_hashmap_release(&l->index);
	free(l);
}

/* Append name (taken over) and lower (taken over when it succeeds). */
static int
list_append(struct eos_dirlist *l, char *name, uint64_t ino, uint32_t type,
	    struct eos_listed *lower)
{
	union eos_hashmap_value *slot;

	if (eos_buf_array_reserve(&l->v, &l->cap, l->n, sizeof(*l->v), 16) < 0 ||
	    eos_hashmap_get_or_insert(&l->index, name, strlen(name), &slot) < 0)
		return -ENOMEM;
	l->v[l->n] = (struct eos_dirent_snap){
		.name = name, .ino = ino, .type = type, .cookie = l->next_cookie++, .lower = lower
	};
	slot->u64 = ++l->n;
	l->live++;
	return 0;
}

/* Drop removed entries once they are the majority (cookies are kept). */
static int
list_compact(struct eos_dirlist *l)
{
	size_t w = 0;

	if (l->n < 64 || l->live * 2 > l->n)
		return 0;
	eos_hashmap_release(&l->index);
	for (size_t i = 0; i < l->n; i++) {
		union eos_hashmap_value *slot;

		if (!l->v[i].name)
			continue;
		l->v[w] = l->v[i];
		if (w != i) /* each entry in one place, should the rebuild below fail */
			l->v[i].name = NULL, l->v[i].lower = NULL;
		if (eos_hashmap_get_or_insert(&l->index, l->v[w].name, strlen(l->v[w].name),
					      &slot) < 0)
			return -ENOMEM;
		slot->u64 = ++w;
	}
	l->n = w;
	l->consumed = 0;
	return 0;
}

static int
list_build(struct eos_view *v, struct eos_node *p)
{
	struct eos_dir_snapshot s = { 0 };
	struct eos_dirlist *l = calloc(1, sizeof(*l));
	int r = l ? eos_dir_snapshot(v, p, &s) : -ENOMEM;

	if (l) {
		l->next_cookie = EOS_DIRLIST_FIRST;
		l->pristine = true;
	}
	for (size_t i = 0; r == 0 && i < s.n; i++) {
		r = list_append(l, s.v[i].name, s.v[i].ino, s.v[i].type, s.v[i].lower);
		if (r == 0)
			s.v[i].name = NULL, s.v[i].lower = NULL; /* the list owns them now */
	}
	eos_dir_snapshot_release(&s);
	if (r < 0) {
		eos_dirlist_free(l);
		return r;
	}
	p->x->list = l;
	p->flags &= ~(unsigned)EOS_NODE_LISTED;
	return 0;
}

void
eos_dirlist_prepare(struct eos_view *v, struct eos_node *p)
{
	/* the subdirectory count may be ahead of the dirents already (taking a listing counts) */
	uint64_t subdirs = p->x->subdirs;
	unsigned known = p->flags & EOS_NODE_SUBDIRS;

	if (p->x->list || !(p->flags & EOS_NODE_LISTED))
		return;
	if (list_build(v, p) < 0)
		p->flags &= ~(unsigned)EOS_NODE_LISTED; /* out of memory: offsets restart */
	p->x->subdirs = subdirs;
	p->flags = (p->flags & ~(unsigned)EOS_NODE_SUBDIRS) | known;
}

void
eos_dirlist_update(struct eos_node *p, const char *name, uint64_t ino, uint32_t type)
{
	struct eos_dirlist *l = p->x->list;
	union eos_hashmap_value *slot;
	char *copy;

	if (!l)
		return;
	l->pristine = false;
	slot = eos_hashmap_find(&l->index, name, strlen(name));
	if (slot && slot->u64) { /* no longer the lower entry it was listed as */
		free(l->v[slot->u64 - 1].lower);
		l->v[slot->u64 - 1].lower = NULL;
	}
	if (slot && slot->u64 && ino) { /* replaced: same cookie */
		l->v[slot->u64 - 1].ino = ino;
		l->v[slot->u64 - 1].type = type;
	} else if (slot && slot->u64) { /* removed */
		free(l->v[slot->u64 - 1].name);
		l->v[slot->u64 - 1].name = NULL;
		slot->u64 = 0;
		l->live--;
	} else if (ino) { /* new */
		copy = strdup(name);
		if (!copy || list_append(l, copy, ino, type, NULL) < 0) {
			free(copy);
			goto rebuild;
		}
	}
	if (list_compact(l) == 0)
		return;
rebuild:
	/* out of memory: forget the listing; the next readdir takes it afresh */
	eos_dirlist_free(l);
	p->x->list = NULL;
}

/* First position with a cookie above off. */
static size_t
list_seek(const struct eos_dirlist *l, uint64_t off)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->v[mid].cookie <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The kernel asks for the entries after off once it has those up to off: their lower
 * attributes are no longer needed (a reader that goes back looks them up).
 */
static void
list_consume(struct eos_dirlist *l, uint64_t off)
{
	size_t end = list_seek(l, off);

	for (; l->consumed < end; l->consumed++) {
		free(l->v[l->consumed].lower);
		l->v[l->consumed].lower = NULL;
	}
}

/* Append a copy of e to s. */
static int
snap_copy(struct eos_dir_snapshot *s, const struct eos_dirent_snap *e)
{
	struct eos_dirent_snap c = *e;

	c.name = strdup(e->name);
	c.lower = e->lower ? malloc(sizeof(*c.lower)) : NULL;
	if (!c.name || (e->lower && !c.lower) ||
	    eos_buf_array_reserve(&s->v, &s->cap, s->n, sizeof(*s->v), 16) < 0) {
		free(c.name);
		free(c.lower);
		return -ENOMEM;
	}
	if (c.lower)
		*c.lower = *e->lower;
	s->v[s->n++] = c;
	return 0;
}

int
eos_dirlist_read(struct eos_view *v, struct eos_node *p, uint64_t off, size_t max,
		 struct eos_dir_snapshot *ret)
{
	struct eos_dirlist *l;
	int r = 0;

	eos_node_lock(p);
	if (!eos_node_is_dir(p))
		r = -ENOTDIR;
	else if (!p->x->list)
		r = list_build(v, p);
	l = p->x->list;
	if (r == 0)
		list_consume(l, off);
	for (size_t i = r == 0 ? list_seek(l, off) : 0; r == 0 && i < l->n && ret->n < max; i++) {
		const struct eos_dirent_snap *e = &l->v[i];

		if (e->name)
			r = snap_copy(ret, e);
	}
	if (r == 0 && ret->n == 0 && l->pristine && list_seek(l, off) >= l->n) {
		eos_dirlist_free(
			l); /* read to its end: taken again from the same state if needed */
		p->x->list = NULL;
		p->flags |= EOS_NODE_LISTED;
	}
	eos_node_unlock(p);
	if (r < 0)
		eos_dir_snapshot_release(ret);
	return r;
}
