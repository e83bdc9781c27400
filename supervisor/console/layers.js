// SPDX-License-Identifier: MIT
// The LayerStack as a timeline (layerstack): layers oldest first with their owners, sizes,
// leases and squashed ranges; a layer's changes (export_changes as a patch from its parent).
import * as api from "./api.js";
import { h, clear, fmtBytes, fmtTime, ownerChip, errorBox, patchView, enc } from "./ui.js";

function leaseChips(sandbox, leases) {
	return leases.map((l) => l.workspace_session_id
		? h("a", { class: "badge", href: `#/session/${enc(sandbox)}/${enc(l.workspace_session_id)}`, title: `lease ${l.name}` }, `⚓ ${l.workspace_session_id}`)
		: h("span", { class: "badge", title: "lease" }, `⚓ ${l.name}`));
}

function card(sandbox, l, maxBytes, select) {
	const width = maxBytes ? Math.max(2, Math.round((l.bytes / maxBytes) * 100)) : 2;
	const bar = h("div", { class: "bar", title: `${fmtBytes(l.bytes)} written` });
	bar.style.width = `${width}%`;
	const p = l.paths || {};
	const el = h("li", { class: `layer${l.head ? " head" : ""}`, "data-version": l.version },
		h("div", { class: "row spread" },
			h("button", { type: "button", class: "secondary ver", "aria-label": `Changes of layer ${l.version}`, onclick: () => select(l, el) }, l.version),
			l.head ? h("span", { class: "badge ok" }, "head") : null),
		h("div", {}, ownerChip(sandbox, l.owner)),
		h("div", { class: "muted" }, fmtTime(l.created)),
		bar,
		h("div", {}, `+${p.created ?? 0} ~${p.modified ?? 0} −${p.deleted ?? 0} paths`),
		h("div", { class: "muted" }, `${fmtBytes(l.bytes)} written, ${l.stored_bytes === null ? "?" : fmtBytes(l.stored_bytes)} stored, ${fmtBytes(l.shared_bytes)} shared`),
		l.squashed ? h("div", {}, h("span", { class: "badge warn" }, `squashed ${l.squashed.from}–${l.squashed.to}`)) : null,
		h("div", { class: "row" }, leaseChips(sandbox, l.leases || [])));
	return el;
}

// The changes of layer l: a patch from its parent to it (management: export_changes).
async function changes(sandbox, l, out, life) {
	if (!api.canOp("export_changes")) {
		clear(out, h("p", { class: "muted" }, "A layer's changes need the management token."));
		return;
	}
	clear(out, h("p", { class: "muted" }, `Loading the changes of ${l.version}…`));
	const args = { format: "patch", to: l.version };
	if (l.parent)
		args.from = l.parent;
	try {
		const r = await api.call("export_changes", { sandbox, args });
		if (life.over)
			return;
		clear(out, h("h3", {}, `Changes of ${l.version}`, l.parent ? ` (from ${l.parent})` : " (the import)"),
			r.patch ? patchView(r.patch) : h("p", { class: "muted" }, "No textual change."));
	} catch (e) {
		clear(out, errorBox(e));
	}
}

export function timeline(sandbox, stack, life) {
	const out = h("div", { id: "layer-changes", "aria-live": "polite" });
	const maxBytes = Math.max(0, ...stack.layers.map((l) => l.bytes || 0));
	let selected = null;
	const select = (l, el) => {
		if (selected)
			selected.classList.remove("selected");
		selected = el;
		el.classList.add("selected");
		changes(sandbox, l, out, life);
	};
	const list = h("ol", { class: "timeline", id: "timeline", "aria-label": "Layers, oldest first" },
		stack.layers.map((l) => card(sandbox, l, maxBytes, select)));
	return h("div", {}, list, out);
}
