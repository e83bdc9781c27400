/* SPDX-License-Identifier: MIT */
/* supervisor/fusepool: one epoll set and a fixed set of workers serving every FUSE mount. */
#include "supervisor/fusepool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/log.h"

enum {
	STOP_ID = 0, /* the eventfd that wakes every worker to exit; mount ids start at 1 */
	SLOT_BITS = 24,
};

struct slot {
	struct eos_view_mount *m; /* NULL: free */
	uint32_t gen;		  /* bumped when the slot is emptied */
	unsigned busy;		  /* workers receiving or processing one of m's requests */
	bool ended;		  /* m's connection ended: not re-armed */
	bool removing;		  /* eosd_fusepool_remove() waits for busy to drop to 0 */
};

struct eosd_fusepool {
	int epfd, stopfd;
	pthread_mutex_t lock;
	pthread_cond_t quiet; /* a slot's busy count dropped to 0 */
	struct slot *slots;
	size_t nslots, cap;
	unsigned nthreads;
	pthread_t threads[EOSD_FUSEPOOL_THREADS_MAX];
};

static uint64_t
id_of(size_t index, uint32_t gen)
{
	return ((uint64_t)gen << SLOT_BITS) | (index + 1);
}

/* The slot id names (lock held), or NULL when it was emptied since. */
static struct slot *
slot_of(struct eosd_fusepool *p, uint64_t id)
{
	size_t index = (size_t)(id & ((1u << SLOT_BITS) - 1));

	if (index == 0 || index > p->nslots)
		return NULL;
	struct slot *s = &p->slots[index - 1];

	return s->m && s->gen == (uint32_t)(id >> SLOT_BITS) ? s : NULL;
}

unsigned
eosd_fusepool_default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	return (unsigned)EOS_MAX(3, EOS_MIN(n + 1, EOSD_FUSEPOOL_THREADS_MAX));
}

unsigned
eosd_fusepool_threads(const struct eosd_fusepool *p)
{
	return p->nthreads;
}

/* --- the workers ------------------------------------------------------------------------------ */

static void
arm(struct eosd_fusepool *p, struct eos_view_mount *m, uint64_t id, int op)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = id };

	/* ENOENT: being removed (eosd_fusepool_remove() took it out of the set) */
	if (epoll_ctl(p->epfd, op, eos_view_mount_fd(m), &ev) < 0 && errno != ENOENT)
		eos_log_warn("eosd: cannot watch a FUSE mount: %m, ignoring");
}

/* Take mount id for one request: its mount, or NULL when it is gone or going. */
static struct eos_view_mount *
take(struct eosd_fusepool *p, uint64_t id)
{
	struct eos_view_mount *m = NULL;
	struct slot *s;

	pthread_mutex_lock(&p->lock);
	s = slot_of(p, id);
	if (s && !s->removing && !s->ended) {
		s->busy++;
		m = s->m;
	}
	pthread_mutex_unlock(&p->lock);
	return m;
}

static void
give_back(struct eosd_fusepool *p, uint64_t id, bool ended)
{
	struct slot *s;

	pthread_mutex_lock(&p->lock);
	s = slot_of(p, id);
	if (s) {
		s->ended |= ended;
		if (--s->busy == 0)
			pthread_cond_broadcast(&p->quiet);
	}
	pthread_mutex_unlock(&p->lock);
}

/*
 * One request of mount id. The fd is re-armed as soon as the request is read, so that other
 * workers take the mount's next requests while this one is answered.
 */
static void
serve_one(struct eosd_fusepool *p, uint64_t id, struct eos_view_rbuf *buf)
{
	struct eos_view_mount *m = take(p, id);
	int r;

	if (!m)
		return;
	r = eos_view_mount_receive(m, buf);
	if (r >= 0)
		arm(p, m, id, EPOLL_CTL_MOD);
	if (r > 0)
		eos_view_mount_process(m, buf);
	else if (r < 0 && r != -ENODEV)
		eos_log_warn("eosd: reading a FUSE request: %s, ignoring", strerror(-r));
	give_back(p, id, r < 0);
}

static void *
worker(void *arg)
{
	struct eosd_fusepool *p = arg;
	EOS_CLEANUP(eos_view_rbuf_freep) struct eos_view_rbuf *buf = NULL;

	if (eos_view_rbuf_new(&buf) < 0) {
		eos_log_error("eosd: a FUSE worker has no memory for its buffer, stopping it");
		return NULL;
	}
	for (;;) {
		struct epoll_event ev;
		int n = epoll_wait(p->epfd, &ev, 1, -1);

		if (n < 0 && errno != EINTR) {
			eos_log_error("eosd: FUSE workers: epoll_wait: %m");
			break;
		}
		if (n <= 0)
			continue;
		if (ev.data.u64 == STOP_ID)
			break;
		serve_one(p, ev.data.u64, buf);
	}
	return NULL;
}

/* --- the pool --------------------------------------------------------------------------------- */

int
eosd_fusepool_new(unsigned threads, struct eosd_fusepool **ret, struct eos_error *err)
{
	EOS_CLEANUP(eosd_fusepool_freep) struct eosd_fusepool *p = calloc(1, sizeof(*p));
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = STOP_ID };
	int r;

	if (threads == 0 || threads > EOSD_FUSEPOOL_THREADS_MAX)
		return eos_error_set(err, -EINVAL, "FUSE workers: %u is not between 1 and %d",
				     threads, EOSD_FUSEPOOL_THREADS_MAX);
	if (!p)
		return eos_error_set(err, -ENOMEM, "out of memory");
	p->epfd = p->stopfd = -1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->quiet, NULL);
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->epfd < 0 || p->stopfd < 0 || epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->stopfd, &ev) < 0)
		return eos_error_set(err, eos_neg_errno(), "FUSE workers: %m");
	for (; p->nthreads < threads; p->nthreads++) {
		r = -pthread_create(&p->threads[p->nthreads], NULL, worker, p);
		if (r < 0)
			return eos_error_set(err, r, "FUSE workers: cannot start a thread: %s",
					     strerror(-r));
	}
	*ret = TAKE_PTR(p);
	return 0;
}

void
eosd_fusepool_free(struct eosd_fusepool *p)
{
	uint64_t one = 1;

	if (!p)
		return;
	/* level-triggered: the eventfd stays readable and wakes every worker in turn */
	if (p->nthreads && write(p->stopfd, &one, sizeof(one)) != sizeof(one))
		eos_log_error("eosd: cannot stop the FUSE workers: %m");
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	for (size_t i = 0; i < p->nslots; i++)
		if (p->slots[i].m)
			eos_log_error("eosd: FUSE workers stopped with a mount still served");
	if (p->epfd >= 0)
		close(p->epfd);
	if (p->stopfd >= 0)
		close(p->stopfd);
	pthread_cond_destroy(&p->quiet);
	pthread_mutex_destroy(&p->lock);
	free(p->slots);
	free(p);
}

/* A free slot (lock held): its index, or -ENOMEM / -ENOSPC. */
static int
slot_new(struct eosd_fusepool *p, size_t *ret)
{
	for (size_t i = 0; i < p->nslots; i++)
		if (!p->slots[i].m) {
			*ret = i;
			return 0;
		}
	if (p->nslots + 1 >= (1u << SLOT_BITS))
		return -ENOSPC;
	if (eos_buf_array_reserve(&p->slots, &p->cap, p->nslots, sizeof(*p->slots), 16) < 0)
		return -ENOMEM;
	p->slots[p->nslots] = (struct slot){ 0 };
	*ret = p->nslots++;
	return 0;
}

int
eosd_fusepool_add(struct eosd_fusepool *p, struct eos_view_mount *m, uint64_t *ret_id)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
	size_t i = 0;
	int r;

	pthread_mutex_lock(&p->lock);
	r = slot_new(p, &i);
	if (r == 0) {
		struct slot *s = &p->slots[i];

		*s = (struct slot){ .m = m, .gen = s->gen };
		ev.data.u64 = id_of(i, s->gen);
		if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, eos_view_mount_fd(m), &ev) < 0) {
			r = eos_neg_errno();
			s->m = NULL;
		}
	}
	pthread_mutex_unlock(&p->lock);
	if (r == 0)
		*ret_id = ev.data.u64;
	return r;
}

bool
eosd_fusepool_ended(struct eosd_fusepool *p, uint64_t id)
{
	struct slot *s;
	bool ended;

	pthread_mutex_lock(&p->lock);
	s = slot_of(p, id);
	ended = s && s->ended;
	pthread_mutex_unlock(&p->lock);
	return ended;
}

void
eosd_fusepool_remove(struct eosd_fusepool *p, uint64_t id)
{
	struct slot *s;

	pthread_mutex_lock(&p->lock);
	s = slot_of(p, id);
	if (!s) {
		pthread_mutex_unlock(&p->lock);
		return;
	}
	s->removing = true;
	/* a worker may still re-arm it: that is harmless, the event finds the slot emptied */
	epoll_ctl(p->epfd, EPOLL_CTL_DEL, eos_view_mount_fd(s->m), NULL);
	/* found again after each wait: the array moves when a mount is added */
	while ((s = slot_of(p, id)) && s->busy > 0)
		pthread_cond_wait(&p->quiet, &p->lock);
	if (s) {
		s->m = NULL;
		s->gen++;
	}
	pthread_mutex_unlock(&p->lock);
}
