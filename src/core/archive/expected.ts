import type { ApiClient } from '../../api/client.js';
import { getMigration, listAllMigrationRepositories } from '../../api/migrations.js';
import type { ExpectedContent } from './verify.js';

/** What the service says migration `id`'s archive must hold (docs/service.md#migration-repositories). */
export async function expectedContent(client: ApiClient, org: string, id: number): Promise<ExpectedContent> {
  const { data: migration } = await getMigration(client, org, id, { excludeRepositories: true });
  const repositories: string[] = [];
  for await (const page of listAllMigrationRepositories(client, org, id)) {
    repositories.push(...page.map((repo) => repo.full_name));
  }
  return {
    migrationId: id,
    repositories,
    excludeGitData: Boolean(migration.exclude_git_data) || Boolean(migration.org_metadata_only),
    excludeMetadata: Boolean(migration.exclude_metadata) || Boolean(migration.org_metadata_only),
  };
}
