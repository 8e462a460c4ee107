import { type EventEmitter, once } from 'node:events';
import { writeSync } from 'node:fs';
import { type FileHandle, rename, rm, stat } from 'node:fs/promises';
import type { Migration } from '../api/types.js';
import { openOwnFile, readSideFile, replaceFile } from './exclusive-files.js';
import { existingFileError } from './destination.js';
import type { BackgroundHash } from './hasher.js';
import { fileError } from '../support/system-errors.js';
import { CliError, UnavailableError } from '../errors.js';

// Where a download's bytes go: a `.part` file beside the final name with its side file (resumable,
// renamed into place only once whole and verified), or a stream (`-o -`), which cannot take back.

/** How much is written between flushes to disk during a download. */
const FLUSH_STEP = 16 << 20;

/** Side file that lets a later run resume `<output>.part` only if it is the same archive. */
export interface PartMeta {
  migrationId: number;
  guid: string;
  /** The first answer's strong ETag, else its Last-Modified: sent as If-Range and compared on every 206. */
  validator?: string;
  /** The first answer's length: every 206 must announce the same. */
  total?: number;
}

export interface Sink {
  offset: number;
  meta: PartMeta | undefined;
  resumeFrom(hash: BackgroundHash | undefined): Promise<number>;
  restart(hash: BackgroundHash | undefined): Promise<void>;
  saveMeta(update: Pick<PartMeta, 'validator' | 'total'>): Promise<void>;
  /** Persists a chunk and adds to the hash exactly what was persisted; a promise means "wait before the next". */
  write(chunk: Buffer, hash: BackgroundHash | undefined): void | Promise<void>;
  finish(): Promise<string>;
  abandon(): Promise<void>;
}

/**
 * Writes only what reached the disk into the hash, so after any failure the hash and the `.part`
 * file agree and the download can continue from the file's length.
 */
export class FileSink implements Sink {
  offset = 0;
  meta: PartMeta | undefined;
  readonly partPath: string;
  private readonly metaPath: string;
  private handle: FileHandle | undefined;
  private readonly path: string;
  private readonly migration: Migration;
  /** Writing back to disk while the transfer goes on (see flushInBackground). */
  private flushing: Promise<void> | undefined;
  private flushedTo = 0;
  private flushFailure: NodeJS.ErrnoException | undefined;
  /** The `.part` file was opened: what is at its path is ours to remove, not something found there. */
  private opened = false;

  private constructor(path: string, migration: Migration) {
    this.path = path;
    this.migration = migration;
    this.partPath = `${path}.part`;
    this.metaPath = `${path}.part.json`;
  }

  /** What resumeFrom found of another migration's archive in the `.part` file, and started over from. */
  private replaced: { migrationId: number | undefined; bytes: number } | undefined;

  /** Another migration's bytes started over from: the run that left them may not have said what it left. */
  tellReplaced(notice: (message: string) => void): void {
    if (!this.replaced) return;
    const { migrationId, bytes } = this.replaced;
    const which = migrationId === undefined ? 'another migration\'s archive' : `migration ${migrationId}'s archive, not this one's`;
    const status = migrationId === undefined ? '`svc-migrate list` shows the migrations' : `\`svc-migrate status ${migrationId}\` shows that migration`;
    notice(`${this.partPath} held ${bytes} bytes of ${which}: starting over; ${status}, which may still hold locked repositories`);
  }

  static async open(path: string, force: boolean, migration: Migration): Promise<FileSink> {
    if (!force && (await stat(path).catch(() => undefined))) throw existingFileError(path);
    return new FileSink(path, migration);
  }

  async resumeFrom(hash: BackgroundHash | undefined): Promise<number> {
    const meta = await readPartMeta(this.metaPath);
    const part = await stat(this.partPath).catch(() => undefined);
    const usable =
      meta !== undefined &&
      meta.guid === this.migration.guid &&
      typeof meta.validator === 'string' &&
      typeof meta.total === 'number' &&
      part !== undefined &&
      part.size < meta.total;
    if (usable && part) {
      this.meta = meta;
      this.offset = part.size;
    } else {
      if (meta !== undefined && meta.guid !== this.migration.guid && part !== undefined && part.size > 0) {
        // The side file is on disk for anyone to write: only a plain id is repeated.
        this.replaced = { migrationId: Number.isSafeInteger(meta.migrationId) ? meta.migrationId : undefined, bytes: part.size };
      }
      this.meta = undefined;
      this.offset = 0;
    }
    this.handle = await writable(this.partPath, this.offset > 0 ? 'resume' : 'fresh');
    this.opened = true;
    this.flushedTo = this.offset;
    hash?.follow(this.partPath);
    if (this.offset > 0) hash?.advance(this.offset);
    return this.offset;
  }

  async restart(hash: BackgroundHash | undefined): Promise<void> {
    // The worker may still be reading what was written; let it finish before the bytes go.
    await hash?.reset();
    await this.handle?.truncate(0);
    this.offset = 0;
    this.flushedTo = 0;
  }

  async saveMeta(update: Pick<PartMeta, 'validator' | 'total'>): Promise<void> {
    this.meta = { migrationId: this.migration.id, guid: this.migration.guid, ...update };
    try {
      await replaceFile(this.metaPath, JSON.stringify(this.meta));
    } catch (error) {
      throw writeError(this.metaPath, error as NodeJS.ErrnoException);
    }
  }

  /**
   * Synchronous on purpose: a write to the page cache takes microseconds, and waiting for the thread
   * pool instead made downloads nearly twice as slow as curl (docs/benchmarks.md).
   */
  write(chunk: Buffer, hash: BackgroundHash | undefined): void {
    const handle = this.handle;
    if (!handle) throw new Error('sink not opened');
    if (this.flushFailure) throw writeError(this.partPath, this.flushFailure);
    let done = 0;
    while (done < chunk.length) {
      // A short write is legal: count exactly what reached the file, then write the rest.
      let written: number;
      try {
        written = writeSync(handle.fd, chunk, done, chunk.length - done, this.offset);
      } catch (error) {
        throw writeError(this.partPath, error as NodeJS.ErrnoException);
      }
      done += written;
      this.offset += written;
    }
    // The hashing worker reads back what reached the file (see hasher.ts).
    hash?.advance(this.offset);
    if (this.offset - this.flushedTo >= FLUSH_STEP && !this.flushing) this.flushInBackground(handle);
  }

  /**
   * The final fsync would otherwise find the whole archive still in memory (about 0.4 s per GiB
   * here, docs/benchmarks.md). A failure is kept for the next write or the end: Linux reports a
   * write-back error to a file descriptor only once, so the final fsync would not see it again.
   */
  private flushInBackground(handle: FileHandle): void {
    this.flushedTo = this.offset;
    this.flushing = handle.datasync().then(
      () => {
        this.flushing = undefined;
      },
      (error: NodeJS.ErrnoException) => {
        this.flushing = undefined;
        this.flushFailure ??= error;
      },
    );
  }

  async finish(): Promise<string> {
    const handle = this.handle;
    if (!handle) throw new Error('sink not opened');
    await this.flushing;
    if (this.flushFailure) throw writeError(this.partPath, this.flushFailure);
    await handle.truncate(this.offset);
    await handle.sync();
    await handle.close();
    this.handle = undefined;
    await rename(this.partPath, this.path);
    await rm(this.metaPath, { force: true });
    return this.path;
  }

  async forgetResume(): Promise<void> {
    await rm(this.metaPath, { force: true });
  }

  async abandon(): Promise<void> {
    await this.handle?.close().catch(() => undefined);
    this.handle = undefined;
    // An empty part holds nothing worth resuming. One never opened is what was found at its path
    // (a directory, say): the error that refused it is the one to report, and it stays as it was.
    if (this.opened && this.offset === 0) {
      await rm(this.partPath, { force: true });
      await rm(this.metaPath, { force: true });
    }
  }
}

export class StreamSink implements Sink {
  offset = 0;
  meta: PartMeta | undefined;
  private readonly stream: NodeJS.WritableStream;

  constructor(stream: NodeJS.WritableStream) {
    this.stream = stream;
  }

  async resumeFrom(): Promise<number> {
    return 0;
  }

  async restart(hash: BackgroundHash | undefined): Promise<void> {
    if (this.offset > 0) {
      throw new UnavailableError('storage restarted the archive from the beginning, which a stream cannot take back', {
        hint: 'download to a file instead of -o -',
      });
    }
    await hash?.reset();
  }

  async saveMeta(update: Pick<PartMeta, 'validator' | 'total'>): Promise<void> {
    this.meta = { migrationId: 0, guid: '', ...update };
  }

  async write(chunk: Buffer, hash: BackgroundHash | undefined): Promise<void> {
    this.offset += chunk.length;
    if (!this.stream.write(chunk)) await once(this.stream as unknown as EventEmitter, 'drain');
    await hash?.update(chunk);
  }

  async finish(): Promise<string> {
    return '-';
  }

  async abandon(): Promise<void> {}
}

async function writable(path: string, mode: 'fresh' | 'resume'): Promise<FileHandle> {
  try {
    return await openOwnFile(path, mode);
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw writeError(path, error as NodeJS.ErrnoException);
  }
}

export function writeError(path: string, error: NodeJS.ErrnoException): CliError {
  return fileError(error, { action: 'write', path, after: 'what was downloaded so far is kept for resuming' });
}

/**
 * What a download's side file (`<file>.part.json`) says of its `.part`, read as anyone's text
 * (readSideFile): the download, the single export's resume and the org export's adoption read it
 * here alone. The fields are checked where they are used.
 */
export async function readPartMeta(path: string): Promise<PartMeta | undefined> {
  const text = await readSideFile(path);
  try {
    const value: unknown = text === undefined ? undefined : JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as PartMeta) : undefined;
  } catch {
    return undefined;
  }
}
