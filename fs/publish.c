/* SPDX-License-Identifier: MIT */
/*
 * eos_view_publish: a session's delta (eos_view_delta) staged into the store's publish gate.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/hashmap.h"

#include "fs/view.h"

struct stage_ctx {
	struct eos_publish *p;
	struct eos_hashmap links; /* node -> first path staged for it (malloc'd) */
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
	if (!f.data_path && !f.content)
		return eos_error_set(c->err, -EIO, "publish '%s': the file has no content",
				     e->path);
	return eos_publish_put_file(c->p, e->path, &f, c->err);
}

static int
stage_put(struct stage_ctx *c, const struct eos_delta_entry *e)
{
	struct eos_attr attr = entry_attr(e);

	switch (e->mode & S_IFMT) {
	case S_IFDIR:
		return eos_publish_mkdir(c->p, e->path, &attr, e->opaque, c->err);
	case S_IFLNK:
		return eos_publish_symlink(c->p, e->path, &attr, e->target, c->err);
	case S_IFREG:
		return stage_file(c, e);
	}
	return eos_error_set(c->err, -EINVAL,
			     "publish '%s': special files (mode %06o) cannot be published", e->path,
			     e->mode);
}

static int
stage_one(void *ctx, const struct eos_delta_entry *e)
{
	struct stage_ctx *c = ctx;
	struct eos_attr attr = entry_attr(e);

	switch (e->change) {
	case EOS_DELTA_DELETE:
		c->r = eos_publish_remove(c->p, e->path, c->err);
		break;
	case EOS_DELTA_PUT:
		c->r = stage_put(c, e);
		break;
	case EOS_DELTA_ATTR:
		c->r = eos_publish_set_attr(c->p, e->path, &attr, c->err);
		break;
	case EOS_DELTA_DIR:
		c->r = 0;
		break;
	}
	return c->r < 0 ? 1 : 0;
}

static void
links_release(struct eos_hashmap *m)
{
	for (struct eos_hashmap_iter it = { 0 }; eos_hashmap_next(m, &it);)
		free(it.value->ptr);
	eos_hashmap_release(m);
}

/* Open the session's view (not mounted) and stage its delta into p. */
static int
stage_delta(struct eos_store *st, const char *sandbox, const char *session, struct eos_publish *p,
	    struct eos_error *err)
{
	struct eos_view_options o = { .store = st, .sandbox = sandbox, .session = session };
	EOS_CLEANUP(eos_view_closep) struct eos_view *v = NULL;
	struct stage_ctx c = { .p = p, .err = err };
	int r = eos_view_open(&o, &v, err);

	if (r < 0)
		return r;
	if (eos_view_version(v) != eos_publish_base(p))
		return eos_error_set(err, -ESTALE, "session '%s' moved while being published",
				     session);
	r = eos_view_delta(v, stage_one, &c, err);
	links_release(&c.links);
	if (c.r < 0)
		return c.r;
	return r < 0 ? r : 0;
}

int
eos_view_publish(struct eos_store *st, const char *sandbox, const char *session, const char *owner,
		 struct eos_publish_result *ret, struct eos_error *err)
{
	struct eos_publish_options o = { .sandbox = sandbox, .session = session, .owner = owner };
	EOS_CLEANUP(eos_publish_freep) struct eos_publish *p = NULL;
	int r = eos_publish_begin(st, &o, &p, err);

	r = r ?: stage_delta(st, sandbox, session, p, err);
	r = r ?: eos_publish_prepare(p, err);
	return r ?: eos_publish_commit(p, ret, err);
}
