// SPDX-License-Identifier: MIT
// Files: a session's tree or the head's (file_list), a file with each line's owner in the
// margin coloured per owner (file_read + file_blame) linked to its session or command, and a
// session's diff against its base (layerstack's changed paths, file_read in the session and at
// the base version).
import * as api from "./api.js";
import { h, clear, table, fmtBytes, ownerHue, ownerHref, ownerChip, errorBox, enc } from "./ui.js";

const FILE_LINES = 5000;

function where(sandbox, query) {
	const ws = query.get("ws");
	const version = query.get("version");
	return { sandbox, ws, version, label: ws ? `session ${ws}` : version ? `version ${version}` : "the head" };
}

function fileHref(w, path, kind) {
	const q = new URLSearchParams({ path });
	if (w.ws)
		q.set("ws", w.ws);
	if (w.version)
		q.set("version", w.version);
	return `#/${kind}/${enc(w.sandbox)}?${q}`;
}

function crumbs(w, path, kind) {
	const parts = path ? path.split("/") : [];
	const links = [h("a", { href: fileHref(w, "", "files") }, w.sandbox)];
	parts.forEach((p, i) => {
		const sub = parts.slice(0, i + 1).join("/");
		links.push("/", i === parts.length - 1 && kind === "file" ? h("span", {}, p) : h("a", { href: fileHref(w, sub, "files") }, p));
	});
	return h("nav", { class: "crumbs", "aria-label": "Path" }, links);
}

function backLink(w) {
	return w.ws ? h("a", { href: `#/session/${enc(w.sandbox)}/${enc(w.ws)}` }, `← session ${w.ws}`)
		: h("a", { href: `#/sandbox/${enc(w.sandbox)}` }, `← sandbox ${w.sandbox}`);
}

export async function renderBrowser(main, params, life) {
	const w = where(params.parts[1], params.query);
	const path = params.query.get("path") || "";
	const args = { path };
	if (w.ws)
		args.workspace_session_id = w.ws;
	const r = await api.call("file_list", { sandbox: w.sandbox, args, signal: life.signal });
	if (life.over)
		return;
	const rows = r.entries.map((e) => {
		const sub = path ? `${path}/${e.name}` : e.name;
		const name = e.kind === "directory" ? h("a", { href: fileHref(w, sub, "files") }, `${e.name}/`)
			: e.kind === "file" ? h("a", { href: fileHref(w, sub, "file") }, e.name) : e.name;
		return [name, e.kind, fmtBytes(e.size), h("span", { class: "mono" }, e.mode)];
	});
	clear(main, h("p", {}, backLink(w)), h("h1", {}, `Files of ${w.label}`), crumbs(w, path, "files"),
		rows.length ? table([{ label: "Name" }, { label: "Kind" }, { label: "Size", num: true }, { label: "Mode" }], rows)
			: h("p", { class: "muted" }, "Empty directory."));
}

// Owner of each line (1-based) from blame's ranges, and the session it wrote from where known.
function ownersByLine(ranges) {
	const owners = [], sessions = new Map();
	for (const r of ranges) {
		if (r.workspace_session_id)
			sessions.set(r.owner, r.workspace_session_id);
		for (let i = 0; i < r.line_count; i++)
			owners[r.start_line + i] = r.owner;
	}
	owners.sessions = sessions;
	return owners;
}

function ownerCell(sandbox, owner, first, ws) {
	if (!owner)
		return h("td", { class: "owner" });
	const href = ownerHref(sandbox, owner);
	const title = ws && owner !== `workspace_session:${ws}` ? `${owner} (in session ${ws})` : owner;
	const label = first ? (href ? h("a", { href, title }, owner) : h("span", { title }, owner)) : "";
	return h("td", { class: "owner owner-color", hue: ownerHue(owner), "data-owner": owner, title }, label);
}

function blameTable(sandbox, lines, owners) {
	let prev = null;
	const rows = lines.map((text, i) => {
		const owner = owners ? owners[i + 1] : null;
		const row = h("tr", {}, h("td", { class: "ln" }, String(i + 1)), owners ? ownerCell(sandbox, owner, owner !== prev, owners.sessions.get(owner)) : null,
			h("td", { class: "text" }, text));
		prev = owner;
		return row;
	});
	return h("div", { class: "code", id: "file-view", tabindex: 0, role: "region", "aria-label": "File content" },
		h("table", {}, h("tbody", {}, rows)));
}

export async function renderFile(main, params, life) {
	const w = where(params.parts[1], params.query);
	const path = params.query.get("path") || "";
	const args = { path, limit: FILE_LINES };
	if (w.ws)
		args.workspace_session_id = w.ws;
	if (w.version)
		args.version = w.version;
	const [file, blame] = await Promise.all([
		api.call("file_read", { sandbox: w.sandbox, args, signal: life.signal }),
		w.ws ? null : api.call("file_blame", { sandbox: w.sandbox, args: w.version ? { path, version: w.version } : { path }, signal: life.signal }).catch((e) => e),
	]);
	if (life.over)
		return;
	const lines = file.content.replace(/\n$/, "").split("\n");
	const owners = blame && !(blame instanceof Error) ? ownersByLine(blame.ranges) : null;
	const legend = owners ? [...new Set(blame.ranges.map((r) => r.owner))] : [];
	clear(main, h("p", {}, backLink(w)), h("h1", {}, h("span", { class: "mono" }, path), h("span", { class: "muted" }, ` at ${w.label}`)),
		crumbs(w, path, "file"),
		blame instanceof Error ? errorBox(blame) : null,
		owners ? h("div", { class: "legend", id: "owners", "aria-label": "Owners" }, h("span", { class: "muted" }, `Owners at ${blame.version}:`), legend.map((o) => ownerChip(w.sandbox, o)))
			: w.ws ? h("p", { class: "muted" }, "Lines get their owners when they are published: ", h("a", { href: fileHref({ sandbox: w.sandbox }, path, "file") }, "this file at the head")) : null,
		blameTable(w.sandbox, lines, owners),
		file.truncated ? h("p", { class: "muted" }, `The first ${file.lines} of ${file.total_lines} lines.`) : null);
}

// --- the diff of a session against its base ---

// Edit script of a → b as [op, text] with op " ", "-", "+": common ends trimmed, then an LCS
// table (limited; beyond it the middle is shown as removed then added).
export function lineDiff(a, b) {
	let pre = 0, suf = 0;
	while (pre < a.length && pre < b.length && a[pre] === b[pre])
		pre++;
	while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf])
		suf++;
	const x = a.slice(pre, a.length - suf), y = b.slice(pre, b.length - suf);
	const out = a.slice(0, pre).map((t) => [" ", t]);
	if (x.length * y.length > 4e6) {
		out.push(...x.map((t) => ["-", t]), ...y.map((t) => ["+", t]));
	} else {
		const n = x.length, m = y.length;
		const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
		for (let i = n - 1; i >= 0; i--)
			for (let j = m - 1; j >= 0; j--)
				L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
		let i = 0, j = 0;
		while (i < n || j < m) {
			if (i < n && j < m && x[i] === y[j]) {
				out.push([" ", x[i++]]);
				j++;
			} else if (i < n && (j === m || L[i + 1][j] >= L[i][j + 1])) {
				out.push(["-", x[i++]]);
			} else {
				out.push(["+", y[j++]]);
			}
		}
	}
	out.push(...a.slice(a.length - suf).map((t) => [" ", t]));
	return out;
}

async function readLines(sandbox, args) {
	try {
		const r = await api.call("file_read", { sandbox, args: { ...args, limit: 1000000 } });
		return r.content === "" ? [] : r.content.replace(/\n$/, "").split("\n");
	} catch (e) {
		if (e.kind === "not_found")
			return null;
		throw e;
	}
}

function diffView(path, before, after) {
	const ops = lineDiff(before || [], after || []);
	const state = before === null ? "created" : after === null ? "deleted" : "modified";
	const rows = ops.map(([op, t]) => h("tr", { class: op === "+" ? "add" : op === "-" ? "del" : "" },
		h("td", { class: "ln" }, op), h("td", { class: "text" }, t)));
	return h("article", { class: "panel diff", "data-path": path },
		h("h3", {}, h("span", { class: "mono" }, path), " ", h("span", { class: "badge" }, state)),
		h("div", { class: "code" }, h("table", {}, h("tbody", {}, rows))));
}

export async function renderDiff(main, params, life) {
	const [, sandbox, ws] = params.parts;
	const stack = await api.call("layerstack", { sandbox, args: { workspace_session_id: ws }, signal: life.signal });
	if (life.over)
		return;
	const s = stack.session;
	const list = h("div", { id: "diff" }, h("p", { class: "muted" }, "Loading…"));
	clear(main, h("p", {}, h("a", { href: `#/session/${enc(sandbox)}/${enc(ws)}` }, `← session ${ws}`)),
		h("h1", {}, `Diff of ${ws} against its base ${s.base_version}`),
		h("p", {}, `${s.delta.paths} changed path${s.delta.paths === 1 ? "" : "s"}, ${fmtBytes(s.delta.bytes)} held`,
			s.delta.changed.length < s.delta.paths ? ` (the first ${s.delta.changed.length} shown)` : ""),
		list);
	const views = [];
	for (const path of s.delta.changed) {
		const [before, after] = await Promise.all([
			readLines(sandbox, { path, version: s.base_version }).catch((e) => e),
			readLines(sandbox, { path, workspace_session_id: ws }).catch((e) => e),
		]);
		if (life.over)
			return;
		views.push(before instanceof Error || after instanceof Error
			? h("article", { class: "panel" }, h("h3", { class: "mono" }, path), h("p", { class: "muted" }, "Not a text file here (a directory, link or special file)."))
			: diffView(path, before, after));
	}
	clear(list, views.length ? views : h("p", { class: "muted" }, "No change."));
}
