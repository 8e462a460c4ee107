import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import { readingReason } from '../support/system-errors.js';

// The forward journal, `<save dir>/forwards.jsonl`: one JSON line per forward outcome that ends a
// delivery's forwarding (`listen --save --forward-to`), and per replay of `webhook replay --failed`.
// The saved .http file is the delivery; this is only the record of what became of it, so lines
// are appended in batches, without a flush each. The file is read back as hostile input: anything
// in the save directory may have been written by someone else (docs/reliability.md).

export const JOURNAL_NAME = 'forwards.jsonl';

/** How a delivery's forwarding (or a replay of it) ended. */
type JournalOutcome = 'delivered' | 'failed' | 'not_forwarded';

export interface JournalEntry {
  /** The saved file's name in the directory (never a path). */
  file: string;
  delivery: string;
  outcome: JournalOutcome;
  status: number | null;
  /** ISO 8601. */
  at: string;
  /** The target, credentials in its URL redacted. */
  target: string;
}

/** The journal read at most, and one line of it at most. */
export const MAX_JOURNAL_BYTES = 64 * 1024 * 1024;
export const MAX_JOURNAL_LINE_BYTES = 64 * 1024;
/**
 * Characters of an id or target kept in a line: with JSON's escapes at most six characters for one,
 * a line stays far below MAX_JOURNAL_LINE_BYTES whatever a sender put in its delivery id.
 */
const MAX_TEXT = 2048;

/** A saved file's name as the store makes them (store.ts's deliveryFileName, `~N` for a copy): never a path. */
const SAVED_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._~-]{0,250}\.http$/;
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const KEYS = ['file', 'delivery', 'outcome', 'status', 'at', 'target'];
const OUTCOMES = new Set<string>(['delivered', 'failed', 'not_forwarded']);

/**
 * Whether `name` is one the store gives a saved delivery: a plain `*.http` name, never a path, nor
 * a dot file (a save's `.<name>.<hex>.tmp` left by a kill is none either).
 */
export const isSavedName = (name: string): boolean => SAVED_NAME.test(name);

/** The journal cannot be opened or read safely (a link, not a file, someone else's, too large). */
export class JournalError extends Error {}

export interface JournalWriter {
  /** Queued; written with the others of the same turn. A failure to write is told once to `onError`. */
  append(entry: JournalEntry): void;
  /** Once every line appended is written; the file is closed. */
  close(): Promise<void>;
}

const cut = (text: string) => (text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) : text);

/**
 * Opens `<dir>/forwards.jsonl` to append to: created 0600 and exclusively if missing; an existing
 * one must be a regular file of ours with no other name (never a link followed, nor a FIFO waited on).
 */
export async function openJournal(dir: string, onError: (error: Error) => void): Promise<JournalWriter> {
  const path = join(dir, JOURNAL_NAME);
  const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  const refused = (reason: string) => new JournalError(`cannot write the forward journal ${path}: ${reason}`);
  let handle: FileHandle;
  try {
    handle = await open(path, flags | constants.O_CREAT | constants.O_EXCL, 0o600).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'EEXIST') return open(path, flags);
      throw error;
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw refused(code === 'ELOOP' ? 'it is a symbolic link' : code === 'ENXIO' ? 'it is not a regular file' : readingReason(error));
  }
  try {
    const info = await handle.stat();
    const uid = process.getuid?.();
    if (!info.isFile()) throw refused('it is not a regular file');
    if (uid !== undefined && info.uid !== uid) throw refused(`it belongs to user ${info.uid}`);
    if (info.nlink > 1) throw refused('it has another name (a hard link)');
    if ((info.mode & 0o077) !== 0) await handle.chmod(0o600);
  } catch (error) {
    await handle.close();
    throw error;
  }
  let pending: string[] = [];
  let writing: Promise<void> = Promise.resolve();
  let broken = false;
  const writeBatch = async () => {
    const batch = pending.join('');
    pending = [];
    if (broken || batch === '') return;
    try {
      await handle.appendFile(batch);
    } catch (error) {
      broken = true;
      onError(refused((error as Error).message));
    }
  };
  return {
    append(entry) {
      if (broken) return;
      const line = `${JSON.stringify({ ...entry, delivery: cut(entry.delivery), target: cut(entry.target) })}\n`;
      if (pending.push(line) === 1) writing = writing.then(writeBatch);
    },
    async close() {
      await writing;
      await handle.close();
    },
  };
}

export interface JournalReading {
  /** Each file's last record, in the order the files first appear. */
  last: Map<string, JournalEntry>;
  /** Lines that are not records (too long, not JSON, not the shape): how many, and the first line numbers. */
  bad: number;
  badLines: number[];
}

const BAD_LINES_NAMED = 5;

/** Reads `<dir>/forwards.jsonl` as hostile input; undefined when there is none. */
export async function readJournal(dir: string): Promise<JournalReading | undefined> {
  const path = join(dir, JOURNAL_NAME);
  const refused = (reason: string) => new JournalError(`cannot read the forward journal ${path}: ${reason}`);
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw refused(code === 'ELOOP' ? 'it is a symbolic link' : readingReason(error));
  }
  let data: Buffer;
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw refused('it is not a regular file');
    if (info.size > MAX_JOURNAL_BYTES) throw refused(`${info.size} bytes, more than ${MAX_JOURNAL_BYTES} (start a new save directory)`);
    data = Buffer.allocUnsafe(info.size);
    let read = 0;
    while (read < data.length) {
      const { bytesRead } = await handle.read(data, read, data.length - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    data = data.subarray(0, read);
  } finally {
    await handle.close();
  }
  const reading: JournalReading = { last: new Map(), bad: 0, badLines: [] };
  let number = 0;
  for (let start = 0; start < data.length; start++) {
    const end = data.indexOf(0x0a, start);
    const stop = end < 0 ? data.length : end;
    number++;
    const entry = stop - start > MAX_JOURNAL_LINE_BYTES ? undefined : journalEntry(data.subarray(start, stop).toString('utf8'));
    if (entry) {
      // Deleted first: a file's place is that of its last record.
      reading.last.delete(entry.file);
      reading.last.set(entry.file, entry);
    } else if (stop > start) {
      reading.bad++;
      if (reading.badLines.length < BAD_LINES_NAMED) reading.badLines.push(number);
    }
    start = stop;
  }
  return reading;
}

/** A line as a record, or undefined if it is not exactly one. */
function journalEntry(line: string): JournalEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length !== KEYS.length || !KEYS.every((key) => Object.hasOwn(record, key))) return undefined;
  const { file, delivery, outcome, status, at, target } = record;
  if (typeof file !== 'string' || !isSavedName(file)) return undefined;
  if (typeof delivery !== 'string' || delivery.length > MAX_TEXT || typeof target !== 'string' || target.length > MAX_TEXT) return undefined;
  if (typeof outcome !== 'string' || !OUTCOMES.has(outcome)) return undefined;
  if (status !== null && !(Number.isInteger(status) && (status as number) >= 100 && (status as number) <= 999)) return undefined;
  if (typeof at !== 'string' || !ISO_TIME.test(at)) return undefined;
  return { file, delivery, outcome: outcome as JournalOutcome, status: status as number | null, at, target };
}
