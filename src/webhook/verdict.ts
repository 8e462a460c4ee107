import { DELIVERY_HEADERS } from '../api/types.js';
import { verifySignature } from './signature.js';

// Whether a delivery is what its service signed. A direct one, or a relayed one with its raw bytes
// (gosmee's `bodyB`), is checked on those bytes and refused when they do not match. A relay that
// re-encoded the body (smee.io parses the JSON and serializes it again) may have changed the bytes
// that were signed: what it sends is checked, and when no re-encoding matches, the delivery is
// unverifiable, never called forged.

/** A delivery's verification (ReceivedDelivery.verification). */
export interface Verification {
  verified: boolean;
  algorithm?: 'sha256' | 'sha1';
  legacy?: boolean;
  secret?: number;
  /**
   * A relayed delivery without its raw bytes: `matched` when the body as re-encoded verified,
   * `unverifiable` when it did not (the relay changed the bytes: never called forged).
   */
  relayed?: 'matched' | 'unverifiable';
}

/** A signature that does not match: with the bytes sent, it is refused (401). */
export class SignatureMismatch extends Error {}

/**
 * The body to keep and its verification. `bodies` are the candidates a re-encoding relay may
 * have turned the body into (the first that verifies is kept, else the last); `reencoded` says
 * the bytes sent are not among them for sure.
 */
export function verdict(
  bodies: readonly Buffer[],
  headers: Record<string, string>,
  secrets: readonly string[],
  reencoded: boolean,
): { body: Buffer; verification: Verification } {
  const last = bodies[bodies.length - 1] as Buffer;
  if (secrets.length === 0) return { body: last, verification: { verified: false } };
  const given = { signature256: headers[DELIVERY_HEADERS.signature256], signature: headers[DELIVERY_HEADERS.signature] };
  let reason = '';
  for (const body of bodies) {
    const result = verifySignature(body, given, secrets);
    if (result.valid) {
      const { algorithm, legacy, secretIndex } = result;
      const verification: Verification = { verified: true, algorithm, legacy, secret: secretIndex + 1 };
      return { body, verification: reencoded ? { ...verification, relayed: 'matched' } : verification };
    }
    reason = result.reason;
  }
  // A signature missing or malformed says nothing of a re-encoding: refused as for a direct delivery.
  const mismatch = reason.startsWith('signature does not match');
  if (!reencoded || !mismatch) throw new SignatureMismatch(reason);
  return { body: last, verification: { verified: false, relayed: 'unverifiable' } };
}
