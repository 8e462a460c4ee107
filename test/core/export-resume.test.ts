import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startMigration } from '../../src/api/migrations.js';
import { type ExportOptions, runExport } from '../../src/core/export.js';
import { unlockFailure } from '../../src/core/unlock.js';
import { ExitCode } from '../../src/errors.js';
import type { RecordedSandboxRequest } from '../../src/sandbox/options.js';
import type { Sandbox } from '../../src/sandbox/server.js';
import { coreSandbox } from '../helpers/core-sandbox.js';

// A single export finds what an earlier run of it left before it starts anything: the migration
// of exactly its repositories, and the `.part` of its download, and continues them; `--new` starts
// afresh. A start whose answer was lost is looked up as the batched export looks it up.

// git is kept off PATH: this is the quick project, which starts no process (the archive check then
// says the git objects went unchecked; --unlock needs only a verified archive).
beforeEach(() => {
  vi.stubEnv('PATH', '/nonexistent');
});
afterEach(() => {
  vi.unstubAllEnvs();
});

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-core-export-resume-'));
const REPOS = ['octo-org/widgets', 'octo-org/docs.site'];

const starts = (sandbox: Sandbox) => sandbox.requests.filter((r) => r.method === 'POST' && /\/migrations$/.test(r.url));
const storageRequests = (sandbox: Sandbox) => sandbox.requests.filter((r) => r.origin === 'storage');
const lockedNames = (sandbox: Sandbox) => sandbox.store.list(sandbox.store.organization('octo-org')!).flatMap((m) => [...m.locked]).sort();

/** The options `export widgets docs.site --lock --unlock [-o path]` runs with, collecting what it says. */
function exportOptions(
  box: Awaited<ReturnType<typeof coreSandbox>>,
  target: (id: number) => string,
  said: string[],
  extra: Partial<ExportOptions> = {},
): ExportOptions {
  return {
    org: box.org,
    body: { repositories: REPOS, lock_repositories: true },
    download: { checksum: true, verify: true, target: (id) => ({ path: target(id), force: false }) },
    unlock: true,
    deleteArchive: false,
    clock: box.clock.program,
    onStep: (step, detail) => said.push(`${step}: ${detail}`),
    onNotice: (message) => said.push(`notice: ${message}`),
    ...extra,
  };
}

/** An export of widgets and docs.site with --lock whose download storage cut short: its .part is kept. */
async function exportCutShort() {
  const box = await coreSandbox({ exportSeconds: 0, archivePadBytes: 300_000 });
  const path = join(tempDir(), 'acme.tar.gz');
  // Storage cuts every answer after 4 KiB: the download gives up with its .part kept.
  box.sandbox.faults.set({ cutAfterBytes: 4096, cutTimes: 100 });
  const first: string[] = [];
  await expect(runExport(box.api, exportOptions(box, () => path, first))).rejects.toMatchObject({ exitCode: ExitCode.Unavailable });
  const id = Number(/started migration (\d+)/.exec(first.join('\n'))?.[1]);
  return { box, path, id };
}

describe('a single export continues what an earlier run left', () => {
  it('a download cut short: the same export continues the same migration from its .part, with no second start', async () => {
    const { box, path, id } = await exportCutShort();
    const kept = statSync(`${path}.part`).size;
    expect(kept).toBeGreaterThan(0);
    expect(lockedNames(box.sandbox)).toEqual(['docs.site', 'widgets']);

    box.sandbox.faults.clear();
    const before = { starts: starts(box.sandbox).length, storage: storageRequests(box.sandbox).length };
    const again: string[] = [];
    const report = await runExport(box.api, exportOptions(box, () => path, again));
    expect(report.migration.id).toBe(id);
    expect(starts(box.sandbox)).toHaveLength(before.starts);
    expect(again[0]).toBe(`start: continuing migration ${id} (exported), started by an earlier run: its download is half done in ${path}.part; --new starts another instead`);
    // One request to storage, for the rest only.
    const resumed = storageRequests(box.sandbox).slice(before.storage);
    expect(resumed.map((r) => r.headers.range)).toEqual([`bytes=${kept}-`]);
    expect(report.download.verified).toBe(true);
    expect(existsSync(path)).toBe(true);
    expect(report.unlocked.map((o) => o.repository).sort()).toEqual(['docs.site', 'widgets']);
    expect(lockedNames(box.sandbox)).toEqual([]);
  });

  it('--new over the .part of an earlier --lock export: warned of before the start, with the command that unlocks it', async () => {
    const { box, path, id } = await exportCutShort();
    box.sandbox.faults.clear();
    const fresh: string[] = [];
    const report = await runExport(box.api, exportOptions(box, () => path, fresh, { fresh: true }));
    expect(report.migration.id).not.toBe(id);
    expect(fresh[0]).toBe(
      `notice: ${path}.part holds the half-done download of migration ${id} (exported, which locked its repositories), an earlier export of these repositories; `
      + `--new starts another instead of continuing it. \`svc-migrate download ${id} --wait --output migration-${id}.tar.gz\` saves that one's archive; `
      + `\`svc-migrate unlock ${id} --all\` gives back the repositories it locked`,
    );
    expect(fresh[1]).toBe(`start: started migration ${report.migration.id} (pending)`);
  });

  it('other flags over the .part of an earlier --lock export: warned of before the start, with the command that unlocks it', async () => {
    const { box, path, id } = await exportCutShort();
    box.sandbox.faults.clear();
    const said: string[] = [];
    const report = await runExport(box.api, exportOptions(box, () => path, said, { body: { repositories: REPOS } }));
    expect(report.migration.id).not.toBe(id);
    expect(said[0]).toMatch(new RegExp(`^notice: .*holds the half-done download of migration ${id} .*; it was started with other flags, so another is started and the .part started over\\. .*\`svc-migrate unlock ${id} --all\``));
    expect(said[1]).toBe(`start: started migration ${report.migration.id} (pending)`);
  });

  it('with the default name, the .part of migration-<id>.tar.gz names the migration continued', async () => {
    const box = await coreSandbox({ exportSeconds: 0, archivePadBytes: 300_000 });
    const dir = tempDir();
    const named = (id: number) => join(dir, `migration-${id}.tar.gz`);
    box.sandbox.faults.set({ cutAfterBytes: 4096, cutTimes: 100 });
    const first: string[] = [];
    await expect(runExport(box.api, exportOptions(box, named, first))).rejects.toMatchObject({ exitCode: ExitCode.Unavailable });
    const id = Number(/started migration (\d+)/.exec(first.join('\n'))?.[1]);
    box.sandbox.faults.clear();
    // An exported export of the same repositories with no .part here is not this one: it is passed over.
    const other = await startMigration(box.api, box.org, { repositories: REPOS, lock_repositories: true });
    box.clock.advance(1_000);
    const again: string[] = [];
    const report = await runExport(box.api, exportOptions(box, named, again));
    expect(report.migration.id).toBe(id);
    expect(report.migration.id).not.toBe(other.id);
    expect(report.download.path).toBe(named(id));
  });

  it('an exported migration of the same repositories without a .part here is not continued: today\'s export is today\'s', async () => {
    const box = await coreSandbox({ exportSeconds: 0 });
    const yesterday = await startMigration(box.api, box.org, { repositories: REPOS, lock_repositories: true });
    box.clock.advance(1_000);
    const said: string[] = [];
    const report = await runExport(box.api, exportOptions(box, () => join(tempDir(), 'a.tar.gz'), said));
    expect(report.migration.id).not.toBe(yesterday.id);
    expect(said[0]).toMatch(/^start: started migration \d+ \(pending\)$/);
  });

  it('a migration still exporting is continued without a .part; --new starts another, warned of before the start', async () => {
    const box = await coreSandbox({ exportSeconds: 60 });
    // The same set in another order and case.
    const shuffled = [...REPOS].reverse().map((name) => name.toUpperCase());
    const earlier = await startMigration(box.api, box.org, { repositories: shuffled, lock_repositories: true });
    const said: string[] = [];
    const report = await runExport(box.api, exportOptions(box, () => join(tempDir(), 'a.tar.gz'), said));
    expect(report.migration.id).toBe(earlier.id);
    expect(said[0]).toMatch(new RegExp(`^start: continuing migration ${earlier.id} \\((pending|exporting)\\), started earlier with exactly these repositories and flags`));

    const pending = await startMigration(box.api, box.org, { repositories: REPOS, lock_repositories: true });
    const fresh: string[] = [];
    const started = await runExport(box.api, exportOptions(box, () => join(tempDir(), 'b.tar.gz'), fresh, { fresh: true }));
    expect(started.migration.id).not.toBe(pending.id);
    expect(fresh[0]).toMatch(new RegExp(`^notice: migration ${pending.id} \\(pending, lock requested\\) exports the same repositories`));
    expect(fresh[1]).toBe(`start: started migration ${started.migration.id} (pending)`);

    // Another set of repositories, or other start flags, is another export.
    await startMigration(box.api, box.org, { repositories: ['octo-org/widgets'], lock_repositories: true });
    await startMigration(box.api, box.org, { repositories: REPOS });
    const count = starts(box.sandbox).length;
    await runExport(box.api, exportOptions(box, () => join(tempDir(), 'c.tar.gz'), []));
    expect(starts(box.sandbox)).toHaveLength(count + 1);
  });
});

describe('a lost start answer', () => {
  it('is looked up in the list: the migration it started is continued, and no other is started', async () => {
    const box = await coreSandbox({ exportSeconds: 0 });
    box.sandbox.faults.set({ loseStartAnswerNext: 1 });
    const said: string[] = [];
    const report = await runExport(box.api, exportOptions(box, () => join(tempDir(), 'a.tar.gz'), said));
    expect(said[0]).toMatch(new RegExp(`^start: the answer to the start was lost; found migration ${report.migration.id} \\(\\w+\\), which it started$`));
    expect(starts(box.sandbox)).toHaveLength(1);
    expect(lockedNames(box.sandbox)).toEqual([]);
  });

  it('not found: the message names what may be locked, and the command that gives it back', async () => {
    const box = await coreSandbox({ exportSeconds: 0 });
    // The connection of the start is dropped before it reaches the service: nothing started, no answer.
    const log = box.sandbox.requests;
    const record = log.push.bind(log);
    log.push = (...entries: RecordedSandboxRequest[]) => {
      if (entries.some((entry) => entry.method === 'POST')) box.sandbox.faults.set({ dropNext: 1 });
      return record(...entries);
    };
    const failure = runExport(box.api, exportOptions(box, () => join(tempDir(), 'a.tar.gz'), []));
    await expect(failure).rejects.toMatchObject({
      exitCode: ExitCode.Unavailable,
      message: expect.stringMatching(/: no migration of these repositories made since the start is in the list yet; if it did, its 2 repositories \(widgets, docs\.site\) are locked$/),
      hint: `\`svc-migrate list\` shows it once it appears: exactly these repositories, created about ${new Date(box.clock.now()).toISOString()}; \`svc-migrate unlock <its id> --all\` gives them back`,
    });
    expect(box.sandbox.store.list(box.sandbox.store.organization('octo-org')!).filter((m) => m.locked.size > 0)).toEqual([]);
  });
});

describe('counts are worded for one', () => {
  it('"unlocked 1 repository" in what a stopped export says it did, and "1 of 1 repository" in a failed unlock', async () => {
    const box = await coreSandbox({ exportSeconds: 0 });
    const options = exportOptions(box, () => join(tempDir(), 'a.tar.gz'), [], {
      body: { repositories: ['octo-org/widgets'], lock_repositories: true },
      // git is off PATH: the service's copy is kept, and the export stops after its unlock.
      deleteArchive: true,
    });
    await expect(runExport(box.api, options)).rejects.toMatchObject({
      exitCode: ExitCode.VerificationFailed,
      message: expect.stringMatching(/; unlocked 1 repository\)$/),
    });
    const failure = unlockFailure([{ repository: 'widgets', ok: false, error: 'gone', exitCode: ExitCode.NotFound }], 7);
    expect(failure?.message).toBe('1 of 1 repository could not be unlocked');
  });
});
