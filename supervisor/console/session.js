// SPDX-License-Identifier: MIT
// One workspace session: state, base, delta, holder, network; publish (a rejection shows every
// conflict with its line ranges, base, head and session side by side), fork, destroy; its
// commands (running and recent) and a box to start one; links to its files and diff.
import * as api from "./api.js";
import { h, clear, facts, fmtBytes, fmtTime, statusBadge, errorBox, notify, busy, enc } from "./ui.js";
import { commandsTable, recentCommands, newCommandForm } from "./command.js";

// Lines [start, start + count) of path at a version (null: in session ws), or a note.
async function slice(sandbox, path, where, start, count) {
	const args = { path, offset: Math.max(1, start), limit: Math.max(1, count) };
	if (where.ws)
		args.workspace_session_id = where.ws;
	else
		args.version = where.version;
	if (count === 0)
		return `(no lines: inserted before line ${start})`;
	try {
		const r = await api.call("file_read", { sandbox, args });
		return r.content.replace(/\n$/, "");
	} catch (e) {
		return `(${e.kind}: ${e.message})`;
	}
}

function rangeLabel(start, count) {
	return count === 0 ? `at line ${start}` : count === 1 ? `line ${start}` : `lines ${start}–${start + count - 1}`;
}

// One conflict: for each region, the base's, the head's and the session's lines in columns.
async function conflictView(sandbox, ws, c, base, head) {
	const regions = await Promise.all((c.lines || []).map(async (l) => {
		const [b, hd, s] = await Promise.all([
			slice(sandbox, c.path, { version: base }, l.base_start, l.base_count),
			slice(sandbox, c.path, { version: head }, l.head_start, l.head_count),
			slice(sandbox, c.path, { ws }, l.session_start, l.session_count),
		]);
		return h("div", { class: "sides" },
			h("div", {}, h("h4", {}, `base ${base}, ${rangeLabel(l.base_start, l.base_count)}`), h("pre", {}, b)),
			h("div", {}, h("h4", {}, `head ${head}, ${rangeLabel(l.head_start, l.head_count)}`), h("pre", {}, hd)),
			h("div", {}, h("h4", {}, `session ${ws}, ${rangeLabel(l.session_start, l.session_count)}`), h("pre", {}, s)));
	}));
	return h("article", { class: "panel conflict", "data-path": c.path },
		h("h3", {}, h("span", { class: "mono" }, c.path), " ", h("span", { class: "badge bad" }, c.kind)),
		h("p", {}, c.message), c.detail ? h("p", { class: "muted" }, c.detail) : null,
		regions.length ? regions : h("p", { class: "muted" }, "No line ranges: the whole path conflicts."));
}

async function rejected(sandbox, ws, err, out) {
	const d = err.details || {};
	const conflicts = d.conflicts || [];
	const views = await Promise.all(conflicts.map((c) => conflictView(sandbox, ws, c, d.base, d.head)));
	clear(out, h("section", { id: "conflicts", "aria-labelledby": "conflicts-h" },
		h("h2", { id: "conflicts-h" }, `Publish rejected: ${conflicts.length} conflict${conflicts.length === 1 ? "" : "s"}`),
		h("p", {}, err.message, ` (base ${d.base}, head ${d.head}).`),
		h("div", { class: "conflicts" }, views)));
}

function publishForm(sandbox, ws, out, reload) {
	const after = h("input", { type: "checkbox", id: "publish-destroy" });
	const go = h("button", { type: "submit", id: "publish" }, "Publish");
	return h("form", { class: "inline", "aria-label": "Publish", onsubmit: (ev) => {
		ev.preventDefault();
		clear(out);
		busy(go, async () => {
			try {
				const r = await api.stream("publish_workspace_session", { sandbox, args: { workspace_session_id: ws, destroy_after: after.checked } });
				notify(r.status === "no_op" ? "Nothing to publish" : `Published ${r.version}: +${r.created} ~${r.modified} −${r.deleted} paths, ${r.merged} merged`, "info");
				if (r.destroyed)
					location.hash = `#/sandbox/${enc(sandbox)}`;
				else
					reload();
			} catch (e) {
				if (e.kind !== "publish_rejected")
					throw e;
				await rejected(sandbox, ws, e, out);
			}
		});
	} }, go, h("label", { class: "check", for: "publish-destroy" }, after, "then destroy the session"));
}

function sessionActions(sandbox, ws) {
	const fork = h("button", { type: "button", id: "fork", class: "secondary" }, "Fork");
	fork.onclick = () => busy(fork, async () => {
		const r = await api.call("fork_workspace_session", { sandbox, args: { workspace_session_id: ws } });
		location.hash = `#/session/${enc(sandbox)}/${enc(r.workspace_session_id)}`;
	});
	const destroy = h("button", { type: "button", id: "session-destroy", class: "danger" }, "Destroy…");
	destroy.onclick = () => {
		if (!confirm(`Destroy session ${ws} and its unpublished changes?`))
			return;
		busy(destroy, async () => {
			await api.call("destroy_workspace_session", { sandbox, args: { workspace_session_id: ws } });
			notify(`Session ${ws} destroyed`, "info");
			location.hash = `#/sandbox/${enc(sandbox)}`;
		});
	};
	return [fork, destroy];
}

export async function render(main, params, life) {
	const [, sandbox, ws] = params.parts;
	const s = await api.call("inspect_workspace_session", { sandbox, args: { workspace_session_id: ws }, signal: life.signal });
	if (life.over)
		return;
	const out = h("div", { "aria-live": "polite" });
	const reload = () => life.settle(render(main, params, life));
	const running = (s.commands || []).map((c) => ({ id: c.id || c.command_session_id, ws, cmd: c.cmd || c.command, status: c.status || "running", started: c.started }));
	const recent = h("div", {}, api.can("observability") ? h("p", { class: "muted" }, "Loading…") : null);
	const holder = s.holder || {};
	clear(main,
		h("p", {}, h("a", { href: `#/sandbox/${enc(sandbox)}` }, `← sandbox ${sandbox}`)),
		h("h1", {}, "Session ", h("span", { class: "mono" }, ws)),
		h("section", { class: "panel", "aria-label": "Summary" }, facts([
			["State", statusBadge(s.state)], ["Base", s.base_version],
			["Delta", s.delta ? `${s.delta.paths} paths, ${fmtBytes(s.delta.bytes)}` : "–"],
			["Holder", holder.pid ? `${holder.state} (pid ${holder.pid})` : holder.state || "–"],
			["Network", s.network], ["Isolation", s.isolation], ["Finalize", s.finalize],
			["Created", fmtTime(s.created)],
			["Mounted at", h("span", { class: "mono" }, s.mount_path || "–")],
		]),
		h("div", { class: "row" }, publishForm(sandbox, ws, out, reload), sessionActions(sandbox, ws))),
		out,
		h("nav", { class: "tabs", "aria-label": "Session" },
			h("a", { href: `#/files/${enc(sandbox)}?ws=${enc(ws)}`, id: "tab-files" }, "Files"),
			h("a", { href: `#/diff/${enc(sandbox)}/${enc(ws)}`, id: "tab-diff" }, "Diff against its base"),
			api.can("observability") ? h("a", { href: `#/resources/${enc(sandbox)}?ws=${enc(ws)}` }, "Resources") : null),
		h("h2", {}, "Run a command"), h("div", { class: "panel" }, newCommandForm(sandbox, ws)),
		h("h2", {}, "Running"), commandsTable(sandbox, running, "No command is running."),
		api.can("observability") ? [h("h2", {}, "Recent"), recent] : null);
	if (api.can("observability")) {
		const cmds = await recentCommands(sandbox, ws, life).catch((e) => e);
		if (!life.over)
			clear(recent, cmds instanceof Error ? errorBox(cmds) : commandsTable(sandbox, cmds));
	}
}
