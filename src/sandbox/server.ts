import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { rootCertificates } from 'node:tls';
import { join } from 'node:path';
import { API_VERSION } from '../api/types.js';
import { Faults } from './faults.js';
import { createAuthority } from './certificates.js';
import { closeServer, cutHalfWay, decodeSegment, errorBody, HttpFailure, listen, notFound, type Server, sendJson } from './http.js';
import { RateLimiter } from './ratelimit.js';
import { handleAdmin } from './routes/admin.js';
import { dispatch } from './routes/dispatches.js';
import { handleMigrations } from './routes/migrations.js';
import type { ApiParts } from './routes/parts.js';
import { withMetadata, withRepositories } from './scale.js';
import { DEFAULT_SEED, organizationObject, type SeedOrganization, type SeedToken } from './seed.js';
import { MigrationStore, SandboxClock } from './state.js';
import { ArchiveStorage } from './storage.js';
import { HookRegistry } from './webhooks.js';
import { createRelay, type SandboxRelay } from './relay.js';
import { closeOnlyIdleConnections } from '../support/keep-alive.js';
import type { RecordedSandboxRequest, SandboxOptions } from './options.js';

export type { SandboxOptions } from './options.js';

export interface Sandbox {
  /** API root to use as --base-url. */
  baseUrl: string;
  storageOrigin: string;
  /** With `tls`: the file holding the certificate of the authority that issued both origins' certificate (PEM), and that certificate. */
  ca?: { file: string; certificate: string };
  /** The default organization and its owner's classic token. */
  org: string;
  ownerToken: string;
  tokens: SeedToken[];
  clock: SandboxClock;
  faults: Faults;
  store: MigrationStore;
  /** Webhooks and their deliveries (docs/service.md#webhook-delivery, #repository-dispatch, #delivery-rules). */
  hooks: HookRegistry;
  /** The relay of docs/sandbox.md#relay, at `<baseUrl>/relay/…`. */
  relay: SandboxRelay;
  /** Every request both origins received, for assertions (also `GET /_sandbox/requests`). */
  requests: RecordedSandboxRequest[];
  close(): Promise<void>;
}

const SUPPORTED_VERSIONS = [API_VERSION];

/** Starts the emulator of docs/service.md on loopback: an API origin and an archive storage origin. */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const seed = withMetadata(withRepositories(options.seed ?? DEFAULT_SEED, options.repositories ?? 0), options);
  const clock = options.clock ?? new SandboxClock();
  const faults = new Faults();
  if (options.faults) faults.set(options.faults);
  const requests: RecordedSandboxRequest[] = [];
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-migrate-sandbox-'));
  const storage = new ArchiveStorage(clock, faults, (options.archiveUrlTtlSeconds ?? 300) * 1000);
  const exportMs = (options.exportSeconds ?? 2) * 1000;
  const limiter = new RateLimiter(options.rateLimit, clock);
  const requestLogLimit = options.requestLogLimit ?? 1000;
  const relay = createRelay(options.relayPingMs ?? 30_000);

  // With `tls`, both origins serve one certificate for 127.0.0.1, ::1 and localhost, issued by an
  // authority made for this sandbox alone (certificates.ts); its certificate is written beside the
  // sandbox's data, to be trusted with --ca-file.
  let ca: Sandbox['ca'];
  let create = (handler: RequestListener): Server => createServer(handler);
  if (options.tls) {
    const authority = createAuthority('svc-migrate sandbox CA');
    const served = authority.issue({ names: ['localhost', '127.0.0.1', '::1'] });
    ca = { file: join(dataDir, 'ca.pem'), certificate: authority.certificate };
    await writeFile(ca.file, authority.certificate);
    create = (handler) => createTlsServer(served, handler);
  }
  const serve = (handler: RequestListener): Server => {
    const server = create(handler);
    closeOnlyIdleConnections(server);
    return server;
  };
  const scheme = options.tls ? 'https' : 'http';

  const storageServers: Server[] = [];
  const storageHandler = (request: IncomingMessage, response: ServerResponse) => {
    record('storage', request, response);
    storage.handle(request, response).catch(() => response.destroy());
  };
  const storagePort = await listen(serve(storageHandler), '127.0.0.1', options.storagePort ?? 0, storageServers).catch(
    async (error: unknown) => {
      await rm(dataDir, { recursive: true, force: true });
      throw error;
    },
  );
  // "localhost" may resolve to ::1 first; answer there too so the cross-origin URL always connects.
  await listen(serve(storageHandler), '::1', storagePort, storageServers).catch(() => undefined);
  const storageOrigin = `${scheme}://localhost:${storagePort}`;

  const apiServers: Server[] = [];
  const apiServer = serve((request, response) => {
    record('api', request, response);
    response.setHeader('date', new Date(clock.now()).toUTCString());
    handleApi(request, response).catch((error: unknown) => {
      const failure =
        error instanceof HttpFailure ? error : new HttpFailure(500, { message: `sandbox error: ${String(error)}` });
      const url = new URL(request.url ?? '/', baseUrl);
      sendJson(response, failure.status, errorBody(failure, request.method ?? 'GET', url.pathname), failure.headers);
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
  const baseUrl = `${scheme}://127.0.0.1:${apiPort}`;
  const bases = { api: baseUrl, web: 'https://sandbox.invalid' };
  const store = new MigrationStore(
    seed,
    clock,
    bases,
    exportMs,
    (options.exportSecondsPerRepository ?? 0) * 1000,
  );
  const home = seed.organizations[0];
  const hooks = new HookRegistry({
    organization: organizationObject(home?.login ?? 'octo-org', home?.id ?? 1, bases),
    apiBase: baseUrl,
    findRepository: (name) => home && store.repository(home, name),
    now: () => clock.now(),
    ...(ca ? { ca: [...rootCertificates, ca.certificate] } : {}),
  });
  const send: ApiParts['send'] = (response, status, body, headers = {}, conditional) => {
    const onNotModified = () => conditional && refund(conditional, response);
    sendJson(response, status, body, headers, conditional && { request: conditional, onNotModified });
  };
  const parts: ApiParts = { seed, clock, faults, store, hooks, relay, requests, baseUrl, storageOrigin, options, storage, dataDir, send };

  function record(origin: 'api' | 'storage', request: IncomingMessage, response: ServerResponse): void {
    const entry: RecordedSandboxRequest = {
      origin,
      method: request.method ?? '',
      url: request.url ?? '',
      headers: request.headers,
      at: clock.now(),
    };
    requests.push(entry);
    // A sandbox left running for days must not grow: keep the most recent entries only.
    if (requests.length > requestLogLimit) requests.splice(0, requests.length - requestLogLimit);
    // 'close' comes for finished and for cut answers alike; a connection dropped before any answer has no status.
    response.once('close', () => {
      if (response.headersSent) entry.status = response.statusCode;
      const reset = response.getHeader('x-ratelimit-reset');
      if (reset !== undefined) entry.rateLimitReset = Number(reset);
    });
  }

  async function handleApi(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', baseUrl);
    if (url.pathname.startsWith('/_sandbox')) return handleAdmin(parts, request, response, url);
    if (url.pathname.startsWith('/relay/') && (await relay.handle(request, response, url, scheme))) return;
    if (faults.takeDrop(url.pathname)) {
      response.socket?.destroy();
      return;
    }
    if (faults.takeCutAnswer(url.pathname)) cutHalfWay(response);
    const failStatus = faults.takeFailure(url.pathname);
    if (failStatus) throw new HttpFailure(failStatus, { message: 'Service Unavailable (sandbox fault)' });

    const named = request.headers['x-service-api-version'];
    const version = named === undefined ? undefined : String(named);
    if (version !== undefined && !SUPPORTED_VERSIONS.includes(version)) {
      throw new HttpFailure(400, {
        message: `Unsupported X-Service-Api-Version "${version}"; supported versions: ${SUPPORTED_VERSIONS.join(', ')}`,
      });
    }
    const token = authenticate(request);
    const limitHeaders = limiter.count(token.token);
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
    const [root, orgName, collection, ...rest] = segments;
    if (root === 'repos' && segments.length === 4 && segments[3] === 'dispatches' && request.method === 'POST') {
      return dispatch(parts, request, response, token, orgName ?? '', collection ?? '');
    }
    if (root !== 'orgs' || !orgName || collection !== 'migrations') throw notFound();
    requireClassic(token);
    const org = authorize(token, orgName);
    return handleMigrations(parts, { request, response, url, org, version }, rest);
  }

  function authenticate(request: IncomingMessage): SeedToken {
    const header = request.headers.authorization ?? '';
    const match = /^(?:bearer|token)\s+(\S+)$/i.exec(header);
    if (!match) throw new HttpFailure(401, { message: 'Requires authentication' });
    const token = seed.tokens.find((candidate) => candidate.token === match[1]);
    if (!token || token.revoked) throw new HttpFailure(401, { message: 'Bad Credentials' });
    return token;
  }

  /** docs/service.md#authentication: the migration endpoints take classic tokens only. */
  function requireClassic(token: SeedToken): void {
    if (token.kind !== 'classic') {
      throw new HttpFailure(403, {
        message: `Resource not accessible by ${token.kind} token: the migration endpoints reject fine-grained personal access tokens, app user tokens and app installation tokens`,
      });
    }
  }

  function authorize(token: SeedToken, orgName: string): SeedOrganization {
    const org = store.organization(orgName);
    // A non-owner learns nothing about the organization's migrations (docs/service.md#authentication): 404, not 403.
    if (!org?.owners.includes(token.user)) throw notFound();
    return org;
  }

  /** A 304 costs nothing: give the request back to the quota. */
  function refund(request: IncomingMessage, response: ServerResponse): void {
    const match = /^(?:bearer|token)\s+(\S+)$/i.exec(request.headers.authorization ?? '');
    const left = match?.[1] ? limiter.refund(match[1]) : undefined;
    if (!left) return;
    response.setHeader('x-ratelimit-remaining', left.remaining);
    response.setHeader('x-ratelimit-used', left.used);
  }

  const ownerToken =
    seed.tokens.find(
      (token) => token.kind === 'classic' && !token.revoked && seed.organizations[0]?.owners.includes(token.user),
    )?.token ?? '';

  return {
    baseUrl,
    storageOrigin,
    ...(ca ? { ca } : {}),
    org: seed.organizations[0]?.login ?? '',
    ownerToken,
    tokens: seed.tokens,
    clock,
    faults,
    store,
    hooks,
    relay,
    requests,
    async close() {
      relay.close();
      await Promise.all([...apiServers, ...storageServers].map(closeServer));
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
