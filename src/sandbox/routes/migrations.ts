import type { IncomingMessage, ServerResponse } from 'node:http';
import { START_FLAGS } from '../../api/types.js';
import { buildArchive } from '../archive.js';
import { excludes, HttpFailure, notFound, paginate, readJson } from '../http.js';
import { listedRepository, type SeedOrganization } from '../seed.js';
import { validateStart } from '../start.js';
import { defaultBody, type StoredMigration } from '../state.js';
import type { ApiParts } from './parts.js';

/** One call below /orgs/{org}/migrations, once the token may see the organization's migrations. */
interface MigrationCall {
  request: IncomingMessage;
  response: ServerResponse;
  url: URL;
  org: SeedOrganization;
  /** The X-Service-Api-Version asked for, if any. */
  version: string | undefined;
}

/** The migration a call names, and the repository (for a lock). */
interface Target {
  migration: StoredMigration;
  repo: string;
}

interface Route {
  method: string;
  /** The segments after /orgs/{org}/migrations/{id}; `:repo` stands for any name. */
  path: string[];
  handle(parts: ApiParts, call: MigrationCall, target: Target): void;
}

type CollectionHandler = (parts: ApiParts, call: MigrationCall) => void | Promise<void>;

/** The table of docs/service.md#endpoints; the sandbox answers any other method or path with a 404. */
const COLLECTION: Partial<Record<string, CollectionHandler>> = { GET: listMigrations, POST: startMigration };
const ROUTES: Route[] = [
  { method: 'GET', path: [], handle: showMigration },
  { method: 'GET', path: ['archive'], handle: redirectToArchive },
  { method: 'DELETE', path: ['archive'], handle: deleteArchive },
  { method: 'DELETE', path: ['repos', ':repo', 'lock'], handle: unlockRepository },
  { method: 'GET', path: ['repositories'], handle: listRepositories },
];

/** Answers a call below /orgs/{org}/migrations (`rest`: the path's segments after it, decoded). */
export async function handleMigrations(parts: ApiParts, call: MigrationCall, rest: string[]): Promise<void> {
  // HEAD is a GET without the body (node:http leaves the body out).
  const method = call.request.method === 'HEAD' ? 'GET' : (call.request.method ?? 'GET');
  const [idText, ...below] = rest;
  if (idText === undefined) {
    const handle = COLLECTION[method];
    if (!handle) throw notFound();
    return handle(parts, call);
  }
  if (!/^\d+$/.test(idText)) throw notFound();
  const migration = parts.store.find(call.org, Number(idText));
  if (!migration) throw notFound();
  const route = ROUTES.find((candidate) => candidate.method === method && matches(candidate.path, below));
  if (!route) throw notFound();
  route.handle(parts, call, { migration, repo: below[1] ?? '' });
}

function matches(pattern: string[], segments: string[]): boolean {
  return (
    pattern.length === segments.length &&
    pattern.every((part, index) => (part.startsWith(':') ? segments[index] !== '' : part === segments[index]))
  );
}

function listMigrations({ store, send }: ApiParts, { request, response, url, org, version }: MigrationCall): void {
  const excludeRepositories = excludes(url).includes('repositories');
  const { items, links } = paginate(url, store.list(org));
  const views = items.map((migration) => store.view(migration, { excludeRepositories, version }));
  send(response, 200, views, links, request);
}

async function startMigration(parts: ApiParts, { request, response, url, org, version }: MigrationCall): Promise<void> {
  const { store, faults, options, baseUrl } = parts;
  const spam = options.spamLimit ?? { starts: 10, windowSeconds: 60 };
  const body = (await readJson(request)) as Record<string, unknown>;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpFailure(400, { message: 'Problems parsing JSON: the body must be an object' });
  }
  const { repositories, errors } = validateStart(body, org, store);
  if (errors.length > 0) throw new HttpFailure(422, { message: 'Validation Failed', errors });
  if (store.recentStarts(org, spam.windowSeconds * 1000) >= spam.starts) {
    throw new HttpFailure(422, {
      message: 'Validation Failed',
      errors: [
        {
          resource: 'Migration',
          code: 'custom',
          message: 'This endpoint has been spammed: too many migrations started recently',
        },
      ],
    });
  }
  const flags = defaultBody(repositories.map((repo) => repo.full_name));
  for (const field of START_FLAGS) if (body[field] === true) flags[field] = true;
  const migration = store.start(org, flags, flags.org_metadata_only ? [] : repositories);
  prepareArchive(parts, migration);
  if (faults.takeLostStartAnswer()) {
    response.socket?.destroy();
    return;
  }
  const view = store.view(migration, {
    excludeRepositories: Array.isArray(body.exclude) && body.exclude.includes('repositories'),
    version,
    asStarted: true,
  });
  parts.send(response, 201, view, { location: `${baseUrl}${url.pathname}/${migration.id}` });
}

/** The archive is built when storage is first asked for it, and served while the migration has one. */
function prepareArchive({ store, storage, dataDir, options }: ApiParts, migration: StoredMigration): void {
  let built: ReturnType<typeof buildArchive> | undefined;
  const build = () => {
    built ??= buildArchive(dataDir, {
      migration: store.view(migration),
      organization: store.view(migration).owner,
      repositories: migration.repositories,
      seedOrganization: migration.org,
      users: store.seed.users,
      extrasOf: (repo) => store.seedRepository(migration.org, repo),
      padBytes: options.archivePadBytes ?? 0,
    });
    return built;
  };
  storage.register(migration.guid, async () => (store.archiveAvailable(migration) ? build() : undefined));
}

function showMigration(
  { store, options, send }: ApiParts,
  { request, response, url, version }: MigrationCall,
  { migration }: Target,
): void {
  const view = store.view(migration, { excludeRepositories: excludes(url).includes('repositories'), version });
  const unfinished = view.state === 'pending' || view.state === 'exporting';
  const pace: Record<string, string> =
    unfinished && options.pollIntervalSeconds ? { 'x-poll-interval': String(options.pollIntervalSeconds) } : {};
  send(response, 200, view, pace, request);
}

function redirectToArchive(
  { store, storage, storageOrigin }: ApiParts,
  { response }: MigrationCall,
  { migration }: Target,
): void {
  if (!store.archiveAvailable(migration)) throw notFound();
  response.writeHead(302, { location: storage.signedUrl(storageOrigin, migration.guid) }).end();
}

function deleteArchive({ store, clock }: ApiParts, { response }: MigrationCall, { migration }: Target): void {
  if (!store.archiveAvailable(migration)) throw notFound();
  migration.archiveDeletedAt = clock.now();
  response.writeHead(204).end();
}

function unlockRepository(_parts: ApiParts, { response }: MigrationCall, { migration, repo }: Target): void {
  const lower = repo.toLowerCase();
  // docs/service.md#repository-locks: unlocking a repository that belongs to the migration answers 204.
  if (!migration.repositories.some((candidate) => candidate.name.toLowerCase() === lower)) throw notFound();
  migration.locked.delete(lower);
  response.writeHead(204).end();
}

function listRepositories(
  { send }: ApiParts,
  { request, response, url, version }: MigrationCall,
  { migration }: Target,
): void {
  const { items, links } = paginate(url, migration.repositories);
  send(response, 200, items.map((repo) => listedRepository(repo, version)), links, request);
}
