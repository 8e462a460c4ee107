import { redactHeader, scrub } from '../api/redact.js';
import { request } from '../api/undici.js';

// The only HTTP of the webhook side: sending a delivery (send, replay) and forwarding one (listen).

export interface PostResult {
  status: number;
  ms: number;
  /** The first bytes of the answer, for the user to see what the receiver said. */
  preview: string;
}

/**
 * Headers a proxy or a re-send must not copy: they describe the old connection or how its body
 * was sent (`Expect: 100-continue` from curl, say), not the delivery.
 */
const HOP_BY_HOP = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-connection', 'expect']);

/**
 * The header fields of a delivery to send again, as undici takes them raw: name, value, name,
 * value…, in the order received, a repeated field with each of its values, without the hop-by-hop
 * fields and those `leaveOut` names. A list, not a record: a field named `constructor` or
 * `__proto__` is a field like any other.
 */
export function sendableHeaders(rawHeaders: string[], leaveOut: (name: string) => boolean = () => false): string[] {
  const headers: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (!HOP_BY_HOP.has(name.toLowerCase()) && !leaveOut(name)) headers.push(name, rawHeaders[i + 1] as string);
  }
  return headers;
}

/** Characters of an answer shown to the user; bytes read for them (UTF-8 takes up to four for one). */
const PREVIEW_CHARS = 120;
const PREVIEW_BYTES = PREVIEW_CHARS * 4;

/**
 * POSTs exact bytes with the given headers; never throws for an HTTP status, only for a failure to
 * talk. Of the answer, only what is shown is read: the rest is dropped with the connection, so a
 * target that answers without end costs nothing.
 */
export async function postDelivery(
  url: string,
  headers: Record<string, string> | string[],
  body: Buffer,
  timeoutMs: number,
  /** Ctrl-C: the request is abandoned. */
  signal?: AbortSignal,
): Promise<PostResult> {
  const started = performance.now();
  const target = new URL(url);
  // The whole exchange within timeoutMs (undici's own timeouts bound each wait, not their sum: a
  // target trickling a byte a second would hold it for hours), or until Ctrl-C. A timer of our
  // own, not AbortSignal.any([AbortSignal.timeout(…), signal]): Node 20 may collect the timeout
  // signal inside `any`, which then never fires.
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
  const stop = () => deadline.abort(signal?.reason);
  signal?.addEventListener('abort', stop, { once: true });
  try {
    signal?.throwIfAborted();
    const sent = withCredentials(target, headers);
    const response = await request(target, {
      method: 'POST',
      headers: sent,
      body,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: deadline.signal,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let complete = true;
    try {
      for await (const chunk of response.body) {
        const bytes = chunk as Buffer;
        chunks.push(bytes);
        size += bytes.length;
        if (size >= PREVIEW_BYTES) {
          complete = false;
          break;
        }
      }
    } catch {
      // A body cut, stalled or past the deadline after the status line is still an answer: its
      // status is what counts, and what was read of it is shown. Only Ctrl-C ends the send here.
      signal?.throwIfAborted();
    } finally {
      if (!complete) response.body.destroy();
    }
    // Credentials are taken out before the text is cut, so that none is shown even in part.
    const text = scrub(Buffer.concat(chunks, size).subarray(0, PREVIEW_BYTES).toString('utf8'), credentialsSent(sent));
    return { status: response.statusCode, ms: Math.round(performance.now() - started), preview: text.slice(0, PREVIEW_CHARS) };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', stop);
  }
}

/**
 * The credentials among the fields sent, as an answer that echoes them would hold them (an app's
 * "bad token" page, an echo server): each value printed redacted (Authorization, X-Api-Key,
 * Cookie…), after its scheme if it has one, and Basic's user and password decoded. Not the
 * delivery's signature: an HMAC of the payload gives its secret away to no one.
 */
function credentialsSent(headers: Record<string, string> | string[]): string[] {
  const pairs = Array.isArray(headers) ? headers : Object.entries(headers).flat();
  const found: string[] = [];
  for (let i = 0; i < pairs.length; i += 2) {
    const name = pairs[i] as string;
    // The bytes sent, read back as the UTF-8 an answer echoing them holds.
    const value = Buffer.from(pairs[i + 1] as string, 'latin1').toString('utf8');
    if (/^x-hub-signature/i.test(name) || redactHeader(name, value) === value) continue;
    // What the printed field hides: after its scheme (`Bearer …`) where it shows one.
    const shown = redactHeader(name, value);
    const credential = shown.endsWith(' [REDACTED]') ? value.slice(shown.length - ' [REDACTED]'.length).trim() : value;
    found.push(credential);
    if (/^basic\s/i.test(value)) {
      const pair = Buffer.from(credential, 'base64').toString('utf8');
      found.push(pair, pair.slice(pair.indexOf(':') + 1));
    }
  }
  // The longest first: a credential holding another is taken out whole.
  return found.sort((a, b) => b.length - a.length);
}

/**
 * The user and password of a URL (http://user:pass@host/), which undici would leave out in
 * silence, sent as Basic credentials, as curl sends them; they are then taken out of the URL.
 */
function withCredentials(url: URL, headers: Record<string, string> | string[]): Record<string, string> | string[] {
  if (!url.username && !url.password) return headers;
  const pairs = Array.isArray(headers) ? headers : Object.entries(headers).flat();
  const sent: string[] = [];
  for (let i = 0; i < pairs.length; i += 2) {
    if ((pairs[i] as string).toLowerCase() !== 'authorization') sent.push(pairs[i] as string, pairs[i + 1] as string);
  }
  const credentials = `${percentDecoded(url.username)}:${percentDecoded(url.password)}`;
  sent.push('authorization', `Basic ${Buffer.from(credentials).toString('base64')}`);
  url.username = '';
  url.password = '';
  return sent;
}

function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
