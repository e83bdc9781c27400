/* SPDX-License-Identifier: MIT */
/* fs/namespace: lookup, create, link, unlink, rmdir and rename on view directories. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

#include "fs/view-internal.h"

int
eos_fs_getattr(struct eos_view *v, struct eos_node *n, struct stat *st)
{
	int r = 0;

	eos_node_lock(n);
	if (eos_node_is_dir(n))
		r = eos_dir_count_subdirs(v, n);
	if (r == 0) {
		eos_node_stat(n, st);
		eos_data_blocks(v, n, st);
	}
	eos_node_unlock(n);
	return r;
}

int
eos_fs_lookup(struct eos_view *v, struct eos_node *p, const char *name, struct eos_node **ret)
{
	int r;

	eos_node_lock(p);
	r = eos_node_is_dir(p) ? eos_dir_child(v, p, name, true, ret) : -ENOTDIR;
	eos_node_unlock(p);
	return r;
}

int
eos_fs_lookup_listed(struct eos_view *v, struct eos_node *p, const char *name,
		     const struct eos_listed *lower, struct eos_node **ret)
{
	int r;

	eos_node_lock(p);
	r = eos_node_is_dir(p) ? eos_dir_child_listed(v, p, name, lower, true, ret) : -ENOTDIR;
	eos_node_unlock(p);
	return r;
}

/* A directory that may still take new names (p locked). */
static int
dir_writable(struct eos_node *p)
{
	if (!eos_node_is_dir(p))
		return -ENOTDIR;
	return p->nlink == 0 ? -ENOENT : 0;
}

static int
name_free(struct eos_view *v, struct eos_node *p, const char *name)
{
	struct eos_node *c;
	int r = eos_dir_child(v, p, name, false, &c);

	return r == 0 ? -EEXIST : r == -ENOENT ? 0 : r;
}

static struct eos_node *
new_node(struct eos_view *v, const struct eos_ctx *ctx, struct eos_node *p, const char *name,
	 uint32_t mode, const char *target, uint64_t rdev)
{
	struct eos_node *n = eos_node_new(eos_node_alloc_ino(v));

	if (!n)
		return NULL;
	n->mode = mode;
	n->uid = ctx->uid;
	n->gid = p->mode & S_ISGID ? p->gid : ctx->gid;
	if (S_ISDIR(mode) && p->mode & S_ISGID)
		n->mode |= S_ISGID;
	n->nlink = 1;
	n->x->rdev = S_ISCHR(mode) || S_ISBLK(mode) ? rdev : 0;
	eos_node_set_parent(n, p->ino);
	n->flags = EOS_NODE_UPPER | EOS_NODE_CREATED | EOS_NODE_XATTRS | EOS_NODE_SUBDIRS;
	eos_node_set_name(n, strdup(name));
	n->x->target = target ? strdup(target) : NULL;
	n->size = target ? strlen(target) : 0;
	n->mtime = n->x->atime = n->x->ctime = eos_node_now_ns();
	/* a new file has no data file until its first write: empty files cost no create */
	if (!n->x->name || (target && !n->x->target)) {
		eos_node_free(n);
		return NULL;
	}
	return n;
}

/* p (locked) changed: its times and its record go into the operation's batch. */
static int
parent_changed(struct eos_txn *t, struct eos_node *p)
{
	int r = eos_txn_save(t, p);

	if (r < 0)
		return r;
	eos_node_touch(p, true);
	return eos_delta_put_node(t->v, p, t->b);
}

static int
make_locked(struct eos_view *v, const struct eos_ctx *ctx, struct eos_node *p, const char *name,
	    uint32_t mode, const char *target, uint64_t rdev, struct eos_node **ret)
{
	struct eos_txn t = { 0 };
	struct eos_node *n;
	bool dir = S_ISDIR(mode);
	int r = dir_writable(p);

	r = r ?: name_free(v, p, name);
	r = r ?: (dir ? eos_dir_count_subdirs(v, p) : 0);
	if (r < 0)
		return r;
	n = new_node(v, ctx, p, name, mode, target, rdev);
	if (!n)
		return -ENOMEM;
	if (dir &&
	    eos_hashmap_get(&p->x->dirents, name, strlen(name)) == (void *)EOS_DIRENT_WHITEOUT)
		n->flags |= EOS_NODE_OPAQUE;
	n->nlookup = 1;
	r = eos_node_insert(v, n); /* unreachable until the dirent is applied */
	if (r < 0) {
		eos_node_free(n);
		return r;
	}
	r = eos_txn_begin(v, &t);
	r = r ?: eos_delta_put_node(v, n, t.b);
	r = r ?: eos_txn_dirent(&t, p, name, n->ino);
	r = r ?: parent_changed(&t, p);
	if (r == 0 && dir)
		p->x->subdirs++;
	r = eos_txn_end(&t, r);
	if (r < 0) {
		eos_node_remove(v, n);
		return r;
	}
	*ret = n;
	return 0;
}

static int
make_node(struct eos_view *v, const struct eos_ctx *ctx, struct eos_node *p, const char *name,
	  uint32_t mode, const char *target, uint64_t rdev, struct eos_node **ret)
{
	int r = eos_copyup_meta(v, p);

	if (r < 0)
		return r;
	eos_node_lock(p);
	r = make_locked(v, ctx, p, name, mode, target, rdev, ret);
	eos_node_unlock(p);
	return r;
}

static int
link_locked(struct eos_view *v, struct eos_node *n, struct eos_node *p, const char *name)
{
	struct eos_txn t = { 0 };
	int r = dir_writable(p);

	r = r ?: (eos_node_is_dir(n) ? -EPERM : 0);
	r = r ?: (n->nlink == 0 ? -ENOENT : 0);
	r = r ?: name_free(v, p, name);
	r = r ?: eos_txn_begin(v, &t);
	r = r ?: eos_txn_save(&t, n);
	if (r == 0) {
		n->nlink++;
		eos_node_touch(n, false);
		r = eos_delta_put_node(v, n, t.b);
	}
	r = r ?: eos_txn_dirent(&t, p, name, n->ino);
	r = r ?: parent_changed(&t, p);
	return eos_txn_end(&t, r);
}

int
eos_fs_make(struct eos_view *v, const struct eos_ctx *ctx, struct eos_node *p, const char *name,
	    uint32_t mode, const char *target, struct eos_node **ret)
{
	return make_node(v, ctx, p, name, mode, target, 0, ret);
}

int
eos_fs_mknod(struct eos_view *v, const struct eos_ctx *ctx, struct eos_node *p, const char *name,
	     uint32_t mode, uint64_t rdev, struct eos_node **ret)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
	case S_IFCHR:
	case S_IFBLK:
		break;
	default:
		return -EINVAL;
	}
	return make_node(v, ctx, p, name, mode & (S_IFMT | 07777), NULL, rdev, ret);
}

int
eos_fs_link(struct eos_view *v, struct eos_node *n, struct eos_node *p, const char *name)
{
	int r = eos_copyup_meta(v, n);

	r = r ?: eos_copyup_meta(v, p);
	if (r < 0)
		return r;
	eos_node_lock(p);
	eos_node_lock(n);
	r = link_locked(v, n, p, name);
	if (r == 0)
		eos_node_ref(v, n, 1);
	eos_node_unlock(n);
	eos_node_unlock(p);
	return r;
}

/* Stage the removal of the upper dirents of a directory being removed (its whiteouts). c
 * locked; they stay in memory (nothing can look into a removed directory). */
static int
clear_dirents(struct eos_node *c, struct eos_session_batch *b)
{
	struct eos_hashmap_iter it = { 0 };
	cleanup_free char *name = NULL;
	int r = 0;

	while (r == 0 && eos_hashmap_next(&c->x->dirents, &it)) {
		if (it.value->u64 == EOS_DIRENT_ABSENT)
			continue;
		free(name);
		name = strndup(it.key, it.klen);
		r = name ? eos_delta_put_dirent(c, name, EOS_DIRENT_ABSENT, b) : -ENOMEM;
	}
	return r;
}

/* c (locked) loses one link; directories lose all. */
static int
drop_link(struct eos_txn *t, struct eos_node *c)
{
	int r = eos_txn_save(t, c);

	r = r ?: eos_node_extend_bare(c); /* its times change */
	if (r < 0)
		return r;
	if (eos_node_is_dir(c)) {
		c->nlink = 0;
		r = clear_dirents(c, t->b);
	} else if (c->nlink > 0) {
		c->nlink--;
	}
	eos_node_touch(c, false);
	if (r == 0 && !(c->flags & EOS_NODE_UPPER) && c->nlink > 0)
		r = eos_copyup_record(t->v, c); /* a lower hard link lost a name: remember it */
	return r ?: eos_txn_node(t, c);
}

/* Whether c may replace or be removed as a target of the given kind. c locked. */
static int
check_victim(struct eos_view *v, struct eos_node *c, bool want_dir)
{
	int r;

	if (want_dir && !eos_node_is_dir(c))
		return -ENOTDIR;
	if (!want_dir && eos_node_is_dir(c))
		return -EISDIR;
	if (!want_dir)
		return 0;
	r = eos_dir_is_empty(v, c);
	return r < 0 ? r : r ? 0 : -ENOTEMPTY;
}

static int
unlink_locked(struct eos_view *v, struct eos_node *p, struct eos_node *c, const char *name,
	      bool dir)
{
	struct eos_txn t = { 0 };
	int r = check_victim(v, c, dir);

	r = r ?: (dir ? eos_dir_count_subdirs(v, p) : 0);
	r = r ?: eos_txn_begin(v, &t);
	if (r == 0)
		eos_session_batch_freeing(t.b); /* rm works on a full disk: it makes room */
	r = r ?: eos_txn_drop(&t, p, name);
	r = r ?: drop_link(&t, c);
	r = r ?: parent_changed(&t, p);
	if (r == 0 && dir && p->x->subdirs > 0)
		p->x->subdirs--;
	return eos_txn_end(&t, r);
}

int
eos_fs_unlink(struct eos_view *v, struct eos_node *p, const char *name, bool dir)
{
	struct eos_node *c;
	int r = eos_copyup_meta_for(v, p, true);

	if (r < 0)
		return r;
	eos_node_lock(p);
	r = eos_dir_child(v, p, name, false, &c);
	if (r == 0) {
		eos_node_lock(c);
		r = unlink_locked(v, p, c, name, dir);
		eos_node_unlock(c);
	}
	eos_node_unlock(p);
	return r;
}

int
eos_fs_readlink(struct eos_view *v, struct eos_node *n, char **ret)
{
	char buf[EOS_LOWER_BUF];
	int r = 0;

	eos_node_lock(n);
	if (!S_ISLNK(n->mode))
		r = -EINVAL;
	else if (!n->x->target && eos_node_has_lower(n) && (r = eos_node_extend(v, n)) == 0)
		r = eos_tree_readlink(v->tree, eos_node_lower(n, buf), &n->x->target, NULL);
	if (r == 0)
		*ret = n->x->target ? strdup(n->x->target) : NULL;
	if (r == 0 && !*ret)
		r = -ENOMEM;
	eos_node_unlock(n);
	return r;
}
