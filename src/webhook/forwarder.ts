import type { ReceivedDelivery } from './receiver.js';
import type { PostResult } from './sender.js';

export interface ForwarderOptions {
  target: string;
  timeoutMs: number;
  /** Deliveries waiting at most; beyond, new ones are not forwarded. */
  maxWaiting: number;
  /** Bytes of their bodies waiting at most. */
  maxWaitingBytes: number;
}

export interface ForwarderEvents {
  onForwarded(delivery: ReceivedDelivery, result: PostResult): void;
  onFailed(delivery: ReceivedDelivery, error: unknown): void;
  /** The target fell far behind: `waiting` deliveries wait, and this one is the first not forwarded. */
  onBehind(waiting: number): void;
  onSkipped(delivery: ReceivedDelivery): void;
  /** The queue emptied after `skipped` deliveries were not forwarded. */
  onCaughtUp(skipped: number): void;
}

export interface Forwarder {
  add(delivery: ReceivedDelivery): void;
  /** Once every delivery added was forwarded or failed. */
  drained(): Promise<void>;
  /** Deliveries added and not yet forwarded or failed. */
  waiting(): number;
}

/**
 * Forwards deliveries in arrival order, one at a time, holding at most `maxWaiting` of them (and
 * `maxWaitingBytes`): when the target is that far behind, new deliveries are left out (they were
 * answered and saved already) until it catches up, so a slow target never grows memory.
 */
export function createForwarder(options: ForwarderOptions, events: ForwarderEvents): Forwarder {
  let chain: Promise<void> = Promise.resolve();
  let waiting = 0;
  let waitingBytes = 0;
  let skipped = 0;

  // Loaded once, when forwarding is on: undici is not needed at start-up otherwise.
  const sender = import('./sender.js');

  async function forward(delivery: ReceivedDelivery): Promise<void> {
    const { postDelivery, sendableHeaders } = await sender;
    try {
      const result = await postDelivery(options.target, sendableHeaders(delivery.rawHeaders()), delivery.rawBody, options.timeoutMs);
      events.onForwarded(delivery, result);
    } catch (error) {
      events.onFailed(delivery, error);
    }
  }

  return {
    add(delivery) {
      const size = delivery.rawBody.length;
      if (waiting > 0 && (waiting >= options.maxWaiting || waitingBytes + size > options.maxWaitingBytes)) {
        if (skipped++ === 0) events.onBehind(waiting);
        events.onSkipped(delivery);
        return;
      }
      waiting++;
      waitingBytes += size;
      chain = chain
        .then(() => forward(delivery))
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
