import { lstat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { UsageError } from '../errors.js';
import { readingReason } from '../support/system-errors.js';
import { isSavedName, JOURNAL_NAME, JournalError, readJournal } from './forward-journal.js';
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
  /** What the user should know of what was left out or added (a journal's bad lines, ids with no file, deliveries with no record). */
  notices: string[];
  /** With `--failed`: why nothing would be left to send, in words. */
  nothingLeft?: string;
}

/** One line of an ids file at most. */
const MAX_ID_LINE = 64 * 1024;
/** An id as a header value may carry it: no control character, no space around it. */
const ID = /^[\x21-\x7e\x80-\u{10ffff}]([\x20-\x7e\x80-\u{10ffff}]*[\x21-\x7e\x80-\u{10ffff}])?$/u;
/** Names and line numbers shown in a notice, at most; the rest are counted. */
const NAMED = 5;

/** The first NAMED of `names`, and how many more of `total` there are. */
const named = (names: readonly (string | number)[], total = names.length) => names.slice(0, NAMED).join(', ') + (total > NAMED ? ` and ${total - NAMED} more` : '');
const deliveries = (n: number) => (n === 1 ? '1 delivery' : `${n} deliveries`);

/**
 * The file an entry is, whatever path named it (`a.http`, `./a.http`, `dir//a.http`, through a
 * link to its directory): its device and inode, the final name not followed (replay never follows
 * it either); its path where it cannot be looked at.
 */
async function identity(entry: SavedEntry): Promise<string> {
  const info = await lstat(entry.file).catch(() => undefined);
  return info ? `${info.dev}:${info.ino}` : `path:${entry.file.toString('latin1')}`;
}

/** The saved deliveries to send, in arrival order, each file once. */
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
      const key = await identity(entry);
      if (!seen.has(key)) entries.push(entry);
      seen.add(key);
    }
    unreadable.push(...listed.unreadable);
  }
  let nothingLeft: string | undefined;
  if (failedDir !== undefined) {
    const { failed, recorded } = await journalOf(failedDir, notices);
    const found = new Set(entries.map((entry) => entry.name));
    const missing = [...failed].filter((name) => !found.has(name) && !unreadable.some((bad) => bad.name === name));
    if (missing.length > 0) {
      const are = missing.length === 1 ? 'is' : 'are';
      notices.push(`${deliveries(missing.length)} that ${JOURNAL_NAME} names as failed ${are} no longer in ${failedDir}: ${named(missing)}`);
    }
    // Saved (so answered) but with no record at all: `listen` ended before their forward ended
    // (kill -9, a second Ctrl-C) or forwarded nothing. Sent too, or an answered delivery is lost.
    const unrecorded = (name: string) => !recorded.has(name) && isSavedName(name);
    const wanted = (name: string) => failed.has(name) || unrecorded(name);
    const unrecordedCount = [...entries, ...unreadable].filter(({ name }) => unrecorded(name)).length;
    if (unrecordedCount > 0) {
      const they = unrecordedCount === 1 ? '1 saved delivery has no forward record' : `${unrecordedCount} saved deliveries have no forward record`;
      notices.push(`${they}: the session ended before forwarding ${unrecordedCount === 1 ? 'it' : 'them'}, or forwarded nothing (no --forward-to); ${unrecordedCount === 1 ? 'it is' : 'they are'} sent too`);
    }
    entries = entries.filter((entry) => wanted(entry.name));
    unreadable = unreadable.filter((bad) => wanted(bad.name));
    nothingLeft = recorded.size === 0 ? 'it holds no saved delivery and no forward record' : 'every forward recorded there was delivered';
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
  return { entries: entries.sort(byArrival), unreadable, notices, ...(nothingLeft === undefined ? {} : { nothingLeft }) };
}

/** What DIR's journal says: the files whose last record is `failed` or `not_forwarded`, and every file it has a record of. */
async function journalOf(dir: string, notices: string[]): Promise<{ failed: Set<string>; recorded: Set<string> }> {
  const reading = await readJournal(dir).catch((error: unknown) => {
    if (error instanceof JournalError) {
      throw new UsageError(error.message, {
        hint: `move ${join(dir, JOURNAL_NAME)} aside (\`webhook listen\` writes a regular file of yours there), or name the directory to send every delivery saved in it`,
      });
    }
    throw error;
  });
  if (reading === undefined) {
    // No journal: a session without --forward-to, or one that never started forwarding. Its
    // deliveries have no record, and are sent; a directory with none is named a mistake.
    const saved = await listSaved(dir).then(({ entries, unreadable }) => entries.length + unreadable.length);
    if (saved === 0) {
      throw new UsageError(`--failed ${dir}: no ${JOURNAL_NAME} and no saved delivery in it`, {
        hint: `${JOURNAL_NAME} is written by \`webhook listen --save ${dir} --forward-to …\`; name the directory that --save named`,
      });
    }
    return { failed: new Set(), recorded: new Set() };
  }
  if (reading.bad > 0) {
    const lines = `${reading.bad > 1 ? 'lines are' : 'line is'} not a forward record and ${reading.bad > 1 ? 'were' : 'was'} left out`;
    notices.push(`${JOURNAL_NAME}: ${reading.bad} ${lines} (line ${named(reading.badLines, reading.bad)})`);
  }
  const records = [...reading.last.values()];
  return {
    failed: new Set(records.filter(({ outcome }) => outcome !== 'delivered').map(({ file }) => file)),
    recorded: new Set(records.map(({ file }) => file)),
  };
}

/**
 * The delivery ids of `--ids FILE` (read by the command; `path` as given): one a line, `#` comments
 * and blank lines left out; any other line is a mistake to name.
 */
export function parseIds(data: Buffer, path: string): string[] {
  const refused = (reason: string) => new UsageError(`--ids ${path}: ${reason}`, { hint: 'one delivery id a line (X-Service-Delivery); # starts a comment' });
  const text = data.toString('utf8');
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
