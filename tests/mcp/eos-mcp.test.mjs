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
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { allTools, call, check, checkAllCalled, makeSource, ok, run, testFlow,
	validateSchemas } from './lib.mjs';

const BIN = process.env.EOS_MCP_BIN;
const TMP = process.env.MCP_TMP;

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

// A token limited to one sandbox (--token-file, no --sandbox-id): eos-mcp asks eosd which
// sandbox it reaches, and its tools are that sandbox's, as with --sandbox-id.
async function testLimitedToken() {
	const m = await connect(['--set', 'management']);
	await allTools(m);
	const tok = await ok(m, 'issue_token', { sandbox_id: 'mcp1', surface: 'runtime' },
		'issue_token for the limited token');
	await m.close();
	const file = path.join(TMP, 'mcp1.token');
	fs.writeFileSync(file, `${tok?.token}\n`, { mode: 0o600 });
	const c = await connect(['--set', 'runtime', '--token-file', file]);
	const { tools } = await allTools(c);
	check('a limited token alone: no tool has a sandbox_id property',
		tools.length > 0 &&
		tools.every((t) => !('sandbox_id' in (t.inputSchema.properties ?? {}))), tools.map((t) => t.name));
	const rd = await ok(c, 'file_read', { path: 'a.txt' }, 'a limited token alone: file_read without a sandbox_id');
	check('a limited token alone: reads its sandbox', JSON.stringify(rd).includes('ONE-a'), rd);
	await c.close();
	const bad = path.join(TMP, 'bad.token');
	fs.writeFileSync(bad, `${'0'.repeat(64)}\n`, { mode: 0o600 });
	const child = spawn(BIN, ['--set', 'runtime', '--token-file', bad],
		{ stdio: ['pipe', 'pipe', 'pipe'] });
	let err = '';
	child.stderr.on('data', (d) => { err += d; });
	child.stdin.end();
	const status = await new Promise((r) => child.on('close', r));
	check('an unknown token file: eos-mcp exits 1 saying so', status === 1 &&
		/unknown token/.test(err), { status, err });
}

async function testDestroy() {
	const c = await connect(['--set', 'management']);
	await allTools(c);
	await ok(c, 'destroy_sandbox', { sandbox_id: 'mcp1', force: true }, 'destroy_sandbox');
	await c.close();
}

async function main() {
	const src = makeSource(path.join(TMP, 'src'));
	const expect = await testSurfaces();
	await testProtocolErrors();
	await testNoAutostart();
	const all = await connect(['--set', 'all']);
	await allTools(all);
	await testFlow(all, src, TMP, 'mcp1');
	await all.close();
	await testFixedSandbox();
	await testLimitedToken();
	await testDestroy();
	checkAllCalled([expect.management, expect.runtime, expect.observability]);
}

run(main);
