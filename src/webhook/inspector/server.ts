import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isLoopbackHost } from '../../api/transport-policy.js';
import { CliError, ExitCode } from '../../errors.js';
import { closeOnlyIdleConnections } from '../../support/keep-alive.js';
import { PACKAGE_ROOT } from '../../support/package-root.js';
import { withoutPort } from '../receiver.js';
import { type DeliveryLog, type InspectedDelivery } from './log.js';
import { detailOf, droppedText, gapText, listEntry, type PageSource, renderPage } from './page.js';
import { type FailedReplayGuard, type ReplayTargets, replayAsked, replayFailed } from './replay.js';

// The inspector's HTTP server: node:http on 127.0.0.1 only, as the receiver's (src/webhook/http-server.ts)
// with bounds of its own. Every request must carry the token printed at start (in its query, or the
// page's X-Inspector-Token header), compared in constant time, and name this machine in its Host
// (a page elsewhere cannot rebind its name to 127.0.0.1); a replay is a POST from this page's own
// origin. Deliveries reach the page as server-sent events, written after the listener's turn.

export interface InspectorOptions {
  port: number;
  log: DeliveryLog;
  source: PageSource;
  targets: ReplayTargets;
}

export interface Inspector {
  /** The page's address, token included: printed once, at start. */
  url: string;
  port: number;
  /** Ends the replays under way, and resolves once each outcome was told; again, the same promise. */
  close(): Promise<void>;
}

/** The page's script and stylesheet, shipped beside the code (package.json `files`). */
const ASSETS = {
  '/static/inspector.js': { file: 'web/inspector.js', type: 'text/javascript; charset=utf-8' },
  '/static/inspector.css': { file: 'web/inspector.css', type: 'text/css; charset=utf-8' },
} as const;

/** Drawn here, not fetched from anywhere: the page loads nothing from the network. */
const ICON = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="6" fill="#3b6fd8"/></svg>';

const SECURITY_HEADERS = {
  'content-security-policy': 'default-src \'self\'; base-uri \'none\'; form-action \'none\'; frame-ancestors \'none\'; object-src \'none\'',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** Connections open at once: a page holds two or three, each tab one more for its events. */
const MAX_CONNECTIONS = 64;
/** Event streams open at once; more are refused (503) until one closes. */
const MAX_STREAMS = 16;
/** Bytes of events a stream may leave unread: beyond, it is closed, and the browser reconnects from where it was. */
const MAX_UNREAD = 8 * 1024 * 1024;
/** A comment on every stream this often: a connection that died is noticed. */
const HEARTBEAT_MS = 15_000;
/**
 * How long changes gather before they go down the streams. A receiver under a burst would
 * otherwise serialise every delivery and write once per turn; gathered, a delivery added and
 * dropped within the interval (more than `keep` arriving in it) is never serialised, and each
 * stream gets a few writes a second. Well within the second the page promises.
 */
const FLUSH_MS = 100;
/** The body of a replay request, at most. */
const MAX_REQUEST_BODY = 16 * 1024;

export async function startInspector(options: InspectorOptions): Promise<Inspector> {
  const { log, source } = options;
  const assets = loadAssets();
  const token = randomBytes(32).toString('base64url');
  const tokenDigest = digest(token);
  const streams = new Set<ServerResponse>();
  const replays = new AbortController();
  let inFlight = 0;
  let replayingFailed = false;
  /** Replays under way: closing waits for them, so each outcome is told (and journaled) before the page is gone. */
  const running = new Set<Promise<void>>();
  const tracked = (replay: Promise<void>) => {
    running.add(replay);
    return replay.finally(() => running.delete(replay));
  };

  const server = createServer(
    {
      maxHeaderSize: 16 * 1024,
      headersTimeout: 30_000,
      requestTimeout: 60_000,
      keepAliveTimeout: 5_000,
      noDelay: true,
    },
    (request, response) => {
      handle(request, response).catch((error: unknown) => {
        if (!response.headersSent) send(response, 500, 'application/json', JSON.stringify({ error: (error as Error)?.message ?? String(error) }));
        else response.destroy();
      });
    },
  );
  server.maxConnections = MAX_CONNECTIONS;
  closeOnlyIdleConnections(server);

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const target = request.url ?? '';
    const hosts = request.rawHeaders.filter((_, i) => i % 2 === 0 && request.rawHeaders[i]?.toLowerCase() === 'host').length;
    const host = request.headers.host ?? '';
    if (!target.startsWith('/') || hosts !== 1) return void send(response, 400, 'text/plain', 'bad request\n');
    if (!isLoopbackHost(withoutPort(host))) return void send(response, 403, 'text/plain', 'this page is served to this machine only: open it at 127.0.0.1 or localhost\n');
    const url = new URL(target, 'http://127.0.0.1');
    const given = url.searchParams.get('token') ?? request.headers['x-inspector-token'];
    if (typeof given !== 'string' || !timingSafeEqual(digest(given), tokenDigest)) {
      return void send(response, 403, 'text/plain', 'forbidden: open the address with its token, as printed when the inspector started\n');
    }
    const { pathname } = url;
    const method = request.method ?? '';
    const replay = /^\/api\/deliveries\/(\d{1,15})\/replay$/.exec(pathname);
    if (replay || pathname === '/api/replay-failed') {
      if (method !== 'POST') return void send(response, 405, 'text/plain', 'replay is a POST\n', { allow: 'POST' });
      if (!fromThisPage(request, host)) {
        return void send(response, 403, 'application/json', JSON.stringify({ error: 'a replay is asked for by this page only (same origin)' }));
      }
      return tracked(replay ? replayRoute(request, response, Number(replay[1])) : replayFailedRoute(response));
    }
    if (method !== 'GET' && method !== 'HEAD') return void send(response, 405, 'text/plain', 'this page is read with GET\n', { allow: 'GET, HEAD' });
    if (pathname === '/') return void send(response, 200, 'text/html; charset=utf-8', renderPage(log, source, token));
    if (pathname === '/static/icon.svg') return void send(response, 200, 'image/svg+xml', ICON);
    const asset = assets.get(pathname);
    if (asset) return void send(response, 200, asset.type, asset.content);
    if (pathname === '/events') {
      if (method === 'HEAD') return void send(response, 200, 'text/event-stream; charset=utf-8', '');
      return void openStream(request, response, Number(url.searchParams.get('after') ?? 0));
    }
    if (pathname === '/api/target') {
      // The URL typed in the page as Replay reads it: "Copy as curl" writes the same.
      try {
        return void send(response, 200, 'application/json', JSON.stringify({ url: options.targets.parseUrl((url.searchParams.get('url') ?? '').trim()) }));
      } catch (error) {
        return void send(response, 400, 'application/json', JSON.stringify({ error: (error as Error).message }));
      }
    }
    if (pathname === '/api/deliveries') {
      const list = { records: log.list().map(listEntry), dropped: log.dropped, oldest: log.oldest(), text: droppedText(log, source) };
      return void send(response, 200, 'application/json', JSON.stringify(list));
    }
    const one = /^\/api\/deliveries\/(\d{1,15})(\/body)?$/.exec(pathname);
    const record = one ? log.get(Number(one[1])) : undefined;
    if (!one) return void send(response, 404, 'text/plain', 'not found\n');
    if (!record) return void send(response, 404, 'application/json', JSON.stringify({ error: 'this delivery is no longer in the list' }));
    const loaded = await record.load().catch((error: unknown) => error as Error);
    if (loaded instanceof Error) return void send(response, 410, 'application/json', JSON.stringify({ error: `cannot read it again: ${loaded.message}` }));
    if (one[2]) {
      if (!loaded.body) return void send(response, 404, 'application/json', JSON.stringify({ error: 'the body was not read: the request was refused before it' }));
      return void send(response, 200, 'application/octet-stream', loaded.body, { 'content-disposition': `attachment; filename="${bodyFileName(record)}"` });
    }
    send(response, 200, 'application/json', JSON.stringify(await detailOf(record)));
  }

  async function replayFailedRoute(response: ServerResponse): Promise<void> {
    const forward = options.targets.forward;
    if (!forward) return void send(response, 400, 'application/json', JSON.stringify({ error: 'there is no forward target: start `webhook listen` with --forward-to' }));
    if (replayingFailed) return void send(response, 409, 'application/json', JSON.stringify({ error: 'the failed deliveries are being replayed already' }));
    replayingFailed = true;
    let guard: FailedReplayGuard | undefined;
    try {
      guard = await options.targets.guardFailedReplay?.();
    } catch (error) {
      replayingFailed = false;
      return void send(response, 409, 'application/json', JSON.stringify({ error: (error as Error)?.message ?? String(error) }));
    }
    // Its progress as it goes: a JSON line per delivery sent, then one with the outcome.
    response.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'application/x-ndjson' });
    try {
      const write = (line: unknown) => response.write(`${JSON.stringify(line)}\n`);
      await replayFailed(log.list(), options.targets, replays.signal, write, (record) => log.updated(record), guard);
    } finally {
      replayingFailed = false;
      await guard?.release().catch(() => {});
      response.end();
    }
  }

  async function replayRoute(request: IncomingMessage, response: ServerResponse, n: number): Promise<void> {
    if (!/^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '')) {
      return void send(response, 415, 'application/json', JSON.stringify({ error: 'a replay request is JSON' }));
    }
    const body = await readBody(request, MAX_REQUEST_BODY);
    if (body === undefined) return void send(response, 413, 'application/json', JSON.stringify({ error: 'the request is too large' }), { connection: 'close' });
    const record = log.get(n);
    if (!record) return void send(response, 404, 'application/json', JSON.stringify({ error: 'this delivery is no longer in the list' }));
    if (inFlight >= 4) return void send(response, 429, 'application/json', JSON.stringify({ error: 'four replays are under way; try again once one ends' }));
    inFlight++;
    try {
      const { status, answer } = await replayAsked(record, body, options.targets, replays.signal);
      log.updated(record);
      send(response, status, 'application/json', JSON.stringify(answer));
    } finally {
      inFlight--;
    }
  }

  function openStream(request: IncomingMessage, response: ServerResponse, afterQuery: number): void {
    if (streams.size >= MAX_STREAMS) return void send(response, 503, 'text/plain', 'too many pages are open\n', { 'retry-after': '5' });
    // On a reconnection the browser says which delivery it saw last.
    const lastSeen = Number(request.headers['last-event-id'] ?? afterQuery);
    const after = Number.isSafeInteger(lastSeen) && lastSeen > 0 ? lastSeen : 0;
    response.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive' });
    let text = 'retry: 1000\n\n';
    if (log.dropped > 0) text += droppedEvent(log.dropped, log.oldest(), null);
    for (const record of log.list(after)) text += addedEvent(record);
    response.write(text);
    streams.add(response);
    response.once('close', () => streams.delete(response));
  }

  // What changed is noted as it happens and written FLUSH_MS later, one write per stream for all
  // of it: a delivery added then dropped meanwhile is never sent, and however many were dropped,
  // the page is told once.
  const added: InspectedDelivery[] = [];
  const updated = new Set<InspectedDelivery>();
  let toldDropped = log.dropped;
  let due = false;
  const flush = () => {
    due = false;
    let text = '';
    const oldest = log.oldest();
    if (log.dropped !== toldDropped) {
      toldDropped = log.dropped;
      text += droppedEvent(log.dropped, oldest, droppedText(log, source));
    }
    for (const record of added) {
      // Serialised as it stands now: an update of it since is in it already.
      updated.delete(record);
      if (record.n >= oldest) text += addedEvent(record);
    }
    for (const record of updated) if (record.n >= oldest) text += updatedEvent(record);
    added.length = 0;
    updated.clear();
    for (const stream of streams) {
      if (stream.writableLength > MAX_UNREAD) stream.destroy();
      else stream.write(text);
    }
  };
  const stopListening = log.listen((change, record) => {
    if (streams.size === 0) return;
    if (change === 'added') added.push(record);
    else updated.add(record);
    if (!due) {
      due = true;
      setTimeout(flush, FLUSH_MS).unref();
    }
  });
  const stopGaps = log.listenGaps((gap) => {
    const text = `event: gap\ndata: ${JSON.stringify({ ...gap, text: gapText(gap) })}\n\n`;
    for (const stream of streams) stream.write(text);
  });
  const heartbeat = setInterval(() => {
    for (const stream of streams) stream.write(': \n\n');
  }, HEARTBEAT_MS).unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the inspector is not listening on a TCP port');
  const closed = new Promise<void>((resolve) => server.once('close', resolve));
  let closing: Promise<void> | undefined;
  const close = async () => {
    stopListening();
    stopGaps();
    clearInterval(heartbeat);
    replays.abort();
    for (const stream of streams) stream.end();
    server.close();
    server.closeAllConnections();
    await Promise.allSettled([...running]);
    await closed;
  };
  return {
    url: `http://127.0.0.1:${address.port}/?token=${token}`,
    port: address.port,
    close: () => (closing ??= close()),
  };
}

function addedEvent(record: InspectedDelivery): string {
  return `id: ${record.n}\nevent: delivery\ndata: ${JSON.stringify(listEntry(record))}\n\n`;
}

function updatedEvent(record: InspectedDelivery): string {
  return `event: update\ndata: ${JSON.stringify(listEntry(record))}\n\n`;
}

/** `oldest`: the first record still kept; the page removes the rows before it. */
function droppedEvent(dropped: number, oldest: number, text: string | null): string {
  return `event: dropped\ndata: ${JSON.stringify({ dropped, oldest, text })}\n\n`;
}

function send(response: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}): void {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  response.writeHead(status, { ...SECURITY_HEADERS, ...extra, 'content-type': type, 'content-length': bytes.length });
  response.end(response.req.method === 'HEAD' ? undefined : bytes);
}

/** The body, or undefined when it is over `limit` bytes. */
function readBody(request: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        request.removeAllListeners('data');
        request.resume();
        resolve(undefined);
      } else chunks.push(chunk);
    });
    request.once('end', () => resolve(Buffer.concat(chunks)));
    request.once('error', reject);
  });
}

/** Only this page may ask for a replay: a form or script of another origin (or a request from nowhere) may not. */
function fromThisPage(request: IncomingMessage, host: string): boolean {
  const site = request.headers['sec-fetch-site'];
  return request.headers.origin === `http://${host.toLowerCase()}` && (site === undefined || site === 'same-origin');
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** A name for the downloaded body: the delivery's id where it is a plain one. */
function bodyFileName(record: InspectedDelivery): string {
  const id = record.id !== undefined && /^[A-Za-z0-9._-]{1,100}$/.test(record.id) && !record.id.startsWith('.') ? record.id : `delivery-${record.n}`;
  return `${id}.body`;
}

function loadAssets(): Map<string, { type: string; content: Buffer }> {
  const assets = new Map<string, { type: string; content: Buffer }>();
  for (const [path, { file, type }] of Object.entries(ASSETS)) {
    const where = new URL(file, PACKAGE_ROOT);
    try {
      assets.set(path, { type, content: readFileSync(where) });
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new CliError(`the inspector's page is missing ${where.pathname} (${reason})`, ExitCode.Unexpected, { hint: 'reinstall svc-migrate: the file ships with it' });
    }
  }
  return assets;
}
