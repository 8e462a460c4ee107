import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeOnlyIdleConnections } from '../../src/support/keep-alive.js';

/**
 * A webhook's target for the sandbox to deliver to, on 127.0.0.1: keeps each delivery's headers and
 * body and answers 204. The sandbox runs in the test's process, whose own work (building a 25 MB
 * payload, checking schemas) keeps it busy for seconds under load: a delivery that arrives meanwhile
 * on a kept-alive connection is served, not reset (src/support/keep-alive.ts).
 */
export async function hookTarget() {
  const deliveries: { headers: IncomingHttpHeaders; body: Buffer }[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      deliveries.push({ headers: request.headers, body: Buffer.concat(chunks) });
      response.writeHead(204).end();
    });
  });
  closeOnlyIdleConnections(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { url, deliveries, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
