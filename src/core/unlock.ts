import type { ApiClient } from '../api/client.js';
import { listAllMigrationRepositories, listAllMigrations, unlockRepository } from '../api/migrations.js';
import type { Migration } from '../api/types.js';
import { CliError, type ExitCode } from '../errors.js';

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
export async function migrationRepositoryNames(client: ApiClient, org: string, id: number): Promise<string[]> {
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
      if (!(error instanceof CliError)) throw error;
      outcome = { repository, ok: false, error: error.message, exitCode: error.exitCode };
    }
    outcomes.push(outcome);
  }
  return outcomes;
}

/** The most recent migration that locked `name`: owners often no longer know the id. */
export async function findLockingMigration(
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
