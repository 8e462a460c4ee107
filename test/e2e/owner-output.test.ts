import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Migration } from '../../src/api/types.js';
import { runCli } from '../helpers/run-cli.js';
import { json, startScriptedServer } from '../helpers/scripted-server.js';
import { hasScript, onTerminal } from '../helpers/terminal.js';
import { testSandbox } from '../helpers/sandbox.js';
import { unless } from '../helpers/skip.js';

// Issue #35 (3, 5, 10): what an owner reads in tables, lists, 422s and on a terminal, as gh users expect.

async function started(env: Record<string, string>, repos: string[], extra: string[] = []): Promise<Migration> {
  const result = await runCli(['start', ...repos, '--json', ...extra], { env });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Migration;
}

describe('lock requested, not "locked"', () => {
  it('after unlock --all, status and list say the lock was requested, never that it is locked', async () => {
    const { env } = await testSandbox();
    const { id } = await started(env, ['widgets'], ['--lock', '--wait', '--interval', '0.1']);
    const unlocked = await runCli(['unlock', String(id), '--all'], { env });
    expect(unlocked.code, unlocked.stderr).toBe(0);
    const status = await runCli(['status', String(id)], { env });
    expect(status.stdout).toMatch(/^ {2}lock requested {2}yes$/m);
    expect(status.stdout).not.toMatch(/locked/);
    const json = JSON.parse((await runCli(['status', String(id), '--json'], { env })).stdout) as Migration;
    expect(json.lock_repositories).toBe(true);
  });
});

describe('list on a terminal', () => {
  for (const columns of [40, 60]) {
    it(`at ${columns} columns: one line per migration, cut with … or left out to fit, as gh; the header never cut`, async () => {
      const { env } = await testSandbox();
      await started(env, ['widgets', 'docs.site', 'Hello-World'], ['--lock']);
      await started(env, ['widgets']);
      const count = (JSON.parse((await runCli(['list', '--json'], { env })).stdout) as Migration[]).length;
      const list = await runCli(['list', '--no-color'], { env, terminal: { columns } });
      expect(list.code, list.stderr).toBe(0);
      const lines = list.stdout.trimEnd().split('\n');
      expect(lines).toHaveLength(count + 1);
      expect(lines[0]).toMatch(/^ID +STATE/);
      for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(columns);
      expect(lines[0]).not.toContain('…');
      // The id, the key of each row, is never cut.
      expect(lines.slice(1).map((line) => /^\d+ /.test(line))).toEqual(Array(count).fill(true));
    });
  }

  it.skipIf(!hasScript)(`on a real 40-column terminal too${unless(hasScript, 'util-linux `script` is not installed')}`, async () => {
    const { env } = await testSandbox();
    await started(env, ['widgets', 'docs.site', 'Hello-World'], ['--lock']);
    const list = await onTerminal(['list', '--no-color'], { env, setup: 'stty cols 40 rows 40' });
    expect(list.code, list.screen).toBe(0);
    const lines = list.screen.trimEnd().split(/\r?\n/);
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(40);
  });

  it('names the column LOCK REQUESTED', async () => {
    const { env } = await testSandbox();
    await started(env, ['widgets'], ['--lock']);
    const list = await runCli(['list', '--no-color'], { env, terminal: { columns: 120 } });
    expect(list.stdout).toMatch(/ID.*STATE.*REPOSITORIES.*LOCK REQUESTED.*CREATED.*UPDATED/);
  });
});

describe('a 422 that names many repositories', () => {
  const reposFile = (count: number) => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-owner-'));
    const file = join(dir, 'repos.txt');
    writeFileSync(file, `${Array.from({ length: count }, (_, i) => `repo-${String(301 + i).padStart(4, '0')}`).join('\n')}\n`);
    return file;
  };

  for (const count of [100, 400]) {
    it(`${count} unknown names: counted, the first ten named on one short line, every one in --json`, async () => {
      const { env } = await testSandbox();
      const file = reposFile(count);
      const result = await runCli(['start', '--repos-file', file], { env });
      expect(result.code).toBe(5);
      const [line, hint] = result.stderr.trim().split('\n');
      expect(line).toBe(
        `error: the service rejected the request: ${count} repositories are not in octo-org: ` +
          'repo-0301, repo-0302, repo-0303, repo-0304, repo-0305, repo-0306, repo-0307, repo-0308, repo-0309, repo-0310, ' +
          `… and ${count - 10} more`,
      );
      expect(hint).toMatch(/and the \d+ more \(--json lists every one\)/);
      const json = await runCli(['start', '--repos-file', file, '--json'], { env });
      expect(json.code).toBe(5);
      const error = (JSON.parse(json.stderr) as { error: { repositories: string[]; details: string[]; message: string } }).error;
      expect(error.repositories).toHaveLength(count);
      expect(error.repositories.at(-1)).toBe(`octo-org/repo-${String(300 + count).padStart(4, '0')}`);
      expect(error.details).toHaveLength(count);
      expect(error.message.length).toBeLessThan(400);
    });
  }

  it('a few names: all of them, and the hint says to remove them', async () => {
    const { env } = await testSandbox();
    const result = await runCli(['start', 'widgets', 'nope-1', 'nope-2'], { env });
    expect(result.code).toBe(5);
    expect(result.stderr).toContain('error: the service rejected the request: 2 repositories are not in octo-org: nope-1, nope-2\n');
    expect(result.stderr).toContain('hint: remove the repositories named above, then run the command again\n');
  });
});

describe('a 422 too long to read', () => {
  it('says its explanation was not read, and the hint names nothing "above"', async () => {
    // 9 MiB of refusals: past the bound kept for a 422 (api/bodies.ts).
    const entry = (i: number) => ({ resource: 'Migration', field: 'repositories', code: 'invalid_value', index: i, value: `acme/r${i}`, message: 'x'.repeat(200) });
    const api = await startScriptedServer(json(422, { message: 'Validation Failed', errors: Array.from({ length: 40_000 }, (_, i) => entry(i)) }));
    try {
      const result = await runCli(['start', 'widgets'], { env: { SVC_BASE_URL: api.url, SVC_TOKEN: 't', SVC_ORG: 'acme' } });
      expect(result.code).toBe(5);
      expect(result.stderr).toMatch(/^error: the service rejected the request, and its explanation was longer than 8 MiB: it was not read\n/);
      expect(result.stderr).not.toMatch(/above/);
    } finally {
      await api.close();
    }
  });

  it('one of 300 KiB (2,000 refused names) is read whole', async () => {
    const entry = (i: number) => ({ resource: 'Migration', field: 'repositories', code: 'invalid_value', index: i, value: `acme/r${i}`, message: `acme/r${i} is not a repository of acme`.padEnd(120) });
    const api = await startScriptedServer(json(422, { message: 'Validation Failed', errors: Array.from({ length: 2000 }, (_, i) => entry(i)) }));
    try {
      const result = await runCli(['start', 'widgets'], { env: { SVC_BASE_URL: api.url, SVC_TOKEN: 't', SVC_ORG: 'acme' } });
      expect(result.code).toBe(5);
      expect(result.stderr).toMatch(/^error: the service rejected the request: 2000 repositories are not in acme: r0, r1, .* r9, … and 1990 more\n/);
    } finally {
      await api.close();
    }
  });
});

describe('list says when it shows one page of more', () => {
  it('showing 30 of 31 (use --all) on stderr; nothing when the page is all there is', async () => {
    const { sandbox, env } = await testSandbox();
    const org = sandbox.store.organization('octo-org')!;
    const all = () => runCli(['list', '--all', '--json'], { env }).then((r) => (JSON.parse(r.stdout) as Migration[]).length);
    sandbox.store.bulkExports(org, 30 - (await all()));
    const thirty = await runCli(['list'], { env });
    expect(thirty.stdout.trim().split('\n')).toHaveLength(30);
    expect(thirty.stderr).toBe('');
    sandbox.store.bulkExports(org, 1);
    const page = await runCli(['list'], { env });
    expect(page.code, page.stderr).toBe(0);
    expect(page.stdout.trim().split('\n')).toHaveLength(30);
    expect(page.stderr).toBe('showing 30 of 31 migrations (use --all)\n');
    const second = await runCli(['list', '--per-page', '10', '--page', '2'], { env });
    expect(second.stderr).toBe('showing 10 of 31 migrations, page 2 (use --all)\n');
    expect((await runCli(['list', '--all'], { env })).stderr).toBe('');
    expect((await runCli(['list', '-q'], { env })).stderr).toBe('');
  });
});

describe('--json with fields, as gh', () => {
  it('list, status and repos print only the fields named, in that order', async () => {
    const { env } = await testSandbox();
    const { id } = await started(env, ['widgets', 'docs.site'], ['--lock']);
    const list = await runCli(['list', '--json', 'id,state'], { env });
    expect(list.code, list.stderr).toBe(0);
    const listed = JSON.parse(list.stdout) as Record<string, unknown>[];
    expect(listed[0]).toEqual({ id, state: expect.any(String) });
    expect(listed.every((m) => Object.keys(m).join() === 'id,state')).toBe(true);
    const status = await runCli(['status', String(id), '--json=lock_repositories,id'], { env });
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toEqual({ lock_repositories: true, id });
    // A migration id after --json stays an id.
    const whole = await runCli(['status', '--json', String(id)], { env });
    expect(Object.keys(JSON.parse(whole.stdout) as object)).toContain('guid');
    const repos = await runCli(['repos', '--json', 'full_name,size', String(id)], { env });
    expect(repos.code, repos.stderr).toBe(0);
    expect((JSON.parse(repos.stdout) as { full_name: string }[]).map((r) => Object.keys(r).join())).toEqual(['full_name,size', 'full_name,size']);
  });
});

describe('times in UTC, as everywhere else', () => {
  it('a rate-limit wait names the moment it ends in ISO 8601 UTC', async () => {
    const api = await startScriptedServer(json(429, { message: 'slow down' }, { 'retry-after': '2' }), json(200, []));
    try {
      const result = await runCli(['list'], { env: { SVC_BASE_URL: api.url, SVC_TOKEN: 't', SVC_ORG: 'acme', TZ: 'America/Los_Angeles' } });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toMatch(/waiting 2 s until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ before retrying/);
    } finally {
      await api.close();
    }
  });

  it.skipIf(!hasScript)(`the waiting line on a terminal says when the last change was, in UTC${unless(hasScript, 'util-linux `script` is not installed')}`, async () => {
    // The migrations move only when the sandbox's clock is moved, and it is moved when the screen
    // shows the step before: first both pending, then a change on the waiting line. However slowly
    // the CLI starts or draws, it sees each state (with a real clock it could start after both
    // migrations were done, and show no change at all).
    const { sandbox, env } = await testSandbox({ exportSeconds: 600 });
    const a = await started(env, ['widgets']);
    const b = await started(env, ['docs.site']);
    const bothPending = new RegExp(`migration ${a.id} pending, migration ${b.id} pending`);
    const lastChange = / · last: \d+ \S+ → \S+ at \d\d:\d\d:\d\dZ/;
    let step = 0;
    const wait = await onTerminal(['status', String(a.id), String(b.id), '--wait', '--interval', '0.1', '--no-color'], {
      env: { ...env, TZ: 'America/Los_Angeles' },
      setup: 'stty cols 160 rows 40',
      onScreen: (screen) => {
        // A fifth of the export time in, both are exporting (src/sandbox/state.ts); past it, exported.
        if (step === 0 && bothPending.test(screen)) {
          step = 1;
          sandbox.clock.advance(200_000);
        } else if (step === 1 && lastChange.test(screen)) {
          step = 2;
          sandbox.clock.advance(600_000);
        }
      },
    });
    expect(wait.code, wait.screen).toBe(0);
    expect(step).toBe(2);
    expect(wait.screen).toMatch(lastChange);
    expect(wait.screen).not.toMatch(/[AP]M\b/);
  });
});

describe('--no-color reaches the prompts', () => {
  it.skipIf(!hasScript)(`start on a terminal with --no-color asks without a colour, as with NO_COLOR${unless(hasScript, 'util-linux `script` is not installed')}`, async () => {
    const { env } = await testSandbox();
    const steps: [RegExp, string][] = [
      [/Repositories to export/, 'widgets\r'],
      [/Options/, '\r'],
      [/Start this export\?/, 'n\r'],
    ];
    const colourful = await onTerminal(['start'], { env: { ...env, FORCE_COLOR: undefined, NO_COLOR: undefined }, setup: 'stty cols 120 rows 40', steps });
    // The prompts do colour a terminal by default: what --no-color must take away.
    expect(colourful.screen).toMatch(/\u001b\[[0-9;]*m/);
    const plain = await onTerminal(['start', '--no-color'], { env: { ...env, FORCE_COLOR: undefined, NO_COLOR: undefined }, setup: 'stty cols 120 rows 40', steps });
    expect(plain.screen).toMatch(/Start this export\?/);
    expect(plain.code).toBe(2);
    expect(plain.screen).not.toMatch(/\u001b\[[0-9;]*m/);
  });
});

describe('a progress bar ends before the next line', () => {
  it.skipIf(!hasScript)(`export on a terminal: every line after the bar starts on a cleared line${unless(hasScript, 'util-linux `script` is not installed')}`, async () => {
    const { env } = await testSandbox({ archivePadBytes: 4 << 20 });
    const dir = mkdtempSync(join(tmpdir(), 'svc-owner-'));
    const result = await onTerminal(['export', 'widgets', '-o', join(dir, 'a.tgz'), '--interval', '0.1', '--no-color'], {
      env,
      setup: 'stty cols 120 rows 40',
    });
    expect(result.code, result.screen).toBe(0);
    expect(result.screen).toMatch(/B\/s/);
    // The bar's line ends with its rate; whatever comes next first clears it.
    expect(result.screen).not.toMatch(/B\/s(?!\r\u001b\[2K)/);
  });
});

describe('help shows nothing internal', () => {
  it('webhook listen --help says what --secret does without commander\'s preset', async () => {
    const result = await runCli(['webhook', 'listen', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/--secret \[secret\]/);
    expect(result.stdout).not.toMatch(/preset|\\u0000|\u0000/);
    // The rest of the help is as every command's: global options too.
    expect(result.stdout).toMatch(/Global Options:/);
  });
});

describe('config list with nothing stored', () => {
  it('leaves stdout empty and says so on stderr; --json prints {}', async () => {
    const env = { SVC_CONFIG_DIR: join(mkdtempSync(join(tmpdir(), 'svc-owner-')), 'config') };
    const result = await runCli(['config', 'list'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('nothing stored\n');
    const json = await runCli(['config', 'list', '--json'], { env });
    expect(JSON.parse(json.stdout)).toEqual({});
    expect(json.stderr).toBe('');
    expect((await runCli(['config', 'set', 'org', 'acme'], { env })).code).toBe(0);
    expect((await runCli(['config', 'list'], { env })).stdout).toBe('org=acme\n');
  });
});
