// SPDX-License-Identifier: MIT
// The console's only way to eosd: the gateway's operations, POST /v1/<surface>/<operation>
// (doc/eosd.md), authenticated by the session cookie plus the CSRF token in a header
// (doc/console.md). Nothing here knows an operation's meaning; the catalog's surfaces come with
// the session (GET /console/session).

let session = null;

export class EosError extends Error {
	constructor(kind, message, details = null, status = 0) {
		super(message);
		this.kind = kind;
		this.details = details;
		this.status = status;
	}
}

// The session of this browser (null when logged out): {csrf, surfaces, sandbox_id, token_ids,
// expires_at, operations}.
export function current() {
	return session;
}

export function can(surface) {
	return !!(session && session.surfaces[surface]);
}

export function canOp(op) {
	return !!(session && can(session.operations[op]));
}

// The one sandbox a limited login reaches, or null.
export function limitedSandbox() {
	return session ? session.sandbox_id : null;
}

async function asError(resp) {
	let doc = null;
	try {
		doc = await resp.json();
	} catch (e) {
		doc = null;
	}
	const e = doc && doc.error;
	if (!e)
		return new EosError("io", `eosd answered ${resp.status} without an error`, null, resp.status);
	return new EosError(e.kind, e.message, e.details || null, resp.status);
}

function gone(err) {
	if (err.kind === "unauthorized" && session) {
		session = null;
		window.dispatchEvent(new CustomEvent("eos-logged-out", { detail: err.message }));
	}
	return err;
}

export async function loadSession() {
	const resp = await fetch("/console/session", { credentials: "same-origin", cache: "no-store" });
	const doc = resp.ok ? await resp.json() : null;
	session = doc && doc.logged_in ? doc : null;
	return session;
}

// body: {tokens: [...]} or {code}. Throws EosError.
export async function login(body) {
	const resp = await fetch("/console/login", {
		method: "POST",
		credentials: "same-origin",
		headers: { "Content-Type": "application/json" },
		body: JSON.stringify(body),
	});
	if (!resp.ok)
		throw await asError(resp);
	session = await resp.json();
	return session;
}

export async function logout() {
	if (!session)
		return;
	await fetch("/console/logout", {
		method: "POST",
		credentials: "same-origin",
		headers: { "X-EOS-CSRF": session.csrf },
	});
	session = null;
}

function request(op, { sandbox, args, accept, signal } = {}) {
	if (!session)
		throw new EosError("unauthorized", "not logged in");
	const surface = session.operations[op];
	if (!surface)
		throw new EosError("not_found", `no operation '${op}'`);
	const body = { args: args || {} };
	if (sandbox)
		body.sandbox_id = sandbox;
	const headers = { "Content-Type": "application/json", "X-EOS-CSRF": session.csrf };
	if (accept)
		headers.Accept = accept;
	return fetch(`/v1/${surface}/${op}`, {
		method: "POST",
		credentials: "same-origin",
		headers,
		body: JSON.stringify(body),
		signal,
	});
}

// Run op; its result document, or throws EosError (kind, message, details).
export async function call(op, opts = {}) {
	const resp = await request(op, opts);
	if (!resp.ok)
		throw gone(await asError(resp));
	return resp.json();
}

// Split server-sent events out of text; the rest (an unfinished event) is returned.
function sseParse(text, onEvent) {
	const parts = text.split(/\r?\n\r?\n/);
	const rest = parts.pop();
	for (const part of parts) {
		let name = "message";
		const data = [];
		for (const line of part.split(/\r?\n/)) {
			if (line.startsWith("event:"))
				name = line.slice(6).trim();
			else if (line.startsWith("data:"))
				data.push(line.slice(5).replace(/^ /, ""));
		}
		if (data.length)
			onEvent(name, JSON.parse(data.join("\n")));
	}
	return rest;
}

// Run a long-running op with its event stream (Accept: text/event-stream): onEvent(name, data)
// for each progress (or followed) event; resolves with the result event's document, throws the
// error event's EosError. A stream that ends without either resolves null (events follow).
export async function stream(op, opts = {}, onEvent = () => {}) {
	const resp = await request(op, { ...opts, accept: "text/event-stream" });
	if (!resp.ok)
		throw gone(await asError(resp));
	if (!(resp.headers.get("Content-Type") || "").startsWith("text/event-stream"))
		return resp.json();
	const reader = resp.body.getReader();
	const decoder = new TextDecoder();
	let buf = "", result = null, failure = null;
	const take = (name, data) => {
		if (name === "result")
			result = data;
		else if (name === "error")
			failure = new EosError(data.error.kind, data.error.message, data.error.details || null);
		else
			onEvent(name, data);
	};
	for (;;) {
		const { value, done } = await reader.read();
		if (done)
			break;
		buf = sseParse(buf + decoder.decode(value, { stream: true }), take);
	}
	sseParse(buf + "\n\n", take);
	if (failure)
		throw gone(failure);
	return result;
}

// Run op asking for its content as the body (Accept: application/octet-stream: an export):
// {blob, name, result}.
export async function download(op, opts = {}) {
	const resp = await request(op, { ...opts, accept: "application/octet-stream" });
	if (!resp.ok)
		throw gone(await asError(resp));
	const disposition = resp.headers.get("Content-Disposition") || "";
	const m = /filename="([^"]+)"/.exec(disposition);
	const result = JSON.parse(resp.headers.get("X-EOS-Result") || "null");
	return { blob: await resp.blob(), name: m ? m[1] : "export", result };
}
