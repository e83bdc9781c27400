/* SPDX-License-Identifier: MIT */
/*
 * supervisor/obs-record: spans and events of what the store timed itself — a publish's phases,
 * a squash's plan and write (supervisor/obs.h) — recorded after the fact from the timestamps in
 * the store's results, since the store knows nothing of tracing.
 */
#include <stdio.h>

#include "common/json.h"

#include "supervisor/obs.h"
#include "supervisor/ops.h"

static void
phase(struct eosd_obs *obs, const struct eosd_trace_ctx *parent, const char *name, int64_t start,
      int64_t end, json_t *attrs)
{
	(void)eosd_span_record(obs, parent, name, start, end, EOS_OBS_COMPLETED, attrs);
}

static enum eos_obs_status
publish_status(const struct eos_publish_result *res, int r)
{
	if (r == -ECANCELED)
		return EOS_OBS_CANCELLED;
	if (r < 0 || res->status == EOS_PUBLISH_REJECTED)
		return EOS_OBS_ERROR;
	return EOS_OBS_COMPLETED;
}

static json_t *
publish_attrs(const struct eos_publish_result *res, int r, const struct eos_error *err)
{
	json_t *a = json_pack(
		"{s:s, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "owner", res->owner, "base",
		eosd_json_version(res->base), "head", eosd_json_version(res->head), "staged",
		(json_int_t)res->staged, "created", (json_int_t)res->created, "modified",
		(json_int_t)res->modified, "deleted", (json_int_t)res->deleted, "merged",
		(json_int_t)res->merged, "conflicts", (json_int_t)res->nconflicts);

	if (!a)
		return NULL;
	if (r < 0)
		eos_json_set(a, "error", json_string(eos_error_message(err, r)));
	else
		eos_json_set(a, "result", json_string(eos_publish_status_name(res->status)));
	if (res->version)
		eos_json_set(a, "version", eosd_json_version(res->version));
	return a;
}

static void
publish_spans(struct eosd_obs *obs, const struct eos_publish_result *res, int r,
	      const struct eos_error *err)
{
	const struct eos_publish_phases *p = &res->phases;
	struct eosd_trace_ctx pub;

	phase(obs, NULL, "workspace_session.capture_changes", p->capture_start, p->capture_end,
	      json_pack("{s:I}", "paths", (json_int_t)res->staged));
	pub = eosd_span_record(obs, NULL, "layerstack.publish", p->prepare_start,
			       p->lock_released ? p->lock_released : p->prepare_end,
			       publish_status(res, r), publish_attrs(res, r, err));
	phase(obs, &pub, "layerstack.publish.prepare", p->prepare_start, p->prepare_end, NULL);
	phase(obs, &pub, "layerstack.publish.lock_wait", p->lock_wait_start, p->lock_acquired,
	      NULL);
	phase(obs, &pub, "layerstack.publish.check", p->lock_acquired, p->check_end,
	      json_pack("{s:I}", "merge_us", (json_int_t)(p->merge_ns / 1000)));
	phase(obs, &pub, "layerstack.publish.merge", p->check_end, p->merge_end,
	      json_pack("{s:I}", "merged", (json_int_t)res->merged));
	phase(obs, &pub, "layerstack.publish.commit", p->merge_end, p->commit_end, NULL);
}

static json_t *
conflict_paths(const struct eos_publish_result *res)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < res->nconflicts && i < 10; i++)
		eos_json_push(a, json_string(res->conflicts[i].path));
	return a;
}

/* The session's lease ("session:<name>") moved from the base to the new head. */
static void
lease_moved(struct eosd_obs *obs, const char *sandbox, const char *session, uint64_t from,
	    uint64_t to)
{
	char lease[EOS_LEASE_NAME_MAX + 1];

	snprintf(lease, sizeof(lease), "session:%s", session);
	eosd_obs_event(obs, "lease.released", sandbox, session,
		       json_pack("{s:s, s:o}", "lease", lease, "version", eosd_json_version(from)));
	eosd_obs_event(obs, "lease.acquired", sandbox, session,
		       json_pack("{s:s, s:o}", "lease", lease, "version", eosd_json_version(to)));
}

static void
publish_events(struct eosd_obs *obs, const char *sandbox, const char *session,
	       const struct eos_publish_result *res)
{
	uint64_t now = res->version ? res->version : res->head;

	if (res->status == EOS_PUBLISH_REJECTED) {
		if (session)
			eosd_obs_event(obs, "workspace_session.publish_rejected", sandbox, session,
				       json_pack("{s:o, s:o, s:I, s:o}", "base",
						 eosd_json_version(res->base), "head",
						 eosd_json_version(res->head), "conflicts",
						 (json_int_t)res->nconflicts, "paths",
						 conflict_paths(res)));
		return;
	}
	if (res->version)
		eosd_obs_event(obs, "layer.published", sandbox, session,
			       json_pack("{s:o, s:s, s:I, s:I, s:I, s:I}", "version",
					 eosd_json_version(res->version), "owner", res->owner,
					 "created", (json_int_t)res->created, "modified",
					 (json_int_t)res->modified, "deleted",
					 (json_int_t)res->deleted, "bytes",
					 (json_int_t)res->bytes));
	if (!session)
		return;
	eosd_obs_event(obs, "workspace_session.published", sandbox, session,
		       json_pack("{s:s, s:o, s:o, s:I}", "result",
				 eos_publish_status_name(res->status), "base",
				 eosd_json_version(res->base), "version", eosd_json_version(now),
				 "merged", (json_int_t)res->merged));
	if (now != res->base)
		lease_moved(obs, sandbox, session, res->base, now);
}

void
eosd_obs_publish(struct eosd_obs *obs, const char *sandbox, const char *session,
		 const struct eos_publish_result *res, int r, const struct eos_error *err)
{
	if (!obs)
		return;
	publish_spans(obs, res, r, err);
	if (r == 0)
		publish_events(obs, sandbox, session, res);
}

void
eosd_obs_squash(struct eosd_obs *obs, const char *sandbox, const struct eos_squash_result *res)
{
	if (!obs)
		return;
	phase(obs, NULL, "layerstack.squash.plan", res->plan_start, res->plan_end,
	      json_pack("{s:I}", "attempts", (json_int_t)res->attempts));
	phase(obs, NULL, "layerstack.squash.write", res->write_start, res->write_end,
	      json_pack("{s:I, s:I}", "entries_removed", (json_int_t)res->entries_removed,
			"chunks_freed", (json_int_t)res->chunks_freed));
	eosd_obs_event(obs, "layerstack.squashed", sandbox, NULL,
		       json_pack("{s:I, s:I, s:I, s:I}", "layers_removed",
				 (json_int_t)res->layers_removed, "entries_removed",
				 (json_int_t)res->entries_removed, "chunks_freed",
				 (json_int_t)res->chunks_freed, "bytes_freed",
				 (json_int_t)res->bytes_freed));
}
