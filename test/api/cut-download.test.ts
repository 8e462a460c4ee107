import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ResponseBody } from '../../src/api/response-body.js';
import { client, server, tlsServer } from '../helpers/api-client.js';
import { loopbackCertificate, sharedAuthority } from '../helpers/tls.js';

// A download cut by storage: every byte that arrived before the cut reaches the consumer, however
// slowly it consumes, because the resume asks for the byte after the last one kept. A body stream
// that holds a chunk it has not handed over loses it when undici destroys the stream at the cut
// (as the 64 KiB default high-water mark of Node 22 and later did with a whole first read).

const TOTAL = 100_000;

/**
 * Writes `TOTAL` bytes in writes of `size`, each once the one before has left for the socket, then
 * drops the connection; `cut` resolves once it is gone.
 */
function sendThenCut(size: number) {
  let gone = () => {};
  const cut = new Promise<void>((resolve) => (gone = resolve));
  const handler = (_request: unknown, response: ServerResponse) => {
    response.writeHead(200, { etag: '"A"', 'accept-ranges': 'bytes', 'content-length': 2 * TOTAL });
    let sent = 0;
    const next = () => {
      const bytes = Math.min(size, TOTAL - sent);
      sent += bytes;
      response.write(Buffer.alloc(bytes, 7), () => {
        if (sent < TOTAL) return next();
        response.socket?.once('close', gone).destroy();
      });
    };
    next();
  };
  return { handler, cut };
}

describe('a cut download', () => {
  it.each([
    ['in one write', 'HTTPS', TOTAL],
    ['in writes of 1,000 bytes', 'HTTPS', 1_000],
    ['in one write', 'plain HTTP', TOTAL],
    ['in writes of 1,000 bytes', 'plain HTTP', 1_000],
  ])('hands a slow consumer every byte sent before the cut (%s, %s)', async (_name, transport, size) => {
    const authority = sharedAuthority();
    const { handler, cut } = sendThenCut(size);
    const storage = transport === 'HTTPS' ? await tlsServer(loopbackCertificate(authority), handler) : await server(handler);
    const trust = transport === 'HTTPS' ? { certificates: [authority.certificate] } : undefined;
    const response = await client(storage.url, { trust }).openDownload(new URL(`${storage.url}/archive.tar.gz`), {}, () => new ResponseBody());
    expect(response.status).toBe(200);
    let received = 0;
    let held = false;
    const read = response.body.readInto(async (chunk) => {
      received += chunk.length;
      // A disk that takes its time: the first chunk until the connection is gone, so that all the
      // rest arrives, and the cut, while it is written; each other chunk until the loop's next turn.
      if (held) return new Promise((resolve) => setImmediate(resolve));
      held = true;
      await cut;
    });
    await expect(read).rejects.toThrow();
    expect(received).toBe(TOTAL);
  });

  it('pushes back on every chunk, whatever Node\'s default high-water mark', () => {
    const body = new ResponseBody();
    expect(body.write(Buffer.alloc(1))).toBe(false);
    body.destroy();
  });
});
