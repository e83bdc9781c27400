/* SPDX-License-Identifier: MIT */
/*
 * common/mutex: a mutual exclusion lock in four bytes, for objects there are very many of (a
 * view's node per looked-up file, where a pthread_mutex_t would be 40 of its bytes).
 *
 * A futex word: 0 unlocked, 1 locked, 2 locked with waiters. Not recursive, no owner checks, no
 * condition variables; a zero-filled struct eos_mutex is an unlocked mutex (nothing to release).
 * Waiters sleep in the kernel (FUTEX_WAIT_PRIVATE: the lock must not be shared between
 * processes), so it may be held across blocking calls like any mutex.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct eos_mutex {
	_Atomic uint32_t state;
};

void eos_mutex_lock(struct eos_mutex *m);
/* Take m when it is free: true when taken. */
bool eos_mutex_trylock(struct eos_mutex *m);
void eos_mutex_unlock(struct eos_mutex *m);
