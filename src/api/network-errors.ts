import { CertificateError, CliError, ExitCode, UnavailableError } from '../errors.js';
import type { HttpMethod } from './request.js';
import { redactUrl } from './redact.js';

// A request that got no answer at all (refused, unresolved, timed out, cut), told apart so the
// request loop knows what it may retry, and worded for the user once.

export type NetworkFailure = {
  kind: 'refused' | 'dns' | 'timeout' | 'reset' | 'closed' | 'certificate' | 'tls' | 'other';
  code: string;
  message: string;
  /** A certificate for other names: the names it is for (`DNS:a.example, IP Address:10.0.0.1`). */
  certificateNames?: string;
};

/** Failures that every try would meet again: never retried. */
export const LASTING: ReadonlySet<NetworkFailure['kind']> = new Set(['closed', 'dns', 'certificate', 'tls']);

/** undici's codes for a request on a client (or pool) that was closed or destroyed: it never will be sent. */
const CLOSED_CODES = new Set(['UND_ERR_DESTROYED', 'UND_ERR_CLOSED']);

export function classifyNetworkError(error: unknown): NetworkFailure {
  const err = error as {
    code?: string;
    message?: string;
    cause?: { code?: string };
    errors?: { code?: string }[];
    /** Node's peer certificate, on a failure for a name it does not list. */
    cert?: { subjectaltname?: unknown };
  };
  const code = err.code ?? err.cause?.code ?? err.errors?.[0]?.code ?? 'ERR_NETWORK';
  const message = err.message ?? String(error);
  if (certificateProblem(code)) {
    const names = err.cert?.subjectaltname;
    return { kind: 'certificate', code, message, ...(typeof names === 'string' ? { certificateNames: names } : {}) };
  }
  const kind: NetworkFailure['kind'] =
    code.startsWith('ERR_SSL_') || code === 'EPROTO'
      ? 'tls'
      : code === 'ECONNREFUSED'
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
  if (failure.kind === 'certificate' || failure.kind === 'tls') return tlsError(url, failure, 'api');
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

/**
 * The error for a connection refused (`tries` times) before anything of the run answered: nothing
 * listens at that address, which more tries would not change.
 */
export function nothingListensError(method: HttpMethod, url: URL, tries: number): UnavailableError {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return new UnavailableError(
    `nothing listens at ${url.hostname}:${port}: ${method} ${redactUrl(url.toString())} was refused (ECONNREFUSED${tries > 1 ? `, ${tries} tries` : ''})`,
    { hint: 'check --base-url / SVC_BASE_URL (host and port) and that the service is running there; with a proxy, that the proxy is' },
  );
}

type CertificateProblem = 'expired' | 'not yet valid' | 'wrong name' | 'unknown issuer' | 'refused';

/**
 * What is wrong with a certificate, from the code Node gives a failed verification (OpenSSL's
 * X509_V_ERR_… names without the prefix, and its own for a name the certificate does not list), or
 * undefined when the failure is not the certificate's.
 */
function certificateProblem(code: string): CertificateProblem | undefined {
  if (code === 'CERT_HAS_EXPIRED') return 'expired';
  if (code === 'CERT_NOT_YET_VALID') return 'not yet valid';
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID' || code === 'HOSTNAME_MISMATCH' || code === 'IP_ADDRESS_MISMATCH') return 'wrong name';
  if (/^(UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_UNTRUSTED|INVALID_CA)$/.test(code)) {
    return 'unknown issuer';
  }
  // Node names only some of OpenSSL's verification failures; the others (a SHA-1 signature, a key
  // too small, an unknown critical extension) all come as UNSPECIFIED, with OpenSSL's reason as message.
  if (code === 'UNSPECIFIED' || (!code.startsWith('ERR_') && /CERT|ISSUER|PURPOSE|PATH_LENGTH|SIGNATURE/.test(code))) return 'refused';
  return undefined;
}

const TRUST_CA = 'pass its certificate (PEM) with --ca-file FILE or SVC_CA_FILE, or store it with `svc-migrate config set caFile FILE`';
const NO_SWITCH = 'no switch turns the certificate check off';

/**
 * A TLS connection to the API (`--base-url`) or to the archive storage the API sent us to that
 * failed for its certificate, or whose handshake failed: one line naming the host and why, and what
 * the user can do. Never retried.
 */
export function tlsError(url: URL, failure: NetworkFailure, peer: 'api' | 'storage'): CertificateError {
  const host = url.host;
  const operator = peer === 'api' ? 'the service\'s operator' : 'the service\'s operator (the archive storage it sends downloads to)';
  const problem = certificateProblem(failure.code);
  if (problem === undefined) {
    return new CertificateError(`the TLS handshake with ${host} failed (${failure.code})`, {
      hint: peer === 'api' ? 'check that --base-url is the service\'s HTTPS address: a server that speaks plain HTTP fails this way' : `report it to ${operator}`,
      cause: failure,
    });
  }
  const subject = `cannot trust the certificate of ${host}`;
  const names = failure.certificateNames ? ` (${shortList(failure.certificateNames)})` : '';
  const [reason, hint] = {
    expired: ['it has expired', `${operator} must renew it; if this machine's clock is wrong (\`date -u\`), set it right. --ca-file adds an authority to trust; it cannot make an expired certificate valid, and ${NO_SWITCH}`],
    'not yet valid': ['it is not valid yet', `check this machine's clock (\`date -u\`); ${NO_SWITCH}`],
    'wrong name': [
      `it is for other names${names}`,
      peer === 'api'
        ? `use a --base-url with a name the certificate is for; --ca-file adds an authority to trust, it does not accept another name, and ${NO_SWITCH}`
        : `report it to ${operator}; ${NO_SWITCH}`,
    ],
    'unknown issuer': ['it was issued by an authority this machine does not trust', `if your organization has its own certificate authority, ${TRUST_CA}; ${NO_SWITCH}`],
    refused: [`it was refused: ${failure.message}`, `report it to ${operator}, or if your organization has its own certificate authority, ${TRUST_CA}`],
  }[problem];
  return new CertificateError(`${subject}: ${reason} (${failure.code})`, { hint, cause: failure });
}

/** The first names of a certificate's list, and how many more. */
function shortList(names: string): string {
  const all = names.split(', ');
  return all.length <= 4 ? names : `${all.slice(0, 4).join(', ')} and ${all.length - 4} more`;
}
