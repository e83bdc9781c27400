/* SPDX-License-Identifier: MIT */
/*
 * The automatic squash policy. eos_autosquash_notify() (called by the publish gate after each
 * publish, outside the writer lock) only queues the sandbox id, deduplicated, for one background
 * thread, which is started on the first notify while the threshold is non-zero and joined by
 * eos_store_close(). For each queued sandbox the thread counts the layers that neither the head
 * nor a lease needs and squashes (eos_squash_run(), which blocks publishes only while it writes)
 * when there are more than the threshold. Then it frees what squashes had to leave because a
 * change set was alive (eos_squash_flush(), waiting up to FLUSH_WAIT_NS for a moment without
 * one). Failures are logged as warnings and never stop the thread; sandboxes destroyed meanwhile
 * are skipped. Shutdown cancels a running plan.
 *
 * Locking: a->lock protects the queue and the flags; it is never held during a squash, so
 * notify only waits for a few instructions of the thread or another notifier.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/log.h"

#include "store/sandbox.h"
#include "store/squash.h"
#include "store/store-internal.h"

enum {
	FLUSH_WAIT_NS = 200 * 1000 * 1000, /* how long to wait for a moment without change sets */
};

struct eos_autosquash {
	atomic_uint threshold;
	atomic_bool stop; /* also cancels a running plan */

	pthread_mutex_t lock; /* protects what follows */
	pthread_cond_t wake;  /* the thread: work queued, or stop */
	pthread_cond_t idle;  /* waiters: queue empty and thread idle */
	bool started, busy;
	pthread_t thread;
	char (*queue)[EOS_SANDBOX_ID_MAX + 1];
	size_t n, cap;
};

int
eos_autosquash_init(struct eos_store *st, unsigned threshold)
{
	struct eos_autosquash *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	atomic_init(&a->threshold, threshold);
	atomic_init(&a->stop, false);
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->wake, NULL);
	pthread_cond_init(&a->idle, NULL);
	st->autosquash = a;
	return 0;
}

void
eos_store_set_autosquash(struct eos_store *st, unsigned threshold)
{
	atomic_store(&st->autosquash->threshold, threshold);
}

/* --- one sandbox ------------------------------------------------------------------------------ */

static bool
contains(const uint64_t *v, size_t n, uint64_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* Retained layers of sandbox id that neither its head nor a lease needs. */
static int
unneeded_layers(struct eos_store *st, const char *id, uint64_t *ret, struct eos_error *err)
{
	cleanup_free struct eos_layer_info *layers = NULL;
	cleanup_free uint64_t *leases = NULL;
	size_t nlayers = 0, nleases = 0;
	uint64_t sbx, head = 0, n = 0;
	int r = eos_sandbox_resolve(st, id, &sbx, err);

	r = r ?: eos_sandbox_head(st, sbx, &head, err);
	r = r ?: eos_lease_versions(st, sbx, &leases, &nleases, err);
	r = r ?: eos_store_layer_list(st, id, &layers, &nlayers, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nlayers; i++)
		if (layers[i].version < head && !contains(leases, nleases, layers[i].version))
			n++;
	*ret = n;
	return 0;
}

static void
squash_one(struct eos_autosquash *a, struct eos_store *st, const char *id, uint64_t unneeded)
{
	struct eos_squash_options opts = { .cancel = &a->stop };
	struct eos_error err = { 0 };
	int r;

	eos_log_debug("automatic squash of '%s': %llu layers unneeded", id,
		      (unsigned long long)unneeded);
	r = eos_squash_run(st, id, &opts, NULL, NULL, &err);
	if (r < 0 && r != -ENOENT && r != -ECANCELED)
		eos_log_warn("automatic squash of '%s': %s, ignoring", id,
			     eos_error_message(&err, r));
}

static void
check_one(struct eos_autosquash *a, struct eos_store *st, const char *id)
{
	unsigned threshold = atomic_load(&a->threshold);
	struct eos_error err = { 0 };
	uint64_t unneeded = 0;
	int r;

	if (threshold == 0)
		return;
	r = unneeded_layers(st, id, &unneeded, &err);
	if (r == -ENOENT) {
		eos_log_debug("automatic squash of '%s': gone, skipped", id);
		return;
	}
	if (r < 0) {
		eos_log_warn("automatic squash of '%s': %s, ignoring", id,
			     eos_error_message(&err, r));
		return;
	}
	if (unneeded > threshold)
		squash_one(a, st, id, unneeded);
	if (atomic_load(&a->stop))
		return;
	/* What this or earlier squashes had to leave, at the next moment without change sets. */
	r = eos_squash_flush(st, FLUSH_WAIT_NS, NULL, &err);
	if (r < 0)
		eos_log_warn("automatic squash: %s, ignoring", eos_error_message(&err, r));
}

/* --- the thread ------------------------------------------------------------------------------- */

static void *
autosquash_main(void *arg)
{
	struct eos_store *st = arg;
	struct eos_autosquash *a = st->autosquash;
	char id[EOS_SANDBOX_ID_MAX + 1];

	pthread_mutex_lock(&a->lock);
	for (;;) {
		while (!atomic_load(&a->stop) && a->n == 0) {
			a->busy = false;
			pthread_cond_broadcast(&a->idle);
			pthread_cond_wait(&a->wake, &a->lock);
		}
		if (atomic_load(&a->stop))
			break;
		memcpy(id, a->queue[0], sizeof(id));
		memmove(a->queue, a->queue + 1, --a->n * sizeof(*a->queue));
		a->busy = true;
		pthread_mutex_unlock(&a->lock);
		check_one(a, st, id);
		pthread_mutex_lock(&a->lock);
	}
	a->busy = false;
	pthread_cond_broadcast(&a->idle);
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* Caller holds a->lock. Start the thread with every signal blocked (they go to other threads). */
static int
start_locked(struct eos_store *st, struct eos_autosquash *a)
{
	sigset_t all, old;
	int r;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&a->thread, NULL, autosquash_main, st);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	a->started = r == 0;
	return r;
}

static bool
queued(const struct eos_autosquash *a, const char *id)
{
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->queue[i], id) == 0)
			return true;
	return false;
}

/* Caller holds a->lock. */
static void
notify_locked(struct eos_store *st, struct eos_autosquash *a, const char *id)
{
	int r;

	if (atomic_load(&a->stop) || queued(a, id))
		return;
	if (!a->started) {
		r = start_locked(st, a);
		if (r < 0) {
			eos_log_warn(
				"automatic squash of '%s': cannot start a thread: %s, ignoring", id,
				strerror(-r));
			return;
		}
	}
	if (eos_buf_array_reserve(&a->queue, &a->cap, a->n, sizeof(*a->queue), 8) < 0) {
		eos_log_warn("automatic squash of '%s': out of memory, ignoring", id);
		return;
	}
	memcpy(a->queue[a->n++], id, strlen(id) + 1);
	pthread_cond_signal(&a->wake);
}

void
eos_autosquash_notify(struct eos_store *st, const char *sandbox)
{
	struct eos_autosquash *a = st ? st->autosquash : NULL;

	if (!a || !sandbox || atomic_load(&a->threshold) == 0 ||
	    eos_sandbox_id_check(sandbox, NULL) < 0)
		return;
	pthread_mutex_lock(&a->lock);
	notify_locked(st, a, sandbox);
	pthread_mutex_unlock(&a->lock);
}

void
eos_store_autosquash_wait(struct eos_store *st)
{
	struct eos_autosquash *a = st->autosquash;

	pthread_mutex_lock(&a->lock);
	while (a->started && !atomic_load(&a->stop) && (a->n > 0 || a->busy))
		pthread_cond_wait(&a->idle, &a->lock);
	pthread_mutex_unlock(&a->lock);
}

void
eos_autosquash_shutdown(struct eos_store *st)
{
	struct eos_autosquash *a = st->autosquash;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	atomic_store(&a->stop, true);
	pthread_cond_broadcast(&a->wake);
	pthread_cond_broadcast(&a->idle);
	pthread_mutex_unlock(&a->lock);
	if (a->started)
		pthread_join(a->thread, NULL);
	pthread_cond_destroy(&a->wake);
	pthread_cond_destroy(&a->idle);
	pthread_mutex_destroy(&a->lock);
	free(a->queue);
	free(a);
	st->autosquash = NULL;
}
