import { describe, expect, it } from 'vitest';
import { DeliveryLog, type InspectedDelivery } from '../../src/webhook/inspector/log.js';

function record(held: number): InspectedDelivery {
  return {
    n: 0,
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
    const changes: [string, number, number][] = [];
    const stop = log.listen((change, added) => changes.push([change, added.n, log.dropped]));
    for (let i = 0; i < 5; i++) log.add(record(10));
    expect(log.list().map((r) => r.n)).toEqual([3, 4, 5]);
    expect(log.list(4).map((r) => r.n)).toEqual([5]);
    expect(log.dropped).toBe(2);
    expect(log.oldest()).toBe(3);
    expect(log.get(2)).toBeUndefined();
    // When a record is told of, the older ones are dropped already.
    expect(changes).toEqual([
      ['added', 1, 0],
      ['added', 2, 0],
      ['added', 3, 0],
      ['added', 4, 1],
      ['added', 5, 2],
    ]);
    log.updated(log.get(5)!);
    expect(changes.at(-1)).toEqual(['updated', 5, 2]);
    stop();
    log.add(record(10));
    expect(changes).toHaveLength(6);
  });

  it('drops the oldest while the bodies held are over the byte bound, the newest always kept', () => {
    const log = new DeliveryLog(100, 1000);
    log.add(record(400));
    log.add(record(400));
    log.add(record(400));
    expect(log.list().map((r) => r.n)).toEqual([2, 3]);
    log.add(record(5000));
    expect(log.list().map((r) => r.n)).toEqual([4]);
    expect(log.dropped).toBe(3);
    // An update of a record no longer kept is not told.
    const changes: string[] = [];
    log.listen((change) => changes.push(change));
    log.updated({ ...record(1), n: 1 });
    expect(changes).toEqual([]);
  });
});
