/* SPDX-License-Identifier: MIT */
/* fs/inode: the node table, inode numbers and lookup counting. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/endian.h"
#include "common/log.h"

#include "fs/view-internal.h"

static void identity_drop(struct eos_view *v, struct eos_node *n);

static struct eos_table_shard *
shard_of(struct eos_view *v, uint64_t ino)
{
	return &v->shards[ino % EOS_TABLE_SHARDS];
}

/* The node of ino, with refs kernel references added under the shard lock. */
static struct eos_node *
node_get(struct eos_view *v, uint64_t ino, uint64_t refs)
{
	struct eos_table_shard *s = shard_of(v, ino);
	struct eos_node *n;

	pthread_mutex_lock(&s->lock);
	n = eos_table_find(s, ino);
	if (n)
		eos_node_nlookup_add(n, refs);
	pthread_mutex_unlock(&s->lock);
	return n;
}

struct eos_node *
eos_node_get(struct eos_view *v, uint64_t ino)
{
	return node_get(v, ino, 0);
}

struct eos_node *
eos_node_get_ref(struct eos_view *v, uint64_t ino)
{
	return node_get(v, ino, 1);
}

int
eos_node_insert(struct eos_view *v, struct eos_node *n)
{
	struct eos_table_shard *s = shard_of(v, n->ino);
	int r;

	pthread_mutex_lock(&s->lock);
	r = eos_table_insert(s, n);
	pthread_mutex_unlock(&s->lock);
	return r;
}

void
eos_node_remove(struct eos_view *v, struct eos_node *n)
{
	struct eos_table_shard *s = shard_of(v, n->ino);

	pthread_mutex_lock(&s->lock);
	if (eos_table_remove(s, n))
		identity_drop(v, n);
	pthread_mutex_unlock(&s->lock);
	eos_node_free(n);
}

void
eos_node_ref(struct eos_view *v, struct eos_node *n, uint64_t count)
{
	struct eos_table_shard *s = shard_of(v, n->ino);

	pthread_mutex_lock(&s->lock);
	eos_node_nlookup_add(n, count);
	pthread_mutex_unlock(&s->lock);
}

/* Unlinked upper nodes take their record and data file with them. */
static void
node_discard(struct eos_view *v, struct eos_node *n)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	char path[32];

	if (!(n->flags & EOS_NODE_UPPER) || !v->session)
		return;
	if (n->flags & EOS_NODE_DATA) {
		eos_data_path(n, path, sizeof(path));
		unlinkat(v->data_dirfd, path, 0);
	}
	if (n->flags & EOS_NODE_GONE)
		return; /* the unlink deleted the record */
	if (eos_delta_batch(v, &b) == 0 && eos_delta_delete_node(n, b) == 0)
		eos_delta_commit(v, b, EOS_COMMIT_JOURNAL);
}

void
eos_node_forget(struct eos_view *v, uint64_t ino, uint64_t count)
{
	struct eos_table_shard *s = shard_of(v, ino);
	struct eos_node *n = eos_node_get(v, ino);
	bool drop = false;

	if (!n || ino == EOS_ROOT_INO)
		return;
	eos_node_lock(n);
	pthread_mutex_lock(&s->lock);
	if (n->nlookup != UINT32_MAX) /* stuck there: the node lives on */
		n->nlookup -= (uint32_t)EOS_MIN(count, (uint64_t)n->nlookup);
	if (n->nlookup == 0 && n->x->opens == 0 &&
	    (!(n->flags & EOS_NODE_UPPER) || n->nlink == 0)) {
		eos_table_remove(s, n);
		identity_drop(v, n);
		drop = true;
	}
	pthread_mutex_unlock(&s->lock);
	eos_node_unlock(n);
	if (!drop)
		return;
	if (n->nlink == 0)
		node_discard(v, n);
	eos_data_close(v, n);
	eos_node_free(n);
	if (atomic_fetch_add(&v->freed, 1) + 1 == EOS_TIDY_AFTER)
		eos_flusher_kick(v);
}

uint64_t
eos_node_alloc_ino(struct eos_view *v)
{
	return atomic_fetch_add(&v->next_ino, 1);
}

/* --- identities: the inode numbers of lower nodes -------------------------------------------- */

/* "g" be64 group, or "p" path: the key of an identity in the remap table. */
static size_t
identity_key(const char *path, uint64_t group, char **ret)
{
	size_t len = group ? 9 : 1 + strlen(path);
	char *k = malloc(len);

	if (!k)
		return 0;
	k[0] = group ? 'g' : 'p';
	if (group)
		eos_put_be64((uint8_t *)k + 1, group);
	else
		memcpy(k + 1, path, len - 1);
	*ret = k;
	return len;
}

static struct eos_table_shard *
idshard_of(struct eos_view *v, const char *key, size_t len)
{
	return &v->idshards[eos_hashmap_hash(key, len) % EOS_TABLE_SHARDS];
}

/*
 * The remapped inode number of an identity (0: none). Free slots are 0 and dropped once they are
 * the majority of their shard.
 */
static uint64_t
remap_get(struct eos_view *v, const char *path, uint64_t group)
{
	cleanup_free char *key = NULL;
	union eos_hashmap_value *slot;
	struct eos_table_shard *s;
	uint64_t ino = 0;
	size_t len;

	if (atomic_load(&v->remapped) == 0)
		return 0;
	len = identity_key(path, group, &key);
	if (len == 0)
		return 0;
	s = idshard_of(v, key, len);
	pthread_mutex_lock(&s->lock);
	slot = eos_hashmap_find(&s->ids, key, len);
	ino = slot ? slot->u64 : 0;
	pthread_mutex_unlock(&s->lock);
	return ino;
}

static bool
remap_used(const union eos_hashmap_value *v, void *ctx)
{
	(void)ctx;
	return v->u64 != 0;
}

enum remap_op {
	REMAP_PUT,   /* the identity's number is ino */
	REMAP_CLAIM, /* … unless it has one already: *ret is the number it has */
	REMAP_DROP,  /* it has none any more, if it was ino */
};

/* The slot of key in s (locked) for op: found, or inserted unless dropping; NULL: none. */
static union eos_hashmap_value *
remap_slot(struct eos_table_shard *s, const char *key, size_t len, enum remap_op op, int *r)
{
	union eos_hashmap_value *slot = NULL;

	*r = 0;
	if (op == REMAP_DROP)
		return eos_hashmap_find(&s->ids, key, len);
	*r = eos_hashmap_get_or_insert(&s->ids, key, len, &slot);
	if (*r == 1)
		s->freed++; /* counted as free until it holds a number */
	return *r < 0 ? NULL : slot;
}

static int
remap_update(struct eos_view *v, const char *path, uint64_t group, enum remap_op op, uint64_t ino,
	     uint64_t *ret)
{
	cleanup_free char *key = NULL;
	size_t len = identity_key(path, group, &key);
	union eos_hashmap_value *slot;
	struct eos_table_shard *s;
	uint64_t was, now;
	int r;

	if (len == 0)
		return -ENOMEM;
	s = idshard_of(v, key, len);
	pthread_mutex_lock(&s->lock);
	slot = remap_slot(s, key, len, op, &r);
	was = now = slot ? slot->u64 : 0;
	if (op == REMAP_PUT || (op == REMAP_CLAIM && was == 0))
		now = ino;
	else if (op == REMAP_DROP && was == ino)
		now = 0;
	if (slot && now != was) {
		if (!was)
			s->freed--;
		if (!now)
			s->freed++;
		if (!was != !now)
			atomic_fetch_add(&v->remapped, now ? 1 : (size_t)-1);
		slot->u64 = now;
	}
	if (s->freed >= 64 && s->freed * 2 >= eos_hashmap_count(&s->ids) &&
	    eos_hashmap_compact(&s->ids, remap_used, NULL) == 0)
		s->freed = 0;
	pthread_mutex_unlock(&s->lock);
	if (r >= 0 && ret)
		*ret = now;
	return r < 0 ? r : 0;
}

int
eos_node_identity(struct eos_view *v, const char *path, uint64_t group, uint64_t *ret)
{
	uint64_t ino = remap_get(v, path, group);

	*ret = ino ? ino : eos_ino_derived(path, group);
	return 0;
}

bool
eos_node_has_identity(const struct eos_node *n, const char *path, uint64_t group)
{
	if (group)
		return n->x->link_group == group;
	return !n->x->link_group && eos_node_origin_is(n, path);
}

int
eos_node_identity_set(struct eos_view *v, struct eos_node *n)
{
	char buf[EOS_LOWER_BUF];
	const char *lower = eos_node_lower(n, buf);
	uint64_t group = n->x->link_group;
	bool remapped = lower && n->ino != eos_ino_derived(lower, group);
	int r;

	if (!lower || (!remapped && !(n->flags & EOS_NODE_REMAPPED)))
		return 0;
	r = remapped ? remap_update(v, lower, group, REMAP_PUT, n->ino, NULL)
		     : remap_update(v, lower, group, REMAP_DROP, n->ino, NULL);
	if (r == 0 && remapped)
		n->flags |= EOS_NODE_REMAPPED;
	else if (r == 0)
		n->flags &= ~(unsigned)EOS_NODE_REMAPPED;
	return r;
}

void
eos_node_identities_reset(struct eos_view *v)
{
	for (size_t i = 0; i < EOS_TABLE_SHARDS; i++) {
		eos_hashmap_release(&v->idshards[i].ids);
		v->idshards[i].freed = 0;
	}
	atomic_store(&v->remapped, 0);
}

/* n is leaving the table (its shard locked): its remap goes with it. */
static void
identity_drop(struct eos_view *v, struct eos_node *n)
{
	char buf[EOS_LOWER_BUF];
	const char *lower = n->flags & EOS_NODE_REMAPPED ? eos_node_lower(n, buf) : NULL;

	if (!lower)
		return;
	remap_update(v, lower, n->x->link_group, REMAP_DROP, n->ino, NULL);
	n->flags &= ~(unsigned)EOS_NODE_REMAPPED;
}

static int
child_path(const struct eos_odir *d, const char *name, char **ret)
{
	int r = d->len ? asprintf(ret, "%s/%s", d->path, name) : asprintf(ret, "%s", name);

	return r < 0 ? -ENOMEM : 0;
}

/* Directories need their entry for lookups below, hard-linked files for their identity,
 * devices for their number. */
bool
eos_node_lower_extended(const struct eos_stat *lst)
{
	return lst->kind == EOS_KIND_DIR || lst->link_group || lst->rdev;
}

/* The node of lower entry lst named name in directory d, its name in its own allocation and
 * d shared: a looked-up lower file costs this one allocation. */
static struct eos_node *
node_build(struct eos_view *v, uint64_t ino, struct eos_odir *d, const char *name,
	   const struct eos_stat *lst)
{
	struct eos_node *n = eos_node_new_lower(ino, eos_odir_ref(d), name);

	if (!n) {
		eos_odir_unref(d);
		return NULL;
	}
	eos_node_fill_lower(n, lst);
	if (eos_node_lower_extended(lst)) {
		if (eos_node_extend_bare(n) < 0 || !(n->x->lst = eos_lower_new(lst))) {
			eos_node_free(n);
			return NULL;
		}
		eos_node_fill_lower(n, lst);
	}
	if (lst->kind == EOS_KIND_FILE && lst->link_group)
		n->nlink = eos_links_count(v, lst->link_group);
	return n;
}

/* Where a lookup of a lower identity ended in the table. */
enum place {
	PLACE_FOUND,	 /* the identity's node was there (a reference added when asked) */
	PLACE_FREE,	 /* the slot is free (nothing to insert yet) */
	PLACE_INSERTED,	 /* the slot was free: fresh is in the table now */
	PLACE_COLLISION, /* another identity's node holds the number */
	PLACE_MOVED,	 /* the identity was remapped meanwhile: look again */
	PLACE_NOMEM,
};

/* Insert fresh into s (locked) at fresh->ino for its identity (path, group). */
static enum place
place_fresh(struct eos_view *v, struct eos_table_shard *s, struct eos_node *fresh, const char *path,
	    uint64_t group)
{
	bool remapped = fresh->ino != eos_ino_derived(path, group);

	if (!remapped && remap_get(v, path, group) != 0)
		return PLACE_MOVED;
	if (remapped && remap_update(v, path, group, REMAP_PUT, fresh->ino, NULL) < 0)
		return PLACE_NOMEM;
	if (eos_table_insert(s, fresh) < 0)
		return PLACE_NOMEM;
	if (remapped)
		fresh->flags |= EOS_NODE_REMAPPED;
	return PLACE_INSERTED;
}

/*
 * Find the node of an identity at ino, or insert fresh there (NULL: only look). A remapped
 * identity is recorded under the same shard lock as the insertion, so that a node being freed
 * (which drops its remap under that lock) cannot race with its successor.
 */
static enum place
place(struct eos_view *v, uint64_t ino, const char *path, uint64_t group, struct eos_node *fresh,
      bool ref, struct eos_node **ret)
{
	struct eos_table_shard *s = shard_of(v, ino);
	enum place where = PLACE_FREE;

	pthread_mutex_lock(&s->lock);
	*ret = eos_table_find(s, ino);
	if (*ret && eos_node_has_identity(*ret, path, group)) {
		eos_node_nlookup_add(*ret, ref ? 1 : 0);
		where = PLACE_FOUND;
	} else if (*ret) {
		where = PLACE_COLLISION;
	} else if (fresh) {
		where = place_fresh(v, s, fresh, path, group);
		*ret = fresh;
	}
	pthread_mutex_unlock(&s->lock);
	return where;
}

/* The number an identity takes when its own is held by another identity's node. */
static int
remap_new(struct eos_view *v, const char *path, uint64_t group, uint64_t *ino)
{
	return remap_update(v, path, group, REMAP_CLAIM, eos_node_alloc_ino(v), ino);
}

/* The node for lower entry lst at path, named name in directory d (path is freed here). */
static int
lower_node(struct eos_view *v, struct eos_odir *d, const char *name, char *path,
	   const struct eos_stat *lst, bool ref, struct eos_node **ret)
{
	const uint64_t group = lst->link_group;
	struct eos_node *fresh = NULL;
	enum place where = PLACE_FREE;
	uint64_t ino;
	int r = eos_node_identity(v, path, group, &ino);

	for (unsigned tries = 0; r == 0 && where != PLACE_FOUND && where != PLACE_INSERTED;
	     tries++) {
		const char *at = path;

		if (fresh)
			fresh->ino = ino;
		where = place(v, ino, at, group, fresh, ref, ret);
		if (where == PLACE_MOVED)
			r = eos_node_identity(v, at, group, &ino);
		else if (where == PLACE_COLLISION)
			r = tries < 8 ? remap_new(v, at, group, &ino) : -EIO;
		else if (where == PLACE_NOMEM)
			r = -ENOMEM;
		else if (where == PLACE_FREE && !(fresh = node_build(v, ino, d, name, lst)))
			r = -ENOMEM;
		if (fresh && where == PLACE_FREE)
			fresh->nlookup = ref ? 1 : 0;
	}
	if (fresh && where != PLACE_INSERTED)
		eos_node_free(fresh);
	free(path);
	return r;
}

int
eos_node_from_lower(struct eos_view *v, struct eos_node *parent, const char *name,
		    const struct eos_stat *lst, bool ref, struct eos_node **ret)
{
	/* the parent's origin, shared by the children it has built */
	struct eos_odir *d = eos_node_kids(v, parent);
	char *path = NULL;
	int r;

	if (!d) /* no lower directory: no lower children */
		return eos_node_has_lower(parent) ? -ENOMEM : -ENOENT;
	r = child_path(d, name, &path) ?: lower_node(v, d, name, path, lst, ref, ret);
	eos_odir_unref(d);
	return r;
}
