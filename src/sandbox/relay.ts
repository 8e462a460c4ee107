import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpFailure } from './http.js';

// A relay of webhook deliveries as smee.io serves one (docs/sandbox.md#relay): GET /relay/new
// redirects to a new channel, GET on the channel with `Accept: text/event-stream` streams its
// deliveries as server-sent events, a POST to the channel is one delivery. The frames are smee.io's
// byte for byte; a channel made with `/relay/new?raw=1` adds gosmee's `bodyB` (the raw body,
// base64) so that signatures can be checked on the bytes sent. No history: a delivery posted while
// nobody reads is lost, as on smee.io.

/** docs/service.md#limits: a payload is at most 25 MB; a relay takes no more. */
const MAX_RELAY_BODY_BYTES = 25 * 1024 * 1024;
/** Readers of one channel at once; more are answered 429. */
const MAX_LISTENERS_PER_CHANNEL = 16;
/** Channels read or made raw at once; beyond, a new one is answered 503. */
const MAX_CHANNELS = 10_000;
/** Bytes a reader may leave unread before its stream is cut (it may reconnect): a reader that stops must not grow the sandbox. */
const MAX_UNREAD_BYTES = 64 * 1024 * 1024;
/** What smee.io accepts as a channel's name. */
const CHANNEL = /^[A-Za-z0-9_-]{1,128}$/;

export interface SandboxRelay {
  /** Answers a request under `/relay/`; false when the path is not the relay's. */
  handle(request: IncomingMessage, response: ServerResponse, url: URL, scheme: string): Promise<boolean>;
  /** Cuts every stream of the channel; how many were cut. */
  disconnect(channel: string): number;
  /** Streams of the channel open now. */
  listeners(channel: string): number;
  /** Ends every stream and the ping timer. */
  close(): void;
}

interface Stream {
  response: ServerResponse;
  /** The next frame's id: from 0 per connection, as smee.io counts. */
  next: number;
}

export function createRelay(pingMs: number): SandboxRelay {
  const streams = new Map<string, Set<Stream>>();
  /** Channels made with `/relay/new?raw=1`: their frames carry `bodyB`. */
  const raw = new Set<string>();
  const write = (stream: Stream, frame: (id: number) => string) => {
    const { response } = stream;
    if (response.destroyed) return;
    response.write(frame(stream.next++));
    if (response.writableLength > MAX_UNREAD_BYTES) response.destroy();
  };
  const ping = setInterval(() => {
    for (const channel of streams.values()) for (const stream of channel) write(stream, (id) => `id: ${id}\nevent: ping\ndata: {}\n\n`);
  }, pingMs);
  ping.unref();

  function open(channel: string, request: IncomingMessage, response: ServerResponse): void {
    const readers = streams.get(channel) ?? new Set<Stream>();
    if (readers.size >= MAX_LISTENERS_PER_CHANNEL) throw new HttpFailure(429, { message: `channel has ${MAX_LISTENERS_PER_CHANNEL} readers already` });
    if (readers.size === 0 && streams.size + raw.size >= MAX_CHANNELS) throw new HttpFailure(503, { message: 'too many relay channels open' });
    streams.set(channel, readers);
    const stream: Stream = { response, next: 0 };
    readers.add(stream);
    request.socket.setTimeout(0);
    response.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'x-no-compression': 1 });
    response.on('close', () => {
      readers.delete(stream);
      if (readers.size === 0 && streams.get(channel) === readers) streams.delete(channel);
    });
    write(stream, (id) => `id: ${id}\nevent: ready\ndata: {}\n\n`);
  }

  async function post(channel: string, request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const body = await readRelayBody(request);
    const event: Record<string, unknown> = {
      ...headerObject(request),
      body: parsedBody(body, String(request.headers['content-type'] ?? '')),
      query: queryObject(url.searchParams),
      timestamp: Date.now(),
    };
    if (raw.has(channel)) event.bodyB = body.toString('base64');
    const data = JSON.stringify(event);
    for (const stream of streams.get(channel) ?? []) write(stream, (id) => `id: ${id}\ndata: ${data}\n\n`);
    response.writeHead(200, { 'content-length': 0 }).end();
  }

  return {
    async handle(request, response, url, scheme) {
      const match = /^\/relay\/([^/]+)$/.exec(url.pathname);
      if (!match) return false;
      const channel = match[1] as string;
      const method = request.method ?? 'GET';
      if (channel === 'new' && (method === 'GET' || method === 'HEAD')) {
        const made = randomBytes(16).toString('base64url');
        if (url.searchParams.get('raw') === '1') {
          if (streams.size + raw.size >= MAX_CHANNELS) throw new HttpFailure(503, { message: 'too many relay channels open' });
          raw.add(made);
        }
        // As smee.io: the channel on the host the request named.
        const host = request.headers.host ?? url.host;
        response.writeHead(307, { location: `${scheme}://${host}/relay/${made}`, 'content-length': 0 }).end();
        return true;
      }
      if (!CHANNEL.test(channel)) throw new HttpFailure(400, { message: 'a channel is 1 to 128 of A-Z a-z 0-9 _ -' });
      if (method === 'GET' && String(request.headers.accept ?? '').includes('text/event-stream')) {
        open(channel, request, response);
        return true;
      }
      if (method === 'GET') {
        const page = `<!doctype html><title>relay channel</title><p>A relay channel: read it with Accept: text/event-stream (svc-migrate webhook listen --relay URL).</p>\n`;
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(page) }).end(page);
        return true;
      }
      if (method === 'POST') {
        await post(channel, request, response, url);
        return true;
      }
      throw new HttpFailure(405, { message: `${method} is not served on a relay channel` });
    },
    disconnect(channel) {
      const readers = [...(streams.get(channel) ?? [])];
      for (const { response } of readers) response.destroy();
      return readers.length;
    },
    listeners: (channel) => streams.get(channel)?.size ?? 0,
    close() {
      clearInterval(ping);
      for (const channel of streams.values()) for (const { response } of channel) response.destroy();
      streams.clear();
    },
  };
}

/** The request's fields as smee.io spreads them: lower-case names, one string each. */
function headerObject(request: IncomingMessage): Record<string, string> {
  const fields = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) fields[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return fields;
}

async function readRelayBody(request: IncomingMessage): Promise<Buffer> {
  if (Number(request.headers['content-length']) > MAX_RELAY_BODY_BYTES) throw new HttpFailure(413, { message: 'Request body too large' });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_RELAY_BODY_BYTES) throw new HttpFailure(413, { message: 'Request body too large' });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** The body as smee.io hands it on: JSON parsed; a form as an object of its fields (express's `urlencoded`, as smee.io once parsed it). */
function parsedBody(body: Buffer, contentType: string): unknown {
  const type = contentType.split(';')[0]?.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') {
    const fields = Object.create(null) as Record<string, string | string[]>;
    for (const [name, value] of new URLSearchParams(body.toString('utf8'))) {
      const had = fields[name];
      fields[name] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value];
    }
    return fields;
  }
  if (type !== 'application/json') throw new HttpFailure(415, { message: `Unsupported Media Type: ${contentType}` });
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    throw new HttpFailure(400, { message: 'Body is not valid JSON' });
  }
}

/** The query as smee.io's server parses it: a name given once is a string, one given more often a list. */
function queryObject(params: URLSearchParams): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const name of new Set(params.keys())) {
    const values = params.getAll(name);
    query[name] = values.length === 1 ? (values[0] as string) : values;
  }
  return query;
}
