/* SPDX-License-Identifier: MIT */
/*
 * eosctl-obs: the text drawings of the observability replies (cli/eosctl.h) — a trace as a
 * waterfall of its spans with their events, events one per line, a sandbox's layers as a
 * timeline, newest first. JSON output is the reply as eosd sent it; these are for reading.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/quote.h"

#include "cli/eosctl.h"

enum {
	BAR = 40,	/* columns of a waterfall's bars */
	NAME_COL = 44,	/* width of the span names column */
	ATTRS_MAX = 160 /* bytes of attributes shown on one line */
};

static const char *
str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static double
num(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

/* "k=v k=v" of an attributes object, cut at ATTRS_MAX bytes, into buf. */
static void
attrs_text(const json_t *attrs, char *buf, size_t n)
{
	const char *key;
	json_t *v;
	size_t len = 0;

	buf[0] = '\0';
	json_object_foreach((json_t *)attrs, key, v)
	{
		cleanup_free char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		int w;

		if (!t || json_is_null(v))
			continue;
		w = snprintf(buf + len, n - len, "%s%s=%s", len ? " " : "", key,
			     json_is_string(v) ? json_string_value(v) : t);
		if (w < 0 || (size_t)w >= n - len || len + (size_t)w > ATTRS_MAX) {
			snprintf(buf + EOS_MIN(len, n - 4), 4, "...");
			return;
		}
		len += (size_t)w;
	}
}

/* --- trace ------------------------------------------------------------------------------------ */

/* "|    =======     |": the span's place in the trace's total, at least one mark wide. */
static void
bar(FILE *f, double offset, double dur, double total)
{
	int from = total > 0 ? (int)(offset / total * BAR) : 0;
	int to = total > 0 ? (int)((offset + dur) / total * BAR + 0.5) : BAR;

	from = EOS_MIN(EOS_MAX(from, 0), BAR - 1);
	to = EOS_MIN(EOS_MAX(to, from + 1), BAR);
	fputc('|', f);
	for (int i = 0; i < BAR; i++)
		fputc(i >= from && i < to ? '=' : ' ', f);
	fputc('|', f);
}

static void
event_mark(FILE *f, const json_t *ev, int depth, double total)
{
	char attrs[ATTRS_MAX + 8];
	double at = num(ev, "offset_ms");
	int col = total > 0 ? (int)(at / total * BAR) : 0;

	attrs_text(json_object_get(ev, "attributes"), attrs, sizeof(attrs));
	fprintf(f, "%9.3f %9s |%*s*%*s| %*s* %s %s\n", at, "", EOS_MIN(EOS_MAX(col, 0), BAR - 1),
		"", BAR - 1 - EOS_MIN(EOS_MAX(col, 0), BAR - 1), "", 2 * depth + 2, "",
		str(ev, "name"), attrs);
}

static void
span_line(FILE *f, const json_t *sp, int depth, double total)
{
	const char *status = str(sp, "status");
	char name[NAME_COL + 64];
	size_t i;
	json_t *e;

	snprintf(name, sizeof(name), "%*s%s", 2 * depth, "", str(sp, "name"));
	fprintf(f, "%9.3f %9.3f ", num(sp, "offset_ms"), num(sp, "duration_ms"));
	bar(f, num(sp, "offset_ms"), num(sp, "duration_ms"), total);
	fprintf(f, " %s%s%s%s\n", name, strcmp(status, "completed") ? "  [" : "",
		strcmp(status, "completed") ? status : "", strcmp(status, "completed") ? "]" : "");
	json_array_foreach(json_object_get(sp, "events"), i, e) event_mark(f, e, depth, total);
	json_array_foreach(json_object_get(sp, "children"), i, e) span_line(f, e, depth + 1, total);
}

/* The trace's length: the end of its last span. */
static double
trace_total(const json_t *spans)
{
	double total = 0;
	size_t i;
	json_t *s;

	json_array_foreach(spans, i, s)
	{
		total = EOS_MAX(total, num(s, "offset_ms") + num(s, "duration_ms"));
		total = EOS_MAX(total, trace_total(json_object_get(s, "children")));
	}
	return total;
}

static void
render_trace(FILE *f, const json_t *doc)
{
	const json_t *spans = json_object_get(doc, "spans"), *root = json_array_get(spans, 0);
	double total = trace_total(spans);
	size_t i;
	json_t *s;

	fprintf(f, "trace %s  %s  %s  %.3f ms  %s%s\n", str(doc, "trace_id"),
		str(json_object_get(root, "attributes"), "operation"), str(doc, "status"), total,
		str(doc, "start"),
		json_is_true(json_object_get(doc, "complete")) ? "" : "  (incomplete)");
	fprintf(f, "%9s %9s  %-*s %s\n", "start ms", "dur ms", BAR, "", "span");
	json_array_foreach(spans, i, s) span_line(f, s, 0, total);
	json_array_foreach(json_object_get(doc, "events"), i, s) event_mark(f, s, 0, total);
}

/* --- events ----------------------------------------------------------------------------------- */

void
eosctl_obs_event_line(FILE *f, const json_t *ev)
{
	char attrs[ATTRS_MAX + 8], where[160];
	const char *ws = str(ev, "workspace_session_id");

	attrs_text(json_object_get(ev, "attributes"), attrs, sizeof(attrs));
	snprintf(where, sizeof(where), "%s%s%s", str(ev, "sandbox_id"), ws[0] ? "/" : "", ws);
	fprintf(f, "%s  %-36s %-24s %s\n", str(ev, "time"), str(ev, "name"), where[0] ? where : "-",
		attrs);
}

static void
render_events(FILE *f, const json_t *doc)
{
	const json_t *list = json_object_get(doc, "events");
	size_t i;
	json_t *ev;

	if (json_array_size(list) == 0)
		fprintf(f, "(no events)\n");
	json_array_foreach(list, i, ev) eosctl_obs_event_line(f, ev);
}

/* --- layers ----------------------------------------------------------------------------------- */

/* "1.5 KiB" */
static void
size_text(char *buf, size_t n, const json_t *v)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double x = json_number_value(v);
	size_t u = 0;

	if (!json_is_number(v)) {
		snprintf(buf, n, "?");
		return;
	}
	while (x >= 1024 && u + 1 < EOS_ARRAY_SIZE(units)) {
		x /= 1024;
		u++;
	}
	snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", x, units[u]);
}

static void
layer_lines(FILE *f, const json_t *l, bool last)
{
	const json_t *p = json_object_get(l, "paths"), *sq = json_object_get(l, "squashed");
	char logical[32], stored[32], shared[32];
	size_t i;
	json_t *lease;

	size_text(logical, sizeof(logical), json_object_get(l, "bytes"));
	size_text(stored, sizeof(stored), json_object_get(l, "stored_bytes"));
	size_text(shared, sizeof(shared), json_object_get(l, "shared_bytes"));
	fprintf(f, "%c %s%s  %s  %s\n", json_is_true(json_object_get(l, "head")) ? '@' : 'o',
		str(l, "version"), json_is_true(json_object_get(l, "head")) ? " (head)" : "",
		str(l, "created"), str(l, "owner"));
	fprintf(f, "|   +%lld ~%lld -%lld paths, %s written, %s stored, %s shared\n",
		(long long)json_integer_value(json_object_get(p, "created")),
		(long long)json_integer_value(json_object_get(p, "modified")),
		(long long)json_integer_value(json_object_get(p, "deleted")), logical, stored,
		shared);
	if (json_is_object(sq))
		fprintf(f, "|   squashed %s..%s into it\n", str(sq, "from"), str(sq, "to"));
	json_array_foreach(json_object_get(l, "leases"), i, lease)
		fprintf(f, "|   lease %s%s%s\n", str(lease, "name"),
			str(lease, "workspace_session_id")[0] ? " held by session " : "",
			str(lease, "workspace_session_id"));
	if (!last)
		fprintf(f, "|\n");
}

static void
render_session(FILE *f, const json_t *s)
{
	const json_t *dl = json_object_get(s, "delta");
	size_t i;
	json_t *x;

	fprintf(f, "\nsession %s on %s: %lld paths changed, %lld bytes\n",
		str(s, "workspace_session_id"), str(s, "base_version"),
		(long long)json_integer_value(json_object_get(dl, "paths")),
		(long long)json_integer_value(json_object_get(dl, "bytes")));
	json_array_foreach(json_object_get(dl, "changed"), i, x)
		fprintf(f, "  changed %s\n", json_string_value(x));
	json_array_foreach(json_object_get(s, "shares"), i, x) fprintf(
		f, "  shares layers up to %s with %s (base %s), %lld paths both changed\n",
		str(x, "shared_up_to"), str(x, "workspace_session_id"), str(x, "base_version"),
		(long long)json_integer_value(json_object_get(x, "overlapping")));
}

static void
render_layers(FILE *f, const json_t *doc)
{
	const json_t *layers = json_object_get(doc, "layers");
	size_t n = json_array_size(layers);

	fprintf(f, "sandbox %s: head %s, base %s, %zu layers (newest first)\n\n",
		str(doc, "sandbox_id"), str(doc, "head"), str(doc, "base"), n);
	for (size_t i = n; i > 0; i--)
		layer_lines(f, json_array_get(layers, i - 1), i == 1);
	if (json_is_object(json_object_get(doc, "session")))
		render_session(f, json_object_get(doc, "session"));
}

/* --- snapshot (also top's frame) ---------------------------------------------------------------
 */

/* A value as short text: "-" for null or missing. */
static void
val(char *buf, size_t n, const json_t *v)
{
	if (!v || json_is_null(v))
		snprintf(buf, n, "-");
	else if (json_is_string(v))
		snprintf(buf, n, "%s", json_string_value(v));
	else if (json_is_real(v))
		snprintf(buf, n, "%.1f", json_real_value(v));
	else if (json_is_integer(v))
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
	else
		snprintf(buf, n, "%s", json_is_true(v) ? "yes" : "-");
}

static void
daemon_lines(FILE *f, const json_t *d)
{
	const json_t *tel = json_object_get(d, "telemetry"), *cg = json_object_get(d, "cgroups");

	fprintf(f,
		"eosd %s pid %lld  up %.0fs  threads %lld  rss %.1f MiB  views %lld  requests %lld\n",
		str(d, "version"), (long long)json_integer_value(json_object_get(d, "pid")),
		num(d, "uptime_s"), (long long)json_integer_value(json_object_get(d, "threads")),
		num(d, "rss_bytes") / 1048576.0,
		(long long)json_integer_value(json_object_get(d, "open_views")),
		(long long)json_integer_value(json_object_get(d, "requests_served")));
	fprintf(f, "telemetry %s: %lld records kept, %lld dropped; cgroups %s%s%s\n",
		json_is_true(json_object_get(tel, "enabled")) ? "on" : "off",
		(long long)json_integer_value(json_object_get(tel, "stored_records")),
		(long long)json_integer_value(json_object_get(tel, "dropped")), str(cg, "mode"),
		str(cg, "unavailable")[0] ? ": " : "", str(cg, "unavailable"));
}

static void
session_row(FILE *f, const json_t *s)
{
	const json_t *dl = json_object_get(s, "delta"), *res = json_object_get(s, "resources");
	char holder[32], paths[32], bytes[32], cpu[32], mem[32];

	val(holder, sizeof(holder), json_object_get(s, "holder_pid"));
	val(paths, sizeof(paths), json_object_get(dl, "paths"));
	size_text(bytes, sizeof(bytes), json_object_get(dl, "bytes"));
	val(cpu, sizeof(cpu), json_object_get(res, "cpu_percent"));
	size_text(mem, sizeof(mem), json_object_get(res, "memory_bytes"));
	fprintf(f, "  %-20.20s %-9.9s %-8.8s %7s %10s %8s %6s %10s %s\n",
		str(s, "workspace_session_id"), str(s, "state"), str(s, "base_version"), paths,
		json_is_object(dl) ? bytes : "-", holder, cpu, json_is_object(res) ? mem : "-",
		strcmp(str(s, "status"), "ok") ? str(s, "status") : "");
}

/* The running commands of a session, when eosd reports them. */
static size_t
command_rows(FILE *f, const json_t *s)
{
	size_t i, n = 0;
	json_t *c;

	json_array_foreach(json_object_get(s, "commands"), i, c)
	{
		fprintf(f, "  %-20.20s %-20.20s %-24s %s\n", str(s, "workspace_session_id"),
			str(c, "command_session_id"), str(c, "started"), str(c, "command"));
		n++;
	}
	return n;
}

static void
sandbox_lines(FILE *f, const json_t *sb)
{
	const json_t *sessions = json_object_get(sb, "sessions");
	size_t i;
	json_t *x;

	fprintf(f, "\nsandbox %s%s%s: head %s, base %s, %lld layers (%lld bytes), %zu leases\n",
		str(sb, "sandbox_id"), strcmp(str(sb, "status"), "ok") ? " " : "",
		strcmp(str(sb, "status"), "ok") ? str(sb, "status") : "", str(sb, "head"),
		str(sb, "base"), (long long)json_integer_value(json_object_get(sb, "layer_count")),
		(long long)json_integer_value(json_object_get(sb, "layer_bytes")),
		json_array_size(json_object_get(sb, "leases")));
	json_array_foreach(json_object_get(sb, "errors"), i, x)
		fprintf(f, "  ! %s: %s\n", str(x, "part"), str(x, "error"));
	if (json_array_size(sessions) == 0) {
		fprintf(f, "  (no sessions)\n");
		return;
	}
	fprintf(f, "  %-20s %-9s %-8s %7s %10s %8s %6s %10s\n", "SESSION", "STATE", "BASE",
		"CHANGED", "BYTES", "HOLDER", "CPU%", "MEMORY");
	json_array_foreach(sessions, i, x) session_row(f, x);
}

static void
render_snapshot(FILE *f, const json_t *doc)
{
	const json_t *sbs = json_object_get(doc, "sandboxes");
	size_t i, j, ncmd = 0;
	json_t *sb, *s;
	bool reported = false;

	fprintf(f, "%s  ", str(doc, "time"));
	daemon_lines(f, json_object_get(doc, "daemon"));
	json_array_foreach(sbs, i, sb) sandbox_lines(f, sb);
	if (json_array_size(sbs) == 0)
		fprintf(f, "\n(no sandboxes)\n");
	fprintf(f, "\nrunning commands:\n");
	json_array_foreach(sbs, i, sb) json_array_foreach(json_object_get(sb, "sessions"), j, s)
	{
		reported |= json_is_array(json_object_get(s, "commands"));
		ncmd += command_rows(f, s);
	}
	if (ncmd == 0)
		fprintf(f, "  %s\n",
			reported ? "(none)" : "(this eosd reports none: it runs no commands yet)");
}

bool
eosctl_obs_render(FILE *f, const struct eos_op *op, const json_t *doc)
{
	if (!strcmp(op->name, "snapshot"))
		render_snapshot(f, doc);
	else if (!strcmp(op->name, "trace"))
		render_trace(f, doc);
	else if (!strcmp(op->name, "events"))
		render_events(f, doc);
	else if (!strcmp(op->name, "layerstack"))
		render_layers(f, doc);
	else
		return false;
	return true;
}
