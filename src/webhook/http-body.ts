import { type BodyFraming, ChunkedDecoder, HttpRequestError } from './http-request.js';

/**
 * A request body as its bytes arrive, by its framing (a length, or chunks), at most `limit` bytes:
 * `hold` is told of every byte kept before it is kept (and may refuse it by throwing). The usual
 * body arrives whole in one read and is handed back as it came, without a copy; one of a known
 * length that takes more reads is copied into a buffer of that length as they come, so that it is
 * never held twice (as pieces and joined).
 */
export class BodyReader {
  private readonly parts: Buffer[] = [];
  private whole: Buffer | undefined;
  private size = 0;
  private readonly decoder: ChunkedDecoder | undefined;
  /** The declared length; undefined for a chunked body. */
  private readonly length: number | undefined;
  private readonly limit: number;
  private readonly hold: (bytes: number) => void;

  constructor(framing: Exclude<BodyFraming, { kind: 'none' }>, limit: number, hold: (bytes: number) => void) {
    this.limit = limit;
    this.hold = hold;
    this.decoder = framing.kind === 'chunked' ? new ChunkedDecoder() : undefined;
    this.length = framing.kind === 'length' ? framing.length : undefined;
  }

  /** The next bytes: the whole body and what came after it once it is complete, undefined before. Throws HttpRequestError. */
  push(chunk: Buffer): { body: Buffer; rest: Buffer | undefined } | undefined {
    let data: Buffer[];
    let end: number | undefined;
    if (this.length === undefined) {
      ({ data, end } = (this.decoder as ChunkedDecoder).push(chunk));
    } else {
      const wanted = this.length - this.size;
      end = chunk.length >= wanted ? wanted : undefined;
      data = [end === undefined || end === chunk.length ? chunk : chunk.subarray(0, end)];
    }
    for (const piece of data) {
      if (this.size + piece.length > this.limit) throw new HttpRequestError(413, `the body is over the limit of ${this.limit} bytes`);
      this.hold(piece.length);
      this.keep(piece);
    }
    if (end === undefined) return undefined;
    const body = this.whole ?? (this.parts.length === 1 ? this.parts[0] : undefined) ?? Buffer.concat(this.parts, this.size);
    return { body, rest: end < chunk.length ? chunk.subarray(end) : undefined };
  }

  private keep(piece: Buffer): void {
    if (this.length !== undefined && this.size > 0 && !this.whole) {
      this.whole = Buffer.allocUnsafe(this.length);
      (this.parts[0] as Buffer).copy(this.whole);
      this.parts.length = 0;
    }
    if (this.whole) piece.copy(this.whole, this.size);
    else this.parts.push(piece);
    this.size += piece.length;
  }
}
