import type { ForwardRecord } from '../forwarder.js';
import type { ListenerObserver } from '../listener.js';
import type { ContentKind } from '../delivery.js';
import { acceptedAnswer, type ReceivedDelivery, type Rejection } from '../receiver.js';
import type { RelayOrigin } from '../relay/types.js';
import type { DeliveryLog, Exchange, ForwardState, InspectedDelivery, Verification } from './log.js';

/**
 * `listen --inspect`: each delivery shown or refused becomes a record of the log, and each forward's
 * attempt updates its record. Called after the sender got its answer; it copies references only
 * (the body, the header list), so it costs a delivery nothing it would notice.
 */
export function logObserver(log: DeliveryLog, forwarding: boolean): ListenerObserver {
  /** Records whose forward has not ended, by the delivery's arrival number: forwards run several at once. */
  const waiting = new Map<number, InspectedDelivery>();
  return {
    delivered(deliveries) {
      for (const delivery of deliveries) {
        const record = log.add(new Shown(delivery, forwarding));
        if (record.forward) waiting.set(delivery.sequence, record);
      }
    },
    rejected(rejection: Rejection) {
      const { rawHeaders, body } = rejection;
      log.add({
        n: 0,
        receivedAt: rejection.receivedAt,
        method: rejection.method,
        path: rejection.path,
        id: rejection.id,
        event: rejection.event,
        size: body?.length ?? (Number(headerValue(rawHeaders, 'content-length')) || 0),
        verification: { state: 'refused', status: rejection.status, reason: rejection.reason },
        warnings: [],
        duplicate: false,
        answer: () => ({ status: rejection.status, body: rejection.answer }),
        load: () => Promise.resolve({ rawHeaders, body }),
        held: body?.length ?? 0,
      });
    },
    forwarded(forward: ForwardRecord) {
      const record = waiting.get(forward.sequence);
      if (!record?.forward) return;
      const state = record.forward;
      state.state = forward.outcome;
      state.maxAttempts = forward.max_attempts;
      if (forward.attempt !== null) state.attempts = forward.attempt;
      const { attempt, at, status, ms, error, response } = forward;
      state.history.push({ attempt, at, status, ms, error, preview: response });
      if (forward.outcome !== 'retrying') waiting.delete(forward.sequence);
      log.updated(record);
    },
    relayGap(gap) {
      log.relayGap(gap);
    },
  };
}

const UNVERIFIED: Verification = { state: 'unverified' };
const UNVERIFIABLE: Verification = { state: 'unverified', relayed: 'unverifiable' };

const matchedOnly = (relayed: 'matched' | 'unverifiable' | undefined) => (relayed === 'matched' ? relayed : undefined);

/**
 * A delivery the listener showed, as the page keeps it: built for every delivery, so it is one
 * object of one shape, its body and header list held by reference, what the page asks for
 * (its head and body, the answer it got) made when asked.
 */
class Shown implements InspectedDelivery {
  n = 0;
  readonly receivedAt: string;
  readonly method: string;
  readonly path: string;
  readonly id: string;
  readonly event: string;
  readonly action: string | undefined;
  readonly hookId: string | undefined;
  readonly repository: string | undefined;
  readonly contentType: ContentKind;
  readonly size: number;
  readonly verification: Verification;
  readonly warnings: string[];
  readonly duplicate: boolean;
  readonly forward: ForwardState | undefined;
  readonly file = undefined;
  readonly relay: RelayOrigin | undefined;
  readonly delivery: ReceivedDelivery;
  readonly held: number;
  private readonly rawHeaders: string[];
  private readonly body: Buffer;

  constructor(delivery: ReceivedDelivery, forwarding: boolean) {
    this.receivedAt = delivery.receivedAt;
    this.method = delivery.method;
    this.path = delivery.path;
    this.id = delivery.id;
    this.event = delivery.event;
    this.action = delivery.action;
    this.hookId = delivery.hookId;
    this.repository = delivery.repository;
    this.contentType = delivery.contentType;
    this.body = delivery.rawBody;
    this.size = this.body.length;
    this.held = this.body.length;
    this.rawHeaders = delivery.rawHeaders();
    const { verification } = delivery;
    this.verification = verification.verified
      ? { state: 'verified', algorithm: verification.algorithm ?? 'sha256', legacy: verification.legacy === true, secret: verification.secret ?? 1, relayed: matchedOnly(verification.relayed) }
      : verification.relayed === 'unverifiable'
        ? UNVERIFIABLE
        : UNVERIFIED;
    this.relay = delivery.relay;
    this.delivery = delivery;
    this.warnings = delivery.warnings;
    this.duplicate = delivery.duplicate;
    // A redelivery is not forwarded again.
    this.forward = forwarding && !delivery.duplicate ? { state: 'pending', attempts: 0, maxAttempts: 0, history: [] } : undefined;
  }

  load(): Promise<Exchange> {
    return Promise.resolve({ rawHeaders: this.rawHeaders, body: this.body });
  }

  answer(): { status: number; body: string } {
    return { status: 200, body: acceptedAnswer(this) };
  }
}

/** The first value of a header field, by its name in any case. */
export function headerValue(rawHeaders: string[], name: string): string | undefined {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if ((rawHeaders[i] as string).toLowerCase() === name) return rawHeaders[i + 1];
  }
  return undefined;
}
