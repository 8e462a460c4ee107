import type { ForwardRecord } from '../forwarder.js';
import type { ListenerObserver } from '../listener.js';
import { acceptedAnswer, type Rejection } from '../receiver.js';
import type { DeliveryLog, InspectedDelivery } from './log.js';

/**
 * `listen --inspect`: each delivery shown or refused becomes a record of the log, and each forward's
 * end updates its record. Called after the sender got its answer; it copies references only (the
 * body, the header list), so it costs a delivery nothing it would notice.
 */
export function logObserver(log: DeliveryLog, forwarding: boolean): ListenerObserver {
  /**
   * Records whose forward has not ended, by delivery id, in arrival order (forwards are made in
   * that order, so a record of the forwarder is the first waiting one's with its id).
   */
  const waiting = new Map<string, InspectedDelivery[]>();
  return {
    delivered(deliveries) {
      for (const delivery of deliveries) {
        const rawHeaders = delivery.rawHeaders();
        const body = delivery.rawBody;
        const { verification } = delivery;
        const record = log.add({
          receivedAt: delivery.receivedAt,
          method: delivery.method,
          path: delivery.path,
          id: delivery.id,
          event: delivery.event,
          action: delivery.action,
          hookId: delivery.hookId,
          repository: delivery.repository,
          contentType: delivery.contentType,
          size: body.length,
          verification: verification.verified
            ? { state: 'verified', algorithm: verification.algorithm ?? 'sha256', legacy: verification.legacy === true, secret: verification.secret ?? 1 }
            : { state: 'unverified' },
          warnings: delivery.warnings,
          duplicate: delivery.duplicate,
          answer: { status: 200, body: acceptedAnswer(delivery) },
          // A redelivery is not forwarded again.
          forward: forwarding && !delivery.duplicate ? { state: 'pending', attempts: 0, maxAttempts: 0, history: [] } : undefined,
          load: () => Promise.resolve({ rawHeaders, body }),
          held: body.length + headBytes(rawHeaders),
        });
        if (record.forward) {
          const queue = waiting.get(delivery.id);
          if (queue) queue.push(record);
          else waiting.set(delivery.id, [record]);
        }
      }
    },
    rejected(rejection: Rejection) {
      const { rawHeaders, body } = rejection;
      const header = (name: string) => headerValue(rawHeaders, name);
      log.add({
        receivedAt: rejection.receivedAt,
        method: rejection.method,
        path: rejection.path,
        id: rejection.id,
        event: rejection.event,
        size: body?.length ?? (Number(header('content-length')) || 0),
        verification: { state: 'refused', status: rejection.status, reason: rejection.reason },
        warnings: [],
        duplicate: false,
        answer: { status: rejection.status, body: rejection.answer },
        load: () => Promise.resolve({ rawHeaders, body }),
        held: (body?.length ?? 0) + headBytes(rawHeaders),
      });
    },
    forwarded(forward: ForwardRecord) {
      const queue = waiting.get(forward.delivery);
      const record = queue?.[0];
      if (!queue || !record?.forward) return;
      const state = record.forward;
      state.state = forward.outcome;
      state.maxAttempts = forward.max_attempts;
      if (forward.attempt !== null) state.attempts = forward.attempt;
      const { attempt, at, status, ms, error, response } = forward;
      state.history.push({ attempt, at, status, ms, error, preview: response });
      if (forward.outcome !== 'retrying') {
        queue.shift();
        if (queue.length === 0) waiting.delete(forward.delivery);
      }
      log.updated(record);
    },
  };
}

function headBytes(rawHeaders: string[]): number {
  let bytes = 0;
  for (const field of rawHeaders) bytes += field.length + 2;
  return bytes;
}

/** The first value of a header field, by its name in any case. */
export function headerValue(rawHeaders: string[], name: string): string | undefined {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if ((rawHeaders[i] as string).toLowerCase() === name) return rawHeaders[i + 1];
  }
  return undefined;
}
