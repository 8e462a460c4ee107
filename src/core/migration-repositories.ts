import type { ApiClient } from '../api/client.js';
import { listAllMigrationRepositories, listMigrationRepositories } from '../api/migrations.js';
import type { Repository } from '../api/types.js';

export interface RepositoryQuery {
  perPage?: number | undefined;
  page?: number | undefined;
  /** Every page, not one. */
  all?: boolean | undefined;
}

/**
 * docs/service.md#migration-repositories: one page or every page. When one page was asked for and
 * more follow, `onMore` is called with how many there are in all (from the `last` page: one more
 * request; undefined when the service links none).
 */
export async function findMigrationRepositories(
  client: ApiClient,
  org: string,
  id: number,
  query: RepositoryQuery,
  onNotice?: (message: string) => void,
  onMore?: (total: number | undefined) => void,
): Promise<Repository[]> {
  if (query.all) {
    const found: Repository[] = [];
    for await (const page of listAllMigrationRepositories(client, org, id, query, onNotice)) found.push(...page);
    return found;
  }
  const page = await listMigrationRepositories(client, org, id, query, onNotice);
  if (page.links.next) onMore?.(await countAll(client, org, id, query, page.links.last));
  return page.data;
}

/** Every page before the `last` one is full: the count is theirs plus what the last one holds. */
async function countAll(
  client: ApiClient,
  org: string,
  id: number,
  query: RepositoryQuery,
  lastLink: string | undefined,
): Promise<number | undefined> {
  if (!lastLink) return undefined;
  const last = new URL(lastLink);
  const lastPage = Number(last.searchParams.get('page'));
  const perPage = Number(last.searchParams.get('per_page') ?? query.perPage ?? 30);
  if (!Number.isInteger(lastPage) || lastPage < 1 || !Number.isInteger(perPage) || perPage < 1) return undefined;
  const page = await listMigrationRepositories(client, org, id, { perPage, page: lastPage });
  return (lastPage - 1) * perPage + page.data.length;
}
