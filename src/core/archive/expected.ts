import type { ApiClient } from '../../api/client.js';
import { getMigration, listAllMigrationRepositories } from '../../api/migrations.js';
import type { Migration } from '../../api/types.js';
import { historyOf, type RepositoryHistory } from './repository-history.js';
import type { ExpectedContent } from './verify.js';

/**
 * What the service says the archive of `migration` must hold: its repositories
 * (docs/service.md#migration-repositories) as its exclude flags leave them, and what it says of
 * their history (an empty one in the archive must be one never pushed to).
 */
export async function expectedContent(client: ApiClient, org: string, migration: Migration): Promise<ExpectedContent> {
  const repositories: string[] = [];
  const histories = new Map<string, RepositoryHistory>();
  for await (const page of listAllMigrationRepositories(client, org, migration.id)) {
    for (const repo of page) {
      repositories.push(repo.full_name);
      const history = historyOf(repo);
      if (history) histories.set(repo.full_name.toLowerCase(), history);
    }
  }
  return {
    migrationId: migration.id,
    repositories,
    histories,
    excludeGitData: Boolean(migration.exclude_git_data) || Boolean(migration.org_metadata_only),
    excludeMetadata: Boolean(migration.exclude_metadata) || Boolean(migration.org_metadata_only),
  };
}

/** The same for migration `id`, asked for first. */
export async function expectedContentOf(client: ApiClient, org: string, id: number): Promise<ExpectedContent> {
  const { data: migration } = await getMigration(client, org, id, { excludeRepositories: true });
  return expectedContent(client, org, migration);
}
