import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChunkedDecoder, HttpRequestError, parseRequestHead } from '../../src/webhook/http-request.js';

// The receiver's request reader: what it accepts, and everything it refuses rather than guesses.

const head = (...lines: string[]) => lines.join('\r\n');
const statusOf = (text: string) => {
  try {
    parseRequestHead(text);
    return 'ok';
  } catch (error) {
    expect(error).toBeInstanceOf(HttpRequestError);
    return (error as HttpRequestError).status;
  }
};

describe('request heads', () => {
  it('reads the request line and fields: names kept as sent, looked up in lower case, repeats joined', () => {
    const parsed = parseRequestHead(
      head('POST /hooks?x=1 HTTP/1.1', 'Host: localhost:8787', 'X-Service-Event:push', 'Content-Length: 12', 'Accept: a', 'accept:  b \t'),
    );
    expect(parsed).toMatchObject({ method: 'POST', target: '/hooks?x=1', version: '1.1', keepAlive: true, expectContinue: false });
    expect(parsed.framing).toEqual({ kind: 'length', length: 12 });
    expect(parsed.rawHeaders).toEqual(['Host', 'localhost:8787', 'X-Service-Event', 'push', 'Content-Length', '12', 'Accept', 'a', 'accept', 'b']);
    expect(parsed.headers['x-service-event']).toBe('push');
    expect(parsed.headers.accept).toBe('a, b');
    const repeated = parseRequestHead(head('POST / HTTP/1.1', 'Host: h', 'User-Agent: u1', 'User-Agent: u2', 'Cookie: a=1', 'Cookie: b=2'));
    expect([repeated.headers['user-agent'], repeated.headers.cookie]).toEqual(['u1', 'a=1; b=2']);
    expect(repeated.rawHeaders).toEqual(['Host', 'h', 'User-Agent', 'u1', 'User-Agent', 'u2', 'Cookie', 'a=1', 'Cookie', 'b=2']);
    // A refused repeat is named as it was sent.
    expect(() => parseRequestHead(head('POST / HTTP/1.1', 'Host: a', 'hOsT: b'))).toThrow('more than one hOsT field');
    // A field named like an Object.prototype member is just a field.
    const named = parseRequestHead(head('POST / HTTP/1.1', 'Host: h', '__proto__: x', 'Constructor: c', 'Constructor: d')).headers;
    expect([named.__proto__, named.constructor]).toEqual(['x', 'c, d']);
    expect(['toString' in named, 'hasOwnProperty' in named]).toEqual([false, false]);
    // Names are found in the lower-cased head by place: a value's latin1 capitals keep those places.
    const latin1 = parseRequestHead(head('POST / HTTP/1.1', 'Host: h', 'X-A: \u00c0\u00de\u00ff', 'X-Service-Event: push')).headers;
    expect([latin1['x-a'], latin1['x-service-event']]).toEqual(['\u00c0\u00de\u00ff', 'push']);
  });

  it('knows when the connection stays open, and when the sender waits for 100 Continue', () => {
    expect(parseRequestHead(head('POST / HTTP/1.1', 'Host: h', 'Connection: close')).keepAlive).toBe(false);
    expect(parseRequestHead(head('POST / HTTP/1.0')).keepAlive).toBe(false);
    expect(parseRequestHead(head('POST / HTTP/1.0', 'Connection: Keep-Alive')).keepAlive).toBe(true);
    expect(parseRequestHead(head('POST / HTTP/1.1', 'Host: h', 'Expect: 100-Continue')).expectContinue).toBe(true);
    expect(parseRequestHead(head('POST / HTTP/1.1', 'Host: h', 'Transfer-Encoding: Chunked')).framing).toEqual({ kind: 'chunked' });
    expect(parseRequestHead(head('POST / HTTP/1.1', 'Host: h', 'Content-Length: 0')).framing).toEqual({ kind: 'none' });
  });

  it.each([
    ['a bare LF', head('POST / HTTP/1.1', 'Host: h\nX: y'), 400],
    ['a bare CR', head('POST / HTTP/1.1', 'Host: h\rX: y'), 400],
    ['a NUL in a value', head('POST / HTTP/1.1', 'Host: h', 'X: a\u0000b'), 400],
    ['an escape in a value', head('POST / HTTP/1.1', 'Host: h', 'X: \u001b]0;title\u0007'), 400],
    ['a folded line', head('POST / HTTP/1.1', 'Host: h', 'X: a', ' b'), 400],
    ['space before the colon', head('POST / HTTP/1.1', 'Host: h', 'X : a'), 400],
    ['a field without a colon', head('POST / HTTP/1.1', 'Host: h', 'nonsense'), 400],
    ['an empty field name', head('POST / HTTP/1.1', 'Host: h', ': a'), 400],
    ['two spaces in the request line', 'POST  / HTTP/1.1\r\nHost: h', 400],
    ['a space in the target', 'POST /a b HTTP/1.1\r\nHost: h', 400],
    ['a non-ASCII target', 'POST /\u00e9 HTTP/1.1\r\nHost: h', 400],
    ['a method that is not a token', 'PO(ST / HTTP/1.1\r\nHost: h', 400],
    ['not HTTP', 'POST / FTP/1.1\r\nHost: h', 400],
    ['HTTP/2', 'PRI * HTTP/2.0', 505],
    ['no Host on HTTP/1.1', 'POST / HTTP/1.1', 400],
    ['two Host fields', head('POST / HTTP/1.1', 'Host: a', 'Host: b'), 400],
    ['two Content-Length fields', head('POST / HTTP/1.1', 'Host: h', 'Content-Length: 1', 'Content-Length: 1'), 400],
    ['a list in Content-Length', head('POST / HTTP/1.1', 'Host: h', 'Content-Length: 1, 1'), 400],
    ['a signed Content-Length', head('POST / HTTP/1.1', 'Host: h', 'Content-Length: +1'), 400],
    ['a huge Content-Length', head('POST / HTTP/1.1', 'Host: h', `Content-Length: ${'9'.repeat(16)}`), 400],
    ['two Content-Type fields', head('POST / HTTP/1.1', 'Host: h', 'Content-Type: a', 'Content-Type: b'), 400],
    ['Transfer-Encoding and Content-Length', head('POST / HTTP/1.1', 'Host: h', 'Transfer-Encoding: chunked', 'Content-Length: 3'), 400],
    ['Transfer-Encoding on HTTP/1.0', head('POST / HTTP/1.0', 'Transfer-Encoding: chunked'), 400],
    ['gzip', head('POST / HTTP/1.1', 'Host: h', 'Transfer-Encoding: gzip, chunked'), 501],
    ['chunked twice', head('POST / HTTP/1.1', 'Host: h', 'Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'), 501],
    ['an Expect it cannot meet', head('POST / HTTP/1.1', 'Host: h', 'Expect: 200-ok'), 417],
  ])('refuses %s', (_name, text, status) => {
    expect(statusOf(text)).toBe(status);
  });

  it('refuses or reads any head without throwing anything but its own error', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300, unit: 'binary' }), (text) => {
        expect(['ok', 400, 417, 501, 505]).toContain(statusOf(`POST / HTTP/1.1\r\nHost: h\r\n${text}`));
        expect(['ok', 400, 417, 501, 505]).toContain(statusOf(text));
      }),
      { seed: 22, numRuns: 2000 },
    );
  });
});

describe('chunked bodies', () => {
  const decode = (pieces: Buffer[]) => {
    const decoder = new ChunkedDecoder();
    const data: Buffer[] = [];
    for (const [index, piece] of pieces.entries()) {
      const result = decoder.push(piece);
      data.push(...result.data);
      if (result.end !== undefined) return { body: Buffer.concat(data).toString(), rest: piece.subarray(result.end).toString(), index };
    }
    return { body: Buffer.concat(data).toString(), rest: undefined, index: -1 };
  };

  it('decodes chunks, extensions and trailers, wherever the bytes are cut, and says where the message ended', () => {
    const wire = '5;name="v"\r\nhello\r\nA \r\n, world!!!\r\n0\r\nX-Trailer: 1\r\n\r\nPOST / HTTP/1.1';
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: wire.length - 1 }), { maxLength: 6 }), (cuts) => {
        const points = [0, ...cuts.sort((a, b) => a - b), wire.length];
        const pieces = points.slice(1).map((end, i) => Buffer.from(wire.slice(points[i], end)));
        const decoded = decode(pieces);
        expect(decoded.body).toBe('hello, world!!!');
        // What follows the message is the next request's, wherever the cut fell.
        expect(pieces.slice(decoded.index + 1).reduce((text, piece) => text + piece.toString(), decoded.rest ?? '')).toBe('POST / HTTP/1.1');
      }),
      { seed: 22 },
    );
  });

  it.each([
    ['a size that is not hex', 'zz\r\n', 400],
    ['a size of nine digits', '100000000\r\n', 400],
    ['data longer than its size', '2\r\nabc\r\n', 400],
    ['a line ending in LF alone', '2\nab\r\n', 400],
    ['an endless size line', `1;${'x'.repeat(5000)}`, 400],
    ['a malformed trailer', '0\r\nnot a field\r\n\r\n', 400],
    ['endless trailers', `0\r\n${'X-A: b\r\n'.repeat(3000)}`, 431],
    ['one-byte chunks, whose framing outweighs their data', '1\r\na\r\n'.repeat(20_000), 413],
    ['small chunks behind long extensions', `1;${'x'.repeat(4000)}\r\na\r\n`.repeat(20), 413],
  ])('refuses %s', (_name, wire, status) => {
    expect(() => decode([Buffer.from(wire)])).toThrow(expect.objectContaining({ status }));
  });

  it('reads a chunk size with any number of leading zeros', () => {
    expect(decode([Buffer.from('0000000005\r\nhello\r\n00000000000\r\n\r\n')]).body).toBe('hello');
  });

  it('reads chunks of a hundred bytes, with short extensions, as far as the body goes', () => {
    const wire = `${'64;v=1\r\n'.concat('a'.repeat(100), '\r\n').repeat(5000)}0\r\n\r\n`;
    expect(decode([Buffer.from(wire)]).body).toHaveLength(500_000);
  });
});
