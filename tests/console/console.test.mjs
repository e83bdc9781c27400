// SPDX-License-Identifier: MIT
//
// eosd's web console in a real browser: Debian's chromium, headless, driven by npm
// playwright-core (no browser download). Prints one "ok - …" or "not ok - …" line per check for
// tests/integration/console.sh to number, and saves a screenshot of every page (1280×800 light,
// and narrow and dark) under SHOTS. Any JavaScript error on a page fails the run: an uncaught
// exception (pageerror) or a console error — but for chromium's own "Failed to load resource:
// … status of N" lines of the refusals a check provokes on purpose (a rejected publish's 409, a
// limited token's 403), which are allowed only during that check.
//
// Environment: CONSOLE_LINK (eosctl console's one-time link), CONSOLE_SRC (a directory to
// import), CONSOLE_MANAGEMENT_TOKEN (for the logins after the link's), CONSOLE_LIMITED_TOKENS (a
// runtime and an observability token limited to sandbox "limited"), CONSOLE_OTHER (another
// sandbox's id; a sandbox "doomed" exists too), SHOTS (where screenshots go).
import { chromium } from 'playwright-core';
import fs from 'node:fs';

const LINK = process.env.CONSOLE_LINK;
const BASE = new URL(LINK).origin + '/';
const SRC = process.env.CONSOLE_SRC;
const LIMITED = process.env.CONSOLE_LIMITED_TOKENS;
const OTHER = process.env.CONSOLE_OTHER;
const SHOTS = process.env.SHOTS;
const SB = 'web';
let failures = 0;
let jsErrors = [];
let allowed = new Set();

function check(desc, cond, detail) {
	console.log(`${cond ? 'ok' : 'not ok'} - ${desc}`);
	if (!cond) {
		failures++;
		if (detail !== undefined)
			console.log(`# ${String(detail).slice(0, 2000).replace(/\n/g, '\n# ')}`);
	}
	return cond;
}

// Run a check's body; an exception is its failure (with the page's alerts for context).
async function step(desc, page, fn) {
	try {
		const r = await fn();
		check(desc, r !== false);
	} catch (e) {
		const alerts = page ? await page.locator('#alerts, .error-box').allTextContents().catch(() => []) : [];
		check(desc, false, `${e.message}\npage alerts: ${alerts.join(' | ')}`);
		if (page)
			await shot(page, `failed-${desc.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}`);
	}
}

// HTTP statuses chromium may log as "Failed to load resource" during fn.
async function expectRefusals(statuses, fn) {
	allowed = new Set(statuses);
	try {
		return await fn();
	} finally {
		allowed = new Set();
	}
}

function watch(page, who) {
	page.on('pageerror', (e) => jsErrors.push(`${who}: pageerror: ${e.message}`));
	page.on('console', (m) => {
		if (m.type() !== 'error')
			return;
		const s = /Failed to load resource: the server responded with a status of (\d+)/.exec(m.text());
		if (s && allowed.has(Number(s[1])))
			return;
		jsErrors.push(`${who}: console.error: ${m.text()}`);
	});
	page.on('dialog', (d) => d.accept());
}

let shotNo = 0;
async function shot(page, name) {
	shotNo++;
	const file = `${SHOTS}/${String(shotNo).padStart(2, '0')}-${name}.png`;
	await page.screenshot({ path: file, fullPage: true });
	return file;
}

const launchArgs = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
	'--disable-background-networking', '--disable-component-update', '--disable-sync'];

async function transcript(page) {
	return page.locator('#transcript').textContent();
}

// Wait until the transcript on page holds text.
async function transcriptHas(page, text) {
	await page.waitForFunction((t) => (document.querySelector('#transcript')?.textContent || '').includes(t), text);
}

async function main() {
	fs.mkdirSync(SHOTS, { recursive: true });
	const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: launchArgs, headless: true });
	check(`chromium ${browser.version()} runs headless`, true);
	const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
	const page = await ctx.newPage();
	watch(page, 'management');
	page.setDefaultTimeout(60000);

	await step('the one-time link of eosctl console logs in, and leaves no code in the URL', page, async () => {
		await page.goto(LINK);
		await page.waitForSelector('#logout');
		const scope = await page.locator('#scope').textContent();
		if (!scope.includes('all sandboxes') || !scope.includes('runtime'))
			throw new Error(`scope shown: ${scope}`);
		if (page.url().includes('login='))
			throw new Error(`the URL still holds the code: ${page.url()}`);
		const cookies = await ctx.cookies();
		const c = cookies.find((x) => x.name === 'eos_console');
		if (!c || !c.httpOnly || c.sameSite !== 'Strict')
			throw new Error(`cookie: ${JSON.stringify(c)}`);
		await shot(page, 'sandboxes-empty');
	});

	await step('a sandbox is created from a host directory, with a progress bar fed by the import\'s events', page, async () => {
		await page.fill('#create-source', SRC);
		await page.fill('#create-id', SB);
		// the page moves to the new sandbox as soon as the import ends: note the events the
		// bar gets on the way, at every change of the DOM (a poll per frame missed them all
		// on a loaded machine), in a window variable, which outlives the page's parts
		await page.evaluate(() => {
			window.sawProgress = 0;
			new MutationObserver(() => {
				const s = document.querySelector('#create-status');
				if (s && s.dataset.events)
					window.sawProgress = Math.max(window.sawProgress, Number(s.dataset.events));
			}).observe(document.body, { subtree: true, childList: true, attributes: true });
		});
		await page.click('#create-submit');
		await page.waitForSelector('#create-progress');
		await page.waitForFunction(() => location.hash.startsWith('#/sandbox/'));
		await page.waitForURL(new RegExp(`#/sandbox/${SB}$`));
		await page.waitForSelector('#timeline li[data-version="L000001"]');
		await shot(page, 'sandbox');
	});
	await step('the progress bar moved with the import\'s progress events (scan, import, commit at least)', page, async () => {
		const n = await page.evaluate(() => window.sawProgress || 0);
		if (n < 3)
			throw new Error(`${n} progress events`);
	});

	await step('a workspace session is started from the sandbox page', page, async () => {
		await page.fill('#session-id', 'ws-web');
		await page.click('#session-create');
		await page.waitForURL(/#\/session\/web\/ws-web$/);
		await page.waitForSelector('#command-line');
		await shot(page, 'session');
	});

	await step('a command runs and its output arrives while it is still running', page, async () => {
		await page.fill('#command-line', 'echo started; read line; echo "got $line"; sed -i "s/^two$/TWO by a command/" a.txt; echo done');
		await page.click('#command-run');
		await page.waitForURL(/#\/command\/web\/cmd-\d+$/);
		await transcriptHas(page, 'started');
		const status = await page.locator('#command-status').textContent();
		if (!status.includes('running'))
			throw new Error(`status while waiting for input: ${status}`);
		await shot(page, 'command-running');
	});
	await step('a line sent through the stdin box reaches the command, which ends', page, async () => {
		await page.fill('#stdin-text', 'hello');
		await page.keyboard.press('Enter');
		await transcriptHas(page, 'done');
		await page.waitForSelector('#command-status .badge.ok');
		const t = await transcript(page);
		if (!t.includes('got hello'))
			throw new Error(`transcript: ${t}`);
		await shot(page, 'command-done');
	});

	await step('Ctrl-C cancels a running command (status cancelled, exit code 130)', page, async () => {
		await page.goto(`${BASE}#/session/${SB}/ws-web`);
		await page.fill('#command-line', 'echo sleeping; sleep 600');
		await page.click('#command-run');
		await transcriptHas(page, 'sleeping');
		await page.click('#ctrl-c');
		await page.waitForFunction(() => document.querySelector('#command-status').textContent.includes('cancelled'));
		const status = await page.locator('#command-status').textContent();
		if (!status.includes('130'))
			throw new Error(`status: ${status}`);
		await shot(page, 'command-cancelled');
	});

	// The page reloads itself after a publish; that reload's request is held, so that the next
	// step leaves the page while it is in flight: its abort must be no error on the page.
	const held = '**/inspect_workspace_session';
	await step('the session is published from its page', page, async () => {
		await page.goto(`${BASE}#/session/${SB}/ws-web`);
		await page.route(held, async (route) => {
			await new Promise((r) => setTimeout(r, 1000));
			await route.continue().catch(() => {});
		});
		await page.click('#publish');
		await page.waitForSelector('.alert.info');
		const text = await page.locator('.alert.info').textContent();
		if (!text.includes('Published L000002'))
			throw new Error(`alert: ${text}`);
	});

	await step('the new layer is on the timeline with its owner, and its changes open', page, async () => {
		await page.goto(`${BASE}#/sandbox/${SB}`);
		await page.unroute(held);
		const layer = page.locator('#timeline li[data-version="L000002"]');
		await layer.waitFor();
		if (!(await layer.textContent()).includes('workspace_session:ws-web'))
			throw new Error(await layer.textContent());
		await layer.locator('button').click();
		await page.waitForSelector('#layer-changes table');
		const patch = await page.locator('#layer-changes').textContent();
		if (!patch.includes('+TWO by a command'))
			throw new Error(patch);
		await shot(page, 'timeline');
	});

	await step('the changed file shows each line\'s owner, coloured per owner, linked to the command', page, async () => {
		await page.goto(`${BASE}#/file/${SB}?path=a.txt`);
		await page.waitForSelector('#owners');
		const owners = await page.locator('#file-view td.owner[data-owner]').evaluateAll((tds) =>
			tds.map((td) => [td.dataset.owner, getComputedStyle(td).backgroundColor]));
		const cmd = owners.find(([o]) => /^operation:cmd-\d+$/.test(o));
		const orig = owners.find(([o]) => o === 'original');
		if (!cmd || !orig || cmd[1] === orig[1])
			throw new Error(JSON.stringify(owners));
		const link = page.locator('#file-view td.owner a[href*="#/command/"]').first();
		await shot(page, 'file-blame');
		await link.click();
		await page.waitForURL(/#\/command\/web\/cmd-\d+$/);
		await transcriptHas(page, 'got hello');
	});

	await step('a rejected publish shows every conflict with its line ranges, base, head and session side by side', page, async () => {
		for (const [ws, text] of [['ws-a', 'from a'], ['ws-b', 'from b']]) {
			await page.goto(`${BASE}#/sandbox/${SB}`);
			await page.fill('#session-id', ws);
			await page.click('#session-create');
			await page.waitForURL(new RegExp(`#/session/web/${ws}$`));
			await page.fill('#command-line', `sed -i "s/^three$/${text}/" a.txt`);
			await page.click('#command-run');
			await page.waitForSelector('#command-status .badge.ok');
		}
		await page.goto(`${BASE}#/session/${SB}/ws-a`);
		await page.click('#publish');
		await page.waitForSelector('.alert.info');
		await page.goto(`${BASE}#/session/${SB}/ws-b`);
		await expectRefusals([409], async () => {
			await page.click('#publish');
			await page.waitForSelector('#conflicts article[data-path="a.txt"] .sides');
		});
		const sides = await page.locator('#conflicts .sides pre').allTextContents();
		const heads = await page.locator('#conflicts .sides h4').allTextContents();
		if (sides.length !== 3 || sides[0] !== 'three' || sides[1] !== 'from a' || sides[2] !== 'from b')
			throw new Error(JSON.stringify({ sides, heads }));
		if (!heads[0].includes('line 3') || !heads[2].includes('session ws-b'))
			throw new Error(JSON.stringify(heads));
		await shot(page, 'publish-rejected');
	});

	await step('the diff of a session against its base', page, async () => {
		await page.goto(`${BASE}#/diff/${SB}/ws-b`);
		await page.waitForSelector('#diff article[data-path="a.txt"]');
		const added = await page.locator('#diff tr.add').allTextContents();
		const removed = await page.locator('#diff tr.del').allTextContents();
		if (!added.join().includes('from b') || !removed.join().includes('three'))
			throw new Error(JSON.stringify({ added, removed }));
		await shot(page, 'diff');
	});

	await step('the events page filters by name, and its trace link opens a waterfall', page, async () => {
		await page.goto(`${BASE}#/events?sandbox=${SB}&name=layer.`);
		await page.waitForSelector('#events-body tr');
		const names = await page.locator('#events-body tr').evaluateAll((rows) => rows.map((r) => r.dataset.event));
		if (!names.length || names.some((n) => !n.startsWith('layer.')))
			throw new Error(JSON.stringify(names));
		await shot(page, 'events');
		await page.locator('#events-body tr[data-event="layer.published"] a.badge').first().click();
		await page.waitForSelector('#waterfall .span');
		const spans = await page.locator('#waterfall .name').allTextContents();
		if (!spans.includes('layerstack.publish'))
			throw new Error(JSON.stringify(spans));
		await shot(page, 'trace');
	});

	await step('events follow shows a new event as it happens', page, async () => {
		await page.goto(`${BASE}#/events?sandbox=${SB}&name=workspace_session.&follow=1`);
		await page.waitForFunction(() => document.querySelector('#events-state').textContent.includes('Following'));
		const before = await page.locator('#events-body tr').count();
		await page.evaluate(async (sb) => {
			const m = await import('/console/api.js');
			await m.call('create_workspace_session', { sandbox: sb, args: { workspace_session_id: 'ws-followed' } });
		}, SB);
		await page.waitForSelector('#events-body tr[data-event="workspace_session.created"]');
		return (await page.locator('#events-body tr').count()) > before;
	});

	await step('resources show cgroup charts while a command runs, or say why they are unavailable', page, async () => {
		await page.evaluate(async (sb) => {
			const m = await import('/console/api.js');
			const r = await m.call('exec_command', { sandbox: sb, args: { cmd: 'sleep 120', workspace_session_id: 'ws-followed', yield_time_ms: 0 } });
			window.sleeper = r.command_session_id;
		}, SB);
		await page.goto(`${BASE}#/resources/${SB}`);
		await page.waitForSelector('#charts svg, #cgroup-unavailable');
		const text = await page.locator('#resources').textContent();
		if (await page.locator('#cgroup-unavailable').count())
			check(`cgroups are unavailable here, and the page says why: "${text.slice(0, 300)}"`, text.includes('unavailable because'));
		else
			check('cgroup samples are drawn as charts', (await page.locator('#charts svg').count()) >= 3);
		await shot(page, 'resources');
		await page.evaluate(async (sb) => {
			const m = await import('/console/api.js');
			await m.call('write_command_stdin', { sandbox: sb, args: { command_session_id: window.sleeper, chars: '\u0003' } });
		}, SB);
	});

	await step('export downloads the patch and the tar', page, async () => {
		await page.goto(`${BASE}#/sandbox/${SB}`);
		await page.selectOption('#export-format', 'patch');
		const [patch] = await Promise.all([page.waitForEvent('download'), page.click('#export-submit')]);
		const text = fs.readFileSync(await patch.path(), 'utf8');
		await page.selectOption('#export-format', 'tar');
		const [tar] = await Promise.all([page.waitForEvent('download'), page.click('#export-submit')]);
		const bytes = fs.readFileSync(await tar.path());
		if (!text.includes('+from a') || !patch.suggestedFilename().endsWith('.patch'))
			throw new Error(`patch ${patch.suggestedFilename()}: ${text.slice(0, 300)}`);
		if (bytes.length < 512 || bytes.subarray(257, 262).toString() !== 'ustar' || !tar.suggestedFilename().endsWith('.tar'))
			throw new Error(`tar ${tar.suggestedFilename()}: ${bytes.length} bytes`);
	});

	await step('squash folds what no lease needs, and fork makes a session of the current state', page, async () => {
		await page.goto(`${BASE}#/session/${SB}/ws-b`);
		await page.click('#fork');
		await page.waitForURL(/#\/session\/web\/ws-[0-9a-f]{12}$/);
		await page.goto(`${BASE}#/sandbox/${SB}`);
		await page.click('#squash');
		await page.waitForSelector('.alert.info');
		return (await page.locator('.alert.info').textContent()).includes('Squashed');
	});

	await step('the keyboard alone opens a sandbox from the list', page, async () => {
		await page.goto(`${BASE}#/`);
		await page.waitForSelector(`a[href="#/sandbox/${SB}"]`);
		await shot(page, 'sandboxes');
		for (let i = 0; i < 30; i++) {
			await page.keyboard.press('Tab');
			if (await page.evaluate((sb) => document.activeElement && document.activeElement.getAttribute('href') === `#/sandbox/${sb}`, SB))
				break;
		}
		await page.keyboard.press('Enter');
		await page.waitForURL(new RegExp(`#/sandbox/${SB}$`));
		await page.waitForSelector('#timeline');
	});

	await step('a request without the CSRF token is refused (403), even with the cookie', page, async () => {
		const r = await expectRefusals([403], () => page.evaluate(async () => {
			const resp = await fetch('/v1/management/list_sandboxes', { method: 'POST', body: '{}', credentials: 'same-origin' });
			return [resp.status, (await resp.json()).error.message];
		}));
		if (r[0] !== 403 || !r[1].includes('CSRF'))
			throw new Error(JSON.stringify(r));
	});

	await step('the destroy button destroys a sandbox after confirming', page, async () => {
		await page.goto(`${BASE}#/sandbox/doomed`);
		await page.waitForSelector('#destroy');
		await page.click('#destroy');
		await page.waitForURL(/#\/$/);
		await page.waitForSelector('.alert.info');
		return (await page.locator('a[href="#/sandbox/doomed"]').count()) === 0;
	});

	await step('logging out ends the session', page, async () => {
		await page.click('#logout');
		await page.waitForSelector('#tokens');
		const r = await page.evaluate(async () => (await fetch('/console/session')).json());
		return r.logged_in === false;
	});

	// --- a login limited to one sandbox ---
	const lctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
	const lpage = await lctx.newPage();
	watch(lpage, 'limited');
	lpage.setDefaultTimeout(60000);
	await step('a login with tokens limited to one sandbox lists that sandbox only', lpage, async () => {
		await lpage.goto(BASE);
		await lpage.fill('#tokens', LIMITED);
		await lpage.keyboard.press('Enter');
		await lpage.waitForSelector('#logout');
		await lpage.waitForSelector('a[href="#/sandbox/limited"]');
		const links = await lpage.locator('main a[href^="#/sandbox/"]').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
		if (links.some((h) => h !== '#/sandbox/limited') || (await lpage.locator('#create-source').count()))
			throw new Error(JSON.stringify(links));
		await shot(lpage, 'limited-sandboxes');
	});
	await step('... and cannot see another sandbox (forbidden)', lpage, async () => {
		await expectRefusals([403], async () => {
			await lpage.goto(`${BASE}#/sandbox/${OTHER}`);
			await lpage.waitForSelector('main .error-box');
		});
		const text = await lpage.locator('main .error-box').textContent();
		if (!text.includes('forbidden') || !text.includes("limited to sandbox 'limited'"))
			throw new Error(text);
		await shot(lpage, 'limited-forbidden');
	});
	await step('... while its own sandbox opens, with its sessions and timeline', lpage, async () => {
		await lpage.goto(`${BASE}#/sandbox/limited`);
		await lpage.waitForSelector('#timeline');
	});

	// --- narrow and dark ---
	for (const [name, opts] of [['narrow', { viewport: { width: 390, height: 844 } }],
		['dark', { viewport: { width: 1280, height: 800 }, colorScheme: 'dark' }],
		['narrow-dark', { viewport: { width: 390, height: 844 }, colorScheme: 'dark' }]]) {
		const c = await browser.newContext(opts);
		const p = await c.newPage();
		watch(p, name);
		p.setDefaultTimeout(60000);
		await step(`${name}: every page renders and nothing overflows the window sideways`, p, async () => {
			await p.goto(BASE);
			await p.fill('#tokens', process.env.CONSOLE_MANAGEMENT_TOKEN);
			await p.keyboard.press('Enter');
			await p.waitForSelector('#logout');
			const pages = [['sandboxes', '#/', 'main table'], ['sandbox', `#/sandbox/${SB}`, '#timeline'],
				['session', `#/session/${SB}/ws-web`, '#command-line'], ['command', `#/command/${SB}/cmd-1`, '#transcript'],
				['file', `#/file/${SB}?path=a.txt`, '#owners'], ['diff', `#/diff/${SB}/ws-b`, '#diff article'],
				['events', `#/events?sandbox=${SB}`, '#events-body tr'], ['trace', '#/trace', '#waterfall'],
				['resources', `#/resources/${SB}`, '#resources p']];
			const wide = [];
			for (const [pn, hash, sel] of pages) {
				await p.goto(BASE + hash);
				await p.waitForSelector(sel);
				const over = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
				if (over > 1)
					wide.push(`${pn}: ${over}px`);
				await shot(p, `${name}-${pn}`);
			}
			if (wide.length)
				throw new Error(`wider than the window: ${wide.join(', ')}`);
		});
		await c.close();
	}

	await browser.close();
	check('no JavaScript error on any page', jsErrors.length === 0, jsErrors.join('\n'));
	console.log(`# screenshots in ${SHOTS}`);
}

main().then(() => process.exit(failures ? 1 : 0), (e) => {
	check('the browser test ran to its end', false, e.stack);
	process.exit(1);
});
