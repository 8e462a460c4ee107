import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sign } from '../../src/webhook/signature.js';
import { chromiumPath, type Inspected, listenInspected, readEvents, startTarget, type Target } from '../helpers/inspector.js';
import { post } from '../helpers/listener.js';
import { runCli } from '../helpers/run-cli.js';
import { changes } from '../helpers/until.js';

// The inspector's page in headless Chromium (Debian's package, driven by playwright-core: no browser
// is downloaded). Without Chromium these tests are skipped, and their name says why.

// What the callbacks that run in the page see (this project compiles without the DOM's types).
declare const window: any;
declare const document: any;
declare const navigator: any;

const CHROMIUM = chromiumPath();
const SKIPPED = CHROMIUM ? '' : ' (skipped: no Chromium on this machine; `apt-get install chromium`, as .ci/run does)';
const SECRET = 'browser-secret-one';
const OTHER = 'browser-secret-two';

let browser: Browser;
const contexts: BrowserContext[] = [];
const targets: Target[] = [];

/** A fresh browser context whose pages record CSP violations and whether a planted script ran. */
async function openPage(url: string): Promise<Page> {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1400, height: 900 } });
  contexts.push(context);
  await context.addInitScript(() => {
    const w = window as unknown as { ran: boolean; violations: string[] };
    w.ran = false;
    w.violations = [];
    document.addEventListener('securitypolicyviolation', (event: any) => w.violations.push(`${event.violatedDirective} ${event.blockedURI}`));
  });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  (page as Page & { errors: string[] }).errors = errors;
  await page.goto(url);
  return page;
}

const errorsOf = (page: Page) => (page as Page & { errors: string[] }).errors;
const state = (page: Page) => page.evaluate(() => ({ ran: window.ran as boolean, violations: window.violations as string[] }));

async function target(): Promise<Target> {
  const started = await startTarget('{"thanks":"from the target"}');
  targets.push(started);
  return started;
}

async function send(inspected: Inspected, event: string, extra: string[] = []): Promise<string> {
  const result = await runCli(['webhook', 'send', '--url', inspected.listener.url, '--event', event, '--json', ...extra]);
  return (JSON.parse(result.stdout) as { delivery: string }).delivery;
}

/** Each row as the filters and a reader see it: its data, and each cell's class, text and title. */
function rowsOf(page: Page) {
  return page.$$eval('#rows tr', (rows) =>
    rows.map((row) => ({
      data: { ...(row as any).dataset },
      hidden: (row as any).hidden,
      cells: [...(row as any).cells].map((cell: any) => [cell.className, cell.textContent, cell.getAttribute('title')]),
    })),
  );
}

/**
 * Resolves once `probe(arg)`, run in the page, gives `expected` (or matches it), looked at again at
 * each change of the page's document (a MutationObserver): what the page shows is waited on as it
 * changes, not looked at on a timer. Sent as an expression, as Playwright sends its own, so the
 * page's CSP (no eval) does not apply to it; `probe` may use nothing but its argument.
 */
async function untilPage<A>(page: Page, probe: (arg: A) => unknown, arg: A, expected: string | number | boolean | RegExp): Promise<void> {
  const matches = expected instanceof RegExp
    ? `(value) => typeof value === 'string' && new RegExp(${JSON.stringify(expected.source)}, ${JSON.stringify(expected.flags)}).test(value)`
    : `(value) => value === ${JSON.stringify(expected)}`;
  await page.evaluate(`new Promise((resolve) => {
    const probe = ${probe.toString()};
    const matches = ${matches};
    const look = () => {
      if (!matches(probe(${JSON.stringify(arg)}))) return;
      observer.disconnect();
      resolve();
    };
    const observer = new MutationObserver(look);
    observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
    look();
  })`);
}

/** The text of the first element `selector` finds, once it is `expected` (or matches it). */
const untilText = (page: Page, selector: string, expected: string | RegExp) =>
  untilPage(page, (found: string) => document.querySelector(found)?.textContent ?? null, selector, expected);
/** Once `selector` finds `count` elements. */
const untilCount = (page: Page, selector: string, count: number) =>
  untilPage(page, (found: string) => document.querySelectorAll(found).length, selector, count);
/** Once the first element `selector` finds is shown. */
const untilVisible = (page: Page, selector: string) =>
  untilPage(page, (found: string) => document.querySelector(found)?.checkVisibility() === true, selector, true);

describe.skipIf(!CHROMIUM)(`the inspector in headless Chromium${SKIPPED}`, () => {
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM });
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
    for (const started of targets.splice(0)) await started.close();
  });

  it('lists each delivery live, newest first, drawn as the server draws it', async () => {
    const inspected = await listenInspected(['--secret', SECRET]);
    const first = await send(inspected, 'push', ['--secret', SECRET]);
    const page = await openPage(inspected.page);
    await untilText(page, '#status', 'live');
    const second = await send(inspected, 'issues', ['--action', 'opened', '--secret', SECRET]);
    const third = await send(inspected, 'ping', ['--secret', 'wrong']);
    await untilCount(page, '#rows tr', 3);
    const live = await rowsOf(page);
    expect(live.map((row) => row.cells[2]![1])).toEqual([third, second, first]);
    expect(live[0]!.cells[3]).toEqual(['verification', 'refused 401', expect.stringMatching(/^signature does not match/)]);
    expect(live[1]!.cells[1]).toEqual(['event', 'issues.opened', null]);
    expect(await page.textContent('#count')).toBe('3 deliveries');
    // The same rows, rendered by the server on a reload.
    await page.reload();
    expect(await rowsOf(page)).toEqual(live);
    expect(await state(page)).toEqual({ ran: false, violations: [] });
    expect(errorsOf(page)).toEqual([]);
  });

  it('shows one delivery: headers with the signature, the payload as a tree with search, the raw body, our answer, the forward\'s result', async () => {
    const forward = await target();
    const inspected = await listenInspected(['--secret', SECRET, '--forward-to', forward.url]);
    const page = await openPage(inspected.page);
    const id = await send(inspected, 'issues', ['--action', 'opened', '--secret', SECRET]);
    await forward.received(1);
    await untilText(page, '#rows tr td.forward', /^200 · \d+ ms$/);
    await page.click('#rows tr');
    await page.waitForSelector('#detail .tree');
    expect(await page.textContent('#detail h2')).toBe('issues.opened');
    expect(await page.textContent('#detail .request-line')).toBe('POST / HTTP/1.1');
    const headers = await page.$$eval('#detail .headers tr', (rows) => rows.map((row) => [row.children[0]!.textContent, row.children[1]!.textContent]));
    expect(headers).toContainEqual(['x-service-delivery', id]);
    expect(headers.find(([name]) => name === 'x-hub-signature-256')![1]).toMatch(/^sha256=[0-9a-f]{64}$/);
    const forwarded = forward.requests[0]!;
    expect(await page.textContent('#detail pre.raw')).toBe(forwarded.body.toString('utf8'));
    expect(await page.textContent('#detail pre.answer')).toBe(`{"ok":true,"delivery":"${id}","duplicate":false}`);
    const result = (await page.textContent('#forward-section .forward-result'))!;
    expect(result.startsWith(`${forward.url} answered 200 in `) && result.endsWith(' ms (attempt 1 of 1)')).toBe(true);
    expect(await page.textContent('#forward-section .attempts li span')).toMatch(/^attempt 1, \d\d:\d\d:\d\d UTC: answered 200 in \d+ ms$/);
    expect(await page.textContent('#forward-section .forward-preview')).toBe('{"thanks":"from the target"}');
    expect(page.url()).toMatch(/#1$/);

    // The tree: top-level keys shown, objects closed until opened; a search opens the way to each match.
    const payload = JSON.parse(forwarded.body.toString('utf8')) as Record<string, unknown>;
    const topKeys = await page.$$eval('#detail .tree > details > .children > * > .key, #detail .tree > details > .children > details > summary > .key', (keys) =>
      keys.map((key) => key.textContent),
    );
    expect(topKeys.sort()).toEqual(Object.keys(payload).sort());
    expect(await page.isVisible('#detail .tree .key:text-is("login")')).toBe(false);
    await page.fill('#detail .search', 'Codertocat');
    await untilText(page, '#detail .matches', /^\d+ match/);
    await untilVisible(page, '#detail .tree .value.match');
    expect(await page.locator('#detail .tree .value.match').first().textContent()).toContain('Codertocat');
    await page.click('#detail button:text("Collapse all")');
    expect(await page.isVisible('#detail .tree .children')).toBe(false);

    // Opened again from the address, as a bookmark would.
    const again = await openPage(`${inspected.page}#1`);
    await again.waitForSelector('#detail .tree');
    expect(await again.textContent('#detail h2')).toBe('issues.opened');
    expect(await state(page)).toEqual({ ran: false, violations: [] });
  });

  it('filters by event, action and outcome', async () => {
    // The app behind takes every delivery but closed issues.
    const app = await startTarget('{}', (body) => (/"action":"closed"/.test(body.toString('utf8')) ? 500 : 200));
    targets.push(app);
    const inspected = await listenInspected(['--secret', SECRET, '--forward-to', app.url]);
    await send(inspected, 'push', ['--secret', SECRET]);
    await send(inspected, 'issues', ['--action', 'opened', '--secret', SECRET]);
    await send(inspected, 'issues', ['--action', 'closed', '--secret', SECRET]);
    await send(inspected, 'issues', ['--action', 'closed', '--secret', 'wrong']);
    await app.received(3);
    // Every forward answered before the page is opened: its rows are drawn by the server. (The page's
    // record of a forward is made before its line is printed.)
    await inspected.listener.until(() => inspected.listener.forwards.filter((forward) => forward.outcome !== 'retrying').length === 3);
    expect(await (await fetch(inspected.page)).text()).not.toContain('data-forward="pending"');
    const page = await openPage(inspected.page);
    const shown = async () => (await rowsOf(page)).filter((row) => !row.hidden).map((row) => `${row.cells[1]![1]} ${row.cells[3]![1]}`);
    expect(await page.$$eval('#filter-event option', (options) => options.map((o) => (o as any).value))).toEqual(['', 'issues', 'push']);
    await page.selectOption('#filter-event', 'issues');
    expect(await shown()).toEqual(['issues refused 401', 'issues.closed verified · secret #1', 'issues.opened verified · secret #1']);
    await page.selectOption('#filter-action', 'closed');
    expect(await shown()).toEqual(['issues.closed verified · secret #1']);
    expect(await page.textContent('#count')).toBe('1 of 4 shown');
    await page.selectOption('#filter-event', '');
    await page.selectOption('#filter-action', '');
    await page.selectOption('#filter-outcome', 'forward-failed');
    expect(await shown()).toEqual(['issues.closed verified · secret #1']);
    expect(await page.getAttribute('#rows tr[data-forward-ok="0"] td.forward', 'title')).toBe('{}');
    await page.selectOption('#filter-outcome', 'refused');
    expect(await shown()).toEqual(['issues refused 401']);
    // A delivery arriving while a filter is on is shown only if it passes.
    await send(inspected, 'push', ['--secret', 'wrong']);
    await send(inspected, 'push', ['--secret', SECRET]);
    await untilCount(page, '#rows tr', 6);
    expect(await shown()).toEqual(['push refused 401', 'issues refused 401']);
  });

  it('replays to the forward target and to another URL re-signed, copies curl that sends the same bytes, and copies the payload', async () => {
    const forward = await target();
    const elsewhere = await target();
    const inspected = await listenInspected(['--secret', SECRET, '--secret', OTHER, '--forward-to', forward.url]);
    const page = await openPage(inspected.page);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(inspected.base).origin });
    const id = await send(inspected, 'pull_request', ['--action', 'opened', '--secret', SECRET]);
    const [forwarded] = await forward.received(1);
    await page.click('#rows tr');
    await page.waitForSelector('#detail .actions');

    await page.click('#detail .replay-forward');
    await untilText(page, '#detail .result', /answered 200 in \d+ ms \(as sent\): \{"thanks":"from the target"\}$/);
    const [, replayed] = await forward.received(2);
    expect(replayed!.body.equals(forwarded!.body)).toBe(true);
    expect(replayed!.headers['x-hub-signature-256']).toBe(forwarded!.headers['x-hub-signature-256']);

    expect(await page.$$eval('#detail select[name=sign] option', (options) => options.map((o) => o.textContent))).toEqual([
      'as sent',
      're-signed with secret #1',
      're-signed with secret #2',
    ]);
    await page.fill('#detail input[name=url]', elsewhere.url);
    await page.selectOption('#detail select[name=sign]', '2');
    await page.click('#detail .replay-url button');
    await untilText(page, '#detail .result', /answered 200 in \d+ ms \(signed with secret #2\)/);
    const [resigned] = await elsewhere.received(1);
    expect(resigned!.body.equals(forwarded!.body)).toBe(true);
    expect(resigned!.headers['x-hub-signature-256']).toBe(sign(resigned!.body, OTHER));

    // Copy as curl, with the body downloaded beside it: run, it sends the same bytes and headers.
    const dir = mkdtempSync(join(tmpdir(), 'svc-curl-'));
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#detail .download-body')]);
    expect(download.suggestedFilename()).toBe(`${id}.body`);
    await download.saveAs(join(dir, `${id}.body`));
    expect(readFileSync(join(dir, `${id}.body`)).equals(forwarded!.body)).toBe(true);
    await page.click('#detail .copy-curl');
    await untilText(page, '#detail .result', /^curl command copied/);
    const command = await page.evaluate(() => navigator.clipboard.readText());
    expect(command).toBe(await page.inputValue('#detail textarea.curl'));
    expect(command).toMatch(new RegExp(`^curl -X POST '${elsewhere.url}'`));
    expect(command).toContain(`--data-binary @'${id}.body'`);
    // The target answers from this process: curl runs beside it, not blocking it.
    await promisify(execFile)('sh', ['-c', command], { cwd: dir });
    const [, byCurl] = await elsewhere.received(2);
    expect(byCurl!.body.equals(forwarded!.body)).toBe(true);
    for (const name of ['x-hub-signature-256', 'x-hub-signature', 'x-service-delivery', 'x-service-event', 'content-type', 'user-agent']) {
      expect(byCurl!.headers[name], name).toBe(forwarded!.headers[name]);
    }

    await page.click('#detail .copy-payload');
    await untilText(page, '#detail .result', 'payload copied');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(forwarded!.body.toString('utf8'));
    expect(await state(page)).toEqual({ ran: false, violations: [] });
    expect(errorsOf(page)).toEqual([]);
  });

  it('holds hostile payloads and headers as text only: no markup made, no script run, no CSP violation', async () => {
    const inspected = await listenInspected([]);
    const page = await openPage(inspected.page);
    await untilText(page, '#status', 'live');
    const planted = '<img src=x onerror=window.ran=true>';
    // Raw in JSON strings: DEL, a C1 control, a right-to-left override.
    const payload = `{"action":"</script><script>window.ran=true</script>","title":${JSON.stringify(planted)},"html_url":"javascript:window.ran=true",` +
      `"controls":"a\u007fb\u0085c\u202ed\\u001b[31m\\u0000","repository":{"full_name":"\\"><svg/onload=window.ran=true>"},"huge":"${'A'.repeat(3_000_000)}"}`;
    const file = join(mkdtempSync(join(tmpdir(), 'svc-hostile-')), 'payload.json');
    writeFileSync(file, payload);
    await send(inspected, '<img/src=x/onerror=window.ran=true>', ['--payload', file]);
    const headers = {
      'content-type': 'application/json',
      'x-service-event': '<script>window.ran=true</script>',
      'x-service-delivery': '"><svg/onload=window.ran=true>',
      'x-evil': 'caf\u00e9 \u00ff <b>bold</b>',
    };
    expect((await post(inspected.listener.url, headers, Buffer.from('{"zen":"<iframe src=javascript:window.ran=true>"}'))).status).toBe(200);
    await untilCount(page, '#rows tr', 2);
    const rows = await rowsOf(page);
    expect(rows[0]!.cells[1]![1]).toBe('<script>window.ran=true</script>');
    expect(rows[0]!.cells[2]![1]).toBe('"><svg/onload=window.ran=true>');
    expect(rows[1]!.cells[1]![1]).toBe('<img/src=x/onerror=window.ran=true>.</script><script>window.ran=true</script>');

    for (const n of [1, 2]) {
      await page.click(`#rows tr[data-n="${n}"]`);
      await page.waitForSelector(`#detail .tree`);
      await page.click('#detail button:text("Expand all")');
    }
    await page.click('#rows tr[data-n="1"]');
    await page.waitForSelector('#detail .tree');
    await page.click('#detail button:text("Expand all")');
    const values = await page.$$eval('#detail .tree .value', (nodes) => nodes.map((node) => node.textContent ?? ''));
    expect(values).toContain(JSON.stringify(planted));
    expect(values).toContain('"javascript:window.ran=true"');
    // Controls escaped by the tree as JSON writes them; those JSON leaves raw made visible.
    expect(values).toContain('"a\u2421b\ufffdc\ufffdd\\u001b[31m\\u0000"');
    expect(values.find((value) => value.startsWith('"AAAA'))!.length).toBeLessThan(10_010);
    const raw = (await page.textContent('#detail pre.raw'))!;
    expect(raw).toContain('a\u2421b\ufffdc\ufffdd');
    expect(raw).not.toMatch(/[\u007f\u0085\u202e]/);
    expect(await page.textContent('#detail .note')).toMatch(/the start shown: download it for the whole/);
    await page.click('#rows tr[data-n="2"]');
    await page.waitForSelector('#detail .headers');
    const evil = await page.$$eval('#detail .headers tr', (trs) => trs.map((tr) => [tr.children[0]!.textContent, tr.children[1]!.textContent]));
    expect(evil).toContainEqual(['x-evil', 'caf\u00e9 \u00ff <b>bold</b>']);

    // Nothing but the page's own markup: no element from a delivery, no javascript: link, only our script.
    expect(await page.$$eval('img, svg, iframe, b, object, embed', (found) => found.length)).toBe(0);
    expect(await page.$$eval('script', (scripts) => scripts.map((s) => (s as any).src.replace(/\?.*/, '')))).toEqual([
      `${inspected.base}static/inspector.js`,
    ]);
    expect(await page.$$eval('a', (links) => links.filter((link) => !link.getAttribute('href')?.startsWith('/api/deliveries/')).length)).toBe(0);
    expect(await state(page)).toEqual({ ran: false, violations: [] });
    expect(errorsOf(page)).toEqual([]);

    // The page the server renders holds them as text too.
    const reloaded = await openPage(inspected.page);
    expect((await rowsOf(reloaded)).map((row) => row.cells[1]![1])).toEqual(rows.map((row) => row.cells[1]![1]));
    expect(await reloaded.$$eval('img, svg, iframe, b', (found) => found.length)).toBe(0);
    expect(await state(reloaded)).toEqual({ ran: false, violations: [] });
  });

  it('shows a payload nested a hundred thousand deep: search and "Expand all" work, the tree stops at 100 levels, the tab lives', async () => {
    const inspected = await listenInspected([]);
    const page = await openPage(inspected.page);
    await untilText(page, '#status', 'live');
    // Objects 5,000 deep (a "needle" at level 40) and arrays 100,000 deep: 300 KB, well within a delivery.
    const objects = Array.from({ length: 5_000 }, (_, i) => (i === 40 ? '{"needle":"here","down":' : '{"down":')).join('') + 'null' + '}'.repeat(5_000);
    const body = `{"action":"deep","objects":${objects},"arrays":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expect((await post(inspected.listener.url, { 'content-type': 'application/json', 'x-service-event': 'issues', 'x-service-delivery': 'deep-1' }, Buffer.from(body))).status).toBe(200);
    await untilCount(page, '#rows tr', 1);
    await page.click('#rows tr[data-n="1"]');
    await page.waitForSelector('#detail .tree');
    await page.fill('#detail .search', 'here');
    await untilText(page, '#detail .matches', '1 match');
    expect(await page.locator('#detail .tree .value.match').textContent()).toBe('"here"');
    await page.fill('#detail .search', 'nowhere-in-it');
    await untilText(page, '#detail .matches', '0 matches');
    await page.click('#detail button:text("Expand all")');
    await untilCount(page, '#detail .tree .deeper', 2);
    expect(await page.locator('#detail .tree .deeper').first().textContent()).toBe('{1} nested deeper than 100 levels: see the raw body');
    expect(await page.textContent('#detail h2')).toBe('issues.deep');
    expect(errorsOf(page)).toEqual([]);
  });

  it('says so when its event stream is refused (16 pages already open), not that it is trying again: the browser does not', async () => {
    const inspected = await listenInspected([]);
    const streams = Array.from({ length: 16 }, () => readEvents(`${inspected.base}events?token=${inspected.token}`));
    expect(await Promise.all(streams.map((stream) => stream.opened))).toEqual(Array(16).fill(200));
    try {
      const page = await openPage(inspected.page);
      await untilText(page, '#status', /^disconnected: the stream was refused \(too many pages open/);
      expect(await page.evaluate(() => document.getElementById('status').dataset.state)).toBe('down');
    } finally {
      for (const stream of streams) stream.stop();
    }
  });

  it('refuses the page, its script and its events without the token', async () => {
    const inspected = await listenInspected([]);
    const page = await openPage(inspected.base);
    const answer = await page.goto(inspected.base);
    expect(answer!.status()).toBe(403);
    expect(await page.textContent('body')).toMatch(/^forbidden: open the address with its token/);
    const wrong = await page.goto(`${inspected.base}?token=${'x'.repeat(inspected.token.length)}`);
    expect(wrong!.status()).toBe(403);
    const fetched = await page.evaluate(async (base) => {
      const statuses = [];
      for (const path of ['static/inspector.js', 'static/inspector.css', 'events', 'api/deliveries']) statuses.push((await fetch(base + path)).status);
      return statuses;
    }, inspected.base);
    expect(fetched).toEqual([403, 403, 403, 403]);
  });

  it('serves a --save directory: its deliveries, the files it skipped, no live stream', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-inspect-browser-'));
    const saving = await listenInspected(['--save', dir, '--secret', SECRET, '--max-deliveries', '2']);
    await send(saving, 'push', ['--secret', SECRET]);
    await send(saving, 'issues', ['--action', 'opened', '--secret', SECRET]);
    await saving.listener.exited;
    writeFileSync(join(dir, '<img src=x onerror=window.ran=true>.http'), 'not a delivery');
    const controller = new AbortController();
    let printed = '';
    const { changed, until } = changes();
    const exited = runCli(['webhook', 'inspect', dir, '--secret', SECRET], {
      signal: controller.signal,
      onStdout: (text) => {
        printed += text;
        changed();
      },
    });
    const address = /(http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+)/;
    await until(() => address.test(printed));
    const url = address.exec(printed)![1]!;
    const requested: string[] = [];
    const page = await openPage(url);
    page.on('request', (request) => requested.push(new URL(request.url()).pathname));
    expect((await rowsOf(page)).map((row) => [row.cells[1]![1], row.cells[3]![1]])).toEqual([
      ['issues.opened', 'verified · secret #1'],
      ['push', 'verified · secret #1'],
    ]);
    expect(await page.textContent('#status')).toBe('saved deliveries');
    expect(await page.textContent('#unreadable summary')).toBe('1 file is not saved deliveries');
    expect(await page.textContent('#unreadable li')).toBe('<img src=x onerror=window.ran=true>.http: not a saved delivery (no svc-migrate header)');
    await page.click('#rows tr');
    await page.waitForSelector('#detail .tree');
    expect(await page.textContent('#detail .facts')).toMatch(/File.*\.http/);
    expect(await page.textContent('#detail')).toContain('Saved deliveries were answered 200 once saved.');
    expect(requested).not.toContain('/events');
    expect(await state(page)).toEqual({ ran: false, violations: [] });
    controller.abort();
    expect((await exited).code).toBe(0);
  });
});
