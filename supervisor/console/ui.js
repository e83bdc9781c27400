// SPDX-License-Identifier: MIT
// DOM helpers and formatting shared by the console's pages. No framework: h() builds elements.

// h("a", {href: "#/", class: "x", onclick: fn}, "text", child, [more]) → an element.
export function h(tag, props = {}, ...children) {
	const el = document.createElement(tag);
	for (const [k, v] of Object.entries(props || {})) {
		if (v === null || v === undefined || v === false)
			continue;
		if (k.startsWith("on") && typeof v === "function")
			el.addEventListener(k.slice(2), v);
		else if (k === "class")
			el.className = v;
		else if (k === "text")
			el.textContent = v;
		else if (k === "hue")
			el.style.setProperty("--hue", String(v));
		else if (k in el && typeof v !== "string")
			el[k] = v;
		else
			el.setAttribute(k, v === true ? "" : String(v));
	}
	append(el, children);
	return el;
}

function append(el, children) {
	for (const c of children) {
		if (c === null || c === undefined || c === false)
			continue;
		if (Array.isArray(c))
			append(el, c);
		else
			el.append(c instanceof Node ? c : document.createTextNode(String(c)));
	}
}

export function clear(el, ...children) {
	el.replaceChildren();
	append(el, children);
	return el;
}

export function fmtBytes(n) {
	if (n === null || n === undefined)
		return "–";
	const units = ["B", "KiB", "MiB", "GiB", "TiB"];
	let i = 0, v = Number(n);
	while (v >= 1024 && i < units.length - 1) {
		v /= 1024;
		i++;
	}
	return i === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

// A time (RFC 3339 text or ns since the epoch) in the reader's locale.
export function fmtTime(t) {
	if (t === null || t === undefined)
		return "–";
	const d = typeof t === "number" ? new Date(t / 1e6) : new Date(t);
	return isNaN(d) ? String(t) : d.toLocaleString();
}

export function fmtMs(ms) {
	if (ms === null || ms === undefined)
		return "–";
	return ms < 1000 ? `${Math.round(ms * 10) / 10} ms` : `${(ms / 1000).toFixed(2)} s`;
}

// A stable hue for an owner ("operation:cmd-3", "workspace_session:ws-1"): its blame colour.
export function ownerHue(owner) {
	let x = 2166136261;
	for (let i = 0; i < owner.length; i++)
		x = Math.imul(x ^ owner.charCodeAt(i), 16777619);
	/* mixed again, so that owners a character apart ("cmd-1", "cmd-3") get far hues */
	x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
	x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
	return ((x ^ (x >>> 16)) >>> 0) % 360;
}

// Where an owner links to: its command's transcript, its session, or nowhere.
export function ownerHref(sandbox, owner) {
	const [kind, id] = owner.split(/:(.*)/s);
	if (kind === "operation" && /^cmd-\d+$/.test(id))
		return `#/command/${enc(sandbox)}/${enc(id)}`;
	if (kind === "workspace_session")
		return `#/session/${enc(sandbox)}/${enc(id)}`;
	return null;
}

export function ownerChip(sandbox, owner) {
	const href = ownerHref(sandbox, owner);
	const props = { class: "owner-chip owner-color", hue: ownerHue(owner), title: owner };
	return href ? h("a", { ...props, href }, owner) : h("span", props, owner);
}

export const enc = encodeURIComponent;

export function badge(text, tone) {
	return h("span", { class: `badge ${tone || ""}` }, text);
}

const tones = {
	completed: "ok", running: "warn", live: "ok", ready: "ok", published: "ok", ok: "ok",
	error: "bad", cancelled: "bad", timed_out: "bad", failed: "bad", rejected: "bad",
	publish_rejected: "bad", unavailable: "bad", partial: "warn", no_op: "",
};

export function statusBadge(status) {
	return badge(status ?? "–", tones[status] || "");
}

// <dl class="facts"> of [label, value] pairs.
export function facts(pairs) {
	return h("dl", { class: "facts" },
		pairs.filter((p) => p).map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v ?? "–"))));
}

// A table: cols [{label, num?}], rows of cell arrays; wrapped to scroll on a narrow window.
export function table(cols, rows, caption) {
	return h("div", { class: "table-wrap" }, h("table", {},
		caption ? h("caption", { class: "muted" }, caption) : null,
		h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col", class: c.num ? "num" : "" }, c.label)))),
		h("tbody", {}, rows.map((r) => h("tr", {}, r.map((v, i) => h("td", { class: cols[i] && cols[i].num ? "num" : "" }, v)))))));
}

export function errorBox(err) {
	return h("div", { class: "error-box", role: "alert" },
		h("strong", {}, err.kind || "error"), ": ", err.message || String(err));
}

// An alert at the top of the page (errors; tone "info" for news), dismissable. It stays through
// the next change of page (an action's news often comes with one), and goes at the one after.
export function notify(message, tone) {
	const box = document.getElementById("alerts");
	const el = h("div", { class: `alert ${tone || ""}`, "data-pages": "1" }, h("span", {}, message),
		h("button", { type: "button", "aria-label": "Dismiss", onclick: () => el.remove() }, "×"));
	box.append(el);
	return el;
}

export function notifyError(err) {
	return notify(`${err.kind || "error"}: ${err.message || err}`);
}

// A new page: alerts of the page before stay once more, older ones go.
export function clearAlerts() {
	for (const el of [...document.getElementById("alerts").children]) {
		if (el.dataset.pages === "1")
			el.dataset.pages = "0";
		else
			el.remove();
	}
}

// Run fn while button shows it is busy; errors go to notifyError (or onError).
export async function busy(button, fn, onError = notifyError) {
	const label = button.textContent;
	button.disabled = true;
	button.setAttribute("aria-busy", "true");
	try {
		return await fn();
	} catch (e) {
		onError(e);
		return undefined;
	} finally {
		button.disabled = false;
		button.removeAttribute("aria-busy");
		button.textContent = label;
	}
}

// A page's lifetime: timers and requests it started end when the page is left.
export class Life {
	constructor() {
		this.abort = new AbortController();
		this.timers = new Set();
	}
	get signal() {
		return this.abort.signal;
	}
	get over() {
		return this.abort.signal.aborted;
	}
	every(ms, fn) {
		const t = setInterval(fn, ms);
		this.timers.add(t);
		return t;
	}
	// p, a page's work nobody awaits (a reload after an action): its failure is shown, unless
	// the page was left meanwhile (its requests are aborted then, which is no failure).
	settle(p) {
		return p.catch((e) => {
			if (!this.over)
				notifyError(e);
		});
	}
	after(ms, fn) {
		const t = setTimeout(() => { this.timers.delete(t); fn(); }, ms);
		this.timers.add(t);
		return t;
	}
	end() {
		this.abort.abort();
		for (const t of this.timers) {
			clearInterval(t);
			clearTimeout(t);
		}
		this.timers.clear();
	}
}

// Save blob as a file called name (a download the browser shows).
export function saveBlob(blob, name) {
	const url = URL.createObjectURL(blob);
	const a = h("a", { href: url, download: name, class: "skip" }, name);
	document.body.append(a);
	a.click();
	a.remove();
	setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// The lines of a patch as a table with its additions and deletions marked.
export function patchView(text) {
	const rows = text.split("\n").map((line) => {
		const cls = line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ") ? "hunk"
			: line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
		return h("tr", { class: cls }, h("td", { class: "text" }, line));
	});
	return h("div", { class: "code" }, h("table", {}, h("tbody", {}, rows)));
}
