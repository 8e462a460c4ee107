import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import type { RateLimitWait } from '../../src/api/rate-limit.js';
import { startMigration } from '../../src/api/migrations.js';
import type { Clock } from '../../src/support/clock.js';
import { defaultPollIntervalMs, waitForMigrations, type WaitOptions } from '../../src/core/wait.js';
import { ExitCode, InterruptedError, UnavailableError, WaitTimeoutError } from '../../src/errors.js';
import type { SandboxOptions } from '../../src/sandbox/server.js';
import { failure } from '../helpers/api-client.js';
import { coreSandbox } from '../helpers/core-sandbox.js';
import { startScriptedServer } from '../helpers/scripted-server.js';

// Waits run on a virtual clock that moves only when the program waits: ten minutes pass in
// milliseconds, and the times the sandbox records of each request are exact, so the pace of the
// polls, the backoff after failures and the pause for the rate limit are read off the clock.

const MINUTE = 60_000;

async function setUp(options: SandboxOptions) {
  const box = await coreSandbox(options);
  const refused: RateLimitWait[] = [];
  // Full jitter at its middle: the client's waits between tries of a request are 0.5, 1, 2 and 4 s.
  const api = box.connect({ random: () => 0.5, hooks: { onRateLimitWait: (wait) => refused.push(wait) } });
  const migration = await startMigration(api, 'octo-org', { repositories: ['octo-org/widgets'] });
  const polls = () =>
    box.sandbox.requests.filter((r) => r.method === 'GET' && r.url.startsWith(`/orgs/octo-org/migrations/${migration.id}`));
  const wait = (extra: Partial<WaitOptions> = {}) => waitForMigrations(api, { org: 'octo-org', ids: [migration.id], clock: box.clock.program, ...extra });
  return { ...box, api, migration, polls, refused, wait };
}

const gaps = (times: number[]) => times.slice(1).map((t, i) => t - (times[i] as number));

describe('waitForMigrations', () => {
  it('polls every 5 s for a minute, then every 30-60 s: one request per interval', async () => {
    const { migration, polls, wait } = await setUp({ exportSeconds: 600 });
    const result = await wait();
    expect(result.exported).toEqual([migration.id]);
    const between = gaps(polls().map((r) => r.at));
    expect(between.slice(0, 12)).toEqual(Array(12).fill(5_000));
    for (const gap of between.slice(12)) {
      expect(gap).toBeGreaterThanOrEqual(30_000);
      expect(gap).toBeLessThan(60_000);
    }
    // 12 in the first minute, then one per 30-60 s over nine minutes: far from a fixed 10 s poll's 60.
    expect(between.length + 1).toBeLessThanOrEqual(12 + 18 + 1);
  });

  it('polls at --interval exactly, and tells each state once, with the time since the wait began', async () => {
    const { polls, wait } = await setUp({ exportSeconds: 60 });
    const events: [string, number, boolean][] = [];
    await wait({ intervalMs: 10_000, onEvent: (e) => events.push([e.state, e.elapsedMs, e.finished]) });
    const times = polls().map((r) => r.at);
    expect(times.map((t) => t - (times[0] as number))).toEqual([0, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000]);
    expect(events).toEqual([['pending', 0, false], ['exporting', 20_000, false], ['exported', 60_000, true]]);
  });

  it('honours x-poll-interval when the service asks for slower polls', async () => {
    const { polls, wait } = await setUp({ exportSeconds: 120, pollIntervalSeconds: 20 });
    await wait({ intervalMs: 1_000 });
    expect(gaps(polls().map((r) => r.at))).toEqual(Array(6).fill(20_000));
  });

  it('keeps waiting through passing trouble: the client backs off 0.5, 1, 2, 4 s between tries, the wait says so and polls on', async () => {
    const { sandbox, clock, migration, polls, wait } = await setUp({ exportSeconds: 30 });
    // Seven failed answers: the five tries of one poll, and two of the next.
    sandbox.faults.set({ failNext: 7, failPath: `/migrations/${migration.id}` });
    const notices: string[] = [];
    const result = await wait({ intervalMs: 10_000, onNotice: (message) => notices.push(message) });
    expect(result.exported).toEqual([migration.id]);
    expect(notices).toEqual([expect.stringMatching(new RegExp(`^could not check migration ${migration.id} \\(the service failed with HTTP 503.*\\); trying again$`))]);
    expect(clock.sleeps.slice(0, 7)).toEqual([500, 1_000, 2_000, 4_000, 10_000, 500, 1_000]);
    expect(polls().map((r) => r.status).slice(0, 8)).toEqual([503, 503, 503, 503, 503, 503, 503, 200]);
  });

  it('gives up after 15 minutes of failures on the clock (exit 8), with the command that waits on', async () => {
    const { sandbox, clock, migration, polls, wait } = await setUp({ exportSeconds: 3600, requestLogLimit: 10_000 });
    sandbox.faults.set({ failNext: 1_000_000, failPath: `/migrations/${migration.id}` });
    const error = await failure(wait({ intervalMs: 30_000 }));
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error.exitCode).toBe(ExitCode.Unavailable);
    expect(error.message).toMatch(new RegExp(`^could not check migration ${migration.id} for 15 minutes \\(`));
    expect(error.hint).toBe(`run \`svc-migrate status ${migration.id} --wait\` to keep waiting`);
    // The first failure is known once its five tries (7.5 s) have failed; the wait ends at the first
    // failure 15 minutes after that, a poll (30 s, and its tries) later at most.
    const failedSince = (polls()[0]?.at as number) + 7_500;
    expect(clock.now() - failedSince).toBeGreaterThanOrEqual(15 * MINUTE);
    expect(clock.now() - failedSince).toBeLessThan(15 * MINUTE + 30_000 + 7_500);
  });

  it('--timeout ends the wait at its deadline on the clock, not at the next poll (exit 7)', async () => {
    const { clock, migration, wait } = await setUp({ exportSeconds: 600 });
    const started = clock.now();
    const error = await failure(wait({ intervalMs: 25_000, timeoutMs: MINUTE }));
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(error.exitCode).toBe(ExitCode.Timeout);
    expect(error.message).toBe(`timed out waiting (${migration.id} pending)`);
    expect(clock.now() - started).toBe(MINUTE);
  });

  it('pauses until the rate-limit reset rather than spend the last of the budget', async () => {
    const { api, migration, polls, refused, wait } = await setUp({
      exportSeconds: 300,
      rateLimit: { limit: 20, windowSeconds: 120 },
    });
    // Other work on the same token has spent most of the window (unchanged polls are 304s and free).
    for (let page = 1; page <= 10; page++) {
      await api.request({ method: 'GET', path: '/orgs/octo-org/migrations', query: { page } });
    }
    const notices: string[] = [];
    const result = await wait({ intervalMs: 5_000, onNotice: (message) => notices.push(message) });
    expect(result.exported).toEqual([migration.id]);
    expect(notices.some((n) => /budget low/.test(n))).toBe(true);
    // The pause lasted until a second after the window's reset, and the service never had to refuse us.
    const times = polls().map((r) => r.at);
    const longest = gaps(times).indexOf(Math.max(...gaps(times)));
    const reset = polls()[longest]?.rateLimitReset as number;
    expect(times[longest + 1]).toBe(reset * 1000 + 1000);
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
