import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename } from 'node:path';
import { UsageError } from '../errors.js';
import { readingReason } from '../support/system-errors.js';
import { JOURNAL_NAME, JournalError, readJournal } from './forward-journal.js';
import { byArrival, deliveryFileName, listSaved, type SavedEntry, type Unreadable } from './store.js';

// Which saved deliveries `webhook replay` sends: those of its FILE-OR-DIR arguments, or with
// `--failed DIR` those whose forward last failed (DIR/forwards.jsonl), narrowed by `--ids FILE`.

export interface ReplaySelection {
  /** Saved .http files and directories of them. */
  paths: string[];
  /** `--failed DIR`: the deliveries of DIR whose last journal record is a failure. */
  failedDir?: string | undefined;
  /** `--ids FILE`, read: only the saved files of these delivery ids. */
  ids?: string[] | undefined;
}

export interface Selected {
  entries: SavedEntry[];
  unreadable: Unreadable[];
  /** What the user should know of what was left out (a journal's bad lines, ids with no file). */
  notices: string[];
}

/** An ids file read at most, and one line of it at most. */
const MAX_IDS_BYTES = 16 * 1024 * 1024;
const MAX_ID_LINE = 64 * 1024;
/** An id as a header value may carry it: no control character, no space around it. */
const ID = /^[\x21-\x7e\x80-\u{10ffff}]([\x20-\x7e\x80-\u{10ffff}]*[\x21-\x7e\x80-\u{10ffff}])?$/u;
/** Names and line numbers shown in a notice, at most; the rest are counted. */
const NAMED = 5;

const named = (names: readonly (string | number)[]) => names.slice(0, NAMED).join(', ') + (names.length > NAMED ? ` and ${names.length - NAMED} more` : '');

/** The saved deliveries to send, in arrival order, each once. */
export async function selectSaved({ paths, failedDir, ids }: ReplaySelection): Promise<Selected> {
  const notices: string[] = [];
  let entries: SavedEntry[] = [];
  let unreadable: Unreadable[] = [];
  const seen = new Set<string>();
  for (const path of failedDir === undefined ? paths : [failedDir]) {
    const listed = await listSaved(path).catch((error: unknown) => {
      throw new UsageError(`cannot read deliveries from ${path}: ${readingReason(error)}`);
    });
    for (const entry of listed.entries) {
      const key = entry.file.toString('latin1');
      if (!seen.has(key)) entries.push(entry);
      seen.add(key);
    }
    unreadable.push(...listed.unreadable);
  }
  if (failedDir !== undefined) {
    const failed = await failedFiles(failedDir, notices);
    const found = new Set(entries.map((entry) => entry.name));
    const missing = [...failed].filter((name) => !found.has(name) && !unreadable.some((bad) => bad.name === name));
    if (missing.length > 0) notices.push(`${missing.length} deliveries ${JOURNAL_NAME} names as failed are no longer in ${failedDir}: ${named(missing)}`);
    entries = entries.filter((entry) => failed.has(entry.name));
    unreadable = unreadable.filter((bad) => failed.has(bad.name));
  }
  if (ids !== undefined) {
    const wanted = new Map(ids.map((id) => [deliveryFileName(id).slice(0, -'.http'.length), id]));
    const matched = new Set<string>();
    const wants = (name: string) => {
      const file = basename(name);
      // `<name>.http`, or a later copy of the same id, `<name>~2.http` (store.ts).
      const base = /^(.*?)(~\d+)?\.http$/.exec(file)?.[1] ?? '';
      const id = wanted.get(base) ?? wanted.get(file.slice(0, -'.http'.length));
      if (id !== undefined) matched.add(id);
      return id !== undefined;
    };
    entries = entries.filter((entry) => wants(entry.name));
    unreadable = unreadable.filter((bad) => wants(bad.name));
    const none = ids.filter((id) => !matched.has(id));
    if (none.length > 0) notices.push(`${none.length} of the ${ids.length} ids have no saved delivery here: ${named(none)}`);
  }
  return { entries: entries.sort(byArrival), unreadable, notices };
}

/** The files of DIR whose last journal record is `failed` or `not_forwarded`. */
async function failedFiles(dir: string, notices: string[]): Promise<Set<string>> {
  const reading = await readJournal(dir).catch((error: unknown) => {
    if (error instanceof JournalError) throw new UsageError(error.message);
    throw error;
  });
  if (reading === undefined) {
    throw new UsageError(`--failed ${dir}: no ${JOURNAL_NAME} in it`, {
      hint: `${JOURNAL_NAME} is written by \`webhook listen --save ${dir} --forward-to …\`; to send every delivery saved there, name the directory instead`,
    });
  }
  if (reading.bad > 0) {
    notices.push(`${JOURNAL_NAME}: ${reading.bad} line${reading.bad > 1 ? 's are' : ' is'} not a forward record and ${reading.bad > 1 ? 'were' : 'was'} left out (line ${named(reading.badLines)})`);
  }
  return new Set([...reading.last.values()].filter(({ outcome }) => outcome !== 'delivered').map(({ file }) => file));
}

/** The delivery ids of `--ids FILE`: one a line, `#` comments and blank lines left out; any other line is a mistake to name. */
export async function readIds(path: string): Promise<string[]> {
  const refused = (reason: string) => new UsageError(`--ids ${path}: ${reason}`, { hint: 'one delivery id a line (X-Service-Delivery); # starts a comment' });
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch((error: unknown) => {
    throw refused(readingReason(error));
  });
  let text: string;
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw refused('not a regular file');
    if (info.size > MAX_IDS_BYTES) throw refused(`${info.size} bytes, more than ${MAX_IDS_BYTES}`);
    text = (await handle.readFile()).toString('utf8');
  } finally {
    await handle.close();
  }
  const ids: string[] = [];
  const bad: number[] = [];
  text.split(/\r?\n/).forEach((line, index) => {
    const id = line.trim();
    if (id === '' || id.startsWith('#')) return;
    if (line.length > MAX_ID_LINE || !ID.test(id) || id.includes('\ufffd')) bad.push(index + 1);
    else ids.push(id);
  });
  if (bad.length > 0) throw refused(`line ${named(bad)} ${bad.length > 1 ? 'are not delivery ids' : 'is not a delivery id'}`);
  if (ids.length === 0) throw refused('it names no delivery id');
  return [...new Set(ids)];
}
