// SPDX-License-Identifier: MIT
//
// What the MCP client tests share (eos-mcp.test.mjs over stdio, eos-mcp-http.test.mjs over
// eosd's /mcp): checks printed as "ok - …" / "not ok - …" (numbered by the shell script that
// runs the test), tool listing and schema validation, calls that remember which tools were
// called, the tree to import, and the flow that calls every tool of every surface.
import Ajv from 'ajv';
import fs from 'node:fs';
import path from 'node:path';

let failures = 0;
// The names of the tools called so far, for "every tool of every surface was called".
export const called = new Set();

export function check(desc, cond, detail) {
	console.log(`${cond ? 'ok' : 'not ok'} - ${desc}`);
	if (!cond) {
		failures++;
		if (detail !== undefined)
			console.log(`# ${JSON.stringify(detail)?.slice(0, 2000)}`);
	}
	return cond;
}

// Run main, then exit 0 when every check passed.
export function run(main) {
	main().then(() => process.exit(failures ? 1 : 0), (e) => {
		check('the test ran to its end', false, String(e?.stack ?? e));
		process.exit(1);
	});
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Every tool of client, through every page.
export async function allTools(client) {
	const tools = [];
	let cursor;
	let pages = 0;
	do {
		const page = await client.listTools(cursor ? { cursor } : {});
		tools.push(...page.tools);
		cursor = page.nextCursor;
		pages++;
	} while (cursor);
	// listTools caches the output schemas the client validates results with: the last page's
	// only, so list once more in one go for callTool to know them all
	client.cacheToolMetadata(tools);
	return { tools, pages };
}

// Call tool name with args: the result (isError or not). Remembers that name was called.
export async function call(client, name, args, options) {
	called.add(name);
	return client.callTool({ name, arguments: args }, undefined, options);
}

// Call and expect success: the structured content.
export async function ok(client, name, args, desc, options) {
	let res;
	try {
		res = await call(client, name, args, options);
	} catch (e) {
		check(desc, false, String(e));
		return undefined;
	}
	check(desc, !res.isError && typeof res.structuredContent === 'object' &&
		res.content?.[0]?.type === 'text', res);
	return res.structuredContent;
}

export function validateSchemas(tools, label) {
	const ajv = new Ajv({ strict: true, allErrors: true });
	let good = true;
	const bad = [];
	for (const t of tools) {
		try {
			const v = ajv.compile(t.inputSchema);
			ajv.compile(t.outputSchema);
			// every default is a value its own property accepts
			for (const [k, p] of Object.entries(t.inputSchema.properties ?? {}))
				if ('default' in p && !ajv.validate(p, p.default))
					bad.push(`${t.name}.${k} default`);
			if (t.inputSchema.additionalProperties !== false)
				bad.push(`${t.name}: additionalProperties`);
			if (v({ no_such_argument: 1 }))
				bad.push(`${t.name}: accepts an unknown argument`);
			if (typeof t.description !== 'string' || !t.annotations ||
			    typeof t.annotations.readOnlyHint !== 'boolean')
				bad.push(`${t.name}: description or annotations`);
		} catch (e) {
			bad.push(`${t.name}: ${e.message}`);
		}
	}
	good = bad.length === 0;
	check(`${label}: every inputSchema and outputSchema compiles (ajv strict), defaults valid`,
		good, bad);
}

// A directory to import: a.txt (three lines) and 200 files under dir/.
export function makeSource(dir) {
	fs.mkdirSync(path.join(dir, 'dir'), { recursive: true });
	fs.writeFileSync(path.join(dir, 'a.txt'), 'one\ntwo\nthree\n');
	for (let i = 0; i < 200; i++)
		fs.writeFileSync(path.join(dir, 'dir', `f${i}.txt`), `file ${i}\n`.repeat(50));
	return dir;
}

// Every tool of the lists given (arrays of names) was called at least once.
export function checkAllCalled(lists) {
	const every = lists.flat();
	const missed = every.filter((n) => !called.has(n));
	check(`every tool of every surface was called (${every.length})`, missed.length === 0, missed);
}

// The whole life of a sandbox through client c, which has every tool (eos-mcp --set all, or a
// router over one client per surface): every tool of every surface called, bad arguments, an
// unknown tool, progress of an import and of a command, an exec that yields then takes stdin, a
// cancel that stops a command as Ctrl-C, a rejected publish with its conflicts, events follow
// until cancelled. src: a directory to import as sandbox id; tmp: a scratch directory.
export async function testFlow(c, src, tmp, id) {

	// progress notifications of an import
	const progress = [];
	const sb = await ok(c, 'create_sandbox', { source: src, id },
		'create_sandbox imports a directory',
		{ onprogress: (p) => progress.push(p) });
	check('create_sandbox: progress notifications with a message', progress.length > 0 &&
		progress.every((p, i) => typeof p.message === 'string' && p.progress === i + 1),
	progress);
	check('create_sandbox: the result in structuredContent', sb?.sandbox_id === id, sb);

	const list = await ok(c, 'list_sandboxes', {}, 'list_sandboxes');
	check(`list_sandboxes: names ${id}`, list?.sandboxes?.some((s) => s.sandbox_id === id));
	await ok(c, 'inspect_sandbox', { sandbox_id: id }, 'inspect_sandbox');

	// bad arguments: a tool result, not a protocol error
	let r = await call(c, 'file_read', { sandbox_id: id, path: 'a.txt', limit: 0 });
	check('a value out of range: isError, invalid_request naming the argument',
		r.isError && r.structuredContent?.error?.kind === 'invalid_request' &&
		/limit/.test(r.content[0].text), r);
	r = await call(c, 'file_read', { path: 'a.txt' });
	check('a missing sandbox_id: isError naming it',
		r.isError && /sandbox_id/.test(r.content[0].text), r);
	r = await call(c, 'list_sandboxes', { bogus: true });
	check('an unknown argument: isError naming it', r.isError && /bogus/.test(r.content[0].text), r);
	try {
		await c.callTool({ name: 'no_such_tool', arguments: {} });
		check('an unknown tool: a protocol error', false);
	} catch (e) {
		check('an unknown tool: a protocol error (-32602)', e.code === -32602, String(e));
	}
	r = await call(c, 'inspect_sandbox', { sandbox_id: 'nope' });
	check("eosd's error envelope: isError, kind and message",
		r.isError && r.structuredContent?.error?.kind === 'not_found' &&
		/^not_found: /.test(r.content[0].text), r);

	// sessions and files
	const S = { sandbox_id: id };
	await ok(c, 'create_workspace_session', { ...S, workspace_session_id: 'wa' }, 'create_workspace_session wa');
	await ok(c, 'create_workspace_session', { ...S, workspace_session_id: 'wb' }, 'create_workspace_session wb');
	const sl = await ok(c, 'list_workspace_sessions', S, 'list_workspace_sessions');
	check('list_workspace_sessions: both', JSON.stringify(sl).includes('wa') && JSON.stringify(sl).includes('wb'), sl);
	await ok(c, 'inspect_workspace_session', { ...S, workspace_session_id: 'wa' }, 'inspect_workspace_session');
	const rd = await ok(c, 'file_read', { ...S, path: 'a.txt' }, 'file_read');
	check('file_read: the content', JSON.stringify(rd).includes('one'), rd);
	await ok(c, 'file_write', { ...S, workspace_session_id: 'wa', path: 'new.txt', content: 'hello\n' }, 'file_write');
	await ok(c, 'file_edit', { ...S, workspace_session_id: 'wa', path: 'a.txt',
		edits: [{ old_string: 'one', new_string: 'ONE-a' }] }, 'file_edit in wa');
	await ok(c, 'file_edit', { ...S, workspace_session_id: 'wb', path: 'a.txt',
		edits: [{ old_string: 'one', new_string: 'ONE-b' }] }, 'file_edit in wb (the same line)');
	const fl = await ok(c, 'file_list', { ...S, workspace_session_id: 'wa' }, 'file_list');
	check('file_list: the new file', JSON.stringify(fl).includes('new.txt'), fl);
	const mnt = path.join(tmp, `mnt-${id}`);
	fs.mkdirSync(mnt);
	await ok(c, 'mount_workspace_session', { ...S, workspace_session_id: 'wa', path: mnt }, 'mount_workspace_session');
	check('the mounted view shows the session', fs.readFileSync(path.join(mnt, 'new.txt'), 'utf8') === 'hello\n');
	await ok(c, 'unmount_workspace_session', { ...S, workspace_session_id: 'wa' }, 'unmount_workspace_session');
	await ok(c, 'fork_workspace_session', { ...S, workspace_session_id: 'wa', new_workspace_session_id: 'wf' }, 'fork_workspace_session');
	await ok(c, 'destroy_workspace_session', { ...S, workspace_session_id: 'wf' }, 'destroy_workspace_session');

	// a command that yields, takes stdin, completes
	let ex = await ok(c, 'exec_command', { ...S, workspace_session_id: 'wa',
		cmd: 'echo start; read x; echo "got $x"', yield_time_ms: 300 }, 'exec_command that waits for input');
	check('exec_command: running at its yield', ex?.status === 'running' &&
		/start/.test(ex?.output), ex);
	const cmdId = ex?.command_session_id;
	ex = await ok(c, 'write_command_stdin', { ...S, command_session_id: cmdId, chars: 'abc\n',
		yield_time_ms: 5000 }, 'write_command_stdin');
	check('write_command_stdin: the command completed with its output',
		ex?.status === 'completed' && /got abc/.test(ex?.output), ex);
	const lines = await ok(c, 'read_command_lines', { ...S, command_session_id: cmdId }, 'read_command_lines');
	check('read_command_lines: the transcript', JSON.stringify(lines?.lines).includes('got abc'), lines);

	// a long yield, followed in steps: progress, the outputs joined
	const eprog = [];
	ex = await ok(c, 'exec_command', { ...S, workspace_session_id: 'wa',
		cmd: 'for i in 1 2 3; do echo tick$i; sleep 0.4; done', yield_time_ms: 10000 },
	'exec_command with a long yield', { onprogress: (p) => eprog.push(p) });
	check('exec_command: progress while it runs, the whole output at the end',
		eprog.length >= 1 && ex?.status === 'completed' &&
		/tick1\ntick2\ntick3/.test(ex?.output), { eprog, ex });

	// cancel through the SDK's AbortSignal (notifications/cancelled): Ctrl-C to the command
	const ac = new AbortController();
	let runningId;
	const p = call(c, 'exec_command', { ...S, workspace_session_id: 'wa', cmd: 'sleep 60',
		yield_time_ms: 30000 }, {
		signal: ac.signal,
		onprogress: (n) => {
			runningId = /^(\S+): running/.exec(n.message)?.[1];
			ac.abort('enough');
		},
	});
	let aborted = false;
	try {
		await p;
	} catch (e) {
		aborted = true;
	}
	check('a cancelled call is rejected by the client', aborted && runningId !== undefined, runningId);
	let st;
	for (let i = 0; i < 100 && runningId; i++) {
		st = await call(c, 'read_command_lines', { ...S, command_session_id: runningId });
		if (st.structuredContent?.status !== 'running')
			break;
		await sleep(100);
	}
	check('the cancelled command was stopped as by Ctrl-C (status cancelled)',
		st?.structuredContent?.status === 'cancelled', st?.structuredContent);
	await ok(c, 'ping', {}, 'ping answers after a cancel');

	// publish: one accepted, the other rejected with its conflicts in structuredContent
	const pa = await ok(c, 'publish_workspace_session', { ...S, workspace_session_id: 'wa' }, 'publish wa');
	check('publish wa: a new version', typeof pa?.version === 'string', pa);
	r = await call(c, 'publish_workspace_session', { ...S, workspace_session_id: 'wb' });
	check('publish wb is rejected: isError, publish_rejected with conflicts',
		r.isError && r.structuredContent?.error?.kind === 'publish_rejected' &&
		r.structuredContent.error.details?.conflicts?.[0]?.path === 'a.txt', r);
	await ok(c, 'destroy_workspace_session', { ...S, workspace_session_id: 'wb' }, 'destroy wb');
	const bl = await ok(c, 'file_blame', { ...S, path: 'a.txt' }, 'file_blame');
	check('file_blame: line 1 is the published session\'s', bl?.ranges?.[0]?.owner === 'workspace_session:wa', bl);

	// an implicit session: exec without a session id
	ex = await ok(c, 'exec_command', { ...S, cmd: 'echo implicit > imp.txt' }, 'exec_command in an implicit session');

	const xprog = [];
	const patch = await ok(c, 'export_changes', { ...S, format: 'patch' }, 'export_changes as a patch',
		{ onprogress: (n) => xprog.push(n) });
	check('export_changes: the patch inline', /ONE-a/.test(patch?.patch ?? ''), patch);
	await ok(c, 'squash_layerstacks', S, 'squash_layerstacks');
	const tok = await ok(c, 'issue_token', { ...S, surface: 'runtime' }, 'issue_token');
	await ok(c, 'revoke_token', { token_id: tok?.token_id ?? 'x' }, 'revoke_token');

	// observability
	await ok(c, 'version', {}, 'version');
	await ok(c, 'snapshot', {}, 'snapshot');
	await ok(c, 'snapshot', S, 'snapshot of one sandbox');
	await ok(c, 'trace', { last: true }, 'trace --last');
	await ok(c, 'events', { last_n: 5 }, 'events');
	r = await call(c, 'events', { follow: true });
	check('events follow without a progressToken: isError, invalid_request',
		r.isError && r.structuredContent?.error?.kind === 'invalid_request', r);
	const fac = new AbortController();
	const followed = [];
	let fended = false;
	try {
		await call(c, 'events', { follow: true, last_n: 3 }, {
			signal: fac.signal,
			onprogress: (n) => {
				followed.push(n);
				if (followed.length === 3)
					fac.abort('seen');
			},
		});
	} catch (e) {
		fended = true;
	}
	check('events follow: each event a progress notification, until cancelled',
		fended && followed.length >= 3 && followed.every((n) => /^event: \{/.test(n.message)),
	followed);
	await ok(c, 'ping', {}, 'ping answers after a cancelled follow');
	await ok(c, 'cgroup', { scope: 'sandbox', id }, 'cgroup');
	await ok(c, 'layerstack', S, 'layerstack');
}
