/* SPDX-License-Identifier: MIT */
/*
 * fs/reset: a live publish's second half in memory (doc/fs.md, "Live publish and fork"). The
 * store has already moved the session to the new version with an empty delta; the view follows.
 *
 * The kernel holds inode numbers (lookups, open files, working directories) that must stay
 * valid, so no node is freed or renumbered: every node at a path of the new version becomes a
 * mirror of that path (a lower node, its identity remapped to its inode number when that is not
 * the derived one, so that a lookup finds it again), and every other node is detached (unlinked:
 * open files keep their data file, nothing of them is ever written again). Handles find their
 * node's new content through node->x->gen (file.c). What the kernel may have cached differently is
 * listed for invalidation.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/failpoint.h"
#include "common/log.h"

#include "fs/view-internal.h"

enum {
	PATH_DEPTH_MAX = 4096,
};

void
eos_inval_release(struct eos_inval *iv)
{
	for (size_t i = 0; i < iv->nentries; i++)
		free(iv->entries[i].name);
	free(iv->entries);
	free(iv->inos);
	*iv = (struct eos_inval){ 0 };
}

static int
inval_ino(struct eos_inval *iv, uint64_t ino)
{
	if (eos_buf_array_reserve(&iv->inos, &iv->cap, iv->n, sizeof(*iv->inos), 64) < 0)
		return -ENOMEM;
	iv->inos[iv->n++] = ino;
	return 0;
}

static int
inval_entry(struct eos_inval *iv, uint64_t parent, const char *name, size_t len)
{
	char *copy = strndup(name, len);

	if (!copy || eos_buf_array_reserve(&iv->entries, &iv->entries_cap, iv->nentries,
					   sizeof(*iv->entries), 64) < 0) {
		free(copy);
		return -ENOMEM;
	}
	iv->entries[iv->nentries++] = (struct eos_inval_entry){ .parent = parent, .name = copy };
	return 0;
}

/* One node of the table and where the view shows it (NULL: nowhere, it is detached), with the
 * version and kind of its origin's entry before the publish (entry: known). */
struct reset_node {
	struct eos_node *n;
	char *path;
	uint64_t version;
	uint8_t kind;
	bool entry;
};

struct reset {
	struct eos_view *v;
	struct reset_node *nodes;
	size_t n, cap;
	struct eos_inval *iv;
};

/* Whether p shows n under name: p's dirent names n, or p has none and n is p's lower child. */
static bool
shown_in(struct eos_node *p, const struct eos_node *n)
{
	const union eos_hashmap_value *slot;

	if (!eos_node_is_dir(p) || (p->nlink == 0 && p->ino != EOS_ROOT_INO))
		return false;
	slot = eos_hashmap_find(&p->x->dirents, eos_node_name(n), strlen(eos_node_name(n)));
	if (slot && slot->u64 != EOS_DIRENT_ABSENT)
		return slot->u64 == n->ino;
	return !(n->flags & EOS_NODE_UPPER) && !(p->flags & EOS_NODE_OPAQUE);
}

/* n's path from its primary link up to the root, or NULL when the chain is broken. */
static char *
path_of(struct eos_view *v, struct eos_node *n)
{
	cleanup_free char *path = strdup("");
	unsigned depth = 0;

	while (path && n->ino != EOS_ROOT_INO) {
		struct eos_node *p = eos_node_get(v, eos_node_parent(n));
		const char *name = eos_node_name(n);
		char *longer = NULL;

		if (!p || n->nlink == 0 || !name || !shown_in(p, n) || ++depth > PATH_DEPTH_MAX)
			return NULL;
		if (asprintf(&longer, "%s%s%s", name, *path ? "/" : "", path) < 0)
			return NULL;
		free(path);
		path = longer;
		n = p;
	}
	return TAKE_PTR(path);
}

/* rn's origin entry at the old version: kept by an extended node, read for another. */
static void
old_entry(struct eos_view *v, struct reset_node *rn)
{
	const struct eos_lower *l = rn->n->x->lst;
	char buf[EOS_LOWER_BUF];
	const char *lower = eos_node_lower(rn->n, buf);
	struct eos_stat st;

	if (l) {
		rn->version = l->version;
		rn->kind = l->kind;
		rn->entry = true;
	} else if (lower && eos_tree_stat(v->tree, lower, &st, NULL) == 0) {
		rn->version = st.version;
		rn->kind = (uint8_t)st.kind;
		rn->entry = true;
	}
}

/* Every node of the table with its path and old entry (before any node changes). */
static int
collect(struct reset *rs)
{
	for (size_t i = 0; i < EOS_TABLE_SHARDS; i++) {
		struct eos_node_iter it = { 0 };
		struct eos_node *n;

		while ((n = eos_table_next(&rs->v->shards[i], &it))) {
			if (eos_buf_array_reserve(&rs->nodes, &rs->cap, rs->n, sizeof(*rs->nodes),
						  64) < 0)
				return -ENOMEM;
			rs->nodes[rs->n++] = (struct reset_node){ .n = n };
		}
	}
	for (size_t i = 0; i < rs->n; i++) {
		rs->nodes[i].path = path_of(rs->v, rs->nodes[i].n);
		old_entry(rs->v, &rs->nodes[i]);
	}
	return 0;
}

/* The names of an upper directory the session changed: the kernel forgets its entries. */
static int
inval_dirents(struct reset *rs, struct eos_node *p)
{
	struct eos_hashmap_iter it = { 0 };
	int r = 0;

	while (r == 0 && eos_hashmap_next(&p->x->dirents, &it))
		r = inval_entry(rs->iv, p->ino, it.key, it.klen);
	return r;
}

/* Forget everything n held of the session (its records went with the store's reset). */
static void
drop_session_state(struct eos_view *v, struct eos_node *n)
{
	eos_hashmap_release(&n->x->dirents);
	n->x->dirents_absent = 0;
	eos_dirlist_free(n->x->list);
	n->x->list = NULL;
	eos_xattrs_free(n);
	eos_writelog_release(&n->x->log);
	eos_writelog_release(&n->x->present);
	n->x->lower_limit = 0;
	eos_file_close(n->x->lower_file);
	n->x->lower_file = NULL;
	free(n->x->target);
	n->x->target = NULL;
	eos_data_close(v, n);
	n->x->jseq = 0;
	n->x->jcopyup = EOS_JCOPYUP_NONE;
}

struct list_ctx {
	struct reset *rs;
	uint64_t dir;
};

static int
inval_child(void *ctx, const char *name, const struct eos_stat *st)
{
	struct list_ctx *c = ctx;

	(void)st;
	return inval_entry(c->rs->iv, c->dir, name, strlen(name));
}

/* Names another publish may have created in directory n (path) the kernel may hold negative. */
static int
inval_children(struct reset *rs, struct eos_node *n, const char *path)
{
	struct list_ctx c = { .rs = rs, .dir = n->ino };
	int r = eos_tree_readdir(rs->v->tree, path, NULL, NULL, inval_child, &c, NULL);

	return r < 0 && r != -ENOENT && r != -ENOTDIR ? r : 0;
}

static bool
entry_changed(const struct reset_node *rn, const struct eos_stat *st)
{
	return rn->n->flags & EOS_NODE_UPPER || !rn->entry ||
	       !eos_node_origin_is(rn->n, rn->path) || rn->version != st->version ||
	       rn->kind != st->kind;
}

/* Whether n can stay (or become) a node of no extension as the mirror of path and st. */
static bool
stays_bare(const struct eos_node *n, const char *path, const struct eos_stat *st)
{
	return !eos_node_extended(n) && eos_node_origin_is(n, path) && st->kind != EOS_KIND_DIR &&
	       !st->link_group && !st->rdev;
}

/* n's origin is path, whose entry is st (its extension and lst when it needs them). */
static int
mirror_origin(struct eos_node *n, const char *path, const struct eos_stat *st)
{
	struct eos_lower *lst;

	if (stays_bare(n, path, st))
		return 0; /* the entry loads from the new version when needed */
	lst = eos_lower_new(st);
	if (!lst || eos_node_extend_bare(n) < 0 || eos_node_set_lower(n, path) < 0) {
		free(lst);
		return -ENOMEM;
	}
	free(n->x->lst);
	n->x->lst = lst;
	return 0;
}

/* n becomes the mirror of rn's path, whose entry at the new version is st. */
static int
mirror(struct reset *rs, struct reset_node *rn, const struct eos_stat *st)
{
	struct eos_node *n = rn->n;
	const char *path = rn->path;
	bool changed = entry_changed(rn, st);
	int r = 0;

	if (r == 0 && changed && n->flags & EOS_NODE_UPPER && eos_node_is_dir(n))
		r = inval_dirents(rs, n);
	if (r == 0 && changed && eos_node_is_dir(n))
		r = inval_children(rs, n, path);
	if (r == 0 && changed)
		r = inval_ino(rs->iv, n->ino);
	r = r ?: mirror_origin(n, path, st);
	if (r < 0)
		return r;
	if (eos_node_extended(n))
		drop_session_state(rs->v, n);
	uint32_t nlink = n->nlink;

	n->flags &= EOS_NODE_NAME_OWN;
	eos_node_fill_lower(n, st);
	/* an unchanged member keeps its count: counting walks the whole tree (links.c) */
	if (st->kind == EOS_KIND_FILE && st->link_group)
		n->nlink = changed ? eos_links_count(rs->v, st->link_group) : nlink;
	if (eos_node_extended(n))
		n->x->gen++;
	return eos_node_identity_set(rs->v, n);
}

/* n is nowhere at the new version: unlinked, never written again; the kernel forgets it. */
static int
detach(struct reset *rs, struct eos_node *n)
{
	int r = 0;

	if (n->nlink > 0 && eos_node_name(n))
		r = inval_entry(rs->iv, eos_node_parent(n), eos_node_name(n),
				strlen(eos_node_name(n)));
	r = r ?: inval_ino(rs->iv, n->ino);
	n->nlink = 0;
	n->flags &= ~(unsigned)(EOS_NODE_QUEUED | EOS_NODE_REMAPPED); /* the remaps were reset */
	if (n->flags & EOS_NODE_UPPER)
		n->flags |= EOS_NODE_GONE; /* its records are gone with the reset */
	if (eos_node_extended(n))
		n->x->gen++;
	return r;
}

static int
reset_one(struct reset *rs, struct reset_node *rn)
{
	struct eos_stat st;
	int r;

	if (!rn->path)
		return detach(rs, rn->n);
	r = eos_tree_stat(rs->v->tree, rn->path, &st, NULL);
	if (r == -ENOENT || r == -ENOTDIR ||
	    (r == 0 && eos_node_kind_type(st.kind) != (rn->n->mode & S_IFMT)))
		return detach(rs, rn->n); /* a socket (not published), or replaced */
	return r < 0 ? r : mirror(rs, rn, &st);
}

static void
reset_release(struct reset *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		free(rs->nodes[i].path);
	free(rs->nodes);
}

/*
 * The store's reset left the data directory in place (reads went on until now): empty it. Open
 * data files (detached nodes) live on unlinked.
 */
static int
empty_data_dir(struct eos_view *v, struct eos_error *err)
{
	int fd = openat(v->data_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_closedir DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d && fd >= 0)
		close(fd);
	if (!d)
		return eos_error_set(err, eos_neg_errno(), "session '%s': open '%s': %m",
				     v->session, v->data_dir);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && unlinkat(v->data_dirfd, e->d_name, 0) < 0 &&
		    errno != ENOENT)
			return eos_error_set(err, eos_neg_errno(),
					     "session '%s': remove '%s/%s': %m", v->session,
					     v->data_dir, e->d_name);
	return 0;
}

/* Identities and link counts belong to a version: start both again. */
static void
reset_maps(struct eos_view *v)
{
	eos_node_identities_reset(v);
	pthread_mutex_lock(&v->links_lock);
	eos_hashmap_release(&v->links);
	v->links_loaded = false;
	pthread_mutex_unlock(&v->links_lock);
}

/* The operation table stays (handles hold its indexes): record it in the new delta. */
static int
record_ops(struct eos_view *v)
{
	EOS_CLEANUP(eos_session_batch_freep) struct eos_session_batch *b = NULL;
	struct eos_opstable *t = &v->ops;
	int r = eos_delta_batch(v, &b);

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; r == 0 && i < t->n; i++)
		if (t->names[i])
			r = eos_delta_put_op((uint32_t)i, t->names[i], b);
	pthread_mutex_unlock(&t->lock);
	return r ?: eos_delta_commit(v, b, EOS_COMMIT_JOURNAL);
}

static void
drop_flusher_queue(struct eos_view *v)
{
	uint64_t *inos = NULL;
	size_t n = 0;

	eos_flusher_take(v, &inos, &n);
	free(inos);
}

int
eos_view_reset(struct eos_view *v, uint64_t version, struct eos_inval *iv, struct eos_error *err)
{
	struct reset rs = { .v = v, .iv = iv };
	struct eos_tree *tree = NULL;
	int r = EOS_FAILPOINT("view.reset"), e;

	if (r < 0)
		return eos_error_set(err, r, "failpoint 'view.reset'");
	r = eos_store_tree_open(v->store, v->sandbox, version, &tree, err);
	if (r < 0)
		return r;
	r = collect(&rs);
	eos_tree_free(v->tree);
	v->tree = tree;
	v->version = version;
	reset_maps(v);
	drop_flusher_queue(v);
	for (size_t i = 0; r >= 0 && i < rs.n; i++)
		r = reset_one(&rs, &rs.nodes[i]);
	reset_release(&rs);
	if (r < 0)
		eos_error_set(err, r, "session '%s': cannot show version %llu: %s", v->session,
			      (unsigned long long)version, strerror(-r));
	eos_pending_discard(v); /* the publish reset the records they were headed for */
	e = empty_data_dir(v, r < 0 ? NULL : err);
	e = e ?: eos_journal_restart(v, r < 0 ? NULL : err);
	if (e == 0 && (e = eos_view_root_upper(v) ?: record_ops(v)) < 0 && r >= 0)
		eos_error_set(err, e, "session '%s': cannot write its new root record: %s",
			      v->session, strerror(-e));
	return r < 0 ? r : e;
}
