import { createServer, type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import { closeOnlyIdleConnections } from '../support/keep-alive.js';

// The receiver's HTTP server. node:http (llhttp) reads and frames every request, with its own
// bounds on heads and waits, and refuses what is ambiguous (a Transfer-Encoding with a
// Content-Length, two lengths, a malformed chunk line, a bare CR or LF, a folded line) with 400 and
// the connection closed, so no byte of one request is read as the start of another. A hand-written
// server on node:net was faster and was dropped: fed the same bytes, it accepted chunk-size lines
// and a Transfer-Encoding value that llhttp refuses, and served what was pipelined behind them.
// What this module adds sits above HTTP: bodies read with a limit, chunk framing that may not
// outweigh the data it frames, and every body held counted against one bound for the whole server.

/** A connection, as node:http hands it over. */
type Socket = IncomingMessage['socket'];

/** A request refused for what it is (413 too large, 503 held too much, 400 broken off, 408 too slow). */
export class HttpRequestError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export interface ServerRequest {
  method: string;
  /** The request-target exactly as sent (a path and query, or an absolute URL). */
  target: string;
  /** Header names and values as received, in order. */
  readonly rawHeaders: string[];
  /** Lower-case names; repeated fields joined as node:http joins them. */
  headers: Record<string, string>;
  /**
   * The body, at most `limit` bytes. Rejects with HttpRequestError: 413 beyond the limit or when
   * chunk framing outweighs the data, 503 when the server holds as many bytes as it may, 400 when
   * the sender stops, 408 when it takes longer than the request timeout.
   */
  readBody(limit: number): Promise<Buffer>;
  /** Answers with a JSON body; `close` ends the connection after it. Only the first answer counts. */
  respond(status: number, json: string, options?: { close?: boolean; retryAfterSeconds?: number | undefined }): void;
}

/**
 * A request that did not come over HTTP (a relay's frame) as the handler of a server's requests
 * takes it: its body already held, its answer handed to `answered`.
 */
export function requestNotOverHttp(
  parts: Pick<ServerRequest, 'method' | 'target' | 'rawHeaders' | 'headers'> & { body: Buffer },
  answered: (status: number, json: string) => void,
): ServerRequest {
  let done = false;
  return {
    method: parts.method,
    target: parts.target,
    rawHeaders: parts.rawHeaders,
    headers: parts.headers,
    readBody: (limit) => (parts.body.length > limit ? Promise.reject(new HttpRequestError(413, `a body of ${parts.body.length} bytes is over the limit of ${limit}`)) : Promise.resolve(parts.body)),
    respond(status, json) {
      if (done) return;
      done = true;
      answered(status, json);
    },
  };
}

export interface HttpServerOptions {
  host: string;
  port: number;
  /** Connections open at once; more are closed as they arrive. */
  maxConnections: number;
  /** Bytes of request bodies held at once over every connection; beyond, a body is refused with 503. */
  maxHeldBytes: number;
  /** A request's head must arrive within this many ms. */
  headersTimeoutMs?: number;
  /** A whole request must arrive within this many ms. */
  requestTimeoutMs?: number;
  /** A connection idle after an answer is closed after this many ms. */
  keepAliveTimeoutMs?: number;
  /** Each request, once its head is read. The handler answers it through `respond`, once. */
  onRequest: (request: ServerRequest) => void;
  /** A connection closed on arrival because `maxConnections` were open. */
  onDrop?: () => void;
}

export interface HttpServer {
  port: number;
  /**
   * Stops accepting connections, ends those not being answered, and resolves once the rest are
   * answered. With `graceMs`, requests whose body is still arriving get that long to be answered.
   */
  close(graceMs?: number): Promise<void>;
}

/** Bytes of a request head, at most (node:http's default). */
const MAX_HEAD_BYTES = 16 * 1024;

/**
 * Bytes of chunk-size lines and extensions a chunked body may have beyond the data they frame: a
 * sender of one-byte chunks, or of long extensions, sends many times its body for nothing.
 */
const FRAMING_ALLOWANCE = 64 * 1024;

/** A body its handler never read, up to this size, is dropped as it arrives and the connection kept. */
const MAX_DISCARD_BYTES = 64 * 1024;

/** Fields that say how to read the message or whom it is for: node:http keeps the first of several; here, one or none. */
const SINGLE_FIELDS = new Set(['host', 'content-type']);

const STATUS_OF_CLIENT_ERROR: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
};

export async function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  let held = 0;
  let closing = false;
  const keepAliveTimeout = options.keepAliveTimeoutMs ?? 5_000;
  const sockets = new Set<Socket>();
  /** Connections with a request handed over and not yet answered: on close, only these are waited for. */
  const handling = new Map<Socket, Exchange>();
  const server = createServer(
    {
      maxHeaderSize: MAX_HEAD_BYTES,
      headersTimeout: options.headersTimeoutMs ?? 30_000,
      requestTimeout: options.requestTimeoutMs ?? 60_000,
      keepAliveTimeout,
      // How often node:http looks at its timeouts (30 s by default): every second, or sooner for shorter ones.
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor((options.headersTimeoutMs ?? 30_000) / 4))),
      noDelay: true,
    },
    (request, response) => handle(request, response, false),
  );
  const handle = (request: IncomingMessage, response: ServerResponse, expectsContinue: boolean) => {
    // llhttp reads any "HTTP/x.y" line as HTTP/1.1 would be read: only 1.0 and 1.1 are.
    if (request.httpVersionMajor !== 1) {
      return answer(response, 505, JSON.stringify({ error: `unsupported protocol HTTP/${request.httpVersion}` }), { close: true, keepAliveTimeout });
    }
    const duplicate = singleFieldRepeated(request.rawHeaders);
    if (duplicate) return answer(response, 400, JSON.stringify({ error: `more than one ${duplicate} field` }), { close: true, keepAliveTimeout });
    const exchange = new Exchange(request, response, expectsContinue);
    handling.set(request.socket, exchange);
    options.onRequest(exchange);
  };
  closeOnlyIdleConnections(server);
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => handle(request, response, true));
  // A sender may end its side once its request is sent and still read the answer.
  (server as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen = true;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      handling.delete(socket);
    });
  });
  server.maxConnections = options.maxConnections;
  server.on('drop', () => options.onDrop?.());
  /** What llhttp refused on a connection, for the request whose body it cut short. */
  const malformed = new WeakMap<Socket, string>();
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    malformed.set(socket, error.code ?? error.message);
    // A connection that never sent a byte is closed without a word.
    if (!socket.writable || socket.destroyed || socket.bytesRead === 0) return void socket.destroy();
    // llhttp refused the request, so node:http made no response object: the answer is written to
    // the socket as node:http's documentation does for 'clientError', a fixed head and a JSON body.
    const status = STATUS_OF_CLIENT_ERROR[error.code ?? ''] ?? 400;
    const json = JSON.stringify({ error: status === 408 ? 'the request took too long to arrive' : `malformed request (${error.code ?? error.message})` });
    const head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(json)}`;
    socket.end(`${head}\r\nconnection: close\r\n\r\n${json}`);
  });

  class Exchange implements ServerRequest {
    readonly method: string;
    readonly target: string;
    readonly headers: Record<string, string>;
    private readonly request: IncomingMessage;
    private readonly response: ServerResponse;
    private heldBytes = 0;
    private answered = false;
    private fail: ((error: HttpRequestError) => void) | undefined;
    /** Its body is being read: on close, it is not waited for. */
    reading = false;
    /** The sender waits for "100 Continue" before it sends its body: it gets one only if the body is read. */
    private readonly expectsContinue: boolean;

    constructor(request: IncomingMessage, response: ServerResponse, expectsContinue: boolean) {
      this.request = request;
      this.response = response;
      this.expectsContinue = expectsContinue;
      this.method = request.method ?? '';
      this.target = request.url ?? '';
      this.headers = headersOf(request);
    }

    get rawHeaders(): string[] {
      return this.request.rawHeaders;
    }

    readBody(limit: number): Promise<Buffer> {
      const { request } = this;
      const declared = Number(request.headers['content-length']);
      if (declared > limit) return Promise.reject(new HttpRequestError(413, `a body of ${declared} bytes is over the limit of ${limit} bytes`));
      const { socket } = request;
      // What the socket brings for a chunked body beyond its data is framing (sizes, extensions):
      // counted against the data, since llhttp bounds each line but not how many there are.
      const chunked = request.headers['transfer-encoding'] !== undefined;
      const socketStart = socket.bytesRead;
      const dataStart = request.readableLength;
      this.reading = true;
      if (this.expectsContinue) this.response.writeContinue();
      return new Promise<Buffer>((resolve, reject) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => {
          this.reading = false;
          this.fail = undefined;
          request.off('data', take).off('end', end).off('close', closed);
        };
        this.fail = (error) => {
          done();
          request.pause();
          reject(error);
        };
        const take = (chunk: Buffer) => {
          size += chunk.length;
          if (size > limit) return this.fail?.(new HttpRequestError(413, `the body is over the limit of ${limit} bytes`));
          if (chunked && socket.bytesRead - socketStart - (size - dataStart) > size + FRAMING_ALLOWANCE) {
            return this.fail?.(new HttpRequestError(413, 'chunk sizes and extensions outweigh the data they frame'));
          }
          if (held + chunk.length > options.maxHeldBytes) {
            return this.fail?.(new HttpRequestError(503, 'the receiver holds as many bodies as it can at once; try again shortly'));
          }
          held += chunk.length;
          this.heldBytes += chunk.length;
          chunks.push(chunk);
        };
        const end = () => {
          done();
          resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
        };
        const closed = () => {
          if (request.complete) return;
          // Cut off by the server stopping: there is nobody left to tell, and nothing to report.
          if (closing) return done();
          const refused = malformed.get(request.socket);
          this.fail?.(new HttpRequestError(400, refused ? `malformed request (${refused})` : 'the sender aborted the request'));
        };
        request.on('data', take).on('end', end).on('close', closed);
      });
    }

    respond(status: number, json: string, answerOptions: { close?: boolean; retryAfterSeconds?: number | undefined } = {}): void {
      if (this.answered) return;
      this.answered = true;
      this.fail?.(new HttpRequestError(400, 'answered before the body was read'));
      held -= this.heldBytes;
      this.heldBytes = 0;
      // A small body never read (a 404, say) is dropped by node:http as it arrives; a larger one, or
      // one the sender still waits to send, ends the connection with this answer.
      const { request } = this;
      const small = Number(request.headers['content-length'] ?? 0) <= MAX_DISCARD_BYTES && request.headers['transfer-encoding'] === undefined;
      const close = answerOptions.close === true || closing || (!request.complete && (!small || this.expectsContinue));
      if (handling.get(request.socket) === this) handling.delete(request.socket);
      answer(this.response, status, json, { close, keepAliveTimeout, retryAfterSeconds: answerOptions.retryAfterSeconds });
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the receiver is not listening on a TCP port');
  return {
    port: address.port,
    close: (graceMs = 0) =>
      new Promise((resolve) => {
        closing = true;
        server.close(() => resolve());
        // A request being handled gets its answer; nothing else is waited for (beyond the grace).
        const cut = () => {
          for (const socket of sockets) if (handling.get(socket)?.reading !== false) socket.destroy();
        };
        if (graceMs > 0) setTimeout(cut, graceMs).unref();
        else cut();
      }),
  };
}

interface AnswerOptions {
  close: boolean;
  /** How long an answer that ends its connection may wait for the sender to read it. */
  keepAliveTimeout: number;
  retryAfterSeconds?: number | undefined;
}

function answer(response: ServerResponse, status: number, json: string, options: AnswerOptions): void {
  // Nothing to answer on a connection already gone (node:http answered a timeout itself). An answer
  // to a pipelined request has no socket until those before it are sent: its request's is the one.
  const { socket } = response.req;
  if (response.headersSent || response.destroyed || !socket.writable) return;
  if (options.close) {
    // A sender that never reads its last answer does not keep the connection, or a closing server, waiting.
    const cutOff = setTimeout(() => socket.destroy(), options.keepAliveTimeout).unref();
    socket.once('close', () => clearTimeout(cutOff));
  }
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) };
  if (options.close) headers.connection = 'close';
  if (options.retryAfterSeconds !== undefined) headers['retry-after'] = options.retryAfterSeconds;
  if (options.close) response.shouldKeepAlive = false;
  response.writeHead(status, headers);
  response.end(json);
}

/** The name of a field given more than once that may only be given once, if any. */
function singleFieldRepeated(raw: string[]): string | undefined {
  const seen = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (!SINGLE_FIELDS.has(name)) continue;
    if (seen.has(name)) return raw[i];
    seen.add(name);
  }
  return undefined;
}

/**
 * The headers as one string each, in a record without a prototype (a field named `constructor`
 * or `__proto__` is a field like any other). node:http gives `set-cookie` as a list.
 */
function headersOf(request: IncomingMessage): Record<string, string> {
  const headers = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}
