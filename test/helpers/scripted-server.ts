import { createServer, type IncomingHttpHeaders, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Issued } from '../../src/sandbox/certificates.js';
import { closeOnlyIdleConnections } from '../../src/support/keep-alive.js';
import { changes } from './until.js';

interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export type Handler = (request: RecordedRequest, response: ServerResponse, raw: IncomingMessage) => void;

export interface ScriptedServer {
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Connections accepted (with TLS: handshakes that completed or failed). */
  connections: number;
  /** Resolves once `ready()` holds, looked at again after each request is handed to its handler. */
  until(ready: () => boolean): Promise<void>;
  /** Handlers for the next requests, in order; the last one repeats. */
  script(...handlers: Handler[]): void;
  close(): Promise<void>;
}

/** A real node:http server on 127.0.0.1 whose answers a test scripts one request at a time. */
export function startScriptedServer(...handlers: Handler[]): Promise<ScriptedServer> {
  return scripted(undefined, handlers);
}

/** The same over HTTPS, serving `certificate` (made with test/helpers/tls.ts). */
export function startScriptedTlsServer(certificate: Issued, ...handlers: Handler[]): Promise<ScriptedServer> {
  return scripted(certificate, handlers);
}

async function scripted(certificate: Issued | undefined, handlers: Handler[]): Promise<ScriptedServer> {
  let queue = [...handlers];
  const requests: RecordedRequest[] = [];
  const { changed, until } = changes();
  const serve = (listener: RequestListener) => (certificate ? createTlsServer(certificate, listener) : createServer(listener));
  const server = serve((raw, response) => {
    const chunks: Buffer[] = [];
    raw.on('data', (chunk: Buffer) => chunks.push(chunk));
    raw.on('end', () => {
      const request: RecordedRequest = {
        method: raw.method ?? '',
        url: raw.url ?? '',
        headers: raw.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(request);
      const handler = queue.length > 1 ? queue.shift() : queue[0];
      if (handler) handler(request, response, raw);
      else response.writeHead(599).end('no handler scripted');
      changed();
    });
  });
  // The program under test often runs in this process: busy past the keep-alive timeout, it must
  // not find the connection it reuses reset under it (src/support/keep-alive.ts).
  closeOnlyIdleConnections(server);
  const counted = { connections: 0 };
  server.on(certificate ? 'secureConnection' : 'connection', () => counted.connections++);
  if (certificate) server.on('tlsClientError', () => counted.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${certificate ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    requests,
    get connections() {
      return counted.connections;
    },
    until,
    script(...next) {
      queue = [...next];
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Handler =>
    (_request, response) => {
      response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
      response.end(JSON.stringify(body));
    };

export const empty =
  (status: number, headers: Record<string, string> = {}): Handler =>
    (_request, response) => {
      response.writeHead(status, headers).end();
    };

/** Drops the connection without answering (the request did reach the server). */
export const hangUp: Handler = (_request, response) => {
  response.socket?.destroy();
};
