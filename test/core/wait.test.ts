import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import type { RateLimitWait } from '../../src/api/rate-limit.js';
import { startMigration } from '../../src/api/migrations.js';
import type { Clock } from '../../src/support/clock.js';
import { defaultPollIntervalMs, waitForMigrations } from '../../src/core/wait.js';
import { InterruptedError } from '../../src/errors.js';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/server.js';
import { startScriptedServer } from '../helpers/scripted-server.js';

// Waits run on the sandbox's clock: every sleep moves it forward, so ten minutes pass in milliseconds
// and the requests the sandbox records show exactly how often we polled.

const open: { sandbox: Sandbox; client: ApiClient }[] = [];
afterEach(async () => {
  for (const { sandbox, client } of open.splice(0)) {
    await client.close();
    await sandbox.close();
  }
});

async function setUp(options: SandboxOptions) {
  const sandbox = await startSandbox(options);
  const clock: Clock = {
    now: () => sandbox.clock.now(),
    sleep: async (ms) => sandbox.clock.advance(ms),
  };
  const refused: RateLimitWait[] = [];
  const client = new ApiClient({
    baseUrl: sandbox.baseUrl,
    token: sandbox.ownerToken,
    userAgent: 'test',
    clock,
    hooks: { onRateLimitWait: (wait) => refused.push(wait) },
  });
  open.push({ sandbox, client });
  const migration = await startMigration(client, 'octo-org', { repositories: ['octo-org/widgets'] });
  const polls = () =>
    sandbox.requests.filter((r) => r.method === 'GET' && r.url.startsWith(`/orgs/octo-org/migrations/${migration.id}`));
  return { sandbox, client, clock, migration, polls, refused };
}

describe('waitForMigrations', () => {
  it('polls about every 5 s for a minute, then every 30-60 s: at most one request per interval', async () => {
    const { client, clock, migration, polls } = await setUp({ exportSeconds: 600 });
    let seed = 1;
    const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    const result = await waitForMigrations(client, { org: 'octo-org', ids: [migration.id], clock, random });
    expect(result.exported).toEqual([migration.id]);
    const times = polls().map((r) => r.at);
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
    expect(gaps.every((gap) => gap >= 5_000 - 5)).toBe(true);
    expect(gaps.filter((gap) => gap < 30_000).length).toBeLessThanOrEqual(13);
    // 12 in the first minute, then one per 30-60 s over nine minutes: far from a fixed 10 s poll's 60.
    expect(times.length).toBeLessThanOrEqual(12 + 18 + 2);
  });

  it('honours x-poll-interval when the service asks for slower polls', async () => {
    const { client, clock, migration, polls } = await setUp({ exportSeconds: 120, pollIntervalSeconds: 20 });
    await waitForMigrations(client, { org: 'octo-org', ids: [migration.id], clock, intervalMs: 1_000 });
    const times = polls().map((r) => r.at);
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
    expect(gaps.slice(0, -1).every((gap) => gap >= 20_000 - 5)).toBe(true);
  });

  it('pauses until the rate-limit reset rather than spend the last of the budget', async () => {
    const { client, clock, migration, polls, refused } = await setUp({
      exportSeconds: 300,
      rateLimit: { limit: 20, windowSeconds: 120 },
    });
    // Other work on the same token has spent most of the window (unchanged polls are 304s and free).
    for (let page = 1; page <= 10; page++) {
      await client.request({ method: 'GET', path: '/orgs/octo-org/migrations', query: { page } });
    }
    const notices: string[] = [];
    const result = await waitForMigrations(client, {
      org: 'octo-org',
      ids: [migration.id],
      clock,
      intervalMs: 5_000,
      onNotice: (message) => notices.push(message),
    });
    expect(result.exported).toEqual([migration.id]);
    expect(notices.some((n) => /budget low/.test(n))).toBe(true);
    // The pause lasted until the window reset, and the service never had to refuse us.
    const times = polls().map((r) => r.at);
    const longest = Math.max(...times.slice(1).map((t, i) => t - (times[i] as number)));
    expect(longest).toBeGreaterThan(60_000);
    expect(refused).toEqual([]);
  });

  it('uses the polite schedule by default', () => {
    expect(defaultPollIntervalMs(0, () => 0.5)).toBe(5_000);
    expect(defaultPollIntervalMs(59_999, () => 0.5)).toBe(5_000);
    expect(defaultPollIntervalMs(60_000, () => 0)).toBe(30_000);
    expect(defaultPollIntervalMs(600_000, () => 0.999)).toBeLessThan(60_000);
  });

  it('says how to resume when Ctrl-C lands during a request, not only during a sleep', async () => {
    const controller = new AbortController();
    // The service receives the poll, the user presses Ctrl-C, and the answer never comes.
    const api = await startScriptedServer(() => controller.abort(new InterruptedError()));
    const client = new ApiClient({ baseUrl: `http://127.0.0.1:${api.port}`, token: 't', userAgent: 'test', signal: controller.signal });
    try {
      const clock: Clock = { now: () => 0, sleep: async () => {} };
      const waiting = waitForMigrations(client, { org: 'octo-org', ids: [7], clock, signal: controller.signal });
      await expect(waiting).rejects.toBeInstanceOf(InterruptedError);
      await expect(waiting).rejects.toMatchObject({ hint: expect.stringContaining('svc-migrate status 7 --wait') });
    } finally {
      await client.close();
      await api.close();
    }
  });
});
