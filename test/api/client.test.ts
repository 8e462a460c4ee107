import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { RateLimitWait } from '../../src/api/rate-limit.js';
import {
  getArchiveUrl,
  getMigration,
  listAllMigrations,
  startMigration,
  unlockRepository,
} from '../../src/api/migrations.js';
import { ExitCode } from '../../src/errors.js';
import { client, failure, freePort, recordingClock, server, TOKEN } from '../helpers/api-client.js';
import { empty, hangUp, json } from '../helpers/scripted-server.js';

const migration = { id: 7, state: 'exporting', repositories: [] };

describe('required headers', () => {
  it('sends the bearer token, media type, API version and user agent on every request', async () => {
    const api = await server(json(200, migration));
    await getMigration(client(api.url, { apiVersion: '2026-03-10' }), 'acme', 7);
    expect(api.requests[0]?.headers).toMatchObject({
      authorization: `Bearer ${TOKEN}`,
      accept: 'application/vnd.service+json',
      'x-service-api-version': '2026-03-10',
      'user-agent': 'svc-migrate/9.9.9',
    });
  });

  it('defaults the API version and lets it be overridden', async () => {
    const api = await server(json(200, migration));
    await getMigration(client(api.url), 'acme', 7);
    await getMigration(client(api.url, { apiVersion: '2027-01-01' }), 'acme', 7);
    expect(api.requests.map((r) => r.headers['x-service-api-version'])).toEqual(['2026-03-10', '2027-01-01']);
  });

  it('percent-encodes path parameters so a name cannot change the path', async () => {
    const api = await server(empty(204));
    await unlockRepository(client(api.url), 'ac me', 7, '../x');
    expect(api.requests[0]?.url).toBe('/orgs/ac%20me/migrations/7/repos/..%2Fx/lock');
  });
});

describe('retries', () => {
  it('retries GET on 5xx and 408 with growing jittered backoff, then succeeds', async () => {
    const api = await server(empty(503), empty(502), empty(408), json(200, migration));
    const clock = recordingClock();
    const { data } = await getMigration(client(api.url, { clock, random: () => 0.5 }), 'acme', 7);
    expect(data.id).toBe(7);
    expect(api.requests).toHaveLength(4);
    expect(clock.sleeps).toEqual([500, 1000, 2000]);
  });

  it('gives up after 5 tries with exit code 8', async () => {
    const api = await server(empty(503));
    const error = await failure(getMigration(client(api.url), 'acme', 7));
    expect(api.requests).toHaveLength(5);
    expect(error.exitCode).toBe(ExitCode.Unavailable);
  });

  it('retries DELETE on dropped connections', async () => {
    const api = await server(hangUp, empty(204));
    await unlockRepository(client(api.url), 'acme', 7, 'widgets');
    expect(api.requests).toHaveLength(2);
  });

  it.each([
    [400, ExitCode.Usage],
    [401, ExitCode.Auth],
    [404, ExitCode.NotFound],
    [410, ExitCode.NotFound],
    [422, ExitCode.Validation],
  ])('never retries HTTP %i', async (status, exitCode) => {
    const api = await server(json(status, { message: 'no' }));
    const error = await failure(getMigration(client(api.url), 'acme', 7));
    expect(api.requests).toHaveLength(1);
    expect(error.exitCode).toBe(exitCode);
  });

  it.each([
    ['an HTML page', (_request: unknown, response: ServerResponse) => response.writeHead(404, { 'content-type': 'text/html' }).end('<!DOCTYPE html><html><body>Not Found</body></html>'), / \(a web page\)$/],
    ['an empty body', empty(404), / \(an empty body\)$/],
    ['JSON that is no error of the API', json(404, { error: 'no route' }), /no error of the service's API$/],
  ])('a 404 with %s, not an error of the API, blames the base URL, not the organization', async (_kind, answer, what) => {
    const api = await server(answer);
    const error = await failure(listAllMigrations(client(api.url), 'acme').next());
    expect(error.exitCode).toBe(ExitCode.NotFound);
    expect(error.message).toMatch(/^the base URL is probably wrong: GET http:\/\/127\.0\.0\.1:\d+\/orgs\/acme\/migrations\S* answered 404 with no error of the service's API/);
    expect(error.message).toMatch(what);
    expect(error.message).not.toMatch(/organization/);
    expect(error.hint).toMatch(/--base-url/);
  });

  it('a 404 that is an error of the API names the organization', async () => {
    const api = await server(json(404, { message: 'Not Found', documentation_url: 'https://docs.example.com' }));
    const error = await failure(listAllMigrations(client(api.url), 'acme').next());
    expect(error.message).toMatch(/^organization acme was not found/);
  });

  it('never resends a POST whose answer was lost, and says to check the list', async () => {
    const api = await server(hangUp, json(201, migration));
    const error = await failure(startMigration(client(api.url), 'acme', { repositories: ['acme/widgets'] }));
    expect(api.requests).toHaveLength(1);
    expect(error.exitCode).toBe(ExitCode.Unavailable);
    expect(error.hint).toMatch(/svc-migrate list/);
  });

  it('never resends a POST that got a 5xx', async () => {
    const api = await server(empty(502), json(201, migration));
    const error = await failure(startMigration(client(api.url), 'acme', { repositories: ['acme/widgets'] }));
    expect(api.requests).toHaveLength(1);
    expect(error.hint).toMatch(/svc-migrate list/);
  });

  it('resends a POST when the connection was refused (it never reached the server)', async () => {
    const port = await freePort();
    let late: Server | undefined;
    let listening: Promise<void> = Promise.resolve();
    const received: string[] = [];
    const api = client(`http://127.0.0.1:${port}`, {
      hooks: {
        onRetry: () => {
          if (late) return;
          late = createServer((request, response) => {
            received.push(`${request.method} ${request.url}`);
            response.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(migration));
          });
          listening = new Promise((resolve) => late?.listen(port, '127.0.0.1', resolve));
        },
      },
      // The backoff before the resend lasts until the server is there.
      clock: { ...recordingClock(), sleep: () => listening },
    });
    try {
      const started = await startMigration(api, 'acme', { repositories: ['acme/widgets'] });
      expect(started.id).toBe(7);
      expect(received).toEqual(['POST /orgs/acme/migrations']);
    } finally {
      await new Promise((resolve) => (late ? late.close(resolve) : resolve(undefined)));
    }
  });
});

describe('rate limits', () => {
  it('waits for retry-after on 429, announces the wait, then succeeds', async () => {
    const api = await server(json(429, { message: 'slow down' }, { 'retry-after': '3' }), json(200, migration));
    const clock = recordingClock();
    const waits: RateLimitWait[] = [];
    await getMigration(client(api.url, { clock, hooks: { onRateLimitWait: (w) => waits.push(w) } }), 'acme', 7);
    expect(clock.sleeps).toEqual([3000]);
    expect(waits).toMatchObject([{ kind: 'secondary', ms: 3000 }]);
  });

  it('treats 403 with x-ratelimit-remaining: 0 as a rate limit, not an auth error', async () => {
    // The client's clock, not the machine's: the wait it computes is exact.
    const now = Date.UTC(2026, 0, 1, 12, 0, 0, 250);
    const reset = Math.floor(now / 1000) + 20;
    const api = await server(
      json(
        403,
        { message: 'API rate limit exceeded' },
        { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) },
      ),
      json(200, migration),
    );
    const clock = { ...recordingClock(), now: () => now };
    await getMigration(client(api.url, { clock }), 'acme', 7);
    // Until the reset second, plus one second for clock skew.
    expect(clock.sleeps).toEqual([reset * 1000 + 1000 - now]);
  });

  it('doubles secondary waits that come with no retry-after', async () => {
    const limited = json(403, { message: 'You have exceeded a secondary rate limit' });
    const api = await server(limited, limited, json(200, migration));
    const clock = recordingClock();
    await getMigration(client(api.url, { clock }), 'acme', 7);
    expect(clock.sleeps).toEqual([60_000, 120_000]);
  });

  it('refuses a wait longer than --max-wait with a clear error and exit 8', async () => {
    const api = await server(json(429, {}, { 'retry-after': '3600' }));
    const error = await failure(getMigration(client(api.url, { maxRateLimitWaitMs: 60_000 }), 'acme', 7));
    expect(error.exitCode).toBe(ExitCode.Unavailable);
    expect(error.message).toMatch(/--max-wait/);
  });

  it('maps a plain 403 to an authorization error', async () => {
    const api = await server(json(403, { message: 'Resource not accessible by fine-grained personal access token' }));
    const error = await failure(getMigration(client(api.url), 'acme', 7));
    expect(error.exitCode).toBe(ExitCode.Auth);
    expect(error.hint).toMatch(/classic token/);
  });
});

describe('timeouts', () => {
  it('gives up on an answer that never comes, retrying first', async () => {
    const api = await server(() => {});
    const error = await failure(
      getMigration(client(api.url, { timeouts: { headersMs: 200 }, retry: { tries: 2 } }), 'acme', 7),
    );
    expect(api.requests).toHaveLength(2);
    expect(error.exitCode).toBe(ExitCode.Unavailable);
    expect(error.message).toMatch(/TIMEOUT/);
  });

  it('does not cut a slow but steady answer', async () => {
    const body = JSON.stringify(migration);
    const api = await server((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      let sent = 0;
      // The pace is what is tested: the whole answer takes longer than the idle timeout, each gap a
      // tenth of it, so only a timeout on silence, not on the whole body, lets it through. (Nothing
      // to wait on here: the sender's clock is the point.)
      // eslint-disable-next-line no-restricted-syntax -- a sender's pace, not a wait
      const timer = setInterval(() => {
        response.write(body.slice(sent, sent + 4));
        sent += 4;
        if (sent >= body.length) {
          clearInterval(timer);
          response.end();
        }
      }, 100);
    });
    const { data } = await getMigration(client(api.url, { timeouts: { headersMs: 1_000, bodyIdleMs: 1_000 } }), 'acme', 7);
    expect(data).toEqual(migration);
  });
});

describe('conditional requests', () => {
  it('sends If-None-Match and serves a 304 from the run cache', async () => {
    const api = await server(json(200, migration, { etag: '"v1"' }), empty(304, { etag: '"v1"' }));
    const api1 = client(api.url);
    const first = await getMigration(api1, 'acme', 7);
    const second = await getMigration(api1, 'acme', 7);
    expect(api.requests[1]?.headers['if-none-match']).toBe('"v1"');
    expect(second.data).toEqual(first.data);
    expect(second.notModified).toBe(true);
  });
});

describe('pagination', () => {
  it('follows rel="next" to the last page', async () => {
    const api = await server();
    const link = (page: number) => `<${api.url}/orgs/acme/migrations?per_page=2&page=${page}>`;
    api.script(
      json(200, [{ id: 1 }, { id: 2 }], { link: `${link(2)}; rel="next", ${link(3)}; rel="last"` }),
      json(200, [{ id: 3 }, { id: 4 }], { link: `${link(3)}; rel="next", ${link(1)}; rel="first"` }),
      json(200, [{ id: 5 }], { link: `${link(2)}; rel="prev"` }),
    );
    const ids: number[] = [];
    for await (const page of listAllMigrations(client(api.url), 'acme', { perPage: 2 }))
      ids.push(...page.map((m) => m.id));
    expect(ids).toEqual([1, 2, 3, 4, 5]);
    expect(api.requests.map((r) => r.url)).toEqual([
      '/orgs/acme/migrations?per_page=2',
      '/orgs/acme/migrations?per_page=2&page=2',
      '/orgs/acme/migrations?per_page=2&page=3',
    ]);
  });

  it('clamps per_page to 100 and says so', async () => {
    const api = await server(json(200, []));
    const notices: string[] = [];
    for await (const _ of listAllMigrations(client(api.url), 'acme', { perPage: 500 }, (n) => notices.push(n))) {
      // drain
    }
    expect(api.requests[0]?.url).toBe('/orgs/acme/migrations?per_page=100');
    expect(notices[0]).toMatch(/above the service's maximum/);
  });

  it('refuses to follow a next link to another origin (the token would go with it)', async () => {
    const api = await server(json(200, [{ id: 1 }], { link: '<http://evil.example/steal?page=2>; rel="next"' }));
    const error = await failure(
      (async () => {
        for await (const _ of listAllMigrations(client(api.url), 'acme')) {
          // drain
        }
      })(),
    );
    expect(error.message).toMatch(/another origin/);
  });
});

describe('credentials', () => {
  it('sends no Authorization header to another origin', async () => {
    const api = await server(empty(302, { location: 'http://localhost:1/never' }));
    const other = await server(json(200, {}));
    const api1 = client(api.url);
    await api1.request({ method: 'GET', path: `${other.url.replace('127.0.0.1', 'localhost')}/x` });
    expect(other.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('returns the archive location without following the redirect', async () => {
    const storage = await server(json(200, {}));
    const api = await server(empty(302, { location: `${storage.url}/archive?token=abc` }));
    const url = await getArchiveUrl(client(api.url), 'acme', 7);
    expect(url.toString()).toBe(`${storage.url}/archive?token=abc`);
    expect(storage.requests).toHaveLength(0);
  });

  it('redacts the token and signed query strings in the debug trace', async () => {
    const api = await server(
      empty(302, { location: 'https://storage.example/a.tgz?X-Amz-Signature=deadbeef&expires=1' }),
    );
    const lines: string[] = [];
    await getArchiveUrl(client(api.url, { hooks: { onTrace: (line) => lines.push(line) } }), 'acme', 7);
    const trace = lines.join('\n');
    expect(trace).toContain('authorization: Bearer [REDACTED]');
    expect(trace).toContain('X-Amz-Signature=[REDACTED]');
    expect(trace).not.toContain(TOKEN);
    expect(trace).not.toContain('deadbeef');
  });
});

describe('proxies', () => {
  it('goes through HTTP_PROXY and honours NO_PROXY', async () => {
    const api = await server(json(200, migration));
    const proxy = await startTunnelProxy();
    try {
      // "localhost" so the target is not the proxy's own loopback literal.
      const target = api.url.replace('127.0.0.1', 'localhost');
      await getMigration(client(target, { proxy: { httpProxy: proxy.url } }), 'acme', 7);
      expect(proxy.seen).toHaveLength(1);
      await getMigration(client(target, { proxy: { httpProxy: proxy.url, noProxy: 'localhost' } }), 'acme', 7);
      expect(proxy.seen).toHaveLength(1);
      expect(api.requests).toHaveLength(2);
    } finally {
      await proxy.close();
    }
  });
});

/** A minimal forward proxy: CONNECT tunnels and absolute-form requests, recording what it carried. */
async function startTunnelProxy() {
  const seen: string[] = [];
  const proxy = createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    const target = new URL(request.url ?? '');
    const upstream = connect(Number(target.port), target.hostname, () => {
      upstream.write(`${request.method} ${target.pathname}${target.search} HTTP/1.1\r\n`);
      for (let i = 0; i < request.rawHeaders.length; i += 2) {
        upstream.write(`${request.rawHeaders[i]}: ${request.rawHeaders[i + 1]}\r\n`);
      }
      upstream.write('connection: close\r\n\r\n');
      request.pipe(upstream);
      upstream.pipe(response.socket as NonNullable<typeof response.socket>);
    });
  });
  const tunnels = new Set<{ destroy(): void }>();
  proxy.on('connect', (request, socket, head) => {
    seen.push(`CONNECT ${request.url}`);
    tunnels.add(socket);
    const [host, port] = (request.url ?? '').split(':');
    const upstream = connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket).pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of tunnels) socket.destroy();
        proxy.closeAllConnections();
        proxy.close(() => resolve());
      }),
  };
}
