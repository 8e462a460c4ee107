import type { ApiClient } from '../api/client.js';
import { listAllMigrations } from '../api/migrations.js';
import type { Migration } from '../api/types.js';

// A start whose answer was lost may have started the export all the same (docs/service.md#start-migration:
// the start is not idempotent): before anything is started again, or said to be locked, the list
// of migrations is asked for it. The org export's batches and the single export look alike.

/** A service clock a little behind ours must not hide a migration we started. */
const START_LOOKUP_SKEW_MS = 10 * 60_000;

/** `org/name` or `name`, as one key of a set of repositories. */
const keyOf = (names: string[]) => names.map((name) => name.toLowerCase()).sort().join('\n');

/** Whether the migration exports exactly `repositories` (full names), whatever their case or order. */
export function exportsExactly(migration: Migration, repositories: string[]): boolean {
  return keyOf((migration.repositories ?? []).map((repo) => repo.full_name)) === keyOf(repositories);
}

/**
 * A migration a start sent at `startingAt` (the service's clock when known) started without its
 * answer: exactly the same repositories, created since, and not one of `claimed` (known before).
 */
export async function findStarted(
  client: ApiClient,
  org: string,
  start: { repositories: string[]; startingAt?: number | undefined },
  claimed: Set<number>,
): Promise<Migration | undefined> {
  const since = (start.startingAt ?? 0) - START_LOOKUP_SKEW_MS;
  for await (const page of listAllMigrations(client, org, { perPage: 100 })) {
    for (const migration of page) {
      // Newest first: past the start, nothing later can be it.
      if (Date.parse(migration.created_at) < since) return undefined;
      if (claimed.has(migration.id)) continue;
      if (exportsExactly(migration, start.repositories)) return migration;
    }
  }
  return undefined;
}
