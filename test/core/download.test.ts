import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { startMigration } from '../../src/api/migrations.js';
import { type DownloadOptions, type DownloadProgress, downloadArchive } from '../../src/core/download.js';
import { ExitCode, UnavailableError } from '../../src/errors.js';
import type { SandboxOptions } from '../../src/sandbox/server.js';
import { failure } from '../helpers/api-client.js';
import { coreSandbox } from '../helpers/core-sandbox.js';

// The download called directly against the sandbox's storage and its faults, on a virtual clock:
// what a `.part` keeps, how it is resumed (Range and If-Range), what storage may answer to a resume
// and what makes the bytes held worthless (another file, another size, no ranges), and where every
// retry ends. The backoff is read off the clock's waits, not off a watch.

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-core-download-'));

/** An exported migration of `widgets`, its archive's sha256 (storage's ETag), and where to save it. */
async function exported(options: SandboxOptions = {}) {
  const box = await coreSandbox({ exportSeconds: 0, archivePadBytes: 300_000, ...options });
  const faults = box.sandbox.faults.snapshot();
  box.sandbox.faults.clear();
  const migration = await startMigration(box.api, box.org, { repositories: ['octo-org/widgets'] });
  const reference = join(tempDir(), 'reference.tar.gz');
  const target = { path: reference, force: false };
  const whole = await downloadArchive(box.api, { org: box.org, id: migration.id, target, checksum: true, clock: box.clock.program });
  box.sandbox.faults.set(faults);
  box.sandbox.requests.length = 0;
  box.clock.sleeps.length = 0;
  const dir = tempDir();
  return { ...box, migration, id: migration.id, size: whole.bytes, sha256: whole.sha256 as string, dir, path: join(dir, 'archive.tar.gz') };
}

type Exported = Awaited<ReturnType<typeof exported>>;

/** Downloads to `path` (or `target`), collecting what it tells. */
async function download(box: Exported, extra: Partial<DownloadOptions> = {}) {
  const notices: string[] = [];
  const progress: DownloadProgress[] = [];
  const result = await downloadArchive(box.api, {
    org: box.org,
    id: box.id,
    target: { path: box.path, force: false },
    checksum: true,
    clock: box.clock.program,
    onNotice: (message) => notices.push(message),
    onProgress: (p) => progress.push(p),
    ...extra,
  });
  return { result, notices, progress };
}

/** What a download that fails throws, and what it said before. */
async function downloadFailure(box: Exported, extra: Partial<DownloadOptions> = {}) {
  const notices: string[] = [];
  const error = await failure(download(box, { onNotice: (message) => notices.push(message), ...extra }));
  return { error, notices };
}

const storage = (box: Exported) => box.sandbox.requests.filter((r) => r.origin === 'storage');
const ranges = (box: Exported) => storage(box).map((r) => r.headers.range);
const meta = (box: Exported) => JSON.parse(readFileSync(`${box.path}.part.json`, 'utf8')) as { validator: string; total: number; guid: string };

/** A first download cut at `at` bytes with no resume allowed: the `.part` and its side file are left. */
async function leftPart(box: Exported, at = 100_000): Promise<void> {
  box.sandbox.faults.set({ cutAtOffsets: [at] });
  await downloadFailure(box, { maxResumes: 0 });
  box.sandbox.requests.length = 0;
  box.clock.sleeps.length = 0;
}

describe('a .part kept and resumed', () => {
  it('keeps what arrived before a cut, with the file\'s validator and size, and the next run asks for the rest with Range and If-Range', async () => {
    const box = await exported();
    box.sandbox.faults.set({ cutAtOffsets: [100_000] });
    const { error } = await downloadFailure(box, { maxResumes: 0 });
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error.exitCode).toBe(ExitCode.Unavailable);
    expect(error.message).toMatch(/^download cut at 100000 bytes \(.*\); giving up after 1 tries$/);
    expect(error.hint).toBe(`100000 bytes are kept in ${box.path}.part; \`svc-migrate download ${box.id} -o ${box.path}\` resumes from there`);
    expect(existsSync(box.path)).toBe(false);
    expect(statSync(`${box.path}.part`).size).toBe(100_000);
    expect(meta(box)).toEqual({ migrationId: box.id, guid: box.migration.guid, validator: `"${box.sha256}"`, total: box.size });

    box.sandbox.requests.length = 0;
    const { result, progress } = await download(box);
    expect(storage(box).map((r) => [r.headers.range, r.headers['if-range'], r.status])).toEqual([[`bytes=100000-`, `"${box.sha256}"`, 206]]);
    expect(progress[0]).toMatchObject({ resumedFrom: 100_000, total: box.size });
    expect(result).toMatchObject({ bytes: box.size, sha256: box.sha256, resumes: 0 });
    expect(sha256(readFileSync(box.path))).toBe(box.sha256);
    expect(readdirSync(box.dir).sort()).toEqual(['archive.tar.gz', 'archive.tar.gz.sha256']);
  });

  it('resumes each cut at the byte after the last one kept, backing off 100, 200, 400 ms on the clock', async () => {
    const box = await exported({ faults: { cutAtOffsets: [50_000, 150_000, 250_000] } });
    const { result, notices } = await download(box);
    expect(ranges(box)).toEqual([undefined, 'bytes=50000-', 'bytes=150000-', 'bytes=250000-']);
    expect(result).toMatchObject({ sha256: box.sha256, resumes: 3 });
    expect(notices.map((n) => n.replace(/\(.*\)/, '(…)'))).toEqual([
      'download cut at 50000 bytes (…); resuming',
      'download cut at 150000 bytes (…); resuming',
      'download cut at 250000 bytes (…); resuming',
    ]);
    expect(box.clock.sleeps).toEqual([100, 200, 400]);
  });

  it('takes a cut after a mebibyte of progress for progress, not a strike: a long transfer that keeps moving goes on', async () => {
    const box = await exported({ archivePadBytes: 3_000_000, faults: { cutAtOffsets: [1_200_000, 2_400_000] } });
    const { result } = await download(box, { maxResumes: 0 });
    expect(result).toMatchObject({ sha256: box.sha256, resumes: 2 });
    expect(box.clock.sleeps).toEqual([50, 50]);
  });

  it('gives up after maxResumes cuts without progress (exit 8), keeping every byte received for the next run', async () => {
    const box = await exported({ faults: { cutAfterBytes: 1000, cutTimes: 1000 } });
    const { error } = await downloadFailure(box);
    expect(error.exitCode).toBe(ExitCode.Unavailable);
    expect(error.message).toMatch(/^download cut at 6000 bytes \(.*\); giving up after 6 tries$/);
    expect(error.hint).toMatch(/^6000 bytes are kept in /);
    expect(ranges(box)).toEqual([undefined, 'bytes=1000-', 'bytes=2000-', 'bytes=3000-', 'bytes=4000-', 'bytes=5000-']);
    expect(box.clock.sleeps).toEqual([100, 200, 400, 800, 1600]);
    expect(statSync(`${box.path}.part`).size).toBe(6000);
  });

  it('starts over, saying so, from a .part another migration left at the same path', async () => {
    const box = await exported();
    await leftPart(box);
    const other = await startMigration(box.api, box.org, { repositories: ['octo-org/widgets'] });
    const { result, notices } = await download(box, { id: other.id });
    expect(ranges(box)).toEqual([undefined]);
    expect(notices).toContain(`${box.path}.part held 100000 bytes of migration ${box.id}'s archive, not this one's: starting over; \`svc-migrate status ${box.id}\` shows that migration, which may still hold locked repositories`);
    expect(result.migrationId).toBe(other.id);
    expect(sha256(readFileSync(box.path))).toBe(result.sha256);
  });

  it('restarts from zero when storage does not do ranges', async () => {
    const box = await exported({ faults: { noRange: true, cutAtOffsets: [100_000] } });
    const { result, notices } = await download(box);
    expect(ranges(box)).toEqual([undefined, undefined]);
    expect(notices[0]).toMatch(/^download cut at 100000 bytes \(.*\); restarting: storage does not support ranges$/);
    expect(result.sha256).toBe(box.sha256);
  });

  it('refuses what is at the .part\'s path when it is not a file (exit 2), and leaves it there', async () => {
    const box = await exported();
    mkdirSync(`${box.path}.part`);
    const { error } = await downloadFailure(box);
    expect(error.exitCode).toBe(ExitCode.Usage);
    expect(error.message).toBe(`cannot write ${box.path}.part: ${box.path}.part is a directory`);
    expect(statSync(`${box.path}.part`).isDirectory()).toBe(true);
    expect(storage(box)).toEqual([]);
  });
});

describe('a resume splices nothing', () => {
  it('drops a 206 from another file (If-Range ignored), starts over once, and ends with the archive whole', async () => {
    const box = await exported({ faults: { cutAtOffsets: [100_000], spliceNext: 1 } });
    const { result, notices } = await download(box);
    expect(ranges(box)).toEqual([undefined, 'bytes=100000-', undefined]);
    expect(notices[1]).toBe(`the archive on storage changed while resuming (was ${JSON.stringify(`"${box.sha256}"`)}, now ${JSON.stringify(`"${box.sha256.slice(0, 40)}-other"`)}); discarding the 100000 bytes received and starting over from zero`);
    expect(result.sha256).toBe(box.sha256);
    expect(sha256(readFileSync(box.path))).toBe(box.sha256);
  });

  it('gives up (exit 8) and keeps nothing when storage splices again after starting over', async () => {
    // Three answers cut at 100,000 bytes: the first, the spliced one (dropped unread), the one after starting over.
    const box = await exported({ faults: { cutAfterBytes: 100_000, cutTimes: 3, spliceNext: 2 } });
    const { error } = await downloadFailure(box);
    expect(error.exitCode).toBe(ExitCode.Unavailable);
    expect(error.message).toMatch(/^the archive on storage changed while resuming .*; already started over once, giving up$/);
    expect(error.hint).toMatch(/archive storage is answering inconsistently/);
    expect(ranges(box)).toEqual([undefined, 'bytes=100000-', undefined, 'bytes=100000-']);
    expect(readdirSync(box.dir)).toEqual([]);
  });

  it('starts over when the file changed since the .part was kept: storage answers the whole archive to If-Range', async () => {
    const box = await exported();
    await leftPart(box);
    writeFileSync(`${box.path}.part.json`, JSON.stringify({ ...meta(box), validator: '"an-older-file"' }));
    const { result, notices } = await download(box);
    expect(storage(box).map((r) => [r.headers.range, r.headers['if-range'], r.status])).toEqual([['bytes=100000-', '"an-older-file"', 200]]);
    expect(notices).toEqual(['storage sent the whole archive again instead of the rest; discarding the 100000 bytes received and starting over from zero']);
    expect(result).toMatchObject({ bytes: box.size, sha256: box.sha256 });
  });

  it('starts over when the size changed, and when storage will not continue at the byte held (416)', async () => {
    const box = await exported();
    await leftPart(box);
    writeFileSync(`${box.path}.part.json`, JSON.stringify({ ...meta(box), total: box.size + 1000 }));
    let { result, notices } = await download(box);
    expect(notices).toEqual([`the archive's size changed from ${box.size + 1000} to ${box.size} bytes; discarding the 100000 bytes received and starting over from zero`]);
    expect(result.sha256).toBe(box.sha256);

    // More bytes held than the archive has: a resume past its end.
    const { path } = box;
    writeFileSync(`${path}.part`, Buffer.alloc(box.size + 10));
    writeFileSync(`${path}.part.json`, JSON.stringify({ migrationId: box.id, guid: box.migration.guid, validator: `"${box.sha256}"`, total: box.size + 100 }));
    box.sandbox.requests.length = 0;
    ({ result, notices } = await download(box, { target: { path, force: true } }));
    expect(ranges(box)).toEqual([`bytes=${box.size + 10}-`, undefined]);
    expect(notices).toEqual([`storage refused to continue at byte ${box.size + 10} (HTTP 416); discarding the ${box.size + 10} bytes received and starting over from zero`]);
    expect(result.sha256).toBe(box.sha256);
  });

  it('into a stream: resumes with Range, but refuses to restart what it cannot take back', async () => {
    const box = await exported({ faults: { cutAtOffsets: [100_000] } });
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (chunk: Buffer) => chunks.push(chunk));
    const { result } = await download(box, { target: { stream: out } });
    expect(ranges(box)).toEqual([undefined, 'bytes=100000-']);
    expect(sha256(Buffer.concat(chunks))).toBe(box.sha256);
    expect(result.sha256).toBe(box.sha256);

    box.sandbox.faults.set({ noRange: true, cutAtOffsets: [100_000] });
    const { error } = await downloadFailure(box, { target: { stream: new PassThrough().resume() } });
    expect(error.exitCode).toBe(ExitCode.Unavailable);
    expect(error.message).toBe('storage restarted the archive from the beginning, which a stream cannot take back');
    expect(error.hint).toBe('download to a file instead of -o -');
  });
});

describe('storage that refuses', () => {
  it('asks the service for a fresh URL when storage refuses one, at most 3 times, then gives up (exit 8)', async () => {
    const box = await exported({ faults: { storageForbiddenNext: 3 } });
    const { result, notices } = await download(box);
    expect(result.sha256).toBe(box.sha256);
    expect(notices).toEqual(Array(3).fill('archive URL refused (HTTP 403); asking the service for a fresh one'));
    expect(box.sandbox.requests.filter((r) => r.origin === 'api' && r.url.endsWith('/archive'))).toHaveLength(4);

    box.sandbox.requests.length = 0;
    box.sandbox.faults.set({ storageForbiddenNext: 4 });
    const { error } = await downloadFailure(box, { target: { path: box.path, force: true } });
    expect(error.exitCode).toBe(ExitCode.Unavailable);
    expect(error.message).toBe('archive storage keeps refusing the download (HTTP 403)');
    expect(storage(box).map((r) => r.status)).toEqual([403, 403, 403, 403]);
  });

  it('downloads only an exported migration\'s archive, and warns a day before the service deletes it', async () => {
    const box = await exported();
    const failed = await startMigration(box.api, box.org, { repositories: ['octo-org/will-fail'] });
    box.clock.advance(1);
    expect((await downloadFailure(box, { id: failed.id })).error.exitCode).toBe(ExitCode.MigrationFailed);

    box.clock.advance(6.5 * 24 * 3_600_000);
    const { notices } = await download(box);
    expect(notices[0]).toMatch(new RegExp(`^the archive of migration ${box.id} is deleted automatically at \\S+ \\(12 h left\\)$`));
  });
});
