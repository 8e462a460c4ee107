import { constants, type Stats, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { START_FLAGS, type StartFlag } from '../../api/types.js';
import { UsageError } from '../../errors.js';
import { archivePathOf, type BatchRecord, type BatchState, type Journal, JOURNAL_FILE, journalError } from './journal.js';

/** Which command reads the journal: its hints say what that command can do. */
type Reader = 'export' | 'unlock';

const PUT_BACK: Record<Reader, string> = {
  export: 'put back the journal as the export wrote it, or move it away and run again with --restart to plan the export anew (archives already saved stay)',
  unlock: 'put back the journal as the export wrote it; or unlock by migration id: `svc-migrate list` shows the ids, `svc-migrate unlock <id>... --all` unlocks them',
};

// The journal is read back as this program writes it, or not at all: a record it cannot have
// written (a wrong type, an unknown state, an id that is not a whole number, an archive anywhere but
// where its migration's archive goes) is refused, never believed. What a record says happened on
// disk is checked again before anything is released (run.ts).

const STATES: readonly BatchState[] = ['pending', 'starting', 'started', 'exported', 'downloaded', 'unlocked', 'done', 'failed', 'narrowed', 'skipped'];
/** States that need the migration the batch is at. */
const WITH_MIGRATION: ReadonlySet<BatchState> = new Set(['started', 'exported', 'downloaded', 'unlocked', 'done', 'narrowed']);

/** Why a journal cannot be read as one this program wrote. */
class JournalProblem extends Error {}

/** The largest journal read: some hundred bytes a batch, for tens of thousands of batches. */
const MAX_JOURNAL_BYTES = 64 * 1024 * 1024;

/**
 * The journal of `dir`, checked: a private file of ours (as the config file is: another user who
 * can write it could steer what we delete), holding only what this program writes (checkJournal).
 */
export async function readJournal(
  dir: string,
  uid: number | undefined = process.getuid?.(),
  reader: Reader = 'export',
): Promise<Journal | undefined> {
  const path = join(dir, JOURNAL_FILE);
  let text: string;
  try {
    const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const stats = await handle.stat();
      const problem = !stats.isFile()
        ? 'is not a regular file'
        : stats.size > MAX_JOURNAL_BYTES
          ? `is larger than a journal can be (${stats.size} bytes)`
          : privacyProblem(stats, uid, 0o077);
      if (problem) throw untrusted(dir, `the journal ${path} ${problem}`, reader);
      text = await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw untrusted(dir, `the journal ${path} is a symbolic link`, reader);
    throw journalError('read', path, error);
  }
  try {
    return checkJournal(JSON.parse(text), dir);
  } catch (error) {
    if (!(error instanceof JournalProblem || error instanceof SyntaxError)) throw error;
    const reason = error instanceof JournalProblem ? error.message : `it is not JSON (${error.message})`;
    throw new UsageError(`${path} is not a journal this program wrote: ${reason}`, { hint: PUT_BACK[reader] });
  }
}

/**
 * Refuses an output directory another user owns or can write (exit 2), as the config's is refused:
 * whoever can replace the journal or the archives in it decides what is unlocked and deleted.
 */
export function checkOutputDirectory(dir: string, uid: number | undefined = process.getuid?.(), reader: Reader = 'export'): void {
  if (uid === undefined) return; // Windows: ownership is a matter of ACLs, not modes.
  let stats: Stats;
  try {
    stats = statSync(dir);
  } catch (error) {
    throw journalError('read', dir, error);
  }
  const problem = privacyProblem(stats, uid, 0o022);
  if (problem) throw untrusted(dir, `the output directory ${dir} ${problem}`, reader);
}

/** What makes a file or directory of `stats` not ours alone: another owner, or `forbidden` mode bits. */
function privacyProblem(stats: Stats, uid: number | undefined, forbidden: number): string | undefined {
  if (uid === undefined) return undefined;
  if (stats.uid !== uid) return `is owned by another user (uid ${stats.uid}, you are ${uid})`;
  const mode = (stats.mode & 0o777).toString(8).padStart(4, '0');
  if (stats.mode & 0o022 & forbidden) return `is writable by other users (mode ${mode})`;
  if (stats.mode & forbidden) return `is open to other users (mode ${mode})`;
  return undefined;
}

function untrusted(dir: string, problem: string, reader: Reader): UsageError {
  const journal = join(dir, JOURNAL_FILE);
  const then = reader === 'export' ? ', or choose another --output-dir' : ', then run the command again';
  return new UsageError(`refusing to use ${dir}: ${problem}`, {
    hint: `make ${dir} and the journal in it yours and private (chown, then chmod 700 ${dir} and chmod 600 ${journal})${then}`,
  });
}

/** `value` as a journal of the export in `dir`, or a JournalProblem saying what is wrong with it. */
function checkJournal(value: unknown, dir: string): Journal {
  const journal = record(value, 'the journal');
  onlyKeys(journal, ['version', 'fingerprint', 'command', 'org', 'createdAt', 'updatedAt', 'batches'], 'the journal');
  if (journal.version !== 1) throw new JournalProblem(`its version is ${show(journal.version)}, not 1`);
  if (typeof journal.fingerprint !== 'string' || !/^[0-9a-f]{64}$/.test(journal.fingerprint)) throw new JournalProblem('its fingerprint is not a sha256');
  for (const key of ['command', 'org', 'createdAt', 'updatedAt'] as const) text(journal[key], key);
  if (!Array.isArray(journal.batches)) throw new JournalProblem('batches is not a list');
  const owners = new Map<number, number>();
  const batches = journal.batches.map((entry, position) => {
    const batch = checkBatch(entry, position + 1, dir);
    for (const id of batch.migrationIds) {
      const other = owners.get(id);
      if (other !== undefined) throw new JournalProblem(`batch ${other} and batch ${batch.index} both name migration ${id}`);
      owners.set(id, batch.index);
    }
    return batch;
  });
  return { ...(journal as unknown as Journal), batches };
}

function checkBatch(value: unknown, index: number, dir: string): BatchRecord {
  const where = `batch ${index}`;
  const batch = record(value, where);
  onlyKeys(batch, ['index', 'repositories', 'state', 'migrationIds', 'startingAt', 'existed', 'startFlags', 'attempts', 'archive', 'skipped', 'error', 'released'], where);
  if (batch.index !== index) throw new JournalProblem(`${where} is numbered ${show(batch.index)}`);
  if (!STATES.includes(batch.state as BatchState)) {
    throw new JournalProblem(`${where}: state ${show(batch.state)} is not one of ${STATES.join(', ')}`);
  }
  const state = batch.state as BatchState;
  // Only a batch whose every repository the service refused is left with none.
  if (!Array.isArray(batch.repositories) || (batch.repositories.length === 0) !== (state === 'skipped')) {
    throw new JournalProblem(`${where}: repositories is not a list of names`);
  }
  batch.repositories.forEach((name, i) => text(name, `${where}: repositories[${i}]`));
  if (batch.skipped !== undefined) {
    if (!Array.isArray(batch.skipped)) throw new JournalProblem(`${where}: skipped is not a list`);
    batch.skipped.forEach((entry, i) => {
      const skipped = record(entry, `${where}: skipped[${i}]`);
      onlyKeys(skipped, ['name', 'reason', 'migrationId'], `${where}: skipped[${i}]`);
      text(skipped.name, `${where}: skipped[${i}].name`);
      text(skipped.reason, `${where}: skipped[${i}].reason`);
      if (skipped.migrationId !== undefined) wholeNumber(skipped.migrationId, `${where}: skipped[${i}].migrationId`, 1);
    });
  }
  if (state === 'skipped' && !batch.skipped?.length) throw new JournalProblem(`${where} is skipped but names no repository the service refused`);
  if (!Array.isArray(batch.migrationIds)) throw new JournalProblem(`${where}: migrationIds is not a list`);
  batch.migrationIds.forEach((id, i) => wholeNumber(id, `${where}: migrationIds[${i}]`, 1));
  const ids = batch.migrationIds as number[];
  if (WITH_MIGRATION.has(state) && ids.length === 0) throw new JournalProblem(`${where} is ${state} but names no migration`);
  if (batch.startingAt !== undefined && !Number.isFinite(batch.startingAt)) throw new JournalProblem(`${where}: startingAt is not a time`);
  if (batch.existed !== undefined) {
    if (!Array.isArray(batch.existed)) throw new JournalProblem(`${where}: existed is not a list`);
    batch.existed.forEach((id, i) => wholeNumber(id, `${where}: existed[${i}]`, 1));
  }
  if (batch.startFlags !== undefined) {
    if (!Array.isArray(batch.startFlags)) throw new JournalProblem(`${where}: startFlags is not a list`);
    batch.startFlags.forEach((flag, i) => {
      if (!START_FLAGS.includes(flag as StartFlag)) throw new JournalProblem(`${where}: startFlags[${i}] is ${show(flag)}, not one of ${START_FLAGS.join(', ')}`);
    });
  }
  wholeNumber(batch.attempts, `${where}: attempts`, 0);
  if (batch.released !== undefined && typeof batch.released !== 'boolean') throw new JournalProblem(`${where}: released is not true or false`);
  if (batch.error !== undefined) {
    const error = record(batch.error, `${where}: error`);
    onlyKeys(error, ['message', 'exitCode', 'hint'], `${where}: error`);
    text(error.message, `${where}: error.message`);
    wholeNumber(error.exitCode, `${where}: error.exitCode`, 0);
    if (error.hint !== undefined) text(error.hint, `${where}: error.hint`);
  }
  if (batch.archive !== undefined) {
    checkArchive(batch.archive, where, ids.at(-1), dir);
    // Read from here on as where it must be, whatever path led to it.
    (batch.archive as { path: string }).path = archivePathOf(dir, ids.at(-1) as number);
  }
  return batch as unknown as BatchRecord;
}

function checkArchive(value: unknown, where: string, id: number | undefined, dir: string): void {
  const archive = record(value, `${where}: archive`);
  onlyKeys(archive, ['path', 'bytes', 'sha256', 'verified', 'gitObjectsChecked', 'verifiedAt'], `${where}: archive`);
  if (archive.verifiedAt !== undefined && (typeof archive.verifiedAt !== 'string' || Number.isNaN(Date.parse(archive.verifiedAt)))) {
    throw new JournalProblem(`${where}: archive.verifiedAt is not a time`);
  }
  if (id === undefined) throw new JournalProblem(`${where} records an archive but no migration`);
  const expected = archivePathOf(dir, id);
  // The directory may have been moved, or named by another path, since: only the name must match.
  if (typeof archive.path !== 'string' || basename(archive.path) !== basename(expected)) {
    throw new JournalProblem(`${where} records its archive as ${show(archive.path)}, but the archive of migration ${id} is ${expected}`);
  }
  wholeNumber(archive.bytes, `${where}: archive.bytes`, 0);
  if (archive.sha256 !== undefined && (typeof archive.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(archive.sha256))) {
    throw new JournalProblem(`${where}: archive.sha256 is not a sha256`);
  }
  if (typeof archive.verified !== 'boolean') throw new JournalProblem(`${where}: archive.verified is not true or false`);
  if (archive.gitObjectsChecked !== undefined && typeof archive.gitObjectsChecked !== 'boolean') {
    throw new JournalProblem(`${where}: archive.gitObjectsChecked is not true or false`);
  }
}

function record(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new JournalProblem(`${what} is not an object`);
  return value as Record<string, unknown>;
}

function text(value: unknown, what: string): void {
  if (typeof value !== 'string') throw new JournalProblem(`${what} is not text`);
}

function wholeNumber(value: unknown, what: string, min: number): void {
  if (!Number.isSafeInteger(value) || (value as number) < min) {
    throw new JournalProblem(`${what} is ${show(value)}, not a whole number${min > 0 ? ` above ${min - 1}` : ''}`);
  }
}

/**
 * A value of the file, shown short: text and numbers as they are (cut at 80 characters), anything
 * else by its type. Never by descending into it: a list nested 200,000 deep overflows the stack of
 * anything recursive (JSON.stringify), and the journal is anyone's text until checked.
 */
function show(value: unknown): string {
  if (typeof value === 'string') {
    const shown = JSON.stringify(value.slice(0, 80));
    return value.length > 80 ? `${shown.slice(0, -1)}…"` : shown;
  }
  if (Array.isArray(value)) return `a list of ${value.length} item${value.length === 1 ? '' : 's'}`;
  if (typeof value === 'object' && value !== null) return 'an object';
  return String(value);
}

/** Refuses a key this program does not write: its value would be kept and written back unchecked. */
function onlyKeys(value: Record<string, unknown>, keys: readonly string[], what: string): void {
  const unknown = Object.keys(value).find((key) => !keys.includes(key));
  if (unknown !== undefined) throw new JournalProblem(`${what} has a key this program does not write: ${show(unknown)}`);
}
