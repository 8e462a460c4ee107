import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_VERSION, type Repository, type ServiceErrorBody } from '../api/types.js';
import { buildArchive } from './archive.js';
import { type FaultSettings, Faults } from './faults.js';
import { DEFAULT_SEED, ownerObject, type SeedData, type SeedOrganization, type SeedToken } from './seed.js';
import { defaultBody, MigrationStore, SandboxClock, type StoredMigration } from './state.js';
import { ArchiveStorage } from './storage.js';
import { type EmitRequest, HookRegistry } from './webhooks.js';

export interface SandboxOptions {
  /** API port on 127.0.0.1 (0 = any free port). */
  port?: number;
  /** Storage port on localhost (0 = any free port). */
  storagePort?: number;
  seed?: SeedData;
  /** Seconds from start to `exported` (default 2). */
  exportSeconds?: number;
  /** Pads every archive with this many incompressible bytes. */
  archivePadBytes?: number;
  /** How long a signed archive URL stays valid (default 300 s). */
  archiveUrlTtlSeconds?: number;
  /**
   * Opt-in request limit per token and window. Beyond it: 429 with retry-after (secondary-limit
   * style), or with `status: 403`, 403 with x-ratelimit-remaining: 0 and no retry-after (primary).
   */
  rateLimit?: { limit: number; windowSeconds: number; status?: 403 | 429 };
  /** Starts allowed per organization in a window before the "spammed" 422 (default 10 per 60 s). */
  spamLimit?: { starts: number; windowSeconds: number };
  /** Sends `x-poll-interval` (seconds) with unfinished migrations, as services that pace pollers do. */
  pollIntervalSeconds?: number;
  faults?: FaultSettings;
}

export interface RecordedSandboxRequest {
  origin: 'api' | 'storage';
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  at: number;
  /** The status answered (also when the body was then cut); undefined for a connection dropped unanswered. */
  status?: number;
  /** The `x-ratelimit-reset` answered (epoch seconds), if any. */
  rateLimitReset?: number;
}

export interface Sandbox {
  /** API root to use as --base-url. */
  baseUrl: string;
  storageOrigin: string;
  /** The default organization and its owner's classic token. */
  org: string;
  ownerToken: string;
  tokens: SeedToken[];
  clock: SandboxClock;
  faults: Faults;
  store: MigrationStore;
  /** Webhooks and their deliveries (spec §4.8, §4.9, §6). */
  hooks: HookRegistry;
  /** Every request both origins received, for assertions (also `GET /_sandbox/requests`). */
  requests: RecordedSandboxRequest[];
  close(): Promise<void>;
}

const DEFAULT_LIMIT = 5000;
const SUPPORTED_VERSIONS = [API_VERSION];
const BOOLEAN_FIELDS = [
  'lock_repositories',
  'exclude_metadata',
  'exclude_git_data',
  'exclude_attachments',
  'exclude_releases',
  'exclude_owner_projects',
  'org_metadata_only',
] as const;

class HttpFailure extends Error {
  readonly status: number;
  readonly body: ServiceErrorBody;
  readonly headers: Record<string, string>;
  constructor(status: number, body: ServiceErrorBody, headers: Record<string, string> = {}) {
    super(body.message);
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

const notFound = () => new HttpFailure(404, { message: 'Not Found', documentation_url: 'docs/sandbox.md' });

/** Starts the emulator of spec §2–5 and 7–9 on loopback: an API origin and an archive storage origin. */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const seed = options.seed ?? DEFAULT_SEED;
  const clock = new SandboxClock();
  const faults = new Faults();
  if (options.faults) faults.set(options.faults);
  const requests: RecordedSandboxRequest[] = [];
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-migrate-sandbox-'));
  const storage = new ArchiveStorage(clock, faults, (options.archiveUrlTtlSeconds ?? 300) * 1000);
  const exportMs = (options.exportSeconds ?? 2) * 1000;
  const spam = options.spamLimit ?? { starts: 10, windowSeconds: 60 };
  const usage = new Map<string, { windowStart: number; used: number }>();

  const storageServers: Server[] = [];
  const storageHandler = (request: IncomingMessage, response: ServerResponse) => {
    record('storage', request, response);
    storage.handle(request, response).catch(() => response.destroy());
  };
  const storagePort = await listen(createServer(storageHandler), '127.0.0.1', options.storagePort ?? 0, storageServers).catch(
    async (error: unknown) => {
      await rm(dataDir, { recursive: true, force: true });
      throw error;
    },
  );
  // "localhost" may resolve to ::1 first; answer there too so the cross-origin URL always connects.
  await listen(createServer(storageHandler), '::1', storagePort, storageServers).catch(() => undefined);
  const storageOrigin = `http://localhost:${storagePort}`;

  const apiServers: Server[] = [];
  const apiServer = createServer((request, response) => {
    record('api', request, response);
    response.setHeader('date', new Date(clock.now()).toUTCString());
    handleApi(request, response).catch((error: unknown) => {
      const failure =
        error instanceof HttpFailure ? error : new HttpFailure(500, { message: `sandbox error: ${String(error)}` });
      sendJson(response, failure.status, failure.body, failure.headers);
    });
  });
  let apiPort: number;
  try {
    apiPort = await listen(apiServer, '127.0.0.1', options.port ?? 0, apiServers);
  } catch (error) {
    // A busy port: close what already listens, or the process never ends.
    await Promise.all(storageServers.map(closeServer));
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  const baseUrl = `http://127.0.0.1:${apiPort}`;
  const store = new MigrationStore(seed, clock, { api: baseUrl, web: 'https://sandbox.invalid' }, exportMs);
  const hooks = new HookRegistry(seed.organizations[0]?.id ?? 1);

  function record(origin: 'api' | 'storage', request: IncomingMessage, response: ServerResponse): void {
    const entry: RecordedSandboxRequest = {
      origin,
      method: request.method ?? '',
      url: request.url ?? '',
      headers: request.headers,
      at: clock.now(),
    };
    requests.push(entry);
    // 'close' comes for finished and for cut answers alike; a connection dropped before any answer has no status.
    response.once('close', () => {
      if (response.headersSent) entry.status = response.statusCode;
      const reset = response.getHeader('x-ratelimit-reset');
      if (reset !== undefined) entry.rateLimitReset = Number(reset);
    });
  }

  async function handleApi(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', baseUrl);
    if (url.pathname.startsWith('/_sandbox')) return handleAdmin(request, response, url);
    if (faults.takeDrop(url.pathname)) {
      response.socket?.destroy();
      return;
    }
    const failStatus = faults.takeFailure(url.pathname);
    if (failStatus) throw new HttpFailure(failStatus, { message: 'Service Unavailable (sandbox fault)' });

    const version = request.headers['x-service-api-version'];
    if (version !== undefined && !SUPPORTED_VERSIONS.includes(String(version))) {
      throw new HttpFailure(400, {
        message: `Unsupported X-Service-Api-Version "${version}"; supported versions: ${SUPPORTED_VERSIONS.join(', ')}`,
      });
    }
    const token = authenticate(request);
    const limitHeaders = countRequest(token.token);
    response.setHeader('x-ratelimit-limit', limitHeaders.limit);
    response.setHeader('x-ratelimit-remaining', limitHeaders.remaining);
    response.setHeader('x-ratelimit-reset', limitHeaders.reset);
    response.setHeader('x-ratelimit-used', limitHeaders.used);
    response.setHeader('x-ratelimit-resource', 'core');
    if (limitHeaders.exceeded) {
      const primary = options.rateLimit?.status === 403;
      throw new HttpFailure(
        primary ? 403 : 429,
        { message: 'API rate limit exceeded (sandbox rate limit)' },
        primary ? {} : { 'retry-after': String(limitHeaders.retryAfter) },
      );
    }

    // Split before decoding so an encoded "/" stays inside its segment (`..%2Fx` is one repo name).
    const segments = url.pathname.split('/').slice(1).map(decodeSegment);
    const [root, orgName, collection, idText, sub, repoName, tail] = segments;
    if (root === 'repos' && segments.length === 4 && segments[3] === 'dispatches' && request.method === 'POST') {
      return dispatch(request, response, token, orgName ?? '', collection ?? '');
    }
    if (root !== 'orgs' || !orgName || collection !== 'migrations') throw notFound();
    requireClassic(token);
    const org = authorize(token, orgName);
    const method = request.method ?? 'GET';

    if (idText === undefined) {
      if (method === 'GET') return listMigrations(request, response, url, org);
      if (method === 'POST') return startMigration(request, response, url, org);
      throw notFound();
    }
    if (!/^\d+$/.test(idText)) throw notFound();
    const migration = store.find(org, Number(idText));
    if (!migration) throw notFound();

    if (sub === undefined && method === 'GET') {
      const view = store.view(migration, { excludeRepositories: excludes(url).includes('repositories') });
      const unfinished = view.state === 'pending' || view.state === 'exporting';
      const pace: Record<string, string> =
        unfinished && options.pollIntervalSeconds ? { 'x-poll-interval': String(options.pollIntervalSeconds) } : {};
      return sendJson(response, 200, view, pace, request);
    }
    if (sub === 'archive' && segments.length === 5) {
      if (!store.archiveAvailable(migration)) throw notFound();
      if (method === 'GET') {
        response.writeHead(302, { location: storage.signedUrl(storageOrigin, migration.guid) }).end();
        return;
      }
      if (method === 'DELETE') {
        migration.archiveDeletedAt = clock.now();
        response.writeHead(204).end();
        return;
      }
    }
    if (sub === 'repos' && repoName && tail === 'lock' && segments.length === 7 && method === 'DELETE') {
      const lower = repoName.toLowerCase();
      // spec §3.2: unlocking a repository that belongs to the migration answers 204.
      if (!migration.repositories.some((repo) => repo.name.toLowerCase() === lower)) throw notFound();
      migration.locked.delete(lower);
      response.writeHead(204).end();
      return;
    }
    if (sub === 'repositories' && segments.length === 5 && method === 'GET') {
      const { items, links } = paginate(url, migration.repositories);
      return sendJson(response, 200, items, links, request);
    }
    throw notFound();
  }

  function authenticate(request: IncomingMessage): SeedToken {
    const header = request.headers.authorization ?? '';
    const match = /^(?:bearer|token)\s+(\S+)$/i.exec(header);
    if (!match) throw new HttpFailure(401, { message: 'Requires authentication' });
    const token = seed.tokens.find((candidate) => candidate.token === match[1]);
    if (!token || token.revoked) throw new HttpFailure(401, { message: 'Bad Credentials' });
    return token;
  }

  /** spec §5.2: the migration endpoints take classic tokens only. */
  function requireClassic(token: SeedToken): void {
    if (token.kind !== 'classic') {
      throw new HttpFailure(403, {
        message: `Resource not accessible by ${token.kind} token: the migration endpoints reject fine-grained personal access tokens, app user tokens and app installation tokens`,
      });
    }
  }

  function authorize(token: SeedToken, orgName: string): SeedOrganization {
    const org = store.organization(orgName);
    // A non-owner learns nothing about the organization's migrations (spec §5.1): 404, not 403.
    if (!org?.owners.includes(token.user)) throw notFound();
    return org;
  }

  function countRequest(token: string) {
    const windowMs = (options.rateLimit?.windowSeconds ?? 3600) * 1000;
    const limit = options.rateLimit?.limit ?? DEFAULT_LIMIT;
    const now = clock.now();
    let entry = usage.get(token);
    if (!entry || now >= Math.ceil((entry.windowStart + windowMs) / 1000) * 1000) {
      entry = { windowStart: now, used: 0 };
      usage.set(token, entry);
    }
    entry.used++;
    // Windows end on a whole second, so x-ratelimit-reset (epoch seconds) is exactly when the window ends.
    const resetMs = Math.ceil((entry.windowStart + windowMs) / 1000) * 1000;
    return {
      limit,
      used: Math.min(entry.used, limit),
      remaining: Math.max(0, limit - entry.used),
      reset: Math.ceil(resetMs / 1000),
      exceeded: options.rateLimit !== undefined && entry.used > limit,
      retryAfter: Math.max(1, Math.ceil((resetMs - now) / 1000)),
    };
  }

  /** A 304 costs nothing: give the request back to the quota. */
  function refund(request: IncomingMessage, response: ServerResponse): void {
    const match = /^(?:bearer|token)\s+(\S+)$/i.exec(request.headers.authorization ?? '');
    const entry = match?.[1] ? usage.get(match[1]) : undefined;
    if (!entry) return;
    entry.used = Math.max(0, entry.used - 1);
    response.setHeader(
      'x-ratelimit-remaining',
      Math.max(0, Number(response.getHeader('x-ratelimit-limit')) - entry.used),
    );
  }

  function paginate<T>(url: URL, all: T[]): { items: T[]; links: Record<string, string> } {
    const perPage = Math.min(100, Math.max(1, Number(url.searchParams.get('per_page') ?? 30) || 30));
    const page = Math.max(1, Number(url.searchParams.get('page') ?? 1) || 1);
    const last = Math.max(1, Math.ceil(all.length / perPage));
    const items = all.slice((page - 1) * perPage, page * perPage);
    const link = (target: number, rel: string) => {
      const next = new URL(url);
      next.searchParams.set('per_page', String(perPage));
      next.searchParams.set('page', String(target));
      return `<${next.toString()}>; rel="${rel}"`;
    };
    const parts: string[] = [];
    if (page < last) parts.push(link(page + 1, 'next'), link(last, 'last'));
    if (page > 1) parts.push(link(1, 'first'), link(Math.min(page - 1, last), 'prev'));
    return { items, links: parts.length > 0 ? { link: parts.join(', ') } : {} };
  }

  function listMigrations(request: IncomingMessage, response: ServerResponse, url: URL, org: SeedOrganization): void {
    const excludeRepositories = excludes(url).includes('repositories');
    const { items, links } = paginate(url, store.list(org));
    const views = items.map((migration) => store.view(migration, { excludeRepositories }));
    sendJson(response, 200, views, links, request);
  }

  async function startMigration(
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    org: SeedOrganization,
  ): Promise<void> {
    const raw = await readBody(request);
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      throw new HttpFailure(400, { message: 'Problems parsing JSON' });
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new HttpFailure(400, { message: 'Problems parsing JSON: the body must be an object' });
    }
    const { repositories, errors } = validateStart(body, org);
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
    for (const field of BOOLEAN_FIELDS) if (body[field] === true) flags[field] = true;
    const migration = store.start(org, flags, flags.org_metadata_only ? [] : repositories);
    prepareArchive(migration);
    const view = store.view(migration, {
      excludeRepositories: Array.isArray(body.exclude) && body.exclude.includes('repositories'),
    });
    sendJson(response, 201, view, { location: `${baseUrl}${url.pathname}/${migration.id}` });
  }

  function validateStart(body: Record<string, unknown>, org: SeedOrganization) {
    type FieldError = { resource: string; field: string; code: string; message: string };
    const errors: FieldError[] = [];
    const error = (field: string, code: string, message: string) =>
      errors.push({ resource: 'Migration', field, code, message });
    const known = store.repositoriesOf(org);
    const repositories: Repository[] = [];
    const names = body.repositories;
    if (names === undefined) error('repositories', 'missing_field', 'repositories is required');
    else if (!Array.isArray(names))
      error('repositories', 'invalid', 'repositories must be an array of "owner/repo" strings');
    else {
      for (const [index, name] of names.entries()) {
        if (typeof name !== 'string' || !/^[^/\s]+\/[^/\s]+$/.test(name)) {
          error(`repositories[${index}]`, 'invalid', `${JSON.stringify(name)} is not shaped "owner/repo"`);
          continue;
        }
        const repo = known.find((candidate) => candidate.full_name.toLowerCase() === name.toLowerCase());
        if (!repo) error(`repositories[${index}]`, 'invalid', `${name} is not a repository of ${org.login}`);
        else if (!repositories.includes(repo)) repositories.push(repo);
      }
      if (names.length === 0 && body.org_metadata_only !== true) {
        error('repositories', 'invalid', 'repositories must name at least one repository');
      }
      if (names.length > 0 && body.org_metadata_only === true) {
        error('org_metadata_only', 'invalid', 'repositories must be empty when org_metadata_only is true');
      }
    }
    for (const field of BOOLEAN_FIELDS) {
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

  function prepareArchive(migration: StoredMigration): void {
    let built: ReturnType<typeof buildArchive> | undefined;
    const build = () => {
      built ??= buildArchive(dataDir, {
        migration: store.view(migration),
        organization: store.view(migration).owner,
        repositories: migration.repositories,
        padBytes: options.archivePadBytes ?? 0,
      });
      return built;
    };
    storage.register(migration.guid, async () => (store.archiveAvailable(migration) ? build() : undefined));
  }

  /** spec §4.9: POST /repos/{owner}/{repo}/dispatches emits repository_dispatch. */
  async function dispatch(request: IncomingMessage, response: ServerResponse, token: SeedToken, owner: string, name: string) {
    const org = store.organization(owner);
    const repository = org && store.repositoriesOf(org).find((repo) => repo.name.toLowerCase() === name.toLowerCase());
    if (!org || !repository || ![...org.owners, ...org.members].includes(token.user)) throw notFound();
    let body: { event_type?: unknown; client_payload?: unknown };
    try {
      body = JSON.parse((await readBody(request)) || '{}') as typeof body;
    } catch {
      throw new HttpFailure(400, { message: 'Problems parsing JSON' });
    }
    if (typeof body.event_type !== 'string' || body.event_type.length === 0 || body.event_type.length > 100) {
      throw new HttpFailure(422, {
        message: 'Validation Failed',
        errors: [{ resource: 'Dispatch', field: 'event_type', code: 'invalid', message: 'event_type must be a string of 1 to 100 characters' }],
      });
    }
    const user = seed.users.find((u) => u.login === token.user) ?? { login: token.user, id: 0 };
    const sender = ownerObject(user.login, user.id, 'User', { api: baseUrl, web: 'https://sandbox.invalid' });
    await hooks.dispatch(repository, sender as unknown as Record<string, unknown>, body.event_type, body.client_payload);
    response.writeHead(204).end();
  }

  async function handleAdmin(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const method = request.method ?? 'GET';
    const body = method === 'POST' ? (JSON.parse((await readBody(request)) || '{}') as Record<string, unknown>) : {};
    switch (`${method} ${url.pathname}`) {
      case 'GET /_sandbox':
        return sendJson(response, 200, describe());
      case 'GET /_sandbox/clock':
        return sendJson(response, 200, { now: new Date(clock.now()).toISOString() });
      case 'POST /_sandbox/clock':
        clock.advance(Number(body.advanceSeconds ?? 0) * 1000);
        return sendJson(response, 200, { now: new Date(clock.now()).toISOString() });
      case 'POST /_sandbox/faults':
        faults.set(body as FaultSettings);
        return sendJson(response, 200, faults.snapshot());
      case 'DELETE /_sandbox/faults':
        faults.clear();
        return sendJson(response, 200, faults.snapshot());
      case 'GET /_sandbox/requests':
        return sendJson(response, 200, requests);
      case 'GET /_sandbox/hooks':
        return sendJson(response, 200, hooks.list());
      case 'POST /_sandbox/hooks': {
        if (typeof body.url !== 'string') throw new HttpFailure(422, { message: 'url is required' });
        const created = await hooks.create({
          url: body.url,
          ...(typeof body.secret === 'string' ? { secret: body.secret } : {}),
          contentType: body.content_type === 'form' ? 'form' : 'json',
          events: Array.isArray(body.events) ? body.events.map(String) : ['*'],
        });
        return sendJson(response, 201, created);
      }
      case 'POST /_sandbox/emit': {
        if (typeof body.event !== 'string') throw new HttpFailure(422, { message: 'event is required' });
        return sendJson(response, 200, await hooks.emit(body as unknown as EmitRequest));
      }
      case 'POST /_sandbox/migrations': {
        const org = store.organization(String(body.org ?? seed.organizations[0]?.login));
        if (!org) throw notFound();
        store.bulkExports(org, Number(body.count ?? 1));
        return sendJson(response, 201, { org: org.login, total: store.list(org).length });
      }
      default:
        throw new HttpFailure(404, { message: `sandbox: no admin route ${method} ${url.pathname}` });
    }
  }

  function describe() {
    return {
      baseUrl,
      storageOrigin,
      org: seed.organizations[0]?.login,
      apiVersion: API_VERSION,
      tokens: seed.tokens.map(({ token, kind, user, revoked, label }) => ({
        token,
        kind,
        user,
        revoked: Boolean(revoked),
        label,
      })),
    };
  }

  const ownerToken =
    seed.tokens.find(
      (token) => token.kind === 'classic' && !token.revoked && seed.organizations[0]?.owners.includes(token.user),
    )?.token ?? '';

  return {
    baseUrl,
    storageOrigin,
    org: seed.organizations[0]?.login ?? '',
    ownerToken,
    tokens: seed.tokens,
    clock,
    faults,
    store,
    hooks,
    requests,
    async close() {
      await Promise.all([...apiServers, ...storageServers].map(closeServer));
      await rm(dataDir, { recursive: true, force: true });
    },
  };

  function sendJson(
    response: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
    conditional?: IncomingMessage,
  ): void {
    const text = JSON.stringify(body);
    const etag = `W/"${createHash('sha1').update(text).digest('hex')}"`;
    if (conditional && status === 200) {
      if (conditional.headers['if-none-match'] === etag) {
        refund(conditional, response);
        response.writeHead(304, { etag, ...headers }).end();
        return;
      }
      headers = { ...headers, etag };
    }
    response.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(text)),
      'x-service-media-type': 'service.v3; format=json',
      ...headers,
    });
    response.end(text);
  }
}

function excludes(url: URL): string[] {
  return url.searchParams.getAll('exclude').flatMap((value) => value.split(','));
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const MAX_BODY = 1 << 20;

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new HttpFailure(413, { message: 'Request body too large' });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function listen(server: Server, host: string, port: number, into: Server[]): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      into.push(server);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}
