import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Migration } from '../../src/api/types.js';
import { untilInDirectory } from '../helpers/fs-events.js';
import { BIN, runCli, spawnCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';
import { unless } from '../helpers/skip.js';

// Faults on the migration side, injected by the sandbox; every test is bounded and loopback only.

const FAST = ['--interval', '0.1'];
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-rel-'));
const hasCompiler = spawnSync('cc', ['--version']).status === 0;
const canMountTmpfs = (() => {
  const probe = mkdtempSync(join(tmpdir(), 'svc-tmpfs-probe-'));
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe]).status !== 0) return false;
  return spawnSync('umount', [probe]).status === 0;
})();
const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

async function exportedArchive(padBytes: number, options: Parameters<typeof testSandbox>[0] = {}) {
  const box = await testSandbox({ exportSeconds: 0.2, archivePadBytes: padBytes, ...options });
  const started = await runCli(['start', 'widgets', '--wait', '--json', ...FAST], { env: box.env });
  expect(started.code, started.stderr).toBe(0);
  const { id } = JSON.parse(started.stdout) as Migration;
  // The sandbox's own sha256 of the archive is its storage ETag.
  const location = await box.fetch(`${box.sandbox.baseUrl}/orgs/octo-org/migrations/${id}/archive`, {
    headers: { authorization: `Bearer ${box.sandbox.ownerToken}` },
    redirect: 'manual',
  }).then((r) => r.headers.get('location') ?? '');
  const head = await box.fetch(location, { method: 'HEAD' });
  const size = Number(head.headers.get('content-length'));
  const etag = (head.headers.get('etag') ?? '').replaceAll('"', '');
  box.sandbox.requests.length = 0;
  return { ...box, id, size, etag };
}

describe('download under faults', () => {
  it('survives a 16 MiB archive cut at 5 random offsets, ending with the sandbox sha256', async () => {
    // Many times the download's buffers: a cut lands wherever it may, bytes in flight included.
    const { sandbox, env, id, size, etag } = await exportedArchive(16 * 1024 * 1024);
    const offsets = fc.sample(fc.integer({ min: 1, max: size - 1 }), { numRuns: 5, seed: 20261122 }).sort((a, b) => a - b);
    sandbox.faults.set({ cutAtOffsets: [...offsets] });
    const output = join(tempDir(), 'big.tar.gz');
    const result = await runCli(['download', String(id), '-o', output, '--json'], { env, timeoutMs: 120_000 });
    expect(result.code, result.stderr).toBe(0);
    expect((result.stderr.match(/download cut at/g) ?? []).length).toBe(5);
    expect(JSON.parse(result.stdout).sha256).toBe(etag);
    expect(sha256(output)).toBe(etag);
    const ranges = sandbox.requests.filter((r) => r.origin === 'storage').map((r) => r.headers.range);
    // Every byte received before a cut reached the disk: each resume starts exactly at its cut.
    expect(ranges).toEqual([undefined, ...offsets.map((offset) => `bytes=${offset}-`)]);
  }, 120_000);

  it('gets a fresh URL when storage answers 403 mid-way, and completes', async () => {
    const { sandbox, env, id, size, etag } = await exportedArchive(2 * 1024 * 1024);
    // Cut half-way; the resume is then refused as expired: one fresh 302 from the API, and on it goes.
    sandbox.faults.set({ cutAtOffsets: [Math.floor(size / 2)], storageForbiddenOnResume: 1 });
    const output = join(tempDir(), 'a.tar.gz');
    const result = await runCli(['download', String(id), '-o', output, '--json'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(sha256(output)).toBe(etag);
    const archiveCalls = sandbox.requests.filter((r) => r.origin === 'api' && r.url.endsWith('/archive'));
    expect(archiveCalls).toHaveLength(2);
    expect(sandbox.requests.filter((r) => r.origin === 'storage').map((r) => r.status)).toEqual([200, 403, 206]);
  });

  // A full disk for real: a 256 KiB tmpfs (root only; elsewhere skipped). A link to /dev/full would
  // be refused before any byte is written: the download never writes through a planted link.
  it.skipIf(!canMountTmpfs)(`says the disk is full, leaves nothing under the final name, and keeps no bogus .part${unless(canMountTmpfs, 'cannot mount a tmpfs here; needs root')}`, async () => {
    const { env, id } = await exportedArchive(1024 * 1024);
    const dir = tempDir();
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', dir]);
    try {
      const output = join(dir, 'a.tar.gz');
      const full = await runCli(['download', String(id), '-o', output], { env });
      // A full disk is the machine's state, not a bug: exit 2 with the path and a hint.
      expect(full.code, full.stderr).toBe(2);
      // The announced length is compared with the free space before a byte is written (a disk filled
      // during the download is test/integrity/hostile-storage.test.ts's).
      expect(full.stderr).toMatch(/not enough free space in .* for migration \d+'s archive: .* needed, .* free/);
      expect(full.stderr).toMatch(/hint: free some space/);
      expect(full.stderr).not.toMatch(/bug/);
      expect(existsSync(output)).toBe(false);
    } finally {
      execFileSync('umount', ['-l', dir]);
    }
  });

  it('says permission denied for an output it cannot create, not "free some space"', async () => {
    const { env, id } = await exportedArchive(0);
    const unwritable = await runCli(['download', String(id), '-o', '/sys/kernel/svc-archive.tar.gz'], { env });
    expect(unwritable.code).toBe(2);
    expect(unwritable.stderr).toMatch(/permission denied/);
    expect(unwritable.stderr).not.toMatch(/free some space|bug/);
  });

  // A write-back error is reported to a file descriptor once: the background flush must not swallow it.
  // Spawned: LD_PRELOAD acts when a process starts.
  it.skipIf(!hasCompiler)(`fails when writing back to disk fails mid-way, with nothing under the final name${unless(hasCompiler, 'no C compiler (cc) here')}`, async () => {
    const { env, id } = await exportedArchive(40 * 1024 * 1024);
    const dir = tempDir();
    writeFileSync(join(dir, 'eio.c'), '#include <errno.h>\nint fdatasync(int fd) { (void)fd; errno = EIO; return -1; }\n');
    execFileSync('cc', ['-shared', '-fPIC', '-o', join(dir, 'eio.so'), join(dir, 'eio.c')]);
    const output = join(dir, 'a.tar.gz');
    const result = await spawnCli(['download', String(id), '-o', output], { env: { ...env, LD_PRELOAD: join(dir, 'eio.so') } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/cannot write .*a\.tar\.gz\.part: an input\/output error/);
    expect(result.stderr).not.toMatch(/bug/);
    expect(existsSync(output)).toBe(false);
  });

  it('exits 130 on Ctrl-C mid-download and the next run resumes to the same bytes', async () => {
    const { sandbox, env, id, etag } = await exportedArchive(4 * 1024 * 1024);
    sandbox.faults.set({ throttleBytesPerSecond: 2 * 1024 * 1024 });
    const output = join(tempDir(), 'a.tar.gz');
    const child = spawn(process.execPath, [BIN, 'download', String(id), '-o', output], { env: { ...process.env, ...env } });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const watching = new AbortController();
    const exited = new Promise((resolve) => child.on('exit', resolve)).finally(() => watching.abort());
    // Interrupt once some of the archive is on disk, however long start-up took (a download that
    // ended first fails below).
    await untilInDirectory(dirname(output), () => existsSync(`${output}.part`) && statSync(`${output}.part`).size > 0, watching.signal).catch(() => {});
    child.kill('SIGINT');
    const code = await exited;
    expect(code).toBe(130);
    expect(stderr).toMatch(/bytes are kept in .*\.part/);
    expect(existsSync(output)).toBe(false);
    expect(existsSync(`${output}.part`)).toBe(true);
    sandbox.faults.clear();
    const resumed = await runCli(['download', String(id), '-o', output, '--json'], { env });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(sandbox.requests.filter((r) => r.origin === 'storage').at(-1)?.headers.range).toMatch(/^bytes=[1-9]\d*-$/);
    expect(sha256(output)).toBe(etag);
  });
});

describe('rate limits and resets', () => {
  it.each([
    ['429 with retry-after', 429],
    ['403 with x-ratelimit-remaining: 0', 403],
  ] as const)('waits out %s: no request reaches the service before the reset', async (_name, status) => {
    const { sandbox, env } = await testSandbox({ rateLimit: { limit: 3, windowSeconds: 2, status } });
    sandbox.store.bulkExports(sandbox.store.organization('octo-org')!, 10);
    const result = await runCli(['list', '--all', '--per-page', '2', '--json'], { env, timeoutMs: 30_000 });
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as unknown[]).length).toBe(11);
    expect(result.stderr).toMatch(/rate limited \((primary|secondary)\); waiting \d+ s until/);
    const api = sandbox.requests.filter((r) => r.origin === 'api');
    const refused = api.filter((r) => r.status === status);
    expect(refused.length).toBeGreaterThan(0);
    for (const limited of refused) {
      const next = api[api.indexOf(limited) + 1];
      // Nothing reaches the service before the reset the refusal announced.
      expect(next!.at).toBeGreaterThanOrEqual(limited.rateLimitReset! * 1000 - 5);
    }
  }, 40_000);
});

describe('status --wait under a rate limit', () => {
  it.each([429, 403] as const)('keeps waiting through %i limits without calling before a reset', async (status) => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 3, rateLimit: { limit: 4, windowSeconds: 2, status } });
    const started = await runCli(['start', 'widgets', '--json'], { env });
    const { id } = JSON.parse(started.stdout) as Migration;
    const result = await runCli(['status', String(id), '--wait', '--json', ...FAST], { env, timeoutMs: 30_000 });
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as Migration).state).toBe('exported');
    const api = sandbox.requests.filter((r) => r.origin === 'api');
    for (const limited of api.filter((r) => r.status === status)) {
      const next = api[api.indexOf(limited) + 1];
      if (next) expect(next.at).toBeGreaterThanOrEqual(limited.rateLimitReset! * 1000 - 5);
    }
    // With a 0.1 s interval and no budget, ~30 polls would have been made; the budget keeps it far lower.
    expect(api.length).toBeLessThan(20);
  }, 40_000);
});

describe('starting a migration', () => {
  it('never sends a second POST after a connection reset, and says to check the list', async () => {
    const { sandbox, env } = await testSandbox();
    sandbox.faults.set({ dropNext: 1, failPath: '/orgs/octo-org/migrations' });
    const result = await runCli(['start', 'widgets'], { env });
    expect(result.code).toBe(8);
    expect(result.stderr).toMatch(/svc-migrate list/);
    expect(sandbox.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });
});
