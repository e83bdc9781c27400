/* SPDX-License-Identifier: MIT */
/*
 * supervisor/ops: the handler of every operation of the catalog (supervisor/daemon.h's
 * contract). The management handlers are in sandbox-ops.c and ops.c, the session and file ones
 * in supervisor/session.h.
 */
#pragma once

#include "supervisor/daemon.h"

/* The handler of op, or NULL when eosd serves none (the gateway refuses it). */
eosd_handler_fn eosd_ops_handler(const struct eos_op *op);

/* sandbox-ops.c */
int eosd_op_create_sandbox(struct eosd *d, struct eosd_call *c, json_t **out,
			   struct eos_error *err);
int eosd_op_list_sandboxes(struct eosd *d, struct eosd_call *c, json_t **out,
			   struct eos_error *err);
int eosd_op_inspect_sandbox(struct eosd *d, struct eosd_call *c, json_t **out,
			    struct eos_error *err);
int eosd_op_destroy_sandbox(struct eosd *d, struct eosd_call *c, json_t **out,
			    struct eos_error *err);
int eosd_op_squash_layerstacks(struct eosd *d, struct eosd_call *c, json_t **out,
			       struct eos_error *err);
int eosd_op_export_changes(struct eosd *d, struct eosd_call *c, json_t **out,
			   struct eos_error *err);

/*
 * The error envelope {"error":{"kind","message","details"?,"trace_id"?}} of every failed
 * operation (the gateway's reply, an MCP tool's result); details stolen (NULL: none), trace_id
 * NULL or "": none. NULL when out of memory.
 */
json_t *eosd_error_envelope(int kind, const char *message, json_t *details, const char *trace_id);

/* The version v as JSON: "L000003". */
json_t *eosd_json_version(uint64_t v);
/* The time ns (since the epoch) as JSON: "2026-12-01T22:31:34Z" (session-mount.c). */
json_t *eosd_json_time(int64_t ns);
/* The same with milliseconds: "2026-12-01T22:31:34.123Z" (obs-ops.c). */
json_t *eosd_json_time_ms(int64_t ns);

/* The observability operations (doc/observability.md). obs-snapshot.c */
int eosd_op_snapshot(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err);
/* obs-ops.c */
int eosd_op_trace(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err);
int eosd_op_events(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err);
/* obs-layers.c */
int eosd_op_layerstack(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err);
/* cgroup-ops.c */
int eosd_op_cgroup(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err);
