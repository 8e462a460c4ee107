import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Pool } from 'undici';
import { describe, expect, it } from 'vitest';
import { buildDelivery } from '../../src/webhook/delivery.js';
import { sign } from '../../src/webhook/signature.js';
import { listen } from '../helpers/listener.js';

// Bad input against `webhook listen --secret --save`: a fuzz run with a fixed seed and a load run.
// The receiver's memory under load is measured in bench/receiver.js, where figures belong.

const SECRET = 'fuzz-secret';

type Case = {
  kind: string;
  id: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Expected: 'ok' (2xx and saved once) or a 4xx status. */
  expect: 'ok' | number;
  slow?: boolean;
};

/** A payload is an object; what it holds may nest as deep as the sender likes. */
function deepJson(depth: number): string {
  return `{"deep":${'['.repeat(depth)}${']'.repeat(depth)}}`;
}

const caseArbitrary = fc
  .record({
    kind: fc.constantFrom('valid-json', 'valid-form', 'slow', 'truncated', 'wrong-signature', 'no-signature', 'flipped-byte', 'bad-utf8', 'deep', 'huge-header', 'content-type', 'form-without-payload', 'not-json'),
    payload: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 }),
    action: fc.constantFrom('opened', 'closed', 'created'),
    cut: fc.nat(),
    depth: fc.integer({ min: 1, max: 20_000 }),
  })
  .map(({ kind, payload, action, cut, depth }): Case => {
    const contentType = kind === 'valid-form' || kind === 'form-without-payload' ? 'form' : 'json';
    const good = buildDelivery({ event: 'issues', payload: { ...payload, action, issue: {} }, contentType, secret: SECRET });
    const resign = (body: Buffer, extra: Record<string, string> = {}) => ({
      ...good.headers,
      'content-length': String(body.length),
      'x-hub-signature-256': sign(body, SECRET),
      'x-hub-signature': sign(body, SECRET, 'sha1'),
      ...extra,
    });
    const base = { kind, id: good.id };
    switch (kind) {
      case 'valid-json':
      case 'valid-form':
        return { ...base, headers: good.headers, body: good.body, expect: 'ok' };
      case 'slow':
        return { ...base, headers: good.headers, body: good.body, expect: 'ok', slow: true };
      case 'truncated': {
        const body = good.body.subarray(0, cut % Math.max(1, good.body.length));
        return { ...base, headers: { ...good.headers, 'content-length': String(body.length) }, body, expect: 401 };
      }
      case 'wrong-signature':
        return { ...base, headers: { ...good.headers, 'x-hub-signature-256': sign(good.body, 'not-the-secret') }, body: good.body, expect: 401 };
      case 'no-signature': {
        const { 'x-hub-signature-256': _a, 'x-hub-signature': _b, ...headers } = good.headers;
        return { ...base, headers, body: good.body, expect: 401 };
      }
      case 'flipped-byte': {
        const body = Buffer.from(good.body);
        const at = cut % body.length;
        body[at] = (body[at] as number) ^ 0x01;
        return { ...base, headers: good.headers, body, expect: 401 };
      }
      case 'bad-utf8': {
        const body = Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]);
        return { ...base, headers: resign(body), body, expect: 400 };
      }
      case 'deep': {
        const body = Buffer.from(deepJson(depth));
        let parses = true;
        try {
          JSON.parse(body.toString());
        } catch {
          parses = false;
        }
        return { ...base, headers: resign(body), body, expect: parses ? 'ok' : 400 };
      }
      case 'huge-header':
        return { ...base, headers: { ...good.headers, 'x-padding': 'x'.repeat(20_000) }, body: good.body, expect: 431 };
      case 'content-type':
        return { ...base, headers: resign(good.body, { 'content-type': 'text/xml' }), body: good.body, expect: 415 };
      case 'form-without-payload': {
        const body = Buffer.from('data=%7B%7D');
        return { ...base, headers: resign(body), body, expect: 400 };
      }
      default: {
        const body = Buffer.from('{"action": opened}');
        return { ...base, headers: resign(body), body, expect: 400 };
      }
    }
  });

/**
 * Sends a case; the slow sender trickles its body in pieces, each written once the one before is
 * flushed and the event loop has turned, so the receiver (in this process) reads it on its own.
 */
function send(url: string, item: Case): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: item.headers }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    req.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? resolve(-1) : reject(error)));
    if (!item.slow) return req.end(item.body);
    const pieces = Math.min(5, item.body.length);
    const size = Math.ceil(item.body.length / pieces);
    let index = 0;
    const next = () => {
      if (index * size >= item.body.length) return req.end();
      req.write(item.body.subarray(index * size, ++index * size), () => setImmediate(next));
    };
    next();
  });
}

describe('receiver under bad input', () => {
  it('never crashes: every invalid delivery gets a 4xx, every valid one a 2xx and exactly one saved file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-fuzz-'));
    const listener = await listen(['--secret', SECRET, '--save', dir]);
    const cases = fc.sample(caseArbitrary, { numRuns: 400, seed: 4242 });
    // Interleave redeliveries of valid ones: they must not be saved twice.
    const replays = cases.filter((c) => c.expect === 'ok').slice(0, 20);
    const all = [...cases, ...replays];
    const statuses = new Array<number>(all.length);
    // Eight senders at a time, each taking the next case as it finishes: a slow sender holds up its
    // own lane only, not a whole batch.
    let next = 0;
    const lane = async () => {
      while (next < all.length) {
        const index = next++;
        statuses[index] = await send(listener.url, all[index] as Case);
      }
    };
    await Promise.all(Array.from({ length: 8 }, lane));
    // Over 25 MB, declared and streamed without a length.
    const big = Buffer.alloc(26 * 1024 * 1024, 0x20);
    // Declared: answered 413 from the header alone (the rest is never sent, as the receiver never reads it).
    const oversize = await new Promise<string>((resolve) => {
      const socket = connect(Number(new URL(listener.url).port), '127.0.0.1', () => {
        socket.write(`POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${big.length}\r\n\r\n{"a":`);
      });
      let text = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => {
        text += chunk;
      });
      socket.on('close', () => resolve(text));
    });
    expect(oversize).toMatch(/^HTTP\/1\.1 413/);
    const streamed = await send(listener.url, {
      kind: 'chunked',
      id: 'x',
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      body: big,
      expect: 413,
    });
    expect([413, -1]).toContain(streamed);

    all.forEach((item, index) => {
      const status = statuses[index] as number;
      if (item.expect === 'ok') expect(status, item.kind).toBe(200);
      else expect(status === item.expect || (item.kind === 'huge-header' && status === -1), `${item.kind}: ${status}`).toBe(true);
    });
    const valid = new Set(cases.filter((c) => c.expect === 'ok').map((c) => c.id));
    expect(readdirSync(dir).sort()).toEqual([...valid].map((id) => `${id}.http`).sort());
    expect(await listener.stop()).toBe(130);
    expect(listener.stderr()).not.toMatch(/unexpected error|TypeError|RangeError/);
  }, 120_000);

  it('loses and duplicates nothing under 2,000 deliveries from 50 connections', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-load-'));
    // Enough for every connection to send forty while the others do; throughput is bench/receiver.js's.
    const total = 2_000;
    // Spawned: 50 connections' worth of clients and the receiver would otherwise share one thread.
    const listener = await listen(['--secret', SECRET, '--save', dir, '--quiet', '--max-deliveries', String(total)], { spawn: true });
    const pool = new Pool(new URL(listener.url).origin, { connections: 50, pipelining: 1 });
    const ids = new Set<string>();
    let next = 0;
    const failures: number[] = [];
    const worker = async () => {
      while (next < total) {
        const n = next++;
        const delivery = buildDelivery({ event: 'push', payload: { ref: `refs/heads/b${n}`, n }, contentType: 'json', secret: SECRET });
        ids.add(delivery.id);
        const response = await pool.request({ path: '/', method: 'POST', headers: delivery.headers, body: delivery.body });
        await response.body.dump();
        if (response.statusCode !== 200) failures.push(response.statusCode);
      }
    };
    await Promise.all(Array.from({ length: 50 }, worker));
    await pool.close();
    expect(await listener.exited).toBe(0);
    expect(failures).toEqual([]);
    expect(ids.size).toBe(total);
    const saved = readdirSync(dir);
    expect(saved).toHaveLength(total);
    expect(new Set(saved.map((name) => name.replace(/\.http$/, '')))).toEqual(ids);
    expect(listener.lines).toHaveLength(total);
    expect(new Set(listener.lines.map((l) => l.delivery)).size).toBe(total);
  }, 120_000);
});

describe('a receiver ended at once (a second Ctrl-C) while saving', () => {
  it('leaves no temporary file behind', () => {
    // A real process that exits while a save is being written, as the second Ctrl-C makes it.
    const dir = mkdtempSync(join(tmpdir(), 'svc-exit-save-'));
    const store = new URL('../../dist/webhook/store.js', import.meta.url).href;
    const script = `
      import { readdirSync } from 'node:fs';
      import { openStore } from ${JSON.stringify(store)};
      const store = await openStore(${JSON.stringify(dir)});
      const delivery = { id: 'big', receivedAt: 'now', sequence: 1, method: 'POST', path: '/', rawHeaders: () => [], rawBody: Buffer.alloc(64 * 1024 * 1024, 0x61) };
      store.save(delivery).catch(() => {});
      const exitOnceWriting = () => (readdirSync(${JSON.stringify(dir)}).some((name) => name.endsWith('.tmp')) ? process.exit(130) : setImmediate(exitOnceWriting));
      exitOnceWriting();
    `;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(130);
    expect(readdirSync(dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });
});
