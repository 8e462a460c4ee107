import { redactUrl } from '../api/redact.js';
import type { Clock } from '../support/clock.js';
import type { ForwardHeader } from './forward-headers.js';
import type { ReceivedDelivery } from './receiver.js';
import type { PostResult } from './sender.js';

export interface ForwarderOptions {
  target: string;
  timeoutMs: number;
  /** Forwards under way at once at most (`--forward-concurrency`); 1 keeps arrival order. */
  concurrency: number;
  /** Deliveries waiting for a free slot at most (those under way not counted); beyond, new ones are not forwarded. */
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
  /** The queue is full: `waiting` deliveries wait, the next one is the first not forwarded; `pace` says who is slow. */
  onBehind(waiting: number, pace: ForwardPace): void;
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
  /** Whether a delivery added now would not be forwarded (`maxWaiting` wait for a slot). */
  full(): boolean;
}

/**
 * How the target answered lately, when the queue fills, and so what holds the forwards back: the
 * app (`silent`: none answered yet, and one under way has waited SLOW_APP_MS or more; `failing`:
 * most recent ones failed; `slow`: answers take SLOW_APP_MS or more on average), where raising the
 * concurrency would not help; or the forwarder (`concurrency`: the app answers fast, and
 * deliveries arrive faster than `concurrency` forwards at once send them); or `early`: none
 * answered yet, none waited long: too soon to tell.
 */
export interface ForwardPace {
  bottleneck: 'silent' | 'failing' | 'slow' | 'concurrency' | 'early';
  concurrency: number;
  /** Forwards under way now (at most `concurrency`). */
  running: number;
  /** Mean time of the recent answers (`answered` of them), those under way past SLOW_APP_MS counted as far as they went. */
  averageMs: number;
  answered: number;
  /** The one answer measured is the session's first, which paid for the connection's set-up too. */
  firstOnly: boolean;
  /** The longest any forward under way has waited for its answer. */
  waitedMs: number;
  /** Of the recent attempts that ended, those that failed (no answer, or not 2xx). */
  failed: number;
  ended: number;
}

/** An app answering slower than this on average holds the forwards back more than their number does. */
const SLOW_APP_MS = 250;

/** Attempts the pace is taken from: enough to smooth one slow answer out, few enough to follow a change. */
const PACE_WINDOW = 32;

/** The service's own limit for an answer: an app slower than that fails there too. */
export const SERVICE_TIMEOUT_MS = 10_000;

/** The wait before a retry: exponential from 1 s, at most 30 s, and between half and all of it (jitter). */
const RETRY_BASE_MS = 1_000;
const RETRY_CAP_MS = 30_000;

/** The wait before retry number `retry` (1 for the first): random in [c / 2, c), c = min(cap, base · 2^(retry − 1)). */
function retryDelay(retry: number, random: () => number = Math.random): number {
  const ceiling = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** (retry - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * Forwards deliveries in arrival order, up to `concurrency` at once (each over a kept-alive
 * connection; with more than one they may end out of order; a delivery being retried holds its
 * slot), holding at most `maxWaiting` of them (and `maxWaitingBytes`): when that many wait, new
 * deliveries are left out (they were answered and saved already) until the queue empties, so a
 * slow or failing target never grows memory.
 */
export function createForwarder(options: ForwarderOptions, events: ForwarderEvents): Forwarder {
  /** Deliveries not yet started, oldest at `head`. */
  const queue: ReceivedDelivery[] = [];
  let head = 0;
  let running = 0;
  let waiting = 0;
  let waitingBytes = 0;
  let skipped = 0;
  const emptied: (() => void)[] = [];
  /** Durations (ms) and results of the last PACE_WINDOW attempts that ended; start times of those under way. */
  const recent: { ms: number; ok: boolean; answered: boolean; first: boolean }[] = [];
  let attempts = 0;
  const underWay = new Set<{ started: number }>();
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

  const pace = (): ForwardPace => {
    const now = performance.now();
    const waits = [...underWay].map(({ started }) => now - started);
    // An attempt just started says nothing yet; one under way for long says the app is slow.
    const stalled = waits.filter((ms) => ms >= SLOW_APP_MS);
    // The forwarder's first attempt also pays for its HTTP client's set-up and first connection
    // (tens of ms for an app that answers in one): left out once other answers say how fast it is.
    const answered = recent.filter(({ answered }) => answered);
    const timed = answered.length > 1 ? answered.filter(({ first }) => !first) : answered;
    const times = [...timed.map(({ ms }) => ms), ...stalled];
    const averageMs = times.length === 0 ? 0 : Math.round(times.reduce((sum, ms) => sum + ms, 0) / times.length);
    const failed = recent.filter(({ ok }) => !ok).length;
    // A free slot with the queue full: the queue holds fewer deliveries than may be under way at once.
    let bottleneck: ForwardPace['bottleneck'] = 'concurrency';
    if (recent.length === 0) {
      // Nothing answered yet: the app's fault only once it has had time to answer.
      bottleneck = stalled.length > 0 ? 'silent' : 'early';
    } else if (failed * 2 > recent.length) bottleneck = 'failing';
    else if (averageMs >= SLOW_APP_MS) bottleneck = 'slow';
    const waitedMs = Math.round(Math.max(0, ...waits));
    const { concurrency } = options;
    const firstOnly = timed.length === 1 && timed[0]?.first === true;
    return { bottleneck, concurrency, running, averageMs, answered: timed.length, firstOnly, waitedMs, failed, ended: recent.length };
  };

  /** What an attempt that got no answer says: past the service's own limit, that the app is too slow for it too. */
  const noAnswer = (failure: unknown): string => {
    const error = failure as Error;
    if (error?.name !== 'TimeoutError' || options.timeoutMs < SERVICE_TIMEOUT_MS) return error?.message || String(failure);
    const limit = `${options.timeoutMs / 1000} s`;
    const too = options.timeoutMs === SERVICE_TIMEOUT_MS ? ' too' : '';
    return `no answer within ${limit} (the service gives up after ${SERVICE_TIMEOUT_MS / 1000} s${too}: your app must answer sooner)`;
  };

  async function forward(delivery: ReceivedDelivery): Promise<void> {
    const { postDelivery, sendableHeaders } = await sender;
    const headers = sendableHeaders(delivery.rawHeaders());
    const own = new Set(headers.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase()));
    for (const [name, value] of added) if (!own.has(name.toLowerCase())) headers.push(name, value);
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      const first = attempts++ === 0;
      const current = { started };
      underWay.add(current);
      let answer: PostResult | undefined;
      let error: string | null = null;
      try {
        answer = await postDelivery(options.target, headers, delivery.rawBody, options.timeoutMs);
      } catch (failure) {
        error = noAnswer(failure);
      }
      underWay.delete(current);
      const delivered = answer !== undefined && answer.status >= 200 && answer.status < 300;
      recent.push({ ms: performance.now() - started, ok: delivered, answered: answer !== undefined, first });
      if (recent.length > PACE_WINDOW) recent.shift();
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

  /** Starts forwards while a slot is free and a delivery waits. */
  function pump(): void {
    while (running < options.concurrency && head < queue.length) {
      const delivery = queue[head] as ReceivedDelivery;
      head++;
      // Started ones are dropped in blocks: no shift() of a long array per delivery.
      if (head >= 1024) {
        queue.splice(0, head);
        head = 0;
      }
      running++;
      const size = delivery.rawBody.length;
      forward(delivery)
        .catch((error: unknown) => events.onFault(error))
        .finally(() => {
          running--;
          waiting--;
          waitingBytes -= size;
          if (skipped > 0 && waiting === 0) {
            events.onCaughtUp(skipped);
            skipped = 0;
          }
          if (waiting === 0) for (const resolve of emptied.splice(0)) resolve();
          pump();
        });
    }
  }

  return {
    add(delivery) {
      const size = delivery.rawBody.length;
      // The queue is what waits for a slot: the forwards under way are not in it.
      const queued = waiting - running;
      if (queued > 0 && (queued >= options.maxWaiting || waitingBytes + size > options.maxWaitingBytes)) {
        if (skipped++ === 0) events.onBehind(queued, pace());
        events.onForward(record(delivery, { attempt: null, error: 'the forward queue was full (--forward-queue)', outcome: 'not_forwarded' }));
        return;
      }
      waiting++;
      waitingBytes += size;
      queue.push(delivery);
      pump();
    },
    drained: () => (waiting === 0 ? Promise.resolve() : new Promise<void>((resolve) => emptied.push(resolve))),
    waiting: () => waiting,
    full: () => waiting - running >= options.maxWaiting,
  };
}
