// SPDX-License-Identifier: MIT
// The console's entry: login, the header, and the router over location.hash. Each page is a
// module whose render(main, params, life) draws into main; life ends when the page is left.
import * as api from "./api.js";
import { h, clear, errorBox, clearAlerts, notify, Life, enc } from "./ui.js";
import * as sandboxes from "./sandboxes.js";
import * as sandbox from "./sandbox.js";
import * as session from "./session.js";
import * as command from "./command.js";
import * as files from "./files.js";
import * as obs from "./obs.js";

const main = document.getElementById("main");
let life = null;

// "#/sandbox/sb1/layers?x=1" → {parts: ["sandbox", "sb1", "layers"], query}
function parseHash() {
	const raw = location.hash.replace(/^#\/?/, "");
	const [path, q] = raw.split("?");
	const parts = path.split("/").filter((p) => p).map(decodeURIComponent);
	return { parts, query: new URLSearchParams(q || "") };
}

const routes = {
	"": (p) => sandboxes.render(main, p, life),
	sandbox: (p) => sandbox.render(main, p, life),
	session: (p) => session.render(main, p, life),
	command: (p) => command.render(main, p, life),
	files: (p) => files.renderBrowser(main, p, life),
	file: (p) => files.renderFile(main, p, life),
	diff: (p) => files.renderDiff(main, p, life),
	events: (p) => obs.renderEvents(main, p, life),
	trace: (p) => obs.renderTrace(main, p, life),
	resources: (p) => obs.renderResources(main, p, life),
};

function navLinks() {
	const nav = document.getElementById("nav");
	const { parts } = parseHash();
	const here = parts[0] || "";
	const links = [["", "Sandboxes"]];
	if (api.can("observability")) {
		links.push(["events", "Events"]);
		links.push(["trace", "Last trace"]);
	}
	const limited = api.limitedSandbox();
	if (limited)
		links[0] = ["sandbox", `Sandbox ${limited}`, `#/sandbox/${enc(limited)}`];
	clear(nav, links.map(([key, label, href]) => h("a", {
		href: href || `#/${key}`,
		"aria-current": here === key ? "page" : null,
	}, label)));
}

function whoami() {
	const s = api.current();
	const who = document.getElementById("who");
	if (!s) {
		clear(who);
		return;
	}
	const surfaces = Object.keys(s.surfaces).join(", ");
	const scope = s.sandbox_id ? `sandbox ${s.sandbox_id}` : "all sandboxes";
	clear(who, h("span", { id: "scope" }, `${scope} · ${surfaces}`),
		h("button", { type: "button", class: "secondary", id: "logout", onclick: doLogout }, "Log out"));
}

async function doLogout() {
	await api.logout();
	location.hash = "#/";
	start();
}

async function route() {
	if (life)
		life.end();
	life = new Life();
	clearAlerts();
	if (!api.current()) {
		loginView();
		return;
	}
	navLinks();
	const p = parseHash();
	const fn = routes[p.parts[0] || ""];
	clear(main, h("p", { class: "muted" }, "Loading…"));
	if (!fn) {
		clear(main, h("h1", {}, "Not found"), h("p", {}, "No such page: ", location.hash));
		return;
	}
	try {
		await fn(p);
	} catch (e) {
		if (!life.over)
			clear(main, h("h1", {}, "This page could not be shown"), errorBox(e));
	}
}

function loginView(message) {
	clear(document.getElementById("nav"));
	whoami();
	const field = h("input", { id: "tokens", name: "tokens", type: "password", class: "wide mono", required: true, autocomplete: "off", spellcheck: "false" });
	const out = h("div", { "aria-live": "polite" });
	const form = h("form", { class: "panel login", onsubmit: async (ev) => {
		ev.preventDefault();
		const tokens = field.value.split(/\s+/).filter((t) => t);
		try {
			await api.login({ tokens });
			field.value = "";
			whoami();
			route();
		} catch (e) {
			clear(out, errorBox(e));
		}
	} },
	h("h1", {}, "Log in to eos"),
	h("p", { class: "muted" }, "Paste the management token (every sandbox, every surface) — ",
		h("code", {}, "<state>/tokens/management"), " — or tokens limited to one sandbox from ",
		h("code", {}, "eosctl token issue"), ", separated by spaces. ",
		h("code", {}, "eosctl console"), " prints a link that logs in at once."),
	message ? h("p", { class: "error-box" }, message) : null,
	h("label", { for: "tokens" }, "Token(s)"), field,
	h("div", { class: "row" }, h("button", { type: "submit", id: "login" }, "Log in")), out);
	clear(main, form);
	field.focus();
}

async function start() {
	const m = /^#login=([0-9a-f]+)$/.exec(location.hash);
	if (m) {
		history.replaceState(null, "", location.pathname + "#/");
		try {
			await api.login({ code: m[1] });
		} catch (e) {
			await api.loadSession();
			if (!api.current()) {
				loginView(`${e.kind}: ${e.message}`);
				return;
			}
		}
	} else {
		await api.loadSession();
	}
	whoami();
	route();
}

window.addEventListener("hashchange", route);
window.addEventListener("eos-logged-out", (ev) => {
	if (life)
		life.end();
	loginView(ev.detail);
	notify("Logged out: " + ev.detail);
});
start();
