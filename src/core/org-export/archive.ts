import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { access, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { ApiClient } from '../../api/client.js';
import type { Clock } from '../../clock.js';
import { type VerifyReport, verifyArchive } from '../archive/verify.js';
import { type DownloadProgress, downloadArchive } from '../download.js';
import { replaceFile } from '../exclusive-files.js';
import type { BatchRecord, OrgExportEvent } from './journal.js';

interface BatchArchiveSettings {
  org: string;
  dir: string;
  checksum: boolean;
  verify: boolean;
  clock: Clock;
  signal?: AbortSignal | undefined;
  emit: (event: OrgExportEvent) => void;
}

/**
 * Puts the archive of migration `id` on disk as `<dir>/migration-<id>.tar.gz` and records it in
 * `batch.archive`: adopted from what an earlier run left (a whole `.part`, or the archive already
 * renamed into place), else downloaded (resuming a `.part`) and, with `verify`, checked.
 */
export async function fetchBatchArchive(client: ApiClient, settings: BatchArchiveSettings, batch: BatchRecord, id: number): Promise<void> {
  const { org, dir, clock, emit } = settings;
  const path = join(dir, `migration-${id}.tar.gz`);
  // A run stopped after the last byte arrived: the whole archive is in the .part, fetching it
  // again would redo a finished download. It is checked, then renamed into place.
  let adopted: VerifyReport | undefined;
  if (await completePart(path, id)) {
    const report = await verifyArchive(`${path}.part`, { signal: settings.signal });
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
    const report = adopted ?? (await verifyArchive(path, { signal: settings.signal }));
    if (report.ok || !settings.verify) {
      const sha256 = await sha256File(path);
      await replaceFile(`${path}.sha256`, `${sha256}  ${basename(path)}\n`);
      const gitObjectsChecked = report.git_check === 'passed' || report.git_check === 'no git data';
      batch.archive = { path, bytes: report.bytes, sha256, verified: report.ok, gitObjectsChecked };
      return;
    }
  }
  const result = await downloadArchive(client, {
    org,
    id,
    target: { path, force: true },
    checksum: settings.checksum,
    verify: settings.verify ? { signal: settings.signal } : false,
    clock,
    onProgress: (progress: DownloadProgress) =>
      emit({ type: 'download', batch: batch.index, migrationId: id, received: progress.received, total: progress.total }),
    onNotice: (message) => emit({ type: 'notice', message: `batch ${batch.index}: ${message}` }),
  });
  batch.archive = {
    path: result.path,
    bytes: result.bytes,
    ...(result.sha256 ? { sha256: result.sha256 } : {}),
    verified: result.verified,
    gitObjectsChecked: result.gitObjectsChecked,
  };
}

/** Whether `<path>.part` holds every byte its side file says storage announced for migration `id`. */
async function completePart(path: string, id: number): Promise<boolean> {
  try {
    const meta = JSON.parse(await readFile(`${path}.part.json`, 'utf8')) as { migrationId?: number; total?: number };
    const part = await stat(`${path}.part`);
    return meta.migrationId === id && typeof meta.total === 'number' && part.isFile() && part.size === meta.total;
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

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}
