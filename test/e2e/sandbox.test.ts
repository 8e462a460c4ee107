import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/run-cli.js';
import { sandboxCommand } from '../helpers/sandbox-command.js';

describe('svc-migrate sandbox', () => {
  it('prints its base URL and tokens, serves the CLI, and stops cleanly on Ctrl-C', async () => {
    const sandbox = await sandboxCommand(['--export-seconds', '1']);
    const { info } = sandbox;
    expect(info.base_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(info.org).toBe('octo-org');
    expect(info.tokens.map((t) => t.kind).sort()).toEqual([
      'app-user',
      'classic',
      'classic',
      'classic',
      'fine-grained',
      'installation',
    ]);

    const listed = await runCli(['list', '--json'], {
      env: { SVC_BASE_URL: info.base_url, SVC_TOKEN: info.token, SVC_ORG: info.org },
    });
    expect(listed.code).toBe(0);
    expect(Array.isArray(JSON.parse(listed.stdout))).toBe(true);

    const revoked = await runCli(['list'], {
      env: { SVC_BASE_URL: info.base_url, SVC_TOKEN: 'svc_sandbox_revoked', SVC_ORG: info.org },
    });
    expect(revoked.code).toBe(3);
    expect(revoked.stderr).toMatch(/Bad Credentials/);

    const stopped = await sandbox.stop();
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).toMatch(/sandbox stopped/);
  });

  it('loads organizations, repositories and tokens from --seed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'seed-'));
    const seedFile = join(dir, 'seed.json');
    writeFileSync(
      seedFile,
      JSON.stringify({
        users: [{ login: 'ada', id: 1 }],
        organizations: [
          { login: 'analytical', id: 2, owners: ['ada'], members: [], repositories: [{ name: 'engine' }] },
        ],
        tokens: [{ token: 'ada_token', kind: 'classic', user: 'ada', label: 'owner' }],
      }),
    );
    const sandbox = await sandboxCommand(['--seed', seedFile]);
    const { info } = sandbox;
    expect(info).toMatchObject({ org: 'analytical', token: 'ada_token' });
    const listed = await runCli(['list', '--json'], {
      env: { SVC_BASE_URL: info.base_url, SVC_TOKEN: 'ada_token', SVC_ORG: 'analytical' },
    });
    expect(JSON.parse(listed.stdout)).toEqual([]);
    await sandbox.stop();
  });

  it('rejects a malformed seed file with a usage error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'seed-'));
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ users: [] }));
    const result = await runCli(['sandbox', '--seed', join(dir, 'bad.json')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/"organizations" must be a non-empty array/);
    const organizations = [{ login: 'a', id: 2, owners: [], repositories: [] }];
    writeFileSync(join(dir, 'kind.json'), JSON.stringify({ users: [], organizations, tokens: [{ token: 't', kind: 'wizard', user: 'x' }] }));
    const kind = await runCli(['sandbox', '--seed', join(dir, 'kind.json')]);
    expect(kind.code).toBe(2);
    expect(kind.stderr).toMatch(/tokens\[0\]\.kind must be one of classic, fine-grained, app-user, installation/);
    const counted = [{ login: 'a', id: 2, owners: [], repositories: [{ name: 'r', issues: -1, pull_requests: 1.5 }] }];
    writeFileSync(join(dir, 'counts.json'), JSON.stringify({ users: [], organizations: counted, tokens: [] }));
    const counts = await runCli(['sandbox', '--seed', join(dir, 'counts.json')]);
    expect(counts.code).toBe(2);
    expect(counts.stderr).toMatch(/organizations\[0\]\.repositories\[0\]\.issues must be a whole number; organizations\[0\]\.repositories\[0\]\.pull_requests must be a whole number/);
  });
});

describe('--sandbox on any command', () => {
  it('starts the emulator in-process, with no token or base URL needed', async () => {
    const result = await runCli(['list', '--sandbox', '--json']);
    expect(result.code).toBe(0);
    const migrations = JSON.parse(result.stdout) as { id: number }[];
    expect(migrations.length).toBeGreaterThanOrEqual(1);
    expect(result.stderr).toMatch(/using the in-process sandbox/);
  });

  it('is also turned on by SVC_SANDBOX=1', async () => {
    const result = await runCli(['status', '1000', '--json'], { env: { SVC_SANDBOX: '1' } });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).id).toBe(1000);
  });
});
