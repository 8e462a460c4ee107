import { type Repository, START_FLAGS } from '../api/types.js';
import type { SeedOrganization } from './seed.js';
import type { MigrationStore } from './state.js';

/** The body of a start request checked field by field; every problem is reported, not the first. */
export function validateStart(body: Record<string, unknown>, org: SeedOrganization, store: MigrationStore) {
  type FieldError = { resource: string; field: string; code: string; message: string; index?: number; value?: unknown };
  const errors: FieldError[] = [];
  const error = (field: string, code: string, message: string, item?: { index: number; value: unknown }) =>
    errors.push({ resource: 'Migration', field, code, message, ...item });
  const repositories: Repository[] = [];
  const names = body.repositories;
  if (names === undefined) error('repositories', 'missing_field', 'repositories is required');
  else if (!Array.isArray(names))
    error('repositories', 'invalid', 'repositories must be an array of "owner/repo" strings');
  else {
    for (const [index, name] of names.entries()) {
      // Entries of the body are named by `index` as the published validation-error shape does. An
      // unknown repository is a 422, not a 404: the 404 of docs/service.md#start-migration is for the
      // organization of the path (docs/sandbox.md#where-the-sandbox-decides).
      if (typeof name !== 'string' || !/^[^/\s]+\/[^/\s]+$/.test(name)) {
        error('repositories', 'invalid', `${JSON.stringify(name)} is not shaped "owner/repo"`, { index, value: name });
        continue;
      }
      const repo = store.repository(org, name, true);
      if (!repo) {
        error('repositories', 'invalid_value', `${name} is not a repository of ${org.login}`, { index, value: name });
      } else if (!repositories.includes(repo)) repositories.push(repo);
    }
    if (names.length === 0 && body.org_metadata_only !== true) {
      error('repositories', 'invalid', 'repositories must name at least one repository');
    }
    if (names.length > 0 && body.org_metadata_only === true) {
      error('org_metadata_only', 'invalid', 'repositories must be empty when org_metadata_only is true');
    }
  }
  for (const field of START_FLAGS) {
    if (body[field] !== undefined && typeof body[field] !== 'boolean')
      error(field, 'invalid', `${field} must be a boolean`);
  }
  if (body.exclude !== undefined) {
    const values = body.exclude;
    if (!Array.isArray(values) || values.some((value) => value !== 'repositories')) {
      error('exclude', 'invalid', 'exclude supports only ["repositories"]');
    }
  }
  return { repositories, errors };
}
