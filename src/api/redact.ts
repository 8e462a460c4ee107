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

/** A header value safe to print: credentials are replaced, everything else kept. */
export function redactHeader(name: string, value: string): string {
  const lower = name.toLowerCase();
  if (lower === 'authorization' || lower === 'proxy-authorization') {
    const scheme = value.split(' ', 1)[0] ?? '';
    return `${scheme} ${REDACTED}`;
  }
  if (lower === 'location') return redactUrl(value);
  if (lower === 'cookie' || lower === 'set-cookie') return REDACTED;
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
