import { existsSync, mkdtempSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import { startMigration } from '../../src/api/migrations.js';
import type { Clock } from '../../src/support/clock.js';
import { downloadArchive } from '../../src/core/download.js';
import { runExport } from '../../src/core/export.js';
import { normalizeRepositories, parseReposFile } from '../../src/core/repo-list.js';
import { resolveUnlockTargets, unlockFailure, unlockRepositories } from '../../src/core/unlock.js';
import { ExitCode, NotFoundError, UsageError } from '../../src/errors.js';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/server.js';
import { sandboxTrust } from '../helpers/sandbox.js';

// The use-cases of src/core called directly, as the commands call them, against the sandbox on its
// own clock: what each returns and reports, and what it refuses, without a command around it.

// git is kept off PATH: this is the quick project, which starts no process; a corrupt archive fails
// its check before git is asked (test/integrity/released-after-git.test.ts runs them with git).
beforeEach(() => {
  vi.stubEnv('PATH', '/nonexistent');
});

const open: { sandbox: Sandbox; client: ApiClient }[] = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  for (const { sandbox, client } of open.splice(0)) {
    await client.close();
    await sandbox.close();
  }
});

async function setUp(options: SandboxOptions = {}) {
  const sandbox = await startSandbox({ exportSeconds: 30, tls: true, ...options });
  const clock: Clock = { now: () => sandbox.clock.now(), sleep: async (ms) => sandbox.clock.advance(ms) };
  const client = new ApiClient({ baseUrl: sandbox.baseUrl, token: sandbox.ownerToken, userAgent: 'test', clock, trust: sandboxTrust(sandbox) });
  open.push({ sandbox, client });
  return { sandbox, client, clock, org: sandbox.org };
}

const temp = () => mkdtempSync(join(tmpdir(), 'svc-core-'));

describe('repository lists', () => {
  it('reads a repos file: names by line, comments and blank lines dropped, each named by its line', () => {
    expect(parseReposFile('widgets\n\n# all of them\ndocs.site  # the site\r\nacme/tools\n', 'repos.txt')).toEqual([
      { name: 'widgets', source: 'repos.txt:1' },
      { name: 'docs.site', source: 'repos.txt:4' },
      { name: 'acme/tools', source: 'repos.txt:5' },
    ]);
  });

  it('gives bare names the organization, drops duplicates whatever their case, and names the source of a bad one', () => {
    const entries = ['widgets', 'octo-org/Widgets', 'other/lib', 'WIDGETS'].map((name, i) => ({ name, source: `argument ${i + 1}` }));
    expect(normalizeRepositories(entries, 'octo-org')).toEqual(['octo-org/widgets', 'other/lib']);
    for (const bad of ['a/b/c', '../x', 'x/..', 'white space', '']) {
      expect(() => normalizeRepositories([{ name: bad, source: 'repos.txt:9' }], 'octo-org'), bad).toThrow(UsageError);
    }
    expect(() => normalizeRepositories([{ name: 'a/b/c', source: 'repos.txt:9' }], 'octo-org')).toThrow(/repos\.txt:9: "a\/b\/c" is not a repository name/);
  });
});

describe('unlock', () => {
  it('finds the migration that locked a repository, unlocks it, and says what stayed locked', async () => {
    const { client, org } = await setUp();
    const older = await startMigration(client, org, { repositories: [`${org}/widgets`], lock_repositories: true });
    const newer = await startMigration(client, org, { repositories: [`${org}/widgets`, `${org}/docs.site`], lock_repositories: true });
    await startMigration(client, org, { repositories: [`${org}/widgets`] });

    const found = await resolveUnlockTargets(client, org, { names: [], repo: 'widgets' });
    expect(found).toEqual({ id: newer.id, names: ['widgets'], foundFor: 'widgets' });
    expect((await resolveUnlockTargets(client, org, { id: older.id, names: [], all: true })).names).toEqual(['widgets']);
    await expect(resolveUnlockTargets(client, org, { names: [], repo: 'nowhere' })).rejects.toThrow(NotFoundError);
    await expect(resolveUnlockTargets(client, org, { names: [] })).rejects.toThrow(/give a migration id, or --repo/);
    await expect(resolveUnlockTargets(client, org, { id: newer.id, names: ['widgets'], all: true })).rejects.toThrow(/do not also name widgets/);
    await expect(resolveUnlockTargets(client, org, { id: newer.id, names: [] })).rejects.toThrow(/name the repositories to unlock/);

    const outcomes = await unlockRepositories(client, org, newer.id, [`${org}/widgets`, 'not-in-it']);
    expect(outcomes.map((o) => [o.repository, o.ok])).toEqual([
      ['widgets', true],
      ['not-in-it', false],
    ]);
    const failure = unlockFailure(outcomes, newer.id);
    expect(failure?.exitCode).toBe(ExitCode.NotFound);
    expect(failure?.message).toBe('1 of 2 repositories could not be unlocked');
    expect(failure?.hint).toMatch(/svc-migrate repos/);
    expect(unlockFailure(outcomes.slice(0, 1), newer.id)).toBeUndefined();
  });
});

describe('download', () => {
  it('keeps the bytes of an archive that fails its check in the .part file, never under the final name', async () => {
    const { sandbox, client, clock, org } = await setUp({ exportSeconds: 0 });
    const migration = await startMigration(client, org, { repositories: [`${org}/widgets`] });
    sandbox.clock.advance(1000);
    sandbox.faults.set({ corruptArchive: true });
    const broken = join(temp(), 'broken.tar.gz');
    const target = { path: broken, force: false };
    const download = downloadArchive(client, { org, id: migration.id, target, checksum: true, verify: true, clock });
    await expect(download).rejects.toMatchObject({ exitCode: ExitCode.VerificationFailed });
    expect(existsSync(broken)).toBe(false);
    expect(existsSync(`${broken}.part`)).toBe(true);
  });

  it('writes to a stream as it arrives, without a file or a check', async () => {
    const { sandbox, client, clock, org } = await setUp({ exportSeconds: 0 });
    const migration = await startMigration(client, org, { repositories: [`${org}/widgets`] });
    sandbox.clock.advance(1000);
    const sink = new PassThrough();
    const chunks: Buffer[] = [];
    sink.on('data', (chunk: Buffer) => chunks.push(chunk));
    const result = await downloadArchive(client, { org, id: migration.id, target: { stream: sink }, checksum: true, clock });
    expect(result.verified).toBe(false);
    expect(Buffer.concat(chunks).length).toBe(result.bytes);
    expect(result.sha256).toBe(createHash('sha256').update(Buffer.concat(chunks)).digest('hex'));
  });
});

describe('export', () => {
  const exportOptions = (clock: Clock, org: string, path: string, steps: string[]) => ({
    org,
    body: { repositories: [`${org}/widgets`, `${org}/docs.site`], lock_repositories: true },
    download: { checksum: true, verify: true, target: () => ({ path, force: false }) },
    unlock: true,
    deleteArchive: true,
    clock,
    onStep: (step: string) => steps.push(step),
  });

  it('unlocks nothing and deletes nothing when the archive fails its check', async () => {
    const { sandbox, client, clock, org } = await setUp({ exportSeconds: 0 });
    sandbox.faults.set({ corruptArchive: true });
    const steps: string[] = [];
    await expect(runExport(client, exportOptions(clock, org, join(temp(), 'export.tar.gz'), steps))).rejects.toMatchObject({
      exitCode: ExitCode.VerificationFailed,
    });
    expect(steps).not.toContain('unlock');
    expect(steps).not.toContain('delete-archive');
    expect(sandbox.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
  });
});
