/* SPDX-License-Identifier: MIT */
/*
 * supervisor/fusepool: the one bounded pool of threads that serves the FUSE mounts of every
 * session eosd serves (fs/view.h, "Serving many mounts from a host's bounded pool"), so that the
 * daemon's thread count does not grow with its sessions.
 *
 * Each worker waits in epoll_wait on one epoll set holding every mount's /dev/fuse fd
 * (EPOLLONESHOT), reads one request of the mount it was woken for, re-arms the fd so another
 * worker can take that mount's next request, and answers the request. Mounts are named in the
 * epoll set by a slot number and a generation, never by pointer: an event still in flight for a
 * mount taken out finds its slot reused or empty and is dropped.
 *
 * Calling sequence: eosd_fusepool_new() → eosd_fusepool_add() / _ended() / _remove() from any
 * thread but a worker → eosd_fusepool_free() once every mount was removed. A request waits in
 * a worker only for the view's gate or the store, never for another request, so any number of
 * workers makes progress; eosd_fusepool_remove() waits for the requests of its mount in
 * progress, so it must not be called from a request (it is not: eosd serves its own file
 * operations through the view's path API).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/cleanup.h"
#include "common/error.h"

#include "fs/view.h"

enum {
	EOSD_FUSEPOOL_THREADS_MAX = 32,
};

struct eosd_fusepool;

/* Start threads workers (1 to EOSD_FUSEPOOL_THREADS_MAX). Caller owns *ret. */
int eosd_fusepool_new(unsigned threads, struct eosd_fusepool **ret, struct eos_error *err);
/* The default size: the number of cores + 1, at least 3 (doc/eosd.md, "Threads"). */
unsigned eosd_fusepool_default_threads(void);
/* Worker threads started. */
unsigned eosd_fusepool_threads(const struct eosd_fusepool *p);
/*
 * Serve m (mounted with host_served) from now on; *ret_id names it for the calls below. m is
 * borrowed: it must stay alive until eosd_fusepool_remove(*ret_id) returned.
 */
int eosd_fusepool_add(struct eosd_fusepool *p, struct eos_view_mount *m, uint64_t *ret_id);
/* True once the mount id has ended (unmounted from outside): remove it and free the mount. */
bool eosd_fusepool_ended(struct eosd_fusepool *p, uint64_t id);
/* Stop serving mount id: when this returns no worker touches it any more. Unknown ids: nothing. */
void eosd_fusepool_remove(struct eosd_fusepool *p, uint64_t id);
/* Join the workers and free. It is a bug to call it with mounts still added. NULL-safe. */
void eosd_fusepool_free(struct eosd_fusepool *p);
EOS_DEFINE_CLEANUP(struct eosd_fusepool *, eosd_fusepool_free)
