import { gzipSync } from 'node:zlib';

// Tar archives built byte by byte, for the archive check's hostile cases: every field of a header
// is the test's to choose, including the ones no tar writer would write.

const BLOCK = 512;

export interface RawHeader {
  name: string;
  /** Type flag: '0' file (default), '5' directory, '2' symlink, '1' hard link, 'x', 'g', 'L', 'K'… */
  type?: string;
  size?: number;
  /** Raw bytes of the 12-byte size field, instead of `size` in octal. */
  sizeField?: Buffer;
  linkName?: string;
  /** Bytes 257–265: 'ustar\0' + '00' (POSIX, the default), 'ustar  \0' (GNU), or anything. */
  magic?: string;
  /** Bytes from 345 on: a name prefix in POSIX headers, times and sparse data in GNU ones. */
  at345?: Buffer | string;
  /** Written over the finished header at these offsets (before the checksum, unless `badChecksum`). */
  patch?: [number, Buffer | string][];
  badChecksum?: boolean;
  /** The 8 bytes of the checksum field, written from the true sum, instead of the usual `%06o\0 `. */
  checksumField?: (sum: number) => string;
}

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

export function headerBlock(header: RawHeader): Buffer {
  const block = Buffer.alloc(BLOCK);
  const type = header.type ?? '0';
  block.write(header.name, 0, 100, 'utf8');
  block.write(octal(type === '5' ? 0o755 : 0o644, 8), 100, 'latin1');
  block.write(octal(0, 8), 108, 'latin1');
  block.write(octal(0, 8), 116, 'latin1');
  if (header.sizeField) header.sizeField.copy(block, 124, 0, 12);
  else block.write(octal(header.size ?? 0, 12), 124, 'latin1');
  block.write(octal(1_700_000_000, 12), 136, 'latin1');
  block.write(type, 156, 'latin1');
  block.write(header.linkName ?? '', 157, 100, 'utf8');
  block.write(header.magic ?? 'ustar\u000000', 257, 8, 'latin1');
  block.write('root', 265, 'latin1');
  block.write('root', 297, 'latin1');
  if (header.at345 !== undefined) Buffer.from(header.at345).copy(block, 345, 0, 155);
  for (const [at, bytes] of header.patch ?? []) Buffer.from(bytes).copy(block, at);
  block.write('        ', 148, 'latin1');
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(header.checksumField?.(sum) ?? octal(header.badChecksum ? sum + 1 : sum, 7), 148, 'latin1');
  return block;
}

function padded(data: Buffer): Buffer {
  const rest = data.length % BLOCK;
  return rest ? Buffer.concat([data, Buffer.alloc(BLOCK - rest)]) : data;
}

/** A header and its data; the size is the data's unless the header says otherwise. */
export function member(header: RawHeader, data: Buffer | string = Buffer.alloc(0)): Buffer {
  const body = Buffer.from(data);
  return Buffer.concat([headerBlock({ size: body.length, ...header }), padded(body)]);
}

/** A pax extended header ('x', or 'g' for global) with records built to their exact lengths. */
export function paxHeader(records: [string, string][], type: 'x' | 'g' = 'x'): Buffer {
  const body = records.map(([key, value]) => paxRecord(key, value)).join('');
  return member({ name: 'PaxHeader/x', type }, body);
}

function paxRecord(key: string, value: string): string {
  const text = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(text) + 1;
  while (String(length).length + Buffer.byteLength(text) !== length) length++;
  return `${length}${text}`;
}

/** A GNU long name ('L') or long link target ('K') for the member after it. */
export function gnuLongName(name: string, type: 'L' | 'K' = 'L'): Buffer {
  return member({ name: '././@LongLink', type, magic: 'ustar  \0' }, `${name}\0`);
}

/** Members, then the end-of-archive marker. */
export function tarOf(...parts: Buffer[]): Buffer {
  return Buffer.concat([...parts, Buffer.alloc(BLOCK * 2)]);
}

export function tarGz(...parts: Buffer[]): Buffer {
  return gzipSync(tarOf(...parts));
}
