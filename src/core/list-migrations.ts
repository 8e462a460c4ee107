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
  /** One page was asked for and more follow: called with how many there are in all (if the service says). */
  onMore?: (total: number | undefined) => void,
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
  else {
    const page = await listMigrations(client, org, query, onNotice);
    found.push(...page.data);
    if (!state && page.links.next) onMore?.(await countAll(client, org, query, page.links.last));
  }
  return state ? found.filter((m) => m.state === state) : found;
}

/**
 * How many migrations the organization has, from the `last` page of the list (one more request,
 * without repositories): all pages before it are full. Undefined when the service gives no `last`.
 */
async function countAll(client: ApiClient, org: string, query: MigrationQuery, lastLink: string | undefined): Promise<number | undefined> {
  if (!lastLink) return undefined;
  const last = new URL(lastLink);
  const lastPage = Number(last.searchParams.get('page'));
  const perPage = Number(last.searchParams.get('per_page') ?? query.perPage ?? 30);
  if (!Number.isInteger(lastPage) || lastPage < 1 || !Number.isInteger(perPage) || perPage < 1) return undefined;
  const page = await listMigrations(client, org, { perPage, page: lastPage, excludeRepositories: true });
  return (lastPage - 1) * perPage + page.data.length;
}
