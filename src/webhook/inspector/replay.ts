import { redactUrl } from '../../api/redact.js';
import type { ForwardHeader } from '../forward-headers.js';
import type { ReceivedDelivery } from '../receiver.js';
import { resend } from '../replay.js';
import type { InspectedDelivery } from './log.js';

// The page's replay buttons: to the forward target, as the forwarder sends (headers as received,
// body byte for byte); or to a URL typed in the page, as sent or signed anew with one of the
// secrets given, named by its number: a secret never reaches the page.

export interface ReplayTargets {
  /** `listen --forward-to`: the target with its credentials, the time each forward gets, the fields it adds (`--forward-header`). */
  forward?: { target: string; timeoutMs: number; headers: readonly ForwardHeader[] } | undefined;
  secrets: string[];
  /** The URL flags' one reading (target-url.ts) of what the page typed; throws with the reason. */
  parseUrl(value: string): string;
  /** `listen --inspect`: the listener, once it listens, to hand a delivery back to (Listener.redeliver). */
  receiver?: { redeliver?: ((delivery: ReceivedDelivery) => Promise<void>) | undefined } | undefined;
  /** Told of each replay to the forward target that delivered it, or that failed again for a delivery given up (PageForward). */
  forwarded?: ((forward: PageForward) => void) | undefined;
  /** `webhook inspect DIR`: taken before "replay failed" sends anything (FailedReplayGuard); throws why it cannot start. */
  guardFailedReplay?: (() => Promise<FailedReplayGuard>) | undefined;
}

/**
 * What "replay failed" over a save directory holds while it runs: `replay --failed`'s lock on the
 * directory (two at once would send the same deliveries twice), and the journal as it is now (a
 * `replay --failed` may have delivered some since the page read it).
 */
export interface FailedReplayGuard {
  stillFailed(record: InspectedDelivery): boolean;
  release(): Promise<void>;
}

/**
 * A replay from the page to the forward target that tells something of the delivery's forwarding:
 * it delivered it, or it failed again after the forwarder gave up (`givenUp`: its forward had
 * failed or was not forwarded). A failed re-send of a delivery the app took changes nothing.
 */
export interface PageForward {
  record: InspectedDelivery;
  delivered: boolean;
  givenUp: 'failed' | 'not_forwarded' | undefined;
  status: number | null;
  at: string;
}

/** Each replay gets this long to be answered (as `webhook replay`'s deliveries). */
const REPLAY_TIMEOUT_MS = 30_000;

interface Answer {
  status: number;
  answer: Record<string, unknown>;
}

const refused = (status: number, error: string): Answer => ({ status, answer: { error } });

/** What the page asked for (a JSON body) done: the HTTP status and JSON to answer it with. */
export async function replayAsked(record: InspectedDelivery, body: Buffer, targets: ReplayTargets, signal: AbortSignal): Promise<Answer> {
  let ask: unknown;
  try {
    ask = JSON.parse(body.toString('utf8'));
  } catch {
    return refused(400, 'the request is not JSON');
  }
  if (typeof ask !== 'object' || ask === null || Array.isArray(ask)) return refused(400, 'the request is not a JSON object');
  const { to, url, sign } = ask as Record<string, unknown>;
  if (to === 'receiver') return handedBack(record, targets);
  let target: string;
  let resignWith: string | undefined;
  let timeoutMs = REPLAY_TIMEOUT_MS;
  let added: readonly ForwardHeader[] = [];
  if (to === 'forward') {
    if (!targets.forward) return refused(400, 'there is no forward target: start `webhook listen` with --forward-to');
    ({ target, timeoutMs, headers: added } = targets.forward);
  } else if (to === 'url') {
    if (typeof url !== 'string' || url.trim() === '' || url.length > 4096) return refused(400, 'give the URL to send it to');
    try {
      target = targets.parseUrl(url.trim());
    } catch (error) {
      return refused(400, (error as Error).message);
    }
    if (sign !== undefined && sign !== 'as-sent') {
      const count = targets.secrets.length;
      if (typeof sign !== 'number' || !Number.isInteger(sign) || sign < 1 || sign > count) {
        return refused(400, count === 0 ? 'no secret was given to sign with: it can be sent as it was' : `sign "as-sent" or with secret 1 to ${count}`);
      }
      resignWith = targets.secrets[sign - 1];
    }
  } else return refused(400, 'replay to "forward" or to "url"');
  let loaded;
  try {
    loaded = await record.load();
  } catch (error) {
    return refused(410, `cannot read it again: ${(error as Error).message}`);
  }
  if (!loaded.body) return refused(409, 'its body was not read: the request was refused before it');
  const shown = redactUrl(target);
  const signed = resignWith === undefined ? 'as sent' : `signed with secret #${sign as number}`;
  const at = new Date().toISOString();
  try {
    const result = await resend(target, loaded.rawHeaders, loaded.body, { resignWith, added, timeoutMs, signal });
    if (to === 'forward') settle(record, { status: result.status, ms: result.ms, error: null, preview: result.preview }, at, targets);
    return { status: 200, answer: { sent: true, url: shown, signed, status: result.status, ms: result.ms, response: result.preview } };
  } catch (error) {
    const reason = (error as Error)?.message ?? String(error);
    if (to === 'forward') settle(record, { status: null, ms: null, error: `replayed from the page: ${reason}`, preview: null }, at, targets);
    return { status: 200, answer: { sent: false, url: shown, signed, error: reason } };
  }
}

type AttemptOutcome = { status: number | null; ms: number | null; error: string | null; preview: null | string };

/**
 * A replay to the forward target ended: a delivery given up, or one the page delivered, gets it as
 * its forward's next attempt (its row says it, and "replay failed" sends only what still failed),
 * and `targets.forwarded` is told. True when it was delivered.
 */
function settle(record: InspectedDelivery, outcome: AttemptOutcome, at: string, targets: ReplayTargets): boolean {
  const delivered = outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
  const state = record.forward;
  const givenUp = state?.state === 'failed' || state?.state === 'not_forwarded' ? state.state : undefined;
  if (!delivered && givenUp === undefined) return false;
  if (state) {
    state.attempts++;
    state.maxAttempts = Math.max(state.maxAttempts, state.attempts);
    state.state = delivered ? 'delivered' : 'failed';
    state.history.push({ attempt: state.attempts, at, ...outcome });
  }
  targets.forwarded?.({ record, delivered, givenUp, status: outcome.status, at });
  return delivered;
}

/**
 * "Replay to this receiver": the delivery handed back to the listener's pipeline, taken as new
 * (its id's duplicate check bypassed), not posted to it again, where its id would make it a duplicate.
 */
async function handedBack(record: InspectedDelivery, targets: ReplayTargets): Promise<Answer> {
  const redeliver = targets.receiver?.redeliver;
  if (!redeliver) return refused(400, 'there is no receiver to hand it back to: replay it to a URL');
  if (!record.delivery) return refused(409, 'a refused delivery cannot be taken as new: replay it to a URL');
  try {
    await redeliver(record.delivery);
    return { status: 200, answer: { taken: true } };
  } catch (error) {
    return { status: 200, answer: { taken: false, error: (error as Error)?.message ?? String(error) } };
  }
}

/** One line of "replay failed"'s progress, and its last (`finished`). */
export type FailedReplayLine =
  | { n: number; id: string | null; done: number; of: number; status: number | null; ms: number | null; error: string | null }
  | { finished: true; of: number; delivered: number; failed: number };

/**
 * The page's "replay failed": every delivery kept whose forward failed or was not forwarded, sent
 * again to the forward target as the forwarder sends, one after the other in arrival order; each
 * outcome is written into the delivery's forward history (so its row says it, and a second run
 * sends only what still failed), told to `targets.forwarded` (the journal) and to `progress`.
 */
export async function replayFailed(
  records: InspectedDelivery[],
  targets: ReplayTargets,
  signal: AbortSignal,
  progress: (line: FailedReplayLine) => void,
  changed: (record: InspectedDelivery) => void,
  guard?: FailedReplayGuard,
): Promise<void> {
  const forward = targets.forward as NonNullable<ReplayTargets['forward']>;
  const failed = records.filter(
    (record) => (record.forward?.state === 'failed' || record.forward?.state === 'not_forwarded') && (guard?.stillFailed(record) ?? true),
  );
  let delivered = 0;
  for (const [i, record] of failed.entries()) {
    if (signal.aborted) break;
    const at = new Date().toISOString();
    let outcome: AttemptOutcome;
    try {
      const loaded = await record.load();
      if (!loaded.body) throw new Error('its body was not read');
      const { target, headers: added, timeoutMs } = forward;
      const result = await resend(target, loaded.rawHeaders, loaded.body, { added, timeoutMs, signal });
      outcome = { status: result.status, ms: result.ms, error: null, preview: result.preview };
    } catch (error) {
      const reason = (error as Error)?.message ?? String(error);
      outcome = { status: null, ms: null, error: `replayed from the page: ${reason}`, preview: null };
    }
    if (settle(record, outcome, at, targets)) delivered++;
    changed(record);
    const { status, ms, error } = outcome;
    progress({ n: record.n, id: record.id ?? null, done: i + 1, of: failed.length, status, ms, error });
  }
  progress({ finished: true, of: failed.length, delivered, failed: failed.length - delivered });
}
