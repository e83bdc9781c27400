// SPDX-License-Identifier: MIT
// Commands: one command's live transcript with a stdin box and Ctrl-C; the recent commands of
// a sandbox or session (from the command.* events); a box to start one in a session.
//
// The transcript follows by paging read_command_lines from the last line seen while the
// command runs: it never reads through write_command_stdin's cursor, which belongs to whoever
// runs the command (an agent), so watching a command takes nothing from it.
import * as api from "./api.js";
import { h, clear, table, fmtTime, fmtMs, statusBadge, errorBox, busy, enc } from "./ui.js";

const POLL_MS = 300;

// The recent commands of sandbox (and session ws, or all): newest first, from the events.
export async function recentCommands(sandbox, ws, life) {
	const r = await api.call("events", { sandbox, args: { name: "command.", last_n: 500 }, signal: life.signal });
	const byId = new Map();
	for (const e of r.events) {
		const a = e.attributes || {};
		const id = a.command_session_id;
		if (!id || (ws && e.workspace_session_id !== ws))
			continue;
		const c = byId.get(id) || { id, ws: e.workspace_session_id, status: "running" };
		if (e.name === "command.started") {
			c.cmd = a.cmd ?? a.command;
			c.started = e.time;
		} else if (e.name === "command.exited") {
			c.exit_code = a.exit_code;
			c.status = a.status || (a.exit_code === 0 ? "completed" : a.exit_code === 130 ? "cancelled"
				: a.exit_code === 124 ? "timed_out" : "error");
		}
		byId.set(id, c);
	}
	return [...byId.values()].reverse();
}

export function commandsTable(sandbox, cmds, empty = "No command yet.") {
	if (!cmds.length)
		return h("p", { class: "muted" }, empty);
	const cols = ["Command", "Session", "Command line", "Status", "Exit", "Started"].map((label) => ({ label }));
	return table(cols, cmds.map((c) => [
		h("a", { href: `#/command/${enc(sandbox)}/${enc(c.id)}` }, c.id),
		c.ws ? h("a", { href: `#/session/${enc(sandbox)}/${enc(c.ws)}` }, c.ws) : "–",
		h("code", {}, c.cmd ?? "–"), statusBadge(c.status),
		c.exit_code === null || c.exit_code === undefined ? "–" : String(c.exit_code),
		fmtTime(c.started),
	]));
}

// Start a command in session ws; go to its page.
export function newCommandForm(sandbox, ws) {
	const cmd = h("input", { id: "command-line", name: "cmd", class: "wide mono", required: true, placeholder: "make test", autocomplete: "off", spellcheck: "false" });
	const tty = h("input", { type: "checkbox", id: "command-tty", name: "tty" });
	const go = h("button", { type: "submit", id: "command-run" }, "Run");
	return h("form", { class: "inline", "aria-label": "New command", onsubmit: (ev) => {
		ev.preventDefault();
		busy(go, async () => {
			const r = await api.call("exec_command", { sandbox, args: { cmd: cmd.value, workspace_session_id: ws, tty: tty.checked, yield_time_ms: 0, max_output_bytes: 0 } });
			location.hash = `#/command/${enc(sandbox)}/${enc(r.command_session_id)}`;
		});
	} },
	h("label", { for: "command-line" }, "Command (bash -c, in /workspace)", cmd),
	h("label", { class: "check", for: "command-tty" }, tty, "terminal"), go);
}

function statusFacts(el, r) {
	clear(el, statusBadge(r.status),
		r.exit_code === null || r.exit_code === undefined ? null : ` exit code ${r.exit_code}`,
		r.signal ? ` (${r.signal})` : null,
		` · ${fmtMs(r.wall_time_ms)}`, r.background ? " · background processes still run" : null,
		r.transcript_truncated ? " · transcript cut at 64 MiB" : null);
}

// Follow the transcript into pre: committed lines stay, the last line of a running command is
// read again next time (it may not be finished).
function follow(sandbox, id, pre, onResult, life) {
	let committed = 0;
	let partial = null;
	const tick = async () => {
		if (life.over)
			return;
		let r;
		try {
			r = await api.call("read_command_lines", { sandbox, args: { command_session_id: id, offset: committed + 1, limit: 2000 }, signal: life.signal });
		} catch (e) {
			if (!life.over)
				pre.after(errorBox(e));
			return;
		}
		if (life.over)
			return;
		const lines = r.lines;
		const more = r.next_offset !== null;
		const keepLast = !r.complete && !more && lines.length > 0;
		if (partial)
			partial.remove();
		partial = null;
		const done = keepLast ? lines.slice(0, -1) : lines;
		if (done.length)
			pre.append(done.join("\n") + "\n");
		committed += done.length;
		if (keepLast)
			partial = pre.appendChild(document.createTextNode(lines[lines.length - 1]));
		if (done.length || keepLast)
			pre.scrollTop = pre.scrollHeight;
		onResult(r);
		if (!r.complete)
			life.after(more ? 0 : POLL_MS, tick);
	};
	tick();
}

function stdinForm(sandbox, id, onReply) {
	const text = h("input", { id: "stdin-text", name: "chars", class: "wide mono", autocomplete: "off", spellcheck: "false", placeholder: "input for the command" });
	const send = h("button", { type: "submit", id: "stdin-send" }, "Send ⏎");
	const eof = h("button", { type: "button", id: "stdin-close", class: "secondary" }, "Close input (Ctrl-D)");
	const ctrlc = h("button", { type: "button", id: "ctrl-c", class: "danger" }, "Ctrl-C");
	const write = (args) => api.call("write_command_stdin", { sandbox, args: { command_session_id: id, yield_time_ms: 0, max_output_bytes: 0, ...args } }).then(onReply);
	eof.onclick = () => busy(eof, () => write({ close_stdin: true }));
	ctrlc.onclick = () => busy(ctrlc, () => write({ chars: "\u0003" }));
	const form = h("form", { class: "inline", "aria-label": "Standard input", onsubmit: (ev) => {
		ev.preventDefault();
		busy(send, async () => {
			await write({ chars: text.value + "\n" });
			text.value = "";
			text.focus();
		});
	} }, h("label", { for: "stdin-text" }, "Standard input", text), send, eof, ctrlc);
	form.disable = () => form.querySelectorAll("input, button").forEach((el) => { el.disabled = true; });
	return form;
}

export async function render(main, params, life) {
	const [, sandbox, id] = params.parts;
	const first = await api.call("read_command_lines", { sandbox, args: { command_session_id: id, offset: 1, limit: 1 }, signal: life.signal });
	if (life.over)
		return;
	const status = h("p", { id: "command-status", "aria-live": "polite" });
	const pre = h("pre", { class: "transcript", id: "transcript", role: "log", "aria-label": "Transcript", tabindex: 0 });
	let ended = false;
	const form = stdinForm(sandbox, id, (r) => statusFacts(status, r));
	const onResult = (r) => {
		statusFacts(status, r);
		if (r.complete && !ended) {
			ended = true;
			form.disable();
		}
	};
	clear(main,
		h("h1", {}, "Command ", h("span", { class: "mono" }, id)),
		h("p", {}, h("code", { id: "command-cmd" }, first.cmd), " in session ",
			h("a", { href: `#/session/${enc(sandbox)}/${enc(first.workspace_session_id)}` }, first.workspace_session_id),
			first.implicit_session ? " (implicit)" : "", ", started ", fmtTime(first.started),
			api.can("observability") ? [" · ", h("a", { href: `#/events?sandbox=${enc(sandbox)}&name=command.` }, "events")] : null),
		status, pre, form);
	statusFacts(status, first);
	follow(sandbox, id, pre, onResult, life);
}
