// SPDX-License-Identifier: MIT
//
// eos-mcp driven by the official MCP TypeScript SDK (npm @modelcontextprotocol/sdk): its Client
// over StdioClientTransport spawns the eos-mcp just built against a private eosd (the state
// directory of EOS_STATE_DIR, started by eos-mcp itself). Prints one "ok - …" or "not ok - …"
// line per check, for tests/integration/mcp-stdio.sh to number.
//
// Environment: EOS_MCP_BIN (the binary), MCP_TMP (a scratch directory of this run),
// EOS_STATE_DIR and EOS_RUNTIME_DIR (eosd's).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import Ajv from 'ajv';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const BIN = process.env.EOS_MCP_BIN;
const TMP = process.env.MCP_TMP;
let failures = 0;
const called = new Set();

function check(desc, cond, detail) {
	console.log(`${cond ? 'ok' : 'not ok'} - ${desc}`);
	if (!cond) {
		failures++;
		if (detail !== undefined)
			console.log(`# ${JSON.stringify(detail)?.slice(0, 2000)}`);
	}
	return cond;
}

async function connect(args, env) {
	const transport = new StdioClientTransport({
		command: BIN,
		args,
		env: { ...process.env, ...env },
		stderr: 'inherit',
	});
	const client = new Client({ name: 'eos-mcp-test', version: '1.0.0' });
	await client.connect(transport);
	return client;
}

// Every tool of client, through every page.
async function allTools(client) {
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
async function call(client, name, args, options) {
	called.add(name);
	return client.callTool({ name, arguments: args }, undefined, options);
}

// Call and expect success: the structured content.
async function ok(client, name, args, desc, options) {
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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function validateSchemas(tools, label) {
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

async function testSurfaces() {
	const expect = {};
	const counts = {};
	for (const set of ['management', 'runtime', 'observability']) {
		const c = await connect(['--set', set]);
		const { tools, pages } = await allTools(c);
		counts[set] = tools.length;
		expect[set] = tools.map((t) => t.name);
		check(`${set}: tools listed (${tools.length} on ${pages} page(s))`, tools.length > 0);
		validateSchemas(tools, set);
		await c.close();
	}
	const all = await connect(['--set', 'all']);
	const { tools, pages } = await allTools(all);
	check(`all: every surface's tools (${tools.length} on ${pages} pages)`,
		tools.length === counts.management + counts.runtime + counts.observability &&
		pages >= 2, { tools: tools.length, counts, pages });
	const ver = all.getServerVersion();
	check('initialize: serverInfo name eos', ver?.name === 'eos', ver);
	check('initialize: instructions', typeof all.getInstructions() === 'string');
	check('initialize: capabilities.tools', all.getServerCapabilities()?.tools !== undefined);
	const fr = tools.find((t) => t.name === 'file_read');
	check('file_read: sandbox_id required, path required, limit bounded',
		fr.inputSchema.required.includes('sandbox_id') &&
		fr.inputSchema.required.includes('path') &&
		fr.inputSchema.properties.limit.minimum === 1 &&
		fr.inputSchema.properties.limit.default === 2000, fr.inputSchema);
	const ex = tools.find((t) => t.name === 'export_changes');
	check('export_changes: format is an enum', ex.inputSchema.properties.format.enum.includes('patch'));
	const ds = tools.find((t) => t.name === 'destroy_sandbox');
	check('destroy_sandbox: destructive hint', ds.annotations.destructiveHint === true &&
		ds.annotations.openWorldHint === false, ds.annotations);
	const ls = tools.find((t) => t.name === 'list_sandboxes');
	check('list_sandboxes: read-only hint', ls.annotations.readOnlyHint === true);
	await all.close();
	return expect;
}

async function testProtocolErrors() {
	// raw lines: the SDK never sends these
	const child = spawn(BIN, ['--set', 'observability'], { stdio: ['pipe', 'pipe', 'inherit'] });
	const lines = [];
	let buf = '';
	child.stdout.on('data', (d) => {
		buf += d;
		let i;
		while ((i = buf.indexOf('\n')) >= 0) {
			lines.push(JSON.parse(buf.slice(0, i)));
			buf = buf.slice(i + 1);
		}
	});
	const send = (s) => child.stdin.write(s + '\n');
	send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
		params: { protocolVersion: '2024-11-05', capabilities: {},
			clientInfo: { name: 'raw', version: '1' } } }));
	send('{not json');
	send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'no/such' }));
	send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
	send(JSON.stringify({ jsonrpc: '1.0', id: 3, method: 'ping' }));
	send(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list', params: { cursor: 'x' } }));
	send(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: {} }));
	send(JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'ping' }));
	child.stdin.end();
	await new Promise((r) => child.on('close', r));
	const by = (id) => lines.find((l) => l.id === id);
	check('initialize with an older revision is answered with 2025-11-25',
		by(1)?.result?.protocolVersion === '2025-11-25' &&
		LATEST_PROTOCOL_VERSION === '2025-11-25', by(1));
	check('malformed JSON: -32700 with id null',
		lines.some((l) => l.id === null && l.error?.code === -32700), lines);
	check('unknown method: -32601', by(2)?.error?.code === -32601, by(2));
	check('jsonrpc 1.0: -32600', by(3)?.error?.code === -32600, by(3));
	check('a bad cursor: -32602', by(4)?.error?.code === -32602, by(4));
	check('tools/call without a name: -32602', by(5)?.error?.code === -32602, by(5));
	check('ping answers {}', JSON.stringify(by(6)?.result) === '{}', by(6));
	check('notifications are never answered, nothing else was sent', lines.length === 7, lines);
}

async function testManagementAndRuntime(src) {
	const c = await connect(['--set', 'all']);
	await allTools(c);

	// progress notifications of an import
	const progress = [];
	const sb = await ok(c, 'create_sandbox', { source: src, id: 'mcp1' },
		'create_sandbox imports a directory',
		{ onprogress: (p) => progress.push(p) });
	check('create_sandbox: progress notifications with a message', progress.length > 0 &&
		progress.every((p, i) => typeof p.message === 'string' && p.progress === i + 1),
	progress);
	check('create_sandbox: the result in structuredContent', sb?.sandbox_id === 'mcp1', sb);

	const list = await ok(c, 'list_sandboxes', {}, 'list_sandboxes');
	check('list_sandboxes: names mcp1', list?.sandboxes?.some((s) => s.sandbox_id === 'mcp1'));
	await ok(c, 'inspect_sandbox', { sandbox_id: 'mcp1' }, 'inspect_sandbox');

	// bad arguments: a tool result, not a protocol error
	let r = await call(c, 'file_read', { sandbox_id: 'mcp1', path: 'a.txt', limit: 0 });
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
	const S = { sandbox_id: 'mcp1' };
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
	const mnt = path.join(TMP, 'mnt');
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
	await ok(c, 'cgroup', { scope: 'sandbox', id: 'mcp1' }, 'cgroup');
	await ok(c, 'layerstack', S, 'layerstack');
	await c.close();
	return c;
}

// EOS_NO_AUTOSTART=1 and no eosd: a tool error saying how to start it, no eosd started.
async function testNoAutostart() {
	const state = path.join(TMP, 'no-eosd');
	const c = await connect(['--set', 'observability'],
		{ EOS_STATE_DIR: state, EOS_NO_AUTOSTART: '1' });
	await allTools(c);
	const r = await call(c, 'version', {});
	check('EOS_NO_AUTOSTART=1 without eosd: isError naming it',
		r.isError && /EOS_NO_AUTOSTART/.test(r.content[0].text), r);
	check('EOS_NO_AUTOSTART=1: no eosd was started', !fs.existsSync(path.join(state, 'eosd.json')));
	await c.close();
}

// --sandbox-id: no sandbox_id property, only that sandbox's operations, calls reach it.
async function testFixedSandbox() {
	const c = await connect(['--set', 'all', '--sandbox-id', 'mcp1']);
	const { tools } = await allTools(c);
	check('--sandbox-id: no tool has a sandbox_id property',
		tools.every((t) => !('sandbox_id' in (t.inputSchema.properties ?? {}))));
	check('--sandbox-id: no tool of all sandboxes (create_sandbox, list_sandboxes)',
		!tools.some((t) => t.name === 'list_sandboxes' || t.name === 'create_sandbox'));
	const rd = await ok(c, 'file_read', { path: 'a.txt' }, '--sandbox-id: file_read without a sandbox_id');
	check('--sandbox-id: reads that sandbox', JSON.stringify(rd).includes('ONE-a'), rd);
	const r = await call(c, 'file_read', { path: 'a.txt', sandbox_id: 'other' });
	check('--sandbox-id: a sandbox_id argument is refused', r.isError, r);
	await c.close();
}

async function testDestroy() {
	const c = await connect(['--set', 'management']);
	await allTools(c);
	await ok(c, 'destroy_sandbox', { sandbox_id: 'mcp1', force: true }, 'destroy_sandbox');
	await c.close();
}

async function main() {
	const src = path.join(TMP, 'src');
	fs.mkdirSync(path.join(src, 'dir'), { recursive: true });
	fs.writeFileSync(path.join(src, 'a.txt'), 'one\ntwo\nthree\n');
	for (let i = 0; i < 200; i++)
		fs.writeFileSync(path.join(src, 'dir', `f${i}.txt`), `file ${i}\n`.repeat(50));

	const expect = await testSurfaces();
	await testProtocolErrors();
	await testNoAutostart();
	await testManagementAndRuntime(src);
	await testFixedSandbox();
	await testDestroy();
	const every = [...expect.management, ...expect.runtime, ...expect.observability];
	const missed = every.filter((n) => !called.has(n));
	check(`every tool of every surface was called (${every.length})`, missed.length === 0, missed);
}

main().then(() => process.exit(failures ? 1 : 0), (e) => {
	check('the test ran to its end', false, String(e?.stack ?? e));
	process.exit(1);
});
