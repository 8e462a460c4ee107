import { DELIVERY_HEADERS } from '../../api/types.js';
import { catalogueWarnings } from '../catalogue.js';
import { BodyError, contentKind, headerWarnings, parsePayload } from '../delivery.js';
import { fullName } from '../receiver.js';
import { verifySignature } from '../signature.js';
import { JOURNAL_NAME, type JournalEntry, JournalError, readJournal } from '../forward-journal.js';
import { listSaved, parseSaved, readSaved, type SavedDelivery, type SavedEntry, type Unreadable } from '../store.js';
import { DeliveryLog, type ForwardState, type InspectedDelivery, type Verification } from './log.js';

// `webhook inspect DIR`: a `--save` directory as the inspector's log. The directory is hostile
// input: each file is read as `webhook replay` reads it (a regular file, no link followed, at most
// the largest delivery, one in memory at a time), checked as a saved delivery, summarised, and let
// go; the page's detail and replay read it again, so a file changed since is never trusted from
// what it was.

export interface SavedLog {
  log: DeliveryLog;
  /** Files that are not saved deliveries, with the reason. */
  unreadable: Unreadable[];
  /** Saved deliveries: those listed, and the older ones not read (`log.dropped`). */
  total: number;
  /** What the user should know of the forward journal: unreadable, or lines of it left out. */
  journalNotice: string | undefined;
}

/**
 * Reads the newest `keep` deliveries of `dir`, verifying them with `secrets` when any are given. A
 * file that is not a delivery takes no place among them: it is listed in `unreadable`.
 */
export async function readSavedLog(dir: string, keep: number, secrets: string[]): Promise<SavedLog> {
  const { entries, unreadable } = await listSaved(dir);
  // Each delivery's last forward outcome, as `webhook replay --failed` reads them (hostile input, strict shape).
  let journalNotice: string | undefined;
  const journal = await readJournal(dir).catch((error: unknown) => {
    if (!(error instanceof JournalError)) throw error;
    journalNotice = `${error.message}: forward outcomes are not shown`;
    return undefined;
  });
  if (journal && journal.bad > 0) {
    const lines = journal.badLines.join(', ') + (journal.bad > journal.badLines.length ? ' and more' : '');
    journalNotice = `${JOURNAL_NAME}: ${journal.bad} line${journal.bad > 1 ? 's are' : ' is'} not a forward record: left out, the page shows no outcome from ${journal.bad > 1 ? 'them' : 'it'} (line ${lines})`;
  }
  const log = new DeliveryLog(keep);
  const listed: InspectedDelivery[] = [];
  let next = entries.length - 1;
  for (; next >= 0 && listed.length < keep; next--) {
    const entry = entries[next] as SavedEntry;
    let saved: SavedDelivery;
    try {
      saved = parseSaved(entry.name, await readSaved(entry.file));
    } catch (error) {
      unreadable.push({ name: entry.name, reason: (error as Error).message.replace(`${entry.name} is `, '') });
      continue;
    }
    const load = async () => {
      const again = parseSaved(entry.name, await readSaved(entry.file));
      return { rawHeaders: again.rawHeaders, body: again.body };
    };
    const last = journal?.last.get(entry.name);
    listed.push({ ...describeSaved(saved, secrets), n: 0, file: entry.name, load, held: 0, forward: last && journalForward(last) });
  }
  for (const record of listed.reverse()) log.add(record);
  // The older files are not read: they count as deliveries, not listed.
  log.dropped = next + 1;
  return { log, unreadable, total: listed.length + log.dropped, journalNotice };
}

/** A delivery's forward as the journal's last record of it says: its outcome and answer (no time taken, no attempt count). */
function journalForward({ outcome, status, at }: JournalEntry): ForwardState {
  const tried = outcome !== 'not_forwarded';
  const error = status !== null ? null : `${tried ? 'no answer' : 'not forwarded'} (as ${JOURNAL_NAME} records it)`;
  const history = [{ attempt: tried ? 1 : null, at, status, ms: null, error, preview: null }];
  return { state: outcome, attempts: tried ? 1 : 0, maxAttempts: 1, history };
}

/** What the receiver would have made of a saved delivery: its event, verification and warnings. */
function describeSaved(saved: SavedDelivery, secrets: string[]): Omit<InspectedDelivery, 'n' | 'load' | 'held' | 'file'> {
  const headers = Object.create(null) as Record<string, string>;
  for (let i = 0; i < saved.rawHeaders.length; i += 2) {
    const name = (saved.rawHeaders[i] as string).toLowerCase();
    const value = saved.rawHeaders[i + 1] as string;
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  const event = headers[DELIVERY_HEADERS.event];
  const kind = contentKind(headers[DELIVERY_HEADERS.contentType]);
  const warnings = headerWarnings(headers);
  let action: string | undefined;
  let repository: string | undefined;
  if (kind === undefined) warnings.push(`content type "${headers[DELIVERY_HEADERS.contentType] ?? ''}" is neither JSON nor a form`);
  else {
    try {
      const payload = parsePayload(saved.body, kind);
      if (event) warnings.push(...catalogueWarnings(event, payload));
      action = Object.hasOwn(payload, 'action') && typeof payload.action === 'string' ? payload.action : undefined;
      repository = fullName(payload);
    } catch (error) {
      if (!(error instanceof BodyError)) throw error;
      warnings.push(`the payload cannot be read: ${error.message}`);
    }
  }
  return {
    receivedAt: saved.receivedAt,
    method: saved.method,
    path: saved.path,
    id: headers[DELIVERY_HEADERS.delivery],
    event,
    action,
    hookId: headers[DELIVERY_HEADERS.hookId],
    repository,
    contentType: kind,
    size: saved.body.length,
    verification: verificationOf(saved.body, headers, secrets),
    warnings,
    duplicate: false,
    answer: undefined,
  };
}

function verificationOf(body: Buffer, headers: Record<string, string>, secrets: string[]): Verification {
  if (secrets.length === 0) return { state: 'unverified', reason: 'no secret given to check it with' };
  const signatures = { signature256: headers[DELIVERY_HEADERS.signature256], signature: headers[DELIVERY_HEADERS.signature] };
  const result = verifySignature(body, signatures, secrets);
  if (!result.valid) return { state: 'unverified', reason: result.reason };
  return { state: 'verified', algorithm: result.algorithm, legacy: result.legacy, secret: result.secretIndex + 1 };
}
