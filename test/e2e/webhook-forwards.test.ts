import { mkdtempSync, readdirSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildDelivery } from '../../src/webhook/delivery.js';
import { listen, post } from '../helpers/listener.js';
import { runCli } from '../helpers/run-cli.js';
import { type Handler, startScriptedServer } from '../helpers/scripted-server.js';
import { hasScript, onTerminal } from '../helpers/terminal.js';
import { unless } from '../helpers/skip.js';

// `webhook listen --forward-to`: a forward outside 2xx (or without an answer) is a failure, told
// per attempt and in the summary, tried again with --forward-retries in arrival order, with
// --forward-header's fields added (docs/cli.md#webhook-listen).

const SECRET = 'forward-secret';
const tempDir = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));
const delivery = (n: number) => buildDelivery({ event: 'issues', payload: { action: 'opened', issue: { number: n } }, contentType: 'json', secret: SECRET });
type Sent = ReturnType<typeof delivery>;
const answer =
  (status: number, body = ''): Handler =>
    (_request, response) =>
      response.writeHead(status, { 'content-type': 'text/plain' }).end(body);

/** A port nothing listens on: taken from the system, then given back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('a forward that fails is a failure', () => {
  it('an answer outside 2xx: a warning naming the delivery, a JSON line, the summary, and exit 1 after --max-deliveries', async () => {
    const app = await startScriptedServer(answer(500, 'boom: database down'));
    try {
      const listener = await listen(['--secret', SECRET, '--forward-to', `${app.port}/app`, '--max-deliveries', '2']);
      const sent = [delivery(1), delivery(2)];
      for (const one of sent) expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      expect(await listener.exited).toBe(1);
      const target = `http://localhost:${app.port}/app`;
      expect(listener.forwards).toEqual(
        sent.map((one, index) => ({
          delivery: one.id,
          sequence: index + 1,
          event: 'issues',
          action: 'opened',
          target,
          at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          attempt: 1,
          max_attempts: 1,
          status: 500,
          ms: expect.any(Number),
          error: null,
          response: 'boom: database down',
          outcome: 'failed',
          retry_in_ms: null,
          saved: null,
        })),
      );
      // Each line's fields in the order docs/cli.md shows them.
      expect(Object.keys(listener.forwards[0] ?? {})).toEqual(
        ['delivery', 'sequence', 'event', 'action', 'target', 'at', 'attempt', 'max_attempts', 'status', 'ms', 'error', 'response', 'outcome', 'retry_in_ms', 'saved'],
      );
      const stderr = listener.stderr();
      for (const one of sent) expect(stderr).toMatch(new RegExp(`warning:   → ${target} failed for ${one.id}: 500 in \\d+ ms: boom: database down \\(not saved`));
      expect(stderr).toMatch(/; forwards delivered 0, failed 2, retried 0\n/);
      expect(stderr).toContain(`"message":"2 deliveries were answered but not forwarded to ${target}: ${sent[0]?.id}, ${sent[1]?.id}"`);
    } finally {
      await app.close();
    }
  });

  it('no answer: a refused connection and a timeout are failures, with status null and the reason in error', async () => {
    const port = await closedPort();
    const refused = await listen(['--forward-to', `${port}/`, '--max-deliveries', '1']);
    const one = delivery(1);
    expect((await post(refused.url, one.headers, one.body)).status).toBe(200);
    expect(await refused.exited).toBe(1);
    expect(refused.forwards).toEqual([
      expect.objectContaining({ delivery: one.id, attempt: 1, status: null, response: null, outcome: 'failed', error: expect.stringMatching(/ECONNREFUSED/) }),
    ]);
    expect(refused.stderr()).toMatch(new RegExp(`failed for ${one.id}: no answer: connect ECONNREFUSED`));

    const silent = await startScriptedServer(() => {}); // takes the forward, never answers
    try {
      const timedOut = await listen(['--forward-to', `${silent.port}/`, '--forward-timeout', '0.2', '--max-deliveries', '1']);
      expect((await post(timedOut.url, one.headers, one.body)).status).toBe(200);
      expect(await timedOut.exited).toBe(1);
      expect(timedOut.forwards).toEqual([expect.objectContaining({ status: null, outcome: 'failed', error: 'no answer within 200 ms' })]);
      // Said once: not "no answer: no answer within …".
      expect(timedOut.stderr()).toContain(`failed for ${one.id}: no answer within 200 ms (not saved`);
      expect(timedOut.stderr()).toMatch(/forwards delivered 0, failed 1, retried 0/);
    } finally {
      await silent.close();
    }
  });

  it('a 2xx is delivered: exit 0, and a JSON line for it too', async () => {
    const app = await startScriptedServer(answer(202, 'queued'));
    try {
      const listener = await listen(['--forward-to', String(app.port), '--max-deliveries', '1']);
      const one = delivery(1);
      expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      expect(await listener.exited).toBe(0);
      expect(listener.forwards).toEqual([expect.objectContaining({ delivery: one.id, attempt: 1, status: 202, response: 'queued', outcome: 'delivered', error: null })]);
      expect(listener.stderr()).toMatch(new RegExp(`→ http://localhost:\\d+/ 202 in \\d+ ms for ${one.id}: queued\n`));
      expect(listener.stderr()).toMatch(/forwards delivered 1, failed 0, retried 0/);
    } finally {
      await app.close();
    }
  });
});

describe('--forward-retries', () => {
  it('tries a failed forward again with growing waits, holding the deliveries after it back, until the app recovers', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The first answer waits until the second delivery was received: it must queue behind the first.
    const app = await startScriptedServer(
      (_request, response: ServerResponse) => void held.then(() => response.writeHead(500).end('starting')),
      answer(503, 'still starting'),
      answer(200, 'ok'),
    );
    try {
      // One at a time: a delivery being retried holds back the ones after it.
      const listener = await listen(['--secret', SECRET, '--forward-to', `${app.port}/hooks`, '--forward-concurrency', '1', '--forward-retries', '3', '--max-deliveries', '2']);
      const [first, second] = [delivery(1), delivery(2)];
      expect((await post(listener.url, first.headers, first.body)).status).toBe(200);
      await app.until(() => app.requests.length === 1);
      expect((await post(listener.url, second.headers, second.body)).status).toBe(200);
      await listener.waitFor(2);
      release();
      expect(await listener.exited).toBe(0);
      expect(app.requests.map((request) => JSON.parse(request.body).issue.number)).toEqual([1, 1, 1, 2]);
      // Every attempt carries the delivery as it came: its signature too.
      for (const request of app.requests.slice(0, 3)) expect(request.headers['x-hub-signature-256']).toBe(first.headers['x-hub-signature-256']);
      const seen = listener.forwards.map((f) => [f.delivery, f.attempt, f.status, f.outcome]);
      expect(seen).toEqual([
        [first.id, 1, 500, 'retrying'],
        [first.id, 2, 503, 'retrying'],
        [first.id, 3, 200, 'delivered'],
        [second.id, 1, 200, 'delivered'],
      ]);
      // Half to all of 1 s, then of 2 s.
      expect(listener.forwards[0]?.retry_in_ms).toBeGreaterThanOrEqual(500);
      expect(listener.forwards[0]?.retry_in_ms).toBeLessThanOrEqual(1000);
      expect(listener.forwards[1]?.retry_in_ms).toBeGreaterThanOrEqual(1000);
      expect(listener.forwards[1]?.retry_in_ms).toBeLessThanOrEqual(2000);
      expect(listener.forwards.every((f) => f.max_attempts === 4)).toBe(true);
      const stderr = listener.stderr();
      expect(stderr).toMatch(/a failed forward is tried again up to 3 times/);
      expect(stderr).toMatch(new RegExp(`warning:   → http://localhost:\\d+/hooks failed for ${first.id} \\(attempt 1 of 4; retrying in [01]\\.\\d s\\): 500 in \\d+ ms: starting`));
      expect(stderr).toMatch(new RegExp(`failed for ${first.id} \\(attempt 2 of 4; retrying in [12]\\.\\d s\\): 503 in \\d+ ms: still starting`));
      expect(stderr).toMatch(new RegExp(`→ http://localhost:\\d+/hooks 200 in \\d+ ms for ${first.id} \\(attempt 3 of 4\\): ok`));
      expect(stderr).toMatch(/; forwards delivered 2, failed 0, retried 1\n/);
    } finally {
      await app.close();
    }
  });

  it('gives up after its retries: the delivery is named, with the command that sends it again', async () => {
    const app = await startScriptedServer(answer(500, 'broken'));
    const dir = tempDir('svc-forward-');
    try {
      const listener = await listenHuman(['--save', dir, '--forward-to', `${app.port}/in`, '--forward-retries', '2', '--max-deliveries', '1']);
      const one = delivery(1);
      expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      const { code, stdout, stderr } = await listener.result;
      expect(code).toBe(1);
      expect(app.requests).toHaveLength(3);
      expect(stdout).not.toMatch(/"forward"/);
      expect(stderr).toMatch(new RegExp(`failed for ${one.id} \\(attempt 1 of 3; retrying in [01]\\.\\d s\\): 500 in \\d+ ms: broken\n`));
      expect(stderr).toMatch(new RegExp(`failed for ${one.id} \\(attempt 3 of 3; gave up\\): 500 in \\d+ ms: broken \\(saved in ${dir}; \`webhook replay --failed\` can send it later\\)`));
      expect(stderr).toMatch(/forwards delivered 0, failed 1, retried 1/);
      expect(stderr).toContain(`error: 1 delivery was answered but not forwarded to http://localhost:${app.port}/in: ${one.id}\n`);
      const command = /hint: `svc-migrate (webhook replay --failed \S+ --url \S+)` sends it again \(/.exec(stderr)?.[1];
      expect(command).toBe(`webhook replay --failed ${dir} --url http://localhost:${app.port}/in`);

      // The app fixed, the command the hint gave sends it.
      app.script(answer(200, 'ok'));
      const replayed = await runCli(command?.split(' ') ?? []);
      expect(replayed.code, replayed.stderr).toBe(0);
      expect(app.requests.at(-1)?.body).toBe(one.body.toString());
    } finally {
      await app.close();
    }
  });
});

/** `webhook listen` in-process as a human runs it (no --json): its address, and its end. */
async function listenHuman(args: string[]) {
  let stderr = '';
  let found: (url: string) => void = () => {};
  const announced = new Promise<string>((resolve) => {
    found = resolve;
  });
  const result = runCli(['webhook', 'listen', '--port', '0', ...args], {
    env: { SVC_WEBHOOK_SECRET: '' },
    onStderr: (text) => {
      stderr += text;
      const url = /listening on (http:\/\/\S+?)(,|\s|$)/.exec(stderr)?.[1];
      if (url) found(url);
    },
  });
  const url = await Promise.race([announced, result.then((r) => Promise.reject(new Error(`listen exited ${r.code}: ${r.stderr}`)))]);
  return { url, result };
}

describe('--forward-retries at the end of a session', () => {
  it('Ctrl-C during the wait for a retry ends it at once: no retry, the delivery named as not forwarded', async () => {
    const app = await startScriptedServer(answer(500, 'down'));
    try {
      // The built binary on the real clock: the first retry would wait at least 500 ms.
      const listener = await listen(['--forward-to', `${app.port}/`, '--forward-retries', '5'], { spawn: true });
      const one = delivery(1);
      expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      await listener.waitForForward((f) => f.outcome === 'retrying');
      expect(await listener.stop()).toBe(130);
      expect(app.requests).toHaveLength(1);
      expect(listener.forwards.map((f) => [f.attempt, f.outcome, f.error])).toEqual([
        [1, 'retrying', null],
        [null, 'failed', 'retries stopped by Ctrl-C after attempt 1 of 6'],
      ]);
      const stderr = listener.stderr();
      expect(stderr).toMatch(new RegExp(`failed for ${one.id}: retries stopped by Ctrl-C after attempt 1 of 6 \\(not saved`));
      expect(stderr).toMatch(/forwards delivered 0, failed 1, retried 0/);
      expect(stderr).toContain(`warning: 1 delivery was answered but not forwarded to http://localhost:${app.port}/: ${one.id}; it was not saved: run with --save <dir>`);
    } finally {
      await app.close();
    }
  });

  it.skipIf(!hasScript)(`on a terminal: a failure in red with the delivery named, and ^C typed during a wait ends at once${unless(hasScript, 'util-linux `script` is not installed')}`, async () => {
    const app = await startScriptedServer(answer(500, 'down'));
    try {
      const one = delivery(1);
      let posted = false;
      const result = await onTerminal(['webhook', 'listen', '--port', '0', '--forward-to', `${app.port}/`, '--forward-retries', '5'], {
        // Colour as on a developer's terminal: the test runner's environment may turn it off.
        env: { SVC_WEBHOOK_SECRET: '', FORCE_COLOR: undefined, NO_COLOR: undefined },
        timeoutMs: 15_000,
        onScreen(screen) {
          const url = /listening on (http:\/\/\S+?),/.exec(screen)?.[1];
          if (url && !posted) {
            posted = true;
            post(url, one.headers, one.body).catch(() => {});
          }
        },
        steps: [[/attempt 1 of 6; retrying in/, '\x03']],
      });
      expect(result.killed).toBeUndefined();
      expect(result.code).toBe(130);
      expect(app.requests).toHaveLength(1);
      const plain = result.screen.replace(/\x1b\[[0-9;]*m/g, '');
      expect(result.screen).toContain('\x1b[31mfailed\x1b[39m');
      expect(plain).toMatch(new RegExp(`warning:   → http://localhost:\\d+/ failed for ${one.id} \\(attempt 1 of 6; retrying in [01]\\.\\d s\\): 500 in \\d+ ms: down`));
      expect(plain).toMatch(new RegExp(`failed for ${one.id}: retries stopped by Ctrl-C after attempt 1 of 6`));
      expect(plain).toMatch(/forwards delivered 0, failed 1, retried 0/);
      expect(plain).not.toMatch(/this is a bug|at .*\.js:\d+/);
    } finally {
      await app.close();
    }
  });

  it('Ctrl-C during an attempt lets it finish, and tries it no more', async () => {
    const answers: ServerResponse[] = [];
    const app = await startScriptedServer((_request, response) => void answers.push(response));
    try {
      const listener = await listen(['--forward-to', `${app.port}/`, '--forward-retries', '5']);
      const one = delivery(1);
      expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      await app.until(() => answers.length === 1);
      const exited = listener.stop();
      await listener.until(() => /finishing 1 forward to http:\/\/localhost:\d+\/ \(each up to 10 s, not tried again; Ctrl-C again to stop now\)/.test(listener.stderr()));
      answers[0]?.writeHead(502).end('bad gateway');
      expect(await exited).toBe(130);
      expect(app.requests).toHaveLength(1);
      expect(listener.forwards.map((f) => [f.attempt, f.status, f.outcome])).toEqual([[1, 502, 'failed']]);
      expect(listener.stderr()).toMatch(/failed for \S+ \(attempt 1 of 6; not tried again after Ctrl-C\): 502 in \d+ ms: bad gateway/);
    } finally {
      await app.close();
    }
  });

  it('Ctrl-C while the forwards of a session ended by --max-deliveries finish is acknowledged at once, not after the attempt under way', async () => {
    const answers: ServerResponse[] = [];
    const app = await startScriptedServer((_request, response) => void answers.push(response));
    try {
      const listener = await listen(['--forward-to', `${app.port}/`, '--forward-retries', '5', '--max-deliveries', '1']);
      const one = delivery(1);
      expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      await app.until(() => answers.length === 1);
      await listener.until(() => /finishing 1 forward .*Ctrl-C to stop trying again, twice to stop now\)\n/.test(listener.stderr()));
      const exited = listener.stop();
      // Said while the attempt is still under way (it may take --forward-timeout).
      await listener.until(() => /finishing 1 forward to http:\/\/localhost:\d+\/ \(each up to 10 s, not tried again; Ctrl-C again to stop now\)\n/.test(listener.stderr()));
      answers[0]?.writeHead(500).end('down');
      expect(await exited).toBe(130);
      expect(app.requests).toHaveLength(1);
      expect(listener.forwards.map((f) => [f.attempt, f.status, f.outcome])).toEqual([[1, 500, 'failed']]);
    } finally {
      await app.close();
    }
  });

  it('a full queue still bounds what waits behind a retried delivery: the rest are saved, named, and told apart in --json', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The first attempt is answered once all four were received: one is being forwarded, one waits.
    const app = await startScriptedServer((_request, response: ServerResponse) => void held.then(() => response.writeHead(500).end('down')), answer(500, 'down'));
    const dir = tempDir('svc-forward-queue-');
    try {
      const listener = await listen(['--save', dir, '--forward-to', `${app.port}/`, '--forward-retries', '2', '--forward-queue', '1', '--forward-concurrency', '1', '--max-deliveries', '4']);
      const sent = [1, 2, 3, 4].map(delivery);
      for (const one of sent) expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      await listener.waitFor(4);
      release();
      expect(await listener.exited).toBe(1);
      expect(readdirSync(dir).filter((name) => name.endsWith('.http'))).toHaveLength(4);
      expect(app.requests.map((request) => JSON.parse(request.body).issue.number)).toEqual([1, 1, 1, 2, 2, 2]);
      const skipped = listener.forwards.filter((f) => f.outcome === 'not_forwarded');
      const failed = listener.forwards.filter((f) => f.outcome === 'failed');
      expect(failed.map((f) => f.delivery)).toEqual([sent[0]?.id, sent[1]?.id]);
      expect(skipped.map((f) => f.delivery)).toEqual([sent[2]?.id, sent[3]?.id]);
      for (const record of skipped) {
        expect(record).toMatchObject({ attempt: null, status: null, error: 'the forward queue was full (--forward-queue)', saved: expect.stringContaining(dir) });
        expect(listener.stderr()).toContain(`not forwarded (queue full): ${record.delivery}, saved in ${dir}`);
      }
      expect(listener.stderr()).toMatch(new RegExp(`forwards delivered 0, failed ${failed.length}, retried ${failed.length}, not forwarded ${skipped.length}`));
      expect(listener.stderr()).toContain('"message":"4 deliveries were answered but not forwarded');
    } finally {
      await app.close();
    }
  });
});

describe('--forward-header', () => {
  it('adds its fields to every forward, the delivery\'s own fields unchanged, and never prints a credential', async () => {
    const app = await startScriptedServer(answer(204));
    try {
      const listener = await listen([
        '--secret', SECRET, '--forward-to', `${app.port}/in`, '--max-deliveries', '2',
        '--forward-header', 'Authorization: Bearer app-token-123',
        '--forward-header', 'X-Env:  staging ',
        '--forward-header', 'X-Api-Key: key-456',
      ]);
      const plain = delivery(1);
      // A field the delivery carries itself is the delivery's.
      const own = delivery(2);
      own.headers['x-env'] = 'from-the-sender';
      for (const one of [plain, own]) expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      expect(await listener.exited).toBe(0);
      expect(app.requests).toHaveLength(2);
      const [first, second] = app.requests;
      expect(first?.headers).toMatchObject({ authorization: 'Bearer app-token-123', 'x-env': 'staging', 'x-api-key': 'key-456' });
      expect(second?.headers['x-env']).toBe('from-the-sender');
      for (const [request, one] of [[first, plain], [second, own]] as const) {
        for (const [name, value] of Object.entries(one.headers)) expect(request?.headers[name], name).toBe(value);
      }
      const stderr = listener.stderr();
      expect(stderr).toContain('each forward adds Authorization: Bearer [REDACTED], X-Env: staging, X-Api-Key: [REDACTED]');
      expect(stderr + JSON.stringify(listener.lines) + JSON.stringify(listener.forwards)).not.toMatch(/app-token-123|key-456/);
    } finally {
      await app.close();
    }
  });
});

describe('forwards a developer and an attacker would try', () => {
  it('a --forward-header value beyond Latin-1 reaches the app as the UTF-8 the user typed, not as a failure at every forward', async () => {
    const app = await startScriptedServer(answer(200, 'ok'));
    try {
      const listener = await listen(['--forward-to', `${app.port}/`, '--forward-header', 'X-User: José ☃ 東京', '--max-deliveries', '1']);
      const one = delivery(1);
      expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      expect(await listener.exited, listener.stderr()).toBe(0);
      expect(listener.forwards.map((f) => f.outcome)).toEqual(['delivered']);
      // node:http reads each byte of a field as one character: the bytes sent were UTF-8.
      expect(Buffer.from(app.requests[0]?.headers['x-user'] as string, 'latin1').toString('utf8')).toBe('José ☃ 東京');
    } finally {
      await app.close();
    }
  });

  it('an app that echoes the credentials it was sent does not get them printed: not on the terminal, not in --json', async () => {
    // As an app's "bad token" page, or an echo server, would answer.
    const echo: Handler = (request, response) =>
      response.writeHead(401).end(`bad auth ${request.headers.authorization} key ${String(request.headers['x-api-key'])} cookie ${request.headers.cookie ?? '-'}`);
    const app = await startScriptedServer(echo);
    try {
      const listener = await listen([
        '--forward-to', `${app.port}/`, '--max-deliveries', '1',
        '--forward-header', 'Authorization: Bearer app-token-123',
        '--forward-header', 'X-Api-Key: key-456',
        '--forward-header', 'Cookie: session=cookie-789',
      ]);
      const one = delivery(1);
      expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      expect(await listener.exited).toBe(1);
      expect(listener.forwards[0]?.response).toBe('bad auth Bearer [REDACTED] key [REDACTED] cookie [REDACTED]');
      expect(listener.stderr() + JSON.stringify(listener.forwards)).not.toMatch(/app-token-123|key-456|cookie-789/);

      // A user and password in the URL, sent as Basic, likewise; and by `send` too.
      const basic = Buffer.from('alice:pw-s3cr3t').toString('base64');
      const withUser = await listen(['--forward-to', `http://alice:pw-s3cr3t@localhost:${app.port}/`, '--max-deliveries', '1']);
      expect((await post(withUser.url, one.headers, one.body)).status).toBe(200);
      expect(await withUser.exited).toBe(1);
      expect(withUser.forwards[0]?.response).toMatch(/^bad auth Basic \[REDACTED\]/);
      expect(withUser.stderr() + JSON.stringify(withUser.forwards)).not.toMatch(new RegExp(`pw-s3cr3t|${basic}`));
      const sent = await runCli(['webhook', 'send', '--url', `http://alice:pw-s3cr3t@localhost:${app.port}/`, '--event', 'ping']);
      expect(sent.code).toBe(1);
      expect(sent.stdout + sent.stderr).toMatch(/401 in \d+ ms bad auth Basic \[REDACTED\]/);
      expect(sent.stdout + sent.stderr).not.toMatch(new RegExp(`pw-s3cr3t|${basic}`));
    } finally {
      await app.close();
    }
  });
  it('more than ten deliveries not forwarded: ten named, the rest counted, the first file to replay and where the others are', async () => {
    const port = await closedPort();
    const dir = tempDir('svc-forward-many-');
    const listener = await listenHuman(['--save', dir, '--forward-to', `${port}/`, '--max-deliveries', '12']);
    const sent = Array.from({ length: 12 }, (_, i) => delivery(i + 1));
    for (const one of sent) expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
    const { code, stderr } = await listener.result;
    expect(code).toBe(1);
    const ids = sent.map((one) => one.id);
    expect(stderr).toContain(`error: 12 deliveries were answered but not forwarded to http://localhost:${port}/: ${ids.slice(0, 10).join(', ')} and 2 more\n`);
    expect(stderr).toContain(
      `hint: \`svc-migrate webhook replay --failed ${dir} --url http://localhost:${port}/\` sends them again (${dir}/forwards.jsonl records which failed)\n`,
    );
  });
});

describe('forwards keep up: several at once (--forward-concurrency, default 8)', () => {
  it('2,000 deliveries sent 50 at a time to a healthy app are all forwarded with the default flags', async () => {
    const app = await startScriptedServer(answer(200, 'ok'));
    try {
      const total = 2000;
      // The built binary, as a user runs it: the app and this sender share no thread with it.
      const listener = await listen(['--forward-to', `${app.port}/hooks`, '--max-deliveries', String(total)], { spawn: true });
      const sent = Array.from({ length: total }, (_, i) => delivery(i + 1));
      let next = 0;
      const statuses: number[] = [];
      const sender = async () => {
        while (next < total) {
          const one = sent[next++] as (typeof sent)[number];
          statuses.push((await post(listener.url, one.headers, one.body)).status);
        }
      };
      await Promise.all(Array.from({ length: 50 }, sender));
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      expect(await listener.exited, listener.stderr().slice(-3000)).toBe(0);
      expect(app.requests).toHaveLength(total);
      expect(new Set(app.requests.map((request) => request.headers['x-service-delivery']))).toEqual(new Set(sent.map((one) => one.id)));
      expect(listener.forwards.filter((f) => f.outcome !== 'delivered')).toEqual([]);
      expect(listener.stderr()).not.toMatch(/not forwarded|queue is full/);
      expect(listener.stderr()).toMatch(/forwards delivered 2000, failed 0, retried 0\n/);
    } finally {
      await app.close();
    }
  }, 180_000);

  it('a forward that hangs holds no other: the rest are forwarded before it times out at the service\'s 10 s', async () => {
    const hanging = delivery(1);
    const others = [2, 3, 4, 5, 6].map(delivery);
    // The app never answers the first delivery; it answers the others at once.
    const app = await startScriptedServer((request, response) => {
      if (request.headers['x-service-delivery'] !== hanging.id) response.writeHead(200).end('ok');
    });
    try {
      const listener = await listen(['--forward-to', `${app.port}/`, '--max-deliveries', '6']);
      expect((await post(listener.url, hanging.headers, hanging.body)).status).toBe(200);
      await app.until(() => app.requests.length === 1);
      for (const one of others) expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      expect(await listener.exited).toBe(1);
      // By order of events: every other delivery forwarded (in whichever order they ended), then
      // the hanging one given up; each record keeps its delivery's arrival number.
      const records = listener.forwards.map((f) => [f.delivery, f.sequence, f.outcome]);
      expect(records.at(-1)).toEqual([hanging.id, 1, 'failed']);
      expect(records.slice(0, -1).sort((a, b) => Number(a[1]) - Number(b[1]))).toEqual(others.map((one, i) => [one.id, i + 2, 'delivered']));
      expect(listener.forwards.at(-1)).toMatchObject({
        status: null,
        error: 'no answer within 10 s (the service gives up after 10 s too: your app must answer sooner)',
      });
    } finally {
      await app.close();
    }
  }, 60_000);

  it('--forward-concurrency 3: three forwards under way at once, no fourth until one ends', async () => {
    const answers: ServerResponse[] = [];
    const app = await startScriptedServer((_request, response) => void answers.push(response));
    try {
      const listener = await listen(['--forward-to', `${app.port}/`, '--forward-concurrency', '3', '--max-deliveries', '4']);
      const sent = [1, 2, 3, 4].map(delivery);
      for (const one of sent) expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      await app.until(() => answers.length === 3);
      await listener.waitFor(4);
      expect(app.requests).toHaveLength(3);
      // The three under way reach the app in any order: the one answered first is the second that arrived.
      const answeredFirst = JSON.parse(app.requests[1]?.body ?? '{}').issue.number as number;
      answers[1]?.writeHead(200).end('second');
      await app.until(() => answers.length === 4);
      for (const answer of [answers[0], answers[2], answers[3]]) answer?.writeHead(200).end('ok');
      expect(await listener.exited).toBe(0);
      expect(listener.forwards[0]).toMatchObject({ delivery: sent[answeredFirst - 1]?.id, sequence: answeredFirst, response: 'second' });
      // No fourth before one ended: the fourth delivery arrived last.
      expect(JSON.parse(app.requests[3]?.body ?? '{}').issue.number).toBe(4);
      expect(app.requests.map((request) => JSON.parse(request.body).issue.number).sort()).toEqual([1, 2, 3, 4]);
    } finally {
      await app.close();
    }
  });

  it('--forward-queue counts the deliveries waiting for a slot, not the forwards under way', async () => {
    const answers: ServerResponse[] = [];
    const app = await startScriptedServer((_request, response) => void answers.push(response));
    try {
      const listener = await listen(['--forward-to', `${app.port}/`, '--forward-concurrency', '3', '--forward-queue', '1', '--max-deliveries', '5']);
      const sent = [1, 2, 3, 4, 5].map(delivery);
      for (const one of sent) expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      await app.until(() => answers.length === 3);
      // Three under way, one waiting: only the fifth found the queue full.
      await listener.waitForForward((f) => f.delivery === sent[4]?.id);
      expect(listener.forwards.filter((f) => f.outcome === 'not_forwarded').map((f) => f.delivery)).toEqual([sent[4]?.id]);
      for (const answer of answers.splice(0)) answer.writeHead(200).end('ok');
      await app.until(() => answers.length === 1);
      answers[0]?.writeHead(200).end('ok');
      expect(await listener.exited).toBe(1);
      // Three at once reach the app in any order.
      expect(app.requests.map((request) => JSON.parse(request.body).issue.number).sort()).toEqual([1, 2, 3, 4]);
    } finally {
      await app.close();
    }
  });

  it('a full queue names the bottleneck: the app when its forwards fail, the forwarder when the app answers fast', async () => {
    for (const [first, bottleneck] of [
      [answer(500, 'down'), /http:\/\/localhost:\d+\/ failed 1 of its last 1 forwards: your app is the bottleneck\n/],
      [answer(200, 'ok'), /http:\/\/localhost:\d+\/ answered its first forward in \d+ ms, the connection's set-up included, but deliveries arrive faster than one forward at a time send them: raise --forward-concurrency\n/],
    ] as const) {
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      // The first forward is answered at once; the second is held while a third arrives, and finds the queue full.
      const app = await startScriptedServer(first, (_request, response) => void held.then(() => response.writeHead(200).end('ok')));
      try {
        const listener = await listen(['--forward-to', `${app.port}/`, '--forward-concurrency', '1', '--forward-queue', '1', '--max-deliveries', '4']);
        const [a, b, c, d] = [1, 2, 3, 4].map(delivery) as [Sent, Sent, Sent, Sent];
        expect((await post(listener.url, a.headers, a.body)).status).toBe(200);
        await listener.waitForForward((f) => f.delivery === a.id);
        expect((await post(listener.url, b.headers, b.body)).status).toBe(200);
        await app.until(() => app.requests.length === 2);
        // b is under way, c waits for the slot (the queue holds one), d finds it full.
        for (const next of [c, d]) expect((await post(listener.url, next.headers, next.body)).status).toBe(200);
        await listener.waitForForward((f) => f.delivery === d.id);
        expect(listener.forwards.find((f) => f.delivery === d.id)).toMatchObject({ outcome: 'not_forwarded' });
        release();
        expect(await listener.exited).toBe(1);
        const stderr = listener.stderr();
        expect(stderr).toContain('the forward queue is full (1 delivery waits, --forward-queue): new deliveries are answered but not forwarded until it empties; ');
        expect(stderr).toMatch(bottleneck);
        expect(stderr).not.toMatch(/far behind/);
      } finally {
        await app.close();
      }
    }
  });
});
