import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Migration } from '../../src/api/types.js';
import { BIN, runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';

const FAST = ['--interval', '0.1'];
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-e2e-'));

async function startedMigration(
  env: Record<string, string>,
  repos: string[],
  extra: string[] = [],
): Promise<Migration> {
  const result = await runCli(['start', ...repos, '--json', ...extra], { env });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Migration;
}

describe('start', () => {
  it('takes names from arguments, a repos file and stdin, qualifies bare names and drops duplicates', async () => {
    const { env } = await testSandbox();
    const dir = tempDir();
    writeFileSync(join(dir, 'repos.txt'), '# repos to move\nwidgets\n\n  docs.site  # the site\nOCTO-ORG/widgets\n');
    const result = await runCli(['start', 'Hello-World', '--repos-file', join(dir, 'repos.txt'), '--lock', '--json'], {
      env,
    });
    expect(result.code, result.stderr).toBe(0);
    const migration = JSON.parse(result.stdout) as Migration;
    expect(migration.state).toBe('pending');
    expect(migration.lock_repositories).toBe(true);
    expect(migration.repositories?.map((r) => r.full_name)).toEqual([
      'octo-org/Hello-World',
      'octo-org/widgets',
      'octo-org/docs.site',
    ]);

    const fromStdin = await runCli(['start', '--repos-file', '-', '--json'], { env, stdin: 'my_lib-2\nwidgets\n' });
    expect((JSON.parse(fromStdin.stdout) as Migration).repositories?.map((r) => r.name)).toEqual([
      'my_lib-2',
      'widgets',
    ]);
  });

  it('prints the id on stdout and the state and the next step on stderr', async () => {
    const { env } = await testSandbox();
    const result = await runCli(['start', 'widgets'], { env });
    // In a pipe stdout carries just the id; the words go to stderr.
    expect(result.stdout).toMatch(/^\d+\n$/);
    expect(result.stderr).toMatch(/started migration \d+ \(pending\)/);
    expect(result.stderr).toMatch(/next: svc-migrate status \d+ --wait/);
  });

  it('rejects a bad line of a repos file before any request', async () => {
    const { sandbox, env } = await testSandbox();
    const dir = tempDir();
    writeFileSync(join(dir, 'repos.txt'), 'widgets\nbad name here\n');
    const badLine = await runCli(['start', '--repos-file', join(dir, 'repos.txt')], { env });
    expect(badLine.code).toBe(2);
    expect(badLine.stderr).toContain(`${join(dir, 'repos.txt')}:2`);
    expect(sandbox.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
  });

  it('shows the service\'s validation messages with exit 5', async () => {
    const { env } = await testSandbox();
    const result = await runCli(['start', 'no-such-repo'], { env });
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/error: the service rejected the request: 1 repository is not in octo-org: no-such-repo\n/);
  });
});

describe('status --wait', () => {
  it('polls until exported, printing one line per state change without a TTY', async () => {
    // A ten-minute export that only the wait's own pauses move: on a busy machine a short one ended
    // in real time before the wait began, and no change was left to print.
    const { env } = await testSandbox({ exportSeconds: 600 });
    const { id } = await startedMigration(env, ['widgets']);
    const result = await runCli(['status', String(id), '--wait', '--json', ...FAST], { env });
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as Migration).state).toBe('exported');
    expect(result.stderr).toMatch(/exporting → exported/);
    expect(result.stderr).not.toContain('\u001b[');
  });

  it('ends with exit 6 when the migration fails', async () => {
    const { env } = await testSandbox();
    const { id } = await startedMigration(env, ['will-fail']);
    const result = await runCli(['status', String(id), '--wait', ...FAST], { env });
    expect(result.code).toBe(6);
    expect(result.stderr).toMatch(new RegExp(`migration ${id} failed`));
  });

  it('ends with exit 7 on --timeout and says how to resume', async () => {
    const { env } = await testSandbox({ exportSeconds: 60 });
    const { id } = await startedMigration(env, ['widgets']);
    const result = await runCli(['status', String(id), '--wait', '--timeout', '1s', ...FAST], { env });
    expect(result.code).toBe(7);
    expect(result.stderr).toMatch(new RegExp(`svc-migrate status ${id} --wait`));
  });

  it('keeps waiting through 5xx bursts and dropped connections', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 1 });
    const { id } = await startedMigration(env, ['widgets']);
    sandbox.faults.set({ failNext: 3, failStatus: 502, dropNext: 1, failPath: `/migrations/${id}` });
    const result = await runCli(['status', String(id), '--wait', '--json', ...FAST], { env, timeoutMs: 60_000 });
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as Migration).state).toBe('exported');
  });

  it('waits on several migrations and on --all-pending, reporting each', async () => {
    // Exports of ten minutes: a wait moves the sandbox's clock, so only the waits end them, never a
    // machine slow enough for real time to pass between the start and the status.
    const { env } = await testSandbox({ exportSeconds: 600 });
    const a = await startedMigration(env, ['widgets']);
    const b = await startedMigration(env, ['docs.site']);
    const both = await runCli(['status', String(a.id), String(b.id), '--wait', '--json', ...FAST], { env });
    expect(both.code, both.stderr).toBe(0);
    expect((JSON.parse(both.stdout) as Migration[]).map((m) => [m.id, m.state])).toEqual([
      [a.id, 'exported'],
      [b.id, 'exported'],
    ]);
    const c = await startedMigration(env, ['my_lib-2']);
    const pending = await runCli(['status', '--all-pending', '--wait', '--json', ...FAST], { env });
    expect((JSON.parse(pending.stdout) as Migration[]).map((m) => m.id)).toEqual([c.id]);
    // Five processes one after another: a ceiling for a machine busy six times over, not a timing.
  }, 90_000);

  it('exits 130 on Ctrl-C and says how to resume', async () => {
    const { env } = await testSandbox({ exportSeconds: 60 });
    const { id } = await startedMigration(env, ['widgets']);
    const child = spawn(process.execPath, [BIN, 'status', String(id), '--wait', ...FAST], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      if (chunk.includes('pending')) child.kill('SIGINT');
    });
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(130);
    expect(stderr).toMatch(new RegExp(`svc-migrate status ${id} --wait`));
  });
});

describe('list and repos', () => {
  it('follows every page with --all, filters by state and marks imports', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 60 });
    sandbox.store.bulkExports(sandbox.store.organization('octo-org')!, 130);
    const all = await runCli(['list', '--all', '--json'], { env });
    expect((JSON.parse(all.stdout) as Migration[]).length).toBe(131);
    expect(sandbox.requests.filter((r) => r.url.startsWith('/orgs/octo-org/migrations?'))).toHaveLength(2);
    const first = await runCli(['list', '--json'], { env });
    expect((JSON.parse(first.stdout) as Migration[]).length).toBe(30);
    await startedMigration(env, ['widgets']);
    const pending = await runCli(['list', '--state', 'pending', '--json'], { env });
    expect((JSON.parse(pending.stdout) as Migration[]).map((m) => m.state)).toEqual(['pending']);
    const table = await runCli(['list', '--all'], { env });
    expect(table.stdout).toMatch(/^\d+\tpending\tocto-org\/widgets\tno\t/m);
    expect(table.stdout).toMatch(/\t\(import\)\t/);
    expect(table.stdout).not.toMatch(/[│┌─]/);
  });

  it('lists the repositories of a migration', async () => {
    const { env } = await testSandbox();
    const { id } = await startedMigration(env, ['widgets', 'docs.site']);
    const json = await runCli(['repos', String(id), '--all', '--json'], { env });
    expect((JSON.parse(json.stdout) as { full_name: string }[]).map((r) => r.full_name)).toEqual([
      'octo-org/widgets',
      'octo-org/docs.site',
    ]);
    const table = await runCli(['repos', String(id)], { env });
    expect(table.stdout).toMatch(/octo-org\/docs\.site/);
    // One name a line, nothing else: what `export --repos-file` reads.
    const names = await runCli(['repos', String(id), '--all', '--names'], { env });
    expect(names.stdout).toBe('octo-org/widgets\nocto-org/docs.site\n');
  });
});

describe('download', () => {
  async function exported(options: Parameters<typeof testSandbox>[0] = {}) {
    const box = await testSandbox(options);
    const migration = await startedMigration(box.env, ['widgets', 'Hello-World'], ['--wait', ...FAST]);
    return { ...box, id: migration.id };
  }

  it('follows the 302 to storage without the token and saves a verified archive', async () => {
    const { sandbox, env, id } = await exported();
    const output = join(tempDir(), 'archive.tar.gz');
    const result = await runCli(['download', String(id), '-o', output, '--json'], { env });
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout) as Record<string, unknown>;
    const bytes = readFileSync(output);
    expect(summary).toEqual({
      migration_id: id,
      path: output,
      bytes: bytes.length,
      sha256: sha256(bytes),
      verified: true,
      sha256_file: `${output}.sha256`,
    });
    const storage = sandbox.requests.filter((r) => r.origin === 'storage');
    expect(storage.length).toBeGreaterThan(0);
    expect(storage.every((r) => r.headers.authorization === undefined)).toBe(true);
    expect(sandbox.requests.filter((r) => r.origin === 'api').every((r) => r.headers.authorization)).toBe(true);
    expect(existsSync(`${output}.part`)).toBe(false);
  });

  it('refuses to overwrite without --force, and streams to stdout with -o -', async () => {
    const { env, id } = await exported();
    const output = join(tempDir(), 'archive.tar.gz');
    writeFileSync(output, 'precious');
    const refused = await runCli(['download', String(id), '-o', output], { env });
    expect(refused.code).toBe(2);
    expect(readFileSync(output, 'utf8')).toBe('precious');
    expect((await runCli(['download', String(id), '-o', output, '--force'], { env })).code).toBe(0);

    const streamed = await runCli(['download', String(id), '-o', '-'], { env });
    expect(streamed.code, streamed.stderr).toBe(0);
    expect(sha256(streamed.stdoutBytes)).toBe(sha256(readFileSync(output)));
  });

  // Over HTTPS, as every test of the sandbox unless it says otherwise; and once over plain HTTP.
  it.each([['HTTPS', true], ['plain HTTP', false]])('resumes a cut stream with Range and ends byte-identical (%s)', async (_name, tls) => {
    const { sandbox, env, id } = await exported({ exportSeconds: 0.3, archivePadBytes: 2 * 1024 * 1024, tls });
    expect(new URL(sandbox.storageOrigin).protocol).toBe(tls ? 'https:' : 'http:');
    const reference = join(tempDir(), 'reference.tar.gz');
    await runCli(['download', String(id), '-o', reference], { env });
    sandbox.faults.set({ cutAfterBytes: 300_000, cutTimes: 3 });
    const output = join(tempDir(), 'resumed.tar.gz');
    const result = await runCli(['download', String(id), '-o', output, '--json'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/download cut at \d+ bytes/);
    expect(sha256(readFileSync(output))).toBe(sha256(readFileSync(reference)));
    expect(sandbox.requests.some((r) => r.origin === 'storage' && r.headers.range?.startsWith('bytes='))).toBe(true);
  });

  it('never leaves a partial file under the final name, and a later run resumes the .part', async () => {
    const { sandbox, env, id } = await exported({ exportSeconds: 0.3, archivePadBytes: 1024 * 1024 });
    sandbox.faults.set({ cutAfterBytes: 50_000, cutTimes: 10 });
    const output = join(tempDir(), 'archive.tar.gz');
    const failed = await runCli(['download', String(id), '-o', output], { env, timeoutMs: 60_000 });
    expect(failed.code).toBe(8);
    expect(existsSync(output)).toBe(false);
    expect(existsSync(`${output}.part`)).toBe(true);
    expect(failed.stderr).toContain(`\`svc-migrate download ${id} -o ${output}\` resumes from there`);
    sandbox.faults.clear();
    const before = sandbox.requests.length;
    const resumed = await runCli(['download', String(id), '-o', output, '--json'], { env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const ranged = sandbox.requests.slice(before).find((r) => r.origin === 'storage');
    expect(ranged?.headers.range).toMatch(/^bytes=[1-9]\d*-$/);
    expect(JSON.parse(resumed.stdout).sha256).toBe(sha256(readFileSync(output)));
  });

  it('restarts from zero when storage has no ranges, and fetches a fresh URL after a storage 403', async () => {
    const { sandbox, env, id } = await exported({ exportSeconds: 0.3, archivePadBytes: 512 * 1024 });
    sandbox.faults.set({ noRange: true, cutAfterBytes: 100_000, cutTimes: 1, storageForbiddenNext: 1 });
    const output = join(tempDir(), 'archive.tar.gz');
    const result = await runCli(['download', String(id), '-o', output, '--json'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/asking the service for a fresh one/);
    expect(result.stderr).toMatch(/restarting: storage does not support ranges/);
    expect(JSON.parse(result.stdout).sha256).toBe(sha256(readFileSync(output)));
  });

  it('says an archive may have expired (exit 4) and refuses migrations not exported', async () => {
    const { sandbox, env, id } = await exported({ exportSeconds: 600 });
    sandbox.clock.advance(8 * 24 * 3_600_000);
    const gone = await runCli(['download', String(id), '-o', join(tempDir(), 'x.tar.gz')], { env });
    expect(gone.code).toBe(4);
    expect(gone.stderr).toMatch(/seven days/);
    const pending = await startedMigration(env, ['widgets']);
    const early = await runCli(['download', String(pending.id), '-o', join(tempDir(), 'y.tar.gz')], { env });
    expect(early.code).toBe(2);
    expect(early.stderr).toMatch(/--wait/);
  });

  it('warns when the archive is about to be deleted', async () => {
    const { sandbox, env, id } = await exported();
    sandbox.clock.advance(6.5 * 24 * 3_600_000);
    const result = await runCli(['download', String(id), '-o', join(tempDir(), 'x.tar.gz')], { env });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/deleted automatically at/);
  });
});

describe('delete-archive and unlock', () => {
  it('deletes with --yes, then reports 404 with exit 4', async () => {
    const { env } = await testSandbox({ exportSeconds: 600 });
    const { id } = await startedMigration(env, ['widgets'], ['--wait', ...FAST]);
    expect((await runCli(['delete-archive', String(id), '--yes'], { env })).code).toBe(0);
    const again = await runCli(['delete-archive', String(id), '--yes'], { env });
    expect(again.code).toBe(4);
    const { id: pending } = await startedMigration(env, ['widgets'], []);
    const early = await runCli(['delete-archive', String(pending), '--yes'], { env });
    expect(early.code).toBe(4);
    expect(early.stderr).toContain(`migration ${pending} in octo-org has no archive to delete (not exported yet,`);
  });

  it('unlocks named repositories, all of them, or finds the migration from --repo', async () => {
    const { sandbox, env } = await testSandbox();
    const { id } = await startedMigration(env, ['widgets', 'docs.site', 'my_lib-2'], ['--lock']);
    const locked = () => [...(sandbox.store.find(sandbox.store.organization('octo-org')!, id)?.locked ?? [])].sort();
    const partial = await runCli(['unlock', String(id), 'widgets', 'not-in-it', '--json'], { env });
    expect(partial.code).toBe(4);
    expect(JSON.parse(partial.stdout)).toEqual([
      { repository: 'widgets', ok: true },
      expect.objectContaining({ repository: 'not-in-it', ok: false }),
    ]);
    expect(locked()).toEqual(['docs.site', 'my_lib-2']);
    const byRepo = await runCli(['unlock', '--repo', 'docs.site'], { env });
    expect(byRepo.code, byRepo.stderr).toBe(0);
    expect(byRepo.stderr).toMatch(new RegExp(`locked by migration ${id}`));
    expect(locked()).toEqual(['my_lib-2']);
    expect((await runCli(['unlock', String(id), '--all'], { env })).code).toBe(0);
    expect(locked()).toEqual([]);
  });
});

describe('export', () => {
  it('runs start → wait → download → unlock → delete-archive and reports each step', async () => {
    const { sandbox, env } = await testSandbox();
    const output = join(tempDir(), 'export.tar.gz');
    const result = await runCli(
      [
        'export',
        'widgets',
        'docs.site',
        '--lock',
        '--unlock',
        '--delete-archive',
        '--yes',
        '-o',
        output,
        '--json',
        ...FAST,
      ],
      { env },
    );
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.archive).toEqual({
      path: output,
      bytes: readFileSync(output).length,
      sha256: sha256(readFileSync(output)),
      verified: true,
      sha256_file: `${output}.sha256`,
    });
    expect(report.unlocked).toEqual(['widgets', 'docs.site']);
    expect(report.archive_deleted).toBe(true);
    const migration = sandbox.store.find(sandbox.store.organization('octo-org')!, report.migration.id);
    expect(migration?.locked.size).toBe(0);
    expect(migration?.archiveDeletedAt).toBeDefined();
  });

  it('says what already happened and how to continue when the migration fails', async () => {
    const { env } = await testSandbox();
    const failed = await runCli(['export', 'will-fail', '--lock', ...FAST], { env });
    expect(failed.code).toBe(6);
    expect(failed.stderr).toMatch(/done: started migration \d+/);
    expect(failed.stderr).toMatch(/svc-migrate unlock \d+ --all/);
  });

  it('unlocks and deletes nothing until the archive is safe on disk', async () => {
    const { sandbox, env } = await testSandbox();
    sandbox.faults.set({ cutAfterBytes: 10, cutTimes: 100 });
    const output = join(tempDir(), 'a.tar.gz');
    const cut = await runCli(
      ['export', 'widgets', '--lock', '--unlock', '--delete-archive', '--yes', '-o', output, ...FAST],
      {
        env,
        timeoutMs: 60_000,
      },
    );
    expect(cut.code).toBe(8);
    expect(cut.stderr).toMatch(/resume the download with `svc-migrate download \d+ --output/);
    expect(sandbox.requests.some((r) => r.method === 'DELETE')).toBe(false);
    expect(existsSync(output)).toBe(false);
  });
});
