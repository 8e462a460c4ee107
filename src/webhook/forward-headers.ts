import { redactHeader } from '../api/redact.js';
import { DELIVERY_HEADERS } from '../api/types.js';
import { UsageError } from '../errors.js';

// `listen --forward-header 'Name: value'`: fields added to every forward, beside the delivery's own,
// which pass unchanged.

export interface ForwardHeader {
  name: string;
  value: string;
}

/** Fields of the connection, not of the delivery: a forward makes its own (sender.ts leaves them out too). */
const HOP_BY_HOP = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'te', 'trailer', 'upgrade', 'proxy-connection', 'expect']);

/** What docs/service.md#delivery-headers says a delivery carries: an app checks them, so none is replaced. */
const DELIVERY_OWN: ReadonlySet<string> = new Set(Object.values(DELIVERY_HEADERS));

/** RFC 9110's token: the characters a field name is made of. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/i;

/**
 * The fields of `--forward-header` values, each checked: `Name: value` with a valid name and a
 * value of visible characters, spaces and tabs; none of the connection's own fields, none that a
 * delivery carries (`X-Service-*`, `X-Hub-Signature*`, `User-Agent`, `Content-Type`), and no
 * `Authorization` when the target's URL carries a user and password (sent as Authorization).
 */
export function parseForwardHeaders(values: readonly string[], targetHasCredentials: boolean): ForwardHeader[] {
  return values.map((given) => {
    const colon = given.indexOf(':');
    const name = (colon < 0 ? given : given.slice(0, colon)).trim();
    const value = colon < 0 ? '' : given.slice(colon + 1).trim();
    const refuse = (why: string, hint: string) => new UsageError(`--forward-header "${shownHeader({ name, value })}" ${why}`, { hint });
    const form = 'write it as \'Name: value\', such as --forward-header \'X-Env: dev\'';
    // Without a colon the whole value may be a credential missing its name: it is not repeated.
    if (colon < 0) throw new UsageError('a --forward-header value has no colon: it is not a header field', { hint: form });
    if (!TOKEN.test(name)) throw new UsageError(`--forward-header "${name}: …" is not a header field: "${name}" cannot be a field name`, { hint: form });
    // Controls would end the field early (CR, LF) or be refused by the HTTP client at each forward;
    // C1 controls (U+0080–U+009F) are no more visible.
    if (/[\0-\x08\x0a-\x1f\x7f-\x9f]/.test(value)) throw refuse('holds a control character, which no header value can', 'give a value of printable characters');
    if (value === '') throw refuse('has no value', `give ${name} a value (an empty one, as from an unset variable, is refused)`);
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower)) throw refuse(`names ${name}, a field of the connection, which each forward sets itself`, 'leave it out');
    if (DELIVERY_OWN.has(lower) || lower.startsWith('x-service-') || lower.startsWith('x-hub-signature')) {
      throw refuse(`would replace the delivery's own ${name}, which is forwarded unchanged`, 'add a field of another name; the delivery\'s own fields reach the app as the service sent them');
    }
    if (lower === 'authorization' && targetHasCredentials) {
      throw refuse('would replace the user and password of --forward-to, sent as Authorization', 'give the credentials once: in --forward-to or in --forward-header');
    }
    return { name, value };
  });
}

/** A field as it may be printed: a value that looks like a credential is never shown. */
export function shownHeader(header: ForwardHeader): string {
  return `${header.name}: ${redactHeader(header.name, header.value)}`;
}
