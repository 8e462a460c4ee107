import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventSource } from 'eventsource';
import { fetch as undiciFetch } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { buildDelivery } from '../../src/webhook/delivery.js';
import { sign } from '../../src/webhook/signature.js';
import { parseSaved } from '../../src/webhook/store.js';
import { hookTarget } from '../helpers/hook-target.js';
import { channelName, newChannel, postToChannel, type RelayListener, relayListen, stopRelayListeners, untilListeners } from '../helpers/relay.js';
import { spawnCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';
import { empty, type ScriptedServer, startScriptedServer, startScriptedTlsServer } from '../helpers/scripted-server.js';
import { loopbackCertificate, sharedAuthority } from '../helpers/tls.js';
import { changes } from '../helpers/until.js';

// `webhook listen --relay` (the built binary) reading the sandbox's relay over HTTPS, its authority
// trusted through SVC_CA_FILE as a user's own CA is: what a sandbox hook delivers to a channel is
// verified, saved, forwarded and marked as relayed; bodies the relay re-encodes are told apart from
// forged ones; gaps are told; `webhook relay new` makes a channel; Ctrl-C ends it as any listen.

const SECRET = 'relay-listen-secret';
const servers: ScriptedServer[] = [];
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  stopRelayListeners();
  await Promise.all([...servers.splice(0).map((server) => server.close()), ...closers.splice(0).map((close) => close())]);
});

/** The app the listener forwards to: answers 204 at once and keeps what it got. */
async function app(): Promise<ScriptedServer> {
  const server = await startScriptedServer(empty(204));
  servers.push(server);
  return server;
}

/**
 * An HTTPS sandbox, a channel of its relay (`raw`: with gosmee's bodyB), and `listen --relay` on it
 * with `args`, once the sandbox counts it as the channel's reader (the relay keeps no history).
 */
async function relaySession(args: string[], options: { raw?: boolean } = {}) {
  const { sandbox, env, fetch } = await testSandbox();
  const channel = await newChannel(fetch, `${sandbox.baseUrl}/relay`, options);
  const listener = relayListen(['--relay', channel, ...args], { env: { SVC_CA_FILE: env.SVC_CA_FILE ?? '' } });
  await listener.until(() => /reading relay channel/.test(listener.stderr()));
  await untilListeners(fetch, sandbox.baseUrl, channel, 1, listener.exited);
  const post = (headers: Record<string, string>, body: Buffer | string, query = '') => postToChannel(fetch, channel, headers, body, query);
  return { sandbox, fetch, channel, listener, post };
}

/** Resolves once `count` forwards ended (delivered, failed or not forwarded); then each must have been delivered. */
async function forwardsEnded(listener: RelayListener, count: number): Promise<void> {
  const ended = () => listener.forwards.filter((forward) => forward.outcome !== 'retrying');
  await listener.until(() => ended().length >= count);
  const failed = ended().filter((forward) => forward.outcome !== 'delivered');
  expect(failed.map((forward) => `${forward.delivery} (${forward.event}): ${forward.outcome}: ${forward.error ?? forward.status}`)).toEqual([]);
}

function saveDir(): string {
  return mkdtempSync(join(tmpdir(), 'svc-relay-save-'));
}

function saved(dir: string, id: string) {
  return parseSaved(`${id}.http`, readFileSync(join(dir, `${id}.http`)));
}

/** Bodies the relay's JSON re-encoding changes, each the exact text a sender signed. */
const CHANGING: [string, string][] = [
  ['integer-like keys, which JSON.parse puts first', '{"b":1,"2":0,"action":"created"}'],
  ['an escaped \\u00e9', '{"action":"created","name":"caf\\u00e9"}'],
  ['escaped slashes \\/', '{"action":"created","url":"https:\\/\\/example.test\\/x"}'],
  ['a number written 1.0', '{"action":"created","ratio":1.0}'],
  ['whitespace and newlines', '{\n  "action" : "created",\r\n\t"list": [ 1, 2 ]\n}\n'],
];

function starDelivery(text: string, secret = SECRET) {
  return buildDelivery({ event: 'star', payload: Buffer.from(text), contentType: 'json', secret });
}

/** Posts a delivery to the listener's own port, as the service would without a relay. */
async function fetchDirect(url: string, headers: Record<string, string>, body: Buffer): Promise<number> {
  const answer = await undiciFetch(url, { method: 'POST', headers, body });
  await answer.arrayBuffer();
  return answer.status;
}

const stderrOf = (listener: RelayListener) => `\nstderr: ${listener.stderr()}`;

describe('webhook listen --relay against the sandbox relay (HTTPS, the built binary)', () => {
  it('a sandbox hook\'s deliveries to a channel arrive verified (re-encoded body matched), saved with the frame\'s query, forwarded, and marked relay in --json', async () => {
    const target = await app();
    const dir = saveDir();
    const { sandbox, channel, listener } = await relaySession(['--secret', SECRET, '--json', '--save', dir, '--forward-to', `${target.port}/app`]);
    // A second hook beside the channel gets the same bodies directly: the bytes the service signed.
    const direct = await hookTarget();
    closers.push(direct.close);
    const viaRelay = await sandbox.hooks.create({ url: `${channel}?source=hook`, secret: SECRET, contentType: 'json', events: ['push'] });
    await sandbox.hooks.create({ url: direct.url, secret: SECRET, contentType: 'json', events: ['push'] });
    const pushed = await sandbox.hooks.emit({ event: 'push' });
    expect(viaRelay.ping?.status, 'the relay took the ping').toBe(200);
    expect(pushed.delivered.map((report) => report.status)).toEqual([200, 204]);

    await forwardsEnded(listener, 2);
    const ids = [viaRelay.ping?.delivery, pushed.delivered[0]?.delivery];
    expect(listener.deliveries.map((record) => [record.event, record.delivery])).toEqual([
      ['ping', ids[0]],
      ['push', ids[1]],
    ]);
    for (const record of listener.deliveries) {
      expect(record, stderrOf(listener)).toMatchObject({
        verified: true,
        verdict: 'verified-re-encoded',
        signature: { algorithm: 'sha256' },
        duplicate: false,
        relay: { body: 're-encoded', form_converted: false },
      });
      expect(record.relay.channel).toContain(channelName(channel));
      expect(new Date(record.relay.relayed_at as string).toISOString()).toBe(record.relay.relayed_at);
      // The relay's own fields are not the delivery's: its connection, and the length as it saw it (set anew).
      expect(record.headers.connection).toBeUndefined();
    }
    const pushBody = direct.deliveries.find((delivery) => delivery.headers['x-service-event'] === 'push')?.body;
    expect(pushBody).toBeDefined();
    const file = saved(dir, ids[1] ?? '');
    expect(file.body.equals(pushBody ?? Buffer.alloc(0))).toBe(true);
    expect(file.path).toMatch(/\?source=hook$/);
    expect(readdirSync(dir).filter((name) => name.endsWith('.http')).sort()).toEqual(ids.map((id) => `${id}.http`).sort());
    const forwarded = target.requests.find((request) => request.headers['x-service-delivery'] === ids[1]);
    expect(forwarded?.url).toMatch(/^\/app/);
    expect(forwarded?.body).toBe(pushBody?.toString('utf8'));
    expect(forwarded?.headers['x-hub-signature-256']).toBe(direct.deliveries.find((d) => d.headers['x-service-event'] === 'push')?.headers['x-hub-signature-256']);
    expect(Number(forwarded?.headers['content-length'])).toBe(pushBody?.length);
    expect(listener.stderr()).toMatch(new RegExp(`reading relay channel \\S*${channelName(channel)}\\S*, forwarding to \\S+, saving to `));

    const end = await listener.interrupt();
    expect(end.code, stderrOf(listener)).toBe(130);
    expect(listener.stderr()).toMatch(/received 2, verified 2, rejected 0/);
  }, 30_000);

  it('bodies the relay re-encodes differently, on a plain channel: "unverifiable", never refused or called forged; still saved and forwarded', async () => {
    const target = await app();
    const dir = saveDir();
    const { listener, post } = await relaySession(['--secret', SECRET, '--json', '--save', dir, '--forward-to', `${target.port}/app`]);
    const sent = CHANGING.map(([name, text]) => {
      // The premise: JSON.stringify of what the relay parsed is not the text that was signed.
      expect(JSON.stringify(JSON.parse(text)), name).not.toBe(text);
      return { name, text, delivery: starDelivery(text) };
    });
    for (const { delivery } of sent) expect(await post(delivery.headers, delivery.body)).toBe(200);
    await forwardsEnded(listener, sent.length);

    expect(listener.deliveries.map((record) => record.delivery)).toEqual(sent.map(({ delivery }) => delivery.id));
    for (const [index, { name, text, delivery }] of sent.entries()) {
      const record = listener.deliveries[index] ?? {};
      expect(record, `${name}${stderrOf(listener)}`).toMatchObject({ verified: false, verdict: 'unverifiable', relay: { body: 're-encoded' } });
      expect(record.payload, name).toEqual(JSON.parse(text));
      const file = saved(dir, delivery.id);
      expect(JSON.parse(file.body.toString('utf8')), name).toEqual(JSON.parse(text));
      const forwarded = target.requests.find((request) => request.headers['x-service-delivery'] === delivery.id);
      expect(JSON.parse(forwarded?.body ?? 'null'), name).toEqual(JSON.parse(text));
    }
    expect(listener.stderr()).not.toMatch(/rejected \d{3}|forged|altered in transit|different secret/);
    const end = await listener.interrupt();
    expect(end.code).toBe(130);
    expect(listener.stderr()).toMatch(new RegExp(`received ${sent.length}, verified 0, rejected 0, .*unverifiable ${sent.length}, relay gaps 0`));
  }, 30_000);

  it('on a channel with the raw body (?raw=1, bodyB): the same bodies verify byte for byte, and a wrong signature is refused', async () => {
    const target = await app();
    const dir = saveDir();
    const { listener, post } = await relaySession(['--secret', SECRET, '--json', '--save', dir, '--forward-to', `${target.port}/app`], { raw: true });
    const sent = CHANGING.map(([name, text]) => ({ name, delivery: starDelivery(text) }));
    for (const { delivery } of sent) expect(await post(delivery.headers, delivery.body)).toBe(200);
    await forwardsEnded(listener, sent.length);
    for (const [index, { name, delivery }] of sent.entries()) {
      expect(listener.deliveries[index], `${name}${stderrOf(listener)}`).toMatchObject({
        delivery: delivery.id,
        verified: true,
        verdict: 'verified',
        signature: { algorithm: 'sha256' },
        relay: { body: 'raw', form_converted: false },
      });
      expect(saved(dir, delivery.id).body.equals(delivery.body), name).toBe(true);
      const forwarded = target.requests.find((request) => request.headers['x-service-delivery'] === delivery.id);
      expect(forwarded?.body, name).toBe(delivery.body.toString('utf8'));
    }

    // Signed with another secret: with the bytes in hand this is what a forgery looks like.
    const forged = starDelivery('{"action":"created","ratio":1.0}', 'not-the-secret');
    expect(await post(forged.headers, forged.body)).toBe(200);
    await listener.until(() => /rejected/.test(listener.stderr()));
    expect(listener.stderr()).toMatch(new RegExp(`rejected .*${forged.id}.*different secret`));
    // A good one after it arrives: the refusal did not end the session.
    const after = starDelivery('{"action":"deleted"}');
    expect(await post(after.headers, after.body)).toBe(200);
    await listener.until(() => listener.deliveries.some((record) => record.delivery === after.id));
    expect(listener.deliveries.map((record) => record.delivery)).not.toContain(forged.id);
    expect(readdirSync(dir)).not.toContain(`${forged.id}.http`);
    expect(target.requests.map((request) => request.headers['x-service-delivery'])).not.toContain(forged.id);
    const end = await listener.interrupt();
    expect(end.code).toBe(130);
    expect(listener.stderr()).toMatch(new RegExp(`received ${sent.length + 1}, verified ${sent.length + 1}, rejected 1`));
  }, 30_000);

  it('a form-encoded delivery the relay turned into JSON is named so, rebuilt as a form, and given its verdict', async () => {
    const target = await app();
    const dir = saveDir();
    const { sandbox, channel, listener, post } = await relaySession(['--secret', SECRET, '--json', '--save', dir, '--forward-to', `${target.port}/app`]);
    const direct = await hookTarget();
    closers.push(direct.close);
    await sandbox.hooks.create({ url: channel, secret: SECRET, contentType: 'form', events: ['push'] });
    await sandbox.hooks.create({ url: direct.url, secret: SECRET, contentType: 'form', events: ['push'] });
    const pushed = await sandbox.hooks.emit({ event: 'push' });
    const pushId = pushed.delivered[0]?.delivery ?? '';
    // The form serializer's own encoding (`+` for a space) verifies too; lower-case escapes cannot be made again.
    const json = '{"action":"created","note":"a b/c"}';
    const plus = buildDelivery({ event: 'star', payload: Buffer.from(json), contentType: 'form', secret: SECRET });
    const plusBody = new URLSearchParams({ payload: json }).toString();
    expect(plusBody).toContain('+');
    const lower = buildDelivery({ event: 'star', payload: Buffer.from(json), contentType: 'form', secret: SECRET });
    const lowerBody = plus.body.toString('utf8').replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase());
    expect(lowerBody).not.toBe(plus.body.toString('utf8'));
    expect(await post({ ...plus.headers, 'x-hub-signature-256': sign(plusBody, SECRET) }, plusBody)).toBe(200);
    expect(await post({ ...lower.headers, 'x-hub-signature-256': sign(lowerBody, SECRET) }, lowerBody)).toBe(200);
    await listener.until(() => [pushId, plus.id, lower.id].every((id) => listener.deliveries.some((record) => record.delivery === id)));
    // The hook's ping, its push, and the two posted.
    await forwardsEnded(listener, 4);

    const recordOf = (id: string) => listener.deliveries.find((record) => record.delivery === id) ?? {};
    const warning = 'the relay turned this form-encoded delivery into JSON; it was rebuilt as a form';
    for (const [id, verdict] of [[pushId, 'verified-re-encoded'], [plus.id, 'verified-re-encoded'], [lower.id, 'unverifiable']] as const) {
      const record = recordOf(id);
      expect(record, `${id}${stderrOf(listener)}`).toMatchObject({ content_type: 'form', verdict, relay: { body: 're-encoded', form_converted: true } });
      expect(record.warnings).toContain(warning);
      const forwarded = target.requests.find((request) => request.headers['x-service-delivery'] === id);
      expect(forwarded?.headers['content-type']).toBe('application/x-www-form-urlencoded');
      expect(forwarded?.body.startsWith('payload=')).toBe(true);
    }
    // Rebuilt exactly as the service encoded it: the bytes it signed.
    const directPush = direct.deliveries.find((delivery) => delivery.headers['x-service-event'] === 'push');
    expect(saved(dir, pushId).body.equals(directPush?.body ?? Buffer.alloc(0))).toBe(true);
    expect(saved(dir, plus.id).body.toString('utf8')).toBe(plusBody);
    expect(recordOf(plus.id).payload).toEqual(JSON.parse(json));
    expect(listener.stderr()).not.toMatch(/rejected \d{3}|forged|altered in transit/);
  }, 30_000);

  it('a dropped stream is a gap: told on stderr and as {"gap"} records with its time range; read again, later deliveries arrive', async () => {
    const { sandbox, fetch, channel, listener, post } = await relaySession(['--secret', SECRET, '--json']);
    const before = starDelivery('{"action":"created"}');
    expect(await post(before.headers, before.body)).toBe(200);
    await listener.until(() => listener.deliveries.length === 1);

    const cut = await fetch(`${sandbox.baseUrl}/_sandbox/relay/${channelName(channel)}/disconnect`, { method: 'POST' });
    expect(((await cut.json()) as { disconnected: number }).disconnected).toBe(1);
    // The record and the warning are written to stdout and stderr apart: both are awaited.
    await listener.until(() => listener.gaps.length >= 2 && /relay read again at/.test(listener.stderr()));
    const [lost, readAgain] = listener.gaps;
    expect(lost, stderrOf(listener)).toMatchObject({ to: null });
    expect(lost?.channel).toContain(channelName(channel));
    expect(typeof lost?.reason).toBe('string');
    expect(lost?.reason.length).toBeGreaterThan(0);
    expect(readAgain).toMatchObject({ from: lost?.from, reason: lost?.reason, channel: lost?.channel });
    expect(Date.parse(readAgain?.to as string)).toBeGreaterThanOrEqual(Date.parse(lost?.from as string));
    expect(listener.stderr()).toMatch(
      /relay lost at \d\d:\d\d:\d\d \(.+\): deliveries sent to the channel until it is read again are lost; reconnecting in \d+(\.\d+)? s/,
    );
    expect(listener.stderr()).toMatch(/relay read again at \d\d:\d\d:\d\d: a gap of .+ in which deliveries were lost; redeliver them from the webhook's settings/);

    await untilListeners(fetch, sandbox.baseUrl, channel, 1, listener.exited);
    const after = starDelivery('{"action":"deleted"}');
    expect(await post(after.headers, after.body)).toBe(200);
    await listener.until(() => listener.deliveries.some((record) => record.delivery === after.id));
    expect(listener.deliveries.map((record) => record.delivery)).toEqual([before.id, after.id]);
    const end = await listener.interrupt();
    expect(end.code).toBe(130);
    expect(listener.stderr()).toMatch(/received 2, .*relay gaps 1\b/);
  }, 30_000);

  it('the relay\'s pings are not deliveries: nothing is shown for them, and a delivery after them arrives alone', async () => {
    const { sandbox, env, fetch } = await testSandbox({ relayPingMs: 25 });
    const channel = await newChannel(fetch, `${sandbox.baseUrl}/relay`);
    const listener = relayListen(['--relay', channel, '--secret', SECRET, '--json'], { env: { SVC_CA_FILE: env.SVC_CA_FILE ?? '' } });
    await untilListeners(fetch, sandbox.baseUrl, channel, 1, listener.exited);
    // A second reader of the channel counts the pings both are sent (eventsource, as smee-client reads).
    let pings = 0;
    const { changed, until } = changes();
    const witness = new EventSource(channel, { fetch: (url, init) => fetch(url, init) });
    closers.push(async () => witness.close());
    witness.addEventListener('ping', () => {
      pings++;
      changed();
    });
    await until(() => pings >= 3);
    const delivery = starDelivery('{"action":"created"}');
    expect(await postToChannel(fetch, channel, delivery.headers, delivery.body)).toBe(200);
    await listener.until(() => listener.deliveries.length === 1);
    expect(listener.records.map((record) => record.delivery)).toEqual([delivery.id]);
    expect(listener.stderr().replaceAll(channel, '<channel>')).not.toMatch(/ping|rejected/i);
    expect((await listener.interrupt()).code).toBe(130);
    expect(listener.stderr()).toMatch(/received 1, verified 1, rejected 0/);
  }, 30_000);

  it('--max-deliveries counts relayed deliveries: it ends with exit 0 after them', async () => {
    const { listener, post } = await relaySession(['--secret', SECRET, '--json', '--max-deliveries', '2']);
    const sent = [starDelivery('{"action":"created"}'), starDelivery('{"action":"deleted"}')];
    for (const delivery of sent) expect(await post(delivery.headers, delivery.body)).toBe(200);
    const end = await listener.exited;
    expect(end.code, stderrOf(listener)).toBe(0);
    expect(listener.deliveries.map((record) => record.delivery)).toEqual(sent.map((delivery) => delivery.id));
  }, 30_000);

  it('with --port given too: deliveries posted to the port and read from the channel go the same way, each marked as it came', async () => {
    const { listener, post } = await relaySession(['--secret', SECRET, '--json', '--port', '0']);
    const url = /listening on (http:\/\/\S+?) and reading relay channel/.exec(listener.stderr())?.[1];
    expect(url, stderrOf(listener)).toBeDefined();
    const relayed = starDelivery('{"action":"created"}');
    const direct = starDelivery('{"action":"deleted"}');
    expect(await post(relayed.headers, relayed.body)).toBe(200);
    await listener.until(() => listener.deliveries.length === 1);
    const answer = await fetchDirect(url ?? '', direct.headers, direct.body);
    expect(answer).toBe(200);
    await listener.until(() => listener.deliveries.length === 2);
    expect(listener.deliveries.map((record) => [record.delivery, record.verdict, record.relay === null])).toEqual([
      [relayed.id, 'verified-re-encoded', false],
      [direct.id, 'verified', true],
    ]);
    expect((await listener.interrupt()).code).toBe(130);
  }, 30_000);

  it('a delivery the relay sends twice is a duplicate: shown as one, saved and forwarded once', async () => {
    const target = await app();
    const dir = saveDir();
    const { listener, post } = await relaySession(['--secret', SECRET, '--json', '--save', dir, '--forward-to', `${target.port}/app`]);
    const twice = starDelivery('{"action":"created"}');
    const next = starDelivery('{"action":"deleted"}');
    for (const delivery of [twice, twice, next]) expect(await post(delivery.headers, delivery.body)).toBe(200);
    await listener.until(() => listener.deliveries.length === 3);
    // Forwards may run several at once: both that are due must have ended before counting what the app got.
    await forwardsEnded(listener, 2);
    expect(listener.deliveries.map((record) => [record.delivery, record.duplicate])).toEqual([
      [twice.id, false],
      [twice.id, true],
      [next.id, false],
    ]);
    expect(target.requests.map((request) => request.headers['x-service-delivery']).sort()).toEqual([twice.id, next.id].sort());
    expect(readdirSync(dir).filter((name) => name.endsWith('.http')).sort()).toEqual([`${twice.id}.http`, `${next.id}.http`].sort());
    await listener.interrupt();
    expect(listener.stderr()).toMatch(/duplicates 1/);
  }, 30_000);

  it('Ctrl-C: exit 130 with the summary; the human lines end "via relay" and say the verdict', async () => {
    const { listener, post } = await relaySession(['--secret', SECRET]);
    const matched = starDelivery(JSON.stringify({ action: 'created', starred_at: null }));
    const changed = starDelivery('{"action":"deleted","ratio":1.0}');
    for (const delivery of [matched, changed]) expect(await post(delivery.headers, delivery.body)).toBe(200);
    await listener.until(() => listener.stdout().includes(matched.id) && listener.stdout().includes(changed.id));
    const lineOf = (id: string) => listener.stdout().split('\n').find((line) => line.includes(id)) ?? '';
    expect(lineOf(matched.id)).toMatch(/verified sha256 \(re-encoded body matched\)/);
    expect(lineOf(changed.id)).toMatch(/unverifiable: the relay re-encoded the body/);
    for (const id of [matched.id, changed.id]) expect(lineOf(id)).toMatch(/via relay$/);
    const end = await listener.interrupt();
    expect(end.code).toBe(130);
    expect(listener.stderr()).toMatch(/received 2, verified 1, rejected 0, duplicates 0/);
    expect(listener.stderr()).not.toMatch(/this is a bug/);
  }, 30_000);

  it('trusts the sandbox\'s authority only as told: without SVC_CA_FILE the channel is refused, and NODE_EXTRA_CA_CERTS works too', async () => {
    const { sandbox, env, fetch } = await testSandbox();
    const channel = await newChannel(fetch, `${sandbox.baseUrl}/relay`);
    // Without --json, so that the error's hint is shown.
    const untrusted = relayListen(['--relay', channel]);
    const refused = await untrusted.exited;
    expect(refused.code, untrusted.stderr()).toBe(8);
    // As every command says it (test/e2e/tls.test.ts): which certificate, and how to trust its authority.
    expect(untrusted.stderr()).toMatch(/certificate/);
    expect(untrusted.stderr()).toMatch(/--ca-file|SVC_CA_FILE/);
    expect(untrusted.stderr()).not.toMatch(/this is a bug/);

    const trusted = relayListen(['--relay', channel, '--json'], { env: { NODE_EXTRA_CA_CERTS: env.SVC_CA_FILE ?? '' } });
    await untilListeners(fetch, sandbox.baseUrl, channel, 1, trusted.exited);
    const delivery = starDelivery('{"action":"created"}');
    expect(await postToChannel(fetch, channel, delivery.headers, delivery.body)).toBe(200);
    await trusted.until(() => trusted.deliveries.length === 1);
    expect(trusted.deliveries[0]).toMatchObject({ delivery: delivery.id, verified: false, verdict: 'unverified' });
    expect((await trusted.interrupt()).code).toBe(130);
  }, 30_000);
});

describe('webhook relay new', () => {
  it('asks the sandbox\'s relay for a channel and prints it; the channel works with listen --relay', async () => {
    const { sandbox, env, fetch } = await testSandbox();
    const trust = { SVC_CA_FILE: env.SVC_CA_FILE ?? '' };
    const made = await spawnCli(['webhook', 'relay', 'new', `${sandbox.baseUrl}/relay`], { env: trust });
    expect(made.code, made.stderr).toBe(0);
    const channel = made.stdout.trim();
    expect(channel).toMatch(new RegExp(`^${sandbox.baseUrl}/relay/[A-Za-z0-9_-]{1,128}$`));
    expect(made.stderr).toContain(`svc-migrate webhook listen --relay ${channel}`);
    expect(made.stderr).toMatch(/payload URL/i);

    const asJson = await spawnCli(['webhook', 'relay', 'new', `${sandbox.baseUrl}/relay`, '--json'], { env: trust });
    expect(asJson.code, asJson.stderr).toBe(0);
    const other = (JSON.parse(asJson.stdout) as { channel: string }).channel;
    expect(other).toMatch(new RegExp(`^${sandbox.baseUrl}/relay/[A-Za-z0-9_-]{1,128}$`));
    expect(other).not.toBe(channel);

    const listener = relayListen(['--relay', channel, '--secret', SECRET, '--json'], { env: trust });
    await untilListeners(fetch, sandbox.baseUrl, channel, 1, listener.exited);
    const delivery = starDelivery('{"action":"created"}');
    expect(await postToChannel(fetch, channel, delivery.headers, delivery.body)).toBe(200);
    await listener.until(() => listener.deliveries.length === 1);
    expect(listener.deliveries[0]).toMatchObject({ delivery: delivery.id, verdict: 'verified-re-encoded' });
    expect((await listener.interrupt()).code).toBe(130);
  }, 30_000);

  it('refuses a channel on another host, a relay that fails (exit 8) and a RELAY that is not an http(s) URL (exit 2)', async () => {
    const elsewhere = await startScriptedServer(empty(307, { location: 'https://relay.example.test/stolen-channel' }));
    servers.push(elsewhere);
    const moved = await spawnCli(['webhook', 'relay', 'new', elsewhere.url]);
    expect(moved.code, moved.stderr).not.toBe(0);
    expect(moved.code).not.toBe(1);
    expect(moved.stdout).toBe('');
    expect(moved.stderr).toMatch(/the relay answered a channel on another host/);
    expect(elsewhere.requests[0]).toMatchObject({ method: 'HEAD', url: '/new' });

    const failing = await startScriptedServer(empty(503));
    servers.push(failing);
    const down = await spawnCli(['webhook', 'relay', 'new', failing.url], { timeoutMs: 50_000 });
    // docs/cli.md#exit-codes: 8 is a network failure or a server error (3 is authentication).
    expect(down.code, down.stderr).toBe(8);
    expect(down.stdout).toBe('');
    const limiting = await startScriptedServer(empty(429));
    servers.push(limiting);
    const busy = await spawnCli(['webhook', 'relay', 'new', limiting.url], { timeoutMs: 50_000 });
    expect(busy.code, busy.stderr).toBe(8);
    expect(busy.stderr).toMatch(/answered 429 when asked for a channel\nhint: the relay is down or overloaded: try again later/);

    const notUrl = await spawnCli(['webhook', 'relay', 'new', 'ftp://relay.example.test']);
    expect(notUrl.code, notUrl.stderr).toBe(2);
    for (const result of [moved, down, notUrl]) expect(result.stderr).not.toMatch(/this is a bug/);
  }, 60_000);

  it('refuses a channel sent in the clear where the relay was asked over https, or one with credentials; never echoes a RELAY\'s password', async () => {
    const authority = sharedAuthority();
    const trust = { env: { SVC_CA_FILE: authority.file } };
    const downgrading = await startScriptedTlsServer(loopbackCertificate(authority), (_request, response) => {
      response.writeHead(307, { location: `http://127.0.0.1:${new URL(downgrading.url).port}/plain-channel` }).end();
    });
    servers.push(downgrading);
    const plain = await spawnCli(['webhook', 'relay', 'new', downgrading.url], trust);
    expect(plain.code, plain.stderr).toBe(8);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toMatch(/over plain http .* though it was asked over https: it was not used/);

    const withCredentials = await startScriptedServer((_request, response) => {
      response.writeHead(307, { location: `http://user:secret-pass@127.0.0.1:${new URL(withCredentials.url).port}/c` }).end();
    });
    servers.push(withCredentials);
    const credentialed = await spawnCli(['webhook', 'relay', 'new', withCredentials.url]);
    expect(credentialed.code, credentialed.stderr).toBe(8);
    expect(credentialed.stdout).toBe('');
    expect(credentialed.stderr).toMatch(/a channel URL with credentials in it: it was not used/);
    expect(credentialed.stderr).not.toContain('secret-pass');

    const given = await spawnCli(['webhook', 'relay', 'new', 'http://me:hunter2@127.0.0.1:9/?x=1']);
    expect(given.code, given.stderr).toBe(2);
    expect(given.stderr).not.toContain('hunter2');
  }, 60_000);
});
