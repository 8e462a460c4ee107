import { createHash, randomBytes } from 'node:crypto';

/** Bytes kept of each id: a delivery id is a GUID (36); a longer one is kept as its SHA-256. */
const SLOT = 64;
/** The length recorded for an id kept as its digest: no id of its own is that long. */
const DIGEST = SLOT + 1;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

export interface RememberedIds {
  has(id: string): boolean;
  add(id: string): void;
  /** Index places looked at by lookups so far: about one per lookup, whatever the ids (for tests). */
  probes(): number;
}

/** MurmurHash3's finalizer: every bit of the hash bears on the bits that pick a place in the index. */
function mixed(hash: number): number {
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return hash ^ (hash >>> 16);
}

/**
 * The last `capacity` delivery ids, the oldest forgotten first, in memory fixed at the start
 * (capacity × 64 bytes and an index): no object per id for the collector to copy and trace, and
 * no id can hold on to more than its 64 bytes. An id is a header value, so latin1, one byte a
 * character; a longer one, or one with a wider character, is kept as its SHA-256. The index is
 * open addressing on an FNV-1a hash of those bytes, and an entry matches only if its bytes are
 * equal. The hash starts from a random seed of each table and is mixed at the end: ids are the
 * sender's to choose, and ids that all fall in one place of the index, were the hash known, would
 * make every lookup walk all of them (docs/benchmarks.md).
 */
export function rememberedIds(capacity: number): RememberedIds {
  const kept = new Uint8Array(capacity * SLOT);
  /** Bytes kept in each slot: 0 for none, DIGEST for a SHA-256. */
  const lengths = new Uint8Array(capacity);
  /** Each slot's hash, so that rebuilding the index hashes nothing. */
  const hashes = new Int32Array(capacity);
  /** Where each slot sits in the index. */
  const positions = new Int32Array(capacity);
  let size = 1;
  while (size < capacity * 4) size *= 2;
  /** Slot + 1 of each entry; 0 never used, -1 used and freed (a probe goes on past it). */
  const index = new Int32Array(size);
  const mask = size - 1;
  let next = 0;
  let used = 0;
  let probes = 0;
  const seed = randomBytes(4).readInt32LE() ^ FNV_OFFSET;

  // The id last looked up: the characters kept of it (latin1), their length marker and hash.
  let keyText = '';
  let keyLength = 0;
  let keyHash = 0;

  /** The index position of `id`, or -1; it becomes the key `add` keeps. */
  function lookUp(id: string): number {
    let hash = seed;
    let narrow = id.length <= SLOT;
    for (let i = 0; narrow && i < id.length; i++) {
      const code = id.charCodeAt(i);
      narrow = code <= 0xff;
      hash = Math.imul(hash ^ code, FNV_PRIME);
    }
    if (narrow) {
      keyText = id;
      keyLength = id.length;
    } else {
      keyText = createHash('sha256').update(id, 'utf8').digest().toString('latin1');
      keyLength = DIGEST;
      hash = seed;
      for (let i = 0; i < keyText.length; i++) hash = Math.imul(hash ^ keyText.charCodeAt(i), FNV_PRIME);
    }
    keyHash = mixed(hash);
    return find();
  }

  function matches(slot: number): boolean {
    if (lengths[slot] !== keyLength) return false;
    const start = slot * SLOT;
    for (let i = 0; i < keyText.length; i++) if (kept[start + i] !== keyText.charCodeAt(i)) return false;
    return true;
  }

  /** The index position holding the looked-up key, or -1. */
  function find(): number {
    for (let at = keyHash & mask; ; at = (at + 1) & mask) {
      probes++;
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
    for (let slot = 0; slot < capacity; slot++) if (lengths[slot] !== 0) insert(hashes[slot] as number, slot);
  }

  return {
    probes: () => probes,
    has: (id) => lookUp(id) >= 0,
    add(id) {
      if (lookUp(id) >= 0) return;
      const slot = next;
      next = (next + 1) % capacity;
      // The oldest id leaves; its index entry stays used, so probes past it still go on.
      if (lengths[slot] !== 0) index[positions[slot] as number] = -1;
      const start = slot * SLOT;
      for (let i = 0; i < keyText.length; i++) kept[start + i] = keyText.charCodeAt(i);
      lengths[slot] = keyLength;
      hashes[slot] = keyHash;
      insert(keyHash, slot);
      if (used > size / 2) rebuild();
    },
  };
}
