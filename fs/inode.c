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

struct eos_node *
eos_node_new(uint64_t ino)
{
	struct eos_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->ino = ino;
	n->data_fd = -1;
	pthread_mutex_init(&n->lock, NULL);
	return n;
}

void
eos_node_free(struct eos_node *n)
{
	if (!n)
		return;
	if (n->data_fd >= 0)
		close(n->data_fd);
	free(n->name);
	free(n->lower);
	free(n->lst);
	free(n->target);
	eos_hashmap_release(&n->dirents);
	eos_dirlist_free(n->list);
	eos_xattrs_free(n);
	eos_writelog_release(&n->log);
	eos_writelog_release(&n->present);
	eos_file_close(n->lower_file);
	pthread_mutex_destroy(&n->lock);
	free(n);
}

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
		n->nlookup += refs;
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
	n->nlookup += count;
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
		eos_delta_commit(v, b, false);
}

void
eos_node_forget(struct eos_view *v, uint64_t ino, uint64_t count)
{
	struct eos_table_shard *s = shard_of(v, ino);
	struct eos_node *n = eos_node_get(v, ino);
	bool drop = false;

	if (!n || ino == EOS_ROOT_INO)
		return;
	pthread_mutex_lock(&n->lock);
	pthread_mutex_lock(&s->lock);
	n->nlookup -= EOS_MIN(count, n->nlookup);
	if (n->nlookup == 0 && n->opens == 0 && (!(n->flags & EOS_NODE_UPPER) || n->nlink == 0)) {
		eos_table_remove(s, n);
		identity_drop(v, n);
		drop = true;
	}
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_unlock(&n->lock);
	if (!drop)
		return;
	if (n->nlink == 0)
		node_discard(v, n);
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

static uint64_t
rotl64(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

/*
 * A 64-bit hash of len bytes from seed. Inode numbers derive from it and are promised stable
 * across sessions and versions of eos (doc/fs.md, "Inode numbers"): never change it.
 */
static uint64_t
stable_hash(uint64_t seed, const uint8_t *p, size_t len)
{
	uint64_t h = seed ^ ((uint64_t)len * 0xC2B2AE3D27D4EB4FULL);
	uint8_t tail[8] = { 0 };

	for (; len >= 8; p += 8, len -= 8)
		h = rotl64(h ^ (eos_get_le64(p) * 0x87C37B91114253D5ULL), 31) *
		    0x4CF5AD432745937FULL;
	memcpy(tail, p, len);
	h ^= eos_get_le64(tail) * 0x87C37B91114253D5ULL;
	h ^= h >> 33;
	h *= 0xFF51AFD7ED558CCDULL;
	h ^= h >> 33;
	h *= 0xC4CEB9FE1A85EC53ULL;
	return h ^ (h >> 33);
}

uint64_t
eos_node_ino_derived(const char *path, uint64_t group)
{
	uint8_t g[8];
	uint64_t h;

	if (group) {
		eos_put_be64(g, group);
		h = stable_hash(0x6A09E667F3BCC908ULL, g, sizeof(g));
	} else {
		h = stable_hash(0x9E3779B97F4A7C15ULL, (const uint8_t *)path, strlen(path));
	}
	h |= EOS_INO_DERIVED;
	return h == EOS_DIRENT_WHITEOUT ? EOS_INO_DERIVED : h;
}

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

	*ret = ino ? ino : eos_node_ino_derived(path, group);
	return 0;
}

bool
eos_node_has_identity(const struct eos_node *n, const char *path, uint64_t group)
{
	if (group)
		return n->link_group == group;
	return !n->link_group && n->lower && strcmp(n->lower, path) == 0;
}

int
eos_node_identity_set(struct eos_view *v, struct eos_node *n)
{
	bool remapped = n->lower && n->ino != eos_node_ino_derived(n->lower, n->link_group);
	int r;

	if (!n->lower || (!remapped && !(n->flags & EOS_NODE_REMAPPED)))
		return 0;
	r = remapped ? remap_update(v, n->lower, n->link_group, REMAP_PUT, n->ino, NULL)
		     : remap_update(v, n->lower, n->link_group, REMAP_DROP, n->ino, NULL);
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
	if (!(n->flags & EOS_NODE_REMAPPED) || !n->lower)
		return;
	remap_update(v, n->lower, n->link_group, REMAP_DROP, n->ino, NULL);
	n->flags &= ~(unsigned)EOS_NODE_REMAPPED;
}

struct eos_lower *
eos_lower_new(const struct eos_stat *st)
{
	bool inl = st->content.kind == EOS_CONTENT_INLINE;
	size_t len = inl ? EOS_MIN(st->content.inline_len, (uint32_t)EOS_INLINE_MAX) : 0;
	struct eos_lower *l = malloc(sizeof(*l) + len);

	if (!l)
		return NULL;
	*l = (struct eos_lower){ .version = st->version,
				 .floor = st->floor,
				 .content_size = st->content.size,
				 .digest = st->content.digest,
				 .nxattrs = st->nxattrs,
				 .inline_len = (uint16_t)len,
				 .kind = (uint8_t)st->kind,
				 .content_kind = (uint8_t)st->content.kind };
	memcpy(l->inline_data, st->content.inline_data, len);
	return l;
}

void
eos_lower_dir(const struct eos_lower *l, struct eos_stat *ret)
{
	memset(ret, 0, offsetof(struct eos_stat, content));
	ret->kind = (enum eos_kind)l->kind;
	ret->floor = l->floor;
	ret->version = l->version;
	ret->nxattrs = l->nxattrs;
}

void
eos_lower_content(const struct eos_lower *l, struct eos_content *ret)
{
	ret->kind = (enum eos_content_kind)l->content_kind;
	ret->size = l->content_size;
	ret->digest = l->digest;
	ret->inline_len = l->inline_len;
	memcpy(ret->inline_data, l->inline_data, l->inline_len);
}

int
eos_lower_open(struct eos_view *v, const struct eos_node *n, struct eos_file **ret)
{
	struct eos_content c;

	eos_lower_content(n->lst, &c);
	return eos_store_file_open_content(v->store, &c, ret, NULL);
}

uint32_t
eos_node_kind_type(enum eos_kind k)
{
	uint32_t type = eos_kind_mode(k);

	return type ? type : S_IFREG;
}

struct timespec
eos_ns_to_ts(int64_t ns)
{
	int64_t s = ns / 1000000000, r = ns % 1000000000;

	if (r < 0) {
		r += 1000000000;
		s--;
	}
	return (struct timespec){ .tv_sec = s, .tv_nsec = r };
}

int64_t
eos_ts_to_ns(struct timespec ts)
{
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
eos_node_fill_lower(struct eos_node *n, const struct eos_stat *lst)
{
	n->mode = eos_node_kind_type(lst->kind) | (lst->attr.mode & 07777);
	n->uid = lst->attr.uid;
	n->gid = lst->attr.gid;
	n->size = lst->size;
	n->rdev = lst->rdev;
	n->nlink = 1;
	n->mtime = n->atime = n->ctime = eos_ns_to_ts(lst->attr.mtime_ns);
	n->link_group = lst->link_group;
}

static int
child_path(const struct eos_node *parent, const char *name, char **ret)
{
	int r = parent->lower[0] ? asprintf(ret, "%s/%s", parent->lower, name)
				 : asprintf(ret, "%s", name);

	return r < 0 ? -ENOMEM : 0;
}

static struct eos_node *
node_build(struct eos_view *v, uint64_t ino, const struct eos_node *parent, const char *name,
	   char *path, const struct eos_stat *lst)
{
	struct eos_node *n = eos_node_new(ino);

	if (!n)
		return NULL;
	eos_node_fill_lower(n, lst);
	if (lst->kind == EOS_KIND_FILE && lst->link_group)
		n->nlink = eos_links_count(v, lst->link_group);
	n->parent = parent->ino;
	n->name = strdup(name);
	n->lst = eos_lower_new(lst);
	n->lower = path;
	if (!n->name || !n->lst) {
		n->lower = NULL; /* the caller keeps path */
		eos_node_free(n);
		return NULL;
	}
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
	bool remapped = fresh->ino != eos_node_ino_derived(path, group);

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
		(*ret)->nlookup += ref ? 1 : 0;
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

/* The node for lower entry lst at path (taken over by the node it builds). */
static int
lower_node(struct eos_view *v, const struct eos_node *parent, const char *name, char *path,
	   const struct eos_stat *lst, bool ref, struct eos_node **ret)
{
	const uint64_t group = lst->link_group;
	struct eos_node *fresh = NULL;
	enum place where = PLACE_FREE;
	uint64_t ino;
	int r = eos_node_identity(v, path, group, &ino);

	for (unsigned tries = 0; r == 0 && where != PLACE_FOUND && where != PLACE_INSERTED;
	     tries++) {
		const char *at = fresh ? fresh->lower : path;

		if (fresh)
			fresh->ino = ino;
		where = place(v, ino, at, group, fresh, ref, ret);
		if (where == PLACE_MOVED)
			r = eos_node_identity(v, at, group, &ino);
		else if (where == PLACE_COLLISION)
			r = tries < 8 ? remap_new(v, at, group, &ino) : -EIO;
		else if (where == PLACE_NOMEM)
			r = -ENOMEM;
		else if (where == PLACE_FREE &&
			 !(fresh = node_build(v, ino, parent, name, path, lst)))
			r = -ENOMEM;
		else if (where == PLACE_FREE)
			path = NULL; /* the node owns it */
		if (fresh && where == PLACE_FREE)
			fresh->nlookup = ref ? 1 : 0;
	}
	if (fresh && where != PLACE_INSERTED)
		eos_node_free(fresh);
	free(path);
	return r;
}

int
eos_node_from_lower(struct eos_view *v, const struct eos_node *parent, const char *name,
		    const struct eos_stat *lst, bool ref, struct eos_node **ret)
{
	char *path = NULL;
	int r = child_path(parent, name, &path);

	return r ?: lower_node(v, parent, name, path, lst, ref, ret);
}

void
eos_node_stat(const struct eos_node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_mode = n->mode;
	st->st_nlink = eos_node_is_dir(n) ? 2 + n->subdirs : n->nlink;
	st->st_uid = n->uid;
	st->st_gid = n->gid;
	st->st_rdev = (dev_t)n->rdev;
	st->st_size = (off_t)n->size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((n->size + 511) / 512);
	st->st_atim = n->atime;
	st->st_mtim = n->mtime;
	st->st_ctim = n->ctime;
}

void
eos_node_touch(struct eos_node *n, bool mtime)
{
	clock_gettime(CLOCK_REALTIME, &n->ctime);
	if (mtime)
		n->mtime = n->ctime;
	n->flags |= EOS_NODE_DIRTY;
}
