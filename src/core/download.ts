import { basename } from 'node:path';
import type { DownloadResponse } from '../api/archive-download.js';
import type { ApiClient } from '../api/client.js';
import { ResponseBody } from '../api/response-body.js';
import { header } from '../api/headers.js';
import { getArchiveUrl, getMigration } from '../api/migrations.js';
import { ARCHIVE_RETENTION_MS, type Migration } from '../api/types.js';
import type { Clock } from '../support/clock.js';
import { shellWord } from '../support/shell-word.js';
import { expectedContent } from './archive/expected.js';
import { ArchiveVerificationError, verifyArchive, type VerifyOptions } from './archive/verify.js';
import { replaceFile } from './exclusive-files.js';
import { FileSink, type Sink, StreamSink, writeError } from './download-sinks.js';
import { announcedTooLarge, freeSpaceFor, NoRoomError, roomWithoutLength, unannouncedTooLarge } from './free-space.js';
import { startBackgroundHash } from './hasher.js';
import { CliError, ExitCode, InterruptedError, MigrationFailedError, UnavailableError } from '../errors.js';

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
  /**
   * Check the archive before it takes its final name (archive verify); a failure keeps the bytes in
   * the `.part` file and throws ArchiveVerificationError (exit 9). Ignored for a stream (`-o -`).
   */
  verify?: boolean | Pick<VerifyOptions, 'onProgress' | 'onGitProgress' | 'signal'>;
  /** Largest archive accepted from storage that announces no length (default DEFAULT_MAX_SIZE; less if the disk has less room). */
  maxSize?: number;
  /** Mid-stream failures survived before giving up. */
  maxResumes?: number;
  clock: Clock;
  /** The command that resumes this download, its flags included, for the hint after a stop. */
  resumeCommand?: (id: number) => string;
  /** A request to storage is on its way and no byte has come yet (storage may take a while to start). */
  onWaiting?: () => void;
  onProgress?: (progress: DownloadProgress) => void;
  onNotice?: (message: string) => void;
}

export interface DownloadResult {
  migrationId: number;
  path: string;
  bytes: number;
  sha256?: string;
  /** How many times a cut stream was picked up again. */
  resumes: number;
  /** The archive passed `archive verify` before it took its final name. */
  verified: boolean;
  /** The check included every git object (git was on PATH, or the archive holds no git data). */
  gitObjectsChecked: boolean;
  /** `<archive>.sha256` (sha256sum format), written beside the archive with the checksum on. */
  sha256File?: string;
}

/** A length-less archive body is cut off here unless `--max-size` says otherwise. */
const DEFAULT_MAX_SIZE = 100 * 1024 ** 3;

class ArchiveTooLargeError extends UnavailableError {
  constructor(maxSize: number) {
    super(`archive storage sent more than ${maxSize} bytes without announcing a length; nothing was kept`, {
      hint: 'if the archive really is that large, raise --max-size (bytes, or with a K/M/G/T suffix)',
    });
  }
}

/** What identifies the bytes storage serves: a strong ETag (If-Range takes no weak one), else Last-Modified. */
function validatorOf(headers: DownloadResponse<unknown>['headers']): string | undefined {
  const etag = header(headers, 'etag')?.trim();
  if (etag && !etag.startsWith('W/')) return etag;
  return header(headers, 'last-modified')?.trim() || undefined;
}

function parseLength(value: string | undefined): number | undefined {
  return value !== undefined && /^\d+$/.test(value.trim()) ? Number(value) : undefined;
}

/**
 * Why a 206 does not continue the bytes we hold, or undefined when it does: the same file (same
 * validator), starting at our offset, running to the end of the same total. Storage that ignores
 * If-Range and answers from another file is caught here, before a byte of it is written.
 */
function resumeProblem(
  contentRange: string | undefined,
  length: number | undefined,
  validator: string | undefined,
  sink: Sink,
): string | undefined {
  const meta = sink.meta;
  if (sink.offset === 0 || !meta?.validator || meta.total === undefined) {
    return 'storage answered 206 (partial content) to a request for the whole archive';
  }
  const range = parseContentRange(contentRange);
  if (!range) return `storage answered 206 with an unusable Content-Range (${JSON.stringify(contentRange ?? '')})`;
  if (validator !== meta.validator) {
    return `the archive on storage changed while resuming (was ${JSON.stringify(meta.validator)}, now ${JSON.stringify(validator ?? null)})`;
  }
  if (range.total !== meta.total) return `the archive's size changed from ${meta.total} to ${range.total} bytes`;
  if (range.start !== sink.offset) return `storage resumed at byte ${range.start}, not at ${sink.offset} as asked`;
  if (range.end !== range.total - 1 || range.end < range.start) {
    return `storage answered the range ${range.start}-${range.end} of ${range.total}, not the rest of the archive`;
  }
  if (length !== undefined && length !== range.end - range.start + 1) {
    return `storage announced ${length} bytes for a range of ${range.end - range.start + 1}`;
  }
  return undefined;
}

/** The check before a download: the migration must be exported, and its archive not about to go. */
async function checkDownloadable(
  client: ApiClient,
  org: string,
  id: number,
  now: number,
): Promise<{ migration: Migration; warning?: string }> {
  const { data: migration, headers } = await getMigration(client, org, id, { excludeRepositories: true });
  // Judge the seven days by the service's clock (its Date header) where it gives one: ours may be skewed.
  const serverNow = Date.parse(header(headers, 'date') ?? '');
  if (!Number.isNaN(serverNow)) now = serverNow;
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
  // Both questions at once: one round trip less before the first byte. The check's answer wins.
  const archiveUrl = getArchiveUrl(client, org, id);
  archiveUrl.catch(() => {});
  const { migration, warning } = await checkDownloadable(client, org, id, clock.now());
  if (warning) options.onNotice?.(warning);
  const sink =
    'path' in options.target
      ? await FileSink.open(options.target.path, options.target.force, migration)
      : new StreamSink(options.target.stream);
  const hash = options.checksum ? startBackgroundHash() : undefined;
  try {
    const resumedFrom = await sink.resumeFrom(hash);
    if (sink instanceof FileSink && options.onNotice) sink.tellReplaced(options.onNotice);
    const maxResumes = options.maxResumes ?? 5;
    const maxSize = options.maxSize ?? DEFAULT_MAX_SIZE;
    let url = await archiveUrl;
    let resumes = 0;
    let strikes = 0;
    let refreshes = 0;
    let startedOver = false;
    let total: number | undefined = sink.meta?.total;

    /**
     * Storage answered something that does not continue the bytes we hold: they are dropped and the
     * archive fetched from zero, once. A second time, storage cannot be trusted and nothing is kept.
     */
    const startOver = async (reason: string): Promise<void> => {
      const held = sink.offset;
      await sink.restart(hash);
      total = undefined;
      if (startedOver) {
        throw new UnavailableError(`${reason}; already started over once, giving up`, {
          hint: 'archive storage is answering inconsistently; try again later, and report it to the service if it persists',
        });
      }
      startedOver = true;
      options.onNotice?.(`${reason}; discarding the ${held} bytes received and starting over from zero`);
    };

    for (;;) {
      const headers: Record<string, string> = {};
      const resuming = sink.offset > 0;
      if (resuming && sink.meta?.validator) {
        headers.range = `bytes=${sink.offset}-`;
        headers['if-range'] = sink.meta.validator;
      }
      let response: DownloadResponse<ResponseBody>;
      try {
        options.onWaiting?.();
        response = await client.openDownload(url, headers, () => new ResponseBody());
      } catch (error) {
        // Storage can take long before its first byte: a Ctrl-C then still says how to go on.
        const waited = error instanceof InterruptedError || client.aborted;
        if (waited) throw new InterruptedError('download interrupted while waiting for storage', { hint: resumeHint(sink, id, options) });
        if (!(error instanceof UnavailableError) || strikes >= maxResumes) throw error;
        strikes++;
        await clock.sleep(backoffMs(strikes));
        continue;
      }
      const incoming = response.body;

      if (response.status === 403 || response.status === 404 || response.status === 410) {
        incoming.discard();
        // docs/service.md#download-archive: storage URLs expire; the API hands out a fresh one.
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
      if (response.status === 416 && resuming) {
        incoming.discard();
        await startOver(`storage refused to continue at byte ${sink.offset} (HTTP 416)`);
        continue;
      }
      if (response.status !== 200 && response.status !== 206) {
        incoming.discard();
        throw new UnavailableError(`archive storage answered HTTP ${response.status}`, { hint: 'try again later' });
      }

      const validator = validatorOf(response.headers);
      const length = parseLength(header(response.headers, 'content-length'));
      if (response.status === 206) {
        const problem = resumeProblem(header(response.headers, 'content-range'), length, validator, sink);
        if (problem) {
          incoming.discard();
          await startOver(problem);
          continue;
        }
        total = sink.meta?.total;
      } else {
        // A whole archive where the rest was asked for: If-Range found it changed, or Range was ignored.
        if (resuming) await startOver('storage sent the whole archive again instead of the rest');
        total = length;
      }
      // Room for what is still to come, checked before a byte of it is written (none for a stream).
      const space = sink instanceof FileSink ? await freeSpaceFor(sink.partPath) : undefined;
      const noRoom = space && total !== undefined ? announcedTooLarge(space, id, total - sink.offset, sink.offset) : undefined;
      if (noRoom) {
        incoming.discard();
        throw noRoom;
      }
      const spaceBound = space && total === undefined ? sink.offset + roomWithoutLength(space) : Infinity;
      const rangesSupported = header(response.headers, 'accept-ranges') === 'bytes' || response.status === 206;
      // Resuming needs both the validator and the size of what we hold: without either, a cut starts over.
      const resumable = rangesSupported && validator !== undefined && total !== undefined;
      await sink.saveMeta(resumable ? { validator, total } : { total });

      const before = sink.offset;
      let cut: string | undefined;
      let overrun: string | undefined;
      try {
        await incoming.readInto((chunk) => {
          const end = sink.offset + chunk.length;
          if (total !== undefined && end > total) {
            overrun = `storage sent more than the ${total} bytes it announced`;
            throw new Error(overrun);
          }
          if (total === undefined && end > Math.min(maxSize, spaceBound)) {
            throw space && spaceBound < maxSize ? unannouncedTooLarge(space, id, end) : new ArchiveTooLargeError(maxSize);
          }
          const written = sink.write(chunk, hash);
          options.onProgress?.({ received: sink.offset, total, resumedFrom });
          return written;
        });
        if (total !== undefined && sink.offset !== total)
          cut = `the archive ended early at ${sink.offset} of ${total} bytes`;
      } catch (error) {
        if (client.aborted) throw new InterruptedError('download interrupted', { hint: resumeHint(sink, id, options) });
        if (error instanceof ArchiveTooLargeError || error instanceof NoRoomError) {
          // Nothing of an archive we refused is worth keeping.
          await sink.restart(hash);
          throw error;
        }
        if (error instanceof CliError) throw error;
        if (overrun !== undefined) {
          incoming.discard();
          await startOver(overrun);
          continue;
        }
        cut = `download cut at ${sink.offset} bytes (${(error as Error).message})`;
      }
      if (cut === undefined) break;
      resumes++;
      // Only cuts without real progress count against the limit: a long transfer that keeps moving goes on.
      if (sink.offset - before < PROGRESS_BYTES) strikes++;
      if (strikes > maxResumes) {
        throw new UnavailableError(`${cut}; giving up after ${resumes} tries`, { hint: resumeHint(sink, id, options) });
      }
      const restart = !resumable;
      const how = !restart
        ? 'resuming'
        : rangesSupported
          ? 'restarting: storage gave no validator or size to resume against'
          : 'restarting: storage does not support ranges';
      options.onNotice?.(`${cut}; ${how}`);
      if (restart) await sink.restart(hash);
      await clock.sleep(backoffMs(strikes));
    }
    // The digest first: the worker reads the part file, which finishing renames.
    const sha256 = await hash?.digest();
    let verified = false;
    let gitObjectsChecked = false;
    if (options.verify && sink instanceof FileSink) {
      const settings = typeof options.verify === 'object' ? options.verify : {};
      // Held to what the service says the migration holds: an archive of none of its repositories
      // is not intact, however well formed.
      const expected = await expectedContent(client, org, migration);
      const report = await verifyArchive(sink.partPath, {
        ...settings,
        expected,
      });
      if (!report.ok) {
        // Never resume from these bytes; they stay in the .part for whoever wants to look.
        await sink.forgetResume();
        throw new ArchiveVerificationError(report, {
          hint: `the service still has its copy: nothing was unlocked or deleted; the bytes received are in ${sink.partPath}; run \`svc-migrate download ${id}\` again to fetch it anew`,
        });
      }
      for (const note of report.notes) options.onNotice?.(note);
      verified = true;
      gitObjectsChecked = report.git_check === 'passed' || report.git_check === 'no git data';
    }
    const path = await sink.finish();
    const sha256File = sha256 && sink instanceof FileSink ? await writeSha256File(path, sha256) : undefined;
    return {
      migrationId: id,
      path,
      bytes: sink.offset,
      ...(sha256 ? { sha256 } : {}),
      resumes,
      verified,
      gitObjectsChecked,
      ...(sha256File ? { sha256File } : {}),
    };
  } catch (error) {
    await hash?.close();
    await sink.abandon();
    throw error;
  }
}

/** `<archive>.sha256` in sha256sum format (`sha256sum -c` checks it), written whole or not at all. */
async function writeSha256File(path: string, sha256: string): Promise<string> {
  const target = `${path}.sha256`;
  try {
    await replaceFile(target, `${sha256}  ${basename(path)}\n`);
  } catch (error) {
    throw writeError(target, error as NodeJS.ErrnoException);
  }
  return target;
}

/** A cut stream is usually picked up at once; back off only when it keeps happening. */
function backoffMs(attempt: number): number {
  return Math.min(5_000, 100 * 2 ** (attempt - 1));
}

/** How to go on after an interruption: the exact command, and what it starts from. */
function resumeHint(sink: Sink, id: number, options: DownloadOptions): string {
  const command =
    options.resumeCommand?.(id) ?? `svc-migrate download ${id} -o ${'path' in options.target ? shellWord(options.target.path) : '-'}`;
  if (!(sink instanceof FileSink)) return `run \`${command}\` to download it again from the start`;
  return sink.offset > 0
    ? `${sink.offset} bytes are kept in ${sink.partPath}; \`${command}\` resumes from there`
    : `nothing was received yet; run \`${command}\` to start again`;
}

function parseContentRange(
  value: string | undefined,
): { start: number; end: number; total: number } | undefined {
  const match = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(value?.trim() ?? '');
  if (!match) return undefined;
  return { start: Number(match[1]), end: Number(match[2]), total: Number(match[3]) };
}

/** A cut after at least this much new data is progress, not a strike. */
const PROGRESS_BYTES = 1 << 20;
