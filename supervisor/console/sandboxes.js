// SPDX-License-Identifier: MIT
// The sandboxes: the list (list_sandboxes, with snapshot's sessions and bytes) and a new one
// imported from a host directory (create_sandbox with its progress events).
import * as api from "./api.js";
import { h, clear, table, fmtBytes, fmtTime, errorBox, busy, enc } from "./ui.js";

// What the login may list: every sandbox (management, or observability's snapshot), else the
// one it is limited to.
async function listAll() {
	const snap = api.can("observability") ? await api.call("snapshot") : null;
	const bySnap = new Map((snap ? snap.sandboxes : []).map((s) => [s.sandbox_id, s]));
	let list;
	if (api.can("management"))
		list = (await api.call("list_sandboxes")).sandboxes;
	else if (snap)
		list = snap.sandboxes;
	else
		list = api.limitedSandbox() ? [{ sandbox_id: api.limitedSandbox() }] : [];
	return list.map((s) => ({ ...s, snap: bySnap.get(s.sandbox_id) || null }));
}

function row(s) {
	const snap = s.snap;
	return [
		h("a", { href: `#/sandbox/${enc(s.sandbox_id)}` }, s.sandbox_id),
		s.head || (snap && snap.head) || "–",
		String(s.layers ?? (snap ? snap.layer_count : "–")),
		snap ? fmtBytes(snap.layer_bytes) : "–",
		snap ? String(snap.sessions.length) : "–",
		h("span", { class: "mono" }, s.source || (snap && snap.source) || "–"),
		fmtTime(s.created_ns ?? (snap && snap.created)),
	];
}

// A bar of an import's progress events: the mean of files and bytes done, as eosctl draws it.
function progressView() {
	const bar = h("progress", { id: "create-progress", max: 100, value: 0, "aria-label": "Import progress" });
	const text = h("span", { class: "muted", id: "create-phase" }, "starting…");
	const el = h("div", { class: "row", id: "create-status", "aria-live": "polite" }, bar, text);
	el.update = (p) => {
		if (p.total_files || p.total_bytes) {
			const f = p.total_files ? p.files / p.total_files : 1;
			const b = p.total_bytes ? p.bytes / p.total_bytes : 1;
			bar.value = Math.round(((f + b) / 2) * 100);
			text.textContent = `${p.phase}: ${p.files}/${p.total_files} files, ${fmtBytes(p.bytes)} of ${fmtBytes(p.total_bytes)}`;
		} else {
			bar.removeAttribute("value");
			text.textContent = `${p.phase}: ${p.files ?? 0} files, ${fmtBytes(p.bytes ?? 0)}`;
		}
	};
	return el;
}

function createForm(life) {
	const source = h("input", { id: "create-source", name: "source", class: "wide", required: true, placeholder: "/home/me/project", autocomplete: "off" });
	const id = h("input", { id: "create-id", name: "id", placeholder: "eos-<hex>", autocomplete: "off" });
	const out = h("div", {});
	const submit = h("button", { type: "submit", id: "create-submit" }, "Import");
	const form = h("form", { class: "inline", onsubmit: (ev) => {
		ev.preventDefault();
		const prog = progressView();
		clear(out, prog);
		busy(submit, async () => {
			const args = { source: source.value.trim() };
			if (id.value.trim())
				args.id = id.value.trim();
			const res = await api.stream("create_sandbox", { args }, (name, data) => {
				if (name === "progress") {
					prog.update(data);
					prog.dataset.events = String(Number(prog.dataset.events || 0) + 1);
				}
			});
			prog.update({ phase: "done", files: res.files, total_files: res.files, bytes: res.bytes, total_bytes: res.bytes });
			if (!life.over)
				location.hash = `#/sandbox/${enc(res.sandbox_id)}`;
		}, (e) => clear(out, errorBox(e)));
	} },
	h("label", { for: "create-source" }, "Directory or archive on the host", source),
	h("label", { for: "create-id" }, "Id (optional)", id), submit);
	return h("section", { class: "panel", "aria-labelledby": "create-h" },
		h("h2", { id: "create-h" }, "New sandbox"), form, out);
}

export async function render(main, params, life) {
	const list = await listAll();
	if (life.over)
		return;
	const cols = [{ label: "Sandbox" }, { label: "Head" }, { label: "Layers", num: true },
		{ label: "Bytes", num: true }, { label: "Sessions", num: true }, { label: "Source" },
		{ label: "Created" }];
	clear(main, h("h1", {}, "Sandboxes"),
		list.length ? table(cols, list.map(row)) : h("p", { class: "muted", id: "no-sandboxes" }, "No sandbox yet."),
		api.canOp("create_sandbox") ? createForm(life) : null);
}
