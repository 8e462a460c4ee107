import { describe, expect, it } from 'vitest';
import { parseSaved } from '../../src/webhook/store.js';

const saved = (lines: string[], body: string, end = '\r\n') => Buffer.from(`${lines.join(end)}${end}${end}${body}`, 'latin1');
const HEAD = ['# svc-migrate delivery; received 2026-11-25T00:00:00.000Z; sequence 1', 'POST /hooks HTTP/1.1', 'X-Service-Event: ping'];

describe('a saved delivery read back', () => {
  it('keeps each header byte for byte, and the body', () => {
    const parsed = parseSaved('a.http', saved([...HEAD, 'X-Latin1: \xc0\xff', 'Content-Length: 0002'], '{}'));
    expect(parsed).toMatchObject({ method: 'POST', path: '/hooks', sequence: 1 });
    expect(parsed.rawHeaders).toEqual(['X-Service-Event', 'ping', 'X-Latin1', '\u00c0\u00ff', 'Content-Length', '0002']);
    expect(parsed.body.toString()).toBe('{}');
  });

  it.each([
    ['its lines converted to LF', saved(HEAD, '{}', '\n'), /its lines end in LF, not CRLF: was it converted\?/],
    ['no blank line', Buffer.from(HEAD.join('\r\n')), /no blank line after the headers/],
    ['a body shorter than its Content-Length', saved([...HEAD, 'Content-Length: 5'], '{}'), /Content-Length does not match its body of 2 bytes/],
    ['two Content-Lengths', saved([...HEAD, 'Content-Length: 2', 'Content-Length: 2'], '{}'), /more than one Content-Length field/],
    ['two Hosts', saved([...HEAD, 'Host: a', 'host: b'], '{}'), /more than one host field/],
    ['a value with spaces around it', saved([...HEAD, 'X-A: \tb '], '{}'), /a malformed header line/],
    ['a GET', saved([HEAD[0] as string, 'GET /hooks HTTP/1.1'], ''), /a GET request; deliveries are POSTs/],
    ['a NUL in a value', saved([...HEAD, 'X-A: a\u0000b'], '{}'), /a malformed header line/],
    ['a space in a name', saved([...HEAD, 'Bad Name: x'], '{}'), /a malformed header line/],
  ])('is refused with a reason: %s', (_case, data, reason) => {
    expect(() => parseSaved('a.http', data)).toThrow(reason);
  });
});
