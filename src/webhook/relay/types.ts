// What a relayed delivery carries of its relay, and the gaps a relay's reading leaves (client.ts).

/** Where and how a relayed delivery came (src/webhook/relay/). */
export interface RelayOrigin {
  /** The channel's URL as it may be printed. */
  channel: string;
  /** When the relay took it (the frame's `timestamp`), ISO 8601; undefined when the frame had none. */
  relayedAt: string | undefined;
  /** `raw`: the bytes the service sent (gosmee's `bodyB`); `re-encoded`: the relay's JSON of them. */
  body: 'raw' | 're-encoded';
  /** The service sent a form body that the relay turned into JSON; it was rebuilt as a form. */
  formConverted: boolean;
}

/** A time the relay channel was not being read: deliveries sent to it then are lost (a relay keeps no history). */
export interface RelayGap {
  channel: string;
  /** When the stream was lost, ISO 8601. */
  from: string;
  /** When it was read again; null when the session ended before. */
  to: string | null;
  /** Why it was lost (the error, or the relay closing it); while `to` is null, why the last try to read it again failed. */
  reason: string;
  /** Tries to read it again that failed so far (0 when it was just lost, or once it was read again). */
  failedTries: number;
}
