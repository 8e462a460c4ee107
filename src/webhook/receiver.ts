import { isLoopbackHost } from '../api/transport-policy.js';
import { DELIVERY_HEADERS } from '../api/types.js';
import { catalogueWarnings } from './catalogue.js';
import { BodyError, type ContentKind, contentKind, headerWarnings, MAX_FORM_BODY_BYTES, MAX_PAYLOAD_BYTES, parsePayload, payloadText } from './delivery.js';
import { arrivalClock } from './arrival-clock.js';
import { HttpRequestError, requestNotOverHttp, type ServerRequest, setContentLength, startHttpServer } from './http-server.js';
import { rememberedIds } from './remembered-ids.js';
import type { RelayOrigin } from './relay/types.js';
import { SignatureMismatch, type Verification, verdict } from './verdict.js';

/** docs/service.md#limits caps payloads at 25 MB, which a form body percent-encodes. */
const BODY_LIMITS: Record<ContentKind, number> = { json: MAX_PAYLOAD_BYTES, form: MAX_FORM_BODY_BYTES };

/**
 * Bytes of bodies held at once, over every connection: beyond it a request is answered 503
 * (try again) rather than the process growing without bound. Ten of the largest JSON payloads.
 */
const MAX_HELD_BYTES = 10 * MAX_PAYLOAD_BYTES;

/** Connections open at once; more are closed as they arrive (docs/cli.md, `--max-connections`). */
export const DEFAULT_MAX_CONNECTIONS = 128;

/** Delivery ids remembered for deduplication; a redelivery of an older one counts as new. */
const REMEMBERED_IDS = 100_000;

export interface ReceivedDelivery {
  /** Arrival order, from 1. */
  sequence: number;
  receivedAt: string;
  id: string;
  event: string;
  action: string | undefined;
  hookId: string | undefined;
  repository: string | undefined;
  contentType: ContentKind;
  method: string;
  path: string;
  /** Header names and values exactly as received, in order: built when first asked for (to save or forward). */
  rawHeaders(): string[];
  headers: Record<string, string>;
  rawBody: Buffer;
  /**
   * The payload's JSON text as it was sent (checked to be an object), made anew from the body at
   * each call: nothing more than the body is kept while deliveries wait to be answered, printed or
   * forwarded.
   */
  payloadText(): string;
  verification: Verification;
  warnings: string[];
  duplicate: boolean;
  ping: boolean;
  /** Read from a relay channel (`listen --relay`), not posted to this receiver. */
  relay?: RelayOrigin | undefined;
}

export interface Rejection {
  receivedAt: string;
  status: number;
  reason: string;
  method: string;
  path: string;
  id?: string;
  event?: string;
  /** Header names and values as received, in order. */
  rawHeaders: string[];
  /** The body, when it was read before the delivery was refused (a signature that does not match, say). */
  body?: Buffer;
  /** What the sender was answered. */
  answer: string;
}

/** A delivery that did not come over HTTP (a relay's frame, src/webhook/relay/), as the pipeline takes it. */
export interface InboundDelivery {
  /** Path and query, as a request-target: the receiver's path. */
  target: string;
  rawHeaders: string[];
  headers: Record<string, string>;
  /** What the body may be, as verdict.ts takes them: one, or the re-encodings a relay may have made of it. */
  bodies: Buffer[];
  relay: RelayOrigin;
  /** What the relay did to it that the user should know. */
  warnings: string[];
}

export interface ReceiverOptions {
  host: string;
  port: number;
  /** False: no port is bound; deliveries come only through `take` (`listen --relay` without --port). */
  serve?: boolean;
  path: string;
  /** Several during a rotation; none means every delivery is accepted unverified. */
  secrets: string[];
  dedupe: boolean;
  /**
   * Only `Host` values naming this machine (localhost, 127.x, [::1]) are served: a page the user
   * visits cannot rebind its own name to 127.0.0.1 and post here.
   */
  loopbackHostsOnly: boolean;
  maxConnections?: number;
  /**
   * Awaited before the 2xx: where deliveries are saved, so an answered delivery is never lost. A
   * DeliveryRefused it throws is the answer instead (503: no more deliveries, say).
   */
  accept(delivery: ReceivedDelivery): Promise<unknown> | undefined;
  /**
   * After the 2xx went out, with every delivery answered in the same turn of the event loop, in
   * arrival order: slow work (output, forwarding) happens here, never before the answer.
   */
  delivered(deliveries: ReceivedDelivery[]): void;
  onRejection(rejection: Rejection): void;
  /** A connection closed on arrival because `maxConnections` were open. */
  onDrop?(): void;
  /** Our own failure after deliveries were answered (e.g. while printing them). */
  onFault?(error: unknown): void;
}

export interface Receiver {
  /** Undefined when no port is bound (`serve: false`). */
  url: string | undefined;
  port: number | undefined;
  /** One delivery through the same checks as a POST; resolves with what a sender would have been answered. */
  take(inbound: InboundDelivery): Promise<{ status: number; answer: string }>;
  /** Stops accepting connections and waits for requests in flight (HttpServer.close: `graceMs` lets those still arriving be answered). */
  close(graceMs?: number): Promise<void>;
  /** The next arrival number, for a delivery taken other than by a POST (a replay handed back). */
  nextSequence(): number;
}

/** A delivery refused with this status and reason; `accept` may throw one too. */
export class DeliveryRefused extends Error {
  readonly status: number;
  /** The body it came with, once read. */
  body: Buffer | undefined;
  constructor(status: number, reason: string) {
    super(reason);
    this.status = status;
  }
}

/** What an accepted delivery is answered (200). */
export function acceptedAnswer(delivery: Pick<ReceivedDelivery, 'id' | 'duplicate'>): string {
  return `{"ok":true,"delivery":${JSON.stringify(delivery.id)},"duplicate":${delivery.duplicate}}`;
}

/** The verifying webhook receiver: an HTTP server (http-server.ts) that yields deliveries and rejections, and never prints. */
export async function startReceiver(options: ReceiverOptions): Promise<Receiver> {
  const clock = arrivalClock();
  /** Requests that are a relay's frames: what they came with. */
  const inbound = new WeakMap<ServerRequest, InboundDelivery>();
  const seen = rememberedIds(REMEMBERED_IDS);
  /** Deliveries being saved, by id: a redelivery arriving meanwhile waits to learn whether it is one. */
  const saving = new Map<string, Promise<unknown>>();
  let sequence = 0;
  // Accepted deliveries are answered together at the end of the event loop's turn (setImmediate),
  // after every request that arrived in it was handled. Each answer to a sender that sleeps waiting
  // for it costs a wake-up, which on a virtual machine is dear; answers sent back to back wake it
  // once. The delay is the time to handle one burst of requests.
  let answering: { request: ServerRequest; delivery: ReceivedDelivery }[] = [];
  const answerAll = () => {
    const batch = answering;
    answering = [];
    for (const { request, delivery } of batch) {
      request.respond(200, acceptedAnswer(delivery));
    }
    try {
      options.delivered(batch.map(({ delivery }) => delivery));
    } catch (error) {
      // The deliveries are answered and saved; what the listener does next must not take the server down.
      options.onFault?.(error);
    }
  };

  function reject(request: ServerRequest, error: unknown): void {
    const status = error instanceof DeliveryRefused || error instanceof HttpRequestError ? error.status : 500;
    const reason = error instanceof Error ? error.message : String(error);
    const id = request.headers[DELIVERY_HEADERS.delivery];
    const event = request.headers[DELIVERY_HEADERS.event];
    // Our own failure (a full disk, a save directory gone) is ours to read on stderr: the sender
    // learns that it failed and which delivery, never our paths or process.
    const body = status === 500 ? { error: 'the receiver could not handle this delivery; it was not accepted', delivery: id ?? null } : { error: reason };
    const answer = JSON.stringify(body);
    options.onRejection({
      receivedAt: new Date().toISOString(),
      status,
      reason,
      method: request.method,
      path: request.target,
      ...(id === undefined ? {} : { id }),
      ...(event === undefined ? {} : { event }),
      rawHeaders: request.rawHeaders,
      ...(error instanceof DeliveryRefused && error.body ? { body: error.body } : {}),
      answer,
    });
    // A body refused for what it is (400, 413), or a sender told to come back later (503): nothing more
    // is read from it. (A large body left unread closes the connection anyway: http-server.ts.)
    const close = status === 400 || status === 413 || status === 503;
    request.respond(status, answer, { close, retryAfterSeconds: status === 503 ? 1 : undefined });
  }

  function handle(request: ServerRequest): Promise<void> {
    const { headers } = request;
    const { host, path } = addressOf(request);
    // A frame read from a relay was not posted to this machine: no Host to check.
    if (options.loopbackHostsOnly && !inbound.has(request) && !isLoopbackHost(withoutPort(host))) {
      throw new DeliveryRefused(403, `Host "${host}" is not this machine: without a secret only localhost, 127.0.0.1 and [::1] are served`);
    }
    if (path !== options.path) throw new DeliveryRefused(404, `nothing is listening at ${path} (the receiver's path is ${options.path})`);
    if (request.method !== 'POST') throw new DeliveryRefused(405, `deliveries are POSTs, not ${request.method}`);
    const kind = contentKind(headers['content-type']);
    if (!kind) {
      throw new DeliveryRefused(415, `content type "${headers['content-type'] ?? ''}" is neither application/json nor application/x-www-form-urlencoded`);
    }
    const limit = BODY_LIMITS[kind];
    const declared = Number(headers['content-length']);
    if (declared > limit) throw new DeliveryRefused(413, `a body of ${declared} bytes is over the 25 MB payload limit`);
    return request.readBody(limit).then((rawBody) => {
      try {
        return accept(request, kind, rawBody);
      } catch (error) {
        // Kept with the refusal: what a signature did not match is what the user wants to look at.
        if (error instanceof DeliveryRefused) error.body = rawBody;
        throw error;
      }
    });
  }

  function accept(request: ServerRequest, kind: ContentKind, readBody: Buffer): Promise<void> | undefined {
    const { headers } = request;
    const relayed = inbound.get(request);
    let checked: ReturnType<typeof verdict>;
    try {
      // Before any parsing: the signature covers the raw bytes.
      checked = verdict(relayed?.bodies ?? [readBody], headers, options.secrets, relayed?.relay.body === 're-encoded');
    } catch (error) {
      throw error instanceof SignatureMismatch ? new DeliveryRefused(401, error.message) : error;
    }
    const { body: rawBody, verification } = checked;
    if (relayed) setContentLength(request, rawBody.length);
    const event = headers[DELIVERY_HEADERS.event];
    const id = headers[DELIVERY_HEADERS.delivery];
    if (!event) throw new DeliveryRefused(400, `missing ${DELIVERY_HEADERS.event} header`);
    if (!id) throw new DeliveryRefused(400, `missing ${DELIVERY_HEADERS.delivery} header`);
    let payload: Record<string, unknown>;
    try {
      payload = parsePayload(rawBody, kind);
    } catch (error) {
      if (error instanceof BodyError) throw new DeliveryRefused(error.status, error.message);
      throw error;
    }
    const warnings = headerWarnings(headers);
    warnings.push(...catalogueWarnings(event, payload));
    if (verification.legacy) warnings.push('signed with the legacy sha1 X-Hub-Signature only');
    if (relayed) warnings.push(...relayed.warnings);
    const action = Object.hasOwn(payload, 'action') && typeof payload.action === 'string' ? payload.action : undefined;
    const delivery: ReceivedDelivery = {
      sequence: ++sequence,
      receivedAt: clock.iso(),
      id,
      event,
      action,
      hookId: headers[DELIVERY_HEADERS.hookId],
      repository: fullName(payload),
      contentType: kind,
      method: request.method,
      path: request.target,
      rawHeaders: () => request.rawHeaders,
      headers,
      rawBody,
      payloadText: () => payloadText(rawBody, kind),
      verification,
      warnings,
      duplicate: false,
      ping: event === 'ping',
      relay: relayed?.relay,
    };
    return admit(request, delivery);
  }

  /**
   * Tells a redelivery, saves, and answers. A delivery counts as seen once it is saved, so the
   * redelivery of one whose save failed is new; one that arrives while its first copy is being
   * saved waits to learn which it is.
   */
  function admit(request: ServerRequest, delivery: ReceivedDelivery): Promise<void> | undefined {
    const { id } = delivery;
    if (options.dedupe) {
      delivery.duplicate = seen.has(id);
      const pending = delivery.duplicate ? undefined : saving.get(id);
      if (pending) return pending.then(() => admit(request, delivery), () => admit(request, delivery));
    }
    const saved = options.accept(delivery);
    if (!saved) return answerSoon(request, delivery);
    const fresh = options.dedupe && !delivery.duplicate;
    if (fresh) saving.set(id, saved);
    const settled = () => {
      if (saving.get(id) === saved) saving.delete(id);
    };
    return saved.then(
      () => {
        settled();
        answerSoon(request, delivery);
      },
      (error: unknown) => {
        settled();
        throw error;
      },
    );
  }

  function answerSoon(request: ServerRequest, delivery: ReceivedDelivery): undefined {
    if (options.dedupe && !delivery.duplicate) seen.add(delivery.id);
    if (answering.push({ request, delivery }) === 1) setImmediate(answerAll);
    return undefined;
  }

  const onRequest = (request: ServerRequest) => {
    try {
      handle(request).catch((error: unknown) => reject(request, error));
    } catch (error) {
      reject(request, error);
    }
  };
  const take = (delivery: InboundDelivery) =>
    new Promise<{ status: number; answer: string }>((settle) => {
      const request = requestNotOverHttp({ ...delivery, method: 'POST', body: delivery.bodies[delivery.bodies.length - 1] ?? Buffer.alloc(0) }, (status, answer) => settle({ status, answer }));
      inbound.set(request, delivery);
      onRequest(request);
    });
  const nextSequence = () => ++sequence;
  if (options.serve === false) return { url: undefined, port: undefined, take, close: async () => {}, nextSequence };
  const server = await startHttpServer({
    host: options.host,
    port: options.port,
    maxConnections: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    maxHeldBytes: MAX_HELD_BYTES,
    onRequest,
    onDrop: () => options.onDrop?.(),
  });
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${server.port}${options.path}`,
    port: server.port,
    take,
    close: (graceMs) => server.close(graceMs),
    nextSequence,
  };
}

/**
 * The host and path a request is addressed to: from its Host field and target, or from an
 * absolute-form target (`POST http://host/path`), which a server must accept and whose host
 * stands instead of the Host field's (RFC 9112 §3.2.2).
 */
function addressOf(request: ServerRequest): { host: string; path: string } {
  const { target } = request;
  if (target.startsWith('/')) {
    const query = target.indexOf('?');
    return { host: request.headers.host ?? '', path: query < 0 ? target : target.slice(0, query) };
  }
  const url = /^https?:\/\//i.test(target) && URL.canParse(target) ? new URL(target) : undefined;
  if (!url) throw new DeliveryRefused(400, `a request-target must be a path or an http URL, not ${target}`);
  return { host: url.host, path: url.pathname };
}

/** The host of a Host field (`name`, `name:port`, `[v6]:port`); one with anything else after it is left whole, and no loopback name. */
export function withoutPort(host: string): string {
  const port = /:\d{1,5}$/.exec(host);
  const bare = port ? host.slice(0, port.index) : host;
  return bare.startsWith('[') || !bare.includes(':') ? bare : host;
}

/** `repository.full_name` when it is a string; a payload decides nothing else about the line printed for it. */
export function fullName(payload: Record<string, unknown>): string | undefined {
  const repository = Object.hasOwn(payload, 'repository') ? payload.repository : undefined;
  if (typeof repository !== 'object' || repository === null || !Object.hasOwn(repository, 'full_name')) return undefined;
  const name = (repository as { full_name?: unknown }).full_name;
  return typeof name === 'string' ? name : undefined;
}
