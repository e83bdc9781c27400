/* SPDX-License-Identifier: MIT */
/*
 * fs/capture: enumerate a session's changes for the publish gate. The walk follows upper dirents
 * from the root; each directory's dirents and each node's fields are copied under its lock, and
 * the callback runs with no lock held.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/endian.h"

#include "fs/capture-internal.h"

const char *
eos_delta_change_name(enum eos_delta_change c)
{
	switch (c) {
	case EOS_DELTA_DELETE:
		return "delete";
	case EOS_DELTA_PUT:
		return "put";
	case EOS_DELTA_ATTR:
		return "attr";
	case EOS_DELTA_DIR:
		return "dir";
	}
	return "?";
}

struct dirent_copy {
	char *name;
	uint64_t value;
};

static int
cmp_dirent(const void *a, const void *b)
{
	return strcmp(((const struct dirent_copy *)a)->name, ((const struct dirent_copy *)b)->name);
}

static void
dirents_free(struct dirent_copy *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(d[i].name);
	free(d);
}

/* p's non-absent dirents, sorted by name. */
static int
copy_dirents(struct eos_node *p, struct dirent_copy **ret, size_t *ret_n)
{
	struct eos_hashmap_iter it = { 0 };
	struct dirent_copy *d;
	size_t n = 0;

	eos_node_lock(p);
	d = calloc(eos_hashmap_count(&p->x->dirents) + 1, sizeof(*d));
	while (d && eos_hashmap_next(&p->x->dirents, &it)) {
		if (it.value->u64 == EOS_DIRENT_ABSENT)
			continue;
		d[n].name = strndup(it.key, it.klen);
		d[n].value = it.value->u64;
		if (!d[n++].name) {
			dirents_free(d, n);
			d = NULL;
		}
	}
	eos_node_unlock(p);
	if (!d)
		return -ENOMEM;
	qsort(d, n, sizeof(*d), cmp_dirent);
	*ret = d;
	*ret_n = n;
	return 0;
}

/* Whether n is a file with more than one name, now or at the view's version. */
static bool
linked(const struct eos_node *n)
{
	return S_ISREG(n->mode) && (n->nlink > 1 || n->x->link_group);
}

static enum eos_delta_change
change_of(const struct eos_node *n, bool renamed)
{
	/* every name of a linked file is put, so that the publish stages them as one group */
	if (n->flags & (EOS_NODE_CREATED | EOS_NODE_DATA) || renamed || linked(n))
		return EOS_DELTA_PUT;
	if (n->flags & EOS_NODE_META_CHANGED)
		return EOS_DELTA_ATTR;
	return eos_node_is_dir(n) ? EOS_DELTA_DIR : EOS_DELTA_ATTR;
}

/* Whether n (locked) was renamed itself: its origin is not where its parent's origin puts it
 * (expected: parent origin/name, NULL when the parent has none). */
static bool
renamed_of(const struct eos_node *n, const char *expected)
{
	char buf[EOS_LOWER_BUF];
	const char *lower = eos_node_lower(n, buf);

	return lower && (!expected || strcmp(lower, expected) != 0);
}

struct node_copy {
	struct eos_delta_entry e;
	char data_path[4096];
	char *target, *origin;
	char *lower; /* n's origin, for its children's "expected" */
	struct eos_content content;
	struct eos_delta_range *ranges;
	struct eos_delta_xattr *xattrs;
	size_t nxattrs;
};

static void
node_copy_free(struct node_copy *nc)
{
	if (!nc)
		return;
	free(nc->target);
	free(nc->origin);
	free(nc->lower);
	free(nc->ranges);
	for (size_t i = 0; i < nc->nxattrs; i++) {
		free((char *)nc->xattrs[i].name);
		free((void *)nc->xattrs[i].value);
	}
	free(nc->xattrs);
	free(nc);
}

/* Copy n's xattrs (n locked; loaded from the store first for a lower node). */
static int
copy_xattrs(struct eos_capture *c, struct eos_node *n, struct node_copy *out)
{
	int r = eos_xattr_load(c->v, n);

	if (r < 0 || !n->x->nxattrs)
		return r;
	out->xattrs = calloc(n->x->nxattrs, sizeof(*out->xattrs));
	if (!out->xattrs)
		return -ENOMEM;
	for (size_t i = 0; i < n->x->nxattrs; i++) {
		void *value = malloc(n->x->xattrs[i].len ? n->x->xattrs[i].len : 1);
		char *name = strdup(n->x->xattrs[i].name);

		out->xattrs[out->nxattrs++] = (struct eos_delta_xattr){
			.name = name, .value = value, .len = n->x->xattrs[i].len
		};
		if (!name || !value)
			return -ENOMEM;
		memcpy(value, n->x->xattrs[i].value, n->x->xattrs[i].len);
	}
	return 0;
}

/* n (locked) at path: origin is the member's own lower path (capture-links.c), else NULL. */
static int
copy_node(struct eos_capture *c, struct eos_node *n, const char *path, const char *expected,
	  const char *origin, struct node_copy *out)
{
	struct eos_delta_entry *e = &out->e;
	char buf[EOS_LOWER_BUF];
	const char *lower;
	bool renamed;
	char name[32];

	eos_node_lock(n);
	int r = eos_partial_flatten(c->v, n); /* the publish gate reads the data file whole */
	if (r < 0) {
		eos_node_unlock(n);
		return r;
	}
	renamed = !origin && renamed_of(n, expected);
	lower = eos_node_lower(n, buf);
	origin = origin ? origin : lower;
	*e = (struct eos_delta_entry){ .path = path,
				       .change = change_of(n, renamed),
				       .renamed = renamed,
				       .mode = n->mode,
				       .uid = n->uid,
				       .gid = n->gid,
				       .node = n->ino,
				       .mtime_ns = n->mtime,
				       .size = n->size,
				       .rdev = n->x->rdev,
				       .opaque = n->flags & EOS_NODE_OPAQUE };
	if (n->flags & EOS_NODE_DATA) {
		eos_data_path(n, name, sizeof(name));
		snprintf(out->data_path, sizeof(out->data_path), "%s/%s", c->v->data_dir, name);
		e->data_path = out->data_path;
	} else if (S_ISREG(n->mode) && n->x->lst) {
		eos_lower_content(n->x->lst, &out->content);
		e->content = &out->content;
	}
	out->target = n->x->target ? strdup(n->x->target) : NULL;
	out->origin = origin && strcmp(origin, path) != 0 ? strdup(origin) : NULL;
	out->lower = lower ? strdup(lower) : NULL;
	out->ranges = calloc(n->x->log.n + 1, sizeof(*out->ranges));
	for (size_t i = 0; out->ranges && i < n->x->log.n; i++) {
		const char *owner = eos_opstable_name(&c->v->ops, n->x->log.v[i].op);

		/* an operation whose name could not be recorded (a full disk) */
		out->ranges[i] =
			(struct eos_delta_range){ .start = n->x->log.v[i].start,
						  .end = n->x->log.v[i].end,
						  .owner = owner ? owner : EOS_OWNER_UNKNOWN };
	}
	e->nranges = out->ranges ? n->x->log.n : 0;
	r = out->ranges ? copy_xattrs(c, n, out) : -ENOMEM;
	eos_node_unlock(n);
	e->ranges = out->ranges;
	e->target = out->target;
	e->origin = out->origin;
	e->xattrs = out->xattrs;
	e->nxattrs = out->nxattrs;
	return r;
}

static int walk(struct eos_capture *c, struct eos_node *p, const char *dir, const char *origin);

/* Remember that path was emitted, and where directory n is. */
static int
remember(struct eos_capture *c, const struct eos_node *n, const char *path, bool renamed)
{
	union eos_hashmap_value *slot;
	uint8_t key[8];
	int r = eos_hashmap_put(&c->paths, path, strlen(path), NULL);

	if (r < 0 || !eos_node_is_dir(n))
		return r;
	c->moved |= renamed;
	eos_put_be64(key, n->ino);
	r = eos_hashmap_get_or_insert(&c->dirs, key, sizeof(key), &slot);
	if (r > 0 && !(slot->ptr = strdup(path)))
		return -ENOMEM;
	return r < 0 ? r : 0;
}

int
eos_capture_emit(struct eos_capture *c, struct eos_node *n, const char *path, const char *expected,
		 const char *origin)
{
	struct node_copy *nc = calloc(1, sizeof(*nc));
	int r = nc ? copy_node(c, n, path, expected, origin, nc) : -ENOMEM;

	if (r == 0 && S_ISLNK(nc->e.mode) && !nc->target) {
		r = eos_fs_readlink(c->v, n, &nc->target);
		nc->e.target = nc->target;
	}
	r = r ?: remember(c, n, path, nc->e.renamed);
	if (r == 0)
		r = c->fn(c->ctx, &nc->e);
	if (r == 0 && eos_node_is_dir(n))
		r = walk(c, n, path, nc->lower);
	node_copy_free(nc);
	return r;
}

/* Walk directory p at path dir; origin is p's origin (NULL: none). */
static int
walk(struct eos_capture *c, struct eos_node *p, const char *dir, const char *origin)
{
	struct dirent_copy *d = NULL;
	size_t n = 0;
	int r = copy_dirents(p, &d, &n);

	for (size_t i = 0; r == 0 && i < n; i++) {
		cleanup_free char *path = NULL, *expected = NULL;
		struct eos_node *child;

		if (asprintf(&path, "%s%s%s", dir, dir[0] ? "/" : "", d[i].name) < 0 ||
		    (origin &&
		     asprintf(&expected, "%s%s%s", origin, origin[0] ? "/" : "", d[i].name) < 0)) {
			r = -ENOMEM;
			break;
		}
		if (d[i].value == EOS_DIRENT_WHITEOUT) {
			struct eos_delta_entry e = { .path = path, .change = EOS_DELTA_DELETE };

			r = eos_hashmap_put(&c->paths, path, strlen(path), NULL);
			r = r ?: c->fn(c->ctx, &e);
			continue;
		}
		child = eos_node_get(c->v, d[i].value);
		r = child ? eos_capture_emit(c, child, path, expected, NULL) : -EIO;
	}
	dirents_free(d, n);
	return r;
}

static void
capture_release(struct eos_capture *c)
{
	for (struct eos_hashmap_iter it = { 0 }; eos_hashmap_next(&c->dirs, &it);)
		free(it.value->ptr);
	eos_hashmap_release(&c->dirs);
	eos_hashmap_release(&c->paths);
}

int
eos_view_delta(struct eos_view *v, eos_delta_fn fn, void *ctx, struct eos_error *err)
{
	struct eos_capture c = { .v = v, .fn = fn, .ctx = ctx };
	struct eos_node *root = eos_node_get(v, EOS_ROOT_INO);
	int r;

	if (!v->session)
		return eos_error_set(err, -EINVAL, "a read-only view has no delta");
	char buf[EOS_LOWER_BUF];

	eos_node_lock(root);
	const char *lower = eos_node_lower(root, buf);
	cleanup_free char *origin = lower ? strdup(lower) : NULL;
	bool changed = root->flags & EOS_NODE_META_CHANGED;
	eos_node_unlock(root);
	/* the root itself is an entry only when its attributes or xattrs changed */
	if (changed)
		r = eos_capture_emit(&c, root, "", origin, NULL);
	else
		r = remember(&c, root, "", false) ?: walk(&c, root, "", origin);
	r = r ?: eos_capture_links(&c);
	capture_release(&c);
	if (r < 0)
		return eos_error_set(err, r, "session '%s': delta walk failed: %s", v->session,
				     strerror(-r));
	return r;
}
