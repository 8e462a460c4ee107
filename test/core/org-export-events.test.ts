import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Journal, JOURNAL_FILE, type OrgExportEvent } from '../../src/core/org-export/journal.js';
import { type OrgExportOptions, runOrgExport } from '../../src/core/org-export/run.js';
import { ExitCode } from '../../src/errors.js';
import type { SandboxOptions } from '../../src/sandbox/server.js';
import { failure } from '../helpers/api-client.js';
import { coreSandbox } from '../helpers/core-sandbox.js';

// What an org export tells as it goes, for the board, the plain lines and --json: a resumed run's
// batches before any request of its own, and each step between two journal states (downloading,
// verifying with its progress, verified, unlocking). git is kept off PATH (the quick project
// starts no process): the check's reading is what progresses here; git's progress is
// test/integrity/git-parallel.test.ts.

type Box = Awaited<ReturnType<typeof coreSandbox>>;
const names = (count: number) => Array.from({ length: count }, (_, i) => `octo-org/repo-${String(i + 1).padStart(4, '0')}`);

async function setUp(options: SandboxOptions = {}): Promise<Setup> {
  const box = await coreSandbox({ exportSeconds: 30, spamLimit: { starts: 1000, windowSeconds: 60 }, ...options });
  return { ...box, dir: join(mkdtempSync(join(tmpdir(), 'svc-core-events-')), 'out') };
}

type Setup = Box & { dir: string };

function run(box: Setup, repositories: string[], extra: Partial<OrgExportOptions>, events: OrgExportEvent[], api = box.api) {
  return runOrgExport(api, {
    org: box.org,
    dir: box.dir,
    repositories,
    batchSize: 2,
    parallel: 2,
    body: { lock_repositories: true },
    unlock: true,
    deleteArchive: false,
    checksum: true,
    verify: true,
    fingerprint: 'e'.repeat(64),
    command: 'export --repos-file repos.txt --batch-size 2',
    restart: false,
    intervalMs: 1_000,
    clock: box.clock.program,
    ...extra,
    onEvent: (event) => {
      events.push(event);
      extra.onEvent?.(event);
    },
  });
}

const journalIn = (dir: string) => JSON.parse(readFileSync(join(dir, JOURNAL_FILE), 'utf8')) as Journal;
/** Each event of one batch as a word: its state, step, or progress stage. */
const told = (events: OrgExportEvent[], batch: number) =>
  events.flatMap((e) => {
    if (!('batch' in e) || e.batch !== batch) return [];
    if (e.type === 'batch') return [e.resumed ? `resumed ${e.state}` : e.state];
    if (e.type === 'step') return [e.step];
    if (e.type === 'verify') return [`verify ${e.stage}`];
    return [];
  });
/** Runs of one word told again and again (progress) as one. */
const squeezed = (words: string[]) => words.filter((word, i) => word !== words[i - 1]);

beforeEach(() => {
  vi.stubEnv('PATH', '/nonexistent');
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe('what an org export tells as it goes', () => {
  it('a resumed run tells each batch under way with its state and migration before it asks the service anything or reads an archive', async () => {
    const box = await setUp({ repositories: 4, archivePadBytes: 400_000 });
    const list = names(4);
    // Stopped (as kill -9 leaves it, the journal says where) once an archive is part-way down.
    const stop = new AbortController();
    const first: OrgExportEvent[] = [];
    const stopped = await failure(run(box, list, {
      signal: stop.signal,
      onEvent: (e) => e.type === 'download' && e.received > 0 && stop.abort(),
    }, first, box.connect({ signal: stop.signal })));
    expect(stopped.exitCode).toBe(ExitCode.Interrupted);
    const underWay = journalIn(box.dir).batches.filter((b) => b.migrationIds.length > 0 && b.state !== 'done');
    expect(underWay.map((b) => b.state)).toContain('exported');

    const events: OrgExportEvent[] = [];
    const from = box.sandbox.requests.length;
    let requestsWhenTold: number | undefined;
    const result = await run(box, list, {
      onEvent: (e) => {
        if (e.type === 'batch' && e.resumed) requestsWhenTold ??= box.sandbox.requests.length;
      },
    }, events);
    expect(result.exitCode).toBe(ExitCode.Ok);
    expect(requestsWhenTold).toBe(from);
    // Right after the plan, before any download, check or service state of this run.
    const firstWork = events.findIndex((e) => e.type !== 'plan' && e.type !== 'notice' && !(e.type === 'batch' && e.resumed));
    expect(events.slice(1, firstWork)).toEqual(underWay.map((b) => ({
      type: 'batch',
      batch: b.index,
      state: b.state,
      migrationId: b.migrationIds.at(-1),
      repositories: b.repositories.length,
      message: `resuming migration ${b.migrationIds.at(-1)}: ${b.state}`,
      resumed: true,
    })));
    expect(events[0]).toMatchObject({ type: 'plan', resumed: true });
  });

  it('tells each step between two journal states: downloading, verifying with its progress, verified, unlocking', async () => {
    const box = await setUp({ repositories: 2, archivePadBytes: 300_000 });
    const events: OrgExportEvent[] = [];
    const result = await run(box, names(2), {}, events);
    expect(result.exitCode).toBe(ExitCode.Ok);
    expect(squeezed(told(events, 1))).toEqual([
      'starting', 'started', 'exported', 'downloading', 'verifying', 'verify reading', 'verified', 'downloaded', 'unlocking', 'unlocked', 'done',
    ]);
    const id = result.batches[0]?.migrationIds[0];
    const reading = events.filter((e): e is Extract<OrgExportEvent, { type: 'verify' }> => e.type === 'verify');
    expect(reading.every((e) => e.migrationId === id && e.total === result.batches[0]?.archive?.bytes)).toBe(true);
    expect(reading.at(-1)?.done).toBe(result.batches[0]?.archive?.bytes);
    // The saved archive is a field of its own, and the release says whether it unlocked.
    expect(events).toContainEqual(expect.objectContaining({ type: 'batch', state: 'downloaded', archive: join(box.dir, `migration-${id}.tar.gz`) }));
    expect(events).toContainEqual(expect.objectContaining({ type: 'batch', state: 'unlocked', repositoriesUnlocked: true }));
  });

  it('a batch resumed past its download is verified again before its unlock, and says so', async () => {
    const box = await setUp({ repositories: 2, faults: { failNext: 1000, failPath: '/lock', failStatus: 500 } });
    const first: OrgExportEvent[] = [];
    expect((await run(box, names(2), {}, first)).exitCode).toBe(ExitCode.Unavailable);
    box.sandbox.faults.clear();
    const events: OrgExportEvent[] = [];
    const result = await run(box, names(2), { body: { lock_repositories: true } }, events);
    expect(result.exitCode).toBe(ExitCode.Ok);
    expect(squeezed(told(events, 1))).toEqual(['resumed downloaded', 'verifying', 'verify reading', 'verified', 'unlocking', 'unlocked', 'done']);
  });

  it('a started batch tells the state the start answered at once, before any round of the poller, and each state once', async () => {
    const box = await setUp({ repositories: 4 });
    // Stopped at the first start: no round of the poller comes after it.
    const stop = new AbortController();
    const first: OrgExportEvent[] = [];
    await failure(run(box, names(4), { signal: stop.signal, parallel: 1, onEvent: (e) => e.type === 'batch' && e.state === 'started' && stop.abort() }, first));
    const id = first.flatMap((e) => (e.type === 'batch' && e.state === 'started' ? [e.migrationId] : []))[0];
    expect(first).toContainEqual({ type: 'migration', batch: 1, migrationId: id, state: 'pending' });

    const box2 = await setUp({ repositories: 4 });
    const events: OrgExportEvent[] = [];
    expect((await run(box2, names(4), {}, events)).exitCode).toBe(ExitCode.Ok);
    for (const batch of [1, 2]) {
      const states = events.flatMap((e) => (e.type === 'migration' && e.batch === batch ? [e.state] : []));
      expect(states[0]).toBe('pending');
      expect(states.at(-1)).toBe('exported');
      expect(squeezed(states)).toEqual(states);
    }
  });

  it('kept locked: the release step says it unlocked nothing', async () => {
    const box = await setUp({ repositories: 2 });
    const events: OrgExportEvent[] = [];
    expect((await run(box, names(2), { unlock: false }, events)).exitCode).toBe(ExitCode.Ok);
    expect(squeezed(told(events, 1))).not.toContain('unlocking');
    expect(events).toContainEqual(expect.objectContaining({ type: 'batch', state: 'unlocked', repositoriesUnlocked: false }));
  });
});
