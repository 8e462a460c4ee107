import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY, fullJitterDelay } from '../../src/api/backoff.js';

describe('fullJitterDelay', () => {
  it('grows the ceiling exponentially from about 1 s and caps it at 30 s', () => {
    const ceiling = (retry: number) => fullJitterDelay(DEFAULT_RETRY, retry, () => 0.999999);
    expect([0, 1, 2, 3, 4, 5, 10].map(ceiling)).toEqual([999, 1999, 3999, 7999, 15999, 29999, 29999]);
    expect(DEFAULT_RETRY.tries).toBe(5);
  });

  it('spreads delays uniformly between zero and the ceiling', () => {
    expect(fullJitterDelay(DEFAULT_RETRY, 3, () => 0)).toBe(0);
    expect(fullJitterDelay(DEFAULT_RETRY, 3, () => 0.5)).toBe(4000);
  });
});
