import type { Writable } from 'node:stream';

// A minimal ustar writer: the sandbox only ever writes archives, so this is all it needs.

const BLOCK = 512;

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function tarHeader(name: string, size: number, type: 'file' | 'directory' | 'symlink', mtime: number, link = ''): Buffer {
  const header = Buffer.alloc(BLOCK);
  let path = name;
  let prefix = '';
  if (Buffer.byteLength(path) > 100) {
    const cut = path.lastIndexOf('/', 154);
    prefix = path.slice(0, cut);
    path = path.slice(cut + 1);
  }
  header.write(path, 0, 100, 'utf8');
  header.write(octal(type === 'directory' ? 0o755 : 0o644, 8), 100, 'ascii');
  header.write(octal(0, 8), 108, 'ascii');
  header.write(octal(0, 8), 116, 'ascii');
  header.write(octal(size, 12), 124, 'ascii');
  header.write(octal(Math.floor(mtime / 1000), 12), 136, 'ascii');
  header.write('        ', 148, 'ascii');
  header.write(type === 'directory' ? '5' : type === 'symlink' ? '2' : '0', 156, 'ascii');
  header.write(link, 157, 100, 'utf8');
  header.write('ustar\0', 257, 'ascii');
  header.write('00', 263, 'ascii');
  header.write('root', 265, 'ascii');
  header.write('root', 297, 'ascii');
  header.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(octal(sum, 7), 148, 'ascii');
  return header;
}

/** Writes tar entries to a stream, waiting for it to drain so large entries stay off the heap. */
export class TarWriter {
  private readonly out: Writable;
  private readonly mtime: number;

  constructor(out: Writable, mtime: number) {
    this.out = out;
    this.mtime = mtime;
  }

  async directory(name: string): Promise<void> {
    await this.write(tarHeader(name.endsWith('/') ? name : `${name}/`, 0, 'directory', this.mtime));
  }

  /** A symbolic link (tests of the archive check write hostile ones). */
  async symlink(name: string, target: string): Promise<void> {
    await this.write(tarHeader(name, 0, 'symlink', this.mtime, target));
  }

  async file(name: string, data: Buffer | string): Promise<void> {
    const body = typeof data === 'string' ? Buffer.from(data) : data;
    await this.write(tarHeader(name, body.length, 'file', this.mtime));
    await this.write(body);
    await this.pad(body.length);
  }

  /** A file of `size` bytes made by repeating `block` (for padding archives to a size). */
  async repeated(name: string, size: number, block: Buffer): Promise<void> {
    await this.write(tarHeader(name, size, 'file', this.mtime));
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

  private async pad(size: number): Promise<void> {
    const rest = size % BLOCK;
    if (rest) await this.write(Buffer.alloc(BLOCK - rest));
  }

  private write(chunk: Buffer): Promise<void> {
    if (this.out.write(chunk)) return Promise.resolve();
    return new Promise((resolve) => this.out.once('drain', resolve));
  }
}
