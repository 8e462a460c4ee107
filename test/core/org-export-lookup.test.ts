import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startMigration } from '../../src/api/migrations.js';
import { type Journal, JOURNAL_FILE, type OrgExportEvent, writeJournal } from '../../src/core/org-export/journal.js';
import { readJournal } from '../../src/core/org-export/journal-read.js';
import { OrgExportStoppedError } from '../../src/core/org-export/outcome.js';
import { type OrgExportOptions, runOrgExport } from '../../src/core/org-export/run.js';
import { existedAt, findStarted, migrationsBefore } from '../../src/core/started-lookup.js';
import { ExitCode } from '../../src/errors.js';
import type { Sandbox, SandboxOptions } from '../../src/sandbox/server.js';
import { failure } from '../helpers/api-client.js';
import { coreSandbox } from '../helpers/core-sandbox.js';

// A start whose answer was lost is looked up in the list: what the lookup takes must be what that
// start made, never another export's migration of the same repositories (other flags, one that
// existed before the start, one another directory owns), and a start the service refused made
// nothing to look up.

const FINGERPRINT = 'e'.repeat(64);
const names = (count: number) => Array.from({ length: count }, (_, i) => `octo-org/repo-${String(i + 1).padStart(4, '0')}`);
const starts = (sandbox: Sandbox, from = 0) =>
  sandbox.requests.slice(from).filter((r) => r.origin === 'api' && r.method === 'POST' && r.url === '/orgs/octo-org/migrations');
const journalIn = (dir: string) => JSON.parse(readFileSync(join(dir, JOURNAL_FILE), 'utf8')) as Journal;

type Box = Awaited<ReturnType<typeof coreSandbox>>;

async function setUp(options: SandboxOptions = {}): Promise<Box & { dir: string }> {
  const box = await coreSandbox({ exportSeconds: 30, spamLimit: { starts: 1000, windowSeconds: 60 }, ...options });
  return { ...box, dir: join(mkdtempSync(join(tmpdir(), 'svc-core-lookup-')), 'out') };
}

function optionsFor(box: Box, dir: string, repositories: string[], extra: Partial<OrgExportOptions> = {}): OrgExportOptions {
  return {
    org: box.org, dir, repositories, batchSize: 2, parallel: 2, body: { lock_repositories: true },
    unlock: false, deleteArchive: false, checksum: true, verify: true, fingerprint: FINGERPRINT,
    command: 'export --repos-file repos.txt --batch-size 2 --lock', restart: false, intervalMs: 1_000, clock: box.clock.program, ...extra,
  };
}

beforeEach(() => {
  vi.stubEnv('PATH', '/nonexistent');
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the lookup of a start whose answer was lost', () => {
  it('takes only a migration of the same flags that the list did not hold before the start', async () => {
    const { api, clock } = await setUp({ repositories: 2 });
    const flags = { lock_repositories: true };
    // Another export of the same repositories, a minute before, with the same flags.
    const before = await startMigration(api, 'octo-org', { repositories: names(2), ...flags });
    clock.advance(60_000);
    const startingAt = clock.now();
    const existed = existedAt(await migrationsBefore(api, 'octo-org', startingAt), startingAt);
    expect(existed).toEqual([before.id]);
    // Since, one of the same repositories without git data: not this start's either.
    await startMigration(api, 'octo-org', { repositories: names(2), exclude_git_data: true, ...flags });
    const record = { repositories: names(2), flags, startingAt, existed };
    expect(await findStarted(api, 'octo-org', record, new Set(), clock.now())).toBeUndefined();
    // What the start made is found.
    const made = await startMigration(api, 'octo-org', { repositories: names(2), ...flags });
    expect((await findStarted(api, 'octo-org', record, new Set(), clock.now()))?.id).toBe(made.id);
  });

  it('never takes one made long after the start: a start that never reached the service adopts no later export', async () => {
    const { api, clock } = await setUp({ repositories: 2 });
    const flags = { lock_repositories: true };
    const startingAt = clock.now();
    const existed = existedAt(await migrationsBefore(api, 'octo-org', startingAt), startingAt);
    // The start was lost on its way; an hour later a colleague exports the same repositories alike.
    clock.advance(60 * 60_000);
    await startMigration(api, 'octo-org', { repositories: names(2), ...flags });
    const record = { repositories: names(2), flags, startingAt, existed };
    expect(await findStarted(api, 'octo-org', record, new Set(), clock.now())).toBeUndefined();
  });

  it('a batch left "starting" takes neither a migration of other flags nor one listed before its start: it starts its own', async () => {
    const box = await setUp({ repositories: 4 });
    const { sandbox, api, clock, dir } = box;
    // Batch 1's repositories, exported by another directory a moment before this start.
    const older = await startMigration(api, 'octo-org', { repositories: names(2), lock_repositories: true });
    clock.advance(1_000);
    const startingAt = clock.now();
    // Batch 2's repositories, exported since without git data (another command, `-o other.tgz`).
    const other = await startMigration(api, 'octo-org', { repositories: names(4).slice(2), exclude_git_data: true, lock_repositories: true });
    mkdirSync(dir, { mode: 0o700 });
    const at = new Date(startingAt).toISOString();
    await writeJournal(dir, {
      version: 1, fingerprint: FINGERPRINT, command: 'export', org: 'octo-org', createdAt: at, updatedAt: at,
      batches: [
        { index: 1, repositories: names(2), state: 'starting', migrationIds: [], attempts: 1, startingAt, existed: [older.id] },
        { index: 2, repositories: names(4).slice(2), state: 'starting', migrationIds: [], attempts: 1, startingAt, existed: [] },
      ],
    });
    const from = sandbox.requests.length;
    const result = await runOrgExport(api, optionsFor(box, dir, names(4)));
    expect(result.exitCode).toBe(ExitCode.Ok);
    expect(starts(sandbox, from)).toHaveLength(2);
    const taken = result.batches.flatMap((b) => b.migrationIds);
    expect(taken).not.toContain(older.id);
    expect(taken).not.toContain(other.id);
    expect(result.batches.map((b) => b.attempts)).toEqual([1, 1]);
  });

  it('a start the service refused ("spammed") is journaled back to pending before the wait: Ctrl-C then leaves nothing to look up', async () => {
    // One start a minute, taken by another export of other repositories.
    const box = await setUp({ repositories: 4, spamLimit: { starts: 1, windowSeconds: 60 } });
    const { api, clock, dir } = box;
    await startMigration(api, 'octo-org', { repositories: names(4).slice(2) });
    const stop = new AbortController();
    const onEvent = (event: OrgExportEvent) => {
      if (event.type === 'notice' && event.message.startsWith('the service refuses new starts for now')) stop.abort();
    };
    const stopped = runOrgExport(box.connect({ signal: stop.signal }), { ...optionsFor(box, dir, names(2)), signal: stop.signal, onEvent });
    const error = await failure(stopped);
    expect(error).toBeInstanceOf(OrgExportStoppedError);
    expect((error as OrgExportStoppedError).error.exitCode).toBe(ExitCode.Interrupted);
    expect(journalIn(dir).batches.map((b) => b.state)).toEqual(['pending']);
    // Another export of the same repositories, once the service takes starts again, is not taken.
    clock.advance(61_000);
    const elsewhere = await startMigration(api, 'octo-org', { repositories: names(2), lock_repositories: true });
    const events: OrgExportEvent[] = [];
    const result = await runOrgExport(api, { ...optionsFor(box, dir, names(2)), onEvent: (event) => events.push(event) });
    expect(result.exitCode).toBe(ExitCode.Ok);
    expect(result.batches[0]?.migrationIds).not.toContain(elsewhere.id);
    expect(events.some((e) => e.type === 'batch' && /started by an earlier run/.test(e.message))).toBe(false);
  });

  it('the journal keeps what existed before a start as written, and refuses it as anything but migration ids', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-core-lookup-'));
    const at = new Date(0).toISOString();
    const journal = (existed: unknown) => ({
      version: 1, fingerprint: FINGERPRINT, command: 'export', org: 'octo-org', createdAt: at, updatedAt: at,
      batches: [{ index: 1, repositories: names(1), state: 'starting', migrationIds: [], attempts: 1, startingAt: 0, existed }],
    }) as unknown as Journal;
    await writeJournal(dir, journal([7, 9]));
    expect((await readJournal(dir))?.batches[0]?.existed).toEqual([7, 9]);
    await writeJournal(dir, journal(['7']));
    await expect(readJournal(dir)).rejects.toMatchObject({ exitCode: ExitCode.Usage, message: expect.stringMatching(/existed\[0\] is "7", not a whole number/) });
  });
});
