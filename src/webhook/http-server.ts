import { type AddressInfo, createServer, type Socket } from 'node:net';
import { type ConnectionSide, Exchange, type Limits, type ServerRequest, type Shared, writeAnswer } from './http-exchange.js';
import { HttpRequestError, MAX_HEAD_BYTES, parseRequestHead, type RequestHead } from './http-request.js';

export type { ServerRequest };

// The receiver's HTTP/1.1 server on node:net: one request at a time per connection, every byte held
// counted, every wait timed. Why not node:http: docs/architecture.md#the-receivers-http-server.

export interface HttpServerOptions {
  host: string;
  port: number;
  /** Connections open at once; more are closed as they arrive. */
  maxConnections: number;
  /** Bytes of request bodies held at once over every connection; beyond, a body is refused with 503. */
  maxHeldBytes: number;
  /** A request's head must arrive within this many ms of its first byte (a new connection's, of the connection). */
  headersTimeoutMs?: number;
  /** A request's body must arrive within this many ms of its first byte. */
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
  /** Stops accepting connections, ends those not being answered, and resolves once the rest are answered. */
  close(): Promise<void>;
}

/** Bytes received ahead of a request still being handled (a pipelining sender) before reading pauses. */
const MAX_AHEAD_BYTES = 64 * 1024;
const END_OF_HEAD = Buffer.from('\r\n\r\n');

export async function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const limits: Limits = {
    maxHeldBytes: options.maxHeldBytes,
    headersTimeout: options.headersTimeoutMs ?? 30_000,
    requestTimeout: options.requestTimeoutMs ?? 60_000,
    keepAliveTimeout: options.keepAliveTimeoutMs ?? 5_000,
  };
  const connections = new Set<Connection>();
  const shared: Shared = { held: 0, closing: false, limits, onRequest: options.onRequest };
  // Half-open: a sender may end its side once the request is sent and still read the answer.
  const server = createServer({ noDelay: true, allowHalfOpen: true }, (socket) => {
    const connection = new Connection(socket, shared);
    connections.add(connection);
    socket.once('close', () => connections.delete(connection));
  });
  server.maxConnections = options.maxConnections;
  server.on('drop', () => options.onDrop?.());

  // One check of every connection's deadlines, as node:http does, rather than a timer per request.
  const shortest = Math.min(limits.headersTimeout, limits.requestTimeout, limits.keepAliveTimeout);
  const deadlines = setInterval(() => {
    const now = Date.now();
    for (const connection of connections) connection.checkDeadlines(now);
  }, Math.max(10, Math.min(1000, Math.floor(shortest / 4))));
  deadlines.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => {
      clearInterval(deadlines);
      reject(error);
    });
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        shared.closing = true;
        server.close(() => {
          clearInterval(deadlines);
          resolve();
        });
        for (const connection of connections) connection.endUnlessAnswering();
      }),
  };
}

/** One connection: reads a request, hands it over, writes its answer, and only then reads the next. */
class Connection implements ConnectionSide {
  private state: 'idle' | 'head' | 'handling' | 'closed' = 'idle';
  /** The sender ended its side: what it sent is all there is. */
  private peerEnded = false;
  /** Reading waits until the answers written so far have left. */
  private waitingForDrain = false;
  /** Bytes still to drop: the rest of a body its handler did not read. */
  private discarding = 0;
  /** Bytes received and not yet consumed. */
  private buffered: Buffer | undefined;
  /**
   * How many bytes at the front of `buffered` were searched for the end of a head already: a head
   * that trickles in is searched once, not again from its start at each read.
   */
  private searched = 0;
  private startedAt = Date.now();
  private servedAny = false;
  private parsing = false;
  private current: Exchange | undefined;

  readonly socket: Socket;
  readonly shared: Shared;

  constructor(socket: Socket, shared: Shared) {
    this.socket = socket;
    this.shared = shared;
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('end', () => this.peerEnd());
    socket.on('error', () => socket.destroy());
    socket.once('close', () => {
      this.state = 'closed';
      this.current?.abort(this.shared.closing);
    });
  }

  private receive(chunk: Buffer): void {
    if (this.state === 'closed') return;
    if (this.current?.takes(chunk)) return;
    this.unread(chunk);
    this.dropDiscarded();
    if (this.state !== 'handling') this.parse();
  }

  /** The rest of a body its handler did not read is dropped once answered, so the next request can be read. */
  discard(bytes: number): void {
    this.discarding = bytes;
  }

  private dropDiscarded(): void {
    if (this.discarding === 0 || !this.buffered || this.state === 'handling') return;
    const count = Math.min(this.discarding, this.buffered.length);
    this.skip(count);
    this.discarding -= count;
  }

  /** Reads the heads of what was received; a request answered at once lets the loop read the next. */
  private parse(): void {
    if (this.parsing) return;
    this.parsing = true;
    try {
      while ((this.state === 'idle' || this.state === 'head') && this.buffered && !this.waitingForDrain && this.discarding === 0) {
        if (this.state === 'idle') {
          // RFC 9112 §2.2: empty lines before a request line are ignored.
          let start = 0;
          while (this.buffered[start] === 0x0d && this.buffered[start + 1] === 0x0a) start += 2;
          if (start > 0) this.skip(start);
          if (!this.buffered || (this.buffered.length === 1 && this.buffered[0] === 0x0d)) return;
          this.state = 'head';
          this.startedAt = Date.now();
        }
        const end = this.buffered.indexOf(END_OF_HEAD, Math.max(0, this.searched - 3));
        if (end < 0 ? this.buffered.length > MAX_HEAD_BYTES + 3 : end > MAX_HEAD_BYTES) {
          return this.refuse(new HttpRequestError(431, 'the request head is over 16 KiB'));
        }
        // A line ended by LF alone would wait for a CRLF that never comes: refused at once.
        if (end < 0 && hasBareLineFeed(this.buffered, this.searched)) return this.refuse(new HttpRequestError(400, 'a line of the request head ends without CR'));
        if (end < 0) {
          this.searched = this.buffered.length;
          return;
        }
        let head: RequestHead;
        try {
          head = parseRequestHead(this.buffered.toString('latin1', 0, end));
        } catch (error) {
          return this.refuse(error as HttpRequestError);
        }
        this.skip(end + 4);
        this.state = 'handling';
        this.current = new Exchange(this, head);
        this.shared.onRequest(this.current);
      }
    } finally {
      this.parsing = false;
    }
  }

  /** Drops `count` bytes from the front of what was received. */
  private skip(count: number): void {
    const buffered = this.buffered as Buffer;
    this.buffered = count < buffered.length ? buffered.subarray(count) : undefined;
    this.searched = 0;
  }

  takeAll(): Buffer | undefined {
    const buffered = this.buffered;
    this.buffered = undefined;
    this.searched = 0;
    return buffered;
  }

  /** Keeps bytes for the next request; a sender far ahead of its answers waits for them. */
  unread(bytes: Buffer): void {
    this.buffered = this.buffered ? Buffer.concat([this.buffered, bytes]) : bytes;
    if (this.state === 'handling' && this.buffered.length > MAX_AHEAD_BYTES) this.socket.pause();
  }

  resume(): void {
    if (this.socket.isPaused()) this.socket.resume();
  }

  /** After an answer: the next request, or the end of the connection. */
  answered(exchange: Exchange, keepOpen: boolean): void {
    if (this.current !== exchange) return;
    this.current = undefined;
    if (!keepOpen || this.state === 'closed') return this.end();
    this.servedAny = true;
    this.state = 'idle';
    this.startedAt = Date.now();
    if (this.peerEnded && !this.buffered) return this.end();
    if (!this.socket.writableNeedDrain) return this.readNext();
    // A sender that does not read its answers is not read from either: they do not pile up here.
    this.waitingForDrain = true;
    this.socket.pause();
    this.socket.once('drain', () => {
      this.waitingForDrain = false;
      this.readNext();
    });
  }

  private readNext(): void {
    this.resume();
    this.dropDiscarded();
    this.parse();
    if (this.peerEnded && this.state === 'idle' && !this.buffered) this.end();
  }

  /** The sender sent all it will: a request under way can no longer be completed; an idle connection ends. */
  private peerEnd(): void {
    this.peerEnded = true;
    if (this.state === 'idle' && !this.buffered) this.end();
    else if (this.state === 'head') this.end();
    else this.current?.abort(false);
  }

  /** A request refused before any handler saw it: answered, and the connection ended. */
  private refuse(error: HttpRequestError): void {
    this.buffered = undefined;
    this.searched = 0;
    if (!this.socket.destroyed) writeAnswer(this.socket, 'POST', error.status, JSON.stringify({ error: error.message }), { close: true });
    this.end();
  }

  /** Ends the connection once what was written has left; a sender that never reads it is cut off (checkDeadlines). */
  private end(): void {
    this.state = 'closed';
    this.startedAt = Date.now();
    if (!this.socket.destroyed) this.socket.end(() => this.socket.destroy());
  }

  /** On close: a request whose body is in and whose handler is at work gets its answer; nothing else waits. */
  endUnlessAnswering(): void {
    if (this.state !== 'handling' || this.current?.reading) this.socket.destroy();
  }

  checkDeadlines(now: number): void {
    const { headersTimeout, requestTimeout, keepAliveTimeout } = this.shared.limits;
    const waited = now - this.startedAt;
    if (this.state === 'closed' && waited > keepAliveTimeout) this.socket.destroy();
    else if (this.state === 'idle' && waited > (this.servedAny ? keepAliveTimeout : headersTimeout)) this.socket.destroy();
    else if (this.state === 'head' && waited > headersTimeout) this.refuse(new HttpRequestError(408, 'the request head took too long to arrive'));
    else if (this.state === 'handling' && this.current?.reading && waited > requestTimeout) this.current.timeOut();
  }
}

/** An LF not preceded by CR in what was received of a head, from `from` on. */
function hasBareLineFeed(bytes: Buffer, from: number): boolean {
  for (let at = bytes.indexOf(0x0a, from); at >= 0; at = bytes.indexOf(0x0a, at + 1)) if (bytes[at - 1] !== 0x0d) return true;
  return false;
}
