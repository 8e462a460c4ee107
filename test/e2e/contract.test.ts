import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Migration } from '../../src/api/types.js';
import { untilInDirectory } from '../helpers/fs-events.js';
import { BIN, runCli, spawnCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';
import { json, startScriptedServer } from '../helpers/scripted-server.js';
import { hasScript, onTerminal } from '../helpers/terminal.js';
import { unless } from '../helpers/skip.js';

// The contract kept around the export workflow: tables in pipes, quiet output, hints, auth,
// unlocking, and the smaller promises of docs/cli.md.

const FAST = ['--interval', '0.1'];
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-contract-'));
const noBug = (text: string) => expect(text).not.toMatch(/bug|unexpected error/i);

async function started(env: Record<string, string>, repos: string[], extra: string[] = []): Promise<Migration> {
  const result = await runCli(['start', ...repos, '--json', ...extra], { env });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Migration;
}

describe('tables', () => {
  it('webhook events in a pipe: plain tab-separated lines, no borders', async () => {
    const result = await runCli(['webhook', 'events']);
    expect(result.code).toBe(0);
    expect(result.stdout).not.toMatch(/[│┌─]/);
    const first = result.stdout.split('\n')[0] as string;
    expect(first.split('\t')).toHaveLength(5);
  });

  it('repos in a pipe: one line per repository, the name first', async () => {
    const { env } = await testSandbox();
    const { id } = await started(env, ['widgets', 'docs.site']);
    const result = await runCli(['repos', String(id)], { env });
    expect(result.stdout.trim().split('\n').map((line) => line.split('\t')[0])).toEqual([
      'octo-org/widgets',
      'octo-org/docs.site',
    ]);
  });

  it('on a terminal, every table has one style, whatever its width: a header line, no borders, as gh', async () => {
    const { env } = await testSandbox({ exportSeconds: 0.1 });
    const archive = join(tempDir(), 'a.tar.gz');
    const exported = await runCli(['export', 'widgets', 'docs.site', '-o', archive, ...FAST], { env });
    expect(exported.code, exported.stderr).toBe(0);
    const id = /migration (\d+)/.exec(exported.stderr)?.[1] ?? '';
    const tables: [string[], RegExp][] = [
      [['list'], /^ID +STATE +REPOSITORIES +LOCK REQUESTED +CREATED +UPDATED$/],
      [['repos', id], /^NAME +VISIBILITY +DEFAULT BRANCH +SIZE \(KB\) +ARCHIVED +PUSHED$/],
      [['webhook', 'events'], /^EVENT +PERMISSION +AVAILABILITY +ACTION +REQUIRED$/],
      [['archive', 'inspect', archive], /^REPOSITORY +REFS +GIT DATA /],
    ];
    for (const columns of [200, 120, 80]) {
      for (const [args, header] of tables) {
        const result = await runCli([...args, '--no-color'], { env, terminal: { columns } });
        expect(result.code, result.stderr).toBe(0);
        const lines = result.stdout.trimEnd().split('\n').filter((line) => !/^\S+\.tar\.gz: |^metadata: /.test(line));
        expect(result.stdout, `${args[0]} at ${columns}`).not.toMatch(/[│┌┐└┘─]/);
        if (columns === 200) expect(lines[0], `${args[0]} at ${columns}`).toMatch(header);
        for (const line of lines) expect(line.length, `${args[0]} at ${columns}: ${line}`).toBeLessThanOrEqual(columns);
      }
    }
    // Event names are never cut.
    expect((await runCli(['webhook', 'events', '--no-color'], { terminal: { columns: 80 } })).stdout).toContain('branch_protection_configuration');
  });
});

describe('list --state', () => {
  it('finds an older failure beyond the first page', async () => {
    const { sandbox, env } = await testSandbox();
    const failed = await started(env, ['will-fail']);
    const org = sandbox.store.organization('octo-org')!;
    const stored = sandbox.store.list(org).find((m) => m.id === failed.id)!;
    stored.createdAt = 0;
    sandbox.store.bulkExports(org, 40);
    const firstPage = JSON.parse((await runCli(['list', '--json'], { env })).stdout) as Migration[];
    expect(firstPage.map((m) => m.id)).not.toContain(failed.id);
    const result = await runCli(['list', '--state', 'failed', '--json'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as Migration[]).map((m) => [m.id, m.state])).toEqual([[failed.id, 'failed']]);
    const onePage = await runCli(['list', '--state', 'failed', '--page', '1', '--json'], { env });
    expect(JSON.parse(onePage.stdout)).toEqual([]);
    expect(onePage.stderr).toMatch(/only page 1 was searched/);
  });
});

describe('start and status output', () => {
  it('start -q prints just the id and no hint; --json the object', async () => {
    const { env } = await testSandbox();
    const quiet = await runCli(['start', 'widgets', '-q'], { env });
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).toMatch(/^\d+\n$/);
    expect(quiet.stderr).toBe('');
    const asJson = await runCli(['start', 'docs.site', '--json'], { env });
    expect(JSON.parse(asJson.stdout)).toMatchObject({ state: 'pending' });
    expect(asJson.stdout).not.toMatch(/next:/);
  });

  it('status --wait --json prints the whole object, repositories included', async () => {
    const { env } = await testSandbox();
    const { id } = await started(env, ['widgets']);
    const result = await runCli(['status', String(id), '--wait', '--json', ...FAST], { env });
    expect(result.code, result.stderr).toBe(0);
    const migration = JSON.parse(result.stdout) as Migration;
    expect(migration.state).toBe('exported');
    expect(migration.repositories?.map((r) => r.full_name)).toEqual(['octo-org/widgets']);
    const excluded = await runCli(['status', String(id), '--wait', '--json', '--exclude', 'repositories'], { env });
    expect(JSON.parse(excluded.stdout)).not.toHaveProperty('repositories');
  });

  it('start --wait --json prints the whole object too', async () => {
    const { env } = await testSandbox();
    const result = await runCli(['start', 'widgets', '--wait', '--json', ...FAST], { env });
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as Migration).repositories).toHaveLength(1);
  });
});

describe('auth', () => {
  const configDir = () => join(tempDir(), 'cfg');

  it('login --org --base-url --ca-file checks the token and stores all four', async () => {
    const { sandbox } = await testSandbox();
    const dir = configDir();
    const env = { SVC_CONFIG_DIR: dir };
    const login = await runCli(['auth', 'login', '--with-token', '--org', sandbox.org, '--base-url', sandbox.baseUrl, '--ca-file', sandbox.ca!.file], {
      env,
      stdin: `${sandbox.ownerToken}\n`,
    });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stderr).toMatch(/checked \(owner access to octo-org's migrations\)/);
    expect(sandbox.requests.some((r) => r.url.startsWith('/orgs/octo-org/migrations'))).toBe(true);
    const stored = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    expect(stored).toMatchObject({ org: sandbox.org, baseUrl: sandbox.baseUrl, token: sandbox.ownerToken, caFile: sandbox.ca!.file });
    const status = await runCli(['auth', 'status', '--json'], { env });
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      logged_in: true,
      source: 'config',
      org: { value: sandbox.org, source: 'config' },
      base_url: { value: sandbox.baseUrl, source: 'config' },
      check: { result: 'valid' },
    });
    expect(status.stdout).not.toContain(sandbox.ownerToken);
  });

  it('login without a base URL stores nothing and says what is missing', async () => {
    const dir = configDir();
    const result = await runCli(['auth', 'login', '--with-token'], { env: { SVC_CONFIG_DIR: dir }, stdin: 'tok\n' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no API base URL to check the token against/);
    expect(existsSync(join(dir, 'config.json'))).toBe(false);
  });

  it('status says a revoked token is rejected (exit 3) and where each value comes from', async () => {
    const { sandbox, env: reach } = await testSandbox();
    const env = { SVC_CONFIG_DIR: configDir(), SVC_TOKEN: 'svc_sandbox_revoked', SVC_BASE_URL: sandbox.baseUrl, SVC_CA_FILE: reach.SVC_CA_FILE };
    const result = await runCli(['auth', 'status', '--org', sandbox.org], { env });
    expect(result.code).toBe(3);
    expect(result.stdout).toMatch(/token .* \(from SVC_TOKEN\)/);
    expect(result.stdout).toMatch(/base URL .* \(SVC_BASE_URL\)/);
    expect(result.stdout).toMatch(/org +octo-org \(--org\)/);
    expect(result.stdout).toMatch(/check .*rejected/);
    noBug(result.stderr);
  });
});

describe('export and unlock', () => {
  it('export --lock --unlock of a migration that fails releases the locks and says so (exit 6)', async () => {
    const { sandbox, env } = await testSandbox();
    const result = await runCli(['export', 'will-fail', 'widgets', '--lock', '--unlock', '-o', join(tempDir(), 'a.tgz'), ...FAST], { env });
    expect(result.code).toBe(6);
    expect(result.stderr).toMatch(/failed on the service/);
    expect(result.stderr).toMatch(/hint: the repositories are unlocked; start a new export/);
    expect(result.stderr).not.toMatch(/keep waiting/);
    const [migration] = sandbox.store.list(sandbox.store.organization('octo-org')!).filter((m) => m.kind === 'export');
    expect([...(migration?.locked ?? [])]).toEqual([]);
  });

  it('without --unlock the hint says how to unlock', async () => {
    const { env } = await testSandbox();
    const result = await runCli(['export', 'will-fail', '--lock', '-o', join(tempDir(), 'a.tgz'), ...FAST], { env });
    expect(result.code).toBe(6);
    expect(result.stderr).toMatch(/hint: unlock the repositories with `svc-migrate unlock \d+ --all`, then start a new export/);
  });

  it('unlock of a repository not in the migration points to `repos`', async () => {
    const { env } = await testSandbox();
    const { id } = await started(env, ['widgets'], ['--lock']);
    const result = await runCli(['unlock', String(id), 'Hello-World'], { env });
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(new RegExp(`check the names with \`svc-migrate repos ${id}\``));
    expect(result.stderr).not.toMatch(/retry/);
  });

  it('unlock --all with nothing to unlock says so', async () => {
    const { env } = await testSandbox();
    const none = await runCli(['unlock', '1000', '--all'], { env });
    expect(none.code, none.stderr).toBe(0);
    expect(none.stderr).toMatch(/migration 1000 has no repositories to unlock/);
    expect(none.stderr).not.toMatch(/or pass --all/);
  });
});

describe('the help\'s example and interactive start', () => {
  it('`export --sandbox --yes` works without a terminal', async () => {
    const output = join(tempDir(), 'demo.tgz');
    const result = await runCli(['export', '--sandbox', '--yes', '-o', output, ...FAST], { timeoutMs: 30_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/no repositories given; exporting the sandbox's octo-org\/Hello-World/);
    expect(statSync(output).size).toBeGreaterThan(0);
  });

  it('the try-it line of --help works again and again in one directory', async () => {
    const help = await spawnCli(['--help']);
    const line = /Try it without an account: svc-migrate (.+)/.exec(help.stdout)?.[1] ?? '';
    expect(line).toMatch(/^export --sandbox/);
    const dir = tempDir();
    for (const run of [1, 2]) {
      const result = await spawnCli(line.split(' '), { cwd: dir, timeoutMs: 40_000 });
      expect(result.code, `run ${run}: ${result.stderr}`).toBe(0);
    }
  }, 90_000);

  it.skipIf(!hasScript)(`start on a terminal asks in words, shows a summary, and Enter confirms${unless(hasScript, 'util-linux `script` is not installed')}`, async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 60 });
    const result = await onTerminal(['start'], {
      env,
      setup: 'stty cols 120 rows 40',
      steps: [
        [/Repositories to export/, 'widgets\r'],
        [/Options/, '\r'],
        [/Start this export\?/, '\r'],
      ],
    });
    expect(result.code, result.screen).toBe(0);
    expect(result.screen).toMatch(/Lock the repositories while migrating/);
    expect(result.screen).not.toMatch(/lock_repositories|"repositories"/);
    expect(result.screen).toMatch(/Export of 1 repository: octo-org\/widgets/);
    expect(sandbox.store.list(sandbox.store.organization('octo-org')!).filter((m) => m.kind === 'export')).toHaveLength(1);
  });
});

describe('smaller promises', () => {
  it('config get apiVersion prints the default', async () => {
    const result = await runCli(['config', 'get', 'apiVersion'], { env: { SVC_CONFIG_DIR: join(tempDir(), 'c') } });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('2026-03-10\n');
  });

  it('webhook send --url host:port posts to http://host:port/', async () => {
    const receiver = await startScriptedServer(json(200, { ok: true }));
    const port = new URL(receiver.url).port;
    const result = await runCli(['webhook', 'send', '--url', `127.0.0.1:${port}`, '--event', 'ping']);
    expect(result.code, result.stderr).toBe(0);
    expect(receiver.requests).toHaveLength(1);
    await receiver.close();
  });

  it('a refused or 503 request says it is retrying', async () => {
    const api = await startScriptedServer(json(503, { message: 'busy' }), json(200, []));
    const result = await runCli(['list', '--json'], {
      env: { SVC_BASE_URL: api.url, SVC_TOKEN: 't', SVC_ORG: 'acme' },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/retrying GET .*\/orgs\/acme\/migrations.* in [\d.]+ s \(.*503.*\)…/);
    await api.close();
  });

  it('export shows what the service says of its migration inert: a state that is an escape sequence', async () => {
    const migration = (state: string) => ({
      id: 1, node_id: 'n', guid: 'g', state, lock_repositories: false, owner: { login: 'acme', id: 1 },
      repositories: [{ id: 1, name: 'widgets', full_name: 'acme/widgets' }], created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z', url: 'u',
    });
    // No earlier export of them; the start; then every check of it: failed.
    const api = await startScriptedServer(json(200, []), json(201, migration('pend\u001b]0;PWNED\u0007ing')), json(200, migration('failed')));
    try {
      const result = await runCli(['export', 'widgets', '-o', join(tempDir(), 'a.tgz'), ...FAST], { env: { SVC_BASE_URL: api.url, SVC_TOKEN: 't', SVC_ORG: 'acme' } });
      expect(result.code, result.stderr).toBe(6);
      expect(result.stderr).toContain('started migration 1 (pend\\x1b]0;PWNED\\x07ing)');
      expect(result.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    } finally {
      await api.close();
    }
  });

  it('resuming a download says from where', async () => {
    const { sandbox, env } = await testSandbox({ archivePadBytes: 4 * 1024 * 1024 });
    const { id } = await started(env, ['widgets'], ['--wait', ...FAST]);
    sandbox.faults.set({ throttleBytesPerSecond: 2 * 1024 * 1024 });
    const output = join(tempDir(), 'a.tar.gz');
    const child = spawn(process.execPath, [BIN, 'download', String(id), '-o', output], { env: { ...process.env, ...env } });
    const watching = new AbortController();
    const exited = new Promise((resolve) => child.on('exit', resolve)).finally(() => watching.abort());
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    // Ctrl-C once the first bytes are in the .part file (a download that ended first fails below).
    await untilInDirectory(dirname(output), () => existsSync(`${output}.part`) && statSync(`${output}.part`).size > 0, watching.signal).catch(() => {});
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    clearTimeout(timer);
    sandbox.faults.clear();
    const resumed = await runCli(['download', String(id), '-o', output], { env });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/resuming .*a\.tar\.gz from [\d.]+ \w+ \(\d+ bytes\) already in .*a\.tar\.gz\.part/);
  });

  it.skipIf(!hasScript)(`webhook verify on a terminal says it reads the body from stdin${unless(hasScript, 'util-linux `script` is not installed')}`, async () => {
    const result = await onTerminal(['webhook', 'verify', '--secret', 's', '--signature', 'sha256=00'], {
      setup: 'stty cols 120 rows 40',
      steps: [[/reading the body from stdin/, '{}\r\x04']],
    });
    expect(result.screen).toMatch(/Ctrl-D/);
    expect(result.code).toBe(1);
    expect(result.screen).toMatch(/invalid/);
  });
});

describe('--json keys', () => {
  /** Keys of the tool's own making that are not snake_case; a map keyed by names from elsewhere (an archive's refs) is data. */
  const notSnake = (value: unknown, path = ''): string[] => {
    if (Array.isArray(value)) return value.flatMap((item) => notSnake(item, `${path}[]`));
    if (typeof value !== 'object' || value === null) return [];
    return Object.entries(value).flatMap(([key, inner]) => [
      ...(/^[a-z0-9_]+$/.test(key) ? [] : [`${path}.${key}`]),
      ...(key === 'refs' ? [] : notSnake(inner, `${path}.${key}`)),
    ]);
  };
  /** One JSON document, or NDJSON lines. */
  const documents = (stdout: string): unknown[] => {
    try {
      return [JSON.parse(stdout)];
    } catch {
      return stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as unknown);
    }
  };

  it('every command\'s --json output is snake_case, as the service\'s own fields are', async () => {
    const { env } = await testSandbox({ exportSeconds: 1 });
    const dir = tempDir();
    const configEnv = { ...env, SVC_CONFIG_DIR: join(dir, 'config') };
    const archive = join(dir, 'a.tar.gz');
    const outputs: Record<string, string> = {};
    const run = async (name: string, args: string[], extra: Record<string, string> = {}) => {
      const result = await runCli([...args, '--json'], { env: { ...configEnv, ...extra } });
      expect(result.code, `${name}: ${result.stderr}`).toBe(0);
      outputs[name] = result.stdout;
    };
    await run('start', ['start', 'widgets', '--lock']);
    const id = String(JSON.parse(outputs.start as string).id);
    await run('status --wait', ['status', id, '--wait', ...FAST]);
    await run('list', ['list']);
    await run('repos', ['repos', id]);
    await run('download', ['download', id, '-o', archive]);
    await run('archive verify', ['archive', 'verify', archive]);
    await run('archive inspect', ['archive', 'inspect', archive]);
    await run('unlock', ['unlock', id, '--all']);
    await run('delete-archive', ['delete-archive', id, '--yes']);
    await run('config set', ['config', 'set', 'baseUrl', 'https://api.example.com']);
    await run('config set', ['config', 'set', 'apiVersion', '2026-03-10']);
    await run('config list', ['config', 'list']);
    await run('config get', ['config', 'get', 'baseUrl']);
    await run('config path', ['config', 'path']);
    await run('auth status', ['auth', 'status']);
    await run('webhook events', ['webhook', 'events']);
    await run('webhook events push', ['webhook', 'events', 'push']);
    expect(JSON.parse(outputs['config get'] as string)).toEqual({ base_url: 'https://api.example.com' });
    const found = Object.entries(outputs).flatMap(([name, stdout]) => documents(stdout).flatMap((document) => notSnake(document).map((key) => `${name}: ${key}`)));
    expect(found).toEqual([]);
  });
});

describe('exit 1 is for our bugs only', () => {
  it('a status the service should never send is a server error (exit 8), not a bug', async () => {
    const api = await startScriptedServer(json(418, { message: 'I am a teapot' }));
    try {
      const result = await runCli(['list'], { env: { SVC_BASE_URL: api.url, SVC_TOKEN: 't', SVC_ORG: 'acme' } });
      expect(result.code, result.stderr).toBe(8);
      expect(result.stderr).toMatch(/unexpected HTTP 418: I am a teapot/);
      noBug(result.stderr.replace('unexpected HTTP', ''));
    } finally {
      await api.close();
    }
  });

  it('archive verify with a temporary directory it cannot use names it (exit 2)', async () => {
    const { env } = await testSandbox();
    const out = join(tempDir(), 'a.tar.gz');
    const exported = await runCli(['export', 'widgets', '-o', out, ...FAST], { env });
    expect(exported.code, exported.stderr).toBe(0);
    // Spawned: node reads TMPDIR from its own process's environment.
    const result = await spawnCli(['archive', 'verify', out], { env: { TMPDIR: '/proc/svc-migrate-none' } });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/\/proc/);
    noBug(result.stderr);
  });

  it.skipIf(!existsSync('/dev/full'))(`stdout on a full disk (/dev/full) is exit 2 with a message, not a stack trace${unless(existsSync('/dev/full'), 'no /dev/full here')}`, async () => {
    const full = openSync('/dev/full', 'w');
    try {
      const child = spawn(process.execPath, [BIN, 'webhook', 'events'], { stdio: ['ignore', full, 'pipe'] });
      let stderr = '';
      child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      expect(await new Promise((resolve) => child.on('exit', resolve))).toBe(2);
      expect(stderr).toMatch(/^error: cannot write to stdout: no space left on the device\nhint: send stdout elsewhere/);
      noBug(stderr);
    } finally {
      closeSync(full);
    }
  });
});
