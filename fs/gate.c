/* SPDX-License-Identifier: MIT */
/*
 * fs/gate: the view-wide gate that lets a live publish or a fork see a still view (see struct
 * eos_gate in view-internal.h). Requests wait at the gate; they never fail there.
 */
#include <pthread.h>

#include "fs/view-internal.h"

static void
rwlock_init_writer_first(pthread_rwlock_t *l)
{
	pthread_rwlockattr_t a;

	pthread_rwlockattr_init(&a);
	/* a waiting publish must not starve behind a stream of requests */
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(l, &a);
	pthread_rwlockattr_destroy(&a);
}

void
eos_gate_init(struct eos_gate *g)
{
	rwlock_init_writer_first(&g->writers);
	rwlock_init_writer_first(&g->all);
}

void
eos_gate_destroy(struct eos_gate *g)
{
	pthread_rwlock_destroy(&g->writers);
	pthread_rwlock_destroy(&g->all);
}

bool
eos_gate_write_enter(struct eos_view *v)
{
	pthread_rwlock_rdlock(&v->gate.writers);
	pthread_rwlock_rdlock(&v->gate.all);
	return !atomic_load(&v->broken);
}

void
eos_gate_write_leave(struct eos_view *v)
{
	pthread_rwlock_unlock(&v->gate.all);
	pthread_rwlock_unlock(&v->gate.writers);
}

bool
eos_gate_read_enter(struct eos_view *v)
{
	pthread_rwlock_rdlock(&v->gate.all);
	return true;
}

void
eos_gate_read_leave(struct eos_view *v)
{
	pthread_rwlock_unlock(&v->gate.all);
}

void
eos_gate_close_writers(struct eos_view *v)
{
	pthread_rwlock_wrlock(&v->gate.writers);
}

void
eos_gate_close_all(struct eos_view *v)
{
	pthread_rwlock_wrlock(&v->gate.all);
}

void
eos_gate_open(struct eos_view *v, bool all)
{
	if (all)
		pthread_rwlock_unlock(&v->gate.all);
	pthread_rwlock_unlock(&v->gate.writers);
}
