import { createHash } from 'node:crypto';

/** Bytes kept of each id: a delivery id is a GUID (36); a longer one is kept as its SHA-256. */
const SLOT = 64;
const DIGEST = SLOT + 1;
/** A character latin1 cannot hold (no header value has one; the digest keeps such an id apart). */
const WIDE = /[^\x00-\xff]/;

/**
 * The last `capacity` delivery ids, the oldest forgotten first, in memory fixed at the start
 * (capacity × 64 bytes and an index): no object per id for the collector to copy and trace, and
 * no id can hold on to more than its 64 bytes. An id is a header value, so latin1, one byte a
 * character; a longer one is kept as its SHA-256. The index is open addressing on an FNV-1a
 * hash of those bytes, and an entry matches only if its bytes are equal (docs/benchmarks.md).
 */
export function rememberedIds(capacity: number): { has(id: string): boolean; add(id: string): void } {
  const kept = Buffer.alloc(capacity * SLOT);
  /** Bytes kept in each slot: 0 for none, DIGEST for a SHA-256. */
  const lengths = new Uint8Array(capacity);
  /** Where each slot sits in the index. */
  const positions = new Int32Array(capacity);
  let size = 1;
  while (size < capacity * 4) size *= 2;
  /** Slot + 1 of each entry; 0 never used, -1 used and freed (a probe goes on past it). */
  const index = new Int32Array(size);
  const mask = size - 1;
  let next = 0;
  let used = 0;
  const key = Buffer.alloc(SLOT);
  let keyLength = 0;

  const bytesOf = (length: number) => (length === DIGEST ? 32 : length);

  /** FNV-1a of the key's bytes. */
  function keyHash(): number {
    let hash = 0x811c9dc5;
    for (let i = 0; i < bytesOf(keyLength); i++) hash = Math.imul(hash ^ (key[i] as number), 0x01000193);
    return hash >>> 0;
  }

  /** Puts the bytes kept of `id` in `key`, and returns their hash. */
  function prepare(id: string): number {
    if (id.length <= SLOT && !WIDE.test(id)) {
      keyLength = key.write(id, 'latin1');
    } else {
      createHash('sha256').update(id, 'utf8').digest().copy(key);
      keyLength = DIGEST;
    }
    return keyHash();
  }

  function matches(slot: number): boolean {
    if (lengths[slot] !== keyLength) return false;
    const start = slot * SLOT;
    return kept.compare(key, 0, bytesOf(keyLength), start, start + bytesOf(keyLength)) === 0;
  }

  /** The index position holding the prepared key, or -1. */
  function find(hash: number): number {
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const entry = index[at] as number;
      if (entry === 0) return -1;
      if (entry > 0 && matches(entry - 1)) return at;
    }
  }

  function insert(hash: number, slot: number): void {
    let at = hash & mask;
    while ((index[at] as number) > 0) at = (at + 1) & mask;
    if (index[at] === 0) used++;
    index[at] = slot + 1;
    positions[slot] = at;
  }

  /** Once half the index has been used, it is built again from the slots held (at least `capacity` adds apart). */
  function rebuild(): void {
    index.fill(0);
    used = 0;
    for (let slot = 0; slot < capacity; slot++) {
      keyLength = lengths[slot] as number;
      if (keyLength === 0) continue;
      kept.copy(key, 0, slot * SLOT, slot * SLOT + bytesOf(keyLength));
      insert(keyHash(), slot);
    }
  }

  return {
    has: (id) => find(prepare(id)) >= 0,
    add(id) {
      const hash = prepare(id);
      if (find(hash) >= 0) return;
      const slot = next;
      next = (next + 1) % capacity;
      // The oldest id leaves; its index entry stays used, so probes past it still go on.
      if (lengths[slot] !== 0) index[positions[slot] as number] = -1;
      key.copy(kept, slot * SLOT, 0, bytesOf(keyLength));
      lengths[slot] = keyLength;
      insert(hash, slot);
      if (used > size / 2) rebuild();
    },
  };
}
