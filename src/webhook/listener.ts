import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { basename } from 'node:path';
import { redactUrl } from '../api/redact.js';
import type { Dispatcher } from '../api/undici.js';
import { isLoopbackHost } from '../api/transport-policy.js';
import type { Clock } from '../support/clock.js';
import { DELIVERY_HEADERS } from '../api/types.js';
import { InterruptedError, UsageError } from '../errors.js';
import type { EventFilter } from './catalogue.js';
import type { JournalWriter } from './forward-journal.js';
import { createForwarder, type ForwarderEvents, type ForwarderOptions, type ForwardRecord } from './forwarder.js';
import { DeliveryRefused, type ReceivedDelivery, type ReceiverOptions, type Rejection, startReceiver } from './receiver.js';
import type { RelayGap } from './relay/types.js';
import type { RelayReader } from './relay/client.js';
import { frameDelivery } from './relay/frame.js';
import type { DeliveryStore } from './store.js';

// `webhook listen` as a session: a receiver, what it saves and forwards, what it counts, and when
// it ends. It never prints: the command draws what its events say.

/** Bytes of deliveries waiting to be forwarded, at most; `forward.maxWaiting` bounds their number. */
const FORWARD_QUEUE_BYTES = 256 * 1024 * 1024;

/** How often a relay's reader looks again whether the output is read and the forward queue has room. */
const BACKPRESSURE_POLL_MS = 100;

export interface ListenerOptions extends Pick<ReceiverOptions, 'host' | 'port' | 'path' | 'secrets' | 'dedupe' | 'serve'> {
  /** `listen --relay`: a relay channel to read deliveries from, through this dispatcher (the API client's trust and proxy). */
  relay?: { url: string; dispatcher: Dispatcher; random?: () => number } | undefined;
  maxConnections: number;
  /** Deliveries of other events are answered, neither saved, shown nor forwarded; none: all. */
  filters: EventFilter[];
  store?: DeliveryStore | undefined;
  forward?: Pick<ForwarderOptions, 'target' | 'timeoutMs' | 'concurrency' | 'maxWaiting' | 'headers' | 'retries'> | undefined;
  /** `<save dir>/forwards.jsonl`: each saved delivery's forwarding outcome is appended to it; its opener closes it once `finished`. */
  journal?: JournalWriter | undefined;
  /** The session ends after this many new deliveries shown (a redelivery does not count). */
  maxDeliveries?: number | undefined;
  /** Ctrl-C: the session ends, interrupted; forwards are not tried again after it. */
  signal: AbortSignal;
  /** Waits between forward attempts. */
  clock: Clock;
  /**
   * True while the lines already printed wait for a reader who is not reading: deliveries to show
   * are then refused (503, to be delivered again) rather than their lines kept in memory.
   */
  outputBehind(): boolean;
  /** Told of every delivery shown, refused and forwarded, after its answer (the inspector's page). */
  observer?: ListenerObserver | undefined;
}

/**
 * What a session hands on of each delivery, after the sender got its answer: it runs in the
 * listener's turn of the event loop, so it only takes note and does its work later.
 */
export interface ListenerObserver {
  delivered(deliveries: ReceivedDelivery[]): void;
  rejected(rejection: Rejection): void;
  /** Each forward attempt, and each delivery given up or not forwarded (forwarder.ts). */
  forwarded(record: ForwardRecord): void;
  /** A relay channel lost, then (`to` set) read again. */
  relayGap(gap: RelayGap): void;
}

export interface ListenerEvents {
  /** Deliveries answered in one turn of the event loop that the filters let through, in arrival order. */
  onDeliveries(deliveries: ReceivedDelivery[]): void;
  onRejection(rejection: Rejection): void;
  /** A connection closed on arrival: `--max-connections` were open. */
  onDrop(): void;
  /** Our own failure after deliveries were answered and saved (drawing them, say). */
  onFault(error: unknown): void;
  /** The session ended with `waiting` deliveries still to forward: it ends once they are; told again at a Ctrl-C then. */
  onFinishingForwards(waiting: number): void;
  /** A relay channel lost (`to` null, `retryInMs` the wait before reading it again), then read again. */
  onRelayGap(gap: RelayGap, retryInMs: number | undefined): void;
  /** Each forward attempt's record, each delivery not forwarded, and when the target falls behind. */
  forwarding: Omit<ForwarderEvents, 'onFault'>;
}

export interface ListenSummary {
  received: number;
  verified: number;
  rejected: number;
  duplicates: number;
  /** Deliveries forwarded and answered 2xx, at whichever attempt. */
  forward_delivered: number;
  /** Deliveries whose last attempt failed (no answer, or one outside 2xx): retries spent, or stopped by Ctrl-C. */
  forward_failed: number;
  /** Deliveries forwarded more than once, whatever came of it. */
  forward_retried: number;
  /** Saved and answered, but not forwarded: the target was too far behind. */
  forward_skipped: number;
  /** Answered, but neither saved, shown nor forwarded: the filters left them out. */
  filtered: number;
  /** Connections closed on arrival: `--max-connections` were open. */
  dropped: number;
  /** Times the relay channel was lost (`--relay`): deliveries sent to it meanwhile were lost. */
  relay_gaps: number;
  /** Relayed deliveries whose re-encoded body did not verify: a relay's re-encoding, or not the service's. */
  unverifiable: number;
  /** When the relay channel was lost, if it was still lost when the session ended. */
  relay_lost_since: string | null;
}

export interface Listener {
  /** Where deliveries are posted; undefined when no port is bound (`--relay` alone). */
  url: string | undefined;
  /**
   * A delivery handed back by the inspector's "replay to this receiver": taken as new, its id's
   * duplicate check bypassed (a replay asked for is not the service's redelivery), then saved,
   * shown and forwarded as any other; a warning in it says so. Rejects as the receiver would
   * refuse it (its output not read, --max-deliveries reached, the save failing).
   */
  redeliver: (delivery: ReceivedDelivery) => Promise<void>;
  /** The name (not the path) of the file a delivery was saved as (`--save`), if it was. */
  savedAs: (delivery: ReceivedDelivery) => string | undefined;
  /** Once the session ended, every forward done: what it counted, and whether Ctrl-C ended it. */
  finished: Promise<{ summary: ListenSummary; interrupted: boolean }>;
}

export async function startListener(options: ListenerOptions, events: ListenerEvents): Promise<Listener> {
  const summary: ListenSummary = {
    received: 0,
    verified: 0,
    rejected: 0,
    duplicates: 0,
    forward_delivered: 0,
    forward_failed: 0,
    forward_retried: 0,
    forward_skipped: 0,
    filtered: 0,
    dropped: 0,
    relay_gaps: 0,
    unverifiable: 0,
    relay_lost_since: null,
  };
  const { filters, store, observer } = options;
  /** An observer's failure is ours, never the delivery's: it is reported as a fault. */
  const observe = (tell: () => void) => {
    try {
      tell();
    } catch (error) {
      events.onFault(error);
    }
  };
  const wanted = (delivery: ReceivedDelivery) =>
    filters.length === 0 || filters.some((f) => f.event === delivery.event && (f.action === undefined || f.action === delivery.action));
  const { forwarding } = events;
  /** The file each delivery to forward was saved as, for the forward's record. */
  const savedAs = new WeakMap<ReceivedDelivery, string>();
  const forwarder = options.forward
    ? createForwarder(
        {
          ...options.forward,
          maxWaitingBytes: FORWARD_QUEUE_BYTES,
          clock: options.clock,
          signal: options.signal,
          savedAs: (delivery) => savedAs.get(delivery),
        },
        {
          ...forwarding,
          onForward(record) {
            if (record.attempt === 2) summary.forward_retried++;
            if (record.outcome === 'delivered') summary.forward_delivered++;
            else if (record.outcome === 'failed') summary.forward_failed++;
            else if (record.outcome === 'not_forwarded') summary.forward_skipped++;
            if (observer) observe(() => observer.forwarded(record));
            if (options.journal && record.outcome !== 'retrying' && record.saved !== null) {
              const { delivery, outcome, status, at, target } = record;
              options.journal.append({ file: basename(record.saved), delivery, outcome, status, at, target });
            }
            forwarding.onForward(record);
          },
          onFault: (error) => events.onFault(error),
        },
      )
    : undefined;
  /** Deliveries answered 2xx (or being saved to be) that --max-deliveries counts. */
  let taken = 0;
  let shown = 0;
  let stop: (interrupted: boolean) => void = () => {};
  const stopped = new Promise<boolean>((resolve) => {
    stop = resolve;
  });

  function onRejection(rejection: Rejection): void {
    summary.rejected++;
    if (observer) observe(() => observer.rejected(rejection));
    events.onRejection(rejection);
  }

  /** Awaited before the answer (ReceiverOptions.accept): saved, or refused. */
  function accept(delivery: ReceivedDelivery): Promise<unknown> | undefined {
    if (!wanted(delivery)) return undefined;
    if (options.outputBehind()) throw new DeliveryRefused(503, 'this receiver\'s output is not being read; deliver it again later');
    if (delivery.duplicate) return undefined;
    // Past --max-deliveries nothing more is answered 2xx: the service delivers it again later.
    if (options.maxDeliveries !== undefined) {
      if (taken >= options.maxDeliveries) throw new DeliveryRefused(503, 'this receiver takes no more deliveries (--max-deliveries); deliver it again later');
      taken++;
    }
    // Without a store nothing is awaited: the answer goes out in this turn.
    return store?.save(delivery).then(
      (file) => {
        savedAs.set(delivery, file);
      },
      (error: unknown) => {
        taken--;
        throw error;
      },
    );
  }

  /** After the answer (ReceiverOptions.delivered): counted, shown, forwarded. */
  function delivered(deliveries: ReceivedDelivery[]): void {
    const shownNow: ReceivedDelivery[] = [];
    for (const delivery of deliveries) {
      summary.received++;
      if (delivery.verification.verified) summary.verified++;
      if (delivery.verification.relayed === 'unverifiable') summary.unverifiable++;
      if (delivery.duplicate) summary.duplicates++;
      if (wanted(delivery)) shownNow.push(delivery);
      else summary.filtered++;
    }
    // A redelivery is shown, but it is not a delivery taken: it does not count towards --max-deliveries.
    shown += shownNow.filter((delivery) => !delivery.duplicate).length;
    if (options.maxDeliveries !== undefined && shown >= options.maxDeliveries) stop(false);
    if (observer && shownNow.length > 0) observe(() => observer.delivered(shownNow));
    try {
      events.onDeliveries(shownNow);
    } finally {
      // In arrival order, never before the service got its answer.
      for (const delivery of shownNow) if (forwarder && !delivery.duplicate) forwarder.add(delivery);
    }
  }

  const receiver = await startReceiver({
    serve: options.serve,
    host: options.host,
    port: options.port,
    path: options.path,
    secrets: options.secrets,
    dedupe: options.dedupe,
    // Without a secret, on a loopback address: only this machine's names (DNS rebinding, ReceiverOptions).
    loopbackHostsOnly: options.secrets.length === 0 && isLoopbackHost(options.host),
    maxConnections: options.maxConnections,
    accept,
    delivered,
    onRejection,
    onDrop() {
      summary.dropped++;
      events.onDrop();
    },
    onFault: (error) => events.onFault(error),
  });

  if (options.forward && receiver.port !== undefined && (await isThisReceiver(options.forward.target, receiver.port, options.path))) {
    await receiver.close();
    throw new UsageError(`--forward-to ${redactUrl(options.forward.target)} is this receiver: each delivery would come back to be forwarded again`, {
      hint: 'forward to your app\'s port and path',
    });
  }

  const relayStop = new AbortController();
  let relayReader: RelayReader | undefined;
  if (options.relay) {
    const { url } = options.relay;
    options.signal.addEventListener('abort', () => relayStop.abort(), { once: true });
    const full = () => forwarder?.full() === true;
    // Loaded when a relay is read: undici is not needed at start-up otherwise.
    const { readRelay } = await import('./relay/client.js');
    relayReader = await readRelay({
      ...options.relay,
      clock: options.clock,
      signal: relayStop.signal,
      // Backpressure: the stream is not read while what it brings could not be shown or forwarded.
      async ready() {
        while (!relayStop.signal.aborted && (options.outputBehind() || full())) {
          await options.clock.sleep(BACKPRESSURE_POLL_MS, relayStop.signal).catch(() => {});
        }
      },
      async deliver(data) {
        const frame = frameDelivery(data, url, options.path);
        if ('delivery' in frame) return void (await receiver.take(frame.delivery));
        const { headers } = frame;
        onRejection({
          receivedAt: new Date().toISOString(),
          status: 400,
          reason: frame.refused,
          method: 'POST',
          path: options.path,
          ...(headers[DELIVERY_HEADERS.delivery] === undefined ? {} : { id: headers[DELIVERY_HEADERS.delivery] }),
          ...(headers[DELIVERY_HEADERS.event] === undefined ? {} : { event: headers[DELIVERY_HEADERS.event] }),
          rawHeaders: frame.rawHeaders,
          answer: '',
        });
      },
      onGap(gap, retryInMs) {
        if (gap.to === null && gap.failedTries === 0) summary.relay_gaps++;
        summary.relay_lost_since = gap.to === null ? gap.from : null;
        if (observer) observe(() => observer.relayGap(gap));
        events.onRelayGap(gap, retryInMs);
      },
    }).catch(async (error: unknown) => {
      await receiver.close();
      throw options.signal.aborted ? new InterruptedError('') : error;
    });
  }

  const onAbort = () => stop(true);
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener('abort', onAbort, { once: true });
  const finished = stopped.then(async (interrupted) => {
    options.signal.removeEventListener('abort', onAbort);
    relayStop.abort();
    await relayReader?.finished;
    // Past --max-deliveries the rest of a burst still arriving is answered 503 (deliver it again),
    // not cut off; Ctrl-C ends at once.
    await receiver.close(interrupted ? 0 : STOPPING_GRACE_MS);
    const waiting = forwarder?.waiting() ?? 0;
    if (waiting > 0) events.onFinishingForwards(waiting);
    // Ctrl-C now changes what finishing means (no retry): said at once, not after an attempt that may take --forward-timeout.
    const onLateAbort = () => {
      const left = forwarder?.waiting() ?? 0;
      if (left > 0) events.onFinishingForwards(left);
    };
    if (waiting > 0 && !options.signal.aborted) options.signal.addEventListener('abort', onLateAbort, { once: true });
    await forwarder?.drained();
    options.signal.removeEventListener('abort', onLateAbort);
    // Ctrl-C while the forwards of a session ended by --max-deliveries finished.
    return { summary, interrupted: interrupted || options.signal.aborted };
  });
  const redeliver = async (original: ReceivedDelivery) => {
    const delivery: ReceivedDelivery = {
      ...original,
      sequence: receiver.nextSequence(),
      receivedAt: new Date().toISOString(),
      duplicate: false,
      warnings: [...original.warnings, 'replayed from the inspector: taken as new, its duplicate check bypassed'],
    };
    await accept(delivery);
    delivered([delivery]);
  };
  const savedName = (delivery: ReceivedDelivery) => {
    const file = savedAs.get(delivery);
    return file === undefined ? undefined : basename(file);
  };
  return { url: receiver.url, finished, redeliver, savedAs: savedName };
}

/** How long requests still arriving when --max-deliveries is reached get to be answered. */
const STOPPING_GRACE_MS = 1_000;

/**
 * Whether `target` is this receiver: its port and path, at an address of this machine (loopback,
 * 0.0.0.0, an interface's, or a name that resolves to one).
 */
async function isThisReceiver(target: string, port: number, path: string): Promise<boolean> {
  const url = new URL(target);
  if (Number(url.port || (url.protocol === 'https:' ? 443 : 80)) !== port || url.pathname !== path) return false;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : await lookup(host, { all: true }).then((found) => found.map(({ address }) => address), () => []);
  const own = new Set(Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map(({ address }) => address)));
  return addresses.some((address) => isLoopbackHost(address) || address === '0.0.0.0' || address === '::' || own.has(address));
}
