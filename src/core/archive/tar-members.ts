import { Writable } from 'node:stream';
import { detached } from './detached.js';
import { type CheckedHeader, checkHeaderBlock, isZeroBlock, type PaxRecords, readLongName, readPaxBody } from './tar-headers.js';

// The members of an uncompressed tar stream, framed here block by block: a reader that can only
// read tar (it never looks for a compressed stream inside, as npm's `tar` does), of the ustar, pax
// and GNU long-name subset that archives are written in. Every header is held to what GNU tar and
// bsdtar both read (tar-headers.ts); one they could read differently ends the reading with a
// TarFormatError, since nothing after it can be trusted to be what an extractor sees.

export type MemberType = 'file' | 'directory' | 'symlink' | 'hardlink' | 'special';

export interface TarMember {
  /**
   * The name as extractors read it: pax and GNU long names applied, a leading `./` taken off; a
   * directory's may end with "/".
   */
  name: string;
  type: MemberType;
  size: number;
  /** Target of a symbolic or hard link. */
  linkName: string;
  /** Permission bits (with set-user-ID, set-group-ID and sticky). */
  mode: number;
}

export interface MemberHandler {
  /** A piece of the member's data, in order; the buffer is only valid during the call. */
  data?: (chunk: Buffer) => void;
  end?: () => void;
}

export class TarFormatError extends Error {}

const BLOCK = 512;

/** gzip, zstd, bzip2 and xz: what the tar was if its first block starts so. */
const COMPRESSED = [[0x1f, 0x8b], [0x28, 0xb5, 0x2f, 0xfd], [0x42, 0x5a, 0x68], [0xfd, 0x37, 0x7a, 0x58, 0x5a]].map(
  (magic) => Buffer.from(magic),
);

/**
 * What may follow the end-of-archive marker: the zeros that pad a record (10 KiB by default, 1 MiB
 * at GNU tar's largest blocking factor), not gigabytes of zeros inflated for nothing.
 */
const MAX_AFTER_END = 1 << 20;

/** Extended headers larger than this are not read (npm's tar skips them, GNU tar applies them). */
const MAX_NAMING_HEADER = 1 << 20;

const TYPES: Record<string, MemberType> = {
  0: 'file',
  '\0': 'file',
  7: 'file',
  5: 'directory',
  2: 'symlink',
  1: 'hardlink',
  3: 'special',
  4: 'special',
  6: 'special',
};

/** What the naming headers before a member said, to be applied to it. */
interface Pending {
  pax: PaxRecords;
  extendedHeaders: number;
  longName?: string;
  longLink?: string;
}

type State =
  | { at: 'header' }
  | { at: 'data'; left: number; handler: MemberHandler | undefined; padding: number }
  | { at: 'naming'; flag: string; left: number; pieces: Buffer[]; padding: number }
  | { at: 'padding'; left: number }
  | { at: 'end'; after: number };

/**
 * A writable end for the uncompressed tar stream: `onMember` is called for every member in order and
 * may return a handler for its data. The stream fails with TarFormatError when the archive is broken,
 * truncated, or holds a header on which tar readers disagree.
 */
export class TarMemberReader extends Writable {
  private state: State = { at: 'header' };
  /** A header block split across writes. */
  private partial = Buffer.alloc(0);
  private pending: Pending = { pax: {}, extendedHeaders: 0 };
  private first = true;
  /** A pax header was seen: bsdtar then reads names differently. */
  private pax = false;
  private readonly onMember: (member: TarMember) => MemberHandler | undefined;

  constructor(onMember: (member: TarMember) => MemberHandler | undefined) {
    super();
    this.onMember = onMember;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    try {
      this.consume(chunk);
    } catch (error) {
      // A header check, or a member's handler (a full disk): nothing more is read either way.
      return done(error as Error);
    }
    done();
  }

  override _final(done: (error?: Error | null) => void): void {
    const state = this.state;
    if (state.at === 'end') return done();
    try {
      this.refuseCompressed(this.partial);
    } catch (error) {
      return done(error as Error);
    }
    if (state.at === 'data' || state.at === 'naming' || this.partial.length > 0) return done(new TarFormatError('the archive ends inside a member (truncated)'));
    done(new TarFormatError('the archive has no end-of-archive marker (truncated)'));
  }

  private consume(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      const state = this.state;
      const rest = chunk.length - at;
      if (state.at === 'end') {
        // GNU tar and bsdtar stop at the first zero block; only zeros (the padding of a record) may follow.
        state.after += rest;
        if (!allZero(chunk.subarray(at))) throw new TarFormatError('data after the end-of-archive marker, which tar readers do not read');
        if (state.after > MAX_AFTER_END) throw new TarFormatError('more than 1 MiB of zeros after the end-of-archive marker, more than any tar writer pads');
        return;
      }
      if (state.at === 'header') {
        if (this.partial.length === 0 && rest >= BLOCK) {
          this.header(chunk.subarray(at, at + BLOCK));
          at += BLOCK;
        } else {
          const take = Math.min(BLOCK - this.partial.length, rest);
          this.partial = Buffer.concat([this.partial, chunk.subarray(at, at + take)]);
          at += take;
          if (this.partial.length === BLOCK) {
            const block = this.partial;
            this.partial = Buffer.alloc(0);
            this.header(block);
          }
        }
        continue;
      }
      const take = Math.min(state.left, rest);
      const piece = chunk.subarray(at, at + take);
      at += take;
      state.left -= take;
      if (state.at === 'data') state.handler?.data?.(piece);
      else if (state.at === 'naming') state.pieces.push(Buffer.from(piece));
      if (state.left > 0) continue;
      if (state.at === 'data') state.handler?.end?.();
      if (state.at === 'naming') this.naming(state.flag, Buffer.concat(state.pieces));
      this.state = state.at !== 'padding' && state.padding > 0 ? { at: 'padding', left: state.padding } : { at: 'header' };
    }
  }

  private header(block: Buffer): void {
    if (isZeroBlock(block)) {
      if (this.pending.extendedHeaders > 0 || this.pending.longName !== undefined || this.pending.longLink !== undefined) {
        throw new TarFormatError('an extended header with no member after it');
      }
      this.state = { at: 'end', after: 0 };
      return;
    }
    const checked = checkHeaderBlock(block);
    if ('disagreement' in checked) this.refuseCompressed(block);
    this.first = false;
    if ('disagreement' in checked) throw new TarFormatError(`${checked.disagreement}: tar readers could extract something other than what is checked`);
    const padding = (BLOCK - (checked.size % BLOCK)) % BLOCK;
    if (checked.flag === 'x' || checked.flag === 'g' || checked.flag === 'L' || checked.flag === 'K') {
      if (checked.size > MAX_NAMING_HEADER) throw new TarFormatError('an extended header over 1 MiB, which tar readers treat differently');
      if (checked.flag === 'x') this.pending.extendedHeaders++;
      if (checked.flag === 'x' || checked.flag === 'g') this.pax = true;
      if (checked.size === 0) return;
      this.state = { at: 'naming', flag: checked.flag, left: checked.size, pieces: [], padding };
      return;
    }
    const member = this.member(checked);
    // `./`, which `tar czf x.tar.gz -C dir .` writes first, is the directory extracted into.
    if (member.name === '' && member.type === 'directory') return;
    const handler = this.onMember(member);
    if (member.size === 0) {
      handler?.end?.();
      return;
    }
    this.state = { at: 'data', left: member.size, handler, padding: (BLOCK - (member.size % BLOCK)) % BLOCK };
  }

  /** Only to say why the first block is no tar header: nothing here is ever inflated. */
  private refuseCompressed(block: Buffer): void {
    const starts = (magic: Buffer) => block.subarray(0, magic.length).equals(magic.subarray(0, block.length));
    if (this.first && block.length > 0 && COMPRESSED.some(starts)) {
      throw new TarFormatError('a compressed stream inside the archive\'s own compression (compressed twice), not a tar archive');
    }
  }

  private naming(flag: string, bytes: Buffer): void {
    const pending = this.pending;
    const body = bytes.toString('utf8');
    if (flag === 'x' || flag === 'g') {
      const records = readPaxBody(body, flag === 'g');
      if ('disagreement' in records) throw new TarFormatError(records.disagreement);
      if (flag === 'x') pending.pax = records;
      return;
    }
    const name = readLongName(body);
    if (typeof name !== 'string') throw new TarFormatError(name.disagreement);
    if ((flag === 'L' ? pending.longName : pending.longLink) !== undefined) throw new TarFormatError('two GNU long names for one member');
    // Strings of their own: a piece of the body would keep all of it (a MiB) as long as the name lives.
    if (flag === 'L') pending.longName = detached(name);
    else pending.longLink = detached(name);
  }

  /** The member a header describes, with the naming headers before it applied as extractors do. */
  private member(checked: CheckedHeader): TarMember {
    const pending = this.pending;
    this.pending = { pax: {}, extendedHeaders: 0 };
    const type = TYPES[checked.flag] as MemberType;
    const written = pending.pax.path ?? pending.longName ?? checked.name.toString('utf8');
    // `tar czf x.tar.gz -C dir .` names every member `./…`: GNU tar and bsdtar extract it where the
    // name without it goes.
    const name = written.startsWith('./') ? written.slice(2) : written;
    // Readers order pax names and GNU long names differently, and merge repeated headers differently.
    let disagreement: string | undefined;
    if (pending.extendedHeaders > 1) disagreement = 'two extended headers for one member';
    else if (pending.pax.path !== undefined && pending.longName !== undefined) disagreement = 'a member named by both a pax header and a GNU long name';
    else if (pending.pax.linkpath !== undefined && pending.longLink !== undefined) disagreement = 'a link target given by both a pax header and a GNU long name';
    else if (pending.pax.size !== undefined && type !== 'file') disagreement = 'an extended header giving a size to a member that holds no data';
    else if ((pending.pax.linkpath ?? pending.longLink) !== undefined && type !== 'symlink' && type !== 'hardlink') {
      disagreement = 'a link target given to a member that is not a link';
    } else if (type === 'file' && name.endsWith('/')) disagreement = 'a file header whose name ends with "/"';
    // bsdtar writes the names of an archive with pax headers in Unicode NFC; GNU tar as they are.
    else if (this.pax && name !== name.normalize('NFC')) disagreement = 'a name not in Unicode NFC form in an archive with pax headers, which bsdtar rewrites';
    if (disagreement !== undefined) throw new TarFormatError(`${disagreement}: tar readers could extract something other than what is checked`);
    return {
      name,
      type,
      size: type === 'file' ? (pending.pax.size ?? checked.size) : 0,
      linkName: type === 'symlink' || type === 'hardlink' ? (pending.pax.linkpath ?? pending.longLink ?? checked.linkName.toString('utf8')) : '',
      mode: checked.mode,
    };
  }
}

const ZEROS = Buffer.alloc(64 << 10);

function allZero(bytes: Buffer): boolean {
  for (let at = 0; at < bytes.length; at += ZEROS.length) {
    const piece = bytes.subarray(at, at + ZEROS.length);
    if (!piece.equals(ZEROS.subarray(0, piece.length))) return false;
  }
  return true;
}
