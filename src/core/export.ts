import { existsSync } from 'node:fs';
import type { ApiClient } from '../api/client.js';
import { deleteArchive } from '../api/migrations.js';
import type { Migration, StartMigrationBody } from '../api/types.js';
import type { Clock } from '../support/clock.js';
import { counted } from '../support/counted.js';
import { shellWord } from '../support/shell-word.js';
import { CliError, ExitCode, MigrationFailedError, VerificationError } from '../errors.js';
import { existingFileError } from './destination.js';
import { type Begun, startOrContinue } from './export-resume.js';
import { type DownloadOptions, type DownloadResult, downloadArchive } from './download.js';
import { type UnlockOutcome, unlockRepositories } from './unlock.js';
import { type WaitEvent, waitForMigrations } from './wait.js';

type ExportStep = 'start' | 'wait' | 'download' | 'unlock' | 'delete-archive';

export interface ExportOptions {
  org: string;
  body: StartMigrationBody;
  download: Omit<DownloadOptions, 'org' | 'id' | 'clock' | 'target'> & {
    /** Where the archive goes, given the migration id (known only once the export started). */
    target: (id: number) => DownloadOptions['target'];
  };
  unlock: boolean;
  deleteArchive: boolean;
  /** `--new`: start a migration even when an earlier run left one of these repositories to continue. */
  fresh?: boolean | undefined;
  intervalMs?: number | undefined;
  timeoutMs?: number | undefined;
  clock: Clock;
  signal?: AbortSignal | undefined;
  onStep?: (step: ExportStep, detail: string) => void;
  onWaitEvent?: (event: WaitEvent) => void;
  onNotice?: (message: string) => void;
}

export interface ExportReport {
  migration: Migration;
  download: DownloadResult;
  unlocked: UnlockOutcome[];
  archiveDeleted: boolean;
  /** Repositories this export locked that are locked still (`--lock` without `--unlock`). */
  locked: string[];
}

/** An export that stopped after it locked repositories: which are locked still, for the message to name. */
export class ExportStoppedError extends CliError {
  readonly migrationId: number;
  readonly locked: string[];
  constructor(error: CliError, message: string, hint: string, migrationId: number, locked: string[]) {
    super(message, error.exitCode, { hint, cause: error, ...(error.status === undefined ? {} : { status: error.status }) });
    this.migrationId = migrationId;
    this.locked = locked;
  }
}

/**
 * The main job: start → wait → download, then unlock and delete the archive only once it is fully
 * on disk and verified. A failure says what already happened and the command that continues.
 */
export async function runExport(client: ApiClient, options: ExportOptions): Promise<ExportReport> {
  const { org, clock } = options;
  const done: string[] = [];
  let migration: Migration | undefined;
  /** What this export locked and has not unlocked: a failure must name it. */
  let locked: string[] = [];
  const fail = (error: unknown, next: string): never => {
    if (!(error instanceof CliError)) throw error;
    const already = done.length > 0 ? ` (done: ${done.join('; ')})` : '';
    if (migration && locked.length > 0) throw new ExportStoppedError(error, `${error.message}${already}`, next, migration.id, locked);
    throw new CliError(`${error.message}${already}`, error.exitCode, {
      hint: next,
      cause: error,
      ...(error.status === undefined ? {} : { status: error.status }),
    });
  };

  const target = options.download.target;
  let begun: Begun;
  try {
    begun = await startOrContinue(client, org, {
      body: options.body,
      fresh: Boolean(options.fresh),
      partPath: (candidate) => {
        const where = target(candidate);
        return 'path' in where ? `${where.path}.part` : undefined;
      },
      now: () => clock.now(),
      onNotice: options.onNotice,
    });
  } catch (error) {
    return fail(error, (error as CliError).hint ?? 'fix the problem above and run the export again');
  }
  migration = begun.migration;
  const id = migration.id;
  // The migration says whether it locked: one continued may be another run's.
  if (migration.lock_repositories || options.body.lock_repositories) locked = repositoryNames(migration, options.body);
  done.push(`${begun.continued ? 'continued' : 'started'} migration ${id}${locked.length > 0 ? ' with its repositories locked' : ''}`);
  options.onStep?.('start', begun.step);
  // A name made from the migration id (no -o FILE) is known only now: a file there is said at
  // once, not after the wait and the download.
  const destination = target(id);
  if ('path' in destination && !destination.force && existsSync(destination.path)) {
    return fail(
      existingFileError(destination.path),
      `the export goes on on the service: \`${downloadCommand(id, options.download, true).replace(' --output', ' --wait --output')}\` replaces that file with its archive; or run the export again with --force to replace it, or with --output naming another file`,
    );
  }

  let failed = false;
  try {
    const waited = await waitForMigrations(client, {
      org,
      ids: [id],
      intervalMs: options.intervalMs,
      timeoutMs: options.timeoutMs,
      clock,
      signal: options.signal,
      onEvent: options.onWaitEvent,
      onNotice: options.onNotice,
    });
    failed = waited.failed.length > 0;
    migration = waited.migrations[0] ?? migration;
  } catch (error) {
    return fail(error, `run the same export again: it continues migration ${id} (or keep waiting with \`svc-migrate status ${id} --wait\`, then \`${downloadCommand(id, options.download)}\`)`);
  }
  if (failed) {
    // Nothing will ever be downloaded: with --unlock, give the repositories back now.
    let next = 'start a new export; the service says no more about why it failed';
    if (options.body.lock_repositories && options.unlock) {
      const outcomes = await unlockRepositories(client, org, id, repositoryNames(migration, options.body));
      const stuck = outcomes.filter((o) => !o.ok).map((o) => o.repository);
      locked = stuck;
      if (stuck.length === 0) {
        done.push(`unlocked ${counted(outcomes.length, 'repository', 'repositories')}`);
        options.onStep?.('unlock', `unlocked ${outcomes.map((o) => o.repository).join(', ')}`);
        next = `the repositories are unlocked; ${next}`;
      } else {
        next = `unlock the rest with \`svc-migrate unlock ${id} ${stuck.join(' ')}\`, then ${next}`;
      }
    } else if (options.body.lock_repositories) {
      next = `unlock the repositories with \`svc-migrate unlock ${id} --all\`, then ${next}`;
    }
    return fail(new MigrationFailedError(`migration ${id} failed on the service; it has no archive`), next);
  }
  done.push(`migration ${id} exported`);
  options.onStep?.('wait', `migration ${id} exported`);

  let download: DownloadResult;
  try {
    download = await downloadArchive(client, { ...options.download, target: target(id), org, id, clock });
  } catch (error) {
    if (error instanceof VerificationError) {
      return fail(
        error,
        `the service keeps its copy: nothing was unlocked or deleted; fetch it again with \`${downloadCommand(id, options.download, true)}\``,
      );
    }
    // A state of this machine (no room, a directory it cannot write) is fixed first: its hint leads.
    const first = error instanceof CliError && error.exitCode === ExitCode.Usage && error.hint ? `${error.hint}; then ` : '';
    return fail(error, `${first}resume the download with \`${downloadCommand(id, options.download)}\``);
  }
  // Unlocking and deleting are for an archive known good on disk, never for one merely received.
  if (!download.verified && (options.unlock || options.deleteArchive)) {
    return fail(
      new VerificationError(`the archive of migration ${id} was not verified, so nothing was unlocked or deleted`),
      `verify it with \`svc-migrate archive verify ${download.path}\`, then unlock and delete-archive by hand`,
    );
  }
  done.push(`archive saved to ${download.path}`);
  options.onStep?.(
    'download',
    `${download.path} (${download.bytes} bytes${download.sha256 ? `, sha256 ${download.sha256}` : ''}${download.verified ? ', verified' : ''})`,
  );

  let unlocked: UnlockOutcome[] = [];
  if (options.unlock) {
    unlocked = await unlockRepositories(client, org, id, repositoryNames(migration, options.body));
    const failed = unlocked.filter((o) => !o.ok);
    locked = failed.map((o) => o.repository);
    if (failed.length > 0) {
      return fail(
        new CliError(
          `could not unlock ${failed.map((o) => o.repository).join(', ')}`,
          failed[0]?.exitCode ?? ExitCode.Unexpected,
        ),
        `retry with \`svc-migrate unlock ${id} ${failed.map((o) => o.repository).join(' ')}\``,
      );
    }
    done.push(`unlocked ${counted(unlocked.length, 'repository', 'repositories')}`);
    options.onStep?.('unlock', `unlocked ${unlocked.map((o) => o.repository).join(', ')}`);
  }

  let archiveDeleted = false;
  if (options.deleteArchive) {
    // The service's copy may be the only other one: it goes only once every git object was checked.
    if (!download.gitObjectsChecked) {
      return fail(
        new VerificationError(
          `the git objects of ${download.path} were not checked (git is not on PATH), so the service's copy of migration ${id} was kept`,
        ),
        `install git, run \`svc-migrate archive verify ${download.path}\`, then \`svc-migrate delete-archive ${id} --yes\``,
      );
    }
    try {
      await deleteArchive(client, org, id);
    } catch (error) {
      return fail(error, `delete it later with \`svc-migrate delete-archive ${id} --yes\``);
    }
    archiveDeleted = true;
    options.onStep?.('delete-archive', `deleted the archive of migration ${id} from the service`);
  }
  return { migration, download, unlocked, archiveDeleted, locked };
}

/** The names to unlock: the migration's own list, or what the export was started with. */
function repositoryNames(migration: Migration, body: StartMigrationBody): string[] {
  const names = (migration.repositories ?? []).map((repo) => repo.name);
  return names.length > 0 ? names : body.repositories.map((name) => name.slice(name.indexOf('/') + 1));
}

/**
 * The `download` that takes over from this export, with its download flags: `--force` where the
 * export had it, where the file is there now, or where it must be replaced (`replace`).
 */
function downloadCommand(id: number, download: ExportOptions['download'], replace = false): string {
  const target = download.target(id);
  const words = ['svc-migrate', 'download', String(id)];
  if ('path' in target) {
    words.push('--output', shellWord(target.path));
    if (replace || target.force || existsSync(target.path)) words.push('--force');
  } else {
    words.push('--output', '-');
  }
  if (!download.checksum) words.push('--no-checksum');
  if (download.verify === false) words.push('--no-verify');
  if (download.maxSize !== undefined) words.push('--max-size', String(download.maxSize));
  return words.join(' ');
}
