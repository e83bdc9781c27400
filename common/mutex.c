/* SPDX-License-Identifier: MIT */
/* common/mutex: a four-byte futex lock (the three-state mutex of Drepper's "Futexes Are Tricky").
 */
#include "common/mutex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

enum {
	MUTEX_FREE = 0,
	MUTEX_LOCKED = 1,
	MUTEX_WAITERS = 2, /* locked, and someone may be asleep on it */
};

static void
futex(struct eos_mutex *m, int op, uint32_t val)
{
	syscall(SYS_futex, &m->state, op, val, NULL, NULL, 0);
}

bool
eos_mutex_trylock(struct eos_mutex *m)
{
	uint32_t want = MUTEX_FREE;

	return atomic_compare_exchange_strong_explicit(&m->state, &want, MUTEX_LOCKED,
						       memory_order_acquire, memory_order_relaxed);
}

void
eos_mutex_lock(struct eos_mutex *m)
{
	uint32_t c = MUTEX_FREE;

	if (atomic_compare_exchange_strong_explicit(&m->state, &c, MUTEX_LOCKED,
						    memory_order_acquire, memory_order_relaxed))
		return;
	/* contended: mark it so that the unlock wakes a sleeper, and sleep until it is free */
	if (c != MUTEX_WAITERS)
		c = atomic_exchange_explicit(&m->state, MUTEX_WAITERS, memory_order_acquire);
	while (c != MUTEX_FREE) {
		futex(m, FUTEX_WAIT_PRIVATE, MUTEX_WAITERS);
		c = atomic_exchange_explicit(&m->state, MUTEX_WAITERS, memory_order_acquire);
	}
}

void
eos_mutex_unlock(struct eos_mutex *m)
{
	if (atomic_exchange_explicit(&m->state, MUTEX_FREE, memory_order_release) == MUTEX_WAITERS)
		futex(m, FUTEX_WAKE_PRIVATE, 1);
}
