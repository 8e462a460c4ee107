import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { access, open, rename, rm, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { ApiClient } from '../../api/client.js';
import type { Clock } from '../../support/clock.js';
import { InterruptedError, VerificationError } from '../../errors.js';
import { expectedContentOf } from '../archive/expected.js';
import { ArchiveVerificationError, type ExpectedContent, type VerifyOptions, type VerifyReport, verifyArchive } from '../archive/verify.js';
import { type DownloadProgress, downloadArchive } from '../download.js';
import { readPartMeta } from '../download-sinks.js';
import { replaceFile } from '../exclusive-files.js';
import { archivePathOf, type BatchRecord, type OrgExportEvent } from './journal.js';

interface BatchArchiveSettings {
  org: string;
  dir: string;
  checksum: boolean;
  verify: boolean;
  clock: Clock;
  signal?: AbortSignal | undefined;
  /** Something will be unlocked or deleted on the strength of this archive: its sha256 is needed. */
  release: boolean;
  /** What the service says migration `id` holds (expectedContents). */
  expected: (id: number) => Promise<ExpectedContent>;
  emit: (event: OrgExportEvent) => void;
}

/**
 * What the service says each migration's archive must hold, asked once per migration in a run (a
 * GET of the migration and of its repository list). An archive on disk is held to it wherever it
 * is checked, so one that holds another migration's repositories (another batch's archive copied
 * over it) is never adopted or released. A failed question is asked again next time.
 */
export function expectedContents(client: ApiClient, org: string): (id: number) => Promise<ExpectedContent> {
  const known = new Map<number, ExpectedContent>();
  return async (id) => {
    const content = known.get(id) ?? (await expectedContentOf(client, org, id));
    known.set(id, content);
    return content;
  };
}

/**
 * Puts the archive of migration `id` on disk as `<dir>/migration-<id>.tar.gz` and records it in
 * `batch.archive`: adopted from what an earlier run left (a whole `.part`, or the archive already
 * renamed into place), else downloaded (resuming a `.part`) and, with `verify`, checked.
 */
export async function fetchBatchArchive(client: ApiClient, settings: BatchArchiveSettings, batch: BatchRecord, id: number): Promise<void> {
  const { org, dir, clock, emit } = settings;
  const path = archivePathOf(dir, id);
  const check = checkTold(emit, batch, id);
  const checking = async (file: string) =>
    verifyArchive(file, { ...check.progress, signal: settings.signal, expected: await settings.expected(id) });
  // A run stopped after the last byte arrived: the whole archive is in the .part, fetching it
  // again would redo a finished download. It is checked, then renamed into place.
  let adopted: VerifyReport | undefined;
  if (await completePart(path, id)) {
    check.start();
    const report = await checking(`${path}.part`);
    if (report.ok) {
      adopted = report;
      const part = await open(`${path}.part`, 'r');
      try {
        await part.sync();
      } finally {
        await part.close();
      }
      await rename(`${path}.part`, path);
      await rm(`${path}.part.json`, { force: true });
    }
  }
  if (await exists(path)) {
    // Renamed into place just above, or by a run that stopped before writing down that it had.
    check.start();
    const report = adopted ?? (await checking(path));
    if (report.ok) check.passed();
    if (report.ok || !settings.verify) {
      const sha256 = await sha256File(path, settings.signal);
      await replaceFile(`${path}.sha256`, `${sha256}  ${basename(path)}\n`);
      const gitObjectsChecked = report.git_check === 'passed' || report.git_check === 'no git data';
      batch.archive = { path, bytes: report.bytes, sha256, verified: report.ok, gitObjectsChecked };
      return;
    }
  }
  check.again();
  emit({ type: 'step', batch: batch.index, migrationId: id, step: 'downloading' });
  const result = await downloadArchive(client, {
    org,
    id,
    target: { path, force: true },
    checksum: settings.checksum,
    // The download verifies before the archive takes its name: its first progress is the check's start.
    verify: settings.verify ? { ...check.progress, signal: settings.signal } : false,
    clock,
    onProgress: (progress: DownloadProgress) =>
      emit({ type: 'download', batch: batch.index, migrationId: id, received: progress.received, total: progress.total }),
    onNotice: (message) => emit({ type: 'notice', message: `batch ${batch.index}: ${message}` }),
  });
  if (result.verified) check.passed();
  // --no-checksum hashed nothing as it came; what is released rests on a digest to check again.
  const sha256 = result.sha256 ?? (settings.release && result.verified ? await sha256File(result.path, settings.signal) : undefined);
  batch.archive = {
    path: result.path,
    bytes: result.bytes,
    ...(sha256 ? { sha256 } : {}),
    verified: result.verified,
    gitObjectsChecked: result.gitObjectsChecked,
  };
}

/**
 * Right before a batch's repositories are unlocked or its service copy deleted: the archive on disk
 * must be the very one verified. One this run verified is hashed again against the sha256 recorded
 * then; one the journal says an earlier run verified is verified again in full (the journal is
 * checked, not believed), against the recorded sha256 too. 'missing' when it is not on disk at all,
 * to be fetched again. A different archive is a VerificationError (exit 9): nothing is released.
 */
export async function confirmArchive(
  batch: BatchRecord,
  id: number,
  settings: {
    dir: string;
    verifiedHere: boolean;
    expected: (id: number) => Promise<ExpectedContent>;
    signal?: AbortSignal | undefined;
    emit: (event: OrgExportEvent) => void;
  },
): Promise<'ok' | 'missing'> {
  const path = archivePathOf(settings.dir, id);
  if (!(await exists(path))) return 'missing';
  // Told as a check unless it only hashes again an archive this run verified.
  const check = checkTold(settings.emit, batch, id);
  if (!settings.verifiedHere) check.start();
  const recorded = batch.archive?.sha256;
  const kept = `nothing was unlocked or deleted for migration ${id}`;
  const hint = `the service still has its copy: remove ${path} and ${path}.sha256, then run the same command again to download it anew`;
  const refuse = (error: VerificationError) => {
    // What is on disk is not known good: the journal and the summary say so too.
    if (batch.archive) Object.assign(batch.archive, { verified: false, gitObjectsChecked: false });
    return error;
  };
  if (recorded) {
    const actual = await sha256File(path, settings.signal);
    if (actual !== recorded) {
      throw refuse(
        new VerificationError(`${path} is not the archive that was verified (its sha256 is ${actual}, not ${recorded} as recorded), so ${kept}`, { hint }),
      );
    }
    if (settings.verifiedHere && batch.archive?.verified) return 'ok';
  }
  const report = await verifyArchive(path, {
    ...check.progress,
    signal: settings.signal,
    expected: await settings.expected(id),
    ...(recorded ? { sha256: recorded } : {}),
  });
  if (!report.ok) throw refuse(new ArchiveVerificationError(report, { hint: `${kept}; ${hint}` }));
  batch.archive = {
    path,
    bytes: report.bytes,
    sha256: recorded ?? (await sha256File(path, settings.signal)),
    verified: true,
    gitObjectsChecked: report.git_check === 'passed' || report.git_check === 'no git data',
    ...(batch.archive?.verifiedAt ? { verifiedAt: batch.archive.verifiedAt } : {}),
  };
  check.passed();
  return 'ok';
}

/**
 * A check of a batch's archive as events: `verifying` once, its progress (bytes read, then
 * repositories git checked), `verified` when it passed. A check that fails ends in the batch's error.
 */
function checkTold(emit: (event: OrgExportEvent) => void, batch: BatchRecord, migrationId: number) {
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    emit({ type: 'step', batch: batch.index, migrationId, step: 'verifying' });
  };
  const progress: Pick<VerifyOptions, 'onProgress' | 'onGitProgress'> = {
    onProgress: (read, total) => {
      start();
      emit({ type: 'verify', batch: batch.index, migrationId, stage: 'reading', done: read, total });
    },
    onGitProgress: ({ checked, total }) => {
      start();
      emit({ type: 'verify', batch: batch.index, migrationId, stage: 'git', done: checked, total });
    },
  };
  return {
    start,
    progress,
    passed: () => {
      if (started) emit({ type: 'step', batch: batch.index, migrationId, step: 'verified' });
      started = false;
    },
    /** A check that did not pass is followed by a download, checked anew. */
    again: () => {
      started = false;
    },
  };
}

/**
 * A batch recorded done with a verified archive, not verified in this run: the archive must still be
 * on disk, of the size and the sha256 recorded, or its repositories are not counted as safe. It is
 * hashed in full, not judged by the `.sha256` beside it: that file says what was recorded, not what
 * is on disk now, and an archive overwritten in place keeps its size. Reading each archive once a
 * run costs seconds a gigabyte, little beside an export, and keeps "verified archives" true of the
 * bytes on disk. Without a recorded sha256 (`--no-checksum` with nothing to release) only the size
 * is checked. A VerificationError (exit 9) names the file and says where the service's copy stands.
 */
export async function recheckArchive(
  batch: BatchRecord,
  id: number,
  settings: { dir: string; deleted: boolean; signal?: AbortSignal | undefined },
): Promise<void> {
  const recorded = batch.archive;
  if (!recorded?.verified) return;
  const path = archivePathOf(settings.dir, id);
  let size: number | undefined;
  try {
    size = (await stat(path)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const actual = size === recorded.bytes && recorded.sha256 ? await sha256File(path, settings.signal) : undefined;
  const problem =
    size === undefined
      ? `${path} is missing`
      : size !== recorded.bytes
        ? `${path} has changed since it was verified (${size} bytes, not ${recorded.bytes} as recorded)`
        : actual !== recorded.sha256
          ? `${path} has changed since it was verified (its sha256 is ${actual}, not ${recorded.sha256} as recorded)`
          : undefined;
  if (!problem) return;
  const n = batch.repositories.length;
  throw new VerificationError(`${problem}, so batch ${batch.index} (${n} repositor${n === 1 ? 'y' : 'ies'}) is not in a verified archive`, {
    hint: settings.deleted
      ? `this export deleted the service's copy of migration ${id}: put back ${path} from a copy of it${recorded.sha256 ? ` (sha256 ${recorded.sha256})` : ''}`
      : `the service's copy of migration ${id} may already be gone (archives are deleted 7 days after the export); while it is there, \`svc-migrate download ${id} --output ${path} --force\` fetches it again`,
  });
}

/** Whether `<path>.part` holds every byte its side file says storage announced for migration `id`. */
async function completePart(path: string, id: number): Promise<boolean> {
  try {
    const meta = await readPartMeta(`${path}.part.json`);
    const part = await stat(`${path}.part`);
    return meta?.migrationId === id && typeof meta.total === 'number' && part.isFile() && part.size === meta.total;
  } catch {
    return false;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

async function sha256File(path: string, signal: AbortSignal | undefined): Promise<string> {
  const hash = createHash('sha256');
  try {
    await pipeline(createReadStream(path), hash, signal ? { signal } : {});
  } catch (error) {
    if (signal?.aborted) throw new InterruptedError('stopped hashing the archive');
    throw error;
  }
  return hash.digest('hex');
}
