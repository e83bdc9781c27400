/* SPDX-License-Identifier: MIT */
/*
 * fs/flusher: writes the sizes, times and write logs of released files in the background, so that
 * closing a file costs no store write. A crash can lose what was queued in the last interval; the
 * size of a file is recovered from its data file at the next mount (view.c), only its mtime and
 * the newest part of its write log can go. fsync and fsyncdir still write synchronously.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "common/buf.h"

#include "fs/view-internal.h"

enum {
	FLUSH_INTERVAL_MS = 200
};

static void
flush_batch(struct eos_view *v, uint64_t *inos, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct eos_node *node = eos_node_get_ref(v, inos[i]);

		if (!node)
			continue;
		pthread_mutex_lock(&node->lock);
		node->flags &= ~(unsigned)EOS_NODE_QUEUED;
		eos_delta_flush_node(v, node, false);
		pthread_mutex_unlock(&node->lock);
		eos_node_forget(v, inos[i], 1);
	}
}

static void *
flusher_main(void *arg)
{
	struct eos_view *v = arg;
	struct eos_flusher *f = &v->flusher;
	bool stop = false;

	while (!stop) {
		struct timespec until;
		uint64_t *inos;
		size_t n;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += FLUSH_INTERVAL_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_mutex_lock(&f->lock);
		if (!f->stop)
			pthread_cond_timedwait(&f->cond, &f->lock, &until);
		stop = f->stop;
		inos = f->inos;
		n = f->n;
		f->inos = NULL;
		f->n = f->cap = 0;
		pthread_mutex_unlock(&f->lock);
		flush_batch(v, inos, n);
		free(inos);
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
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
}

void
eos_flusher_queue(struct eos_view *v, struct eos_node *n)
{
	struct eos_flusher *f = &v->flusher;
	bool queued = false;

	if (n->flags & EOS_NODE_QUEUED)
		return;
	if (f->started) {
		pthread_mutex_lock(&f->lock);
		if (eos_buf_array_reserve(&f->inos, &f->cap, f->n, sizeof(*f->inos), 64) == 0) {
			f->inos[f->n++] = n->ino;
			queued = true;
		}
		pthread_mutex_unlock(&f->lock);
	}
	if (queued)
		n->flags |= EOS_NODE_QUEUED;
	else
		eos_delta_flush_node(v, n, false); /* no flusher (or no memory): write now */
}
