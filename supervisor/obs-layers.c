/* SPDX-License-Identifier: MIT */
/*
 * supervisor/obs-layers: the layerstack operation — a sandbox's retained layers with their
 * owners, paths, bytes (logical, and stored after dedup and compression), leases and the
 * sessions holding them, squashed ranges; and for one session its base, its delta and what it
 * shares with the other sessions (doc/observability.md, "layerstack").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/json.h"

#include "supervisor/ops.h"
#include "supervisor/session.h"

enum {
	PATHS_SHOWN_MAX = 100,	      /* paths named per list: a delta, an overlap */
	SESSION_LEASE_PREFIX_LEN = 8, /* "session:" */
};

/* The session a lease belongs to ("session:<name>"), or NULL. */
static const char *
lease_session(const char *lease)
{
	return strncmp(lease, "session:", SESSION_LEASE_PREFIX_LEN) == 0
		       ? lease + SESSION_LEASE_PREFIX_LEN
		       : NULL;
}

static json_t *
leases_on(const struct eos_lease_info *ls, size_t n, uint64_t v)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (ls[i].version == v)
			eos_json_push(a,
				      json_pack("{s:s, s:s?}", "name", ls[i].name,
						"workspace_session_id", lease_session(ls[i].name)));
	return a;
}

static json_t *
squashed_json(const struct eos_layer_info *l)
{
	if (!l->squashed_from || l->squashed_from >= l->version)
		return json_null();
	return json_pack("{s:o, s:o}", "from", eosd_json_version(l->squashed_from), "to",
			 eosd_json_version(l->version - 1));
}

static json_t *
layer_json(const struct eos_layer_info *l, const struct eos_layer_usage *u, uint64_t head,
	   const struct eos_lease_info *ls, size_t nls)
{
	return json_pack(
		"{s:o, s:o, s:s, s:o, s:I, s:{s:I, s:I, s:I}, s:I, s:I, s:o, s:o, s:o, "
		"s:b, s:o}",
		"version", eosd_json_version(l->version), "parent",
		l->parent ? eosd_json_version(l->parent) : json_null(), "owner", l->owner,
		"created", eosd_json_time_ms(l->created_ns), "created_ns",
		(json_int_t)l->created_ns, "paths", "created", (json_int_t)l->created, "modified",
		(json_int_t)l->modified, "deleted", (json_int_t)l->deleted, "bytes",
		(json_int_t)l->bytes, "files", (json_int_t)(u ? u->files : 0), "stored_bytes",
		u && u->stored_known ? json_integer((json_int_t)u->stored_bytes) : json_null(),
		"shared_bytes",
		u && u->stored_known ? json_integer((json_int_t)u->shared_bytes) : json_null(),
		"squashed", squashed_json(l), "head", l->version == head, "leases",
		leases_on(ls, nls, l->version));
}

static int
layers_part(struct eosd *d, const struct eos_sandbox_info *sb, json_t *doc, struct eos_error *err)
{
	cleanup_free struct eos_layer_info *ls = NULL;
	cleanup_free struct eos_layer_usage *us = NULL;
	cleanup_free struct eos_lease_info *leases = NULL;
	json_t *list = json_array();
	size_t n = 0, nu = 0, nl = 0;
	int r = list ? eos_store_layer_list(d->store, sb->id, &ls, &n, err) : -ENOMEM;

	r = r ?: eos_store_layer_usage(d->store, sb->id, 0, &us, &nu, err);
	r = r ?: eos_store_lease_list(d->store, sb->id, &leases, &nl, err);
	for (size_t i = 0; r == 0 && i < n; i++)
		r = eos_json_push(list,
				  layer_json(&ls[i], i < nu ? &us[i] : NULL, sb->head, leases, nl));
	if (r < 0) {
		json_decref(list);
		return r;
	}
	return eos_json_set(doc, "layers", list);
}

/* --- one session --------------------------------------------------------------------------------
 */

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Paths both deltas change (both sorted), the first PATHS_SHOWN_MAX of them, and their count. */
static json_t *
overlap(const struct eosd_session_delta *a, const struct eosd_session_delta *b, size_t *ret_n)
{
	json_t *list = json_array();
	size_t i = 0, j = 0;

	*ret_n = 0;
	while (list && i < a->n && j < b->n) {
		int c = strcmp(a->paths[i], b->paths[j]);

		if (c == 0 && (*ret_n)++ < PATHS_SHOWN_MAX)
			eos_json_push(list, json_string(a->paths[i]));
		i += c <= 0;
		j += c >= 0;
	}
	return list;
}

static json_t *
paths_json(const struct eosd_session_delta *dl)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < dl->n && i < PATHS_SHOWN_MAX; i++)
		eos_json_push(a, json_string(dl->paths[i]));
	return a;
}

/* Another session: the layers both see (up to the older base), the paths both change. */
static json_t *
share_json(struct eosd *d, const char *sandbox, const char *other,
	   const struct eosd_session_delta *mine)
{
	struct eosd_session_delta theirs;
	struct eos_error err = { 0 };
	json_t *o;
	size_t n;

	if (eosd_session_delta(d, sandbox, other, &theirs, &err) < 0)
		return json_pack("{s:s, s:s}", "workspace_session_id", other, "error", err.msg);
	qsort(theirs.paths, theirs.n, sizeof(*theirs.paths), cmp_str);
	o = json_pack("{s:s, s:o, s:o, s:o}", "workspace_session_id", other, "base_version",
		      eosd_json_version(theirs.base), "shared_up_to",
		      eosd_json_version(EOS_MIN(theirs.base, mine->base)), "overlapping_paths",
		      overlap(mine, &theirs, &n));
	if (o)
		eos_json_set(o, "overlapping", eos_json_u64(n));
	eosd_session_delta_release(&theirs);
	return o;
}

static int
session_part(struct eosd *d, const char *sandbox, const char *name, json_t *doc,
	     struct eos_error *err)
{
	cleanup_free struct eos_session_info *ss = NULL;
	struct eosd_session_delta mine;
	json_t *shares = json_array(), *node;
	size_t n = 0;
	int r = eosd_session_delta(d, sandbox, name, &mine, err);

	if (r < 0) {
		json_decref(shares);
		return r;
	}
	qsort(mine.paths, mine.n, sizeof(*mine.paths), cmp_str);
	r = eos_store_session_list(d->store, sandbox, &ss, &n, err);
	for (size_t i = 0; r == 0 && shares && i < n; i++)
		if (strcmp(ss[i].name, name) != 0)
			eos_json_push(shares, share_json(d, sandbox, ss[i].name, &mine));
	node = json_pack("{s:s, s:o, s:{s:I, s:I, s:o}, s:o}", "workspace_session_id", name,
			 "base_version", eosd_json_version(mine.base), "delta", "paths",
			 (json_int_t)mine.n, "bytes", (json_int_t)mine.bytes, "changed",
			 paths_json(&mine), "shares", shares ? shares : json_null());
	eosd_session_delta_release(&mine);
	if (r < 0) {
		json_decref(node);
		return r;
	}
	return node ? eos_json_set(doc, "session", node) : -ENOMEM;
}

int
eosd_op_layerstack(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const char *ws = json_string_value(json_object_get(c->args, "workspace_session_id"));
	EOS_CLEANUP(json_decrefp) json_t *doc = NULL;
	struct eos_sandbox_info sb;
	int r = eos_store_sandbox_get(d->store, c->sandbox_id, &sb, err);

	if (r < 0)
		return r;
	doc = json_pack("{s:s, s:o, s:o, s:I}", "sandbox_id", sb.id, "head",
			eosd_json_version(sb.head), "base", eosd_json_version(sb.base),
			"layer_count", (json_int_t)sb.layers);
	if (!doc)
		return -ENOMEM;
	r = layers_part(d, &sb, doc, err);
	r = r ?: (ws ? session_part(d, sb.id, ws, doc, err) : 0);
	if (r < 0)
		return r;
	*out = TAKE_PTR(doc);
	return 0;
}
