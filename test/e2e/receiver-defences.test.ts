import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { request } from 'node:http';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain JavaScript build script without types
import { publishedExampleSet } from '../../scripts/build-samples.js';
// @ts-expect-error -- a plain JavaScript development module without types
import { RENAMED_EVENTS } from '../../scripts/webhook-schemas.js';
import { buildDelivery } from '../../src/webhook/delivery.js';
import { sign } from '../../src/webhook/signature.js';
import { parseSaved } from '../../src/webhook/store.js';
import { untilInDirectory } from '../helpers/fs-events.js';
import { listen, post } from '../helpers/listener.js';
import { BIN, runCli } from '../helpers/run-cli.js';
import { startScriptedServer } from '../helpers/scripted-server.js';
import { changes } from '../helpers/until.js';
import { unless } from '../helpers/skip.js';

// `webhook listen` (and send, replay) against real payloads and hostile senders, forward targets
// and save directories, each through the built binary on loopback.

const SECRET = 'defence-secret';
const FIXTURES = new URL('../fixtures/', import.meta.url).pathname;
const ESC = '\u001b';
const tempDir = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

/**
 * What a child writes, as it comes, and waits on it, looked at again at each chunk and at its exit.
 * `stdout: false` leaves stdout unread until `readStdout()`.
 */
function outputOf(child: ChildProcess, { stdout: readingStdout = true } = {}) {
  let stdout = '';
  let stderr = '';
  let ended = false;
  const { changed, until } = changes();
  const readStdout = () =>
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      changed();
    });
  if (readingStdout) readStdout();
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    changed();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  void exited.then(() => {
    ended = true;
    changed();
  });
  return { stdout: () => stdout, stderr: () => stderr, ended: () => ended, exited, until, readStdout };
}

/** `webhook listen` as a person at a terminal would read it: human lines, no --json. */
async function listenHuman(args: string[]) {
  const child = spawn(process.execPath, [BIN, 'webhook', 'listen', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SVC_WEBHOOK_SECRET: '' },
  });
  children.push(child);
  const output = outputOf(child);
  const until = (test: () => boolean) =>
    Promise.race([output.until(test), output.exited.then(() => (test() ? undefined : Promise.reject(new Error(`listen exited: ${output.stderr()}`))))]);
  await until(() => /listening on http/.test(output.stderr()));
  const url = /listening on (http:\/\/\S+?)(,|\s|$)/.exec(output.stderr())?.[1] as string;
  return {
    url,
    pid: child.pid as number,
    stdout: output.stdout,
    stderr: output.stderr,
    lines: () => output.stdout().split('\n').filter(Boolean),
    until,
    exited: output.exited,
  };
}

/** A signed delivery of exact body bytes. */
function signed(event: string, body: string | Buffer, extra: Record<string, string> = {}, contentType: 'json' | 'form' = 'json') {
  const bytes = Buffer.from(body);
  const base = buildDelivery({ event, payload: Buffer.from('{}'), contentType, secret: SECRET });
  const headers: Record<string, string> = {
    ...base.headers,
    'content-length': String(bytes.length),
    'x-hub-signature-256': sign(bytes, SECRET),
    'x-hub-signature': sign(bytes, SECRET, 'sha1'),
    ...extra,
  };
  return { id: headers['x-service-delivery'] as string, headers, body: bytes };
}

function fixtureFiles(): { event: string; file: string }[] {
  const root = join(FIXTURES, 'webhooks');
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => readdirSync(join(root, entry.name)).map((file) => ({ event: entry.name, file: join(root, entry.name, file) })));
}

/**
 * Published payloads that raise a "required" warning, and why: the catalogue's row for the activity
 * the example shows requires what the example, older than the row, lacks. Each names that row of
 * src/webhook/catalogue.ts (docs/service.md#event-catalogue) and the properties it lists.
 */
const OLDER_EXAMPLES = [
  {
    example: 'api.github.com deployment #0',
    warning: 'missing required workflow, workflow_run (of action created)',
    row: 'deployment',
    props: 'action! deployment! workflow! workflow_run!',
  },
  {
    example: 'api.github.com installation_repositories #0',
    warning: 'missing required requester (of action added)',
    row: 'installation_repositories',
    props: 'action! installation! repositories_added! repositories_removed! repository_selection! requester!',
  },
];

describe('right about real payloads', () => {
  it('no published payload, as JSON or as a form, raises a "required" warning but where the row asks more; a genuinely incomplete one still does', async () => {
    const fixtures = fixtureFiles();
    expect(fixtures.length).toBe(134);
    const forms = readdirSync(join(FIXTURES, 'webhooks-form'), { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.form'));
    expect(forms.length).toBe(5);
    // The api.github.com examples of @octokit/webhooks-examples, which the built-in payloads come from.
    const set = (publishedExampleSet as () => { name: string; examples: Record<string, unknown>[] }[])();
    const renamed = RENAMED_EVENTS as Record<string, string>;
    const examples = set.flatMap(({ name, examples: payloads }) =>
      payloads.map((payload, index) => ({ event: renamed[name] ?? name, payload, example: `api.github.com ${name} #${index}` })),
    );
    expect(examples.length).toBe(329);
    const listener = await listen(['--secret', SECRET]);
    const sent: string[] = [];
    for (const { event, file } of fixtures) {
      for (const contentType of ['json', 'form'] as const) {
        const delivery = buildDelivery({ event, payload: readFileSync(file), contentType, secret: SECRET });
        expect((await post(listener.url, delivery.headers, delivery.body)).status, file).toBe(200);
        sent.push(file);
      }
    }
    for (const name of forms) {
      const body = readFileSync(join(FIXTURES, 'webhooks-form', name));
      const delivery = signed(name.split('/')[0] as string, body, { 'content-type': 'application/x-www-form-urlencoded' }, 'form');
      expect((await post(listener.url, delivery.headers, delivery.body)).status, name).toBe(200);
      sent.push(name);
    }
    for (const { event, payload, example } of examples) {
      const delivery = buildDelivery({ event, payload, contentType: 'json', secret: SECRET });
      expect((await post(listener.url, delivery.headers, delivery.body)).status, example).toBe(200);
      sent.push(example);
    }
    // The check is not switched off: the shown activity of a row keeps all its required
    // properties, another action those its published schema requires; a projects_v2_item is
    // created without `changes`, which only the activity its row describes (archived) carries.
    const fixture = (path: string) => JSON.parse(readFileSync(join(FIXTURES, 'webhooks', path), 'utf8')) as Record<string, unknown>;
    const { assignee: _assignee, ...unassigned } = fixture('pull_request/assigned.json');
    const { number: _number, ...numberless }: Record<string, unknown> = { ...fixture('pull_request/assigned.json'), action: 'opened' };
    const { issue: _issue, ...issueless }: Record<string, unknown> = { ...fixture('issues/reopened.json'), action: 'closed' };
    const { changes: _changes, ...unchanged }: Record<string, unknown> = fixture('projects_v2_item/archived.json');
    const created = { ...unchanged, action: 'created' };
    const incomplete: [string, Record<string, unknown>][] = [
      ['pull_request', unassigned],
      ['pull_request', numberless],
      ['issues', issueless],
      ['projects_v2_item', unchanged],
      ['projects_v2_item', created],
    ];
    for (const [event, payload] of incomplete) {
      const delivery = buildDelivery({ event, payload, contentType: 'json', secret: SECRET });
      expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
      sent.push(`${event}.${String(payload.action)}`);
    }
    await listener.waitFor(sent.length);
    const required = listener.lines.flatMap((line, index) => (line.warnings.some((w: string) => /required/.test(w)) ? [[sent[index], line.warnings]] : []));
    expect(required).toEqual([
      ...OLDER_EXAMPLES.map(({ example, warning }) => [example, [warning]]),
      ['pull_request.assigned', ['missing required assignee (of action assigned)']],
      ['pull_request.opened', ['missing required number']],
      ['issues.closed', ['missing required issue']],
      ['projects_v2_item.archived', ['missing required changes (of action archived)']],
    ]);
    const catalogue = readFileSync(new URL('../../src/webhook/catalogue.ts', import.meta.url), 'utf8');
    for (const { row, props } of OLDER_EXAMPLES) expect(catalogue.split('\n').find((line) => line.startsWith(`  ['${row}', `)), row).toContain(`'${props}'`);
    await listener.stop();
  }, 90_000);

  it.each([
    ['null', 'null'],
    ['a string', '"text"'],
    ['an array', '[]'],
    ['a number', '42'],
  ])('answers 400 to a signed payload that is %s, as JSON and as a form', async (_name, json) => {
    const listener = await listen(['--secret', SECRET]);
    const asJson = signed('push', json);
    const asForm = signed('push', `payload=${encodeURIComponent(json)}`, { 'content-type': 'application/x-www-form-urlencoded' }, 'form');
    for (const delivery of [asJson, asForm]) {
      const answer = await post(listener.url, delivery.headers, delivery.body);
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body).error).toMatch(/not a JSON object/);
    }
    await listener.stop();
    expect(listener.lines).toEqual([]);
    expect(listener.stderr()).toMatch(/received 0, verified 0, rejected 2/);
  });

  it('answers 400 to a signed payload that is not UTF-8, as JSON and as a form, rather than change it', async () => {
    const listener = await listen(['--secret', SECRET]);
    const asJson = signed('push', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]));
    const asForm = signed('push', 'payload=%7B%22a%22%3A%22%FF%22%7D', { 'content-type': 'application/x-www-form-urlencoded' }, 'form');
    for (const delivery of [asJson, asForm]) expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(400);
    await listener.stop();
    expect(listener.lines).toEqual([]);
  });
});

describe('unsafe input, answered safely', () => {
  it('marks a delivery seen only once saved: a redelivery after a failed save is saved; the 500 tells the sender no path or pid', async () => {
    const dir = tempDir('svc-seen-');
    const listener = await listen(['--save', dir]);
    const delivery = buildDelivery({ event: 'watch', payload: { action: 'started', repository: {}, sender: {} }, contentType: 'json' });
    // The directory disappears under the receiver, replaced by a file: the save fails.
    rmSync(dir, { recursive: true });
    writeFileSync(dir, 'not a directory');
    const failed = await post(listener.url, delivery.headers, delivery.body);
    expect(failed.status).toBe(500);
    expect(JSON.parse(failed.body)).toEqual({ error: expect.any(String), delivery: delivery.id });
    expect(failed.body).not.toContain(dir);
    expect(failed.body).not.toContain(String(listener.pid));
    expect(failed.body).not.toMatch(/ENOTDIR|\/tmp/);
    // The detail is ours, on stderr.
    await listener.until(() => new RegExp(`rejected 500 .*${delivery.id}.*could not save .*the save directory .* is no longer a directory`).test(listener.stderr()));
    rmSync(dir);
    mkdirSync(dir, { mode: 0o700 });
    const again = await post(listener.url, delivery.headers, delivery.body);
    expect(again.status).toBe(200);
    expect(JSON.parse(again.body)).toMatchObject({ duplicate: false });
    expect(readdirSync(dir)).toEqual([`${delivery.id}.http`]);
    const third = await post(listener.url, delivery.headers, delivery.body);
    expect(JSON.parse(third.body)).toMatchObject({ duplicate: true });
    await listener.waitFor(2);
    expect(listener.lines.map((l) => l.duplicate)).toEqual([false, true]);
    // A redelivery arriving while the first copy is being saved waits for it: one saved, one duplicate.
    const pairs = Array.from({ length: 10 }, (_, n) => buildDelivery({ event: 'watch', payload: { action: 'started', n }, contentType: 'json' }));
    const answers = await Promise.all(pairs.flatMap((d) => [post(listener.url, d.headers, d.body), post(listener.url, d.headers, d.body)]));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    for (const d of pairs) {
      const flags = answers.map((a) => JSON.parse(a.body)).filter((a) => a.delivery === d.id).map((a) => a.duplicate);
      expect(flags.sort()).toEqual([false, true]);
    }
    expect(readdirSync(dir)).toHaveLength(11);
    await listener.stop();
  });

  it('saves concurrent deliveries of one id, and ids that sanitise alike, whole and apart', async () => {
    const dir = tempDir('svc-names-');
    const listener = await listen(['--save', dir, '--no-dedupe']);
    const long = 'x'.repeat(120);
    const ids = ['a/b', 'a_b', 'a:b', `${long}1`, `${long}2`, '..', '.hidden'];
    const sent = new Map<string, Buffer>();
    await Promise.all(
      ids.map(async (id, n) => {
        const delivery = buildDelivery({ event: 'star', payload: { action: 'created', n, pad: 'p'.repeat(100_000) }, contentType: 'json', id });
        sent.set(id, delivery.body);
        expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
      }),
    );
    const files = readdirSync(dir);
    expect(files).toHaveLength(ids.length);
    for (const name of files) {
      const saved = parseSaved(name, readFileSync(join(dir, name)));
      const id = saved.rawHeaders[saved.rawHeaders.findIndex((h) => h.toLowerCase() === 'x-service-delivery') + 1] as string;
      expect(saved.body.equals(sent.get(id) as Buffer), name).toBe(true);
    }
    // Ten rounds of twenty concurrent deliveries under one id: each answered one is saved, whole, in a file of its own.
    const sameId = () => readdirSync(dir).filter((name) => name.startsWith('same-id'));
    for (let round = 0; round < 10; round++) {
      const bodies = await Promise.all(
        Array.from({ length: 20 }, async (_, n) => {
          const delivery = buildDelivery({ event: 'star', payload: { action: 'created', round, n, pad: String(n).repeat(200_000) }, contentType: 'json', id: 'same-id' });
          expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
          return delivery.body.toString();
        }),
      );
      const saved = sameId().map((name) => parseSaved(name, readFileSync(join(dir, name))).body.toString());
      for (const body of bodies) expect(saved, `round ${round}`).toContain(body);
    }
    expect(sameId()).toHaveLength(200);
    expect(sameId()).toContain('same-id~200.http');
    expect(readdirSync(dir).filter((name) => !name.endsWith('.http'))).toEqual([]);
    await listener.stop();
  }, 60_000);

  it('keeps saved deliveries private (0600 in 0700) and never writes through a planted link', async () => {
    const parent = tempDir('svc-private-');
    const created = join(parent, 'new', 'deliveries');
    const delivery = buildDelivery({ event: 'watch', payload: { action: 'started' }, contentType: 'json' });
    const first = await listen(['--save', created, '--max-deliveries', '1']);
    expect((await post(first.url, delivery.headers, delivery.body)).status).toBe(200);
    await first.exited;
    expect(statSync(created).mode & 0o777).toBe(0o700);
    expect(statSync(join(parent, 'new')).mode & 0o777).toBe(0o700);
    expect(statSync(join(created, `${delivery.id}.http`)).mode & 0o777).toBe(0o600);

    // Links where a delivery would be written: its final name and the temporary name a pid-based scheme would pick.
    const dir = join(parent, 'planted');
    mkdirSync(dir, { mode: 0o700 });
    const victim = join(parent, 'victim');
    writeFileSync(victim, 'untouched');
    const listener = await listen(['--save', dir, '--max-deliveries', '1']);
    symlinkSync(victim, join(dir, `${delivery.id}.http`));
    symlinkSync(victim, join(dir, `${delivery.id}.http.${listener.pid}.tmp`));
    expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
    await listener.exited;
    expect(readFileSync(victim, 'utf8')).toBe('untouched');
    // The name was taken, by the link: the delivery is saved beside it, and the link left alone.
    expect(lstatSync(join(dir, `${delivery.id}.http`)).isSymbolicLink()).toBe(true);
    const saved = lstatSync(join(dir, `${delivery.id}~2.http`));
    expect(saved.isFile()).toBe(true);
    expect(saved.mode & 0o777).toBe(0o600);

    // An existing directory open to others is made private, and says so.
    const open = tempDir('svc-open-');
    execFileSync('chmod', ['0777', open]);
    const second = await listen(['--save', open, '--max-deliveries', '1']);
    expect(second.stderr()).toMatch(/was open to other users; it is now 0700/);
    expect(statSync(open).mode & 0o777).toBe(0o700);
    expect((await post(second.url, delivery.headers, delivery.body)).status).toBe(200);
    await second.exited;
    expect(statSync(join(open, `${delivery.id}.http`)).mode & 0o777).toBe(0o600);
  });

  it('saves into the directory it checked: a link in its path swapped later sends nothing elsewhere', async () => {
    const root = tempDir('svc-swap-');
    const [real, elsewhere] = [join(root, 'real'), join(root, 'elsewhere')];
    mkdirSync(real, { mode: 0o700 });
    mkdirSync(elsewhere, { mode: 0o755 });
    // --save names a link (as one planted in a shared directory would be), then the link is swapped.
    const named = join(root, 'deliveries');
    symlinkSync(real, named);
    const listener = await listen(['--save', named]);
    const send = (n: number) => {
      const delivery = buildDelivery({ event: 'watch', payload: { action: 'started', n }, contentType: 'json' });
      return post(listener.url, delivery.headers, delivery.body).then((answer) => ({ id: delivery.id, status: answer.status }));
    };
    const first = await send(1);
    rmSync(named);
    symlinkSync(elsewhere, named);
    const second = await send(2);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(readdirSync(real).sort()).toEqual([`${first.id}.http`, `${second.id}.http`].sort());
    // The directory itself moved away and a link or an open directory put in its place: refused, not written to.
    renameSync(real, `${real}.old`);
    symlinkSync(elsewhere, real);
    expect((await send(3)).status).toBe(500);
    rmSync(real);
    mkdirSync(real, { mode: 0o755 });
    expect((await send(4)).status).toBe(500);
    await listener.stop();
    expect(readdirSync(elsewhere)).toEqual([]);
    expect(readdirSync(real)).toEqual([]);
    expect(listener.stderr()).toMatch(new RegExp(`rejected 500 .*the save directory ${real} is a link now`));
    expect(listener.stderr()).toMatch(new RegExp(`rejected 500 .*the save directory ${real} is open to other users now \\(mode 755\\)`));
  });

  it.skipIf(process.getuid?.() !== 0)(`refuses a save directory that belongs to another user (exit 2)${unless(process.getuid?.() === 0, 'needs root')}`, async () => {
    const dir = tempDir('svc-theirs-');
    chownSync(dir, 65534, 65534);
    const result = await runCli(['webhook', 'listen', '--port', '0', '--save', dir], { timeoutMs: 10_000 });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/belongs to user 65534, not to you/);
  });
});

/** A forward target that answers 200 and then a body without end, until the client goes away. */
async function endlessTarget() {
  let sent = 0;
  let closed: () => void = () => {};
  const firstClosed = new Promise<void>((resolve) => (closed = resolve));
  const server = await startScriptedServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    const chunk = Buffer.alloc(64 * 1024, `${ESC}]0;title${'\u0007'}endless `);
    const pump = () => {
      while (!response.destroyed && response.write(chunk)) sent += chunk.length;
    };
    response.on('drain', pump);
    response.socket?.once('close', closed);
    pump();
  });
  return { server, firstClosed, sent: () => sent };
}

describe('bounded reads and a bounded forward queue', () => {
  it('reads only what it shows of an endless forward answer, and prints it inert', async () => {
    const target = await endlessTarget();
    try {
      const listener = await listenHuman(['--forward-to', `${target.server.port}/in`, '--forward-timeout', '300']);
      const delivery = buildDelivery({ event: 'watch', payload: { action: 'started' }, contentType: 'json' });
      expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
      await listener.until(() => new RegExp(`→ http://localhost:\\d+/in 200 in \\d+ ms for ${delivery.id}: `).test(listener.stderr()));
      await target.firstClosed;
      // Read to its end, the answer would be hundreds of MB by the forward timeout; left unread, the
      // target can send no more than the sockets' buffers hold.
      expect(target.sent()).toBeLessThan(32 * 1024 * 1024);
      expect(listener.stderr()).not.toContain(ESC);
      expect(listener.stderr()).toContain('\\x1b]0;title\\x07endless');
    } finally {
      await target.server.close();
    }
  });

  it('sends the user and password of a forward URL as Basic credentials, and prints neither them nor a token', async () => {
    const target = await startScriptedServer((_request, response) => response.writeHead(200).end('ok'));
    try {
      const forwardTo = `http://alice:pa%40ss@127.0.0.1:${target.port}/hook?token=QTOKEN`;
      const listener = await listen(['--secret', SECRET, '--forward-to', forwardTo, '--max-deliveries', '1']);
      const delivery = buildDelivery({ event: 'watch', payload: { action: 'started' }, contentType: 'json', secret: SECRET });
      expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
      expect(await listener.exited).toBe(0);
      expect(target.requests[0]?.url).toBe('/hook?token=QTOKEN');
      expect(target.requests[0]?.headers.authorization).toBe(`Basic ${Buffer.from('alice:pa@ss').toString('base64')}`);
      expect(listener.stderr()).toMatch(/→ http:\/\/REDACTED@127\.0\.0\.1:\d+\/hook\?token=\[REDACTED\] 200/);
      expect(listener.stderr()).not.toMatch(/pa%40ss|QTOKEN/);
      const send = await runCli(['webhook', 'send', '--url', forwardTo.replace(String(target.port), '1'), '--event', 'ping']);
      expect(send.code).toBe(8);
      expect(send.stderr).toMatch(/could not deliver to http:\/\/REDACTED@127\.0\.0\.1:1\//);
      expect(send.stderr).not.toMatch(/pa%40ss|QTOKEN/);
    } finally {
      await target.close();
    }
  });

  it('`webhook send` shows the start of an endless answer and stops reading', async () => {
    const target = await endlessTarget();
    try {
      const result = await runCli(['webhook', 'send', '--url', `${target.server.url}/`, '--event', 'watch', '--action', 'started'], { timeoutMs: 10_000 });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/sent watch\.started \S+: 200 in \d+ ms .*endless/);
      expect(result.stdout).not.toContain(ESC);
      expect(result.stdout.length).toBeLessThan(400);
    } finally {
      await target.server.close();
    }
  });

  it('`webhook send` gives up on an answer that trickles in at --timeout, whole exchange and all', async () => {
    // The status line, then a byte every 200 ms for as long as the client listens: the preview's 480 bytes take 96 s.
    const target = createServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n');
        // eslint-disable-next-line no-restricted-syntax -- a sender's pace, not a wait: it trickles past --timeout
        const drip = setInterval(() => socket.write('.'), 200);
        socket.on('close', () => clearInterval(drip));
      });
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    try {
      const port = (target.address() as AddressInfo).port;
      // A full collection every 100 ms, as a long wait sees them now and then: a timeout signal
      // inside AbortSignal.any was collected on Node 20, and never fired.
      const collecting = ['--expose-gc', '--import', 'data:text/javascript,setInterval(() => globalThis.gc(), 100).unref()'];
      const child = spawn(process.execPath, [...collecting, BIN, 'webhook', 'send', '--url', String(port), '--event', 'ping', '--timeout', '1'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).toBe(0);
      expect(stdout).toMatch(/sent ping \S+: 200 in \d+ ms \.+/);
    } finally {
      await new Promise((resolve) => target.close(resolve));
    }
  }, 30_000);

  it('`webhook send --payload` from a FIFO nobody writes to ends at Ctrl-C with 130, and reads one that is written', async () => {
    const fifo = join(tempDir('svc-fifo-'), 'payload');
    execFileSync('mkfifo', [fifo]);
    const child = spawn(process.execPath, [BIN, 'webhook', 'send', '--url', '1', '--event', 'ping', '--payload', fifo], { stdio: 'ignore' });
    children.push(child);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    // Once it waits on the FIFO, Ctrl-C: an open for writing returns when a reader has it open. The
    // writer writes nothing, so the program still waits for data that never comes.
    const writer = await open(fifo, 'w');
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    await writer.close();
    const target = await startScriptedServer((_request, response) => response.writeHead(202).end());
    try {
      const written = spawn(process.execPath, [BIN, 'webhook', 'send', '--url', String(target.port), '--event', 'ping', '--payload', fifo], { stdio: 'ignore' });
      children.push(written);
      writeFileSync(fifo, '{"zen":"through a FIFO"}');
      expect(await new Promise((resolve) => written.once('exit', resolve))).toBe(0);
      expect(target.requests[0]?.body).toBe('{"zen":"through a FIFO"}');
    } finally {
      await target.close();
    }
  });

  it('`webhook send` to a target that never answers says it took longer than --timeout, not that nothing listens', async () => {
    const target = await startScriptedServer(() => {}); // takes the request, never answers
    try {
      const result = await runCli(['webhook', 'send', '--url', String(target.port), '--event', 'ping', '--timeout', '0.2']);
      expect(result.code).toBe(8);
      expect(result.stderr).toMatch(/no answer within 200 ms\nhint: the receiver took longer than --timeout to answer/);
    } finally {
      await target.close();
    }
  });

  it('`webhook send` reports the status of an answer cut before its body, not an unreachable receiver', async () => {
    // The status line and headers, then the connection ends: none of the 10 bytes announced.
    const target = createServer((socket) => {
      socket.on('data', () => socket.end('HTTP/1.1 202 Accepted\r\nContent-Length: 10\r\n\r\n'));
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    try {
      const port = (target.address() as AddressInfo).port;
      const result = await runCli(['webhook', 'send', '--url', String(port), '--event', 'ping']);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/: 202 in \d+ ms/);
    } finally {
      await new Promise((resolve) => target.close(resolve));
    }
  });

  it('holds at most --forward-queue deliveries for a target far behind, and keeps answering and saving every one', async () => {
    const held: (() => void)[] = [];
    const { changed: arrived, until: untilHeld } = changes();
    const target = await startScriptedServer((_request, response) => {
      held.push(() => response.writeHead(204).end());
      arrived();
    });
    const dir = tempDir('svc-queue-');
    try {
      const listener = await listen(['--save', dir, '--forward-to', `${target.port}/`, '--forward-queue', '2', '--forward-concurrency', '1', '--forward-timeout', '300']);
      const deliveries = Array.from({ length: 6 }, (_, n) => buildDelivery({ event: 'star', payload: { action: 'created', n }, contentType: 'json' }));
      for (const delivery of deliveries) expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
      await listener.waitFor(6);
      await listener.until(() => listener.stderr().includes(`queue full): ${deliveries[5]?.id}`));
      expect(readdirSync(dir).filter((name) => name.endsWith('.http'))).toHaveLength(6);
      // One is being forwarded, two wait for the slot: the other three are named as not forwarded.
      for (const delivery of deliveries.slice(3)) expect(listener.stderr()).toContain(`not forwarded (queue full): ${delivery.id}, saved in ${dir}`);
      // The app has not answered: never the forwarder blamed. The app is, once its forward has waited 250 ms; before, too soon to tell.
      expect(listener.stderr()).toMatch(
        /the forward queue is full \(2 deliveries wait, --forward-queue\).*has answered none of the 1 forwards under way(, the first for \d+ ms: your app is the bottleneck| yet, the first sent \d+ ms ago: too soon to tell[^\n]*)\n/,
      );
      for (const delivery of deliveries.slice(0, 3)) expect(listener.stderr()).not.toContain(`queue full): ${delivery.id}`);
      while (target.requests.length < 3 || held.length > 0) {
        const next = held.shift();
        if (next) next();
        else await untilHeld(() => held.length > 0);
      }
      expect(target.requests.map((r) => JSON.parse(r.body).n)).toEqual([0, 1, 2]);
      await listener.stop();
      expect(listener.stderr()).toMatch(/the forward queue to \S+ emptied; 3 deliveries were not forwarded/);
      expect(listener.stderr()).toMatch(/forwards delivered 3, failed 0, retried 0, not forwarded 3/);
    } finally {
      await target.close();
    }
  });
});

describe('nothing in a payload drives the terminal or the receiver', () => {
  it('replaces control characters from deliveries in the printed lines', async () => {
    const listener = await listenHuman(['--secret', SECRET]);
    const evil = `${ESC}]0;pwned${'\u0007'}${ESC}[2J`;
    const payload = { action: `deploy${evil}`, branch: 'main', client_payload: null, installation: {}, repository: { full_name: `octo/${evil}x` }, sender: {} };
    const delivery = buildDelivery({ event: 'repository_dispatch', payload, contentType: 'json', secret: SECRET });
    expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
    // The server refuses C0 controls in headers, but a byte from 0x80 arrives as a C1 control (0x9b is CSI).
    const raw = Buffer.concat([
      Buffer.from('POST / HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 2\r\n', 'latin1'),
      Buffer.from('x-service-event: push\x9b31m\r\nx-service-delivery: id\x9b2J\r\n\r\n{}', 'latin1'),
    ]);
    const answered = await new Promise<string>((resolve) => {
      let text = '';
      const socket = connect(Number(new URL(listener.url).port), '127.0.0.1', () => socket.end(raw));
      socket.setEncoding('latin1').on('data', (chunk: string) => (text += chunk));
      socket.on('close', () => resolve(text));
    });
    expect(answered).toMatch(/^HTTP\/1\.1 (401|404)/);
    await listener.until(() => listener.lines().length === 1 && /rejected 40[14]/.test(listener.stderr()));
    expect(listener.stdout()).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(listener.stderr()).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(listener.lines()[0]).toContain('repository_dispatch.deploy\\x1b]0;pwned\\x07\\x1b[2J');
    expect(listener.lines()[0]).toContain('octo/\\x1b]0;pwned');
  });

  it('writes the C1 controls of a header as escapes in --json lines', async () => {
    const listener = await listenHuman(['--secret', SECRET, '--json']);
    const body = '{"zen":"hi","hook_id":1}';
    const head = [
      'POST / HTTP/1.1',
      'host: localhost',
      'content-type: application/json',
      `content-length: ${body.length}`,
      'x-service-event: ping',
      'x-service-delivery: id-\x9b31m\x85',
      `x-hub-signature-256: ${sign(Buffer.from(body), SECRET)}`,
      'connection: close',
    ].join('\r\n');
    const answered = await new Promise<string>((resolve) => {
      let text = '';
      const socket = connect(Number(new URL(listener.url).port), '127.0.0.1', () => socket.end(Buffer.from(`${head}\r\n\r\n${body}`, 'latin1')));
      socket.setEncoding('latin1').on('data', (chunk: string) => (text += chunk));
      socket.on('close', () => resolve(text));
    });
    expect(answered).toMatch(/^HTTP\/1\.1 200/);
    await listener.until(() => listener.lines().length === 1);
    expect(listener.stdout()).not.toMatch(/[\u007f-\u009f]/);
    expect(listener.stdout()).toContain('"delivery":"id-\\u009b31m\\u0085"');
    // The same value for a script: the escapes read back as the characters received.
    expect(JSON.parse(listener.lines()[0] as string).delivery).toBe('id-\u009b31m\u0085');
  });

  it('prints each payload in --json lines exactly as it came, however deep, on one line', async () => {
    const listener = await listenHuman(['--secret', SECRET, '--json']);
    const deep = signed('ping', `{"zen":"deep","hook_id":1,"nest":${'['.repeat(200_000)}${']'.repeat(200_000)}}`);
    const exact = signed('ping', '{\n  "zen": "exact",\n  "hook_id": 12345678901234567890123,\r\n  "ratio": 1.10,\n  "text": "a\\nb \u2028"\n}');
    for (const delivery of [deep, exact]) expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
    await listener.until(() => listener.lines().length === 2);
    const [deepLine, exactLine] = listener.lines() as [string, string];
    expect(deepLine.length).toBeGreaterThan(400_000);
    expect(JSON.parse(deepLine)).toMatchObject({ delivery: deep.id, warnings: [] });
    // The numbers as they were written (a parse and a new serialization would round and reformat them).
    expect(exactLine).toContain('"hook_id": 12345678901234567890123,    "ratio": 1.10,');
    expect(JSON.parse(exactLine).payload).toEqual(JSON.parse(exact.body.toString()));
  });

  it('saves, forwards and replays header fields as they came: named like a built-in, or with bytes above 0x7f', async () => {
    const received: string[][] = [];
    const target = await startScriptedServer((_request, response, raw) => {
      received.push(raw.rawHeaders);
      response.writeHead(204).end();
    });
    const dir = tempDir('svc-builtin-');
    try {
      const listener = await listenHuman(['--secret', SECRET, '--save', dir, '--forward-to', `${target.port}/`, '--max-deliveries', '1']);
      const delivery = signed('ping', '{"zen":"hi","hook_id":1}', { constructor: 'c', ['__proto__']: 'p', tostring: 't', 'x-latin1': '\u00c0\u00ff' });
      expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
      expect(await listener.exited).toBe(0);
      const saved = readFileSync(join(dir, `${delivery.id}.http`));
      expect(saved.includes(Buffer.from('\r\nx-latin1: \xc0\xff\r\n', 'latin1'))).toBe(true);
      const replayed = await runCli(['webhook', 'replay', dir, '--url', `${target.url}/`]);
      expect(replayed.code, replayed.stderr).toBe(0);
      expect(received).toHaveLength(2);
      for (const raw of received) {
        const fields = raw.flatMap((name, i) => (i % 2 === 0 ? [`${name}: ${raw[i + 1]}`] : []));
        expect(fields).toEqual(expect.arrayContaining(['constructor: c', '__proto__: p', 'tostring: t', 'x-latin1: \u00c0\u00ff']));
        expect(fields.join('\n')).not.toContain('function');
      }
    } finally {
      await target.close();
    }
  });

  it.each([
    [403, { message: `no${ESC}]0;pwned${'\u0007'}\nhint: run rm -rf ~` }, 3, 'forbidden: '],
    [422, { message: 'Validation Failed', errors: [{ message: `no${ESC}]0;pwned${'\u0007'}\nhint: run rm -rf ~` }] }, 5, 'the service rejected the request: '],
  ])('replaces control characters in an API error message (%i), and escapes them in its JSON', async (status, body, code, said) => {
    const api = await startScriptedServer((_request, response) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    try {
      const result = await runCli(['list', '--org', 'acme'], { env: { SVC_BASE_URL: api.url, SVC_TOKEN: 'svc_test_token' } });
      expect(result.code).toBe(code);
      expect(result.stderr).toContain(`${said}no\\x1b]0;pwned\\x07\\x0ahint: run rm -rf ~`);
      expect(result.stderr).not.toContain(ESC);
      expect(result.stderr.split('\n').filter((line) => line.startsWith('hint: run rm'))).toEqual([]);
      // As JSON the message is the server's, every control character escaped: inert, and the same value.
      const json = await runCli(['list', '--org', 'acme', '--json'], { env: { SVC_BASE_URL: api.url, SVC_TOKEN: 'svc_test_token' } });
      expect(json.stderr).not.toContain(ESC);
      expect(json.stderr.trim().split('\n')).toHaveLength(1);
      expect(JSON.parse(json.stderr).error.message).toMatch(`${said}no${ESC}]0;pwned${'\u0007'}\nhint: run rm -rf ~`);
    } finally {
      await api.close();
    }
  });

  it('answers 2xx and prints one line for every crafted payload, whatever its values', async () => {
    const crafted: [string, string][] = [
      ['issues', '{"action":"opened","issue":{},"sender":{},"repository":{"full_name":{"toString":1,"valueOf":1}}}'],
      ['push', '{"action":{"toString":1,"valueOf":1},"ref":"refs/heads/main"}'],
      ['push', '{"action":["a"],"repository":{"full_name":["x"]}}'],
      ['issues', '{"action":{"toString":1},"repository":null}'],
      ['issues', '{"action":1e999,"repository":"octo/widgets","sender":[]}'],
      ['constructor', '{"action":"x"}'],
      ['__proto__', '{"__proto__":{"action":"y"},"constructor":{"prototype":1}}'],
      ['toString', '{"repository":{"full_name":"octo/w","__proto__":{"full_name":{}}}}'],
      ['hasOwnProperty', '{"hasOwnProperty":1,"action":"z"}'],
    ];
    for (const json of [false, true]) {
      const listener = json ? await listen(['--secret', SECRET]) : await listenHuman(['--secret', SECRET]);
      for (const [event, body] of crafted) {
        const delivery = signed(event, body);
        const answer = await post(listener.url, delivery.headers, delivery.body);
        expect(answer.status, `${event} ${body}`).toBe(200);
      }
      if ('waitFor' in listener) {
        await listener.waitFor(crafted.length);
        expect(listener.lines.map((l) => l.event)).toEqual(crafted.map(([event]) => event));
        expect(listener.lines[0]?.repository).toBeNull();
        expect(listener.lines[1]?.warnings).toContain('"push" carries no action, but this payload has action an object');
        await listener.stop();
        expect(listener.stderr()).not.toMatch(/could not print|cannot be printed|unexpected/);
      } else {
        await listener.until(() => listener.lines().length >= crafted.length);
        expect(listener.lines()).toHaveLength(crafted.length);
        expect(listener.stderr()).not.toMatch(/could not print|cannot be printed|unexpected|rejected/);
      }
    }
  });
});

/** Opens a connection and completes one keep-alive request on it: the server has surely counted it. */
function openConnection(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nhost: localhost\r\n\r\n'));
    socket.once('data', (chunk) => (/^HTTP\/1\.1 405/.test(chunk.toString()) ? resolve(socket) : reject(new Error(chunk.toString()))));
    socket.once('error', reject);
  });
}

/**
 * Sends each delivery on a connection of its own so that the receiver reads their ends in one turn:
 * every head first (waiting for each "100 Continue", so every request is being read), then all but
 * the last byte of each body, then every last byte at once. The final status of each answer.
 */
async function arriveTogether(
  port: number,
  deliveries: { headers: Record<string, string>; body: Buffer }[],
  /** The receiver's end, if it may end first (its process exits): the waits stop there. */
  receiverGone: Promise<unknown> = new Promise(() => {}),
): Promise<string[]> {
  let gone = false;
  const { changed, until } = changes();
  void receiverGone.then(() => {
    gone = true;
    changed();
  });
  const sockets = deliveries.map(({ headers, body }) => {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    let answer = '';
    let closed = false;
    socket.on('close', () => {
      closed = true;
      changed();
    });
    socket.setEncoding('latin1').on('data', (chunk: string) => {
      answer += chunk;
      changed();
    });
    const head = Object.entries({ ...headers, expect: '100-continue' }).map(([name, value]) => `${name}: ${value}`).join('\r\n');
    socket.on('connect', () => socket.write(`POST / HTTP/1.1\r\nhost: localhost\r\n${head}\r\n\r\n`));
    const status = () => /^HTTP\/1\.1 (?!100)(\d+)/m.exec(answer)?.[1] ?? (closed ? 'closed' : undefined);
    return { socket, body, continued: () => answer.startsWith('HTTP/1.1 100') || closed, status };
  });
  await until(() => sockets.every(({ continued }) => continued()) || gone);
  await Promise.all(sockets.map(({ socket, body }) => new Promise((resolve) => socket.write(body.subarray(0, -1), resolve))));
  for (const { socket, body } of sockets) socket.write(body.subarray(-1));
  await until(() => sockets.every(({ status }) => status() !== undefined) || gone);
  for (const { socket } of sockets) socket.destroy();
  return sockets.map(({ status }) => status() ?? 'none');
}

describe('bounded per connection and in connections', () => {
  it('answers 413 to a form whose decoded payload is over 25 MB, though its body is under the form limit', async () => {
    const listener = await listen(['--secret', SECRET]);
    const payload = `{"action":"created","pad":"${'x'.repeat(26 * 1024 * 1024)}"}`;
    const delivery = signed('star', `payload=${payload}`, { 'content-type': 'application/x-www-form-urlencoded' }, 'form');
    const answer = await post(listener.url, delivery.headers, delivery.body).catch((error: NodeJS.ErrnoException) => ({ status: -1, body: error.code ?? '' }));
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body).error).toMatch(/decoded payload is over the 25 MB/);
    await listener.stop();
    expect(listener.lines).toEqual([]);
  });

  it('answers 413 to a chunked body whose framing outweighs its data, before any signature is checked', async () => {
    const listener = await listen(['--secret', SECRET]);
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      const socket = connect(Number(new URL(listener.url).port), '127.0.0.1', () => {
        socket.write('POST / HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n');
        socket.write('1\r\n{\r\n'.repeat(50_000));
      });
      socket.on('error', () => {});
      socket.setEncoding('latin1').on('data', (chunk: string) => (text += chunk));
      socket.on('close', () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 413 .*chunk sizes and extensions outweigh the data/s);
    await listener.stop();
  });

  it('decodes only the payload field of a form: millions of empty fields beside it fit a small heap', async () => {
    const child = spawn(process.execPath, ['--max-old-space-size=160', BIN, 'webhook', 'listen', '--port', '0', '--secret', SECRET, '--json'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SVC_WEBHOOK_SECRET: '' },
    });
    children.push(child);
    const output = outputOf(child);
    await output.until(() => /listening on http/.test(output.stderr()) || output.ended());
    const url = /listening on (http:\/\/\S+?)(,|\s|$)/.exec(output.stderr())?.[1] as string;
    // 15 million fields: as URLSearchParams entries, far more than 160 MB of heap.
    const form = `payload=${encodeURIComponent('{"action":"created"}')}&${'a&'.repeat(15_000_000)}`;
    const delivery = signed('star', form, { 'content-type': 'application/x-www-form-urlencoded' }, 'form');
    const answer = await post(url, delivery.headers, delivery.body).catch((error: Error) => ({ status: -1, body: error.message }));
    expect(answer.status, output.stderr()).toBe(200);
    await output.until(() => output.stdout().includes('\n'));
    expect(JSON.parse(output.stdout()).payload).toEqual({ action: 'created' });
  }, 30_000);

  it('refuses deliveries (503) while its output is not being read, and prints every one it answered 200 once it is', async () => {
    const child = spawn(process.execPath, [BIN, 'webhook', 'listen', '--port', '0', '--json'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SVC_WEBHOOK_SECRET: '' },
    });
    children.push(child);
    // Nobody reads stdout (yet): each 1 MB line waits in the receiver's memory.
    const output = outputOf(child, { stdout: false });
    await output.until(() => /listening on http/.test(output.stderr()));
    const url = /listening on (http:\/\/\S+?)(,|\s|$)/.exec(output.stderr())?.[1] as string;
    const statuses: number[] = [];
    for (let n = 0; n < 40 && !statuses.includes(503); n++) {
      const delivery = buildDelivery({ event: 'watch', payload: { action: 'started', n, pad: 'p'.repeat(1024 * 1024) }, contentType: 'json' });
      statuses.push((await post(url, delivery.headers, delivery.body)).status);
    }
    expect(statuses.at(-1), statuses.join()).toBe(503);
    expect(statuses.slice(0, -1).every((status) => status === 200)).toBe(true);
    // Read at last: every delivery answered 200 is there, and the receiver takes deliveries again.
    output.readStdout();
    const lines = () => output.stdout().split('\n').filter(Boolean).length;
    await output.until(() => lines() === statuses.length - 1);
    const after = buildDelivery({ event: 'watch', payload: { action: 'started' }, contentType: 'json' });
    expect((await post(url, after.headers, after.body)).status).toBe(200);
    await output.until(() => lines() === statuses.length);
    expect(output.stderr()).toMatch(/rejected 503 POST \/ watch .*output is not being read/);
  }, 90_000);

  it('holds at most 250 MiB of bodies over all connections: beyond, 503 (or the connection dropped), and it serves again after', async () => {
    const listener = await listen(['--secret', SECRET]);
    const port = Number(new URL(listener.url).port);
    // Five form bodies of 74 MiB (the form limit is 75 MB), each held one byte short of its end
    // until all of them have been sent: 370 MiB at once, more than can be held.
    const size = 74 * 1024 * 1024;
    const part = Buffer.alloc(size - 1, 0x61);
    const sockets = Array.from({ length: 5 }, () => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      let answer = '';
      socket.setEncoding('latin1').on('data', (chunk: string) => {
        answer += chunk;
        // A request answered is done with: 401 would keep the connection open.
        if (answer.includes('\r\n\r\n')) socket.end();
      });
      const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(answer)));
      const sent = new Promise<void>((resolve) => {
        socket.on('connect', () => {
          socket.write(`POST / HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: ${size}\r\n\r\n`);
          socket.write(part, () => resolve());
        });
        socket.on('close', () => resolve());
      });
      return { socket, sent, closed };
    });
    await Promise.all(sockets.map(({ sent }) => sent));
    for (const { socket } of sockets) if (!socket.destroyed) socket.write('a');
    const statuses = (await Promise.all(sockets.map(({ closed }) => closed))).map((answer) => /^HTTP\/1\.1 (\d+)/.exec(answer)?.[1] ?? 'dropped');
    // Bodies held to their end are unsigned: 401. At least one was refused for memory.
    expect(statuses.filter((status) => status === '401').length, statuses.join()).toBeLessThan(5);
    expect(statuses.every((status) => ['401', '503', 'dropped'].includes(status)), statuses.join()).toBe(true);
    // Only a body held whole reaches its signature check (401): three of 74 MiB fit in 250 MiB, four do not.
    expect(statuses.filter((status) => status === '401').length, statuses.join()).toBeLessThanOrEqual(3);
    // Everything was given back: a delivery is served again.
    const delivery = buildDelivery({ event: 'watch', payload: { action: 'started' }, contentType: 'json', secret: SECRET });
    expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
    await listener.stop();
    expect(listener.stderr()).toMatch(/rejected 503 POST \/: the receiver holds as many bodies as it can at once/);
  }, 60_000);

  it('keeps no parsed payload while deliveries wait: payloads that parse to many times their bytes, arriving at once, fit a small heap', async () => {
    // Each body (2.3 MB) parses to some 50 MB of objects (an empty object takes 56 bytes on a heap
    // without pointer compression): one fits 160 MB of heap with room, three held at once would not.
    const child = spawn(process.execPath, ['--max-old-space-size=160', BIN, 'webhook', 'listen', '--port', '0', '--secret', SECRET], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, SVC_WEBHOOK_SECRET: '' },
    });
    children.push(child);
    const output = outputOf(child, { stdout: false });
    await output.until(() => /listening on http/.test(output.stderr()) || output.ended());
    const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output.stderr())?.[1]);
    const body = Buffer.from(`{"action":"created","a":[${'{},'.repeat(750_000)}{}]}`);
    const statuses = await arriveTogether(port, Array.from({ length: 6 }, () => signed('star', body)), output.exited);
    expect(child.exitCode, output.stderr()).toBeNull();
    expect(statuses).toEqual(Array(6).fill('200'));
  }, 30_000);

  it('--max-deliveries answers 2xx to no more than it takes: the rest of a burst gets 503, to be delivered again', async () => {
    const listener = await listen(['--secret', SECRET, '--max-deliveries', '1']);
    const deliveries = [0, 1, 2].map((n) => signed('watch', JSON.stringify({ action: 'started', n })));
    const statuses = await arriveTogether(Number(new URL(listener.url).port), deliveries);
    expect(statuses.sort(), listener.stderr()).toEqual(['200', '503', '503']);
    expect(await listener.exited).toBe(0);
    expect(listener.lines).toHaveLength(1);
    expect(listener.stderr()).toMatch(/rejected 503 POST \/ watch .*takes no more deliveries \(--max-deliveries\)/);
  });

  it('Ctrl-C with a body half sent ends at once and reports no rejection of its own making', async () => {
    const listener = await listen(['--secret', SECRET]);
    const socket = connect(Number(new URL(listener.url).port), '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.on('connect', () => socket.write('POST / HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"a', () => resolve())));
    // A round trip on another connection: by its end the receiver has read the half-sent body.
    const delivery = buildDelivery({ event: 'watch', payload: { action: 'started' }, contentType: 'json', secret: SECRET });
    expect((await post(listener.url, delivery.headers, delivery.body)).status).toBe(200);
    expect(await listener.stop()).toBe(130);
    // What the stopping receiver might still say about the half-sent body comes within a few turns.
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(listener.stderr()).toMatch(/received 1/);
    expect(listener.stderr()).not.toMatch(/rejected \d{3} /);
    socket.destroy();
  });

  it('ends on SIGTERM or SIGHUP as on Ctrl-C: the save under way finishes, the summary is printed, exit 143 or 129', async () => {
    for (const [signal, code] of [['SIGTERM', 143], ['SIGHUP', 129]] as const) {
      const dir = tempDir('svc-term-');
      const listener = await listen(['--save', dir], { spawn: true });
      const delivery = buildDelivery({ event: 'watch', payload: { action: 'started', pad: 'p'.repeat(8 * 1024 * 1024) }, contentType: 'json' });
      const answered = post(listener.url, delivery.headers, delivery.body);
      await untilInDirectory(dir, () => readdirSync(dir).length > 0);
      process.kill(listener.pid, signal);
      expect((await answered).status, signal).toBe(200);
      expect(await listener.exited, signal).toBe(code);
      expect(listener.stderr(), signal).toMatch(/received 1, /);
      // Its --json error line says the same code as the process.
      expect(JSON.parse(listener.stderr().trim().split('\n').at(-1) as string), signal).toEqual({ error: { code, status: null, message: 'interrupted' } });
      expect(readdirSync(dir), signal).toEqual([`${delivery.id}.http`]);
    }
  });

  it('closes connections beyond --max-connections on arrival, and says so', async () => {
    const listener = await listen(['--max-connections', '2']);
    const port = Number(new URL(listener.url).port);
    const first = await openConnection(port);
    const second = await openConnection(port);
    const extra = () =>
      new Promise<string>((resolve) => {
        let answer = '';
        const socket = connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nhost: localhost\r\n\r\n'));
        socket.on('data', (chunk) => (answer += chunk.toString()));
        socket.on('error', () => {});
        socket.on('close', () => resolve(answer));
      });
    expect(await extra()).toBe('');
    await listener.until(() => /2 connections are open: closed 1 more on arrival \(--max-connections\)/.test(listener.stderr()));
    // Within the next ten seconds no line each, but every one is told: at the end of them, and in the summary.
    expect(await Promise.all([extra(), extra(), extra()])).toEqual(['', '', '']);
    const told = () => [...listener.stderr().matchAll(/closed (\d+) more on arrival/g)].reduce((sum, match) => sum + Number(match[1]), 0);
    await listener.until(() => told() === 4);
    first.destroy();
    second.destroy();
    await listener.stop();
    expect(listener.stderr()).toMatch(/connections closed on arrival 4/);
  });
});

describe('replay trusts no file', () => {
  it('skips FIFOs, links, oversized, malformed and hand-broken files, one at a time, sends the rest, and exits 2', async () => {
    const first = tempDir('svc-replay-');
    const source = await listen(['--save', first, '--max-deliveries', '2']);
    const good = [0, 1].map((n) => buildDelivery({ event: 'star', payload: { action: 'created', n }, contentType: 'json' }));
    for (const delivery of good) expect((await post(source.url, delivery.headers, delivery.body)).status).toBe(200);
    await source.exited;
    execFileSync('mkfifo', [join(first, 'fifo.http')]);
    symlinkSync('/dev/zero', join(first, 'zero.http'));
    symlinkSync(join(first, `${good[0]?.id}.http`), join(first, 'link.http'));
    writeFileSync(join(first, 'broken.http'), '# svc-migrate delivery; received 2020-01-01T00:00:00.000Z; sequence 1\r\nnot a request line');
    writeFileSync(join(first, 'huge.http'), '# svc-migrate delivery; received 2020-01-01T00:00:00.000Z; sequence 2\r\n');
    truncateSync(join(first, 'huge.http'), 200 * 1024 * 1024);
    // Saved files edited afterwards into what no receiver could have saved: each would fail the send.
    const saved = readFileSync(join(first, `${good[1]?.id}.http`), 'latin1');
    writeFileSync(join(first, 'short.http'), saved.slice(0, -3), 'latin1');
    writeFileSync(join(first, 'nul.http'), saved.replace('\r\n\r\n', '\r\nx-tab: a\u0000b\r\n\r\n'), 'latin1');
    writeFileSync(join(first, 'spaced.http'), saved.replace('\r\n\r\n', '\r\nbad name: x\r\n\r\n'), 'latin1');
    writeFileSync(join(first, 'get.http'), saved.replace('POST / ', 'GET / '), 'latin1');
    // A name that is not UTF-8 is still a file to send.
    const third = buildDelivery({ event: 'star', payload: { action: 'created', n: 2 }, contentType: 'json' });
    writeFileSync(Buffer.from([...Buffer.from(`${first}/third-`), 0xff, ...Buffer.from('.http')]), saved.replaceAll(good[1]?.id as string, third.id), 'latin1');
    const target = await listen(['--max-deliveries', '3']);
    const result = await runCli(['webhook', 'replay', first, '--url', target.url, '--json'], { timeoutMs: 15_000 });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/9 of 12 files were skipped/);
    const outcomes = JSON.parse(result.stdout) as { file: string; status: number | null; skipped?: boolean; error?: string }[];
    const byFile = Object.fromEntries(outcomes.map((o) => [o.file, o]));
    expect(byFile['fifo.http']).toMatchObject({ skipped: true, error: 'not a regular file' });
    expect(byFile['zero.http']).toMatchObject({ skipped: true, error: 'a symbolic link, not a file' });
    expect(byFile['link.http']).toMatchObject({ skipped: true, error: 'a symbolic link, not a file' });
    expect(byFile['broken.http']).toMatchObject({ skipped: true, error: expect.stringMatching(/not a saved delivery/) });
    expect(byFile['huge.http']).toMatchObject({ skipped: true, error: expect.stringMatching(/more than any delivery/) });
    expect(byFile['short.http']).toMatchObject({ skipped: true, error: expect.stringMatching(/Content-Length does not match its body/) });
    for (const file of ['nul.http', 'spaced.http']) expect(byFile[file]).toMatchObject({ skipped: true, error: expect.stringMatching(/malformed header line/) });
    expect(byFile['get.http']).toMatchObject({ skipped: true, error: expect.stringMatching(/a GET request; deliveries are POSTs/) });
    for (const delivery of good) expect(byFile[`${delivery.id}.http`]).toMatchObject({ status: 200 });
    expect(byFile['third-\ufffd.http']).toMatchObject({ status: 200 });
    expect(await target.exited).toBe(0);
    expect(target.lines.map((l) => l.delivery).sort()).toEqual([...good, third].map((d) => d.id).sort());
    expect(existsSync(join(first, 'fifo.http'))).toBe(true);
  }, 30_000);
});

describe('DNS rebinding', () => {
  const hostPost = (url: string, host: string, body: Buffer, headers: Record<string, string>) =>
    new Promise<number>((resolve, reject) => {
      const req = request(url, { method: 'POST', headers: { ...headers, host } }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(body);
    });

  it('without a secret, serves only loopback Host names unless --host says otherwise', async () => {
    const delivery = buildDelivery({ event: 'watch', payload: { action: 'started' }, contentType: 'json' });
    const listener = await listen([]);
    const port = new URL(listener.url).port;
    const crafted = ['localhost.', `localhost:${port}@attacker.example`, `localhost:${port}:1`, '[::1', '127.0.0.1 .attacker.example'];
    for (const host of ['attacker.example', `attacker.example:${port}`, `127.0.0.1.nip.io:${port}`, `localhost.attacker.example:${port}`, ...crafted]) {
      expect(await hostPost(listener.url, host, delivery.body, delivery.headers), host).toBe(403);
    }
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, 'LOCALHOST', `[::1]:${port}`, `127.1:${port}`, `[0:0:0:0:0:0:0:1]:${port}`, `[::ffff:127.0.0.1]`]) {
      expect(await hostPost(listener.url, host, delivery.body, { ...delivery.headers, 'x-service-delivery': host }), host).toBe(200);
    }
    await listener.stop();
    expect(listener.stderr()).toMatch(/rejected 403 POST \/ .*Host "attacker\.example" is not this machine/);

    // With a secret, the signature is the defence; beyond loopback, the user chose the exposure.
    const withSecret = await listen(['--secret', SECRET, '--max-deliveries', '1']);
    const signedDelivery = buildDelivery({ event: 'watch', payload: { action: 'started' }, contentType: 'json', secret: SECRET });
    expect(await hostPost(withSecret.url, 'hooks.example.com', signedDelivery.body, signedDelivery.headers)).toBe(200);
    const wide = await listen(['--host', '0.0.0.0', '--max-deliveries', '1']);
    expect(await hostPost(`http://127.0.0.1:${new URL(wide.url).port}/`, 'my-laptop.lan', delivery.body, delivery.headers)).toBe(200);
    expect(await withSecret.exited).toBe(0);
    expect(await wide.exited).toBe(0);
  });

  it('serves a request addressed in absolute form by the URL it names, whatever its Host field says', async () => {
    const listener = await listen([]);
    const port = Number(new URL(listener.url).port);
    const statusOf = (target: string, n: number) =>
      new Promise<string>((resolve) => {
        const delivery = buildDelivery({ event: 'watch', payload: { action: 'started', n }, contentType: 'json' });
        const head = Object.entries(delivery.headers).map(([name, value]) => `${name}: ${value}`).join('\r\n');
        let answer = '';
        const socket = connect(port, '127.0.0.1', () => socket.end(`POST ${target} HTTP/1.1\r\nhost: localhost\r\n${head}\r\n\r\n${delivery.body.toString()}`));
        socket.on('error', () => {});
        socket.setEncoding('latin1').on('data', (chunk: string) => (answer += chunk));
        socket.on('close', () => resolve(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1] ?? 'none'));
      });
    expect(await statusOf(`http://127.0.0.1:${port}/`, 1)).toBe('200');
    expect(await statusOf(`HTTP://localhost:${port}/?x=1`, 2)).toBe('200');
    expect(await statusOf(`http://attacker.example:${port}/`, 3)).toBe('403');
    expect(await statusOf(`http://127.0.0.1:${port}/elsewhere`, 4)).toBe('404');
    expect(await statusOf('*', 5)).toBe('400');
    await listener.stop();
  });

  it('knows loopback in any spelling of --host: 127.1 is checked like 127.0.0.1, and not called beyond loopback', async () => {
    const delivery = buildDelivery({ event: 'watch', payload: { action: 'started' }, contentType: 'json' });
    for (const host of ['127.1', '0:0:0:0:0:0:0:1']) {
      const listener = await listen(['--host', host]);
      expect(await hostPost(listener.url, 'attacker.example', delivery.body, delivery.headers), host).toBe(403);
      await listener.stop();
      expect(listener.stderr(), host).not.toMatch(/beyond loopback/);
    }
  });
});
