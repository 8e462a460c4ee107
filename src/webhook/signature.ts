import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from 'node:crypto';

// docs/service.md#authentication: X-Hub-Signature-256 = "sha256=" + HMAC-SHA256(secret, raw body) in hex;
// X-Hub-Signature = "sha1=" + HMAC-SHA1, kept for compatibility.

export type Algorithm = 'sha256' | 'sha1';

export function sign(body: Buffer | string, secret: string, algorithm: Algorithm = 'sha256'): string {
  return `${algorithm}=${createHmac(algorithm, secret).update(body).digest('hex')}`;
}

/** Both signature headers, as the service sends them when a secret is configured. */
export function signatureHeaders(body: Buffer | string, secret: string): Record<string, string> {
  return { 'x-hub-signature-256': sign(body, secret, 'sha256'), 'x-hub-signature': sign(body, secret, 'sha1') };
}

export type Verification =
  | { valid: true; algorithm: Algorithm; legacy: boolean; secretIndex: number }
  | { valid: false; reason: string };

const HEX_LENGTH: Record<Algorithm, number> = { sha256: 64, sha1: 40 };
/** Where the digest a sender gave is decoded: one buffer for every delivery, as verification is synchronous. */
const GIVEN: Record<Algorithm, Buffer> = { sha256: Buffer.alloc(32), sha1: Buffer.alloc(20) };

/**
 * Checks the raw bytes against each secret (several during a rotation). The 256 header is
 * required when present; sha1 is accepted only without it, and flagged as legacy. The prefix and
 * length are checked first, then the digests are compared in constant time.
 */
export function verifySignature(
  body: Buffer,
  headers: { signature256?: string | undefined; signature?: string | undefined },
  secrets: readonly string[],
): Verification {
  const algorithm: Algorithm | undefined = headers.signature256 !== undefined ? 'sha256' : headers.signature !== undefined ? 'sha1' : undefined;
  if (!algorithm) {
    return { valid: false, reason: 'no X-Hub-Signature-256 header: is a secret configured on the webhook?' };
  }
  const value = (algorithm === 'sha256' ? headers.signature256 : headers.signature) ?? '';
  const prefix = `${algorithm}=`;
  const hex = value.slice(prefix.length);
  const given = GIVEN[algorithm];
  // Hex decoding stops at the first pair that is not hex: fewer bytes than the digest's is malformed.
  if (!value.startsWith(prefix) || hex.length !== HEX_LENGTH[algorithm] || given.write(hex, 'hex') !== given.length) {
    return { valid: false, reason: `malformed ${algorithm === 'sha256' ? 'X-Hub-Signature-256' : 'X-Hub-Signature'} header` };
  }
  let match = -1;
  // Compare with every secret, without stopping early, so timing says nothing about which matched.
  for (let index = 0; index < secrets.length; index++) {
    const expected = createHmac(algorithm, keyOf(secrets[index] as string)).update(body).digest();
    if (timingSafeEqual(expected, given) && match < 0) match = index;
  }
  if (match >= 0) return { valid: true, algorithm, legacy: algorithm === 'sha1', secretIndex: match };
  return {
    valid: false,
    reason:
      'signature does not match: the webhook uses a different secret, or the body was altered in transit (a proxy that re-encodes or re-serializes JSON breaks signatures)',
  };
}

/** A receiver verifies with the same few secrets all day: each is made a key once. */
const keys = new Map<string, KeyObject>();
function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size > 16) keys.clear();
    key = createSecretKey(Buffer.from(secret, 'utf8'));
    keys.set(secret, key);
  }
  return key;
}
