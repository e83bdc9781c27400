/* SPDX-License-Identifier: MIT */
/*
 * supervisor/session-mount: the mounts of a session's view (served by the FUSE workers),
 * stale mounts a previous daemon left, the list of extra mounts kept for a restart, the
 * resolver that attributes eosd's own writes, and small JSON helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/path.h"

#include "supervisor/commands.h"
#include "supervisor/obs.h"
#include "supervisor/ops.h"
#include "supervisor/session-internal.h"

static int
mount_start(struct eosd *d, struct eosd_session *s, size_t i, const char *path,
	    struct eos_error *err)
{
	const struct eos_view_mount_options mo = { .owners = EOS_VIEW_OWNERS_AUTO,
						   .host_served = true };
	struct eosd_mount *m = &s->mounts[i];
	int r;

	if (m->path)
		return eos_error_set(err, -EBUSY, "session '%s': mount slot in use", s->name);
	m->path = strdup(path);
	if (!m->path)
		return eos_error_set(err, -ENOMEM, "out of memory");
	r = eos_view_mount(s->view, path, &mo, &m->m, err);
	if (r == 0) {
		r = eosd_fusepool_add(d->sessions->fusepool, m->m, &m->pool_id);
		if (r < 0)
			eos_error_set(err, r, "mount '%s': cannot serve it: %s", path,
				      strerror(-r));
	}
	if (r < 0) {
		eos_view_mount_free(m->m);
		free(m->path);
		*m = (struct eosd_mount){ 0 };
	}
	return r;
}

/* Traced as view.mount. */
int
eosd_mount_start(struct eosd *d, struct eosd_session *s, size_t i, const char *path,
		 struct eos_error *err)
{
	struct eosd_span sp;
	int r;

	eosd_span_begin(d->obs, &sp, "view.mount", s->sandbox);
	eosd_span_set_session(&sp, s->name);
	eosd_span_attr_str(&sp, "path", path);
	r = mount_start(d, s, i, path, err);
	eosd_span_end(&sp, r, err);
	return r;
}

void
eosd_mount_stop(struct eosd *d, struct eosd_mount *m)
{
	if (!m->path)
		return;
	if (m->pool_id)
		eosd_fusepool_remove(d->sessions->fusepool, m->pool_id);
	eos_view_mount_free(m->m);
	free(m->path);
	*m = (struct eosd_mount){ 0 };
}

void
eosd_session_reap(struct eosd *d, struct eosd_session *s)
{
	bool extra = false;

	for (size_t i = 0; i < EOSD_SESSION_MOUNTS; i++)
		if (s->mounts[i].path &&
		    eosd_fusepool_ended(d->sessions->fusepool, s->mounts[i].pool_id)) {
			eosd_mount_stop(d, &s->mounts[i]);
			extra |= i > 0;
		}
	if (extra) /* fusermount3 -u of a mount_workspace_session directory: not restored */
		eosd_session_save_mounts(d, s);
}

int
eosd_session_runtime_path(struct eosd *d, const char *sandbox, const char *name, char **ret)
{
	return asprintf(ret, "%s/sessions/%s/%s", d->runtime_dir, sandbox, name) < 0 ? -ENOMEM : 0;
}

int
eosd_session_runtime_mount(struct eosd *d, struct eosd_session *s, struct eos_error *err)
{
	cleanup_free char *path = NULL;
	int r;

	eosd_session_reap(d, s);
	if (s->mounts[0].path)
		return 0;
	if (!s->view)
		return eos_error_set(err, -EIO, "session '%s' is not served: %s", s->name,
				     s->error ? s->error : "no view");
	if (eosd_session_runtime_path(d, s->sandbox, s->name, &path) < 0)
		return eos_error_set(err, -ENOMEM, "out of memory");
	eosd_mount_detach_stale(path);
	r = eos_mkdir_parents(path, 0700, true);
	if (r < 0)
		return eos_error_set(err, r, "mount point '%s': %s", path, strerror(-r));
	return eosd_mount_start(d, s, 0, path, err);
}

/* --- stale mounts ------------------------------------------------------------------------------
 */

static bool
is_mounted(const char *path)
{
	cleanup_free char *parent = strdup(path);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	struct stat a, b;

	if (stat(path, &a) < 0)
		return errno == ENOTCONN || errno == ECONNABORTED;
	if (!slash)
		return false;
	*slash = '\0';
	return stat(parent[0] ? parent : "/", &b) == 0 && a.st_dev != b.st_dev;
}

static void
run_fusermount(const char *path)
{
	char prog[] = "fusermount3", u[] = "-u", z[] = "-z", q[] = "-q";
	char *argv[] = { prog, u, z, q, (char *)path, NULL };
	int status;
	pid_t pid;

	if (posix_spawnp(&pid, "fusermount3", NULL, NULL, argv, environ) != 0)
		return;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

void
eosd_mount_detach_stale(const char *path)
{
	if (!is_mounted(path))
		return;
	eos_log_info("eosd: '%s' is a mount left by a previous daemon: detaching it", path);
	if (geteuid() != 0 || umount2(path, MNT_DETACH) < 0)
		run_fusermount(path);
}

/* --- the extra mounts, kept for a restart ------------------------------------------------------
 */

static int
mounts_file(struct eosd *d, const struct eosd_session *s, char **ret)
{
	return asprintf(ret, "%s/sessions/%s/%s.mounts", d->runtime_dir, s->sandbox, s->name) < 0
		       ? -ENOMEM
		       : 0;
}

void
eosd_session_save_mounts(struct eosd *d, struct eosd_session *s)
{
	cleanup_free char *file = NULL, *tmp = NULL;
	cleanup_fclose FILE *f = NULL;
	bool any = false;

	if (mounts_file(d, s, &file) < 0 || asprintf(&tmp, "%s.tmp", file) < 0)
		return;
	for (size_t i = 1; i < EOSD_SESSION_MOUNTS; i++)
		any |= s->mounts[i].path != NULL;
	if (!any) {
		unlink(file);
		return;
	}
	f = fopen(tmp, "we");
	for (size_t i = 1; f && i < EOSD_SESSION_MOUNTS; i++)
		if (s->mounts[i].path)
			fprintf(f, "%s\n", s->mounts[i].path);
	if (!f || fclose(TAKE_PTR(f)) != 0 || rename(tmp, file) < 0)
		eos_log_warn("eosd: cannot record the mounts of session '%s' in '%s', ignoring",
			     s->name, file);
}

/* At start: mount the view again at every directory a previous daemon served it at. */
void
eosd_session_restore_mounts(struct eosd *d, struct eosd_session *s)
{
	cleanup_free char *file = NULL, *line = NULL;
	cleanup_fclose FILE *f = NULL;
	size_t cap = 0, slot = 1;
	ssize_t n;

	if (mounts_file(d, s, &file) < 0 || !(f = fopen(file, "re")))
		return;
	while ((n = getline(&line, &cap, f)) > 0 && slot < EOSD_SESSION_MOUNTS) {
		struct eos_error err = { 0 };

		if (line[n - 1] == '\n')
			line[n - 1] = '\0';
		if (line[0] != '/')
			continue;
		eosd_mount_detach_stale(line);
		if (eosd_mount_start(d, s, slot, line, &err) < 0)
			eos_log_warn("eosd: session '%s': %s, not mounted there again", s->name,
				     err.msg);
		else
			slot++;
	}
	eosd_session_save_mounts(d, s);
}

/* --- the resolver -------------------------------------------------------------------------------
 */

/*
 * The view's resolver: a process names its operation with EOS_OPERATION in its environment, as
 * under eosfs. eosd's own file operations never reach it: they name their owner to the view's
 * path API, and never go through a mount.
 */
int
eosd_resolve(void *ctx, pid_t pid, char *out, size_t size)
{
	struct eosd *d = ctx;

	if (d->commands && eosd_commands_resolve(d->commands, pid, out, size) == 0)
		return 0; /* a process of a command, whatever its environment says */
	return eos_view_resolve_environ(NULL, pid, out, size);
}

/* --- helpers ------------------------------------------------------------------------------------
 */

json_t *
eosd_json_time(int64_t ns)
{
	time_t s = (time_t)(ns / 1000000000);
	char buf[64];
	struct tm tm;

	if (!gmtime_r(&s, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return json_string("invalid");
	return json_string(buf);
}

void
eosd_random_id(const char *prefix, char *out, size_t size)
{
	uint8_t b[6] = { 0 };

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		memcpy(b, &ts.tv_nsec, sizeof(b) < sizeof(ts.tv_nsec) ? sizeof(b) : 4);
	}
	snprintf(out, size, "%s%02x%02x%02x%02x%02x%02x", prefix, b[0], b[1], b[2], b[3], b[4],
		 b[5]);
}
