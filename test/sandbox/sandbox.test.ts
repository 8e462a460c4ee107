import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { REPOSITORY_URL_FIELDS } from '../../src/api/types.js';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/server.js';
import { busyFor } from '../helpers/busy.js';

// The sandbox is checked through plain HTTP (fetch), independently of our own client.

const OWNER = 'svc_sandbox_owner_classic';
const V = '2026-03-10';

interface CallOptions {
  token?: string | null;
  /** null sends no X-Service-Api-Version (the shapes of the published examples). */
  version?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
}

function caller(sandbox: Sandbox) {
  return async (method: string, path: string, options: CallOptions = {}) => {
    const headers: Record<string, string> = {
      accept: 'application/vnd.service+json',
      ...(options.version === null ? {} : { 'x-service-api-version': options.version ?? V }),
      ...options.headers,
    };
    const token = options.token === undefined ? OWNER : options.token;
    if (token) headers.authorization = `Bearer ${token}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${sandbox.baseUrl}${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      redirect: 'manual',
    });
    const text = await response.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, json, text };
  };
}

async function withSandbox(
  options: SandboxOptions,
  body: (sandbox: Sandbox, call: ReturnType<typeof caller>) => Promise<void>,
) {
  const sandbox = await startSandbox(options);
  try {
    await body(sandbox, caller(sandbox));
  } finally {
    await sandbox.close();
  }
}

const advance = (call: ReturnType<typeof caller>, seconds: number) =>
  call('POST', '/_sandbox/clock', { body: { advanceSeconds: seconds }, token: null });

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)$/;

describe('sandbox', () => {
  let sandbox: Sandbox;
  let call: ReturnType<typeof caller>;
  beforeAll(async () => {
    sandbox = await startSandbox({ exportSeconds: 10 });
    call = caller(sandbox);
  });
  afterAll(() => sandbox.close());

  describe('seed data', () => {
    it('serves repositories with every field of docs/service.md#repository and owners with every field of #owner', async () => {
      const started = await call('POST', '/orgs/octo-org/migrations', {
        body: { repositories: ['octo-org/Hello-World'] },
      });
      const listed = await call('GET', `/orgs/octo-org/migrations/${started.json.id}/repositories`, { version: null });
      const repo = listed.json[0];
      const scalar = [
        'id',
        'node_id',
        'name',
        'full_name',
        'default_branch',
        'visibility',
        'homepage',
        'temp_clone_token',
      ];
      const booleans = [
        'private',
        'fork',
        'is_template',
        'archived',
        'disabled',
        'has_issues',
        'has_projects',
        'has_wiki',
      ];
      const more = ['has_pages', 'has_downloads', 'allow_rebase_merge', 'allow_squash_merge', 'allow_auto_merge'];
      const counts = [
        'forks_count',
        'stargazers_count',
        'watchers_count',
        'size',
        'open_issues_count',
        'subscribers_count',
      ];
      const rest = ['network_count', 'forks', 'open_issues', 'watchers', 'pushed_at', 'created_at', 'updated_at'];
      const objects = ['owner', 'permissions', 'license', 'security_and_analysis', 'description', 'language', 'topics'];
      const other = ['delete_branch_on_merge', 'allow_merge_commit', 'has_discussions', 'template_repository'];
      for (const key of [
        ...scalar,
        ...booleans,
        ...more,
        ...counts,
        ...rest,
        ...objects,
        ...other,
        ...REPOSITORY_URL_FIELDS,
      ]) {
        expect(repo, key).toHaveProperty(key);
      }
      expect(repo.temp_clone_token).toBe('<CLONE_TOKEN>');
      expect(repo.compare_url).toMatch(/\{base\}\.\.\.\{head\}$/);
      expect(repo.contents_url).toMatch(/\{\+path\}$/);
      expect(repo.owner.events_url).toMatch(/\{\/privacy\}$/);
      expect(Object.keys(repo.security_and_analysis)).toHaveLength(5);
      const ownerKeys = [
        'login',
        'id',
        'node_id',
        'url',
        'repos_url',
        'events_url',
        'avatar_url',
        'gravatar_id',
        'html_url',
      ];
      const ownerMore = [
        'followers_url',
        'following_url',
        'gists_url',
        'starred_url',
        'subscriptions_url',
        'organizations_url',
      ];
      for (const key of [...ownerKeys, ...ownerMore, 'received_events_url', 'type', 'site_admin']) {
        expect(started.json.owner, key).toHaveProperty(key);
      }
    });

    it('has the same key set as the published repository example, but for what docs/service.md#repository leaves out', async () => {
      const fixture = JSON.parse(
        readFileSync(new URL('../fixtures/api/list-repos-for-org.json', import.meta.url), 'utf8'),
      );
      const expected = Object.keys(fixture.responses['200'][0]).sort();
      const started = await call('POST', '/orgs/octo-org/migrations', { body: { repositories: ['octo-org/widgets'] } });
      const listed = await call('GET', `/orgs/octo-org/migrations/${started.json.id}/repositories`, { version: null });
      const ours = Object.keys(listed.json[0]);
      expect(expected.filter((key) => !ours.includes(key))).toEqual([]);
    });
  });

  describe('authentication (docs/service.md#authentication, #errors)', () => {
    it.each([
      [null, 401, /Requires authentication/],
      ['svc_sandbox_revoked', 401, /^Bad Credentials$/],
      ['svc_not_a_token', 401, /^Bad Credentials$/],
      ['svcfg_sandbox_fine_grained', 403, /reject fine-grained/],
      ['svcu_sandbox_app_user', 403, /app user tokens/],
      ['svcs_sandbox_installation', 403, /installation tokens/],
      ['svc_sandbox_member_classic', 404, /Not Found/],
    ])('token %s → %i', async (token, status, message) => {
      const answer = await call('GET', '/orgs/octo-org/migrations', { token });
      expect(answer.status).toBe(status);
      expect(answer.json.message).toMatch(message);
    });

    it('matches {org} case-insensitively', async () => {
      expect((await call('GET', '/orgs/OCTO-Org/migrations')).status).toBe(200);
      expect((await call('GET', '/orgs/no-such-org/migrations')).status).toBe(404);
    });
  });

  describe('X-Service-Api-Version (docs/service.md#versioning)', () => {
    it('accepts 2026-03-10 and no header, rejects anything else listing the supported one', async () => {
      expect((await call('GET', '/orgs/octo-org/migrations')).status).toBe(200);
      const absent = await fetch(`${sandbox.baseUrl}/orgs/octo-org/migrations`, {
        headers: { authorization: `Bearer ${OWNER}` },
      });
      expect(absent.status).toBe(200);
      const wrong = await call('GET', '/orgs/octo-org/migrations', {
        headers: { 'x-service-api-version': '2022-11-28' },
      });
      expect(wrong.status).toBe(400);
      expect(wrong.json.message).toContain('2026-03-10');
    });
  });

  describe('start (docs/service.md#start-migration)', () => {
    it.each([
      [{}, /repositories is required/],
      [{ repositories: 'octo-org/widgets' }, /must be an array/],
      [{ repositories: ['octo-org/nope'] }, /octo-org\/nope is not a repository of octo-org/],
      [{ repositories: ['widgets'] }, /not shaped "owner\/repo"/],
      [{ repositories: ['other-org/widgets'] }, /not a repository of octo-org/],
      [{ repositories: ['octo-org/widgets'], lock_repositories: 'yes' }, /lock_repositories must be a boolean/],
      [{ repositories: ['octo-org/widgets'], org_metadata_only: true }, /must be empty when org_metadata_only/],
      [{ repositories: ['octo-org/widgets'], exclude: ['issues'] }, /exclude supports only/],
    ])('rejects %j with 422 and per-field errors', async (body, message) => {
      const answer = await call('POST', '/orgs/octo-org/migrations', { body });
      expect(answer.status).toBe(422);
      expect(answer.json.message).toBe('Validation Failed');
      expect(answer.json.errors.map((e: { message: string }) => e.message).join('\n')).toMatch(message);
      expect(answer.json.errors[0]).toHaveProperty('field');
    });

    it('answers 201 with a pending Migration, and honours exclude: ["repositories"]', async () => {
      const answer = await call('POST', '/orgs/octo-org/migrations', {
        body: { repositories: ['octo-org/widgets', 'OCTO-ORG/docs.site'], lock_repositories: true },
      });
      expect(answer.status).toBe(201);
      expect(answer.json).toMatchObject({ state: 'pending', lock_repositories: true, exclude_attachments: false });
      expect(answer.json.repositories.map((r: { full_name: string }) => r.full_name)).toEqual([
        'octo-org/widgets',
        'octo-org/docs.site',
      ]);
      expect(answer.json.guid).toMatch(/^[0-9a-f-]{36}$/);
      expect(answer.json.created_at).toMatch(ISO_WITH_OFFSET);
      const lean = await call('POST', '/orgs/octo-org/migrations', {
        body: { repositories: ['octo-org/widgets'], exclude: ['repositories'] },
      });
      expect(lean.status).toBe(201);
      expect(lean.json).not.toHaveProperty('repositories');
    });

    it('answers 422 when the endpoint is spammed', async () => {
      await withSandbox({ spamLimit: { starts: 2, windowSeconds: 60 } }, async (_s, call2) => {
        const body = { repositories: ['octo-org/widgets'] };
        expect((await call2('POST', '/orgs/octo-org/migrations', { body })).status).toBe(201);
        expect((await call2('POST', '/orgs/octo-org/migrations', { body })).status).toBe(201);
        const spammed = await call2('POST', '/orgs/octo-org/migrations', { body });
        expect(spammed.status).toBe(422);
        expect(JSON.stringify(spammed.json)).toMatch(/spammed/);
        await advance(call2, 61);
        expect((await call2('POST', '/orgs/octo-org/migrations', { body })).status).toBe(201);
      });
    });
  });

  describe('state machine (docs/service.md#migration-states)', () => {
    it('moves pending → exporting → exported on the sandbox clock, changing updated_at each time', async () => {
      await withSandbox({ exportSeconds: 10 }, async (_s, call2) => {
        const { json: started } = await call2('POST', '/orgs/octo-org/migrations', {
          body: { repositories: ['octo-org/widgets'] },
        });
        const seen: { state: string; updated_at: string }[] = [];
        for (const step of [0, 3, 10]) {
          if (step) await advance(call2, step === 3 ? 3 : 7);
          const { json } = await call2('GET', `/orgs/octo-org/migrations/${started.id}`);
          seen.push({ state: json.state, updated_at: json.updated_at });
          expect(json.updated_at).toMatch(ISO_WITH_OFFSET);
        }
        expect(seen.map((s) => s.state)).toEqual(['pending', 'exporting', 'exported']);
        expect(new Set(seen.map((s) => s.updated_at)).size).toBe(3);
      });
    });

    it('drives a migration with a repository named *fail* to failed', async () => {
      await withSandbox({ exportSeconds: 1 }, async (_s, call2) => {
        const { json } = await call2('POST', '/orgs/octo-org/migrations', {
          body: { repositories: ['octo-org/will-fail'] },
        });
        await advance(call2, 2);
        expect((await call2('GET', `/orgs/octo-org/migrations/${json.id}`)).json.state).toBe('failed');
        expect((await call2('GET', `/orgs/octo-org/migrations/${json.id}/archive`)).status).toBe(404);
      });
    });

    it('answers conditional GETs with 304 that cost no rate limit', async () => {
      const { json } = await call('POST', '/orgs/octo-org/migrations', {
        body: { repositories: ['octo-org/widgets'] },
      });
      const first = await call('GET', `/orgs/octo-org/migrations/${json.id}`);
      const etag = first.headers.get('etag') ?? '';
      const second = await call('GET', `/orgs/octo-org/migrations/${json.id}`, { headers: { 'if-none-match': etag } });
      expect(second.status).toBe(304);
      expect(Number(second.headers.get('x-ratelimit-remaining'))).toBe(
        Number(first.headers.get('x-ratelimit-remaining')),
      );
    });
  });

  describe('archive (docs/service.md#download-archive, #delete-archive, #archive)', () => {
    it('redirects to a second origin that serves a real tar.gz naming every repository, without the API token', async () => {
      await withSandbox({ exportSeconds: 1 }, async (box, call2) => {
        const { json } = await call2('POST', '/orgs/octo-org/migrations', {
          body: { repositories: ['octo-org/Hello-World', 'octo-org/my_lib-2'], lock_repositories: true },
        });
        expect((await call2('GET', `/orgs/octo-org/migrations/${json.id}/archive`)).status).toBe(404);
        await advance(call2, 2);
        const redirect = await call2('GET', `/orgs/octo-org/migrations/${json.id}/archive`);
        expect(redirect.status).toBe(302);
        const location = new URL(redirect.headers.get('location') ?? '');
        expect(location.origin).not.toBe(new URL(box.baseUrl).origin);
        expect(location.hostname).toBe('localhost');

        const archive = await fetch(location);
        expect(archive.status).toBe(200);
        expect(archive.headers.get('accept-ranges')).toBe('bytes');
        const bytes = Buffer.from(await archive.arrayBuffer());
        expect(Number(archive.headers.get('content-length'))).toBe(bytes.length);
        expect(archive.headers.get('etag')).toBe(`"${createHash('sha256').update(bytes).digest('hex')}"`);
        const storageRequests = box.requests.filter((r) => r.origin === 'storage');
        expect(storageRequests.every((r) => r.headers.authorization === undefined)).toBe(true);

        const dir = mkdtempSync(join(tmpdir(), 'sandbox-archive-'));
        writeFileSync(join(dir, 'a.tar.gz'), bytes);
        const listing = execFileSync('tar', ['-tzf', join(dir, 'a.tar.gz')], { encoding: 'utf8' });
        expect(listing).toMatch(/^schema\.json$/m);
        expect(listing).toMatch(/^repositories_000001\.json$/m);
        expect(listing).toMatch(/^repositories\/octo-org\/Hello-World\.git\/HEAD$/m);
        expect(listing).toMatch(/^repositories\/octo-org\/my_lib-2\.git\/HEAD$/m);
        const metadata = execFileSync('tar', ['-xzOf', join(dir, 'a.tar.gz'), 'repositories_000001.json'], {
          encoding: 'utf8',
        });
        expect(JSON.parse(metadata).map((r: { name: string }) => r.name)).toEqual(['Hello-World', 'my_lib-2']);
      });
    });

    it('honours the exclude flags in the archive', async () => {
      await withSandbox({ exportSeconds: 1 }, async (_box, call2) => {
        const { json } = await call2('POST', '/orgs/octo-org/migrations', {
          body: { repositories: ['octo-org/widgets'], exclude_git_data: true, exclude_releases: true },
        });
        await advance(call2, 2);
        const location =
          (await call2('GET', `/orgs/octo-org/migrations/${json.id}/archive`)).headers.get('location') ?? '';
        const dir = mkdtempSync(join(tmpdir(), 'sandbox-archive-'));
        writeFileSync(join(dir, 'a.tar.gz'), Buffer.from(await (await fetch(location)).arrayBuffer()));
        const listing = execFileSync('tar', ['-tzf', join(dir, 'a.tar.gz')], { encoding: 'utf8' });
        expect(listing).toMatch(/^repositories_000001\.json$/m);
        expect(listing).not.toMatch(/^repositories\//m);
        expect(listing).not.toMatch(/releases_000001/);
      });
    });

    it('serves ranges (206), honours If-Range, and refuses forged or expired URLs with 403', async () => {
      await withSandbox({ exportSeconds: 1, archiveUrlTtlSeconds: 60 }, async (_box, call2) => {
        const { json } = await call2('POST', '/orgs/octo-org/migrations', {
          body: { repositories: ['octo-org/widgets'] },
        });
        await advance(call2, 2);
        const location =
          (await call2('GET', `/orgs/octo-org/migrations/${json.id}/archive`)).headers.get('location') ?? '';
        const full = await fetch(location);
        const whole = Buffer.from(await full.arrayBuffer());
        const etag = full.headers.get('etag') ?? '';

        const part = await fetch(location, { headers: { range: 'bytes=100-', 'if-range': etag } });
        expect(part.status).toBe(206);
        expect(part.headers.get('content-range')).toBe(`bytes 100-${whole.length - 1}/${whole.length}`);
        expect(Buffer.from(await part.arrayBuffer()).equals(whole.subarray(100))).toBe(true);

        const stale = await fetch(location, { headers: { range: 'bytes=100-', 'if-range': '"other"' } });
        expect(stale.status).toBe(200);
        await stale.arrayBuffer();

        const beyond = await fetch(location, { headers: { range: `bytes=${whole.length + 5}-` } });
        expect(beyond.status).toBe(416);
        await beyond.arrayBuffer();

        const forged = await fetch(location.replace(/signature=[0-9a-f]{4}/, 'signature=0000'));
        expect(forged.status).toBe(403);
        await forged.arrayBuffer();

        await advance(call2, 120);
        const expired = await fetch(location);
        expect(expired.status).toBe(403);
        expect(await expired.text()).toMatch(/expired/);
        // A fresh redirect works again.
        const fresh =
          (await call2('GET', `/orgs/octo-org/migrations/${json.id}/archive`)).headers.get('location') ?? '';
        expect((await fetch(fresh)).status).toBe(200);
      });
    });

    it('deletes archives on request (204, then 404) and by itself after seven days', async () => {
      await withSandbox({ exportSeconds: 1 }, async (_box, call2) => {
        const body = { repositories: ['octo-org/widgets'] };
        const first = (await call2('POST', '/orgs/octo-org/migrations', { body })).json;
        const second = (await call2('POST', '/orgs/octo-org/migrations', { body })).json;
        await advance(call2, 2);
        expect((await call2('DELETE', `/orgs/octo-org/migrations/${first.id}/archive`)).status).toBe(204);
        expect((await call2('GET', `/orgs/octo-org/migrations/${first.id}/archive`)).status).toBe(404);
        expect((await call2('DELETE', `/orgs/octo-org/migrations/${first.id}/archive`)).status).toBe(404);

        expect((await call2('GET', `/orgs/octo-org/migrations/${second.id}/archive`)).status).toBe(302);
        await advance(call2, 7 * 24 * 3600);
        expect((await call2('GET', `/orgs/octo-org/migrations/${second.id}/archive`)).status).toBe(404);
      });
    });
  });

  describe('locks (docs/service.md#repository-locks, #unlock-repository)', () => {
    it('unlocks repositories of the migration, names with dots, dashes and underscores included', async () => {
      const { json } = await call('POST', '/orgs/octo-org/migrations', {
        body: { repositories: ['octo-org/docs.site', 'octo-org/my_lib-2'], lock_repositories: true },
      });
      const migration = sandbox.store.find(sandbox.store.organization('octo-org')!, json.id)!;
      expect([...migration.locked].sort()).toEqual(['docs.site', 'my_lib-2']);
      expect((await call('DELETE', `/orgs/octo-org/migrations/${json.id}/repos/docs.site/lock`)).status).toBe(204);
      expect((await call('DELETE', `/orgs/octo-org/migrations/${json.id}/repos/my_lib-2/lock`)).status).toBe(204);
      expect(migration.locked.size).toBe(0);
      expect((await call('DELETE', `/orgs/octo-org/migrations/${json.id}/repos/widgets/lock`)).status).toBe(404);
      expect((await call('DELETE', `/orgs/octo-org/migrations/${json.id}/repos/..%2Fwidgets/lock`)).status).toBe(404);
      expect((await call('DELETE', `/orgs/octo-org/migrations/999999/repos/widgets/lock`)).status).toBe(404);
    });
  });

  describe('lists (docs/service.md#list-migrations, #migration-repositories, #limits)', () => {
    it('pages with per_page (default 30, max 100) and a Link header with next, prev, first, last', async () => {
      await withSandbox({}, async (_box, call2) => {
        await call2('POST', '/_sandbox/migrations', { body: { count: 74 }, token: null });
        const first = await call2('GET', '/orgs/octo-org/migrations');
        expect(first.json).toHaveLength(30);
        const link = first.headers.get('link') ?? '';
        expect(link).toMatch(/page=2>; rel="next"/);
        expect(link).toMatch(/page=3>; rel="last"/);
        const last = await call2('GET', '/orgs/octo-org/migrations?page=3');
        expect(last.json).toHaveLength(15);
        expect(last.headers.get('link')).toMatch(/rel="first".*rel="prev"/);
        expect(last.headers.get('link')).not.toMatch(/rel="next"/);
        expect((await call2('GET', '/orgs/octo-org/migrations?per_page=500')).json).toHaveLength(75);
        expect((await call2('GET', '/orgs/octo-org/migrations?per_page=100')).headers.get('link')).toBeNull();
      });
    });

    it('includes import migrations, which carry no repositories', async () => {
      const all = (await call('GET', '/orgs/octo-org/migrations?per_page=100')).json as {
        id: number;
        repositories?: unknown;
      }[];
      const imports = all.filter((m) => !('repositories' in m));
      expect(imports.length).toBeGreaterThanOrEqual(1);
      const lean = (await call('GET', '/orgs/octo-org/migrations?exclude=repositories')).json as object[];
      expect(lean.every((m) => !('repositories' in m))).toBe(true);
    });
  });

  describe('rate limits', () => {
    it('sends rate-limit headers on every answer', async () => {
      const answer = await call('GET', '/orgs/octo-org/migrations');
      expect(answer.headers.get('x-ratelimit-limit')).toBe('5000');
      expect(Number(answer.headers.get('x-ratelimit-remaining'))).toBeLessThan(5000);
      expect(Number(answer.headers.get('x-ratelimit-reset'))).toBeGreaterThan(sandbox.clock.now() / 1000);
    });

    it('answers 429 with retry-after beyond an opt-in limit', async () => {
      await withSandbox({ rateLimit: { limit: 2, windowSeconds: 60 } }, async (_box, call2) => {
        await call2('GET', '/orgs/octo-org/migrations');
        await call2('GET', '/orgs/octo-org/migrations');
        const limited = await call2('GET', '/orgs/octo-org/migrations');
        expect(limited.status).toBe(429);
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
      });
    });
  });

  describe('connections', () => {
    it('serves a request that reached a kept-alive connection while the process was busy past the keep-alive timeout', async () => {
      const agent = new Agent({ keepAlive: true });
      const get = () =>
        new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
          const sent = request(`${sandbox.baseUrl}/orgs/octo-org/migrations`, { agent }, (response) => {
            response.resume().on('end', () => resolve({ status: response.statusCode ?? 0, reused: sent.reusedSocket }));
          });
          sent.on('error', reject).end();
        });
      try {
        expect(await get()).toEqual({ status: 401, reused: false });
        // Sent as the process turns, on the connection kept alive; then the process is busy for
        // longer than node:http's keep-alive timeout (5 s, and the second it adds), so the timeout
        // has expired when the event loop reads the request. Closing then would reset the sender.
        const second = get();
        busyFor(6_500);
        expect(await second).toEqual({ status: 401, reused: true });
      } finally {
        agent.destroy();
      }
    });
  });

  describe('fault injection', () => {
    it('answers N 5xx before succeeding', async () => {
      await withSandbox({}, async (_box, call2) => {
        await call2('POST', '/_sandbox/faults', { body: { failNext: 2, failStatus: 502 }, token: null });
        expect((await call2('GET', '/orgs/octo-org/migrations')).status).toBe(502);
        expect((await call2('GET', '/orgs/octo-org/migrations')).status).toBe(502);
        expect((await call2('GET', '/orgs/octo-org/migrations')).status).toBe(200);
      });
    });

    it('cuts the archive stream after K bytes, and can serve without ranges', async () => {
      await withSandbox({ exportSeconds: 1, archivePadBytes: 512 * 1024 }, async (_box, call2) => {
        const { json } = await call2('POST', '/orgs/octo-org/migrations', {
          body: { repositories: ['octo-org/widgets'] },
        });
        await advance(call2, 2);
        const location =
          (await call2('GET', `/orgs/octo-org/migrations/${json.id}/archive`)).headers.get('location') ?? '';
        await call2('POST', '/_sandbox/faults', { body: { cutAfterBytes: 10_000, cutTimes: 1 }, token: null });
        const cut = await fetch(location);
        await expect(cut.arrayBuffer()).rejects.toThrow();
        const whole = await fetch(location);
        expect((await whole.arrayBuffer()).byteLength).toBeGreaterThan(256 * 1024);

        await call2('POST', '/_sandbox/faults', { body: { throttleBytesPerSecond: 1_000_000 }, token: null });
        // The pace is counted on a fake clock that moves 50 ms at a time, so the machine's load does
        // not enter: by each step, at most 50 kB more may have arrived, and 300 kB take 5 steps or more.
        vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
        try {
          let received = 0;
          let done = false;
          const slow = fetch(location, { headers: { range: 'bytes=0-299999' } }).then(async (response) => {
            for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) received += chunk.byteLength;
            done = true;
          });
          let steps = 0;
          for (;;) {
            for (let turn = 0; turn < 100 && !done; turn++) await new Promise((resolve) => setImmediate(resolve));
            expect(received, `after ${steps * 50} ms`).toBeLessThanOrEqual((steps + 1) * 50_000);
            if (done) break;
            vi.advanceTimersByTime(50);
            steps++;
          }
          await slow;
          expect(received).toBe(300_000);
          expect(steps).toBeGreaterThanOrEqual(5);
        } finally {
          // The sandbox's side ends a step after the last byte: let it, so the sandbox can close.
          for (let step = 0; step < 20 && vi.getTimerCount() > 0; step++) {
            vi.advanceTimersByTime(50);
            await new Promise((resolve) => setImmediate(resolve));
          }
          vi.useRealTimers();
        }
        await call2('DELETE', '/_sandbox/faults', { token: null });

        await call2('POST', '/_sandbox/faults', { body: { noRange: true }, token: null });
        const ignored = await fetch(location, { headers: { range: 'bytes=10-' } });
        expect(ignored.status).toBe(200);
        expect(ignored.headers.get('accept-ranges')).toBeNull();
        await ignored.arrayBuffer();
      });
    });
  });
});
