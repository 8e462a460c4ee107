import { describe, expect, it } from 'vitest';
import { DeliveryLog, type InspectedDelivery, type LogChange } from '../../src/webhook/inspector/log.js';

function record(held: number): Omit<InspectedDelivery, 'n'> {
  return {
    receivedAt: '2026-01-01T00:00:00.000Z',
    method: 'POST',
    path: '/',
    size: held,
    verification: { state: 'unverified' },
    warnings: [],
    duplicate: false,
    load: () => Promise.resolve({ rawHeaders: [], body: Buffer.alloc(0) }),
    held,
  };
}

describe('the inspector\'s log', () => {
  it('keeps the last `keep` records, drops the oldest first and counts them, and tells each change', () => {
    const log = new DeliveryLog(3);
    const changes: LogChange[] = [];
    const stop = log.listen((change) => changes.push(change));
    for (let i = 0; i < 5; i++) log.add(record(10));
    expect(log.list().map((r) => r.n)).toEqual([3, 4, 5]);
    expect(log.list(4).map((r) => r.n)).toEqual([5]);
    expect(log.dropped).toBe(2);
    expect(log.oldest()).toBe(3);
    expect(log.get(2)).toBeUndefined();
    expect(changes.filter((c) => c.kind === 'dropped')).toEqual([
      { kind: 'dropped', dropped: 1, oldest: 2 },
      { kind: 'dropped', dropped: 2, oldest: 3 },
    ]);
    const kept = log.get(5)!;
    log.updated(kept);
    expect(changes.at(-1)).toEqual({ kind: 'updated', record: kept });
    stop();
    log.add(record(10));
    expect(changes.filter((c) => c.kind === 'added')).toHaveLength(5);
  });

  it('drops the oldest while what the records hold is over the byte bound, the newest always kept', () => {
    const log = new DeliveryLog(100, 1000);
    log.add(record(400));
    log.add(record(400));
    log.add(record(400));
    expect(log.list().map((r) => r.n)).toEqual([2, 3]);
    log.add(record(5000));
    expect(log.list().map((r) => r.n)).toEqual([4]);
    expect(log.dropped).toBe(3);
    // An update of a record no longer kept is not told.
    const changes: LogChange[] = [];
    log.listen((change) => changes.push(change));
    log.updated({ ...record(1), n: 1 });
    expect(changes).toEqual([]);
  });
});
