import type { ApiClient } from '../api/client.js';
import { getMigration, listAllMigrations } from '../api/migrations.js';
import type { Migration } from '../api/types.js';

/** The ids of every migration of the organization still pending or exporting, all pages. */
export async function unfinishedMigrationIds(client: ApiClient, org: string): Promise<number[]> {
  const ids: number[] = [];
  for await (const page of listAllMigrations(client, org, { excludeRepositories: true })) {
    for (const migration of page) if (migration.state === 'pending' || migration.state === 'exporting') ids.push(migration.id);
  }
  return ids;
}

/** Each migration as the service has it now, in the order given (docs/service.md#migration-status). */
export async function currentMigrations(
  client: ApiClient,
  org: string,
  ids: number[],
  options: { excludeRepositories: boolean },
): Promise<Migration[]> {
  const migrations: Migration[] = [];
  for (const id of ids) migrations.push((await getMigration(client, org, id, options)).data);
  return migrations;
}
