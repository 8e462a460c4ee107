import type { ApiClient } from '../api/client.js';
import { listAllMigrations } from '../api/migrations.js';
import { type Migration, START_FLAGS, type StartFlag, type StartMigrationBody } from '../api/types.js';

// A start whose answer was lost may have started the export all the same (docs/service.md#start-migration:
// the start is not idempotent): before anything is started again, or said to be locked, the list
// of migrations is asked for it. The org export's batches and the single export look alike.
//
// What the lookup takes must be what this start made, never another export's: the same
// repositories, the same start flags, created since the start (less a skew), and not one the
// service listed just before the start (`existed`). The service promises nothing about the order
// of its ids, only that its list is newest first (docs/service.md#list-migrations): so the list is
// read before each start (without repositories, for speed), as far back as the lookup will look,
// and the ids it holds are recorded with the start. What stays open is a migration of the same
// repositories and flags that another export starts between that list and this start
// (the residual race: docs/reliability.md, "A lost start answer").

/** A service clock a little behind ours must not hide a migration we started. */
const START_LOOKUP_SKEW_MS = 10 * 60_000;

/** The flags a migration is started with, as a body gives them. */
export type StartFlags = Partial<Pick<StartMigrationBody, StartFlag>>;

/** What is known of a start before it is sent: enough to tell the migration it made from any other. */
export interface StartRecord {
  /** Full names (`org/name`). */
  repositories: string[];
  /** Unknown (a start recorded by an earlier version): any flags. */
  flags?: StartFlags | undefined;
  /** When the start was about to be sent (ms since the epoch). */
  startingAt?: number | undefined;
  /**
   * Migrations of these repositories the service listed just before the start: none of them is the
   * one it made. Unknown (a start recorded by an earlier version) leaves only the time to go by.
   */
  existed?: number[] | undefined;
}

/** `org/name` or `name`, as one key of a set of repositories. */
const keyOf = (names: string[]) => names.map((name) => name.toLowerCase()).sort().join('\n');

/** Whether the migration exports exactly `repositories` (full names), whatever their case or order. */
export function exportsExactly(migration: Migration, repositories: string[]): boolean {
  return keyOf((migration.repositories ?? []).map((repo) => repo.full_name)) === keyOf(repositories);
}

/** Whether `migration` was started with `flags`: the same export, not another of the same list. */
export function sameFlags(migration: Migration, flags: StartFlags): boolean {
  return START_FLAGS.every((flag) => Boolean(migration[flag]) === Boolean(flags[flag]));
}

/**
 * The migrations the service lists now, newest first: the whole first page, and on as far back as
 * a lookup of a start sent at `startingAt` looks. `withRepositories` to tell which exports what.
 */
export async function migrationsBefore(client: ApiClient, org: string, startingAt: number, withRepositories = false): Promise<Migration[]> {
  const since = startingAt - START_LOOKUP_SKEW_MS;
  const found: Migration[] = [];
  for await (const page of listAllMigrations(client, org, { perPage: 100, excludeRepositories: !withRepositories })) {
    found.push(...page);
    if (page.some((migration) => Date.parse(migration.created_at) < since)) break;
  }
  return found;
}

/** The ids of `listed` a lookup of a start sent at `startingAt` could come upon: what `existed` records. */
export function existedAt(listed: Migration[], startingAt: number): number[] {
  const since = startingAt - START_LOOKUP_SKEW_MS;
  return listed.filter((migration) => Date.parse(migration.created_at) >= since).map((migration) => migration.id);
}

/**
 * A migration the start of `start` made without its answer: exactly the same repositories and
 * flags, created around the start (within the skew either side: the service creates it as the start
 * arrives, seconds after it was sent, on a clock that may differ from ours), not one that existed
 * before it, and not one of `claimed` (taken already). One made later than that is another's,
 * however alike: a start that never reached the service must not adopt the next export of the
 * same repositories, made an hour or a day before this run looks.
 */
export async function findStarted(
  client: ApiClient,
  org: string,
  start: StartRecord,
  claimed: Set<number>,
  now: number,
): Promise<Migration | undefined> {
  const since = (start.startingAt ?? 0) - START_LOOKUP_SKEW_MS;
  // A start recorded without its time (an earlier version) is bounded by the lookup's own time.
  const until = (start.startingAt ?? now) + START_LOOKUP_SKEW_MS;
  const existed = new Set(start.existed);
  for await (const page of listAllMigrations(client, org, { perPage: 100 })) {
    for (const migration of page) {
      const created = Date.parse(migration.created_at);
      // Newest first: past the start, nothing later can be it.
      if (created < since) return undefined;
      if (created > until || claimed.has(migration.id) || existed.has(migration.id)) continue;
      if (exportsExactly(migration, start.repositories) && (!start.flags || sameFlags(migration, start.flags))) return migration;
    }
  }
  return undefined;
}
