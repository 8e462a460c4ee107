// A reader of server-sent events (the WHATWG HTML standard's "event stream" interpretation): UTF-8,
// a leading BOM dropped, lines ended by CRLF, LF or CR, fields `data`, `event`, `id` and `retry`,
// comments from `:`, an event dispatched at a blank line when it had a `data` line. Ours, not a
// package's, because it is bounded: a line or an event longer than the bound ends the read with
// SseTooLarge instead of growing memory (a relay is outside input). Each event carries the `id`
// given in it, as eventsource-parser hands events on (test/unit/relay-sse.test.ts compares them).

/**
 * What one data line costs beyond its characters: the reader holds a string and a slot for each,
 * so a stream of empty `data:` lines is bounded by what it costs, not by its few characters.
 */
const LINE_COST = 16;

export type SseItem =
  | { type: 'event'; event: string | undefined; data: string; id: string | undefined }
  | { type: 'retry'; ms: number }
  | { type: 'comment'; text: string };

/** A line or an event over the reader's bound. */
export class SseTooLarge extends Error {}

export interface SseReader {
  /** Reads the next bytes; what they complete, in order. Throws SseTooLarge past the bound. */
  push(chunk: Uint8Array): SseItem[];
}

/** `maxChars`: characters of one event's data and its unfinished line, at most. */
export function createSseReader(maxChars: number): SseReader {
  // Decodes across chunk boundaries; a BOM at the start of the stream is dropped (ignoreBOM false).
  const decoder = new TextDecoder('utf-8');
  /** The unfinished line, in pieces: joined once, when its end arrives. */
  let pending: string[] = [];
  let pendingChars = 0;
  /** The last chunk ended with CR: an LF starting the next one ends no second line. */
  let afterCr = false;
  /** The event's data lines, joined once, when it is dispatched: appended one by one, a string would hold a node per line. */
  let data: string[] = [];
  /** What they count against the bound: their characters, and LINE_COST for each. */
  let dataChars = 0;
  let eventType: string | undefined;
  let id: string | undefined;

  function line(text: string, out: SseItem[]): void {
    if (text === '') {
      if (data.length > 0) out.push({ type: 'event', event: eventType, data: data.join('\n'), id });
      data = [];
      dataChars = 0;
      eventType = undefined;
      id = undefined;
      return;
    }
    const colon = text.indexOf(':');
    if (colon === 0) {
      out.push({ type: 'comment', text: text.slice(text.charCodeAt(1) === 0x20 ? 2 : 1) });
      return;
    }
    const field = colon < 0 ? text : text.slice(0, colon);
    const value = colon < 0 ? '' : text.slice(text.charCodeAt(colon + 1) === 0x20 ? colon + 2 : colon + 1);
    if (field === 'data') {
      data.push(value);
      dataChars += value.length + LINE_COST;
    } else if (field === 'event') {
      eventType = value === '' ? undefined : value;
    } else if (field === 'id') {
      if (!value.includes('\u0000')) id = value;
    } else if (field === 'retry') {
      if (/^\d+$/.test(value)) out.push({ type: 'retry', ms: Number.parseInt(value, 10) });
    }
    // Any other field is ignored, as the standard says.
  }

  const tooLarge = () => new SseTooLarge(`an event of the stream is longer than ${maxChars} characters`);

  return {
    push(chunk) {
      const text = decoder.decode(chunk, { stream: true });
      const out: SseItem[] = [];
      let start = 0;
      if (afterCr && text.length > 0) {
        afterCr = false;
        if (text.charCodeAt(0) === 0x0a) start = 1;
      }
      const ends = /[\r\n]/g;
      ends.lastIndex = start;
      for (let match = ends.exec(text); match; match = ends.exec(text)) {
        const end = match.index;
        const piece = text.slice(start, end);
        if (pendingChars + piece.length + dataChars > maxChars) throw tooLarge();
        const whole = pending.length === 0 ? piece : pending.join('') + piece;
        pending = [];
        pendingChars = 0;
        line(whole, out);
        if (dataChars > maxChars) throw tooLarge();
        start = end + 1;
        if (match[0] === '\r') {
          if (start === text.length) afterCr = true;
          else if (text.charCodeAt(start) === 0x0a) start++;
        }
        ends.lastIndex = start;
      }
      if (start < text.length) {
        const rest = text.slice(start);
        pendingChars += rest.length;
        if (pendingChars + dataChars > maxChars) throw tooLarge();
        pending.push(rest);
      }
      return out;
    },
  };
}
