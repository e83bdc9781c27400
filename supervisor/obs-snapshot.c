/* SPDX-License-Identifier: MIT */
/*
 * supervisor/obs-snapshot: the snapshot operation — every sandbox (or one) and the daemon, as
 * they are now (doc/observability.md, "snapshot"). A part that cannot answer marks its node
 * "partial" (some parts answered) or "unavailable" (none did) and says why in "errors"; the
 * operation itself fails only when it cannot list the sandboxes at all.
 *
 * Each session node gets the command engine's view of it (session_extras(): finalize policy,
 * isolation, network, holder pid and state, running commands) and its latest cgroup sample;
 * a session without a holder (eosd's own file operations only) has them null.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/failpoint.h"
#include "common/json.h"

#include "supervisor/cgroup.h"
#include "supervisor/commands.h"
#include "supervisor/obs.h"
#include "supervisor/ops.h"
#include "supervisor/session.h"

/* --- the daemon --------------------------------------------------------------------------------
 */

/* A "Name:  value kB" line of /proc/self/status, in its unit; -1 when missing. */
static int64_t
proc_status(const char *field)
{
	cleanup_fclose FILE *f = fopen("/proc/self/status", "re");
	cleanup_free char *line = NULL;
	size_t cap = 0, n = strlen(field);

	while (f && getline(&line, &cap, f) > 0)
		if (!strncmp(line, field, n) && line[n] == ':')
			return strtoll(line + n + 1, NULL, 10);
	return -1;
}

static json_t *
telemetry_json(struct eosd *d)
{
	struct eosd_obs_counters c;
	struct eos_obs_stats st = { 0 };
	struct eos_error err = { 0 };
	json_t *t;

	if (!d->obs)
		return json_pack("{s:b}", "enabled", 0);
	eosd_obs_counters(d->obs, &c);
	t = json_pack("{s:b, s:I, s:I, s:I, s:I, s:I}", "enabled", 1, "recorded",
		      (json_int_t)c.recorded, "dropped", (json_int_t)c.dropped, "written",
		      (json_int_t)c.written, "failed", (json_int_t)c.failed, "queued",
		      (json_int_t)c.queued);
	if (t && eos_store_obs_stats(d->store, &st, &err) == 0) {
		eos_json_set(t, "stored_records", eos_json_u64(st.records));
		eos_json_set(t, "stored_bytes", eos_json_u64(st.bytes));
		eos_json_set(t, "trimmed", eos_json_u64(st.trimmed));
	} else if (t) {
		eos_json_set(t, "error", json_string(err.msg));
	}
	return t;
}

static json_t *
cgroups_json(struct eosd *d)
{
	enum eosd_cgroup_mode m = eosd_cgroups_mode(d->cgroups);
	const char *why = eosd_cgroups_reason(d->cgroups);
	size_t made, sampling;

	eosd_cgroups_count(d->cgroups, &made, &sampling);
	return json_pack("{s:s, s:s?, s:s?, s:I, s:I}", "mode", eosd_cgroup_mode_name(m), "base",
			 eosd_cgroups_base(d->cgroups), "unavailable", why, "made",
			 (json_int_t)made, "sampling", (json_int_t)sampling);
}

static json_t *
daemon_json(struct eosd *d)
{
	int64_t threads = proc_status("Threads"), rss = proc_status("VmRSS");

	return json_pack(
		"{s:i, s:s, s:f, s:o, s:o, s:I, s:I, s:o, s:o}", "pid", (int)getpid(), "version",
		PACKAGE_VERSION, "uptime_s", (double)(eos_mono_ns() - d->started_ns) / 1e9,
		"threads", threads >= 0 ? json_integer(threads) : json_null(), "rss_bytes",
		rss >= 0 ? json_integer(rss * 1024) : json_null(), "open_views",
		(json_int_t)eosd_sessions_served(d), "requests_served", (json_int_t)d->requests,
		"telemetry", telemetry_json(d), "cgroups", cgroups_json(d));
}

/* --- one sandbox -------------------------------------------------------------------------------
 */

/* A part of a sandbox's node that failed: counted, and named with its message. */
struct node {
	json_t *json;
	json_t *errors;
	unsigned parts, failed;
};

static void
part_done(struct node *n, const char *part, int r, const struct eos_error *err)
{
	n->parts++;
	if (r >= 0)
		return;
	n->failed++;
	eos_json_push(n->errors,
		      json_pack("{s:s, s:s}", "part", part, "error", eos_error_message(err, r)));
}

static int
layers_part(struct eosd *d, const char *id, json_t *node, struct eos_error *err)
{
	cleanup_free struct eos_layer_info *ls = NULL;
	uint64_t bytes = 0;
	size_t n = 0;
	int r = eos_store_layer_list(d->store, id, &ls, &n, err);

	for (size_t i = 0; r == 0 && i < n; i++)
		bytes += ls[i].bytes;
	if (r == 0) {
		eos_json_set(node, "layer_count", eos_json_u64(n));
		eos_json_set(node, "layer_bytes", eos_json_u64(bytes));
	}
	return r;
}

static int
leases_part(struct eosd *d, const char *id, json_t *node, struct eos_error *err)
{
	cleanup_free struct eos_lease_info *ls = NULL;
	json_t *list = json_array();
	size_t n = 0;
	int r = eos_store_lease_list(d->store, id, &ls, &n, err);

	for (size_t i = 0; r == 0 && i < n; i++)
		eos_json_push(list, json_pack("{s:s, s:o}", "name", ls[i].name, "version",
					      eosd_json_version(ls[i].version)));
	if (r == 0)
		return eos_json_set(node, "leases", list);
	json_decref(list);
	return r;
}

static json_t *
or_null(json_t *v)
{
	return v ? json_incref(v) : json_null();
}

/* The command code's fields of a session (null without a holder), its resources. */
static void
session_extras(struct eosd *d, const char *sandbox, json_t *s)
{
	const char *id = json_string_value(json_object_get(s, "workspace_session_id"));
	json_t *res = id ? eosd_cgroups_latest(d->cgroups, sandbox, id) : NULL;
	json_t *ns =
		id && d->commands ? eosd_commands_ns_json(d->commands, sandbox, id, false) : NULL;
	json_t *holder = json_object_get(ns, "holder");

	eos_json_set(s, "finalize_policy", or_null(json_object_get(ns, "finalize")));
	eos_json_set(s, "isolation", or_null(json_object_get(ns, "isolation")));
	eos_json_set(s, "network", or_null(json_object_get(ns, "network")));
	eos_json_set(s, "holder_pid", or_null(json_object_get(holder, "pid")));
	eos_json_set(s, "holder_state", or_null(json_object_get(holder, "state")));
	eos_json_set(s, "commands", or_null(json_object_get(ns, "commands")));
	eos_json_set(s, "resources", res ? res : json_null());
	json_decref(ns);
}

static int
sessions_part(struct eosd *d, const char *id, struct node *n, struct eos_error *err)
{
	json_t *list = NULL, *s;
	size_t i;
	int r = eosd_sessions_describe(d, id, &list, err);

	if (r < 0)
		return r;
	json_array_foreach(list, i, s)
	{
		session_extras(d, id, s);
		if (strcmp(json_string_value(json_object_get(s, "status")) ?: "ok", "ok") != 0)
			part_done(n, "session",
				  eos_error_set(err, -EIO, "session '%s': %s",
						json_string_value(json_object_get(s,
										  "workspace_session_id")),
						json_string_value(json_object_get(s, "error"))
							?: json_string_value(
								   json_object_get(s, "delta_error"))
							?: "not served"),
				  err);
	}
	return eos_json_set(n->json, "sessions", list);
}

/* tests: break one sandbox's part (failpoint "obs.snapshot.<sandbox>") */
static int
failpoint_for(const char *id, struct eos_error *err)
{
	char name[EOS_SANDBOX_ID_MAX + 32];
	int r;

	snprintf(name, sizeof(name), "obs.snapshot.%s", id);
	r = EOS_FAILPOINT(name);
	return r < 0 ? eos_error_set(err, r, "failpoint '%s'", name) : 0;
}

static json_t *
sandbox_node(struct eosd *d, const struct eos_sandbox_info *sb)
{
	struct node n = { .errors = json_array() };
	struct eos_error err = { 0 };
	json_t *res = eosd_cgroups_latest(d->cgroups, sb->id, NULL);

	n.json = json_pack("{s:s, s:s, s:o, s:o, s:I, s:o}", "sandbox_id", sb->id, "source",
			   sb->source, "head", eosd_json_version(sb->head), "base",
			   eosd_json_version(sb->base), "layers", (json_int_t)sb->layers, "created",
			   eosd_json_time(sb->created_ns));
	if (!n.json || !n.errors) {
		json_decref(n.json);
		json_decref(n.errors);
		json_decref(res);
		return NULL;
	}
	part_done(&n, "layers", failpoint_for(sb->id, &err) ?: layers_part(d, sb->id, n.json, &err),
		  &err);
	part_done(&n, "leases", leases_part(d, sb->id, n.json, &err), &err);
	part_done(&n, "sessions", sessions_part(d, sb->id, &n, &err), &err);
	eos_json_set(n.json, "resources", res ? res : json_null());
	eos_json_set(n.json, "status",
		     json_string(n.failed == 0	      ? "ok"
				 : n.failed < n.parts ? "partial"
						      : "unavailable"));
	eos_json_set(n.json, "errors", n.errors);
	return n.json;
}

/* A sandbox the list named but whose record cannot be read now. */
static json_t *
unavailable_node(const char *id, const struct eos_error *err, int r)
{
	return json_pack("{s:s, s:s, s:[{s:s, s:s}]}", "sandbox_id", id, "status", "unavailable",
			 "errors", "part", "sandbox", "error", eos_error_message(err, r));
}

int
eosd_op_snapshot(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	cleanup_free struct eos_sandbox_info *sbs = NULL;
	EOS_CLEANUP(json_decrefp) json_t *list = json_array();
	size_t n = 0;
	int r;

	if (c->sandbox_id) {
		sbs = calloc(1, sizeof(*sbs));
		r = sbs ? eos_store_sandbox_get(d->store, c->sandbox_id, sbs, err) : -ENOMEM;
		n = 1;
	} else {
		r = eos_store_sandbox_list(d->store, &sbs, &n, err);
	}
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && list; i++) {
		struct eos_sandbox_info again;
		struct eos_error e = { 0 };
		int rr = eos_store_sandbox_get(d->store, sbs[i].id, &again, &e);

		if (rr == -ENOENT)
			continue; /* destroyed meanwhile */
		eos_json_push(list, rr < 0 ? unavailable_node(sbs[i].id, &e, rr)
					   : sandbox_node(d, &again));
	}
	if (!list)
		return -ENOMEM;
	*out = json_pack("{s:o, s:o, s:O}", "time", eosd_json_time(eos_wall_ns()), "daemon",
			 daemon_json(d), "sandboxes", list);
	return *out ? 0 : -ENOMEM;
}
