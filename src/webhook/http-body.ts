import { type BodyFraming, ChunkedDecoder, HttpRequestError } from './http-request.js';

/**
 * A request body as its bytes arrive, by its framing (a length, or chunks), at most `limit` bytes:
 * `hold` is told of every byte kept before it is kept (and may refuse it by throwing). The usual
 * body arrives whole in one read and is handed back as it came, without a copy. Any other is
 * copied into a buffer of its own as it comes: one of the declared length, or for chunks one that
 * doubles as it fills. A piece is never kept as a view into the read it came in, which would keep
 * that whole read alive (a chunk of one byte behind a 4 KiB extension held 64 KiB), and a body of
 * many small chunks is not many small objects.
 */
export class BodyReader {
  private first: Buffer | undefined;
  private buffer: Buffer | undefined;
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
      this.keep(piece);
    }
    if (end === undefined) return undefined;
    const body = this.first ?? this.buffer?.subarray(0, this.size) ?? Buffer.alloc(0);
    return { body, rest: end < chunk.length ? chunk.subarray(end) : undefined };
  }

  private keep(piece: Buffer): void {
    if (piece.length === 0) return;
    this.hold(piece.length);
    // A whole body of known length in one piece: handed back as it came.
    if (this.length !== undefined && this.size === 0 && piece.length === this.length) {
      this.first = piece;
      this.size = piece.length;
      return;
    }
    const needed = this.size + piece.length;
    if (!this.buffer || needed > this.buffer.length) {
      // The pages of a large buffer are the system's until written: a sender who declares 25 MB
      // and sends one byte costs one page, and `hold` counts what was received.
      const capacity = this.length ?? Math.min(this.limit, Math.max(needed, 2 * (this.buffer?.length ?? 0), 16 * 1024));
      const grown = Buffer.allocUnsafe(capacity);
      this.buffer?.copy(grown, 0, 0, this.size);
      this.buffer = grown;
    }
    piece.copy(this.buffer, this.size);
    this.size = needed;
  }
}
