import { constants, crc32, deflateRawSync } from 'node:zlib';
import { headerBlock } from './tar-bytes.js';

// gzip streams built byte by byte, for the archive check's hostile cases: the header's optional
// fields, where the deflate stream is flushed, empty blocks between, and what follows the member
// are the test's to choose, as whoever serves an archive may.

/** A deflate block holding nothing (stored, not final), as a sync flush ends with: byte-aligned, so any number may follow one. */
const EMPTY_STORED_BLOCK = Buffer.from([0, 0, 0, 0xff, 0xff]);

/**
 * Empty blocks filling more than the 1 MiB the check reads the file by: the inflater is handed all
 * of them at once and has only the bytes before them to give, so its first chunk is those bytes.
 */
export const PAST_ONE_READ = Math.ceil(((1 << 20) + (64 << 10)) / EMPTY_STORED_BLOCK.length);

export interface GzipShape {
  /** FEXTRA: bytes the header carries (at most 65,535), which readers skip. */
  extra?: Buffer;
  /** FNAME and FCOMMENT: NUL-ended strings in the header. */
  fileName?: Buffer;
  comment?: Buffer;
  /** FHCRC: the header's own CRC-16 after it. */
  headerCrc?: boolean;
  /** Bytes 4–9: modification time, extra flags, OS (zeros and 255, Unix, unless given). */
  mtimeFlagsOs?: Buffer;
  /** Where the data is cut, each piece deflated on its own and ended by a sync flush, with this many empty blocks after it. */
  cuts?: { at: number; emptyBlocks: number }[];
  level?: number;
}

/** One gzip member of `data`, shaped as asked; its CRC-32 and length always right. */
export function gzipMember(data: Buffer, shape: GzipShape = {}): Buffer {
  const flags = (shape.headerCrc ? 2 : 0) | (shape.extra ? 4 : 0) | (shape.fileName ? 8 : 0) | (shape.comment ? 16 : 0);
  const fields: Buffer[] = [Buffer.from([0x1f, 0x8b, 8, flags]), shape.mtimeFlagsOs ?? Buffer.from([0, 0, 0, 0, 0, 3])];
  if (shape.extra) {
    const length = Buffer.alloc(2);
    length.writeUInt16LE(shape.extra.length);
    fields.push(length, shape.extra);
  }
  if (shape.fileName) fields.push(shape.fileName, Buffer.alloc(1));
  if (shape.comment) fields.push(shape.comment, Buffer.alloc(1));
  if (shape.headerCrc) {
    const crc = Buffer.alloc(2);
    crc.writeUInt16LE(crc32(Buffer.concat(fields)) & 0xffff);
    fields.push(crc);
  }
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc32(data), 0);
  trailer.writeUInt32LE(data.length % 2 ** 32, 4);
  return Buffer.concat([...fields, deflatedInPieces(data, shape.cuts ?? [], shape.level ?? 6), trailer]);
}

/**
 * A raw deflate stream of `data` cut at the given offsets. A compressor started afresh never refers
 * back past its start, so pieces each deflated alone and ended by a sync flush (which leaves the
 * stream byte-aligned and not final) make one valid stream, with empty blocks wherever wanted.
 */
function deflatedInPieces(data: Buffer, cuts: { at: number; emptyBlocks: number }[], level: number): Buffer {
  const sorted = [...cuts].map((cut) => ({ ...cut, at: Math.min(cut.at, data.length) })).sort((a, b) => a.at - b.at);
  const parts: Buffer[] = [];
  let from = 0;
  for (const cut of sorted) {
    parts.push(deflateRawSync(data.subarray(from, cut.at), { level, finishFlush: constants.Z_SYNC_FLUSH }));
    parts.push(Buffer.concat(Array.from({ length: cut.emptyBlocks }, () => EMPTY_STORED_BLOCK)));
    from = cut.at;
  }
  parts.push(deflateRawSync(data.subarray(from), { level }));
  return Buffer.concat(parts);
}

/**
 * One gzip member of `data` whose first inflated chunk, read as the check reads it, is only its
 * first `firstBytes` bytes: a reader that judges the first chunk alone sees no more of it.
 */
export function slowStartGzip(data: Buffer, firstBytes: number): Buffer {
  return gzipMember(data, { cuts: [{ at: firstBytes, emptyBlocks: PAST_ONE_READ }] });
}

/**
 * A gzip member of `hidden` whose header's FEXTRA field is also a tar archive, `shown`: gunzip it and
 * read the result as tar (GNU tar does), and `shown` is what is there; inflate it once more (npm's
 * tar and bsdtar do), and it is `hidden`. The tar's first header is a pax header, whose name tar
 * readers ignore: the gzip header's first 12 bytes are that name's.
 */
export function polyglotGzip(hidden: Buffer, shown: Buffer): Buffer {
  const paxBody = '12 comment=\n';
  const extraLength = 2 * 512 + shown.length - 12;
  if (extraLength > 0xffff) throw new Error('the shown archive must fit a gzip header\'s extra field (64 KiB)');
  const gzipHeader = Buffer.from([0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 3, extraLength & 0xff, extraLength >> 8]);
  const tar = Buffer.concat([headerBlock({ name: 'x', type: 'x', size: paxBody.length, patch: [[0, gzipHeader]] }), Buffer.from(paxBody.padEnd(512, '\0')), shown]);
  const polyglot = gzipMember(hidden, { extra: tar.subarray(12) });
  if (!polyglot.subarray(0, 12).equals(gzipHeader)) throw new Error('the polyglot\'s gzip header is not the one its tar header starts with');
  return polyglot;
}
