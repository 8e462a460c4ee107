import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DELIVERY_HEADERS } from '../api/types.js';
import { catalogueWarnings } from './catalogue.js';
import { BodyError, type ContentKind, contentKind, headerWarnings, MAX_PAYLOAD_BYTES, parsePayload } from './delivery.js';
import { rememberedIds } from './remembered-ids.js';
import { verifySignature } from './signature.js';

/** docs/service.md#limits caps payloads at 25 MB; a form body percent-encodes that JSON, up to three bytes for one. */
const BODY_LIMITS: Record<ContentKind, number> = { json: MAX_PAYLOAD_BYTES, form: MAX_PAYLOAD_BYTES * 3 + 16 };

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
  /** Header names and values exactly as received, in order. */
  rawHeaders: string[];
  headers: Record<string, string>;
  rawBody: Buffer;
  payload: Record<string, unknown>;
  verification: { verified: boolean; algorithm?: 'sha256' | 'sha1'; legacy?: boolean; secret?: number };
  warnings: string[];
  duplicate: boolean;
  ping: boolean;
}

export interface Rejection {
  receivedAt: string;
  status: number;
  reason: string;
  method: string;
  path: string;
  id?: string;
  event?: string;
}

export interface ReceiverOptions {
  host: string;
  port: number;
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
  /** Awaited before the 2xx: where deliveries are saved, so an answered delivery is never lost. */
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
  url: string;
  port: number;
  /** Stops accepting connections and waits for requests in flight. */
  close(): Promise<void>;
}

class Reject extends Error {
  readonly status: number;
  constructor(status: number, reason: string) {
    super(reason);
    this.status = status;
  }
}

const LOOPBACK_HOST = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\])(?::\d{1,5})?$/i;

/** The verifying webhook receiver: a node:http server that yields deliveries and rejections, and never prints. */
export async function startReceiver(options: ReceiverOptions): Promise<Receiver> {
  const clock = millisecondClock();
  const seen = rememberedIds(REMEMBERED_IDS);
  /** Deliveries being saved, by id: a redelivery arriving meanwhile waits to learn whether it is one. */
  const saving = new Map<string, Promise<unknown>>();
  const held = { bytes: 0 };
  let sequence = 0;
  // Accepted deliveries are answered together at the end of the event loop's turn (setImmediate),
  // after every request that arrived in it was handled. Each answer to a sender that sleeps waiting
  // for it costs a wake-up, which on a virtual machine is dear; answers sent back to back wake it
  // once. The delay is the time to handle one burst of requests (docs/benchmarks.md).
  let answering: { response: ServerResponse; delivery: ReceivedDelivery }[] = [];
  const answerAll = () => {
    const batch = answering;
    answering = [];
    for (const { response, delivery } of batch) answer(response, 200, { ok: true, delivery: delivery.id, duplicate: delivery.duplicate });
    try {
      options.delivered(batch.map(({ delivery }) => delivery));
    } catch (error) {
      // The deliveries are answered and saved; what the listener does next must not take the server down.
      options.onFault?.(error);
    }
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      const status = error instanceof Reject ? error.status : 500;
      const reason = error instanceof Error ? error.message : String(error);
      const id = request.headers[DELIVERY_HEADERS.delivery];
      options.onRejection({
        receivedAt: new Date().toISOString(),
        status,
        reason,
        method: request.method ?? '',
        path: request.url ?? '',
        ...optionalHeader('id', id),
        ...optionalHeader('event', request.headers[DELIVERY_HEADERS.event]),
      });
      // Our own failure (a full disk, a save directory gone) is ours to read on stderr: the sender
      // learns that it failed and which delivery, never our paths or process.
      const body = status === 500 ? { error: 'the receiver could not handle this delivery; it was not accepted', delivery: typeof id === 'string' ? id : null } : { error: reason };
      answer(response, status, body, status === 413 || status === 503);
    });
  });
  // Slow senders must not hold a connection forever; a whole delivery gets a minute.
  server.requestTimeout = 60_000;
  server.headersTimeout = 30_000;
  server.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  server.on('drop', () => options.onDrop?.());

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (options.loopbackHostsOnly && !LOOPBACK_HOST.test(request.headers.host ?? '')) {
      throw new Reject(403, `Host "${request.headers.host ?? ''}" is not this machine: without a secret only localhost, 127.0.0.1 and [::1] are served`);
    }
    const path = (request.url ?? '/').split('?')[0];
    if (path !== options.path) throw new Reject(404, `nothing is listening at ${path} (the receiver's path is ${options.path})`);
    if (request.method !== 'POST') throw new Reject(405, `deliveries are POSTs, not ${request.method}`);
    const kind = contentKind(request.headers['content-type']);
    if (!kind) {
      throw new Reject(415, `content type "${request.headers['content-type'] ?? ''}" is neither application/json nor application/x-www-form-urlencoded`);
    }
    const limit = BODY_LIMITS[kind];
    const declared = Number(request.headers['content-length']);
    if (declared > limit) throw new Reject(413, `a body of ${declared} bytes is over the 25 MB payload limit`);
    const counted = { bytes: 0 };
    try {
      const rawBody = await readBody(request, limit, held, counted);
      await accept(request, response, kind, rawBody);
    } finally {
      held.bytes -= counted.bytes;
    }
  }

  async function accept(request: IncomingMessage, response: ServerResponse, kind: ContentKind, rawBody: Buffer): Promise<void> {
    const headers = singleValued(request.headers);
    let verification: ReceivedDelivery['verification'] = { verified: false };
    if (options.secrets.length > 0) {
      // Before any parsing: the signature covers the raw bytes.
      const result = verifySignature(
        rawBody,
        { signature256: headers[DELIVERY_HEADERS.signature256], signature: headers[DELIVERY_HEADERS.signature] },
        options.secrets,
      );
      if (!result.valid) throw new Reject(401, result.reason);
      verification = { verified: true, algorithm: result.algorithm, legacy: result.legacy, secret: result.secretIndex + 1 };
    }
    const event = headers[DELIVERY_HEADERS.event];
    const id = headers[DELIVERY_HEADERS.delivery];
    if (!event) throw new Reject(400, `missing ${DELIVERY_HEADERS.event} header`);
    if (!id) throw new Reject(400, `missing ${DELIVERY_HEADERS.delivery} header`);
    let payload: Record<string, unknown>;
    try {
      payload = parsePayload(rawBody, kind);
    } catch (error) {
      if (error instanceof BodyError) throw new Reject(error.status, error.message);
      throw error;
    }
    const warnings = [...headerWarnings(headers), ...catalogueWarnings(event, payload)];
    if (verification.legacy) warnings.push('signed with the legacy sha1 X-Hub-Signature only');
    let duplicate = false;
    // A delivery counts as seen once it is saved: a redelivery of one whose save failed is new.
    while (options.dedupe) {
      if (seen.has(id)) {
        duplicate = true;
        break;
      }
      const pending = saving.get(id);
      if (!pending) break;
      await pending.catch(() => {});
    }
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
      method: request.method ?? 'POST',
      path: request.url ?? '/',
      rawHeaders: request.rawHeaders,
      headers,
      rawBody,
      payload,
      verification,
      warnings,
      duplicate,
      ping: event === 'ping',
    };
    const saved = options.accept(delivery);
    if (saved) {
      if (options.dedupe && !duplicate) saving.set(id, saved);
      try {
        await saved;
      } finally {
        if (saving.get(id) === saved) saving.delete(id);
      }
    }
    if (options.dedupe && !duplicate) seen.add(id);
    if (answering.push({ response, delivery }) === 1) setImmediate(answerAll);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}${options.path}`,
    port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

/** `repository.full_name` when it is a string; a payload decides nothing else about the line printed for it. */
function fullName(payload: Record<string, unknown>): string | undefined {
  const repository = Object.hasOwn(payload, 'repository') ? payload.repository : undefined;
  if (typeof repository !== 'object' || repository === null || !Object.hasOwn(repository, 'full_name')) return undefined;
  const name = (repository as { full_name?: unknown }).full_name;
  return typeof name === 'string' ? name : undefined;
}

/** node:http joins repeated headers with ", " but for set-cookie, which no delivery carries: copy only then. */
function singleValued(headers: IncomingMessage['headers']): Record<string, string> {
  if (headers['set-cookie'] === undefined) return headers as Record<string, string>;
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : (value ?? '')]));
}

function optionalHeader(key: 'id' | 'event', value: string | string[] | undefined): Partial<Record<'id' | 'event', string>> {
  return typeof value === 'string' ? { [key]: value } : {};
}

/** Arrival times: a burst of deliveries shares its millisecond, and formatting a date is not free. */
function millisecondClock(): { iso(): string } {
  let last = Number.NaN;
  let text = '';
  return {
    iso() {
      const now = Date.now();
      if (now !== last) {
        last = now;
        text = new Date(now).toISOString();
      }
      return text;
    },
  };
}

/**
 * Reads the body up to `limit` bytes; beyond it, stops reading and rejects with 413. Every byte
 * held counts against `held` (all connections together) and is recorded in `counted`, which the
 * caller gives back once the delivery is answered.
 */
function readBody(request: IncomingMessage, limit: number, held: { bytes: number }, counted: { bytes: number }): Promise<Buffer> {
  // node:http passes on no more than the declared length: with one, the body goes straight into a
  // buffer of that size, so a 25 MB delivery is held once rather than as chunks and then their copy.
  const declared = Number(request.headers['content-length']);
  const sized = Number.isSafeInteger(declared) && declared <= limit;
  let whole: Buffer | undefined;
  return new Promise((resolve, reject) => {
    // The usual delivery arrives in one chunk: it is the body, not copied. A second chunk starts
    // the buffer of the declared size (or the list of chunks without one).
    let first: Buffer | undefined;
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (status: number, reason: string) => {
      request.off('data', onData);
      request.pause();
      reject(new Reject(status, reason));
    };
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limit) return stop(413, `the body is over the 25 MB payload limit (more than ${limit} bytes)`);
      if (held.bytes + chunk.length > MAX_HELD_BYTES) return stop(503, 'the receiver holds as many bodies as it can at once; try again shortly');
      held.bytes += chunk.length;
      counted.bytes += chunk.length;
      if (size === 0) first = chunk;
      else if (sized) {
        if (!whole) {
          whole = Buffer.allocUnsafe(declared);
          if (first) first.copy(whole, 0);
          first = undefined;
        }
        chunk.copy(whole, size);
      } else {
        if (first) chunks.push(first);
        first = undefined;
        chunks.push(chunk);
      }
      size += chunk.length;
    };
    request.on('data', onData);
    request.once('end', () => resolve(first ?? (whole ? whole.subarray(0, size) : Buffer.concat(chunks, size))));
    request.once('error', reject);
    request.once('aborted', () => reject(new Reject(400, 'the sender aborted the request')));
  });
}

function answer(response: ServerResponse, status: number, body: unknown, close = false): void {
  if (response.headersSent) return;
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...(close ? { connection: 'close' } : {}),
    ...(status === 503 ? { 'retry-after': '1' } : {}),
  });
  response.end(text, () => {
    // An oversized body is not read to its end: drop the connection rather than drain it.
    if (close) response.socket?.destroy();
  });
}
