/* SPDX-License-Identifier: MIT */
/*
 * eos_view_publish: a session's delta (eos_view_delta) staged into the store's publish gate.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/hashmap.h"

#include "fs/view-internal.h"

struct moved_dir {
	char *path, *origin;
};

/* Paths left out of the publish (sockets), for eos_publish_result.skipped. */
struct skipped {
	char **v;
	size_t n, cap;
};

static void
skipped_release(struct skipped *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct skipped){ 0 };
}

struct stage_ctx {
	struct eos_store *st;
	const char *sandbox;
	struct eos_publish *p;
	struct eos_hashmap links; /* node -> first path staged for it (malloc'd) */
	struct eos_hashmap paths; /* every path the delta names */
	struct moved_dir *moved;  /* directories whose lower children must follow them */
	size_t nmoved, cap;
	const struct eos_delta_entry *moved_entry; /* stage_xattrs' entry */
	struct skipped *skipped;
	struct eos_error *err;
	int r;
};

static struct eos_attr
entry_attr(const struct eos_delta_entry *e)
{
	return (struct eos_attr){
		.mode = e->mode & 07777, .uid = e->uid, .gid = e->gid, .mtime_ns = e->mtime_ns
	};
}

/* A hard link of a file already staged in this publish: 1 when staged as a link. */
static int
stage_link(struct stage_ctx *c, const struct eos_delta_entry *e)
{
	union eos_hashmap_value *slot;
	int r = eos_hashmap_get_or_insert(&c->links, &e->node, sizeof(e->node), &slot);

	if (r < 0)
		return eos_error_set(c->err, r, "publish: out of memory");
	if (r == 0)
		return eos_publish_link(c->p, e->path, slot->ptr, c->err) ?: 1;
	slot->ptr = strdup(e->path);
	return slot->ptr ? 0 : eos_error_set(c->err, -ENOMEM, "publish: out of memory");
}

static int
stage_file(struct stage_ctx *c, const struct eos_delta_entry *e)
{
	cleanup_free struct eos_write_range *ranges = NULL;
	struct eos_publish_file f = { .attr = entry_attr(e),
				      .data_path = e->data_path,
				      .content = e->data_path ? NULL : e->content,
				      .origin = e->origin };
	int r = stage_link(c, e);

	if (r != 0)
		return r < 0 ? r : 0;
	if (e->nranges) {
		ranges = calloc(e->nranges, sizeof(*ranges));
		if (!ranges)
			return eos_error_set(c->err, -ENOMEM, "publish: out of memory");
		for (size_t i = 0; i < e->nranges; i++)
			ranges[i] = (struct eos_write_range){ .start = e->ranges[i].start,
							      .end = e->ranges[i].end,
							      .owner = e->ranges[i].owner };
	}
	f.ranges = ranges;
	f.nranges = e->nranges;
	/* a created file that was never written has no data file: it is empty */
	if (!f.data_path && !f.content && e->size == 0)
		f.data = "";
	else if (!f.data_path && !f.content)
		return eos_error_set(c->err, -EIO,
				     "publish '%s': the file has no content (size %llu)", e->path,
				     (unsigned long long)e->size);
	return eos_publish_put_file(c->p, e->path, &f, c->err);
}

static int
remember_moved(struct stage_ctx *c, const struct eos_delta_entry *e)
{
	struct moved_dir *m;

	if (eos_buf_array_reserve(&c->moved, &c->cap, c->nmoved, sizeof(*c->moved), 8) < 0)
		return eos_error_set(c->err, -ENOMEM, "publish: out of memory");
	m = &c->moved[c->nmoved];
	m->path = strdup(e->path);
	m->origin = strdup(e->origin);
	if (!m->path || !m->origin) {
		free(m->path);
		free(m->origin);
		return eos_error_set(c->err, -ENOMEM, "publish: out of memory");
	}
	c->nmoved++;
	return 0;
}

/*
 * Whether directory e, which the session created (no origin), stands where the base has a
 * directory: renamed over a deleted or an empty one. The view shows only its own children, so
 * it replaces the base's.
 */
static bool
replaces_base_dir(struct stage_ctx *c, const struct eos_delta_entry *e)
{
	struct eos_stat st;

	if (e->change != EOS_DELTA_PUT || e->origin || e->opaque)
		return false;
	return eos_store_stat(c->st, c->sandbox, eos_publish_base(c->p), e->path, &st, NULL) == 0 &&
	       st.kind == EOS_KIND_DIR;
}

static int
stage_dir(struct stage_ctx *c, const struct eos_delta_entry *e)
{
	struct eos_attr attr = entry_attr(e);
	bool opaque = e->opaque || e->origin || replaces_base_dir(c, e);
	int r = eos_publish_mkdir(c->p, e->path, &attr, opaque, c->err);

	if (r >= 0 && e->origin && !e->opaque)
		r = remember_moved(c, e);
	return r;
}

static int
stage_put(struct stage_ctx *c, const struct eos_delta_entry *e)
{
	struct eos_attr attr = entry_attr(e);

	switch (e->mode & S_IFMT) {
	case S_IFDIR:
		return stage_dir(c, e);
	case S_IFLNK:
		return eos_publish_symlink(c->p, e->path, &attr, e->target, c->err);
	case S_IFREG:
		return stage_file(c, e);
	case S_IFIFO:
	case S_IFCHR:
	case S_IFBLK:
		/* each name of a hard-linked one is a node of its own: the store links files only
		 */
		return eos_publish_mknod(c->p, e->path, &attr, eos_kind_of_mode(e->mode), e->rdev,
					 c->err);
	}
	return eos_error_set(c->err, -EINVAL, "publish '%s': file type %06o is not supported",
			     e->path, e->mode & S_IFMT);
}

/*
 * A socket is a runtime object the store does not keep: list it, and delete what the base has
 * at its path (the session replaced that).
 */
static int
stage_socket(struct stage_ctx *c, const struct eos_delta_entry *e)
{
	struct skipped *s = c->skipped;
	struct eos_stat st;
	int r;

	if (eos_buf_array_reserve(&s->v, &s->cap, s->n, sizeof(*s->v), 8) < 0 ||
	    !(s->v[s->n] = strdup(e->path)))
		return eos_error_set(c->err, -ENOMEM, "publish: out of memory");
	s->n++;
	r = eos_store_stat(c->st, c->sandbox, eos_publish_base(c->p), e->path, &st, NULL);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	if (r < 0)
		return eos_error_set(c->err, r, "publish '%s': look up the base: %s", e->path,
				     strerror(-r));
	return eos_publish_remove(c->p, e->path, c->err);
}

/* Names of the xattrs path has at the base, to remove those the session dropped. */
static int
drop_one(void *ctx, const char *name, const void *value, size_t len)
{
	struct stage_ctx *c = ctx;
	const struct eos_delta_entry *e = c->moved_entry;

	(void)value;
	(void)len;
	for (size_t i = 0; i < e->nxattrs; i++)
		if (!strcmp(e->xattrs[i].name, name))
			return 0;
	c->r = eos_publish_set_xattr(c->p, e->path, name, NULL, 0, c->err);
	return c->r < 0 ? 1 : 0;
}

/* The entry's xattrs: all set; for an attribute change also the base's dropped ones removed. */
static int
stage_xattrs(struct stage_ctx *c, const struct eos_delta_entry *e, bool keeps_base)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < e->nxattrs; i++)
		r = eos_publish_set_xattr(c->p, e->path, e->xattrs[i].name, e->xattrs[i].value,
					  e->xattrs[i].len, c->err);
	if (r < 0 || !keeps_base)
		return r;
	c->moved_entry = e;
	c->r = 0;
	r = eos_store_xattrs(c->st, c->sandbox, eos_publish_base(c->p), e->path, drop_one, c,
			     c->err);
	return c->r < 0 ? c->r : r < 0 ? r : 0;
}

/*
 * Where a directory or symlink came from, so that the gate sees a rename (a file's origin is
 * staged with it; a hard link has none).
 */
static int
stage_origin(struct stage_ctx *c, const struct eos_delta_entry *e)
{
	if (!e->origin || S_ISREG(e->mode))
		return 0;
	return eos_publish_set_origin(c->p, e->path, e->origin, c->err);
}

static int
stage_one(void *ctx, const struct eos_delta_entry *e)
{
	struct stage_ctx *c = ctx;
	struct eos_attr attr = entry_attr(e);
	enum eos_delta_change change = e->change;
	int r = eos_hashmap_put(&c->paths, e->path, strlen(e->path), NULL);

	if (r < 0) {
		c->r = eos_error_set(c->err, r, "publish: out of memory");
		return 1;
	}
	/* moved with an ancestor: it does not exist at its new path yet */
	if (e->origin && (change == EOS_DELTA_ATTR || change == EOS_DELTA_DIR))
		change = EOS_DELTA_PUT;
	if (change != EOS_DELTA_DELETE && S_ISSOCK(e->mode)) {
		c->r = stage_socket(c, e);
		return c->r < 0 ? 1 : 0;
	}
	switch (change) {
	case EOS_DELTA_DELETE:
		r = eos_publish_remove(c->p, e->path, c->err);
		break;
	case EOS_DELTA_PUT:
		r = stage_put(c, e);
		r = r ?: stage_origin(c, e);
		r = r ?: stage_xattrs(c, e, false);
		break;
	case EOS_DELTA_ATTR:
		r = eos_publish_set_attr(c->p, e->path, &attr, c->err);
		r = r ?: stage_xattrs(c, e, true);
		break;
	case EOS_DELTA_DIR:
		r = 0;
		break;
	}
	c->r = r;
	return r < 0 ? 1 : 0;
}

/* --- lower children of moved directories ------------------------------------------------------ */

static int copy_tree(struct stage_ctx *c, const char *path, const char *origin);

struct copy_ctx {
	struct stage_ctx *c;
	const char *path, *origin;
};

static int
copy_xattr_one(void *ctx, const char *name, const void *value, size_t len)
{
	struct copy_ctx *k = ctx;

	k->c->r = eos_publish_set_xattr(k->c->p, k->path, name, value, len, k->c->err);
	return k->c->r < 0 ? 1 : 0;
}

/* Stage one lower child (its stat st, at base path from) at path to. */
static int
copy_child(struct stage_ctx *c, const char *to, const char *from, const struct eos_stat *st)
{
	struct eos_publish_file f = { .attr = st->attr, .content = &st->content, .origin = from };
	cleanup_free char *target = NULL;
	struct copy_ctx k = { .c = c, .path = to, .origin = from };
	uint64_t base = eos_publish_base(c->p);
	int r = 0;

	switch (st->kind) {
	case EOS_KIND_DIR:
		r = eos_publish_mkdir(c->p, to, &st->attr, true, c->err);
		r = r ?: copy_tree(c, to, from);
		break;
	case EOS_KIND_SYMLINK:
		r = eos_store_readlink(c->st, c->sandbox, base, from, &target, c->err);
		r = r ?: eos_publish_symlink(c->p, to, &st->attr, target, c->err);
		break;
	case EOS_KIND_FILE:
		r = eos_publish_put_file(c->p, to, &f, c->err);
		break;
	case EOS_KIND_FIFO:
	case EOS_KIND_CHR:
	case EOS_KIND_BLK:
		r = eos_publish_mknod(c->p, to, &st->attr, st->kind, st->rdev, c->err);
		break;
	case EOS_KIND_NONE:
	case EOS_KIND_WHITEOUT:
		return 0;
	}
	if (r < 0 || !st->nxattrs)
		return r;
	c->r = 0;
	r = eos_store_xattrs(c->st, c->sandbox, base, from, copy_xattr_one, &k, c->err);
	return c->r < 0 ? c->r : r < 0 ? r : 0;
}

static int
copy_one(void *ctx, const char *name, const struct eos_stat *st)
{
	struct copy_ctx *k = ctx;
	cleanup_free char *to = NULL, *from = NULL;
	int r;

	if (asprintf(&to, "%s/%s", k->path, name) < 0 ||
	    asprintf(&from, "%s%s%s", k->origin, *k->origin ? "/" : "", name) < 0) {
		k->c->r = eos_error_set(k->c->err, -ENOMEM, "publish: out of memory");
		return 1;
	}
	/* the session's own entries below a moved directory replace the lower ones */
	if (eos_hashmap_find(&k->c->paths, to, strlen(to)))
		return 0;
	r = copy_child(k->c, to, from, st);
	k->c->r = r;
	return r < 0 ? 1 : 0;
}

/* Stage every lower child of origin (at the base) that the delta does not name, under path. */
static int
copy_tree(struct stage_ctx *c, const char *path, const char *origin)
{
	struct copy_ctx k = { .c = c, .path = path, .origin = origin };
	int r;

	c->r = 0;
	r = eos_store_readdir(c->st, c->sandbox, eos_publish_base(c->p), origin, NULL, copy_one, &k,
			      c->err);
	if (c->r < 0)
		return c->r;
	return r < 0 ? r : 0;
}

static int
copy_moved(struct stage_ctx *c)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < c->nmoved; i++)
		r = copy_tree(c, c->moved[i].path, c->moved[i].origin);
	return r;
}

static void
stage_ctx_release(struct stage_ctx *c)
{
	for (struct eos_hashmap_iter it = { 0 }; eos_hashmap_next(&c->links, &it);)
		free(it.value->ptr);
	eos_hashmap_release(&c->links);
	eos_hashmap_release(&c->paths);
	for (size_t i = 0; i < c->nmoved; i++) {
		free(c->moved[i].path);
		free(c->moved[i].origin);
	}
	free(c->moved);
}

int
eos_view_stage(struct eos_view *v, struct eos_publish *p, char ***ret_skipped, size_t *ret_nskipped,
	       struct eos_error *err)
{
	EOS_CLEANUP(skipped_release) struct skipped skipped = { 0 };
	struct stage_ctx c = {
		.st = v->store, .sandbox = v->sandbox, .p = p, .skipped = &skipped, .err = err
	};
	int r;

	if (eos_view_version(v) != eos_publish_base(p))
		return eos_error_set(err, -ESTALE, "session '%s' moved while being published",
				     v->session);
	r = eos_view_delta(v, stage_one, &c, err);
	if (c.r < 0)
		r = c.r;
	if (r >= 0)
		r = copy_moved(&c);
	stage_ctx_release(&c);
	if (r < 0)
		return r;
	*ret_skipped = TAKE_PTR(skipped.v);
	*ret_nskipped = skipped.n;
	skipped.n = 0;
	return 0;
}

/* Open the session's view (not mounted), stage its delta into p and close it again. */
static int
stage_delta(struct eos_store *st, const char *sandbox, const char *session, struct eos_publish *p,
	    struct skipped *skipped, struct eos_error *err)
{
	struct eos_view_options o = { .store = st, .sandbox = sandbox, .session = session };
	EOS_CLEANUP(eos_view_closep) struct eos_view *v = NULL;
	int r = eos_view_open(&o, &v, err);

	return r ?: eos_view_stage(v, p, &skipped->v, &skipped->n, err);
}

int
eos_view_publish(struct eos_store *st, const char *sandbox, const char *session, const char *owner,
		 struct eos_publish_result *ret, struct eos_error *err)
{
	struct eos_publish_options o = { .sandbox = sandbox, .session = session, .owner = owner };
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	EOS_CLEANUP(skipped_release) struct skipped skipped = { 0 };
	int64_t c0 = 0, c1 = 0;
	int r = eos_publish_begin(st, &o, &p, err);

	if (r == 0) {
		c0 = eos_mono_ns();
		r = stage_delta(st, sandbox, session, p, &skipped, err);
		c1 = eos_mono_ns();
	}
	r = r ?: eos_publish_prepare(p, err);
	r = r ?: eos_publish_commit(p, ret, err);
	if (r < 0)
		return r;
	ret->phases.capture_start = c0;
	ret->phases.capture_end = c1;
	ret->skipped = TAKE_PTR(skipped.v);
	ret->nskipped = skipped.n;
	skipped.n = 0;
	return 0;
}
