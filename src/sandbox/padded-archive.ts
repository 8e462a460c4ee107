import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { setImmediate as yieldToOthers } from 'node:timers/promises';
import { crc32 } from 'node:zlib';

// An archive padded by `--archive-size` (gigabytes, for performance tests) is never written out
// nor read back: its tar is the members before the padding (held in memory), the padding (one
// random block repeated) and the end of the tar, and its gzip is made of stored deflate blocks, as
// gzip level 0 makes them (random bytes do not compress). So any byte of it is known by arithmetic:
// the size at once, the CRC-32 and the sha256 (the ETag) in one pass that writes nothing, and a
// range is served from where it starts, without reading what comes before it.

/** The most a stored deflate block holds (RFC 1951, 3.2.4). */
const STORED = 65_535;
/** A stored block's header: BFINAL/BTYPE in a byte of its own, then LEN and NLEN. */
const STORED_HEADER = 5;
/** What zlib writes at level 0: no name, no time, "fastest" (XFL 4), Unix (RFC 1952). */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x04, 0x03]);
const TRAILER = 8;
/** Pieces handed to a socket or the hash: large enough that their count does not matter. */
const PIECE = 1 << 20;

export interface PaddedTar {
  /** The tar up to and including the padding member's header. */
  head: Buffer;
  /** Repeated to make the padding's `padBytes` bytes. */
  block: Buffer;
  padBytes: number;
  /** The padding's rounding to 512 bytes and the tar's end. */
  tail: Buffer;
}

export interface PaddedArchive {
  size: number;
  sha256: string;
  /** Bytes `start` to `end` (inclusive) of the .tar.gz. */
  open(start: number, end: number): Readable;
}

/** Bytes [from, to) of the uncompressed tar, as pieces (views of the head, block and tail, no copies). */
function* tarPieces(tar: PaddedTar, from: number, to: number): Generator<Buffer> {
  const padStart = tar.head.length;
  const tailStart = padStart + tar.padBytes;
  let at = from;
  while (at < to) {
    if (at < padStart) {
      const piece = tar.head.subarray(at, Math.min(to, padStart));
      yield piece;
      at += piece.length;
    } else if (at < tailStart) {
      const inBlock = (at - padStart) % tar.block.length;
      const piece = tar.block.subarray(inBlock, inBlock + Math.min(to, tailStart) - at);
      yield piece;
      at += piece.length;
    } else {
      const piece = tar.tail.subarray(at - tailStart, to - tailStart);
      yield piece;
      at += piece.length;
    }
  }
}

function storedHeader(last: boolean, length: number): Buffer {
  const header = Buffer.alloc(STORED_HEADER);
  header[0] = last ? 1 : 0;
  header.writeUInt16LE(length, 1);
  header.writeUInt16LE(~length & 0xffff, 3);
  return header;
}

/** Describes the .tar.gz around a tar of `tarSize` bytes whose CRC-32 is `crc`. */
function layout(tarSize: number, crc: number) {
  const blocks = Math.max(1, Math.ceil(tarSize / STORED));
  const bodyEnd = GZIP_HEADER.length + tarSize + blocks * STORED_HEADER;
  const trailer = Buffer.alloc(TRAILER);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(tarSize % 2 ** 32, 4);
  return { blocks, bodyEnd, size: bodyEnd + TRAILER, trailer };
}

/** Bytes [from, to) of the .tar.gz, as pieces. */
function* gzipPieces(tar: PaddedTar, tarSize: number, gz: ReturnType<typeof layout>, from: number, to: number): Generator<Buffer> {
  const clip = function* (piece: Buffer, pieceStart: number): Generator<Buffer> {
    const start = Math.max(from, pieceStart);
    const end = Math.min(to, pieceStart + piece.length);
    if (start < end) yield piece.subarray(start - pieceStart, end - pieceStart);
  };
  yield* clip(GZIP_HEADER, 0);
  const blockSpan = STORED + STORED_HEADER;
  const first = Math.max(0, Math.floor((from - GZIP_HEADER.length) / blockSpan));
  for (let block = first; block < gz.blocks; block++) {
    const blockStart = GZIP_HEADER.length + block * blockSpan;
    if (blockStart >= to) return;
    const tarFrom = block * STORED;
    const length = Math.min(STORED, tarSize - tarFrom);
    yield* clip(storedHeader(block === gz.blocks - 1, length), blockStart);
    const dataStart = blockStart + STORED_HEADER;
    const skip = Math.max(0, from - dataStart);
    const stop = Math.min(length, to - dataStart);
    if (skip < stop) yield* tarPieces(tar, tarFrom + skip, tarFrom + stop);
  }
  yield* clip(gz.trailer, gz.bodyEnd);
}

/** Joins small pieces (a block's header) with their neighbours into pieces of about PIECE bytes. */
function* joined(pieces: Iterable<Buffer>): Generator<Buffer> {
  let held: Buffer[] = [];
  let heldBytes = 0;
  for (const piece of pieces) {
    held.push(piece);
    heldBytes += piece.length;
    if (heldBytes >= PIECE) {
      yield held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held, heldBytes);
      held = [];
      heldBytes = 0;
    }
  }
  if (heldBytes > 0) yield Buffer.concat(held, heldBytes);
}

/**
 * The size and sha256 of a padded archive, computed in one pass over bytes made on the fly: the
 * CRC-32 of the tar as its pieces go by, which the trailer, hashed last, carries. The event loop
 * gets a turn every few MiB: the sandbox may share it with the client it serves.
 */
export async function paddedArchive(tar: PaddedTar): Promise<PaddedArchive> {
  const tarSize = tar.head.length + tar.padBytes + tar.tail.length;
  const blocks = Math.max(1, Math.ceil(tarSize / STORED));
  const hash = createHash('sha256').update(GZIP_HEADER);
  let crc = 0;
  let sinceTurn = 0;
  for (let block = 0; block < blocks; block++) {
    const from = block * STORED;
    const length = Math.min(STORED, tarSize - from);
    hash.update(storedHeader(block === blocks - 1, length));
    for (const piece of tarPieces(tar, from, from + length)) {
      crc = crc32(piece, crc);
      hash.update(piece);
    }
    sinceTurn += length;
    if (sinceTurn >= 16 * PIECE) {
      sinceTurn = 0;
      await yieldToOthers();
    }
  }
  const gz = layout(tarSize, crc);
  hash.update(gz.trailer);
  return {
    size: gz.size,
    sha256: hash.digest('hex'),
    open: (start, end) => Readable.from(joined(gzipPieces(tar, tarSize, gz, start, end + 1)), { objectMode: false }),
  };
}
