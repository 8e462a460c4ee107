import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { buildDelivery } from '../../src/webhook/delivery.js';
import { readJournal } from '../../src/webhook/forward-journal.js';
import { sign } from '../../src/webhook/signature.js';
import { api, askReplay, fetchRaw, type Inspected, listenInspected, readEvents, startTarget, type Target } from '../helpers/inspector.js';
import { post } from '../helpers/listener.js';
import { runCli } from '../helpers/run-cli.js';
import { changes } from '../helpers/until.js';

const SECRET = 'inspector-secret-one';
const OTHER = 'inspector-secret-two';
const CSP = 'default-src \'self\'; base-uri \'none\'; form-action \'none\'; frame-ancestors \'none\'; object-src \'none\'';

const targets: Target[] = [];
afterEach(async () => {
  for (const target of targets.splice(0)) await target.close();
});
async function target(): Promise<Target> {
  const started = await startTarget();
  targets.push(started);
  return started;
}

/** `webhook send` as a user runs it: a signed delivery of `event`. */
async function send(url: string, event: string, extra: string[] = []) {
  const result = await runCli(['webhook', 'send', '--url', url, '--event', event, '--json', ...extra]);
  return { code: result.code, ...(JSON.parse(result.stdout || '{}') as { delivery: string; status: number }) };
}

const at = (inspected: Inspected, path: string) => new URL(path, inspected.base).href;

/** Bytes no HTTP client would send, and the start of the answer. */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(bytes));
    let answer = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      answer += chunk;
    });
    socket.on('end', () => resolve(answer)).on('error', reject);
  });
}

describe('webhook listen --inspect: the page\'s server', () => {
  it('prints the address once, with its token, and answers nothing without the token: pages, static files, the event stream, replay', async () => {
    const inspected = await listenInspected(['--secret', SECRET]);
    await send(inspected.listener.url, 'push', ['--secret', SECRET]);
    const paths = ['/', '/static/inspector.js', '/static/inspector.css', '/static/icon.svg', '/events', '/api/deliveries', '/api/deliveries/1', '/api/deliveries/1/body', '/nowhere'];
    const wrong = [
      '',
      '?token=',
      `?token=${inspected.token.slice(0, -1)}`,
      `?token=${inspected.token}x`,
      `?token=${inspected.token.toUpperCase() === inspected.token ? inspected.token.toLowerCase() : inspected.token.toUpperCase()}`,
    ];
    for (const path of paths) {
      for (const query of wrong) {
        const answer = await fetchRaw(at(inspected, `${path}${query}`));
        expect(answer.status, `${path}${query}`).toBe(403);
        expect(answer.text).not.toContain('"delivery"');
      }
      // The token in the header the page's script sends works; a wrong one there does not.
      expect((await fetchRaw(at(inspected, path), { headers: { 'x-inspector-token': 'nope' } })).status).toBe(403);
    }
    const replay = await askReplay({ ...inspected, token: 'nope' }, 1, { to: 'url', url: 'http://127.0.0.1:1/' });
    expect(replay.status).toBe(403);

    for (const path of ['/', '/static/inspector.js', '/static/inspector.css', '/static/icon.svg']) {
      const answer = await fetchRaw(at(inspected, `${path}?token=${inspected.token}`));
      expect(answer.status, path).toBe(200);
      expect(answer.headers['content-security-policy']).toBe(CSP);
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.headers['referrer-policy']).toBe('no-referrer');
    }
    const page = await fetchRaw(inspected.page);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    // One script and one stylesheet, both our own: nothing inline, nothing from elsewhere.
    expect(page.text.match(/<script\b[^>]*>/g)).toEqual([`<script src="/static/inspector.js?token=${inspected.token}" defer>`]);
    expect(page.text).not.toMatch(/\sstyle=|<style|\son[a-z]+=|https?:\/\/(?!127\.0\.0\.1)/i);

    // The token is printed once, on stderr; never in what stdout carries.
    expect(inspected.listener.stderr().split(inspected.token).length - 1).toBe(1);
    await inspected.listener.waitFor(1);
    expect(JSON.stringify(inspected.listener.lines)).not.toContain(inspected.token);
  });

  it('serves only names of this machine (DNS rebinding), even with the token', async () => {
    const inspected = await listenInspected([]);
    const { port } = new URL(inspected.base);
    for (const host of [`evil.example:${port}`, 'evil.example', `127.0.0.1.nip.io:${port}`, `[::2]:${port}`]) {
      expect((await fetchRaw(inspected.page, { headers: { host } })).status, host).toBe(403);
    }
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `127.1.2.3:${port}`]) {
      expect((await fetchRaw(inspected.page, { headers: { host } })).status, host).toBe(200);
    }
    // node:http keeps the first of two Host fields: the page refuses the request instead.
    const twoHosts = await rawExchange(Number(port), `GET /?token=${inspected.token} HTTP/1.1\r\nhost: localhost:${port}\r\nhost: evil.example\r\n\r\n`);
    expect(twoHosts).toMatch(/^HTTP\/1\.1 400 /);
  });

  it('streams each delivery as it is answered, refused ones with their reason, and the stream resumes where it left off', async () => {
    const inspected = await listenInspected(['--secret', SECRET, '--secret', OTHER]);
    const stream = readEvents(at(inspected, `/events?token=${inspected.token}`));
    expect(await stream.opened).toBe(200);
    const sent = await send(inspected.listener.url, 'issues', ['--action', 'opened', '--secret', OTHER]);
    await stream.until(() => stream.events.length >= 1);
    expect(stream.events[0]).toMatchObject({
      event: 'delivery',
      id: '1',
      data: { n: 1, id: sent.delivery, event: 'issues', action: 'opened', verification: { state: 'verified', algorithm: 'sha256', secret: 2 }, forward: null },
    });
    const refused = await send(inspected.listener.url, 'push', ['--secret', 'not-the-secret']);
    expect(refused.code).toBe(1);
    await stream.until(() => stream.events.length >= 2);
    expect(stream.events[1]!.data).toMatchObject({ n: 2, event: 'push', verification: { state: 'refused', status: 401, reason: expect.stringMatching(/^signature does not match/) } });
    stream.stop();

    // A browser reconnecting says the last id it saw: it gets what came after, not the rest again.
    const again = readEvents(at(inspected, `/events?token=${inspected.token}`), { 'last-event-id': '1' });
    await again.opened;
    await again.until(() => again.events.length >= 1);
    expect(again.events.map((e) => e.data.n)).toEqual([2]);
    again.stop();
  });

  it('shows one delivery: request line, headers as received with the signature, the raw body, our answer; never a secret', async () => {
    const inspected = await listenInspected(['--secret', SECRET, '--secret', OTHER]);
    const payload = Buffer.from('{\n  "action": "opened",\n  "number": 12345678901234567890,\n  "nested": { "deep": [1, { "two": "three" }] }\n}');
    const delivery = buildDelivery({ event: 'issues', payload, contentType: 'json', secret: SECRET });
    expect((await post(inspected.listener.url, delivery.headers, delivery.body)).status).toBe(200);
    const form = buildDelivery({ event: 'issues', payload: Buffer.from('{"action":"closed"}'), contentType: 'form', secret: SECRET });
    expect((await post(inspected.listener.url, form.headers, form.body)).status).toBe(200);
    await inspected.listener.waitFor(2);

    const detail = await api(inspected, '/api/deliveries/1');
    expect(detail).toMatchObject({ n: 1, method: 'POST', path: '/', id: delivery.id, event: 'issues', action: 'opened', duplicate: false });
    expect(detail.headers).toContainEqual(['x-hub-signature-256', delivery.headers['x-hub-signature-256']]);
    expect(detail.headers).toContainEqual(['X-Service-Delivery'.toLowerCase(), delivery.id]);
    expect(detail.body).toEqual({ text: delivery.body.toString('utf8'), bytes: delivery.body.length, truncated: false, utf8: true });
    // The payload exactly as sent (its big number too), for the page's tree.
    expect(detail.payload).toBe(delivery.body.toString('utf8'));
    expect(detail.answer).toEqual({ status: 200, body: `{"ok":true,"delivery":"${delivery.id}","duplicate":false}` });
    const formDetail = await api(inspected, '/api/deliveries/2');
    expect(formDetail.body.text).toMatch(/^payload=%7B/);
    expect(formDetail.payload).toBe('{"action":"closed"}');

    const download = await fetchRaw(at(inspected, `/api/deliveries/1/body?token=${inspected.token}`));
    expect(download.body.equals(delivery.body)).toBe(true);
    expect(download.headers['content-type']).toBe('application/octet-stream');
    expect(download.headers['content-disposition']).toBe(`attachment; filename="${delivery.id}.body"`);

    const everything = [
      (await fetchRaw(inspected.page)).text,
      JSON.stringify(await api(inspected, '/api/deliveries')),
      JSON.stringify(detail),
      JSON.stringify(formDetail),
    ].join('\n');
    expect(everything).not.toContain(SECRET);
    expect(everything).not.toContain(OTHER);
    expect(everything).toContain('data-secrets="2"');
  });

  it('replays to the forward target and to another URL, as sent or re-signed with a secret named by its number: the same bytes', async () => {
    const forward = await target();
    const elsewhere = await target();
    const inspected = await listenInspected(['--secret', SECRET, '--secret', OTHER, '--forward-to', forward.url]);
    const sent = await send(inspected.listener.url, 'pull_request', ['--action', 'closed', '--secret', SECRET]);
    const [forwarded] = await forward.received(1);
    // The forward's outcome reaches the page (it is recorded there before its line is printed).
    await inspected.listener.waitForForward((f) => f.outcome === 'delivered');
    expect((await api(inspected, '/api/deliveries/1')).forward?.state).toBe('delivered');
    expect((await api(inspected, '/api/deliveries/1')).forward).toMatchObject({
      state: 'delivered',
      attempts: 1,
      maxAttempts: 1,
      history: [{ attempt: 1, status: 200, error: null, preview: '{"thanks":true}' }],
    });

    const again = await askReplay(inspected, 1, { to: 'forward' });
    expect(again.status).toBe(200);
    expect(JSON.parse(again.text)).toMatchObject({ sent: true, status: 200, signed: 'as sent', response: '{"thanks":true}' });
    const [, replayed] = await forward.received(2);
    expect(replayed!.body.equals(forwarded!.body)).toBe(true);
    expect(replayed!.headers['x-hub-signature-256']).toBe(forwarded!.headers['x-hub-signature-256']);
    expect(replayed!.headers['x-service-delivery']).toBe(sent.delivery);

    const resigned = await askReplay(inspected, 1, { to: 'url', url: elsewhere.url, sign: 2 });
    expect(JSON.parse(resigned.text)).toMatchObject({ sent: true, status: 200, signed: 'signed with secret #2', url: elsewhere.url });
    const asSent = await askReplay(inspected, 1, { to: 'url', url: elsewhere.url.replace('http://', ''), sign: 'as-sent' });
    expect(JSON.parse(asSent.text)).toMatchObject({ sent: true, status: 200, signed: 'as sent' });
    const [first, second] = await elsewhere.received(2);
    expect(first!.body.equals(forwarded!.body)).toBe(true);
    expect(first!.headers['x-hub-signature-256']).toBe(sign(first!.body, OTHER));
    expect(first!.headers['x-hub-signature']).toBe(sign(first!.body, OTHER, 'sha1'));
    expect(second!.body.equals(forwarded!.body)).toBe(true);
    expect(second!.headers['x-hub-signature-256']).toBe(sign(second!.body, SECRET));

    // A target that cannot be reached is an answer the page shows, not a failure of the page.
    const nobody = await askReplay(inspected, 1, { to: 'url', url: 'http://127.0.0.1:1/' });
    expect(nobody.status).toBe(200);
    expect(JSON.parse(nobody.text)).toMatchObject({ sent: false, error: expect.any(String) });
  });

  it('shows each forward attempt as it ends: the retries of --forward-retries, then the answer that took it', async () => {
    let calls = 0;
    const app = await startTarget('{"busy":true}', () => (++calls === 1 ? 503 : 200));
    targets.push(app);
    const inspected = await listenInspected(['--forward-to', app.url, '--forward-retries', '2', '--forward-header', 'X-Env: dev']);
    const stream = readEvents(at(inspected, `/events?token=${inspected.token}`));
    await stream.opened;
    await send(inspected.listener.url, 'ping');
    // Changes within a tenth of a second go down the stream together: the retry may come with the answer
    // that took it, and a delivery with its forward's end (its state as it stands when sent).
    const told = () => stream.events.filter((e) => e.event === 'update' || e.event === 'delivery').map((e) => e.data.forward);
    await stream.until(() => told().some((forward) => forward.state === 'delivered'));
    const updates = told();
    for (const retrying of updates.filter((forward) => forward.state === 'retrying')) {
      expect(retrying).toMatchObject({ state: 'retrying', attempts: 1, maxAttempts: 3, history: [{ attempt: 1, status: 503 }] });
    }
    expect(updates.at(-1)).toMatchObject({ state: 'delivered', attempts: 2, maxAttempts: 3, history: [{ attempt: 1, status: 503 }, { attempt: 2, status: 200 }] });
    const page = (await fetchRaw(inspected.page)).text;
    expect(page).toMatch(/<td class="forward" title="\{&quot;busy&quot;:true\}">200 · \d+ ms · attempt 2 of 3<\/td>/);
    // Replay to the forward target adds what a forward adds (--forward-header), and is made once.
    stream.stop();
    expect(JSON.parse((await askReplay(inspected, 1, { to: 'forward' })).text)).toMatchObject({ sent: true, status: 200 });
    const [first, , replayed] = await app.received(3);
    expect(replayed!.headers['x-env']).toBe('dev');
    expect(replayed!.body.equals(first!.body)).toBe(true);
  });

  describe('the page\'s replays to the forward target of a --save session', () => {
    /** A signed delivery of id `id`, posted as the service posts one. */
    const deliver = (inspected: Inspected, id: string) => {
      const body = Buffer.from(JSON.stringify({ action: 'opened', issue: { number: 1 } }));
      const headers = { 'content-type': 'application/json', 'x-service-event': 'issues', 'x-service-delivery': id, 'x-hub-signature-256': sign(body, SECRET) };
      return post(inspected.listener.url, headers, body);
    };
    /** Each delivery's last outcome in the journal of `dir`. */
    const journaled = async (dir: string) => {
      const last = (await readJournal(dir))?.last.values() ?? [];
      return Object.fromEntries([...last].map((entry) => [entry.delivery, entry.outcome]));
    };
    /** The app fails the first three forwards, then takes everything. */
    async function failingThrice(): Promise<Target> {
      let calls = 0;
      const app = await startTarget('{"thanks":true}', () => (++calls <= 3 ? 500 : 200));
      targets.push(app);
      return app;
    }
    async function threeGivenUp(app: Target, extra: string[]) {
      const dir = mkdtempSync(join(tmpdir(), 'svc-inspect-journal-'));
      const inspected = await listenInspected(['--secret', SECRET, '--forward-to', app.url, '--save', dir, ...extra]);
      for (const id of ['g-1', 'g-2', 'g-3']) expect((await deliver(inspected, id)).status).toBe(200);
      await inspected.listener.until(() => inspected.listener.forwards.filter((forward) => forward.outcome === 'failed').length === 3);
      return { dir, inspected };
    }

    it('journals each, and a delivery given up that the page delivered is no longer given up: summary, ids named; a replay elsewhere is no forward', async () => {
      const app = await failingThrice();
      const elsewhere = await target();
      const { dir, inspected } = await threeGivenUp(app, []);
      expect(JSON.parse((await askReplay(inspected, 1, { to: 'forward' })).text)).toMatchObject({ sent: true, status: 200 });
      expect(JSON.parse((await askReplay(inspected, 2, { to: 'url', url: elsewhere.url })).text)).toMatchObject({ sent: true, status: 200 });
      expect((await api(inspected, '/api/deliveries/1')).forward).toMatchObject({ state: 'delivered', attempts: 2 });
      expect((await api(inspected, '/api/deliveries/2')).forward).toMatchObject({ state: 'failed', attempts: 1 });
      expect(await inspected.listener.stop()).toBe(130);
      const stderr = inspected.listener.stderr();
      expect(stderr).toMatch(/; forwards delivered 0, failed 2, retried 0, delivered from the inspector's page 1\n/);
      expect(stderr).toMatch(/2 deliveries were answered but not forwarded to \S+: g-[23], g-[23]; `svc-migrate webhook replay --failed /);
      expect(await journaled(dir)).toEqual({ 'g-1': 'delivered', 'g-2': 'failed', 'g-3': 'failed' });
    });

    it('"replay every failed forward" that delivers them all: journaled, the session exits 0, and `replay --failed` finds nothing left to send', async () => {
      const app = await failingThrice();
      const { dir, inspected } = await threeGivenUp(app, ['--max-deliveries', '4']);
      const origin = inspected.base.slice(0, -1);
      const all = await fetchRaw(at(inspected, '/api/replay-failed'), { method: 'POST', headers: { 'x-inspector-token': inspected.token, origin } });
      expect(JSON.parse(all.text.trim().split('\n').at(-1)!)).toEqual({ finished: true, of: 3, delivered: 3, failed: 0 });
      expect((await deliver(inspected, 'g-4')).status).toBe(200);
      expect(await inspected.listener.exited).toBe(0);
      const stderr = inspected.listener.stderr();
      expect(stderr).toMatch(/; forwards delivered 1, failed 0, retried 0, delivered from the inspector's page 3\n/);
      expect(stderr).not.toContain('not forwarded to');
      expect(await journaled(dir)).toEqual({ 'g-1': 'delivered', 'g-2': 'delivered', 'g-3': 'delivered', 'g-4': 'delivered' });
      const replay = await runCli(['webhook', 'replay', '--failed', dir, '--url', app.url]);
      expect(replay.code).toBe(0);
      expect(app.requests.length).toBe(7);
    });
  });

  it('refuses a replay that is not the page\'s own POST of JSON, and a target or secret it cannot use; nothing is sent', async () => {
    const elsewhere = await target();
    const inspected = await listenInspected(['--secret', SECRET]);
    await send(inspected.listener.url, 'push', ['--secret', SECRET]);
    await inspected.listener.waitFor(1);
    const ask = { to: 'url', url: elsewhere.url };
    const refusals: [Record<string, string>, number][] = [
      [{ origin: '' }, 403],
      [{ origin: 'http://evil.example' }, 403],
      [{ origin: inspected.base.slice(0, -1).replace('127.0.0.1', 'localhost') }, 403],
      [{ 'sec-fetch-site': 'cross-site' }, 403],
      [{ 'content-type': 'text/plain' }, 415],
    ];
    for (const [headers, status] of refusals) {
      const answer = await askReplay(inspected, 1, ask, headers);
      expect(answer.status, JSON.stringify(headers)).toBe(status);
    }
    const get = await fetchRaw(at(inspected, '/api/deliveries/1/replay'), { headers: { 'x-inspector-token': inspected.token } });
    expect(get.status).toBe(405);
    const bad: [unknown, RegExp][] = [
      [{ to: 'url', url: 'not a url' }, /^the replay URL takes a URL, a port or a path .*, not "not a url"$/],
      [{ to: 'url', url: 'ftp://127.0.0.1/x' }, /only http:\/\/ and https:\/\/ can be posted to/],
      [{ to: 'url', url: '' }, /give the URL/],
      [{ to: 'url', url: elsewhere.url, sign: 2 }, /secret 1 to 1/],
      [{ to: 'url', url: elsewhere.url, sign: SECRET }, /secret 1 to 1/],
      [{ to: 'forward' }, /no forward target/],
      [{ to: 'mars' }, /replay to "forward" or to "url"/],
      [[], /not a JSON object/],
    ];
    for (const [body, reason] of bad) {
      const answer = await askReplay(inspected, 1, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(JSON.parse(answer.text).error).toMatch(reason);
    }
    expect((await askReplay(inspected, 99, ask)).status).toBe(404);
    expect(elsewhere.requests).toEqual([]);
  });

  it('keeps the last --inspect-keep deliveries and says how many were dropped, and where they remain', async () => {
    const save = mkdtempSync(join(tmpdir(), 'svc-inspect-save-'));
    for (const [args, remains] of [
      [[], 'they were not saved (--save keeps every delivery)'],
      [['--save', save], `they remain in ${save}`],
    ] as const) {
      const inspected = await listenInspected(['--inspect-keep', '2', ...args]);
      for (let i = 0; i < 3; i++) await send(inspected.listener.url, 'ping');
      await inspected.listener.waitFor(3);
      const list = await api(inspected, '/api/deliveries');
      expect(list.records.map((r: any) => r.n)).toEqual([2, 3]);
      expect(list).toMatchObject({ dropped: 1, oldest: 2 });
      const page = (await fetchRaw(inspected.page)).text;
      expect(page).toContain(`1 older delivery dropped from this list, which keeps the last 2 (--inspect-keep); ${remains}.`);
      expect(page.match(/<tr data-n="/g)).toHaveLength(2);
      expect((await fetchRaw(at(inspected, '/api/deliveries/1'), { headers: { 'x-inspector-token': inspected.token } })).status).toBe(404);
      await inspected.listener.stop();
    }
    expect(readdirSync(save).filter((name) => name.endsWith('.http'))).toHaveLength(3);
  });

  it('says where dropped deliveries remain as text: a --save path with & and \' is shown as it is, live and in the page', async () => {
    const save = mkdtempSync(join(tmpdir(), 'svc-inspect-o\'b&c<i>-'));
    const inspected = await listenInspected(['--inspect-keep', '1', '--save', save]);
    const stream = readEvents(at(inspected, `/events?token=${inspected.token}`));
    expect(await stream.opened).toBe(200);
    for (let i = 0; i < 2; i++) await send(inspected.listener.url, 'ping');
    await stream.until(() => stream.events.some((event) => event.event === 'dropped'));
    stream.stop();
    const expected = `1 older delivery dropped from this list, which keeps the last 1 (--inspect-keep); they remain in ${save}.`;
    // The page's script sets this as text: it must not arrive escaped for HTML.
    expect(stream.events.find((event) => event.event === 'dropped')!.data.text).toBe(expected);
    expect((await api(inspected, '/api/deliveries')).text).toBe(expected);
    const page = (await fetchRaw(inspected.page)).text;
    expect(page).toContain(expected.replace('&', '&amp;').replace('\'', '&#39;').replace('<', '&lt;').replace('>', '&gt;'));
  });

  it('escapes everything a delivery brings in the page it renders', async () => {
    const inspected = await listenInspected([]);
    const hostile = '<img src=x onerror=alert(1)>';
    const body = Buffer.from(JSON.stringify({ action: '</script><script>alert(2)</script>', repository: { full_name: '"><svg onload=alert(3)>' } }));
    const headers = {
      'content-type': 'application/json',
      'x-service-event': hostile,
      'x-service-delivery': '"\'><b>&amp;',
      'x-service-hook-id': '1',
    };
    expect((await post(inspected.listener.url, headers, body)).status).toBe(200);
    await inspected.listener.waitFor(1);
    const page = (await fetchRaw(inspected.page)).text;
    const rows = page.slice(page.indexOf('<tbody id="rows">'), page.indexOf('</tbody>'));
    expect(rows).not.toMatch(/<(img|script|svg|b)\b/);
    expect(rows).toContain('&lt;img src=x onerror=alert(1)&gt;.&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;');
    expect(rows).toContain('data-event="&lt;img src=x onerror=alert(1)&gt;"');
    expect(rows).toContain('&quot;&#39;&gt;&lt;b&gt;&amp;amp;');
  });

  it('is a usage error when its port is taken, naming --inspect', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as AddressInfo;
    try {
      const result = await runCli(['webhook', 'listen', '--port', '0', '--inspect', String(port)], { env: { SVC_WEBHOOK_SECRET: '' } });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`error: port ${port} on 127.0.0.1 is already in use`);
      expect(result.stderr).toMatch(/choose another --inspect/);
      expect(result.stderr).not.toContain('listening on');
    } finally {
      blocker.close();
    }
  });
});

describe('webhook inspect DIR', () => {
  /** A --save directory with `count` deliveries saved by `webhook listen --save`. */
  async function savedDirectory(count: number): Promise<{ dir: string; ids: string[] }> {
    const dir = mkdtempSync(join(tmpdir(), 'svc-inspect-dir-'));
    const inspected = await listenInspected(['--save', dir, '--secret', SECRET, '--max-deliveries', String(count)]);
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push((await send(inspected.listener.url, 'issues', ['--action', 'opened', '--secret', SECRET])).delivery);
    expect(await inspected.listener.exited).toBe(0);
    return { dir, ids };
  }

  /** Runs `webhook inspect` in-process until `stop` (Ctrl-C); resolves once its start line is printed. */
  async function inspect(args: string[]) {
    const controller = new AbortController();
    let stdout = '';
    let announce: (line: any) => void = () => {};
    const started = new Promise<any>((resolve) => {
      announce = resolve;
    });
    const exited = runCli(['webhook', 'inspect', '--json', ...args], {
      signal: controller.signal,
      env: { SVC_WEBHOOK_SECRET: '' },
      onStdout: (text) => {
        stdout += text;
        if (stdout.includes('\n')) announce(JSON.parse(stdout.slice(0, stdout.indexOf('\n'))));
      },
    });
    const start = await Promise.race([started, exited.then((result) => Promise.reject(new Error(`inspect exited ${result.code}: ${result.stderr}`)))]);
    const url = new URL(start.url as string);
    const inspected: Inspected = { listener: undefined as never, page: start.url, base: new URL('/', url).href, token: url.searchParams.get('token')! };
    return { start, inspected, exited, stop: () => controller.abort() };
  }

  it('lists the newest --keep saved deliveries, verified with --secret, says which files it skipped and why, and replays from the file', async () => {
    const { dir, ids } = await savedDirectory(3);
    // What a crafted directory may hold: a link, a FIFO, a file larger than any delivery, a file
    // that is no delivery, a name that is markup.
    symlinkSync('/etc/passwd', join(dir, 'link.http'));
    execFileSync('mkfifo', [join(dir, 'fifo.http')]);
    writeFileSync(join(dir, 'huge.http'), '# svc-migrate delivery; received 2099-01-01T00:00:00.000Z; sequence 9\r\n');
    truncateSync(join(dir, 'huge.http'), 80 * 1024 * 1024);
    writeFileSync(join(dir, 'get.http'), '# svc-migrate delivery; received 2099-01-01T00:00:00.000Z; sequence 9\r\nGET / HTTP/1.1\r\nhost: x\r\n\r\n');
    writeFileSync(join(dir, '<img src=x onerror=alert(1)>.http'), 'nothing');
    mkdirSync(join(dir, 'dir.http'));
    const elsewhere = await target();

    const run = await inspect([dir, '--keep', '2', '--secret', OTHER, '--secret', SECRET]);
    expect(run.start).toMatchObject({ directory: dir, deliveries: 3, listed: 2 });
    const unreadable = run.start.unreadable as { name: string; reason: string }[];
    const skipped = Object.fromEntries(unreadable.map(({ name, reason }) => [name, reason]));
    expect(skipped).toEqual({
      'link.http': 'a symbolic link, not a file',
      'fifo.http': 'not a regular file',
      'dir.http': 'not a regular file',
      '<img src=x onerror=alert(1)>.http': 'not a saved delivery (no svc-migrate header)',
      'huge.http': expect.stringMatching(/^83886080 bytes, more than any delivery/),
      'get.http': 'not a saved delivery (a GET request; deliveries are POSTs)',
    });
    const list = await api(run.inspected, '/api/deliveries');
    expect(list.records.map((r: any) => r.id)).toEqual(ids.slice(1));
    expect(list.records[0]).toMatchObject({ verification: { state: 'verified', secret: 2 }, forward: null, file: `${ids[1]}.http`, action: 'opened' });
    expect(list.dropped).toBe(1);
    const page = (await fetchRaw(run.inspected.page)).text;
    expect(page).toContain('1 older delivery not listed: the page lists the newest 2 (--keep).');
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt;.http');
    expect(page).not.toContain('<img');

    const saved = readFileSync(join(dir, `${ids[2]}.http`));
    const body = saved.subarray(saved.indexOf('\r\n\r\n') + 4);
    const replay = await askReplay(run.inspected, 2, { to: 'url', url: elsewhere.url, sign: 'as-sent' });
    expect(JSON.parse(replay.text)).toMatchObject({ sent: true, status: 200 });
    const [received] = await elsewhere.received(1);
    expect(received!.body.equals(body)).toBe(true);
    expect(received!.headers['x-hub-signature-256']).toBe(sign(body, SECRET));

    // The file is read again when asked for: one replaced meanwhile by a link is refused, not followed.
    const file = join(dir, `${ids[2]}.http`);
    execFileSync('rm', [file]);
    symlinkSync('/etc/passwd', file);
    const gone = await fetchRaw(new URL('/api/deliveries/2', run.inspected.base).href, { headers: { 'x-inspector-token': run.inspected.token } });
    expect(gone.status).toBe(410);
    expect(JSON.parse(gone.text).error).toBe('cannot read it again: a symbolic link, not a file');
    expect((await askReplay(run.inspected, 2, { to: 'url', url: elsewhere.url })).status).toBe(410);

    run.stop();
    const result = await run.exited;
    expect(result.code).toBe(0);
  });

  it('shows each delivery\'s last forward outcome from forwards.jsonl (read as hostile input), replays those that failed to --forward-to, and journals them', async () => {
    const { dir, ids } = await savedDirectory(4);
    const [delivered, failed, skipped, unknown] = ids as [string, string, string, string];
    const line = (id: string, outcome: string, status: number | null) =>
      JSON.stringify({ file: `${id}.http`, delivery: id, outcome, status, at: '2026-11-28T03:41:46.415Z', target: 'http://127.0.0.1:1/' });
    const journal = [
      line(delivered, 'failed', 500),
      line(delivered, 'delivered', 200),
      line(failed, 'failed', 502),
      line(skipped, 'not_forwarded', null),
      // Not records: a path for a file, an unknown key; the delivery they name keeps no forward state.
      JSON.stringify({ file: `../${unknown}.http`, delivery: unknown, outcome: 'failed', status: 500, at: '2026-11-28T03:41:46.415Z', target: 'x' }),
      `${line(unknown, 'failed', 500).slice(0, -1)},"extra":1}`,
    ];
    writeFileSync(join(dir, 'forwards.jsonl'), `${journal.join('\n')}\n`, { mode: 0o600 });
    const app = await target();
    const run = await inspect([dir, '--forward-to', app.url]);
    const forwards = Object.fromEntries((await api(run.inspected, '/api/deliveries')).records.map((r: any) => [r.id, r.forward?.state ?? null]));
    expect(forwards).toEqual({ [delivered]: 'delivered', [failed]: 'failed', [skipped]: 'not_forwarded', [unknown]: null });
    const page = (await fetchRaw(run.inspected.page)).text;
    expect(page).toContain(`<button type="button" id="replay-failed">Replay every failed forward to ${app.url}</button>`);
    expect(page).toMatch(/<td class="forward"[^>]*>failed · 502<\/td>/);
    expect(page).toMatch(/<td class="forward">200<\/td>/);

    const origin = run.inspected.base.slice(0, -1);
    const replayAll = () => fetchRaw(at(run.inspected, '/api/replay-failed'), { method: 'POST', headers: { 'x-inspector-token': run.inspected.token, origin } });
    expect(JSON.parse((await replayAll()).text.trim().split('\n').at(-1)!)).toEqual({ finished: true, of: 2, delivered: 2, failed: 0 });
    expect((await app.received(2)).map((request) => request.headers['x-service-delivery'])).toEqual([failed, skipped]);
    expect(JSON.parse((await replayAll()).text)).toEqual({ finished: true, of: 0, delivered: 0, failed: 0 });
    run.stop();
    const { code, stderr } = await run.exited;
    expect(code).toBe(0);
    expect(stderr).toContain('warning: forwards.jsonl: 2 lines are not a forward record: left out, the page shows no outcome from them (line 5, 6)\n');
    const last = (await readJournal(dir))!.last;
    expect([failed, skipped].map((id) => last.get(`${id}.http`))).toEqual([
      expect.objectContaining({ outcome: 'delivered', status: 200, target: app.url }),
      expect.objectContaining({ outcome: 'delivered', status: 200, target: app.url }),
    ]);
    expect(last.get(`${delivered}.http`)?.at).toBe('2026-11-28T03:41:46.415Z');
    expect(app.requests.length).toBe(2);
  });

  it('"replay every failed forward" over a directory holds replay --failed\'s lock and reads the journal again: nothing sent twice', async () => {
    const { dir, ids } = await savedDirectory(2);
    const [first, second] = ids as [string, string];
    const line = (id: string, outcome: string) =>
      JSON.stringify({ file: `${id}.http`, delivery: id, outcome, status: outcome === 'delivered' ? 200 : 500, at: '2026-11-28T04:00:00.000Z', target: 'x' });
    writeFileSync(join(dir, 'forwards.jsonl'), `${line(first, 'failed')}\n${line(second, 'failed')}\n`, { mode: 0o600 });
    const app = await target();
    const run = await inspect([dir, '--forward-to', app.url]);
    const origin = run.inspected.base.slice(0, -1);
    const replayAll = () => fetchRaw(at(run.inspected, '/api/replay-failed'), { method: 'POST', headers: { 'x-inspector-token': run.inspected.token, origin } });
    // A `replay --failed` runs on the directory (a live process holds the lock): the page sends nothing.
    const holder = spawn('sleep', ['60']);
    try {
      const lock = join(dir, '.replay-failed.lock');
      writeFileSync(lock, `${JSON.stringify({ pid: holder.pid, host: hostname(), startedAt: '2026-11-28T04:00:00.000Z' })}\n`, { mode: 0o600 });
      const refused = await replayAll();
      expect(refused.status).toBe(409);
      expect(JSON.parse(refused.text).error).toMatch(/another `webhook replay --failed` \(pid \d+\) is sending the deliveries of/);
      rmSync(lock);
    } finally {
      holder.kill();
    }
    // It delivered the first meanwhile: the page, which read the journal before, sends only the second.
    appendFileSync(join(dir, 'forwards.jsonl'), `${line(first, 'delivered')}\n`);
    expect(JSON.parse((await replayAll()).text.trim().split('\n').at(-1)!)).toEqual({ finished: true, of: 1, delivered: 1, failed: 0 });
    expect((await app.received(1)).map((request) => request.headers['x-service-delivery'])).toEqual([second]);
    expect(readdirSync(dir)).not.toContain('.replay-failed.lock');
    run.stop();
    expect((await run.exited).code).toBe(0);
    expect(app.requests.length).toBe(1);
  });

  it('names at most 20 files that are not deliveries on stderr and in the page, and counts the rest; --json names them all', async () => {
    const { dir, ids } = await savedDirectory(1);
    for (let i = 0; i < 500; i++) writeFileSync(join(dir, `junk-${String(i).padStart(3, '0')}.http`), '<b>not a delivery</b>');
    const run = await inspect([dir]);
    expect(run.start).toMatchObject({ deliveries: 1, listed: 1 });
    expect(run.start.unreadable).toHaveLength(500);
    const page = (await fetchRaw(run.inspected.page)).text;
    expect(page).toContain('500 files are not saved deliveries');
    expect(page.match(/<li><code>junk-/g)).toHaveLength(20);
    expect(page).toContain('<li>and 480 more</li>');
    expect((await api(run.inspected, '/api/deliveries')).records.map((r: any) => r.id)).toEqual(ids);
    run.stop();
    const { code, stderr } = await run.exited;
    expect(code).toBe(0);
    expect(stderr.match(/^warning: junk-\d+\.http: not a saved delivery \(no svc-migrate header\)$/gm)).toHaveLength(20);
    expect(stderr).toContain('warning: 480 more files are not saved deliveries (the --json start line names them all)\n');
  });

  it('without a secret shows saved deliveries unverified; an unreadable or empty directory is a usage error', async () => {
    const { dir } = await savedDirectory(1);
    const run = await inspect([dir]);
    expect((await api(run.inspected, '/api/deliveries')).records[0].verification).toEqual({ state: 'unverified', reason: 'no secret given to check it with' });
    run.stop();
    expect((await run.exited).code).toBe(0);

    // Without --json: one line with the address on stdout; Ctrl-C says it stopped.
    const controller = new AbortController();
    let printed = '';
    const { changed, until } = changes();
    const onStdout = (text: string) => {
      printed += text;
      changed();
    };
    const human = runCli(['webhook', 'inspect', dir], { signal: controller.signal, env: { SVC_WEBHOOK_SECRET: '' }, onStdout });
    await until(() => printed.includes('\n'));
    expect(printed).toMatch(new RegExp(`^1 saved delivery in ${dir}: http://127\\.0\\.0\\.1:\\d+/\\?token=[\\w-]{43}\n$`));
    controller.abort();
    expect(await human).toMatchObject({ code: 0, stderr: 'inspector stopped\n' });

    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = await runCli(['webhook', 'inspect', dir, '--port', String((blocker.address() as AddressInfo).port)]);
    blocker.close();
    expect(taken.code).toBe(2);
    expect(taken.stderr).toMatch(/already in use[\s\S]*choose another --port/);

    const missing = await runCli(['webhook', 'inspect', join(dir, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error: cannot read deliveries from .*nope: /m);
    const empty = await runCli(['webhook', 'inspect', mkdtempSync(join(tmpdir(), 'svc-inspect-empty-'))]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/^error: no saved deliveries \(\*\.http\) in /m);
  });
});
