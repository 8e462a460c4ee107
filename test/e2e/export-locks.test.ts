import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode, InterruptedError } from '../../src/errors.js';
import type { Sandbox } from '../../src/sandbox/server.js';
import { BIN, runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';
import { unless } from '../helpers/skip.js';

// An owner is never left with locked repositories nobody mentions, and every command a message
// tells them to run works as printed.

const FAST = ['--interval', '0.1'];
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-locks-'));
const root = process.getuid?.() === 0;
// As root, the binary runs as `nobody`, who must be able to read the checkout (see mistakes.test.ts).
const canDropPrivileges =
  !root ||
  spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, BIN, '--version'], { stdio: 'ignore' }).status === 0;

/** Requests that reached the API (not the admin calls a test makes). */
const apiRequests = (sandbox: Sandbox) => sandbox.requests.filter((r) => r.origin === 'api' && !r.url.startsWith('/_sandbox'));

/** Names still locked on the service, over every migration of octo-org. */
function lockedNames(sandbox: Sandbox): string[] {
  return sandbox.store.list(sandbox.store.organization('octo-org')!).flatMap((m) => [...m.locked]);
}

/** The quoted `svc-migrate <command> …` a message names, as the arguments to run it with. */
function quotedCommand(text: string, command: string): string[] {
  const match = new RegExp(`\`svc-migrate (${command} [^\`]*)\``).exec(text);
  if (!match?.[1]) throw new Error(`no \`svc-migrate ${command} …\` in:\n${text}`);
  // The paths of these tests need no shell quoting; a quoted word would show here as a failure.
  return match[1].split(' ');
}

describe('export checks where the archive goes before it locks anything', () => {
  it('refuses an existing -o file before the first request, and a missing or unwritable directory', async () => {
    const { sandbox, env } = await testSandbox();
    const dir = tempDir();
    const taken = join(dir, 'x.tgz');
    writeFileSync(taken, 'mine');
    const exists = await runCli(['export', 'repo-0010', '--lock', '--unlock', '-o', taken, ...FAST], { env });
    expect(exists.code, exists.stderr).toBe(2);
    expect(exists.stderr).toContain(`error: ${taken} already exists`);
    expect(readFileSync(taken, 'utf8')).toBe('mine');

    const missing = await runCli(['export', 'repo-0010', '--lock', '--unlock', '-o', join(dir, 'nodir', 'x.tgz'), ...FAST], { env });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`the directory ${join(dir, 'nodir')} does not exist`);
    expect(missing.stderr).toContain('nothing was asked of the service');

    const notDirectory = await runCli(['export', 'repo-0010', '--lock', '-o', join(taken, 'y.tgz'), ...FAST], { env });
    expect(notDirectory.code).toBe(2);

    // The default name goes in the current directory; an --output directory the file system refuses.
    const proc = await runCli(['export', 'repo-0010', '--lock', '-o', '/proc/', ...FAST], { env });
    expect(proc.code, proc.stderr).toBe(2);
    expect(proc.stderr).toMatch(/cannot write \/proc\/migration-<id>\.tar\.gz\.part: \/proc does not allow creating it/);

    const download = await runCli(['download', '1000', '-o', taken, '--wait'], { env });
    expect(download.code).toBe(2);
    expect(download.stderr).toContain('already exists');
    expect(apiRequests(sandbox)).toEqual([]);
    expect(lockedNames(sandbox)).toEqual([]);
  });

  it('goes ahead over an existing file with --force', async () => {
    const { sandbox, env } = await testSandbox();
    const taken = join(tempDir(), 'x.tgz');
    writeFileSync(taken, 'old');
    const result = await runCli(['export', 'widgets', '--lock', '--unlock', '-o', taken, '--force', ...FAST], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(taken).subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect(lockedNames(sandbox)).toEqual([]);
  });

  it('export --sandbox --yes run twice refuses the existing file before it exports anything', async () => {
    const dir = tempDir();
    const output = join(dir, 'demo.tgz');
    const first = await runCli(['export', '--sandbox', '--yes', '-o', output, ...FAST]);
    expect(first.code, first.stderr).toBe(0);
    const second = await runCli(['export', '--sandbox', '--yes', '-o', output, ...FAST]);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(`${output} already exists`);
    expect(second.stderr).not.toMatch(/started migration|exported/);

    // Into a directory, the name comes from the migration id: refused as soon as the id is known,
    // before any wait or download.
    const intoDir = await runCli(['export', '--sandbox', '--yes', '-o', `${dir}/`, ...FAST]);
    expect(intoDir.code, intoDir.stderr).toBe(0);
    const again = await runCli(['export', '--sandbox', '--yes', '-o', `${dir}/`, ...FAST]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`${join(dir, 'migration-1001.tar.gz')} already exists (done: started migration 1001)`);
    expect(again.stderr).not.toMatch(/exported/);
    // The emulator and its migration are gone; what still works is said, and works.
    expect(again.stderr).toMatch(/in-process sandbox has stopped, and migration 1001 with it.*; or run the export again with --force/);
    const forced = await runCli(['export', '--sandbox', '--yes', '-o', `${dir}/`, '--force', ...FAST]);
    expect(forced.code, forced.stderr).toBe(0);
  });

  it('a name made from the migration id that is taken: said before the wait, with the command that replaces it', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 600 });
    const dir = tempDir();
    const next = sandbox.store.list(sandbox.store.organization('octo-org')!).reduce((max, m) => Math.max(max, m.id), 0) + 1;
    writeFileSync(join(dir, `migration-${next}.tar.gz`), 'mine');
    const result = await runCli(['export', 'widgets', '-o', `${dir}/`, ...FAST], { env });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`migration-${next}.tar.gz already exists`);
    // Nothing waited for: no GET of the migration (the list before the start looks for earlier ones).
    expect(apiRequests(sandbox).filter((r) => r.method === 'GET' && /\/migrations\/\d+/.test(r.url))).toEqual([]);
    sandbox.clock.advance(600_000);
    const replace = await runCli(quotedCommand(result.stderr, 'download'), { env });
    expect(replace.code, replace.stderr).toBe(0);
    expect(readFileSync(join(dir, `migration-${next}.tar.gz`)).subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
  });
});

describe('a failure after the lock names what is still locked', () => {
  it('SIGTERM mid-wait: exit 143 (not Ctrl-C\'s 130), with the locked repository named', async () => {
    const { env } = await testSandbox({ exportSeconds: 600 });
    const stop = new AbortController();
    const result = await runCli(['export', 'widgets', '--lock', '-o', join(tempDir(), 'a.tgz'), ...FAST], {
      env,
      signal: stop.signal,
      onStderr: (text) => {
        if (/started migration/.test(text)) stop.abort(new InterruptedError('interrupted', {}, ExitCode.Terminated));
      },
    });
    expect(result.code, result.stderr).toBe(ExitCode.Terminated);
    expect(result.stderr).toMatch(/1 repository is still locked \(widgets\): `svc-migrate unlock \d+ --all` unlocks it/);
  });

  it('says which repositories stay locked, and the unlock and download it prints both work (with --org)', async () => {
    const { sandbox, env } = await testSandbox();
    const { SVC_ORG: _org, ...noOrg } = env;
    sandbox.faults.set({ corruptArchive: true });
    const output = join(tempDir(), 'x.tgz');
    const failed = await runCli(['export', 'docs.site', 'widgets', '--lock', '--unlock', '-o', output, '--org', 'octo-org', ...FAST], {
      env: noOrg,
    });
    expect(failed.code).toBe(9);
    expect(failed.stderr).toMatch(/2 repositories are still locked \(docs\.site, widgets\): `svc-migrate unlock \d+ --all --org octo-org` unlocks them/);
    expect(lockedNames(sandbox).sort()).toEqual(['docs.site', 'widgets']);

    sandbox.faults.clear();
    const download = await runCli(quotedCommand(failed.stderr, 'download'), { env: noOrg });
    expect(download.code, download.stderr).toBe(0);
    expect(existsSync(output)).toBe(true);
    const unlock = await runCli(quotedCommand(failed.stderr, 'unlock'), { env: noOrg });
    expect(unlock.code, unlock.stderr).toBe(0);
    expect(lockedNames(sandbox)).toEqual([]);
  });

  it('a cut download: the resume command carries the download flags and works; the lock is named', async () => {
    const { sandbox, env } = await testSandbox();
    sandbox.faults.set({ cutAfterBytes: 10, cutTimes: 100 });
    const output = join(tempDir(), 'x.tgz');
    const cut = await runCli(['export', 'widgets', '--lock', '--unlock', '-o', output, '--no-checksum', '--max-size', '1M', ...FAST], { env });
    expect(cut.code).toBe(8);
    expect(cut.stderr).toMatch(/1 repository is still locked \(widgets\): `svc-migrate unlock \d+ --all` unlocks it/);
    const resume = quotedCommand(cut.stderr, 'download');
    expect(resume).toEqual(expect.arrayContaining(['--output', output, '--no-checksum', '--max-size', String(1024 ** 2)]));
    sandbox.faults.clear();
    const resumed = await runCli(resume, { env });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(existsSync(`${output}.sha256`)).toBe(false);
  });

  it('a timeout with --lock names the locked repositories; a run that locked nothing says nothing of locks', async () => {
    const { env } = await testSandbox({ exportSeconds: 600 });
    const locked = await runCli(['export', 'widgets', '--lock', '--timeout', '2s', '-o', join(tempDir(), 'a.tgz'), ...FAST], { env });
    expect(locked.code).toBe(7);
    expect(locked.stderr).toMatch(/1 repository is still locked \(widgets\)/);
    expect(locked.stderr).toMatch(/hint: run the same export again: it continues migration \d+ \(or keep waiting with `svc-migrate status \d+ --wait`/);
    const open = await runCli(['export', 'docs.site', '--timeout', '2s', '-o', join(tempDir(), 'a.tgz'), ...FAST], { env });
    expect(open.code).toBe(7);
    expect(open.stderr).not.toMatch(/locked/);
  });

  it('a .part of another migration\'s archive is said before it is started over (a run killed mid-download)', async () => {
    const { env } = await testSandbox();
    const output = join(tempDir(), 'k.tgz');
    writeFileSync(`${output}.part`, Buffer.alloc(2025));
    writeFileSync(`${output}.part.json`, JSON.stringify({ migrationId: 1015, guid: 'another', validator: '"x"', total: 9000 }), { mode: 0o600 });
    const result = await runCli(['export', 'widgets', '-o', output, ...FAST], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`warning: ${output}.part held 2025 bytes of migration 1015's archive, not this one's: starting over;`);
    // A crafted id is not repeated.
    writeFileSync(`${output}.part`, Buffer.alloc(10));
    writeFileSync(`${output}.part.json`, JSON.stringify({ migrationId: '\u001b[31m7', guid: 'another' }), { mode: 0o600 });
    const crafted = await runCli(['export', 'widgets', '-o', output, '--force', ...FAST], { env });
    expect(crafted.stderr).toContain('held 10 bytes of another migration\'s archive: starting over; `svc-migrate list` shows');
    expect(crafted.stderr).not.toContain('\u001b[31m');
  });

  it('a run killed before it could say: the same export again continues it; with --new, it names it and how to unlock it', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 600 });
    // What a kill -9 leaves: a migration under way with its repositories locked, and nothing said.
    const { SVC_ORG: _org, ...noOrg } = env;
    const started = await runCli(['start', 'widgets', '--lock', '--json'], { env });
    const earlier = (JSON.parse(started.stdout) as { id: number }).id;
    sandbox.clock.advance(1_000);
    const starts = () => sandbox.requests.filter((r) => r.method === 'POST' && r.url.endsWith('/migrations')).length;
    const before = starts();
    const again = await runCli(['export', 'widgets', '--lock', '--timeout', '2s', '-o', join(tempDir(), 'a.tgz'), '--org', 'octo-org', ...FAST], {
      env: noOrg,
    });
    expect(again.code).toBe(7);
    expect(again.stderr).toMatch(new RegExp(`✓ continuing migration ${earlier} \\((pending|exporting)\\), started earlier with exactly these repositories and flags \\(by an earlier run, or another export of them\\); --new starts another instead`));
    expect(starts()).toBe(before);
    // Started without --lock, it is another export: not continued.
    const other = await runCli(['export', 'widgets', '--timeout', '2s', '-o', join(tempDir(), 'b.tgz'), ...FAST], { env });
    expect(other.stderr).toMatch(/started migration \d+/);

    const fresh = await runCli(['export', 'widgets', '--lock', '--new', '--timeout', '2s', '-o', join(tempDir(), 'c.tgz'), '--org', 'octo-org', ...FAST], {
      env: noOrg,
    });
    const lines = fresh.stderr.split('\n');
    const notice = lines.findIndex((line) => new RegExp(`warning: migration ${earlier} \\((pending|exporting), lock requested\\) exports the same repositories`).test(line));
    // Said before the start, not after it.
    expect(notice).toBeGreaterThanOrEqual(0);
    expect(notice).toBeLessThan(lines.findIndex((line) => /started migration \d+/.test(line)));
    expect(lines[notice]).toContain(`\`svc-migrate unlock ${earlier} --all --org octo-org\``);
    const unlock = await runCli(quotedCommand(lines[notice] as string, 'unlock'), { env: noOrg });
    expect(unlock.code, unlock.stderr).toBe(0);
  });
});

describe('a run that leaves repositories locked says so', () => {
  it('export --lock without --unlock ends with the count and the command, also in --json', async () => {
    const { sandbox, env } = await testSandbox();
    const dir = tempDir();
    const human = await runCli(['export', 'widgets', 'docs.site', '--lock', '-o', join(dir, 'a.tgz'), ...FAST], { env });
    expect(human.code, human.stderr).toBe(0);
    const last = human.stdout.trim().split('\n').at(-1) ?? '';
    expect(last).toMatch(/^2 repositories are still locked \(widgets, docs\.site\): `svc-migrate unlock \d+ --all` unlocks them$/);

    const json = await runCli(['export', 'widgets', '--lock', '-o', join(dir, 'b.tgz'), '--json', ...FAST], { env });
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report.locked).toEqual(['widgets']);
    expect(report.unlock_command).toBe(`svc-migrate unlock ${report.migration.id} --all`);
    expect(json.stderr).toContain(`1 repository is still locked (widgets): \`svc-migrate unlock ${report.migration.id} --all\` unlocks it`);

    const unlock = await runCli(quotedCommand(last, 'unlock'), { env });
    expect(unlock.code, unlock.stderr).toBe(0);
    const unlockJson = await runCli(report.unlock_command.split(' ').slice(1), { env });
    expect(unlockJson.code, unlockJson.stderr).toBe(0);
    expect(lockedNames(sandbox)).toEqual([]);

    const unlocked = await runCli(['export', 'widgets', '--lock', '--unlock', '-o', join(dir, 'c.tgz'), '--json', ...FAST], { env });
    expect(JSON.parse(unlocked.stdout)).toMatchObject({ locked: [], unlock_command: null });
  });

  it('start --lock says the repositories stay locked and how to unlock them', async () => {
    const { env } = await testSandbox();
    const result = await runCli(['start', 'widgets', '--lock'], { env });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/migration (\d+) keeps its repository locked until `svc-migrate unlock \1 --all`/);
  });

  it('export --output-dir: "kept locked" only when something was locked, and a closing line with the commands', async () => {
    const { sandbox, env } = await testSandbox();
    const open = await runCli(['export', 'widgets', '--output-dir', tempDir(), ...FAST], { env });
    expect(open.code, open.stderr).toBe(0);
    expect(open.stderr).not.toMatch(/locked/);
    expect(open.stderr).toContain('batch 1: nothing to unlock: the export did not lock them');

    const locked = await runCli(['export', 'widgets', 'docs.site', '--lock', '--batch-size', '1', '--output-dir', tempDir(), ...FAST], { env });
    expect(locked.code, locked.stderr).toBe(0);
    expect(locked.stderr).toMatch(/batch 1: kept 1 repository locked as asked/);
    const line = locked.stderr.trim().split('\n').at(-1) ?? '';
    expect(line).toMatch(/^2 repositories are still locked; `svc-migrate unlock --output-dir \S+` unlocks them$/);
    const jsonDir = tempDir();
    const json = await runCli(['export', 'widgets', '--lock', '--output-dir', jsonDir, '--json', ...FAST], { env });
    const summary = JSON.parse(json.stdout.trim().split('\n').at(-1) as string);
    expect(summary).toMatchObject({ type: 'summary', locked: 1, unlock_command: `svc-migrate unlock --output-dir ${jsonDir}` });
    expect(json.stderr).toMatch(/^warning: 1 repository is still locked; `svc-migrate unlock --output-dir \S+` unlocks it$/m);
    expect((await runCli(quotedCommand(line, 'unlock'), { env })).code).toBe(0);
    expect((await runCli((summary.unlock_command as string).split(' ').slice(1), { env })).code).toBe(0);
    expect(lockedNames(sandbox)).toEqual([]);
  });
});

describe('with --sandbox, hints say the emulator has stopped', () => {
  it('start --sandbox does not send the owner to a migration that is gone', async () => {
    const result = await runCli(['start', '--sandbox', 'widgets']);
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(/status \d+ --wait/);
    expect(result.stderr).toMatch(/the in-process sandbox has stopped, and migration \d+ with it; .*`svc-migrate sandbox`/);
  });

  it('an error hint that names a later command says so instead', async () => {
    const timedOut = await runCli(['export', 'widgets', '--lock', '--sandbox', '--timeout', '1s', '-o', join(tempDir(), 'a.tgz'), ...FAST]);
    expect(timedOut.code).toBe(7);
    expect(timedOut.stderr).not.toMatch(/hint:.*svc-migrate (status|unlock|download) \d+/);
    expect(timedOut.stderr).toMatch(/hint: the in-process sandbox has stopped, and migration \d+ with it/);
    expect(timedOut.stderr).toMatch(/1 repository was left locked \(widgets\), in the in-process sandbox that stopped/);
  });
});

describe('hints carry the flags that reach the same service', () => {
  it('--org and --base-url given as flags are repeated; the token never is', async () => {
    const { env, sandbox } = await testSandbox({ exportSeconds: 600 });
    const flags = ['--org', 'octo-org', '--base-url', sandbox.baseUrl];
    const started = await runCli(['start', 'widgets', ...flags], { env: { SVC_TOKEN: env.SVC_TOKEN, SVC_CA_FILE: env.SVC_CA_FILE } });
    expect(started.code, started.stderr).toBe(0);
    expect(started.stderr).toMatch(new RegExp(`next: svc-migrate status \\d+ --wait --base-url ${sandbox.baseUrl} --org octo-org\\n`));
    const waited = await runCli(['status', started.stdout.trim(), ...flags, '--token', env.SVC_TOKEN, '--wait', '--timeout', '1s'], { env: { SVC_CA_FILE: env.SVC_CA_FILE } });
    expect(waited.code).toBe(7);
    const resume = quotedCommand(waited.stderr, 'status');
    expect(resume).toEqual(['status', started.stdout.trim(), '--wait', '--base-url', sandbox.baseUrl, '--org', 'octo-org']);
    expect(started.stderr + waited.stderr).not.toContain(env.SVC_TOKEN);
    // Run as printed with nothing else, it would have no token: the hint says where it goes.
    expect(waited.stderr).toMatch(/^hint: .* \(with your token in SVC_TOKEN, or --token as this command had it\)$/m);
  });

  it.skipIf(!canDropPrivileges)(`a directory without write permission is refused up front (the built binary, as an unprivileged user)${unless(canDropPrivileges, 'running as root without setpriv to become another user')}`, async () => {
    const { sandbox, env } = await testSandbox();
    const base = mkdtempSync(join(tmpdir(), 'svc-locked-'));
    chmodSync(base, 0o755);
    const dir = join(base, 'locked');
    mkdirSync(dir, { mode: 0o555 });
    chmodSync(dir, 0o555);
    const prefix = root ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];
    const args = [...prefix, process.execPath, BIN, 'export', 'widgets', '--lock', '-o', join(dir, 'a.tgz')];
    const result = spawnSync(args[0] as string, args.slice(1), { env: { ...process.env, ...env, HOME: tmpdir() }, encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(2);
    expect(result.stderr).toContain(`cannot write ${dir}/a.tgz.part: permission denied`);
    expect(apiRequests(sandbox)).toEqual([]);
  });
});
