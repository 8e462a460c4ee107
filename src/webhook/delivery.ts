import { isAscii, isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { DELIVERY_HEADERS, HOOKSHOT_USER_AGENT_PREFIX } from '../api/types.js';
import { signatureHeaders } from './signature.js';

/**
 * docs/service.md#limits: payloads above 25 MB are never delivered. What a receiver accepts reads
 * "25 MB" generously (MiB); what the sandbox sends reads it strictly (DELIVERY_CAP_BYTES).
 */
export const MAX_PAYLOAD_BYTES = 25 * 1024 * 1024;

/** A form body percent-encodes the JSON payload, up to three bytes for one, after `payload=`. */
export const MAX_FORM_BODY_BYTES = MAX_PAYLOAD_BYTES * 3 + 16;

/** docs/service.md#delivery-rules: a body above 25 MB (read as 25,000,000 bytes) is not delivered. */
export const DELIVERY_CAP_BYTES = 25_000_000;

export type ContentKind = 'json' | 'form';

export interface OutgoingDelivery {
  id: string;
  headers: Record<string, string>;
  body: Buffer;
}

export interface DeliveryInput {
  event: string;
  /** The JSON body as bytes (kept exactly) or as a value to serialize. */
  payload: unknown;
  contentType: ContentKind;
  secret?: string | undefined;
  hookId?: string;
  targetType?: string;
  targetId?: string;
  id?: string;
}

/** A delivery exactly as docs/service.md#delivery-headers describes: every header, a fresh GUID, both signatures with a secret. */
export function buildDelivery(input: DeliveryInput): OutgoingDelivery {
  const json = Buffer.isBuffer(input.payload) ? input.payload : Buffer.from(JSON.stringify(input.payload));
  const body = input.contentType === 'form' ? Buffer.from(`payload=${encodeURIComponent(json.toString('utf8'))}`) : json;
  const id = input.id ?? randomUUID();
  const headers: Record<string, string> = {
    'content-type': input.contentType === 'form' ? 'application/x-www-form-urlencoded' : 'application/json',
    'content-length': String(body.length),
    'user-agent': `${HOOKSHOT_USER_AGENT_PREFIX}svc-migrate`,
    [DELIVERY_HEADERS.event]: input.event,
    [DELIVERY_HEADERS.delivery]: id,
    [DELIVERY_HEADERS.hookId]: input.hookId ?? '1',
    [DELIVERY_HEADERS.targetType]: input.targetType ?? 'repository',
    [DELIVERY_HEADERS.targetId]: input.targetId ?? '1',
    ...(input.secret ? signatureHeaders(body, input.secret) : {}),
  };
  return { id, headers, body };
}

export class BodyError extends Error {
  /** 400 for a body that is not a delivery, 413 for a payload over the limit. */
  readonly status: 400 | 413;
  constructor(message: string, status: 400 | 413 = 400) {
    super(message);
    this.status = status;
  }
}

/** The content type a delivery declares, or undefined for anything else (docs/service.md#delivery-headers). */
export function contentKind(header: string | undefined): ContentKind | undefined {
  if (header === 'application/json') return 'json';
  const type = (header ?? '').split(';')[0]?.trim().toLowerCase();
  if (type === 'application/json') return 'json';
  if (type === 'application/x-www-form-urlencoded') return 'form';
  return undefined;
}

/**
 * The payload's JSON text: a JSON body decoded, or the `payload` field of a form body. Throws
 * BodyError with a reason.
 */
export function payloadText(raw: Buffer, kind: ContentKind): string {
  // Native checks, then a plain decode: a fatal TextDecoder costs more on every delivery. Most
  // bodies are ASCII, which reads as latin1 byte for byte, without decoding.
  let text: string;
  if (isAscii(raw)) text = raw.toString('latin1');
  else if (isUtf8(raw)) text = raw.toString('utf8');
  else throw new BodyError('the body is not valid UTF-8');
  text = withoutByteOrderMark(text);
  if (kind === 'form') {
    const field = formPayload(text);
    if (field === undefined) throw new BodyError('form body without a "payload" field');
    // The limit is the payload's (docs/service.md#limits), not the percent-encoded body's.
    if (field.length > MAX_PAYLOAD_BYTES || Buffer.byteLength(field) > MAX_PAYLOAD_BYTES) {
      throw new BodyError(`the decoded payload is over the 25 MB payload limit (${Buffer.byteLength(field)} bytes)`, 413);
    }
    text = withoutByteOrderMark(field);
  }
  return text;
}

/**
 * The first `payload` field of a form body, decoded (`+` a space, `%XX` a byte of UTF-8). Only that
 * field is decoded: a body of 75 MB holds some 39 million empty fields, which URLSearchParams would
 * make an object each of (2.6 GB, for seconds). The service writes the name as it is, never
 * encoded. Bytes that are not UTF-8 are refused, as in a JSON body, not replaced.
 */
function formPayload(form: string): string | undefined {
  let start = 0;
  if (!form.startsWith('payload=')) {
    start = form.indexOf('&payload=') + 1;
    if (start === 0) return undefined;
  }
  start += 'payload='.length;
  const end = form.indexOf('&', start);
  const encoded = end < 0 ? form.slice(start) : form.slice(start, end);
  try {
    return decodeURIComponent(encoded.replaceAll('+', ' '));
  } catch {
    throw new BodyError('the form\'s payload field is not percent-encoded UTF-8');
  }
}

/** As TextDecoder reads: a byte-order mark is not content. */
function withoutByteOrderMark(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** The payload object of a JSON body, or of the `payload` field of a form body. Throws BodyError with a reason. */
export function parsePayload(raw: Buffer, kind: ContentKind): Record<string, unknown> {
  const text = payloadText(raw, kind);
  let payload: unknown;
  try {
    payload = JSON.parse(text) as unknown;
  } catch (error) {
    throw new BodyError(`malformed JSON: ${(error as Error).message}`);
  }
  // A delivery's body is an object (docs/service.md#delivery-headers): null, a string, an array or a number is not one.
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new BodyError(`the payload is ${payload === null ? 'null' : Array.isArray(payload) ? 'an array' : `a ${typeof payload}`}, not a JSON object`);
  }
  return payload as Record<string, unknown>;
}

/** Headers of docs/service.md#delivery-headers a real delivery always has. */
const ALWAYS_SENT = [DELIVERY_HEADERS.hookId, DELIVERY_HEADERS.targetType, DELIVERY_HEADERS.targetId];

/** What a delivery's headers lack of a real delivery's: missing headers, another User-Agent. */
export function headerWarnings(headers: Record<string, string | undefined>): string[] {
  const warnings: string[] = [];
  for (const name of ALWAYS_SENT) {
    if (!headers[name]) warnings.push(`missing ${name} header`);
  }
  const agent = headers['user-agent'] ?? '';
  if (!agent.startsWith(HOOKSHOT_USER_AGENT_PREFIX)) {
    warnings.push(`User-Agent "${agent}" does not start with ${HOOKSHOT_USER_AGENT_PREFIX}`);
  }
  return warnings;
}
