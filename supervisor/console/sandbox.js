// SPDX-License-Identifier: MIT
// One sandbox: its head, layers and bytes; destroy, squash and export; its sessions (create,
// fork); its LayerStack as a timeline; its recent commands.
import * as api from "./api.js";
import { h, clear, table, facts, fmtBytes, fmtTime, errorBox, notify, busy, statusBadge, saveBlob, enc } from "./ui.js";
import * as layers from "./layers.js";
import { commandsTable, recentCommands } from "./command.js";

// What the login may read of sandbox id: {info (inspect or snapshot), sessions, stack}.
async function load(id) {
	const out = { info: null, sessions: [], stack: null, snap: null };
	const [info, snap, stack] = await Promise.all([
		api.canOp("inspect_sandbox") ? api.call("inspect_sandbox", { sandbox: id }) : null,
		api.can("observability") ? api.call("snapshot", { sandbox: id }) : null,
		api.can("observability") ? api.call("layerstack", { sandbox: id }) : null,
	]);
	out.info = info;
	out.snap = snap ? snap.sandboxes[0] : null;
	out.stack = stack;
	if (out.snap)
		out.sessions = out.snap.sessions;
	else if (api.canOp("list_workspace_sessions"))
		out.sessions = (await api.call("list_workspace_sessions", { sandbox: id })).sessions;
	return out;
}

function summary(id, d) {
	const i = d.info || d.snap || {};
	const stored = d.stack ? d.stack.layers.reduce((n, l) => n + (l.stored_bytes || 0), 0) : null;
	return facts([
		["Head", i.head], ["Base", i.base],
		["Layers", String(i.layers ?? i.layer_count ?? "–")],
		["Bytes written", fmtBytes(d.info ? d.info.bytes : d.snap ? d.snap.layer_bytes : null)],
		["Bytes stored", stored === null ? "–" : fmtBytes(stored)],
		["Sessions", String(d.sessions.length)],
		["Source", h("span", { class: "mono" }, i.source || "–")],
		["Created", fmtTime(i.created_ns ?? i.created)],
	]);
}

function exportForm(id) {
	const format = h("select", { id: "export-format", name: "format" },
		["patch", "tar", "tar-zst"].map((f) => h("option", { value: f }, f)));
	const from = h("input", { id: "export-from", name: "from", placeholder: "base", size: 9 });
	const to = h("input", { id: "export-to", name: "to", placeholder: "head", size: 9 });
	const go = h("button", { type: "submit", id: "export-submit", class: "secondary" }, "Download");
	return h("form", { class: "inline", "aria-label": "Export", onsubmit: (ev) => {
		ev.preventDefault();
		busy(go, async () => {
			const args = { format: format.value };
			if (from.value.trim())
				args.from = from.value.trim();
			if (to.value.trim())
				args.to = to.value.trim();
			const { blob, name, result } = await api.download("export_changes", { sandbox: id, args });
			saveBlob(blob, name);
			notify(`Exported ${result.from}…${result.to}: ${result.files} files, ${fmtBytes(result.bytes)} (${name})`, "info");
		});
	} },
	h("label", { for: "export-format" }, "Export", format),
	h("label", { for: "export-from" }, "From", from), h("label", { for: "export-to" }, "To", to), go);
}

function actions(id, d, life) {
	const squash = h("button", { type: "button", id: "squash", class: "secondary" }, "Squash");
	squash.onclick = () => busy(squash, async () => {
		const r = await api.stream("squash_layerstacks", { sandbox: id });
		notify(`Squashed: ${r.layers_removed} layers folded, ${fmtBytes(r.bytes_freed)} freed`, "info");
		if (!life.over)
			life.settle(render(document.getElementById("main"), { parts: ["sandbox", id] }, life));
	});
	const destroy = h("button", { type: "button", id: "destroy", class: "danger" }, "Destroy…");
	destroy.onclick = () => {
		const n = d.sessions.length;
		if (!confirm(`Destroy sandbox ${id} and its history${n ? ` and its ${n} sessions` : ""}?`))
			return;
		busy(destroy, async () => {
			await api.stream("destroy_sandbox", { sandbox: id, args: { force: n > 0 } });
			notify(`Sandbox ${id} destroyed`, "info");
			location.hash = "#/";
		});
	};
	return h("div", { class: "row" },
		api.canOp("squash_layerstacks") ? squash : null,
		api.canOp("destroy_sandbox") ? destroy : null,
		api.canOp("export_changes") ? exportForm(id) : null);
}

function sessionRow(id, s) {
	const fork = h("button", { type: "button", class: "secondary", "data-fork": s.workspace_session_id }, "Fork");
	fork.onclick = () => busy(fork, async () => {
		const r = await api.call("fork_workspace_session", { sandbox: id, args: { workspace_session_id: s.workspace_session_id } });
		location.hash = `#/session/${enc(id)}/${enc(r.workspace_session_id)}`;
	});
	return [
		h("a", { href: `#/session/${enc(id)}/${enc(s.workspace_session_id)}` }, s.workspace_session_id),
		statusBadge(s.state), s.base_version || "–",
		s.delta ? `${s.delta.paths} paths, ${fmtBytes(s.delta.bytes)}` : "–",
		s.holder_pid ? `${s.holder_state || ""} (pid ${s.holder_pid})` : "–",
		s.network || "–",
		s.commands ? String(s.commands.length) : "–",
		api.canOp("fork_workspace_session") ? fork : "",
	];
}

function newSessionForm(id) {
	const wsid = h("input", { id: "session-id", name: "workspace_session_id", placeholder: "ws-<hex>", autocomplete: "off" });
	const network = h("select", { id: "session-network", name: "network" },
		h("option", { value: "shared" }, "shared"), h("option", { value: "isolated" }, "isolated"));
	const isolation = h("select", { id: "session-isolation", name: "isolation" },
		h("option", { value: "namespaces" }, "namespaces"), h("option", { value: "none" }, "none"));
	const go = h("button", { type: "submit", id: "session-create" }, "Start session");
	return h("form", { class: "inline", "aria-label": "New session", onsubmit: (ev) => {
		ev.preventDefault();
		busy(go, async () => {
			const args = { network: network.value, isolation: isolation.value };
			if (wsid.value.trim())
				args.workspace_session_id = wsid.value.trim();
			const r = await api.call("create_workspace_session", { sandbox: id, args });
			location.hash = `#/session/${enc(id)}/${enc(r.workspace_session_id)}`;
		});
	} },
	h("label", { for: "session-id" }, "Session id (optional)", wsid),
	h("label", { for: "session-network" }, "Network", network),
	h("label", { for: "session-isolation" }, "Isolation", isolation), go);
}

function tabs(id) {
	const links = [["Files at the head", `#/files/${enc(id)}`, "files"]];
	if (api.can("observability")) {
		links.push(["Events", `#/events?sandbox=${enc(id)}`, "events"]);
		links.push(["Resources", `#/resources/${enc(id)}`, "resources"]);
	}
	return h("nav", { class: "tabs", "aria-label": "Sandbox" }, links.map(([label, href, key]) => h("a", { href, id: `tab-${key}` }, label)));
}

export async function render(main, params, life) {
	const id = params.parts[1];
	const d = await load(id);
	if (life.over)
		return;
	const cols = ["Session", "State", "Base", "Delta", "Holder", "Network", "Running", ""].map((label) => ({ label }));
	const recent = h("div", {}, h("p", { class: "muted" }, "Loading…"));
	clear(main,
		h("h1", {}, "Sandbox ", h("span", { class: "mono" }, id)),
		h("section", { class: "panel", "aria-label": "Summary" }, summary(id, d), h("div", { class: "row" }, actions(id, d, life))),
		tabs(id),
		h("h2", {}, "Sessions"),
		d.sessions.length ? table(cols, d.sessions.map((s) => sessionRow(id, s))) : h("p", { class: "muted" }, "No session."),
		api.canOp("create_workspace_session") ? h("div", { class: "panel" }, newSessionForm(id)) : null,
		h("h2", {}, "LayerStack"),
		d.stack ? layers.timeline(id, d.stack, life) : h("p", { class: "muted" }, "The timeline needs an observability token."),
		h("h2", {}, "Recent commands"), recent);
	if (api.can("observability")) {
		const cmds = await recentCommands(id, null, life).catch((e) => e);
		if (!life.over)
			clear(recent, cmds instanceof Error ? errorBox(cmds) : commandsTable(id, cmds));
	} else {
		clear(recent, h("p", { class: "muted" }, "Recent commands need an observability token."));
	}
}
