/**
 * The last `capacity` ids, the oldest forgotten first. The order lives in a ring of its own: taking
 * the oldest from a Set (`values().next()`) walks past every entry deleted before it, which grew to
 * tens of microseconds per delivery once the Set was full (docs/benchmarks.md).
 */
export function rememberedIds(capacity: number): { has(id: string): boolean; add(id: string): void } {
  const ids = new Set<string>();
  const ring: (string | undefined)[] = new Array<string | undefined>(capacity);
  let next = 0;
  return {
    has: (id) => ids.has(id),
    add(id) {
      if (ids.has(id)) return;
      const oldest = ring[next];
      if (oldest !== undefined) ids.delete(oldest);
      ring[next] = id;
      next = (next + 1) % capacity;
      ids.add(id);
    },
  };
}
