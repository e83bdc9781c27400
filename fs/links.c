/* SPDX-License-Identifier: MIT */
/*
 * fs/links: the sizes of the store's hard-link groups at the view's version. The store records
 * each member's group, not the group's size, so the view counts every group in one walk of the
 * tree the first time it meets a hard-linked lower file; the version never changes, so the counts
 * hold for the life of the view. The same walk finds the groups' members for the publish
 * (capture-links.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/endian.h"
#include "common/log.h"

#include "fs/view-internal.h"

struct links_walk {
	eos_links_fn fn;
	void *ctx;
	char **stack;
	size_t n, cap;
	const char *dir;
};

static int
walk_one(void *ctx, const char *name, const struct eos_stat *st)
{
	struct links_walk *w = ctx;
	cleanup_free char *path = NULL;

	if (st->kind != EOS_KIND_DIR && (st->kind != EOS_KIND_FILE || st->link_group == 0))
		return 0;
	if (asprintf(&path, "%s%s%s", w->dir, w->dir[0] ? "/" : "", name) < 0)
		return -ENOMEM;
	if (st->kind == EOS_KIND_FILE)
		return w->fn(w->ctx, path, st);
	if (eos_buf_array_reserve(&w->stack, &w->cap, w->n + 1, sizeof(*w->stack), 16) < 0)
		return -ENOMEM;
	w->stack[w->n++] = TAKE_PTR(path);
	return 0;
}

int
eos_links_walk(struct eos_view *v, eos_links_fn fn, void *ctx)
{
	struct links_walk w = { .fn = fn, .ctx = ctx };
	int r = 0;

	w.stack = calloc(1, sizeof(*w.stack));
	w.cap = w.stack ? 1 : 0;
	if (!w.stack || !(w.stack[0] = strdup("")))
		r = -ENOMEM;
	else
		w.n = 1;
	while (r == 0 && w.n > 0) {
		cleanup_free char *dir = w.stack[--w.n];

		w.dir = dir;
		r = eos_tree_readdir(v->tree, dir, NULL, NULL, walk_one, &w, NULL);
	}
	while (w.n > 0)
		free(w.stack[--w.n]);
	free(w.stack);
	return r < 0 ? r : 0;
}

static int
count_one(void *ctx, const char *path, const struct eos_stat *st)
{
	struct eos_view *v = ctx;
	union eos_hashmap_value *slot;
	uint8_t key[8];

	(void)path;
	eos_put_be64(key, st->link_group);
	if (eos_hashmap_get_or_insert(&v->links, key, sizeof(key), &slot) < 0)
		return -ENOMEM;
	slot->u64++;
	return 0;
}

uint32_t
eos_links_count(struct eos_view *v, uint64_t group)
{
	uint8_t key[8];
	union eos_hashmap_value *slot;
	uint32_t count = 1;

	pthread_mutex_lock(&v->links_lock);
	if (!v->links_loaded) {
		int r = eos_links_walk(v, count_one, v);

		if (r < 0)
			eos_log_error("view of '%s': cannot count hard links: %s", v->sandbox,
				      strerror(-r));
		v->links_loaded = r == 0;
	}
	eos_put_be64(key, group);
	slot = eos_hashmap_find(&v->links, key, sizeof(key));
	if (slot && slot->u64 > 0)
		count = (uint32_t)slot->u64;
	pthread_mutex_unlock(&v->links_lock);
	return count;
}
