import type { ApiClient } from '../api/client.js';
import { listAllMigrations, listMigrations } from '../api/migrations.js';
import type { Migration, MigrationState } from '../api/types.js';

export interface MigrationQuery {
  perPage?: number | undefined;
  page?: number | undefined;
  /** Every page, not one. */
  all?: boolean | undefined;
  state?: MigrationState | undefined;
  excludeRepositories: boolean;
}

/**
 * docs/service.md#list-migrations, newest first: one page, every page, or those in `state`. A
 * state searches every page (an older failure must not be missed because it is on page 3) and,
 * without `all`, stops at a page's worth of matches; with `page`, only that page is searched.
 */
export async function findMigrations(
  client: ApiClient,
  org: string,
  query: MigrationQuery,
  onNotice?: (message: string) => void,
): Promise<Migration[]> {
  const { state } = query;
  if (state && query.page === undefined) {
    const limit = query.all ? Infinity : (query.perPage ?? 30);
    const found: Migration[] = [];
    for await (const page of listAllMigrations(client, org, query, onNotice)) {
      found.push(...page.filter((m) => m.state === state));
      if (found.length >= limit) break;
    }
    return found.slice(0, limit);
  }
  const found: Migration[] = [];
  if (query.all) for await (const page of listAllMigrations(client, org, query, onNotice)) found.push(...page);
  else found.push(...(await listMigrations(client, org, query, onNotice)).data);
  return state ? found.filter((m) => m.state === state) : found;
}
