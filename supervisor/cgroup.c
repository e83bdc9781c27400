/* SPDX-License-Identifier: MIT */
/*
 * supervisor/cgroup: session cgroups and their sampler (supervisor/cgroup.h). The detection is
 * in cgroup-detect.c; this file makes, fills, samples and removes the cgroups.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/path.h"

#include "supervisor/cgroup-internal.h"
#include "supervisor/obs.h"

/* --- files -------------------------------------------------------------------------------------
 */

/* Read dir/name (a small cgroup file) into buf[n]; 0 or -errno. */
static int
read_small(const char *dir, const char *name, char *buf, size_t n)
{
	cleanup_free char *path = NULL;
	cleanup_close int fd = -1;
	ssize_t len;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return eos_neg_errno();
	len = read(fd, buf, n - 1);
	if (len < 0)
		return eos_neg_errno();
	buf[len] = '\0';
	return 0;
}

static int
read_u64(const char *dir, const char *name, uint64_t *ret)
{
	char buf[64];
	char *end;
	int r = read_small(dir, name, buf, sizeof(buf));

	if (r < 0)
		return r;
	*ret = strtoull(buf, &end, 10);
	return end == buf ? -EBADMSG : 0;
}

/* The value after key in a "key value" or "key=value" list (cpu.stat, io.stat lines). */
static uint64_t
sum_field(const char *text, const char *key)
{
	size_t klen = strlen(key);
	uint64_t sum = 0;

	for (const char *p = text; (p = strstr(p, key)); p += klen) {
		bool start = p == text || p[-1] == ' ' || p[-1] == '\n';

		if (start && (p[klen] == ' ' || p[klen] == '='))
			sum += strtoull(p + klen + 1, NULL, 10);
	}
	return sum;
}

static int
write_str(const char *dir, const char *name, const char *value)
{
	cleanup_free char *path = NULL;
	cleanup_close int fd = -1;
	size_t len = strlen(value);

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return eos_neg_errno();
	return write(fd, value, len) == (ssize_t)len ? 0 : eos_neg_errno();
}

/* --- making and removing -----------------------------------------------------------------------
 */

static void
cgroup_free(struct eosd_cgroup *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < EOSD_CGROUP_HIERARCHIES; i++)
		free(g->dir[i]);
	free(g);
}

/* base/eos-<key>/<sandbox>/<session>, made with its parents. Caller owns *ret. */
static int
make_dir(const struct eosd_cgroups *cg, const char *base, const char *sandbox, const char *session,
	 char **ret, struct eos_error *err)
{
	cleanup_free char *dir = NULL;
	int r;

	if (asprintf(&dir, "%s/eos-%s/%s/%s", base, cg->key, sandbox, session) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	r = eos_mkdir_parents(dir, 0755, true);
	if (r < 0)
		return eos_error_set(err, r, "cgroup '%s': %s", dir, strerror(-r));
	*ret = TAKE_PTR(dir);
	return 0;
}

/* v2: the controllers eosd's base lists, enabled for its children (best effort). */
static void
enable_controllers(const struct eosd_cgroups *cg, const char *dir)
{
	cleanup_free char *parent = strdup(dir);
	char *slash = parent ? strrchr(parent, '/') : NULL;

	if (!slash)
		return;
	*slash = '\0';
	(void)write_str(parent, "cgroup.subtree_control", cg->v2_enable);
}

/* rmdir the parents of dir up to eos-<key> when they are empty (best effort). */
static void
remove_parents(const char *dir)
{
	cleanup_free char *p = strdup(dir);

	for (int up = 0; p && up < 2; up++) {
		char *slash = strrchr(p, '/');

		if (!slash)
			return;
		*slash = '\0';
		if (rmdir(p) < 0)
			return; /* other sessions, or sandboxes, still there */
	}
}

static void
remove_dirs(struct eosd_cgroup *g)
{
	for (size_t i = 0; i < EOSD_CGROUP_HIERARCHIES; i++)
		if (g->dir[i] && rmdir(g->dir[i]) == 0)
			remove_parents(g->dir[i]);
}

/* rmdir every subdirectory of dir (the cgroups below it, depth first) and dir; best effort. */
static void
remove_tree(const char *dir, int depth)
{
	cleanup_closedir DIR *d = depth > 0 ? opendir(dir) : NULL;
	struct dirent *e;

	while (d && (e = readdir(d))) {
		cleanup_free char *sub = NULL;

		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (asprintf(&sub, "%s/%s", dir, e->d_name) >= 0)
			remove_tree(sub, depth - 1);
	}
	(void)rmdir(dir);
}

void
eosd_cgroups_sweep(struct eosd_cgroups *cg)
{
	for (size_t i = 0; i < EOSD_CGROUP_HIERARCHIES; i++) {
		cleanup_free char *dir = NULL;

		if (cg->base[i] && asprintf(&dir, "%s/eos-%s", cg->base[i], cg->key) >= 0)
			remove_tree(dir, 2); /* eos-<key>/<sandbox>/<session> */
	}
}

/*
 * A session's limits: EOSD_CGROUP_PIDS_MAX processes and half the machine's memory, so that a
 * fork bomb or a memory hog in one session leaves eosd and the other sessions working (best
 * effort: a controller that is not there is skipped).
 */
static void
set_limits(const struct eosd_cgroups *cg, const struct eosd_cgroup *g)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	char mem[32], pids[32];

	snprintf(pids, sizeof(pids), "%d", EOSD_CGROUP_PIDS_MAX);
	snprintf(mem, sizeof(mem), "%lld",
		 pages > 0 && size > 0 ? (long long)pages * size / 2 : (long long)4 << 30);
	if (cg->mode == EOSD_CGROUP_V2) {
		(void)write_str(g->dir[0], "pids.max", pids);
		(void)write_str(g->dir[0], "memory.max", mem);
		return;
	}
	if (g->dir[EOSD_CG_PIDS])
		(void)write_str(g->dir[EOSD_CG_PIDS], "pids.max", pids);
	if (g->dir[EOSD_CG_MEMORY])
		(void)write_str(g->dir[EOSD_CG_MEMORY], "memory.limit_in_bytes", mem);
}

static int
create_locked(struct eosd_cgroups *cg, const char *sandbox, const char *session,
	      struct eosd_cgroup **ret, struct eos_error *err)
{
	struct eosd_cgroup *g = calloc(1, sizeof(*g));
	int r = g ? 0 : eos_error_set(err, -ENOMEM, "out of memory");

	for (size_t i = 0; r == 0 && i < EOSD_CGROUP_HIERARCHIES; i++)
		if (cg->base[i])
			r = make_dir(cg, cg->base[i], sandbox, session, &g->dir[i], err);
	if (r == 0 && cg->mode == EOSD_CGROUP_V2 && cg->v2_enable[0])
		enable_controllers(cg, g->dir[0]);
	if (r == 0)
		set_limits(cg, g);
	if (r < 0) {
		if (g)
			remove_dirs(g);
		cgroup_free(g);
		return r;
	}
	g->cg = cg;
	snprintf(g->sandbox, sizeof(g->sandbox), "%s", sandbox);
	snprintf(g->session, sizeof(g->session), "%s", session);
	g->next = cg->list;
	cg->list = g;
	*ret = g;
	return 0;
}

int
eosd_cgroup_create(struct eosd_cgroups *cg, const char *sandbox, const char *session,
		   struct eosd_cgroup **ret, struct eos_error *err)
{
	int r;

	if (cg->mode == EOSD_CGROUP_NONE)
		return eos_error_set(err, -ENOTSUP, "cgroups are unavailable: %s", cg->reason);
	pthread_mutex_lock(&cg->lock);
	*ret = eosd_cgroup_find_locked(cg, sandbox, session);
	r = *ret ? 0 : create_locked(cg, sandbox, session, ret, err);
	pthread_mutex_unlock(&cg->lock);
	return r;
}

struct eosd_cgroup *
eosd_cgroup_find_locked(struct eosd_cgroups *cg, const char *sandbox, const char *session)
{
	for (struct eosd_cgroup *g = cg->list; g; g = g->next)
		if (!strcmp(g->sandbox, sandbox) && !strcmp(g->session, session))
			return g;
	return NULL;
}

struct eosd_cgroup *
eosd_cgroup_find(struct eosd_cgroups *cg, const char *sandbox, const char *session)
{
	struct eosd_cgroup *g;

	if (!cg)
		return NULL;
	pthread_mutex_lock(&cg->lock);
	g = eosd_cgroup_find_locked(cg, sandbox, session);
	pthread_mutex_unlock(&cg->lock);
	return g;
}

int
eosd_cgroup_attach(struct eosd_cgroup *g, pid_t pid, struct eos_error *err)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	for (size_t i = 0; i < EOSD_CGROUP_HIERARCHIES; i++) {
		int r = g->dir[i] ? write_str(g->dir[i], "cgroup.procs", buf) : 0;

		if (r < 0)
			return eos_error_set(err, r, "move pid %d into cgroup '%s': %s", (int)pid,
					     g->dir[i], strerror(-r));
	}
	return 0;
}

/* Arm or disarm the sampler's timer when the number of sampling cgroups leaves or reaches 0. */
static void
timer_update(struct eosd_cgroups *cg, size_t before)
{
	if (!cg->arm || (before == 0) == (cg->sampling == 0))
		return;
	cg->arm(cg->arm_ctx, cg->sampling ? EOSD_CGROUP_INTERVAL_MS : 0);
}

void
eosd_cgroup_sampling(struct eosd_cgroup *g, bool on)
{
	struct eosd_cgroups *cg = g->cg;
	size_t before;

	pthread_mutex_lock(&cg->lock);
	before = cg->sampling;
	if (on && g->running++ == 0)
		cg->sampling++;
	else if (!on && g->running > 0 && --g->running == 0)
		cg->sampling--;
	timer_update(cg, before);
	pthread_mutex_unlock(&cg->lock);
}

int
eosd_cgroup_remove(struct eosd_cgroup *g, struct eos_error *err)
{
	struct eosd_cgroups *cg = g->cg;
	size_t before;

	pthread_mutex_lock(&cg->lock);
	for (size_t i = 0; i < EOSD_CGROUP_HIERARCHIES; i++) {
		if (g->dir[i] && rmdir(g->dir[i]) < 0 && errno != ENOENT) {
			int r = eos_neg_errno();

			pthread_mutex_unlock(&cg->lock);
			return eos_error_set(err, r, "remove cgroup '%s': %s", g->dir[i],
					     strerror(-r));
		}
		if (g->dir[i])
			remove_parents(g->dir[i]);
	}
	for (struct eosd_cgroup **p = &cg->list; *p; p = &(*p)->next)
		if (*p == g) {
			*p = g->next;
			break;
		}
	before = cg->sampling;
	if (g->running > 0)
		cg->sampling--;
	timer_update(cg, before);
	pthread_mutex_unlock(&cg->lock);
	cgroup_free(g);
	return 0;
}

void
eosd_cgroups_set_timer(struct eosd_cgroups *cg, void (*arm)(void *ctx, unsigned interval_ms),
		       void *ctx)
{
	if (!cg)
		return;
	pthread_mutex_lock(&cg->lock);
	cg->arm = arm;
	cg->arm_ctx = ctx;
	if (arm && cg->sampling)
		arm(ctx, EOSD_CGROUP_INTERVAL_MS);
	pthread_mutex_unlock(&cg->lock);
}

void
eosd_cgroups_free(struct eosd_cgroups *cg)
{
	if (!cg)
		return;
	while (cg->list) {
		struct eosd_cgroup *g = cg->list;

		cg->list = g->next;
		remove_dirs(g);
		cgroup_free(g);
	}
	eosd_cgroups_detect_release(cg);
	pthread_mutex_destroy(&cg->lock);
	free(cg);
}

void
eosd_cgroups_count(struct eosd_cgroups *cg, size_t *ret_made, size_t *ret_sampling)
{
	size_t n = 0;

	*ret_made = *ret_sampling = 0;
	if (!cg)
		return;
	pthread_mutex_lock(&cg->lock);
	for (struct eosd_cgroup *g = cg->list; g; g = g->next)
		n++;
	*ret_made = n;
	*ret_sampling = cg->sampling;
	pthread_mutex_unlock(&cg->lock);
}

/* --- samples -----------------------------------------------------------------------------------
 */

static void
read_v1(const struct eosd_cgroup *g, struct eosd_cgroup_sample *s)
{
	char buf[8192];
	uint64_t v;

	if (g->dir[EOSD_CG_CPU] && read_u64(g->dir[EOSD_CG_CPU], "cpuacct.usage", &v) == 0)
		s->cpu_usec = (int64_t)(v / 1000);
	if (g->dir[EOSD_CG_MEMORY] &&
	    read_u64(g->dir[EOSD_CG_MEMORY], "memory.usage_in_bytes", &v) == 0)
		s->memory = (int64_t)v;
	if (g->dir[EOSD_CG_PIDS] && read_u64(g->dir[EOSD_CG_PIDS], "pids.current", &v) == 0)
		s->pids = (int64_t)v;
	if (g->dir[EOSD_CG_IO] &&
	    read_small(g->dir[EOSD_CG_IO], "blkio.throttle.io_service_bytes_recursive", buf,
		       sizeof(buf)) == 0) {
		s->io_read = (int64_t)sum_field(buf, "Read");
		s->io_write = (int64_t)sum_field(buf, "Write");
	}
}

static void
read_v2(const struct eosd_cgroup *g, struct eosd_cgroup_sample *s)
{
	const char *dir = g->dir[0];
	char buf[8192];
	uint64_t v;

	if (read_small(dir, "cpu.stat", buf, sizeof(buf)) == 0)
		s->cpu_usec = (int64_t)sum_field(buf, "usage_usec");
	if (read_u64(dir, "memory.current", &v) == 0)
		s->memory = (int64_t)v;
	if (read_u64(dir, "pids.current", &v) == 0)
		s->pids = (int64_t)v;
	if (read_small(dir, "io.stat", buf, sizeof(buf)) == 0) {
		s->io_read = (int64_t)sum_field(buf, "rbytes");
		s->io_write = (int64_t)sum_field(buf, "wbytes");
	}
}

json_t *
eosd_cgroup_sample_json(const struct eosd_cgroup_sample *s)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "time_ns", json_integer(s->time_ns));
	json_object_set_new(o, "cpu_usec",
			    s->cpu_usec >= 0 ? json_integer(s->cpu_usec) : json_null());
	json_object_set_new(o, "cpu_percent",
			    s->cpu_percent >= 0 ? json_real(s->cpu_percent) : json_null());
	json_object_set_new(o, "memory_bytes",
			    s->memory >= 0 ? json_integer(s->memory) : json_null());
	json_object_set_new(o, "pids", s->pids >= 0 ? json_integer(s->pids) : json_null());
	json_object_set_new(o, "io_read_bytes",
			    s->io_read >= 0 ? json_integer(s->io_read) : json_null());
	json_object_set_new(o, "io_write_bytes",
			    s->io_write >= 0 ? json_integer(s->io_write) : json_null());
	return o;
}

/* Sample g now: its counters, and its cpu share since the last sample (cg->lock held). */
static void
sample_one(struct eosd_cgroups *cg, struct eosd_cgroup *g)
{
	struct eosd_cgroup_sample s = { .time_ns = eos_wall_ns(),
					.cpu_usec = -1,
					.cpu_percent = -1,
					.memory = -1,
					.pids = -1,
					.io_read = -1,
					.io_write = -1 };
	int64_t mono = eos_mono_ns();

	if (cg->mode == EOSD_CGROUP_V1)
		read_v1(g, &s);
	else
		read_v2(g, &s);
	if (g->have_last && s.cpu_usec >= 0 && g->last.cpu_usec >= 0 && mono > g->last_mono)
		s.cpu_percent = 100.0 * (double)(s.cpu_usec - g->last.cpu_usec) /
				((double)(mono - g->last_mono) / 1000.0);
	g->last = s;
	g->last_mono = mono;
	g->have_last = true;
	eosd_obs_sample(cg->obs, g->sandbox, g->session, eosd_cgroup_sample_json(&s));
}

void
eosd_cgroups_sample(struct eosd_cgroups *cg)
{
	if (!cg || atomic_flag_test_and_set(&cg->round))
		return; /* a round queued behind a slow one: skipped, not stacked */
	pthread_mutex_lock(&cg->lock);
	for (struct eosd_cgroup *g = cg->list; g; g = g->next)
		if (g->running > 0)
			sample_one(cg, g);
	pthread_mutex_unlock(&cg->lock);
	atomic_flag_clear(&cg->round);
}

/* Add b's counters into a (a sandbox's sum); unknown stays unknown only when all are. */
static void
sample_add(struct eosd_cgroup_sample *a, const struct eosd_cgroup_sample *b)
{
	int64_t *x[] = { &a->cpu_usec, &a->memory, &a->pids, &a->io_read, &a->io_write };
	const int64_t y[] = { b->cpu_usec, b->memory, b->pids, b->io_read, b->io_write };

	for (size_t i = 0; i < EOS_ARRAY_SIZE(x); i++)
		if (y[i] >= 0)
			*x[i] = (*x[i] < 0 ? 0 : *x[i]) + y[i];
	if (b->cpu_percent >= 0)
		a->cpu_percent = (a->cpu_percent < 0 ? 0 : a->cpu_percent) + b->cpu_percent;
	a->time_ns = EOS_MAX(a->time_ns, b->time_ns);
}

json_t *
eosd_cgroups_latest(struct eosd_cgroups *cg, const char *sandbox, const char *session)
{
	struct eosd_cgroup_sample sum = { .cpu_usec = -1,
					  .cpu_percent = -1,
					  .memory = -1,
					  .pids = -1,
					  .io_read = -1,
					  .io_write = -1 };
	bool any = false;

	if (!cg)
		return NULL;
	pthread_mutex_lock(&cg->lock);
	for (struct eosd_cgroup *g = cg->list; g; g = g->next)
		if (g->have_last && !strcmp(g->sandbox, sandbox) &&
		    (!session || !strcmp(g->session, session))) {
			sample_add(&sum, &g->last);
			any = true;
		}
	pthread_mutex_unlock(&cg->lock);
	return any ? eosd_cgroup_sample_json(&sum) : NULL;
}
