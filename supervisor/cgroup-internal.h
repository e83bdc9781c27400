/* SPDX-License-Identifier: MIT */
/*
 * supervisor/cgroup internals, shared by cgroup.c (cgroups and samples), cgroup-detect.c (what
 * the host offers) and cgroup-ops.c (the cgroup operation). cg->lock guards the list, every
 * cgroup's counts and last sample, and the timer hook; a sampling round holds it across its
 * reads (a few small files per sampling cgroup).
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"
#include "supervisor/cgroup.h"

/* The v1 hierarchies used, by index into base[] and dir[]; v2 uses index 0 only. */
enum eosd_cgroup_hierarchy {
	EOSD_CG_CPU,	/* v1: cpuacct */
	EOSD_CG_MEMORY, /* v1: memory */
	EOSD_CG_PIDS,	/* v1: pids */
	EOSD_CG_IO,	/* v1: blkio */
	EOSD_CGROUP_HIERARCHIES,
};

/* One sample; -1 marks what could not be read. */
struct eosd_cgroup_sample {
	int64_t time_ns; /* wall clock */
	int64_t cpu_usec;
	double cpu_percent; /* of one core, since the previous sample */
	int64_t memory, pids, io_read, io_write;
};

struct eosd_cgroup {
	struct eosd_cgroups *cg;
	char sandbox[EOS_SANDBOX_ID_MAX + 1];
	char session[EOS_SESSION_NAME_MAX + 1];
	char *dir[EOSD_CGROUP_HIERARCHIES];
	unsigned running; /* commands running: sampled while > 0 */
	bool have_last;
	struct eosd_cgroup_sample last;
	int64_t last_mono;
	struct eosd_cgroup *next;
};

struct eosd_cgroups {
	enum eosd_cgroup_mode mode;
	char *reason;			     /* mode none: why */
	char *base[EOSD_CGROUP_HIERARCHIES]; /* where cgroups go (v2: [0] only) */
	char v2_enable[64];		     /* "+cpu +memory +pids +io", those available */
	char key[40];
	struct eosd_obs *obs;
	pthread_mutex_t lock;
	struct eosd_cgroup *list;
	size_t sampling;   /* cgroups with running > 0 */
	atomic_flag round; /* a sampling round runs (eosd_cgroups_sample) */
	void (*arm)(void *ctx, unsigned interval_ms);
	void *arm_ctx;
};

/* cgroup-detect.c: fill cg's mode, bases and reason; free them. */
int eosd_cgroups_detect(struct eosd_cgroups *cg);
void eosd_cgroups_detect_release(struct eosd_cgroups *cg);
/* cgroup.c */
/*
 * Remove what a previous eosd of the same key left (eos-<key>/<sandbox>/<session>: a SIGKILLed
 * eosd removes nothing); a cgroup that still holds processes stays. Best effort.
 */
void eosd_cgroups_sweep(struct eosd_cgroups *cg);
struct eosd_cgroup *eosd_cgroup_find_locked(struct eosd_cgroups *cg, const char *sandbox,
					    const char *session);
json_t *eosd_cgroup_sample_json(const struct eosd_cgroup_sample *s);
