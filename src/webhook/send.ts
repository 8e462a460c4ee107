import { redactUrl } from '../api/redact.js';
import { UnavailableError, UsageError } from '../errors.js';
import { buildDelivery, type ContentKind, MAX_PAYLOAD_BYTES } from './delivery.js';
import { examplePayload, type ExamplePayload } from './samples.js';
import type { PostResult } from './sender.js';

export interface SendInput {
  url: string;
  event: string;
  action?: string | undefined;
  /** The JSON payload as read (from `--payload`); a published example of the event without one. */
  payload?: Buffer | undefined;
  contentType: ContentKind;
  secret?: string | undefined;
  timeoutMs: number;
  /** Ctrl-C: the delivery is abandoned and the signal's reason thrown. */
  signal: AbortSignal;
}

/**
 * What `webhook send` posts without `--payload` (as JSON.stringify writes it), and what `webhook
 * events NAME --example` prints: one function, so the two never differ.
 */
export function defaultPayload(event: string, action: string | undefined): ExamplePayload {
  return examplePayload(event, action);
}

const TOO_LARGE = 'the service never delivers more than 25 MB';

/** Sends one delivery exactly as the service would (docs/service.md#delivery-headers). */
export async function sendDelivery(input: SendInput): Promise<{ id: string; result: PostResult }> {
  let payload: Buffer | Record<string, unknown> = input.payload ?? defaultPayload(input.event, input.action).payload;
  if (input.payload && input.action !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(input.payload.toString('utf8'));
    } catch {
      throw new UsageError('the --payload file is not JSON, so --action cannot be set in it');
    }
    // Spreading an array or a string would send its items as numbered properties.
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new UsageError('the --payload file is not a JSON object, so --action cannot be set in it');
    }
    payload = { ...parsed, action: input.action };
  }
  // The limit is the payload's, not the body's: a form body percent-encodes it (docs/service.md#limits).
  const json = Buffer.isBuffer(payload) ? payload : Buffer.from(JSON.stringify(payload));
  if (json.length > MAX_PAYLOAD_BYTES) throw new UsageError(`the payload is ${json.length} bytes; ${TOO_LARGE}`);
  const delivery = buildDelivery({ event: input.event, payload: json, contentType: input.contentType, secret: input.secret });
  const { postDelivery } = await import('./sender.js');
  try {
    return { id: delivery.id, result: await postDelivery(input.url, delivery.headers, delivery.body, input.timeoutMs, input.signal) };
  } catch (error) {
    input.signal.throwIfAborted();
    const timedOut = (error as Error).name === 'TimeoutError';
    throw new UnavailableError(`could not deliver to ${redactUrl(input.url)}: ${(error as Error).message}`, {
      hint: timedOut ? 'the receiver took longer than --timeout to answer: raise it, or check the receiver' : 'is the receiver running? (svc-migrate webhook listen)',
    });
  }
}

/** The most `--payload` may hold, and why. */
export const PAYLOAD_LIMIT = { bytes: MAX_PAYLOAD_BYTES, why: `; ${TOO_LARGE}` } as const;
