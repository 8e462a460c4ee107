import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';

// What a page is written from at the end (an issue's comments, events, reviews; a repository's
// releases) is appended as it streams to a JSONL file of its own, one per page, so memory holds only
// what waits to be appended: past FLUSH_BYTES, every file is appended to at once.

const FLUSH_BYTES = 4 << 20;

export class Spool {
  private readonly dir: string;
  private pending = new Map<number, string[]>();
  private pendingBytes = 0;
  private next = 0;

  constructor(dir: string) {
    this.dir = dir;
  }

  /** A new file's number: files are named by number, never by anything of the archive's. */
  open(): number {
    return this.next++;
  }

  async append(file: number, value: unknown): Promise<void> {
    const line = `${JSON.stringify(value)}\n`;
    const lines = this.pending.get(file);
    if (lines) lines.push(line);
    else this.pending.set(file, [line]);
    this.pendingBytes += line.length;
    if (this.pendingBytes > FLUSH_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    const pending = this.pending;
    this.pending = new Map();
    this.pendingBytes = 0;
    for (const [file, lines] of pending) await appendFile(this.path(file), lines.join(''));
  }

  /** Every value appended to the file, in order (none when nothing was). */
  async read<T>(file: number): Promise<T[]> {
    const text = await readFile(this.path(file), 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return '';
      throw error;
    });
    return text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as T);
  }

  private path(file: number): string {
    return join(this.dir, `${file}.jsonl`);
  }
}
