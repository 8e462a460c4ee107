import { createHash } from 'node:crypto';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { ServiceErrorBody } from '../api/types.js';

/** An answer other than success; thrown by route handlers and sent by the server's catch. */
export class HttpFailure extends Error {
  readonly status: number;
  readonly body: ServiceErrorBody;
  readonly headers: Record<string, string>;
  constructor(status: number, body: ServiceErrorBody, headers: Record<string, string> = {}) {
    super(body.message);
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

export const notFound = () => new HttpFailure(404, { message: 'Not Found' });

/**
 * The body of an error answer: `message`, `errors` when there are some, `documentation_url` (which
 * the published validation-error schema requires) and `status`, as the published basic-error
 * shape has them. The service's own body shape is not published (docs/sandbox.md#where-the-sandbox-decides).
 */
export function errorBody(failure: HttpFailure, method: string, pathname: string): ServiceErrorBody & { status: string } {
  return {
    ...failure.body,
    documentation_url: failure.body.documentation_url ?? documentationUrl(method, pathname),
    status: String(failure.status),
  };
}

/** The docs/service.md section of the endpoint a request was for. */
function documentationUrl(method: string, pathname: string): string {
  const parts = pathname.split('/').filter(Boolean);
  let anchor = 'endpoints';
  if (parts[0] === '_sandbox') return 'docs/sandbox.md';
  if (parts[0] === 'repos') anchor = 'repository-dispatch';
  else if (parts[0] === 'orgs' && parts[2] === 'migrations') {
    if (parts.length === 3) anchor = method === 'POST' ? 'start-migration' : 'list-migrations';
    else if (parts.length === 4) anchor = 'migration-status';
    else if (parts[4] === 'archive') anchor = method === 'DELETE' ? 'delete-archive' : 'download-archive';
    else if (parts[4] === 'repos') anchor = 'unlock-repository';
    else if (parts[4] === 'repositories') anchor = 'migration-repositories';
  }
  return `docs/service.md#${anchor}`;
}

/** One page of `all` as `per_page` and `page` ask, with the `Link` header of the published list operations. */
export function paginate<T>(url: URL, all: T[]): { items: T[]; links: Record<string, string> } {
  // docs/service.md#limits gives no error status for a bad value, so 0, -5 and "abc" all mean the default.
  const perPage = Math.min(100, wholeAbove0(url.searchParams.get('per_page')) ?? 30);
  const page = wholeAbove0(url.searchParams.get('page')) ?? 1;
  const last = Math.max(1, Math.ceil(all.length / perPage));
  const items = all.slice((page - 1) * perPage, page * perPage);
  const link = (target: number, rel: string) => {
    const next = new URL(url);
    next.searchParams.set('per_page', String(perPage));
    next.searchParams.set('page', String(target));
    return `<${next.toString()}>; rel="${rel}"`;
  };
  const parts: string[] = [];
  if (page < last) parts.push(link(page + 1, 'next'), link(last, 'last'));
  if (page > 1) parts.push(link(1, 'first'), link(Math.min(page - 1, last), 'prev'));
  return { items, links: parts.length > 0 ? { link: parts.join(', ') } : {} };
}

/** A query value that is a whole number above 0, or undefined for anything else (absent, 0, -5, "abc"). */
function wholeAbove0(value: string | null): number | undefined {
  return value !== null && /^\d+$/.test(value) && Number(value) > 0 ? Number(value) : undefined;
}

/**
 * Sends a JSON answer. With `conditional` (a GET of a resource), a 200 carries a weak ETag and an
 * `If-None-Match` that matches it is answered 304, after `onNotModified` (which refunds the quota).
 */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  conditional?: { request: IncomingMessage; onNotModified: () => void },
): void {
  const text = JSON.stringify(body);
  const etag = `W/"${createHash('sha1').update(text).digest('hex')}"`;
  if (conditional && status === 200) {
    if (conditional.request.headers['if-none-match'] === etag) {
      conditional.onNotModified();
      response.writeHead(304, { etag, ...headers }).end();
      return;
    }
    headers = { ...headers, etag };
  }
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'x-service-media-type': 'service.v3; format=json',
    ...headers,
  });
  response.end(text);
}

/**
 * Makes the answer under way stop half-way through its body: its headers and the first half are
 * sent, then the connection is closed (the `cutAnswerNext` fault).
 */
export function cutHalfWay(response: ServerResponse): void {
  const end = (body?: string | Buffer) => {
    const bytes = Buffer.from(body ?? '');
    response.write(bytes.subarray(0, bytes.length >> 1), () => response.socket?.destroy());
    return response;
  };
  Object.assign(response, { end });
}

/** `exclude` is an array: `exclude=a,b`, `exclude=a&exclude=b` and `exclude[]=a` (as most clients send arrays). */
export function excludes(url: URL): string[] {
  return [...url.searchParams.getAll('exclude'), ...url.searchParams.getAll('exclude[]')].flatMap((value) => value.split(','));
}

export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const MAX_BODY = 1 << 20;

/**
 * The request's body parsed as JSON, or a 400 "Problems parsing JSON". An empty body is `emptyAs`
 * when given (the admin API and dispatches take none as `{}`), otherwise malformed.
 */
export async function readJson(request: IncomingMessage, emptyAs?: unknown): Promise<unknown> {
  const text = await readBody(request);
  if (text === '' && emptyAs !== undefined) return emptyAs;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpFailure(400, { message: 'Problems parsing JSON' });
  }
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new HttpFailure(413, { message: 'Request body too large' });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** An origin of the sandbox: node:http's server, or node:https's with `tls`. */
export type Server = HttpServer | HttpsServer;

export function listen(server: Server, host: string, port: number, into: Server[]): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      into.push(server);
      const address = server.address();
      if (address === null || typeof address === 'string') return reject(new Error('the sandbox is not listening on a TCP port'));
      resolve(address.port);
    });
  });
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}
