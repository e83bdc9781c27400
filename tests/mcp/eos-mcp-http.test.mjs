// SPDX-License-Identifier: MIT
//
// eosd's MCP endpoint (Streamable HTTP at /mcp) driven by the official MCP TypeScript SDK (npm
// @modelcontextprotocol/sdk): its Client over StreamableHTTPClientTransport, one per surface
// token, against the eosd that tests/integration/mcp-http.sh started. Prints one "ok - …" or
// "not ok - …" line per check, for that script to number.
//
// Environment: EOS_MCP_URL (http://127.0.0.1:PORT/mcp), EOS_STATE_DIR (eosd's: its tokens),
// MCP_TMP (a scratch directory of this run).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import fs from 'node:fs';
import path from 'node:path';
import { allTools, call, check, checkAllCalled, makeSource, ok, run, testFlow,
	validateSchemas } from './lib.mjs';

const URL_ = new URL(process.env.EOS_MCP_URL);
const TMP = process.env.MCP_TMP;
const VERSION = '2025-11-25';
const token = (surface) =>
	fs.readFileSync(path.join(process.env.EOS_STATE_DIR, 'tokens', surface), 'utf8').trim();

async function connect(tok) {
	const transport = new StreamableHTTPClientTransport(URL_, {
		requestInit: { headers: { Authorization: `Bearer ${tok}` } },
	});
	const client = new Client({ name: 'eos-mcp-http-test', version: '1.0.0' });
	await client.connect(transport);
	return { client, transport };
}

// One client per surface token, seen as one client with every tool: each call goes to the
// client that lists the tool.
function router(clients) {
	const owner = new Map();
	for (const { client, tools } of clients)
		for (const t of tools)
			owner.set(t.name, client);
	return {
		callTool: (params, schema, options) =>
			(owner.get(params.name) ?? clients[0].client).callTool(params, schema, options),
		close: () => Promise.all(clients.map(({ client }) => client.close())),
	};
}

// A raw request to /mcp: {status, headers, text, json} (the SDK never sends what is refused).
async function raw(method, { tok, session, version, origin, body, accept } = {}) {
	const headers = { 'Content-Type': 'application/json',
		Accept: accept ?? 'application/json, text/event-stream' };
	if (tok)
		headers.Authorization = `Bearer ${tok}`;
	if (session)
		headers['Mcp-Session-Id'] = session;
	if (version)
		headers['MCP-Protocol-Version'] = version;
	if (origin)
		headers.Origin = origin;
	const res = await fetch(URL_, { method, headers,
		body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
	const text = await res.text();
	let json;
	try {
		json = JSON.parse(text);
	} catch {
		json = undefined;
	}
	return { status: res.status, headers: res.headers, text, json };
}

const initialize = (id = 1) => ({ jsonrpc: '2.0', id, method: 'initialize',
	params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

// Each surface token's tools, their schemas; the session the SDK was given.
async function testSurfaces() {
	const names = {};
	const clients = [];
	for (const surface of ['management', 'runtime', 'observability']) {
		const { client, transport } = await connect(token(surface));
		const { tools, pages } = await allTools(client);
		names[surface] = tools.map((t) => t.name);
		check(`${surface} token: its surface's tools (${tools.length} on ${pages} page(s))`,
			tools.length > 0, names[surface]);
		check(`${surface} token: an Mcp-Session-Id of 32 hex digits`,
			/^[0-9a-f]{32}$/.test(transport.sessionId ?? ''), transport.sessionId);
		validateSchemas(tools, `${surface} over HTTP`);
		clients.push({ client, tools, transport });
	}
	check('the three surfaces: 31 tools, none twice',
		new Set(Object.values(names).flat()).size === 31 &&
		Object.values(names).flat().length === 31, names);
	check('management: create_sandbox, not exec_command',
		names.management.includes('create_sandbox') && !names.management.includes('exec_command'));
	check('runtime: exec_command with a required sandbox_id',
		clients[1].tools.find((t) => t.name === 'exec_command')?.inputSchema.required
			.includes('sandbox_id'));
	const ver = clients[0].client.getServerVersion();
	check('initialize over HTTP: serverInfo eos, instructions, tools capability',
		ver?.name === 'eos' && typeof clients[0].client.getInstructions() === 'string' &&
		clients[0].client.getServerCapabilities()?.tools !== undefined, ver);
	return { names, clients };
}

// Replies as JSON or as a stream: a quick call without progress is application/json, one with a
// progressToken text/event-stream whose events are JSON-RPC messages, the response last.
async function testReplyKinds() {
	const tok = token('observability');
	const init = await raw('POST', { tok, body: initialize() });
	const session = init.headers.get('mcp-session-id');
	check('raw initialize: 200 JSON with an Mcp-Session-Id', init.status === 200 &&
		init.json?.result?.protocolVersion === VERSION && /^[0-9a-f]{32}$/.test(session ?? ''),
	{ status: init.status, text: init.text });
	const note = await raw('POST', { tok, session, version: VERSION,
		body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
	check('a notification: 202 and no body', note.status === 202 && note.text === '', note);
	const plain = await raw('POST', { tok, session, version: VERSION,
		body: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'version', arguments: {} } } });
	check('a quick tools/call: 200 application/json with the result',
		plain.status === 200 && plain.headers.get('content-type') === 'application/json' &&
		plain.json?.result?.structuredContent?.api === 1, plain.text);
	const streamed = await raw('POST', { tok, session, version: VERSION,
		body: { jsonrpc: '2.0', id: 3, method: 'tools/call',
			params: { name: 'ping', arguments: {}, _meta: { progressToken: 'p' } } } });
	const data = streamed.text.split('\n').filter((l) => l.startsWith('data: '))
		.map((l) => JSON.parse(l.slice(6)));
	check('a tools/call with a progressToken: text/event-stream, the response its last event',
		streamed.status === 200 &&
		streamed.headers.get('content-type') === 'text/event-stream' &&
		data.at(-1)?.id === 3 && data.at(-1)?.result?.structuredContent?.ok === true,
	streamed.text);
	check('ping over /mcp says what the token reaches',
		data.at(-1)?.result?.structuredContent?.token?.surface === 'observability', data.at(-1));
	const parse = await raw('POST', { tok, session, version: VERSION, body: '{not json' });
	check('a body that is not JSON: 400 with -32700 and id null',
		parse.status === 400 && parse.json?.error?.code === -32700 && parse.json?.id === null,
		parse.text);
	const unknown = await raw('POST', { tok, session, version: VERSION,
		body: { jsonrpc: '2.0', id: 4, method: 'no/such' } });
	check('an unknown method: 200 with -32601', unknown.status === 200 &&
		unknown.json?.error?.code === -32601, unknown.text);
	return session;
}

// Every refusal of the transport, each a JSON-RPC error without an id.
async function testRefusals(obsSession) {
	const tok = token('observability');
	const list = { jsonrpc: '2.0', id: 9, method: 'tools/list' };
	let r = await raw('POST', { tok: 'f'.repeat(64), body: initialize() });
	check('a wrong token: 401 unauthorized with WWW-Authenticate',
		r.status === 401 && r.json?.error?.data?.kind === 'unauthorized' &&
		/^Bearer/.test(r.headers.get('www-authenticate') ?? ''), r.text);
	r = await raw('POST', { body: initialize() });
	check('no token: 401', r.status === 401, r.text);
	try {
		await connect('0'.repeat(64));
		check('the SDK with a wrong token: refused', false);
	} catch (e) {
		check('the SDK with a wrong token: refused with 401', e.code === 401, String(e));
	}
	r = await raw('POST', { tok, version: VERSION, body: list });
	check('no Mcp-Session-Id after initialize: 400', r.status === 400 &&
		/Mcp-Session-Id/.test(r.json?.error?.message), r.text);
	r = await raw('POST', { tok, session: 'a'.repeat(32), version: VERSION, body: list });
	check('an unknown Mcp-Session-Id: 404', r.status === 404, r.text);
	r = await raw('POST', { tok: token('runtime'), session: obsSession, version: VERSION, body: list });
	check("another token's session: 404 (a session is its token's)", r.status === 404, r.text);
	r = await raw('POST', { tok, session: obsSession, version: VERSION, body: list,
		origin: 'http://evil.example' });
	check('a bad Origin: 403', r.status === 403 && r.json?.error?.data?.kind === 'forbidden', r.text);
	r = await raw('POST', { tok, session: obsSession, version: VERSION, body: list,
		origin: 'http://localhost.evil.example:8080' });
	check('a name that only looks local: 403', r.status === 403, r.text);
	r = await raw('POST', { tok, session: obsSession, version: VERSION, body: list,
		origin: `http://127.0.0.1:${URL_.port}` });
	check('an Origin on the loopback: served', r.status === 200 && r.json?.result?.tools, r.text);
	r = await raw('POST', { tok, session: obsSession, version: '1999-01-01', body: list });
	check('a wrong MCP-Protocol-Version: 400 naming it', r.status === 400 &&
		/1999-01-01/.test(r.json?.error?.message), r.text);
	r = await raw('POST', { tok, session: obsSession, body: list });
	check('no MCP-Protocol-Version: served (the spec: assume an older revision)',
		r.status === 200, r.text);
	r = await raw('GET', { tok, session: obsSession, version: VERSION, accept: 'text/event-stream' });
	check('GET: 405 with Allow: POST, DELETE (no stream of its own)', r.status === 405 &&
		r.headers.get('allow') === 'POST, DELETE', r.text);
	r = await raw('POST', { tok, session: obsSession, version: VERSION,
		body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"${'x'.repeat((64 << 20) + (128 << 10))}"}}` });
	check('a body above the gateway\'s limit: 413 too_large', r.status === 413 &&
		r.json?.error?.data?.kind === 'too_large', r.text.slice(0, 300));
	r = await raw('DELETE', { tok, version: VERSION });
	check('DELETE without Mcp-Session-Id: 400', r.status === 400, r.text);
	r = await raw('DELETE', { tok, session: obsSession, version: VERSION });
	check('DELETE ends the session: 204', r.status === 204, r.text);
	r = await raw('POST', { tok, session: obsSession, version: VERSION, body: list });
	check('the session DELETE ended: 404', r.status === 404, r.text);
	r = await raw('DELETE', { tok, session: obsSession, version: VERSION });
	check('DELETE again: 404', r.status === 404, r.text);
}

// The SDK's own DELETE (terminateSession), then a call on the session it ended.
async function testSdkDelete() {
	const { client, transport } = await connect(token('observability'));
	await ok(client, 'version', {}, 'a call before terminateSession');
	const gone = transport.sessionId;
	await transport.terminateSession();
	check('terminateSession: the SDK forgot the session', transport.sessionId === undefined);
	const r = await raw('POST', { tok: token('observability'), session: gone, version: VERSION,
		body: { jsonrpc: '2.0', id: 1, method: 'ping' } });
	check('the session ended by the SDK: 404', r.status === 404, r.text);
	await client.close();
}

// Tokens of issue_token, limited to one sandbox: the tools of that sandbox, without sandbox_id.
async function testLimitedTokens(mgr, id, other) {
	const limited = await ok(mgr, 'issue_token', { sandbox_id: id, surface: 'runtime' },
		`issue_token: a runtime token of ${id}`);
	const foreign = await ok(mgr, 'issue_token', { sandbox_id: other, surface: 'runtime' },
		`issue_token: a runtime token of ${other}`);
	const { client, transport } = await connect(limited.token);
	const { tools } = await allTools(client);
	check('a limited token: tools without a sandbox_id property',
		tools.length > 0 && tools.every((t) => !('sandbox_id' in (t.inputSchema.properties ?? {}))),
		tools.map((t) => t.name));
	const rd = await ok(client, 'file_read', { path: 'a.txt' }, 'a limited token: file_read without sandbox_id');
	check('a limited token: reads its own sandbox', /ONE-a/.test(JSON.stringify(rd)), rd);
	let r = await call(client, 'file_read', { path: 'a.txt', sandbox_id: other });
	check('a limited token: a sandbox_id argument is refused (isError)', r.isError, r);
	r = await raw('POST', { tok: foreign.token, session: transport.sessionId, version: VERSION,
		body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
	check("a token of another sandbox on this token's session: 404", r.status === 404, r.text);
	const f = await connect(foreign.token);
	await allTools(f.client);
	r = await call(f.client, 'file_read', { path: 'a.txt' });
	check('a token of another sandbox reaches only that one (a.txt is not there)',
		r.isError && r.structuredContent?.error?.kind === 'not_found', r);
	await f.client.close();
	await client.close();
}

// At most 64 sessions: a new one ends the one idle longest; when all 64 have a call in flight
// (here, each follows events), a new one is refused with 503. Last: it ends the others' sessions.
async function testSessionCap() {
	const tok = token('observability');
	const list = { jsonrpc: '2.0', id: 9, method: 'tools/list' };
	const first = (await raw('POST', { tok, body: initialize() })).headers.get('mcp-session-id');
	const made = [];
	for (let i = 0; i < 64; i++)
		made.push((await raw('POST', { tok, body: initialize() })).headers.get('mcp-session-id'));
	let r = await raw('POST', { tok, session: first, version: VERSION, body: list });
	check('65 sessions made: the one idle longest ended to make room (404)', r.status === 404,
		r.text);
	r = await raw('POST', { tok, session: made[63], version: VERSION, body: list });
	check('... the newest one serves', r.status === 200, r.text);
	const follows = [];
	for (const session of made) {
		const ac = new AbortController();
		const res = await fetch(URL_, { method: 'POST', signal: ac.signal,
			headers: { Authorization: `Bearer ${tok}`, 'Mcp-Session-Id': session,
				'MCP-Protocol-Version': VERSION, 'Content-Type': 'application/json',
				Accept: 'application/json, text/event-stream' },
			body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call',
				params: { name: 'events', arguments: { follow: true, last_n: 1 },
					_meta: { progressToken: 'f' } } }) });
		follows.push({ ac, res, session });
	}
	check('64 sessions each follow events (their streams began)',
		follows.every(({ res }) => res.status === 200 &&
			res.headers.get('content-type') === 'text/event-stream'));
	r = await raw('POST', { tok, body: initialize() });
	check('all 64 sessions busy: a new one is refused, 503', r.status === 503 &&
		/busy/.test(r.json?.error?.message), r.text);
	let ended = 0;
	for (const { ac, res, session } of follows) {
		await raw('DELETE', { tok, session, version: VERSION });
		const text = await res.text();
		ended += /follow ended/.test(text) ? 1 : 0;
		ac.abort();
	}
	check('DELETE ends a session\'s follow: its stream ends with an error result',
		ended === follows.length, ended);
	r = await raw('POST', { tok, body: initialize() });
	check('then sessions are made again', r.status === 200, r.text);
}

async function main() {
	const src = makeSource(path.join(TMP, 'src'));
	const empty = path.join(TMP, 'empty');
	fs.mkdirSync(empty);
	const { names, clients } = await testSurfaces();
	const obsSession = await testReplyKinds();
	await testRefusals(obsSession);
	await testSdkDelete();
	const all = router(clients);
	await testFlow(all, src, TMP, 'http1');
	// a call at /mcp is a trace of its own, as a gateway request is
	const failed = await call(all, 'inspect_sandbox', { sandbox_id: 'nope' });
	const tr = await ok(all, 'trace', { trace_id: failed.structuredContent?.error?.trace_id },
		'trace of a call made over /mcp');
	const root = tr?.spans?.[0];
	check('its root span: daemon.dispatch, transport mcp, the operation and its error kind',
		root?.name === 'daemon.dispatch' && root?.attributes?.transport === 'mcp' &&
		root?.attributes?.operation === 'inspect_sandbox' &&
		root?.attributes?.kind === 'not_found', root);
	const mgr = clients[0].client;
	await ok(mgr, 'create_sandbox', { source: empty, id: 'http2' }, 'create_sandbox http2 (empty)');
	await testLimitedTokens(mgr, 'http1', 'http2');
	await ok(mgr, 'destroy_sandbox', { sandbox_id: 'http2', force: true }, 'destroy_sandbox http2');
	await ok(mgr, 'destroy_sandbox', { sandbox_id: 'http1', force: true }, 'destroy_sandbox http1');
	await all.close();
	await testSessionCap();
	checkAllCalled([names.management, names.runtime, names.observability]);
}

run(main);
