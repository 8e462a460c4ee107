import type { ApiClient } from '../api/client.js';
import { listMigrations } from '../api/migrations.js';
import { CliError, ExitCode } from '../errors.js';

export interface TokenCheck {
  /** valid: owner access; not-owner: the token works but sees no migrations of the organization. */
  result: 'valid' | 'not-owner';
  message: string;
}

/**
 * One cheap request (docs/service.md#list-migrations, one migration) that tells what the client's
 * token can do for the organization. A token the service rejects, or a service out of reach,
 * throws its CliError (exit 3, 5).
 */
export async function checkToken(client: ApiClient, org: string): Promise<TokenCheck> {
  try {
    await listMigrations(client, org, { perPage: 1, excludeRepositories: true });
    return { result: 'valid', message: `owner access to ${org}'s migrations` };
  } catch (error) {
    if (error instanceof CliError && error.exitCode === ExitCode.NotFound) {
      return { result: 'not-owner', message: `the token works, but its user is not an owner of ${org} (or the organization does not exist)` };
    }
    throw error;
  }
}
