import type { IncomingMessage, ServerResponse } from 'node:http';
import { API_VERSION } from '../../api/types.js';
import type { Faults } from '../faults.js';
import { HttpFailure, notFound, readJson, sendJson } from '../http.js';
import { describeToken, type SeedData } from '../seed.js';
import type { RecordedSandboxRequest } from '../options.js';
import type { SandboxRelay } from '../relay.js';
import type { MigrationStore, SandboxClock } from '../state.js';
import { EmitError, type EmitRequest, type HookRegistry, type HookTarget } from '../webhooks.js';

/** What the admin calls (`/_sandbox/…`, docs/sandbox.md) reach into. */
export interface AdminParts {
  seed: SeedData;
  clock: SandboxClock;
  faults: Faults;
  store: MigrationStore;
  hooks: HookRegistry;
  relay: SandboxRelay;
  requests: RecordedSandboxRequest[];
  baseUrl: string;
  storageOrigin: string;
}

export async function handleAdmin(parts: AdminParts, request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
  const { seed, clock, faults, store, hooks, requests } = parts;
  const method = request.method ?? 'GET';
  const body = (method === 'POST' ? await readJson(request, {}) : {}) as Record<string, unknown>;
  const relayed = /^\/_sandbox\/relay\/([A-Za-z0-9_-]{1,128})(\/disconnect)?$/.exec(url.pathname);
  if (relayed?.[2] && method === 'POST') return sendJson(response, 200, { disconnected: parts.relay.disconnect(relayed[1] as string) });
  if (relayed && !relayed[2] && method === 'GET') return sendJson(response, 200, { listeners: parts.relay.listeners(relayed[1] as string) });
  switch (`${method} ${url.pathname}`) {
    case 'GET /_sandbox':
      return sendJson(response, 200, describe(parts));
    case 'GET /_sandbox/clock':
      return sendJson(response, 200, { now: new Date(clock.now()).toISOString() });
    case 'POST /_sandbox/clock':
      clock.advance(Number(body.advanceSeconds ?? 0) * 1000);
      return sendJson(response, 200, { now: new Date(clock.now()).toISOString() });
    case 'POST /_sandbox/faults':
      faults.set(body);
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
      const created = await refusing(() =>
        hooks.create({
          url: body.url as string,
          ...(typeof body.secret === 'string' ? { secret: body.secret } : {}),
          contentType: body.content_type === 'form' ? 'form' : 'json',
          events: Array.isArray(body.events) ? body.events.map(String) : ['*'],
          ...(typeof body.target === 'string' ? { target: body.target as HookTarget } : {}),
          ...(typeof body.repository === 'string' ? { repository: body.repository } : {}),
        }),
      );
      return sendJson(response, 201, created);
    }
    case 'POST /_sandbox/emit': {
      if (typeof body.event !== 'string') throw new HttpFailure(422, { message: 'event is required' });
      return sendJson(response, 200, await refusing(() => hooks.emit(body as unknown as EmitRequest)));
    }
    case 'POST /_sandbox/migrations': {
      const org = store.organization(String((body.org as string | undefined) ?? seed.organizations[0]?.login));
      if (!org) throw notFound();
      store.bulkExports(org, Number(body.count ?? 1));
      return sendJson(response, 201, { org: org.login, total: store.list(org).length });
    }
    default:
      throw new HttpFailure(404, { message: `sandbox: no admin route ${method} ${url.pathname}` });
  }
}

function describe({ baseUrl, storageOrigin, seed }: AdminParts) {
  return {
    baseUrl,
    storageOrigin,
    org: seed.organizations[0]?.login,
    apiVersion: API_VERSION,
    tokens: seed.tokens.map(describeToken),
  };
}

/** A request the hook registry refuses is the caller's mistake: 400 with the reason. */
async function refusing<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof EmitError) throw new HttpFailure(400, { message: error.message });
    throw error;
  }
}
