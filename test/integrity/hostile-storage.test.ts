import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { untilInDirectory } from '../helpers/fs-events.js';
import { startStorageStub as stub } from '../helpers/storage-stub.js';
import { runCli } from '../helpers/run-cli.js';
import { unless } from '../helpers/skip.js';
import { testSandbox } from '../helpers/sandbox.js';

// Hostile or buggy archive storage, played by a stub on loopback that also answers the three API
// calls a download makes. Each case is one answer that used to leave a wrong archive behind.

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-hostile-'));
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Writes `chunk` again and again until the client goes away. */
function endless(response: ServerResponse, chunk: Buffer): void {
  let open = true;
  response.on('close', () => {
    open = false;
  });
  const pump = () => {
    while (open && response.write(chunk));
    if (open) response.once('drain', pump);
  };
  pump();
}

/** Sends `bytes`, then drops the connection: a cut transfer. */
function cutAfter(response: ServerResponse, bytes: Buffer): void {
  response.write(bytes, () => setImmediate(() => response.socket?.destroy()));
}

const A = randomBytes(200_000);
const B = randomBytes(200_000);
const HALF = 100_000;

function whole(response: ServerResponse, body: Buffer, etag: string, cut = false): void {
  response.writeHead(200, { etag, 'accept-ranges': 'bytes', 'content-length': body.length });
  if (cut) cutAfter(response, body.subarray(0, HALF));
  else response.end(body);
}

function partial(response: ServerResponse, body: Buffer, etag: string, start: number, total = body.length): void {
  response.writeHead(206, {
    etag,
    'accept-ranges': 'bytes',
    'content-range': `bytes ${start}-${total - 1}/${total}`,
    'content-length': total - start,
  });
  response.end(body.subarray(start, total));
}

const download = (env: Record<string, string>, output: string, extra: string[] = []) =>
  runCli(['download', '7', '-o', output, '--json', '--no-verify', ...extra], { env, timeoutMs: 60_000 });

describe('a resume can never splice two files', () => {
  it('drops a 206 from another file (If-Range ignored), starts over once, and ends with the first file whole', async () => {
    const { env, storage } = await stub((request, response, attempt) => {
      if (attempt === 1) return whole(response, A, '"A"', true);
      if (request.headers.range) return partial(response, B, '"B"', HALF);
      whole(response, A, '"A"');
    });
    const output = join(tempDir(), 'a.tar.gz');
    const result = await download(env, output);
    expect(result.code, result.stderr).toBe(0);
    expect(sha256(readFileSync(output))).toBe(sha256(A));
    expect(JSON.parse(result.stdout).sha256).toBe(sha256(A));
    expect(result.stderr).toMatch(/changed while resuming.*starting over from zero/);
    expect(storage).toEqual([{}, { range: `bytes=${HALF}-`, ifRange: '"A"' }, {}]);
  });

  it('gives up with exit 8 and keeps nothing when storage splices again after starting over', async () => {
    const { env, storage } = await stub((request, response) => {
      if (request.headers.range) return partial(response, B, '"B"', HALF);
      whole(response, A, '"A"', true);
    });
    const dir = tempDir();
    const output = join(dir, 'a.tar.gz');
    const result = await download(env, output);
    expect(result.code).toBe(8);
    expect(result.stderr).toMatch(/already started over once/);
    expect(storage).toHaveLength(4);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses a 206 whose total is smaller than the first answer\'s length', async () => {
    const { env } = await stub((request, response, attempt) => {
      if (attempt === 1) return whole(response, A, '"A"', true);
      if (request.headers.range) return partial(response, A, '"A"', HALF, 150_000);
      whole(response, A, '"A"');
    });
    const output = join(tempDir(), 'a.tar.gz');
    const result = await download(env, output);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/size changed from 200000 to 150000 bytes/);
    expect(sha256(readFileSync(output))).toBe(sha256(A));
  });

  it('never writes past the announced range: an overlong 206 is an error, not progress', async () => {
    let served = 0;
    const { env, storage } = await stub((request, response) => {
      if (!request.headers.range) return whole(response, A, '"A"', true);
      // The right headers, then a body that does not stop where the range does.
      response.writeHead(206, { etag: '"A"', 'content-range': `bytes ${HALF}-${A.length - 1}/${A.length}` });
      response.on('close', () => (served += 1));
      endless(response, randomBytes(64 * 1024));
    });
    const dir = tempDir();
    const output = join(dir, 'a.tar.gz');
    const result = await download(env, output);
    expect(result.code).toBe(8);
    expect(result.stderr).toMatch(/more than the 200000 bytes it announced/);
    expect(storage.filter((r) => r.range)).toHaveLength(2);
    expect(served).toBe(2);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('bounds a body without a length by --max-size, and keeps nothing', async () => {
    const { env } = await stub((_request, response) => {
      response.writeHead(200, { etag: '"A"', 'content-type': 'application/gzip' });
      endless(response, randomBytes(64 * 1024));
    });
    const dir = tempDir();
    const output = join(dir, 'a.tar.gz');
    const result = await runCli(['download', '7', '-o', output, '--no-verify', '--max-size', '1M'], { env, timeoutMs: 60_000 });
    expect(result.code).toBe(8);
    expect(result.stderr).toMatch(/more than 1048576 bytes without announcing a length/);
    expect(result.stderr).toMatch(/--max-size/);
    expect(existsSync(output)).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('reads no API body without a limit: an endless JSON answer ends in a clear error', async () => {
    const { env } = await stub(
      () => {},
      (request, response) => {
        if (request.url !== '/orgs/acme/migrations/9') return false;
        response.writeHead(200, { 'content-type': 'application/json' });
        response.write('{"id": 9, "padding": "');
        endless(response, Buffer.alloc(256 * 1024, 'x'));
        return true;
      },
    );
    const result = await runCli(['status', '9'], { env, timeoutMs: 60_000 });
    expect(result.code).toBe(8);
    expect(result.stderr).toMatch(/answer to GET .*\/migrations\/9 is larger than 64 MiB/);
  });

  it('reads at most a little of an endless error body', async () => {
    const { env } = await stub(
      () => {},
      (request, response) => {
        if (request.url !== '/orgs/acme/migrations/9') return false;
        response.writeHead(400, { 'content-type': 'text/plain' });
        endless(response, Buffer.alloc(256 * 1024, 'y'));
        return true;
      },
    );
    const result = await runCli(['status', '9'], { env, timeoutMs: 60_000 });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/rejected the request as malformed/);
  });
});

// A real small disk: a 100 MiB tmpfs, so that a body without a length has room to run up to the
// margin (64 MiB kept free) before it is stopped. Mounting needs root; elsewhere these are skipped.
const canMountTmpfs = (() => {
  const probe = tempDir();
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe]).status !== 0) return false;
  return spawnSync('umount', [probe]).status === 0;
})();
const MiB = 1024 * 1024;
const freeIn = (dir: string) => {
  const stats = statfsSync(dir);
  return stats.bavail * stats.bsize;
};

describe.skipIf(!canMountTmpfs)(`free space before bytes (a 100 MiB tmpfs)${unless(canMountTmpfs, 'cannot mount a tmpfs here; needs root')}`, () => {
  let disk = '';
  beforeAll(() => {
    disk = tempDir();
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=100m', 'tmpfs', disk]);
  });
  afterAll(() => {
    if (disk) execFileSync('umount', ['-l', disk]);
  });
  afterEach(() => {
    for (const name of readdirSync(disk)) rmSync(join(disk, name), { force: true });
  });
  const plain = (env: Record<string, string>, extra: string[] = []) =>
    runCli(['download', '7', '-o', join(disk, 'a.tar.gz'), '--no-verify', ...extra], { env, timeoutMs: 60_000 });

  /** Headers at once; the body only after a pause, and only if the client is still there. */
  /**
   * Headers only, and never a byte of the body: a client that waited for the body before judging
   * the announced length would hang here (the test's timeout), not refuse. Resolves `closed` once
   * the client has hung up.
   */
  function headersOnly(response: ServerResponse, headers: Record<string, string | number>, status = 200): { closed: Promise<void> } {
    const closed = new Promise<void>((resolve) => response.on('close', () => resolve()));
    response.writeHead(status, headers);
    response.flushHeaders();
    return { closed };
  }

  it('stops a body without a length at the free space less the margin: exit 2, nothing kept, the disk not filled', async () => {
    const { env } = await stub((_request, response) => {
      response.writeHead(200, { etag: '"A"', 'content-type': 'application/gzip' });
      endless(response, randomBytes(64 * 1024));
    });
    const result = await plain(env);
    expect(result.code, result.stderr).toBe(2);
    const said = new RegExp(
      `^error: not enough free space in ${disk} for migration 7's archive: storage announced no length and sent [\\d.]+ MiB \\((\\d+) bytes\\), ` +
        'with 100.0 MiB \\(104857600 bytes\\) free; stopped to keep 64.0 MiB free\n' +
        `hint: free some space in ${disk}, or save the archive on a disk with more room; nothing was kept\n$`,
    );
    expect(result.stderr).toMatch(said);
    // Stopped at the margin, not at a full disk: the last chunk read crossed 100 - 64 MiB.
    const received = Number(said.exec(result.stderr)?.[1]);
    expect(received).toBeGreaterThan(36 * MiB);
    expect(received).toBeLessThan(37 * MiB);
    expect(readdirSync(disk)).toEqual([]);
    expect(freeIn(disk)).toBe(100 * MiB);
  });

  it('refuses an announced length larger than the free space before a byte of the body is sent', async () => {
    let storage: { closed: Promise<void> } | undefined;
    const { env, storage: seen } = await stub((_request, response) => {
      storage = headersOnly(response, { etag: '"A"', 'accept-ranges': 'bytes', 'content-length': 200 * MiB });
    });
    const result = await plain(env);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toBe(
      `error: not enough free space in ${disk} for migration 7's archive: 200.0 MiB (209715200 bytes) needed, 100.0 MiB (104857600 bytes) free\n` +
        `hint: free some space in ${disk}, or save the archive on a disk with more room; nothing was written\n`,
    );
    expect(seen).toHaveLength(1);
    await storage?.closed;
    expect(readdirSync(disk)).toEqual([]);
  });

  it('on a resume, compares only the bytes still to come, and keeps the .part when they do not fit', async () => {
    const output = join(disk, 'a.tar.gz');
    const meta = { migrationId: 7, guid: '0b989ba4-242f-11e5-81e1-c7b6966d2516', validator: '"A"' };
    // 100 MiB already received (a sparse file: it takes no room on the tmpfs), 150 MiB to come.
    writeFileSync(`${output}.part`, '');
    truncateSync(`${output}.part`, 100 * MiB);
    writeFileSync(`${output}.part.json`, JSON.stringify({ ...meta, total: 250 * MiB }));
    let storage: { closed: Promise<void> } | undefined;
    const { env, storage: seen } = await stub((_request, response) => {
      storage = headersOnly(
        response,
        { etag: '"A"', 'content-range': `bytes ${100 * MiB}-${250 * MiB - 1}/${250 * MiB}`, 'content-length': 150 * MiB },
        206,
      );
    });
    const free = freeIn(disk);
    const refused = await plain(env, ['--no-checksum']);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toBe(
      `error: not enough free space in ${disk} for migration 7's archive: 150.0 MiB (157286400 bytes) still needed, ${(free / MiB).toFixed(1)} MiB (${free} bytes) free\n` +
        `hint: free some space in ${disk}, or save the archive on a disk with more room; ` +
        'the 100.0 MiB (104857600 bytes) already downloaded are kept for resuming\n',
    );
    expect(seen).toEqual([{ range: `bytes=${100 * MiB}-`, ifRange: '"A"' }]);
    expect(statSync(`${output}.part`).size).toBe(100 * MiB);
    expect(existsSync(`${output}.part.json`)).toBe(true);
    await storage?.closed;

    // The same .part with 10 MiB to come: more than fits as a whole archive, but the rest fits.
    writeFileSync(`${output}.part.json`, JSON.stringify({ ...meta, total: 110 * MiB }));
    const rest = randomBytes(10 * MiB);
    const { env: env2 } = await stub((_request, response) => {
      response.writeHead(206, { etag: '"A"', 'content-range': `bytes ${100 * MiB}-${110 * MiB - 1}/${110 * MiB}`, 'content-length': rest.length });
      response.end(rest);
    });
    const resumed = await plain(env2, ['--no-checksum']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(statSync(output).size).toBe(110 * MiB);
  });

  it('export: an archive larger than the free space stops it before the download, nothing unlocked or deleted', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 0.2, archivePadBytes: 2 * MiB });
    // Leave about 1 MiB free on the disk.
    const filler = openSync(join(disk, 'filler'), 'w');
    try {
      while (freeIn(disk) > 2 * MiB) writeSync(filler, Buffer.alloc(MiB));
    } finally {
      closeSync(filler);
    }
    const output = join(disk, 'a.tar.gz');
    const result = await runCli(
      ['export', 'widgets', '--lock', '--unlock', '--delete-archive', '--yes', '-o', output, '--interval', '0.1'],
      { env, timeoutMs: 60_000 },
    );
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(new RegExp(`error: not enough free space in ${disk} for migration \\d+'s archive: [\\d.]+ MiB \\(\\d+ bytes\\) needed, [\\d.]+ [KM]iB \\(\\d+ bytes\\) free`));
    expect(sandbox.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
    // The way out starts with making room, then resuming.
    expect(result.stderr).toMatch(/hint: free some space in .*, or save the archive on a disk with more room; nothing was written; then resume the download with `svc-migrate download \d+ --output /);
    expect(readdirSync(disk)).toEqual(['filler']);
  });

  it('still says the disk is full when something else fills it during the download, and keeps the .part', async () => {
    const output = join(disk, 'a.tar.gz');
    const { env } = await stub((_request, response) => {
      response.writeHead(200, { etag: '"A"', 'accept-ranges': 'bytes', 'content-length': 50 * MiB });
      response.write(randomBytes(MiB));
      // Once the download has begun writing (past its check), another writer takes the rest of the disk.
      const answering = new AbortController();
      response.on('close', () => answering.abort());
      const begun = untilInDirectory(disk, () => existsSync(`${output}.part`) && statSync(`${output}.part`).size > 0, answering.signal);
      begun.then(() => {
        const filler = join(disk, 'filler');
        for (let i = 0; freeIn(disk) > 0 && i < 100; i++) {
          try {
            writeFileSync(filler, Buffer.alloc(MiB), { flag: 'a' });
          } catch {
            break;
          }
        }
        endless(response, randomBytes(64 * 1024));
      }, () => {});
    });
    const result = await plain(env);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/cannot write .*a\.tar\.gz\.part: no space left on the device/);
    expect(result.stderr).toMatch(/hint: free some space .*; what was downloaded so far is kept for resuming/);
    expect(existsSync(output)).toBe(false);
    expect(statSync(`${output}.part`).size).toBeGreaterThan(0);
  });
});
