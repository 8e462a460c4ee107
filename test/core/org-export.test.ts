import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ApiClient } from '../../src/api/client.js';
import { startMigration } from '../../src/api/migrations.js';
import { verifyArchive } from '../../src/core/archive/verify.js';
import { type Journal, JOURNAL_FILE, type OrgExportEvent, writeJournal } from '../../src/core/org-export/journal.js';
import { endedBy, isLocal, OrgExportStoppedError, worse } from '../../src/core/org-export/outcome.js';
import { type OrgExportOptions, type OrgExportResult, runOrgExport } from '../../src/core/org-export/run.js';
import { CliError, ExitCode, UnavailableError, UsageError } from '../../src/errors.js';
import type { Sandbox, SandboxOptions } from '../../src/sandbox/server.js';
import { failure } from '../helpers/api-client.js';
import { coreSandbox } from '../helpers/core-sandbox.js';

// `export --output-dir` as the command calls it (runOrgExport), against an in-process sandbox on a
// virtual clock: the batches, what a second run takes up from the journal, the repositories the
// service refuses, and the outcome (the result, its exit code, the events the user is shown). The
// archive check's git is kept off PATH (the quick project starts no process): a test here is about
// the batches; the run with git, start to end, is test/integrity/released-after-git.test.ts.

const FINGERPRINT = 'c'.repeat(64);
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-core-org-'));
const names = (count: number) => Array.from({ length: count }, (_, i) => `octo-org/repo-${String(i + 1).padStart(4, '0')}`);
const full = (...repositories: string[]) => repositories.map((name) => `octo-org/${name}`);
const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

type Box = Awaited<ReturnType<typeof coreSandbox>>;

async function setUp(options: SandboxOptions = {}): Promise<Box & { dir: string }> {
  const box = await coreSandbox({ exportSeconds: 30, spamLimit: { starts: 1000, windowSeconds: 60 }, ...options });
  return { ...box, dir: join(tempDir(), 'out') };
}

function optionsFor(box: Box, dir: string, repositories: string[], extra: Partial<OrgExportOptions>): OrgExportOptions {
  return {
    org: box.org,
    dir,
    repositories,
    batchSize: 2,
    parallel: 2,
    body: { lock_repositories: false },
    unlock: false,
    deleteArchive: false,
    checksum: true,
    verify: true,
    fingerprint: FINGERPRINT,
    command: 'export --repos-file repos.txt --batch-size 2',
    restart: false,
    intervalMs: 1_000,
    clock: box.clock.program,
    ...extra,
  };
}

interface Run {
  result: OrgExportResult;
  events: OrgExportEvent[];
}

/** A run that finishes (whatever its exit code), with every event it told. */
async function exportAll(
  box: Box,
  dir: string,
  repositories: string[],
  extra: Partial<OrgExportOptions> = {},
  api: ApiClient = box.api,
): Promise<Run> {
  const events: OrgExportEvent[] = [];
  const result = await runOrgExport(api, {
    ...optionsFor(box, dir, repositories, extra),
    onEvent: (event) => {
      events.push(event);
      extra.onEvent?.(event);
    },
  });
  return { result, events };
}

/** A run that stops before its summary: what stopped it, and the events until then. */
async function exportStopped(
  box: Box,
  dir: string,
  repositories: string[],
  extra: Partial<OrgExportOptions> = {},
  api: ApiClient = box.api,
) {
  const events: OrgExportEvent[] = [];
  const error = await failure(exportAll(box, dir, repositories, { ...extra, onEvent: (event) => {
    events.push(event);
    extra.onEvent?.(event);
  } }, api));
  expect(error).toBeInstanceOf(OrgExportStoppedError);
  return { error: error as OrgExportStoppedError, events };
}

const journalIn = (dir: string) => JSON.parse(readFileSync(join(dir, JOURNAL_FILE), 'utf8')) as Journal;
const states = (dir: string) => journalIn(dir).batches.map((b) => b.state);
const notices = (events: OrgExportEvent[]) => events.flatMap((e) => (e.type === 'notice' ? [e.message] : []));
const errors = (events: OrgExportEvent[]) => events.filter((e): e is Extract<OrgExportEvent, { type: 'error' }> => e.type === 'error');
/** The steps a batch took in this run (not where a resumed run found it). */
const steps = (events: OrgExportEvent[], batch: number) =>
  events.flatMap((e) => (e.type === 'batch' && e.batch === batch && !e.resumed ? [[e.state, e.message]] : []));

const starts = (sandbox: Sandbox, from = 0) =>
  sandbox.requests.slice(from).filter((r) => r.origin === 'api' && r.method === 'POST' && r.url === '/orgs/octo-org/migrations');
const created = (sandbox: Sandbox) => starts(sandbox).filter((r) => r.status === 201).length;
const fetches = (sandbox: Sandbox, from = 0) => sandbox.requests.slice(from).filter((r) => r.origin === 'storage');
const releases = (sandbox: Sandbox, from = 0) => sandbox.requests.slice(from).filter((r) => r.method === 'DELETE').map((r) => r.url);
const lockedNow = (sandbox: Sandbox) => sandbox.store.list(sandbox.store.organization('octo-org')!).flatMap((m) => [...m.locked]).sort();

beforeEach(() => {
  vi.stubEnv('PATH', '/nonexistent');
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe('an org export, start to end', () => {
  it('--no-verify: every archive saved, none verified, exit 0', async () => {
    const box = await setUp({ repositories: 4 });
    const { result } = await exportAll(box, box.dir, names(4), { verify: false });
    expect(result).toMatchObject({ exitCode: ExitCode.Ok, verify: false, verifiedRepositories: 0, archivedRepositories: 4 });
    expect(result.batches.map((b) => b.archive?.verified)).toEqual([false, false]);
  });
});

describe('a run takes up what the journal holds', () => {
  it('starts and fetches nothing for batches done, but checks each archive on disk again: one missing or changed is reported (exit 9) and not counted', async () => {
    const box = await setUp({ repositories: 4 });
    const { sandbox, dir } = box;
    const list = names(4);
    expect((await exportAll(box, dir, list, { batchSize: 1 })).result.exitCode).toBe(ExitCode.Ok);
    const from = sandbox.requests.length;
    const again = await exportAll(box, dir, list, { batchSize: 1 });
    expect(again.result.exitCode).toBe(ExitCode.Ok);
    expect(again.events[0]).toMatchObject({ type: 'plan', batches: 4, resumed: true, done: 4, archives: 4 });
    expect(starts(sandbox, from)).toEqual([]);
    expect(fetches(sandbox, from)).toEqual([]);

    const ids = journalIn(dir).batches.map((b) => b.migrationIds[0] as number);
    const archive = (i: number) => join(dir, `migration-${ids[i]}.tar.gz`);
    rmSync(archive(0));
    // Garbage of the same size (its .sha256 beside it untouched), and garbage of another size.
    writeFileSync(archive(1), Buffer.alloc(statSync(archive(1)).size, 0x41));
    writeFileSync(archive(2), 'garbage');
    const checked = await exportAll(box, dir, list, { batchSize: 1 });
    expect(checked.result).toMatchObject({ exitCode: ExitCode.VerificationFailed, verifiedRepositories: 1 });
    expect(checked.result.batches.map((b) => b.archive?.verified)).toEqual([false, false, false, true]);
    expect(errors(checked.events).map((e) => [e.batch, e.exitCode, e.message]).sort(([a], [b]) => Number(a) - Number(b))).toEqual([
      [1, 9, `${archive(0)} is missing, so batch 1 (1 repository) is not in a verified archive`],
      [2, 9, expect.stringMatching(new RegExp(`^${archive(1)} has changed since it was verified \\(its sha256 is [0-9a-f]{64}, not [0-9a-f]{64} as recorded\\), so batch 2`))],
      [3, 9, expect.stringContaining(`${archive(2)} has changed since it was verified (7 bytes, not `)],
    ]);
    expect(errors(checked.events).find((e) => e.batch === 1)?.hint).toBe(`the service's copy of migration ${ids[0]} may already be gone (archives are deleted 7 days after the export); while it is there, \`svc-migrate download ${ids[0]} --output ${archive(0)} --force\` fetches it again`);
    // The journal keeps what was verified: the archive put back, the batch counts again.
    expect(journalIn(dir).batches[0]?.archive?.verified).toBe(true);
    expect(starts(sandbox, from)).toEqual([]);
  });

  it('finds a migration whose start answer was lost with the list, and sends no start twice', async () => {
    const box = await setUp({ repositories: 6, faults: { loseStartAnswerNext: 2 } });
    const { result, events } = await exportAll(box, box.dir, names(6));
    expect(result.exitCode).toBe(ExitCode.Ok);
    expect(starts(box.sandbox)).toHaveLength(3);
    expect(new Set(result.batches.flatMap((b) => b.migrationIds)).size).toBe(3);
    // What found them says so: the answer was lost, the migration found.
    const found = events.filter((e) => e.type === 'batch' && e.state === 'started' && e.message.startsWith('the answer to the start was lost; found migration '));
    expect(found).toHaveLength(2);
  });

  it('looks a batch left "starting" up first: adopts the migration started since, never an older one of the same repositories', async () => {
    const box = await setUp({ repositories: 4 });
    const { sandbox, api, clock, dir } = box;
    // 20 minutes before the start was sent, a migration of batch 1's repositories: another export's.
    const older = await startMigration(api, 'octo-org', { repositories: names(2) });
    clock.advance(20 * 60_000);
    const startingAt = clock.now();
    // Batch 2's start reached the service; the run stopped before it heard.
    const lost = await startMigration(api, 'octo-org', { repositories: names(4).slice(2) });
    mkdirSync(dir, { mode: 0o700 });
    const at = new Date(startingAt).toISOString();
    await writeJournal(dir, {
      version: 1, fingerprint: FINGERPRINT, command: 'export', org: 'octo-org', createdAt: at, updatedAt: at,
      batches: [
        { index: 1, repositories: names(2), state: 'starting', migrationIds: [], attempts: 1, startingAt },
        { index: 2, repositories: names(4).slice(2), state: 'starting', migrationIds: [], attempts: 1, startingAt },
      ],
    });
    const from = sandbox.requests.length;
    const { result, events } = await exportAll(box, dir, names(4));
    expect(result.exitCode).toBe(ExitCode.Ok);
    expect(starts(sandbox, from)).toHaveLength(1);
    expect(result.batches[1]?.migrationIds).toEqual([lost.id]);
    expect(steps(events, 2)[0]).toEqual(['started', `found migration ${lost.id}, started by an earlier run`]);
    expect(result.batches[0]?.migrationIds).not.toContain(older.id);
  });

  it('goes on after Ctrl-C: batches under way are waited for, not started again, and a download stopped half-way resumes from its .part', async () => {
    const box = await setUp({ repositories: 4, archivePadBytes: 400_000 });
    const { sandbox, dir } = box;
    const list = names(4);
    // Ctrl-C once both migrations run, their repositories locked: the clock held till then, neither is exported.
    let stop = new AbortController();
    const stopWhen = (check: (event: OrgExportEvent) => boolean) => (event: OrgExportEvent) => check(event) && stop.abort();
    let started = 0;
    const release = box.clock.hold();
    const first = await exportStopped(box, dir, list, {
      body: { lock_repositories: true },
      signal: stop.signal,
      onEvent: stopWhen((e) => e.type === 'batch' && e.state === 'started' && ++started === 2),
    }, box.connect({ signal: stop.signal }));
    release();
    expect(first.error.exitCode).toBe(ExitCode.Interrupted);
    expect(first.error.hint).toBe(`run the same command again to continue; the journal is ${join(dir, JOURNAL_FILE)}`);
    expect(first.error.batches.map((b) => b.state)).toEqual(['started', 'started']);
    expect(states(dir)).toEqual(['started', 'started']);
    expect(lockedNow(sandbox)).toHaveLength(4);
    expect(existsSync(join(dir, 'svc-migrate.lock'))).toBe(false);

    // Ctrl-C again once some of an archive is on disk.
    stop = new AbortController();
    const second = await exportStopped(box, dir, list, {
      body: { lock_repositories: true },
      parallel: 1,
      signal: stop.signal,
      onEvent: stopWhen((e) => e.type === 'download' && e.received > 0),
    }, box.connect({ signal: stop.signal }));
    expect(second.error.exitCode).toBe(ExitCode.Interrupted);
    const parts = readdirSync(dir).filter((f) => f.endsWith('.part'));
    expect(parts).toHaveLength(1);
    const kept = statSync(join(dir, parts[0] as string)).size;
    expect(kept).toBeGreaterThan(0);
    const halfway = sandbox.store.find(sandbox.store.organization('octo-org')!, Number(/\d+/.exec(parts[0] as string)?.[0]))!;

    const from = sandbox.requests.length;
    const { result } = await exportAll(box, dir, list, { body: { lock_repositories: true }, unlock: true });
    expect(result.exitCode).toBe(ExitCode.Ok);
    expect(created(sandbox)).toBe(2);
    expect(fetches(sandbox, from).filter((r) => r.url.includes(halfway.guid)).map((r) => r.headers.range)).toEqual([`bytes=${kept}-`]);
    expect(lockedNow(sandbox)).toEqual([]);
    for (const batch of result.batches) {
      expect(sha256(batch.archive!.path)).toBe(batch.archive!.sha256);
    }
  });

  it('takes up a batch a run could not finish where it stopped: its unlock refused (exit 8, the command that retries it), then done without a start or a download', async () => {
    const box = await setUp({ repositories: 2, faults: { failNext: 1000, failPath: '/lock', failStatus: 500 } });
    const { sandbox, dir } = box;
    const extra = { body: { lock_repositories: true }, unlock: true };
    const first = await exportAll(box, dir, names(2), extra);
    expect(first.result.exitCode).toBe(ExitCode.Unavailable);
    const id = first.result.batches[0]?.migrationIds[0] as number;
    expect(errors(first.events)).toEqual([{
      type: 'error',
      batch: 1,
      migrationId: id,
      message: expect.stringMatching(/^could not unlock repo-0001, repo-0002 \(repo-0001: the service failed with HTTP 500/),
      exitCode: ExitCode.Unavailable,
      hint: `retry with \`svc-migrate unlock ${id} repo-0001 repo-0002\``,
    }]);
    expect(journalIn(dir).batches[0]).toMatchObject({ state: 'downloaded', error: { exitCode: 8, hint: `retry with \`svc-migrate unlock ${id} repo-0001 repo-0002\`` } });

    sandbox.faults.clear();
    const from = sandbox.requests.length;
    const again = await exportAll(box, dir, names(2), extra);
    expect(again.result.exitCode).toBe(ExitCode.Ok);
    expect(starts(sandbox, from)).toEqual([]);
    expect(fetches(sandbox, from)).toEqual([]);
    expect(releases(sandbox, from)).toEqual([`/orgs/octo-org/migrations/${id}/repos/repo-0001/lock`, `/orgs/octo-org/migrations/${id}/repos/repo-0002/lock`]);
    expect(journalIn(dir).batches[0]).toMatchObject({ state: 'done' });
    expect(journalIn(dir).batches[0]?.error).toBeUndefined();
  });

  it('exports again what a journal edit took out of a finished batch, in a batch of its own, and counts only the list\'s repositories', async () => {
    const box = await setUp({ repositories: 4 });
    const { sandbox, dir } = box;
    expect((await exportAll(box, dir, names(4))).result.exitCode).toBe(ExitCode.Ok);
    const journal = journalIn(dir);
    journal.batches[0]!.repositories[1] = 'octo-org/repo-0009';
    journal.batches[1]!.repositories.pop();
    await writeJournal(dir, journal);
    const from = sandbox.requests.length;
    const { result } = await exportAll(box, dir, names(4));
    expect(result).toMatchObject({ exitCode: ExitCode.Ok, repositories: 4, verifiedRepositories: 4 });
    expect(starts(sandbox, from)).toHaveLength(1);
    const last = result.batches.at(-1)!;
    expect(last.repositories).toEqual(['octo-org/repo-0002', 'octo-org/repo-0004']);
    expect((await verifyArchive(last.archive!.path, { gitCheck: false })).repositories.map((r) => r.name)).toEqual(last.repositories);
  });
});

describe('the manifest', () => {
  interface Manifest {
    version: 1;
    org: string;
    repositories: {
      repository: string; archive: string; sha256: string | null; bytes: number;
      migration_id: number; batch: number; verified_at: string | null;
    }[];
    skipped: { repository: string; reason: string }[];
  }
  const manifestIn = (dir: string) => JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;

  /** The manifest says what the journal says, and what is on disk: every archive's size and sha256. */
  function expectTrue(dir: string) {
    const manifest = manifestIn(dir);
    const wanted = journalIn(dir).batches
      .filter((b) => b.archive && ['downloaded', 'unlocked', 'done'].includes(b.state))
      .flatMap((b) => b.repositories.map((repository) => ({
        repository,
        archive: `migration-${b.migrationIds.at(-1)}.tar.gz`,
        sha256: b.archive!.sha256,
        bytes: b.archive!.bytes,
        migration_id: b.migrationIds.at(-1),
        batch: b.index,
        verified_at: b.archive!.verifiedAt,
      })))
      .sort((a, b) => a.repository.localeCompare(b.repository));
    expect(manifest.repositories).toEqual(wanted);
    for (const entry of manifest.repositories) {
      const file = join(dir, entry.archive);
      expect(sha256(file)).toBe(entry.sha256);
      expect(statSync(file).size).toBe(entry.bytes);
      expect(entry.verified_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    const tsv = readFileSync(join(dir, 'manifest.tsv'), 'utf8').trimEnd().split('\n').map((line) => line.split('\t'));
    expect(tsv[0]).toEqual(['repository', 'archive', 'sha256', 'bytes', 'migration_id', 'verified_at']);
    const rows = manifest.repositories.map((e) => [e.repository, e.archive, e.sha256, `${e.bytes}`, `${e.migration_id}`, e.verified_at]);
    expect(tsv.slice(1)).toEqual(rows);
    return manifest;
  }

  it('maps each repository to its archive, sha256, size, migration and time of verification, as the run goes and after a resume', async () => {
    const box = await setUp({ repositories: 6 });
    const { dir } = box;
    const stop = new AbortController();
    // Stopped once the first archive is verified: the manifest already names it.
    const first = await exportStopped(box, dir, names(6), {
      parallel: 1,
      signal: stop.signal,
      onEvent: (event) => {
        if (event.type === 'batch' && event.state === 'downloaded') stop.abort();
      },
    }, box.connect({ signal: stop.signal }));
    expect(first.error.exitCode).toBe(ExitCode.Interrupted);
    expect(expectTrue(dir).repositories.map((e) => e.repository)).toEqual(names(2));

    const { result } = await exportAll(box, dir, [...names(6), 'octo-org/will-fail']);
    expect(result.exitCode).toBe(ExitCode.Partial);
    const manifest = expectTrue(dir);
    expect(manifest.repositories.map((e) => e.repository)).toEqual(names(6));
    expect(manifest.skipped).toEqual([{ repository: 'octo-org/will-fail', reason: expect.stringMatching(/^its migration failed/), migration_id: expect.any(Number) }]);
  });
});

describe('an output directory others can touch', () => {
  it.skipIf(process.getuid === undefined)('is refused before any request, as a journal open to others is (exit 2)', async () => {
    const box = await setUp({ repositories: 2 });
    const { sandbox, dir } = box;
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    let error = await failure(exportAll(box, dir, names(2)));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe(`refusing to use ${dir}: the output directory ${dir} is writable by other users (mode 0777)`);
    expect(sandbox.requests).toEqual([]);
    chmodSync(dir, 0o700);
    expect((await exportAll(box, dir, names(2))).result.exitCode).toBe(ExitCode.Ok);

    chmodSync(join(dir, JOURNAL_FILE), 0o644);
    const from = sandbox.requests.length;
    error = await failure(exportAll(box, dir, names(2)));
    expect(error.message).toBe(`refusing to use ${dir}: the journal ${join(dir, JOURNAL_FILE)} is open to other users (mode 0644)`);
    expect(sandbox.requests.slice(from)).toEqual([]);
    expect(existsSync(join(dir, 'svc-migrate.lock'))).toBe(false);
  });
});

describe('repositories the service refuses', () => {
  it('goes on without the repositories a 422 names; the journal and the result say which and why (exit 10); a later run asks about them again', async () => {
    const box = await setUp({ repositories: 4 });
    const { sandbox, dir } = box;
    const list = full('repo-0001', 'gone-1', 'repo-0002', 'repo-0003', 'gone-2', 'gone-3', 'gone-4', 'gone-5', 'gone-6', 'repo-0004');
    const extra = { batchSize: 3, body: { lock_repositories: true }, unlock: true };
    const { result, events } = await exportAll(box, dir, list, extra);
    expect(result).toMatchObject({ exitCode: ExitCode.Partial, repositories: 10, verifiedRepositories: 4 });
    expect(result.skipped.map((s) => [s.batch, s.name])).toEqual([
      [1, 'octo-org/gone-1'], [2, 'octo-org/gone-2'], [2, 'octo-org/gone-3'], [3, 'octo-org/gone-4'], [3, 'octo-org/gone-5'], [3, 'octo-org/gone-6'],
    ]);
    expect(result.skipped[0]?.reason).toBe('octo-org/gone-1 is not a repository of octo-org');
    expect(journalIn(dir).batches.map((b) => [b.state, b.repositories.length, b.skipped?.length ?? 0])).toEqual([
      ['done', 2, 1], ['done', 1, 2], ['skipped', 0, 3], ['done', 1, 0],
    ]);
    expect(notices(events)).toContain('batch 1: the service refused 1 repository (octo-org/gone-1: octo-org/gone-1 is not a repository of octo-org); starting the batch without it');
    expect(steps(events, 3)).toEqual([['starting', 'starting'], ['skipped', expect.stringMatching(/^the service refused all 3 repositories of the batch, so nothing was started \(octo-org\/gone-4: /)]]);
    expect(created(sandbox)).toBe(3);
    expect(lockedNow(sandbox)).toEqual([]);

    // The refused ones are asked about again (they may exist now): batch 3 as it was, the others' in a new batch.
    const again = await exportAll(box, dir, list, extra);
    expect(again.result.exitCode).toBe(ExitCode.Partial);
    expect(again.result.skipped.map((s) => [s.batch, s.name])).toEqual([
      [3, 'octo-org/gone-4'], [3, 'octo-org/gone-5'], [3, 'octo-org/gone-6'], [5, 'octo-org/gone-1'], [5, 'octo-org/gone-2'], [5, 'octo-org/gone-3'],
    ]);
    expect(notices(again.events)).toContain('kept 4 batches of the journal; planned 1 new for 3 repositories in none of them');
    expect(created(sandbox)).toBe(3);

    // Without them in the list: every finished batch kept, nothing started, exit 0.
    const shorter = await exportAll(box, dir, names(4), extra);
    expect(shorter.result).toMatchObject({ exitCode: ExitCode.Ok, repositories: 4, verifiedRepositories: 4, skipped: [] });
    expect(created(sandbox)).toBe(3);
  });

  it('nothing exported when the service refuses every repository: exit 5, not partial', async () => {
    const box = await setUp({ repositories: 2 });
    const { result } = await exportAll(box, box.dir, full('gone-1', 'gone-2', 'gone-3'));
    expect(result).toMatchObject({ exitCode: ExitCode.Validation, repositories: 3, verifiedRepositories: 0 });
    expect(result.skipped).toHaveLength(3);
    expect(created(box.sandbox)).toBe(0);
  });

  it('takes a refused repository named like "spam-filter" for what it is, not for a "spammed" refusal to wait out', async () => {
    const box = await setUp({ repositories: 2 });
    const { result, events } = await exportAll(box, box.dir, full('repo-0001', 'spam-filter'));
    expect(result.exitCode).toBe(ExitCode.Partial);
    expect(notices(events).filter((n) => /refuses new starts/.test(n))).toEqual([]);
    expect(starts(box.sandbox)).toHaveLength(2);
  });
});

describe('how a run ends', () => {
  it('narrows a batch whose migration failed to the repository at fault: skipped and named (exit 10), the others archived, nothing left locked', async () => {
    const box = await setUp({ repositories: 7 });
    const { sandbox, dir } = box;
    const list = full('repo-0001', 'repo-0002', 'repo-0003', 'repo-0004', 'repo-0005', 'will-fail', 'repo-0006', 'repo-0007');
    const extra = { batchSize: 8, body: { lock_repositories: true }, unlock: true };
    const { result, events } = await exportAll(box, dir, list, extra);
    expect(result).toMatchObject({ exitCode: ExitCode.Partial, repositories: 8, verifiedRepositories: 7 });
    const failedAlone = result.batches[6]?.migrationIds.at(-1);
    expect(result.skipped).toEqual([{
      batch: 7,
      name: 'octo-org/will-fail',
      reason: `its migration failed on the service with this repository alone (migration ${failedAlone}, tried 2 times)`,
      migrationId: failedAlone,
    }]);
    // 8 → 4 + 4 → 2 + 2 → 1 + 1; the lone one started twice.
    expect(journalIn(dir).batches.map((b) => [b.state, b.repositories.length, b.migrationIds.length])).toEqual([
      ['narrowed', 8, 1], ['done', 4, 1], ['narrowed', 4, 1], ['narrowed', 2, 1], ['done', 2, 1], ['done', 1, 1], ['skipped', 0, 2],
    ]);
    expect(created(sandbox)).toBe(8);
    expect(steps(events, 1)).toEqual([
      ['starting', 'starting'],
      ['started', expect.any(String)],
      ['narrowed', expect.stringMatching(/^migration \d+ failed on the service; its 8 repositories go on as batches 2 and 3, to find the one at fault$/)],
    ]);
    expect(steps(events, 7).at(-1)).toEqual(['skipped', expect.stringMatching(/^octo-org\/will-fail is at fault: migration \d+ failed on the service with it alone; it is skipped$/)]);
    expect(errors(events)).toEqual([]);
    // Every failed migration's repositories were unlocked, as a single export unlocks them.
    expect(lockedNow(sandbox)).toEqual([]);
    expect(journalIn(dir).batches.filter((b) => b.state === 'narrowed' || b.state === 'skipped').every((b) => b.released)).toBe(true);

    // Again: nothing started, the repository at fault still named.
    const from = sandbox.requests.length;
    const again = await exportAll(box, dir, list, extra);
    expect(again.result).toMatchObject({ exitCode: ExitCode.Partial, verifiedRepositories: 7 });
    expect(again.result.skipped.map((s) => s.name)).toEqual(['octo-org/will-fail']);
    expect(starts(sandbox, from)).toEqual([]);
    expect(lockedNow(sandbox)).toEqual([]);
    // The board's count of archives is of batches that make one: not the narrowed ones, nor the skipped.
    expect(again.events[0]).toMatchObject({ type: 'plan', batches: 3, archives: 3 });
  });

  it('with --lock alone, leaves the failed migrations\' repositories locked, and a rerun starts (and locks) nothing more', async () => {
    const box = await setUp({ repositories: 1 });
    const { sandbox, dir } = box;
    const extra = { body: { lock_repositories: true } };
    const first = await exportAll(box, dir, full('repo-0001', 'will-fail'), extra);
    expect(first.result.exitCode).toBe(ExitCode.Partial);
    const ids = journalIn(dir).batches.flatMap((b) => b.migrationIds);
    const locked = lockedNow(sandbox);
    expect(locked).toContain('will-fail');
    const again = await exportAll(box, dir, full('repo-0001', 'will-fail'), extra);
    expect(again.result.exitCode).toBe(ExitCode.Partial);
    expect(journalIn(dir).batches.flatMap((b) => b.migrationIds)).toEqual(ids);
    expect(lockedNow(sandbox)).toEqual(locked);
  });

  it('unlocks through every migration of a batch, an earlier one that locked the same repositories included', async () => {
    const box = await setUp({ repositories: 2 });
    const { sandbox, api, clock, dir } = box;
    const earlier = await startMigration(api, 'octo-org', { repositories: names(2), lock_repositories: true });
    mkdirSync(dir, { mode: 0o700 });
    const at = new Date(clock.now()).toISOString();
    await writeJournal(dir, {
      version: 1, fingerprint: FINGERPRINT, command: 'export', org: 'octo-org', createdAt: at, updatedAt: at,
      batches: [{ index: 1, repositories: names(2), state: 'pending', migrationIds: [earlier.id], attempts: 1 }],
    });
    const { result } = await exportAll(box, dir, names(2), { body: { lock_repositories: true }, unlock: true });
    expect(result.exitCode).toBe(ExitCode.Ok);
    expect(result.batches[0]?.migrationIds).toHaveLength(2);
    expect(lockedNow(sandbox)).toEqual([]);
  });

  it('never unlocks or deletes when an archive fails its check (exit 9); its bytes stay in the .part', async () => {
    const box = await setUp({ repositories: 4, faults: { corruptArchive: true } });
    const release = { body: { lock_repositories: true }, unlock: true, deleteArchive: true };
    const { result, events } = await exportAll(box, box.dir, names(4), release);
    expect(result).toMatchObject({ exitCode: ExitCode.VerificationFailed, verifiedRepositories: 0 });
    expect(errors(events).map((e) => e.exitCode)).toEqual([9, 9]);
    expect(releases(box.sandbox)).toEqual([]);
    expect(readdirSync(box.dir).filter((f) => f.endsWith('.tar.gz'))).toEqual([]);
    expect(readdirSync(box.dir).filter((f) => f.endsWith('.tar.gz.part'))).toHaveLength(2);
  });

  it('keeps the service\'s copy when git could not check the archive\'s objects (exit 9)', async () => {
    const box = await setUp({ repositories: 2 });
    const { result, events } = await exportAll(box, box.dir, names(2), { deleteArchive: true });
    expect(result.exitCode).toBe(ExitCode.VerificationFailed);
    const id = result.batches[0]?.migrationIds[0] as number;
    expect(errors(events)[0]?.message).toBe(`the git objects of ${join(box.dir, `migration-${id}.tar.gz`)} were not checked (git is not on PATH), so the service's copy of migration ${id} was kept`);
    expect(releases(box.sandbox)).toEqual([]);
    expect(result.batches[0]).toMatchObject({ state: 'unlocked', archive: { verified: true, gitObjectsChecked: false } });
  });

  it('an answer cut half-way through its body is the network\'s failure, not a bug: the start looked up, the poll asked again (exit 0, not 1)', async () => {
    // The start's answer is cut (the migration exists), then the first poll's, once the batch has started.
    const box = await setUp({ repositories: 2, faults: { cutAnswerNext: 1 } });
    const { sandbox } = box;
    const { result, events } = await exportAll(box, box.dir, names(2), {
      onEvent: (event) => {
        if (event.type === 'batch' && event.state === 'started') sandbox.faults.set({ cutAnswerNext: 1 });
      },
    });
    expect(result.exitCode).toBe(ExitCode.Ok);
    expect(sandbox.faults.snapshot().cutAnswerNext).toBe(0);
    expect(starts(sandbox)).toHaveLength(1);
    expect(steps(events, 1).slice(0, 2)).toEqual([['starting', 'starting'], ['started', expect.stringMatching(/^started migration \d+$/)]]);
    const polls = sandbox.requests.filter((r) => r.method === 'GET' && r.url.startsWith('/orgs/octo-org/migrations?'));
    expect(polls.length).toBeGreaterThan(1);
  });

  it('a failure of this machine stops every batch where it stands and is thrown with the way to go on (exit 2); the lock goes', async () => {
    const box = await setUp({ repositories: 4 });
    const { dir } = box;
    // Where batch 1's download would write, a directory: nothing of it can be written.
    const { error, events } = await exportStopped(box, dir, names(4), {
      onEvent: (event) => {
        if (event.type === 'batch' && event.batch === 1 && event.state === 'started') mkdirSync(join(dir, `migration-${event.migrationId}.tar.gz.part`));
      },
    });
    expect(error.exitCode).toBe(ExitCode.Usage);
    expect(error.status).toBeUndefined();
    const part = join(dir, `migration-${error.batches[0]?.migrationIds[0]}.tar.gz.part`);
    expect(error.message).toBe(`cannot write ${part}: ${part} is a directory`);
    expect(error.hint).toMatch(/run the same command again/);
    expect(notices(events)).toContain('stopping the other batches: this failure is not the service\'s; each goes on from where it stopped when the same command runs again');
    expect(error.batches.filter((b) => b.state === 'done')).toEqual([]);
    expect(states(dir)).not.toContain('done');
    expect(existsSync(join(dir, 'svc-migrate.lock'))).toBe(false);
  });

  it('ranks exit codes: an interruption first, then a bug, a failed check, a failed migration; partial only over success', () => {
    expect(worse(ExitCode.Ok, ExitCode.Partial)).toBe(ExitCode.Partial);
    expect(worse(ExitCode.Partial, ExitCode.Usage)).toBe(ExitCode.Usage);
    expect(worse(ExitCode.MigrationFailed, ExitCode.VerificationFailed)).toBe(ExitCode.VerificationFailed);
    expect(worse(ExitCode.VerificationFailed, ExitCode.Unexpected)).toBe(ExitCode.Unexpected);
    expect(worse(ExitCode.Unexpected, ExitCode.Interrupted)).toBe(ExitCode.Interrupted);
    expect(worse(ExitCode.Timeout, ExitCode.Unavailable)).toBe(ExitCode.Unavailable);
    expect(worse(ExitCode.Validation, ExitCode.Timeout)).toBe(ExitCode.Timeout);

    expect(isLocal(new UsageError('disk full'))).toBe(true);
    expect(isLocal(new CliError('refused', ExitCode.Usage, { status: 422 }))).toBe(false);
    expect(isLocal(new UnavailableError('503'))).toBe(false);

    const ended = endedBy(new UsageError('cannot write x', { hint: 'free some space' }), '/out/j.json') as CliError;
    expect(ended.hint).toBe('free some space; the journal /out/j.json says where each batch stopped; run the same command again to continue');
    const kept = endedBy(new UsageError('x', { hint: 'then run the same command again' }), '/out/j.json') as CliError;
    expect(kept.hint).toBe('then run the same command again');
    const bug = new TypeError('bug');
    expect(endedBy(bug, '/out/j.json')).toBe(bug);
  });
});

describe('an archive is released only as it was verified', () => {
  /** One batch per repository, each downloaded and verified, whose unlock the service refused: the journal says `downloaded`. */
  async function stoppedBeforeRelease(count: number, faults: SandboxOptions['faults'] = {}) {
    const box = await setUp({ repositories: count, faults: { failNext: 1000, failPath: '/lock', failStatus: 500, ...faults } });
    const extra = { batchSize: 1, body: { lock_repositories: true }, unlock: true };
    const first = await exportAll(box, box.dir, names(count), extra);
    box.sandbox.faults.clear();
    const journal = journalIn(box.dir);
    const ids = journal.batches.map((b) => b.migrationIds[0] as number);
    const archive = (id: number) => join(box.dir, `migration-${id}.tar.gz`);
    return { ...box, extra, first, journal, ids, archive, from: box.sandbox.requests.length };
  }

  it('hashes the archive again before releasing: one changed since it was verified is refused (exit 9), then released once put back', async () => {
    const state = await stoppedBeforeRelease(1);
    const { sandbox, dir, extra, ids: [id], archive, from } = state;
    const bytes = readFileSync(archive(id!));
    bytes[bytes.length - 100] = (bytes[bytes.length - 100] as number) ^ 0xff;
    writeFileSync(archive(id!), bytes);
    const changed = await exportAll(state, dir, names(1), extra);
    expect(changed.result.exitCode).toBe(ExitCode.VerificationFailed);
    expect(errors(changed.events)[0]?.message).toMatch(new RegExp(`migration-${id}\\.tar\\.gz is not the archive that was verified \\(its sha256 is [0-9a-f]{64}, not [0-9a-f]{64} as recorded\\), so nothing was unlocked or deleted for migration ${id}$`));
    expect(releases(sandbox, from)).toEqual([]);

    bytes[bytes.length - 100] = (bytes[bytes.length - 100] as number) ^ 0xff;
    writeFileSync(archive(id!), bytes);
    const again = await exportAll(state, dir, names(1), extra);
    expect(again.result.exitCode).toBe(ExitCode.Ok);
    expect(releases(sandbox, from)).toHaveLength(1);
  });

  it('holds an archive to what the service says its migration holds: another batch\'s, hash and all, is never released; one under its name before the journal knew is fetched anew', async () => {
    const state = await stoppedBeforeRelease(2);
    const { sandbox, dir, extra, journal, ids: [first, second], archive, from } = state;
    expect(journal.batches.map((b) => b.state)).toEqual(['downloaded', 'downloaded']);
    // Batch 2's archive (repo-0002) under batch 1's name, its .sha256 and the journal made to match.
    writeFileSync(archive(first!), readFileSync(archive(second!)));
    Object.assign(journal.batches[0]!.archive!, { bytes: statSync(archive(first!)).size, sha256: sha256(archive(first!)) });
    await writeJournal(dir, journal);
    const result = await exportAll(state, dir, names(2), extra);
    expect(result.result.exitCode).toBe(ExitCode.VerificationFailed);
    expect(errors(result.events).map((e) => e.batch)).toEqual([1]);
    expect(errors(result.events)[0]?.message).toMatch(new RegExp(`repo-0001: belongs to migration ${first} but is not in the archive's metadata`));
    expect(releases(sandbox, from)).toEqual([`/orgs/octo-org/migrations/${second}/repos/repo-0002/lock`]);

    // The wrong archive under the final name while the journal says `exported`: checked, refused, fetched anew.
    Object.assign(journal.batches[0]!, { state: 'exported', archive: undefined, error: undefined });
    await writeJournal(dir, journal);
    const again = await exportAll(state, dir, names(2), extra);
    expect(again.result.exitCode).toBe(ExitCode.Ok);
    expect((await verifyArchive(archive(first!), { gitCheck: false })).repositories.map((r) => r.name)).toEqual(['octo-org/repo-0001']);
  });

  it('never releases an archive that was never verified, whatever the journal says of it (exit 9); one missing is fetched again', async () => {
    const box = await setUp({ repositories: 1, faults: { corruptArchive: true } });
    const { sandbox, dir } = box;
    const extra = { body: { lock_repositories: true }, unlock: true };
    expect((await exportAll(box, dir, names(1), extra)).result.exitCode).toBe(ExitCode.VerificationFailed);
    const journal = journalIn(dir);
    const batch = journal.batches[0]!;
    const archive = join(dir, `migration-${batch.migrationIds[0]}.tar.gz`);
    // The bytes that failed their check, under the final name, and a journal that says they passed.
    renameSync(`${archive}.part`, archive);
    Object.assign(batch, { state: 'downloaded', error: undefined });
    batch.archive = { path: archive, bytes: statSync(archive).size, sha256: sha256(archive), verified: true, gitObjectsChecked: true };
    await writeJournal(dir, journal);
    const from = sandbox.requests.length;
    const result = await exportAll(box, dir, names(1), extra);
    expect(result.result.exitCode).toBe(ExitCode.VerificationFailed);
    expect(errors(result.events)[0]?.message).toMatch(/failed verification/);
    expect(result.result.batches[0]?.archive?.verified).toBe(false);
    expect(releases(sandbox, from)).toEqual([]);

    rmSync(archive);
    await writeJournal(dir, journal);
    const again = await exportAll(box, dir, names(1), extra);
    expect(again.result.exitCode).toBe(ExitCode.VerificationFailed);
    expect(steps(again.events, 1)[0]).toEqual(['exported', `${archive} is not on disk; fetching it again`]);
    expect(fetches(sandbox, from).length).toBeGreaterThan(0);
    expect(releases(sandbox, from)).toEqual([]);
  });
});
