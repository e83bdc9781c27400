/* SPDX-License-Identifier: MIT */
/*
 * fs/node: a node's memory — the one allocation of a looked-up lower file (its origin path in
 * it), the extension the others need (doc/fs.md, "Memory"), what it keeps of its store entry,
 * its attributes.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

#include "fs/view-internal.h"

const struct eos_node_ext eos_node_ext_none = { .data_fd = -1, .shared = true };

/* A node of no extension, with room for a name of len bytes (its NUL included: at least 1). */
static struct eos_node *
node_alloc(uint64_t ino, size_t len)
{
	/* path starts within the struct's tail padding: not sizeof(*n) + len */
	size_t size = EOS_MAX(offsetof(struct eos_node, path) + EOS_MAX(len, (size_t)1),
			      sizeof(struct eos_node));
	struct eos_node *n = calloc(1, size);

	if (!n)
		return NULL;
	n->ino = ino;
	n->x = (struct eos_node_ext *)&eos_node_ext_none;
	return n;
}

static struct eos_odir *
odir_new(uint64_t ino, const char *path)
{
	size_t len = strlen(path);
	struct eos_odir *d = malloc(sizeof(*d) + len + 1);

	if (!d)
		return NULL;
	memset(d, 0, sizeof(*d));
	d->none = eos_node_ext_none;
	atomic_init(&d->refs, 1);
	d->len = (uint32_t)len;
	d->ino = ino;
	memcpy(d->path, path, len + 1);
	return d;
}

void
eos_odir_unref(struct eos_odir *d)
{
	if (!d || atomic_fetch_sub_explicit(&d->refs, 1, memory_order_acq_rel) != 1)
		return;
	/* no node wrote to the extension its unextended nodes share */
	assert(memcmp(&d->none, &eos_node_ext_none, sizeof(d->none)) == 0);
	free(d);
}

/* Whether the directory's odir no longer knows its entry at the view's version (a live publish
 * moved the view since it was made) while the extension has that entry (reset.c re-read it). */
static bool
kids_stale(const struct eos_view *v, const struct eos_node_ext *x)
{
	return x->kids->version != v->version && x->lst && x->lst->kind == EOS_KIND_DIR;
}

struct eos_odir *
eos_node_kids(struct eos_view *v, struct eos_node *p)
{
	struct eos_node_ext *x = p->x;
	char buf[EOS_LOWER_BUF];
	const char *lower;
	struct eos_odir *d;

	if (!eos_node_extended(p))
		return NULL;
	if (!x->kids || kids_stale(v, x)) {
		/* nodes built under the old one keep it; those built from now on share this */
		lower = x->kids ? x->kids->path : eos_node_lower(p, buf);
		if (!lower || !(d = odir_new(p->ino, lower)))
			return x->kids ? eos_odir_ref(x->kids) : NULL;
		if (x->lst && x->lst->kind == EOS_KIND_DIR) {
			d->version = v->version;
			d->floor = x->lst->floor;
		}
		eos_odir_unref(x->kids);
		x->kids = d;
	}
	return eos_odir_ref(x->kids);
}

struct eos_odir *
eos_odir_ref(struct eos_odir *d)
{
	atomic_fetch_add_explicit(&d->refs, 1, memory_order_relaxed);
	return d;
}

struct eos_node *
eos_node_new_lower(uint64_t ino, struct eos_odir *d, const char *name)
{
	size_t len = strlen(name);
	struct eos_node *n = node_alloc(ino, len + 1);

	if (!n)
		return NULL;
	memcpy(n->path, name, len + 1);
	n->x = &d->none;
	return n;
}

struct eos_node *
eos_node_new(uint64_t ino)
{
	struct eos_node *n = node_alloc(ino, 0);

	if (n && eos_node_extend_bare(n) < 0) {
		free(n);
		return NULL;
	}
	return n;
}

int
eos_node_extend_bare(struct eos_node *n)
{
	struct eos_node_ext *x;

	if (eos_node_extended(n))
		return 0;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->data_fd = -1;
	x->atime = x->ctime = n->mtime;
	x->odir = eos_node_odir(n); /* its reference moves along */
	x->parent = x->odir ? x->odir->ino : 0;
	/* published: a table lookup may read x->link_group and the origin without the node's
	 * lock */
	atomic_store_explicit(&n->x, x, memory_order_release);
	return 0;
}

/* The store entry of n's origin lower: one lookup below its directory while the view is at the
 * version its odir knows the directory's entry for, else a walk from the root. */
static int
origin_stat(struct eos_view *v, const struct eos_node *n, const char *lower, struct eos_stat *ret)
{
	const struct eos_odir *d = n->x->lower ? NULL : eos_node_odir(n);
	struct eos_stat dir = { .kind = EOS_KIND_DIR };

	if (!d || d->version == 0 || d->version != v->version)
		return eos_tree_stat(v->tree, lower, ret, NULL);
	dir.floor = d->floor;
	return eos_tree_lookup_child(v->tree, d->path, &dir, n->path, ret, NULL);
}

int
eos_node_extend(struct eos_view *v, struct eos_node *n)
{
	char buf[EOS_LOWER_BUF];
	const char *lower = eos_node_lower(n, buf);
	bool extended = eos_node_extended(n);
	struct eos_lower *lst;
	struct eos_stat st;
	int r;

	if (!lower || n->x->lst)
		return eos_node_extend_bare(n);
	r = origin_stat(v, n, lower, &st);
	if (r < 0) {
		eos_log_error("view of '%s': inode %lu: origin '%s': %s", v->sandbox,
			      (unsigned long)n->ino, lower, strerror(-r));
		/* a node loaded from the delta may have lost its origin: it shows no content */
		return extended ? 0 : r == -ENOENT || r == -ENOTDIR ? -EIO : r;
	}
	lst = eos_lower_new(&st);
	if (!lst || eos_node_extend_bare(n) < 0) {
		free(lst);
		return -ENOMEM;
	}
	n->x->lst = lst;
	if (!extended) {
		n->x->rdev = st.rdev;
		n->x->link_group = st.link_group;
	}
	return 0;
}

const char *
eos_node_lower(const struct eos_node *n, char *buf)
{
	const struct eos_node_ext *x = atomic_load_explicit(&n->x, memory_order_acquire);
	const struct eos_odir *d = eos_node_odir(n);
	int len;

	if (x->lower)
		return x->lower;
	if (!d)
		return NULL;
	len = snprintf(buf, EOS_LOWER_BUF, "%s%s%s", d->path, d->len ? "/" : "", n->path);
	/* a lookup's path was at most EOS_PATH_MAX */
	return len >= 0 && len < EOS_LOWER_BUF ? buf : NULL;
}

bool
eos_node_origin_is(const struct eos_node *n, const char *path)
{
	const struct eos_node_ext *x = atomic_load_explicit(&n->x, memory_order_acquire);
	const struct eos_odir *d = eos_node_odir(n);

	if (x->lower)
		return strcmp(x->lower, path) == 0;
	if (!d || strncmp(path, d->path, d->len) != 0)
		return false;
	path += d->len;
	if (d->len && *path++ != '/')
		return false;
	return strcmp(path, n->path) == 0;
}

bool
eos_node_has_lower(const struct eos_node *n)
{
	return n->x->lower || eos_node_odir(n);
}

int
eos_node_set_lower(struct eos_node *n, const char *path)
{
	char buf[EOS_LOWER_BUF];
	const char *now = eos_node_lower(n, buf);
	char *copy = NULL;

	if (path && now && !n->x->lower && strcmp(path, now) == 0)
		return 0;
	if (!path && !now)
		return 0;
	if (path && !(copy = strdup(path)))
		return -ENOMEM;
	if (eos_node_extend_bare(n) < 0) {
		free(copy);
		return -ENOMEM;
	}
	free(n->x->lower);
	n->x->lower = copy;
	/* x->lower or nothing from now on; the name stays in path */
	eos_odir_unref(n->x->odir);
	n->x->odir = NULL;
	/* its children's origins move with it */
	eos_odir_unref(n->x->kids);
	n->x->kids = NULL;
	return 0;
}

void
eos_node_set_name(struct eos_node *n, char *name)
{
	assert(eos_node_extended(n));
	if (n->flags & EOS_NODE_NAME_OWN)
		free(n->x->name);
	n->x->name = name;
	n->flags |= EOS_NODE_NAME_OWN;
}

static void
ext_free(struct eos_node_ext *x)
{
	if (x->data_fd >= 0)
		close(x->data_fd);
	free(x->lst);
	free(x->lower);
	free(x->name);
	eos_odir_unref(x->odir);
	eos_odir_unref(x->kids);
	free(x->target);
	eos_hashmap_release(&x->dirents);
	eos_dirlist_free(x->list);
	for (size_t i = 0; i < x->nxattrs; i++) {
		free(x->xattrs[i].name);
		free(x->xattrs[i].value);
	}
	free(x->xattrs);
	eos_writelog_release(&x->log);
	eos_writelog_release(&x->present);
	eos_file_close(x->lower_file);
	free(x);
}

void
eos_node_free(struct eos_node *n)
{
	if (!n)
		return;
	if (eos_node_extended(n))
		ext_free(n->x);
	else
		eos_odir_unref(eos_node_odir(n));
	free(n);
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

	eos_lower_content(n->x->lst, &c);
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
	n->nlink = 1;
	n->mtime = lst->attr.mtime_ns;
	if (lst->nxattrs == 0)
		n->flags |= EOS_NODE_NO_XATTRS;
	else
		n->flags &= ~(unsigned)EOS_NODE_NO_XATTRS;
	if (!eos_node_extended(n))
		return;
	n->x->atime = n->x->ctime = n->mtime;
	n->x->rdev = lst->rdev;
	n->x->link_group = lst->link_group;
}

void
eos_node_stat(const struct eos_node *n, struct stat *st)
{
	const struct eos_node_ext *x = n->x;

	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_mode = n->mode;
	st->st_nlink = eos_node_is_dir(n) ? 2 + x->subdirs : n->nlink;
	st->st_uid = n->uid;
	st->st_gid = n->gid;
	st->st_rdev = (dev_t)x->rdev;
	st->st_size = (off_t)n->size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((n->size + 511) / 512);
	st->st_atim = eos_ns_to_ts(eos_node_atime(n));
	st->st_mtim = eos_ns_to_ts(n->mtime);
	st->st_ctim = eos_ns_to_ts(eos_node_ctime(n));
}

int64_t
eos_node_now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return eos_ts_to_ns(now);
}

void
eos_node_touch(struct eos_node *n, bool mtime)
{
	n->x->ctime = eos_node_now_ns();
	if (mtime)
		n->mtime = n->x->ctime;
	n->flags |= EOS_NODE_DIRTY;
}
