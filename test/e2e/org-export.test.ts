import { type ChildProcess, spawn } from 'node:child_process';
import { untilChildWrites } from '../helpers/fs-events.js';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { verifyArchive } from '../../src/core/archive/verify.js';
import type { Journal } from '../../src/core/org-export/journal.js';
import type { Sandbox } from '../../src/sandbox/server.js';
import { BIN, runCli, spawnCli, untilSaid } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';
import { ExitCode, InterruptedError } from '../../src/errors.js';

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-org-export-'));
const names = (count: number) => Array.from({ length: count }, (_, i) => `repo-${String(i + 1).padStart(4, '0')}`);
const JOURNAL = 'svc-migrate-journal.json';

function readJournal(dir: string): Journal | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, JOURNAL), 'utf8')) as Journal;
  } catch {
    return undefined;
  }
}

function spawnExport(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
}

async function kill(child: ChildProcess): Promise<void> {
  const closed = new Promise((resolve) => child.once('close', resolve));
  child.kill('SIGKILL');
  await closed;
}

const starts = (sandbox: Sandbox) =>
  sandbox.requests.filter((r) => r.origin === 'api' && r.method === 'POST' && r.url.startsWith('/orgs/octo-org/migrations'));

/** Nothing unlocked or deleted on the service unless that migration's archive is on disk, under its final name, verified. */
async function nothingReleasedEarly(sandbox: Sandbox, dir: string): Promise<void> {
  const released = new Set<number>();
  for (const request of sandbox.requests) {
    const match = /^\/orgs\/octo-org\/migrations\/(\d+)\/(archive|repos\/[^/]+\/lock)$/.exec(request.url);
    if (match && request.method === 'DELETE') released.add(Number(match[1]));
  }
  for (const id of released) {
    const path = join(dir, `migration-${id}.tar.gz`);
    expect(existsSync(path), `migration ${id} was released before ${path} existed`).toBe(true);
    expect((await verifyArchive(path, { gitCheck: false })).ok).toBe(true);
  }
}

describe('export --output-dir (a whole organization)', () => {
  it('survives SIGKILL during starts, waits and downloads: every repository in exactly one verified archive, no start sent twice', async () => {
    const { sandbox, env } = await testSandbox({
      repositories: 36,
      exportSeconds: 0.5,
      exportSecondsPerRepository: 0.05,
      archivePadBytes: 3_000_000,
      faults: { throttleBytesPerSecond: 4_000_000 },
      requestLogLimit: 100_000,
      spamLimit: { starts: 1000, windowSeconds: 60 },
    });
    const dir = tempDir();
    const out = join(dir, 'out');
    mkdirSync(out, { mode: 0o700 });
    writeFileSync(join(dir, 'repos.txt'), `${names(36).join('\n')}\n`);
    const args = ['export', '--repos-file', join(dir, 'repos.txt'), '--output-dir', out, '--batch-size', '6',
      '--parallel', '2', '--interval', '0.1', '--lock', '--unlock', '--delete-archive', '--yes'];

    const savedAt: { index: number; finished: number[] }[] = [];
    const snapshot = () =>
      savedAt.push({
        index: sandbox.requests.length,
        finished: readdirSync(out)
          .map((f) => /^migration-(\d+)\.tar\.gz$/.exec(f)?.[1])
          .filter((id): id is string => id !== undefined)
          .map(Number),
      });

    // 1. Killed as soon as a start is about to be sent (the answer may be lost).
    let child = spawnExport(args, env);
    await untilChildWrites(() => readJournal(out)?.batches.some((b) => b.state === 'starting') ?? false, out, child, 'a start');
    await kill(child);
    await nothingReleasedEarly(sandbox, out);
    snapshot();

    // 2. Killed while migrations are being waited for.
    child = spawnExport(args, env);
    await untilChildWrites(
      () => (readJournal(out)?.batches.filter((b) => b.state === 'started').length ?? 0) >= 2,
      out,
      child,
      'two waits',
    );
    await kill(child);
    await nothingReleasedEarly(sandbox, out);
    snapshot();

    // 3. Killed in the middle of a download (bytes in a .part file).
    child = spawnExport(args, env);
    await untilChildWrites(
      () => readdirSync(out).some((f) => f.endsWith('.part') && statSync(join(out, f)).size > 100_000),
      out,
      child,
      'a download',
    );
    await kill(child);
    await nothingReleasedEarly(sandbox, out);
    snapshot();
    const resumesBefore = sandbox.requests.filter((r) => r.origin === 'storage' && r.headers.range).length;

    // 4. Then to the end, in-process on the sandbox's clock; the throttle only made room for the kills.
    sandbox.faults.set({ throttleBytesPerSecond: undefined });
    const result = await runCli(args, { env, timeoutMs: 120_000 });
    expect(result.code, result.stderr).toBe(0);
    await nothingReleasedEarly(sandbox, out);
    expect(sandbox.requests.filter((r) => r.origin === 'storage' && r.headers.range).length).toBeGreaterThan(resumesBefore);

    // A finished download is never fetched again: no storage request for an archive after it was on disk.
    const org = sandbox.store.organization('octo-org')!;
    for (const { index, finished } of savedAt) {
      for (const id of finished) {
        const guid = sandbox.store.find(org, id)?.guid as string;
        const later = sandbox.requests.slice(index).filter((r) => r.origin === 'storage' && r.url.includes(guid));
        expect(later, `migration ${id} fetched again after it was saved`).toEqual([]);
      }
    }

    const journal = readJournal(out) as Journal;
    expect(journal.batches).toHaveLength(6);
    expect(journal.batches.every((b) => b.state === 'done' && b.migrationIds.length === 1)).toBe(true);
    // One start per batch, ever: a start whose answer was lost was found with `list`, not sent again.
    expect(starts(sandbox)).toHaveLength(6);

    const archives = readdirSync(out).filter((f) => f.endsWith('.tar.gz'));
    expect(archives).toHaveLength(6);
    expect(readdirSync(out).filter((f) => f.endsWith('.part'))).toEqual([]);
    const seen: string[] = [];
    for (const file of archives) {
      const report = await verifyArchive(join(out, file), { gitCheck: false });
      expect(report.ok, JSON.stringify(report.problems)).toBe(true);
      expect(existsSync(join(out, `${file}.sha256`))).toBe(true);
      seen.push(...report.repositories.map((r) => r.name));
    }
    const short = seen.map((n) => n.replace(/^octo-org\//, '')).sort();
    // Wikis are git data of their own.
    expect(short.filter((n) => !n.endsWith('.wiki'))).toEqual(names(36));
    expect(short.filter((n) => n.endsWith('.wiki'))).toEqual(['repo-0003.wiki', 'repo-0013.wiki', 'repo-0023.wiki', 'repo-0033.wiki']);
  }, 180_000);

  it('stops on Ctrl-C with exit 130 and the way to continue, and the same command finishes the job', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 8, exportSeconds: 1 });
    const dir = tempDir();
    const out = join(dir, 'out');
    writeFileSync(join(dir, 'repos.txt'), `${names(8).join('\n')}\n`);
    const args = ['export', '--repos-file', join(dir, 'repos.txt'), '--output-dir', out, '--batch-size', '4',
      '--interval', '0.1', '--lock', '--unlock'];
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    // A migration is waited for once its start is said (after the journal has it).
    let stderr = await untilSaid(child, /started migration \d+/);
    child.stderr?.on('data', (chunk: string) => {
      stderr += chunk;
    });
    const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
    child.kill('SIGINT');
    expect(await closed).toBe(130);
    expect(stderr).toMatch(/run the same command again to continue/);

    const result = await runCli(args, { env, timeoutMs: 60_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(starts(sandbox)).toHaveLength(2);
  }, 60_000);

  it('names what a Ctrl-C leaves locked and the one command that unlocks it, in the message (--json too); that command unlocks them', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 8, exportSeconds: 5 });
    const dir = tempDir();
    writeFileSync(join(dir, 'repos.txt'), `${names(8).join('\n')}\n`);
    const org = sandbox.store.organization('octo-org')!;
    const lockedNow = () => sandbox.store.list(org).flatMap((m) => [...m.locked]).length;
    // Ctrl-C; SIGTERM (as main.ts aborts for it: exit 143, the message and the hint kept); Ctrl-C with --json.
    const cases = [
      { extra: [], code: ExitCode.Interrupted },
      { extra: ['--unlock'], code: ExitCode.Terminated },
      { extra: ['--unlock', '--json'], code: ExitCode.Interrupted },
    ];
    for (const [i, { extra, code }] of cases.entries()) {
      const stop = new AbortController();
      const args = ['export', '--repos-file', join(dir, 'repos.txt'), '--output-dir', join(dir, `out${i}`), '--batch-size', '4',
        '--interval', '0.1', '--lock', ...extra];
      // Ctrl-C once both batches are started, their repositories locked, neither exported.
      let seen = '';
      const watch = (text: string) => {
        seen += text;
        if ((seen.match(/started migration \d+/g) ?? []).length >= 2) stop.abort(code === ExitCode.Interrupted ? undefined : new InterruptedError('interrupted', {}, code));
      };
      const result = await runCli(args, { env, signal: stop.signal, onStderr: watch, onStdout: watch });
      expect(result.code, result.stderr).toBe(code);
      expect(lockedNow()).toBe(8);
      const out = join(dir, `out${i}`);
      const line = `stopped the export; 8 repositories are still locked; \`svc-migrate unlock --output-dir ${out}\` unlocks them`;
      if (extra.includes('--json')) {
        expect(JSON.parse(result.stderr.trim().split('\n').at(-1) as string)).toEqual({ error: { code, status: null, message: line } });
      } else {
        expect(result.stderr).toContain(`error: ${line}\n`);
        // The way on stays: the same command continues.
        expect(result.stderr).toMatch(/hint: run the same command again to continue/);
      }
      // The one command named unlocks every repository the export locked.
      expect((await runCli(['unlock', '--output-dir', out], { env })).code).toBe(0);
      expect(lockedNow()).toBe(0);
    }
  }, 60_000);

  it('the binary narrows a failed batch to the repository at fault (exit 10, named in --json), leaves nothing locked, starts nothing again; its manifest says what is where', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 7, exportSeconds: 0.2 });
    const dir = tempDir();
    const out = join(dir, 'out');
    const list = ['repo-0001', 'repo-0002', 'repo-0003', 'will-fail', 'repo-0004', 'repo-0005', 'repo-0006', 'repo-0007'];
    writeFileSync(join(dir, 'repos.txt'), `${list.join('\n')}\n`);
    const args = ['export', '--repos-file', join(dir, 'repos.txt'), '--output-dir', out, '--batch-size', '8', '--interval', '0.1', '--lock', '--unlock', '--json'];
    const org = sandbox.store.organization('octo-org')!;
    const lockedNow = () => sandbox.store.list(org).flatMap((m) => [...m.locked]);

    const first = await spawnCli(args, { env, timeoutMs: 60_000 });
    expect(first.code, first.stderr).toBe(10);
    const summary = JSON.parse(first.stdout.trim().split('\n').at(-1) as string) as {
      skipped: { batch: number; name: string; reason: string; migration_id: number }[];
      batches: { state: string }[];
      locked: number;
    };
    expect(summary.skipped).toEqual([{
      batch: 7, name: 'octo-org/will-fail', reason: expect.stringMatching(/^its migration failed on the service with this repository alone/), migration_id: expect.any(Number),
    }]);
    // 8 → 4 (at fault) + 4 → 2 + 2 (at fault) → 1 + 1 (at fault).
    expect(summary.batches.map((b) => b.state)).toEqual(['narrowed', 'narrowed', 'done', 'done', 'narrowed', 'done', 'skipped']);
    expect(summary.locked).toBe(0);
    expect(JSON.parse(first.stderr.trim().split('\n').at(-1) as string)).toMatchObject({
      error: { code: 10, message: 'the export is partial: the service could not export 1 of 8 repositories, so it was skipped (octo-org/will-fail)' },
    });
    expect(lockedNow()).toEqual([]);

    // The manifest: each exported repository, its archive on disk with the sha256 and size said.
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as {
      repositories: { repository: string; archive: string; sha256: string; bytes: number; migration_id: number; verified_at: string }[];
    };
    expect(manifest.repositories.map((e) => e.repository)).toEqual(list.filter((n) => n !== 'will-fail').map((n) => `octo-org/${n}`).sort());
    for (const entry of manifest.repositories) {
      const bytes = readFileSync(join(out, entry.archive));
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(entry.sha256);
      expect(bytes.length).toBe(entry.bytes);
      expect(entry.archive).toBe(`migration-${entry.migration_id}.tar.gz`);
    }
    const tsv = readFileSync(join(out, 'manifest.tsv'), 'utf8').trimEnd().split('\n');
    expect(tsv).toHaveLength(1 + 7);

    const before = starts(sandbox).length;
    const again = await spawnCli(args, { env, timeoutMs: 60_000 });
    expect(again.code, again.stderr).toBe(10);
    expect(starts(sandbox)).toHaveLength(before);
    expect(lockedNow()).toEqual([]);
  }, 90_000);

  it('never unlocks or deletes when an archive fails verification (exit 9)', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 4, faults: { corruptArchive: true } });
    const dir = tempDir();
    writeFileSync(join(dir, 'repos.txt'), `${names(4).join('\n')}\n`);
    const result = await runCli(
      ['export', '--repos-file', join(dir, 'repos.txt'), '--output-dir', join(dir, 'out'), '--batch-size', '2',
        '--interval', '0.1', '--lock', '--unlock', '--delete-archive', '--yes'],
      { env, timeoutMs: 60_000 },
    );
    expect(result.code, result.stderr).toBe(9);
    expect(sandbox.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
    expect(readdirSync(join(dir, 'out')).filter((f) => f.endsWith('.tar.gz'))).toEqual([]);
  }, 60_000);

  it('refuses another command line against an existing journal unless --restart', async () => {
    const { env } = await testSandbox({ repositories: 4 });
    const dir = tempDir();
    writeFileSync(join(dir, 'repos.txt'), `${names(4).join('\n')}\n`);
    const base = ['export', '--repos-file', join(dir, 'repos.txt'), '--output-dir', join(dir, 'out'), '--interval', '0.1'];
    expect((await runCli([...base, '--batch-size', '2'], { env, timeoutMs: 60_000 })).code).toBe(0);

    const again = await runCli([...base, '--batch-size', '2'], { env, timeoutMs: 60_000 });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/resuming 4 repositories in 2 batches/);

    const other = await runCli([...base, '--batch-size', '3'], { env });
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/belongs to another export: `export --repos-file .* --batch-size 2/);
    expect(other.stderr).toMatch(/--restart/);

    const restarted = await runCli([...base, '--batch-size', '3', '--restart'], { env, timeoutMs: 60_000 });
    expect(restarted.code, restarted.stderr).toBe(0);
    expect((readJournal(join(dir, 'out')) as Journal).batches.map((b) => b.repositories.length)).toEqual([3, 1]);
  }, 60_000);

  it('names the command that continues an export, and that command continues it', async () => {
    const { env } = await testSandbox({ repositories: 3 });
    const dir = tempDir();
    writeFileSync(join(dir, 'repos.txt'), `${names(3).join('\n')}\n`);
    const base = ['export', '--repos-file', join(dir, 'repos.txt'), '--output-dir', join(dir, 'out'), '--lock', '--exclude', 'repositories', '--no-checksum'];
    const first = await runCli([...base, '--batch-size', '2', '--interval', '0.1'], { env, timeoutMs: 60_000 });
    expect(first.code, first.stderr).toBe(0);

    const other = await runCli([...base, '--batch-size', '3'], { env });
    expect(other.code).toBe(2);
    const named = /belongs to another export: `([^`]+)`/.exec(other.stderr)?.[1];
    expect(named, other.stderr).toBeDefined();
    const again = await runCli([...(named as string).split(' '), '--interval', '0.1'], { env, timeoutMs: 60_000 });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/resuming 3 repositories in 2 batches/);
  }, 60_000);

  it('exports 1,000 repositories from `sandbox --repositories 1000` running as its own process', async () => {
    const dir = tempDir();
    const server = spawn(
      process.execPath,
      [BIN, 'sandbox', '--json', '--repositories', '1000', '--export-seconds', '0.2', '--export-seconds-per-repo', '0.001'],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    try {
      const info = await new Promise<{ base_url: string; token: string; org: string }>((resolve, reject) => {
        let text = '';
        server.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk;
          if (text.includes('\n')) resolve(JSON.parse(text.slice(0, text.indexOf('\n'))) as never);
        });
        server.once('exit', () => reject(new Error('the sandbox exited')));
      });
      writeFileSync(join(dir, 'repos.txt'), `${names(1000).join('\n')}\n`);
      // git is kept off PATH: the deep `git fsck` of 1,000 repositories (a thousand child processes)
      // is archive verify's own test's business. In-process, git is looked up on this process's
      // PATH, not on the environment the program is given.
      vi.stubEnv('PATH', '/nonexistent');
      const env = { SVC_BASE_URL: info.base_url, SVC_TOKEN: info.token, SVC_ORG: info.org };
      const result = await runCli(
        ['export', '--repos-file', join(dir, 'repos.txt'), '--output-dir', join(dir, 'out'), '--batch-size', '100',
          '--parallel', '4', '--interval', '0.2', '--json'],
        { env, timeoutMs: 240_000 },
      );
      expect(result.code, result.stderr).toBe(0);
      const summary = JSON.parse(result.stdout.trim().split('\n').at(-1) as string) as { verified_repositories: number };
      expect(summary.verified_repositories).toBe(1000);
      expect(readdirSync(join(dir, 'out')).filter((f) => f.endsWith('.tar.gz'))).toHaveLength(10);
    } finally {
      vi.unstubAllEnvs();
      server.kill('SIGINT');
    }
  }, 300_000);
});

describe('export --output-dir with repositories the service refuses, a list that changes, and --dry-run', () => {
  const created = (sandbox: Sandbox) => starts(sandbox).filter((r) => r.status === 201).length;
  const summaryOf = (stdout: string) =>
    JSON.parse(stdout.trim().split('\n').at(-1) as string) as {
      ok: boolean; exit_code: number; repositories: number; verified_repositories: number;
      skipped: { batch: number; name: string; reason: string }[];
    };

  it('goes on without the repositories a 422 names (summary and exit 10 say which and why); a shorter list then keeps every batch done', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 4 });
    const dir = tempDir();
    const out = join(dir, 'out');
    const list = ['repo-0001', 'gone-1', 'repo-0002', 'repo-0003', 'gone-2', 'gone-3', 'gone-4', 'gone-5', 'gone-6', 'repo-0004'];
    writeFileSync(join(dir, 'repos.txt'), `${list.join('\n')}\n`);
    const args = ['export', '--repos-file', join(dir, 'repos.txt'), '--output-dir', out, '--batch-size', '3', '--interval', '0.1', '--lock', '--unlock'];

    const first = await runCli([...args, '--json'], { env, timeoutMs: 60_000 });
    expect(first.code, first.stderr).toBe(10);
    const summary = summaryOf(first.stdout);
    expect(summary).toMatchObject({ ok: false, exit_code: 10, repositories: 10, verified_repositories: 4 });
    expect(summary.skipped.map((s) => s.name)).toEqual(['gone-1', 'gone-2', 'gone-3', 'gone-4', 'gone-5', 'gone-6'].map((n) => `octo-org/${n}`));
    expect(summary.skipped[0]).toEqual({ batch: 1, name: 'octo-org/gone-1', reason: 'octo-org/gone-1 is not a repository of octo-org' });
    expect(JSON.parse(first.stderr.trim().split('\n').at(-1) as string)).toMatchObject({
      error: { code: 10, message: expect.stringMatching(/^the export is partial: the service refused 6 of 10 repositories, so they were skipped \(octo-org\/gone-1, .*gone-6\)$/) },
    });
    // --json: every event a line on stdout, the plan first, the summary last.
    const lines = first.stdout.trim().split('\n').map((line) => JSON.parse(line) as { type: string });
    expect(lines[0]?.type).toBe('plan');
    expect(lines.map((line) => line.type)).toEqual(expect.arrayContaining(['plan', 'batch', 'migration', 'notice', 'summary']));
    // One convention for every key, as the service's fields: snake_case, nested ones too.
    const keys = (value: unknown): string[] =>
      typeof value === 'object' && value !== null ? Object.entries(value).flatMap(([key, inner]) => [...(Array.isArray(value) ? [] : [key]), ...keys(inner)]) : [];
    expect(keys(lines).filter((key) => !/^[a-z0-9_]+$/.test(key))).toEqual([]);
    const batches = lines.filter((line): line is { type: 'batch'; state: string; batch: number } & Record<string, unknown> => line.type === 'batch');
    // --unlock: the step after the download unlocked; the saved archive is a field of its own.
    expect(batches.filter((b) => b.state === 'released').every((b) => b.repositories_unlocked === true && typeof b.migration_id === 'number')).toBe(true);
    expect(batches.filter((b) => b.state === 'released')).toHaveLength(3);
    expect(batches.filter((b) => b.state === 'downloaded').map((b) => b.archive)).toEqual(
      expect.arrayContaining([expect.stringMatching(new RegExp(`^${out}/migration-\\d+\\.tar\\.gz$`))]),
    );
    expect(batches.some((b) => b.state === 'unlocked')).toBe(false);

    // The same command asks about the refused ones again (they may exist now) and starts nothing else.
    const again = await runCli(args, { env, timeoutMs: 60_000 });
    expect(again.code, again.stderr).toBe(10);
    expect(created(sandbox)).toBe(3);
    // Batch 3, refused whole, is asked again as it was; the others' refused ones in a new batch 5.
    expect(again.stderr).toMatch(/skipped 6 repositories the service refused:\n {2}octo-org\/gone-4 \(batch 3\): octo-org\/gone-4 is not a repository of octo-org\n/);
    expect(again.stderr).toContain('  octo-org/gone-1 (batch 5): octo-org/gone-1 is not a repository of octo-org\n');
    expect(again.stderr).toMatch(/warning: kept 4 batches of the journal; planned 1 new for 3 repositories in none of them/);
    expect(again.stderr).toMatch(/hint: the journal .* records each with its reason; correct the list and run the same command again/);

    // Without them in the list: every finished batch kept, nothing started, exit 0.
    writeFileSync(join(dir, 'repos.txt'), 'repo-0001\nrepo-0002\nrepo-0003\nrepo-0004\n');
    const shorter = await runCli(args, { env, timeoutMs: 60_000 });
    expect(shorter.code, shorter.stderr).toBe(0);
    expect(shorter.stderr).not.toMatch(/belongs to another export/);
    expect(shorter.stderr).toMatch(/4\/4 repositories in verified archives/);
    expect(created(sandbox)).toBe(3);
  }, 90_000);

  it('says nothing was exported (exit 5, not partial) when the service refused every repository; one of each is singular', async () => {
    const { env } = await testSandbox({ repositories: 2 });
    const dir = tempDir();
    writeFileSync(join(dir, 'gone.txt'), 'gone-1\ngone-2\ngone-3\n');
    const none = await runCli(['export', '--repos-file', join(dir, 'gone.txt'), '--output-dir', join(dir, 'out'), '--batch-size', '2', '--json'], { env });
    expect(none.code, none.stderr).toBe(5);
    expect(summaryOf(none.stdout)).toMatchObject({ ok: false, exit_code: 5, repositories: 3, verified_repositories: 0 });
    expect(JSON.parse(none.stderr.trim().split('\n').at(-1) as string)).toEqual({
      error: { code: 5, status: null, message: 'nothing was exported: the service refused all 3 repositories (octo-org/gone-1, octo-org/gone-2, octo-org/gone-3)' },
    });

    writeFileSync(join(dir, 'one.txt'), 'repo-0001\n');
    const one = await runCli(['export', '--repos-file', join(dir, 'one.txt'), '--output-dir', join(dir, 'one'), '--interval', '0.1', '--lock'], { env });
    expect(one.code, one.stderr).toBe(0);
    expect(one.stderr).toContain('planned 1 repository in 1 batch (journal: ');
    expect(one.stderr).toContain('batch 1: kept 1 repository locked as asked\n');
    expect(one.stderr).toContain('1/1 repository in verified archives\n');
    expect(one.stderr).toContain(`1 repository is still locked; \`svc-migrate unlock --output-dir ${join(dir, 'one')}\` unlocks it\n`);
  }, 60_000);

  it('plans only what a longer list adds; --dry-run prints that plan and sends nothing', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 6 });
    const dir = tempDir();
    const out = join(dir, 'out');
    writeFileSync(join(dir, 'repos.txt'), `${names(4).join('\n')}\n`);
    const args = ['export', '--repos-file', join(dir, 'repos.txt'), '--output-dir', out, '--batch-size', '2', '--interval', '0.1', '--lock', '--unlock'];
    expect((await runCli(args, { env, timeoutMs: 60_000 })).code).toBe(0);
    expect(created(sandbox)).toBe(2);

    writeFileSync(join(dir, 'repos.txt'), `${names(6).join('\n')}\n`);
    const before = sandbox.requests.length;
    const dry = await runCli([...args, '--dry-run'], { env });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout.trim().split('\n').map((row) => row.split('\t'))).toEqual([
      ['1', '2', 'octo-org/repo-0001 … octo-org/repo-0002', expect.stringMatching(/^\d+$/), 'done', 'journal'],
      ['2', '2', 'octo-org/repo-0003 … octo-org/repo-0004', expect.stringMatching(/^\d+$/), 'done', 'journal'],
      ['3', '2', 'octo-org/repo-0005 … octo-org/repo-0006', '-', 'pending', 'new'],
    ]);
    expect(dry.stderr).toMatch(/dry run: 6 repositories in 3 batches; 2 done, 1 to start, 0 under way/);
    const json = await runCli([...args, '--dry-run', '--json'], { env });
    expect(JSON.parse(json.stdout)).toMatchObject({ dry_run: true, repositories: 6, to_start: 1, resumed: true });
    // A dry run in a directory that does not exist yet creates nothing.
    const fresh = join(dir, 'fresh');
    expect((await runCli([...args.map((a) => (a === out ? fresh : a)), '--dry-run'], { env })).code).toBe(0);
    expect(existsSync(fresh)).toBe(false);
    expect(sandbox.requests.slice(before)).toEqual([]);

    const grown = await runCli(args, { env, timeoutMs: 60_000 });
    expect(grown.code, grown.stderr).toBe(0);
    expect(grown.stderr).toMatch(/resuming 6 repositories in 3 batches, 4 already done, 2 archives saved/);
    expect(grown.stderr).toMatch(/kept 2 batches of the journal; planned 1 new for 2 repositories in none of them/);
    expect(created(sandbox)).toBe(3);
    expect((readJournal(out) as Journal).batches.map((b) => b.state)).toEqual(['done', 'done', 'done']);
  }, 90_000);

  it('--no-verify finishes with exit 0 and a warning that nothing was verified; with --unlock it is refused before any request', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 4 });
    const dir = tempDir();
    writeFileSync(join(dir, 'repos.txt'), `${names(4).join('\n')}\n`);
    const args = ['export', '--repos-file', join(dir, 'repos.txt'), '--output-dir', join(dir, 'out'), '--batch-size', '2', '--interval', '0.1', '--no-verify'];
    const result = await runCli(args, { env, timeoutMs: 60_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/warning: nothing was verified \(--no-verify\): the archives in .* were saved unchecked; `svc-migrate archive verify .*migration-<id>\.tar\.gz` checks one/);
    expect(result.stderr).toMatch(/4\/4 repositories in archives, none verified \(--no-verify\)/);
    expect(result.stderr).not.toMatch(/\(batch \)/);
    const again = await runCli([...args, '--json'], { env, timeoutMs: 60_000 });
    expect(again.code, again.stderr).toBe(0);
    expect(summaryOf(again.stdout)).toMatchObject({ ok: true, exit_code: 0, verified_repositories: 0 });

    const before = sandbox.requests.length;
    for (const flag of ['--unlock', '--delete-archive']) {
      const refused = await runCli([...args, flag, '--yes', '--lock'], { env });
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toContain(`error: ${flag} needs a verified archive: drop --no-verify`);
      expect(refused.stderr).toContain(`hint: export with --no-verify alone, check each archive with \`svc-migrate archive verify ${join(dir, 'out', 'migration-<id>.tar.gz')}\``);
    }
    expect(sandbox.requests.slice(before)).toEqual([]);
  }, 90_000);
});
