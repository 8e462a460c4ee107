import { CliError, ExitCode, UnavailableError } from '../errors.js';
import type { HttpMethod } from './request.js';
import { redactUrl } from './redact.js';

// A request that got no answer at all (refused, unresolved, timed out, cut), told apart so the
// request loop knows what it may retry, and worded for the user once.

export type NetworkFailure = { kind: 'refused' | 'dns' | 'timeout' | 'reset' | 'closed' | 'other'; code: string; message: string };

/** undici's codes for a request on a client (or pool) that was closed or destroyed: it never will be sent. */
const CLOSED_CODES = new Set(['UND_ERR_DESTROYED', 'UND_ERR_CLOSED']);

export function classifyNetworkError(error: unknown): NetworkFailure {
  const err = error as { code?: string; message?: string; cause?: { code?: string }; errors?: { code?: string }[] };
  const code = err.code ?? err.cause?.code ?? err.errors?.[0]?.code ?? 'ERR_NETWORK';
  const message = err.message ?? String(error);
  const kind: NetworkFailure['kind'] =
    code === 'ECONNREFUSED'
      ? 'refused'
      : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
        ? 'dns'
        : /TIMEOUT/i.test(code)
          ? 'timeout'
          : code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE'
            ? 'reset'
            : CLOSED_CODES.has(code)
              ? 'closed'
              : 'other';
  return { kind, code, message };
}

/**
 * A request made after its client was closed: the run that owned the client has ended, so something
 * outlived it. Never retried (each try would fail the same way at once) and not an `UnavailableError`,
 * which waits treat as passing trouble.
 */
export function closedClientError(method: HttpMethod, url: URL | string): CliError {
  return new CliError(`${method} ${redactUrl(url.toString())} was not sent: the connections of this run are closed`, ExitCode.Unexpected, {
    hint: 'a step went on after its run had ended; please report this as a bug of svc-migrate',
  });
}

/** The error for a request that failed without an answer after `tries` tries. */
export function networkError(method: HttpMethod, url: URL, failure: NetworkFailure, tries: number): CliError {
  if (failure.kind === 'closed') return closedClientError(method, url);
  const where = `${method} ${redactUrl(url.toString())}`;
  if (method === 'POST' && failure.kind !== 'refused' && failure.kind !== 'dns') {
    return new UnavailableError(
      `the answer to ${where} was lost (${failure.code}); the migration may have started anyway`,
      {
        hint: 'run `svc-migrate list` to see whether it exists before starting another one',
        cause: failure,
      },
    );
  }
  if (failure.kind === 'dns') {
    return new UnavailableError(`cannot resolve the host of ${url.origin} (${failure.code})`, {
      hint: 'check --base-url / SVC_BASE_URL and your network or proxy settings',
    });
  }
  return new UnavailableError(`${where} failed after ${tries} tries: ${failure.code} ${failure.message}`, {
    hint: 'check your network, proxy settings and --base-url, then try again',
  });
}
