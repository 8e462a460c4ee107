import type { ContentKind } from '../delivery.js';
import type { ReceivedDelivery } from '../receiver.js';
import type { RelayGap, RelayOrigin } from '../relay/types.js';

// What the inspector's page lists: one record per delivery shown or refused (or saved, for
// `webhook inspect`), the last `keep` of them, the oldest dropped first and counted.

/** Deliveries the page keeps in memory by default (docs/cli.md, `--inspect-keep`). */
export const DEFAULT_KEEP = 500;

/** Bytes of bodies the page keeps in memory at most: beyond, the oldest are dropped too. */
const MAX_HELD_BYTES = 128 * 1024 * 1024;

export type Verification =
  /** `relayed: 'matched'`: a relayed body, re-encoded by the relay, that verified as re-encoded. */
  | { state: 'verified'; algorithm: 'sha256' | 'sha1'; legacy: boolean; secret: number; relayed?: 'matched' | undefined }
  /** `reason`: why a saved delivery is unverified (no secret given, or none matched); `relayed`: the relay re-encoded the body. */
  | { state: 'unverified'; reason?: string; relayed?: 'unverifiable' | undefined }
  | { state: 'refused'; status: number; reason: string };

/** One forward attempt's end (forwarder.ts's record of it). */
interface ForwardAttempt {
  /** Null for a delivery given up without an attempt (retries stopped by Ctrl-C, the queue full). */
  attempt: number | null;
  at: string;
  status: number | null;
  ms: number | null;
  error: string | null;
  /** The first characters of the target's answer. */
  preview: string | null;
}

/** A delivery's forward: waiting, or where its attempts stand (the last one's outcome). */
export interface ForwardState {
  state: 'pending' | 'retrying' | 'delivered' | 'failed' | 'not_forwarded';
  /** Attempts made, and at most (`--forward-retries` + 1). */
  attempts: number;
  maxAttempts: number;
  /** Each attempt, oldest first: at most `--forward-retries` + 1, and a last record when given up. */
  history: ForwardAttempt[];
}

/** A delivery's head and body, as received. */
export interface Exchange {
  rawHeaders: string[];
  /** Undefined for a request refused before its body was read. */
  body: Buffer | undefined;
}

/** What the page shows of a delivery; `n` orders them and names them in the page's requests. */
export interface InspectedDelivery {
  n: number;
  receivedAt: string;
  method: string;
  path: string;
  id?: string | undefined;
  event?: string | undefined;
  action?: string | undefined;
  hookId?: string | undefined;
  repository?: string | undefined;
  contentType?: ContentKind | undefined;
  size: number;
  verification: Verification;
  warnings: string[];
  duplicate: boolean;
  /** What the sender was answered (made when shown); unknown for a saved delivery (which was answered 200). */
  answer?: (() => { status: number; body: string }) | undefined;
  /** Only with a forward target. */
  forward?: ForwardState | undefined;
  /** The file a saved delivery was read from. */
  file?: string | undefined;
  /** Read from a relay channel (`listen --relay`). */
  relay?: RelayOrigin | undefined;
  /** The delivery as the listener took it: what "replay to this receiver" hands back. */
  delivery?: ReceivedDelivery | undefined;
  /** Its head and body: held in memory, or read again from its file (which may have changed since). */
  load(): Promise<Exchange>;
  /** Bytes of body this record holds in memory. */
  held: number;
}

/** A record added (older ones may have been dropped: `dropped` and `oldest()` say), or one kept that changed; or a relay gap told. */
export type LogListener = (change: 'added' | 'updated', record: InspectedDelivery) => void;
type GapListener = (gap: RelayGap) => void;

/** Relay gaps the page lists, the newest. */
const GAPS_KEPT = 50;

/**
 * The last `keep` records (and at most `maxBytes` of what they hold), in arrival order. Listeners
 * hear of each change as it happens, in the listener's turn: they note it and do their work later.
 */
export class DeliveryLog {
  readonly keep: number;
  private readonly maxBytes: number;
  /** Insertion order is arrival order: the first key is the oldest. */
  private readonly records = new Map<number, InspectedDelivery>();
  private readonly listeners = new Set<LogListener>();
  private next = 1;
  private held = 0;
  /** Records dropped from the list, or (`webhook inspect`) never listed. */
  dropped = 0;
  /** Times a relay channel was not read, oldest first: a gap told again once read again replaces its first telling. */
  readonly gaps: RelayGap[] = [];
  private readonly gapListeners = new Set<GapListener>();

  constructor(keep = DEFAULT_KEEP, maxBytes = MAX_HELD_BYTES) {
    this.keep = keep;
    this.maxBytes = maxBytes;
  }

  /** Adds `record`, numbering it (its `n` is replaced): called for each delivery, so it allocates nothing of its own. */
  add(record: InspectedDelivery): InspectedDelivery {
    record.n = this.next++;
    this.records.set(record.n, record);
    this.held += record.held;
    while (this.records.size > this.keep || (this.held > this.maxBytes && this.records.size > 1)) {
      const oldest = this.records.values().next().value as InspectedDelivery;
      this.records.delete(oldest.n);
      this.held -= oldest.held;
      this.dropped++;
    }
    for (const listener of this.listeners) listener('added', record);
    return record;
  }

  /** A record kept changed (its forward's attempt ended). */
  updated(record: InspectedDelivery): void {
    if (this.records.get(record.n) !== record) return;
    for (const listener of this.listeners) listener('updated', record);
  }

  get(n: number): InspectedDelivery | undefined {
    return this.records.get(n);
  }

  /** The records kept, oldest first; only those after `n` when given. */
  list(after = 0): InspectedDelivery[] {
    const all = [...this.records.values()];
    return after > 0 ? all.filter((record) => record.n > after) : all;
  }

  /** The number of the first record kept (the next one when none is). */
  oldest(): number {
    const [first] = this.records.keys() as IterableIterator<number>;
    return first ?? this.next;
  }

  /** A relay gap told: when it began, then (`to` set) when it ended. */
  relayGap(gap: RelayGap): void {
    const same = this.gaps.findIndex((known) => known.channel === gap.channel && known.from === gap.from);
    if (same >= 0) this.gaps[same] = gap;
    else {
      this.gaps.push(gap);
      if (this.gaps.length > GAPS_KEPT) this.gaps.shift();
    }
    for (const listener of this.gapListeners) listener(gap);
  }

  /** Calls `listener` at each relay gap until the function returned is called. */
  listenGaps(listener: GapListener): () => void {
    this.gapListeners.add(listener);
    return () => this.gapListeners.delete(listener);
  }

  /** Calls `listener` at each change until the function returned is called. */
  listen(listener: LogListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** What the page's list holds of a record (its detail is asked for when shown). */
export function summaryOf(record: InspectedDelivery) {
  return {
    n: record.n,
    receivedAt: record.receivedAt,
    method: record.method,
    path: record.path,
    id: record.id ?? null,
    event: record.event ?? null,
    action: record.action ?? null,
    repository: record.repository ?? null,
    size: record.size,
    verification: record.verification,
    warnings: record.warnings,
    duplicate: record.duplicate,
    forward: record.forward ?? null,
    file: record.file ?? null,
    relay: record.relay ?? null,
  };
}

export type DeliverySummary = ReturnType<typeof summaryOf>;
