import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyArchive } from '../../src/core/archive/verify.js';
import type { Journal } from '../../src/core/org-export/journal.js';
import type { Sandbox } from '../../src/sandbox/server.js';
import { BIN, runCli, spawnCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';

// `export --output-dir` on a machine that fails it and against a directory others touch: one run per
// directory, a journal checked rather than believed, a local failure that ends the whole run, and
// no wait without an end. Spawned only where the process is the point (two at once, SIGTERM, a run
// that would never exit).

const JOURNAL = 'svc-migrate-journal.json';
const LOCK = 'svc-migrate.lock';
const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;
const canMountTmpfs = (() => {
  const probe = mkdtempSync(join(tmpdir(), 'svc-tmpfs-probe-'));
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe]).status !== 0) return false;
  return spawnSync('umount', [probe]).status === 0;
})();

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-org-rel-'));
const names = (count: number) => Array.from({ length: count }, (_, i) => `repo-${String(i + 1).padStart(4, '0')}`);
const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
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

/** Unlocks and archive deletions the sandbox received from request `from` on. */
const releases = (sandbox: Sandbox, from = 0) =>
  sandbox.requests.slice(from).filter((r) => r.method === 'DELETE').map((r) => r.url);

/** Resolves once `check` holds, looking again every few ms; fails if the child ends first. */
async function until(check: () => boolean, child: ChildProcess, what: string): Promise<void> {
  while (!check()) {
    if (child.exitCode !== null) throw new Error(`the export ended (${child.exitCode}) before ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function spawnExport(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const closed = new Promise<{ code: number | null; stderr: string }>((resolve) => child.once('close', (code) => resolve({ code, stderr })));
  return { child, closed };
}

describe('one run per output directory', () => {
  it('refuses a second run of the same export while the first runs (exit 2, naming its pid and host); the first finishes', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 4, exportSeconds: 2 });
    const { out, args } = setUp(4, ['--batch-size', '2']);
    const first = spawnExport(args, env);
    await until(() => existsSync(join(out, JOURNAL)) && readJournal(out).batches.some((b) => b.state === 'started'), first.child, 'a start');

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

  it('takes over a lock left by a process that is gone, with a warning', async () => {
    const { env } = await testSandbox({ repositories: 2 });
    const { out, args } = setUp(2);
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    mkdirSync(out, { mode: 0o700 });
    writeFileSync(join(out, LOCK), JSON.stringify({ pid: gone, host: hostname(), startedAt: '2026-01-02T03:04:05.000Z' }));
    const result = await runCli(args, { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`warning: taking over ${join(out, LOCK)}: pid ${gone} on ${hostname()}, which took it since 2026-01-02T03:04:05.000Z, is no longer running`);
    expect(existsSync(join(out, LOCK))).toBe(false);
  }, 60_000);

  it.skipIf(!existsSync('/proc/self/stat'))('takes over a lock whose pid now belongs to another process (started at another time); keeps one whose process it is', async () => {
    const { env } = await testSandbox({ repositories: 2 });
    const { out, args } = setUp(2);
    mkdirSync(out, { mode: 0o700 });
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const pid = sleeper.pid as number;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const start = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
      const lock = (processStart: number) => JSON.stringify({ pid, host: hostname(), startedAt: '2026-01-02T03:04:05.000Z', processStart });

      // The sleep's own start: the lock is its, and live.
      writeFileSync(join(out, LOCK), lock(start));
      const held = await runCli(args, { env });
      expect(held.code, held.stderr).toBe(2);
      expect(held.stderr).toContain(`hint: wait for it to finish or stop it (kill ${pid})`);

      // Another start: the run that wrote the lock ended, and the sleep took its pid since.
      writeFileSync(join(out, LOCK), lock(start - 1));
      const result = await runCli(args, { env });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain(`warning: taking over ${join(out, LOCK)}: pid ${pid} on ${hostname()}, which took it since 2026-01-02T03:04:05.000Z, is no longer running: pid ${pid} now belongs to a process started at another time`);
      expect(existsSync(join(out, LOCK))).toBe(false);
      expect(sleeper.exitCode).toBeNull();
    } finally {
      sleeper.kill();
    }
  }, 60_000);

  it('does not take over a lock from another host: exit 2, saying it cannot be checked and how to remove it', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 2 });
    const { out, args } = setUp(2);
    mkdirSync(out, { mode: 0o700 });
    const lock = JSON.stringify({ pid: 4242, host: 'build-7.elsewhere.example', startedAt: '2026-01-02T03:04:05.000Z' });
    writeFileSync(join(out, LOCK), lock);
    const result = await runCli(args, { env });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`is in use by another export (pid 4242 on build-7.elsewhere.example, since 2026-01-02T03:04:05.000Z); that host is not this one, so whether it still runs cannot be checked from here`);
    expect(result.stderr).toContain(`hint: if no export runs there any more, remove ${join(out, LOCK)} and run again`);
    expect(readFileSync(join(out, LOCK), 'utf8')).toBe(lock);
    expect(sandbox.requests.filter((r) => r.method === 'POST')).toEqual([]);
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
    await until(() => existsSync(join(out, LOCK)), run.child, 'the lock');
    run.child.kill('SIGTERM');
    const { code, stderr } = await run.closed;
    expect(code, stderr).toBe(143);
    expect(existsSync(join(out, LOCK))).toBe(false);
  }, 60_000);

  it('refuses a journal or an output directory that is not private, as the config file is', async () => {
    const { env } = await testSandbox({ repositories: 2 });
    const { out, args } = setUp(2);
    expect((await runCli(args, { env })).code).toBe(0);

    chmodSync(join(out, JOURNAL), 0o644);
    let result = await runCli(args, { env });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`error: refusing to use ${out}: the journal ${join(out, JOURNAL)} is open to other users (mode 0644)`);
    expect(result.stderr).toContain(`hint: make ${out} and the journal in it yours and private (chown, then chmod 700 ${out} and chmod 600 ${join(out, JOURNAL)}), or choose another --output-dir`);
    chmodSync(join(out, JOURNAL), 0o600);

    chmodSync(out, 0o777);
    result = await runCli(args, { env });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`the output directory ${out} is writable by other users (mode 0777)`);
    chmodSync(out, 0o700);

    if (isRoot) {
      chownSync(join(out, JOURNAL), NOBODY, NOBODY);
      result = await runCli(args, { env });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`is owned by another user (uid ${NOBODY}, you are 0)`);
    }
  }, 60_000);
});

describe('a journal that is checked, not believed', () => {
  /** One batch downloaded and verified whose unlock failed: the journal says `downloaded`. */
  async function stoppedBeforeRelease() {
    const box = await testSandbox({ repositories: 2, faults: { failNext: 1000, failPath: '/lock', failStatus: 500 } });
    const run = setUp(2, ['--batch-size', '2', '--lock', '--unlock', '--delete-archive', '--yes']);
    const first = await runCli(run.args, { env: box.env });
    expect(first.code, first.stderr).toBe(8);
    const journal = readJournal(run.out);
    expect(journal.batches[0]).toMatchObject({ state: 'downloaded', archive: { verified: true, gitObjectsChecked: true } });
    box.sandbox.faults.clear();
    return { ...box, ...run, journal, id: journal.batches[0]?.migrationIds[0] as number, from: box.sandbox.requests.length };
  }

  it('refuses an archive path that points elsewhere (exit 2): nothing is unlocked or deleted', async () => {
    const { sandbox, env, dir, out, args, journal, id, from } = await stoppedBeforeRelease();
    const elsewhere = join(dir, 'elsewhere.tar.gz');
    writeFileSync(elsewhere, readFileSync(join(out, `migration-${id}.tar.gz`)));
    (journal.batches[0]!.archive as { path: string }).path = elsewhere;
    writeJournal(out, journal);
    const result = await runCli(args, { env });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`is not a journal this program wrote: batch 1 records its archive as "${elsewhere}", but the archive of migration ${id} is ${join(out, `migration-${id}.tar.gz`)}`);
    expect(result.stderr).toMatch(/hint: put back the journal as the export wrote it, or move it away and run again with --restart/);
    expect(releases(sandbox, from)).toEqual([]);
  }, 60_000);

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

  it('goes on in a directory moved since: the archives are where the journal is, whatever path led there', async () => {
    const { env, out, args } = await stoppedBeforeRelease();
    const moved = `${out}-moved`;
    renameSync(out, moved);
    const result = await runCli(args.map((arg) => (arg === out ? moved : arg)), { env });
    expect(result.code, result.stderr).toBe(0);
  }, 60_000);

  it('checks the archive against its sha256 before releasing: one replaced after verification stops the batch (exit 9)', async () => {
    const { sandbox, env, out, args, id, from } = await stoppedBeforeRelease();
    const archive = join(out, `migration-${id}.tar.gz`);
    const bytes = readFileSync(archive);
    bytes[bytes.length - 100] = (bytes[bytes.length - 100] as number) ^ 0xff;
    writeFileSync(archive, bytes);
    const result = await runCli(args, { env });
    expect(result.code, result.stderr).toBe(9);
    expect(result.stderr).toMatch(new RegExp(`migration-${id}\\.tar\\.gz is not the archive that was verified \\(its sha256 is [0-9a-f]{64}, not [0-9a-f]{64} as recorded\\), so nothing was unlocked or deleted for migration ${id}`));
    expect(releases(sandbox, from)).toEqual([]);

    // Put back as verified, it is released.
    bytes[bytes.length - 100] = (bytes[bytes.length - 100] as number) ^ 0xff;
    writeFileSync(archive, bytes);
    const again = await runCli(args, { env });
    expect(again.code, again.stderr).toBe(0);
    expect(releases(sandbox, from)).toHaveLength(3);
  }, 60_000);

  it('holds an archive to what the service says its migration holds: another batch\'s archive, hash and all, is never released (exit 9)', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 2, faults: { failNext: 1000, failPath: '/lock', failStatus: 500 } });
    const { out, args } = setUp(2, ['--batch-size', '1', '--lock', '--unlock', '--delete-archive', '--yes']);
    expect((await runCli(args, { env })).code).toBe(8);
    sandbox.faults.clear();
    const journal = readJournal(out);
    expect(journal.batches.map((b) => b.state)).toEqual(['downloaded', 'downloaded']);
    const [first, second] = journal.batches.map((b) => b.migrationIds[0] as number) as [number, number];
    const archive = (id: number) => join(out, `migration-${id}.tar.gz`);
    // Batch 2's archive (repo-0002) under batch 1's name, its .sha256 and the journal made to match.
    writeFileSync(archive(first), readFileSync(archive(second)));
    writeFileSync(`${archive(first)}.sha256`, readFileSync(`${archive(second)}.sha256`, 'utf8').replace(String(second), String(first)));
    Object.assign(journal.batches[0]!.archive!, { bytes: statSync(archive(first)).size, sha256: sha256(archive(first)) });
    writeJournal(out, journal);
    const from = sandbox.requests.length;
    const result = await runCli(args, { env });
    expect(result.code, result.stderr).toBe(9);
    expect(result.stderr).toMatch(new RegExp(`repo-0001: belongs to migration ${first} but is not in the archive's metadata`));
    // Batch 2, whose archive is its own, is released; batch 1 is not touched.
    expect(releases(sandbox, from).filter((url) => url.includes(`/migrations/${first}/`))).toEqual([]);
    expect(releases(sandbox, from)).toHaveLength(2);

    // The wrong archive already under its final name while the journal says `exported`: fetched
    // anew instead of adopted, and what is released is the migration's own archive.
    Object.assign(journal.batches[0]!, { state: 'exported', archive: undefined, error: undefined });
    writeJournal(out, journal);
    const again = await runCli(args, { env });
    expect(again.code, again.stderr).toBe(0);
    const report = await verifyArchive(archive(first), { gitCheck: false });
    expect(report.repositories.map((r) => r.name)).toEqual(['octo-org/repo-0001']);
  }, 60_000);

  it('never releases an archive that was never verified, whatever the journal says of it (exit 9)', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 2, faults: { corruptArchive: true } });
    const { out, args } = setUp(2, ['--batch-size', '2', '--lock', '--unlock', '--delete-archive', '--yes']);
    const first = await runCli(args, { env });
    expect(first.code, first.stderr).toBe(9);
    const journal = readJournal(out);
    const batch = journal.batches[0]!;
    const id = batch.migrationIds[0] as number;
    const archive = join(out, `migration-${id}.tar.gz`);
    // The bytes that failed their check, given the final name and a journal that says they passed.
    renameSync(`${archive}.part`, archive);
    Object.assign(batch, { state: 'downloaded', error: undefined });
    batch.archive = { path: archive, bytes: statSync(archive).size, sha256: sha256(archive), verified: true, gitObjectsChecked: true };
    writeJournal(out, journal);
    const from = sandbox.requests.length;
    const result = await runCli(args, { env });
    expect(result.code, result.stderr).toBe(9);
    expect(result.stderr).toMatch(/failed verification/);
    expect(releases(sandbox, from)).toEqual([]);

    // Without the file, the journal's word fetches it again, and it fails its check again.
    rmSync(archive);
    writeJournal(out, journal);
    const again = await runCli(args, { env });
    expect(again.code, again.stderr).toBe(9);
    expect(again.stderr).toMatch(/is not on disk; fetching it again/);
    expect(releases(sandbox, from)).toEqual([]);
  }, 60_000);

  it('checks the archives of batches done earlier on every run: one missing or changed is reported (exit 9) and not counted', async () => {
    const { env } = await testSandbox({ repositories: 4 });
    const { out, args } = setUp(4, ['--batch-size', '1']);
    expect((await runCli(args, { env })).code).toBe(0);
    const ids = readJournal(out).batches.map((b) => b.migrationIds[0] as number);
    const archive = (i: number) => join(out, `migration-${ids[i]}.tar.gz`);
    rmSync(archive(0));
    // Garbage of the same size (its .sha256 untouched), and garbage of another size.
    writeFileSync(archive(1), Buffer.alloc(statSync(archive(1)).size, 0x41));
    writeFileSync(archive(2), 'garbage');
    const result = await runCli(args, { env });
    expect(result.code, result.stderr).toBe(9);
    expect(result.stderr).toContain('1/4 repositories in verified archives; look at batch 1, 2, 3');
    expect(result.stdout.trim().split('\n').map((row) => row.split('\t')[5])).toEqual(['NOT verified', 'NOT verified', 'NOT verified', 'verified']);
    expect(result.stderr).toContain(`${archive(0)} is missing, so batch 1 (1 repository) is not in a verified archive`);
    expect(result.stderr).toMatch(new RegExp(`${archive(1)} has changed since it was verified \\(its sha256 is [0-9a-f]{64}, not [0-9a-f]{64} as recorded\\), so batch 2`));
    expect(result.stderr).toContain(`${archive(2)} has changed since it was verified (7 bytes, not `);
    expect(result.stderr).toContain(`hint: the service's copy of migration ${ids[0]} may already be gone (archives are deleted 7 days after the export); while it is there, \`svc-migrate download ${ids[0]} --output ${archive(0)} --force\` fetches it again`);
    // The journal still says what was verified: fetched again as the hint says, the batch counts again.
    expect(readJournal(out).batches[0]?.archive?.verified).toBe(true);
    const fetched = await runCli(['download', String(ids[0]), '--output', archive(0), '--force'], { env });
    expect(fetched.code, fetched.stderr).toBe(0);
    const again = await runCli(args, { env });
    expect(again.code, again.stderr).toBe(9);
    expect(again.stderr).toContain('2/4 repositories in verified archives; look at batch 2, 3');
  }, 60_000);

  it('refuses records this program cannot have written (exit 2 and a hint), instead of acting on them', async () => {
    const { env } = await testSandbox({ repositories: 2 });
    const { out, args } = setUp(2, ['--batch-size', '2']);
    expect((await runCli(args, { env })).code).toBe(0);
    const good = readJournal(out);
    const id = good.batches[0]?.migrationIds[0] as number;
    const cases: [string, (journal: Journal) => void, RegExp][] = [
      ['an id that is text', (j) => Object.assign(j.batches[0]!, { state: 'started', migrationIds: [String(id)] }), /batch 1: migrationIds\[0\] is "\d+", not a whole number above 0/],
      ['an unknown state', (j) => Object.assign(j.batches[0]!, { state: 'half-done' }), /batch 1: state "half-done" is not one of pending, starting, started/],
      ['a wrong type', (j) => Object.assign(j.batches[0]!, { attempts: 'once' }), /batch 1: attempts is "once", not a whole number/],
      ['a flag that is not a flag', (j) => Object.assign(j.batches[0]!.archive!, { verified: 'yes' }), /batch 1: archive\.verified is not true or false/],
    ];
    for (const [what, edit, message] of cases) {
      const journal = structuredClone(good);
      edit(journal);
      writeJournal(out, journal);
      // Spawned: a run that believed such a record could loop without end.
      const result = await spawnCli(args, { env, timeoutMs: 20_000 });
      expect(result.code, `${what}: ${result.stderr}`).toBe(2);
      expect(result.stderr, what).toMatch(message);
      expect(result.stderr, what).toMatch(/hint: put back the journal as the export wrote it/);
    }
  }, 120_000);

  it('counts only the command\'s repositories: one a journal edit dropped or renamed is exported again, never counted without its archive', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 4 });
    const { out, args } = setUp(4, ['--batch-size', '2']);
    expect((await runCli(args, { env })).code).toBe(0);
    const good = readJournal(out);
    const cases: [string, (journal: Journal) => void, string[]][] = [
      ['a repository dropped', (j) => j.batches[1]!.repositories.pop(), ['octo-org/repo-0004']],
      ['a repository renamed', (j) => (j.batches[0]!.repositories[1] = 'octo-org/repo-0009'), ['octo-org/repo-0002']],
      ['a batch dropped', (j) => j.batches.pop(), ['octo-org/repo-0003', 'octo-org/repo-0004']],
    ];
    for (const [what, edit, again] of cases) {
      const journal = structuredClone(good);
      edit(journal);
      writeJournal(out, journal);
      const org = sandbox.store.organization('octo-org')!;
      const before = new Set(sandbox.store.list(org).map((m) => m.id));
      const result = await runCli([...args, '--json'], { env });
      expect(result.code, `${what}: ${result.stderr}`).toBe(0);
      const summary = JSON.parse(result.stdout.trim().split('\n').at(-1) as string) as { repositories: number; verified_repositories: number };
      expect(summary, what).toMatchObject({ repositories: 4, verified_repositories: 4 });
      // What the edit took away was started again, on its own: the archive that holds it is a new one.
      const started = sandbox.store.list(org).filter((m) => !before.has(m.id)).map((m) => m.repositories.map((r) => r.full_name));
      expect(started, what).toEqual([again]);
      const last = readJournal(out).batches.at(-1)!;
      expect(last.repositories, what).toEqual(again);
      expect((await verifyArchive(join(out, `migration-${last.migrationIds[0]}.tar.gz`), { gitCheck: false })).repositories.map((r) => r.name), what).toEqual(again);
    }
  }, 60_000);

  it('refuses a journal with a value nested 200,000 deep, or a key it does not write (exit 2), instead of failing with exit 1', async () => {
    const { env } = await testSandbox({ repositories: 2 });
    const { out, args } = setUp(2, ['--batch-size', '2']);
    expect((await runCli(args, { env })).code).toBe(0);
    const text = readFileSync(join(out, JOURNAL), 'utf8');
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    const cases: [string, string, string][] = [
      ['a deep state', text.replace('"state": "done"', `"state": ${deep}`), 'batch 1: state a list of 1 item is not one of pending'],
      ['a deep version', text.replace('"version": 1', `"version": ${deep}`), 'its version is a list of 1 item, not 1'],
      ['a deep value under a key of its own', text.replace('"state": "done"', `"state": "done", "note": ${deep}`), 'batch 1 has a key this program does not write: "note"'],
    ];
    for (const [what, journal, message] of cases) {
      expect(journal, what).not.toBe(text);
      writeFileSync(join(out, JOURNAL), journal, { mode: 0o600 });
      const result = await runCli(args, { env });
      expect(result.code, `${what}: ${result.stderr}`).toBe(2);
      expect(result.stderr, what).toContain(`${join(out, JOURNAL)} is not a journal this program wrote: ${message}`);
      expect(result.stderr, what).toMatch(/hint: put back the journal as the export wrote it/);
    }
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
  it('gives up checking migrations after 15 minutes of failures (exit 8), instead of trying again for ever', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 2, exportSeconds: 3600 });
    const { out, args } = setUp(2, ['--batch-size', '1', '--parallel', '2']);
    let started = 0;
    // A bound for the test itself: a poll that never ends is stopped here and fails the test.
    const result = await runCli(args, {
      env,
      signal: AbortSignal.timeout(60_000),
      onStderr: (text) => {
        started += text.match(/started migration/g)?.length ?? 0;
        if (started === 2) sandbox.faults.set({ failNext: 1_000_000, failPath: '/orgs/octo-org/migrations' });
      },
    });
    expect(result.code, result.stderr).toBe(8);
    expect(result.stderr).toMatch(/could not check the migrations for 15 minutes \(/);
    expect(result.stderr).toMatch(/trying again/);
    expect(readJournal(out).batches.map((b) => b.state)).toEqual(['started', 'started']);
    expect(existsSync(join(out, LOCK))).toBe(false);
  }, 90_000);

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

  it('status --wait gives up on a migration it cannot check for 15 minutes (exit 8), as the org export\'s poll does', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 3600 });
    const started = await runCli(['start', 'widgets', '--json'], { env });
    expect(started.code, started.stderr).toBe(0);
    const { id } = JSON.parse(started.stdout) as { id: number };
    sandbox.faults.set({ failNext: 1_000_000, failPath: `/migrations/${id}` });
    const result = await runCli(['status', String(id), '--wait', '--interval', '0.1'], { env, signal: AbortSignal.timeout(60_000) });
    expect(result.code, result.stderr).toBe(8);
    expect(result.stderr).toContain(`could not check migration ${id} for 15 minutes (`);
    expect(result.stderr).toMatch(/trying again/);
    expect(result.stderr).toContain(`hint: run \`svc-migrate status ${id} --wait\` to keep waiting`);
  }, 90_000);

  it('waits out a "spammed" refusal at most 20 times, then reports the batch (exit 5)', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 1, spamLimit: { starts: 0, windowSeconds: 60 } });
    const { args } = setUp(1);
    const result = await runCli(args, { env, signal: AbortSignal.timeout(60_000) });
    expect(result.code, result.stderr).toBe(5);
    expect(result.stderr.match(/refuses new starts for now; waiting/g)).toHaveLength(20);
    expect(sandbox.requests.filter((r) => r.method === 'POST')).toHaveLength(21);
  }, 90_000);

  it('a download whose storage always refuses, or always cuts, ends with exit 8 after a bounded number of tries', async () => {
    const { sandbox, env } = await testSandbox({ repositories: 2, archivePadBytes: 200_000 });
    const refused = setUp(2, ['--batch-size', '2']);
    sandbox.faults.set({ storageForbiddenNext: 1000 });
    let result = await runCli(refused.args, { env, signal: AbortSignal.timeout(60_000) });
    expect(result.code, result.stderr).toBe(8);
    const storage = () => sandbox.requests.filter((r) => r.origin === 'storage').length;
    expect(storage()).toBe(4);

    sandbox.faults.clear();
    sandbox.faults.set({ cutAfterBytes: 1000, cutTimes: 1000 });
    const cut = setUp(2, ['--batch-size', '2']);
    const before = storage();
    result = await runCli(cut.args, { env, signal: AbortSignal.timeout(60_000) });
    expect(result.code, result.stderr).toBe(8);
    expect(storage() - before).toBeLessThanOrEqual(10);
  }, 90_000);
});
