import type { HttpMethod } from './request.js';
import { type Headers, header } from './headers.js';
import type { ServiceErrorBody } from './types.js';

// How the service says "slow down" (docs/service.md#limits), read apart from the request loop that obeys it.

/** A wait the client is about to make because the service asked it to slow down. */
export interface RateLimitWait {
  kind: 'primary' | 'secondary';
  /** Epoch ms when the wait ends. */
  until: number;
  ms: number;
  method: HttpMethod;
  url: string;
}

/** Whether an error answer asks us to slow down, and for how long (429, or 403 with rate-limit signs). */
export function rateLimitWait(
  status: number,
  headers: Headers,
  body: ServiceErrorBody,
  now: number,
  secondaryDefaultMs: number,
): Omit<RateLimitWait, 'method' | 'url'> | undefined {
  const retryAfter = header(headers, 'retry-after');
  const remaining = header(headers, 'x-ratelimit-remaining');
  const reset = header(headers, 'x-ratelimit-reset');
  const mentionsLimit = /rate limit/i.test(body.message ?? '');
  const limited =
    status === 429 || (status === 403 && (retryAfter !== undefined || remaining === '0' || mentionsLimit));
  if (!limited) return undefined;

  if (retryAfter !== undefined) {
    const ms = parseRetryAfter(retryAfter, now);
    if (ms !== undefined) return { kind: 'secondary', ms, until: now + ms };
  }
  if (remaining === '0' && reset !== undefined && /^\d+$/.test(reset)) {
    // Primary limit: the window resets at a known second; one more second absorbs clock skew.
    const until = Number(reset) * 1000 + 1000;
    const ms = Math.max(1000, until - now);
    return { kind: 'primary', ms, until: now + ms };
  }
  return { kind: 'secondary', ms: secondaryDefaultMs, until: now + secondaryDefaultMs };
}

function parseRetryAfter(value: string, now: number): number | undefined {
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
