import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { StartFlag } from '../../api/types.js';
import type { CliError } from '../../errors.js';
import { makeDirectory } from '../../support/make-directory.js';
import { fileError, isSystemError } from '../../support/system-errors.js';
import { replaceFile } from '../exclusive-files.js';

/** The journal's name inside the output directory. */
export const JOURNAL_FILE = 'svc-migrate-journal.json';

/** The archive of migration `id` in `dir`: the only place a batch's archive can be. */
export function archivePathOf(dir: string, id: number): string {
  return join(dir, `migration-${id}.tar.gz`);
}

/**
 * Where one batch stands. Each state is written before the step it names is taken, so a crash
 * between the two is found on the next run and the step is checked instead of blindly repeated.
 */
export type BatchState =
  | 'pending'
  | 'starting'
  | 'started'
  | 'exported'
  | 'downloaded'
  | 'unlocked'
  | 'done'
  | 'failed'
  /**
   * Its migration failed on the service and its repositories were split between two new batches, to
   * find the one at fault: nothing more is done for it (its locks were given back with --unlock).
   */
  | 'narrowed'
  /** The service refused every repository of the batch (nothing was started), or its one repository is at fault. */
  | 'skipped';

export interface BatchRecord {
  index: number;
  repositories: string[];
  state: BatchState;
  /** Migrations started for this batch, newest last (a failed one of a lone repository is retried once). */
  migrationIds: number[];
  /** When the latest start request was about to be sent (ms since the epoch, the service's clock when known). */
  startingAt?: number;
  /** Migrations of its repositories the service listed just before that start: not the one it made (started-lookup.ts). */
  existed?: number[];
  /** The start flags that start was sent with, those set true: what a lookup of it matches. */
  startFlags?: StartFlag[];
  attempts: number;
  archive?: {
    path: string;
    bytes: number;
    sha256?: string;
    verified: boolean;
    /** The check included every git object (git was on PATH, or the archive holds no git data). */
    gitObjectsChecked?: boolean;
    /** When this program last verified it (ISO 8601), for the manifest. */
    verifiedAt?: string;
  };
  /** The repositories its failed migrations locked were unlocked (`--unlock`): none stays locked. */
  released?: boolean;
  /** Repositories the service refused when the batch was started, with its reason: not in the migration. */
  skipped?: SkippedRepository[];
  /** The last failure, and what to do about it. */
  error?: { message: string; exitCode: number; hint?: string };
}

interface SkippedRepository {
  name: string;
  reason: string;
  /**
   * The migration that failed on the service with this repository alone: it is at fault, and stays
   * skipped in later runs instead of being asked about again as a refused one is.
   */
  migrationId?: number;
}

/** The repositories the migrations of `batch` hold (and lock, with --lock): a repository at fault included. */
export function heldBy(batch: BatchRecord): string[] {
  const atFault = (batch.skipped ?? []).filter((s) => s.migrationId !== undefined).map((s) => s.name);
  return [...batch.repositories, ...atFault];
}

/**
 * `verified` ends a `verifying` whose archive passed (one that fails ends in an `error` event);
 * `waiting-to-start`: the service refuses new starts for now, and the batch waits to ask again.
 */
type BatchStep = 'waiting-to-start' | 'downloading' | 'verifying' | 'verified' | 'unlocking' | 'deleting';

/** What an org export tells as it goes (the live board, plain lines and --json events draw it). */
export type OrgExportEvent =
  | {
    type: 'plan';
    batches: number;
    repositories: number;
    resumed: boolean;
    journal: string;
    /** Repositories of batches done in an earlier run, and batches whose archive an earlier run saved. */
    done: number;
    archives: number;
  }
  | {
    type: 'batch';
    batch: number;
    state: BatchState;
    migrationId?: number | undefined;
    repositories: number;
    message: string;
    /** Where an earlier run left the batch: told once per batch under way, before any request of this run. */
    resumed?: true;
    /** `downloaded`: the archive saved. */
    archive?: string | undefined;
    /** `unlocked` (the step after the archive is on disk): whether the repositories were unlocked, not only left as they were. */
    repositoriesUnlocked?: boolean;
  }
  | { type: 'migration'; batch: number; migrationId: number; state: string }
  /** What a batch is doing between two journal states (no record of it is written); no migration while it waits to start. */
  | { type: 'step'; batch: number; migrationId?: number | undefined; step: BatchStep }
  /** How far the check of a batch's archive is: bytes read, then repositories whose git objects were checked. */
  | { type: 'verify'; batch: number; migrationId: number; stage: 'reading' | 'git'; done: number; total: number }
  | { type: 'download'; batch: number; migrationId: number; received: number; total: number | undefined }
  | { type: 'error'; batch: number; migrationId?: number | undefined; message: string; exitCode: number; hint?: string | undefined }
  | { type: 'notice'; message: string };

/** What a `batch` event tells beside its state: where the archive was saved, what its release did. */
export type BatchTold = Pick<Extract<OrgExportEvent, { type: 'batch' }>, 'archive' | 'repositoriesUnlocked'>;

/**
 * One `batch` event per batch an earlier run left under way, with its state and its migration; one
 * that run finished with (done, skipped, narrowed into two others) resumes nothing.
 */
export function resumedEvents(batches: BatchRecord[]): OrgExportEvent[] {
  return batches
    .filter((b) => !['pending', 'done', 'skipped', 'narrowed'].includes(b.state))
    .map((b) => {
      // A batch left starting has no migration known yet (an earlier one of it failed).
      const id = b.state === 'starting' ? undefined : b.migrationIds.at(-1);
      const message = id === undefined ? `resuming: ${b.state}` : `resuming migration ${id}: ${b.state}`;
      return { type: 'batch', batch: b.index, state: b.state, migrationId: id, repositories: b.repositories.length, message, resumed: true };
    });
}

export interface Journal {
  version: 1;
  /** Hash of everything on the command line that shapes the plan: a different one is refused. */
  fingerprint: string;
  /** The command line as the user gave it, for the refusal message. */
  command: string;
  org: string;
  createdAt: string;
  updatedAt: string;
  batches: BatchRecord[];
}

export function fingerprintOf(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

export function planBatches(repositories: string[], batchSize: number): BatchRecord[] {
  const batches: BatchRecord[] = [];
  for (let i = 0; i < repositories.length; i += batchSize) {
    batches.push({
      index: batches.length + 1,
      repositories: repositories.slice(i, i + batchSize),
      state: 'pending',
      migrationIds: [],
      attempts: 0,
    });
  }
  return batches;
}

/** Replaces the journal so a crash at any instant leaves either the old or the new one whole. */
export async function writeJournal(dir: string, journal: Journal): Promise<void> {
  const path = join(dir, JOURNAL_FILE);
  try {
    await replaceFile(path, `${JSON.stringify(journal, null, 1)}\n`, { mode: 0o600, durable: true });
  } catch (error) {
    throw journalError('write', path, error);
  }
}

export function ensureDirectory(dir: string): void {
  try {
    makeDirectory(dir);
  } catch (error) {
    throw journalError('create the directory', dir, error);
  }
}

export function journalError(action: string, path: string, error: unknown): CliError {
  if (!isSystemError(error)) throw error;
  return fileError(error, { action, path, role: '--output-dir', after: 'then run the same command again' });
}
