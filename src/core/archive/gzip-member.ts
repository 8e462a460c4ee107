import { Transform } from 'node:stream';
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
 * The stages that turn the bytes of a `.tar.gz` into the tar bytes inside, for a pipeline, and the
 * check of what only the end tells (the trailer, nothing after the member), to run once the
 * pipeline is done: exactly one gzip member, its header within the bounds above, its CRC-32 and
 * length right. A stage fails with GzipFormatError (the archive's fault) or zlib's own error for
 * corrupt deflate data; so does `check`.
 */
export function gzipMember(): { stages: [Transform, InflateRaw, Transform]; check: () => void } {
  let header: Buffer | undefined = Buffer.alloc(0);
  /** The last bytes seen, held back from the inflater: at the end they must be the trailer. */
  let tail = Buffer.alloc(0);
  let fed = 0;
  let crc = 0;
  let inflated = 0;
  const framing = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (header) {
        const bytes = Buffer.concat([header, chunk]);
        let length: number | undefined;
        try {
          length = headerLength(bytes);
        } catch (error) {
          return done(error as Error);
        }
        if (length === undefined) {
          header = bytes;
          return done();
        }
        header = undefined;
        chunk = bytes.subarray(length);
      }
      // Everything but the last 8 bytes seen goes on (the bytes held back first).
      let held: Buffer[];
      if (chunk.length >= TRAILER) {
        held = [tail, chunk.subarray(0, chunk.length - TRAILER)];
        tail = Buffer.from(chunk.subarray(chunk.length - TRAILER));
      } else {
        const joined = Buffer.concat([tail, chunk]);
        const cut = Math.max(0, joined.length - TRAILER);
        held = [joined.subarray(0, cut)];
        tail = Buffer.from(joined.subarray(cut));
      }
      for (const piece of held) {
        fed += piece.length;
        if (piece.length > 0) this.push(piece);
      }
      done();
    },
    flush(done) {
      if (header) return done(new GzipFormatError(header.length === 0 ? 'not a gzip file (it is empty)' : 'the gzip header is cut short: the archive is truncated'));
      done();
    },
  });
  // Inflated chunks of 32 KiB, twice the default. A chunk lives until its slowest reader (the
  // tokenizer of a metadata file) is done with it, and one that outlives two young-generation
  // collections waits for a full one: with 256 KiB chunks a metadata file of empty objects held
  // 150 MB of them, with 32 KiB 90 MB.
  const inflater = createInflateRaw({ chunkSize: 32 << 10 });
  const counting = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      crc = crc32(chunk, crc);
      inflated = (inflated + chunk.length) % 2 ** 32;
      done(null, chunk);
    },
  });
  const check = () => {
    // The inflater counts what it took in: the deflate data ended where the member's trailer starts.
    const after = fed - inflater.bytesWritten;
    if (after > 0) throw new GzipFormatError(`${after} byte${after === 1 ? '' : 's'} after the gzip member (another member or trailing data, which extractors read differently)`);
    if (tail.length < TRAILER) throw new GzipFormatError('the gzip stream ends early: the archive is truncated');
    if (tail.readUInt32LE(0) !== crc >>> 0) throw new GzipFormatError('the gzip checksum (CRC-32) does not match the data: the archive is corrupt');
    if (tail.readUInt32LE(4) !== inflated) throw new GzipFormatError('the gzip trailer gives another length than the data has: the archive is corrupt');
  };
  return { stages: [framing, inflater, counting], check };
}
