import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain JavaScript development module without types
import { publishedPairs, schemaProblems } from '../../scripts/webhook-schemas.js';
import { listen } from '../helpers/listener.js';
import { BIN, spawnCli } from '../helpers/run-cli.js';

// The payloads of `webhook send` and of the sandbox, through the built binary, against GitHub's
// published schemas (test/unit/payload-schemas.test.ts and test/sandbox/payload-schemas.test.ts
// walk every event and action in-process, over the same functions).

const checkProblems = schemaProblems as (component: string, payload: unknown) => string[];
const COMPONENTS = new Map(
  (publishedPairs() as { event: string; action?: string; component: string }[]).map(({ event, action, component }) => [`${event}.${action ?? ''}`, component]),
);
const componentOf = (event: string, action: unknown) => COMPONENTS.get(`${event}.${typeof action === 'string' ? action : ''}`) ?? COMPONENTS.get(`${event}.sample.collected`);

/** Each line's schema problems and warnings, by event and action; [] for a line without any. */
function problemsOf(lines: Record<string, any>[]): string[][] {
  return lines.map((line) => {
    const component = componentOf(line.event as string, line.action);
    return [...(component ? checkProblems(component, line.payload) : [`no published schema for ${line.event}.${line.action}`]), ...(line.warnings as string[])];
  });
}

/** `svc-migrate sandbox --json` as a process of its own: its address record, and Ctrl-C. */
async function sandboxProcess() {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const info = await new Promise<{ base_url: string; token: string; org: string }>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', (line) => resolve(JSON.parse(line)));
    child.once('exit', (code) => reject(new Error(`sandbox exited ${code}`)));
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    info,
    admin: (path: string, body: unknown) => fetch(`${info.base_url}${path}`, { method: 'POST', body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, json: (await r.json()) as any })),
    stop: () => {
      child.kill('SIGINT');
      return exited;
    },
  };
}

describe('payloads valid against the published schemas, through the built binary', () => {
  it('`webhook send` without --payload sends what the schema of that event and action describes; `listen` sees no fault', async () => {
    const pairs: [string, string?][] = [
      ['create'],
      ['star', 'deleted'],
      ['milestone', 'opened'],
      ['issues', 'locked'],
      ['discussion', 'answered'],
      ['discussion', 'closed'],
      ['projects_v2', 'created'],
      ['ping'],
    ];
    const listener = await listen(['--max-deliveries', String(pairs.length)], { spawn: true });
    for (const [event, action] of pairs) {
      const result = await spawnCli(['webhook', 'send', '--url', listener.url, '--event', event, ...(action ? ['--action', action] : [])]);
      expect(result.code, result.stderr).toBe(0);
    }
    expect(await listener.exited).toBe(0);
    expect(listener.lines.map((line) => [line.event, line.action])).toEqual(pairs.map(([event, action]) => [event, action ?? null]));
    expect(problemsOf(listener.lines)).toEqual(pairs.map(() => []));
    expect(listener.lines[1]!.payload.starred_at).toBeNull();
    expect(listener.lines[2]!.payload.milestone).toMatchObject({ state: 'open', closed_at: null });
    expect(listener.lines[3]!.payload.issue.locked).toBe(true);
    // Derived from the edited example, without its `changes`.
    expect(listener.lines[5]!.payload).toMatchObject({ discussion: { state: 'closed' } });
    expect(listener.lines[5]!.payload).not.toHaveProperty('changes');
  }, 60_000);

  it('`listen` warns about an action the spec does not describe that lacks what its published schema requires, and only then', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-payloads-'));
    const reopened = JSON.parse(readFileSync(new URL('../fixtures/webhooks/issues/reopened.json', import.meta.url), 'utf8')) as Record<string, unknown>;
    const { issue: _issue, ...issueless } = reopened;
    writeFileSync(join(dir, 'issueless.json'), JSON.stringify(issueless));
    const archived = JSON.parse(readFileSync(new URL('../fixtures/webhooks/projects_v2_item/archived.json', import.meta.url), 'utf8')) as Record<string, unknown>;
    const { changes: _changes, ...unchanged } = archived;
    writeFileSync(join(dir, 'unchanged.json'), JSON.stringify(unchanged));
    const listener = await listen(['--max-deliveries', '3'], { spawn: true });
    const sends = [
      ['--event', 'issues', '--action', 'closed', '--payload', join(dir, 'issueless.json')],
      ['--event', 'projects_v2_item', '--action', 'created', '--payload', join(dir, 'unchanged.json')],
      ['--event', 'projects_v2_item', '--action', 'archived', '--payload', join(dir, 'unchanged.json')],
    ];
    for (const args of sends) expect((await spawnCli(['webhook', 'send', '--url', listener.url, ...args])).code).toBe(0);
    expect(await listener.exited).toBe(0);
    expect(listener.lines.map((line) => [line.event, line.action, line.warnings])).toEqual([
      ['issues', 'closed', ['missing required issue']],
      ['projects_v2_item', 'created', []],
      ['projects_v2_item', 'archived', ['missing required changes (of action archived)']],
    ]);
  }, 60_000);

  it('the sandbox\'s ping, emitted events and dispatch are what the schemas describe', async () => {
    const sandbox = await sandboxProcess();
    const listener = await listen(['--max-deliveries', '7'], { spawn: true });
    try {
      expect((await sandbox.admin('/_sandbox/hooks', { url: listener.url, events: ['*'] })).status).toBe(201);
      expect((await sandbox.admin('/_sandbox/hooks', { url: listener.url, events: ['repository_dispatch'], target: 'app' })).status).toBe(201);
      for (const emit of [{ event: 'create' }, { event: 'star', action: 'deleted' }, { event: 'milestone', action: 'opened' }, { event: 'issues', action: 'closed' }]) {
        expect((await sandbox.admin('/_sandbox/emit', emit)).json.delivered, JSON.stringify(emit)).toHaveLength(1);
      }
      const dispatched = await fetch(`${sandbox.info.base_url}/repos/${sandbox.info.org}/widgets/dispatches`, {
        method: 'POST',
        headers: { authorization: `Bearer ${sandbox.info.token}` },
        body: JSON.stringify({ event_type: 'deploy', client_payload: { ref: 'main' } }),
      });
      expect(dispatched.status).toBe(204);
      expect(await listener.exited).toBe(0);
    } finally {
      await sandbox.stop();
    }
    expect(listener.lines.map((line) => [line.event, line.action])).toEqual([
      ['ping', null],
      ['ping', null],
      ['create', null],
      ['star', 'deleted'],
      ['milestone', 'opened'],
      ['issues', 'closed'],
      ['repository_dispatch', 'deploy'],
    ]);
    expect(problemsOf(listener.lines)).toEqual(listener.lines.map(() => []));
    expect(listener.lines[0]!.payload.hook).toMatchObject({ created_at: expect.any(String), updated_at: expect.any(String) });
    expect(listener.lines[6]!.payload.organization).toMatchObject({ login: 'octo-org', hooks_url: expect.any(String), description: null });
  }, 60_000);
});
