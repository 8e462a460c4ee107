/** Retry policy: full-jitter exponential backoff (AWS architecture blog, "Exponential Backoff And Jitter"). */
export interface RetryPolicy {
  /** First backoff ceiling in ms. */
  baseMs: number;
  /** Largest backoff ceiling in ms. */
  capMs: number;
  /** Attempts in all, the first one included. */
  tries: number;
}

export const DEFAULT_RETRY: RetryPolicy = { baseMs: 1_000, capMs: 30_000, tries: 5 };

/**
 * Delay before retry number `retry` (0 for the first retry): uniform in [0, min(cap, base·2^retry)).
 * `capMs` lowers the policy's cap for a retry that must be quick.
 */
export function fullJitterDelay(policy: RetryPolicy, retry: number, random: () => number, capMs = policy.capMs): number {
  const ceiling = Math.min(capMs, policy.capMs, policy.baseMs * 2 ** retry);
  return Math.floor(random() * ceiling);
}
