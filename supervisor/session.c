/* SPDX-License-Identifier: MIT */
/*
 * supervisor/session: the table of the sessions eosd serves (supervisor/session.h): serving
 * them again at start, stopping them at shutdown, finding one for a handler (its admission
 * gate), destroying them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

#include "supervisor/commands.h"
#include "supervisor/obs.h"
#include "supervisor/ops.h"
#include "supervisor/session-internal.h"

static void
session_free(struct eosd *d, struct eosd_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < EOSD_SESSION_MOUNTS; i++)
		eosd_mount_stop(d, &s->mounts[i]);
	eos_view_close(s->view);
	pthread_mutex_destroy(&s->gate);
	free(s->error);
	free(s);
}

static struct eosd_session *
session_new(const char *sandbox, const char *name)
{
	struct eosd_session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	snprintf(s->sandbox, sizeof(s->sandbox), "%s", sandbox);
	snprintf(s->name, sizeof(s->name), "%s", name);
	pthread_mutex_init(&s->gate, NULL);
	s->refs = 1; /* the table's */
	return s;
}

static int
table_add(struct eosd_sessions *t, struct eosd_session *s)
{
	int r = 0;

	pthread_mutex_lock(&t->lock);
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct eosd_session **v = realloc(t->v, cap * sizeof(*v));

		if (v) {
			t->v = v;
			t->cap = cap;
		} else {
			r = -ENOMEM;
		}
	}
	if (r == 0)
		t->v[t->n++] = s;
	pthread_mutex_unlock(&t->lock);
	return r;
}

/* Drop s from the table (and the table's reference); true when it was there. */
static bool
table_remove(struct eosd_sessions *t, struct eosd_session *s)
{
	bool found = false;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n && !found; i++)
		if (t->v[i] == s) {
			t->v[i] = t->v[--t->n];
			s->refs--;
			found = true;
		}
	pthread_mutex_unlock(&t->lock);
	return found;
}

int
eosd_session_get(struct eosd *d, const char *sandbox, const char *name, struct eosd_session **ret,
		 struct eos_error *err)
{
	struct eosd_sessions *t = d->sessions;
	struct eosd_session *s = NULL;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n && !s; i++)
		if (!strcmp(t->v[i]->sandbox, sandbox) && !strcmp(t->v[i]->name, name))
			s = t->v[i];
	if (s)
		s->refs++;
	pthread_mutex_unlock(&t->lock);
	if (s) {
		pthread_mutex_lock(&s->gate);
		if (!s->dead) {
			*ret = s;
			return 0;
		}
		eosd_session_put(d, s);
	}
	return eos_error_set(err, -ENOENT, "workspace session '%s' of sandbox '%s' does not exist",
			     name, sandbox);
}

void
eosd_session_put(struct eosd *d, struct eosd_session *s)
{
	struct eosd_sessions *t = d->sessions;
	bool last;

	if (!s)
		return;
	pthread_mutex_unlock(&s->gate);
	pthread_mutex_lock(&t->lock);
	last = --s->refs == 0;
	pthread_mutex_unlock(&t->lock);
	if (last)
		session_free(d, s);
}

static int
open_view(struct eosd *d, struct eosd_session *s, struct eos_error *err)
{
	const struct eos_view_options o = { .store = d->store,
					    .sandbox = s->sandbox,
					    .session = s->name,
					    .resolve = eosd_resolve,
					    .resolve_ctx = d,
					    .flusher = d->sessions->flusher };
	struct eos_session_info info;
	int r = eos_store_session_get(d->store, s->sandbox, s->name, &info, err);

	if (r < 0)
		return r;
	s->created_ns = info.created_ns;
	return eos_view_open(&o, &s->view, err);
}

int
eosd_session_serve(struct eosd *d, const char *sandbox, const char *name, struct eosd_session **ret,
		   struct eos_error *err)
{
	struct eosd_session *s = session_new(sandbox, name);
	int r;

	if (!s)
		return eos_error_set(err, -ENOMEM, "out of memory");
	r = open_view(d, s, err);
	r = r ?: eosd_session_runtime_mount(d, s, err);
	if (r == 0) {
		eosd_session_restore_mounts(d, s);
		r = table_add(d->sessions, s);
	}
	if (r < 0) {
		session_free(d, s);
		return r == -ENOMEM ? eos_error_set(err, r, "out of memory") : r;
	}
	if (ret)
		*ret = s;
	return 0;
}

static int
destroy_locked(struct eosd *d, struct eosd_session *s, struct eos_error *err)
{
	cleanup_free char *path = NULL;
	int r;

	if (d->commands) /* its processes first: they use the view */
		eosd_commands_ns_stop(d->commands, s->sandbox, s->name);
	for (size_t i = 0; i < EOSD_SESSION_MOUNTS; i++)
		eosd_mount_stop(d, &s->mounts[i]);
	eosd_session_save_mounts(d, s); /* removes the list */
	eos_view_close(TAKE_PTR(s->view));
	r = eos_store_session_remove(d->store, s->sandbox, s->name, err);
	if (r < 0 && r != -ENOENT)
		return r; /* kept in the table: inspect shows it failed */
	s->dead = true;
	table_remove(d->sessions, s);
	if (eosd_session_runtime_path(d, s->sandbox, s->name, &path) == 0)
		rmdir(path);
	return 0;
}

/* Traced as workspace_session.destroy; its lease goes with it. */
int
eosd_session_destroy_locked(struct eosd *d, struct eosd_session *s, struct eos_error *err)
{
	uint64_t base = s->view ? eos_view_version(s->view) : 0;
	char lease[EOS_LEASE_NAME_MAX + 1];
	struct eosd_span sp;
	int r;

	eosd_span_begin(d->obs, &sp, "workspace_session.destroy", s->sandbox);
	eosd_span_set_session(&sp, s->name);
	r = destroy_locked(d, s, err);
	eosd_span_end(&sp, r, err);
	if (r < 0)
		return r;
	snprintf(lease, sizeof(lease), "session:%s", s->name);
	eosd_obs_event(d->obs, "lease.released", s->sandbox, s->name,
		       json_pack("{s:s, s:o}", "lease", lease, "version",
				 base ? eosd_json_version(base) : json_null()));
	eosd_obs_event(d->obs, "workspace_session.destroyed", s->sandbox, s->name, NULL);
	return 0;
}

/* --- start and stop -----------------------------------------------------------------------------
 */

/* A session the daemon could not serve stays in the table, failed, for inspect to report. */
static void
serve_or_note(struct eosd *d, const char *sandbox, const char *name)
{
	struct eos_error err = { 0 };
	struct eosd_session *s;

	if (eosd_session_serve(d, sandbox, name, &s, &err) == 0) {
		/* its holder comes up while eosd starts: a restart does not wait for it */
		if (d->commands && s->mounts[0].path &&
		    eosd_commands_ns_start(d->commands, sandbox, name, s->mounts[0].path, NULL,
					   false, &err) < 0)
			eos_log_error("eosd: session '%s': %s", name, err.msg);
		return;
	}
	eos_log_error("eosd: session '%s' of sandbox '%s' cannot be served: %s", name, sandbox,
		      err.msg);
	s = session_new(sandbox, name);
	if (s && !(s->error = strdup(err.msg[0] ? err.msg : "cannot be served")))
		s->error = NULL;
	if (!s || table_add(d->sessions, s) < 0)
		session_free(d, s);
}

static int
serve_sandbox(struct eosd *d, const char *sandbox, struct eos_error *err)
{
	cleanup_free struct eos_session_info *v = NULL;
	size_t n = 0;
	int r = eos_store_session_list(d->store, sandbox, &v, &n, err);

	for (size_t i = 0; r == 0 && i < n; i++)
		serve_or_note(d, sandbox, v[i].name);
	return r;
}

int
eosd_sessions_start(struct eosd *d, struct eos_error *err)
{
	cleanup_free struct eos_sandbox_info *sb = NULL;
	size_t n = 0;
	int r;

	d->sessions = calloc(1, sizeof(*d->sessions));
	if (!d->sessions)
		return eos_error_set(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&d->sessions->lock, NULL);
	r = eosd_fusepool_new(eosd_fusepool_default_threads(), &d->sessions->fusepool, err);
	r = r ?: eos_view_flusher_new(&d->sessions->flusher, err);
	r = r ?: eos_store_sandbox_list(d->store, &sb, &n, err);
	for (size_t i = 0; r == 0 && i < n; i++)
		r = serve_sandbox(d, sb[i].id, err);
	if (r < 0)
		eosd_sessions_stop(d);
	return r;
}

void
eosd_sessions_stop(struct eosd *d)
{
	struct eosd_sessions *t = d->sessions;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	while (t->n > 0) {
		struct eosd_session *s = t->v[--t->n];

		pthread_mutex_unlock(&t->lock);
		pthread_mutex_lock(&s->gate);
		s->dead = true; /* a handler still waiting for the gate answers not found */
		eosd_session_put(d, s);
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	eosd_fusepool_free(t->fusepool);
	eos_view_flusher_free(t->flusher);
	pthread_mutex_destroy(&t->lock);
	free(t->v);
	free(t);
	d->sessions = NULL;
}

/* --- counts -------------------------------------------------------------------------------------
 */

size_t
eosd_sessions_count(struct eosd *d, const char *sandbox)
{
	struct eosd_sessions *t = d->sessions;
	size_t n = 0;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++)
		n += !sandbox || !strcmp(t->v[i]->sandbox, sandbox);
	pthread_mutex_unlock(&t->lock);
	return n;
}

size_t
eosd_sessions_served(struct eosd *d)
{
	struct eosd_sessions *t = d->sessions;
	size_t n = 0;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++)
		n += t->v[i]->error == NULL;
	pthread_mutex_unlock(&t->lock);
	return n;
}

/* The name of some session of sandbox still in the table, into out; false when none. */
static bool
first_of(struct eosd_sessions *t, const char *sandbox, char *out, size_t size)
{
	bool found = false;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n && !found; i++)
		if (!strcmp(t->v[i]->sandbox, sandbox)) {
			snprintf(out, size, "%s", t->v[i]->name);
			found = true;
		}
	pthread_mutex_unlock(&t->lock);
	return found;
}

int
eosd_sessions_destroy_all(struct eosd *d, const char *sandbox, struct eos_error *err)
{
	char name[EOS_SESSION_NAME_MAX + 1];
	struct eosd_session *s;
	int r = 0;

	while (r == 0 && first_of(d->sessions, sandbox, name, sizeof(name))) {
		if (eosd_session_get(d, sandbox, name, &s, NULL) < 0)
			continue; /* destroyed meanwhile */
		r = eosd_session_destroy_locked(d, s, err);
		if (r < 0 && s->error == NULL) /* keep a failed session from looping */
			s->error = strdup(err && err->msg[0] ? err->msg : "cannot be destroyed");
		if (r < 0) {
			s->dead = true;
			table_remove(d->sessions, s);
		}
		eosd_session_put(d, s);
	}
	return r;
}
