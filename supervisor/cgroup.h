/* SPDX-License-Identifier: MIT */
/*
 * supervisor/cgroup: a cgroup per workspace session for its commands, and their resource
 * samples — cpu, memory, pids, io — taken only while commands run (doc/observability.md,
 * "cgroup").
 *
 * Detection (eosd_cgroups_new) never fails for want of cgroups: it picks cgroup v2 when eosd has
 * a delegated v2 cgroup (EOS_CGROUP_ROOT, or its own cgroup of a pure v2 host when writable),
 * else cgroup v1 when the cpuacct, memory, pids and blkio hierarchies are writable (root), else
 * none, with the reason. Session cgroups go below eosd's own cgroup of each hierarchy, in
 * eos-<key>/<sandbox>/<session> (key: eosd's runtime key, so that two eosd never meet).
 *
 * Calling sequence for the command code (supervisor/obs.h documents the spans):
 *	eosd_cgroup_create(cg, sandbox, session, &g)    once per session (or per command)
 *	eosd_cgroup_attach(g, pid)                      each command's process, before it runs
 *	eosd_cgroup_sampling(g, true)                   a command started …
 *	eosd_cgroup_sampling(g, false)                  … and exited (counted: several may run)
 *	eosd_cgroup_remove(g)                           its processes gone; frees g
 * Sampling: while any cgroup samples, the sampler's timer (eosd_cgroups_set_timer: the gateway's
 * libevent timer) calls for eosd_cgroups_sample() every EOSD_CGROUP_INTERVAL_MS on the worker
 * pool; with none sampling the timer is off — nothing runs. Each round records one sample per
 * sampling cgroup (eosd_obs_sample: kept in the obs column family like any observation) and
 * keeps the latest in memory for snapshot. Thread-safe (one mutex, never held across a file read
 * of another cgroup's round).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"

struct eosd_obs;

enum {
	EOSD_CGROUP_INTERVAL_MS = 1000,
	EOSD_CGROUP_PIDS_MAX = 4096, /* processes of one session */
};

enum eosd_cgroup_mode {
	EOSD_CGROUP_NONE,
	EOSD_CGROUP_V1,
	EOSD_CGROUP_V2,
};

struct eosd_cgroups;
struct eosd_cgroup;

/*
 * Detect what this host offers eosd (see above) and make the registry; key names eosd's
 * directory (eos-<key>), obs receives the samples (may be NULL). The session cgroups a previous
 * eosd of the same key left there (it was killed) are removed, unless they still hold processes.
 * Fails only for lack of memory.
 */
int eosd_cgroups_new(const char *key, struct eosd_obs *obs, struct eosd_cgroups **ret,
		     struct eos_error *err);
/* Remove the cgroups still made (their processes must be gone) and free. NULL-safe. */
void eosd_cgroups_free(struct eosd_cgroups *cg);
enum eosd_cgroup_mode eosd_cgroups_mode(const struct eosd_cgroups *cg);
/* "v1", "v2", "none". */
const char *eosd_cgroup_mode_name(enum eosd_cgroup_mode m);
/* Why cgroups are unavailable (mode none), or NULL. Borrowed. */
const char *eosd_cgroups_reason(const struct eosd_cgroups *cg);
/* Where session cgroups go (v2: one directory; v1: the memory hierarchy's), or NULL. */
const char *eosd_cgroups_base(const struct eosd_cgroups *cg);

/*
 * Make the cgroup of session of sandbox (its directories in every hierarchy used; one that
 * exists already is taken over). -ENOTSUP with the reason when cgroups are unavailable, the
 * errno of mkdir naming the directory otherwise. g belongs to cg (eosd_cgroup_remove frees it).
 */
int eosd_cgroup_create(struct eosd_cgroups *cg, const char *sandbox, const char *session,
		       struct eosd_cgroup **ret, struct eos_error *err);
/* The cgroup of session of sandbox, or NULL. Valid until eosd_cgroup_remove(). */
struct eosd_cgroup *eosd_cgroup_find(struct eosd_cgroups *cg, const char *sandbox,
				     const char *session);
/* Move process pid (all its threads) into g, in every hierarchy. */
int eosd_cgroup_attach(struct eosd_cgroup *g, pid_t pid, struct eos_error *err);
/* Count a command starting (on) or exiting (off): g is sampled while the count is above 0. */
void eosd_cgroup_sampling(struct eosd_cgroup *g, bool on);
/*
 * Remove g's directories (-EBUSY naming the directory while processes remain in it: g stays)
 * and free it.
 */
int eosd_cgroup_remove(struct eosd_cgroup *g, struct eos_error *err);

/*
 * The sampler's clock: arm(ctx, interval_ms) when sampling starts, arm(ctx, 0) when it stops
 * (fn NULL: none; eosd_cgroups_sample() is then called by hand, as tests do).
 */
void eosd_cgroups_set_timer(struct eosd_cgroups *cg, void (*arm)(void *ctx, unsigned interval_ms),
			    void *ctx);
/* One round: a sample of every sampling cgroup (a round already running: nothing). */
void eosd_cgroups_sample(struct eosd_cgroups *cg);
/*
 * The latest sample of session of sandbox (session NULL: the sum over the sandbox's sessions) as
 * {"time", "cpu_usec", "cpu_percent", "memory_bytes", "pids", "io_read_bytes",
 * "io_write_bytes"}, or NULL when there is none. New reference.
 */
json_t *eosd_cgroups_latest(struct eosd_cgroups *cg, const char *sandbox, const char *session);
/* How many cgroups are made, and how many sample now. */
void eosd_cgroups_count(struct eosd_cgroups *cg, size_t *ret_made, size_t *ret_sampling);
