import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/server.js';
import { hookTarget } from '../helpers/hook-target.js';
import { schemaProblems } from '../helpers/json-schema.js';

// The sandbox against the service's interface, one test per rule, over real HTTP on loopback.
// Where the interface is silent the sandbox decides (docs/sandbox.md#where-the-sandbox-decides);
// tests of those choices say "(sandbox)" in their names.

const OWNER = 'svc_sandbox_owner_classic';
const V = '2026-03-10';
const fixture = (path: string) => JSON.parse(readFileSync(new URL(`../fixtures/${path}`, import.meta.url), 'utf8'));
const START = fixture('api/start-for-org.json');
const SCHEMAS = fixture('api/schemas.json');

interface Call {
  token?: string | null;
  version?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
}

function client(sandbox: Sandbox) {
  return async (method: string, path: string, options: Call = {}) => {
    const token = options.token === undefined ? OWNER : options.token;
    const response = await fetch(`${sandbox.baseUrl}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        accept: 'application/vnd.service+json',
        ...(options.version === null ? {} : { 'x-service-api-version': options.version ?? V }),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...options.headers,
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, json: text ? safeJson(text) : undefined };
  };
}

function safeJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function withSandbox(options: SandboxOptions, body: (sandbox: Sandbox, call: ReturnType<typeof client>) => Promise<void>) {
  const sandbox = await startSandbox(options);
  try {
    await body(sandbox, client(sandbox));
  } finally {
    await sandbox.close();
  }
}

/** A webhook receiver on loopback that keeps every delivery (recorded before it answers). */
const admin = (sandbox: Sandbox, path: string, body: unknown) =>
  fetch(`${sandbox.baseUrl}${path}`, { method: 'POST', body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, json: (await r.json()) as any }));

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const start = (call: ReturnType<typeof client>, body: Record<string, unknown> = {}, options: Call = {}) =>
  call('POST', '/orgs/octo-org/migrations', { body: { repositories: ['octo-org/widgets'], ...body }, ...options });

describe('the sandbox conforms to the service interface', () => {
  let sandbox: Sandbox;
  let call: ReturnType<typeof client>;
  beforeAll(async () => {
    sandbox = await startSandbox({ exportSeconds: 10, spamLimit: { starts: 1000, windowSeconds: 60 } });
    call = client(sandbox);
  });
  afterAll(() => sandbox.close());

  describe('authentication', () => {
    it('migration endpoints require Authorization: Bearer <token>', async () => {
      expect((await call('GET', '/orgs/octo-org/migrations', { token: null })).status).toBe(401);
      expect((await call('GET', '/orgs/octo-org/migrations')).status).toBe(200);
    });

    it('a revoked token yields 401 Bad Credentials', async () => {
      const answer = await call('GET', '/orgs/octo-org/migrations', { token: 'svc_sandbox_revoked' });
      expect([answer.status, answer.json.message]).toEqual([401, 'Bad Credentials']);
    });

    it('every migration endpoint rejects app user, app installation and fine-grained tokens', async () => {
      const id = (await start(call)).json.id;
      const endpoints: [string, string][] = [
        ['GET', '/orgs/octo-org/migrations'],
        ['POST', '/orgs/octo-org/migrations'],
        ['GET', `/orgs/octo-org/migrations/${id}`],
        ['GET', `/orgs/octo-org/migrations/${id}/archive`],
        ['DELETE', `/orgs/octo-org/migrations/${id}/archive`],
        ['DELETE', `/orgs/octo-org/migrations/${id}/repos/widgets/lock`],
        ['GET', `/orgs/octo-org/migrations/${id}/repositories`],
      ];
      for (const token of ['svcu_sandbox_app_user', 'svcs_sandbox_installation', 'svcfg_sandbox_fine_grained']) {
        for (const [method, path] of endpoints) expect((await call(method, path, { token })).status, `${method} ${path}`).toBe(403);
      }
    });

    it('migration endpoints are for organization owners only (a member gets 404, sandbox)', async () => {
      expect((await call('GET', '/orgs/octo-org/migrations', { token: 'svc_sandbox_member_classic' })).status).toBe(404);
    });

    it('{org} is case-insensitive', async () => {
      expect((await call('GET', '/orgs/OCTO-ORG/migrations')).status).toBe(200);
    });
  });

  describe('start an organization migration', () => {
    it('answers 201 with a Migration whose state is pending, even when the export takes no time', async () => {
      await withSandbox({ exportSeconds: 0 }, async (_box, call0) => {
        const answer = await start(call0);
        expect(answer.status).toBe(201);
        expect(answer.json.state).toBe('pending');
        expect(answer.json.updated_at).toBe(answer.json.created_at);
      });
    });

    it('the 201 body fits the published migration schema', async () => {
      const answer = await start(call, {}, { version: null });
      expect(schemaProblems(START.responseSchemas['201'], answer.json)).toEqual([]);
    });

    it('flags default to false and are echoed; lock_repositories locks the repositories', async () => {
      const plain = (await start(call)).json;
      for (const flag of ['lock_repositories', 'exclude_metadata', 'exclude_git_data', 'exclude_attachments', 'exclude_releases', 'exclude_owner_projects', 'org_metadata_only']) {
        expect(plain[flag], flag).toBe(false);
      }
      const locked = (await start(call, { lock_repositories: true, exclude_releases: true })).json;
      expect([locked.lock_repositories, locked.exclude_releases]).toEqual([true, true]);
      expect([...(sandbox.store.find(sandbox.store.organization('octo-org')!, locked.id)?.locked ?? [])]).toEqual(['widgets']);
    });

    it('repositories is required, each entry shaped <owner>/<repo>: 422 naming the entry by index', async () => {
      expect((await call('POST', '/orgs/octo-org/migrations', { body: {} })).status).toBe(422);
      const answer = await start(call, { repositories: ['octo-org/widgets', 'widgets'] });
      expect(answer.status).toBe(422);
      expect(answer.json.errors).toEqual([expect.objectContaining({ field: 'repositories', index: 1, value: 'widgets', code: 'invalid' })]);
    });

    it('an unknown repository is a 422 with code invalid_value; 404 is for the organization (sandbox)', async () => {
      const unknown = await start(call, { repositories: ['octo-org/nope'] });
      expect(unknown.status).toBe(422);
      expect(unknown.json.errors[0]).toMatchObject({ field: 'repositories', index: 0, value: 'octo-org/nope', code: 'invalid_value' });
      expect((await call('POST', '/orgs/no-such-org/migrations', { body: { repositories: ['no-such-org/x'] } })).status).toBe(404);
    });

    it('org_metadata_only wants repositories empty', async () => {
      expect((await start(call, { org_metadata_only: true })).status).toBe(422);
      const answer = await start(call, { repositories: [], org_metadata_only: true });
      expect([answer.status, answer.json.repositories]).toEqual([201, []]);
    });

    it('exclude: ["repositories"] leaves repositories out of the answer', async () => {
      const answer = await start(call, { exclude: ['repositories'] });
      expect(answer.status).toBe(201);
      expect(answer.json).not.toHaveProperty('repositories');
    });

    it('answers 422 when the endpoint has been spammed', async () => {
      await withSandbox({ spamLimit: { starts: 1, windowSeconds: 60 } }, async (_box, call1) => {
        expect((await start(call1)).status).toBe(201);
        const spammed = await start(call1);
        expect(spammed.status).toBe(422);
        expect(JSON.stringify(spammed.json)).toMatch(/spammed/);
      });
    });

    it('422 bodies fit the published validation-error schema (documentation_url required)', async () => {
      const answer = await start(call, { repositories: ['octo-org/nope'] });
      expect(answer.json).toHaveProperty('documentation_url');
      expect(schemaProblems(START.responseSchemas['422'], answer.json)).toEqual([]);
    });

    it('404 bodies fit the published basic-error schema', async () => {
      const answer = await call('GET', '/orgs/octo-org/migrations/424242');
      expect(answer.status).toBe(404);
      expect(schemaProblems(START.responseSchemas['404'], answer.json)).toEqual([]);
      expect(answer.json).toMatchObject({ message: 'Not Found', status: '404' });
    });
  });

  describe('migration status and list', () => {
    it('status answers 200 with one of the four states, and 404 for an unknown id', async () => {
      const { id } = (await start(call)).json;
      const answer = await call('GET', `/orgs/octo-org/migrations/${id}`);
      expect(answer.status).toBe(200);
      expect(['pending', 'exporting', 'exported', 'failed']).toContain(answer.json.state);
      expect((await call('GET', '/orgs/octo-org/migrations/999999')).status).toBe(404);
    });

    it('a migration carries every field of the Migration resource, timestamps ISO 8601 with an offset', async () => {
      const { json } = await start(call);
      for (const field of ['id', 'node_id', 'owner', 'guid', 'state', 'lock_repositories', 'exclude_attachments', 'exclude_releases', 'exclude_owner_projects', 'repositories', 'url', 'created_at', 'updated_at']) {
        expect(json, field).toHaveProperty(field);
      }
      expect(json.guid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(json.created_at).toMatch(ISO_WITH_OFFSET);
      expect(json.updated_at).toMatch(ISO_WITH_OFFSET);
    });

    it('owners carry every field of the Owner object', async () => {
      const { owner } = (await start(call)).json;
      for (const field of ['login', 'id', 'node_id', 'url', 'repos_url', 'events_url', 'avatar_url', 'gravatar_id', 'html_url', 'followers_url', 'following_url', 'gists_url', 'starred_url', 'subscriptions_url', 'organizations_url', 'received_events_url', 'type', 'site_admin']) {
        expect(owner, field).toHaveProperty(field);
      }
    });

    it('under 2026-03-10 a migration embeds simple repositories, as the published breaking change says', async () => {
      const { json } = await start(call);
      const [change] = SCHEMAS.migration['x-github-breaking-changes'];
      expect(change.version).toBe(V);
      const schema = { ...START.responseSchemas['201'], properties: { ...START.responseSchemas['201'].properties, repositories: change.patch[0].value } };
      expect(schemaProblems(schema, json)).toEqual([]);
      expect(Object.keys(json.repositories[0]).sort()).toEqual(Object.keys(change.patch[0].value.items.properties).sort());
    });

    it('without a version header a migration embeds the full repository of the published examples', async () => {
      const { json } = await start(call, {}, { version: null });
      expect(json.repositories[0]).toHaveProperty('default_branch');
      expect(json.repositories[0]).toHaveProperty('has_downloads');
      // has_discussions and security_and_analysis belong to the migration repository list only.
      expect(json.repositories[0]).not.toHaveProperty('has_discussions');
      expect(json.repositories[0]).not.toHaveProperty('security_and_analysis');
    });

    it('the list returns exports and imports, newest first; repositories only on exports', async () => {
      const list = (await call('GET', '/orgs/octo-org/migrations?per_page=100', { version: null })).json as any[];
      const exports = list.filter((m) => 'repositories' in m);
      expect(exports.length).toBeGreaterThan(0);
      expect(list.length).toBeGreaterThan(exports.length);
      const created = list.map((m) => Date.parse(m.created_at));
      expect(created).toEqual([...created].sort((a, b) => b - a));
      const listSchema = fixture('api/list-for-org.json').responseSchemas['200'];
      expect(schemaProblems(listSchema, exports)).toEqual([]);
    });

    it('exclude is an array: exclude=repositories and exclude[]=repositories both leave repositories out', async () => {
      const { id } = (await start(call)).json;
      for (const query of ['exclude=repositories', 'exclude[]=repositories', 'exclude%5B%5D=repositories']) {
        const list = (await call('GET', `/orgs/octo-org/migrations?${query}`)).json as object[];
        expect(list.some((m) => 'repositories' in m), query).toBe(false);
        expect((await call('GET', `/orgs/octo-org/migrations/${id}?${query}`)).json, query).not.toHaveProperty('repositories');
      }
    });

    it('per_page is at most 100, by default 30; page by default 1; 0, -5 and "abc" mean the default (sandbox)', async () => {
      await withSandbox({}, async (box, call2) => {
        await admin(box, '/_sandbox/migrations', { count: 130 });
        const count = async (query: string) => ((await call2('GET', `/orgs/octo-org/migrations?${query}`)).json as unknown[]).length;
        expect(await count('')).toBe(30);
        expect(await count('per_page=500')).toBe(100);
        expect(await count('per_page=0')).toBe(30);
        expect(await count('per_page=-5')).toBe(30);
        expect(await count('per_page=abc')).toBe(30);
        expect(await count('per_page=100&page=2')).toBe(31);
        expect(await count('per_page=100&page=0')).toBe(100);
      });
    });
  });

  describe('archive, locks and the repository list', () => {
    it('download answers 302 to the archive once exported, 404 before; HEAD answers like GET', async () => {
      await withSandbox({ exportSeconds: 1 }, async (box, call1) => {
        const { id } = (await start(call1)).json;
        expect((await call1('GET', `/orgs/octo-org/migrations/${id}/archive`)).status).toBe(404);
        box.clock.advance(2000);
        const get = await call1('GET', `/orgs/octo-org/migrations/${id}/archive`);
        expect(get.status).toBe(302);
        expect(get.headers.get('location')).toMatch(/^http:\/\/localhost:\d+\/archives\//);
        const head = await call1('HEAD', `/orgs/octo-org/migrations/${id}/archive`);
        expect(head.status).toBe(302);
        expect(head.headers.get('location')).toMatch(/^http:\/\/localhost:\d+\/archives\//);
        expect((await fetch(head.headers.get('location') ?? '')).status).toBe(200);
      });
    });

    it('delete answers 204 and the archive is gone (404); archives are deleted automatically after seven days', async () => {
      await withSandbox({ exportSeconds: 1 }, async (box, call1) => {
        const first = (await start(call1)).json.id;
        const second = (await start(call1)).json.id;
        box.clock.advance(2000);
        expect((await call1('DELETE', `/orgs/octo-org/migrations/${first}/archive`)).status).toBe(204);
        expect((await call1('GET', `/orgs/octo-org/migrations/${first}/archive`)).status).toBe(404);
        expect((await call1('DELETE', `/orgs/octo-org/migrations/${first}/archive`)).status).toBe(404);
        box.clock.advance(7 * 24 * 3600 * 1000);
        expect((await call1('GET', `/orgs/octo-org/migrations/${second}/archive`)).status).toBe(404);
      });
    });

    it('unlock answers 204 for a repository of the migration and unlocks it; 404 otherwise', async () => {
      const { id } = (await start(call, { lock_repositories: true })).json;
      expect((await call('DELETE', `/orgs/octo-org/migrations/${id}/repos/widgets/lock`)).status).toBe(204);
      expect(sandbox.store.find(sandbox.store.organization('octo-org')!, id)?.locked.size).toBe(0);
      expect((await call('DELETE', `/orgs/octo-org/migrations/${id}/repos/Hello-World/lock`)).status).toBe(404);
    });

    it('the repository list answers 200 with repository objects fitting the published schema; 404 for an unknown migration', async () => {
      const { id } = (await start(call, { repositories: ['octo-org/widgets', 'octo-org/Hello-World'] })).json;
      const listed = await call('GET', `/orgs/octo-org/migrations/${id}/repositories`, { version: null });
      expect(listed.status).toBe(200);
      expect(listed.json.map((r: { full_name: string }) => r.full_name)).toEqual(['octo-org/widgets', 'octo-org/Hello-World']);
      expect(schemaProblems(fixture('api/list-repos-for-org.json').responseSchemas['200'], listed.json)).toEqual([]);
      expect(listed.json[0]).toHaveProperty('has_discussions');
      expect(listed.json[0]).toHaveProperty('security_and_analysis');
      expect((await call('GET', '/orgs/octo-org/migrations/999999/repositories')).status).toBe(404);
    });

    it('listed repositories carry every field of the Repository object, URL templates included', async () => {
      const { id } = (await start(call)).json;
      const [repo] = (await call('GET', `/orgs/octo-org/migrations/${id}/repositories`, { version: null })).json;
      const fields = 'id node_id name full_name default_branch visibility homepage temp_clone_token owner private fork is_template archived disabled has_issues has_projects has_wiki has_pages has_downloads allow_rebase_merge allow_squash_merge allow_auto_merge delete_branch_on_merge allow_merge_commit has_discussions description language template_repository topics forks_count stargazers_count watchers_count size open_issues_count subscribers_count network_count forks open_issues watchers pushed_at created_at updated_at permissions license security_and_analysis';
      for (const field of fields.split(' ')) expect(repo, field).toHaveProperty(field);
      expect(repo.temp_clone_token).toBe('<CLONE_TOKEN>');
      expect(repo.contents_url).toMatch(/\{\+path\}$/);
      expect(repo.owner.events_url).toMatch(/\{\/privacy\}$/);
      expect(Object.keys(repo.permissions).sort()).toEqual(['admin', 'pull', 'push']);
      expect(Object.keys(repo.security_and_analysis)).toHaveLength(5);
    });

    it('lists carry a Link header with next and last (and first and prev past page 1), as the published list operations do', async () => {
      await withSandbox({}, async (box, call2) => {
        await admin(box, '/_sandbox/migrations', { count: 60 });
        const pages = async (query: string) => {
          const link = (await call2('GET', `/orgs/octo-org/migrations${query}`)).headers.get('link') ?? '';
          const rels = [...link.matchAll(/<([^>]+)>; rel="(\w+)"/g)].map(([, url, rel]) => [rel, new URL(url ?? '').searchParams.get('page')]);
          return Object.fromEntries(rels);
        };
        expect(await pages('')).toEqual({ next: '2', last: '3' });
        expect(await pages('?page=2')).toEqual({ next: '3', last: '3', first: '1', prev: '1' });
      });
    });

    it('under 2026-03-10 the repository list has no has_downloads, as the published breaking change says', async () => {
      expect(SCHEMAS['minimal-repository']['x-github-breaking-changes'][0]).toMatchObject({ changeset: 'remove_has_downloads', version: V });
      const { id } = (await start(call)).json;
      expect((await call('GET', `/orgs/octo-org/migrations/${id}/repositories`)).json[0]).not.toHaveProperty('has_downloads');
    });
  });

  describe('rate limits (sandbox)', () => {
    it('a 304 costs nothing: x-ratelimit-remaining and x-ratelimit-used both give it back', async () => {
      const { id } = (await start(call)).json;
      const first = await call('GET', `/orgs/octo-org/migrations/${id}`);
      const again = await call('GET', `/orgs/octo-org/migrations/${id}`, { headers: { 'if-none-match': first.headers.get('etag') ?? '' } });
      expect(again.status).toBe(304);
      expect(again.headers.get('x-ratelimit-remaining')).toBe(first.headers.get('x-ratelimit-remaining'));
      expect(again.headers.get('x-ratelimit-used')).toBe(first.headers.get('x-ratelimit-used'));
    });

    it('retry-after never exceeds the window, and x-ratelimit-reset is when it ends', async () => {
      await withSandbox({ rateLimit: { limit: 1, windowSeconds: 3600 } }, async (box, call1) => {
        box.clock.advance(1001 - (box.clock.now() % 1000)); // just after a whole second: the worst case
        await call1('GET', '/orgs/octo-org/migrations');
        const limited = await call1('GET', '/orgs/octo-org/migrations');
        expect(limited.status).toBe(429);
        expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(3600);
        expect(Number(limited.headers.get('x-ratelimit-reset')) * 1000 - box.clock.now()).toBeLessThanOrEqual(3600 * 1000);
      });
    });

    it('refuses a rate limit that is not a positive whole number', async () => {
      await expect(startSandbox({ rateLimit: { limit: Number('abc'), windowSeconds: 3600 } })).rejects.toThrow(/positive integer/);
    });

    it('the request log keeps the newest requests only', async () => {
      await withSandbox({ requestLogLimit: 5 }, async (box, call1) => {
        for (let i = 0; i < 12; i++) await call1('GET', `/orgs/octo-org/migrations?page=${i}`);
        expect(box.requests.map((r) => r.url)).toEqual([7, 8, 9, 10, 11].map((i) => `/orgs/octo-org/migrations?page=${i}`));
      });
    });
  });
});

describe('the sandbox delivers webhooks as the service does', () => {
  const SECRET = 'conformance-secret';
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ spamLimit: { starts: 1000, windowSeconds: 60 } });
  });
  afterAll(() => sandbox.close());

  /** A fresh receiver and hook for one test; `close` removes both. */
  async function hookOn(config: Record<string, unknown>) {
    const target = await hookTarget();
    const created = await admin(sandbox, '/_sandbox/hooks', { url: target.url, events: ['*'], ...config });
    const id = created.json.hook?.id as number;
    return {
      ...target,
      id,
      created,
      close: () => {
        sandbox.hooks.remove(id);
        return target.close();
      },
    };
  }

  it('ping is sent when a webhook is created', async () => {
    const target = await hookOn({});
    expect(target.created.json.ping.status).toBe(204);
    expect(target.deliveries.map((d) => d.headers['x-service-event'])).toEqual(['ping']);
    await target.close();
  });

  it('deliveries carry every delivery header: hook id, event, delivery GUID, User-Agent, target type and id, type and length', async () => {
    const target = await hookOn({});
    await admin(sandbox, '/_sandbox/emit', { event: 'star', action: 'created' });
    const { headers, body } = target.deliveries.at(-1)!;
    expect(headers['x-service-hook-id']).toBe(String(target.id));
    expect(headers['x-service-event']).toBe('star');
    expect(headers['x-service-delivery']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(headers['user-agent']).toMatch(/^Service-Hookshot\//);
    expect(headers['x-service-hook-installation-target-type']).toBe('organization');
    expect(headers['x-service-hook-installation-target-id']).toBe('9919');
    expect(headers['content-type']).toBe('application/json');
    expect(Number(headers['content-length'])).toBe(body.length);
    await target.close();
  });

  it('every delivery has its own GUID in X-Service-Delivery', async () => {
    const target = await hookOn({});
    await admin(sandbox, '/_sandbox/emit', { event: 'star', action: 'created' });
    await admin(sandbox, '/_sandbox/emit', { event: 'star', action: 'created' });
    const ids = target.deliveries.map((d) => d.headers['x-service-delivery']);
    expect(new Set(ids).size).toBe(3);
    await target.close();
  });

  it('with a secret, X-Hub-Signature is sha1= and X-Hub-Signature-256 sha256= HMAC of the body; without, neither', async () => {
    const signed = await hookOn({ secret: SECRET });
    const unsigned = await hookOn({});
    await admin(sandbox, '/_sandbox/emit', { event: 'watch', action: 'started' });
    const { headers, body } = signed.deliveries.at(-1)!;
    expect(headers['x-hub-signature']).toBe(`sha1=${createHmac('sha1', SECRET).update(body).digest('hex')}`);
    expect(headers['x-hub-signature-256']).toBe(`sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`);
    expect(unsigned.deliveries.at(-1)!.headers).not.toHaveProperty('x-hub-signature');
    expect(unsigned.deliveries.at(-1)!.headers).not.toHaveProperty('x-hub-signature-256');
    await Promise.all([signed.close(), unsigned.close()]);
  });

  it('the body is the payload as application/json, or as payload=<JSON> in application/x-www-form-urlencoded', async () => {
    const form = await hookOn({ content_type: 'form' });
    await admin(sandbox, '/_sandbox/emit', { event: 'pull_request', action: 'opened' });
    const { headers, body } = form.deliveries.at(-1)!;
    expect(headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(JSON.parse(new URLSearchParams(body.toString()).get('payload') ?? '')).toEqual(fixture('webhooks/pull_request/opened.json'));
    await form.close();
  });

  it('an event and action are sent as the published example of that action', async () => {
    const target = await hookOn({});
    const answer = await admin(sandbox, '/_sandbox/emit', { event: 'pull_request', action: 'opened' });
    expect(answer.json).not.toHaveProperty('adapted');
    expect(JSON.parse(target.deliveries.at(-1)!.body.toString())).toEqual(fixture('webhooks/pull_request/opened.json'));
    await target.close();
  });

  it('an action without a published example is derived from the nearest one, and the answer says so (sandbox)', async () => {
    const target = await hookOn({});
    const answer = await admin(sandbox, '/_sandbox/emit', { event: 'milestone', action: 'opened' });
    expect(answer.json.adapted).toMatch(/^no published example of milestone\.opened: derived from the milestone\.closed example; /);
    expect(JSON.parse(target.deliveries.at(-1)!.body.toString())).toMatchObject({ action: 'opened', milestone: { state: 'open', closed_at: null } });
    // An action no published schema knows: the first example with its action replaced.
    const unknown = await admin(sandbox, '/_sandbox/emit', { event: 'pull_request', action: 'frobbed' });
    expect(unknown.json.adapted).toMatch(/no published example of pull_request "frobbed"/);
    expect(JSON.parse(target.deliveries.at(-1)!.body.toString()).action).toBe('frobbed');
    await target.close();
  });

  it('events without an action never carry one: asking for one is refused with 400', async () => {
    const target = await hookOn({});
    for (const event of ['public', 'status', 'push', 'create']) {
      expect((await admin(sandbox, '/_sandbox/emit', { event, action: 'opened' })).status, event).toBe(400);
    }
    await admin(sandbox, '/_sandbox/emit', { event: 'public' });
    expect(JSON.parse(target.deliveries.at(-1)!.body.toString())).not.toHaveProperty('action');
    for (const wrong of [{ event: 'nope' }, { event: 'push', payload: 'text' }, { event: 'push', repository: 7 }, { event: 'push', padToBytes: 10 }]) {
      expect((await admin(sandbox, '/_sandbox/emit', wrong)).status, JSON.stringify(wrong)).toBe(400);
    }
    await target.close();
  });

  it('an event goes only to the kinds of hook its availability names: App-only events never reach an organization hook', async () => {
    const org = await hookOn({});
    const app = await hookOn({ target: 'app' });
    const answer = await admin(sandbox, '/_sandbox/emit', { event: 'installation', action: 'created' });
    expect(answer.json.delivered.map((d: { hook: number }) => d.hook)).toEqual([app.id]);
    expect(app.deliveries.at(-1)!.headers['x-service-hook-installation-target-type']).toBe('integration');
    for (const event of ['marketplace_purchase', 'sponsorship', 'repository_dispatch', 'merge_group']) {
      await admin(sandbox, '/_sandbox/emit', { event });
    }
    expect(org.deliveries.map((d) => d.headers['x-service-event'])).toEqual(['ping']);
    await Promise.all([org.close(), app.close()]);
  });

  it('hooks can be created on a repository (target type repository) and get only events of that repository', async () => {
    const repo = await hookOn({ target: 'repository', repository: 'Hello-World' });
    const other = await hookOn({ target: 'repository', repository: 'widgets' });
    await admin(sandbox, '/_sandbox/emit', { event: 'push' }); // the published push happens in Hello-World
    await admin(sandbox, '/_sandbox/emit', { event: 'membership', action: 'added' }); // Org Ent App only
    expect(repo.deliveries.map((d) => d.headers['x-service-event'])).toEqual(['ping', 'push']);
    expect(repo.deliveries[1]?.headers['x-service-hook-installation-target-type']).toBe('repository');
    expect(other.deliveries.map((d) => d.headers['x-service-event'])).toEqual(['ping']);
    await Promise.all([repo.close(), other.close()]);
  });

  it('repository and organization hooks get check_run only for created and completed, check_suite only for completed', async () => {
    const org = await hookOn({});
    const app = await hookOn({ target: 'app' });
    for (const action of ['created', 'completed', 'rerequested', 'requested_action']) await admin(sandbox, '/_sandbox/emit', { event: 'check_run', action });
    for (const action of ['completed', 'requested', 'rerequested']) await admin(sandbox, '/_sandbox/emit', { event: 'check_suite', action });
    const seen = (target: typeof org) => target.deliveries.slice(1).map((d) => `${String(d.headers['x-service-event'])}.${JSON.parse(d.body.toString()).action}`);
    expect(seen(org)).toEqual(['check_run.created', 'check_run.completed', 'check_suite.completed']);
    expect(seen(app)).toHaveLength(7);
    expect(JSON.parse(app.deliveries[4]!.body.toString())).toEqual(fixture('webhooks/check_run/requested_action.json'));
    await Promise.all([org.close(), app.close()]);
  });

  it('a dispatch emits repository_dispatch whose action is the event_type', async () => {
    const app = await hookOn({ target: 'app' });
    const answer = await fetch(`${sandbox.baseUrl}/repos/octo-org/widgets/dispatches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OWNER}` },
      body: JSON.stringify({ event_type: 'deploy-now', client_payload: { env: 'prod' } }),
    });
    expect(answer.status).toBe(204);
    const payload = JSON.parse(app.deliveries.at(-1)!.body.toString());
    expect(payload).toMatchObject({ action: 'deploy-now', client_payload: { env: 'prod' }, repository: { full_name: 'octo-org/widgets' } });
    await app.close();
  });

  it('migration endpoints emit no event', async () => {
    const target = await hookOn({});
    const call = client(sandbox);
    const { id } = (await start(call)).json;
    await call('GET', `/orgs/octo-org/migrations/${id}`);
    await call('DELETE', `/orgs/octo-org/migrations/${id}/repos/widgets/lock`);
    expect(target.deliveries.map((d) => d.headers['x-service-event'])).toEqual(['ping']);
    await target.close();
  });

  it('payloads over 25 MB are not delivered, measured on the body as sent: a form body is larger than its JSON', async () => {
    const json = await hookOn({ events: ['fork'] });
    const form = await hookOn({ events: ['fork'], content_type: 'form' });
    // `{"…":"…"}` escapes in a form body: 25,000,000 bytes of JSON is more than that as a form.
    const answer = await admin(sandbox, '/_sandbox/emit', { event: 'fork', padToBytes: 25_000_000 });
    expect(answer.json.delivered.map((d: { hook: number }) => d.hook)).toEqual([json.id]);
    expect(answer.json.notDelivered).toEqual([{ hook: form.id, reason: expect.stringMatching(/over 25 MB/) }]);
    expect(json.deliveries.at(-1)!.body.length).toBe(25_000_000);
    const over = await admin(sandbox, '/_sandbox/emit', { event: 'fork', padToBytes: 25_000_001 });
    expect([over.json.delivered, over.json.skipped]).toEqual([[], expect.stringMatching(/over 25 MB/)]);
    await Promise.all([json.close(), form.close()]);
  });

  it('no create, delete or push event when more than three tags change at once', async () => {
    const target = await hookOn({ events: ['create', 'delete', 'push'] });
    for (const event of ['create', 'delete', 'push']) {
      expect((await admin(sandbox, '/_sandbox/emit', { event, tags: 4 })).json.skipped, event).toMatch(/more than three tags/);
      expect((await admin(sandbox, '/_sandbox/emit', { event, tags: 3 })).json.delivered, event).toHaveLength(1);
    }
    await target.close();
  });
});
