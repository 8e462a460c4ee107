import { createHash } from 'node:crypto';

/** The longest id kept as it is: a delivery id is a GUID (36 characters). */
const LONGEST = 64;

export interface RememberedIds {
  has(id: string): boolean;
  add(id: string): void;
}

/**
 * What is kept of an id. An id is a header value, chosen by the sender: one longer than 64
 * characters, or with a character above 0xff, is kept as its SHA-256, so that none holds more than
 * 65 one-byte characters. The digest is 65 characters long ('#' and 64 hex digits), a length no id
 * kept as it is has, so the two kinds never meet; utf16le hashes every code unit, lone surrogates too.
 */
function keyOf(id: string): string {
  let narrow = id.length <= LONGEST;
  for (let i = 0; narrow && i < id.length; i++) narrow = id.charCodeAt(i) <= 0xff;
  return narrow ? id : `#${createHash('sha256').update(id, 'utf16le').digest('hex')}`;
}

/** The last `capacity` delivery ids, the oldest forgotten first. */
export function rememberedIds(capacity: number): RememberedIds {
  if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a whole number ≥ 1, not ${capacity}`);
  // No seed of our own: V8 hashes a Set's strings with a random seed of each process, so ids cannot be chosen to collide.
  const keys = new Set<string>();
  /** The keys in the order they came: the slot `next` holds the oldest once the ring is full. */
  const ring = new Array<string | undefined>(capacity).fill(undefined);
  let next = 0;

  return {
    has: (id) => keys.has(keyOf(id)),
    add(id) {
      const key = keyOf(id);
      if (keys.has(key)) return;
      const oldest = ring[next];
      if (oldest !== undefined) keys.delete(oldest);
      ring[next] = key;
      next = next + 1 === capacity ? 0 : next + 1;
      keys.add(key);
    },
  };
}
