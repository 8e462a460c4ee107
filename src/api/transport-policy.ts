import { AuthError, UnavailableError, UsageError } from '../errors.js';

/**
 * Hosts whose traffic never leaves the machine: plain HTTP to them exposes nothing. An address is
 * read in any of its spellings (127.1, 0:0:0:0:0:0:0:1, ::ffff:127.0.0.1), as the system reads it.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = canonicalHost(hostname);
  return (
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    host === '[::1]' ||
    /^127(\.\d{1,3}){3}$/.test(host) ||
    // IPv4-mapped 127.0.0.0/8
    /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(host)
  );
}

/** A host name or address as a URL writes it: lower case, an address in its one shortest form. */
function canonicalHost(hostname: string): string {
  const bare = hostname.replace(/^\[|\]$/g, '');
  try {
    return new URL(`http://${bare.includes(':') ? `[${bare}]` : bare}/`).hostname;
  } catch {
    return hostname.toLowerCase();
  }
}

/**
 * The token travels in clear text over plain HTTP: refuse that beyond loopback unless the user said
 * `--insecure` (gh likewise refuses non-TLS hosts). A token with a line break or another control
 * character can never be a valid header value; retrying it would only fail again.
 */
export function checkCredentials(baseUrl: URL, token: string | undefined, insecure: boolean): void {
  if (token === undefined || token === '') return;
  if (/[\u0000-\u001f\u007f]/.test(token)) {
    throw new AuthError('the token contains a line break or another control character', {
      hint: 'copy the token again without the line break, then pass it with SVC_TOKEN or `svc-migrate auth login`',
    });
  }
  if (baseUrl.protocol === 'http:' && !isLoopbackHost(baseUrl.hostname) && !insecure) {
    throw new UsageError(`refusing to send the token in clear text to ${baseUrl.origin}`, {
      hint: 'use an https:// base URL, or pass --insecure if the network to that host is trusted',
    });
  }
}

/** True when the API is plain HTTP beyond loopback and the user allowed it with --insecure. */
export function isClearTextRemote(baseUrl: URL): boolean {
  return baseUrl.protocol === 'http:' && !isLoopbackHost(baseUrl.hostname);
}

/**
 * Where the API may send us for an archive (docs/service.md#download-archive): https storage, or
 * http only when the API itself is plain HTTP (a loopback or test setup). Anything else would move
 * the signed URL and the archive in clear text, or is not a download at all: one clear error, no retry.
 */
export function checkStorageUrl(location: URL, api: URL): URL {
  if (location.protocol === 'https:' || (location.protocol === 'http:' && api.protocol === 'http:')) return location;
  const why =
    location.protocol === 'http:'
      ? `plain HTTP (${location.host}) while the API uses HTTPS: the signed URL and the archive would travel in clear text`
      : `a ${location.protocol} URL, not HTTPS storage`;
  throw new UnavailableError(`refusing the archive location the service sent: ${why}`, {
    hint: 'this is not something a retry fixes; report it to the service operator',
  });
}
