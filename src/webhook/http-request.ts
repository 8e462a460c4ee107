// Reading HTTP/1.1 requests (RFC 9112) as the receiver's server needs them: strict, bounded and
// pure. Anything ambiguous about where a message ends is refused, never guessed: the connection it
// came on is closed after the error's answer (docs/architecture.md#the-receivers-http-server).

/** A request the server refuses before any handler sees it; the connection is closed after the answer. */
export class HttpRequestError extends Error {
  readonly status: 400 | 408 | 413 | 417 | 431 | 501 | 503 | 505;
  constructor(status: HttpRequestError['status'], message: string) {
    super(message);
    this.status = status;
  }
}

export type BodyFraming = { kind: 'none' } | { kind: 'length'; length: number } | { kind: 'chunked' };

export interface RequestHead {
  method: string;
  /** The request-target exactly as sent (a path and query, as a rule). */
  target: string;
  version: '1.0' | '1.1';
  /** Names and values as received, in order: name, value, name, value… (built when first asked for). */
  readonly rawHeaders: string[];
  /**
   * Lower-case names; a repeated field's values joined with ", " (RFC 9110 §5.3; cookies with "; "),
   * or only its first for a field of one value.
   */
  headers: Record<string, string>;
  framing: BodyFraming;
  /** Whether the connection may carry another request after this one's answer. */
  keepAlive: boolean;
  /** The sender waits for "100 Continue" before sending its body. */
  expectContinue: boolean;
}

/** Bytes of a request line and its header fields, at most (node:http's default). */
export const MAX_HEAD_BYTES = 16 * 1024;

/** A token (RFC 9110 §5.6.2): a method, a field name. */
const TOKEN_CHARACTERS = '[!#$%&\'*+\\-.^_`|~0-9A-Za-z]+';
/** A field value: no control but HTAB, no DEL, no CR or LF (RFC 9110 §5.5). */
const VALUE_CHARACTERS = '[\\t\\x20-\\x7e\\x80-\\xff]*';
const TOKEN = new RegExp(`^${TOKEN_CHARACTERS}$`);
/** A field name, and a field value, as this server accepts them (and so as a saved delivery holds them). */
export const FIELD_NAME = TOKEN;
export const FIELD_VALUE = new RegExp(`^${VALUE_CHARACTERS}$`);
const FIELD_LINE = new RegExp(`^${TOKEN_CHARACTERS}:${VALUE_CHARACTERS}$`);
/** Visible ASCII: a request-target holds no spaces, controls or raw non-ASCII bytes. */
const TARGET = /^[\x21-\x7e]+$/;
/**
 * The header fields after the request line, each "CRLF name:value": a token for a name, no space
 * before the colon, no line folded onto the one before (RFC 9112 §5.1, §5.2).
 */
const FIELDS = new RegExp(`(?:\\r\\n${TOKEN_CHARACTERS}:${VALUE_CHARACTERS})*$`, 'y');
/** Fields that say how to read the message or whom it is for: one of each, or the request is refused. */
export const SINGLE_FIELDS = new Set(['content-length', 'host', 'content-type']);
/** Fields that hold one value: a repeat is dropped, the first kept (as node:http does). */
const FIRST_WINS = new Set(['user-agent', 'authorization', 'proxy-authorization', 'referer', 'from', 'if-modified-since', 'if-unmodified-since', 'max-forwards']);

/**
 * The prototype of every `headers` record: empty and without one of its own, so that no name
 * (`constructor`, `__proto__`) means anything but a field, while the record keeps V8's fast
 * properties, which `Object.create(null)` gives up.
 */
const NO_PROTOTYPE: object = Object.freeze(Object.create(null) as object);

/**
 * Parses a request head: `text` is the bytes before the blank line that ends it, read as latin1
 * (each byte one character, as node:http reads header values).
 */
export function parseRequestHead(text: string): RequestHead {
  let at = text.indexOf('\r\n');
  if (at < 0) at = text.length;
  const [method, target, protocol, extra] = text.slice(0, at).split(' ');
  if (extra !== undefined || !method || !target || !protocol || !TOKEN.test(method) || !TARGET.test(target)) {
    throw new HttpRequestError(400, 'malformed request line');
  }
  if (protocol !== 'HTTP/1.1' && protocol !== 'HTTP/1.0') {
    throw new HttpRequestError(/^HTTP\/\d\.\d$/.test(protocol) ? 505 : 400, `unsupported protocol ${protocol}`);
  }
  FIELDS.lastIndex = at;
  if (!FIELDS.test(text)) throw new HttpRequestError(400, 'malformed header field');
  const fieldsAt = at;
  const headers = Object.create(NO_PROTOTYPE) as Record<string, string>;
  // Names are ASCII tokens (FIELDS), and lower-casing latin1 keeps every character's place: one
  // conversion of the whole head gives every name's key.
  const lowered = text.toLowerCase();
  while (at < text.length) {
    const colon = text.indexOf(':', at);
    const key = lowered.slice(at + 2, colon);
    at = text.indexOf('\r\n', colon);
    if (at < 0) at = text.length;
    const value = trimmed(text, colon + 1, at);
    const before = headers[key];
    if (before === undefined) headers[key] = value;
    else if (SINGLE_FIELDS.has(key)) throw new HttpRequestError(400, `more than one ${text.slice(colon - key.length, colon)} field`);
    else if (!FIRST_WINS.has(key)) headers[key] = `${before}${key === 'cookie' ? '; ' : ', '}${value}`;
  }
  const version = protocol === 'HTTP/1.1' ? '1.1' : '1.0';
  if (version === '1.1' && headers.host === undefined) throw new HttpRequestError(400, 'no Host field');
  const connection = headers.connection === undefined ? [] : tokens(headers.connection);
  const expect = headers.expect?.toLowerCase();
  if (expect !== undefined && expect !== '100-continue') throw new HttpRequestError(417, `cannot meet Expect: ${expect}`);
  return new ParsedHead(text, fieldsAt, {
    method,
    target,
    version,
    headers,
    framing: framing(headers, version),
    keepAlive: version === '1.1' ? !connection.includes('close') : connection.includes('keep-alive'),
    expectContinue: expect === '100-continue' && version === '1.1',
  });
}

/**
 * A head whose list of fields as received is built only when asked for (to save or forward a
 * delivery): most requests never need it.
 */
class ParsedHead implements RequestHead {
  readonly method: string;
  readonly target: string;
  readonly version: '1.0' | '1.1';
  readonly headers: Record<string, string>;
  readonly framing: BodyFraming;
  readonly keepAlive: boolean;
  readonly expectContinue: boolean;
  private readonly text: string;
  /** Where the fields start: the CRLF that ends the request line. */
  private readonly fieldsAt: number;
  private raw: string[] | undefined;

  constructor(text: string, fieldsAt: number, parsed: Omit<RequestHead, 'rawHeaders'>) {
    this.text = text;
    this.fieldsAt = fieldsAt;
    this.method = parsed.method;
    this.target = parsed.target;
    this.version = parsed.version;
    this.headers = parsed.headers;
    this.framing = parsed.framing;
    this.keepAlive = parsed.keepAlive;
    this.expectContinue = parsed.expectContinue;
  }

  get rawHeaders(): string[] {
    if (this.raw) return this.raw;
    const { text } = this;
    const raw: string[] = [];
    for (let at = this.fieldsAt; at < text.length;) {
      const colon = text.indexOf(':', at);
      const name = text.slice(at + 2, colon);
      at = text.indexOf('\r\n', colon);
      if (at < 0) at = text.length;
      raw.push(name, trimmed(text, colon + 1, at));
    }
    this.raw = raw;
    return raw;
  }
}

/** `text` from `start` to `end` without the spaces and tabs around it (optional whitespace). */
function trimmed(text: string, start: number, end: number): string {
  while (start < end && (text.charCodeAt(start) === 0x20 || text.charCodeAt(start) === 0x09)) start++;
  while (end > start && (text.charCodeAt(end - 1) === 0x20 || text.charCodeAt(end - 1) === 0x09)) end--;
  return text.slice(start, end);
}

function tokens(list: string): string[] {
  return list.toLowerCase().split(',').map((item) => item.trim());
}

function framing(headers: Record<string, string>, version: '1.0' | '1.1'): BodyFraming {
  const length = headers['content-length'];
  const coding = headers['transfer-encoding'];
  if (coding !== undefined) {
    // Both, or a coding on HTTP/1.0, is how requests are smuggled past a proxy: refused, not resolved.
    if (length !== undefined || version === '1.0') throw new HttpRequestError(400, 'Transfer-Encoding with Content-Length, or on HTTP/1.0');
    const codings = tokens(coding);
    if (codings.length !== 1 || codings[0] !== 'chunked') throw new HttpRequestError(501, `unsupported Transfer-Encoding: ${coding}`);
    return { kind: 'chunked' };
  }
  if (length === undefined) return { kind: 'none' };
  if (!/^\d{1,15}$/.test(length)) throw new HttpRequestError(400, `malformed Content-Length: ${length}`);
  const bytes = Number(length);
  return bytes === 0 ? { kind: 'none' } : { kind: 'length', length: bytes };
}

/** Bytes of a chunk-size line (with its extensions) or a trailer line, at most. */
const MAX_CHUNK_LINE = 4096;

/**
 * Bytes of chunk-size lines and the CRLFs after chunk data that a body may have beyond the bytes of
 * data they frame: a sender of one-byte chunks, or of long extensions, sends several times its
 * body, and the work of reading each line, for nothing.
 */
const FRAMING_ALLOWANCE = 64 * 1024;

/**
 * Decodes a chunked body as its bytes arrive (RFC 9112 §7.1): `push` takes the next bytes and
 * returns the data they held and, once the last chunk and the trailers are read, where in them the
 * message ended. Extensions and trailer fields are read and dropped; every line is bounded.
 */
export class ChunkedDecoder {
  private state: 'size' | 'data' | 'data-end' | 'trailer' = 'size';
  private line = '';
  private remaining = 0;
  private trailerBytes = 0;
  private dataBytes = 0;
  private framingBytes = 0;

  push(bytes: Buffer): { data: Buffer[]; end: number | undefined } {
    const data: Buffer[] = [];
    let at = 0;
    while (at < bytes.length) {
      if (this.state === 'data') {
        const take = Math.min(this.remaining, bytes.length - at);
        data.push(bytes.subarray(at, at + take));
        at += take;
        this.remaining -= take;
        this.dataBytes += take;
        if (this.remaining === 0) this.state = 'data-end';
        continue;
      }
      const newline = bytes.indexOf(0x0a, at);
      const stop = newline < 0 ? bytes.length : newline + 1;
      this.line += bytes.toString('latin1', at, stop);
      at = stop;
      if (this.line.length > MAX_CHUNK_LINE + 2) throw new HttpRequestError(400, 'a chunk line is too long');
      if (newline < 0) break;
      const line = this.line;
      this.line = '';
      if (!line.endsWith('\r\n')) throw new HttpRequestError(400, 'a chunk line ends without CRLF');
      const content = line.slice(0, -2);
      if (this.state !== 'trailer') {
        this.framingBytes += line.length;
        if (this.framingBytes > this.dataBytes + FRAMING_ALLOWANCE) throw new HttpRequestError(413, 'chunk sizes and extensions outweigh the data they frame');
      }
      if (this.state === 'data-end') {
        if (content !== '') throw new HttpRequestError(400, 'chunk data longer than its size');
        this.state = 'size';
      } else if (this.state === 'size') {
        // Any number of leading zeros, then at most 8 digits: a size under 4 GiB (RFC 9112 §7.1).
        const match = /^0*([0-9a-fA-F]{1,8})[ \t]*(?:;[\x20-\x7e\t]*)?$/.exec(content);
        if (!match) throw new HttpRequestError(400, 'malformed chunk size');
        this.remaining = parseInt(match[1] as string, 16);
        this.state = this.remaining === 0 ? 'trailer' : 'data';
      } else {
        if (content === '') return { data, end: at };
        this.trailerBytes += line.length;
        if (this.trailerBytes > MAX_HEAD_BYTES) throw new HttpRequestError(431, 'trailer fields too large');
        if (!FIELD_LINE.test(content)) throw new HttpRequestError(400, 'malformed trailer field');
      }
    }
    return { data, end: undefined };
  }
}
