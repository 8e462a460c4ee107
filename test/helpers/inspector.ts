import { existsSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { closeOnlyIdleConnections } from '../../src/support/keep-alive.js';
import { type Listener, listen } from './listener.js';
import { changes } from './until.js';

/** A listener started with `--inspect`, and its page's address as printed. */
export interface Inspected {
  listener: Listener;
  /** The address printed, token included. */
  page: string;
  /** The page's origin with a slash: `http://127.0.0.1:<port>/`. */
  base: string;
  token: string;
}

const PRINTED = /inspector on (http:\/\/127\.0\.0\.1:\d+\/\?token=([\w-]+))/;

/** `webhook listen --inspect …` in-process (--json, --port 0), once its page's address is printed. */
export async function listenInspected(args: string[]): Promise<Inspected> {
  const listener = await listen(['--inspect', ...args]);
  await listener.until(() => PRINTED.test(listener.stderr()));
  const printed = PRINTED.exec(listener.stderr()) as RegExpExecArray;
  return { listener, page: printed[1]!, base: new URL('/', printed[1]).href, token: printed[2]! };
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  text: string;
}

/** One request with exactly these headers (a Host or Origin of the test's choosing included). */
export function fetchRaw(
  url: string,
  options: { method?: string; headers?: Record<string, string | string[]>; body?: string | Buffer } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers ?? {} }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body, text: body.toString('utf8') });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The page's JSON API, as the page's script calls it (token in a header). */
export async function api(inspected: Inspected, path: string): Promise<any> {
  const answer = await fetchRaw(new URL(path, inspected.base).href, { headers: { 'x-inspector-token': inspected.token } });
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${answer.text}`);
  return JSON.parse(answer.text);
}

/** A replay asked for as the page asks: a POST of JSON from the page's own origin. */
export function askReplay(inspected: Inspected, n: number, ask: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const origin = inspected.base.slice(0, -1);
  return fetchRaw(new URL(`/api/deliveries/${n}/replay`, inspected.base).href, {
    method: 'POST',
    headers: { 'x-inspector-token': inspected.token, origin, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(ask),
  });
}

interface CapturedRequest {
  method: string;
  path: string;
  rawHeaders: string[];
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface Target {
  url: string;
  requests: CapturedRequest[];
  /** Resolves once `count` requests arrived. */
  received(count: number): Promise<CapturedRequest[]>;
  close(): Promise<void>;
}

/** A stub target on 127.0.0.1 that keeps each request's exact bytes and answers `answer`, 200 or what `status` says. */
export async function startTarget(answer = '{"thanks":true}', status: (body: Buffer) => number = () => 200): Promise<Target> {
  const requests: CapturedRequest[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      requests.push({ method: req.method ?? '', path: req.url ?? '', rawHeaders: req.rawHeaders, headers: req.headers, body });
      res.writeHead(status(body), { 'content-type': 'application/json' }).end(answer);
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) waiter.resolve();
    });
  });
  // The forwards come from a listener in this process: see src/support/keep-alive.ts.
  closeOnlyIdleConnections(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    requests,
    received: (count) =>
      new Promise((resolve) => {
        if (requests.length >= count) resolve(requests);
        else waiters.push({ count, resolve: () => resolve(requests) });
      }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Reads a server-sent event stream, collecting its events; `until(ready)` is looked at again at each. */
export function readEvents(url: string, headers: Record<string, string> = {}) {
  const events: { event: string; id?: string; data: any }[] = [];
  const { changed, until } = changes();
  let buffer = '';
  let stop = () => {};
  const opened = new Promise<number>((resolve, reject) => {
    const req = request(url, { headers }, (response) => {
      resolve(response.statusCode ?? 0);
      response.setEncoding('utf8').on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields: Record<string, string> = {};
          for (const line of block.split('\n')) {
            const colon = line.indexOf(':');
            if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
          }
          if (fields.data !== undefined) events.push({ event: fields.event ?? 'message', id: fields.id, data: JSON.parse(fields.data) });
        }
        changed();
      });
    });
    req.on('error', reject);
    req.end();
    stop = () => req.destroy();
  });
  return { events, opened, until, stop: () => stop() };
}

const CHROMIUMS = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/lib/chromium/chromium', '/usr/bin/google-chrome'];

/** Debian's Chromium (apt-get install chromium), if this machine has one. */
export function chromiumPath(): string | undefined {
  return CHROMIUMS.find((path) => existsSync(path));
}

/** Resolves once `probe` (an expression in the page) is true, looked at again at each change of its document. */
export async function untilPage(page: Page, probe: string): Promise<void> {
  await page.evaluate(`new Promise((resolve) => {
    const look = () => {
      if (!(${probe})) return;
      observer.disconnect();
      resolve();
    };
    const observer = new MutationObserver(look);
    observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
    look();
  })`);
}
