/* SPDX-License-Identifier: MIT */
/* fs/inode: the node table, inode numbers and lookup counting. */
#include <errno.h>
#include <fcntl.h>
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

static struct eos_table_shard *
shard_of(struct eos_view *v, uint64_t ino)
{
	return &v->shards[ino % EOS_TABLE_SHARDS];
}

static union eos_hashmap_value *
table_find(struct eos_table_shard *s, uint64_t ino)
{
	uint8_t key[8];

	eos_put_be64(key, ino);
	return eos_hashmap_find(&s->nodes, key, sizeof(key));
}

/* The node of ino, with refs kernel references added under the shard lock. */
static struct eos_node *
node_get(struct eos_view *v, uint64_t ino, uint64_t refs)
{
	struct eos_table_shard *s = shard_of(v, ino);
	union eos_hashmap_value *slot;
	struct eos_node *n;

	pthread_mutex_lock(&s->lock);
	slot = table_find(s, ino);
	n = slot ? slot->ptr : NULL;
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
	union eos_hashmap_value *slot;
	uint8_t key[8];
	int r;

	eos_put_be64(key, n->ino);
	pthread_mutex_lock(&s->lock);
	r = eos_hashmap_get_or_insert(&s->nodes, key, sizeof(key), &slot);
	if (r >= 0 && slot->ptr) {
		r = -EEXIST;
	} else if (r >= 0) {
		if (r == 0 && s->freed > 0)
			s->freed--; /* a lower node looked up again reuses its slot */
		slot->ptr = n;
	}
	pthread_mutex_unlock(&s->lock);
	return r < 0 ? r : 0;
}

static bool
slot_used(const union eos_hashmap_value *v, void *ctx)
{
	(void)ctx;
	return v->ptr != NULL;
}

/* ino's slot (shard s locked) no longer has a node: empty it, and drop the empty slots of s once
 * they are the majority, so that a storm of creates and deletes leaves no memory behind. */
static void
slot_clear(struct eos_table_shard *s, uint64_t ino)
{
	enum {
		TIDY_MIN = 256
	};
	union eos_hashmap_value *slot = table_find(s, ino);

	if (!slot || !slot->ptr)
		return;
	slot->ptr = NULL;
	s->freed++;
	if (s->freed >= TIDY_MIN && s->freed * 2 >= eos_hashmap_count(&s->nodes) &&
	    eos_hashmap_compact(&s->nodes, slot_used, NULL) == 0)
		s->freed = 0;
}

void
eos_node_remove(struct eos_view *v, struct eos_node *n)
{
	struct eos_table_shard *s = shard_of(v, n->ino);

	pthread_mutex_lock(&s->lock);
	if (table_find(s, n->ino) && table_find(s, n->ino)->ptr == n)
		slot_clear(s, n->ino);
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
		slot_clear(s, ino);
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

/* "g" be64 group, or "p" path. */
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

static int
identity_slot(struct eos_view *v, const char *path, uint64_t group, uint64_t want, uint64_t *ret)
{
	cleanup_free char *key = NULL;
	size_t len = identity_key(path, group, &key);
	union eos_hashmap_value *slot;
	struct eos_table_shard *s;
	int r;

	if (len == 0)
		return -ENOMEM;
	s = &v->idshards[eos_hashmap_hash(key, len) % EOS_TABLE_SHARDS];
	pthread_mutex_lock(&s->lock);
	r = eos_hashmap_get_or_insert(&s->ids, key, len, &slot);
	if (r > 0 || (r == 0 && want))
		slot->u64 = want ? want : eos_node_alloc_ino(v);
	if (r >= 0)
		*ret = slot->u64;
	pthread_mutex_unlock(&s->lock);
	return r < 0 ? r : 0;
}

int
eos_node_identity(struct eos_view *v, const char *path, uint64_t group, uint64_t *ret)
{
	return identity_slot(v, path, group, 0, ret);
}

int
eos_node_identity_set(struct eos_view *v, const char *path, uint64_t group, uint64_t ino)
{
	uint64_t got;

	return identity_slot(v, path, group, ino, &got);
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
	n->lst = malloc(sizeof(*lst));
	n->lower = path;
	if (!n->name || !n->lst) {
		eos_node_free(n);
		return NULL;
	}
	*n->lst = *lst;
	return n;
}

int
eos_node_from_lower(struct eos_view *v, const struct eos_node *parent, const char *name,
		    const struct eos_stat *lst, bool ref, struct eos_node **ret)
{
	char *path = NULL;
	struct eos_node *n, *fresh;
	uint64_t ino;
	int r = child_path(parent, name, &path);

	r = r ?: eos_node_identity(v, path, lst->link_group, &ino);
	if (r < 0) {
		free(path);
		return r;
	}
	struct eos_table_shard *s = shard_of(v, ino);
	pthread_mutex_lock(&s->lock);
	union eos_hashmap_value *slot = table_find(s, ino);
	n = slot ? slot->ptr : NULL;
	if (n && ref)
		n->nlookup++;
	pthread_mutex_unlock(&s->lock);
	if (n) {
		free(path);
		*ret = n;
		return 0;
	}
	fresh = node_build(v, ino, parent, name, path, lst);
	if (!fresh)
		return -ENOMEM;
	fresh->nlookup = ref ? 1 : 0;
	if (eos_node_insert(v, fresh) == 0) {
		*ret = fresh;
		return 0;
	}
	/* another thread built it first */
	eos_node_free(fresh);
	return eos_node_from_lower(v, parent, name, lst, ref, ret);
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
