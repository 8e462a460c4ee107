import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildDelivery } from '../../src/webhook/delivery.js';
import { sign } from '../../src/webhook/signature.js';
import { parseSaved } from '../../src/webhook/store.js';
import { listen, post } from '../helpers/listener.js';
import { runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';
import { startScriptedServer } from '../helpers/scripted-server.js';

const SECRET = 'webhook-test-secret';
const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
function fixtureFiles(): { event: string; file: string }[] {
  const root = join(FIXTURES, 'webhooks');
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => readdirSync(join(root, entry.name)).map((file) => ({ event: entry.name, file: join(root, entry.name, file) })));
}

describe('webhook listen', () => {
  it('accepts every published fixture, signed, as JSON and as a form, with the right event and action', async () => {
    const fixtures = fixtureFiles();
    expect(fixtures.length).toBe(134);
    const forms = readdirSync(join(FIXTURES, 'webhooks-form'), { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.form'))
      .map((name) => ({ event: name.split('/')[0] as string, file: join(FIXTURES, 'webhooks-form', name) }));
    const total = fixtures.length * 2 + forms.length;
    const listener = await listen(['--secret', SECRET, '--max-deliveries', String(total)]);
    const expected: { id: string; event: string; action: string | null }[] = [];
    for (const { event, file } of fixtures) {
      const raw = readFileSync(file);
      const action = (JSON.parse(raw.toString('utf8')) as { action?: string }).action ?? null;
      for (const contentType of ['json', 'form'] as const) {
        const delivery = buildDelivery({ event, payload: raw, contentType, secret: SECRET });
        const answer = await post(listener.url, delivery.headers, delivery.body);
        expect(answer.status, `${file} as ${contentType}: ${answer.body}`).toBe(200);
        expected.push({ id: delivery.id, event, action });
      }
    }
    for (const { event, file } of forms) {
      const body = readFileSync(file);
      const delivery = buildDelivery({ event, payload: Buffer.from('{}'), contentType: 'form', secret: SECRET });
      const headers = { ...delivery.headers, 'content-length': String(body.length), 'x-hub-signature-256': sign(body, SECRET) };
      expect((await post(listener.url, headers, body)).status, file).toBe(200);
      const payload = JSON.parse(new URLSearchParams(body.toString('utf8')).get('payload') ?? '{}') as { action?: string };
      expected.push({ id: delivery.id, event, action: payload.action ?? null });
    }
    expect(await listener.exited).toBe(0);
    expect(listener.lines.map((l) => ({ id: l.delivery, event: l.event, action: l.action }))).toEqual(expected);
    expect(listener.lines.every((l) => l.verified && l.signature.algorithm === 'sha256')).toBe(true);
    expect(listener.stderr()).toMatch(new RegExp(`received ${total}, verified ${total}, rejected 0`));
  }, 60_000);

  it('rejects bad deliveries with the right status, explains why, and keeps serving', async () => {
    const listener = await listen(['--secret', SECRET, '--path', '/hooks']);
    const good = buildDelivery({ event: 'push', payload: { ref: 'refs/heads/main' }, contentType: 'json', secret: SECRET });
    const withBody = (body: string, headers: Record<string, string> = {}) => ({
      ...good.headers,
      'content-length': String(Buffer.byteLength(body)),
      'x-hub-signature-256': sign(body, SECRET),
      ...headers,
    });
    const { 'x-hub-signature-256': _signature256, ...sha1Only } = good.headers;
    const cases: [string, Promise<{ status: number; body: string }>, number, RegExp][] = [
      ['tampered body', post(listener.url, good.headers, good.body.toString().replace('main', 'evil')), 401, /altered in transit/],
      ['wrong secret', post(listener.url, { ...good.headers, 'x-hub-signature-256': sign(good.body, 'other') }, good.body), 401, /different secret/],
      ['no signature', post(listener.url, { ...good.headers, 'x-hub-signature-256': '', 'x-hub-signature': '' }, good.body), 401, /malformed|secret configured/],
      ['sha1 only, wrong', post(listener.url, { ...sha1Only, 'x-hub-signature': sign(good.body, 'x', 'sha1') }, good.body), 401, /different secret/],
      ['missing event header', post(listener.url, { ...good.headers, 'x-service-event': '' }, good.body), 400, /missing x-service-event/],
      ['malformed JSON', post(listener.url, withBody('{"ref":'), '{"ref":'), 400, /malformed JSON/],
      ['form without payload', post(listener.url, withBody('a=1', { 'content-type': 'application/x-www-form-urlencoded' }), 'a=1'), 400, /without a "payload"/],
      ['wrong content type', post(listener.url, { ...good.headers, 'content-type': 'text/plain' }, good.body), 415, /neither/],
      ['wrong method', post(listener.url, {}, '', 'GET'), 405, /POSTs/],
      ['wrong path', post(listener.url.replace('/hooks', '/other'), good.headers, good.body), 404, /nothing is listening/],
    ];
    for (const [name, answer, status, reason] of cases) {
      const { status: got, body } = await answer;
      expect(got, name).toBe(status);
      expect(JSON.parse(body).error, name).toMatch(reason);
    }
    // Over 25 MB: answered 413 from the declared length, without reading the body.
    const oversize = await new Promise<string>((resolve) => {
      const socket = connect(Number(new URL(listener.url).port), '127.0.0.1', () => {
        socket.write(`POST /hooks HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${26 * 1024 * 1024}\r\n\r\n{"a":`);
      });
      let text = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => {
        text += chunk;
      });
      socket.on('close', () => resolve(text));
    });
    expect(oversize).toMatch(/^HTTP\/1\.1 413/);
    // sha1 alone, when right, is accepted and flagged as legacy.
    const legacy = { ...sha1Only, 'x-service-delivery': 'legacy-1', 'x-hub-signature': sign(good.body, SECRET, 'sha1') };
    expect((await post(listener.url, legacy, good.body)).status).toBe(200);
    expect((await post(listener.url, good.headers, good.body)).status).toBe(200);
    await listener.waitFor(2);
    expect(listener.lines[0]).toMatchObject({ delivery: 'legacy-1', signature: { algorithm: 'sha1', legacy: true } });
    expect(listener.lines[0]?.warnings).toContain('signed with the legacy sha1 X-Hub-Signature only');
    expect(listener.lines[1]).toMatchObject({ event: 'push', verified: true });
    await listener.stop();
    expect(listener.stderr()).toMatch(/rejected 1[01],/);
  });

  it('saves a body sent with a length and one sent in chunks without one, byte for byte', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bodies-'));
    const listener = await listen(['--secret', SECRET, '--save', dir, '--max-deliveries', '2']);
    const sized = buildDelivery({ event: 'push', payload: { ref: 'refs/heads/main', note: 'é'.repeat(40_000) }, contentType: 'json', secret: SECRET });
    expect((await post(listener.url, sized.headers, sized.body)).status).toBe(200);
    const chunked = buildDelivery({ event: 'push', payload: { ref: 'refs/heads/dev', note: 'ü'.repeat(40_000) }, contentType: 'json', secret: SECRET });
    const { 'content-length': _length, ...withoutLength } = chunked.headers;
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(listener.url, { method: 'POST', headers: withoutLength }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      req.on('error', reject);
      // Split mid-character: the body is bytes until it is whole.
      for (let at = 0; at < chunked.body.length; at += 9_999) req.write(chunked.body.subarray(at, at + 9_999));
      req.end();
    });
    expect(status).toBe(200);
    expect(await listener.exited).toBe(0);
    const savedBody = (id: string) => parseSaved(id, readFileSync(join(dir, `${id}.http`)));
    expect(savedBody(sized.id).body.equals(sized.body)).toBe(true);
    expect(savedBody(chunked.id).rawHeaders).toContain('chunked');
    expect(savedBody(chunked.id).body.equals(chunked.body)).toBe(true);
  });

  it('marks deliveries unverified without a secret and reports catalogue warnings, ping and duplicates', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-save-'));
    const listener = await listen(['--save', dir]);
    const ping = buildDelivery({ event: 'ping', payload: { zen: 'z', hook_id: 7 }, contentType: 'json' });
    expect((await post(listener.url, ping.headers, ping.body)).status).toBe(200);
    expect((await post(listener.url, ping.headers, ping.body)).status).toBe(200);
    const odd = buildDelivery({ event: 'no_such_event', payload: { action: 'x' }, contentType: 'json' });
    // A repeated header arrives as one value, joined as node:http joins the others.
    const cookies = { 'set-cookie': ['a=1', 'b=2'] };
    expect((await post(listener.url, { ...odd.headers, 'user-agent': 'curl/8', ...cookies }, odd.body)).status).toBe(200);
    await listener.waitFor(3);
    expect(listener.lines.map((l) => [l.event, l.verified, l.duplicate])).toEqual([
      ['ping', false, false],
      ['ping', false, true],
      ['no_such_event', false, false],
    ]);
    expect(listener.lines[2]?.warnings).toEqual(
      expect.arrayContaining([expect.stringMatching(/does not start with Service-Hookshot/), expect.stringMatching(/unknown event/)]),
    );
    expect(listener.lines[2]?.headers['set-cookie']).toBe('a=1, b=2');
    expect(readdirSync(dir).sort()).toEqual([`${odd.id}.http`, `${ping.id}.http`].sort());
    expect(listener.stderr()).toMatch(/no secret: every delivery is accepted and marked unverified/);
    await listener.stop();
  });

  it('answers at once while a slow downstream gets the exact bytes and headers', async () => {
    // The downstream holds its answer until the service's delivery was answered: if the receiver
    // waited for the forward, the post below would never complete.
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const downstream = await startScriptedServer((_request, response) => {
      void released.then(() => response.writeHead(201, { 'content-type': 'text/plain' }).end('created downstream'));
    });
    try {
      const listener = await listen(['--secret', SECRET, '--forward-to', `${downstream.port}/in`]);
      const delivery = buildDelivery({ event: 'issues', payload: { action: 'opened', issue: {} }, contentType: 'form', secret: SECRET });
      expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
      release();
      await listener.until(() => /→ http:\/\/localhost:\d+\/in 201/.test(listener.stderr()));
      const forwarded = downstream.requests[0];
      expect(forwarded?.url).toBe('/in');
      expect(forwarded?.body).toBe(delivery.body.toString());
      for (const [name, value] of Object.entries(delivery.headers)) expect(forwarded?.headers[name], name).toBe(value);
      await listener.stop();
      expect(listener.stderr()).toMatch(new RegExp(`→ http://localhost:\\d+/in 201 in \\d+ ms for ${delivery.id}: created downstream`));
      expect(listener.stderr()).toMatch(/forwards delivered 1, failed 0, retried 0/);
    } finally {
      await downstream.close();
    }
  });

  it('forwards a delivery sent with Expect: 100-continue, every value of a repeated header, and no hop-by-hop header', async () => {
    const downstream = await startScriptedServer((_request, response) => response.writeHead(204).end());
    try {
      const listener = await listen(['--secret', SECRET, '--forward-to', String(downstream.port)]);
      const delivery = buildDelivery({ event: 'watch', payload: { action: 'started' }, contentType: 'json', secret: SECRET });
      // As curl sends a body over 1 MB.
      expect((await post(listener.url, { ...delivery.headers, expect: '100-continue', 'x-trace': ['a', 'b'] }, delivery.body)).status).toBe(200);
      await Promise.race([downstream.until(() => downstream.requests.length > 0), listener.until(() => /failed for/.test(listener.stderr()))]);
      expect(listener.stderr()).not.toMatch(/failed for/);
      const forwarded = downstream.requests[0];
      expect(forwarded?.headers.expect).toBeUndefined();
      expect(forwarded?.headers['x-trace']).toBe('a, b');
      expect(forwarded?.body).toBe(delivery.body.toString());
      await listener.stop();
    } finally {
      await downstream.close();
    }
  });

  it('keeps a delivery whose forward fails, and treats redeliveries as new with --no-dedupe', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-save-'));
    const listener = await listen(['--save', dir, '--no-dedupe', '--forward-to', '9/unreachable', '--forward-timeout', '2']);
    const delivery = buildDelivery({ event: 'star', payload: { action: 'created' }, contentType: 'json' });
    expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
    expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
    await listener.waitFor(2);
    expect(listener.lines.map((l) => l.duplicate)).toEqual([false, false]);
    // Both were answered 200, so both are saved: the second beside the first, never over it.
    expect(readdirSync(dir).filter((name) => name.endsWith('.http')).sort()).toEqual([`${delivery.id}.http`, `${delivery.id}~2.http`]);
    await listener.stop();
    expect(listener.stderr()).toMatch(/→ http:\/\/localhost:9\/unreachable failed for /);
    expect(listener.stderr()).toMatch(/forwards delivered 0, failed 2, retried 0/);
  });

  it('at Ctrl-C, says it is finishing the forwards still under way, and how to stop now', async () => {
    const target = await startScriptedServer(() => {}); // takes each forward, never answers
    const listener = await listen(['--forward-to', `${target.port}/`]);
    const delivery = buildDelivery({ event: 'star', payload: { action: 'created' }, contentType: 'json' });
    expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
    await target.until(() => target.requests.length === 1);
    const exited = listener.stop();
    await listener.until(() => /finishing 1 forward to http:\/\/localhost:\d+\/ \(each up to 10 s; Ctrl-C again to stop now\)/.test(listener.stderr()));
    await target.close(); // the forward fails at once, and the session ends
    expect(await exited).toBe(130);
    expect(listener.stderr()).toMatch(/forwards delivered 0, failed 1, retried 0/);
  });

  it('--max-deliveries counts new deliveries, not redeliveries', async () => {
    const listener = await listen(['--max-deliveries', '2']);
    const first = buildDelivery({ event: 'star', payload: { action: 'created' }, contentType: 'json' });
    const second = buildDelivery({ event: 'star', payload: { action: 'deleted' }, contentType: 'json' });
    for (const delivery of [first, first, second]) expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
    expect(await listener.exited).toBe(0);
    expect(listener.lines.map((l) => [l.delivery, l.duplicate])).toEqual([
      [first.id, false],
      [first.id, true],
      [second.id, false],
    ]);
  });

  it('filters by event.action', async () => {
    // A dispatch's action is whatever its sender chose, dots included.
    const listener = await listen(['--events', 'issues.opened,repository_dispatch.deploy.prod', '--max-deliveries', '2']);
    const sent = [
      ['issues', 'closed'],
      ['repository_dispatch', 'deploy'],
      ['issues', 'opened'],
      ['repository_dispatch', 'deploy.prod'],
    ];
    for (const [event, action] of sent) {
      const delivery = buildDelivery({ event: event as string, payload: { action }, contentType: 'json' });
      expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
    }
    expect(await listener.exited).toBe(0);
    expect(listener.lines.map((l) => l.action)).toEqual(['opened', 'deploy.prod']);
    expect(listener.stderr()).toMatch(/received 4, .*left out by --events 2/);
  });

  it('warns when listening beyond loopback without a secret', async () => {
    const listener = await listen(['--host', '0.0.0.0', '--max-deliveries', '1']);
    const delivery = buildDelivery({ event: 'watch', payload: { action: 'started' }, contentType: 'json' });
    expect((await post(`http://127.0.0.1:${new URL(listener.url).port}/`, delivery.headers, delivery.body)).status).toBe(200);
    await listener.exited;
    expect(listener.stderr()).toMatch(/beyond loopback, without a secret/);
  });

  it('tells which secret of a rotation matched', async () => {
    const listener = await listen(['--secret', 'old-secret', '--secret', 'new-secret', '--max-deliveries', '2']);
    for (const secret of ['new-secret', 'old-secret']) {
      const delivery = buildDelivery({ event: 'star', payload: { action: 'created' }, contentType: 'json', secret });
      expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
    }
    await listener.exited;
    expect(listener.lines.map((l) => l.signature.secret)).toEqual([2, 1]);
  });
});

describe('webhook send, verify, events, replay', () => {
  it('round-trips send → listen with a built-in sample in both content types', async () => {
    const listener = await listen(['--secret', SECRET, '--max-deliveries', '2']);
    const json = await runCli(['webhook', 'send', '--url', listener.url, '--event', 'pull_request', '--action', 'closed', '--secret', SECRET, '--json']);
    expect(json.code, json.stderr).toBe(0);
    const form = await runCli(['webhook', 'send', '--url', listener.url, '--event', 'ping', '--content-type', 'form', '--secret', SECRET]);
    expect(form.code, form.stderr).toBe(0);
    await listener.exited;
    expect(listener.lines.map((l) => [l.event, l.action, l.content_type, l.verified])).toEqual([
      ['pull_request', 'closed', 'json', true],
      ['ping', null, 'form', true],
    ]);
    expect(listener.lines[0]?.delivery).toBe(JSON.parse(json.stdout).delivery);
  });

  it('verifies a signature from stdin: exit 0 valid, 1 invalid', async () => {
    const body = '{"zen":"Design for failure."}';
    const valid = await runCli(['webhook', 'verify', '--secret', SECRET, '--signature', sign(body, SECRET)], { stdin: body });
    expect(valid.code).toBe(0);
    const invalid = await runCli(['webhook', 'verify', '--secret', SECRET, '--signature', sign(body, 'nope')], { stdin: body });
    expect(invalid.code).toBe(1);
    const legacy = await runCli(['webhook', 'verify', '--secret', SECRET, '--signature', sign(body, SECRET, 'sha1')], { stdin: body });
    expect(legacy.code).toBe(0);
  });

  it('verify checks every --secret of a rotation (and SVC_WEBHOOK_SECRET) and says which matched', async () => {
    const body = '{"zen":"Keep it logically awesome."}';
    const rotation = ['--secret', 'old-secret', '--secret', SECRET];
    const second = await runCli(['webhook', 'verify', ...rotation, '--signature', sign(body, SECRET)], { stdin: body });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toBe('valid sha256 signature (secret #2)\n');
    const json = await runCli(['webhook', 'verify', ...rotation, '--signature', sign(body, 'old-secret'), '--json'], { stdin: body });
    expect(JSON.parse(json.stdout)).toEqual({ valid: true, algorithm: 'sha256', secret: 1 });
    const fromEnv = await runCli(['webhook', 'verify', ...rotation, '--signature', sign(body, 'env-secret'), '--json'], { stdin: body, env: { SVC_WEBHOOK_SECRET: 'env-secret' } });
    expect(JSON.parse(fromEnv.stdout)).toEqual({ valid: true, algorithm: 'sha256', secret: 3 });
    const none = await runCli(['webhook', 'verify', ...rotation, '--signature', sign(body, 'nope')], { stdin: body });
    expect(none.code).toBe(1);
    expect(none.stdout).toMatch(/^invalid \(checked with 2 secrets\): signature does not match/);
  });

  it('prints the catalogue as a table or JSON', async () => {
    const json = await runCli(['webhook', 'events', '--json']);
    const events = JSON.parse(json.stdout) as { name: string; permission: string }[];
    expect(events).toHaveLength(69);
    expect(events.find((e) => e.name === 'workflow_run')?.permission).toBe('Actions');
    // Off a terminal: one tab-separated line per event.
    const table = await runCli(['webhook', 'events']);
    expect(table.stdout).toMatch(/^workflow_run\tActions\t/m);
    expect(table.stdout.trim().split('\n')).toHaveLength(69);
  });

  it('refuses payloads over 25 MB, as the service does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-big-'));
    const file = join(dir, 'big.json');
    await import('node:fs').then((fs) => fs.writeFileSync(file, JSON.stringify({ blob: 'x'.repeat(26 * 1024 * 1024) })));
    const result = await runCli(['webhook', 'send', '--url', 'http://127.0.0.1:9/', '--event', 'push', '--payload', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/never delivers more than 25 MB/);
  });

  it('holds a form delivery to the payload\'s limit, not its percent-encoded body\'s', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-form-'));
    const file = join(dir, 'slashes.json');
    // 9 MB of JSON that encodes to a 27 MB form body: within the 25 MB the service delivers.
    await import('node:fs').then((fs) => fs.writeFileSync(file, JSON.stringify({ action: 'created', blob: '/'.repeat(9_000_000) })));
    const listener = await listen(['--max-deliveries', '1']);
    const result = await runCli(['webhook', 'send', '--url', listener.url, '--event', 'star', '--content-type', 'form', '--payload', file]);
    expect(result.code, result.stderr).toBe(0);
    expect(await listener.exited).toBe(0);
    expect(listener.lines[0]).toMatchObject({ event: 'star', action: 'created', content_type: 'form' });
  });

  it('sandbox → listen --save → replay → listen keeps every byte and header, and --resign re-signs', async () => {
    const { sandbox, env, fetch } = await testSandbox();
    const first = mkdtempSync(join(tmpdir(), 'svc-first-'));
    const second = mkdtempSync(join(tmpdir(), 'svc-second-'));
    const listenerA = await listen(['--secret', SECRET, '--save', first, '--max-deliveries', '4']);
    const admin = (path: string, body: unknown) =>
      fetch(`${sandbox.baseUrl}${path}`, { method: 'POST', body: JSON.stringify(body) }).then((r) => r.json() as Promise<any>);
    // An app's hook: repository_dispatch goes to apps only.
    const created = await admin('/_sandbox/hooks', { url: listenerA.url, secret: SECRET, content_type: 'json', events: ['*'], target: 'app' });
    expect(created.ping.status).toBe(200);
    const pushed = await admin('/_sandbox/emit', { event: 'push' });
    expect(pushed.delivered[0].status).toBe(200);
    const released = await admin('/_sandbox/emit', { event: 'release', action: 'published' });
    expect(released.delivered[0].status).toBe(200);
    const dispatched = await fetch(`${sandbox.baseUrl}/repos/octo-org/widgets/dispatches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.SVC_TOKEN}` },
      body: JSON.stringify({ event_type: 'deploy-now', client_payload: { env: 'prod' } }),
    });
    expect(dispatched.status).toBe(204);
    expect(await listenerA.exited).toBe(0);
    expect(listenerA.lines.map((l) => [l.event, l.action])).toEqual([
      ['ping', null],
      ['push', null],
      ['release', 'published'],
      ['repository_dispatch', 'deploy-now'],
    ]);
    expect(listenerA.lines[3]?.payload).toMatchObject({ branch: 'main', client_payload: { env: 'prod' }, repository: { full_name: 'octo-org/widgets' } });
    expect(listenerA.lines[0]?.headers['x-service-hook-installation-target-type']).toBe('integration');

    const listenerB = await listen(['--secret', SECRET, '--save', second, '--max-deliveries', '4']);
    // The short form `send` takes: host:port.
    const replayed = await runCli(['webhook', 'replay', first, '--url', new URL(listenerB.url).host, '--json']);
    expect(replayed.code, replayed.stderr).toBe(0);
    await listenerB.exited;
    expect(listenerB.lines.map((l) => l.delivery)).toEqual(listenerA.lines.map((l) => l.delivery));
    for (const name of readdirSync(first)) {
      const a = parseSaved(name, readFileSync(join(first, name)));
      const b = parseSaved(name, readFileSync(join(second, name)));
      expect(b.body.equals(a.body)).toBe(true);
      const headersOf = (raw: string[]) =>
        Object.fromEntries(raw.flatMap((v, i) => (i % 2 === 0 && !['host', 'connection'].includes(v.toLowerCase()) ? [[v.toLowerCase(), raw[i + 1]]] : [])));
      expect(headersOf(b.rawHeaders)).toEqual(headersOf(a.rawHeaders));
    }

    const listenerC = await listen(['--secret', 'rotated', '--max-deliveries', '4']);
    const stale = await runCli(['webhook', 'replay', first, '--url', listenerC.url]);
    expect(stale.code).toBe(1);
    const resigned = await runCli(['webhook', 'replay', first, '--url', listenerC.url, '--resign', '--secret', 'rotated']);
    expect(resigned.code, resigned.stderr).toBe(0);
    await listenerC.exited;
    expect(listenerC.lines).toHaveLength(4);
  }, 30_000);

  it('follows the delivery rules: nothing above 25 MB, no push for more than three tags', async () => {
    const { sandbox } = await testSandbox();
    const listener = await listen(['--max-deliveries', '2']);
    await sandbox.hooks.create({ url: listener.url, contentType: 'form', events: ['push', 'create'] });
    expect((await sandbox.hooks.emit({ event: 'push', tags: 4 })).skipped).toMatch(/more than three tags/);
    expect((await sandbox.hooks.emit({ event: 'create', padToBytes: 26 * 1024 * 1024 })).skipped).toMatch(/over 25 MB/);
    expect((await sandbox.hooks.emit({ event: 'push', tags: 3 })).delivered).toHaveLength(1);
    await listener.exited;
    expect(listener.lines.map((l) => [l.event, l.content_type])).toEqual([
      ['ping', 'form'],
      ['push', 'form'],
    ]);
  });
});
