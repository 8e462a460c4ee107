import { contentKind, MAX_FORM_BODY_BYTES } from '../delivery.js';
import type { InboundDelivery } from '../receiver.js';
import { FIELD_NAME, FIELD_VALUE } from '../store.js';

// A relay's frame (docs/cli.md#webhook-listen, relays) made into a delivery for the receiver's
// pipeline. smee.io sends one JSON object: the request's header fields as top-level keys, next to
// `body` (the body it parsed), `query` and `timestamp`; gosmee adds `bodyB`, the raw body in
// base64. The frame is outside input: anything but that shape is a reason, never a crash.

/**
 * Characters of one event's data at most: the largest form body (docs/service.md#limits) in
 * base64, and room for its headers.
 */
export const MAX_RELAY_EVENT_BYTES = Math.ceil((MAX_FORM_BODY_BYTES * 4) / 3) + 1024 * 1024;

/** Keys of the frame that are not header fields. */
const NOT_FIELDS = new Set(['body', 'bodyB', 'query', 'timestamp']);

/**
 * Fields the relay's own connection added or that describe how it received the request, not what
 * the service sent: left out. `content-length` is set anew from the body held.
 */
const RELAY_FIELDS = new Set([
  'host', 'connection', 'keep-alive', 'content-length', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect',
  'proxy-connection', 'accept-encoding', 'x-real-ip', 'cdn-loop', 'via', 'forwarded', 'x-request-id', 'true-client-ip',
]);
const RELAY_FIELD_PREFIXES = ['x-forwarded-', 'cf-'];

const FORM_CONVERTED_WARNING = 'the relay turned this form-encoded delivery into JSON; it was rebuilt as a form';

export type FrameResult = { delivery: InboundDelivery } | { refused: string; headers: Record<string, string>; rawHeaders: string[] };

/** The delivery a frame holds, posted to `path` (the receiver's); or why there is none. */
export function frameDelivery(data: string, channel: string, path: string): FrameResult {
  let frame: unknown;
  try {
    frame = JSON.parse(data);
  } catch {
    return refused('the relay sent an event that is not JSON');
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) return refused('the relay sent an event that is not a JSON object');
  const fields = frame as Record<string, unknown>;
  const headers = Object.create(null) as Record<string, string>;
  const rawHeaders: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    if (NOT_FIELDS.has(key) || typeof value !== 'string') continue;
    const name = key.toLowerCase();
    if (!FIELD_NAME.test(name) || !FIELD_VALUE.test(value) || isRelayField(name) || name in headers) continue;
    headers[name] = value.trim();
    rawHeaders.push(name, value.trim());
  }
  const body = bodiesOf(fields, headers);
  if (typeof body === 'string') return { refused: body, headers, rawHeaders };
  const { bodies, relay } = body;
  const length = String((bodies[bodies.length - 1] as Buffer).length);
  headers['content-length'] = length;
  rawHeaders.push('content-length', length);
  return {
    delivery: {
      target: path + queryOf(fields.query),
      rawHeaders,
      headers,
      bodies,
      relay: { channel, relayedAt: relayedAt(fields.timestamp), ...relay },
      warnings: relay.formConverted ? [FORM_CONVERTED_WARNING] : [],
    },
  };
}

function refused(reason: string): FrameResult {
  return { refused: reason, headers: Object.create(null) as Record<string, string>, rawHeaders: [] };
}

function isRelayField(name: string): boolean {
  return RELAY_FIELDS.has(name) || RELAY_FIELD_PREFIXES.some((prefix) => name.startsWith(prefix));
}

/** The body's candidates and how they came; a string is why the frame holds none. */
function bodiesOf(
  fields: Record<string, unknown>,
  headers: Record<string, string>,
): { bodies: Buffer[]; relay: { body: 'raw' | 're-encoded'; formConverted: boolean } } | string {
  if (Object.hasOwn(fields, 'bodyB')) {
    const raw = fields.bodyB;
    if (typeof raw !== 'string' || raw.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(raw)) return 'the relay sent a bodyB that is not base64';
    return { bodies: [Buffer.from(raw, 'base64')], relay: { body: 'raw', formConverted: false } };
  }
  if (!Object.hasOwn(fields, 'body')) return 'the relay sent an event with neither body nor bodyB';
  const body = fields.body;
  if (contentKind(headers['content-type']) !== 'form') {
    // What smee-client posts: the body serialized again. undefined cannot come out of JSON.parse.
    return { bodies: [Buffer.from(JSON.stringify(body))], relay: { body: 're-encoded', formConverted: false } };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the relay sent a form delivery whose body is not an object of fields';
  const entries = Object.entries(body as Record<string, unknown>);
  if (entries.length === 0 || entries.some(([, value]) => typeof value !== 'string')) return 'the relay sent a form delivery whose fields are not strings';
  const pairs = entries as [string, string][];
  // Which percent-encoding the service used is not known: each is tried against the signature,
  // URLSearchParams's (`+` for a space, as HTML forms encode) kept when none verifies.
  const component = pairs.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&');
  const form = new URLSearchParams(pairs).toString();
  const bodies = component === form ? [Buffer.from(form)] : [Buffer.from(component), Buffer.from(form)];
  return { bodies, relay: { body: 're-encoded', formConverted: true } };
}

/** `?query` of the frame's `query` object (string values, or lists of them), or nothing. */
function queryOf(query: unknown): string {
  if (typeof query !== 'object' || query === null || Array.isArray(query)) return '';
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query as Record<string, unknown>)) {
    for (const one of Array.isArray(value) ? value : [value]) if (typeof one === 'string') params.append(name, one);
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** The frame's `timestamp` (ms since the epoch: a number on smee.io, a string on gosmee) as ISO 8601. */
function relayedAt(timestamp: unknown): string | undefined {
  const ms = typeof timestamp === 'number' ? timestamp : typeof timestamp === 'string' && /^\d{1,15}$/.test(timestamp) ? Number(timestamp) : Number.NaN;
  const date = new Date(ms);
  return Number.isFinite(ms) && !Number.isNaN(date.getTime()) ? date.toISOString() : undefined;
}
