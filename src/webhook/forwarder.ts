import { redactUrl } from '../api/redact.js';
import type { Clock } from '../support/clock.js';
import type { ForwardHeader } from './forward-headers.js';
import type { ReceivedDelivery } from './receiver.js';
import type { PostResult } from './sender.js';

export interface ForwarderOptions {
  target: string;
  timeoutMs: number;
  /** Deliveries waiting at most; beyond, new ones are not forwarded. */
  maxWaiting: number;
  /** Bytes of their bodies waiting at most. */
  maxWaitingBytes: number;
  /** Fields added to every forward (`--forward-header`); a field the delivery carries itself is its own. */
  headers: readonly ForwardHeader[];
  /** A failed forward is tried again this many times at most (`--forward-retries`). */
  retries: number;
  /** Waits between attempts run on it: a test's clock makes them cost nothing. */
  clock: Clock;
  /** Ctrl-C: no attempt is tried again after it, and a wait to do so ends at once; the attempt under way finishes. */
  signal: AbortSignal;
  /** Where a delivery was saved (`--save`), if it was. */
  savedAs(delivery: ReceivedDelivery): string | undefined;
  random?: () => number;
}

/**
 * How a forward attempt ended, or a delivery that got none: `delivered` (a 2xx), `retrying` (it
 * failed; another attempt follows in `retry_in_ms`), `failed` (it failed, and none follows) or
 * `not_forwarded` (no attempt: the queue was full).
 */
type ForwardOutcome = 'delivered' | 'retrying' | 'failed' | 'not_forwarded';

/**
 * What became of one forward attempt (or of a delivery that got no further one): the one record the
 * terminal's lines, `listen --json`'s `{"forward": …}` lines and the summary's counts are drawn from
 * (docs/cli.md#webhook-listen). Text in it came from the target: it is made inert where printed.
 */
export interface ForwardRecord {
  delivery: string;
  /** The delivery's arrival number in this session (ReceivedDelivery.sequence): ids repeat with --no-dedupe. */
  sequence: number;
  event: string;
  action: string | null;
  /** The target as it may be printed: credentials in its URL redacted. */
  target: string;
  /** When the attempt ended (or the delivery was given up), ISO 8601. */
  at: string;
  /** 1 for the first attempt; null for a record that is no attempt (not forwarded, retries stopped). */
  attempt: number | null;
  max_attempts: number;
  /** The target's status; null when it did not answer (refused, timed out, cut) or was not asked. */
  status: number | null;
  ms: number | null;
  /** Why there was no answer, or why the delivery got no further attempt; null when answered. */
  error: string | null;
  /** The first characters of the answer (120 at most). */
  response: string | null;
  outcome: ForwardOutcome;
  retry_in_ms: number | null;
  /** The file the delivery was saved as (`--save`), which `webhook replay` can send again; null when not saved. */
  saved: string | null;
}

export interface ForwarderEvents {
  onForward(record: ForwardRecord): void;
  /** The target fell far behind: `waiting` deliveries wait, and the next one is the first not forwarded. */
  onBehind(waiting: number): void;
  /** The queue emptied after `skipped` deliveries were not forwarded. */
  onCaughtUp(skipped: number): void;
  /** Our own failure (drawing a record, say): the forwards after it go on. */
  onFault(error: unknown): void;
}

export interface Forwarder {
  add(delivery: ReceivedDelivery): void;
  /** Once every delivery added was delivered or given up. */
  drained(): Promise<void>;
  /** Deliveries added and not yet delivered or given up. */
  waiting(): number;
}

/** The wait before a retry: exponential from 1 s, at most 30 s, and between half and all of it (jitter). */
const RETRY_BASE_MS = 1_000;
const RETRY_CAP_MS = 30_000;

/** The wait before retry number `retry` (1 for the first): random in [c / 2, c), c = min(cap, base · 2^(retry − 1)). */
function retryDelay(retry: number, random: () => number = Math.random): number {
  const ceiling = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** (retry - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * Forwards deliveries in arrival order, one at a time (a delivery being retried holds back the
 * ones after it), holding at most `maxWaiting` of them (and `maxWaitingBytes`): when the target is
 * that far behind, new deliveries are left out (they were answered and saved already) until it
 * catches up, so a slow or failing target never grows memory.
 */
export function createForwarder(options: ForwarderOptions, events: ForwarderEvents): Forwarder {
  let chain: Promise<void> = Promise.resolve();
  let waiting = 0;
  let waitingBytes = 0;
  let skipped = 0;
  const target = redactUrl(options.target);
  const maxAttempts = options.retries + 1;
  const { clock, signal } = options;
  // undici sends each character of a value as one byte and refuses any above U+00FF: the value's
  // UTF-8 bytes are sent, as curl sends what was typed.
  const added = options.headers.map(({ name, value }) => [name, Buffer.from(value).toString('latin1')] as const);

  // Loaded once, when forwarding is on: undici is not needed at start-up otherwise.
  const sender = import('./sender.js');

  const record = (delivery: ReceivedDelivery, { attempt, outcome, ...fields }: Pick<ForwardRecord, 'attempt' | 'outcome'> & Partial<ForwardRecord>): ForwardRecord => ({
    delivery: delivery.id,
    sequence: delivery.sequence,
    event: delivery.event,
    action: delivery.action ?? null,
    target,
    at: new Date(clock.now()).toISOString(),
    // In the order docs/cli.md shows a line's fields.
    attempt,
    max_attempts: maxAttempts,
    status: null,
    ms: null,
    error: null,
    response: null,
    outcome,
    retry_in_ms: null,
    saved: options.savedAs(delivery) ?? null,
    ...fields,
  });

  async function forward(delivery: ReceivedDelivery): Promise<void> {
    const { postDelivery, sendableHeaders } = await sender;
    const headers = sendableHeaders(delivery.rawHeaders());
    const own = new Set(headers.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase()));
    for (const [name, value] of added) if (!own.has(name.toLowerCase())) headers.push(name, value);
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      let answer: PostResult | undefined;
      let error: string | null = null;
      try {
        answer = await postDelivery(options.target, headers, delivery.rawBody, options.timeoutMs);
      } catch (failure) {
        error = (failure as Error).message || String(failure);
      }
      const delivered = answer !== undefined && answer.status >= 200 && answer.status < 300;
      const again = !delivered && attempt < maxAttempts && !signal.aborted;
      const wait = again ? retryDelay(attempt, options.random) : null;
      events.onForward(
        record(delivery, {
          attempt,
          status: answer?.status ?? null,
          ms: answer?.ms ?? Math.round(performance.now() - started),
          error,
          response: answer?.preview ?? null,
          outcome: delivered ? 'delivered' : again ? 'retrying' : 'failed',
          retry_in_ms: wait,
        }),
      );
      if (wait === null) return;
      try {
        await clock.sleep(wait, signal);
      } catch {
        // Ctrl-C during the wait: the retry is not made, and the delivery is given up now.
      }
      if (signal.aborted) {
        events.onForward(record(delivery, { attempt: null, error: `retries stopped by Ctrl-C after attempt ${attempt} of ${maxAttempts}`, outcome: 'failed' }));
        return;
      }
    }
  }

  return {
    add(delivery) {
      const size = delivery.rawBody.length;
      if (waiting > 0 && (waiting >= options.maxWaiting || waitingBytes + size > options.maxWaitingBytes)) {
        if (skipped++ === 0) events.onBehind(waiting);
        events.onForward(record(delivery, { attempt: null, error: 'the forward queue was full (--forward-queue)', outcome: 'not_forwarded' }));
        return;
      }
      waiting++;
      waitingBytes += size;
      chain = chain
        .then(() => forward(delivery))
        .catch((error: unknown) => events.onFault(error))
        .finally(() => {
          waiting--;
          waitingBytes -= size;
          if (skipped > 0 && waiting === 0) {
            events.onCaughtUp(skipped);
            skipped = 0;
          }
        });
    },
    drained: () => chain,
    waiting: () => waiting,
  };
}
