// Redaction happens where traces and errors are built, so no later printer can leak a credential.

const SENSITIVE_QUERY_KEY = /sig|token|credential|secret|key|auth|pass|policy|jwt|bearer|hmac|session|sid|code|otp/i;
const REDACTED = '[REDACTED]';

/** A URL with the values of credential-like query parameters and any userinfo replaced. */
export function redactUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return raw.replace(/\?.*$/, '?[REDACTED]');
  }
  if (url.username || url.password) {
    url.username = 'REDACTED';
    url.password = '';
  }
  for (const key of [...url.searchParams.keys()]) {
    if (SENSITIVE_QUERY_KEY.test(key)) url.searchParams.set(key, REDACTED);
  }
  // URLSearchParams percent-encodes the brackets; keep the marker readable.
  return url.toString().replaceAll(encodeURIComponent(REDACTED), REDACTED);
}

/** Header names that carry a credential, whatever the rest of the name (X-Api-Key, X-Auth-Token, X-Shared-Secret). */
const SENSITIVE_HEADER = /auth|token|secret|key|pass|cookie|session|signature|credential|jwt|bearer|hmac|otp/i;

/** Schemes of a credential a value may open with, in any header (`Bearer …`, `Basic …`). */
const CREDENTIAL_SCHEME = /^(bearer|basic|token|digest|negotiate)\s/i;

/** A header value safe to print: credentials are replaced (their scheme kept), everything else kept. */
export function redactHeader(name: string, value: string): string {
  const lower = name.toLowerCase();
  if (lower === 'authorization' || lower === 'proxy-authorization' || CREDENTIAL_SCHEME.test(value)) {
    // A value of one word is the credential itself, not its scheme.
    const scheme = /^(\S+)\s/.exec(value)?.[1];
    return scheme === undefined ? REDACTED : `${scheme} ${REDACTED}`;
  }
  if (lower === 'location') return redactUrl(value);
  if (SENSITIVE_HEADER.test(lower)) return REDACTED;
  return value;
}

/** Removes every occurrence of the given secrets from a text (last line of defence for messages). */
export function scrub(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join(REDACTED);
  }
  return out;
}
