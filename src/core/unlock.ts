import type { ApiClient } from '../api/client.js';
import { getMigration, listAllMigrationRepositories, listAllMigrations, unlockRepository } from '../api/migrations.js';
import type { Migration } from '../api/types.js';
import { counted } from '../support/counted.js';
import { CliError, ExitCode, InterruptedError, NotFoundError, UsageError } from '../errors.js';

export interface UnlockOutcome {
  repository: string;
  ok: boolean;
  error?: string;
  exitCode?: ExitCode;
}

/**
 * `org/repo` or `repo` → the `repo_name` path parameter of docs/service.md#unlock-repository. Only the organization's own
 * prefix is dropped; anything else stays whole (and is percent-encoded), so `../x` names no path.
 */
function repoName(name: string, org: string): string {
  const prefix = `${org.toLowerCase()}/`;
  return name.toLowerCase().startsWith(prefix) ? name.slice(prefix.length) : name;
}

/** Every repository name of a migration, all pages (docs/service.md#migration-repositories). */
async function migrationRepositoryNames(client: ApiClient, org: string, id: number): Promise<string[]> {
  const names: string[] = [];
  for await (const page of listAllMigrationRepositories(client, org, id)) names.push(...page.map((repo) => repo.name));
  return names;
}

/** Unlocks each repository, carrying on past failures, and reports every outcome. */
export async function unlockRepositories(
  client: ApiClient,
  org: string,
  id: number,
  names: string[],
): Promise<UnlockOutcome[]> {
  const outcomes: UnlockOutcome[] = [];
  for (const name of names) {
    const repository = repoName(name, org);
    let outcome: UnlockOutcome;
    try {
      await unlockRepository(client, org, id, repository);
      outcome = { repository, ok: true };
    } catch (error) {
      // Ctrl-C stops here: every later repository would fail alike, each reported as not unlocked.
      if (!(error instanceof CliError) || error instanceof InterruptedError) throw error;
      outcome = { repository, ok: false, error: error.message, exitCode: error.exitCode };
    }
    outcomes.push(outcome);
  }
  return outcomes;
}

/** The most recent migration that locked `name`: owners often no longer know the id. */
async function findLockingMigration(
  client: ApiClient,
  org: string,
  name: string,
): Promise<Migration | undefined> {
  const wanted = repoName(name, org).toLowerCase();
  for await (const page of listAllMigrations(client, org)) {
    // Lists are newest first, so the first match is the most recent.
    const match = page.find(
      (migration) =>
        migration.lock_repositories && migration.repositories?.some((repo) => repo.name.toLowerCase() === wanted),
    );
    if (match) return match;
  }
  return undefined;
}

export interface UnlockRequest {
  /** The migration id, when given. */
  id?: number | undefined;
  /** Repositories named. */
  names: string[];
  /** `--all`: every repository of the migration (with `--repo`, of the migration that locked it). */
  all?: boolean | undefined;
  /** `--repo`: this repository, in the migration that locked it when no id is given. */
  repo?: string | undefined;
}

export interface UnlockTargets {
  id: number;
  names: string[];
  /** Set when the migration was found from `--repo`. */
  foundFor?: string;
}

/**
 * The checks of a request that need nothing from the service: a migration to act on, and
 * repositories to unlock (the unlock command makes them before it starts).
 */
export function checkUnlockRequest(request: UnlockRequest): void {
  const names = request.repo ? [...request.names, request.repo] : request.names;
  if (request.id === undefined && !request.repo) throw noMigration();
  if (request.id !== undefined) refuseAllWithNames(request.id, request.all, names);
  else refuseAllWithNames(undefined, request.all, request.names);
  if (!request.all && names.length === 0) throw new UsageError('name the repositories to unlock, or pass --all');
}

const noMigration = () => new UsageError('give a migration id, or --repo <name> to find it');

function refuseAllWithNames(id: number | undefined, all: boolean | undefined, names: string[]): void {
  if (!all || names.length === 0) return;
  const which = id === undefined ? 'the migration that locked --repo' : `migration ${id}`;
  throw new UsageError(`--all unlocks every repository of ${which}; do not also name ${names.join(', ')}`, {
    hint: `run \`svc-migrate unlock ${id ?? '--repo <name>'} --all\`, or name the repositories without --all`,
  });
}

/** What `unlock` acts on: the migration (given, or the one that locked `--repo`) and its repositories. */
export async function resolveUnlockTargets(client: ApiClient, org: string, request: UnlockRequest): Promise<UnlockTargets> {
  checkUnlockRequest(request);
  let { id } = request;
  const names = [...request.names];
  let foundFor: string | undefined;
  if (request.repo) {
    if (id === undefined) {
      const found = await findLockingMigration(client, org, request.repo);
      if (!found) {
        throw new NotFoundError(`no migration of ${org} locked ${request.repo}`, {
          hint: 'check the name, or give the migration id: `svc-migrate unlock <id> <repo>`',
        });
      }
      id = found.id;
      foundFor = request.repo;
    }
    // `--repo NAME --all`: every repository of the migration that locked NAME.
    if (!(foundFor && request.all)) names.push(request.repo);
  }
  if (id === undefined) throw noMigration();
  // Found from --repo: only now is there an id to name.
  refuseAllWithNames(id, request.all, names);
  if (request.all) return { id, names: await migrationRepositoryNames(client, org, id), ...(foundFor ? { foundFor } : {}) };
  return { id, names, ...(foundFor ? { foundFor } : {}) };
}

/** The error that ends `unlock` when any repository stayed locked, with what to do next; none when all were unlocked. */
export function unlockFailure(outcomes: UnlockOutcome[], id: number): CliError | undefined {
  const failed = outcomes.filter((o) => !o.ok);
  if (failed.length === 0) return undefined;
  const notFound = failed.every((o) => o.exitCode === ExitCode.NotFound);
  return new CliError(`${failed.length} of ${counted(outcomes.length, 'repository', 'repositories')} could not be unlocked`, failed[0]?.exitCode ?? ExitCode.Unavailable, {
    // A 404 is a name that is not in this migration (or not locked): retrying cannot help.
    hint: notFound
      ? `check the names with \`svc-migrate repos ${id}\`; only repositories of migration ${id} can be unlocked through it`
      : `retry with \`svc-migrate unlock ${id} ${failed.map((o) => o.repository).join(' ')}\``,
  });
}

/**
 * What an org export's unlock step did: unlocked, kept locked as asked, or nothing, when nothing was
 * locked. The command that gives them back is said once, at the end, for every batch at once.
 */
export function releaseMessage(unlock: boolean, locked: boolean, count: number): string {
  if (!unlock && !locked) return 'nothing to unlock: the export did not lock them';
  const repositories = counted(count, 'repository', 'repositories');
  return unlock ? `unlocked ${repositories}` : `kept ${repositories} locked as asked`;
}

/** What `unlock` did with one migration of several: each repository tried, or why none was. */
export interface MigrationUnlock {
  migrationId: number;
  /**
   * `not-locked`: the migration locked nothing; `not-found`: the service has no such migration (404);
   * `failed`: its repositories could not be asked for.
   */
  outcome: 'unlocked' | 'not-locked' | 'not-found' | 'failed';
  repositories: UnlockOutcome[];
  error?: { message: string; exitCode: ExitCode; hint?: string | undefined };
}

/** Every repository of each migration, past failures; a migration started without --lock is left alone. */
export async function unlockMigrations(
  client: ApiClient,
  org: string,
  ids: number[],
  onMigration?: (result: MigrationUnlock) => void,
): Promise<MigrationUnlock[]> {
  const results: MigrationUnlock[] = [];
  for (const migrationId of ids) {
    let result: MigrationUnlock;
    try {
      const { data } = await getMigration(client, org, migrationId, { excludeRepositories: true });
      result = data.lock_repositories
        ? { migrationId, outcome: 'unlocked', repositories: await unlockRepositories(client, org, migrationId, await migrationRepositoryNames(client, org, migrationId)) }
        : { migrationId, outcome: 'not-locked', repositories: [] };
    } catch (error) {
      if (!(error instanceof CliError) || error instanceof InterruptedError) throw error;
      const outcome = error instanceof NotFoundError ? 'not-found' : 'failed';
      result = { migrationId, outcome, repositories: [], error: { message: error.message, exitCode: error.exitCode, hint: error.hint } };
    }
    onMigration?.(result);
    results.push(result);
  }
  return results;
}

/** A migration that holds no repository locked by it any more. */
export function givenBack(result: MigrationUnlock): boolean {
  return result.outcome === 'not-locked' || (result.outcome === 'unlocked' && result.repositories.every((o) => o.ok));
}

/** The hint's commands, worded by the caller, which knows the command line: `retry` given the ids left. */
export interface UnlockCommands {
  retry(ids: number[]): string;
  list: string;
}

/**
 * One migration's line in the report of several: what was done, then each repository. A batch the
 * export left `starting` whose migration the list does not show has no migration id
 * (`start_not_found`, or `failed` when the list could not be had).
 */
export interface MigrationReport {
  migration_id?: number;
  batch?: number;
  state: 'unlocked' | 'not_locked' | 'not_found' | 'failed' | 'unlocked_by_export' | 'unlocked_before' | 'start_not_found';
  /** Found in the list for a batch left `starting`: its start's answer was lost. */
  lost_start?: true;
  repositories: { repository: string; ok: boolean; error?: string }[];
  error?: string;
}

/** What an unlock of several migrations did, each reported, and the error that ends it when any stayed locked. */
export interface MigrationsReport {
  migrations: MigrationReport[];
  failure: CliError | undefined;
}

export function reportOf(result: MigrationUnlock, batch?: number, lostStart = false): MigrationReport {
  return {
    migration_id: result.migrationId,
    ...(batch === undefined ? {} : { batch }),
    ...(lostStart ? { lost_start: true as const } : {}),
    state: result.outcome === 'not-locked' ? 'not_locked' : result.outcome === 'not-found' ? 'not_found' : result.outcome,
    repositories: result.repositories.map(({ repository, ok, error }) => ({ repository, ok, ...(error === undefined ? {} : { error }) })),
    ...(result.error ? { error: result.error.message } : {}),
  };
}

/** `unlock <ids...> --all`: each migration whole, past failures. */
export async function unlockMigrationIds(
  client: ApiClient,
  org: string,
  ids: number[],
  commands: UnlockCommands,
): Promise<MigrationsReport> {
  const results = await unlockMigrations(client, org, ids);
  return { migrations: results.map((result) => reportOf(result)), failure: migrationsUnlockFailure(results, commands) };
}

/** A batch left `starting` whose start could not be looked up (unlock --output-dir). */
export interface LookupFailure {
  batch: number;
  message: string;
  exitCode: ExitCode;
}

/**
 * The error that ends an unlock of several migrations when any stayed locked, was not found, or
 * (a batch left `starting`) could not be looked up: partial (exit 10) when something else was
 * unlocked, else the first failure's code. `commands.retry` tries again what can be tried again,
 * given the ids left; `commands.list` lists the ids there are.
 */
export function migrationsUnlockFailure(
  results: MigrationUnlock[],
  commands: UnlockCommands,
  lookups: LookupFailure[] = [],
): CliError | undefined {
  const stuck = results.filter((result) => !givenBack(result));
  if (stuck.length === 0 && lookups.length === 0) return undefined;
  const failures = [
    ...stuck.map((result) => {
      const failed = result.repositories.filter((o) => !o.ok);
      const why = result.error ?? { message: failed.map((o) => `${o.repository}: ${o.error}`).join(', '), exitCode: failed[0]?.exitCode ?? ExitCode.Unavailable };
      // A 404 only says again that the migration was not found, which the error's head says already.
      return { what: `migration ${result.migrationId}`, ...why, message: result.outcome === 'not-found' ? undefined : why.message };
    }),
    ...lookups.map((lookup) => ({ what: `batch ${lookup.batch}'s start, not looked up`, message: lookup.message, exitCode: lookup.exitCode })),
  ];
  const notFound = stuck.filter((result) => result.outcome === 'not-found').map((result) => result.migrationId);
  const again = stuck.filter((result) => result.outcome !== 'not-found').map((result) => result.migrationId);
  const shown = failures.slice(0, 3).map((f) => (f.message === undefined ? f.what : `${f.what} (${f.message})`)).join('; ');
  const more = failures.length > 3 ? `; … and ${failures.length - 3} more` : '';
  const anyUnlocked = results.some((result) => result.repositories.some((o) => o.ok));
  const code = anyUnlocked ? ExitCode.Partial : (failures[0]?.exitCode ?? ExitCode.Unavailable);
  const kept = stuck.length - notFound.length;
  const said = [
    ...(kept > 0 ? [`${counted(kept, 'migration')} of ${results.length} kept repositories locked`] : []),
    ...(notFound.length > 0 ? [`${counted(notFound.length, 'migration')} of ${results.length} ${notFound.length === 1 ? 'was' : 'were'} not found`] : []),
    ...(lookups.length > 0 ? [`${counted(lookups.length, 'batch', 'batches')} left starting could not be looked up`] : []),
  ];
  const hints = [
    ...(again.length > 0 || lookups.length > 0 ? [`${commands.retry(again)} tries again; unlocking a repository already unlocked is harmless`] : []),
    // A wrong id (or organization): trying again cannot help, the list of ids can.
    ...(notFound.length > 0 ? [`${commands.list} shows the ids of the organization's migrations (${notFound.join(', ')} ${notFound.length === 1 ? 'is' : 'are'} not among them)`] : []),
  ];
  return new CliError(`${said.join('; ')}: ${shown}${more}`, code, { hint: hints.join('; ') });
}
