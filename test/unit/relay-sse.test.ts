import { createParser } from 'eventsource-parser';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_RELAY_EVENT_BYTES } from '../../src/webhook/relay/frame.js';
import { createSseReader, type SseItem, SseTooLarge } from '../../src/webhook/relay/sse.js';

// Our reader of server-sent events (src/webhook/relay/sse.ts) against eventsource-parser, the
// parser the `eventsource` package (and so smee-client) reads relays with, fed what a browser's
// TextDecoder makes of the same bytes: random streams of events, comments, retry and id fields,
// unknown fields, CR, LF and CRLF line ends, a BOM, cut at random byte boundaries (through
// multi-byte characters and between a CR and its LF).

type Item = SseItem;

function reference(bytes: Uint8Array): Item[] {
  const out: Item[] = [];
  const parser = createParser({
    onEvent: (event) => out.push({ type: 'event', event: event.event, data: event.data, id: event.id }),
    onRetry: (ms) => out.push({ type: 'retry', ms }),
    onComment: (text) => out.push({ type: 'comment', text }),
  });
  // As EventSource reads: UTF-8 decoded, a leading BOM dropped by the decoder.
  parser.feed(new TextDecoder('utf-8').decode(bytes));
  return out;
}

function ours(chunks: Uint8Array[], max = 1 << 20): Item[] {
  const reader = createSseReader(max);
  return chunks.flatMap((chunk) => reader.push(chunk));
}

/** Cuts bytes at the given positions (sorted, deduplicated, inside the buffer). */
function cut(bytes: Uint8Array, at: number[]): Uint8Array[] {
  const points = [...new Set(at.map((n) => n % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let start = 0;
  for (const point of [...points, bytes.length]) {
    chunks.push(bytes.subarray(start, point));
    start = point;
  }
  return chunks;
}

const text = fc.string({ unit: fc.constantFrom('a', 'b', ' ', ':', 'é', '€', '😀', '\u0000', 'data', 'id', '{', '"', 'x') as fc.Arbitrary<string>, maxLength: 12 });
const end = fc.constantFrom('\n', '\r', '\r\n');
const line = fc.oneof(
  fc.tuple(fc.constantFrom('data', 'event', 'id', 'retry', 'other', ''), fc.constantFrom(':', ': ', ':  ', ''), text).map(([f, sep, v]) => `${f}${sep}${v}`),
  fc.tuple(fc.constantFrom('retry: ', 'retry:'), fc.nat({ max: 99_999 })).map(([f, n]) => `${f}${n}`),
  text.map((t) => `:${t}`),
  fc.constant(''),
);
const stream = fc
  .tuple(fc.boolean(), fc.array(fc.tuple(line, end), { maxLength: 30 }))
  // A last complete line, so that neither reader holds a CR waiting for its LF at the end.
  .map(([bom, lines]) => `${bom ? '\uFEFF' : ''}${lines.map(([l, e]) => l + e).join('')}\n:end\n`);

describe('relay SSE reader (src/webhook/relay/sse.ts)', () => {
  it('reads what eventsource-parser reads, however the stream is cut', () => {
    fc.assert(
      fc.property(stream, fc.array(fc.nat(), { maxLength: 12 }), (source, at) => {
        const bytes = new TextEncoder().encode(source);
        expect(ours(cut(bytes, at))).toEqual(reference(bytes));
      }),
      { numRuns: 2000 },
    );
  });

  it('reads one byte at a time as it reads the whole', () => {
    fc.assert(
      fc.property(stream, (source) => {
        const bytes = new TextEncoder().encode(source);
        const single = [...bytes].map((byte) => Uint8Array.of(byte));
        expect(ours(single)).toEqual(ours([bytes]));
      }),
      { numRuns: 300 },
    );
  });

  it('reads smee.io\'s frames: ready, ping and an unnamed event with its id', () => {
    const bytes = new TextEncoder().encode('id: 0\nevent: ready\ndata: {}\n\nid: 1\nevent: ping\ndata: {}\n\nid: 2\ndata: {"body":{"a":1}}\n\n');
    expect(ours([bytes])).toEqual([
      { type: 'event', event: 'ready', data: '{}', id: '0' },
      { type: 'event', event: 'ping', data: '{}', id: '1' },
      { type: 'event', event: undefined, data: '{"body":{"a":1}}', id: '2' },
    ]);
  });

  it('joins multi-line data with LF, drops a leading BOM only, and dispatches nothing without data', () => {
    const bytes = new TextEncoder().encode('\uFEFFdata: a\r\ndata:b\rdata\n\nevent: x\n\n\uFEFFdata: c\n\n');
    // The second BOM is not at the stream's start: it makes `\uFEFFdata` an unknown field.
    expect(ours(cut(bytes, [1, 2, 9, 10]))).toEqual([{ type: 'event', event: undefined, data: 'a\nb\n', id: undefined }]);
  });

  it('ends the read past its bound: a long line, or long data over several lines, never grows', () => {
    const long = new TextEncoder().encode(`data: ${'x'.repeat(200)}`);
    expect(() => ours(cut(long, [10, 50, 120]), 100)).toThrow(SseTooLarge);
    const lines = new TextEncoder().encode(`${'data: 0123456789\n'.repeat(20)}\n`);
    expect(() => ours([lines], 100)).toThrow(SseTooLarge);
    // Within the bound, the same data reads.
    expect(ours([lines], 1000)).toHaveLength(1);
  });

  it('bounds an event of endless empty data lines by what its lines cost, not by their few characters', () => {
    // A relay's `data:\n` again and again: 60 M of them once took 2 GB (a string node a line).
    const reader = createSseReader(MAX_RELAY_EVENT_BYTES);
    const chunk = Buffer.from('data:\n'.repeat(100_000));
    const before = process.memoryUsage().heapUsed;
    let lines = 0;
    let peak = 0;
    expect(() => {
      for (;;) {
        reader.push(chunk);
        lines += 100_000;
        peak = Math.max(peak, process.memoryUsage().heapUsed - before);
      }
    }).toThrow(SseTooLarge);
    expect(lines).toBeLessThan(MAX_RELAY_EVENT_BYTES / 8);
    expect(peak).toBeLessThan(256 * 1024 * 1024);
  });
});
