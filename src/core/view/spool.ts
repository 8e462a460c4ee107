import { appendFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

// What a page is written from at the end (an issue's comments, events, reviews; a repository's
// releases) is appended as it streams to a JSONL file on disk, so memory holds only what waits to
// be appended: past FLUSH_BYTES, every file is appended to at once. A file holds the lines of
// GROUP consecutive pages, each line tagged with its page: one file per page made 12,000 files for
// the 10,000-issue archive, and creating and appending to them took most of the run (4 of 5 s);
// a page's group is read back whole, one group at a time, so memory holds GROUP pages' lines.

const FLUSH_BYTES = 4 << 20;
const GROUP = 64;

/** What one page may hold of the spool: its record and 2 MiB of comments, events and reviews. */
const PAGE_BYTES = 2 << 20;

export class Spool {
  private readonly dir: string;
  private pending = new Map<number, string[]>();
  private pendingBytes = 0;
  private next = 0;
  /** The group read last, by page. */
  private loaded: { group: number; pages: Map<number, unknown[]> } | undefined;

  constructor(dir: string) {
    this.dir = dir;
  }

  /** A new page's number: files are named by number, never by anything of the archive's. */
  open(): number {
    return this.next++;
  }

  /** Bytes appended for each page, and the values left out of one past PAGE_BYTES. */
  private readonly pageBytes = new Map<number, number>();
  private readonly cut = new Map<number, number>();

  /** The values of a page left out past its bound (0 for most). */
  leftOut(page: number): number {
    return this.cut.get(page) ?? 0;
  }

  /** Pages that had values left out. */
  get pagesCut(): number {
    return this.cut.size;
  }

  async append(page: number, value: unknown): Promise<void> {
    const line = `${JSON.stringify([page, value])}\n`;
    // One page's lines are read back, and its HTML made, whole: an issue of 200,000 comments in an
    // archive of 2 MB took 4 GB. Past the bound its values are counted, not kept.
    const bytes = (this.pageBytes.get(page) ?? 0) + line.length;
    if (bytes > PAGE_BYTES) {
      this.cut.set(page, (this.cut.get(page) ?? 0) + 1);
      return;
    }
    this.pageBytes.set(page, bytes);
    const group = Math.floor(page / GROUP);
    const lines = this.pending.get(group);
    if (lines) lines.push(line);
    else this.pending.set(group, [line]);
    this.pendingBytes += line.length;
    if (this.pendingBytes > FLUSH_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    const pending = this.pending;
    this.pending = new Map();
    this.pendingBytes = 0;
    // One file after another, synchronously: small appends through the thread pool took twice as
    // long (three round trips each), and nothing else runs meanwhile.
    for (const [group, lines] of pending) appendFileSync(this.path(group), lines.join(''));
  }

  /** Every value appended for the page, in order (none when nothing was). Read pages in order of number: a group is read once. */
  async read<T>(page: number): Promise<T[]> {
    const group = Math.floor(page / GROUP);
    if (this.loaded?.group !== group) {
      const text = await readFile(this.path(group), 'utf8').catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return '';
        throw error;
      });
      const pages = new Map<number, unknown[]>();
      for (const line of text.split('\n')) {
        if (line === '') continue;
        const [at, value] = JSON.parse(line) as [number, unknown];
        const values = pages.get(at);
        if (values) values.push(value);
        else pages.set(at, [value]);
      }
      this.loaded = { group, pages };
    }
    return (this.loaded.pages.get(page) ?? []) as T[];
  }

  private path(group: number): string {
    return join(this.dir, `${group}.jsonl`);
  }
}
