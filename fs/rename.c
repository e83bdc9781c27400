/* SPDX-License-Identifier: MIT */
/*
 * fs/rename: rename(2) and renameat2 flags. Metadata only: a renamed node keeps its inode, its
 * data file and, for a directory from the lower layers, its origin — its lower children are
 * found through the origin at the new name, so no file is copied and there is no EXDEV.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#include "fs/view-internal.h"

struct rename {
	struct eos_view *v;
	struct eos_node *p1, *p2, *src, *dst;
	const char *n1, *n2;
	unsigned flags;
	struct eos_txn t;
};

static void
lock_two(struct eos_node *a, struct eos_node *b)
{
	if (!b || a == b) {
		eos_node_lock(a);
	} else if (a->ino < b->ino) {
		eos_node_lock(a);
		eos_node_lock(b);
	} else {
		eos_node_lock(b);
		eos_node_lock(a);
	}
}

static void
unlock_two(struct eos_node *a, struct eos_node *b)
{
	eos_node_unlock(a);
	if (b && b != a)
		eos_node_unlock(b);
}

/* n (locked) now lives at p/name. */
static int
move_node(struct rename *rn, struct eos_node *n, struct eos_node *p, const char *name)
{
	char *copy = strdup(name);
	/* its name and parent are its extension's from now on */
	int r = copy ? eos_node_extend_bare(n) ?: eos_txn_save(&rn->t, n) : -ENOMEM;

	if (r < 0) {
		free(copy);
		return r;
	}
	eos_node_set_name(n, copy);
	eos_node_set_parent(n, p->ino);
	r = eos_copyup_record(rn->v, n);
	if (r < 0)
		return r;
	eos_node_touch(n, false);
	return eos_delta_put_node(rn->v, n, rn->t.b);
}

/* Subdirectory counts follow a moved directory (both parents are saved already). */
static void
adjust_subdirs(struct eos_node *moved, struct eos_node *from, struct eos_node *to)
{
	if (!eos_node_is_dir(moved) || from == to)
		return;
	if (from->x->subdirs > 0)
		from->x->subdirs--;
	to->x->subdirs++;
}

static int
rename_exchange(struct rename *rn)
{
	int r;

	if (!rn->dst)
		return -ENOENT;
	r = eos_txn_dirent(&rn->t, rn->p1, rn->n1, rn->dst->ino);
	r = r ?: eos_txn_dirent(&rn->t, rn->p2, rn->n2, rn->src->ino);
	r = r ?: move_node(rn, rn->src, rn->p2, rn->n2);
	r = r ?: move_node(rn, rn->dst, rn->p1, rn->n1);
	if (r < 0)
		return r;
	adjust_subdirs(rn->src, rn->p1, rn->p2);
	adjust_subdirs(rn->dst, rn->p2, rn->p1);
	return 0;
}

static int
replace_target(struct rename *rn)
{
	struct eos_node *d = rn->dst;
	bool dir = eos_node_is_dir(rn->src);
	int r;

	if (rn->flags & EOS_RENAME_NOREPLACE)
		return -EEXIST;
	if (dir && !eos_node_is_dir(d))
		return -ENOTDIR;
	if (!dir && eos_node_is_dir(d))
		return -EISDIR;
	if (dir) {
		r = eos_dir_is_empty(rn->v, d);
		if (r <= 0)
			return r < 0 ? r : -ENOTEMPTY;
	}
	r = eos_txn_save(&rn->t, d);
	r = r ?: eos_node_extend_bare(d); /* its times change */
	if (r < 0)
		return r;
	if (dir) {
		if (rn->p2->x->subdirs > 0)
			rn->p2->x->subdirs--;
		d->nlink = 0;
	} else if (d->nlink > 0) {
		d->nlink--;
	}
	eos_node_touch(d, false);
	/* a lower hard link that lost a name keeps a record of its count */
	r = !(d->flags & EOS_NODE_UPPER) && d->nlink > 0 ? eos_copyup_record(rn->v, d) : 0;
	return r ?: eos_txn_node(&rn->t, d);
}

static int
rename_plain(struct rename *rn)
{
	int r = rn->dst ? replace_target(rn) : 0;

	r = r ?: eos_txn_drop(&rn->t, rn->p1, rn->n1);
	r = r ?: eos_txn_dirent(&rn->t, rn->p2, rn->n2, rn->src->ino);
	r = r ?: move_node(rn, rn->src, rn->p2, rn->n2);
	if (r == 0)
		adjust_subdirs(rn->src, rn->p1, rn->p2);
	return r;
}

/* Both parents' times change; their records go into the batch. */
static int
parents_changed(struct rename *rn)
{
	int r = 0;

	eos_node_touch(rn->p1, true);
	r = eos_delta_put_node(rn->v, rn->p1, rn->t.b);
	if (r == 0 && rn->p2 != rn->p1) {
		eos_node_touch(rn->p2, true);
		r = eos_delta_put_node(rn->v, rn->p2, rn->t.b);
	}
	return r;
}

static int
rename_nodes(struct rename *rn)
{
	int r;

	lock_two(rn->src, rn->dst);
	r = eos_txn_save(&rn->t, rn->p1);
	r = r ?: eos_txn_save(&rn->t, rn->p2);
	r = r ?: (rn->flags & EOS_RENAME_EXCHANGE ? rename_exchange(rn) : rename_plain(rn));
	r = r ?: parents_changed(rn);
	r = eos_txn_end(&rn->t, r);
	unlock_two(rn->src, rn->dst);
	return r;
}

static int
rename_locked(struct rename *rn)
{
	int r = eos_dir_child(rn->v, rn->p1, rn->n1, false, &rn->src);

	if (r < 0)
		return r;
	r = eos_dir_child(rn->v, rn->p2, rn->n2, false, &rn->dst);
	if (r == -ENOENT)
		rn->dst = NULL;
	else if (r < 0)
		return r;
	if (rn->src == rn->dst)
		return 0; /* two names of one inode: nothing to do */
	if (rn->src == rn->p2 || rn->dst == rn->p1 || rn->dst == rn->p2)
		return -EINVAL; /* a directory into itself (the kernel checks deeper cycles) */
	if (!eos_node_is_dir(rn->p2) || rn->p2->nlink == 0)
		return !eos_node_is_dir(rn->p2) ? -ENOTDIR : -ENOENT;
	r = eos_dir_count_subdirs(rn->v, rn->p1);
	r = r ?: eos_dir_count_subdirs(rn->v, rn->p2);
	r = r ?: eos_txn_begin(rn->v, &rn->t);
	return r ?: rename_nodes(rn);
}

int
eos_fs_rename(struct eos_view *v, struct eos_node *p1, const char *n1, struct eos_node *p2,
	      const char *n2, unsigned flags)
{
	struct rename rn = { .v = v, .p1 = p1, .p2 = p2, .n1 = n1, .n2 = n2, .flags = flags };
	int r;

	if ((flags & EOS_RENAME_EXCHANGE) && (flags & EOS_RENAME_NOREPLACE))
		return -EINVAL;
	r = eos_copyup_meta(v, p1);
	r = r ?: eos_copyup_meta(v, p2);
	if (r < 0)
		return r;
	lock_two(p1, p2);
	r = rename_locked(&rn);
	unlock_two(p1, p2);
	eos_session_batch_free(rn.t.b); /* when it failed before its transaction ended */
	return r;
}
