/* SPDX-License-Identifier: MIT */
/*
 * fs/capture-links: the members of the store's hard-link groups that eos_view_delta's walk did
 * not reach (capture-internal.h). A member at lower path D/name shows in the view at P/name
 * when the view shows lower directory D at P and that directory has no dirent of its own for
 * name: D shows where its node is when the session changed it (the walk recorded the path of
 * every upper directory), else where its lower parent shows it. A group is emitted when the
 * session changed its node, or when a renamed directory carries one of its members to a new
 * path; then every member the view still shows is emitted there, and the publish links them.
 *
 * It costs one walk of the tree (eos_links_walk), and only when the session has a node of a
 * hard-link group or renamed a directory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/endian.h"

#include "fs/capture-internal.h"

struct member {
	uint64_t group;
	char *path; /* at the view's version */
	struct eos_stat st;
};

struct members {
	struct member *v;
	size_t n, cap;
};

static void
members_release(struct members *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
}

static int
collect_one(void *ctx, const char *path, const struct eos_stat *st)
{
	struct members *m = ctx;

	if (eos_buf_array_reserve(&m->v, &m->cap, m->n, sizeof(*m->v), 16) < 0)
		return -ENOMEM;
	m->v[m->n] = (struct member){ .group = st->link_group, .path = strdup(path), .st = *st };
	return m->v[m->n++].path ? 0 : -ENOMEM;
}

static int
cmp_member(const void *a, const void *b)
{
	const struct member *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* Whether the view holds a node of a hard-link group (the session's nodes are all loaded). */
static bool
any_group_node(struct eos_view *v)
{
	bool found = false;

	for (size_t i = 0; i < EOS_TABLE_SHARDS && !found; i++) {
		struct eos_table_shard *s = &v->shards[i];

		struct eos_node_iter it = { 0 };
		const struct eos_node *n;

		pthread_mutex_lock(&s->lock);
		while (!found && (n = eos_table_next(s, &it)))
			found = n->x->link_group; /* never changes once the node exists */
		pthread_mutex_unlock(&s->lock);
	}
	return found;
}

/* The node of lower directory d when it has dirents of its own (the root, or upper), or NULL. */
static int
upper_dir(struct eos_view *v, const char *d, struct eos_node **ret)
{
	struct eos_node *n;
	uint64_t ino = EOS_ROOT_INO;
	int r = d[0] ? eos_node_identity(v, d, 0, &ino) : 0;

	*ret = NULL;
	if (r < 0)
		return r;
	n = eos_node_get(v, ino);
	if (!n)
		return 0;
	eos_node_lock(n);
	if (ino == EOS_ROOT_INO || (n->flags & EOS_NODE_UPPER && eos_node_has_identity(n, d, 0)))
		*ret = n;
	eos_node_unlock(n);
	return 0;
}

/* Whether directory p (NULL: unchanged) shows its lower child name. */
static bool
shows_lower(struct eos_node *p, const char *name)
{
	union eos_hashmap_value *slot;
	bool shows;

	if (!p)
		return true;
	eos_node_lock(p);
	slot = eos_hashmap_find(&p->x->dirents, name, strlen(name));
	shows = eos_node_has_lower(p) && p->x->lst && !(p->flags & EOS_NODE_OPAQUE) &&
		(!slot || slot->u64 == EOS_DIRENT_ABSENT);
	eos_node_unlock(p);
	return shows;
}

static char *
join(const char *dir, const char *name)
{
	char *p = NULL;

	return asprintf(&p, "%s%s%s", dir, dir[0] ? "/" : "", name) < 0 ? NULL : p;
}

/* Where the view shows lower path path, a child of lower directory dir: *ret, or NULL. */
static int view_path(struct eos_capture *c, const char *path, char **ret);

static int
child_view_path(struct eos_capture *c, const char *dir, const char *name, char **ret)
{
	cleanup_free char *at = NULL;
	struct eos_node *p;
	int r = view_path(c, dir, &at);

	r = r ?: upper_dir(c->v, dir, &p);
	*ret = NULL;
	if (r < 0 || !at || !shows_lower(p, name))
		return r;
	*ret = join(at, name);
	return *ret ? 0 : -ENOMEM;
}

static int
view_path(struct eos_capture *c, const char *path, char **ret)
{
	cleanup_free char *dir = NULL;
	struct eos_node *n;
	const char *name, *slash = strrchr(path, '/');
	uint8_t key[8];
	int r = upper_dir(c->v, path, &n);

	*ret = NULL;
	if (r < 0)
		return r;
	if (n) {
		const char *at;

		eos_put_be64(key, n->ino);
		at = eos_hashmap_get(&c->dirs, key, sizeof(key));
		*ret = at ? strdup(at) : NULL;
		return !at || *ret ? 0 : -ENOMEM;
	}
	dir = slash ? strndup(path, (size_t)(slash - path)) : strdup("");
	name = slash ? slash + 1 : path;
	if (!dir)
		return -ENOMEM;
	return child_view_path(c, dir, name, ret);
}

/* Where the view shows member m: *ret (NULL when hidden). */
static int
member_view_path(struct eos_capture *c, const struct member *m, char **ret)
{
	cleanup_free char *dir = NULL;
	const char *slash = strrchr(m->path, '/');

	dir = slash ? strndup(m->path, (size_t)(slash - m->path)) : strdup("");
	if (!dir)
		return -ENOMEM;
	return child_view_path(c, dir, slash ? slash + 1 : m->path, ret);
}

/* Emit member m at path: as the group's node when loaded, else as its lower entry. */
static int
emit_member(struct eos_capture *c, struct eos_node *node, uint64_t ino, const struct member *m,
	    const char *path)
{
	struct eos_node *tmp;
	int r;

	if (node)
		return eos_capture_emit(c, node, path, NULL, m->path);
	tmp = eos_node_new(ino);
	if (!tmp)
		return -ENOMEM;
	eos_node_fill_lower(tmp, &m->st);
	tmp->x->lst = eos_lower_new(&m->st);
	r = tmp->x->lst ? eos_node_set_lower(tmp, m->path) : -ENOMEM;
	if (r == 0) {
		r = eos_capture_emit(c, tmp, path, NULL, m->path);
	}
	eos_node_free(tmp);
	return r;
}

/* The n members of one group: emitted where they show, when the group changed or moved. */
static int
emit_group(struct eos_capture *c, const struct member *m, size_t n)
{
	cleanup_free char **at = calloc(n, sizeof(*at));
	struct eos_node *node;
	bool changed = false;
	uint64_t ino;
	int r = at ? eos_node_identity(c->v, m[0].path, m[0].group, &ino) : -ENOMEM;

	if (r < 0)
		return r;
	node = eos_node_get(c->v, ino);
	if (node && !eos_node_has_identity(node, m[0].path, m[0].group))
		node = NULL; /* another identity's */
	if (node) {
		eos_node_lock(node);
		changed = node->flags & EOS_NODE_UPPER;
		eos_node_unlock(node);
	}
	for (size_t i = 0; r == 0 && i < n; i++) {
		r = member_view_path(c, &m[i], &at[i]);
		changed |= at[i] && strcmp(at[i], m[i].path) != 0;
	}
	for (size_t i = 0; r == 0 && changed && i < n; i++)
		if (at[i] && !eos_hashmap_find(&c->paths, at[i], strlen(at[i])))
			r = emit_member(c, node, ino, &m[i], at[i]);
	for (size_t i = 0; i < n; i++)
		free(at[i]);
	return r;
}

int
eos_capture_links(struct eos_capture *c)
{
	struct members m = { 0 };
	int r = 0;

	if (!c->moved && !any_group_node(c->v))
		return 0;
	r = eos_links_walk(c->v, collect_one, &m);
	if (r == 0 && m.n)
		qsort(m.v, m.n, sizeof(*m.v), cmp_member);
	for (size_t i = 0, j; r == 0 && i < m.n; i = j) {
		for (j = i + 1; j < m.n && m.v[j].group == m.v[i].group;)
			j++;
		r = emit_group(c, &m.v[i], j - i);
	}
	members_release(&m);
	return r;
}
