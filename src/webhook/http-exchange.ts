import type { Socket } from 'node:net';
import { STATUS_CODES } from 'node:http';
import { BodyReader } from './http-body.js';
import { HttpRequestError, type RequestHead } from './http-request.js';

// One request on a connection of the receiver's server (http-server.ts): its body, read with the
// server's bounds, and its answer, after which the connection reads the next request or ends.

export interface ServerRequest {
  method: string;
  target: string;
  readonly rawHeaders: string[];
  headers: Record<string, string>;
  /**
   * The body, at most `limit` bytes: at once when all of it has arrived (the usual delivery comes in
   * one read), or a promise of it. Throws or rejects with HttpRequestError: 413 beyond the limit,
   * 503 when the server holds as many bytes as it may, 400 when the sender stops or breaks the
   * framing, 408 when it takes longer than the request timeout.
   */
  readBody(limit: number): Buffer | Promise<Buffer>;
  /** Answers with a JSON body; `close` ends the connection after it. Only the first answer counts. */
  respond(status: number, json: string, options?: { close?: boolean; retryAfterSeconds?: number | undefined }): void;
}

export interface Limits {
  maxHeldBytes: number;
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
}

/** What every connection of a server shares. */
export interface Shared {
  /** Bytes of bodies held over every connection. */
  held: number;
  closing: boolean;
  limits: Limits;
  onRequest: (request: ServerRequest) => void;
}

/** What an exchange asks of its connection. */
export interface ConnectionSide {
  readonly socket: Socket;
  readonly shared: Shared;
  /** Everything received and not yet read, handed over. */
  takeAll(): Buffer | undefined;
  /** Bytes received past this request's end: the next request's. */
  unread(bytes: Buffer): void;
  resume(): void;
  /** The rest of a body its handler did not read, to drop as it arrives. */
  discard(bytes: number): void;
  answered(exchange: Exchange, keepOpen: boolean): void;
}

/** A body its handler never read, up to this size, is dropped as it arrives and the connection kept. */
const MAX_DISCARD_BYTES = 64 * 1024;

/** One request, its body and its answer: what the handler sees of it is the ServerRequest. */
export class Exchange implements ServerRequest {
  readonly method: string;
  readonly target: string;
  readonly headers: Record<string, string>;
  private readonly connection: ConnectionSide;
  private readonly head: RequestHead;
  private isAnswered = false;
  /** Bytes of this body held, counted against the server's bound until the answer. */
  private heldBytes = 0;
  /** The whole body was read, so the connection may carry another request. */
  private bodyRead: boolean;
  /** readBody was called: what is left of the body is the reader's. */
  private bodyTaken = false;
  private collector: { take(chunk: Buffer): void; fail(error: HttpRequestError): void } | undefined;

  constructor(connection: ConnectionSide, head: RequestHead) {
    this.connection = connection;
    this.head = head;
    this.method = head.method;
    this.target = head.target;
    this.headers = head.headers;
    this.bodyRead = head.framing.kind === 'none';
  }

  /** Built from the head when first asked for. */
  get rawHeaders(): string[] {
    return this.head.rawHeaders;
  }

  get reading(): boolean {
    return this.collector !== undefined;
  }

  /** Bytes arriving while the body is read belong to it. */
  takes(chunk: Buffer): boolean {
    if (!this.collector) return false;
    this.collector.take(chunk);
    return true;
  }

  /** The connection went while the body was read: the sender stopped, or the server is stopping (nobody to tell). */
  abort(serverClosing: boolean): void {
    if (serverClosing) this.collector = undefined;
    else this.collector?.fail(new HttpRequestError(400, 'the sender aborted the request'));
  }

  timeOut(): void {
    this.collector?.fail(new HttpRequestError(408, 'the request took too long to arrive'));
  }

  readBody(limit: number): Buffer | Promise<Buffer> {
    this.bodyTaken = true;
    const { framing } = this.head;
    if (framing.kind === 'none') return Buffer.alloc(0);
    if (framing.kind === 'length' && framing.length > limit) {
      throw new HttpRequestError(413, `a body of ${framing.length} bytes is over the limit of ${limit} bytes`);
    }
    const { connection } = this;
    const reader = new BodyReader(framing, limit, (bytes) => this.hold(bytes));
    const early = connection.takeAll();
    const whole = early ? this.completed(reader.push(early)) : undefined;
    if (whole) return whole;
    if (this.head.expectContinue && !early) connection.socket.write('HTTP/1.1 100 Continue\r\n\r\n');
    connection.resume();
    return new Promise((resolve, reject) => {
      const collector = {
        take: (chunk: Buffer) => {
          try {
            const body = this.completed(reader.push(chunk));
            if (!body) return;
            this.collector = undefined;
            resolve(body);
          } catch (error) {
            collector.fail(error as HttpRequestError);
          }
        },
        fail: (error: HttpRequestError) => {
          this.collector = undefined;
          reject(error);
        },
      };
      this.collector = collector;
    });
  }

  /** A body read whole: what came after it is the next request's. */
  private completed(read: { body: Buffer; rest: Buffer | undefined } | undefined): Buffer | undefined {
    if (!read) return undefined;
    this.bodyRead = true;
    if (read.rest) this.connection.unread(read.rest);
    return read.body;
  }

  private hold(bytes: number): void {
    const { shared } = this.connection;
    if (shared.held + bytes > shared.limits.maxHeldBytes) {
      throw new HttpRequestError(503, 'the receiver holds as many bodies as it can at once; try again shortly');
    }
    shared.held += bytes;
    this.heldBytes += bytes;
  }

  respond(status: number, json: string, options: { close?: boolean; retryAfterSeconds?: number | undefined } = {}): void {
    if (this.isAnswered) return;
    this.isAnswered = true;
    this.collector?.fail(new HttpRequestError(400, 'answered before the body was read'));
    this.connection.shared.held -= this.heldBytes;
    this.heldBytes = 0;
    // A small body never read (a 404, say) is dropped as it arrives; any other body left unread
    // cannot be told from the next request, so the connection ends with this answer. A sender
    // waiting for "100 Continue" may never send its body: nothing is dropped for it.
    const { framing } = this.head;
    const droppable = !this.bodyTaken && !this.head.expectContinue && framing.kind === 'length' && framing.length <= MAX_DISCARD_BYTES;
    const keepOpen = !options.close && (this.bodyRead || droppable) && this.head.keepAlive && !this.connection.shared.closing;
    if (keepOpen && droppable) this.connection.discard(framing.length);
    const { socket } = this.connection;
    if (!socket.destroyed) {
      const { retryAfterSeconds } = options;
      writeAnswer(socket, this.head.method, status, json, { close: !keepOpen, keepAlive: this.head.version === '1.0', retryAfterSeconds });
    }
    this.connection.answered(this, keepOpen);
  }
}

interface AnswerOptions {
  close: boolean;
  keepAlive?: boolean;
  retryAfterSeconds?: number | undefined;
}

export function writeAnswer(socket: Socket, method: string, status: number, json: string, options: AnswerOptions): void {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(json)}\r\n`;
  // An HTTP/1.0 sender closes unless told the connection stays open.
  if (options.close) head += 'connection: close\r\n';
  else if (options.keepAlive) head += 'connection: keep-alive\r\n';
  if (options.retryAfterSeconds !== undefined) head += `retry-after: ${options.retryAfterSeconds}\r\n`;
  // A HEAD request gets the headers a GET would, and no body.
  socket.write(method === 'HEAD' ? `${head}\r\n` : `${head}\r\n${json}`);
}
