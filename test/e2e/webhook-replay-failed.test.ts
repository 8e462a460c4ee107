import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildDelivery } from '../../src/webhook/delivery.js';
import { listen, post } from '../helpers/listener.js';
import { runCli, spawnCli } from '../helpers/run-cli.js';
import { type Handler, startScriptedServer } from '../helpers/scripted-server.js';

// `webhook replay --failed DIR`, `--ids FILE` and several FILE-OR-DIR arguments: the forward journal
// `listen --save DIR --forward-to` keeps (DIR/forwards.jsonl), read as hostile input, and appended to
// by each replay so that a second `--failed` sends only what still failed (docs/cli.md#webhook-replay).

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-replay-failed-'));
const delivery = (n: number) => buildDelivery({ event: 'issues', payload: { action: 'opened', issue: { number: n } }, contentType: 'json' });
type Sent = ReturnType<typeof delivery>;
const numberOf = (body: string) => (JSON.parse(body) as { issue: { number: number } }).issue.number;
/** Answers 500 to the deliveries whose issue number is in `failing`, 200 to the others. */
const failingFor =
  (failing: Set<number>): Handler =>
    (request, response) =>
      response.writeHead(failing.has(numberOf(request.body)) ? 500 : 200).end(failing.has(numberOf(request.body)) ? 'down' : 'ok');
const journalOf = (dir: string) =>
  readFileSync(join(dir, 'forwards.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** A session of five deliveries, the 2nd and 4th of which the app refused. */
async function sessionWithFailures(): Promise<{ dir: string; sent: Sent[]; app: Awaited<ReturnType<typeof startScriptedServer>> }> {
  const app = await startScriptedServer(failingFor(new Set([2, 4])));
  const dir = tempDir();
  const listener = await listen(['--save', dir, '--forward-to', `${app.port}/hooks`, '--forward-concurrency', '1', '--max-deliveries', '5']);
  const sent = [1, 2, 3, 4, 5].map(delivery);
  for (const one of sent) expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
  expect(await listener.exited).toBe(1);
  return { dir, sent, app };
}

describe('the forward journal of listen --save', () => {
  it('records how each delivery\'s forwarding ended, 0600, one line each', async () => {
    const { dir, sent, app } = await sessionWithFailures();
    try {
      expect(statSync(join(dir, 'forwards.jsonl')).mode & 0o777).toBe(0o600);
      expect(journalOf(dir)).toEqual(
        sent.map((one, i) => ({
          file: `${one.id}.http`,
          delivery: one.id,
          outcome: i === 1 || i === 3 ? 'failed' : 'delivered',
          status: i === 1 || i === 3 ? 500 : 200,
          at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          target: `http://localhost:${app.port}/hooks`,
        })),
      );
    } finally {
      await app.close();
    }
  });
});

describe('webhook replay --failed DIR', () => {
  it('sends only the deliveries whose forward last failed, records each outcome, and sends nothing once all were delivered', async () => {
    const { dir, sent, app } = await sessionWithFailures();
    try {
      const url = `http://localhost:${app.port}/hooks`;
      // The app fixed for the 2nd only: the 4th fails again.
      app.script(failingFor(new Set([4])));
      const before = app.requests.length;
      const first = await runCli(['webhook', 'replay', '--failed', dir, '--url', url]);
      expect(first.code, first.stderr).toBe(1);
      expect(app.requests.slice(before).map((request) => numberOf(request.body))).toEqual([2, 4]);
      expect(first.stderr).toContain('1 of 2 deliveries were refused');
      expect(journalOf(dir).slice(5).map(({ file, outcome, status }) => [file, outcome, status])).toEqual([
        [`${sent[1]?.id}.http`, 'delivered', 200],
        [`${sent[3]?.id}.http`, 'failed', 500],
      ]);

      // A second --failed sends only what still failed.
      app.script(failingFor(new Set()));
      const second = await runCli(['webhook', 'replay', '--failed', dir, '--url', url]);
      expect(second.code, second.stderr).toBe(0);
      expect(app.requests.slice(before + 2).map((request) => numberOf(request.body))).toEqual([4]);

      const third = await runCli(['webhook', 'replay', '--failed', dir, '--url', url]);
      expect(third.code, third.stderr).toBe(0);
      expect(third.stdout).toContain(`no delivery in ${dir} waits to be sent again`);
      expect(app.requests).toHaveLength(before + 3);
    } finally {
      await app.close();
    }
  });

  it('reads the journal as hostile input: a path, a link\'s name or a bad line is never a file to send, and is counted', async () => {
    const { dir, sent, app } = await sessionWithFailures();
    try {
      const outside = tempDir();
      const secret = delivery(99);
      writeFileSync(join(outside, 'secret.http'), secret.body);
      const record = (file: string) => `${JSON.stringify({ file, delivery: 'x', outcome: 'failed', status: 500, at: '2026-11-28T00:00:00.000Z', target: 'x' })}\n`;
      const bad = [record(join(outside, 'secret.http')), record('../secret.http'), record('sub/x.http'), '{"file":\n', 'x'.repeat(70_000) + '\n', 'x\n'.repeat(3)];
      appendFileSync(join(dir, 'forwards.jsonl'), bad.join(''));
      // A failed one gone from the directory is named.
      rmSync(join(dir, `${sent[3]?.id}.http`));
      const before = app.requests.length;
      const replayed = await runCli(['webhook', 'replay', '--failed', dir, '--url', `http://localhost:${app.port}/hooks`]);
      expect(app.requests.slice(before).map((request) => numberOf(request.body))).toEqual([2]);
      expect(replayed.stderr).toContain('forwards.jsonl: 8 lines are not a forward record and were left out (line 6, 7, 8, 9, 10 and 3 more)\n');
      expect(replayed.stderr).toContain(`warning: 1 delivery that forwards.jsonl names as failed is no longer in ${dir}: ${sent[3]?.id}.http\n`);
      expect(replayed.stdout).not.toContain('secret');
      expect(sent).toHaveLength(5);
    } finally {
      await app.close();
    }
  });

  it('without a journal nor a delivery: a usage error that says where it comes from; with an empty journal, nothing to send', async () => {
    const dir = tempDir();
    const result = await runCli(['webhook', 'replay', '--failed', dir, '--url', '1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--failed ${dir}: no forwards.jsonl and no saved delivery in it`);
    expect(result.stderr).toContain(`is written by \`webhook listen --save ${dir} --forward-to …\``);
    writeFileSync(join(dir, 'forwards.jsonl'), '', { mode: 0o600 });
    const empty = await runCli(['webhook', 'replay', '--failed', dir, '--url', '1']);
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stdout).toBe(`no delivery in ${dir} waits to be sent again: it holds no saved delivery and no forward record\n`);
  });

  it('deliveries answered and saved but never forwarded (listen killed) have no record: sent too, and said so; a save\'s leftover .tmp is no delivery', async () => {
    const app = await startScriptedServer(() => {}); // Holds every forward: none ends, none is recorded.
    try {
      const dir = tempDir();
      const listener = await listen(['--save', dir, '--forward-to', `${app.port}/hooks`, '--forward-concurrency', '1'], { spawn: true });
      const sent = [1, 2, 3].map(delivery);
      for (const one of sent) expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      await app.until(() => app.requests.length === 1);
      process.kill(listener.pid, 'SIGKILL');
      await listener.exited;
      expect(readFileSync(join(dir, 'forwards.jsonl'), 'utf8')).toBe('');
      // A save under way at the kill leaves its temporary file: not a delivery, never read, left there.
      const leftover = join(dir, `.${sent[0]?.id}.http.0123456789abcdef.tmp`);
      writeFileSync(leftover, readFileSync(join(dir, `${sent[0]?.id}.http`)), { mode: 0o600 });
      app.script(failingFor(new Set()));
      const before = app.requests.length;
      const replayed = await runCli(['webhook', 'replay', '--failed', dir, '--url', `${app.port}/hooks`]);
      expect(replayed.code, replayed.stderr).toBe(0);
      expect(replayed.stderr).toContain(
        'warning: 3 saved deliveries have no forward record: the session ended before forwarding them, or forwarded nothing (no --forward-to); they are sent too\n',
      );
      // At least once: the first reached the app before the kill, and is sent again (apps dedupe by X-Service-Delivery).
      expect(app.requests.slice(before).map((request) => numberOf(request.body))).toEqual([1, 2, 3]);
      expect(journalOf(dir).map(({ file, outcome }) => [file, outcome])).toEqual(sent.map((one) => [`${one.id}.http`, 'delivered']));
      expect(readFileSync(leftover)).toEqual(readFileSync(join(dir, `${sent[0]?.id}.http`)));
      const again = await runCli(['webhook', 'replay', '--failed', dir, '--url', `${app.port}/hooks`]);
      expect(again.stdout).toBe(`no delivery in ${dir} waits to be sent again: every forward recorded there was delivered\n`);
      expect(app.requests).toHaveLength(before + 3);
    } finally {
      await app.close();
    }
  });

  it('a directory saved without --forward-to has no journal: its deliveries are sent, and said to have no record', async () => {
    const app = await startScriptedServer(failingFor(new Set()));
    try {
      const dir = tempDir();
      const listener = await listen(['--save', dir, '--max-deliveries', '1']);
      const one = delivery(7);
      expect((await post(listener.url, one.headers, one.body)).status).toBe(200);
      expect(await listener.exited).toBe(0);
      const replayed = await runCli(['webhook', 'replay', '--failed', dir, '--url', `${app.port}/hooks`]);
      expect(replayed.code, replayed.stderr).toBe(0);
      expect(replayed.stderr).toContain('1 saved delivery has no forward record: the session ended before forwarding it, or forwarded nothing (no --forward-to); it is sent too');
      expect(app.requests.map((request) => numberOf(request.body))).toEqual([7]);
      expect(journalOf(dir)).toMatchObject([{ file: `${one.id}.http`, outcome: 'delivered' }]);
    } finally {
      await app.close();
    }
  });

  it('one run per directory: a second --failed while one sends is refused, naming its pid and lock; a lock left by a dead run is taken over', async () => {
    const { dir, app } = await sessionWithFailures();
    try {
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      app.script((_request, response) => void held.then(() => response.writeHead(200).end('ok')));
      const before = app.requests.length;
      const first = spawnCli(['webhook', 'replay', '--failed', dir, '--url', `${app.port}/hooks`]);
      await app.until(() => app.requests.length === before + 1);
      const second = await runCli(['webhook', 'replay', '--failed', dir, '--url', `${app.port}/hooks`]);
      expect(second.code).toBe(2);
      const lock = join(dir, '.replay-failed.lock');
      expect(second.stderr).toMatch(new RegExp(`error: another \`webhook replay --failed\` \\(pid \\d+\\) is sending the deliveries of ${dir}: ${lock}\n`));
      expect(second.stderr).toContain('hint: wait for it to end, or stop it (kill ');
      release();
      expect((await first).code).toBe(0);
      expect(app.requests.slice(before).map((request) => numberOf(request.body))).toEqual([2, 4]);
      expect(readdirSync(dir)).not.toContain('.replay-failed.lock');

      // A run killed left its lock: its pid runs no more, and the next run takes it over.
      const dead = spawnSync(process.execPath, ['-e', '']).pid;
      writeFileSync(lock, `${JSON.stringify({ pid: dead, host: hostname(), startedAt: '2026-11-28T04:00:00.000Z' })}\n`, { mode: 0o600 });
      appendFileSync(join(dir, 'forwards.jsonl'), `${JSON.stringify({ ...journalOf(dir)[1], outcome: 'failed', status: 500 })}\n`);
      const taken = await runCli(['webhook', 'replay', '--failed', dir, '--url', `${app.port}/hooks`]);
      expect(taken.code, taken.stderr).toBe(0);
      expect(taken.stderr).toContain(`warning: taking over ${lock}: pid ${dead} on ${hostname()}, which took it since 2026-11-28T04:00:00.000Z, is no longer running\n`);
      expect(app.requests.slice(before + 2).map((request) => numberOf(request.body))).toEqual([2]);
      expect(readdirSync(dir)).not.toContain('.replay-failed.lock');
    } finally {
      await app.close();
    }
  });

  it('prints each file\'s outcome as it is sent, not all at the end; --json stays one list at the end', async () => {
    const { dir, sent, app } = await sessionWithFailures();
    try {
      let stdout = '';
      let printed: () => void = () => {};
      const firstPrinted = new Promise<void>((resolve) => {
        printed = resolve;
      });
      // The 4th is answered only once the 2nd's line is out.
      app.script(failingFor(new Set()), (_request, response) => void firstPrinted.then(() => response.writeHead(200).end('ok')));
      const result = await runCli(['webhook', 'replay', '--failed', dir, '--url', `${app.port}/hooks`], {
        onStdout: (text) => {
          stdout += text;
          if (stdout.includes(`${sent[1]?.id}.http: 200 in `)) printed();
        },
      });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`^${sent[1]?.id}\\.http: 200 in \\d+ ms\n${sent[3]?.id}\\.http: 200 in \\d+ ms\n$`));

      appendFileSync(join(dir, 'forwards.jsonl'), `${JSON.stringify({ ...journalOf(dir)[0], outcome: 'failed', status: 500 })}\n`);
      app.script(failingFor(new Set()));
      const json = await runCli(['webhook', 'replay', '--failed', dir, '--url', `${app.port}/hooks`, '--json']);
      expect(json.code, json.stderr).toBe(0);
      expect(JSON.parse(json.stdout)).toEqual([{ file: `${sent[0]?.id}.http`, status: 200, ms: expect.any(Number) }]);
    } finally {
      await app.close();
    }
  });
});

describe('webhook replay with several arguments and --ids FILE', () => {
  it('several files and directories: each delivery once, in arrival order', async () => {
    const { dir, sent, app } = await sessionWithFailures();
    try {
      const other = tempDir();
      const listener = await listen(['--save', other, '--max-deliveries', '1']);
      const later = delivery(6);
      expect((await post(listener.url, later.headers, later.body)).status).toBe(200);
      expect(await listener.exited).toBe(0);
      app.script(failingFor(new Set()));
      const before = app.requests.length;
      // The later delivery first, a file also in the directory named after it.
      const result = await runCli(['webhook', 'replay', join(other, `${later.id}.http`), join(dir, `${sent[2]?.id}.http`), dir, '--url', `${app.port}/hooks`]);
      expect(result.code, result.stderr).toBe(0);
      expect(app.requests.slice(before).map((request) => numberOf(request.body))).toEqual([1, 2, 3, 4, 5, 6]);
    } finally {
      await app.close();
    }
  });

  it('a journal that is a link, and a receiver that does not answer: each said with what to do', async () => {
    const { dir, app } = await sessionWithFailures();
    await app.close();
    const url = `http://localhost:${app.port}/hooks`;
    const down = await runCli(['webhook', 'replay', '--failed', dir, '--url', url]);
    expect(down.code).toBe(8);
    expect(down.stderr).toContain('error: 2 of 2 deliveries could not be sent\n');
    expect(down.stderr).toContain(`hint: is the receiver at ${url} running? The deliveries stay saved: once it answers, \`svc-migrate webhook replay --failed ${dir} --url ${url}\` sends them again`);
    const journal = join(dir, 'forwards.jsonl');
    renameSync(journal, `${journal}.real`);
    symlinkSync(`${journal}.real`, journal);
    const linked = await runCli(['webhook', 'replay', '--failed', dir, '--url', url]);
    expect(linked.code).toBe(2);
    expect(linked.stderr).toContain(`error: cannot read the forward journal ${journal}: it is a symbolic link\n`);
    expect(linked.stderr).toContain(`hint: move ${journal} aside`);
  });

  it('one file named several ways (a path, ./, //, a link to its directory) is sent once', async () => {
    const { dir, app } = await sessionWithFailures();
    try {
      app.script(failingFor(new Set()));
      const link = join(tempDir(), 'link');
      symlinkSync(dir, link);
      const file = readdirSync(dir).filter((name) => name.endsWith('.http'))[2] as string;
      const before = app.requests.length;
      const one = await runCli(['webhook', 'replay', join(dir, file), `${dir}/./${file}`, `${dir}//${file}`, join(link, file), '--url', `${app.port}/hooks`]);
      expect(one.code, one.stderr).toBe(0);
      expect(app.requests.slice(before)).toHaveLength(1);
      const all = await runCli(['webhook', 'replay', dir, `${dir}/`, link, '--url', `${app.port}/hooks`]);
      expect(all.code, all.stderr).toBe(0);
      expect(app.requests.slice(before + 1).map((request) => numberOf(request.body))).toEqual([1, 2, 3, 4, 5]);
    } finally {
      await app.close();
    }
  });

  it('--ids - reads stdin, and a pipe or FIFO is read as a file is; a device is refused', async () => {
    const { dir, sent, app } = await sessionWithFailures();
    try {
      app.script(failingFor(new Set()));
      const before = app.requests.length;
      const piped = await runCli(['webhook', 'replay', dir, '--ids', '-', '--url', `${app.port}/hooks`], { stdin: `${sent[2]?.id}\n# a comment\n` });
      expect(piped.code, piped.stderr).toBe(0);
      expect(app.requests.slice(before).map((request) => numberOf(request.body))).toEqual([3]);

      const fifo = join(tempDir(), 'ids');
      execFileSync('mkfifo', [fifo]);
      const writing = writeFile(fifo, `${sent[4]?.id}\n`);
      const fromFifo = await runCli(['webhook', 'replay', dir, '--ids', fifo, '--url', `${app.port}/hooks`]);
      await writing;
      expect(fromFifo.code, fromFifo.stderr).toBe(0);
      expect(app.requests.slice(before + 1).map((request) => numberOf(request.body))).toEqual([5]);

      const device = await runCli(['webhook', 'replay', dir, '--ids', '/dev/zero', '--url', `${app.port}/hooks`]);
      expect(device.code).toBe(2);
      expect(device.stderr).toContain('--ids /dev/zero: not a regular file or a pipe');
      expect(app.requests).toHaveLength(before + 2);
    } finally {
      await app.close();
    }
  });

  it('--ids: only the deliveries of those ids, comments and blank lines left out, an id with no file named, a bad line refused', async () => {
    const { dir, sent, app } = await sessionWithFailures();
    try {
      app.script(failingFor(new Set()));
      const ids = join(tempDir(), 'ids.txt');
      writeFileSync(ids, `# to send again\n${sent[4]?.id}\n\n  ${sent[0]?.id}  \nno-such-id\n`);
      const before = app.requests.length;
      const result = await runCli(['webhook', 'replay', dir, '--ids', ids, '--url', `${app.port}/hooks`]);
      expect(result.code, result.stderr).toBe(0);
      expect(app.requests.slice(before).map((request) => numberOf(request.body))).toEqual([1, 5]);
      expect(result.stderr).toContain('1 of the 3 ids have no saved delivery here: no-such-id');

      // With --failed: those ids among the failed ones.
      writeFileSync(ids, `${sent[3]?.id}\n${sent[0]?.id}\n`);
      const failed = await runCli(['webhook', 'replay', '--failed', dir, '--ids', ids, '--url', `${app.port}/hooks`]);
      expect(failed.code, failed.stderr).toBe(0);
      expect(app.requests.slice(before + 2).map((request) => numberOf(request.body))).toEqual([4]);

      writeFileSync(ids, `${sent[0]?.id}\nbad\u0007id\n`);
      const bad = await runCli(['webhook', 'replay', dir, '--ids', ids, '--url', `${app.port}/hooks`]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(`--ids ${ids}: line 2 is not a delivery id`);
      expect(app.requests).toHaveLength(before + 3);
      expect(readdirSync(dir).filter((name) => name.endsWith('.http'))).toHaveLength(5);
    } finally {
      await app.close();
    }
  });
});
