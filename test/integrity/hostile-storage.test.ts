import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/run-cli.js';

// Hostile or buggy archive storage, played by a stub on loopback that also answers the three API
// calls a download makes. Each case is one answer that used to leave a wrong archive behind.

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-hostile-'));
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

type StorageHandler = (request: IncomingMessage, response: ServerResponse, attempt: number) => void;

interface Stub {
  env: Record<string, string>;
  storage: { range?: string; ifRange?: string }[];
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

async function stub(storage: StorageHandler, api?: (request: IncomingMessage, response: ServerResponse) => boolean): Promise<Stub> {
  const seen: Stub['storage'] = [];
  let base = '';
  const server = createServer((request, response) => {
    const url = request.url ?? '/';
    if (api?.(request, response)) return;
    if (url.startsWith('/storage/')) {
      seen.push({ range: request.headers.range, ifRange: request.headers['if-range'] as string | undefined });
      storage(request, response, seen.length);
    } else if (url === '/orgs/acme/migrations/7/archive') {
      response.writeHead(302, { location: `${base}/storage/archive.tar.gz?signature=x` }).end();
    } else if (url.startsWith('/orgs/acme/migrations/7')) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          id: 7,
          guid: '0b989ba4-242f-11e5-81e1-c7b6966d2516',
          state: 'exported',
          updated_at: new Date().toISOString(),
          created_at: new Date().toISOString(),
        }),
      );
    } else response.writeHead(404).end();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { env: { SVC_BASE_URL: base, SVC_TOKEN: 't0k3n', SVC_ORG: 'acme' }, storage: seen };
}

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
