import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type BatchRecord, type Journal, JOURNAL_FILE, writeJournal } from '../../src/core/org-export/journal.js';
import { checkOutputDirectory, readJournal } from '../../src/core/org-export/journal-read.js';
import { lockDirectory } from '../../src/core/org-export/lock.js';
import { planExport, tally } from '../../src/core/org-export/plan.js';
import { ExitCode, UsageError } from '../../src/errors.js';

// The org export's plan, its journal read back, and its lock, without a service: what a run starts
// from, and what it refuses to start from.

const FINGERPRINT = 'f'.repeat(64);
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-core-plan-'));
const full = (...names: string[]) => names.map((name) => `octo-org/${name}`);

function batch(index: number, fields: Partial<BatchRecord>): BatchRecord {
  return { index, repositories: [], state: 'pending', migrationIds: [], attempts: 0, ...fields };
}

function journalOf(batches: BatchRecord[], fingerprint = FINGERPRINT): Journal {
  const at = '2026-01-05T09:00:00.000Z';
  return { version: 1, fingerprint, command: 'export --repos-file repos.txt --batch-size 2', org: 'octo-org', createdAt: at, updatedAt: at, batches };
}

const archived = (dir: string, id: number) => ({ path: join(dir, `migration-${id}.tar.gz`), bytes: 10, sha256: 'a'.repeat(64), verified: true, gitObjectsChecked: true });

const plan = (dir: string, repositories: string[], extra: Partial<Parameters<typeof planExport>[0]> = {}) =>
  planExport({ org: 'octo-org', dir, repositories, batchSize: 2, fingerprint: FINGERPRINT, command: 'export …', restart: false, now: Date.UTC(2026, 0, 6), ...extra });

/** The UsageError a promise rejects with. */
async function refusal(promise: Promise<unknown>): Promise<UsageError> {
  const error: unknown = await promise.then(() => undefined, (caught: unknown) => caught);
  expect(error).toBeInstanceOf(UsageError);
  return error as UsageError;
}

describe('the plan', () => {
  it('splits a new list into batches of the batch size, in order, numbered from 1', async () => {
    const planned = await plan(tempDir(), full('a', 'b', 'c', 'd', 'e'));
    expect(planned.journal.batches.map((b) => [b.index, b.repositories, b.state, b.migrationIds, b.attempts])).toEqual([
      [1, full('a', 'b'), 'pending', [], 0],
      [2, full('c', 'd'), 'pending', [], 0],
      [3, full('e'), 'pending', [], 0],
    ]);
    expect(planned).toMatchObject({ resumed: false, kept: 0, added: 3, dropped: 0 });
    expect(planned.journal).toMatchObject({ version: 1, fingerprint: FINGERPRINT, org: 'octo-org', createdAt: '2026-01-06T00:00:00.000Z' });
  });

  it('keeps what the journal holds of the list wanted now, and batches only what no kept batch holds', async () => {
    const dir = tempDir();
    await writeJournal(dir, journalOf([
      // Done, one of its repositories still wanted: kept whole.
      batch(1, { repositories: full('a', 'b'), state: 'done', migrationIds: [1001], attempts: 1, archive: archived(dir, 1001) }),
      // Done, none wanted any more: dropped (its archive stays on disk).
      batch(2, { repositories: full('c', 'd'), state: 'done', migrationIds: [1002], attempts: 1, archive: archived(dir, 1002) }),
      // Under way on the service: kept whatever the list says, or its locks would stay.
      batch(3, { repositories: full('e', 'f'), state: 'started', migrationIds: [1003], attempts: 1 }),
      // Never sent: keeps only what is still wanted.
      batch(4, { repositories: full('g', 'h'), state: 'pending' }),
      // Refused whole by the service: asked again for what is still wanted (it may exist now).
      batch(5, { state: 'skipped', attempts: 1, skipped: [{ name: 'octo-org/i', reason: 'gone' }, { name: 'octo-org/j', reason: 'gone' }] }),
      // Done without a refused repository, which is asked again in a new batch.
      batch(6, { repositories: full('k'), state: 'done', migrationIds: [1006], attempts: 1, archive: archived(dir, 1006), skipped: [{ name: 'octo-org/l', reason: 'gone' }] }),
      // Never sent, nothing of it wanted: gone from the plan.
      batch(7, { repositories: full('m'), state: 'pending' }),
    ]));
    // Names compare without regard to case, as the service compares them.
    const wanted = ['octo-org/A', ...full('g', 'i', 'k', 'l', 'n', 'o')];
    const planned = await plan(dir, wanted);
    expect(planned.journal.batches.map((b) => [b.index, b.repositories, b.state, b.migrationIds, b.skipped])).toEqual([
      [1, full('a', 'b'), 'done', [1001], undefined],
      [2, full('e', 'f'), 'started', [1003], undefined],
      [3, full('g'), 'pending', [], undefined],
      [4, full('i'), 'pending', [], undefined],
      [5, full('k'), 'done', [1006], undefined],
      [6, full('l', 'n'), 'pending', [], undefined],
      [7, full('o'), 'pending', [], undefined],
    ]);
    expect(planned).toMatchObject({ resumed: true, kept: 5, added: 2, dropped: 1 });
    expect(planned.journal.createdAt).toBe('2026-01-05T09:00:00.000Z');

    // What the run achieved counts the repositories wanted, and only those.
    expect(tally(planned.journal.batches, wanted)).toEqual({ total: 7, verified: 2, archived: 2, skipped: [] });
  });

  it('counts verified, archived and skipped repositories of the list only, whatever else the batches hold', () => {
    const batches = [
      batch(1, { repositories: full('a', 'x'), state: 'done', migrationIds: [1], archive: { ...archived('/d', 1), verified: false } }),
      batch(2, { repositories: full('b'), state: 'done', migrationIds: [2], archive: archived('/d', 2), skipped: [{ name: 'octo-org/c', reason: 'no such' }, { name: 'octo-org/y', reason: 'no such' }] }),
      batch(3, { repositories: full('d'), state: 'downloaded', migrationIds: [3], archive: archived('/d', 3) }),
    ];
    expect(tally(batches, full('A', 'b', 'c', 'd', 'e'))).toEqual({
      total: 5,
      verified: 2,
      archived: 2,
      skipped: [{ batch: 2, name: 'octo-org/c', reason: 'no such' }],
    });
  });

  it('refuses the journal of another export (exit 2, naming its command) unless restarting; an earlier version\'s fingerprint is taken and replaced', async () => {
    const dir = tempDir();
    const earlier = '0'.repeat(64);
    await writeJournal(dir, journalOf([batch(1, { repositories: full('a') })], earlier));
    const error = await refusal(plan(dir, full('a')));
    expect(error.exitCode).toBe(ExitCode.Usage);
    expect(error.message).toBe(`${join(dir, JOURNAL_FILE)} belongs to another export: \`export --repos-file repos.txt --batch-size 2\``);
    expect(error.hint).toMatch(/run that command again to continue it, use another --output-dir, or add --restart/);

    const legacy = await plan(dir, full('a', 'b'), { legacyFingerprint: earlier });
    expect(legacy).toMatchObject({ resumed: true, kept: 1, added: 1 });
    expect(legacy.journal.fingerprint).toBe(FINGERPRINT);

    const restarted = await plan(dir, full('a', 'b', 'c'), { restart: true });
    expect(restarted).toMatchObject({ resumed: false, kept: 0, added: 2 });
  });
});

describe('a journal read back', () => {
  async function written(): Promise<{ dir: string; journal: Journal }> {
    const dir = tempDir();
    const journal = journalOf([
      batch(1, { repositories: full('a', 'b'), state: 'done', migrationIds: [1001], attempts: 1, archive: archived(dir, 1001) }),
      batch(2, { repositories: full('c'), state: 'started', migrationIds: [1002], attempts: 1, startingAt: Date.UTC(2026, 0, 5) }),
    ]);
    await writeJournal(dir, journal);
    return { dir, journal };
  }

  it('reads back what the export wrote, private to its owner', async () => {
    const { dir, journal } = await written();
    expect(await readJournal(dir)).toEqual(journal);
    expect(await readJournal(tempDir())).toBeUndefined();
  });

  it('refuses every record this program cannot have written, saying what is wrong and how to go on (exit 2)', async () => {
    const { dir, journal: good } = await written();
    const path = join(dir, JOURNAL_FILE);
    const text = readFileSync(path, 'utf8');
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    const edited = (edit: (journal: Journal) => void) => {
      const journal = structuredClone(good);
      edit(journal);
      return JSON.stringify(journal);
    };
    const cases: [string, string, string][] = [
      ['an id that is text', edited((j) => (j.batches[1]!.migrationIds = ['1002' as unknown as number])), 'batch 2: migrationIds[0] is "1002", not a whole number above 0'],
      ['an unknown state', edited((j) => (j.batches[0]!.state = 'half-done' as BatchRecord['state'])), 'batch 1: state "half-done" is not one of pending, starting, started'],
      ['a wrong type', edited((j) => Object.assign(j.batches[0]!, { attempts: 'once' })), 'batch 1: attempts is "once", not a whole number'],
      ['a flag that is not a flag', edited((j) => Object.assign(j.batches[0]!.archive!, { verified: 'yes' })), 'batch 1: archive.verified is not true or false'],
      ['an archive elsewhere', edited((j) => (j.batches[0]!.archive!.path = '/elsewhere/x.tar.gz')), `batch 1 records its archive as "/elsewhere/x.tar.gz", but the archive of migration 1001 is ${join(dir, 'migration-1001.tar.gz')}`],
      ['one migration in two batches', edited((j) => (j.batches[1]!.migrationIds = [1001])), 'batch 1 and batch 2 both name migration 1001'],
      ['a batch under way without its migration', edited((j) => (j.batches[1]!.migrationIds = [])), 'batch 2 is started but names no migration'],
      ['batches out of order', edited((j) => j.batches.reverse()), 'batch 1 is numbered 2'],
      ['a key it does not write', text.replace('"state": "done"', `"state": "done", "note": ${deep}`), 'batch 1 has a key this program does not write: "note"'],
      ['a value nested 200,000 deep', text.replace('"version": 1', `"version": ${deep}`), 'its version is a list of 1 item, not 1'],
      ['not JSON', text.slice(0, -10), 'it is not JSON ('],
    ];
    for (const [what, content, message] of cases) {
      expect(content, what).not.toBe(text);
      writeFileSync(path, content, { mode: 0o600 });
      const error = await refusal(readJournal(dir));
      expect(error.exitCode, what).toBe(ExitCode.Usage);
      expect(error.message, what).toContain(`${path} is not a journal this program wrote: ${message}`);
      expect(error.hint, what).toMatch(/^put back the journal as the export wrote it, or move it away and run again with --restart/);
    }
    // The plan refuses it too: a run never starts from it.
    await expect(plan(dir, full('a'))).rejects.toThrow(/is not a journal this program wrote/);
  });

  it('reads an archive as where its migration\'s archive goes in the directory, wherever the directory has moved', async () => {
    const { dir } = await written();
    const moved = `${dir}-moved`;
    renameSync(dir, moved);
    expect((await readJournal(moved))?.batches[0]?.archive?.path).toBe(join(moved, 'migration-1001.tar.gz'));
  });

  it.skipIf(process.getuid === undefined)('refuses a journal or directory that is not private, or a journal that is a link', async () => {
    const { dir } = await written();
    const path = join(dir, JOURNAL_FILE);
    chmodSync(path, 0o644);
    let error = await refusal(readJournal(dir));
    expect(error.message).toBe(`refusing to use ${dir}: the journal ${path} is open to other users (mode 0644)`);
    expect(error.hint).toBe(`make ${dir} and the journal in it yours and private (chown, then chmod 700 ${dir} and chmod 600 ${path}), or choose another --output-dir`);
    chmodSync(path, 0o600);

    chmodSync(dir, 0o777);
    expect(() => checkOutputDirectory(dir)).toThrow(`refusing to use ${dir}: the output directory ${dir} is writable by other users (mode 0777)`);
    chmodSync(dir, 0o700);
    expect(() => checkOutputDirectory(dir)).not.toThrow();
    // As another user sees it.
    error = await refusal(readJournal(dir, (process.getuid?.() ?? 0) + 1));
    expect(error.message).toMatch(/is owned by another user \(uid \d+, you are \d+\)/);

    const linked = tempDir();
    symlinkSync(path, join(linked, JOURNAL_FILE));
    error = await refusal(readJournal(linked));
    expect(error.message).toBe(`refusing to use ${linked}: the journal ${join(linked, JOURNAL_FILE)} is a symbolic link`);
  });
});

describe('one run per output directory', () => {
  const LOCK = 'svc-migrate.lock';
  /** Above every pid Linux gives (PID_MAX_LIMIT is 2^22) and macOS's 99,998: no process has it. */
  const NO_SUCH_PID = 4_194_304;
  const lockOf = (holder: Record<string, unknown>) => JSON.stringify({ host: hostname(), startedAt: '2026-01-02T03:04:05.000Z', ...holder });

  it('refuses a second lock while the first is held, naming its pid and host; released, it can be taken again', async () => {
    const dir = tempDir();
    const first = await lockDirectory(dir, { now: Date.UTC(2026, 0, 5) });
    const error = await refusal(lockDirectory(dir, { now: Date.UTC(2026, 0, 5) }));
    expect(error.message).toBe(`${dir} is in use by another export (pid ${process.pid} on ${hostname()}, since 2026-01-05T00:00:00.000Z)`);
    expect(error.hint).toMatch(new RegExp(`^wait for it to finish or stop it \\(kill ${process.pid}\\), or use another --output-dir`));
    await first.release();
    expect(existsSync(join(dir, LOCK))).toBe(false);
    const again = await lockDirectory(dir, { now: Date.UTC(2026, 0, 5) });
    await again.release();
    await again.release();
  });

  it('takes over a lock whose process is gone, or whose pid another process has taken since, and says so', async () => {
    const dir = tempDir();
    const notices: string[] = [];
    writeFileSync(join(dir, LOCK), lockOf({ pid: NO_SUCH_PID }));
    const taken = await lockDirectory(dir, { now: 0, onNotice: (message) => notices.push(message) });
    expect(notices).toEqual([`taking over ${join(dir, LOCK)}: pid ${NO_SUCH_PID} on ${hostname()}, which took it since 2026-01-02T03:04:05.000Z, is no longer running`]);
    expect(JSON.parse(readFileSync(join(dir, LOCK), 'utf8'))).toMatchObject({ pid: process.pid });
    await taken.release();
    expect(existsSync(join(dir, LOCK))).toBe(false);
  });

  it.skipIf(!existsSync('/proc/self/stat'))('tells a live holder from a pid taken since by its start time (/proc)', async () => {
    const dir = tempDir();
    // The parent of this worker: a live process other than this one.
    const pid = process.ppid;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const start = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    writeFileSync(join(dir, LOCK), lockOf({ pid, processStart: start }));
    const error = await refusal(lockDirectory(dir, { now: 0 }));
    expect(error.hint).toContain(`(kill ${pid})`);

    const notices: string[] = [];
    writeFileSync(join(dir, LOCK), lockOf({ pid, processStart: start - 1 }));
    const taken = await lockDirectory(dir, { now: 0, onNotice: (message) => notices.push(message) });
    expect(notices[0]).toMatch(new RegExp(`is no longer running: pid ${pid} now belongs to a process started at another time$`));
    await taken.release();
  });

  it('never takes over a lock it cannot judge: another host\'s, one that does not say whose, a link', async () => {
    const dir = tempDir();
    const other = lockOf({ pid: 4242, host: 'build-7.elsewhere.example' });
    writeFileSync(join(dir, LOCK), other);
    let error = await refusal(lockDirectory(dir, { now: 0 }));
    expect(error.message).toBe(`${dir} is in use by another export (pid 4242 on build-7.elsewhere.example, since 2026-01-02T03:04:05.000Z); that host is not this one, so whether it still runs cannot be checked from here`);
    expect(error.hint).toMatch(/^if no export runs there any more, remove .* and run again/);
    expect(readFileSync(join(dir, LOCK), 'utf8')).toBe(other);

    writeFileSync(join(dir, LOCK), 'not a lock');
    error = await refusal(lockDirectory(dir, { now: 0 }));
    expect(error.message).toBe(`${dir} is locked by another run: ${join(dir, LOCK)} exists but does not say which`);

    const linked = join(tempDir(), 'out');
    mkdirSync(linked);
    symlinkSync(join(dir, LOCK), join(linked, LOCK));
    error = await refusal(lockDirectory(linked, { now: 0 }));
    expect(error.message).toBe(`${join(linked, LOCK)} is a symbolic link, not a lock this program made`);
  });
});
