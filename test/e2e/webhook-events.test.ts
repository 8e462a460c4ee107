import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOGUE, cataloguePairs, catalogueWarnings, eventActions } from '../../src/webhook/catalogue.js';
import { BIN, runCli } from '../helpers/run-cli.js';
import { startScriptedServer, type ScriptedServer } from '../helpers/scripted-server.js';
import { hasScript, onTerminal } from '../helpers/terminal.js';
import { unless } from '../helpers/skip.js';

// Issue #36, point 5: `webhook events NAME` looks up one event, `--example` prints the payload
// `send` posts, and the shells complete event names (test/e2e/completion.test.ts).

interface Detail {
  name: string;
  permission: string;
  availability: string[];
  activity: string;
  action: string;
  required: string[];
  beta: boolean;
  deprecated: boolean;
  described_action: string | null;
  any_action: boolean;
  actions: { action: string | null; described: boolean; required: { property: string; source: 'spec' | 'published' }[] }[];
}

async function detail(name: string): Promise<Detail> {
  const result = await runCli(['webhook', 'events', name, '--json']);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Detail;
}

describe('webhook events NAME', () => {
  it('shows one event: its row, then each action with what it requires and on whose word', async () => {
    const result = await runCli(['webhook', 'events', 'issues']);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('issues');
    expect(lines).toContain('  activity       issue assigned to a user (action assigned)');
    expect(lines).toContain('  permission     Issues');
    expect(lines).toContain('  availability   Rep Org App: repository, organization and app webhooks');
    expect(lines).toContain('  status         stable');
    // The row's activity requires what the row lists; another action the envelope by the row, and
    // its own properties by its published schema (an issues.closed without issue is warned about).
    expect(lines).toContain('  assigned      spec: action, issue, repository, sender');
    expect(lines).toContain('  closed        spec: action, repository, sender; schema: issue');
    expect(lines).toContain('  milestoned    spec: action, repository, sender; schema: issue, milestone');
    // One line per action the published schemas know, and nothing else below the heading.
    const heading = lines.findIndex((line) => line.startsWith('required properties by action'));
    expect(lines.slice(heading + 1).map((line) => line.trim().split(/\s+/)[0])).toEqual(eventActions('issues'));
  });

  it('says what sets an event apart: beta, deprecated, no action, any action, a property never carried', async () => {
    const beta = await runCli(['webhook', 'events', 'projects_v2_item']);
    expect(beta.stdout).toMatch(/^ {2}status +beta, may change/m);
    expect(beta.stdout).toMatch(/^ {2}never carried +repository$/m);
    // The row requires changes for archived, the activity it describes; created does not carry it.
    expect(beta.stdout).toMatch(/^ {2}archived +spec: action, changes, organization, projects_v2_item, sender$/m);
    expect(beta.stdout).toMatch(/^ {2}created +spec: action, organization, sender; schema: projects_v2_item$/m);
    expect((await runCli(['webhook', 'events', 'registry_package'])).stdout).toMatch(/^ {2}status +deprecated/m);
    const push = await runCli(['webhook', 'events', 'push']);
    expect(push.stdout).toMatch(/^ {2}action +none: payloads carry no action$/m);
    expect(push.stdout).toMatch(/^ {2}required +spec: after, base_ref, before, commits, compare, created, deleted, forced, head_commit, pusher, ref, repository$/m);
    expect(push.stdout).not.toMatch(/required properties by action/);
    const dispatch = await detail('repository_dispatch');
    expect([dispatch.any_action, dispatch.described_action]).toEqual([true, null]);
    expect(dispatch.actions.every((entry) => entry.described)).toBe(true);
  });

  it('--json: one object, the catalogue row and every action, each requirement with its source', async () => {
    const issues = await detail('issues');
    expect(issues).toMatchObject({ name: 'issues', permission: 'Issues', availability: ['Rep', 'Org', 'App'], action: 'required', described_action: 'assigned', any_action: false });
    // The row's fields are those of the catalogue's array.
    const list = JSON.parse((await runCli(['webhook', 'events', '--json'])).stdout) as Record<string, unknown>[];
    expect(issues).toMatchObject(list.find((row) => row.name === 'issues') as object);
    const closed = issues.actions.find((entry) => entry.action === 'closed');
    expect(closed).toEqual({
      action: 'closed',
      described: false,
      required: [
        { property: 'action', source: 'spec' },
        { property: 'issue', source: 'published' },
        { property: 'repository', source: 'spec' },
        { property: 'sender', source: 'spec' },
      ],
    });
    expect(issues.actions.find((entry) => entry.action === 'assigned')?.required.every((r) => r.source === 'spec')).toBe(true);
    expect((await detail('push')).actions).toEqual([expect.objectContaining({ action: null, described: true })]);
  });

  it('every event: its actions are the 244 pairs, and each lists what the receiver warns about when missing', async () => {
    let pairs = 0;
    for (const name of CATALOGUE.keys()) {
      const event = await detail(name);
      pairs += event.actions.length;
      for (const entry of event.actions) {
        const payload = entry.action === null ? {} : { action: entry.action };
        const warning = catalogueWarnings(name, payload).find((text) => text.startsWith('missing required ')) ?? '';
        const missing = warning.replace(/^missing required /, '').replace(/ \(of action .*\)$/, '').split(', ').filter(Boolean);
        const required = entry.required.map((r) => r.property).filter((property) => !(property === 'action' && entry.action !== null));
        expect(missing.sort(), `${name}.${entry.action}`).toEqual(required.sort());
      }
    }
    expect(pairs).toBe(244);
  }, 60_000);

  it('without NAME, still the whole catalogue', async () => {
    const table = await runCli(['webhook', 'events']);
    expect(table.code).toBe(0);
    expect(table.stdout.trim().split('\n')).toHaveLength(CATALOGUE.size);
  });
});

describe('webhook events NAME --example', () => {
  let stub: ScriptedServer;
  beforeAll(async () => {
    stub = await startScriptedServer((_request, response) => response.writeHead(204).end());
  });
  afterAll(() => stub.close());

  /** The body `webhook send` posted to a real server for these flags. */
  async function sent(args: string[]): Promise<string> {
    const before = stub.requests.length;
    const result = await runCli(['webhook', 'send', '--url', stub.url, ...args]);
    expect(result.code, result.stderr).toBe(0);
    expect(stub.requests).toHaveLength(before + 1);
    return stub.requests.at(-1)?.body ?? '';
  }

  it('prints, off a terminal, exactly the body `send` posts for that event and action, for every pair', async () => {
    // Every pair the catalogue knows, an event without --action, and a dispatch's own event_type.
    const cases: [string, string | undefined][] = [
      ...cataloguePairs().map(({ event, action }): [string, string | undefined] => [event, action]),
      ['issues', undefined],
      ['repository_dispatch', 'deploy.prod'],
    ];
    for (const [event, action] of cases) {
      const example = await runCli(['webhook', 'events', event, '--example', ...(action === undefined ? [] : [action])]);
      expect(example.code, example.stderr).toBe(0);
      const body = await sent(['--event', event, ...(action === undefined ? [] : ['--action', action])]);
      expect(example.stdout, `${event}.${action}`).toBe(`${body}\n`);
      if (action !== undefined) expect((JSON.parse(example.stdout) as { action: string }).action).toBe(action);
    }
  }, 120_000);

  it('says on stderr which action a bare --example is, and how a derived payload departs from the published ones', async () => {
    const bare = await runCli(['webhook', 'events', 'issues', '--example']);
    expect(bare.stderr).toMatch(/^note: the payload of action "assigned", which `webhook send --event issues` sends without --action\n$/);
    const derived = await runCli(['webhook', 'events', 'milestone', '--example', 'opened']);
    expect(derived.stderr).toMatch(/^note: no published example of milestone\.opened: derived from /);
    expect((JSON.parse(derived.stdout) as { milestone: { state: string } }).milestone.state).toBe('open');
    const quiet = await runCli(['webhook', 'events', 'milestone', '--example', 'opened', '-q']);
    expect(quiet.stderr).toBe('');
  });

  it('on a terminal, indented JSON of the same payload', async () => {
    const pretty = await runCli(['webhook', 'events', 'issues', '--example', 'closed'], { terminal: { columns: 80 } });
    expect(pretty.code).toBe(0);
    expect(pretty.stdout).toMatch(/^\{\n {2}"action": "closed",\n/);
    expect(JSON.parse(pretty.stdout)).toEqual(JSON.parse(await sent(['--event', 'issues', '--action', 'closed'])));
  });
});

describe('webhook events NAME through the built binary', () => {
  const hasJq = spawnSync('jq', ['--version'], { stdio: 'ignore' }).status === 0;

  it.skipIf(!hasJq)(`pipes into jq: --json and --example${unless(hasJq, 'jq is not installed')}`, () => {
    const shell = (command: string) => spawnSync('sh', ['-c', command], { encoding: 'utf8', env: { ...process.env, BIN } });
    const sources = shell('node "$BIN" webhook events issues --json | jq -r \'.actions[] | select(.action == "closed") | .required[] | "\\(.property) \\(.source)"\'');
    expect(sources.status, sources.stderr).toBe(0);
    expect(sources.stdout).toBe('action spec\nissue published\nrepository spec\nsender spec\n');
    const state = shell('node "$BIN" webhook events issues --example closed | jq -r \'.action + " " + .issue.state\'');
    expect(state.stdout).toBe('closed closed\n');
  });

  it.skipIf(!hasScript)(`on a 60-column terminal every line fits, values wrapped under their column${unless(hasScript, 'util-linux `script` is not installed')}`, async () => {
    for (const event of ['issues', 'push', 'installation_repositories']) {
      const shown = await onTerminal(['webhook', 'events', event, '--no-color'], { setup: 'stty cols 60 rows 40' });
      expect(shown.code).toBe(0);
      const lines = shown.screen.replace(/\r/g, '').trimEnd().split('\n');
      for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(60);
      expect(lines[0]).toBe(event);
      if (event === 'issues') {
        // The schema's part moves to the next line whole, under the action's column.
        expect(lines).toContain('  closed        spec: action, repository, sender;');
        expect(lines[lines.indexOf('  closed        spec: action, repository, sender;') + 1]).toBe(`${' '.repeat(16)}schema: issue`);
      }
    }
  });
});

describe('webhook events NAME on a narrow terminal (in-process)', () => {
  for (const columns of [60, 30, 12]) {
    it(`${columns} columns: no line wider, nothing lost`, async () => {
      for (const event of ['issues', 'push', 'branch_protection_configuration', 'repository_dispatch']) {
        const narrow = await runCli(['webhook', 'events', event], { terminal: { columns } });
        expect(narrow.code).toBe(0);
        for (const line of narrow.stdout.trimEnd().split('\n')) expect(line.length, `${event}: ${line}`).toBeLessThanOrEqual(columns);
        // The same words as off a terminal, only on more lines.
        const plain = await runCli(['webhook', 'events', event]);
        const words = (text: string) => text.replace(/\s+/g, '');
        expect(words(narrow.stdout)).toBe(words(plain.stdout));
      }
    });
  }
});
