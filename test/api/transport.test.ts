import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { Writable } from 'node:stream';
import type * as Undici from 'undici';
import type { Dispatcher } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ResponseBody } from '../../src/api/response-body.js';
import { createConnector, loadUndiciParts } from '../../src/api/tuning.js';
import { request, stream, undici } from '../../src/api/undici.js';
import { type ScriptedServer, startScriptedServer } from '../helpers/scripted-server.js';

const require = createRequire(import.meta.url);
const servers: ScriptedServer[] = [];
const dispatchers: Dispatcher[] = [];

afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((dispatcher) => dispatcher.close()));
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function server(...handlers: Parameters<typeof startScriptedServer>): Promise<ScriptedServer> {
  const started = await startScriptedServer(...handlers);
  servers.push(started);
  return started;
}

/** An agent on our connector that records the size and the memory of every read its sockets hand over. */
function recordingAgent(): { agent: Dispatcher; reads: number[]; memory: Set<ArrayBufferLike> } {
  const reads: number[] = [];
  const memory = new Set<ArrayBufferLike>();
  const connect = createConnector(5_000);
  const agent = new undici.Agent({
    connect: (options, callback) =>
      connect(options, (error, socket) => {
        if (socket) {
          const push: Socket['push'] = socket.push.bind(socket);
          socket.push = (chunk: Buffer | null) => {
            if (chunk) {
              reads.push(chunk.length);
              memory.add(chunk.buffer);
            }
            return push(chunk);
          };
        }
        callback(...([error, socket] as Parameters<typeof callback>));
      }),
  });
  dispatchers.push(agent);
  return { agent, reads, memory };
}

/** Collects a body's chunks as undici hands them over, uncopied. */
function collect(chunks: Buffer[]): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      callback();
    },
  });
}

describe('the plain-HTTP connector', () => {
  it('reads more than 64 KiB at a time and delivers the body intact', async () => {
    const body = randomBytes(8 << 20);
    const api = await server((_request, response) => response.writeHead(200).end(body));
    const { agent, reads } = recordingAgent();
    const chunks: Buffer[] = [];
    await stream(new URL(`${api.url}/archive`), { method: 'GET', dispatcher: agent }, () => collect(chunks));

    const received = Buffer.concat(chunks);
    expect(createHash('sha256').update(received).digest('hex')).toBe(createHash('sha256').update(body).digest('hex'));
    // Node on its own never reads more than 64 KiB from a socket at once.
    expect(Math.max(...reads)).toBeGreaterThan(64 << 10);
    expect(Math.max(...reads)).toBeLessThanOrEqual(512 << 10);
  });

  it('never reads into a buffer whose bytes it already handed over', async () => {
    // Small answers on one kept-alive connection: each is read into the same buffer and copied out.
    // Every chunk is kept, uncopied, until the end: a reused buffer would have overwritten them.
    const api = await server((request, response) => response.writeHead(200, { 'x-n': request.url }).end(`answer to ${request.url}`.repeat(50)));
    const { agent } = recordingAgent();
    const answers: { n: number; chunks: Buffer[]; header: unknown }[] = [];
    for (let n = 0; n < 40; n++) {
      const chunks: Buffer[] = [];
      const { headers } = await new Promise<Dispatcher.ResponseData>((resolve, reject) => {
        stream(new URL(`${api.url}/${n}`), { method: 'GET', dispatcher: agent }, (data) => {
          resolve(data as Dispatcher.ResponseData);
          return collect(chunks);
        }).catch(reject);
      });
      answers.push({ n, chunks, header: headers['x-n'] });
    }
    for (const { n, chunks, header } of answers) {
      expect(Buffer.concat(chunks).toString()).toBe(`answer to /${n}`.repeat(50));
      expect(header).toBe(`/${n}`);
    }
  });
});

describe('reads given back by the download\'s writer (recycleRead)', () => {
  const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

  /** Downloads `path` into a ResponseBody whose consumer hashes each chunk synchronously, as the file writer does. */
  async function download(agent: Dispatcher, url: string): Promise<{ status: number; digest: string; header: unknown }> {
    let hash = createHash('sha256');
    let answer: { status: number; header: unknown } | undefined;
    await new Promise<void>((resolve, reject) => {
      stream(new URL(url), { method: 'GET', dispatcher: agent }, ({ statusCode, headers }) => {
        answer = { status: statusCode, header: headers['x-part'] };
        const body = new ResponseBody();
        body.readInto((chunk) => void hash.update(chunk)).then(resolve, reject);
        return body;
      }).catch(reject);
    });
    const digest = hash.digest('hex');
    hash = createHash('sha256');
    return { ...answer!, digest };
  }

  it('reads a long download into a handful of buffers, not a fresh one per read', async () => {
    // Without recycling, a 32 MiB download takes at least 64 buffers of 512 KiB, which V8 frees only
    // after tens of megabytes have piled up (docs/benchmarks.md, peak memory).
    const body = randomBytes(32 << 20);
    const api = await server((_request, response) => response.writeHead(200, { 'content-length': body.length }).end(body));
    const { agent, memory } = recordingAgent();
    const { digest } = await download(agent, `${api.url}/archive`);
    expect(digest).toBe(sha256(body));
    expect(memory.size).toBeLessThan(16);
  });

  it('keeps the bytes a slow writer still holds, and the headers of the next answer, intact', async () => {
    const parts = [randomBytes(6 << 20), randomBytes(5 << 20), randomBytes(3 << 20)];
    const api = await server((request, response) => {
      const part = parts[Number(request.url?.slice(1))]!;
      response.writeHead(200, { 'content-length': part.length, 'x-part': request.url }).end(part);
    });
    const { agent, memory } = recordingAgent();
    // A writer that answers with a promise keeps every chunk until the end: none may be read into again.
    const held: Buffer[] = [];
    await new Promise<void>((resolve, reject) => {
      stream(new URL(`${api.url}/0`), { method: 'GET', dispatcher: agent }, () => {
        const body = new ResponseBody();
        body.readInto(async (chunk) => void held.push(chunk)).then(resolve, reject);
        return body;
      }).catch(reject);
    });
    const recycled = memory.size;
    // Then on the same connection, answers read into recycled buffers, each checked whole.
    for (const n of [1, 2, 1]) {
      const { status, digest, header } = await download(agent, `${api.url}/${n}`);
      expect({ status, digest, header }).toEqual({ status: 200, digest: sha256(parts[n]!), header: `/${n}` });
    }
    expect(sha256(Buffer.concat(held))).toBe(sha256(parts[0]!));
    // The later answers took fewer new buffers than they had reads: recycling was on.
    expect(memory.size - recycled).toBeLessThan(12);
  });
});

describe('loading undici in parts', () => {
  it('falls back to the whole package when its files have moved, and still makes requests', async () => {
    const api = await server((_request, response) => response.writeHead(200).end('still here'));
    const parts = loadUndiciParts((id) => {
      if (id.startsWith('undici/lib/')) throw new Error(`Cannot find module '${id}'`);
      return require(id) as unknown;
    });
    const whole = require('undici') as typeof Undici;
    expect(parts.Agent).toBe(whole.Agent);
    expect(parts.loadEnvHttpProxyAgent()).toBe(whole.EnvHttpProxyAgent);

    const agent = new parts.Agent();
    dispatchers.push(agent);
    const response = await agent.request({ origin: api.url, path: '/', method: 'GET' });
    expect(await response.body.text()).toBe('still here');
  });

  it('request() without a dispatcher goes through an agent of its own', async () => {
    const api = await server((_request, response) => response.writeHead(200).end('ok'));
    const response = await request(new URL(`${api.url}/`), { method: 'GET' });
    expect(await response.body.text()).toBe('ok');
  });
});

describe('V8\'s baseline compiler only (tuneRuntime)', () => {
  // V8 in Node 24 reads its Wasm flags once, at start-up: set later, they change nothing, so there
  // the tuning has nothing to apply (docs/benchmarks.md, "Tuning that stays").
  const major = Number(process.versions.node.split('.')[0]);
  it.skipIf(major >= 24)(`keeps a hot WebAssembly function in Liftoff${major >= 24 ? ' (skipped: Node 24 takes Wasm flags at start-up only)' : ''}`, () => {
    // A hot function: without the flag V8 moves it to TurboFan (a test intrinsic tells which).
    const script = `
      const { tuneRuntime } = await import(${JSON.stringify(new URL('../../dist/api/tuning.js', import.meta.url).href)});
      if (process.argv[1] === 'tuned') tuneRuntime();
      const bytes = new Uint8Array([0,97,115,109,1,0,0,0,1,6,1,96,1,127,1,127,3,2,1,0,7,5,1,1,102,0,0,10,9,1,7,0,32,0,65,1,106,11]);
      const { f } = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
      for (let i = 0; i < 3e7; i++) f(i);
      process.stdout.write(String(eval('%IsLiftoffFunction(f)')));`;
    const run = (mode: string) =>
      execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script, mode], { encoding: 'utf8' });
    expect(run('plain')).toBe('false');
    expect(run('tuned')).toBe('true');
  });
});
