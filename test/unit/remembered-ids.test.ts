import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { rememberedIds } from '../../src/webhook/remembered-ids.js';

describe('the delivery ids a receiver remembers', () => {
  it('knows what it was told', () => {
    const ids = rememberedIds(3);
    ids.add('a');
    expect(ids.has('a')).toBe(true);
    expect(ids.has('b')).toBe(false);
  });

  it('forgets the oldest first once full, and only it', () => {
    const ids = rememberedIds(3);
    for (const id of ['a', 'b', 'c', 'd']) ids.add(id);
    expect(['a', 'b', 'c', 'd'].map((id) => ids.has(id))).toEqual([false, true, true, true]);
    ids.add('e');
    expect(['b', 'c', 'd', 'e'].map((id) => ids.has(id))).toEqual([false, true, true, true]);
  });

  it('an id told twice takes one place: it does not push out another', () => {
    const ids = rememberedIds(2);
    ids.add('a');
    ids.add('a');
    ids.add('b');
    expect([ids.has('a'), ids.has('b')]).toEqual([true, true]);
    // Told again, 'a' is not made newer: it is still the oldest, and the next to go.
    ids.add('a');
    ids.add('c');
    expect(['a', 'b', 'c'].map((id) => ids.has(id))).toEqual([false, true, true]);
  });

  it('with room for one, holds the last id only', () => {
    const ids = rememberedIds(1);
    ids.add('a');
    ids.add('a');
    expect(ids.has('a')).toBe(true);
    ids.add('b');
    expect([ids.has('a'), ids.has('b')]).toEqual([false, true]);
  });

  it('refuses a capacity that holds nothing', () => {
    for (const capacity of [0, -1, 1.5, Number.NaN]) expect(() => rememberedIds(capacity)).toThrow(RangeError);
  });

  it('keeps the newest of many more ids than it holds', () => {
    const ids = rememberedIds(1000);
    for (let n = 0; n < 250_000; n++) ids.add(`id-${n}`);
    expect(ids.has('id-248999')).toBe(false);
    expect(ids.has('id-249000')).toBe(true);
    expect(ids.has('id-249999')).toBe(true);
  });

  it('agrees with a list of the last ids over a long stream of repeated and new ones', () => {
    const capacity = 257;
    const ids = rememberedIds(capacity);
    const order: string[] = [];
    let seed = 22;
    const random = () => (seed = Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) >>> 0) % 600;
    for (let n = 0; n < 20_000; n++) {
      const id = `id-${random()}`;
      const expected = order.slice(-capacity).includes(id);
      expect(ids.has(id), `${n}: ${id}`).toBe(expected);
      if (!expected) {
        ids.add(id);
        order.push(id);
      }
    }
  });
});

describe('what is kept of each id', () => {
  it('remembers an id longer than 64 characters, or with a wide character', () => {
    const ids = rememberedIds(10);
    const long = 'x'.repeat(5000);
    ids.add(long);
    ids.add('\u0161bc');
    expect([ids.has(long), ids.has('x'.repeat(5000)), ids.has('\u0161bc')]).toEqual([true, true, true]);
    expect(['x'.repeat(4999), `${long}y`, 'x'.repeat(64), 'x'.repeat(65), 'sbc', '\u0160bc'].some((id) => ids.has(id))).toBe(false);
  });

  it('tells apart long ids that differ only after their 64th character', () => {
    const ids = rememberedIds(10);
    const start = 'd'.repeat(64);
    ids.add(`${start}a`);
    expect([ids.has(`${start}a`), ids.has(`${start}b`), ids.has(start)]).toEqual([true, false, false]);
    ids.add(`${start}b`);
    expect([ids.has(`${start}a`), ids.has(`${start}b`)]).toEqual([true, true]);
  });

  it('never takes an id for the digest kept of another', () => {
    const long = 'y'.repeat(100);
    const hex = createHash('sha256').update(long, 'utf16le').digest('hex');
    const ids = rememberedIds(10);
    ids.add(long);
    expect([hex, `#${hex}`, `#${hex}`.slice(0, 64)].some((id) => ids.has(id))).toBe(false);
    ids.add(hex);
    expect([ids.has(long), ids.has(hex)]).toEqual([true, true]);
  });

  it('tells apart ids that differ only in a lone surrogate', () => {
    const ids = rememberedIds(10);
    ids.add('a\ud800');
    expect([ids.has('a\ud800'), ids.has('a\udc00'), ids.has('a\ufffd')]).toEqual([true, false, false]);
  });

  it('tells ids apart character for character, however alike', () => {
    const ids = rememberedIds(100);
    for (const id of ['abc', 'abd', 'ab', 'ABC', '\u00e9']) ids.add(id);
    expect(['abc', 'abd', 'ab', 'ABC', '\u00e9'].every((id) => ids.has(id))).toBe(true);
    expect(['abcd', 'a', 'abC', 'e', ''].some((id) => ids.has(id))).toBe(false);
  });
});
