import { spawn } from 'node:child_process';
import { untilChildWrites } from '../helpers/fs-events.js';
import { existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.js';
import { BIN, runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';

// The built binary killed with SIGKILL in the middle of a single export's download: the same
// command continues that migration and its `.part`, starting nothing and locking nothing again.

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-export-resume-'));
const starts = (sandbox: Sandbox) => sandbox.requests.filter((r) => r.origin === 'api' && r.method === 'POST' && /\/migrations$/.test(r.url));
const lockedNames = (sandbox: Sandbox) => sandbox.store.list(sandbox.store.organization('octo-org')!).flatMap((m) => [...m.locked]).sort();

describe('a single export killed mid-download', () => {
  it('the same command continues the same migration from its .part; --new starts afresh', async () => {
    const { sandbox, env } = await testSandbox({ archivePadBytes: 2_000_000, faults: { throttleBytesPerSecond: 400_000 } });
    const dir = tempDir();
    const output = join(dir, 'acme.tar.gz');
    const args = ['export', 'widgets', 'docs.site', '--lock', '--unlock', '-o', output, '--interval', '0.1'];
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    const part = `${output}.part`;
    await untilChildWrites(() => existsSync(`${part}.json`) && existsSync(part) && statSync(part).size > 100_000, dir, child, 'a download');
    const closed = new Promise((resolve) => child.once('close', resolve));
    child.kill('SIGKILL');
    await closed;
    const kept = statSync(part).size;
    expect(starts(sandbox)).toHaveLength(1);
    expect(lockedNames(sandbox)).toEqual(['docs.site', 'widgets']);

    sandbox.faults.set({ throttleBytesPerSecond: undefined });
    const storageBefore = sandbox.requests.filter((r) => r.origin === 'storage').length;
    const again = await runCli(args, { env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/✓ continuing migration \d+ \(exported\), started by an earlier run: its download is half done in .*acme\.tar\.gz\.part/);
    expect(again.stderr).toMatch(new RegExp(`resuming ${output.replace(/[.]/g, '\\.')} from .* \\((\\d+) bytes\\) already in`));
    expect(starts(sandbox)).toHaveLength(1);
    const ranges = sandbox.requests.filter((r) => r.origin === 'storage').slice(storageBefore).map((r) => r.headers.range);
    expect(ranges[0]).toMatch(new RegExp(`^bytes=(\\d+)-$`));
    expect(Number(/^bytes=(\d+)-$/.exec(ranges[0] ?? '')?.[1])).toBeGreaterThanOrEqual(kept);
    expect(lockedNames(sandbox)).toEqual([]);
    expect(readdirSync(dir).sort()).toEqual(['acme.tar.gz', 'acme.tar.gz.sha256']);

    const fresh = await runCli([...args.slice(0, -2), '--force', '--new', '--interval', '0.1'], { env });
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(fresh.stderr).toMatch(/✓ started migration \d+/);
    expect(starts(sandbox)).toHaveLength(2);
  });
});

describe('a single export whose start answer is lost', () => {
  it('found in the list: continued, with one start; not found: the repositories that may be locked and the command that unlocks them', async () => {
    const { sandbox, env } = await testSandbox();
    sandbox.faults.set({ loseStartAnswerNext: 1 });
    const found = await runCli(['export', 'widgets', '--lock', '--unlock', '-o', join(tempDir(), 'a.tgz'), '--interval', '0.1'], { env });
    expect(found.code, found.stderr).toBe(0);
    expect(found.stderr).toMatch(/✓ the answer to the start was lost; found migration \d+ \(\w+\), which it started/);
    expect(starts(sandbox)).toHaveLength(1);
    expect(lockedNames(sandbox)).toEqual([]);

    // The start's connection dropped before it reached the service: nothing started, nothing heard.
    const log = sandbox.requests;
    const record = log.push.bind(log);
    log.push = (...entries) => {
      if (entries.some((entry) => entry.method === 'POST')) sandbox.faults.set({ dropNext: 1 });
      return record(...entries);
    };
    const lost = await runCli(['export', 'widgets', 'docs.site', '--lock', '-o', join(tempDir(), 'b.tgz'), '--interval', '0.1'], { env });
    expect(lost.code).toBe(8);
    expect(lost.stderr).toMatch(/^error: .*: no migration of these repositories made since the start is in the list yet; if it did, its 2 repositories \(widgets, docs\.site\) are locked$/m);
    expect(lost.stderr).toMatch(/^hint: `svc-migrate list` shows it once it appears: exactly these repositories, created about \d{4}-\d\d-\d\dT[\d:.]+Z; `svc-migrate unlock <its id> --all` gives them back$/m);
    log.push = record;
  });
});

describe('a leftover .part that the download would refuse', () => {
  it('is refused before the start, so nothing is locked, with a hint that works; a hard-linked one too', async () => {
    const { sandbox, env } = await testSandbox();
    const dir = tempDir();
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'keep me');
    const output = join(dir, 's8.tgz');
    symlinkSync(victim, `${output}.part`);
    const args = ['export', 'widgets', '--lock', '--unlock', '-o', output, '--interval', '0.1'];
    const refused = await runCli(args, { env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`error: ${output}.part is a symbolic link: refusing to write through it`);
    expect(refused.stderr).toContain(`hint: remove it (rm ${output}.part) if you put it there, then run the command again`);
    expect(starts(sandbox)).toHaveLength(0);
    expect(lockedNames(sandbox)).toEqual([]);

    // The side file, a directory the download could not rename over: refused alike (a link there is
    // replaced, never written through: test/reliability/credentials.test.ts). Then a hard link to
    // another file as the .part.
    const other = join(dir, 'other.tgz');
    mkdirSync(`${other}.part.json`);
    const side = await runCli(['export', 'widgets', '--lock', '-o', other], { env });
    expect(side.code).toBe(2);
    expect(side.stderr).toContain(`error: ${other}.part.json is not a regular file of its own (it is a directory)`);
    // `rm` alone would refuse a directory.
    expect(side.stderr).toContain(`hint: remove it (rm -r ${other}.part.json) and run the command again`);
    const folder = join(dir, 'folder.tgz');
    mkdirSync(`${folder}.part`);
    const partDir = await runCli(['export', 'widgets', '--lock', '-o', folder], { env });
    expect(partDir.code).toBe(2);
    expect(partDir.stderr).toContain(`error: ${folder}.part is not a regular file of its own (it is a directory)`);
    expect(partDir.stderr).toContain(`hint: remove it (rm -r ${folder}.part) and run the command again`);
    const linked = join(dir, 'linked.tgz');
    linkSync(victim, `${linked}.part`);
    const hard = await runCli(['export', 'widgets', '--lock', '-o', linked], { env });
    expect(hard.code).toBe(2);
    expect(hard.stderr).toContain(`error: ${linked}.part is not a regular file of its own (it is a hard link to another file)`);
    expect(hard.stderr).toContain(`hint: remove it (rm ${linked}.part) and run the command again`);
    expect(starts(sandbox)).toHaveLength(0);
    expect(readFileSync(victim, 'utf8')).toBe('keep me');

    // The hint followed: the export runs.
    rmSync(`${output}.part`);
    const again = await runCli(args, { env });
    expect(again.code, again.stderr).toBe(0);
    expect(lockedNames(sandbox)).toEqual([]);
  });
});
