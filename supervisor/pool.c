/* SPDX-License-Identifier: MIT */
/* supervisor/pool: a fixed set of worker threads over a bounded ring of jobs. */
#include "supervisor/pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct job {
	eosd_pool_fn fn;
	void *ctx;
};

struct eosd_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a job was queued, or stopping */
	struct job *ring;
	size_t cap, head, len; /* protected by lock */
	bool stopping;	       /* protected by lock */
	unsigned nthreads;
	pthread_t threads[EOSD_POOL_THREADS_MAX];
};

unsigned
eosd_pool_default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	return (unsigned)EOS_MIN(EOS_MAX(3, n / 2 + 2), EOSD_POOL_THREADS_MAX);
}

/* Wait for a job; false when stopping and nothing is left. */
static bool
take(struct eosd_pool *p, struct job *ret)
{
	pthread_mutex_lock(&p->lock);
	while (p->len == 0 && !p->stopping)
		pthread_cond_wait(&p->cond, &p->lock);
	if (p->len == 0) {
		pthread_mutex_unlock(&p->lock);
		return false;
	}
	*ret = p->ring[p->head];
	p->head = (p->head + 1) % p->cap;
	p->len--;
	pthread_mutex_unlock(&p->lock);
	return true;
}

static void *
worker(void *arg)
{
	struct eosd_pool *p = arg;
	struct job j;

	while (take(p, &j))
		j.fn(j.ctx);
	return NULL;
}

int
eosd_pool_submit(struct eosd_pool *p, eosd_pool_fn fn, void *ctx)
{
	int r = 0;

	pthread_mutex_lock(&p->lock);
	if (p->stopping)
		r = -ESHUTDOWN;
	else if (p->len == p->cap)
		r = -EBUSY;
	else
		p->ring[(p->head + p->len++) % p->cap] = (struct job){ fn, ctx };
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return r;
}

unsigned
eosd_pool_threads(const struct eosd_pool *p)
{
	return p->nthreads;
}

void
eosd_pool_free(struct eosd_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p->ring);
	free(p);
}

int
eosd_pool_new(unsigned threads, size_t queue_max, struct eosd_pool **ret, struct eos_error *err)
{
	EOS_CLEANUP(eosd_pool_freep) struct eosd_pool *p = NULL;
	int r;

	if (threads < 1 || threads > EOSD_POOL_THREADS_MAX || queue_max < 1)
		return eos_error_set(err, -EINVAL, "pool: %u threads, %zu jobs: out of range",
				     threads, queue_max);
	p = calloc(1, sizeof(*p));
	if (!p)
		return eos_error_set(err, -ENOMEM, "pool: out of memory");
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->ring = calloc(queue_max, sizeof(*p->ring));
	if (!p->ring)
		return eos_error_set(err, -ENOMEM, "pool: out of memory");
	p->cap = queue_max;
	for (; p->nthreads < threads; p->nthreads++) {
		r = pthread_create(&p->threads[p->nthreads], NULL, worker, p);
		if (r != 0)
			return eos_error_set(err, -r, "pool: start a worker: %s", strerror(r));
	}
	*ret = TAKE_PTR(p);
	return 0;
}
