import type { Writable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { InterruptedError, UnavailableError } from '../errors.js';
import { type Headers, header } from './headers.js';
import { classifyNetworkError, closedClientError, tlsError } from './network-errors.js';
import { redactUrl } from './redact.js';
import { stream } from './undici.js';

export interface DownloadResponse<B> {
  status: number;
  headers: Headers;
  body: B;
}

/** What an archive download takes from the client that opens it. */
export interface DownloadConnection {
  dispatcher: Dispatcher;
  userAgent: string;
  signal: AbortSignal | undefined;
  timeouts: { headersTimeout: number; bodyTimeout: number };
  trace: (line: string, headers?: Record<string, string | undefined>) => void;
}

/**
 * Opens a download from archive storage (docs/service.md#download-archive). Never sends the API token, not even to the
 * API's own origin: storage URLs carry their own signature. Not retried here: the caller resumes.
 * The body is written into `createBody()` as it arrives (undici's stream API), so every byte
 * received is handed over even when the connection is cut right after.
 */
export function openDownload<B extends Writable>(
  connection: DownloadConnection,
  url: URL,
  headers: Record<string, string>,
  createBody: () => B,
): Promise<DownloadResponse<B>> {
  const { signal, trace } = connection;
  if (signal?.aborted) throw new InterruptedError();
  const printable = redactUrl(url.toString());
  const sent = { 'user-agent': connection.userAgent, ...headers };
  trace(`→ GET ${printable}`, sent);
  return new Promise((resolve, reject) => {
    let answered = false;
    const options = { method: 'GET' as const, headers: sent, dispatcher: connection.dispatcher, signal, ...connection.timeouts };
    stream(url, options, ({ statusCode, headers: responseHeaders }) => {
      answered = true;
      trace(`← ${statusCode} GET ${printable}`, {
        'content-length': header(responseHeaders, 'content-length'),
        'content-range': header(responseHeaders, 'content-range'),
        'accept-ranges': header(responseHeaders, 'accept-ranges'),
        etag: header(responseHeaders, 'etag'),
      });
      const body = createBody();
      resolve({ status: statusCode, headers: responseHeaders, body });
      return body;
    }).catch((error: unknown) => {
      // Once answered, a failure reaches the caller through the body (undici destroys it).
      if (answered) return;
      if (signal?.aborted) return reject(new InterruptedError());
      const failure = classifyNetworkError(error);
      trace(`✗ GET ${printable} ${failure.code}: ${failure.message}`);
      // Closed connections are not a cut to resume from: every try would fail the same way.
      if (failure.kind === 'closed') return reject(closedClientError('GET', printable));
      if (failure.kind === 'certificate' || failure.kind === 'tls') return reject(tlsError(url, failure, 'storage'));
      reject(
        new UnavailableError(`the archive download failed: ${failure.code} ${failure.message}`, {
          hint: 'run the same command again to resume',
          cause: failure,
        }),
      );
    });
  });
}
