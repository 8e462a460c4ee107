import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Journal } from '../../src/core/org-export/journal.js';
import { BIN, runCli, spawnCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';

// `export --output-dir` on a machine that fails it and against a directory others touch, through
// the program: one run per directory, a journal checked rather than believed, a local failure that
// ends the whole run, and a wait with an end. Spawned only where the process is the point (two at
// once, SIGTERM, a run that would never exit). What the org export decides on its own (the lock, the
// journal read back, what is released, where each wait ends) is test/core's.

const JOURNAL = 'svc-migrate-journal.json';
const LOCK = 'svc-migrate.lock';
const canMountTmpfs = (() => {
  const probe = mkdtempSync(join(tmpdir(), 'svc-tmpfs-probe-'));
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe]).status !== 0) return false;
  return spawnSync('umount', [probe]).status === 0;
})();

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-org-rel-'));
const names = (count: number) => Array.from({ length: count }, (_, i) => `repo-${String(i + 1).padStart(4, '0')}`);
const readJournal = (dir: string) => JSON.parse(readFileSync(join(dir, JOURNAL), 'utf8')) as Journal;
const writeJournal = (dir: string, journal: unknown) => writeFileSync(join(dir, JOURNAL), JSON.stringify(journal), { mode: 0o600 });

/** An export of `count` repositories into `<tmp>/out`, and its arguments. */
function setUp(count: number, extra: string[] = []) {
  const dir = tempDir();
  const out = join(dir, 'out');
  writeFileSync(join(dir, 'repos.txt'), `${names(count).join('\n')}\n`);
  const args = ['export', '--repos-file', join(dir, 'repos.txt'), '--output-dir', out, '--interval', '0.1', ...extra];
  return { dir, out, args };
}

/** The built program in a process of its own; `said` resolves once its stderr holds `pattern` (and fails if it ends first). */
function spawnExport(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const listeners = new Set<() => void>();
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    for (const listener of listeners) listener();
  });
  const closed = new Promise<{ code: number | null; stderr: string }>((resolve) => child.once('close', (code) => resolve({ code, stderr })));
  const said = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const look = () => {
        if (!pattern.test(stderr)) return;
        listeners.delete(look);
        resolve();
      };
      listeners.add(look);
      void closed.then(({ code }) => reject(new Error(`the export ended (${code}) before saying ${pattern}\n${stderr}`)));
      look();
    });
  return { child, closed, said };
}

describe('one run per output directory', () => {
  it('refuses a second run of the same export while the first runs (exit 2, naming its pid and host); the first finishes', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 4, exportSeconds: 2 });
    const { out, args } = setUp(4, ['--batch-size', '2']);
    const first = spawnExport(args, env);
    // Said once the journal has it.
    await first.said(/started migration \d+/);

    const second = await runCli(args, { env });
    expect(second.code, second.stderr).toBe(2);
    expect(second.stderr).toContain(`error: ${out} is in use by another export (pid ${first.child.pid} on ${hostname()}, since `);
    expect(second.stderr).toMatch(/hint: wait for it to finish or stop it \(kill \d+\), or use another --output-dir/);

    const { code, stderr } = await first.closed;
    expect(code, stderr).toBe(0);
    expect(readJournal(out).batches.map((b) => b.state)).toEqual(['done', 'done']);
    // The second run started nothing and left the first's lock alone until it was done.
    expect(sandbox.requests.filter((r) => r.method === 'POST')).toHaveLength(2);
    expect(existsSync(join(out, LOCK))).toBe(false);
  }, 60_000);

  it('releases the lock on Ctrl-C and on SIGTERM', async () => {
    const { env } = await testSandbox({ repositories: 2, exportSeconds: 30 });
    const { out, args } = setUp(2);
    const controller = new AbortController();
    const interrupted = await runCli(args, {
      env,
      signal: controller.signal,
      onStderr: (text) => {
        if (text.includes('started migration')) controller.abort();
      },
    });
    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect(existsSync(join(out, LOCK))).toBe(false);

    const run = spawnExport(args, env);
    // The plan is said once the lock is taken.
    await run.said(/^(planned|resuming) /m);
    expect(existsSync(join(out, LOCK))).toBe(true);
    run.child.kill('SIGTERM');
    const { code, stderr } = await run.closed;
    expect(code, stderr).toBe(143);
    expect(existsSync(join(out, LOCK))).toBe(false);
  }, 60_000);
});

describe('a journal that is checked, not believed', () => {
  it('says why an unlock failed and the command that retries it; that command unlocks them', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 2, faults: { failNext: 1000, failPath: '/lock', failStatus: 500 } });
    const { out, args } = setUp(2, ['--batch-size', '2', '--lock', '--unlock']);
    const result = await runCli(args, { env });
    expect(result.code, result.stderr).toBe(8);
    const id = readJournal(out).batches[0]?.migrationIds[0] as number;
    expect(result.stderr).toContain(`warning: batch 1 (migration ${id}): could not unlock repo-0001, repo-0002 (repo-0001: the service failed with HTTP 500`);
    expect(result.stderr).toContain(`  hint: retry with \`svc-migrate unlock ${id} repo-0001 repo-0002\``);
    expect(readJournal(out).batches[0]?.error?.hint).toBe(`retry with \`svc-migrate unlock ${id} repo-0001 repo-0002\``);
    expect(result.stderr).toContain('error: all 2 repositories are in verified archives, but batch 1 stopped before its last step');
    sandbox.faults.clear();
    const retried = await runCli(['unlock', String(id), 'repo-0001', 'repo-0002'], { env });
    expect(retried.code, retried.stderr).toBe(0);
  }, 60_000);

  it('checks the archives of batches done earlier on every run: one missing is reported (exit 9), not counted, and fetched again by the command the hint gives', async () => {
    const { env } = await testSandbox({ repositories: 2 });
    const { out, args } = setUp(2, ['--batch-size', '1']);
    expect((await runCli(args, { env })).code).toBe(0);
    const ids = readJournal(out).batches.map((b) => b.migrationIds[0] as number);
    const archive = join(out, `migration-${ids[0]}.tar.gz`);
    rmSync(archive);
    const result = await runCli(args, { env });
    expect(result.code, result.stderr).toBe(9);
    expect(result.stderr).toContain('1/2 repositories in verified archives; look at batch 1');
    expect(result.stdout.trim().split('\n').map((row) => row.split('\t')[5])).toEqual(['NOT verified', 'verified']);
    expect(result.stderr).toContain(`${archive} is missing, so batch 1 (1 repository) is not in a verified archive`);
    expect(result.stderr).toContain(`hint: the service's copy of migration ${ids[0]} may already be gone (archives are deleted 7 days after the export); while it is there, \`svc-migrate download ${ids[0]} --output ${archive} --force\` fetches it again`);
    const fetched = await runCli(['download', String(ids[0]), '--output', archive, '--force'], { env });
    expect(fetched.code, fetched.stderr).toBe(0);
    const again = await runCli(args, { env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('2/2 repositories in verified archives');
  }, 60_000);

  it('refuses a record this program cannot have written (exit 2 and a hint), instead of acting on it', async () => {
    const { env } = await testSandbox({ repositories: 2 });
    const { out, args } = setUp(2, ['--batch-size', '2']);
    expect((await runCli(args, { env })).code).toBe(0);
    const journal = readJournal(out);
    Object.assign(journal.batches[0]!, { state: 'half-done' });
    writeJournal(out, journal);
    // Spawned: a run that believed such a record could loop without end.
    const result = await spawnCli(args, { env, timeoutMs: 20_000 });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`error: ${join(out, JOURNAL)} is not a journal this program wrote: batch 1: state "half-done" is not one of pending, starting, started`);
    expect(result.stderr).toMatch(/hint: put back the journal as the export wrote it/);
  }, 60_000);
});

describe('a local failure ends the run', () => {
  it.skipIf(!canMountTmpfs)('a full disk under --parallel 3 stops every batch and exits 2 (a 40 MB tmpfs, 32 MB archives; skipped: cannot mount tmpfs, not root?)', async () => {
    const { sandbox, env } = await testSandbox({
      repositories: 6,
      exportSeconds: 1.5,
      archivePadBytes: 32_000_000,
      spamLimit: { starts: 100, windowSeconds: 60 },
    });
    const mount = tempDir();
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=40m', 'tmpfs', mount]);
    try {
      const { args } = setUp(6, ['--batch-size', '1', '--parallel', '3']);
      const out = join(mount, 'out');
      args[args.indexOf('--output-dir') + 1] = out;
      // It must end by itself: a run that went on polling would be killed here and fail the test.
      const result = await spawnCli(args, { env, timeoutMs: 90_000 });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(/error: .*(no space left on the device|not enough free space)/);
      expect(result.stderr).toMatch(/stopping the other batches/);
      expect(result.stderr).toMatch(/run the same command again/);
      // Nothing tried again on connections already closed, nothing retried at all.
      expect(result.stderr).not.toMatch(/trying again|retrying|UND_ERR_DESTROYED|was not sent/);
      // The other batches stopped where they stood: no archive beyond the three first being fetched
      // was asked of storage (each batch that went on would have tried its own, and failed in turn).
      const fetched = new Set(sandbox.requests.filter((r) => r.origin === 'storage').map((r) => r.url.split('?')[0]));
      expect(fetched.size).toBeLessThanOrEqual(3);
      const journal = readJournal(out);
      expect(journal.batches).toHaveLength(6);
      expect(journal.batches.filter((b) => b.state === 'done')).toEqual([]);
      expect(existsSync(join(out, LOCK))).toBe(false);
      expect(readdirSync(out).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    } finally {
      if (spawnSync('umount', [mount]).status !== 0) spawnSync('umount', ['-l', mount]);
    }
  }, 120_000);
});

describe('every wait of an org export has an end', () => {
  it('--timeout ends each batch\'s wait on its own (exit 7 for it, with the way to go on); the other batches finish', async () => {
    // Batch 1 (two repositories) takes 21 minutes of the sandbox's clock, batch 2 (one) 11.
    const { env } = await testSandbox({ repositories: 3, exportSeconds: 60, exportSecondsPerRepository: 600 });
    const { out, args } = setUp(3, ['--batch-size', '2', '--interval', '30']);
    const result = await runCli([...args, '--timeout', '15m'], { env, signal: AbortSignal.timeout(60_000) });
    expect(result.code, result.stderr).toBe(7);
    const journal = readJournal(out);
    const id = journal.batches[0]?.migrationIds[0] as number;
    expect(result.stderr).toContain(`warning: batch 1 (migration ${id}): timed out waiting for migration ${id} after 15 minutes (exporting)\n  hint: the migration goes on on the service; run the same command again to go on waiting for it`);
    expect(journal.batches.map((b) => b.state)).toEqual(['started', 'done']);
    expect(journal.batches[0]?.error).toMatchObject({ exitCode: 7, hint: expect.stringMatching(/run the same command again/) });

    const again = await runCli(args, { env, signal: AbortSignal.timeout(60_000) });
    expect(again.code, again.stderr).toBe(0);
    expect(readJournal(out).batches.map((b) => b.state)).toEqual(['done', 'done']);
  }, 90_000);
});
