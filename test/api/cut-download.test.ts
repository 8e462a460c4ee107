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

/** Writes `TOTAL` bytes in writes of `size`, each on its own turn of the loop, then drops the connection. */
function sendThenCut(size: number) {
  return (_request: unknown, response: ServerResponse) => {
    response.writeHead(200, { etag: '"A"', 'accept-ranges': 'bytes', 'content-length': 2 * TOTAL });
    let sent = 0;
    const next = () => {
      const bytes = Math.min(size, TOTAL - sent);
      sent += bytes;
      response.write(Buffer.alloc(bytes, 7), () => setTimeout(sent < TOTAL ? next : () => response.socket?.destroy(), 1));
    };
    next();
  };
}

describe('a cut download', () => {
  it.each([
    ['in one write', TOTAL, 'HTTPS'],
    ['in writes of 1,000 bytes', 1_000, 'HTTPS'],
    ['in one write', TOTAL, 'plain HTTP'],
    ['in writes of 1,000 bytes', 1_000, 'plain HTTP'],
  ])('hands a slow consumer every byte sent before the cut (%s, %s)', async (_name, size, transport) => {
    const authority = sharedAuthority();
    const storage = transport === 'HTTPS' ? await tlsServer(loopbackCertificate(authority), sendThenCut(size)) : await server(sendThenCut(size));
    const trust = transport === 'HTTPS' ? { certificates: [authority.certificate] } : undefined;
    const response = await client(storage.url, { trust }).openDownload(new URL(`${storage.url}/archive.tar.gz`), {}, () => new ResponseBody());
    expect(response.status).toBe(200);
    let received = 0;
    const read = response.body.readInto(async (chunk) => {
      received += chunk.length;
      // A disk that takes its time.
      await new Promise((resolve) => setTimeout(resolve, 5));
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
