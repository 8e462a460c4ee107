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
  });

  it('keeps the newest of many more ids than it holds', () => {
    const ids = rememberedIds(1000);
    for (let n = 0; n < 250_000; n++) ids.add(`id-${n}`);
    expect(ids.has('id-248999')).toBe(false);
    expect(ids.has('id-249000')).toBe(true);
    expect(ids.has('id-249999')).toBe(true);
  });
});

describe('what is kept of each id', () => {
  it('tells ids apart byte for byte, however alike, and holds long ones by their digest', () => {
    const ids = rememberedIds(100);
    const long = 'x'.repeat(5000);
    for (const id of ['abc', 'abd', 'ab', 'ABC', '\u00e9', long]) ids.add(id);
    expect(['abc', 'abd', 'ab', 'ABC', '\u00e9', long].every((id) => ids.has(id))).toBe(true);
    expect(['abcd', 'a', 'abC', 'e', `${long}y`, 'x'.repeat(4999), 'x'.repeat(64), '\u0161bc'].some((id) => ids.has(id))).toBe(false);
  });

  it('agrees with a plain set over a long stream of repeated and new ids', () => {
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

describe('ids chosen to collide', () => {
  /** FNV-1a as published (fixed offset basis), which a sender can compute for any id. */
  const publishedFnv = (text: string) => {
    let hash = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
    return hash >>> 0;
  };

  it('do not make lookups walk each other: the hash is seeded and mixed', () => {
    // A table of 256 has 1,024 places: these 300 ids all land in place 0 under the published hash.
    const crafted: string[] = [];
    for (let n = 0; crafted.length < 300; n++) if ((publishedFnv(`id-${n}`) & 1023) === 0) crafted.push(`id-${n}`);
    const ids = rememberedIds(256);
    for (const id of crafted) if (!ids.has(id)) ids.add(id);
    expect(crafted.slice(-256).every((id) => ids.has(id))).toBe(true);
    // About one place a lookup; walking each other would be 45,000.
    expect(ids.probes()).toBeLessThan(crafted.length * 2 * 4);
  });
});
