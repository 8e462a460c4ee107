import type { ApiClient } from '../../api/client.js';
import { getMigration, listAllMigrationRepositories } from '../../api/migrations.js';
import type { Migration } from '../../api/types.js';
import type { ExpectedContent } from './verify.js';

/**
 * What the service says the archive of `migration` must hold: its repositories
 * (docs/service.md#migration-repositories) as its exclude flags leave them.
 */
export async function expectedContent(client: ApiClient, org: string, migration: Migration): Promise<ExpectedContent> {
  const repositories: string[] = [];
  for await (const page of listAllMigrationRepositories(client, org, migration.id)) {
    repositories.push(...page.map((repo) => repo.full_name));
  }
  return {
    migrationId: migration.id,
    repositories,
    excludeGitData: Boolean(migration.exclude_git_data) || Boolean(migration.org_metadata_only),
    excludeMetadata: Boolean(migration.exclude_metadata) || Boolean(migration.org_metadata_only),
  };
}

/** The same for migration `id`, asked for first. */
export async function expectedContentOf(client: ApiClient, org: string, id: number): Promise<ExpectedContent> {
  const { data: migration } = await getMigration(client, org, id, { excludeRepositories: true });
  return expectedContent(client, org, migration);
}
