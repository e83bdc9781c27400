/* SPDX-License-Identifier: MIT */
/*
 * supervisor/pool: eosd's bounded worker pool. Every operation handler runs here, never on the
 * gateway's loop, so a long import or export cannot delay a quick list_sandboxes.
 *
 * Calling sequence: eosd_pool_new() → eosd_pool_submit() from any thread → eosd_pool_free(),
 * which runs every job already queued and joins the threads (it waits for running jobs: a
 * handler cannot be cancelled). The pool never creates threads after eosd_pool_new().
 */
#pragma once

#include <stddef.h>

#include "common/cleanup.h"
#include "common/error.h"

enum {
	EOSD_POOL_THREADS_MAX = 16,
	EOSD_POOL_QUEUE_MAX = 256,
};

typedef void (*eosd_pool_fn)(void *ctx);

struct eosd_pool;

/* Start threads workers (1 to EOSD_POOL_THREADS_MAX) and a queue of queue_max jobs. */
int eosd_pool_new(unsigned threads, size_t queue_max, struct eosd_pool **ret,
		  struct eos_error *err);
/* The default size: half the number of cores + 2, at least 3 (doc/eosd.md,
 * "Threads": handlers mostly wait for the store or the disk; the FUSE workers get the cores). */
unsigned eosd_pool_default_threads(void);
/*
 * Queue fn(ctx) to run on a worker. -EBUSY when the queue is full, -ESHUTDOWN once
 * eosd_pool_free() has begun; fn is not called then.
 */
int eosd_pool_submit(struct eosd_pool *p, eosd_pool_fn fn, void *ctx);
/* Worker threads started. */
unsigned eosd_pool_threads(const struct eosd_pool *p);
/* Run what is queued, join the workers, free. NULL-safe. */
void eosd_pool_free(struct eosd_pool *p);
EOS_DEFINE_CLEANUP(struct eosd_pool *, eosd_pool_free)
