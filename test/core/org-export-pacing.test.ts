import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ApiClient } from '../../src/api/client.js';
import { type Journal, JOURNAL_FILE, type OrgExportEvent } from '../../src/core/org-export/journal.js';
import { type OrgExportOptions, runOrgExport } from '../../src/core/org-export/run.js';
import { ExitCode } from '../../src/errors.js';
import type { Sandbox, SandboxOptions } from '../../src/sandbox/server.js';
import { coreSandbox } from '../helpers/core-sandbox.js';

// How the org export spends time, read off the virtual clock: the rounds of its one poll for every
// running migration, the waits a "spammed" service imposes, and where each wait ends. The clock
// moves only when the export waits, so every reading is exact; where the export must have done
// something that takes real time first (start its batches), the test holds the clock until then.

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-core-pace-'));
const names = (count: number) => Array.from({ length: count }, (_, i) => `octo-org/repo-${String(i + 1).padStart(4, '0')}`);
const MINUTE = 60_000;

type Box = Awaited<ReturnType<typeof coreSandbox>>;

async function setUp(options: SandboxOptions) {
  const box = await coreSandbox({ spamLimit: { starts: 1000, windowSeconds: 60 }, requestLogLimit: 100_000, ...options });
  return { ...box, dir: join(tempDir(), 'out') };
}

/** Runs the export; each event comes with the clock's reading when it was told. */
async function exportAll(
  box: Box & { dir: string },
  repositories: string[],
  extra: Partial<OrgExportOptions> = {},
  api: ApiClient = box.api,
) {
  const events: (OrgExportEvent & { at: number })[] = [];
  const result = await runOrgExport(api, {
    org: box.org,
    dir: box.dir,
    repositories,
    batchSize: 1,
    parallel: 4,
    body: {},
    unlock: false,
    deleteArchive: false,
    checksum: false,
    verify: false,
    fingerprint: 'd'.repeat(64),
    command: 'export',
    restart: false,
    clock: box.clock.program,
    ...extra,
    onEvent: (event) => {
      events.push({ ...event, at: box.clock.now() });
      extra.onEvent?.(event);
    },
  });
  return { result, events };
}

/** Holds the clock until `count` batches have started: all are then watched from the same instant. */
function holdUntilStarted(box: Box, count: number): (event: OrgExportEvent) => void {
  const release = box.clock.hold();
  let started = 0;
  return (event) => {
    if (event.type === 'batch' && event.state === 'started' && ++started === count) release();
  };
}

/**
 * The poll's lists, each page asked for by its number: a start's own look at the list just before
 * it (its first page unnumbered) is not a poll.
 */
const lists = (sandbox: Sandbox) => sandbox.requests.filter((r) => r.method === 'GET' && /^\/orgs\/octo-org\/migrations\?.*\bpage=\d/.test(r.url));
const byId = (sandbox: Sandbox) => sandbox.requests.filter((r) => r.method === 'GET' && /^\/orgs\/octo-org\/migrations\/\d+(\?|$)/.test(r.url));
const gaps = (times: number[]) => times.slice(1).map((t, i) => t - (times[i] as number));
const states = (dir: string) => (JSON.parse(readFileSync(join(dir, JOURNAL_FILE), 'utf8')) as Journal).batches.map((b) => b.state);
const errors = (events: OrgExportEvent[]) => events.filter((e): e is Extract<OrgExportEvent, { type: 'error' }> & { at: number } => e.type === 'error');
const notices = (events: OrgExportEvent[]) => events.flatMap((e) => (e.type === 'notice' ? [e.message] : []));

beforeEach(() => {
  vi.stubEnv('PATH', '/nonexistent');
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the org export\'s poll', () => {
  it('asks for every running migration with one list request a round, at --interval', async () => {
    const box = await setUp({ repositories: 24, exportSeconds: 60 });
    const onEvent = holdUntilStarted(box, 8);
    const { result } = await exportAll(box, names(24), { batchSize: 3, parallel: 8, intervalMs: 10_000, onEvent });
    expect(result).toMatchObject({ exitCode: ExitCode.Ok, archivedRepositories: 24 });
    const rounds = lists(box.sandbox).map((r) => r.at);
    const t0 = rounds[0] as number;
    // Started at t0, exported at t0 + 60 s: seven rounds, ten seconds apart, one request each.
    expect(rounds.map((at) => at - t0)).toEqual([0, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000]);
    expect(result.pollRequests).toBe(7);
    // A migration is asked for by its id only once exported, by the download.
    expect(byId(box.sandbox).filter((r) => r.at < t0 + MINUTE)).toEqual([]);
  });

  it('polls every 5 s in the first minute of the youngest migration, then every 30 to 60 s', async () => {
    const box = await setUp({ repositories: 1, exportSeconds: 300 });
    const { result } = await exportAll(box, names(1));
    expect(result.exitCode).toBe(ExitCode.Ok);
    const between = gaps(lists(box.sandbox).map((r) => r.at));
    expect(between.slice(0, 12)).toEqual(Array(12).fill(5_000));
    expect(between.length).toBeGreaterThan(12);
    for (const gap of between.slice(12)) {
      expect(gap).toBeGreaterThanOrEqual(30_000);
      expect(gap).toBeLessThan(60_000);
    }
  });

  it('gives up after 15 minutes of failed checks on the clock (exit 8), where passing trouble is only a notice', async () => {
    const box = await setUp({ repositories: 4, exportSeconds: 3600 });
    // Full jitter at its middle: the client's waits between tries of a request are 0.5, 1, 2 and 4 s.
    const api = box.connect({ random: () => 0.5 });
    const release = holdUntilStarted(box, 2);
    const { result, events } = await exportAll(box, names(2), {
      parallel: 2,
      intervalMs: 30_000,
      onEvent: (event) => {
        release(event);
        // Every check from the next round on fails.
        if (event.type === 'batch' && event.state === 'started' && event.batch === 2) box.sandbox.faults.set({ failNext: 1_000_000, failPath: '/orgs/octo-org/migrations' });
      },
    }, api);
    expect(result.exitCode).toBe(ExitCode.Unavailable);
    expect(states(box.dir)).toEqual(['started', 'started']);
    const failed = errors(events);
    expect(failed.map((e) => e.batch).sort()).toEqual([1, 2]);
    expect(failed[0]?.message).toMatch(/^could not check the migrations for 15 minutes \(/);
    expect(failed[0]?.hint).toBe('the migrations go on on the service; run the same command again to go on waiting for them');
    const firstFailure = lists(box.sandbox).find((r) => r.status === 503)?.at as number;
    // Given up at the first round that ends 15 minutes after the first failure: a round (30 s and
    // the 7.5 s of a request's tries) later at most.
    expect(failed[0]!.at - firstFailure).toBeGreaterThanOrEqual(15 * MINUTE);
    expect(failed[0]!.at - firstFailure).toBeLessThan(15 * MINUTE + 30_000 + 2 * 7_500);
    expect(notices(events).filter((n) => /^could not check the migrations \(.*\); trying again$/.test(n)).length).toBeGreaterThan(10);

    // Twelve failed answers: two rounds of five tries, and two tries of the third round.
    const passing = await setUp({ repositories: 1, exportSeconds: 600 });
    const client = passing.connect({ random: () => 0.5 });
    const { result: ok, events: told } = await exportAll(passing, names(1), {
      intervalMs: MINUTE,
      onEvent: (event) => {
        if (event.type === 'batch' && event.state === 'started') passing.sandbox.faults.set({ failNext: 12, failPath: '/orgs/octo-org/migrations' });
      },
    }, client);
    expect(ok.exitCode).toBe(ExitCode.Ok);
    expect(notices(told).filter((n) => /trying again/.test(n))).toHaveLength(2);
  });

  it('--timeout gives up each batch\'s wait at its own deadline on the clock (exit 7); the others finish, and the next run waits on', async () => {
    // Batch 1 (two repositories) takes 21 minutes of the sandbox's clock, batch 2 (one) 11.
    const box = await setUp({ repositories: 3, exportSeconds: 60, exportSecondsPerRepository: 600 });
    const onEvent = holdUntilStarted(box, 2);
    const { result, events } = await exportAll(box, names(3), { batchSize: 2, intervalMs: 30_000, timeoutMs: 15 * MINUTE, onEvent });
    expect(result.exitCode).toBe(ExitCode.Timeout);
    const started = events.find((e) => e.type === 'batch' && e.batch === 1 && e.state === 'started')!;
    const id = result.batches[0]?.migrationIds[0] as number;
    expect(errors(events)).toEqual([{
      type: 'error',
      batch: 1,
      migrationId: id,
      message: `timed out waiting for migration ${id} after 15 minutes (exporting)`,
      exitCode: ExitCode.Timeout,
      hint: 'the migration goes on on the service; run the same command again to go on waiting for it',
      at: started.at + 15 * MINUTE,
    }]);
    expect(states(box.dir)).toEqual(['started', 'done']);

    const from = box.sandbox.requests.length;
    const again = await exportAll(box, names(3), { batchSize: 2, intervalMs: 30_000 });
    expect(again.result.exitCode).toBe(ExitCode.Ok);
    expect(states(box.dir)).toEqual(['done', 'done']);
    expect(box.sandbox.requests.slice(from).filter((r) => r.method === 'POST')).toEqual([]);
  });
});

describe('a service that refuses new starts for now ("spammed")', () => {
  it('waits 5, 10, 20, 40, then 60 s between tries, 20 times at most, then reports the batch (exit 5)', async () => {
    const box = await setUp({ repositories: 1, spamLimit: { starts: 0, windowSeconds: 60 } });
    const { result, events } = await exportAll(box, names(1));
    expect(result.exitCode).toBe(ExitCode.Validation);
    const waits = [5_000, 10_000, 20_000, 40_000, ...Array<number>(16).fill(60_000)];
    expect(box.clock.sleeps).toEqual(waits);
    const tries = box.sandbox.requests.filter((r) => r.method === 'POST').map((r) => r.at);
    expect(gaps(tries)).toEqual(waits);
    expect(notices(events)).toEqual(waits.map((ms, i) => `the service refuses new starts for now; batches wait ${ms / 1000} s before asking again (wait ${i + 1} of at most 20)`));
    expect(errors(events)).toEqual([expect.objectContaining({ batch: 1, exitCode: ExitCode.Validation, message: expect.stringMatching(/spammed/) })]);
    expect(states(box.dir)).toEqual(['pending']);
  });

  it('says it once a round of waits, not once a batch: nine batches refused together, one line each round', async () => {
    const box = await setUp({ repositories: 9, exportSeconds: 10, spamLimit: { starts: 0, windowSeconds: 60 } });
    // Each batch counts its own waits; whichever reaches a round first says it for all.
    const { result, events } = await exportAll(box, names(9), { parallel: 9, intervalMs: 1_000 });
    expect(result.exitCode).toBe(ExitCode.Validation);
    const told = notices(events).filter((n) => /refuses new starts/.test(n));
    expect(told).toHaveLength(20);
    expect(new Set(told).size).toBe(20);
    expect(box.sandbox.requests.filter((r) => r.method === 'POST')).toHaveLength(9 * 21);
  });

  it('starts the batches it refused once its window has passed', async () => {
    const box = await setUp({ repositories: 4, exportSeconds: 10, spamLimit: { starts: 2, windowSeconds: 60 } });
    const { result, events } = await exportAll(box, names(4), { intervalMs: 1_000 });
    expect(result.exitCode).toBe(ExitCode.Ok);
    expect(notices(events)).toContain('the service refuses new starts for now; batches wait 5 s before asking again (wait 1 of at most 20)');
    // Each batch is told starting before its start is asked; each one refused, waiting, once (the board's line while it waits).
    const toldOf = (batch: number) => events.flatMap((e) => (e.type === 'batch' && e.batch === batch ? [e.state] : e.type === 'step' && e.batch === batch ? [e.step] : []));
    expect(toldOf(1).slice(0, 2)).toEqual(['starting', 'started']);
    expect(toldOf(3).slice(0, 3)).toEqual(['starting', 'waiting-to-start', 'started']);
    expect(toldOf(4).slice(0, 3)).toEqual(['starting', 'waiting-to-start', 'started']);
    const accepted = box.sandbox.requests.filter((r) => r.method === 'POST' && r.status === 201).map((r) => r.at);
    expect(accepted).toHaveLength(4);
    expect((accepted[2] as number) - (accepted[0] as number)).toBeGreaterThanOrEqual(MINUTE);
  });
});
