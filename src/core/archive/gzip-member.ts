import { Transform, type TransformCallback } from 'node:stream';
import { crc32, createInflateRaw, type InflateRaw } from 'node:zlib';

// One gzip member, read strictly, so that the tar bytes the check reads are the bytes every
// extractor reads (docs/reliability.md#the-archive-check). The header and trailer are ours to read;
// node:zlib only inflates the raw deflate data between them. Nothing after the member is allowed: a
// second member is read on by gzip and bsdtar alike (each would extract more than was checked), and
// trailing bytes make `gzip -d` warn and GNU tar fail or not depending on its version.

export class GzipFormatError extends Error {}

/** What the header may hold beyond its 10 fixed bytes: no writer of archives needs more. */
const MAX_EXTRA = 64;
const MAX_TEXT = 1024;

const FHCRC = 0x02;
const FEXTRA = 0x04;
const FNAME = 0x08;
const FCOMMENT = 0x10;
const RESERVED = 0xe0;

const TRAILER = 8;

/**
 * The length of a complete gzip header at the start of `bytes`, `undefined` when more bytes are
 * needed, or a GzipFormatError for a header we do not accept.
 */
function headerLength(bytes: Buffer): number | undefined {
  if (bytes.length >= 1 && bytes[0] !== 0x1f) throw new GzipFormatError('not a gzip file');
  if (bytes.length >= 2 && bytes[1] !== 0x8b) throw new GzipFormatError('not a gzip file');
  if (bytes.length < 10) return undefined;
  if (bytes[2] !== 8) throw new GzipFormatError(`a gzip header with compression method ${bytes[2]}, not deflate`);
  const flags = bytes[3] as number;
  if (flags & RESERVED) throw new GzipFormatError('a gzip header with reserved flags set');
  let at = 10;
  if (flags & FEXTRA) {
    if (bytes.length < at + 2) return undefined;
    const length = bytes.readUInt16LE(at);
    if (length > MAX_EXTRA) throw new GzipFormatError(`a gzip header with ${length} bytes of extra field (more than ${MAX_EXTRA}), where data could hide`);
    at += 2 + length;
  }
  for (const [flag, field] of [[FNAME, 'file name'], [FCOMMENT, 'comment']] as const) {
    if (!(flags & flag)) continue;
    const end = bytes.indexOf(0, at);
    if (end === -1 || end - at > MAX_TEXT) {
      if (bytes.length - at > MAX_TEXT) throw new GzipFormatError(`a gzip header whose ${field} is longer than ${MAX_TEXT} bytes`);
      return undefined;
    }
    at = end + 1;
  }
  if (flags & FHCRC) {
    if (bytes.length < at + 2) return undefined;
    if (bytes.readUInt16LE(at) !== (crc32(bytes.subarray(0, at)) & 0xffff)) throw new GzipFormatError('a gzip header whose checksum is wrong');
    at += 2;
  }
  return bytes.length >= at ? at : undefined;
}

/**
 * A Transform from the bytes of a `.tar.gz` to the tar bytes inside: exactly one gzip member, its
 * header within the bounds above, its CRC-32 and length checked, nothing after it. Fails with
 * GzipFormatError (the archive's fault) or zlib's own error for corrupt deflate data.
 */
export class GzipMemberReader extends Transform {
  private header: Buffer | undefined = Buffer.alloc(0);
  /** The last bytes seen, held back from the inflater: at the end they must be the trailer. */
  private tail = Buffer.alloc(0);
  private fed = 0;
  private crc = 0;
  private inflated = 0;
  private readonly inflater: InflateRaw;
  /** The callback of the chunk the inflater is taking in. */
  private waiting: TransformCallback | undefined;
  private ended: Promise<void>;

  constructor() {
    super({ readableHighWaterMark: 64 << 10 });
    // Inflated chunks of 32 KiB: a chunk lives until its slowest reader (the tokenizer of a metadata
    // file) is done with it, and large ones outlive young-generation collections (scan.ts).
    this.inflater = createInflateRaw({ chunkSize: 32 << 10 });
    this.inflater.on('data', (chunk: Buffer) => {
      this.crc = crc32(chunk, this.crc);
      this.inflated = (this.inflated + chunk.length) % 2 ** 32;
      if (!this.push(chunk)) this.inflater.pause();
    });
    this.ended = new Promise((resolve, reject) => {
      this.inflater.once('end', resolve);
      this.inflater.once('error', (error: Error) => {
        reject(error);
        this.release(error);
      });
    });
    // Seen by the chunk being written, or by flush.
    this.ended.catch(() => {});
  }

  override _read(size: number): void {
    this.inflater.resume();
    super._read(size);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.header) {
      const bytes = Buffer.concat([this.header, chunk]);
      let length: number | undefined;
      try {
        length = headerLength(bytes);
      } catch (error) {
        return done(error as Error);
      }
      if (length === undefined) {
        this.header = bytes;
        return done();
      }
      this.header = undefined;
      chunk = bytes.subarray(length);
    }
    // Everything but the last 8 bytes seen goes to the inflater (the held bytes first).
    let body: Buffer[];
    if (chunk.length >= TRAILER) {
      body = [this.tail, chunk.subarray(0, chunk.length - TRAILER)];
      this.tail = Buffer.from(chunk.subarray(chunk.length - TRAILER));
    } else {
      const held = Buffer.concat([this.tail, chunk]);
      body = [held.subarray(0, Math.max(0, held.length - TRAILER))];
      this.tail = Buffer.from(held.subarray(body[0]?.length));
    }
    body = body.filter((piece) => piece.length > 0);
    if (body.length === 0) return done();
    this.waiting = done;
    body.forEach((piece, index) => {
      this.fed += piece.length;
      this.inflater.write(piece, index === body.length - 1 ? () => this.release() : undefined);
    });
  }

  override _flush(done: TransformCallback): void {
    if (this.header) return done(new GzipFormatError(this.header.length === 0 ? 'not a gzip file (it is empty)' : 'the gzip header is cut short: the archive is truncated'));
    this.inflater.end();
    this.ended.then(() => {
      // The inflater counts what it took in: the deflate data ended where the member's trailer starts.
      const after = this.fed - this.inflater.bytesWritten;
      if (after > 0) done(new GzipFormatError(`${after} byte${after === 1 ? '' : 's'} after the gzip member (another member or trailing data, which extractors read differently)`));
      else if (this.tail.length < TRAILER) done(new GzipFormatError('the gzip stream ends early: the archive is truncated'));
      else if (this.tail.readUInt32LE(0) !== this.crc >>> 0) done(new GzipFormatError('the gzip checksum (CRC-32) does not match the data: the archive is corrupt'));
      else if (this.tail.readUInt32LE(4) !== this.inflated) done(new GzipFormatError('the gzip trailer gives another length than the data has: the archive is corrupt'));
      else done();
    }, (error: Error) => done(error));
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.inflater.destroy();
    done(error);
  }

  private release(error?: Error): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.(error);
  }
}
