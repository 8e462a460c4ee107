import type { ApiClient } from '../../api/client.js';
import { deleteArchive } from '../../api/migrations.js';
import type { StartMigrationBody } from '../../api/types.js';
import type { Clock } from '../../support/clock.js';
import { CliError, InterruptedError, MigrationFailedError, NotFoundError, VerificationError } from '../../errors.js';
import { fromSystemError } from '../../support/system-errors.js';
import { releaseMessage } from '../unlock.js';
import {
  archivePathOf,
  type BatchRecord,
  type BatchState,
  type BatchTold,
  ensureDirectory,
  type Journal,
  type OrgExportEvent,
  resumedEvents,
  writeJournal,
} from './journal.js';
import { checkOutputDirectory } from './journal-read.js';
import { planExport, replanned, type Tally, tally } from './plan.js';
import { confirmArchive, expectedContents, fetchBatchArchive, recheckArchive } from './archive.js';
import { lockDirectory } from './lock.js';
import { endedBy, exitCodeOf, isLocal, OrgExportStoppedError } from './outcome.js';
import { manifestWriter } from './manifest.js';
import { type NarrowContext, narrowFailed, unlockThrough } from './narrow.js';
import { MigrationPoller } from './poller.js';
import { Slots } from './slots.js';
import { startBatch, type StartContext } from './start.js';

export const DEFAULT_BATCH_SIZE = 50;
export const DEFAULT_PARALLEL = 4;

export interface OrgExportOptions {
  org: string;
  dir: string;
  repositories: string[];
  batchSize: number;
  parallel: number;
  /** The start body without its repositories (the flags every batch shares). */
  body: Omit<StartMigrationBody, 'repositories'>;
  unlock: boolean;
  deleteArchive: boolean;
  checksum: boolean;
  verify: boolean;
  /** Identifies the command line but its repositories: an existing journal with another one is refused unless `restart`. */
  fingerprint: string;
  /** What an earlier version recorded for this same command (its repositories included), also accepted. */
  legacyFingerprint?: string | undefined;
  command: string;
  restart: boolean;
  intervalMs?: number | undefined;
  /** `--timeout`: each batch's wait for its migration ends after this long (exit 7 for that batch). */
  timeoutMs?: number | undefined;
  clock: Clock;
  signal?: AbortSignal | undefined;
  onEvent?(event: OrgExportEvent): void;
}

export interface OrgExportResult {
  journalPath: string;
  batches: BatchRecord[];
  repositories: number;
  /** Repositories in a verified archive on disk; in an archive of a finished batch, verified or not. */
  verifiedRepositories: number;
  archivedRepositories: number;
  /** Repositories the service refused (each batch went on without them). */
  skipped: Tally['skipped'];
  /** Archives were checked (not --no-verify). */
  verify: boolean;
  /**
   * 0: every repository in a verified archive (any archive with --no-verify); 10: some skipped;
   * 5: all skipped (nothing exported); else the worst failure's code.
   */
  exitCode: number;
  pollRequests: number;
}

/**
 * Exports a whole list of repositories as batches, at most `parallel` migrations at a time, each
 * going start → wait → download and verify → unlock → delete-archive exactly as a single export
 * does. Every step is written to the journal before and after it happens, so the same call after a
 * crash carries on: a batch whose start answer was lost is looked up with the list before any new
 * start, and downloads resume from their `.part`. One run at a time per directory (lock.ts).
 *
 * A batch whose migration fails on the service is narrowed to the repository at fault (narrow.ts);
 * a batch the service refuses, or whose archive fails its check, is reported and the others go on;
 * a failure of this machine (exit 2: a full disk, a file it cannot
 * write, the journal) or a bug stops every batch where it stands, and is thrown once all have.
 */
export async function runOrgExport(client: ApiClient, options: OrgExportOptions): Promise<OrgExportResult> {
  const { dir } = options;
  const emit = (event: OrgExportEvent) => options.onEvent?.(event);
  ensureDirectory(dir);
  checkOutputDirectory(dir);
  const lock = await lockDirectory(dir, { now: Date.now(), onNotice: (message) => emit({ type: 'notice', message }) });
  try {
    return await exportBatches(client, options, emit);
  } finally {
    await lock.release();
  }
}

async function exportBatches(
  client: ApiClient,
  options: OrgExportOptions,
  emit: (event: OrgExportEvent) => void,
): Promise<OrgExportResult> {
  const { org, dir, clock } = options;
  const plan = await planExport({ ...options, now: clock.now() });
  const { journalPath } = plan;
  const state: Journal = plan.journal;
  // Writes are chained so the file on disk is always one whole, recent snapshot; a write that
  // failed does not keep the next one from trying.
  let writing: Promise<void> = Promise.resolve();
  // The manifest follows the journal it is made from, each time an archive's record changes.
  const writeManifest = manifestWriter(dir);
  const save = (): Promise<void> => {
    const next = writing.catch(() => {}).then(async () => {
      state.updatedAt = new Date(clock.now()).toISOString();
      await writeJournal(dir, state);
      await writeManifest(state);
    });
    writing = next;
    return next;
  };
  // A failure of an earlier run is tried again now, from the step where it stopped.
  for (const batch of state.batches) {
    if (batch.state === 'failed') {
      batch.state = 'pending';
      batch.attempts = 0;
    }
    delete batch.error;
  }
  await save();
  emit({
    type: 'plan',
    // Those that make an archive: a batch narrowed into two others, or skipped whole, makes none.
    batches: state.batches.filter((b) => b.state !== 'narrowed' && b.state !== 'skipped').length,
    repositories: tally(state.batches, options.repositories).total,
    resumed: plan.resumed,
    journal: journalPath,
    done: tally(state.batches.filter((b) => b.state === 'done'), options.repositories).archived,
    archives: state.batches.filter((b) => b.archive !== undefined && ['downloaded', 'unlocked', 'done'].includes(b.state)).length,
  });
  if (plan.resumed && (plan.added > 0 || plan.dropped > 0)) emit({ type: 'notice', message: replanned(plan, dir) });
  const lock = Boolean(options.body.lock_repositories);
  // Batches under way are shown before any request: a resumed run's board is not empty while they download.
  for (const event of resumedEvents(state.batches)) emit(event);

  // Ends every request, wait, download and check of this run when one batch fails for a local reason.
  const stopper = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stopper.signal]) : stopper.signal;
  const api = client.scoped(stopper.signal);
  let interrupted: unknown;
  let fatal: unknown;
  const stopAll = (error: unknown) => {
    if (fatal !== undefined) return;
    fatal = error;
    stopper.abort(error);
  };
  const stopped = () => interrupted !== undefined || signal.aborted;

  const poller = new MigrationPoller(api, {
    org,
    clock,
    intervalMs: options.intervalMs,
    timeoutMs: options.timeoutMs,
    signal,
    // Each state the service reports, from the first round on: a batch resumed while its migration
    // runs is under way from then, not only once it is exported.
    onState: (migration) => {
      const batch = state.batches.find((b) => b.migrationIds.at(-1) === migration.id);
      if (batch) emit({ type: 'migration', batch: batch.index, migrationId: migration.id, state: migration.state });
    },
    onNotice: (message) => emit({ type: 'notice', message }),
  });
  const release = options.unlock || options.deleteArchive;
  /** Batches whose archive this run verified itself; any other's is verified again before a release. */
  const verifiedHere = new Set<number>();
  /** Batches whose archive, recorded as verified, is no longer on disk as it was (recheckArchive). */
  const changed = new Set<number>();
  const expected = expectedContents(api, org);

  const step = async (batch: BatchRecord, next: BatchState, message: string, migrationId?: number, told: BatchTold = {}) => {
    batch.state = next;
    await save();
    emit({ type: 'batch', batch: batch.index, state: next, migrationId, repositories: batch.repositories.length, message, ...told });
  };
  const starting: StartContext = {
    client: api,
    org,
    body: options.body,
    clock,
    signal,
    claimed: new Set(state.batches.flatMap((b) => b.migrationIds)),
    spamWaitsTold: { rounds: 0 },
    save,
    step,
    emit,
  };
  const narrowing: NarrowContext = {
    client: api,
    org,
    release: lock && options.unlock,
    batches: state.batches,
    step,
    emit,
    launch: () => {}, // set below, once the tasks can be run
  };

  /** Verified in this run: said so in the journal (and so in the manifest) at its next write. */
  const verified = (batch: BatchRecord) => {
    if (!verifiedHere.has(batch.index) && batch.archive) batch.archive.verifiedAt = new Date(clock.now()).toISOString();
    verifiedHere.add(batch.index);
  };

  /** Whether the archive on disk is still the one verified; a missing one sends the batch back to fetch it. */
  const confirmed = async (batch: BatchRecord, id: number): Promise<boolean> => {
    const outcome = await confirmArchive(batch, id, { dir, verifiedHere: verifiedHere.has(batch.index), expected, signal, emit });
    if (outcome === 'ok') {
      verified(batch);
      return true;
    }
    delete batch.archive;
    await step(batch, 'exported', `${archivePathOf(dir, id)} is not on disk; fetching it again`, id);
    return false;
  };

  /** Takes the batch through its steps; with `untilExported`, only as far as an exported migration. */
  const runBatch = async (batch: BatchRecord, untilExported: boolean): Promise<void> => {
    /** The state the start's answer told: the poller tells it again only once it changes. */
    let told: string | undefined;
    for (;;) {
      if (signal.aborted) throw new InterruptedError('stopped');
      const id = batch.migrationIds.at(-1) as number;
      if (untilExported && ON_DISK_STATES.has(batch.state)) return;
      switch (batch.state) {
        case 'pending':
        case 'starting':
          // Shown from the moment it takes its place among the migrations under way, before its
          // start is asked (or refused for now, or waited on); a resumed `starting` one was told already.
          if (batch.state === 'pending') emit({ type: 'batch', batch: batch.index, state: 'starting', repositories: batch.repositories.length, message: 'starting' });
          told = await startBatch(starting, batch);
          break;
        case 'started': {
          const migration = await poller.watch(id, told);
          if (migration.state === 'failed') await narrowFailed(narrowing, batch, migration.id);
          else await step(batch, 'exported', `migration ${migration.id} exported`, migration.id);
          break;
        }
        case 'exported':
          await fetchBatchArchive(api, { ...options, signal, release, expected, emit }, batch, id);
          if (batch.archive?.verified) verified(batch);
          await step(
            batch,
            'downloaded',
            `${batch.archive?.path} (${batch.archive?.bytes} bytes${batch.archive?.verified ? ', verified' : ''})`,
            id,
            { archive: batch.archive?.path },
          );
          break;
        case 'downloaded':
          if (release && !(await confirmed(batch, id))) break;
          // Unlocking and deleting are for an archive known good on disk, never for one merely received.
          if (!batch.archive?.verified && release) {
            throw new VerificationError(`the archive of migration ${id} was not verified, so nothing was unlocked or deleted`);
          }
          // Through every migration of the batch: one that failed and was started again locked them too.
          if (options.unlock) {
            emit({ type: 'step', batch: batch.index, migrationId: id, step: 'unlocking' });
            await unlockThrough(api, org, batch.migrationIds, batch.repositories);
          }
          await step(batch, 'unlocked', releaseMessage(options.unlock, lock, batch.repositories.length), id, { repositoriesUnlocked: options.unlock });
          break;
        case 'unlocked':
          if (options.deleteArchive) {
            if (!(await confirmed(batch, id))) break;
            // The service's copy may be the only other one: it goes only once every git object was checked.
            if (!batch.archive?.gitObjectsChecked) {
              throw new VerificationError(
                `the git objects of ${batch.archive?.path ?? `migration ${id}'s archive`} were not checked (git is not on PATH), so the service's copy of migration ${id} was kept`,
              );
            }
            emit({ type: 'step', batch: batch.index, migrationId: id, step: 'deleting' });
            try {
              await deleteArchive(api, org, id);
            } catch (error) {
              // Deleted by an earlier run that stopped before it could say so.
              if (!(error instanceof NotFoundError)) throw error;
            }
          }
          await step(batch, 'done', options.deleteArchive ? `deleted the archive of migration ${id} from the service` : 'done', id);
          break;
        case 'done':
          // Done in an earlier run, or taken here from a step after the check: still on disk as verified?
          if (!verifiedHere.has(batch.index)) {
            changed.add(batch.index); // until the check passes
            await recheckArchive(batch, id, { dir, deleted: options.deleteArchive, signal });
            changed.delete(batch.index);
          }
          return;
        case 'failed':
        case 'narrowed':
        case 'skipped':
          return;
      }
    }
  };

  /** A batch's failure: its own (reported, the others go on), Ctrl-C, or one that stops them all. */
  const settle = async (batch: BatchRecord, caught: unknown): Promise<void> => {
    if (options.signal?.aborted) {
      interrupted ??= caught;
      return;
    }
    // Stopped because another batch failed: where it stands is in the journal already.
    if (stopper.signal.aborted) return;
    if (caught instanceof InterruptedError) {
      interrupted ??= caught;
      return;
    }
    const error = fromSystemError(caught, { role: '--output-dir', after: 'then run the same command again' });
    if (!(error instanceof CliError)) {
      stopAll(error);
      return;
    }
    batch.error = { message: error.message, exitCode: error.exitCode, ...(error.hint ? { hint: error.hint } : {}) };
    if (error instanceof MigrationFailedError) batch.state = 'failed';
    emit({ type: 'error', batch: batch.index, migrationId: batch.migrationIds.at(-1), message: error.message, exitCode: error.exitCode, hint: error.hint });
    if (isLocal(error)) {
      emit({ type: 'notice', message: 'stopping the other batches: this failure is not the service\'s; each goes on from where it stopped when the same command runs again' });
      stopAll(error);
    }
    try {
      await save();
    } catch (saveError) {
      stopAll(fromSystemError(saveError));
    }
  };

  // At most `parallel` migrations on the service (start to exported) and at most `parallel` archives
  // being fetched, verified and released: the next batch starts while the last one downloads.
  const onService = new Slots(Math.max(1, options.parallel));
  const onDisk = new Slots(Math.max(1, options.parallel));
  const task = async (batch: BatchRecord) => {
    try {
      if (!ON_DISK_STATES.has(batch.state)) {
        await onService.run(() => (stopped() ? Promise.resolve() : runBatch(batch, true)));
      }
      if (stopped() || !ON_DISK_STATES.has(batch.state)) return;
      await onDisk.run(() => (stopped() ? Promise.resolve() : runBatch(batch, false)));
    } catch (error) {
      await settle(batch, error);
    }
  };
  // Every batch has stopped before this returns or throws, the halves of a narrowed one included:
  // nothing of the run outlives it.
  const running = new Set<Promise<void>>();
  const launch = (batch: BatchRecord) => {
    const run = task(batch).finally(() => running.delete(run));
    running.add(run);
  };
  narrowing.launch = launch;
  state.batches.forEach(launch);
  while (running.size > 0) await Promise.all(running);
  await writing.catch(() => {});
  if (fatal !== undefined) {
    // The journal keeps what is known; when it is what cannot be written, the last whole one stays.
    await save().catch(() => {});
    const ended = endedBy(fatal, journalPath);
    throw ended instanceof CliError ? new OrgExportStoppedError(ended, state.batches) : ended;
  }
  // Ctrl-C may land where no step was under way to throw it.
  if (interrupted || options.signal?.aborted) {
    const stopped = new InterruptedError('stopped the export', {
      hint: `run the same command again to continue; the journal is ${journalPath}`,
    });
    throw new OrgExportStoppedError(stopped, state.batches);
  }

  // The journal keeps what was verified; the result says what is on disk now.
  const batches = state.batches.map((b) => (changed.has(b.index) && b.archive ? { ...b, archive: { ...b.archive, verified: false } } : b));
  const counts = tally(batches, options.repositories);
  const exitCode = exitCodeOf(batches, counts, options.verify);
  return {
    journalPath,
    batches,
    repositories: counts.total,
    verifiedRepositories: counts.verified,
    archivedRepositories: counts.archived,
    skipped: counts.skipped,
    verify: options.verify,
    exitCode,
    pollRequests: poller.requests,
  };
}

const ON_DISK_STATES: ReadonlySet<BatchState> = new Set(['exported', 'downloaded', 'unlocked', 'done', 'failed', 'narrowed', 'skipped']);
