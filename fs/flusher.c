/* SPDX-License-Identifier: MIT */
/*
 * fs/flusher: the background work of views, on one thread that serves any number of them
 * (struct eos_view_flusher in fs/view.h). Every node the write journal (journal.h) mentions is
 * queued on its view once; when a view's journal generation has grown large, the thread switches
 * the journal to a new generation, writes the records of every queued node (a checkpoint: their
 * sizes, times, write logs and copy-up state) and deletes the old generation. It also gives the
 * memory of freed nodes back to the system, and does the store's background work (it populates
 * the chunk cache's memory ahead of the reads that will fill it). Nothing depends on it for
 * durability — the journal already holds every write — only the journal's size, the time a mount
 * spends replaying it and the resident size of a long-lived view.
 *
 * The thread sleeps until a view asks for it (eos_flusher_kick: its journal reached the rotation
 * size, it freed many nodes, or a read found the store's background work due), so an idle host
 * does no work at all.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

#include "fs/view-internal.h"

struct eos_view_flusher {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work; /* a view was kicked, or stop */
	pthread_cond_t idle; /* the view being worked on is done */
	struct eos_view **queue;
	size_t n, cap;
	struct eos_view *running; /* being worked on, outside the lock */
	bool stop;
};

/* --- the thread --------------------------------------------------------------------------------
 */

static void
work_on(struct eos_view *v)
{
	eos_store_background(v->store);
	if (eos_journal_rotate_due(v))
		eos_journal_rotate(v);
	else if (eos_pending_due(v))
		eos_journal_commit_pending(v);
	eos_view_tidy(v);
}

static void *
flusher_main(void *arg)
{
	struct eos_view_flusher *f = arg;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		struct eos_view *v;

		while (!f->stop && f->n == 0)
			pthread_cond_wait(&f->work, &f->lock);
		if (f->stop)
			break;
		v = f->queue[0];
		memmove(f->queue, f->queue + 1, --f->n * sizeof(*f->queue));
		v->flusher.kicked = false;
		f->running = v;
		pthread_mutex_unlock(&f->lock);
		work_on(v);
		pthread_mutex_lock(&f->lock);
		f->running = NULL;
		pthread_cond_broadcast(&f->idle);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

int
eos_view_flusher_new(struct eos_view_flusher **ret, struct eos_error *err)
{
	struct eos_view_flusher *f = calloc(1, sizeof(*f));
	int r;

	if (!f)
		return eos_error_set(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->work, NULL);
	pthread_cond_init(&f->idle, NULL);
	r = -pthread_create(&f->thread, NULL, flusher_main, f);
	if (r < 0) {
		pthread_cond_destroy(&f->idle);
		pthread_cond_destroy(&f->work);
		pthread_mutex_destroy(&f->lock);
		free(f);
		return eos_error_set(err, r, "cannot start the flusher thread");
	}
	*ret = f;
	return 0;
}

void
eos_view_flusher_free(struct eos_view_flusher *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	assert(f->n == 0 && !f->running); /* every view detached itself */
	f->stop = true;
	pthread_cond_signal(&f->work);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	free(f->queue);
	pthread_cond_destroy(&f->idle);
	pthread_cond_destroy(&f->work);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* --- a view's side ---------------------------------------------------------------------------- */

int
eos_flusher_start(struct eos_view *v, struct eos_view_flusher *host)
{
	struct eos_flusher *f = &v->flusher;
	int r = 0;

	pthread_mutex_init(&f->lock, NULL);
	if (!host) {
		r = eos_view_flusher_new(&host, NULL);
		f->own = r == 0;
	}
	f->host = r == 0 ? host : NULL;
	return r;
}

void
eos_flusher_kick(struct eos_view *v)
{
	struct eos_flusher *f = &v->flusher;
	struct eos_view_flusher *h = f->host;

	if (!h || atomic_load(&f->kicked))
		return;
	pthread_mutex_lock(&h->lock);
	if (!f->kicked && !f->detached &&
	    eos_buf_array_reserve(&h->queue, &h->cap, h->n, sizeof(*h->queue), 16) == 0) {
		h->queue[h->n++] = v;
		f->kicked = true;
		pthread_cond_signal(&h->work);
	}
	pthread_mutex_unlock(&h->lock);
}

void
eos_flusher_after_read(struct eos_view *v)
{
	if (eos_store_background_due(v->store))
		eos_flusher_kick(v);
}

/* Take v off its host: out of the queue, and not being worked on when this returns. */
static void
detach(struct eos_view *v, struct eos_view_flusher *h)
{
	pthread_mutex_lock(&h->lock);
	v->flusher.detached = true;
	for (size_t i = 0; i < h->n; i++)
		if (h->queue[i] == v) {
			memmove(h->queue + i, h->queue + i + 1, (h->n - i - 1) * sizeof(*h->queue));
			h->n--;
			break;
		}
	while (h->running == v)
		pthread_cond_wait(&h->idle, &h->lock);
	pthread_mutex_unlock(&h->lock);
}

void
eos_flusher_stop(struct eos_view *v)
{
	struct eos_flusher *f = &v->flusher;

	if (!f->host)
		return;
	detach(v, f->host);
	if (f->own)
		eos_view_flusher_free(f->host);
	f->host = NULL;
	f->own = false;
	free(f->inos);
	f->inos = NULL;
	f->n = f->cap = 0;
	pthread_mutex_destroy(&f->lock);
}

/* --- the queue of nodes to checkpoint --------------------------------------------------------- */

/* Put ino back on the queue (a checkpoint of it failed: its journal records must stay). */
static void
requeue(struct eos_view *v, uint64_t ino)
{
	struct eos_flusher *f = &v->flusher;

	pthread_mutex_lock(&f->lock);
	if (eos_buf_array_reserve(&f->inos, &f->cap, f->n, sizeof(*f->inos), 64) == 0)
		f->inos[f->n++] = ino;
	else
		f->overflow = true;
	pthread_mutex_unlock(&f->lock);
}

bool
eos_flusher_checkpoint(struct eos_view *v, const uint64_t *inos, size_t n)
{
	bool ok = true;

	for (size_t i = 0; i < n; i++) {
		struct eos_node *node = eos_node_get_ref(v, inos[i]);
		int r;

		if (!node)
			continue;
		eos_node_lock(node);
		r = eos_delta_flush_node(v, node, EOS_COMMIT_CHECKPOINT);
		if (r == 0)
			node->flags &= ~(unsigned)EOS_NODE_QUEUED;
		else
			requeue(v, inos[i]);
		eos_node_unlock(node);
		eos_node_forget(v, inos[i], 1);
		ok = ok && r == 0 && eos_pending_commit_due(v) == 0;
	}
	return ok;
}

bool
eos_flusher_take(struct eos_view *v, uint64_t **ret, size_t *ret_n)
{
	struct eos_flusher *f = &v->flusher;
	bool overflow;

	pthread_mutex_lock(&f->lock);
	*ret = f->inos;
	*ret_n = f->n;
	overflow = f->overflow;
	f->inos = NULL;
	f->n = f->cap = 0;
	f->overflow = false;
	pthread_mutex_unlock(&f->lock);
	return overflow;
}

void
eos_flusher_queue(struct eos_view *v, struct eos_node *n)
{
	struct eos_flusher *f = &v->flusher;

	if (n->flags & EOS_NODE_QUEUED || !f->host)
		return; /* without a flusher, closing the view writes every node */
	pthread_mutex_lock(&f->lock);
	if (eos_buf_array_reserve(&f->inos, &f->cap, f->n, sizeof(*f->inos), 64) == 0) {
		f->inos[f->n++] = n->ino;
		n->flags |= EOS_NODE_QUEUED;
	} else {
		f->overflow = true; /* the next rotation checkpoints every node instead */
	}
	pthread_mutex_unlock(&f->lock);
}
