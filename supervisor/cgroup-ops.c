/* SPDX-License-Identifier: MIT */
/*
 * supervisor/cgroup-ops: the cgroup operation — the samples of a sandbox's or a session's
 * cgroups over a window (doc/observability.md, "cgroup"). Where cgroups are unavailable it
 * answers, without failing, "status": "unavailable" and why.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/json.h"

#include "supervisor/cgroup-internal.h"
#include "supervisor/obs.h"
#include "supervisor/ops.h"

/* What the request names: a sandbox, and a session of it or none. */
struct target {
	char sandbox[EOS_SANDBOX_ID_MAX + 1];
	const char *session;
};

/* scope session without sandbox_id: the one sandbox that has a session of that name. */
static int
find_session(struct eosd *d, const char *name, struct target *t, struct eos_error *err)
{
	cleanup_free struct eos_sandbox_info *sbs = NULL;
	size_t n = 0, found = 0;
	int r = eos_store_sandbox_list(d->store, &sbs, &n, err);

	for (size_t i = 0; r == 0 && i < n; i++) {
		struct eos_session_info si;

		if (eos_store_session_get(d->store, sbs[i].id, name, &si, NULL) < 0)
			continue;
		if (found++ == 0)
			snprintf(t->sandbox, sizeof(t->sandbox), "%s", sbs[i].id);
	}
	if (r < 0)
		return r;
	if (found == 0)
		return eos_error_set(err, -ENOENT,
				     "cgroup: no sandbox has a workspace session '%s'", name);
	if (found > 1)
		return eos_error_set(err, -EINVAL,
				     "cgroup: %zu sandboxes have a workspace session '%s': pass "
				     "sandbox_id",
				     found, name);
	return 0;
}

static int
resolve(struct eosd *d, struct eosd_call *c, struct target *t, struct eos_error *err)
{
	const char *scope = json_string_value(json_object_get(c->args, "scope"));
	const char *id = json_string_value(json_object_get(c->args, "id"));
	struct eos_sandbox_info sb;
	struct eos_session_info si;

	if (!strcmp(scope, "sandbox")) {
		if (c->sandbox_id && strcmp(c->sandbox_id, id) != 0)
			return eos_error_set(err, c->caller->sandbox ? -EPERM : -EINVAL,
					     "cgroup: sandbox '%s' is not the request's '%s'", id,
					     c->sandbox_id);
		snprintf(t->sandbox, sizeof(t->sandbox), "%s", id);
		return eos_store_sandbox_get(d->store, id, &sb, err);
	}
	t->session = id;
	if (!c->sandbox_id)
		return find_session(d, id, t, err);
	snprintf(t->sandbox, sizeof(t->sandbox), "%s", c->sandbox_id);
	return eos_store_session_get(d->store, t->sandbox, id, &si, err);
}

struct samples {
	const struct target *t;
	json_t *list;
};

static int
sample_one(void *ctx, const struct eos_obs_record *r)
{
	struct samples *s = ctx;
	json_t *row;

	if (strcmp(r->sandbox, s->t->sandbox) != 0 ||
	    (s->t->session && strcmp(r->session, s->t->session) != 0))
		return 0;
	row = r->attrs && *r->attrs ? json_loads(r->attrs, 0, NULL) : NULL;
	if (!row)
		return 0;
	eos_json_set(row, "time", eosd_json_time_ms(r->start_ns));
	eos_json_set(row, "workspace_session_id", json_string(r->session));
	return eos_json_push(s->list, row);
}

static int
samples(struct eosd *d, const struct target *t, int64_t window_s, json_t **ret,
	struct eos_error *err)
{
	struct samples s = { .t = t, .list = json_array() };
	struct eos_obs_query q = { .types = 1u << EOS_OBS_SAMPLE };
	int r;

	if (!s.list)
		return -ENOMEM;
	q.from.time = (uint64_t)EOS_MAX(0, eos_wall_ns() - window_s * 1000000000LL);
	r = eosd_obs_sync(d->obs, err);
	r = r ?: (d->obs ? eos_store_obs_scan(d->store, &q, sample_one, &s, err) : 0);
	if (r < 0) {
		json_decref(s.list);
		return r;
	}
	*ret = s.list;
	return 0;
}

static bool
sampling_now(struct eosd *d, const struct target *t)
{
	struct eosd_cgroups *cg = d->cgroups;
	bool on = false;

	if (!cg)
		return false;
	pthread_mutex_lock(&cg->lock);
	for (struct eosd_cgroup *g = cg->list; g && !on; g = g->next)
		on = g->running > 0 && !strcmp(g->sandbox, t->sandbox) &&
		     (!t->session || !strcmp(g->session, t->session));
	pthread_mutex_unlock(&cg->lock);
	return on;
}

int
eosd_op_cgroup(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	json_int_t window = json_integer_value(json_object_get(c->args, "window"));
	const char *why = eosd_cgroups_reason(d->cgroups);
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	struct target t = { 0 };
	json_t *list = NULL;
	int r = resolve(d, c, &t, err);

	if (r < 0)
		return r;
	doc = json_pack("{s:s, s:s, s:s?, s:I}", "scope", t.session ? "session" : "sandbox",
			"sandbox_id", t.sandbox, "workspace_session_id", t.session, "window_s",
			(json_int_t)window);
	if (!doc)
		return -ENOMEM;
	if (why) {
		eos_json_set(doc, "status", json_string("unavailable"));
		eos_json_set(doc, "reason", json_string(why));
		eos_json_set(doc, "samples", json_array());
		*out = TAKE_PTR(doc);
		return 0;
	}
	r = samples(d, &t, window, &list, err);
	if (r < 0)
		return r;
	eos_json_set(doc, "status", json_string("available"));
	eos_json_set(doc, "mode",
		     json_string(eosd_cgroup_mode_name(eosd_cgroups_mode(d->cgroups))));
	eos_json_set(doc, "sampling", json_boolean(sampling_now(d, &t)));
	eos_json_set(doc, "interval_ms", json_integer(EOSD_CGROUP_INTERVAL_MS));
	eos_json_set(doc, "latest",
		     eosd_cgroups_latest(d->cgroups, t.sandbox, t.session) ?: json_null());
	eos_json_set(doc, "samples", list);
	*out = TAKE_PTR(doc);
	return 0;
}
