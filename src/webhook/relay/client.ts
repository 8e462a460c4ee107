import { classifyNetworkError } from '../../api/network-errors.js';
import { type Dispatcher, request } from '../../api/undici.js';
import { CertificateError, type CliError, InterruptedError, UnavailableError, UsageError } from '../../errors.js';
import type { Clock } from '../../support/clock.js';
import { inertText } from '../../support/outside-text.js';
import type { RelayGap } from './types.js';
import { MAX_RELAY_EVENT_BYTES } from './frame.js';
import { createSseReader, type SseItem, SseTooLarge } from './sse.js';

// Reading a relay channel (`webhook listen --relay`): one stream of server-sent events at a time,
// read again after any loss with backoff and jitter. A relay keeps no history, so each loss is a
// gap in which deliveries are lost: told when it opens and when it closes, never hidden.

/** smee.io pings every 30 s: twice that without a byte means the stream is dead. */
const SILENCE_MS = 60_000;
const HEADERS_TIMEOUT_MS = 30_000;
const FIRST_DELAY_MS = 1_000;
const MAX_DELAY_MS = 30_000;
/** A stream that stayed up this long starts the backoff over at its next loss. */
const STEADY_MS = 30_000;

export interface RelayReaderOptions {
  /** The channel's URL (a capability: printed for the user, sent nowhere else). */
  url: string;
  dispatcher: Dispatcher;
  clock: Clock;
  /** Ends the reading: the session is over. */
  signal: AbortSignal;
  /** In [0, 1): the jitter (injectable). */
  random?: () => number;
  /** Awaited before each delivery: resolves once one may be taken (the output read, the forward queue not full). */
  ready(): Promise<void>;
  /** One unnamed event's data: a delivery to take. Awaited: the stream is not read meanwhile. */
  deliver(data: string): Promise<void>;
  /** A loss (`to` null, with the wait before the next try), and the stream read again (`to` set). */
  onGap(gap: RelayGap, retryInMs: number | undefined): void;
}

export interface RelayReader {
  /** Once the session's signal ended the reading. */
  finished: Promise<void>;
}

/** Connects (the first connection must succeed: else a CliError) and reads until `signal` aborts. */
export async function readRelay(options: RelayReaderOptions): Promise<RelayReader> {
  const { clock, signal } = options;
  const random = options.random ?? Math.random;
  const first = await connect(options);
  if ('error' in first) throw first.error;
  const run = async () => {
    let body: Dispatcher.ResponseData['body'] | undefined = first.body;
    let attempt = 0;
    while (body && !signal.aborted) {
      const connectedAt = clock.now();
      const reason = await readStream(body, options);
      if (signal.aborted) return;
      if (clock.now() - connectedAt >= STEADY_MS) attempt = 0;
      let wait = backoff(attempt++, random);
      const gap: RelayGap = { channel: options.url, from: new Date(clock.now()).toISOString(), to: null, reason, failedTries: 0 };
      options.onGap({ ...gap }, wait);
      body = undefined;
      while (!body) {
        try {
          await clock.sleep(wait, signal);
        } catch {
          return;
        }
        const next = await connect(options);
        if (signal.aborted) return;
        if ('body' in next) body = next.body;
        else {
          // While it stays lost, each failed try is told with its reason: silence would read as "all is well".
          wait = backoff(attempt++, random);
          gap.failedTries++;
          options.onGap({ ...gap, reason: next.error.message }, wait);
        }
      }
      options.onGap({ ...gap, to: new Date(clock.now()).toISOString(), failedTries: 0 }, undefined);
    }
  };
  return { finished: run() };
}

/** Full jitter in [d/2, d), d doubling from 1 s to 30 s. */
function backoff(attempt: number, random: () => number): number {
  const delay = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(attempt, 16));
  return Math.round(delay / 2 + (random() * delay) / 2);
}

type Connection = { body: Dispatcher.ResponseData['body'] } | { error: CliError };

async function connect(options: RelayReaderOptions): Promise<Connection> {
  const url = new URL(options.url);
  let response: Dispatcher.ResponseData;
  try {
    response = await request(url, {
      method: 'GET',
      headers: { accept: 'text/event-stream', 'cache-control': 'no-cache' },
      dispatcher: options.dispatcher,
      signal: options.signal,
      headersTimeout: HEADERS_TIMEOUT_MS,
      bodyTimeout: SILENCE_MS,
    });
  } catch (error) {
    if (options.signal.aborted) return { error: new InterruptedError('') };
    return { error: unreachable(`could not read the relay channel ${options.url}`, error, HEADERS_TIMEOUT_MS, 'the channel URL') };
  }
  const type = String(response.headers['content-type'] ?? '');
  if (response.statusCode === 200 && /^text\/event-stream\b/i.test(type)) return { body: response.body };
  discard(response.body);
  if (response.statusCode === 429) {
    return {
      error: new UnavailableError(`the relay answered 429 for ${options.url}: it takes no more readers of this channel, or no more requests, now`, {
        hint: 'close the channel\'s other readers (another listen, its page in a browser) or try again later',
      }),
    };
  }
  if (response.statusCode >= 500) {
    return { error: new UnavailableError(`the relay answered ${response.statusCode} for ${options.url}`, { hint: 'the relay is down or overloaded: try again later' }) };
  }
  const why = response.statusCode === 200 ? `200 with ${type === '' ? 'no content type' : inertText(type)}, not an event stream` : `${response.statusCode}`;
  return {
    error: new UsageError(`the relay answered ${why} for ${options.url}`, {
      hint: 'is it a relay channel URL? create a channel with `svc-migrate webhook relay new`',
    }),
  };
}

/**
 * A relay not reached (`webhook listen --relay`, `webhook relay new`): a certificate not trusted,
 * with how to trust it; else a network failure, with what to check. `what`: `<what> failed: <why>`.
 */
export function unreachable(what: string, error: unknown, timeoutMs: number, given: string): CliError {
  const failure = classifyNetworkError(error);
  const why = (error as { code?: unknown }).code === 'UND_ERR_HEADERS_TIMEOUT' ? `no answer within ${timeoutMs / 1000} s` : failure.message;
  const message = `${what}: ${why}`;
  if (failure.kind === 'certificate' || failure.kind === 'tls') {
    return new CertificateError(message, { hint: 'a relay whose certificate comes from your own authority: trust it with --ca-file or SVC_CA_FILE' });
  }
  return new UnavailableError(message, { hint: `check ${given} and your network (or HTTPS_PROXY)` });
}

/** Reads one stream to its loss; the reason it was lost. */
async function readStream(body: Dispatcher.ResponseData['body'], options: RelayReaderOptions): Promise<string> {
  const reader = createSseReader(MAX_RELAY_EVENT_BYTES);
  try {
    for await (const chunk of body) {
      for (const item of reader.push(chunk as Buffer)) await take(item, options);
    }
    return 'the relay closed the stream';
  } catch (error) {
    if (options.signal.aborted) return 'the session ended';
    if (error instanceof SseTooLarge) return error.message;
    const code = (error as { code?: unknown }).code;
    if (code === 'UND_ERR_BODY_TIMEOUT') return `nothing from the relay for ${SILENCE_MS / 1000} s`;
    if (typeof code === 'string') return classifyNetworkError(error).message;
    return error instanceof Error ? error.message : String(error);
  } finally {
    discard(body);
  }
}

/** Ends a body not read to its end; its error, the end asked for, is nobody's to hear. */
export function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {});
  body.destroy();
}

/** An unnamed event (a "message") is a delivery; `ready`, `ping` and other named events are not. */
async function take(item: SseItem, options: RelayReaderOptions): Promise<void> {
  if (item.type !== 'event' || (item.event !== undefined && item.event !== 'message')) return;
  // Once the session ends, what was read already is still taken (saved, or refused and told): the
  // relay will not send it again. `ready` waits no more then.
  await options.ready();
  await options.deliver(item.data);
}
