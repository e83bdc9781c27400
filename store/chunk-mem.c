/* SPDX-License-Identifier: MIT */
#include "store/chunk-mem.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

enum {
	PAGE = 4096,
	CLASSES = 64,		/* blocks of 1..64 pages: a chunk is at most 256 KiB */
	HUGE = 2 * 1024 * 1024, /* the reservation is aligned to a huge page */
	AHEAD = 2 * HUGE,	/* eos_chunk_mem_prefault() populates this far past the tail */
};

/* A free block: its first bytes link it into the list of its size. */
struct free_block {
	struct free_block *next;
};

struct eos_chunk_mem {
	pthread_mutex_t lock;
	uint8_t *base, *end;		      /* the reservation */
	uint8_t *tail;			      /* never used from here on */
	uint8_t *ready;			      /* populated up to here (eos_chunk_mem_prefault) */
	struct free_block *free[CLASSES + 1]; /* by size in pages */
	size_t live;			      /* blocks handed out, and running prefaults */
	bool closed;			      /* unref'd: unmap after the last release */
	bool populating;		      /* a prefault runs outside the lock */
	bool no_populate;		      /* the kernel has no MADV_POPULATE_WRITE */
	atomic_bool due;		      /* the tail came near ready: prefault */
};

static size_t
pages_of(size_t len)
{
	return (len + PAGE - 1) / PAGE;
}

int
eos_chunk_mem_new(size_t bytes, struct eos_chunk_mem **ret)
{
	struct eos_chunk_mem *m = calloc(1, sizeof(*m));
	size_t len = (bytes + HUGE - 1) / HUGE * HUGE;
	void *p;

	if (!m || len == 0)
		return free(m), -ENOMEM;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		 0);
	if (p == MAP_FAILED)
		return free(m), -ENOMEM;
	/* fewer, larger page faults; a kernel without transparent huge pages ignores it */
	(void)madvise(p, len, MADV_HUGEPAGE);
	pthread_mutex_init(&m->lock, NULL);
	m->base = m->tail = m->ready = p;
	m->end = m->base + len;
	*ret = m;
	return 0;
}

static void
destroy(struct eos_chunk_mem *m)
{
	munmap(m->base, (size_t)(m->end - m->base));
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void
eos_chunk_mem_unref(struct eos_chunk_mem *m)
{
	bool last;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->closed = true;
	last = m->live == 0;
	pthread_mutex_unlock(&m->lock);
	if (last)
		destroy(m);
}

static void
push(struct eos_chunk_mem *m, uint8_t *p, size_t pages)
{
	struct free_block *b = (struct free_block *)p;

	b->next = m->free[pages];
	m->free[pages] = b;
}

/* A block of exactly pages pages: from its list, the tail, or split off a larger one. Locked. */
static uint8_t *
take(struct eos_chunk_mem *m, size_t pages)
{
	struct free_block *b = m->free[pages];

	if (b) {
		m->free[pages] = b->next;
		return (uint8_t *)b;
	}
	if ((size_t)(m->end - m->tail) >= pages * PAGE) {
		uint8_t *p = m->tail;

		m->tail += pages * PAGE;
		if (!m->no_populate && m->ready < m->end && m->tail + AHEAD / 2 > m->ready)
			atomic_store_explicit(&m->due, true, memory_order_relaxed);
		return p;
	}
	for (size_t k = pages + 1; k <= CLASSES; k++) {
		if (!(b = m->free[k]))
			continue;
		m->free[k] = b->next;
		push(m, (uint8_t *)b + pages * PAGE, k - pages);
		return (uint8_t *)b;
	}
	return NULL;
}

void *
eos_chunk_mem_alloc(struct eos_chunk_mem *m, size_t len)
{
	size_t pages = pages_of(len);
	uint8_t *p;

	if (!m || pages == 0 || pages > CLASSES)
		return NULL;
	pthread_mutex_lock(&m->lock);
	p = m->closed ? NULL : take(m, pages);
	if (p)
		m->live++;
	pthread_mutex_unlock(&m->lock);
	return p;
}

bool
eos_chunk_mem_prefault_due(struct eos_chunk_mem *m)
{
	return m && atomic_load_explicit(&m->due, memory_order_relaxed);
}

/* What to populate next, [*from, *to): empty when nothing is due. Locked. */
static void
prefault_range(const struct eos_chunk_mem *m, uint8_t **from, uint8_t **to)
{
	uintptr_t tail = (uintptr_t)m->tail, huge_end = (tail + HUGE - 1) / HUGE * HUGE;

	*from = m->ready > m->tail ? m->ready : m->tail;
	*to = (uint8_t *)huge_end + AHEAD;
	if (*to > m->end)
		*to = m->end;
	if (m->closed || m->populating || m->no_populate || *to <= *from)
		*to = *from;
}

void
eos_chunk_mem_prefault(struct eos_chunk_mem *m)
{
	uint8_t *from, *to;
	bool last;
	int r;

	if (!m || !atomic_exchange(&m->due, false))
		return;
	pthread_mutex_lock(&m->lock);
	prefault_range(m, &from, &to);
	if (to == from) {
		pthread_mutex_unlock(&m->lock);
		return;
	}
	m->populating = true;
	m->live++; /* the reservation stays mapped while the kernel fills it */
	pthread_mutex_unlock(&m->lock);
	/* Faults the pages in writable without writing to them: blocks in use keep their bytes. */
	r = madvise(from, (size_t)(to - from), MADV_POPULATE_WRITE) < 0 ? errno : 0;
	pthread_mutex_lock(&m->lock);
	m->populating = false;
	if (r == 0 && to > m->ready)
		m->ready = to;
	m->no_populate = m->no_populate || r == EINVAL; /* before Linux 5.14 */
	last = --m->live == 0 && m->closed;
	pthread_mutex_unlock(&m->lock);
	if (last)
		destroy(m);
}

bool
eos_chunk_mem_owns(const struct eos_chunk_mem *m, const void *p)
{
	return m && (const uint8_t *)p >= m->base && (const uint8_t *)p < m->end;
}

bool
eos_chunk_mem_release(struct eos_chunk_mem *m, void *p, size_t len)
{
	bool last;

	if (!eos_chunk_mem_owns(m, p))
		return false;
	pthread_mutex_lock(&m->lock);
	push(m, p, pages_of(len));
	m->live--;
	last = m->closed && m->live == 0;
	pthread_mutex_unlock(&m->lock);
	if (last)
		destroy(m);
	return true;
}
