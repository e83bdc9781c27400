/* SPDX-License-Identifier: MIT */
/*
 * supervisor/obs: eosd's telemetry — spans of operations and their phases, domain events and
 * resource samples — kept in the store's obs column family (doc/observability.md).
 *
 * Off the request path. Recording never waits for the store: a record goes into a bounded
 * in-memory queue (the caller pays a clock read, a malloc and a short lock); when the queue is
 * full the record is dropped and counted. The first record into an empty queue schedules one
 * flush job on eosd's worker pool (eosd_obs_attach()), which writes what is queued to the store
 * in batches (eos_store_obs_append(), which applies the retention bounds) until the queue is
 * empty, then ends: while nothing is recorded nothing runs, and no thread is added. Queries
 * call eosd_obs_sync() first, which writes the queue from the caller's thread.
 *
 * Spans. A struct eosd_span lives on its caller's stack from eosd_span_begin() to
 * eosd_span_end(). begin makes it the calling thread's current span — the parent of the next
 * span begun and the span of the next event recorded on that thread — and end makes the one
 * before current again: the spans of a thread nest, and end in the reverse order of their
 * begin, on the thread that began them. The gateway begins each request's root span
 * (eosd_span_begin_root(): a new trace) before its handler runs, so a handler's spans and
 * events land in the request's trace without being passed anything. Work that outlives its
 * request or runs on another thread (a command still running after exec_command has answered)
 * captures the context with eosd_obs_context() and records under it with eosd_span_start() /
 * eosd_span_finish() and eosd_obs_event_in(), from any thread, in any order.
 *
 * Spans that the store timed (a publish's phases) are recorded after the fact with
 * eosd_span_record(), under the current span.
 *
 * Every function accepts obs == NULL (telemetry turned off) and then does nothing; a span begun
 * with a NULL obs still nests correctly. Thread-safe.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#include "store/store.h"

struct eosd_pool;

enum {
	EOSD_OBS_QUEUE_DEFAULT = 8192,			   /* records waiting to be written */
	EOSD_OBS_FLUSH_BATCH = 512,			   /* records per store batch */
	EOSD_OBS_TRACE_HEX = 2 * EOS_OBS_TRACE_ID_LEN + 1, /* a trace id as hex, NUL included */
	EOSD_OBS_SPAN_HEX = 17,				   /* a span id as hex, NUL included */
};

struct eosd_obs_options {
	struct eos_obs_limits limits; /* retention; 0: the store's defaults */
	size_t queue_max;	      /* 0: EOSD_OBS_QUEUE_DEFAULT */
};

/* Where a record belongs: a trace and the span inside it (all zero: none). Plain value. */
struct eosd_trace_ctx {
	uint8_t trace_id[EOS_OBS_TRACE_ID_LEN];
	uint64_t span_id;
};

/* One span in progress. Embedded in the caller's frame or object; fields are private. */
struct eosd_span {
	struct eosd_obs *obs;
	struct eosd_trace_ctx ctx; /* its trace, and its own id */
	uint64_t parent;	   /* 0: the root of its trace */
	const char *name;	   /* borrowed: a string that outlives the span (a literal) */
	char sandbox[EOS_SANDBOX_ID_MAX + 1];
	char session[EOS_SESSION_NAME_MAX + 1];
	int64_t start_wall, start_mono;
	json_t *attrs;		/* owned, or NULL */
	struct eosd_span *prev; /* the thread's current span before this one was begun */
	bool current;		/* begun (not started): it is the thread's current span */
	bool ended;
};

/* What the recorder has done since it was made. */
struct eosd_obs_counters {
	uint64_t recorded; /* records queued */
	uint64_t dropped;  /* records dropped: the queue was full */
	uint64_t written;  /* records written to the store */
	uint64_t failed;   /* records lost to a failed write */
	uint64_t flushes;  /* flush jobs and syncs that wrote something */
	size_t queued;	   /* waiting now */
};

struct eosd_obs;

/*
 * A recorder writing to st (borrowed; it must outlive the recorder). New records get positions
 * after the last one stored, so they sort after those of an earlier eosd. Caller owns *ret.
 */
int eosd_obs_new(struct eos_store *st, const struct eosd_obs_options *o, struct eosd_obs **ret,
		 struct eos_error *err);
/*
 * Run flush jobs on pool from now on (NULL: none; records then wait in the queue). A queue that
 * is not empty gets its job at once. Detach before the pool is freed.
 */
void eosd_obs_attach(struct eosd_obs *obs, struct eosd_pool *pool);
/* Write everything queued now, from the calling thread (serialised with the flush jobs). */
int eosd_obs_sync(struct eosd_obs *obs, struct eos_error *err);
/* Write what is queued (eosd_obs_sync), wake and drop every follower, free. NULL-safe. */
void eosd_obs_free(struct eosd_obs *obs);
void eosd_obs_counters(struct eosd_obs *obs, struct eosd_obs_counters *ret);
/* The store and the retention bounds it writes with (for queries). */
struct eos_store *eosd_obs_store(const struct eosd_obs *obs);

/* --- spans ------------------------------------------------------------------------------------ */

/*
 * Begin span sp named name (a string that outlives it) under the calling thread's current span
 * (a new trace when there is none) and make it current. sandbox may be NULL.
 */
void eosd_span_begin(struct eosd_obs *obs, struct eosd_span *sp, const char *name,
		     const char *sandbox);
/*
 * Begin the root span of a new trace (the gateway: one per request), started at wall / mono ns
 * (0: now), and make it current.
 */
void eosd_span_begin_root(struct eosd_obs *obs, struct eosd_span *sp, const char *name,
			  int64_t wall, int64_t mono);
/*
 * Begin span sp under parent (a captured context: work that belongs to an earlier request's
 * trace, such as an implicit session's publish after its command) and make it current.
 */
void eosd_span_begin_in(struct eosd_obs *obs, struct eosd_span *sp, const char *name,
			const struct eosd_trace_ctx *parent, const char *sandbox);
/* Start span sp under parent (NULL or zero: a new trace) without making it current. */
void eosd_span_start(struct eosd_obs *obs, struct eosd_span *sp, const char *name,
		     const struct eosd_trace_ctx *parent, const char *sandbox);
void eosd_span_set_sandbox(struct eosd_span *sp, const char *sandbox);
void eosd_span_set_session(struct eosd_span *sp, const char *session);
/* Set attribute key to value (the reference is stolen; NULL values are ignored). */
void eosd_span_attr(struct eosd_span *sp, const char *key, json_t *value);
void eosd_span_attr_str(struct eosd_span *sp, const char *key, const char *value);
void eosd_span_attr_int(struct eosd_span *sp, const char *key, int64_t value);
/*
 * End sp with the status r calls for — 0 (or more): completed; -ECANCELED: cancelled;
 * -ETIMEDOUT: timed_out; other negative errnos: error, with "error" set to the message of err
 * (may be NULL) — and record it. A begun span stops being current. Idempotent.
 */
void eosd_span_end(struct eosd_span *sp, int r, const struct eos_error *err);
/* End with an explicit status (commands: cancelled, timed_out). */
void eosd_span_end_status(struct eosd_span *sp, enum eos_obs_status status);
/* The context of sp: its trace and its id (for children started elsewhere, for events). */
struct eosd_trace_ctx eosd_span_context(const struct eosd_span *sp);
/* The calling thread's current context (all zero without a current span). */
struct eosd_trace_ctx eosd_obs_context(void);
/* The current trace id as hex into out[EOSD_OBS_TRACE_HEX]; false (out "") without one. */
bool eosd_obs_trace_hex(char *out);

/*
 * Record a finished span under parent (NULL: the calling thread's current span): name (a
 * string that outlives the record: a literal), CLOCK_MONOTONIC start and end (ns; nothing is
 * recorded when start is 0 or end < start), status, attributes (stolen, may be NULL). Returns
 * its context, so that its phases can be recorded under it (all zero when nothing was).
 */
struct eosd_trace_ctx eosd_span_record(struct eosd_obs *obs, const struct eosd_trace_ctx *parent,
				       const char *name, int64_t start_mono, int64_t end_mono,
				       enum eos_obs_status status, json_t *attrs);

/* --- events and samples ----------------------------------------------------------------------- */

/*
 * Record the domain event name (past tense: "layer.published") in the calling thread's current
 * span, about sandbox and session (either may be NULL), with attributes (stolen, may be NULL).
 */
void eosd_obs_event(struct eosd_obs *obs, const char *name, const char *sandbox,
		    const char *session, json_t *attrs);
/* The same in the captured context ctx (NULL: none). */
void eosd_obs_event_in(struct eosd_obs *obs, const struct eosd_trace_ctx *ctx, const char *name,
		       const char *sandbox, const char *session, json_t *attrs);
/* Record a resource sample (supervisor/cgroup.h): name "cgroup.sample", attributes stolen. */
void eosd_obs_sample(struct eosd_obs *obs, const char *sandbox, const char *session, json_t *attrs);

/* --- what the store timed (supervisor/obs-record.c) ----------------------------------------- */

/*
 * A publish through the gate, under the current span: the spans workspace_session.
 * capture_changes (a session's only) and layerstack.publish with its phases .prepare,
 * .lock_wait, .check, .merge and .commit, from res->phases (r: the publish's return; res may be
 * half filled when r < 0); and its events: layer.published (a new layer), and for a session
 * (NULL: a write at the head) workspace_session.published or .publish_rejected, and
 * lease.released / lease.acquired when its lease moved.
 */
void eosd_obs_publish(struct eosd_obs *obs, const char *sandbox, const char *session,
		      const struct eos_publish_result *res, int r, const struct eos_error *err);
/* A squash: layerstack.squash.plan and .write under the current span, layerstack.squashed. */
void eosd_obs_squash(struct eosd_obs *obs, const char *sandbox,
		     const struct eos_squash_result *res);

/* --- followers (events follow: supervisor/obs-follow.c) ------------------------------------- */

/* Which events a follower gets: all fields may be NULL (any). */
struct eosd_obs_filter {
	const char *name;    /* an event name, or a prefix ending in '.' ("workspace_session.") */
	const char *sandbox; /* events about this sandbox only */
};

struct eosd_obs_follower;

/*
 * Called (from the recording thread) each time an event is recorded while followers exist, and
 * when the recorder is freed: wake whoever pulls. It must not call back into obs.
 */
void eosd_obs_set_notify(struct eosd_obs *obs, void (*fn)(void *ctx), void *ctx);
/*
 * Follow the events recorded from now on that match f (copied). *ret_from is the position of
 * the last record queued before (a query of what came before stops there, so that no event is
 * both in it and followed). Caller owns *ret.
 */
int eosd_obs_follow(struct eosd_obs *obs, const struct eosd_obs_filter *f,
		    struct eosd_obs_follower **ret, struct eos_obs_pos *ret_from);
/*
 * Hand every event recorded since the last pull to emit(ctx, name, json): name "event" with the
 * event's JSON (eosd_obs_event_json()), or "dropped" with {"events": N} when the follower fell
 * more than the ring behind. Returns false once the recorder is gone (the stream should end).
 */
bool eosd_obs_follower_pull(struct eosd_obs_follower *f,
			    void (*emit)(void *ctx, const char *name, const char *json), void *ctx);
/* Stop following and free f. NULL-safe. */
void eosd_obs_unfollow(struct eosd_obs_follower *f);

/* --- JSON of records (supervisor/obs-ops.c) ----------------------------------------------------
 */

/* The trace id as hex into out[EOSD_OBS_TRACE_HEX] ("" for all zero). */
void eosd_obs_trace_id_hex(const uint8_t *id, char *out);
/* Parse 32 hex digits into id; -EINVAL otherwise. */
int eosd_obs_trace_id_parse(const char *hex, uint8_t *id);
/*
 * An event as clients see it: {"time", "time_ns", "name", "sandbox_id", "workspace_session_id",
 * "trace_id", "span_id", "attributes"}. New reference, NULL on OOM.
 */
json_t *eosd_obs_event_json(const struct eos_obs_record *r);
