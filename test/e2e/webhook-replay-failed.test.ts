import { appendFileSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildDelivery } from '../../src/webhook/delivery.js';
import { listen, post } from '../helpers/listener.js';
import { runCli } from '../helpers/run-cli.js';
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
      appendFileSync(join(dir, 'forwards.jsonl'), [record(join(outside, 'secret.http')), record('../secret.http'), record('sub/x.http'), '{"file":\n', 'x'.repeat(70_000) + '\n'].join(''));
      const before = app.requests.length;
      const replayed = await runCli(['webhook', 'replay', '--failed', dir, '--url', `http://localhost:${app.port}/hooks`]);
      expect(app.requests.slice(before).map((request) => numberOf(request.body))).toEqual([2, 4]);
      expect(replayed.stderr).toContain('forwards.jsonl: 5 lines are not a forward record and were left out (line 6, 7, 8, 9, 10)');
      expect(replayed.stdout).not.toContain('secret');
      expect(sent).toHaveLength(5);
    } finally {
      await app.close();
    }
  });

  it('without a journal: a usage error that says where it comes from', async () => {
    const dir = tempDir();
    const result = await runCli(['webhook', 'replay', '--failed', dir, '--url', '1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--failed ${dir}: no forwards.jsonl in it`);
    expect(result.stderr).toContain(`is written by \`webhook listen --save ${dir} --forward-to …\``);
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
