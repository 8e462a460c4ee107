import { constants, createReadStream } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { extname, join, sep } from 'node:path';
import { isLoopbackHost } from '../../api/transport-policy.js';
import { CONTENT_SECURITY_POLICY } from '../../core/view/pages/layout.js';
import { closeOnlyIdleConnections } from '../../support/keep-alive.js';
import { withoutPort } from '../../webhook/receiver.js';

// `archive view --serve`: the site's directory on 127.0.0.1, as the inspector's page is served
// (node:http, loopback only, a Host of this machine's only). Only regular files under DIR, reached
// without a link, are served, never a listing; every answer carries the pages' policy. Of the
// archive's own files (files/…), images are served as images and anything else as a download: an
// attachment is never a page or a script of the site's origin.

const PAGE_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
};
const IMAGE_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
};

export interface SiteServer {
  url: string;
  close(): Promise<void>;
}

export async function serveSite(directory: string, port: number): Promise<SiteServer> {
  const root = await realpath(directory);
  const server = createServer((request, response) => {
    answer(root, request, response).catch(() => {
      if (!response.headersSent) send(response, 500, 'the file could not be read\n');
      else response.destroy();
    });
  });
  closeOnlyIdleConnections(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the site is not served on a TCP port');
  const closed = new Promise<void>((resolve) => server.once('close', resolve));
  return {
    url: `http://127.0.0.1:${address.port}/`,
    close: async () => {
      server.close();
      server.closeAllConnections();
      await closed;
    },
  };
}

async function answer(root: string, request: IncomingMessage, response: ServerResponse): Promise<void> {
  if (request.method !== 'GET' && request.method !== 'HEAD') return send(response, 405, 'only GET and HEAD\n', { allow: 'GET, HEAD' });
  // A page elsewhere cannot rebind its own name to 127.0.0.1 and read the site.
  if (!isLoopbackHost(withoutPort(request.headers.host ?? ''))) return send(response, 403, 'this site is served to this machine only: open it at 127.0.0.1\n');
  const parts = sitePathOf(request.url ?? '/');
  if (!parts) return send(response, 404, 'not found\n');
  const file = join(root, ...parts);
  const real = await realpath(file).catch(() => undefined);
  if (real !== file || !real.startsWith(root + sep)) return send(response, 404, 'not found\n');
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => undefined);
  if (!handle) return send(response, 404, 'not found\n');
  const info = await handle.stat();
  if (!info.isFile()) {
    await handle.close();
    return send(response, 404, 'not found\n');
  }
  const extension = extname(real).toLowerCase();
  const ownFile = parts[0] === 'files';
  const type = ownFile ? IMAGE_TYPES[extension] : PAGE_TYPES[extension];
  response.writeHead(200, {
    ...HEADERS,
    'content-type': type ?? 'application/octet-stream',
    'content-length': info.size,
    ...(type ? {} : { 'content-disposition': 'attachment' }),
  });
  if (request.method === 'HEAD') {
    await handle.close();
    return void response.end();
  }
  createReadStream('', { fd: handle }).pipe(response);
}

/** The path's parts, decoded, `index.html` for a directory's; undefined for `..`, `.`, an empty part, NUL or a backslash. */
function sitePathOf(target: string): string[] | undefined {
  let path: string;
  try {
    path = decodeURIComponent(new URL(target, 'http://127.0.0.1').pathname);
  } catch {
    return undefined;
  }
  const parts = path.split('/').slice(1);
  if (parts.at(-1) === '') parts[parts.length - 1] = 'index.html';
  if (parts.some((part) => part === '' || part === '.' || part === '..' || part.includes('\0') || part.includes('\\'))) return undefined;
  return parts;
}

const HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

function send(response: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { ...HEADERS, ...headers, 'content-type': 'text/plain; charset=utf-8' });
  response.end(body);
}
