import { Writable } from 'node:stream';
import { Parser, type ReadEntry } from 'tar';
import { checkHeaderBlock, isZeroBlock, type PaxRecords, readLongName, readPaxBody } from './tar-headers.js';

// The members of an uncompressed tar stream as npm's `tar` reads them, with every header first
// held to what GNU tar would read (tar-headers.ts). A header the two could read differently ends
// the reading with a TarFormatError: nothing after it can be trusted to be what an importer sees.

export type MemberType = 'file' | 'directory' | 'symlink' | 'hardlink' | 'special';

export interface TarMember {
  /** The name exactly as the tar library reports it (pax and GNU long names applied). */
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

/** Extended headers larger than this are not read (the library's own limit), so never trusted. */
const MAX_NAMING_HEADER = 1 << 20;

const TYPES: Record<string, MemberType> = {
  File: 'file',
  OldFile: 'file',
  ContiguousFile: 'file',
  Directory: 'directory',
  SymbolicLink: 'symlink',
  Link: 'hardlink',
  CharacterDevice: 'special',
  BlockDevice: 'special',
  FIFO: 'special',
};

/**
 * The library hands each header block to one method of its parser before it decodes it; the check
 * runs there, on the very blocks the library frames. `test/integrity/tar-differential.test.ts`
 * fails at once should a later version of the library stop calling it.
 */
const consumeHeader = Object.getOwnPropertySymbols(Parser.prototype).find((symbol) => symbol.description === 'consumeHeader');

type HeaderHook = (chunk: Buffer, position: number) => void;

class CheckedParser extends Parser {
  onHeaderBlock: (chunk: Buffer, position: number) => void = () => {};
}
if (consumeHeader) {
  const prototype = Parser.prototype as unknown as Record<symbol, HeaderHook>;
  const original = prototype[consumeHeader] as HeaderHook;
  Object.defineProperty(CheckedParser.prototype, consumeHeader, {
    value(this: CheckedParser, chunk: Buffer, position: number) {
      this.onHeaderBlock(chunk, position);
      original.call(this, chunk, position);
    },
  });
}

const ZEROS = Buffer.alloc(64 << 10);

function allZero(bytes: Buffer): boolean {
  for (let at = 0; at < bytes.length; at += ZEROS.length) {
    const piece = bytes.subarray(at, at + ZEROS.length);
    if (!piece.equals(ZEROS.subarray(0, piece.length))) return false;
  }
  return true;
}

/** What the naming headers before a member said, to be applied to it. */
interface Pending {
  pax: PaxRecords;
  extendedHeaders: number;
  longName?: string;
  longLink?: string;
}

/**
 * A writable end for the uncompressed tar stream: `onMember` is called for every member in order and
 * may return a handler for its data. The stream fails with TarFormatError when the archive is broken,
 * truncated, or holds a header on which tar readers disagree.
 */
export class TarMemberReader extends Writable {
  // The library would also inflate a zstd stream it finds inside (gzip: see _write).
  private readonly parser = new CheckedParser({ strict: true, zstd: false });
  private failure: TarFormatError | undefined;
  private zeroBlocks = 0;
  /** What follows the end-of-archive marker in the bytes the library was reading when it found it. */
  private afterEnd: Buffer | undefined;
  private started = false;
  private readonly namingKinds: string[] = [];
  private readonly memberFlags: string[] = [];
  private pending: Pending = { pax: {}, extendedHeaders: 0 };
  private readonly onMember: (member: TarMember) => MemberHandler | undefined;

  constructor(onMember: (member: TarMember) => MemberHandler | undefined) {
    super();
    if (!consumeHeader) throw new Error('the tar library no longer lets its headers be checked: upgrade svc-migrate');
    this.onMember = onMember;
    const parser = this.parser;
    parser.onHeaderBlock = (chunk, position) => {
      this.header(chunk.subarray(position, position + 512));
      if (this.zeroBlocks === 2) this.afterEnd ??= chunk.subarray(position + 512);
    };
    parser.on('meta', (body: string) => this.naming(body));
    parser.on('entry', (entry: ReadEntry) => this.entry(entry));
    parser.on('ignoredEntry', (entry: ReadEntry) => {
      entry.resume();
      this.fail(`a member the tar library skips (${entry.type})`);
    });
    parser.on('error', (error: Error) => this.fail(libraryMessage(error)));
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    // Past the end-of-archive marker only zeros may follow (GNU tar pads to its record size);
    // anything else is more than a tar reader stopping there sees, and is never fed to the library,
    // which would hold it all in memory.
    if (this.zeroBlocks >= 2) {
      if (!allZero(chunk)) this.fail('data after the end-of-archive marker, which GNU tar does not read');
      return done(this.failure);
    }
    if (!this.started && chunk.length > 0) {
      this.started = true;
      // The library inflates a gzip stream it finds at the start of the tar; GNU tar does not.
      if (chunk[0] === 0x1f && chunk[1] === 0x8b) this.fail('a compressed stream inside the archive\'s own compression, which tar readers read differently');
      if (this.failure) return done(this.failure);
    }
    let flowing: boolean;
    try {
      flowing = this.parser.write(chunk);
    } catch (error) {
      // A header check, or a member's handler (a full disk): nothing more is read either way.
      if (!(error instanceof TarFormatError)) return done(error as Error);
      this.fail(error.message);
      flowing = true;
    }
    if (this.afterEnd && !allZero(this.afterEnd)) this.fail('data after the end-of-archive marker, which GNU tar does not read');
    this.afterEnd = undefined;
    if (this.failure) return done(this.failure);
    if (flowing) done();
    else this.parser.once('drain', () => done(this.failure));
  }

  override _final(done: (error?: Error | null) => void): void {
    if (this.failure) return done(this.failure);
    this.parser.once('end', () => {
      if (!this.failure && this.zeroBlocks === 0) this.fail('the archive has no end-of-archive marker (truncated)');
      done(this.failure);
    });
    try {
      this.parser.end();
    } catch (error) {
      done(error as Error);
    }
  }

  private fail(message: string): void {
    this.failure ??= new TarFormatError(message);
  }

  private header(block: Buffer): void {
    if (isZeroBlock(block)) {
      this.zeroBlocks++;
      return;
    }
    // GNU tar stops at the first zero block; the library reads on after a single one.
    if (this.zeroBlocks > 0) throw new TarFormatError('a member after the end-of-archive marker, which GNU tar never reads');
    const checked = checkHeaderBlock(block);
    if ('disagreement' in checked) throw new TarFormatError(`${checked.disagreement}: tar readers could extract something other than what is checked`);
    if (checked.flag === 'x' || checked.flag === 'g' || checked.flag === 'L' || checked.flag === 'K') {
      if (checked.size > MAX_NAMING_HEADER) throw new TarFormatError('an extended header over 1 MiB, which the tar library skips and GNU tar applies');
      // The library reports only the bodies of non-empty ones.
      if (checked.size > 0) this.namingKinds.push(checked.flag);
    } else {
      this.memberFlags.push(checked.flag);
    }
  }

  private naming(body: string): void {
    const kind = this.namingKinds.shift();
    const pending = this.pending;
    if (kind === 'x' || kind === 'g') {
      const records = readPaxBody(body, kind === 'g');
      if ('disagreement' in records) return this.fail(records.disagreement);
      if (kind === 'g') return;
      pending.extendedHeaders++;
      pending.pax = records;
    } else {
      const name = readLongName(body);
      if (typeof name !== 'string') return this.fail(name.disagreement);
      if ((kind === 'L' ? pending.longName : pending.longLink) !== undefined) return this.fail('two GNU long names for one member');
      if (kind === 'L') pending.longName = name;
      else pending.longLink = name;
    }
  }

  private entry(entry: ReadEntry): void {
    const flag = this.memberFlags.shift();
    const pending = this.pending;
    this.pending = { pax: {}, extendedHeaders: 0 };
    if (this.failure) return void entry.resume();
    const type = TYPES[entry.type];
    // Readers order pax names and GNU long names differently, and merge repeated headers differently.
    let disagreement: string | undefined;
    if (pending.extendedHeaders > 1) disagreement = 'two extended headers for one member';
    else if (pending.pax.path !== undefined && pending.longName !== undefined) disagreement = 'a member named by both a pax header and a GNU long name';
    else if (pending.pax.linkpath !== undefined && pending.longLink !== undefined) disagreement = 'a link target given by both a pax header and a GNU long name';
    else if (pending.pax.size !== undefined && type !== 'file') disagreement = 'an extended header giving a size to a member that holds no data';
    else if ((pending.pax.linkpath ?? pending.longLink) !== undefined && type !== 'symlink' && type !== 'hardlink') {
      disagreement = 'a link target given to a member that is not a link';
    } else if (flag !== undefined && flag !== '5' && type === 'directory') disagreement = 'a file header whose name ends with "/"';
    else if (type === undefined) disagreement = `a member of type ${entry.type}`;
    if (disagreement !== undefined || type === undefined) {
      entry.resume();
      return this.fail(`${disagreement ?? 'an unknown member'}: tar readers could extract something other than what is checked`);
    }
    const handler = this.onMember({ name: entry.path, type, size: entry.size, linkName: entry.linkpath ?? '', mode: entry.mode ?? 0 });
    if (handler?.data) entry.on('data', handler.data);
    else entry.resume();
    if (handler?.end) entry.on('end', handler.end);
  }
}

/** The library's strict-mode errors, in the words of an archive problem. */
function libraryMessage(error: Error): string {
  const message = error.message.replace(/^TAR_[A-Z_]+: /, '');
  if (/checksum/i.test(message)) return 'broken tar header (checksum mismatch)';
  if (/truncated/i.test(message)) return 'the archive ends inside a member (truncated)';
  if (/unrecognized archive format/i.test(message)) return 'not a tar archive (no member could be read)';
  return message;
}
