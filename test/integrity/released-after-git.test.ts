import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startMigration } from '../../src/api/migrations.js';
import { downloadArchive } from '../../src/core/download.js';
import { runExport } from '../../src/core/export.js';
import { type Journal, JOURNAL_FILE, type OrgExportEvent } from '../../src/core/org-export/journal.js';
import { runOrgExport } from '../../src/core/org-export/run.js';
import { coreSandbox } from '../helpers/core-sandbox.js';

// The use-cases of src/core, start to end, with the archive check's git on PATH: the service's copy
// is released only once `git fsck` has checked every object. Here, not in test/core, because git is
// a process and test/core is in the quick project, which starts none.

const temp = () => mkdtempSync(join(tmpdir(), 'svc-released-'));
const deletes = (sandbox: { requests: { method: string; url: string }[] }) => sandbox.requests.filter((r) => r.method === 'DELETE').map((r) => r.url);

describe('released only after git checked every object', () => {
  it('download: the .part is verified, and only then takes its name with a .sha256', async () => {
    const { sandbox, api, clock, org } = await coreSandbox({ exportSeconds: 0 });
    const migration = await startMigration(api, org, { repositories: [`${org}/widgets`] });
    sandbox.clock.advance(1000);
    const path = join(temp(), 'archive.tar.gz');
    const progress: number[] = [];
    const result = await downloadArchive(api, {
      org,
      id: migration.id,
      target: { path, force: false },
      checksum: true,
      verify: true,
      clock: clock.program,
      onProgress: (p) => progress.push(p.received),
    });
    const bytes = readFileSync(path);
    expect(result).toMatchObject({ migrationId: migration.id, path, bytes: bytes.length, resumes: 0 });
    expect(result).toMatchObject({ verified: true, gitObjectsChecked: true });
    expect(result.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(readFileSync(`${path}.sha256`, 'utf8')).toBe(`${result.sha256}  archive.tar.gz\n`);
    expect(existsSync(`${path}.part`)).toBe(false);
    expect(progress.at(-1)).toBe(bytes.length);
  });

  it('export: starts, waits, downloads and verifies, then unlocks and deletes the service\'s copy, in that order', async () => {
    const { sandbox, api, clock, org } = await coreSandbox({ exportSeconds: 40 });
    const steps: string[] = [];
    const path = join(temp(), 'export.tar.gz');
    const report = await runExport(api, {
      org,
      body: { repositories: [`${org}/widgets`, `${org}/docs.site`], lock_repositories: true },
      download: { checksum: true, verify: true, target: () => ({ path, force: false }) },
      unlock: true,
      deleteArchive: true,
      clock: clock.program,
      onStep: (step: string) => steps.push(step),
    });
    expect(steps).toEqual(['start', 'wait', 'download', 'unlock', 'delete-archive']);
    expect(report.migration.state).toBe('exported');
    expect(report.download).toMatchObject({ path, verified: true });
    expect(report.unlocked.map((o) => [o.repository, o.ok])).toEqual([['widgets', true], ['docs.site', true]]);
    expect(report.archiveDeleted).toBe(true);
    expect(deletes(sandbox)).toContain(`/orgs/${org}/migrations/${report.migration.id}/archive`);
  });

  it('org export: each batch through start, wait, download and check, unlock and delete, in that order; exit 0', async () => {
    const spamLimit = { starts: 1000, windowSeconds: 60 };
    const { sandbox, api, clock, org } = await coreSandbox({ exportSeconds: 30, repositories: 5, spamLimit });
    const dir = join(temp(), 'out');
    const events: OrgExportEvent[] = [];
    const repositories = Array.from({ length: 5 }, (_, i) => `${org}/repo-${String(i + 1).padStart(4, '0')}`);
    const result = await runOrgExport(api, {
      org,
      dir,
      repositories,
      batchSize: 2,
      parallel: 2,
      body: { lock_repositories: true },
      unlock: true,
      deleteArchive: true,
      checksum: true,
      verify: true,
      fingerprint: 'c'.repeat(64),
      command: 'export --repos-file repos.txt --batch-size 2',
      restart: false,
      intervalMs: 1_000,
      clock: clock.program,
      onEvent: (event) => events.push(event),
    });
    expect(result).toMatchObject({ exitCode: 0, repositories: 5, verifiedRepositories: 5, archivedRepositories: 5, skipped: [] });
    for (const batch of [1, 2, 3]) {
      const states = events.flatMap((e) => (e.type === 'batch' && e.batch === batch ? [e.state] : []));
      expect(states, `batch ${batch}`).toEqual(['starting', 'started', 'exported', 'downloaded', 'unlocked', 'done']);
      // The check told as it went: git's count of the batch's git data, up to all of it (batch 2's
      // repo-0003 has a wiki, a repository of its own to git).
      const counts = events.flatMap((e) => (e.type === 'verify' && e.batch === batch && e.stage === 'git' ? [`${e.done}/${e.total}`] : []));
      const size = [2, 3, 1][batch - 1]!;
      expect(counts, `batch ${batch}`).toEqual(Array.from({ length: size + 1 }, (_, i) => `${i}/${size}`));
      const steps = events.flatMap((e) => (e.type === 'step' && e.batch === batch ? [e.step] : []));
      expect(steps, `batch ${batch}`).toEqual(['downloading', 'verifying', 'verified', 'unlocking', 'deleting']);
    }
    const journal = JSON.parse(readFileSync(join(dir, JOURNAL_FILE), 'utf8')) as Journal;
    const summary = journal.batches.map((b) => [
      b.repositories.length, b.state, b.migrationIds.length, b.archive?.verified, b.archive?.gitObjectsChecked,
    ]);
    expect(summary).toEqual([
      [2, 'done', 1, true, true], [2, 'done', 1, true, true], [1, 'done', 1, true, true],
    ]);
    expect(sandbox.store.list(sandbox.store.organization(org)!).flatMap((m) => [...m.locked])).toEqual([]);
    for (const { migrationIds: [id], archive } of journal.batches) {
      expect(deletes(sandbox)).toContain(`/orgs/${org}/migrations/${id}/archive`);
      expect(readFileSync(`${archive!.path}.sha256`, 'utf8')).toBe(`${archive!.sha256}  migration-${id}.tar.gz\n`);
    }
    expect(readdirSync(dir).sort()).toEqual([
      ...journal.batches.flatMap((b) => [`migration-${b.migrationIds[0]}.tar.gz`, `migration-${b.migrationIds[0]}.tar.gz.sha256`]),
      JOURNAL_FILE,
      'manifest.json',
      'manifest.tsv',
    ].sort());
  });
});
