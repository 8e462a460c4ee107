import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.js';
import { runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';

// One command gives back every repository an organization export locked: `unlock --output-dir DIR`
// reads the export's journal as anyone's file, unlocks each migration it names whole, records what
// it gave back, and a second run unlocks nothing again.

const FAST = ['--interval', '0.1'];
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-unlock-'));

function lockedNames(sandbox: Sandbox): string[] {
  return sandbox.store.list(sandbox.store.organization('octo-org')!).flatMap((m) => [...m.locked]).sort();
}

const unlockRequests = (sandbox: Sandbox) => sandbox.requests.filter((r) => r.method === 'DELETE' && r.url.endsWith('/lock'));

/** An export of three repositories in three batches with --lock, each kept locked. */
async function lockedExport(env: Record<string, string>, dir: string) {
  const result = await runCli(['export', 'widgets', 'docs.site', 'my_lib-2', '--lock', '--batch-size', '1', '--output-dir', dir, ...FAST], { env });
  expect(result.code, result.stderr).toBe(0);
  return result;
}

describe('unlock --output-dir', () => {
  it('gives back every repository the export locked, records it, and a second run unlocks nothing again', async () => {
    const { sandbox, env } = await testSandbox();
    const dir = tempDir();
    const exported = await lockedExport(env, dir);
    // The closing line offers the one command, not one per migration.
    expect(exported.stderr.trim().split('\n').at(-1)).toBe(`3 repositories are still locked; \`svc-migrate unlock --output-dir ${dir}\` unlocks them`);
    expect(lockedNames(sandbox)).toEqual(['docs.site', 'my_lib-2', 'widgets']);

    const unlocked = await runCli(['unlock', '--output-dir', dir, '--json'], { env });
    expect(unlocked.code, unlocked.stderr).toBe(0);
    expect(lockedNames(sandbox)).toEqual([]);
    type Report = { migration_id: number; batch: number; state: string; repositories: { repository: string; ok: boolean }[] };
    const report = JSON.parse(unlocked.stdout) as { output_dir: string; migrations: Report[] };
    expect(report.output_dir).toBe(dir);
    expect(report.migrations.map((m) => [m.batch, m.state, m.repositories])).toEqual([
      [1, 'unlocked', [{ repository: 'widgets', ok: true }]],
      [2, 'unlocked', [{ repository: 'docs.site', ok: true }]],
      [3, 'unlocked', [{ repository: 'my_lib-2', ok: true }]],
    ]);
    expect(JSON.parse(readFileSync(join(dir, 'svc-migrate-unlocked.json'), 'utf8'))).toEqual({
      version: 1,
      migration_ids: report.migrations.map((m) => m.migration_id).sort((a, b) => a - b),
    });

    const before = unlockRequests(sandbox).length;
    const again = await runCli(['unlock', '--output-dir', dir], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(unlockRequests(sandbox).length).toBe(before);
    expect(again.stdout).toContain('(batch 1): unlocked by an earlier `unlock --output-dir` already');
    // Migrations unlocked already unlocked nothing now: said as such, not counted as unlocked.
    expect(again.stdout.trim().split('\n').at(-1)).toBe('nothing unlocked; 3 migrations unlocked already');

    // The same export again: every batch done, and nothing said to be locked.
    const rerun = await runCli(['export', 'widgets', 'docs.site', 'my_lib-2', '--lock', '--batch-size', '1', '--output-dir', dir, '--json', ...FAST], { env });
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(JSON.parse(rerun.stdout.trim().split('\n').at(-1) as string)).toMatchObject({ type: 'summary', locked: 0, unlock_command: null });
    expect(rerun.stderr).not.toMatch(/still locked/);
  });

  it('says what the export unlocked itself and what was never locked, and asks nothing of them', async () => {
    const { sandbox, env } = await testSandbox();
    const released = tempDir();
    expect((await runCli(['export', 'widgets', '--lock', '--unlock', '--output-dir', released, ...FAST], { env })).code).toBe(0);
    const before = sandbox.requests.length;
    const result = await runCli(['unlock', '--output-dir', released], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^migration \d+ \(batch 1\): unlocked by the export already$/m);
    expect(sandbox.requests.length).toBe(before);

    const open = tempDir();
    expect((await runCli(['export', 'docs.site', '--output-dir', open, ...FAST], { env })).code).toBe(0);
    const unlockedOpen = await runCli(['unlock', '--output-dir', open], { env });
    expect(unlockedOpen.code, unlockedOpen.stderr).toBe(0);
    expect(unlockedOpen.stdout).toMatch(/^migration \d+ \(batch 1\): nothing to unlock: it did not lock its repositories$/m);
    expect(unlockRequests(sandbox)).toHaveLength(1);
  });

  it('a migration that could not be unlocked: exit 10 (partial), the others given back, and the same command finishes it', async () => {
    const { sandbox, env } = await testSandbox();
    const dir = tempDir();
    await lockedExport(env, dir);
    // The service refuses the unlock of one repository (404, never retried).
    sandbox.faults.set({ failNext: 1, failStatus: 404, failPath: '/repos/docs.site/lock' });
    const partial = await runCli(['unlock', '--output-dir', dir], { env });
    expect(partial.code, partial.stderr).toBe(10);
    expect(partial.stdout).toMatch(/✗ docs\.site: /);
    expect(partial.stderr).toMatch(/^error: 1 migration of 3 kept repositories locked: migration \d+ \(docs\.site: /m);
    expect(partial.stderr).toContain(`hint: \`svc-migrate unlock --output-dir ${dir}\` tries again`);
    expect(lockedNames(sandbox)).toEqual(['docs.site']);

    const rest = await runCli(['unlock', '--output-dir', dir, '--json'], { env });
    expect(rest.code, rest.stderr).toBe(0);
    expect((JSON.parse(rest.stdout) as { migrations: { state: string }[] }).migrations.map((m) => m.state)).toEqual(['unlocked_before', 'unlocked', 'unlocked_before']);
    expect(lockedNames(sandbox)).toEqual([]);
  });

  it('refuses a directory without a journal, a journal it did not write, and a record it did not write (exit 2), unlocking nothing', async () => {
    const { sandbox, env } = await testSandbox();
    const empty = tempDir();
    const none = await runCli(['unlock', '--output-dir', empty], { env });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(`error: ${empty} holds no export journal (svc-migrate-journal.json)`);

    const forged = tempDir();
    writeFileSync(join(forged, 'svc-migrate-journal.json'), JSON.stringify({ version: 1, batches: [{ migrationIds: [1, 2, 3] }] }), { mode: 0o600 });
    const bad = await runCli(['unlock', '--output-dir', forged], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: .*svc-migrate-journal\.json is not a journal this program wrote: /m);
    // Hints this command can follow: unlock has no --restart.
    expect(bad.stderr).toContain('hint: put back the journal as the export wrote it; or unlock by migration id: `svc-migrate list` shows the ids, `svc-migrate unlock <id>... --all` unlocks them');
    expect(bad.stderr).not.toContain('--restart');

    const deep = tempDir();
    writeFileSync(join(deep, 'svc-migrate-journal.json'), `${'['.repeat(200_000)}${']'.repeat(200_000)}`, { mode: 0o600 });
    const nested = await runCli(['unlock', '--output-dir', deep], { env });
    expect(nested.code).toBe(2);
    expect(nested.stderr).toMatch(/is not a journal this program wrote/);

    const linked = tempDir();
    symlinkSync(join(forged, 'svc-migrate-journal.json'), join(linked, 'svc-migrate-journal.json'));
    const link = await runCli(['unlock', '--output-dir', linked], { env });
    expect(link.code).toBe(2);
    expect(link.stderr).toMatch(/the journal .* is a symbolic link/);

    const open = tempDir();
    writeFileSync(join(open, 'svc-migrate-journal.json'), '{}', { mode: 0o600 });
    chmodSync(join(open, 'svc-migrate-journal.json'), 0o666);
    if (process.getuid?.() !== undefined) {
      const shared = await runCli(['unlock', '--output-dir', open], { env });
      expect(shared.code).toBe(2);
      expect(shared.stderr).toMatch(/is writable by other users/);
      expect(shared.stderr).toMatch(/^hint: make .* yours and private \(.*\), then run the command again$/m);
    }

    const dir = tempDir();
    await lockedExport(env, dir);
    writeFileSync(join(dir, 'svc-migrate-unlocked.json'), JSON.stringify({ version: 1, migration_ids: ['all'] }), { mode: 0o600 });
    const record = await runCli(['unlock', '--output-dir', dir], { env });
    expect(record.code).toBe(2);
    expect(record.stderr).toContain(`error: ${join(dir, 'svc-migrate-unlocked.json')} is not a record this program wrote: a migration id in it is not a whole number`);
    // A directory there is said to be one, not "a file of its size".
    rmSync(join(dir, 'svc-migrate-unlocked.json'));
    mkdirSync(join(dir, 'svc-migrate-unlocked.json'));
    const folder = await runCli(['unlock', '--output-dir', dir], { env });
    expect(folder.code).toBe(2);
    expect(folder.stderr).toContain(`error: ${join(dir, 'svc-migrate-unlocked.json')} is not a record this program wrote: it is a directory\n`);
    expect(unlockRequests(sandbox)).toEqual([]);
    expect(lockedNames(sandbox)).toHaveLength(3);
  });

  it('refuses while an export runs in the directory, and takes over the lock of one that was killed', async () => {
    const { sandbox, env } = await testSandbox();
    const dir = tempDir();
    await lockedExport(env, dir);
    // A live process of this host holds the directory: this test's parent stands in for the export.
    const lock = join(dir, 'svc-migrate.lock');
    writeFileSync(lock, JSON.stringify({ pid: process.ppid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z' }), { mode: 0o600 });
    const busy = await runCli(['unlock', '--output-dir', dir], { env });
    expect(busy.code).toBe(2);
    expect(busy.stderr).toContain(`error: ${dir} is in use by another export (pid ${process.ppid} on ${hostname()}`);
    expect(busy.stderr).toContain(`hint: wait for it to finish or stop it (kill ${process.ppid}), then run the command again: the export may be starting or unlocking batches`);
    expect(busy.stderr).not.toContain('another --output-dir');
    expect(lockedNames(sandbox)).toHaveLength(3);
    expect(readFileSync(lock, 'utf8')).toContain(String(process.ppid));

    // What kill -9 leaves: the lock of a process that is gone.
    writeFileSync(lock, JSON.stringify({ pid: 2 ** 22 + 1, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z' }), { mode: 0o600 });
    const taken = await runCli(['unlock', '--output-dir', dir], { env });
    expect(taken.code, taken.stderr).toBe(0);
    expect(taken.stderr).toMatch(/warning: taking over .*svc-migrate\.lock: pid 4194305/);
    expect(lockedNames(sandbox)).toEqual([]);
  });
});

describe('unlock --output-dir and batches left "starting"', () => {
  /** The journal of `dir` with the batches of `starts` turned into starts sent whose answers never came. */
  function leaveStarting(sandbox: Sandbox, dir: string, starts: Record<number, { existed: number[] }>) {
    const path = join(dir, 'svc-migrate-journal.json');
    const journal = JSON.parse(readFileSync(path, 'utf8')) as { batches: { index: number; repositories: string[]; migrationIds: number[] }[] };
    const ids = journal.batches.map((batch) => batch.migrationIds[0] as number);
    journal.batches = journal.batches.map((batch) => {
      const start = starts[batch.index];
      if (!start) return batch;
      const { index, repositories } = batch;
      return { index, repositories, state: 'starting', migrationIds: [], attempts: 1, startingAt: sandbox.clock.now(), existed: start.existed, startFlags: ['lock_repositories'] } as never;
    });
    writeFileSync(path, JSON.stringify(journal), { mode: 0o600 });
    return ids;
  }

  it('the export\'s closing error says the repositories of a batch left starting may be locked, and unlock --output-dir looks each up: found, unlocked; not found, said', async () => {
    const { sandbox, env } = await testSandbox();
    const dir = tempDir();
    await lockedExport(env, dir);
    // Batch 3's start reached the service (its migration is in the list); batch 2's did not (the
    // migration of its repositories in the list was there before it: another export's).
    const ids = leaveStarting(sandbox, dir, { 2: { existed: [] }, 3: { existed: [] } });
    leaveStarting(sandbox, dir, { 2: { existed: [ids[1] as number] } });

    // The export cannot look either up (the list refused): it ends saying what may be locked.
    sandbox.faults.set({ failNext: 2, failStatus: 404, failPath: '/orgs/octo-org/migrations' });
    const stopped = await runCli(['export', 'widgets', 'docs.site', 'my_lib-2', '--lock', '--batch-size', '1', '--output-dir', dir, ...FAST], { env });
    expect(stopped.code).toBe(4);
    expect(stopped.stderr).toContain(`; 2 repositories of batches whose start was sent but never answered are locked if that start reached the service; \`svc-migrate unlock --output-dir ${dir}\` looks each up and unlocks what it finds`);

    sandbox.faults.set({});
    const unlocked = await runCli(['unlock', '--output-dir', dir, '--json'], { env });
    expect(unlocked.code, unlocked.stderr).toBe(0);
    type Report = { migration_id?: number; batch: number; state: string; lost_start?: boolean };
    const report = (JSON.parse(unlocked.stdout) as { migrations: Report[] }).migrations;
    expect(report.map((m) => [m.batch, m.state, m.migration_id, m.lost_start])).toEqual([
      [1, 'unlocked', ids[0], undefined],
      [2, 'start_not_found', undefined, undefined],
      [3, 'unlocked', ids[2], true],
    ]);
    // The migration of batch 2's repositories was not its start's: left as it was.
    expect(lockedNames(sandbox)).toEqual(['docs.site']);

    const human = await runCli(['unlock', '--output-dir', dir], { env });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^batch 2: its start was sent but its answer never came, and no migration of its repositories started since is in the list: the start may not have reached the service/m);
    expect(human.stdout).toContain(`migration ${ids[2]} (batch 3, found in the list: its start's answer was lost): unlocked by an earlier \`unlock --output-dir\` already`);
  });
});

describe('unlock of several migrations', () => {
  it('unlock 1 2 3 --all gives back each whole, says which locked nothing, and --json reports each repository', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 600 });
    const start = async (...args: string[]) => (JSON.parse((await runCli(['start', ...args, '--json'], { env })).stdout) as { id: number }).id;
    const a = await start('widgets', 'docs.site', '--lock');
    const b = await start('my_lib-2', '--lock');
    const c = await start('Hello-World');
    expect(lockedNames(sandbox)).toEqual(['docs.site', 'my_lib-2', 'widgets']);
    const result = await runCli(['unlock', String(a), String(b), String(c), '--all', '--json'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      migrations: [
        { migration_id: a, state: 'unlocked', repositories: [{ repository: 'widgets', ok: true }, { repository: 'docs.site', ok: true }] },
        { migration_id: b, state: 'unlocked', repositories: [{ repository: 'my_lib-2', ok: true }] },
        { migration_id: c, state: 'not_locked', repositories: [] },
      ],
    });
    expect(lockedNames(sandbox)).toEqual([]);

    // An id the service does not know is named as not found (once), not as one that kept repositories
    // locked; a migration that locked nothing is said as such, not counted among those unlocked.
    const d = await start('my_lib-2', '--lock');
    const human = await runCli(['unlock', String(d), String(c), '99999', '--all'], { env });
    expect(human.code).toBe(10);
    expect(human.stdout).toContain(`migration ${d}:\n  ✓ unlocked my_lib-2`);
    expect(human.stdout).toMatch(/^migration 99999: not found in organization octo-org$/m);
    expect(human.stdout.trim().split('\n').at(-1)).toBe('unlocked 1 repository of 1 migration; 1 migration locked nothing; not found: 99999');
    expect(human.stderr).toMatch(/^error: 1 migration of 3 was not found: migration 99999$/m);
    expect(human.stderr).not.toContain('kept repositories locked');
    expect(human.stderr).toContain('hint: `svc-migrate list` shows the ids of the organization\'s migrations (99999 is not among them)');
    expect(human.stderr).not.toContain('tries again');
  });
});
