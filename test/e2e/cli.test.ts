import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, runCli, spawnCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';
import { empty, json, type ScriptedServer, startScriptedServer } from '../helpers/scripted-server.js';

const TOKEN = 'ghp_e2eSecretToken42';
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
let api: ScriptedServer;

const envFor = (server: ScriptedServer) => ({ SVC_BASE_URL: server.url, SVC_TOKEN: TOKEN, SVC_ORG: 'acme' });
const migration = {
  id: 42,
  guid: '0b989ba4-242f-11e5-81e1-c7b6966d2516',
  state: 'exported',
  lock_repositories: true,
  owner: { login: 'acme' },
  repositories: [{ full_name: 'acme/widgets' }],
  created_at: '2026-03-10T10:00:00Z',
  updated_at: '2026-03-10T10:05:00Z',
};

afterEach(async () => {
  await api?.close();
});

describe('start-up', () => {
  const heavy = [
    '/node_modules/undici/',
    '/node_modules/ora/',
    '/node_modules/@inquirer/',
    '/node_modules/conf/',
    // The archive check's readers, loaded by the commands that read an archive.
    '/node_modules/tar/',
    '/node_modules/@streamparser/',
    // The sandbox, compiled and bundled (scripts/bundle.js).
    '/dist/sandbox/',
    '/dist/cli-sandbox.js',
  ];

  it.each([['--version'], ['--help'], ['list', '--help']])(
    '%s loads none of undici, ora, inquirer, conf, tar or the sandbox',
    async (...args) => {
      const record = join(tmpdir(), `svc-migrate-imports-${process.pid}-${args.join('')}.txt`);
      rmSync(record, { force: true });
      const result = await spawnCli(args, {
        nodeArgs: ['--import', new URL('../helpers/record-imports.mjs', import.meta.url).pathname],
        env: { RECORD_IMPORTS_TO: record },
      });
      expect(result.code).toBe(0);
      const loaded = readFileSync(record, 'utf8');
      expect(loaded).toMatch(/\/dist\/cli(-version)?\.js/);
      for (const name of heavy) expect(loaded).not.toContain(name);
      // The bundle applies: what every command loads comes out of dist/cli.js, not one module at a
      // time (scripts/bundle.js; docs/benchmarks.md, "Tuning that stays").
      for (const name of ['/node_modules/commander/', '/node_modules/chalk/', '/dist/main.js', '/dist/program.js']) expect(loaded).not.toContain(name);
    },
  );

  it('a command that talks to the service loads undici through its public entry, and not the archive check', async () => {
    api = await startScriptedServer(json(200, []));
    const record = join(tmpdir(), `svc-migrate-imports-${process.pid}-list.txt`);
    rmSync(record, { force: true });
    const result = await spawnCli(['list', '--json'], {
      nodeArgs: ['--import', new URL('../helpers/record-imports.mjs', import.meta.url).pathname],
      env: { ...envFor(api), RECORD_IMPORTS_TO: record },
    });
    expect(result.code).toBe(0);
    const loaded = readFileSync(record, 'utf8');
    expect(loaded).toContain('/node_modules/undici/index.js');
    expect(loaded).not.toContain('/node_modules/tar/');
  });

  it('prints the version of package.json', async () => {
    const result = await runCli(['--version']);
    expect(result.stdout.trim()).toBe(pkg.version);
  });

  it('prints the overview with the typical workflow when run alone', async () => {
    const result = await runCli([]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Typical workflow/);
  });
});

describe('output', () => {
  it('ends quietly with 0 when its reader stops early (| head)', async () => {
    const child = spawn(process.execPath, [BIN, 'webhook', 'events'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // before the program writes: its first write finds the pipe closed
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const [code] = (await once(child, 'close')) as [number | null];
    expect(stderr).not.toMatch(/EPIPE/);
    expect(code).toBe(0);
  });
});

describe('a reader that stops mid-run', () => {
  it('stops the export as on a signal: the directory lock is released and stderr names what stays locked (exit 141)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-pipe-'));
    const { sandbox, env } = await testSandbox({ exportSeconds: 30 });
    const child = spawn(process.execPath, [BIN, 'export', 'docs.site', '--lock', '--output-dir', dir, '--json'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env, HOME: dir },
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    // Like `| head`: read until the batch has started (its repository is locked), then go away.
    let stdout = '';
    for await (const chunk of child.stdout.setEncoding('utf8')) {
      stdout += chunk as string;
      if (/"state":"started"/.test(stdout)) break;
    }
    child.stdout.destroy();
    const [code] = (await once(child, 'close')) as [number | null];
    expect(code).toBe(141);
    expect(stderr).toContain(`1 repository is still locked; \`svc-migrate unlock --output-dir ${dir}\` unlocks it`);
    expect(stderr).not.toMatch(/EPIPE|this is a bug/);
    expect(existsSync(join(dir, 'svc-migrate.lock'))).toBe(false);
    expect(sandbox.store.list(sandbox.store.organization('octo-org')!).flatMap((m) => [...m.locked])).toEqual(['docs.site']);
  });
});

describe('usage errors exit 2', () => {
  // Each command's usage errors are in test/commands/, read in-process; these two are the binary's.
  it('from the built binary: the parser\'s, as error and hint, with the nearest command; one JSON line on stderr with --json, stdout empty', async () => {
    const typo = await spawnCli(['lsit']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toBe('error: unknown command \'lsit\'\nhint: did you mean list? see `svc-migrate --help`\n');
    const json = await spawnCli(['list', '--json', '--per-page', 'abc']);
    expect(json.code).toBe(2);
    expect(json.stdout).toBe('');
    expect(JSON.parse(json.stderr)).toEqual({ error: { code: 2, status: null, message: '--per-page: expected a positive integer, not "abc"' } });
  });

  it('from the built binary: a command\'s own check of its options (an id or --all-pending)', async () => {
    const result = await spawnCli(['status']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('error: give at least one migration id, or --all-pending\n');
  });

  it('says how to give a missing base URL or organization', async () => {
    const noBase = await runCli(['list', '--org', 'acme']);
    expect(noBase.code).toBe(2);
    expect(noBase.stderr).toMatch(/hint: .*--base-url/);
  });
});

describe('talking to the service', () => {
  it('lists migrations as one JSON array, with the required headers', async () => {
    api = await startScriptedServer(json(200, [migration]));
    const result = await runCli(['list', '--json'], { env: envFor(api) });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([migration]);
    expect(api.requests[0]?.url).toBe('/orgs/acme/migrations');
    expect(api.requests[0]?.headers).toMatchObject({
      authorization: `Bearer ${TOKEN}`,
      accept: 'application/vnd.service+json',
      'x-service-api-version': '2026-03-10',
      'user-agent': `svc-migrate/${pkg.version}`,
    });
  });

  it('reads org and base URL from the stored config when no flag or env gives them', async () => {
    api = await startScriptedServer(json(200, []));
    const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({ org: 'stored-org', baseUrl: api.url, token: 'stored-token' }),
    );
    const fromStore = await runCli(['list', '--json'], { env: { SVC_CONFIG_DIR: dir } });
    expect(fromStore.code).toBe(0);
    expect(api.requests[0]?.url).toBe('/orgs/stored-org/migrations');
    expect(api.requests[0]?.headers.authorization).toBe('Bearer stored-token');
    await runCli(['list', '--json'], { env: { SVC_CONFIG_DIR: dir, SVC_ORG: 'env-org', SVC_TOKEN: 'env-token' } });
    expect(api.requests[1]?.url).toBe('/orgs/env-org/migrations');
    expect(api.requests[1]?.headers.authorization).toBe('Bearer env-token');
  });

  it('renders a table for humans', async () => {
    api = await startScriptedServer(json(200, [migration]));
    const result = await runCli(['list'], { env: envFor(api) });
    // Off a terminal: one plain tab-separated line per migration, no header, no borders.
    expect(result.stdout).toMatch(/^42\texported\tacme\/widgets\tyes\t\S+\t\S+\n$/);
    expect(result.stdout).not.toMatch(/[│┌─]/);
  });

  it('takes --token over SVC_TOKEN and --api-version over the default', async () => {
    api = await startScriptedServer(json(200, migration));
    await runCli(['status', '42', '--token', 'flag-token', '--api-version', '2027-01-01'], { env: envFor(api) });
    expect(api.requests[0]?.headers.authorization).toBe('Bearer flag-token');
    expect(api.requests[0]?.headers['x-service-api-version']).toBe('2027-01-01');
  });

  it.each([
    [401, { message: 'Bad Credentials' }, 3, /revoked/],
    [403, { message: 'Resource not accessible by fine-grained personal access token' }, 3, /forbidden/],
    [404, { message: 'Not Found' }, 4, /migration 42 was not found in organization acme/],
    [
      422,
      { message: 'Validation Failed', errors: [{ field: 'repositories', message: 'acme/x not found' }] },
      5,
      /acme\/x not found/,
    ],
  ])('HTTP %i exits with its docs/cli.md code', async (status, body, code, message) => {
    api = await startScriptedServer(json(status, body));
    const result = await runCli(['status', '42'], { env: envFor(api) });
    expect(result.code).toBe(code);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).toMatch(/^hint: /m);
  });

  it('exits 8 when a rate-limit wait would outlast --max-wait, never 3', async () => {
    api = await startScriptedServer(json(403, { message: 'API rate limit exceeded' }, { 'retry-after': '3600' }));
    const result = await runCli(['status', '42', '--max-wait', '10s'], { env: envFor(api) });
    expect(result.code).toBe(8);
    expect(result.stderr).toMatch(/rate limited until/);
  });

  it('announces a rate-limit wait on stderr and then succeeds', async () => {
    api = await startScriptedServer(json(429, {}, { 'retry-after': '1' }), json(200, migration));
    const result = await runCli(['status', '42', '--json'], { env: envFor(api) });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/rate limited \(secondary\); waiting 1 s until/);
    expect(JSON.parse(result.stdout).id).toBe(42);
  });

  it('prints errors as one JSON line on stderr with --json', async () => {
    api = await startScriptedServer(json(404, { message: 'Not Found' }));
    const result = await runCli(['status', '42', '--json'], { env: envFor(api) });
    expect(result.stdout).toBe('');
    expect(JSON.parse(result.stderr.trim())).toEqual({
      error: { code: 4, status: 404, message: 'migration 42 was not found in organization acme' },
    });
  });

  it('traces HTTP with --debug and never prints the token', async () => {
    api = await startScriptedServer(empty(500), json(200, migration));
    const result = await runCli(['status', '42', '--debug'], { env: envFor(api) });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/→ GET http:\/\/127\.0\.0\.1:\d+\/orgs\/acme\/migrations\/42/);
    expect(result.stderr).toMatch(/← 500/);
    expect(result.stderr).toMatch(/authorization: Bearer \[REDACTED\]/);
    expect(`${result.stdout}${result.stderr}`).not.toContain(TOKEN);
  });
});

describe('help', () => {
  it('gives every command a purpose and real examples', async () => {
    const { buildProgram } = await import('../../src/program.js');
    const io = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: {} };
    const program = buildProgram(io, new AbortController().signal);
    const paths: string[][] = [];
    const walk = (command: typeof program, path: string[]) => {
      for (const child of command.commands) {
        if (child.name() === 'help') continue;
        paths.push([...path, child.name()]);
        walk(child, [...path, child.name()]);
      }
    };
    walk(program, []);
    expect(paths.length).toBeGreaterThan(25);
    const helps = await Promise.all(paths.map((path) => runCli([...path, '--help'])));
    helps.forEach((help, index) => {
      const name = paths[index]!.join(' ');
      expect(help.code, name).toBe(0);
      expect(help.stdout, name).toMatch(/^Usage: svc-migrate .+\n\n\S.+/);
      // An install line makes its directory first (completion).
      expect(help.stdout, name).toMatch(/\nExamples:\n {2}(mkdir -p \S+ && )?svc-migrate /);
      expect(help.stdout, name).toMatch(/Global Options:/);
    });
  }, 60_000);
});
