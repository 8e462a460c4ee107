import { isIP } from 'node:net';

// The few DER encodings (ITU-T X.690) an X.509 certificate of certificates.ts is made of. Each
// function returns one whole element: its tag, its length, its content.

/** One element: a tag byte, its length in DER's shortest form, the content. */
export function element(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const length = body.length;
  if (length < 0x80) return Buffer.concat([Buffer.from([tag, length]), body]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.concat([Buffer.from([tag, 0x80 | bytes.length, ...bytes]), body]);
}

export const sequence = (...content: Buffer[]) => element(0x30, ...content);
export const set = (...content: Buffer[]) => element(0x31, ...content);
export const octetString = (content: Buffer) => element(0x04, content);
export const utf8String = (text: string) => element(0x0c, Buffer.from(text, 'utf8'));
/** A constructed context-specific tag, `[n]` in the ASN.1 of RFC 5280 (explicitly tagged). */
export const explicit = (n: number, ...content: Buffer[]) => element(0xa0 | n, ...content);
export const boolean = (value: boolean) => element(0x01, Buffer.from([value ? 0xff : 0x00]));

/** A non-negative integer from its big-endian bytes: a leading zero where the top bit is set, none beyond. */
export function unsignedInteger(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return element(0x02, (trimmed[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

/** A bit string whose last byte has `unusedBits` bits of padding. */
export const bitString = (bytes: Buffer, unusedBits = 0) => element(0x03, Buffer.from([unusedBits]), bytes);

/** An object identifier from its dotted form, "1.2.840.10045.4.3.2". */
export function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * first + second];
  for (const arc of rest) {
    const groups = [arc & 0x7f];
    for (let value = Math.floor(arc / 128); value > 0; value = Math.floor(value / 128)) groups.unshift(0x80 | (value & 0x7f));
    bytes.push(...groups);
  }
  return element(0x06, Buffer.from(bytes));
}

/** RFC 5280's Time: UTCTime for the years 1950–2049, GeneralizedTime otherwise, in whole seconds, UTC. */
export function time(date: Date): Buffer {
  const digits = date.toISOString().replace(/[-:T]|\.\d{3}/g, '');
  const year = date.getUTCFullYear();
  return year >= 1950 && year < 2050 ? element(0x17, Buffer.from(digits.slice(2), 'ascii')) : element(0x18, Buffer.from(digits, 'ascii'));
}

/** A GeneralName of a subjectAltName: an IP address (`[7]`, its bytes) or a DNS name (`[2]`). */
export function generalName(name: string): Buffer {
  const version = isIP(name);
  if (version === 4) return element(0x87, Buffer.from(name.split('.').map(Number)));
  if (version === 6) return element(0x87, ipv6Bytes(name));
  return element(0x82, Buffer.from(name, 'ascii'));
}

/** The 16 bytes of an IPv6 address in any spelling URL accepts ("::1", "[::1]"). */
function ipv6Bytes(address: string): Buffer {
  const canonical = new URL(`http://[${address.replace(/^\[|\]$/g, '')}]/`).hostname.slice(1, -1);
  const [head = '', tail = ''] = canonical.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const left = groups(head);
  const right = groups(tail);
  const all = canonical.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  const bytes = Buffer.alloc(16);
  all.forEach((group, i) => bytes.writeUInt16BE(Number.parseInt(group, 16), i * 2));
  return bytes;
}
