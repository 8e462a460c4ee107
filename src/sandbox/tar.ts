import type { Writable } from 'node:stream';
import { Header, Pax } from 'tar';

// The sandbox's archives, written with the header encoder of npm's `tar` (pinned: a writer that is
// not the check's own reader, so the check is tested on archives it did not make): ustar headers,
// and a pax header before any name that does not fit one.

const BLOCK = 512;

type MemberType = 'File' | 'Directory' | 'SymbolicLink';

function headerBlocks(path: string, size: number, type: MemberType, mtime: Date, linkpath = ''): Buffer {
  const fields = { path, size, type, mtime, linkpath, mode: type === 'Directory' ? 0o755 : 0o644, uid: 0, gid: 0, uname: 'root', gname: 'root' };
  const header = new Header(fields);
  const block = Buffer.alloc(BLOCK);
  header.encode(block);
  if (!header.needPax) return block;
  const pax = new Pax({ path, mtime, ...(linkpath ? { linkpath } : {}) }).encode();
  return Buffer.concat([pax, block]);
}

/** Writes tar entries to a stream, waiting for it to drain so large entries stay off the heap. */
export class TarWriter {
  private readonly out: Writable;
  private readonly mtime: Date;

  constructor(out: Writable, mtime: number) {
    this.out = out;
    this.mtime = new Date(Math.floor(mtime / 1000) * 1000);
  }

  async directory(name: string): Promise<void> {
    await this.write(headerBlocks(name.endsWith('/') ? name : `${name}/`, 0, 'Directory', this.mtime));
  }

  /** A symbolic link (tests of the archive check write hostile ones). */
  async symlink(name: string, target: string): Promise<void> {
    await this.write(headerBlocks(name, 0, 'SymbolicLink', this.mtime, target));
  }

  async file(name: string, data: Buffer | string): Promise<void> {
    const body = typeof data === 'string' ? Buffer.from(data) : data;
    await this.write(headerBlocks(name, body.length, 'File', this.mtime));
    await this.write(body);
    await this.pad(body.length);
  }

  /** The header of a file of `size` bytes whose content the caller writes (or makes) itself. */
  async fileHeader(name: string, size: number): Promise<void> {
    await this.write(headerBlocks(name, size, 'File', this.mtime));
  }

  /** A file of `size` bytes made by repeating `block` (for padding archives to a size). */
  async repeated(name: string, size: number, block: Buffer): Promise<void> {
    await this.fileHeader(name, size);
    let left = size;
    while (left > 0) {
      const chunk = left >= block.length ? block : block.subarray(0, left);
      await this.write(chunk);
      left -= chunk.length;
    }
    await this.pad(size);
  }

  async end(): Promise<void> {
    await this.write(Buffer.alloc(BLOCK * 2));
  }

  /** The zeros that round a file of `size` bytes up to whole blocks. */
  async pad(size: number): Promise<void> {
    const rest = size % BLOCK;
    if (rest) await this.write(Buffer.alloc(BLOCK - rest));
  }

  private write(chunk: Buffer): Promise<void> {
    if (this.out.write(chunk)) return Promise.resolve();
    return new Promise((resolve) => this.out.once('drain', resolve));
  }
}
