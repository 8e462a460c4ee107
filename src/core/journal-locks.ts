import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApiClient } from '../api/client.js';
import { CliError, type ExitCode, InterruptedError, UsageError } from '../errors.js';
import type { Clock } from '../support/clock.js';
import { fileError, isSystemError } from '../support/system-errors.js';
import { replaceFile } from './exclusive-files.js';
import { JOURNAL_FILE } from './org-export/journal.js';
import { checkOutputDirectory, readJournal } from './org-export/journal-read.js';
import { lockDirectory } from './org-export/lock.js';
import { findStarted, type StartRecord } from './started-lookup.js';
import { givenBack, type MigrationReport, type MigrationsReport, migrationsUnlockFailure, reportOf, type UnlockCommands, unlockMigrations } from './unlock.js';

// What `unlock --output-dir DIR` gives back: every migration the export's journal names. The journal
// stays the export's own (it refuses any key it does not write), so what `unlock` did is recorded
// beside it, in a file of its own: a second `unlock --output-dir` and the export's closing line read
// it, and do not unlock again or call locked what was given back.

/** The record of migrations `unlock --output-dir` gave back, beside the journal. */
const UNLOCKED_FILE = 'svc-migrate-unlocked.json';
/** Some ten bytes an id: a record this large was not written by this program. */
const MAX_RECORD_BYTES = 4 * 1024 * 1024;

interface JournalMigration {
  migrationId: number;
  batch: number;
  /** The export itself unlocked it (`--unlock`, and the batch went past its unlock step). */
  unlockedByExport: boolean;
}

/** A batch the export left `starting`: its start was sent and its answer never heard. */
interface StartingBatch {
  batch: number;
  start: StartRecord;
}

interface JournalLocks {
  migrations: JournalMigration[];
  /** Batches whose start may have made a migration the journal does not name: to be looked up. */
  starting: StartingBatch[];
}

/**
 * Every migration of the export in `dir`, batch by batch, and every batch left `starting`, from its
 * journal read as hostile input (bounded, private, shaped as this program writes it: journal-read.ts).
 * No journal is a usage error.
 */
async function journalMigrations(dir: string): Promise<JournalLocks> {
  checkOutputDirectory(dir, process.getuid?.(), 'unlock');
  const journal = await readJournal(dir, process.getuid?.(), 'unlock');
  if (!journal) {
    throw new UsageError(`${dir} holds no export journal (${JOURNAL_FILE})`, {
      hint: 'name the --output-dir an `export --output-dir` wrote into, or give migration ids: `svc-migrate unlock <id>... --all`',
    });
  }
  // The journal's own words, written by export --output-dir; at worst a wrong one makes this
  // command unlock what was unlocked already, which the service answers 204.
  const exportUnlocked = journal.command.split(' ').includes('--unlock');
  const migrations = journal.batches.flatMap((batch) =>
    batch.migrationIds.map((migrationId) => ({
      migrationId,
      batch: batch.index,
      // A narrowed batch's failed migrations were given back when they failed (`released`).
      unlockedByExport: batch.released === true || (exportUnlocked && (batch.state === 'unlocked' || batch.state === 'done')),
    })),
  );
  const starting = journal.batches
    // A start recorded without --lock locked nothing, whatever it made.
    .filter((batch) => batch.state === 'starting' && (batch.startFlags === undefined || batch.startFlags.includes('lock_repositories')))
    .map((batch) => ({
      batch: batch.index,
      start: {
        repositories: batch.repositories,
        flags: batch.startFlags && Object.fromEntries(batch.startFlags.map((flag) => [flag, true])),
        startingAt: batch.startingAt,
        existed: batch.existed,
      },
    }));
  return { migrations, starting };
}

/** What the lookup of a batch left `starting` found: its migration, nothing, or why it could not be asked. */
interface StartLookup {
  batch: number;
  migrationId?: number;
  error?: { message: string; exitCode: ExitCode };
}

/**
 * The migration each batch left `starting` made, looked up as the export looks it up
 * (started-lookup.ts), never one the journal names or another batch took.
 */
async function lookUpStarts(client: ApiClient, org: string, locks: JournalLocks, now: number): Promise<StartLookup[]> {
  const claimed = new Set(locks.migrations.map((m) => m.migrationId));
  const found: StartLookup[] = [];
  for (const { batch, start } of locks.starting) {
    try {
      const migration = await findStarted(client, org, start, claimed, now);
      if (migration) claimed.add(migration.id);
      found.push({ batch, ...(migration ? { migrationId: migration.id } : {}) });
    } catch (error) {
      if (!(error instanceof CliError) || error instanceof InterruptedError) throw error;
      found.push({ batch, error: { message: error.message, exitCode: error.exitCode } });
    }
  }
  return found;
}

/** The migrations an earlier `unlock --output-dir` gave back whole, read as strictly as the journal. */
export async function unlockedRecord(dir: string): Promise<Set<number>> {
  const path = join(dir, UNLOCKED_FILE);
  let text: string;
  try {
    const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) throw notOurs(path, stats.isDirectory() ? 'it is a directory' : 'it is not a regular file');
      if (stats.size > MAX_RECORD_BYTES) throw notOurs(path, `it holds more than ${MAX_RECORD_BYTES} bytes, more than such a record can`);
      text = await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return new Set();
    if (code === 'ELOOP') throw notOurs(path, 'it is a symbolic link');
    if (!isSystemError(error)) throw error;
    throw fileError(error, { action: 'read', path, role: '--output-dir', after: 'then run the same command again' });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw notOurs(path, 'it is not JSON');
  }
  const record = value as { version?: unknown; migration_ids?: unknown };
  if (typeof value !== 'object' || value === null || record.version !== 1 || !Array.isArray(record.migration_ids)) {
    throw notOurs(path, 'it is not shaped as {"version": 1, "migration_ids": [...]}');
  }
  const ids = record.migration_ids as unknown[];
  if (!ids.every((id) => Number.isSafeInteger(id) && (id as number) > 0)) throw notOurs(path, 'a migration id in it is not a whole number');
  return new Set(ids as number[]);
}

/** Adds `ids` to the record, written whole or not at all. */
async function recordUnlocked(dir: string, ids: Iterable<number>): Promise<void> {
  const all = await unlockedRecord(dir);
  for (const id of ids) all.add(id);
  const path = join(dir, UNLOCKED_FILE);
  try {
    await replaceFile(path, `${JSON.stringify({ version: 1, migration_ids: [...all].sort((a, b) => a - b) })}\n`, { mode: 0o600, durable: true });
  } catch (error) {
    if (!isSystemError(error)) throw error;
    throw fileError(error, { action: 'write', path, role: '--output-dir', after: 'the repositories are unlocked; only the record of it is missing' });
  }
}

/**
 * `unlock --output-dir DIR`: every migration the export's journal names, and any a batch left
 * `starting` made, each whole; what was given back is recorded so that a second run does not ask again.
 */
export async function unlockExportDirectory(
  client: ApiClient,
  org: string,
  dir: string,
  options: { clock: Clock; onNotice: (message: string) => void; commands: UnlockCommands },
): Promise<MigrationsReport> {
  const locks = await journalMigrations(dir);
  // Not while an export runs there: it writes the journal and may be about to unlock or start.
  const lock = await lockDirectory(dir, { now: options.clock.now(), onNotice: options.onNotice, command: 'unlock' });
  try {
    const recorded = await unlockedRecord(dir);
    // A batch left `starting` may have a migration the journal never heard of: looked up as the export does.
    const lookups = await lookUpStarts(client, org, locks, options.clock.now());
    const lost = new Set(lookups.flatMap((found) => (found.migrationId === undefined ? [] : [found.migrationId])));
    const migrations = [
      ...locks.migrations,
      ...lookups.flatMap(({ migrationId, batch }) => (migrationId === undefined ? [] : [{ migrationId, batch, unlockedByExport: false }])),
    ];
    const reports = new Map<number, MigrationReport>();
    const todo = migrations.filter((m) => {
      const state = m.unlockedByExport ? 'unlocked_by_export' : recorded.has(m.migrationId) ? 'unlocked_before' : undefined;
      const lostStart = lost.has(m.migrationId) ? { lost_start: true as const } : {};
      if (state) reports.set(m.migrationId, { migration_id: m.migrationId, batch: m.batch, ...lostStart, state, repositories: [] });
      return state === undefined;
    });
    const results = await unlockMigrations(client, org, todo.map((m) => m.migrationId));
    const batchOf = new Map(migrations.map((m) => [m.migrationId, m.batch]));
    for (const result of results) {
      reports.set(result.migrationId, reportOf(result, batchOf.get(result.migrationId), lost.has(result.migrationId)));
    }
    await recordUnlocked(dir, results.filter(givenBack).map((result) => result.migrationId));
    const unfound: MigrationReport[] = lookups.flatMap((found) => {
      if (found.migrationId !== undefined) return [];
      const state = found.error ? 'failed' : 'start_not_found';
      return [{ batch: found.batch, state, repositories: [], ...(found.error ? { error: found.error.message } : {}) }];
    });
    const all = [...migrations.map((m) => reports.get(m.migrationId) as MigrationReport), ...unfound]
      .sort((a, b) => (a.batch ?? 0) - (b.batch ?? 0));
    const unlooked = lookups.flatMap((found) => (found.error ? [{ batch: found.batch, ...found.error }] : []));
    return { migrations: all, failure: migrationsUnlockFailure(results, options.commands, unlooked) };
  } finally {
    await lock.release();
  }
}

function notOurs(path: string, why: string): UsageError {
  return new UsageError(`${path} is not a record this program wrote: ${why}`, {
    hint: `move it away and run the command again: unlocking what is unlocked already is harmless`,
  });
}
