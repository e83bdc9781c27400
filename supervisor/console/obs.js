// SPDX-License-Identifier: MIT
// Observability: the trace of an operation as a waterfall (trace), the event stream with
// filters and follow (events), cgroup series as charts where eosd samples them (cgroup), and a
// clear "unavailable because …" elsewhere.
import * as api from "./api.js";
import { h, clear, fmtTime, fmtMs, fmtBytes, errorBox, table, enc } from "./ui.js";

// --- the event stream ---

function eventRow(e) {
	const where = [e.sandbox_id, e.workspace_session_id].filter((x) => x).join(" / ");
	return h("tr", { "data-event": e.name },
		h("td", { class: "mono" }, fmtTime(e.time)),
		h("td", {}, h("code", {}, e.name), e.trace_id ? [" ", h("a", { class: "badge", href: `#/trace/${enc(e.trace_id)}`, "aria-label": `trace of ${e.name}` }, "trace")] : null),
		h("td", {}, e.sandbox_id ? h("a", { href: `#/sandbox/${enc(e.sandbox_id)}` }, where) : where || "–"),
		h("td", { class: "mono attrs" }, JSON.stringify(e.attributes || {})));
}

function filterForm(q, onRun) {
	const field = (id, label, value, attrs = {}) => {
		const input = h("input", { id, name: id, value: value || "", autocomplete: "off", ...attrs });
		return [input, h("label", { for: id }, label, input)];
	};
	const [name, nameL] = field("ev-name", "Name or prefix (command.)", q.get("name"));
	const [sandbox, sbL] = field("ev-sandbox", "Sandbox", q.get("sandbox") || api.limitedSandbox());
	const [since, sinceL] = field("ev-since", "Since (10m, RFC 3339)", q.get("since"));
	const [last, lastL] = field("ev-last", "Newest", q.get("last_n") || "100", { type: "number", min: 1, max: 10000 });
	const follow = h("input", { type: "checkbox", id: "ev-follow", checked: q.get("follow") === "1" });
	const go = h("button", { type: "submit", id: "ev-apply" }, "Show");
	return h("form", { class: "inline panel", "aria-label": "Event filters", onsubmit: (ev) => {
		ev.preventDefault();
		const args = { last_n: Number(last.value) || 100 };
		if (name.value.trim())
			args.name = name.value.trim();
		if (since.value.trim())
			args.since = since.value.trim();
		onRun(args, sandbox.value.trim() || null, follow.checked);
	} }, nameL, sbL, sinceL, lastL, h("label", { class: "check", for: "ev-follow" }, follow, "follow"), go);
}

export async function renderEvents(main, params, life) {
	const tbody = h("tbody", { id: "events-body" });
	const state = h("p", { class: "muted", id: "events-state", "aria-live": "polite" });
	const out = h("div", {});
	let run = null;
	const start = async (args, sandbox, follow) => {
		if (run)
			run.abort();
		run = new AbortController();
		life.signal.addEventListener("abort", () => run.abort());
		const signal = run.signal;
		clear(tbody);
		clear(out);
		const add = (e) => {
			tbody.prepend(eventRow(e));
			while (tbody.children.length > 2000)
				tbody.lastChild.remove();
		};
		try {
			if (!follow) {
				const r = await api.call("events", { sandbox, args, signal });
				r.events.forEach(add);
				state.textContent = `${r.events.length} events, newest first`;
				return;
			}
			state.textContent = "Following: new events appear at the top.";
			await api.stream("events", { sandbox, args: { ...args, follow: true }, signal }, (name, data) => {
				if (name === "event")
					add(data);
				else if (name === "dropped")
					state.textContent = `Following; ${data.events} events were dropped (too far behind).`;
			});
			state.textContent = "The stream ended (eosd stopped).";
		} catch (e) {
			if (!signal.aborted)
				clear(out, errorBox(e));
		}
	};
	const head = h("thead", {}, h("tr", {}, ["Time", "Event", "Sandbox / session", "Attributes"].map((t) => h("th", { scope: "col" }, t))));
	clear(main, h("h1", {}, "Events"), filterForm(params.query, start), state, out,
		h("div", { class: "table-wrap events" }, h("table", { id: "events" }, head, tbody)));
	const q = params.query;
	const args = { last_n: Number(q.get("last_n")) || 100 };
	if (q.get("name"))
		args.name = q.get("name");
	start(args, q.get("sandbox") || null, q.get("follow") === "1");
}

// --- traces ---

function flatten(spans, depth, out) {
	for (const s of spans || []) {
		out.push({ ...s, depth });
		flatten(s.children, depth + 1, out);
	}
	return out;
}

function waterfall(t) {
	const rows = flatten(t.spans, 0, []);
	const total = Math.max(t.duration_ms || 0, ...rows.map((s) => (s.offset_ms || 0) + (s.duration_ms || 0)), 0.001);
	const pct = (ms) => `${Math.min(100, Math.max(0, (ms / total) * 100))}%`;
	const cells = [];
	for (const s of rows) {
		const name = h("div", { class: "name", title: s.name }, s.name);
		name.style.paddingLeft = `${s.depth * 14}px`;
		const bar = h("div", { class: `span${s.status && s.status !== "ok" && s.status !== "completed" ? " bad" : ""}`,
			title: `${s.name}: ${fmtMs(s.duration_ms)} at +${fmtMs(s.offset_ms)} (${s.status})` });
		bar.style.left = pct(s.offset_ms || 0);
		bar.style.width = pct(s.duration_ms || 0);
		const track = h("div", { class: "track", role: "img", "aria-label": `${s.name} ${fmtMs(s.duration_ms)} starting at ${fmtMs(s.offset_ms)}, ${s.status}` }, bar,
			(s.events || []).map((e) => {
				const m = h("div", { class: "mark", title: `${e.name} at +${fmtMs(e.offset_ms)}` });
				m.style.left = pct(e.offset_ms || 0);
				return m;
			}));
		cells.push(name, track);
	}
	return h("div", { class: "waterfall", id: "waterfall" }, cells);
}

export async function renderTrace(main, params, life) {
	const id = params.parts[1];
	const input = h("input", { id: "trace-id", name: "trace_id", size: 34, class: "mono", value: id || "", autocomplete: "off" });
	const form = h("form", { class: "inline", "aria-label": "Open a trace", onsubmit: (ev) => {
		ev.preventDefault();
		location.hash = input.value.trim() ? `#/trace/${enc(input.value.trim())}` : "#/trace";
	} }, h("label", { for: "trace-id" }, "Trace id (empty: the last)", input), h("button", { type: "submit" }, "Open"));
	let t;
	try {
		t = await api.call("trace", { args: id ? { trace_id: id } : { last: true }, signal: life.signal });
	} catch (e) {
		if (!life.over)
			clear(main, h("h1", {}, "Trace"), form, errorBox(e));
		return;
	}
	if (life.over)
		return;
	const root = t.spans && t.spans[0];
	const evs = flatten(t.spans, 0, []).flatMap((s) => (s.events || []).map((e) => [fmtMs(e.offset_ms), h("code", {}, e.name), s.name, h("span", { class: "mono" }, JSON.stringify(e.attributes || {}))]));
	clear(main, h("h1", {}, "Trace ", h("span", { class: "mono" }, t.trace_id)), form,
		h("p", {}, root ? `${root.name}` : "", root && root.attributes && root.attributes.operation ? ` · ${root.attributes.operation}` : "",
			` · ${fmtMs(t.duration_ms)} · ${t.status}`, t.complete ? "" : " · incomplete (still running, or dropped)", ` · ${fmtTime(t.start)}`),
		h("section", { class: "panel", "aria-label": "Waterfall" }, waterfall(t)),
		evs.length ? [h("h2", {}, "Events"), table([{ label: "At" }, { label: "Event" }, { label: "Span" }, { label: "Attributes" }], evs)] : null);
}

// --- resources ---

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}, ...children) {
	const el = document.createElementNS(SVG, tag);
	for (const [k, v] of Object.entries(attrs))
		el.setAttribute(k, String(v));
	children.forEach((c) => el.append(c));
	return el;
}

// [second, sum of value over the sessions sampled that second], in time order.
function series(samples, value) {
	const sums = new Map();
	for (const s of samples) {
		const v = value(s);
		if (v === null || v === undefined)
			continue;
		const t = Math.round(s.time_ns / 1e9);
		sums.set(t, (sums.get(t) || 0) + v);
	}
	return [...sums.entries()].sort((a, b) => a[0] - b[0]);
}

function chart(title, samples, value, fmt) {
	const pts = series(samples, value);
	const W = 300, H = 110;
	if (!pts.length)
		return h("div", { class: "panel chart" }, h("h3", {}, title), h("p", { class: "muted" }, "No sample has this counter."));
	const t0 = pts[0][0], t1 = Math.max(pts[pts.length - 1][0], t0 + 1);
	const top = Math.max(...pts.map(([, v]) => v));
	const vmax = top || 1;
	const xy = pts.map(([t, v]) => `${(((t - t0) / (t1 - t0)) * (W - 10) + 5).toFixed(1)},${(H - 15 - (v / vmax) * (H - 25)).toFixed(1)}`);
	const last = pts[pts.length - 1][1];
	return h("figure", { class: "panel chart" },
		h("figcaption", {}, h("strong", {}, title), ` — now ${fmt(last)}, max ${fmt(top)}`),
		svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `${title}: ${pts.length} samples, last ${fmt(last)}` },
			svg("line", { class: "axis", x1: 5, y1: H - 15, x2: W - 5, y2: H - 15 }),
			svg("polyline", { class: "line", points: xy.join(" ") })));
}

function charts(r) {
	const s = r.samples;
	return h("div", { class: "charts", id: "charts" },
		chart("CPU (% of one core)", s, (x) => x.cpu_percent, (v) => `${v.toFixed(1)} %`),
		chart("Memory", s, (x) => x.memory_bytes, fmtBytes),
		chart("Processes", s, (x) => x.pids, (v) => String(Math.round(v))),
		chart("I/O read", s, (x) => x.io_read_bytes, fmtBytes),
		chart("I/O written", s, (x) => x.io_write_bytes, fmtBytes));
}

export async function renderResources(main, params, life) {
	const sandbox = params.parts[1];
	const ws = params.query.get("ws");
	const body = h("div", { id: "resources", "aria-live": "polite" });
	clear(main, h("p", {}, h("a", { href: ws ? `#/session/${enc(sandbox)}/${enc(ws)}` : `#/sandbox/${enc(sandbox)}` }, "← back")),
		h("h1", {}, `Resources of ${ws ? `session ${ws}` : `sandbox ${sandbox}`}`), body);
	const load = async () => {
		let r;
		try {
			r = await api.call("cgroup", { sandbox, args: { scope: ws ? "session" : "sandbox", id: ws || sandbox, window: 300 }, signal: life.signal });
		} catch (e) {
			if (!life.over)
				clear(body, errorBox(e));
			return;
		}
		if (life.over)
			return;
		if (r.status === "unavailable") {
			clear(body, h("p", { class: "panel", id: "cgroup-unavailable" }, h("strong", {}, "Resource charts are unavailable because "), r.reason || "eosd samples no cgroup here", "."));
			return;
		}
		clear(body, h("p", { class: "muted" }, `cgroup ${r.mode}, ${r.samples.length} samples over the last ${r.window_s} s`,
			r.sampling ? " · sampling (a command runs)" : " · samples are taken only while commands run"),
		r.samples.length ? charts(r) : h("p", { class: "panel", id: "no-samples" }, "No sample in this window: eosd samples a session's cgroup once a second while one of its commands runs."));
		life.after(2000, load);
	};
	await load();
}
