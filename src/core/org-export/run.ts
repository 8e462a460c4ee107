import { join } from 'node:path';
import type { ApiClient } from '../../api/client.js';
import { deleteArchive, listAllMigrations, startMigration } from '../../api/migrations.js';
import type { Migration, StartMigrationBody } from '../../api/types.js';
import type { Clock } from '../../clock.js';
import {
  CliError,
  ExitCode,
  InterruptedError,
  MigrationFailedError,
  NotFoundError,
  UnavailableError,
  UsageError,
  ValidationError,
  VerificationError,
} from '../../errors.js';
import { unlockRepositories } from '../unlock.js';
import {
  type BatchRecord,
  type BatchState,
  ensureDirectory,
  type Journal,
  JOURNAL_FILE,
  type OrgExportEvent,
  planBatches,
  readJournal,
  writeJournal,
} from './journal.js';
import { fetchBatchArchive } from './archive.js';
import { MigrationPoller } from './poller.js';
import { Slots } from './slots.js';

export const DEFAULT_BATCH_SIZE = 50;
export const DEFAULT_PARALLEL = 4;
/** A service clock a little behind ours must not hide a migration we started. */
const START_LOOKUP_SKEW_MS = 10 * 60_000;
/** Migrations that failed on the service are started again this many times before being reported. */
const RETRIES = 1;

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
  /** Identifies the command line: an existing journal with another one is refused unless `restart`. */
  fingerprint: string;
  command: string;
  restart: boolean;
  intervalMs?: number | undefined;
  clock: Clock;
  signal?: AbortSignal | undefined;
  onEvent?(event: OrgExportEvent): void;
}

export interface OrgExportResult {
  journalPath: string;
  batches: BatchRecord[];
  repositories: number;
  /** Repositories in a verified archive on disk. */
  verifiedRepositories: number;
  /** 0 when every repository is in a verified archive; else the worst failure's code. */
  exitCode: number;
  pollRequests: number;
}

/**
 * Exports a whole list of repositories as batches, at most `parallel` migrations at a time, each
 * going start → wait → download and verify → unlock → delete-archive exactly as a single export
 * does. Every step is written to the journal before and after it happens, so the same call after a
 * crash carries on: a batch whose start answer was lost is looked up with the list before any new
 * start, and downloads resume from their `.part`.
 */
export async function runOrgExport(client: ApiClient, options: OrgExportOptions): Promise<OrgExportResult> {
  const { org, dir, clock } = options;
  const emit = (event: OrgExportEvent) => options.onEvent?.(event);
  ensureDirectory(dir);
  const journalPath = join(dir, JOURNAL_FILE);

  let journal = await readJournal(dir);
  const resumed = journal !== undefined && !options.restart;
  if (journal && journal.fingerprint !== options.fingerprint && !options.restart) {
    throw new UsageError(`${journalPath} belongs to another export: \`${journal.command}\``, {
      hint: 'run that command again to continue it, use another --output-dir, or add --restart to plan this one anew (archives already saved stay)',
    });
  }
  if (!journal || options.restart) {
    const now = new Date(clock.now()).toISOString();
    journal = {
      version: 1,
      fingerprint: options.fingerprint,
      command: options.command,
      org,
      createdAt: now,
      updatedAt: now,
      batches: planBatches(options.repositories, options.batchSize),
    };
  }
  const state: Journal = journal;
  // Writes are chained so the file on disk is always one whole, recent snapshot.
  let writing: Promise<void> = Promise.resolve();
  const save = (): Promise<void> => {
    writing = writing.then(() => {
      state.updatedAt = new Date(clock.now()).toISOString();
      return writeJournal(dir, state);
    });
    return writing;
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
    batches: state.batches.length,
    repositories: state.batches.reduce((n, b) => n + b.repositories.length, 0),
    resumed,
    journal: journalPath,
  });

  const poller = new MigrationPoller(client, {
    org,
    clock,
    intervalMs: options.intervalMs,
    signal: options.signal,
    onNotice: (message) => emit({ type: 'notice', message }),
  });
  const claimed = new Set(state.batches.flatMap((b) => b.migrationIds));

  const step = async (batch: BatchRecord, next: BatchState, message: string, migrationId?: number) => {
    batch.state = next;
    await save();
    emit({ type: 'batch', batch: batch.index, state: next, migrationId, repositories: batch.repositories.length, message });
  };

  const startBatch = async (batch: BatchRecord): Promise<void> => {
    if (batch.state === 'starting') {
      // The last run sent a start and never heard back: the migration may exist already.
      const found = await findStarted(client, org, batch, claimed);
      if (found) {
        batch.migrationIds.push(found.id);
        claimed.add(found.id);
        await step(batch, 'started', `found migration ${found.id}, started by an earlier run`, found.id);
        return;
      }
    } else {
      batch.attempts++;
    }
    for (let spamWaits = 0; ; spamWaits++) {
      batch.state = 'starting';
      batch.startingAt = clock.now();
      await save();
      let migration: Migration;
      try {
        migration = await startMigration(client, org, { ...options.body, repositories: batch.repositories });
      } catch (error) {
        if (error instanceof ValidationError && /spam|too many/i.test(error.message) && spamWaits < 20) {
          // docs/service.md#start-migration: a refused start started nothing; wait and ask again.
          emit({ type: 'notice', message: `batch ${batch.index}: the service refuses new starts for now; waiting` });
          await clock.sleep(Math.min(60_000, 5_000 * 2 ** Math.min(spamWaits, 4)), options.signal);
          continue;
        }
        if (error instanceof UnavailableError) {
          // The answer was lost, not necessarily the start: look before starting again.
          const found = await findStarted(client, org, batch, claimed);
          if (found) migration = found;
          else throw error;
        } else {
          // A clear refusal started nothing.
          batch.state = 'pending';
          throw error;
        }
      }
      batch.migrationIds.push(migration.id);
      claimed.add(migration.id);
      await step(batch, 'started', `started migration ${migration.id}`, migration.id);
      return;
    }
  };

  /** Takes the batch through its steps; with `untilExported`, only as far as an exported migration. */
  const runBatch = async (batch: BatchRecord, untilExported: boolean): Promise<void> => {
    for (;;) {
      const id = batch.migrationIds.at(-1);
      if (untilExported && ON_DISK_STATES.has(batch.state)) return;
      switch (batch.state) {
        case 'pending':
        case 'starting':
          await startBatch(batch);
          break;
        case 'started': {
          const migration = await poller.watch(id as number);
          emit({ type: 'migration', batch: batch.index, migrationId: migration.id, state: migration.state });
          if (migration.state === 'failed') {
            if (batch.attempts <= RETRIES) {
              await step(batch, 'pending', `migration ${migration.id} failed on the service; starting it again`, migration.id);
              break;
            }
            throw new MigrationFailedError(`migration ${migration.id} failed on the service (tried ${batch.attempts} times)`);
          }
          await step(batch, 'exported', `migration ${migration.id} exported`, migration.id);
          break;
        }
        case 'exported':
          await fetchBatchArchive(client, { ...options, emit }, batch, id as number);
          await step(
            batch,
            'downloaded',
            `${batch.archive?.path} (${batch.archive?.bytes} bytes${batch.archive?.verified ? ', verified' : ''})`,
            id,
          );
          break;
        case 'downloaded':
          // Unlocking and deleting are for an archive known good on disk, never for one merely received.
          if (!batch.archive?.verified && (options.unlock || options.deleteArchive)) {
            throw new VerificationError(`the archive of migration ${id} was not verified, so nothing was unlocked or deleted`);
          }
          if (options.unlock) {
            const outcomes = await unlockRepositories(client, org, id as number, batch.repositories);
            const failed = outcomes.filter((o) => !o.ok);
            if (failed.length > 0) {
              throw new CliError(
                `could not unlock ${failed.map((o) => o.repository).join(', ')}`,
                failed[0]?.exitCode ?? ExitCode.Unexpected,
              );
            }
          }
          await step(batch, 'unlocked', options.unlock ? `unlocked ${batch.repositories.length} repositories` : 'kept locked as asked', id);
          break;
        case 'unlocked':
          if (options.deleteArchive) {
            // The service's copy may be the only other one: it goes only once every git object was checked.
            if (!batch.archive?.gitObjectsChecked) {
              throw new VerificationError(
                `the git objects of ${batch.archive?.path ?? `migration ${id}'s archive`} were not checked (git is not on PATH), so the service's copy of migration ${id} was kept`,
              );
            }
            try {
              await deleteArchive(client, org, id as number);
            } catch (error) {
              // Deleted by an earlier run that stopped before it could say so.
              if (!(error instanceof NotFoundError)) throw error;
            }
          }
          await step(batch, 'done', options.deleteArchive ? `deleted the archive of migration ${id} from the service` : 'done', id);
          return;
        case 'done':
        case 'failed':
          return;
      }
    }
  };

  // At most `parallel` migrations on the service (start to exported) and at most `parallel` archives
  // being fetched, verified and released: the next batch starts while the last one downloads.
  const onService = new Slots(Math.max(1, options.parallel));
  const onDisk = new Slots(Math.max(1, options.parallel));
  let interrupted: unknown;
  const task = async (batch: BatchRecord) => {
    try {
      if (!ON_DISK_STATES.has(batch.state)) {
        await onService.run(() => (interrupted ? Promise.resolve() : runBatch(batch, true)));
      }
      if (interrupted || !ON_DISK_STATES.has(batch.state)) return;
      await onDisk.run(() => (interrupted ? Promise.resolve() : runBatch(batch, false)));
    } catch (error) {
      if (error instanceof InterruptedError || options.signal?.aborted) {
        interrupted = error;
        return;
      }
      if (!(error instanceof CliError)) throw error;
      batch.error = { message: error.message, exitCode: error.exitCode };
      if (error instanceof MigrationFailedError) batch.state = 'failed';
      await save();
      emit({
        type: 'error',
        batch: batch.index,
        migrationId: batch.migrationIds.at(-1),
        message: error.message,
        exitCode: error.exitCode,
      });
    }
  };
  await Promise.all(state.batches.filter((b) => b.state !== 'done').map(task));
  await writing;
  if (interrupted) {
    throw new InterruptedError('stopped the export', {
      hint: `run the same command again to continue; the journal is ${journalPath}`,
    });
  }

  const failures = state.batches.filter((b) => b.state !== 'done' || b.error);
  const total = state.batches.reduce((n, b) => n + b.repositories.length, 0);
  const verifiedRepositories = state.batches
    .filter((b) => b.archive?.verified)
    .reduce((n, b) => n + b.repositories.length, 0);
  let exitCode: number = ExitCode.Ok;
  for (const batch of failures) exitCode = worse(exitCode, batch.error?.exitCode ?? ExitCode.Unexpected);
  if (exitCode === ExitCode.Ok && verifiedRepositories < total) exitCode = ExitCode.VerificationFailed;
  return {
    journalPath,
    batches: state.batches,
    repositories: total,
    verifiedRepositories,
    exitCode,
    pollRequests: poller.requests,
  };
}

const ON_DISK_STATES: ReadonlySet<BatchState> = new Set(['exported', 'downloaded', 'unlocked', 'done', 'failed']);

/** A migration this batch started but whose answer never came: same repositories, created after the start was sent. */
async function findStarted(
  client: ApiClient,
  org: string,
  batch: BatchRecord,
  claimed: Set<number>,
): Promise<Migration | undefined> {
  const since = (batch.startingAt ?? 0) - START_LOOKUP_SKEW_MS;
  const wanted = [...batch.repositories].map((name) => name.toLowerCase()).sort().join('\n');
  for await (const page of listAllMigrations(client, org, { perPage: 100 })) {
    for (const migration of page) {
      if (Date.parse(migration.created_at) < since) return undefined;
      if (claimed.has(migration.id)) continue;
      const names = (migration.repositories ?? []).map((repo) => repo.full_name.toLowerCase()).sort().join('\n');
      if (names === wanted) return migration;
    }
  }
  return undefined;
}

/** Which of two exit codes to report: an interruption, then the service's verdicts, then the rest. */
function worse(a: number, b: number): number {
  const rank = (code: number) =>
    code === ExitCode.Ok
      ? 0
      : code === ExitCode.VerificationFailed
        ? 9
        : code === ExitCode.MigrationFailed
          ? 8
          : code === ExitCode.Unexpected
            ? 10
            : code;
  return rank(b) > rank(a) ? b : a;
}
