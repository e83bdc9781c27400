/* SPDX-License-Identifier: MIT */
/*
 * supervisor/cgroup-detect: what cgroups this host offers eosd (supervisor/cgroup.h).
 *
 * eosd's own cgroups come from /proc/self/cgroup, the hierarchies' mount points from
 * /proc/self/mountinfo (a hierarchy mounted below its root, as in a container without a cgroup
 * namespace, has that root taken off eosd's path). Session cgroups go below eosd's own cgroup in
 * each hierarchy: limits set on eosd (a container's memory cgroup) cover its commands too.
 *
 *  1. EOS_CGROUP_ROOT=DIR: a cgroup v2 directory delegated to eosd's user: v2 there, or none.
 *  2. A host with cgroup v2 only: v2 in eosd's own cgroup when eosd may write there.
 *  3. The v1 hierarchies cpuacct, memory, pids and blkio, each mounted and writable (as root).
 *  4. Else none, saying what was found and what is missing.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "supervisor/cgroup-internal.h"

static const char *const v1_names[EOSD_CGROUP_HIERARCHIES] = {
	[EOSD_CG_CPU] = "cpuacct",
	[EOSD_CG_MEMORY] = "memory",
	[EOSD_CG_PIDS] = "pids",
	[EOSD_CG_IO] = "blkio",
};

/* What /proc/self/cgroup and /proc/self/mountinfo say. */
struct host {
	char *own_v1[EOSD_CGROUP_HIERARCHIES]; /* eosd's path in each v1 hierarchy */
	char *own_v2;			       /* eosd's path in the v2 hierarchy */
	char *mnt_v1[EOSD_CGROUP_HIERARCHIES]; /* mount point of each, its root taken off */
	char *root_v1[EOSD_CGROUP_HIERARCHIES];
	char *mnt_v2, *root_v2;
	size_t nv1; /* v1 cgroup mounts of any controller */
};

static void
host_release(struct host *h)
{
	for (size_t i = 0; i < EOSD_CGROUP_HIERARCHIES; i++) {
		free(h->own_v1[i]);
		free(h->mnt_v1[i]);
		free(h->root_v1[i]);
	}
	free(h->own_v2);
	free(h->mnt_v2);
	free(h->root_v2);
}

/* Whether list (comma-separated) holds name. */
static bool
list_has(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == '\0' || p[n] == '\n'))
			return true;
	return false;
}

/* "N:ctrl,ctrl:/path" lines of /proc/self/cgroup. */
static void
read_own(struct host *h)
{
	cleanup_fclose FILE *f = fopen("/proc/self/cgroup", "re");
	cleanup_free char *line = NULL;
	size_t cap = 0;

	while (f && getline(&line, &cap, f) > 0) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = '\0';
		c2[strcspn(c2 + 1, "\n") + 1] = '\0';
		if (c1[1] == '\0' && !h->own_v2)
			h->own_v2 = strdup(c2 + 1);
		for (size_t i = 0; i < EOSD_CGROUP_HIERARCHIES; i++)
			if (!h->own_v1[i] && list_has(c1 + 1, v1_names[i]))
				h->own_v1[i] = strdup(c2 + 1);
	}
}

/* One mountinfo line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS] - FSTYPE SOURCE SUPER". */
static void
mount_line(struct host *h, char *line)
{
	char *f[5], *sep = strstr(line, " - "), *save = NULL, *fstype, *super;

	if (!sep)
		return;
	*sep = '\0';
	f[0] = strtok_r(line, " ", &save);
	for (size_t i = 1; i < 5 && f[i - 1]; i++)
		f[i] = strtok_r(NULL, " ", &save);
	fstype = strtok_r(sep + 3, " ", &save);
	(void)strtok_r(NULL, " ", &save);
	super = strtok_r(NULL, " \n", &save);
	if (!f[4] || !fstype)
		return;
	if (!strcmp(fstype, "cgroup2") && !h->mnt_v2) {
		h->mnt_v2 = strdup(f[4]);
		h->root_v2 = strdup(f[3]);
		return;
	}
	if (strcmp(fstype, "cgroup") != 0 || !super)
		return;
	h->nv1++;
	for (size_t i = 0; i < EOSD_CGROUP_HIERARCHIES; i++)
		if (!h->mnt_v1[i] && list_has(super, v1_names[i])) {
			h->mnt_v1[i] = strdup(f[4]);
			h->root_v1[i] = strdup(f[3]);
		}
}

static void
read_mounts(struct host *h)
{
	cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
	cleanup_free char *line = NULL;
	size_t cap = 0;

	while (f && getline(&line, &cap, f) > 0)
		mount_line(h, line);
}

/* mount + own path with the mount's root taken off it; NULL when any part is missing. */
static char *
join(const char *mnt, const char *root, const char *own)
{
	size_t rl = root ? strlen(root) : 0;
	char *out = NULL;

	if (!mnt || !own)
		return NULL;
	if (rl > 1 && !strncmp(own, root, rl) && (own[rl] == '/' || own[rl] == '\0'))
		own += rl;
	if (asprintf(&out, "%s%s", mnt, strcmp(own, "/") ? own : "") < 0)
		return NULL;
	return out;
}

static int set_reason(struct eosd_cgroups *cg, const char *fmt, ...) EOS_PRINTF(2, 3);

static int
set_reason(struct eosd_cgroups *cg, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&cg->reason, fmt, ap);
	va_end(ap);
	if (r < 0)
		cg->reason = NULL;
	cg->mode = EOSD_CGROUP_NONE;
	return r < 0 ? -ENOMEM : 0;
}

/* v2 at dir: "+cpu +memory …" of what dir's cgroup.controllers lists. */
static int
use_v2(struct eosd_cgroups *cg, const char *dir)
{
	static const char *const want[] = { "cpu", "memory", "pids", "io" };
	cleanup_free char *path = NULL, *line = NULL;
	cleanup_fclose FILE *f = NULL;
	size_t cap = 0, len = 0;

	cg->mode = EOSD_CGROUP_V2;
	cg->base[0] = strdup(dir);
	if (!cg->base[0] || asprintf(&path, "%s/cgroup.controllers", dir) < 0)
		return -ENOMEM;
	f = fopen(path, "re");
	if (!f || getline(&line, &cap, f) <= 0)
		return 0;
	for (char *save = NULL, *w = strtok_r(line, " \n", &save); w;
	     w = strtok_r(NULL, " \n", &save))
		for (size_t i = 0; i < EOS_ARRAY_SIZE(want); i++)
			if (!strcmp(w, want[i]))
				len += (size_t)snprintf(cg->v2_enable + len,
							sizeof(cg->v2_enable) - len, "%s+%s",
							len ? " " : "", want[i]);
	return 0;
}

static int
try_env_root(struct eosd_cgroups *cg, const char *dir)
{
	if (access(dir, W_OK) != 0)
		return set_reason(
			cg,
			"EOS_CGROUP_ROOT='%s' is not a cgroup directory eosd may write to "
			"(uid %d): %s",
			dir, (int)geteuid(), strerror(errno));
	return use_v2(cg, dir);
}

/* The v1 hierarchies: every one mounted and writable, or a reason. 1 when used. */
static int
try_v1(struct eosd_cgroups *cg, const struct host *h, char *missing, size_t n)
{
	char *base[EOSD_CGROUP_HIERARCHIES] = { 0 };
	int used = 1;

	for (size_t i = 0; i < EOSD_CGROUP_HIERARCHIES; i++) {
		base[i] = join(h->mnt_v1[i], h->root_v1[i], h->own_v1[i]);
		if (!base[i] || access(base[i], W_OK) != 0) {
			size_t len = strlen(missing);

			snprintf(missing + len, n - len, "%s%s %s", len ? ", " : "", v1_names[i],
				 base[i] ? "is not writable" : "is not mounted");
			used = 0;
		}
	}
	for (size_t i = 0; i < EOSD_CGROUP_HIERARCHIES; i++) {
		if (used)
			cg->base[i] = base[i];
		else
			free(base[i]);
	}
	if (used)
		cg->mode = EOSD_CGROUP_V1;
	return used;
}

static int
decide(struct eosd_cgroups *cg, const struct host *h)
{
	const char *env = getenv("EOS_CGROUP_ROOT");
	cleanup_free char *v2 = join(h->mnt_v2, h->root_v2, h->own_v2);
	char missing[512] = "";

	if (env && *env)
		return try_env_root(cg, env);
	if (h->nv1 == 0 && v2 && access(v2, W_OK) == 0)
		return use_v2(cg, v2);
	if (h->nv1 > 0 && try_v1(cg, h, missing, sizeof(missing)))
		return 0;
	if (h->nv1 == 0 && !v2)
		return set_reason(cg, "no cgroup hierarchy is mounted");
	return set_reason(cg,
			  "%s%s%scgroup v2 %s%s%s (uid %d; a delegated v2 cgroup can be named with "
			  "EOS_CGROUP_ROOT)",
			  h->nv1 ? "cgroup v1: " : "", missing, h->nv1 ? " (they need root); " : "",
			  v2 ? "at '" : "is not mounted", v2 ? v2 : "",
			  v2 ? "' is not delegated to eosd's user" : "", (int)geteuid());
}

int
eosd_cgroups_detect(struct eosd_cgroups *cg)
{
	struct host h = { 0 };
	int r;

	read_own(&h);
	read_mounts(&h);
	r = decide(cg, &h);
	host_release(&h);
	return r;
}

void
eosd_cgroups_detect_release(struct eosd_cgroups *cg)
{
	free(cg->reason);
	for (size_t i = 0; i < EOSD_CGROUP_HIERARCHIES; i++)
		free(cg->base[i]);
}

int
eosd_cgroups_new(const char *key, struct eosd_obs *obs, struct eosd_cgroups **ret,
		 struct eos_error *err)
{
	struct eosd_cgroups *cg = calloc(1, sizeof(*cg));

	if (!cg)
		return eos_error_set(err, -ENOMEM, "out of memory");
	snprintf(cg->key, sizeof(cg->key), "%s", key && *key ? key : "eosd");
	cg->obs = obs;
	atomic_flag_clear(&cg->round);
	pthread_mutex_init(&cg->lock, NULL);
	if (eosd_cgroups_detect(cg) < 0) {
		eosd_cgroups_free(cg);
		return eos_error_set(err, -ENOMEM, "out of memory");
	}
	if (cg->mode != EOSD_CGROUP_NONE)
		eosd_cgroups_sweep(cg);
	*ret = cg;
	return 0;
}

enum eosd_cgroup_mode
eosd_cgroups_mode(const struct eosd_cgroups *cg)
{
	return cg ? cg->mode : EOSD_CGROUP_NONE;
}

const char *
eosd_cgroup_mode_name(enum eosd_cgroup_mode m)
{
	switch (m) {
	case EOSD_CGROUP_V1:
		return "v1";
	case EOSD_CGROUP_V2:
		return "v2";
	case EOSD_CGROUP_NONE:
		break;
	}
	return "none";
}

const char *
eosd_cgroups_reason(const struct eosd_cgroups *cg)
{
	if (!cg)
		return "eosd samples no cgroups";
	return cg->mode == EOSD_CGROUP_NONE ? (cg->reason ? cg->reason : "unknown") : NULL;
}

const char *
eosd_cgroups_base(const struct eosd_cgroups *cg)
{
	if (!cg || cg->mode == EOSD_CGROUP_NONE)
		return NULL;
	return cg->mode == EOSD_CGROUP_V2 ? cg->base[0] : cg->base[EOSD_CG_MEMORY];
}
