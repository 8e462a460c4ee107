import { type BodyFraming, ChunkedDecoder, HttpRequestError } from './http-request.js';

/**
 * A request body as its bytes arrive, by its framing (a length, or chunks), at most `limit` bytes:
 * `hold` is told of every byte kept before it is kept (and may refuse it by throwing). The usual
 * body arrives whole in one read and is handed back as it came, without a copy.
 */
export class BodyReader {
  private readonly parts: Buffer[] = [];
  private size = 0;
  private readonly decoder: ChunkedDecoder | undefined;
  private readonly framing: Exclude<BodyFraming, { kind: 'none' }>;
  private readonly limit: number;
  private readonly hold: (bytes: number) => void;

  constructor(framing: Exclude<BodyFraming, { kind: 'none' }>, limit: number, hold: (bytes: number) => void) {
    this.framing = framing;
    this.limit = limit;
    this.hold = hold;
    this.decoder = framing.kind === 'chunked' ? new ChunkedDecoder() : undefined;
  }

  /** The next bytes: the whole body and what came after it once it is complete, undefined before. Throws HttpRequestError. */
  push(chunk: Buffer): { body: Buffer; rest: Buffer | undefined } | undefined {
    let data: Buffer[];
    let end: number | undefined;
    if (this.decoder) {
      ({ data, end } = this.decoder.push(chunk));
    } else {
      const wanted = (this.framing as { length: number }).length - this.size;
      end = chunk.length >= wanted ? wanted : undefined;
      data = [end === undefined || end === chunk.length ? chunk : chunk.subarray(0, end)];
    }
    for (const piece of data) {
      if (this.size + piece.length > this.limit) throw new HttpRequestError(413, `the body is over the limit of ${this.limit} bytes`);
      this.hold(piece.length);
      this.parts.push(piece);
      this.size += piece.length;
    }
    if (end === undefined) return undefined;
    const body = this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts, this.size);
    return { body, rest: end < chunk.length ? chunk.subarray(end) : undefined };
  }
}
