import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { closeOnlyIdleConnections } from '../../src/support/keep-alive.js';
import { loopbackCertificate, sharedAuthority } from './tls.js';

// A stub on loopback that answers the three API calls a download of migration 7 of `acme` makes
// and plays its archive storage, as a test scripts it: hostile or buggy storage, or an archive the
// test built. Over HTTPS, as storage is reached, its authority passed in SVC_CA_FILE. Its servers
// close after each test (test/helpers/cleanup.ts).

type StorageHandler = (request: IncomingMessage, response: ServerResponse, attempt: number) => void;

interface Stub {
  env: Record<string, string>;
  storage: { range?: string; ifRange?: string }[];
}

const servers: Server[] = [];

export async function closeStorageStubs(): Promise<void> {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
}

/**
 * `repositories` are migration 7's, as `GET …/repositories` lists them (owner/name): what its
 * archive is checked against.
 */
export async function startStorageStub(
  storage: StorageHandler,
  api?: (request: IncomingMessage, response: ServerResponse) => boolean,
  repositories: string[] = [],
): Promise<Stub> {
  const seen: Stub['storage'] = [];
  let base = '';
  const authority = sharedAuthority();
  const server = createServer(loopbackCertificate(authority), (request, response) => {
    const url = request.url ?? '/';
    if (api?.(request, response)) return;
    if (url.startsWith('/storage/')) {
      seen.push({ range: request.headers.range, ifRange: request.headers['if-range'] as string | undefined });
      storage(request, response, seen.length);
    } else if (url === '/orgs/acme/migrations/7/archive') {
      response.writeHead(302, { location: `${base}/storage/archive.tar.gz?signature=x` }).end();
    } else if (url.startsWith('/orgs/acme/migrations/7/repositories')) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(repositories.map((full_name) => ({ full_name, name: full_name.split('/')[1] }))));
    } else if (url.startsWith('/orgs/acme/migrations/7')) {
      response.writeHead(200, { 'content-type': 'application/json' });
      // Exported just now by the program's clock, which is the machine's here (no sandbox): an
      // older time would have it warn that the archive is about to be deleted.
      // eslint-disable-next-line no-restricted-syntax -- the service's "now", as the program under test reads it
      const now = new Date().toISOString();
      response.end(JSON.stringify({ id: 7, guid: '0b989ba4-242f-11e5-81e1-c7b6966d2516', state: 'exported', updated_at: now, created_at: now }));
    } else response.writeHead(404).end();
  });
  // The download runs in this process: see src/support/keep-alive.ts.
  closeOnlyIdleConnections(server);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { env: { SVC_BASE_URL: base, SVC_TOKEN: 't0k3n', SVC_ORG: 'acme', SVC_CA_FILE: authority.file }, storage: seen };
}
