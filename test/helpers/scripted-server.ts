import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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
  /** Handlers for the next requests, in order; the last one repeats. */
  script(...handlers: Handler[]): void;
  close(): Promise<void>;
}

/** A real node:http server on 127.0.0.1 whose answers a test scripts one request at a time. */
export async function startScriptedServer(...handlers: Handler[]): Promise<ScriptedServer> {
  let queue = [...handlers];
  const requests: RecordedRequest[] = [];
  const server = createServer((raw, response) => {
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
      if (!handler) {
        response.writeHead(599).end('no handler scripted');
        return;
      }
      handler(request, response, raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
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
