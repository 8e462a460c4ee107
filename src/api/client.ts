import type { Writable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { type Clock, systemClock } from '../support/clock.js';
import { CliError, InterruptedError, UnavailableError } from '../errors.js';
import { type DownloadResponse, openDownload } from './archive-download.js';
import { DEFAULT_RETRY, fullJitterDelay, type RetryPolicy } from './backoff.js';
import { type Headers, header, pickTraceHeaders } from './headers.js';
import { parseBaseUrl } from './base-url.js';
import { readErrorBody, readJson } from './bodies.js';
import { errorForStatus } from './http-errors.js';
import { type RateLimitWait, rateLimitWait } from './rate-limit.js';
import { type Links, parseLinkHeader } from './paginate.js';
import { redactHeader, redactUrl, scrub } from './redact.js';
import { createDispatcher, type ProxySettings, requestTimeouts, type Timeouts } from './dispatcher.js';
import { classifyNetworkError, closedClientError, LASTING, networkError, nothingListensError } from './network-errors.js';
import type { ExtraTrust } from './trust.js';
import { request } from './undici.js';
import { checkCredentials } from './transport-policy.js';
import type { HttpMethod, RequestOptions } from './request.js';
import { API_MEDIA_TYPE, API_VERSION, type ServiceErrorBody } from './types.js';

interface ClientHooks {
  /** One line per request and response, already redacted (`--debug`). */
  onTrace?: (line: string) => void;
  /** Announced before every rate-limit wait. */
  onRateLimitWait?: (wait: RateLimitWait) => void;
  /** Announced before every retry of a failed request. */
  onRetry?: (info: { attempt: number; delayMs: number; reason: string; method: HttpMethod; url: string }) => void;
}

export interface ClientOptions {
  baseUrl: string;
  token?: string | undefined;
  apiVersion?: string | undefined;
  userAgent: string;
  proxy?: ProxySettings | undefined;
  timeouts?: Partial<Timeouts>;
  retry?: Partial<RetryPolicy>;
  /** Longest single rate-limit wait the user accepts (`--max-wait`). */
  maxRateLimitWaitMs?: number;
  hooks?: ClientHooks;
  clock?: Clock;
  random?: () => number;
  /** Aborts every request and wait (Ctrl-C). */
  signal?: AbortSignal | undefined;
  dispatcher?: Dispatcher;
  /** `--insecure`: send the token over plain HTTP beyond loopback. */
  insecure?: boolean | undefined;
  /** `--ca-file`: authorities trusted beyond Node's own, for the API and the archive storage. */
  trust?: ExtraTrust | undefined;
}

export interface ApiResponse<T> {
  status: number;
  headers: Headers;
  data: T;
  url: string;
  links: Links;
  /** True when the answer was a 304 served from this run's ETag cache. */
  notModified: boolean;
}

const DEFAULT_MAX_RATE_LIMIT_WAIT_MS = 5 * 60_000;
/** The longest wait before the one retry of a connection refused before anything answered. */
const QUICK_RETRY_MS = 500;
const MAX_RATE_LIMIT_WAITS = 4;
const SECONDARY_DEFAULT_WAIT_MS = 60_000;

interface CachedResponse {
  etag: string;
  data: unknown;
  headers: Headers;
}

/** What a client shares with the clients scoped from it: the ETag cache, whether it was closed or ever answered. */
interface SharedState {
  closed: boolean;
  etags: Map<string, CachedResponse>;
  /** Some request of this run got an answer: a refused connection since is passing trouble (a restart). */
  answered: boolean;
  /** A request of this run met nothing listening before anything answered: another fails at once. */
  nothingListens: boolean;
}

/**
 * The one HTTP client of the program: required headers, timeouts, retries, rate-limit waits,
 * conditional GETs, redacted tracing and the mapping of HTTP failures to CliErrors.
 */
export class ApiClient {
  readonly baseUrl: URL;
  private readonly options: ClientOptions;
  private readonly retry: RetryPolicy;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly dispatcher: Dispatcher;
  private readonly shared: SharedState;
  /** Made by `scoped()`: its connections and state are its parent's. */
  private readonly isScope: boolean;

  constructor(options: ClientOptions, shared?: SharedState) {
    this.options = options;
    this.shared = shared ?? { closed: false, etags: new Map(), answered: false, nothingListens: false };
    this.isScope = shared !== undefined;
    this.baseUrl = parseBaseUrl(options.baseUrl);
    checkCredentials(this.baseUrl, options.token, options.insecure ?? false);
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.dispatcher = options.dispatcher ?? createDispatcher(options.proxy, options.timeouts, options.trust);
  }

  /** The absolute URL for a path below the base URL, or an absolute URL unchanged. */
  resolve(path: string, query?: RequestOptions['query']): URL {
    const url = /^https?:\/\//i.test(path)
      ? new URL(path)
      : new URL(this.baseUrl.pathname.replace(/\/$/, '') + path, this.baseUrl);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url;
  }

  /** Headers for a request to `url`; credentials go only to the API's own origin. */
  headersFor(url: URL, hasBody: boolean): Record<string, string> {
    const headers: Record<string, string> = {
      accept: API_MEDIA_TYPE,
      'x-service-api-version': this.options.apiVersion ?? API_VERSION,
      'user-agent': this.options.userAgent,
    };
    if (this.options.token && url.origin === this.baseUrl.origin) {
      headers.authorization = `Bearer ${this.options.token}`;
    }
    if (hasBody) headers['content-type'] = 'application/json';
    return headers;
  }

  async request<T>(options: RequestOptions): Promise<ApiResponse<T>> {
    const { method } = options;
    const url = this.resolve(options.path, options.query);
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers = this.headersFor(url, body !== undefined);
    const cacheKey = url.toString();
    const cached = method === 'GET' ? this.shared.etags.get(cacheKey) : undefined;
    if (cached) headers['if-none-match'] = cached.etag;
    const printable = redactUrl(cacheKey);

    let retries = 0;
    let rateLimitWaits = 0;
    let secondaryWaitMs = SECONDARY_DEFAULT_WAIT_MS;
    for (;;) {
      this.throwIfAborted();
      // A closed client is never retried: no try could ever be sent (undici: UND_ERR_DESTROYED).
      if (this.shared.closed) throw closedClientError(method, printable);
      const started = this.clock.now();
      this.trace(`→ ${method} ${printable}`, headers);
      let response: Dispatcher.ResponseData;
      try {
        response = await request(url, {
          method,
          headers,
          body,
          dispatcher: this.dispatcher,
          signal: this.options.signal,
          ...this.requestTimeouts(),
        });
      } catch (error) {
        await this.networkFailure(error, method, url, retries++);
        continue;
      }

      this.shared.answered = true;
      const { statusCode: status } = response;
      const responseHeaders = response.headers;
      this.trace(
        `← ${status} ${method} ${printable} (${this.clock.now() - started} ms)`,
        pickTraceHeaders(responseHeaders),
      );

      if (status === 304 && cached) {
        await response.body.dump();
        // Fresh headers (rate-limit counters, poll hints) over the cached ones.
        return this.answer(status, { ...cached.headers, ...responseHeaders }, cached.data as T, url, true);
      }
      const accepted = (status >= 200 && status < 300) || options.accept?.includes(status);
      if (accepted) {
        let data: T;
        try {
          data = await readJson<T>(response, `${method} ${printable}`);
        } catch (error) {
          // Cut or silent mid-answer: the network's failure, as before the headers (undici's error is no bug, exit 1).
          if (error instanceof CliError) throw error;
          await this.networkFailure(error, method, url, retries++);
          continue;
        }
        if (options.list && !Array.isArray(data)) {
          throw new UnavailableError(`${method} ${printable} answered with ${kindOf(data)} where a list was expected`, {
            status,
            hint: 'check --base-url / SVC_BASE_URL: it is the root of the service\'s API, e.g. https://api.example.com',
          });
        }
        const etag = header(responseHeaders, 'etag');
        if (method === 'GET' && etag && status === 200) {
          this.shared.etags.set(cacheKey, { etag, data, headers: responseHeaders });
        }
        return this.answer(status, responseHeaders, data, url, false);
      }

      const { body: errorBody, cutAt, fromApi } = await readErrorBody(response);
      const rateLimit = rateLimitWait(status, responseHeaders, errorBody, this.clock.now(), secondaryWaitMs);
      if (rateLimit) {
        if (rateLimitWaits >= MAX_RATE_LIMIT_WAITS) {
          throw new UnavailableError(`still rate limited after ${rateLimitWaits} waits (${method} ${printable})`, {
            status,
            hint: 'wait a while before running the command again; other tools on the same token share its limit',
          });
        }
        const maxWait = this.options.maxRateLimitWaitMs ?? DEFAULT_MAX_RATE_LIMIT_WAIT_MS;
        if (rateLimit.ms > maxWait) {
          throw new UnavailableError(
            `rate limited until ${new Date(rateLimit.until).toISOString()}, longer than --max-wait (${formatSeconds(maxWait)})`,
            { status, hint: 'run the command again after that time, or raise --max-wait' },
          );
        }
        rateLimitWaits++;
        if (rateLimit.kind === 'secondary') secondaryWaitMs *= 2;
        this.options.hooks?.onRateLimitWait?.({ ...rateLimit, method, url: printable });
        await this.sleep(rateLimit.ms);
        continue;
      }

      const transient = status === 408 || status >= 500;
      if (transient && method !== 'POST' && retries < this.retry.tries - 1) {
        await this.backoff(retries++, `HTTP ${status}`, method, printable);
        continue;
      }
      throw this.httpError(method, url, status, errorBody, options, { cutAt, fromApi });
    }
  }

  /** Every page of a list endpoint, following `Link: rel="next"` until there is none. */
  async* paginate<T>(options: RequestOptions): AsyncGenerator<ApiResponse<T[]>> {
    let next: RequestOptions | undefined = { ...options, list: true };
    while (next) {
      const page: ApiResponse<T[]> = await this.request<T[]>(next);
      yield page;
      const link = page.links.next;
      if (link && new URL(link, page.url).origin !== this.baseUrl.origin) {
        throw new UnavailableError(`the service sent a next-page link to another origin (${redactUrl(link)})`);
      }
      next = link ? { ...next, path: new URL(link, page.url).toString(), query: undefined } : undefined;
    }
  }

  /** True once the run was interrupted (Ctrl-C). */
  get aborted(): boolean {
    return Boolean(this.options.signal?.aborted);
  }

  /**
   * The same client (connections, ETags, settings) whose requests and waits also end when `signal`
   * aborts: a part of a run that must stop while the rest of the program goes on (an org export
   * stopping its other batches). Closing it closes nothing; closing this client closes both.
   */
  scoped(signal: AbortSignal): ApiClient {
    const signals = this.options.signal ? [this.options.signal, signal] : [signal];
    return new ApiClient({ ...this.options, signal: AbortSignal.any(signals), dispatcher: this.dispatcher }, this.shared);
  }

  /** Opens a download from archive storage with this client's connections (archive-download.ts). */
  openDownload<B extends Writable>(url: URL, headers: Record<string, string>, createBody: () => B): Promise<DownloadResponse<B>> {
    const { signal, userAgent } = this.options;
    if (this.shared.closed) return Promise.reject(closedClientError('GET', redactUrl(url.toString())));
    const trace = (line: string, headers?: Record<string, string | undefined>) => this.trace(line, headers);
    const connection = { dispatcher: this.dispatcher, userAgent, signal, timeouts: this.requestTimeouts(), trace };
    return openDownload(connection, url, headers, createBody);
  }

  async close(): Promise<void> {
    if (this.isScope || this.shared.closed) return;
    this.shared.closed = true;
    if (!this.options.dispatcher) await this.dispatcher.close();
  }

  private answer<T>(status: number, headers: Headers, data: T, url: URL, notModified: boolean): ApiResponse<T> {
    return {
      status,
      headers,
      data,
      url: url.toString(),
      links: parseLinkHeader(header(headers, 'link')),
      notModified,
    };
  }

  private requestTimeouts(): { headersTimeout: number; bodyTimeout: number } {
    return requestTimeouts(this.options.timeouts);
  }

  /**
   * A request that failed on the network (before its answer, or while reading it): waits before the
   * next try when it may be tried again, else throws what the user is told.
   */
  private async networkFailure(error: unknown, method: HttpMethod, url: URL, retries: number): Promise<void> {
    this.throwIfAborted();
    const printable = redactUrl(url.toString());
    const failure = classifyNetworkError(error);
    this.trace(`✗ ${method} ${printable} ${failure.code}: ${failure.message}`);
    if (this.shared.closed) throw closedClientError(method, printable);
    // Refused before anything answered: nothing listens (a wrong --base-url); one quick retry a run.
    const firstContact = failure.kind === 'refused' && !this.shared.answered;
    if (firstContact && (this.shared.nothingListens || retries >= 1)) {
      this.shared.nothingListens = true;
      throw nothingListensError(method, url, retries + 1);
    }
    const canRetry =
      retries < this.retry.tries - 1 &&
      !LASTING.has(failure.kind) &&
      // docs/service.md#start-migration: a lost POST may have created the export; resend only if it never left.
      (method !== 'POST' || failure.kind === 'refused');
    if (!canRetry) throw networkError(method, url, failure, this.retry.tries);
    await this.backoff(retries, `${failure.code}`, method, printable, firstContact ? QUICK_RETRY_MS : undefined);
  }

  private async backoff(retry: number, reason: string, method: HttpMethod, url: string, capMs?: number): Promise<void> {
    const delayMs = fullJitterDelay(this.retry, retry, this.random, capMs);
    this.options.hooks?.onRetry?.({ attempt: retry + 2, delayMs, reason, method, url });
    this.trace(`… retry ${retry + 1}/${this.retry.tries - 1} of ${method} ${url} in ${delayMs} ms (${reason})`);
    await this.sleep(delayMs);
  }

  private async sleep(ms: number): Promise<void> {
    try {
      await this.clock.sleep(ms, this.options.signal);
    } catch (error) {
      this.throwIfAborted();
      throw error;
    }
  }

  private throwIfAborted(): void {
    if (this.options.signal?.aborted) throw new InterruptedError();
  }

  private trace(line: string, headers?: Record<string, string | number | string[] | undefined>): void {
    const onTrace = this.options.hooks?.onTrace;
    if (!onTrace) return;
    const parts = [line];
    for (const [name, value] of Object.entries(headers ?? {})) {
      if (value === undefined) continue;
      parts.push(`    ${name}: ${redactHeader(name, String(value))}`);
    }
    onTrace(scrub(parts.join('\n'), [this.options.token]));
  }

  private httpError(
    method: HttpMethod,
    url: URL,
    status: number,
    body: ServiceErrorBody,
    options: RequestOptions,
    { cutAt, fromApi }: { cutAt?: number | undefined; fromApi: boolean },
  ): CliError {
    return errorForStatus({
      cutAt,
      fromApi,
      status,
      method,
      url: redactUrl(url.toString()),
      body,
      notFound: options.notFound,
      tokenPresent: Boolean(this.options.token),
      secrets: [this.options.token],
    });
  }
}

function formatSeconds(ms: number): string {
  return ms >= 60_000 ? `${Math.round(ms / 60_000)}m` : `${Math.round(ms / 1000)}s`;
}

/** What a JSON answer holds, in words, for an answer of the wrong shape. */
function kindOf(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
