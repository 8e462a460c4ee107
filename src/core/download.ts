import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ApiClient, DownloadResponse } from '../api/client.js';
import { header } from '../api/headers.js';
import { getArchiveUrl, getMigration } from '../api/migrations.js';
import type { Migration } from '../api/types.js';
import type { Clock } from '../clock.js';
import { CliError, ExitCode, InterruptedError, MigrationFailedError, UnavailableError, UsageError } from '../errors.js';

export const ARCHIVE_RETENTION_MS = 7 * 24 * 3_600_000;
const WARN_BEFORE_DELETION_MS = 24 * 3_600_000;

export interface DownloadProgress {
  received: number;
  total: number | undefined;
  /** Bytes that were already on disk when this run started. */
  resumedFrom: number;
}

export interface DownloadOptions {
  org: string;
  id: number;
  /** A file path, or a stream (stdout) for `-o -`. */
  target: { path: string; force: boolean } | { stream: NodeJS.WritableStream };
  checksum: boolean;
  /** Mid-stream failures survived before giving up. */
  maxResumes?: number;
  clock: Clock;
  onProgress?(progress: DownloadProgress): void;
  onNotice?(message: string): void;
}

export interface DownloadResult {
  migrationId: number;
  path: string;
  bytes: number;
  sha256?: string;
  /** How many times a cut stream was picked up again. */
  resumes: number;
}

/** Side file that lets a later run resume `<output>.part` only if it is the same archive. */
interface PartMeta {
  migrationId: number;
  guid: string;
  etag?: string;
  total?: number;
}

/** The check before a download: the migration must be exported, and its archive not about to go. */
export async function checkDownloadable(
  client: ApiClient,
  org: string,
  id: number,
  now: number,
): Promise<{
  migration: Migration;
  warning?: string;
}> {
  const { data: migration } = await getMigration(client, org, id, { excludeRepositories: true });
  if (migration.state === 'failed') {
    throw new MigrationFailedError(`migration ${id} failed; it has no archive`, {
      hint: 'start a new export with `svc-migrate start`',
    });
  }
  if (migration.state !== 'exported') {
    throw new CliError(`migration ${id} is ${migration.state}, not exported yet`, ExitCode.Usage, {
      hint: `wait for it with \`svc-migrate status ${id} --wait\`, or add --wait to download`,
    });
  }
  const deletesAt = Date.parse(migration.updated_at) + ARCHIVE_RETENTION_MS;
  const left = deletesAt - now;
  const warning =
    left < WARN_BEFORE_DELETION_MS
      ? `the archive of migration ${id} is deleted automatically at ${new Date(deletesAt).toISOString()} (${Math.max(0, Math.round(left / 3_600_000))} h left)`
      : undefined;
  return { migration, ...(warning ? { warning } : {}) };
}

/**
 * Streams a migration archive to disk (or a stream) resumably: `<output>.part` plus a side file,
 * Range/If-Range to continue, a fresh signed URL when storage says it expired, byte count and
 * sha256 checked, fsync, then an atomic rename. A failure never leaves a file under the final name.
 */
export async function downloadArchive(client: ApiClient, options: DownloadOptions): Promise<DownloadResult> {
  const { org, id, clock } = options;
  const { migration, warning } = await checkDownloadable(client, org, id, clock.now());
  if (warning) options.onNotice?.(warning);

  const sink =
    'path' in options.target
      ? await FileSink.open(options.target.path, options.target.force, migration)
      : new StreamSink(options.target.stream);
  const hash = options.checksum ? createHash('sha256') : undefined;
  try {
    const resumedFrom = await sink.resumeFrom(hash);
    const maxResumes = options.maxResumes ?? 5;
    let url = await getArchiveUrl(client, org, id);
    let resumes = 0;
    let refreshes = 0;
    let total: number | undefined = sink.meta?.total;
    let hashing = hash;

    for (;;) {
      const headers: Record<string, string> = {};
      if (sink.offset > 0 && sink.meta?.etag) {
        headers.range = `bytes=${sink.offset}-`;
        headers['if-range'] = sink.meta.etag;
      }
      let response: DownloadResponse;
      try {
        response = await client.openDownload(url, headers);
      } catch (error) {
        if (!(error instanceof UnavailableError) || resumes >= maxResumes) throw error;
        resumes++;
        await clock.sleep(backoffMs(resumes));
        continue;
      }

      if (response.status === 403 || response.status === 404 || response.status === 410) {
        response.body.destroy();
        // spec §4.4: storage URLs expire; the API hands out a fresh one.
        if (refreshes >= 3) {
          throw new UnavailableError(`archive storage keeps refusing the download (HTTP ${response.status})`, {
            hint: `check the migration with \`svc-migrate status ${id}\`; the archive may have expired`,
          });
        }
        refreshes++;
        options.onNotice?.(`archive URL refused (HTTP ${response.status}); asking the service for a fresh one`);
        url = await getArchiveUrl(client, org, id);
        continue;
      }
      if (response.status === 416) {
        response.body.destroy();
        hashing = await sink.restart(hash);
        continue;
      }
      if (response.status !== 200 && response.status !== 206) {
        response.body.destroy();
        throw new UnavailableError(`archive storage answered HTTP ${response.status}`, { hint: 'try again later' });
      }

      const etag = header(response.headers, 'etag');
      if (response.status === 206) {
        const range = parseContentRange(header(response.headers, 'content-range'));
        if (!range || range.start !== sink.offset) {
          // Not the bytes we asked for: trust nothing and start over.
          response.body.destroy();
          hashing = await sink.restart(hash);
          continue;
        }
        total = range.total;
      } else {
        if (sink.offset > 0) hashing = await sink.restart(hash);
        const length = header(response.headers, 'content-length');
        total = length === undefined ? undefined : Number(length);
      }
      const rangesSupported = header(response.headers, 'accept-ranges') === 'bytes';
      await sink.saveMeta({ etag: rangesSupported ? etag : undefined, total });

      try {
        await pipeline(
          response.body,
          sink.writer(hashing, (received) => options.onProgress?.({ received, total, resumedFrom })),
        );
      } catch (error) {
        if (client.aborted) throw new InterruptedError('download interrupted', { hint: resumeHint(sink, id) });
        if (error instanceof CliError) throw error;
        if (resumes >= maxResumes) {
          throw new UnavailableError(
            `the archive download was cut ${resumes + 1} times; giving up at ${sink.offset} bytes`,
            {
              hint: resumeHint(sink, id),
            },
          );
        }
        resumes++;
        options.onNotice?.(
          `download cut at ${sink.offset} bytes (${(error as Error).message}); ${rangesSupported ? 'resuming' : 'restarting: storage does not support ranges'}`,
        );
        if (!rangesSupported || !etag) hashing = await sink.restart(hash);
        await clock.sleep(backoffMs(resumes));
        continue;
      }
      if (total !== undefined && sink.offset !== total) {
        if (resumes >= maxResumes) {
          throw new UnavailableError(`the archive ended at ${sink.offset} of ${total} bytes`, {
            hint: resumeHint(sink, id),
          });
        }
        resumes++;
        options.onNotice?.(`the archive ended early at ${sink.offset} of ${total} bytes; resuming`);
        continue;
      }
      break;
    }
    const path = await sink.finish();
    return {
      migrationId: id,
      path,
      bytes: sink.offset,
      ...(hashing ? { sha256: hashing.digest('hex') } : {}),
      resumes,
    };
  } catch (error) {
    await sink.abandon();
    throw error;
  }
}

function backoffMs(attempt: number): number {
  return Math.min(8_000, 250 * 2 ** attempt);
}

function resumeHint(sink: Sink, id: number): string {
  return sink instanceof FileSink
    ? `${sink.offset} bytes are kept in ${sink.partPath}; run \`svc-migrate download ${id}\` again with the same output to resume`
    : `run \`svc-migrate download ${id}\` again`;
}

export function parseContentRange(
  value: string | undefined,
): { start: number; end: number; total: number } | undefined {
  const match = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(value?.trim() ?? '');
  if (!match) return undefined;
  return { start: Number(match[1]), end: Number(match[2]), total: Number(match[3]) };
}

interface Sink {
  offset: number;
  meta: PartMeta | undefined;
  resumeFrom(hash: Hash | undefined): Promise<number>;
  restart(hash: Hash | undefined): Promise<Hash | undefined>;
  saveMeta(update: Pick<PartMeta, 'etag' | 'total'>): Promise<void>;
  writer(hash: Hash | undefined, onWritten: (received: number) => void): Writable;
  finish(): Promise<string>;
  abandon(): Promise<void>;
}

/**
 * Writes only what reached the disk into the hash, so after any failure the hash and the `.part`
 * file agree and the download can continue from the file's length.
 */
class FileSink implements Sink {
  offset = 0;
  meta: PartMeta | undefined;
  readonly partPath: string;
  private readonly metaPath: string;
  private handle: FileHandle | undefined;
  private readonly path: string;
  private readonly migration: Migration;

  private constructor(path: string, migration: Migration) {
    this.path = path;
    this.migration = migration;
    this.partPath = `${path}.part`;
    this.metaPath = `${path}.part.json`;
  }

  static async open(path: string, force: boolean, migration: Migration): Promise<FileSink> {
    if (!force && (await stat(path).catch(() => undefined))) {
      throw new UsageError(`${path} already exists`, {
        hint: 'pass --force to overwrite it, or choose another --output',
      });
    }
    return new FileSink(path, migration);
  }

  async resumeFrom(hash: Hash | undefined): Promise<number> {
    const meta = await readMeta(this.metaPath);
    const part = await stat(this.partPath).catch(() => undefined);
    if (meta && part && meta.guid === this.migration.guid && meta.etag) {
      this.meta = meta;
      this.offset = part.size;
      if (hash && part.size > 0)
        await pipeline(
          createReadStream(this.partPath),
          new Writable({
            write(chunk: Buffer, _encoding, done) {
              hash.update(chunk);
              done();
            },
          }),
        );
    } else {
      this.meta = undefined;
      this.offset = 0;
    }
    this.handle = await writable(this.partPath, this.offset > 0 ? 'r+' : 'w');
    return this.offset;
  }

  async restart(hash: Hash | undefined): Promise<Hash | undefined> {
    await this.handle?.truncate(0);
    this.offset = 0;
    return hash ? createHash('sha256') : undefined;
  }

  async saveMeta(update: Pick<PartMeta, 'etag' | 'total'>): Promise<void> {
    this.meta = { migrationId: this.migration.id, guid: this.migration.guid, ...update };
    await writeFile(this.metaPath, JSON.stringify(this.meta));
  }

  writer(hash: Hash | undefined, onWritten: (received: number) => void): Writable {
    const handle = this.handle;
    if (!handle) throw new Error('sink not opened');
    const sink = this;
    return new Writable({
      highWaterMark: 1 << 20,
      writev(chunks, done) {
        const buffers = chunks.map((c) => c.chunk as Buffer);
        handle.writev(buffers, sink.offset).then(
          ({ bytesWritten }) => {
            let left = bytesWritten;
            for (const buffer of buffers) {
              const used = Math.min(left, buffer.length);
              hash?.update(used === buffer.length ? buffer : buffer.subarray(0, used));
              left -= used;
            }
            sink.offset += bytesWritten;
            onWritten(sink.offset);
            done();
          },
          (error: NodeJS.ErrnoException) => done(writeError(sink.partPath, error)),
        );
      },
    });
  }

  async finish(): Promise<string> {
    const handle = this.handle;
    if (!handle) throw new Error('sink not opened');
    await handle.truncate(this.offset);
    await handle.sync();
    await handle.close();
    this.handle = undefined;
    await rename(this.partPath, this.path);
    await rm(this.metaPath, { force: true });
    return this.path;
  }

  async abandon(): Promise<void> {
    await this.handle?.close().catch(() => undefined);
    this.handle = undefined;
    // An empty part holds nothing worth resuming.
    if (this.offset === 0) {
      await rm(this.partPath, { force: true });
      await rm(this.metaPath, { force: true });
    }
  }
}

class StreamSink implements Sink {
  offset = 0;
  meta: PartMeta | undefined;
  private readonly stream: NodeJS.WritableStream;

  constructor(stream: NodeJS.WritableStream) {
    this.stream = stream;
  }

  async resumeFrom(): Promise<number> {
    return 0;
  }

  async restart(hash: Hash | undefined): Promise<Hash | undefined> {
    if (this.offset > 0) {
      throw new UnavailableError('storage restarted the archive from the beginning, which a stream cannot take back', {
        hint: 'download to a file instead of -o -',
      });
    }
    return hash;
  }

  async saveMeta(update: Pick<PartMeta, 'etag' | 'total'>): Promise<void> {
    this.meta = { migrationId: 0, guid: '', ...update };
  }

  writer(hash: Hash | undefined, onWritten: (received: number) => void): Writable {
    const sink = this;
    const out = this.stream;
    return new Writable({
      write(chunk: Buffer, _encoding, done) {
        hash?.update(chunk);
        sink.offset += chunk.length;
        onWritten(sink.offset);
        if (out.write(chunk)) done();
        else out.once('drain', () => done());
      },
    });
  }

  async finish(): Promise<string> {
    return '-';
  }

  async abandon(): Promise<void> {}
}

async function writable(path: string, flags: 'w' | 'r+'): Promise<FileHandle> {
  try {
    return await open(path, flags, 0o644);
  } catch (error) {
    throw writeError(path, error as NodeJS.ErrnoException);
  }
}

function writeError(path: string, error: NodeJS.ErrnoException): CliError {
  const reason =
    error.code === 'ENOSPC'
      ? 'the disk is full'
      : error.code === 'EACCES' || error.code === 'EPERM'
        ? 'permission denied'
        : error.code === 'ENOENT'
          ? 'the directory does not exist'
          : error.message;
  return new CliError(`cannot write ${path}: ${reason}`, ExitCode.Unexpected, {
    hint: 'free some space or choose another --output; what was downloaded so far is kept for resuming',
    cause: error,
  });
}

async function readMeta(path: string): Promise<PartMeta | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as PartMeta;
  } catch {
    return undefined;
  }
}
