import { connect as connectTcp } from 'node:net';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import { EventSource } from 'eventsource';
import SmeeClient from 'smee-client';
import { type Sandbox, startSandbox } from '../../src/sandbox/server.js';
import { runCli } from '../helpers/run-cli.js';

// The sandbox's relay (src/sandbox/relay.ts, docs/sandbox.md#relay) against smee.io's format
// (probot/smee.io lib/server.js): `/relay/new` redirects to a channel, a reader gets `ready`, then
// `ping`s and one unnamed event per POST, each frame written as smee.io writes it; gosmee's `bodyB`
// on channels made with `?raw=1`; no history; bounds; the admin calls tests wait on.

/** smee.io's frames, as its lib/server.js writes them (`sseReady`, `ssePing`, `sse`). */
const smee = {
  ready: (id: number) => `id: ${id}\nevent: ready\ndata: {}\n\n`,
  ping: (id: number) => `id: ${id}\nevent: ping\ndata: {}\n\n`,
  message: (id: number, payload: unknown) => `id: ${id}\ndata: ${JSON.stringify(payload)}\n\n`,
};

let sandbox: Sandbox | undefined;
afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
});

async function start(options: { tls?: boolean; relayPingMs?: number } = {}): Promise<Sandbox> {
  sandbox = await startSandbox({ relayPingMs: 3_600_000, ...options });
  return sandbox;
}

function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: Buffer | string; ca?: string }) {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const target = new URL(url);
    const make = target.protocol === 'https:' ? httpsRequest : httpRequest;
    // A connection each: a request refused before its body was sent leaves its connection unusable.
    const request = make(target, { agent: false, method: options.method ?? 'GET', headers: options.headers, ...(options.ca ? { ca: options.ca } : {}) }, resolve);
    request.on('error', reject);
    request.end(options.body);
  });
}

async function text(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A reader of a channel: every byte it got, and a wait for the frames to come. */
async function read(channel: string, ca?: string) {
  const response = await send(channel, { headers: { accept: 'text/event-stream' }, ...(ca ? { ca } : {}) });
  let got = '';
  let ended = false;
  const waiters: (() => void)[] = [];
  const wake = () => waiters.splice(0).forEach((waiter) => waiter());
  response.on('data', (chunk: Buffer) => {
    got += chunk.toString('utf8');
    wake();
  });
  response.on('close', () => {
    ended = true;
    wake();
  });
  return {
    response,
    get text() {
      return got;
    },
    /** Resolves once `frames` whole frames arrived. */
    async frames(frames: number): Promise<string[]> {
      while (got.split('\n\n').length - 1 < frames) {
        if (ended) throw new Error(`the stream ended after ${got}`);
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
      return got.split('\n\n').slice(0, frames).map((frame) => `${frame}\n\n`);
    },
    async ended(): Promise<void> {
      while (!ended) await new Promise<void>((resolve) => waiters.push(resolve));
    },
  };
}

async function newChannel(base: string, query = '', ca?: string): Promise<string> {
  const response = await send(`${base}/relay/new${query}`, { method: 'HEAD', ...(ca ? { ca } : {}) });
  response.resume();
  expect(response.statusCode).toBe(307);
  return String(response.headers.location);
}

async function listeners(base: string, channel: string, ca?: string): Promise<number> {
  const name = new URL(channel).pathname.split('/').pop() ?? '';
  const response = await send(`${base}/_sandbox/relay/${name}`, ca ? { ca } : {});
  return (JSON.parse(await text(response)) as { listeners: number }).listeners;
}

/** Until the channel has `count` readers: the admin call tests wait on instead of sleeping. */
async function untilListeners(base: string, channel: string, count: number, ca?: string): Promise<void> {
  while ((await listeners(base, channel, ca)) !== count) await new Promise((resolve) => setImmediate(resolve));
}

/** A POST written byte for byte, so that the fields the relay saw are exactly known. */
function rawPost(channel: string, head: [string, string][], body: string): Promise<string> {
  const url = new URL(channel);
  const bytes = Buffer.from(body);
  const lines = [`POST ${url.pathname}${url.search} HTTP/1.1`, ...head.map(([name, value]) => `${name}: ${value}`), `Content-Length: ${bytes.length}`, 'Connection: close'];
  return new Promise((resolve, reject) => {
    const socket = connectTcp(Number(url.port), url.hostname, () => socket.end(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), bytes])));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe('sandbox relay (src/sandbox/relay.ts)', () => {
  it('GET and HEAD /relay/new redirect (307) to a new channel on the host asked', async () => {
    const { baseUrl } = await start();
    const made = new Set<string>();
    for (const method of ['GET', 'HEAD']) {
      const response = await send(`${baseUrl}/relay/new`, { method });
      response.resume();
      expect(response.statusCode).toBe(307);
      const location = String(response.headers.location);
      expect(location).toMatch(new RegExp(`^${baseUrl.replace(/\./g, '\\.')}/relay/[A-Za-z0-9_-]{22}$`));
      made.add(location);
    }
    expect(made.size).toBe(2);
    const other = await send(`${baseUrl}/relay/new`, { headers: { host: `localhost:${new URL(baseUrl).port}` } });
    other.resume();
    expect(other.headers.location).toMatch(new RegExp(`^http://localhost:${new URL(baseUrl).port}/relay/`));
  });

  it('streams smee.io\'s frames byte for byte: ready, then one unnamed event per POST holding its fields, body, query and timestamp', async () => {
    const { baseUrl } = await start();
    const channel = await newChannel(baseUrl);
    const reader = await read(channel);
    expect(reader.response.statusCode).toBe(200);
    expect(reader.response.headers['content-type']).toBe('text/event-stream');
    expect(reader.response.headers['cache-control']).toBe('no-cache');
    expect((await reader.frames(1))[0]).toBe(smee.ready(0));
    await untilListeners(baseUrl, channel, 1);
    const body = '{"b":1.0,  "a":"caf\\u00e9","u":"https:\\/\\/x"}';
    const head: [string, string][] = [['Host', 'example.test'], ['Content-Type', 'application/json'], ['X-Service-Event', 'push'], ['X-Service-Delivery', 'd-1']];
    const answer = await rawPost(`${channel}?x=1&y=two&z=3&z=4`, head, body);
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    const [, frame] = await reader.frames(2);
    const timestamp = (JSON.parse(/^id: 1\ndata: (.*)\n\n$/.exec(frame ?? '')?.[1] ?? '{}') as { timestamp: number }).timestamp;
    expect(typeof timestamp).toBe('number');
    const payload = {
      host: 'example.test',
      'content-type': 'application/json',
      'x-service-event': 'push',
      'x-service-delivery': 'd-1',
      'content-length': String(Buffer.byteLength(body)),
      connection: 'close',
      body: JSON.parse(body) as unknown,
      // A name given more than once is a list, as smee.io's server parses a query.
      query: { x: '1', y: 'two', z: ['3', '4'] },
      timestamp,
    };
    expect(frame).toBe(smee.message(1, payload));
    reader.response.destroy();
  });

  it('pings every relayPingMs with smee.io\'s ping frame, counting ids per connection', async () => {
    const { baseUrl } = await start({ relayPingMs: 20 });
    const channel = await newChannel(baseUrl);
    const first = await read(channel);
    expect(await first.frames(3)).toEqual([smee.ready(0), smee.ping(1), smee.ping(2)]);
    const second = await read(channel);
    expect(await second.frames(2)).toEqual([smee.ready(0), smee.ping(1)]);
    first.response.destroy();
    second.response.destroy();
  });

  it('channels made with /relay/new?raw=1 add bodyB, the raw body in base64; others do not', async () => {
    const { baseUrl } = await start();
    const raw = await newChannel(baseUrl, '?raw=1');
    const plain = await newChannel(baseUrl);
    expect(raw).not.toMatch(/raw/);
    const body = '{ "zeta": 1.0, "alpha": "\\u00e9" }';
    const readers = [await read(raw), await read(plain)];
    for (const [index, channel] of [raw, plain].entries()) {
      await untilListeners(baseUrl, channel, 1);
      await rawPost(channel, [['Host', 'h'], ['Content-Type', 'application/json']], body);
      const [, frame] = await readers[index]!.frames(2);
      const data = JSON.parse(frame!.slice(frame!.indexOf('data: ') + 6)) as Record<string, unknown>;
      expect(data.body).toEqual(JSON.parse(body));
      if (index === 0) expect(Buffer.from(String(data.bodyB), 'base64').toString('utf8')).toBe(body);
      else expect(data).not.toHaveProperty('bodyB');
    }
    for (const reader of readers) reader.response.destroy();
  });

  it('keeps no history: what is posted while nobody reads is lost', async () => {
    const { baseUrl } = await start();
    const channel = await newChannel(baseUrl);
    expect(await rawPost(channel, [['Host', 'h'], ['Content-Type', 'application/json']], '{"n":"lost"}')).toMatch(/^HTTP\/1\.1 200 /);
    const reader = await read(channel);
    await reader.frames(1);
    await untilListeners(baseUrl, channel, 1);
    await rawPost(channel, [['Host', 'h'], ['Content-Type', 'application/json']], '{"n":"read"}');
    const [, frame] = await reader.frames(2);
    expect(frame).toContain('"body":{"n":"read"}');
    expect(reader.text).not.toContain('lost');
    reader.response.destroy();
  });

  it('parses a form body into its fields, its content type kept as sent', async () => {
    const { baseUrl } = await start();
    const channel = await newChannel(baseUrl);
    const reader = await read(channel);
    await untilListeners(baseUrl, channel, 1);
    const payload = '{"action":"opened","t":"a b"}';
    await rawPost(channel, [['Host', 'h'], ['Content-Type', 'application/x-www-form-urlencoded']], new URLSearchParams({ payload }).toString());
    const [, frame] = await reader.frames(2);
    const data = JSON.parse(frame!.slice(frame!.indexOf('data: ') + 6)) as Record<string, unknown>;
    expect(data.body).toEqual({ payload });
    expect(data['content-type']).toBe('application/x-www-form-urlencoded');
    reader.response.destroy();
  });

  it('the admin disconnect cuts every stream of the channel; the listener count follows', async () => {
    const { baseUrl } = await start();
    const channel = await newChannel(baseUrl);
    const readers = [await read(channel), await read(channel)];
    await untilListeners(baseUrl, channel, 2);
    const name = new URL(channel).pathname.split('/').pop();
    const cut = await send(`${baseUrl}/_sandbox/relay/${name}/disconnect`, { method: 'POST' });
    expect(JSON.parse(await text(cut))).toEqual({ disconnected: 2 });
    await Promise.all(readers.map((reader) => reader.ended()));
    expect(await listeners(baseUrl, channel)).toBe(0);
  });

  it('is bounded: a body over 25 MB is refused (413), a 17th reader of a channel too (429), a bad channel name (400)', async () => {
    const { baseUrl } = await start();
    const channel = await newChannel(baseUrl);
    const big = await send(channel, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(26 * 1024 * 1024) } });
    expect(big.statusCode).toBe(413);
    big.resume();
    const readers = await Promise.all(Array.from({ length: 16 }, () => read(channel)));
    await untilListeners(baseUrl, channel, 16);
    const extra = await send(channel, { headers: { accept: 'text/event-stream' } });
    expect(extra.statusCode).toBe(429);
    extra.resume();
    for (const reader of readers) reader.response.destroy();
    const bad = await send(`${baseUrl}/relay/${'x'.repeat(129)}`, { method: 'POST' });
    expect(bad.statusCode).toBe(400);
    bad.resume();
  });

  it('serves over HTTPS as the sandbox does, and a hook whose URL is a channel delivers through it', async () => {
    const { baseUrl, ca } = await start({ tls: true });
    const authority = ca?.certificate;
    expect(baseUrl).toMatch(/^https:/);
    const channel = await newChannel(baseUrl, '?raw=1', authority);
    expect(channel).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/relay\//);
    const reader = await read(channel, authority);
    await untilListeners(baseUrl, channel, 1, authority);
    // The hook's ping goes out when it is made: through the relay, signed, its raw bytes in bodyB.
    const made = await send(`${baseUrl}/_sandbox/hooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: channel, secret: 's' }), ...(authority ? { ca: authority } : {}) });
    expect(made.statusCode).toBe(201);
    await text(made);
    const [, frame] = await reader.frames(2);
    const data = JSON.parse(frame!.slice(frame!.indexOf('data: ') + 6)) as Record<string, string>;
    expect(data['x-service-event']).toBe('ping');
    expect(data['x-hub-signature-256']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(JSON.parse(Buffer.from(data.bodyB ?? '', 'base64').toString('utf8'))).toEqual(data.body);
    reader.response.destroy();
  });
});

describe('the sandbox relay read by the packages smee-client is made of', () => {
  it('smee-client makes a channel from /relay/new, and eventsource reads ready, ping and a delivery from it', async () => {
    const { baseUrl } = await start({ relayPingMs: 20 });
    const channel = await SmeeClient.createChannel({ newChannelUrl: `${baseUrl}/relay/new` });
    expect(channel).toMatch(new RegExp(`^${baseUrl.replace(/\./g, '\\.')}/relay/[A-Za-z0-9_-]{22}$`));
    const source = new EventSource(channel);
    try {
      const seen: string[] = [];
      const message = new Promise<string>((resolve) => source.addEventListener('message', (event) => resolve(event.data)));
      const named = new Promise<void>((resolve) => {
        const note = (type: string) => () => {
          seen.push(type);
          if (seen.includes('ready') && seen.includes('ping')) resolve();
        };
        source.addEventListener('ready', note('ready'));
        source.addEventListener('ping', note('ping'));
      });
      await named;
      await untilListeners(baseUrl, channel, 1);
      await rawPost(channel, [['Host', 'h'], ['Content-Type', 'application/json']], '{"n":1}');
      expect(JSON.parse(await message)).toMatchObject({ body: { n: 1 }, query: {}, 'content-type': 'application/json' });
      expect(seen[0]).toBe('ready');
    } finally {
      source.close();
    }
  });
});

describe('webhook relay new against relays', () => {
  it('asks the sandbox\'s relay over HTTPS (trusting SVC_CA_FILE) and prints the channel; --json as {"channel"}', async () => {
    const { baseUrl, ca } = await start({ tls: true });
    const env = { SVC_CA_FILE: ca?.file, HTTPS_PROXY: undefined, https_proxy: undefined };
    const human = await runCli(['webhook', 'relay', 'new', `${baseUrl}/relay`], { env });
    expect(human.code, human.stderr).toBe(0);
    const channel = human.stdout.trim();
    expect(channel).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/relay\/[A-Za-z0-9_-]{22}$/);
    expect(human.stderr).toContain(`svc-migrate webhook listen --relay ${channel}`);
    const json = await runCli(['webhook', 'relay', 'new', `${baseUrl}/relay/`, '--json'], { env });
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ channel: expect.stringMatching(/\/relay\/[A-Za-z0-9_-]{22}$/) });
    // Without the sandbox's authority, its certificate is not trusted: exit 8, never an unchecked connection.
    const untrusted = await runCli(['webhook', 'relay', 'new', `${baseUrl}/relay`], { env: { SVC_CA_FILE: undefined } });
    expect(untrusted.code).toBe(8);
    expect(untrusted.stderr).toMatch(/could not ask .* for a channel/);
  });

  it('refuses a channel on another host, and a relay that answers without a redirect', async () => {
    const server = createServer((request, response) => {
      if (request.url === '/other/new') response.writeHead(307, { location: 'https://elsewhere.example/abc' }).end();
      else response.writeHead(200, { 'content-type': 'text/html' }).end('<p>not a relay</p>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const other = await runCli(['webhook', 'relay', 'new', `${origin}/other`], { env: { HTTP_PROXY: undefined, http_proxy: undefined } });
      expect(other.code).toBe(8);
      expect(other.stdout).toBe('');
      expect(other.stderr).toMatch(/the relay answered a channel on another host \(elsewhere\.example/);
      const plain = await runCli(['webhook', 'relay', 'new', origin], { env: { HTTP_PROXY: undefined, http_proxy: undefined } });
      expect(plain.code).toBe(2);
      expect(plain.stderr).toMatch(/answered 200 to HEAD \/new, not a redirect/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('webhook listen --relay against it (in-process, on the program\'s injected clock)', () => {
  it('takes deliveries through the pipeline, tells a gap when the stream is cut and when it is read again, and counts it', async () => {
    const { baseUrl } = await start();
    const channel = await newChannel(baseUrl);
    let stderr = '';
    let stdout = '';
    const waiters: (() => void)[] = [];
    const until = async (pattern: RegExp, where: () => string = () => stderr) => {
      while (!pattern.test(where())) await new Promise<void>((resolve) => waiters.push(resolve));
    };
    const running = runCli(['webhook', 'listen', '--relay', channel, '--secret', 's', '--json', '--max-deliveries', '2'], {
      env: { HTTP_PROXY: undefined, http_proxy: undefined },
      onStdout: (text) => {
        stdout += text;
        waiters.splice(0).forEach((waiter) => waiter());
      },
      onStderr: (text) => {
        stderr += text;
        waiters.splice(0).forEach((waiter) => waiter());
      },
    });
    await until(/reading relay channel /);
    await untilListeners(baseUrl, channel, 1);
    // The hook's ping: the first delivery, re-encoded by the relay, matching as re-encoded.
    const made = await send(`${baseUrl}/_sandbox/hooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: channel, secret: 's' }) });
    await text(made);
    const name = new URL(channel).pathname.split('/').pop();
    await until(/"event":"ping"/, () => stdout);
    await text(await send(`${baseUrl}/_sandbox/relay/${name}/disconnect`, { method: 'POST' }));
    await until(/relay read again at /);
    await untilListeners(baseUrl, channel, 1);
    const emitted = await send(`${baseUrl}/_sandbox/emit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ event: 'issues', action: 'opened' }) });
    await text(emitted);
    const result = await running;
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, any>);
    const deliveries = lines.filter((line) => 'delivery' in line);
    expect(deliveries.map((d) => [d.event, d.verdict, d.verified, d.relay?.body, d.relay?.channel])).toEqual([
      ['ping', 'verified-re-encoded', true, 're-encoded', channel],
      ['issues', 'verified-re-encoded', true, 're-encoded', channel],
    ]);
    const gaps = lines.filter((line) => 'gap' in line).map((line) => line.gap as { from: string; to: string | null; reason: string; channel: string });
    expect(gaps).toHaveLength(2);
    expect(gaps[0]).toMatchObject({ channel, to: null });
    expect(gaps[1]).toMatchObject({ channel, from: gaps[0]?.from, to: expect.any(String) });
    // The wait before reading again is the first backoff, 0.5 s to 1 s, slept on the program's clock.
    const waited = Date.parse(gaps[1]?.to ?? '') - Date.parse(gaps[1]?.from ?? '');
    expect(waited).toBeGreaterThanOrEqual(500);
    expect(waited).toBeLessThan(1000);
    expect(result.stderr).toMatch(/warning: relay lost at \d\d:\d\d:\d\d \(.+\): deliveries sent to the channel until it is read again are lost; reconnecting in (0\.\d|1\.0) s/);
    expect(result.stderr).toMatch(/received 2, verified 2, rejected 0, duplicates 0, unverifiable 0, relay gaps 1/);
  });

  it('the first connection must succeed: a channel that is not an event stream is exit 2 with a hint', async () => {
    const { baseUrl } = await start();
    const result = await runCli(['webhook', 'listen', '--relay', `${baseUrl}/_sandbox`], { env: { HTTP_PROXY: undefined, http_proxy: undefined } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/the relay answered 200 with application\/json.*, not an event stream/);
    expect(result.stderr).toContain('webhook relay new');
  });
});
