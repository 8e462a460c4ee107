import { UnavailableError } from '../errors.js';
import type { ApiClient, ApiResponse } from './client.js';
import { header } from './headers.js';
import { clampPerPage } from './paginate.js';
import { checkStorageUrl } from './transport-policy.js';
import type { Migration, Repository, StartMigrationBody } from './types.js';

// One typed function per endpoint of docs/service.md#endpoints. Path parameters are always percent-encoded so a
// name such as `../x` can never change the request path.

export interface PageQuery {
  perPage?: number | undefined;
  page?: number | undefined;
}

export interface ListMigrationsQuery extends PageQuery {
  excludeRepositories?: boolean | undefined;
}

const orgPath = (org: string) => `/orgs/${encodeURIComponent(org)}/migrations`;
const migrationPath = (org: string, id: number) => `${orgPath(org)}/${encodeURIComponent(String(id))}`;

const orgNotFound = (org: string) => ({
  message: `organization ${org} was not found, or your token's user is not one of its owners`,
  hint: 'check --org; the migration endpoints answer only to organization owners',
});

// The 404 of docs/service.md#start-migration is "resource not found": the organization, or (on a
// service that answers so) a repository of the body; the message must not blame the wrong one.
const startNotFound = (org: string) => ({
  message: `not found: organization ${org}, or a repository named in the request (or your token's user is not an owner of ${org})`,
  hint: `check --org and the repository names; the migration endpoints answer only to organization owners`,
});

const migrationNotFound = (org: string, id: number) => ({
  message: `migration ${id} was not found in organization ${org}`,
  hint: `run \`svc-migrate list --org ${org}\` to see its migrations (owners only)`,
});

function pageQuery(query: PageQuery, onNotice?: (message: string) => void) {
  let perPage: number | undefined;
  if (query.perPage !== undefined) {
    const clamped = clampPerPage(query.perPage);
    if (clamped.notice) onNotice?.(clamped.notice);
    perPage = clamped.perPage;
  }
  return { per_page: perPage, page: query.page };
}

/** docs/service.md#list-migrations, one page. */
export function listMigrations(
  client: ApiClient,
  org: string,
  query: ListMigrationsQuery = {},
  onNotice?: (message: string) => void,
): Promise<ApiResponse<Migration[]>> {
  return client.request<Migration[]>({
    method: 'GET',
    path: orgPath(org),
    query: { ...pageQuery(query, onNotice), exclude: query.excludeRepositories ? 'repositories' : undefined },
    notFound: orgNotFound(org),
    list: true,
  });
}

/** docs/service.md#list-migrations, every page from `query.page` on, following `Link: rel="next"`. */
export async function* listAllMigrations(
  client: ApiClient,
  org: string,
  query: ListMigrationsQuery = {},
  onNotice?: (message: string) => void,
): AsyncGenerator<Migration[]> {
  const pages = client.paginate<Migration>({
    method: 'GET',
    path: orgPath(org),
    query: {
      ...pageQuery({ perPage: query.perPage ?? 100, page: query.page }, onNotice),
      exclude: query.excludeRepositories ? 'repositories' : undefined,
    },
    notFound: orgNotFound(org),
  });
  for await (const page of pages) yield page.data;
}

/** docs/service.md#start-migration. Never retried blindly: see ApiClient.request. */
export async function startMigration(client: ApiClient, org: string, body: StartMigrationBody): Promise<Migration> {
  const response = await client.request<Migration>({
    method: 'POST',
    path: orgPath(org),
    body,
    notFound: startNotFound(org),
  });
  return response.data;
}

/** docs/service.md#migration-status. Repeated calls are conditional (ETag), so an unchanged state costs no rate limit. */
export function getMigration(
  client: ApiClient,
  org: string,
  id: number,
  options: { excludeRepositories?: boolean } = {},
): Promise<ApiResponse<Migration>> {
  return client.request<Migration>({
    method: 'GET',
    path: migrationPath(org, id),
    query: { exclude: options.excludeRepositories ? 'repositories' : undefined },
    notFound: migrationNotFound(org, id),
  });
}

/** docs/service.md#download-archive: the archive lives elsewhere; this returns where, without following the 302. */
export async function getArchiveUrl(client: ApiClient, org: string, id: number): Promise<URL> {
  const response = await client.request<unknown>({
    method: 'GET',
    path: `${migrationPath(org, id)}/archive`,
    accept: [301, 302, 303, 307, 308],
    notFound: {
      message: `the archive of migration ${id} in ${org} was not found: it may have been deleted, or expired (archives are deleted seven days after export)`,
      hint: `check the migration with \`svc-migrate status ${id}\`; if its archive is gone, start a new export`,
    },
  });
  const location = header(response.headers, 'location');
  if (!location) {
    throw new UnavailableError(
      `the service answered HTTP ${response.status} for the archive of migration ${id} without a location`,
    );
  }
  let url: URL;
  try {
    url = new URL(location, response.url);
  } catch {
    throw new UnavailableError(`the service sent an archive location for migration ${id} that is not a URL`);
  }
  return checkStorageUrl(url, client.baseUrl);
}

/** docs/service.md#delete-archive */
export async function deleteArchive(client: ApiClient, org: string, id: number): Promise<void> {
  await client.request<void>({
    method: 'DELETE',
    path: `${migrationPath(org, id)}/archive`,
    notFound: {
      message: `migration ${id} in ${org} has no archive to delete (not exported yet, already deleted or expired, or no such migration)`,
      hint: `run \`svc-migrate status ${id}\` to check the migration`,
    },
  });
}

/** docs/service.md#unlock-repository */
export async function unlockRepository(client: ApiClient, org: string, id: number, repoName: string): Promise<void> {
  await client.request<void>({
    method: 'DELETE',
    path: `${migrationPath(org, id)}/repos/${encodeURIComponent(repoName)}/lock`,
    notFound: {
      message: `repository ${repoName} is not locked by migration ${id} in ${org} (or one of them does not exist)`,
      hint: `run \`svc-migrate repos ${id}\` to see the repositories of that migration`,
    },
  });
}

/** docs/service.md#migration-repositories, one page. */
export function listMigrationRepositories(
  client: ApiClient,
  org: string,
  id: number,
  query: PageQuery = {},
  onNotice?: (message: string) => void,
): Promise<ApiResponse<Repository[]>> {
  return client.request<Repository[]>({
    method: 'GET',
    path: `${migrationPath(org, id)}/repositories`,
    query: pageQuery(query, onNotice),
    notFound: migrationNotFound(org, id),
    list: true,
  });
}

/** docs/service.md#migration-repositories, every page. */
export async function* listAllMigrationRepositories(
  client: ApiClient,
  org: string,
  id: number,
  query: PageQuery = {},
  onNotice?: (message: string) => void,
): AsyncGenerator<Repository[]> {
  const pages = client.paginate<Repository>({
    method: 'GET',
    path: `${migrationPath(org, id)}/repositories`,
    query: pageQuery({ perPage: query.perPage ?? 100, page: query.page }, onNotice),
    notFound: migrationNotFound(org, id),
  });
  for await (const page of pages) yield page.data;
}
