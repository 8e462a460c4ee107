import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inspectListener, type ListenInspection } from '../../src/commands/common/inspector.js';
import type { ReceivedDelivery } from '../../src/webhook/receiver.js';
import type { RelayGap } from '../../src/webhook/relay/types.js';
import { sign } from '../../src/webhook/signature.js';
import { chromiumPath, type Inspected, listenInspected, startTarget, type Target, untilPage } from '../helpers/inspector.js';
import { post } from '../helpers/listener.js';
import { runCli } from '../helpers/run-cli.js';
import { changes } from '../helpers/until.js';

// The inspector's actions and marks in headless Chromium: curl from the URL as Replay reads it, the
// default replay target, duplicates and relayed deliveries in their rows, relay gaps, "replay
// every failed forward", and the outcome columns on screen with a delivery open.

declare const window: any;

const CHROMIUM = chromiumPath();
const SKIPPED = CHROMIUM ? '' : ' (skipped: no Chromium on this machine; `apt-get install chromium`, as .ci/run does)';
const SECRET = 'actions-secret';

let browser: Browser;
const contexts: BrowserContext[] = [];
const targets: Target[] = [];
const inspections: ListenInspection[] = [];

async function openPage(url: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  contexts.push(context);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  (page as Page & { errors: string[] }).errors = errors;
  await page.goto(url);
  return page;
}

const textIs = (selector: string, expected: string) => `document.querySelector(${JSON.stringify(selector)})?.textContent === ${JSON.stringify(expected)}`;
const textMatches = (selector: string, pattern: RegExp) =>
  `new RegExp(${JSON.stringify(pattern.source)}).test(document.querySelector(${JSON.stringify(selector)})?.textContent ?? '')`;

async function target(status?: (body: Buffer) => number): Promise<Target> {
  const started = await startTarget('{"thanks":true}', status);
  targets.push(started);
  return started;
}

/** A signed delivery posted as the service posts one. */
function deliver(inspected: Inspected, id: string, event = 'issues', action = 'opened') {
  const body = Buffer.from(JSON.stringify({ action, issue: { number: 1 } }));
  const headers = { 'content-type': 'application/json', 'x-service-event': event, 'x-service-delivery': id, 'x-hub-signature-256': sign(body, SECRET) };
  return post(inspected.listener.url, headers, body);
}

/** A delivery as `listen --relay` hands it on (src/webhook/receiver.ts). */
function relayed(sequence: number, id: string, verification: ReceivedDelivery['verification'], body: 'raw' | 're-encoded'): ReceivedDelivery {
  const rawBody = Buffer.from(`{"action":"opened","issue":{"number":${sequence}}}`);
  const rawHeaders = ['content-type', 'application/json', 'x-service-event', 'issues', 'x-service-delivery', id];
  return {
    sequence,
    receivedAt: '2026-11-28T03:00:0' + sequence + '.000Z',
    id,
    event: 'issues',
    action: 'opened',
    hookId: undefined,
    repository: undefined,
    contentType: 'json',
    method: 'POST',
    path: '/',
    rawHeaders: () => rawHeaders,
    headers: { 'content-type': 'application/json', 'x-service-event': 'issues', 'x-service-delivery': id },
    rawBody,
    payloadText: () => rawBody.toString('utf8'),
    verification,
    warnings: [],
    duplicate: false,
    ping: false,
    relay: { channel: 'https://smee.io/abcdef', relayedAt: '2026-11-28T02:59:59.000Z', body, formConverted: false },
  };
}

describe.skipIf(!CHROMIUM)(`the inspector's actions and marks, in headless Chromium${SKIPPED}`, () => {
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM });
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
    for (const started of targets.splice(0)) await started.close();
    for (const inspection of inspections.splice(0)) await inspection.inspector.close();
  });

  it('copies curl with the URL as Replay reads it: a port and path alone mean this machine', async () => {
    const inspected = await listenInspected(['--secret', SECRET]);
    const page = await openPage(inspected.page);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(inspected.base).origin });
    expect((await deliver(inspected, 'curl-1')).status).toBe(200);
    await untilPage(page, `document.querySelectorAll('#rows tr').length === 1`);
    await page.click('#rows tr');
    await page.waitForSelector('#detail .actions');
    await page.fill('#detail input[name=url]', '3001/replayed');
    await page.click('#detail .copy-curl');
    await untilPage(page, textMatches('#detail .result', /^curl command copied/));
    expect(await page.inputValue('#detail textarea.curl')).toMatch(/^curl -X POST 'http:\/\/localhost:3001\/replayed' \\\n/);
    // A URL Replay would refuse gives no command, and says why.
    await page.fill('#detail input[name=url]', 'ftp://127.0.0.1/x');
    await page.click('#detail .copy-curl');
    await untilPage(page, textMatches('#detail .result', /^no curl command: the replay URL takes .*only http:\/\/ and https:\/\/ can be posted to/));
  });

  it('replays by default to the forward target; without one, hands it back to the receiver, taken as new, and says a POST to it is a duplicate', async () => {
    const app = await target();
    const forwarding = await listenInspected(['--secret', SECRET, '--forward-to', app.url]);
    expect((await deliver(forwarding, 'default-1')).status).toBe(200);
    const page = await openPage(forwarding.page);
    await untilPage(page, `document.querySelectorAll('#rows tr').length === 1`);
    await page.click('#rows tr');
    await page.waitForSelector('#detail .actions');
    expect(await page.inputValue('#detail input[name=url]')).toBe(app.url);
    expect(await page.textContent('#detail .replay-url button')).toBe('Replay to this URL');
    await page.click('#detail .replay-url button');
    await untilPage(page, textMatches('#detail .result', /answered 200 in \d+ ms \(as sent\)/));
    expect((await app.received(2)).length).toBe(2);

    const alone = await listenInspected(['--secret', SECRET]);
    expect((await deliver(alone, 'default-2')).status).toBe(200);
    const other = await openPage(alone.page);
    await untilPage(other, `document.querySelectorAll('#rows tr').length === 1`);
    await other.click('#rows tr');
    await other.waitForSelector('#detail .actions');
    expect(await other.inputValue('#detail input[name=url]')).toBe(alone.listener.url);
    expect(await other.textContent('#detail .replay-url button')).toBe(
      'Replay to this receiver (a delivery id it took is answered as a duplicate: not saved or forwarded again)',
    );
    await other.fill('#detail input[name=url]', app.url);
    expect(await other.textContent('#detail .replay-url button')).toBe('Replay to this URL');
    // Handed back to the receiver, it is taken as new: listed, printed, with a warning saying why.
    expect(await other.textContent('#detail .replay-receiver')).toBe('Replay to this receiver as a new delivery (its duplicate check bypassed)');
    await other.click('#detail .replay-receiver');
    await untilPage(other, textIs('#detail .result', 'taken by this receiver as a new delivery: it is listed, saved and shown as any other'));
    await alone.listener.waitFor(2);
    expect(alone.listener.lines[1]).toMatchObject({ delivery: 'default-2', duplicate: false });
    await untilPage(other, `document.querySelectorAll('#rows tr').length === 2`);
    expect(await other.getAttribute('#rows tr[data-n="2"]', 'data-duplicate')).toBe('0');
    expect(alone.listener.lines[1]!.warnings).toContain('replayed from the inspector: taken as new, its duplicate check bypassed');
    const warnings = await other.$$eval('#rows tr', (rows) => rows.map((row) => Number(row.dataset.warnings)));
    expect(warnings[0]).toBe(warnings[1]! + 1);
  });

  it('marks a duplicate in its row, live and as the server renders it', async () => {
    const app = await target();
    const inspected = await listenInspected(['--secret', SECRET, '--forward-to', app.url]);
    const page = await openPage(inspected.page);
    await untilPage(page, textIs('#status', 'live'));
    expect((await deliver(inspected, 'twice')).status).toBe(200);
    expect((await deliver(inspected, 'twice')).status).toBe(200);
    await untilPage(page, `document.querySelectorAll('#rows tr').length === 2`);
    const forwardCells = () => page.$$eval('#rows tr td.forward', (cells) => cells.map((cell) => cell.textContent));
    await untilPage(page, `document.querySelector('#rows tr[data-n="1"] td.forward')?.textContent !== '…'`);
    expect((await forwardCells())[0]).toBe('duplicate: not forwarded again');
    expect((await forwardCells())[1]).toMatch(/^200 · \d+ ms$/);
    await page.reload();
    expect((await forwardCells())[0]).toBe('duplicate: not forwarded again');
    expect(await page.getAttribute('#rows tr[data-n="2"] td.forward', 'title')).toMatch(/^a redelivery of a delivery already received/);
  });

  it('keeps the verification and forward columns on screen with a delivery open', async () => {
    const app = await target();
    const inspected = await listenInspected(['--secret', SECRET, '--forward-to', app.url]);
    // A long event and action: the widest a row gets.
    expect((await deliver(inspected, `wide-${'x'.repeat(60)}`, 'repository_vulnerability_alert', 'a_rather_long_action_name_indeed')).status).toBe(200);
    await app.received(1);
    const page = await openPage(inspected.page);
    await untilPage(page, `/^200/.test(document.querySelector('#rows tr td.forward')?.textContent ?? '')`);
    await page.click('#rows tr');
    await page.waitForSelector('#detail .actions');
    const boxes = await page.evaluate(() => {
      const list = window.document.querySelector('.list').getBoundingClientRect();
      const box = (selector: string) => {
        const found = window.document.querySelector(selector).getBoundingClientRect();
        return { left: found.left, right: found.right, width: found.width };
      };
      return { list: { left: list.left, right: list.right }, verification: box('#rows tr td.verification'), forward: box('#rows tr td.forward') };
    });
    for (const cell of [boxes.verification, boxes.forward]) {
      expect(cell.width).toBeGreaterThan(60);
      expect(cell.left).toBeGreaterThanOrEqual(boxes.list.left);
      expect(cell.right).toBeLessThanOrEqual(boxes.list.right);
    }
    expect(await page.$eval('#list', (table) => table.scrollWidth <= table.parentElement.clientWidth)).toBe(true);
  });

  it('replays every failed forward to the forward target, with its progress and result; a second time, none is left', async () => {
    let calls = 0;
    // The app fails the first three forwards, then takes everything.
    const app = await target(() => (++calls <= 3 ? 500 : 200));
    const inspected = await listenInspected(['--secret', SECRET, '--forward-to', app.url]);
    for (const id of ['f-1', 'f-2', 'f-3', 'f-4']) expect((await deliver(inspected, id)).status).toBe(200);
    await app.received(4);
    await inspected.listener.until(() => inspected.listener.forwards.filter((forward) => forward.outcome !== 'retrying').length === 4);
    const page = await openPage(inspected.page);
    expect(await page.$$eval('#rows tr[data-forward="failed"]', (rows) => rows.length)).toBe(3);
    expect(await page.textContent('#replay-failed')).toBe(`Replay every failed forward to ${app.url}`);
    const progress: string[] = [];
    await page.exposeFunction('sawProgress', (text: string) => progress.push(text));
    await page.evaluate(() => {
      const result = window.document.getElementById('replay-failed-result');
      const watch = new window.MutationObserver(() => window.sawProgress(result.textContent));
      watch.observe(result, { childList: true, characterData: true, subtree: true });
    });
    await page.click('#replay-failed');
    await untilPage(page, textIs('#replay-failed-result', 'replayed 3: 3 delivered, 0 failed again'));
    const replayed = (await app.received(7)).slice(4);
    expect(replayed.map((request) => request.headers['x-service-delivery'])).toEqual(['f-1', 'f-2', 'f-3']);
    // How many steps the page draws depends on how the answer's lines arrive (one read may hold them all): each drawn is one of these.
    expect(progress[0]).toBe('replaying…');
    for (const text of progress) expect(text).toMatch(/^(replaying…|replaying [1-3] of 3… \(f-[1-3]: answered 200\)|replayed 3: 3 delivered, 0 failed again)$/);
    await untilPage(page, `document.querySelectorAll('#rows tr[data-forward="delivered"]').length === 4`);
    expect(await page.textContent('#rows tr[data-n="1"] td.forward')).toMatch(/^200 · \d+ ms · attempt 2 of 2$/);
    await page.click('#replay-failed');
    await untilPage(page, textIs('#replay-failed-result', 'no failed forward to replay'));
    expect(app.requests.length).toBe(7);
  });

  it('over a saved directory, shows each forward as forwards.jsonl last says it, replays every failed one, and draws their rows again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-actions-saved-'));
    const saving = await listenInspected(['--secret', SECRET, '--save', dir, '--max-deliveries', '3']);
    for (const id of ['s-1', 's-2', 's-3']) expect((await deliver(saving, id)).status).toBe(200);
    expect(await saving.listener.exited).toBe(0);
    const line = (id: string, outcome: string, status: number | null) =>
      JSON.stringify({ file: `${id}.http`, delivery: id, outcome, status, at: '2026-11-28T03:00:00.000Z', target: 'http://127.0.0.1:1/' });
    writeFileSync(join(dir, 'forwards.jsonl'), `${[line('s-1', 'failed', 500), line('s-2', 'delivered', 200), line('s-3', 'not_forwarded', null)].join('\n')}\n`, { mode: 0o600 });
    const app = await target();
    const controller = new AbortController();
    let stdout = '';
    const { changed, until } = changes();
    const exited = runCli(['webhook', 'inspect', dir, '--forward-to', app.url], {
      signal: controller.signal,
      env: { SVC_WEBHOOK_SECRET: '' },
      onStdout: (text) => {
        stdout += text;
        changed();
      },
    });
    await until(() => /http:\S+token=\S+/.test(stdout));
    const page = await openPage(/http:\S+token=\S+/.exec(stdout)![0]);
    const states = () => page.$$eval('#rows tr', (rows) => rows.map((row) => `${row.querySelector('td.id')!.textContent} ${row.dataset.forward}`));
    expect(await states()).toEqual(['s-3 not_forwarded', 's-2 delivered', 's-1 failed']);
    expect(await page.textContent('#rows tr[data-n="1"] td.forward')).toBe('failed · 500');
    await page.click('#replay-failed');
    await untilPage(page, textIs('#replay-failed-result', 'replayed 2: 2 delivered, 0 failed again'));
    await untilPage(page, `document.querySelectorAll('#rows tr[data-forward="delivered"]').length === 3`);
    expect(await page.textContent('#rows tr[data-n="1"] td.forward')).toMatch(/^200 · \d+ ms · attempt 2 of 2$/);
    await page.click('#rows tr[data-n="3"]');
    await page.waitForSelector('#forward-section .forward-result');
    expect(await page.textContent('#forward-section .forward-result')).toMatch(new RegExp(`^${app.url} answered 200 in \\d+ ms \\(attempt 1 of 1\\)$`));
    expect((page as Page & { errors: string[] }).errors).toEqual([]);
    controller.abort();
    expect((await exited).code).toBe(0);
  });

  it('shows relayed deliveries "via relay" with their verdict, and relay gaps with their time range', async () => {
    const inspection = await inspectListener({ port: 0, keep: 100, secrets: [SECRET] });
    inspections.push(inspection);
    inspection.source.where = 'http://127.0.0.1:1/';
    const { observer } = inspection;
    observer.delivered([relayed(1, 'r-raw', { verified: true, algorithm: 'sha256', secret: 1 }, 'raw')]);
    const lost: RelayGap = { channel: 'https://smee.io/abcdef', from: '2026-11-28T03:00:01.000Z', to: null, reason: 'the relay closed the stream', failedTries: 0 };
    observer.relayGap(lost);
    const page = await openPage(inspection.inspector.url);
    await untilPage(page, textIs('#status', 'live'));
    observer.delivered([
      relayed(2, 'r-matched', { verified: true, algorithm: 'sha256', secret: 1, relayed: 'matched' }, 're-encoded'),
      relayed(3, 'r-changed', { verified: false, relayed: 'unverifiable' }, 're-encoded'),
    ]);
    await untilPage(page, `document.querySelectorAll('#rows tr').length === 3`);
    const verdicts = await page.$$eval('#rows tr td.verification', (cells) => cells.map((cell) => cell.textContent));
    expect(verdicts).toEqual([
      'via relay · unverifiable: the relay re-encoded the body',
      'via relay · verified (re-encoded body matched) · secret #1',
      'via relay · verified · secret #1',
    ]);
    expect(await page.getAttribute('#rows tr[data-n="2"] td.verification', 'title')).toBe('read from https://smee.io/abcdef: the relay\'s re-encoding of the body');
    await page.selectOption('#filter-outcome', 'relayed');
    expect(await page.textContent('#count')).toBe('3 deliveries');

    // The gap told when the stream was lost, then the same gap once read again: one line, its range.
    expect(await page.$$eval('#gaps li', (items) => items.map((item) => item.textContent))).toEqual([
      'relay channel https://smee.io/abcdef not read since 03:00:01 UTC (the relay closed the stream): deliveries sent to it then are lost; reconnecting',
    ]);
    observer.relayGap({ ...lost, to: '2026-11-28T03:00:05.000Z' });
    await untilPage(page, textMatches('#gaps li', /from 03:00:01 UTC to 03:00:05 UTC/));
    expect(await page.$$eval('#gaps li', (items) => items.map((item) => item.textContent))).toEqual([
      'relay channel https://smee.io/abcdef not read from 03:00:01 UTC to 03:00:05 UTC (the relay closed the stream): ' +
        'deliveries sent to it then are lost; redeliver them from the webhook\'s settings',
    ]);
    await page.click('#rows tr[data-n="2"]');
    await page.waitForSelector('#detail .facts');
    expect(await page.textContent('#detail .facts')).toContain('Via relayhttps://smee.io/abcdef, relayed at 2026-11-28T02:59:59.000Z: the relay\'s re-encoding of the body');
    expect(await page.textContent('#detail .facts')).toContain('Verificationverified (re-encoded body matched) · secret #1');
    expect((page as Page & { errors: string[] }).errors).toEqual([]);
  });
});
