/* SPDX-License-Identifier: MIT */
/*
 * supervisor/obs-ops: the trace and events operations (doc/observability.md), and the JSON of
 * records they answer with. Both write what is queued first (eosd_obs_sync), then read the store:
 * an operation's trace can be asked for as soon as its reply has come.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/endian.h"
#include "common/json.h"

#include "supervisor/obs.h"
#include "supervisor/ops.h"
#include "supervisor/stream.h"

enum {
	TRACE_SCAN_MAX = 200000, /* records read for one trace (all of the default retention) */
	EVENTS_SCAN_MAX = 200000,
};

/* --- JSON of records ---------------------------------------------------------------------------
 */

void
eosd_obs_trace_id_hex(const uint8_t *id, char *out)
{
	bool zero = true;

	for (size_t i = 0; i < EOS_OBS_TRACE_ID_LEN; i++) {
		zero = zero && id[i] == 0;
		snprintf(out + 2 * i, 3, "%02x", id[i]);
	}
	if (zero)
		out[0] = '\0';
}

int
eosd_obs_trace_id_parse(const char *hex, uint8_t *id)
{
	if (!hex || strlen(hex) != 2 * EOS_OBS_TRACE_ID_LEN ||
	    strspn(hex, "0123456789abcdefABCDEF") != 2 * EOS_OBS_TRACE_ID_LEN)
		return -EINVAL;
	for (size_t i = 0; i < EOS_OBS_TRACE_ID_LEN; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		id[i] = (uint8_t)v;
	}
	return 0;
}

static json_t *
span_id_json(uint64_t id)
{
	char hex[EOSD_OBS_SPAN_HEX];

	if (!id)
		return json_null();
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)id);
	return json_string(hex);
}

json_t *
eosd_json_time_ms(int64_t ns)
{
	time_t s = (time_t)(ns / 1000000000);
	char buf[64], out[80];
	struct tm tm;

	if (ns < 0 || !gmtime_r(&s, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm))
		return json_null();
	snprintf(out, sizeof(out), "%s.%03dZ", buf, (int)(ns / 1000000 % 1000));
	return json_string(out);
}

static json_t *
attrs_json(const char *text)
{
	json_t *a = text && *text ? json_loads(text, 0, NULL) : NULL;

	return a ? a : json_object();
}

static json_t *
str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

json_t *
eosd_obs_event_json(const struct eos_obs_record *r)
{
	char trace[EOSD_OBS_TRACE_HEX];

	eosd_obs_trace_id_hex(r->trace_id, trace);
	return json_pack("{s:o, s:I, s:s, s:o, s:o, s:o, s:o, s:o}", "time",
			 eosd_json_time_ms(r->start_ns), "time_ns", (json_int_t)r->start_ns, "name",
			 r->name, "sandbox_id", str_or_null(r->sandbox), "workspace_session_id",
			 str_or_null(r->session), "trace_id", str_or_null(trace), "span_id",
			 span_id_json(r->span_id), "attributes", attrs_json(r->attrs));
}

static bool
attrs_say(const char *attrs, const char *key, const char *value)
{
	EOS_CLEANUP(json_decrefp) json_t *a = attrs && *attrs ? json_loads(attrs, 0, NULL) : NULL;
	const char *v = json_string_value(json_object_get(a, key));

	return v && strcmp(v, value) == 0;
}

/* --- trace ------------------------------------------------------------------------------------ */

struct span_node {
	uint64_t id, parent;
	int64_t start, duration;
	json_t *json; /* owned until attached */
};

struct trace_scan {
	uint8_t id[EOS_OBS_TRACE_ID_LEN];
	struct span_node *spans;
	size_t nspans, cap;
	json_t *events; /* [{span_id, json}] as pairs: a list of [id, event] */
	size_t scanned;
	bool truncated;
	const struct span_node *root;
};

static void
trace_scan_release(struct trace_scan *t)
{
	for (size_t i = 0; i < t->nspans; i++)
		json_decref(t->spans[i].json);
	free(t->spans);
	json_decref(t->events);
}

static json_t *
span_json(const struct eos_obs_record *r)
{
	return json_pack("{s:s, s:o, s:o, s:s?, s:o, s:I, s:o, s:o, s:o, s:[], s:[]}", "name",
			 r->name, "span_id", span_id_json(r->span_id), "parent_id",
			 span_id_json(r->parent_id), "status", eos_obs_status_name(r->status),
			 "start", eosd_json_time_ms(r->start_ns), "duration_ns",
			 (json_int_t)r->duration_ns, "sandbox_id", str_or_null(r->sandbox),
			 "workspace_session_id", str_or_null(r->session), "attributes",
			 attrs_json(r->attrs), "events", "children");
}

static int
trace_one(void *ctx, const struct eos_obs_record *r)
{
	struct trace_scan *t = ctx;
	struct span_node *n;

	if (++t->scanned > TRACE_SCAN_MAX) {
		t->truncated = true;
		return 1;
	}
	if (memcmp(r->trace_id, t->id, EOS_OBS_TRACE_ID_LEN) != 0)
		return 0;
	if (r->type == EOS_OBS_EVENT)
		return eos_json_push(t->events, json_pack("[I, o]", (json_int_t)r->span_id,
							  eosd_obs_event_json(r)));
	if (eos_buf_array_reserve(&t->spans, &t->cap, t->nspans, sizeof(*t->spans), 16) < 0)
		return -ENOMEM;
	n = &t->spans[t->nspans];
	*n = (struct span_node){ r->span_id, r->parent_id, r->start_ns, r->duration_ns,
				 span_json(r) };
	if (!n->json)
		return -ENOMEM;
	t->nspans++;
	return 0;
}

static struct span_node *
find_span(struct trace_scan *t, uint64_t id)
{
	for (size_t i = 0; id && i < t->nspans; i++)
		if (t->spans[i].id == id)
			return &t->spans[i];
	return NULL;
}

static int
by_start(const void *a, const void *b)
{
	const struct span_node *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/* Offsets from the trace's start, children under parents in start order, events inline. */
static json_t *
trace_tree(struct trace_scan *t, int64_t t0, json_t *orphans)
{
	json_t *top = json_array();
	size_t i;
	json_t *pair;

	qsort(t->spans, t->nspans, sizeof(*t->spans), by_start);
	json_array_foreach(t->events, i, pair)
	{
		json_t *ev = json_array_get(pair, 1);
		struct span_node *n =
			find_span(t, (uint64_t)json_integer_value(json_array_get(pair, 0)));

		eos_json_set(ev, "offset_ms",
			     json_real((double)(json_integer_value(json_object_get(ev, "time_ns")) -
						t0) /
				       1e6));
		eos_json_push(n ? json_object_get(n->json, "events") : orphans, json_incref(ev));
	}
	for (i = 0; i < t->nspans; i++) {
		struct span_node *n = &t->spans[i];
		struct span_node *p = n->parent ? find_span(t, n->parent) : NULL;

		eos_json_set(n->json, "offset_ms", json_real((double)(n->start - t0) / 1e6));
		eos_json_set(n->json, "duration_ms", json_real((double)n->duration / 1e6));
		eos_json_push(p ? json_object_get(p->json, "children") : top, json_incref(n->json));
	}
	return top;
}

static const struct span_node *
trace_root(const struct trace_scan *t)
{
	for (size_t i = 0; i < t->nspans; i++)
		if (t->spans[i].parent == 0)
			return &t->spans[i];
	return NULL;
}

static int
trace_answer(struct trace_scan *t, const char *hex, json_t **out)
{
	const struct span_node *root = trace_root(t);
	int64_t t0 = (int64_t)eos_get_be64(t->id);
	json_t *orphans = json_array();
	json_t *tree;

	for (size_t i = 0; i < t->nspans; i++)
		t0 = EOS_MIN(t0, t->spans[i].start);
	tree = trace_tree(t, t0, orphans);
	*out = json_pack("{s:s, s:o, s:o, s:O?, s:b, s:b, s:o, s:o}", "trace_id", hex, "start",
			 eosd_json_time_ms(t0), "duration_ms",
			 root ? json_real((double)root->duration / 1e6) : json_null(), "status",
			 root ? json_object_get(root->json, "status") : NULL, "complete",
			 root != NULL, "truncated", t->truncated, "spans", tree, "events", orphans);
	return *out ? 0 : -ENOMEM;
}

struct last_scan {
	const char *sandbox;
	uint8_t id[EOS_OBS_TRACE_ID_LEN];
	bool found;
	size_t scanned;
};

/* The newest root span of an operation not on the observability surface. */
static int
last_one(void *ctx, const struct eos_obs_record *r)
{
	struct last_scan *l = ctx;

	if (++l->scanned > TRACE_SCAN_MAX)
		return 1;
	if (r->parent_id != 0 || strcmp(r->name, "daemon.dispatch") != 0 ||
	    attrs_say(r->attrs, "surface", "observability") ||
	    (l->sandbox && strcmp(l->sandbox, r->sandbox) != 0))
		return 0;
	memcpy(l->id, r->trace_id, EOS_OBS_TRACE_ID_LEN);
	l->found = true;
	return 1;
}

static int
find_last(struct eosd_obs *obs, const char *sandbox, uint8_t *id, struct eos_error *err)
{
	struct eos_obs_query q = { .reverse = true, .types = 1u << EOS_OBS_SPAN };
	struct last_scan l = { .sandbox = sandbox };
	int r = eos_store_obs_scan(eosd_obs_store(obs), &q, last_one, &l, err);

	if (r < 0)
		return r;
	if (!l.found)
		return eos_error_set(err, -ENOENT, "trace: no operation was traced yet%s%s%s",
				     sandbox ? " in sandbox '" : "", sandbox ? sandbox : "",
				     sandbox ? "'" : "");
	memcpy(id, l.id, EOS_OBS_TRACE_ID_LEN);
	return 0;
}

static int
telemetry_on(struct eosd *d, const char *op, struct eos_error *err)
{
	if (!d->obs)
		return eos_error_set(err, -ENOTSUP, "%s: telemetry is turned off (eosd --no-obs)",
				     op);
	return eosd_obs_sync(d->obs, err);
}

int
eosd_op_trace(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	const char *hex_arg = json_string_value(json_object_get(c->args, "trace_id"));
	bool last = json_is_true(json_object_get(c->args, "last"));
	EOS_CLEANUP(trace_scan_release) struct trace_scan t = { .events = json_array() };
	char hex[EOSD_OBS_TRACE_HEX];
	struct eos_obs_query q = { .types = (1u << EOS_OBS_SPAN) | (1u << EOS_OBS_EVENT) };
	const struct span_node *root;
	int r = telemetry_on(d, "trace", err);

	if (r < 0)
		return r;
	if (!hex_arg == !last)
		return eos_error_set(err, -EINVAL, "trace: give trace_id or last (one of them)");
	if (hex_arg && eosd_obs_trace_id_parse(hex_arg, t.id) < 0)
		return eos_error_set(err, -EINVAL,
				     "trace: argument 'trace_id': '%s' is not 32 hex digits",
				     hex_arg);
	if (last && (r = find_last(d->obs, c->sandbox_id, t.id, err)) < 0)
		return r;
	q.from.time = eos_get_be64(t.id); /* a trace's records come after its start */
	r = t.events ? eos_store_obs_scan(eosd_obs_store(d->obs), &q, trace_one, &t, err) : -ENOMEM;
	if (r < 0)
		return r;
	eosd_obs_trace_id_hex(t.id, hex);
	root = trace_root(&t);
	if (t.nspans == 0 ||
	    (c->sandbox_id && root &&
	     strcmp(json_string_value(json_object_get(root->json, "sandbox_id")) ?: "",
		    c->sandbox_id) != 0))
		return eos_error_set(err, -ENOENT,
				     "trace '%s' is not known (never recorded, or "
				     "retention dropped it)",
				     hex);
	return trace_answer(&t, hex, out);
}

/* --- events ------------------------------------------------------------------------------------
 */

/* since: RFC 3339 UTC, nanoseconds since the epoch, or an age ("90s", "10m", "2h", "1d"). */
static int
parse_since(const char *s, int64_t *ret)
{
	static const struct {
		char unit;
		int64_t ns;
	} units[] = { { 's', 1000000000LL },
		      { 'm', 60000000000LL },
		      { 'h', 3600000000000LL },
		      { 'd', 86400000000000LL } };
	struct tm tm = { 0 };
	char *end = NULL;
	long long n;
	const char *rest;

	errno = 0;
	n = strtoll(s, &end, 10);
	if (!errno && end != s && n >= 0 && *end == '\0') {
		*ret = n;
		return 0;
	}
	for (size_t i = 0; !errno && end != s && n >= 0 && i < EOS_ARRAY_SIZE(units); i++)
		if (end[0] == units[i].unit && end[1] == '\0' && n < INT64_MAX / units[i].ns) {
			*ret = eos_wall_ns() - n * units[i].ns;
			return 0;
		}
	rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!rest)
		return -EINVAL;
	*ret = timegm(&tm) >= INT64_MAX / 1000000000LL ? INT64_MAX - 999999999
						       : (int64_t)timegm(&tm) * 1000000000LL;
	if (*rest == '.') {
		int64_t scale = 100000000;

		for (rest++; *rest >= '0' && *rest <= '9'; rest++, scale /= 10)
			*ret += (*rest - '0') * scale;
	}
	return strcmp(rest, "Z") == 0 || *rest == '\0' ? 0 : -EINVAL;
}

struct events_scan {
	const char *name, *sandbox;
	int64_t since;
	size_t want, scanned;
	json_t *list; /* newest first while scanning */
};

static bool
name_matches(const char *filter, const char *name)
{
	size_t n = filter ? strlen(filter) : 0;

	if (!filter)
		return true;
	if (n > 0 && filter[n - 1] == '.')
		return strncmp(filter, name, n) == 0;
	return strcmp(filter, name) == 0;
}

static int
events_one(void *ctx, const struct eos_obs_record *r)
{
	struct events_scan *e = ctx;

	if (++e->scanned > EVENTS_SCAN_MAX || (int64_t)r->pos.time < e->since)
		return 1; /* newest first: everything after is older */
	if (r->start_ns < e->since || !name_matches(e->name, r->name) ||
	    (e->sandbox && strcmp(e->sandbox, r->sandbox) != 0))
		return 0;
	if (eos_json_push(e->list, eosd_obs_event_json(r)) < 0)
		return -ENOMEM;
	return json_array_size(e->list) >= e->want ? 1 : 0;
}

/* The newest last_n events matching c's filters, up to position to (zero: the end), oldest
 * first. */
static int
events_query(struct eosd *d, struct eosd_call *c, const struct eos_obs_pos *to, json_t **ret,
	     struct eos_error *err)
{
	const char *since = json_string_value(json_object_get(c->args, "since"));
	struct events_scan e = {
		.name = json_string_value(json_object_get(c->args, "name")),
		.sandbox = c->sandbox_id,
		.want = (size_t)json_integer_value(json_object_get(c->args, "last_n")),
		.list = json_array(),
	};
	struct eos_obs_query q = { .reverse = true, .types = 1u << EOS_OBS_EVENT };
	json_t *sorted;
	int r;

	if (since && parse_since(since, &e.since) < 0) {
		json_decref(e.list);
		return eos_error_set(
			err, -EINVAL,
			"events: argument 'since': '%s' is not a time (2026-12-01T22:31:34Z, "
			"nanoseconds since the epoch, or an age such as 10m)",
			since);
	}
	if (to) /* up to and including to */
		q.to = (struct eos_obs_pos){ to->time, to->seq + 1 };
	r = e.list ? eos_store_obs_scan(eosd_obs_store(d->obs), &q, events_one, &e, err) : -ENOMEM;
	sorted = r >= 0 ? json_array() : NULL;
	for (size_t i = json_array_size(e.list); sorted && i > 0; i--)
		eos_json_push(sorted, json_incref(json_array_get(e.list, i - 1)));
	json_decref(e.list);
	if (r < 0)
		return r;
	*ret = sorted;
	return sorted ? 0 : -ENOMEM;
}

static bool
follow_pull(void *ctx, eosd_stream_emit_fn emit, void *ectx)
{
	return eosd_obs_follower_pull(ctx, emit, ectx);
}

static void
follow_close(void *ctx)
{
	eosd_obs_unfollow(ctx);
}

/* events follow: what came before as "event"s, then the stream stays open for new ones. */
static int
events_follow(struct eosd *d, struct eosd_call *c, struct eos_error *err)
{
	const struct eosd_obs_filter f = {
		.name = json_string_value(json_object_get(c->args, "name")),
		.sandbox = c->sandbox_id,
	};
	struct eosd_obs_follower *fol = NULL;
	struct eos_obs_pos from;
	json_t *list = NULL, *ev;
	size_t i;
	int r;

	if (!eosd_stream_wanted(c->stream))
		return eos_error_set(err, -EINVAL,
				     "events: follow needs a stream of server-sent "
				     "events (Accept: text/event-stream)");
	r = eosd_obs_follow(d->obs, &f, &fol, &from);
	r = r < 0 ? eos_error_set(err, r, "events: cannot follow: %s", strerror(-r))
		  : events_query(d, c, &from, &list, err);
	json_array_foreach(list, i, ev)(void) eosd_stream_send(c->stream, "event", json_incref(ev));
	json_decref(list);
	if (r == 0)
		r = eosd_stream_keep(
			c->stream, &(struct eosd_stream_source){ follow_pull, follow_close, fol });
	if (r < 0)
		eosd_obs_unfollow(fol);
	return r;
}

int
eosd_op_events(struct eosd *d, struct eosd_call *c, json_t **out, struct eos_error *err)
{
	json_t *list = NULL;
	int r = telemetry_on(d, "events", err);

	if (r < 0)
		return r;
	if (json_is_true(json_object_get(c->args, "follow")))
		return events_follow(d, c, err);
	r = events_query(d, c, NULL, &list, err);
	if (r < 0)
		return r;
	*out = json_pack("{s:o}", "events", list);
	return *out ? 0 : -ENOMEM;
}
