/* SPDX-License-Identifier: MIT */
/*
 * fs/txn: one namespace operation's records, written before the operation is visible.
 *
 * A failed operation must change nothing (doc/fs.md, "Persistence"): when its batch cannot be
 * written (a full disk), the kernel is told so, and the view must still be what its records
 * hold. So an operation saves the nodes it is about to change (eos_txn_save), changes and stages
 * them, and stages its dirents without touching the directories yet (eos_txn_dirent);
 * eos_txn_commit writes the batch (once the session's journal has started: appends its image to
 * the journal, fs/pending.c) and only then changes the directories, or puts the saved nodes back.
 * Callers hold the locks of every node and directory involved from save to commit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#include "fs/view-internal.h"

int
eos_txn_begin(struct eos_view *v, struct eos_txn *t)
{
	*t = (struct eos_txn){ .v = v };
	return eos_delta_batch(v, &t->b);
}

static struct eos_txn_node *
saved_of(struct eos_txn *t, const struct eos_node *n)
{
	for (size_t i = 0; i < t->nnodes; i++)
		if (t->nodes[i].n == n)
			return &t->nodes[i];
	return NULL;
}

int
eos_txn_save(struct eos_txn *t, struct eos_node *n)
{
	struct eos_txn_node *s;

	if (saved_of(t, n))
		return 0;
	if (t->nnodes == EOS_TXN_NODES)
		return -EINVAL; /* a programming error: operations touch few nodes */
	s = &t->nodes[t->nnodes];
	*s = (struct eos_txn_node){ .n = n,
				    .flags = n->flags,
				    .nlink = n->nlink,
				    .mode = n->mode,
				    .uid = n->uid,
				    .gid = n->gid,
				    .size = n->size,
				    .parent = eos_node_parent(n),
				    .subdirs = n->x->subdirs,
				    .atime = eos_node_atime(n),
				    .mtime = n->mtime,
				    .ctime = eos_node_ctime(n),
				    .jcopyup = n->x->jcopyup,
				    .name = eos_node_name(n) ? strdup(eos_node_name(n)) : NULL };
	if (eos_node_name(n) && !s->name)
		return -ENOMEM;
	t->nnodes++;
	return 0;
}

static int
log_copy(const struct eos_writelog *from, struct eos_writelog *to)
{
	*to = (struct eos_writelog){ 0 };
	if (from->n == 0)
		return 0;
	to->v = malloc(from->n * sizeof(*to->v));
	if (!to->v)
		return -ENOMEM;
	memcpy(to->v, from->v, from->n * sizeof(*to->v));
	to->n = to->cap = from->n;
	return 0;
}

int
eos_txn_save_logs(struct eos_txn *t, struct eos_node *n)
{
	struct eos_txn_node *s = saved_of(t, n);
	int r;

	if (!s || s->logs)
		return s ? 0 : -EINVAL;
	r = log_copy(&n->x->log, &s->log);
	if (r == 0 && (r = log_copy(&n->x->present, &s->present)) < 0)
		eos_writelog_release(&s->log);
	s->lower_limit = n->x->lower_limit;
	s->logs = r == 0;
	return r;
}

static void
restore_logs(struct eos_txn_node *s)
{
	struct eos_node *n = s->n;

	if (!s->logs)
		return;
	eos_writelog_release(&n->x->log);
	eos_writelog_release(&n->x->present);
	n->x->log = s->log;
	n->x->present = s->present;
	n->x->lower_limit = s->lower_limit;
	s->log = s->present = (struct eos_writelog){ 0 };
	s->logs = false;
}

static void
restore(struct eos_txn_node *s)
{
	struct eos_node *n = s->n;

	/* loaded xattrs stay loaded: loading them is not a change */
	const unsigned kept = EOS_NODE_XATTRS | EOS_NODE_NAME_OWN;

	n->flags = (s->flags & ~kept) | (n->flags & kept);
	n->nlink = s->nlink;
	n->mode = s->mode;
	n->uid = s->uid;
	n->gid = s->gid;
	n->size = s->size;
	n->mtime = s->mtime;
	if (eos_node_extended(n)) { /* else nothing of it changed */
		eos_node_set_parent(n, s->parent);
		n->x->subdirs = s->subdirs;
		n->x->atime = s->atime;
		n->x->ctime = s->ctime;
		n->x->jcopyup = s->jcopyup;
	}
	if (s->name && (!eos_node_name(n) || strcmp(eos_node_name(n), s->name) != 0))
		eos_node_set_name(n, TAKE_PTR(s->name));
	restore_logs(s);
}

int
eos_txn_dirent(struct eos_txn *t, struct eos_node *p, const char *name, uint64_t value)
{
	struct eos_txn_dirent *d;
	int r;

	if (t->ndirents == EOS_TXN_DIRENTS)
		return -EINVAL;
	/* the slot now, so that applying it after the write cannot fail (absent = no dirent) */
	r = eos_dir_slot(p, name);
	if (r < 0)
		return r;
	d = &t->dirents[t->ndirents];
	*d = (struct eos_txn_dirent){ .p = p, .name = strdup(name), .value = value };
	if (!d->name)
		return -ENOMEM;
	t->ndirents++;
	return eos_delta_put_dirent(p, name, value, t->b);
}

int
eos_txn_dirent_kept(struct eos_txn *t, struct eos_node *p, const char *name, uint64_t ino)
{
	int r = eos_txn_dirent(t, p, name, ino);

	if (r == 0)
		t->dirents[t->ndirents - 1].kept = true;
	return r;
}

int
eos_txn_drop(struct eos_txn *t, struct eos_node *p, const char *name)
{
	bool lower = eos_dir_lower_has(t->v, p, name);

	return eos_txn_dirent(t, p, name, lower ? EOS_DIRENT_WHITEOUT : EOS_DIRENT_ABSENT);
}

int
eos_txn_node(struct eos_txn *t, struct eos_node *n)
{
	int r = eos_txn_save(t, n);

	return r ?: eos_delta_node_changed(t->v, n, t->b);
}

static void
txn_release(struct eos_txn *t)
{
	/* after every dirent is applied: a tidy rebuilds the map (slot pointers move) */
	for (size_t i = 0; i < t->ndirents; i++)
		eos_dir_tidy(t->dirents[i].p);
	for (size_t i = 0; i < t->nnodes; i++) {
		free(t->nodes[i].name);
		eos_writelog_release(&t->nodes[i].log);
		eos_writelog_release(&t->nodes[i].present);
	}
	for (size_t i = 0; i < t->ndirents; i++)
		free(t->dirents[i].name);
	eos_session_batch_free(t->b);
	t->b = NULL;
	t->nnodes = t->ndirents = 0;
}

void
eos_txn_abort(struct eos_txn *t)
{
	for (size_t i = t->nnodes; i > 0; i--)
		restore(&t->nodes[i - 1]);
	txn_release(t);
}

void
eos_txn_keep(struct eos_txn *t)
{
	txn_release(t);
}

int
eos_txn_commit(struct eos_txn *t)
{
	int r = t->b ? eos_delta_commit(t->v, t->b, EOS_COMMIT_JOURNAL) : -ENOMEM;

	if (r < 0) {
		eos_txn_abort(t);
		return r;
	}
	for (size_t i = 0; i < t->ndirents; i++)
		eos_dir_apply(t->v, t->dirents[i].p, t->dirents[i].name, t->dirents[i].value,
			      t->dirents[i].kept);
	txn_release(t);
	return 0;
}

int
eos_txn_end(struct eos_txn *t, int r)
{
	if (r < 0) {
		eos_txn_abort(t);
		return r;
	}
	return eos_txn_commit(t);
}
