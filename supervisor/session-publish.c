/* SPDX-License-Identifier: MIT */
/*
 * supervisor/session-publish: publish_workspace_session — a live session published in place
 * (eos_view_publish_live()), its result or its conflicts as the gateway answers them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/errkind.h"
#include "common/json.h"

#include "supervisor/commands.h"
#include "supervisor/obs.h"
#include "supervisor/ops.h"
#include "supervisor/session-internal.h"

/* REJECTED: an error of kind publish_rejected whose details list every conflict. */
static int
rejected(struct eosd_call *c, const struct eos_publish_result *res, struct eos_error *err)
{
	json_t *list = json_array();

	for (size_t i = 0; list && i < res->nconflicts; i++)
		eos_json_push(list, eos_conflict_json(&res->conflicts[i]));
	c->kind = EOS_ERRKIND_PUBLISH_REJECTED;
	c->details =
		list ? json_pack("{s:o,s:o,s:o}", "conflicts", list, "base",
				 eosd_json_version(res->base), "head", eosd_json_version(res->head))
		     : NULL;
	return eos_error_set(err, -EBUSY,
			     "publish rejected: %zu conflicting path%s (the session is kept as it "
			     "was)",
			     res->nconflicts, res->nconflicts == 1 ? "" : "s");
}

static json_t *
result_json(const struct eosd_session *s, const struct eos_publish_result *res)
{
	json_t *doc =
		json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "status",
			  eos_publish_status_name(res->status), "workspace_session_id", s->name,
			  "sandbox_id", s->sandbox, "owner", res->owner, "base",
			  eosd_json_version(res->base), "head", eosd_json_version(res->head),
			  "version", res->version ? eosd_json_version(res->version) : json_null(),
			  "created", eos_json_u64(res->created), "modified",
			  eos_json_u64(res->modified), "deleted", eos_json_u64(res->deleted),
			  "merged", eos_json_u64(res->merged), "bytes", eos_json_u64(res->bytes));
	json_t *skipped = json_array();

	for (size_t i = 0; skipped && i < res->nskipped; i++)
		eos_json_push(skipped, eos_json_bytes(res->skipped[i], strlen(res->skipped[i])));
	if (doc)
		eos_json_set(doc, "skipped", skipped);
	else
		json_decref(skipped);
	return doc;
}

static int
publish_locked(struct eosd *d, struct eosd_call *c, struct eosd_session *s, json_t **out,
	       struct eos_error *err)
{
	struct eos_publish_result res = { 0 };
	char owner[EOS_OWNER_MAX + 1];
	int r;

	if (!s->view)
		return eos_error_set(err, -EIO, "session '%s' is not served: %s", s->name,
				     s->error ? s->error : "no view");
	if (c->request_id)
		snprintf(owner, sizeof(owner), "operation:%s", c->request_id);
	eosd_session_reap(d, s);
	r = eos_view_publish_live(s->view, s->mounts[0].m, c->request_id ? owner : NULL, &res, err);
	eosd_obs_publish(d->obs, s->sandbox, s->name, &res, r, err);
	if (r == 0 && res.status == EOS_PUBLISH_REJECTED)
		r = rejected(c, &res, err);
	else if (r == 0 && !(*out = result_json(s, &res)))
		r = eos_error_set(err, -ENOMEM, "out of memory");
	eos_publish_result_release(&res);
	if (r == 0 && json_is_true(json_object_get(c->args, "destroy_after"))) {
		struct eos_error derr = { 0 };

		r = eosd_session_destroy_locked(d, s, &derr);
		eos_json_set(*out, "destroyed", json_boolean(r == 0));
		if (r < 0) /* published all the same: say so rather than fail */
			eos_json_set(*out, "destroy_error", json_string(derr.msg));
		r = 0;
	}
	return r;
}

/*
 * Traced as workspace_session.finalize: the capture of the delta, layerstack.publish with its
 * phases, and workspace_session.destroy when destroy_after.
 */
int
eosd_op_publish_workspace_session(struct eosd *d, struct eosd_call *c, json_t **out,
				  struct eos_error *err)
{
	const char *name = json_string_value(json_object_get(c->args, "workspace_session_id"));
	bool destroy = json_is_true(json_object_get(c->args, "destroy_after"));
	struct eosd_session *s = NULL;
	struct eosd_span sp;
	int r;

	eosd_span_begin(d->obs, &sp, "workspace_session.finalize", c->sandbox_id);
	eosd_span_set_session(&sp, name);
	eosd_span_attr_str(&sp, "policy", destroy ? "publish_then_destroy" : "publish");
	r = eosd_session_get(d, c->sandbox_id, name, &s, err);
	if (r == 0 && d->commands)
		r = eosd_commands_ns_busy(d->commands, s->sandbox, s->name, err);
	r = r ?: publish_locked(d, c, s, out, err);
	eosd_session_put(d, s);
	eosd_span_end(&sp, r, err);
	return r;
}
