/* SPDX-License-Identifier: MIT */
/*
 * supervisor/session-ops: the handlers of the workspace session operations (create, list,
 * inspect, destroy, mount, unmount, fork, publish; supervisor/session.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/catalog.h"
#include "common/cleanup.h"
#include "common/errkind.h"
#include "common/json.h"

#include "supervisor/commands.h"
#include "supervisor/obs.h"
#include "supervisor/ops.h"
#include "supervisor/session-internal.h"

static const char *
arg_str(const struct eosd_call *c, const char *name)
{
	return json_string_value(json_object_get(c->args, name));
}

static json_t *
mounts_json(const struct eosd_session *s)
{
	json_t *a = json_array();

	for (size_t i = 1; a && i < EOSD_SESSION_MOUNTS; i++)
		if (s->mounts[i].path)
			eos_json_push(a, json_string(s->mounts[i].path));
	return a;
}

/* What create and fork answer. */
static json_t *
session_json(const struct eosd_session *s)
{
	return json_pack("{s:s,s:s,s:o,s:s?}", "workspace_session_id", s->name, "sandbox_id",
			 s->sandbox, "base_version", eosd_json_version(eos_view_version(s->view)),
			 "mount_path", s->mounts[0].path);
}

static int
parse_version(const struct eosd_call *c, uint64_t *ret, struct eos_error *err)
{
	const char *v = arg_str(c, "version");

	*ret = 0;
	if (v && eos_layer_id_parse(v, ret) < 0)
		return eos_error_set(err, -EINVAL, "argument 'version': '%s' is not a layer id", v);
	return 0;
}

/* The new session's id: the argument, else ws-<hex>. */
static int
new_id(const struct eosd_call *c, const char *arg, char *out, size_t size, struct eos_error *err)
{
	const char *id = arg_str(c, arg);

	if (!id) {
		eosd_random_id("ws-", out, size);
		return 0;
	}
	snprintf(out, size, "%s", id);
	return eos_session_name_check(id, err);
}

/* The new session's events: its lease, and itself (forked_from: the source of a fork). */
static void
created_events(struct eosd *d, const json_t *doc, const char *forked_from)
{
	const char *sb = json_string_value(json_object_get(doc, "sandbox_id"));
	const char *ws = json_string_value(json_object_get(doc, "workspace_session_id"));
	json_t *base = json_object_get(doc, "base_version");
	char lease[EOS_LEASE_NAME_MAX + 1];

	snprintf(lease, sizeof(lease), "session:%s", ws ? ws : "");
	eosd_obs_event(d->obs, "lease.acquired", sb, ws,
		       json_pack("{s:s, s:O}", "lease", lease, "version", base));
	eosd_obs_event(d->obs, "workspace_session.created", sb, ws,
		       json_pack("{s:O, s:O, s:s?}", "base_version", base, "mount_path",
				 json_object_get(doc, "mount_path"), "forked_from", forked_from));
}

/* The view's directory of s, for its holder. */
static const char *
view_path(const struct eosd_session *s)
{
	return s->mounts[0].path;
}

/*
 * Serve the session just created in the store and start its holder (o; NULL: the defaults),
 * traced as view.mount and namespace.launch; on failure remove it again.
 */
static int
serve_new(struct eosd *d, const char *sandbox, const char *name, const struct eosd_ns_opts *o,
	  json_t **out, struct eos_error *err)
{
	struct eosd_session *s = NULL;
	struct eosd_span sp;
	int r;

	eosd_span_begin(d->obs, &sp, "view.mount", sandbox);
	r = eosd_session_serve(d, sandbox, name, NULL, err);
	eosd_span_end(&sp, r, err);
	if (r < 0) {
		eos_store_session_remove(d->store, sandbox, name, NULL);
		return r;
	}
	r = eosd_session_get(d, sandbox, name, &s, err);
	if (r == 0 && d->commands) {
		const struct eosd_ns_opts def = { 0 };

		eosd_span_begin(d->obs, &sp, "namespace.launch", sandbox);
		eosd_span_set_session(&sp, name);
		r = eosd_commands_ns_start(d->commands, sandbox, name, view_path(s), o ? o : &def,
					   true, err);
		eosd_span_end(&sp, r, err);
		if (r < 0) {
			struct eos_error derr = { 0 };

			(void)eosd_session_destroy_locked(d, s, &derr);
		}
	}
	if (r == 0 && !(*out = session_json(s)))
		r = eos_error_set(err, -ENOMEM, "out of memory");
	if (r == 0 && d->commands) {
		json_t *ns = eosd_commands_ns_json(d->commands, sandbox, name, false);

		if (ns)
			json_object_update(*out, ns);
		json_decref(ns);
	}
	eosd_session_put(d, s);
	return r;
}

int
eosd_session_create(struct eosd *d, const char *sandbox, const char *id, uint64_t version,
		    const struct eosd_ns_opts *o, char *ret_name, json_t **out,
		    struct eos_error *err)
{
	char name[EOS_SESSION_NAME_MAX + 1] = "";
	struct eos_sandbox_info sb;
	json_t *doc = NULL;
	struct eosd_span sp;
	int r = 0;

	eosd_span_begin(d->obs, &sp, "workspace_session.create", sandbox);
	if (id) {
		snprintf(name, sizeof(name), "%s", id);
		r = eos_session_name_check(id, err);
	} else {
		eosd_random_id("ws-", name, sizeof(name));
	}
	r = r ?: eos_store_sandbox_get(d->store, sandbox, &sb, err);
	r = r ?: eos_store_session_create(d->store, sandbox, name, version, NULL, err);
	eosd_span_set_session(&sp, name);
	r = r ?: serve_new(d, sandbox, name, o, &doc, err);
	if (r == 0) {
		created_events(d, doc, NULL);
		eosd_span_attr(&sp, "base_version",
			       json_incref(json_object_get(doc, "base_version")));
	}
	eosd_span_end(&sp, r, err);
	if (ret_name)
		snprintf(ret_name, EOS_SESSION_NAME_MAX + 1, "%s", name);
	if (out)
		*out = doc;
	else
		json_decref(doc);
	return r;
}

int
eosd_session_destroy(struct eosd *d, const char *sandbox, const char *name, struct eos_error *err)
{
	struct eosd_session *s = NULL;
	int r = eosd_session_get(d, sandbox, name, &s, err);

	r = r ?: eosd_session_destroy_locked(d, s, err);
	eosd_session_put(d, s);
	return r;
}

/* Traced as workspace_session.create (→ view.mount, namespace.launch): eosd_session_create. */
int
eosd_op_create_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				 struct eos_error *err)
{
	const char *net = arg_str(c, "network"), *iso = arg_str(c, "isolation");
	struct eosd_ns_opts o = {
		.network =
			net && !strcmp(net, "isolated") ? EOSD_HOLDER_ISOLATED : EOSD_HOLDER_SHARED,
		.isolation =
			iso && !strcmp(iso, "none") ? EOSD_HOLDER_NONE : EOSD_HOLDER_NAMESPACES,
	};
	uint64_t v;
	int r = parse_version(c, &v, err);

	return r
		       ?: eosd_session_create(d, c->sandbox_id, arg_str(c, "workspace_session_id"),
					      v, &o, NULL, out, err);
}

/*
 * An implicit session's last command has ended: publish it, then destroy it (a rejection
 * discards its changes). The publish's outcome, for the command's final result.
 */
json_t *
eosd_session_finalize_implicit(struct eosd *d, const char *sandbox, const char *name)
{
	json_t *args = json_pack("{s:s,s:b}", "workspace_session_id", name, "destroy_after", 1);
	struct eosd_call c = { .op = eos_catalog_find("publish_workspace_session"),
			       .sandbox_id = sandbox,
			       .args = args,
			       .kind = -1 };
	struct eos_error err = { 0 };
	json_t *out = NULL, *res;
	int r = args ? eosd_op_publish_workspace_session(d, &c, &out, &err) : -ENOMEM;

	if (r == 0) {
		res = out;
	} else {
		res = json_pack("{s:s,s:s}", "status",
				c.kind == EOS_ERRKIND_PUBLISH_REJECTED ? "publish_rejected"
								       : "error",
				"message", eos_error_message(&err, r));
		if (res && c.details)
			eos_json_set(res, "conflicts",
				     json_incref(json_object_get(c.details, "conflicts")));
		(void)eosd_session_destroy(d, sandbox, name, NULL);
	}
	json_decref(c.details);
	json_decref(args);
	return res;
}

/* --- list and inspect --------------------------------------------------------------------------
 */

static const char *
state_of(const struct eosd_session *s)
{
	if (s->error || !s->view)
		return "failed";
	return s->mounts[0].path ? "live" : "unmounted";
}

static json_t *
row_of(struct eosd *d, struct eosd_session *s)
{
	json_t *row;

	eosd_session_reap(d, s);
	row = json_pack("{s:s,s:s,s:s,s:s?,s:o,s:o}", "workspace_session_id", s->name, "sandbox_id",
			s->sandbox, "state", state_of(s), "mount_path", s->mounts[0].path, "mounts",
			mounts_json(s), "created", eosd_json_time(s->created_ns));
	if (row && s->view)
		eos_json_set(row, "base_version", eosd_json_version(eos_view_version(s->view)));
	if (row && s->error)
		eos_json_set(row, "error", json_string(s->error));
	return row;
}

/* The names of the sandbox's sessions, sorted. */
static int
names_of(struct eosd *d, const char *sandbox, struct eos_session_info **ret, size_t *ret_n,
	 struct eos_error *err)
{
	int r = eos_store_sandbox_get(d->store, sandbox, &(struct eos_sandbox_info){ 0 }, err);

	return r ?: eos_store_session_list(d->store, sandbox, ret, ret_n, err);
}

int
eosd_op_list_workspace_sessions(struct eosd *d, struct eosd_call *c, json_t **out,
				struct eos_error *err)
{
	cleanup_free struct eos_session_info *v = NULL;
	EOS_CLEANUP(json_decrefp) json_t *rows = json_array();
	size_t n = 0;
	int r = rows ? names_of(d, c->sandbox_id, &v, &n, err) : -ENOMEM;

	for (size_t i = 0; r == 0 && i < n; i++) {
		struct eosd_session *s;

		if (eosd_session_get(d, c->sandbox_id, v[i].name, &s, NULL) < 0)
			continue; /* destroyed meanwhile */
		r = eos_json_push(rows, row_of(d, s));
		eosd_session_put(d, s);
	}
	if (r == -ENOMEM || (r == 0 && !(*out = json_pack("{s:s,s:O}", "sandbox_id", c->sandbox_id,
							  "sessions", rows))))
		return eos_error_set(err, -ENOMEM, "out of memory");
	return r;
}

struct delta_count {
	uint64_t paths, bytes;
};

static int
count_change(void *ctx, const struct eos_delta_entry *e)
{
	struct delta_count *n = ctx;

	if (e->change == EOS_DELTA_DIR)
		return 0;
	n->paths++;
	if (e->change == EOS_DELTA_PUT && S_ISREG(e->mode) && e->data_path)
		n->bytes += e->size;
	return 0;
}

/* inspect's holder, commands and processes; state holder_exited when the holder died. */
static void
commands_part(struct eosd *d, const struct eosd_session *s, json_t *out)
{
	json_t *ns = eosd_commands_ns_json(d->commands, s->sandbox, s->name, true);
	const char *st = json_string_value(json_object_get(json_object_get(ns, "holder"), "state"));

	if (!ns)
		return;
	json_object_update(out, ns);
	if (st && !strcmp(st, "holder_exited"))
		eos_json_set(out, "state", json_string("holder_exited"));
	json_decref(ns);
}

int
eosd_op_inspect_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				  struct eos_error *err)
{
	struct delta_count n = { 0 };
	struct eosd_session *s = NULL;
	int r = eosd_session_get(d, c->sandbox_id, arg_str(c, "workspace_session_id"), &s, err);

	if (r == 0 && s->view)
		r = eos_view_delta(s->view, count_change, &n, err);
	if (r == 0 && !(*out = row_of(d, s)))
		r = eos_error_set(err, -ENOMEM, "out of memory");
	if (r == 0 && s->view)
		eos_json_set(*out, "delta",
			     json_pack("{s:o,s:o}", "paths", eos_json_u64(n.paths), "bytes",
				       eos_json_u64(n.bytes)));
	if (r == 0 && d->commands)
		commands_part(d, s, *out);
	eosd_session_put(d, s);
	return r;
}

static int
collect_change(void *ctx, const struct eos_delta_entry *e)
{
	struct eosd_session_delta *dl = ctx;
	char **v;

	if (e->change == EOS_DELTA_DIR)
		return 0;
	if (e->change == EOS_DELTA_PUT && S_ISREG(e->mode) && e->data_path)
		dl->bytes += e->size;
	if (dl->n == dl->cap) {
		size_t cap = dl->cap ? 2 * dl->cap : 16;

		if (!(v = reallocarray(dl->paths, cap, sizeof(*v))))
			return -ENOMEM;
		dl->paths = v;
		dl->cap = cap;
	}
	if (!(dl->paths[dl->n] = strdup(e->path)))
		return -ENOMEM;
	dl->n++;
	return 0;
}

void
eosd_session_delta_release(struct eosd_session_delta *dl)
{
	for (size_t i = 0; i < dl->n; i++)
		free(dl->paths[i]);
	free(dl->paths);
	*dl = (struct eosd_session_delta){ 0 };
}

int
eosd_session_delta(struct eosd *d, const char *sandbox, const char *name,
		   struct eosd_session_delta *ret, struct eos_error *err)
{
	struct eosd_session *s = NULL;
	int r = eosd_session_get(d, sandbox, name, &s, err);

	*ret = (struct eosd_session_delta){ 0 };
	if (r == 0 && !s->view)
		r = eos_error_set(err, -EIO, "session '%s' is not served: %s", s->name,
				  s->error ? s->error : "no view");
	if (r == 0) {
		ret->base = eos_view_version(s->view);
		r = eos_view_delta(s->view, collect_change, ret, err);
	}
	eosd_session_put(d, s);
	if (r < 0)
		eosd_session_delta_release(ret);
	return r == -ENOMEM ? eos_error_set(err, r, "out of memory") : r;
}

/* One session as snapshot shows it: its row, its delta, or why not. */
static json_t *
describe(struct eosd *d, struct eosd_session *s)
{
	struct delta_count n = { 0 };
	struct eos_error err = { 0 };
	json_t *row = row_of(d, s);
	int r = s->view ? eos_view_delta(s->view, count_change, &n, &err) : 0;

	if (!row)
		return NULL;
	eos_json_set(row, "status",
		     json_string(s->error || !s->view ? "unavailable"
				 : r < 0	      ? "partial"
						      : "ok"));
	if (r < 0)
		eos_json_set(row, "delta_error", json_string(err.msg));
	else if (s->view)
		eos_json_set(row, "delta",
			     json_pack("{s:o,s:o}", "paths", eos_json_u64(n.paths), "bytes",
				       eos_json_u64(n.bytes)));
	return row;
}

int
eosd_sessions_describe(struct eosd *d, const char *sandbox, json_t **ret, struct eos_error *err)
{
	cleanup_free struct eos_session_info *v = NULL;
	EOS_CLEANUP(json_decrefp) json_t *rows = json_array();
	size_t n = 0;
	int r = rows ? eos_store_session_list(d->store, sandbox, &v, &n, err) : -ENOMEM;

	for (size_t i = 0; r == 0 && i < n; i++) {
		struct eosd_session *s;

		if (eosd_session_get(d, sandbox, v[i].name, &s, NULL) < 0)
			continue; /* destroyed meanwhile, or never served */
		r = eos_json_push(rows, describe(d, s));
		eosd_session_put(d, s);
	}
	if (r == -ENOMEM)
		return eos_error_set(err, r, "out of memory");
	if (r == 0)
		*ret = TAKE_PTR(rows);
	return r;
}

/* --- destroy, mount, unmount -------------------------------------------------------------------
 */

int
eosd_op_destroy_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				  struct eos_error *err)
{
	struct eosd_session *s = NULL;
	int r = eosd_session_get(d, c->sandbox_id, arg_str(c, "workspace_session_id"), &s, err);

	if (r == 0 && d->commands)
		r = eosd_commands_ns_busy(d->commands, s->sandbox, s->name, err);
	r = r ?: eosd_session_destroy_locked(d, s, err);
	if (r == 0 && !(*out = json_pack("{s:s,s:s,s:b}", "workspace_session_id", s->name,
					 "sandbox_id", s->sandbox, "destroyed", 1)))
		r = eos_error_set(err, -ENOMEM, "out of memory");
	eosd_session_put(d, s);
	return r;
}

static int
free_slot(struct eosd_session *s, const char *path, size_t *ret, struct eos_error *err)
{
	*ret = 0;
	for (size_t i = 0; i < EOSD_SESSION_MOUNTS; i++) {
		if (s->mounts[i].path && !strcmp(s->mounts[i].path, path))
			return eos_error_set(err, -EEXIST,
					     "argument 'path': '%s' already shows "
					     "session '%s'",
					     path, s->name);
		if (!s->mounts[i].path && i > 0 && *ret == 0)
			*ret = i;
	}
	if (*ret == 0)
		return eos_error_set(err, -EBUSY,
				     "session '%s' is mounted at %d directories already", s->name,
				     EOSD_SESSION_MOUNTS - 1);
	return 0;
}

/* The directory path names, resolved (so that one directory is one mount), outside eosd's
 * runtime directory (the views it serves itself). Caller owns *ret. */
static int
resolve_mountpoint(struct eosd *d, const char *path, char **ret, struct eos_error *err)
{
	cleanup_free char *real = realpath(path, NULL), *run = NULL;
	size_t n;

	if (!real)
		return eos_error_set(err, eos_neg_errno(), "argument 'path': '%s': %m", path);
	run = realpath(d->runtime_dir, NULL);
	n = run ? strlen(run) : 0;
	if (run && !strncmp(real, run, n) && (real[n] == '/' || real[n] == '\0'))
		return eos_error_set(
			err, -EINVAL,
			"argument 'path': '%s' is inside eosd's runtime directory '%s'", path, run);
	*ret = TAKE_PTR(real);
	return 0;
}

static int
mount_at(struct eosd *d, struct eosd_session *s, const char *path, struct eos_error *err)
{
	cleanup_free char *real = NULL;
	size_t slot;
	int r = eosd_session_runtime_mount(d, s, err);

	eosd_session_reap(d, s);
	r = r ?: resolve_mountpoint(d, path, &real, err);
	r = r ?: free_slot(s, real, &slot, err);
	if (r == 0 && (r = eos_view_mountpoint_check(real, err)) < 0)
		return eos_error_prefix(err, r, "argument 'path'");
	r = r ?: eosd_mount_start(d, s, slot, real, err);
	if (r == 0)
		eosd_session_save_mounts(d, s);
	return r;
}

int
eosd_op_mount_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				struct eos_error *err)
{
	struct eosd_session *s = NULL;
	const char *path = arg_str(c, "path");
	int r = eosd_session_get(d, c->sandbox_id, arg_str(c, "workspace_session_id"), &s, err);

	r = r ?: mount_at(d, s, path, err);
	if (r == 0 &&
	    !(*out = json_pack("{s:s,s:s,s:s,s:o}", "workspace_session_id", s->name, "sandbox_id",
			       s->sandbox, "path", path, "mounts", mounts_json(s))))
		r = eos_error_set(err, -ENOMEM, "out of memory");
	eosd_session_put(d, s);
	return r;
}

int
eosd_op_unmount_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				  struct eos_error *err)
{
	EOS_CLEANUP(json_decrefp) json_t *gone = json_array();
	struct eosd_session *s = NULL;
	int r = eosd_session_get(d, c->sandbox_id, arg_str(c, "workspace_session_id"), &s, err);

	for (size_t i = 1; r == 0 && gone && i < EOSD_SESSION_MOUNTS; i++)
		if (s->mounts[i].path) {
			eos_json_push(gone, json_string(s->mounts[i].path));
			eosd_mount_stop(d, &s->mounts[i]);
		}
	if (r == 0)
		eosd_session_save_mounts(d, s);
	if (r == 0 && !(gone && (*out = json_pack("{s:s,s:s,s:O}", "workspace_session_id", s->name,
						  "sandbox_id", s->sandbox, "unmounted", gone))))
		r = eos_error_set(err, -ENOMEM, "out of memory");
	eosd_session_put(d, s);
	return r;
}

/* --- fork and publish --------------------------------------------------------------------------
 */

int
eosd_op_fork_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
			       struct eos_error *err)
{
	char name[EOS_SESSION_NAME_MAX + 1];
	struct eosd_session *s = NULL;
	struct eosd_ns_opts o = { 0 };
	int r = new_id(c, "new_workspace_session_id", name, sizeof(name), err);

	r = r ?: eosd_session_get(d, c->sandbox_id, arg_str(c, "workspace_session_id"), &s, err);
	if (r == 0 && !s->view)
		r = eos_error_set(err, -EIO, "session '%s' is not served: %s", s->name,
				  s->error ? s->error : "no view");
	r = r ?: eos_view_fork(s->view, name, err);
	if (r == 0 && d->commands) /* the fork runs as its source does: isolation and network */
		eosd_commands_ns_opts(d->commands, c->sandbox_id, s->name, &o);
	o.implicit = false;
	eosd_session_put(d, s);
	r = r ?: serve_new(d, c->sandbox_id, name, &o, out, err);
	if (r == 0) {
		eos_json_set(*out, "forked_from", json_string(arg_str(c, "workspace_session_id")));
		created_events(d, *out, arg_str(c, "workspace_session_id"));
	}
	return r;
}
