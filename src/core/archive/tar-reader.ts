// A streaming tar reader: headers are parsed as blocks arrive and member data is handed on in the
// pieces it came in, so a 1 GiB member costs a counter, not memory. It reads what the service and
// GNU/BSD tar write: ustar, pax extended headers (path, linkpath, size) and GNU long names.

const BLOCK = 512;

type EntryType = 'file' | 'directory' | 'symlink' | 'hardlink' | 'special' | 'other';

export interface TarEntry {
  name: string;
  type: EntryType;
  size: number;
  /** Target of a symlink or hard link. */
  linkName: string;
  /** Offset of the header in the uncompressed stream (for messages). */
  offset: number;
}

export interface EntryHandler {
  /** A piece of the member's data, in order; the buffer is only valid during the call. */
  data?(chunk: Buffer): void;
  end?(): void;
}

export class TarFormatError extends Error {}

type State = 'header' | 'data' | 'padding' | 'meta';

/**
 * Feed it the uncompressed stream with `push`, then call `finish`. `onEntry` is called for every
 * member (pax and GNU long-name records are applied, not reported) and may return a handler for its
 * data. Throws TarFormatError on a broken header; `finish` throws when the stream stopped early.
 */
export class TarReader {
  /** True once the end-of-archive marker (a zero block) was read. */
  ended = false;
  /** Uncompressed bytes consumed. */
  position = 0;
  private state: State = 'header';
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private left = 0;
  private padding = 0;
  private current: TarEntry | undefined;
  private handler: EntryHandler | undefined;
  private meta: { kind: 'pax' | 'pax-global' | 'longname' | 'longlink'; chunks: Buffer[] } | undefined;
  private paxOverrides: Record<string, string> = {};
  private longName: string | undefined;
  private longLink: string | undefined;
  private readonly onEntry: (entry: TarEntry) => EntryHandler | undefined;

  constructor(onEntry: (entry: TarEntry) => EntryHandler | undefined) {
    this.onEntry = onEntry;
  }

  push(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.ended) {
        // Whatever follows the marker (the second zero block, the record padding) is not read.
        this.position += chunk.length - offset;
        return;
      }
      if (this.state === 'data' || this.state === 'meta') {
        const take = Math.min(this.left, chunk.length - offset);
        const piece = chunk.subarray(offset, offset + take);
        if (this.state === 'data') this.handler?.data?.(piece);
        else this.meta?.chunks.push(Buffer.from(piece));
        offset += take;
        this.position += take;
        this.left -= take;
        if (this.left === 0) this.endMember();
        continue;
      }
      if (this.state === 'padding') {
        const take = Math.min(this.padding, chunk.length - offset);
        offset += take;
        this.position += take;
        this.padding -= take;
        if (this.padding === 0) this.state = 'header';
        continue;
      }
      // A header: gather one whole block, across chunks if need be.
      const want = BLOCK - this.pendingBytes;
      if (this.pendingBytes === 0 && chunk.length - offset >= BLOCK) {
        this.header(chunk.subarray(offset, offset + BLOCK));
        offset += BLOCK;
        continue;
      }
      const piece = chunk.subarray(offset, offset + want);
      this.pending.push(Buffer.from(piece));
      this.pendingBytes += piece.length;
      offset += piece.length;
      if (this.pendingBytes === BLOCK) {
        const block = Buffer.concat(this.pending, BLOCK);
        this.pending = [];
        this.pendingBytes = 0;
        this.header(block);
      }
    }
  }

  /** Throws when the stream stopped inside a member or before the end-of-archive marker. */
  finish(): void {
    if (this.state === 'data' || this.state === 'meta' || this.state === 'padding') {
      throw new TarFormatError(
        `the archive ends inside ${this.current ? `"${this.current.name}"` : 'a member'} (truncated)`,
      );
    }
    if (this.pendingBytes > 0) throw new TarFormatError('the archive ends inside a header block (truncated)');
    if (!this.ended) throw new TarFormatError('the archive has no end-of-archive marker (truncated)');
  }

  private header(block: Buffer): void {
    const offset = this.position;
    this.position += BLOCK;
    if (isZero(block)) {
      this.ended = true;
      return;
    }
    const stored = parseOctal(block, 148, 8);
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : (block[i] as number);
    if (stored !== sum) throw new TarFormatError(`broken tar header at byte ${offset} (checksum mismatch)`);

    const flag = String.fromCharCode(block[156] as number);
    const magic = block.toString('latin1', 257, 262);
    let name = cString(block, 0, 100);
    if (magic === 'ustar') {
      const prefix = cString(block, 345, 155);
      if (prefix) name = `${prefix}/${name}`;
    }
    let size = parseSize(block, offset);
    let linkName = cString(block, 157, 100);

    if (flag === 'x' || flag === 'g' || flag === 'L' || flag === 'K') {
      const kind = flag === 'x' ? 'pax' : flag === 'g' ? 'pax-global' : flag === 'L' ? 'longname' : 'longlink';
      if (size > 1 << 20) throw new TarFormatError(`an extended header at byte ${offset} is implausibly large`);
      this.meta = { kind, chunks: [] };
      this.current = { name: `(${kind} header)`, type: 'other', size, linkName: '', offset };
      this.startData(size, 'meta');
      return;
    }
    if (this.longName !== undefined) name = this.longName;
    if (this.longLink !== undefined) linkName = this.longLink;
    const pax = this.paxOverrides;
    if (pax.path !== undefined) name = pax.path;
    if (pax.linkpath !== undefined) linkName = pax.linkpath;
    if (pax.size !== undefined && /^\d+$/.test(pax.size)) size = Number(pax.size);
    this.longName = undefined;
    this.longLink = undefined;
    this.paxOverrides = {};

    const type: EntryType =
      flag === '0' || flag === '\0' || flag === '7'
        ? 'file'
        : flag === '5'
          ? 'directory'
          : flag === '2'
            ? 'symlink'
            : flag === '1'
              ? 'hardlink'
              : flag === '3' || flag === '4' || flag === '6'
                ? 'special'
                : 'other';
    // Links, directories and special files carry no data, whatever their size field says.
    if (type === 'symlink' || type === 'hardlink' || type === 'directory' || type === 'special') size = 0;
    const entry: TarEntry = { name, type, size, linkName, offset };
    this.current = entry;
    this.handler = this.onEntry(entry);
    this.startData(size, 'data');
  }

  private startData(size: number, state: 'data' | 'meta'): void {
    this.left = size;
    this.padding = (BLOCK - (size % BLOCK)) % BLOCK;
    this.state = state;
    if (size === 0) this.endMember();
  }

  private endMember(): void {
    if (this.state === 'data') {
      const handler = this.handler;
      this.handler = undefined;
      handler?.end?.();
    } else if (this.meta) {
      const text = Buffer.concat(this.meta.chunks).toString('utf8');
      if (this.meta.kind === 'pax') this.paxOverrides = parsePax(text);
      else if (this.meta.kind === 'longname') this.longName = text.replace(/\0+$/, '');
      else if (this.meta.kind === 'longlink') this.longLink = text.replace(/\0+$/, '');
      this.meta = undefined;
    }
    this.state = this.padding > 0 ? 'padding' : 'header';
  }
}

function isZero(block: Buffer): boolean {
  for (let i = 0; i < block.length; i += 8) if (block.readBigUInt64LE(i) !== 0n) return false;
  return true;
}

function cString(block: Buffer, start: number, length: number): string {
  const end = block.indexOf(0, start);
  return block.toString('utf8', start, end === -1 || end > start + length ? start + length : end);
}

function parseOctal(block: Buffer, start: number, length: number): number {
  const text = block.toString('latin1', start, start + length).replace(/[\0 ]+$/g, '').trim();
  return /^[0-7]+$/.test(text) ? parseInt(text, 8) : -1;
}

/** Sizes above 8 GiB are written in base-256 (GNU): a set top bit, then big-endian bytes. */
function parseSize(block: Buffer, offset: number): number {
  if (((block[124] as number) & 0x80) !== 0) {
    let value = 0;
    for (let i = 125; i < 136; i++) value = value * 256 + (block[i] as number);
    if (!Number.isSafeInteger(value)) throw new TarFormatError(`a member at byte ${offset} claims an impossible size`);
    return value;
  }
  const size = parseOctal(block, 124, 12);
  if (size < 0) throw new TarFormatError(`broken tar header at byte ${offset} (size field)`);
  return size;
}

function parsePax(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const bytes = Buffer.from(text, 'utf8');
  let at = 0;
  while (at < bytes.length) {
    const space = bytes.indexOf(0x20, at);
    if (space === -1) break;
    const length = Number(bytes.toString('latin1', at, space));
    if (!Number.isInteger(length) || length <= 0) break;
    const record = bytes.toString('utf8', space + 1, at + length - 1);
    const equals = record.indexOf('=');
    if (equals > 0) out[record.slice(0, equals)] = record.slice(equals + 1);
    at += length;
  }
  return out;
}
