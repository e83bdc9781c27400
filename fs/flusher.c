/* SPDX-License-Identifier: MIT */
/*
 * fs/flusher: the background thread that keeps the write journal (journal.h) short. Every node
 * the journal mentions is queued here once; when the current journal generation has grown large,
 * the thread switches the journal to a new generation, writes the records of every queued node
 * (a checkpoint: their sizes, times, write logs and copy-up state) and deletes the old
 * generation. Nothing depends on it for durability — the journal already holds every write —
 * only the journal's size and the time a mount spends replaying it.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "common/buf.h"

#include "fs/view-internal.h"

enum {
	FLUSH_INTERVAL_MS = 200
};

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
		pthread_mutex_lock(&node->lock);
		r = eos_delta_flush_node(v, node, false);
		if (r == 0)
			node->flags &= ~(unsigned)EOS_NODE_QUEUED;
		else
			requeue(v, inos[i]);
		pthread_mutex_unlock(&node->lock);
		eos_node_forget(v, inos[i], 1);
		ok = ok && r == 0;
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

static void *
flusher_main(void *arg)
{
	struct eos_view *v = arg;
	struct eos_flusher *f = &v->flusher;
	bool stop = false;

	while (!stop) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += FLUSH_INTERVAL_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_mutex_lock(&f->lock);
		if (!f->stop)
			pthread_cond_timedwait(&f->cond, &f->lock, &until);
		stop = f->stop;
		pthread_mutex_unlock(&f->lock);
		if (!stop && eos_journal_rotate_due(v))
			eos_journal_rotate(v);
		if (!stop)
			eos_view_tidy(v);
	}
	return NULL;
}

int
eos_flusher_start(struct eos_view *v)
{
	struct eos_flusher *f = &v->flusher;
	int r;

	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	r = -pthread_create(&f->thread, NULL, flusher_main, v);
	f->started = r == 0;
	return r;
}

void
eos_flusher_stop(struct eos_view *v)
{
	struct eos_flusher *f = &v->flusher;

	if (!f->started)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	f->started = false;
	free(f->inos);
	f->inos = NULL;
	f->n = f->cap = 0;
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
}

void
eos_flusher_queue(struct eos_view *v, struct eos_node *n)
{
	struct eos_flusher *f = &v->flusher;

	if (n->flags & EOS_NODE_QUEUED || !f->started)
		return; /* without the thread, closing the view writes every node */
	pthread_mutex_lock(&f->lock);
	if (eos_buf_array_reserve(&f->inos, &f->cap, f->n, sizeof(*f->inos), 64) == 0) {
		f->inos[f->n++] = n->ino;
		n->flags |= EOS_NODE_QUEUED;
	} else {
		f->overflow = true; /* the next rotation checkpoints every node instead */
	}
	pthread_mutex_unlock(&f->lock);
}
