import type { SandboxClock } from './state.js';

export interface RateLimitSettings {
  limit: number;
  windowSeconds: number;
  status?: 403 | 429;
}

export interface RateLimitCount {
  limit: number;
  used: number;
  remaining: number;
  /** Epoch seconds at which the window ends. */
  reset: number;
  exceeded: boolean;
  retryAfter: number;
}

const DEFAULT_LIMIT = 5000;

/** Requests per token and window; enforced only when `settings` is given, counted always. */
export class RateLimiter {
  private readonly usage = new Map<string, { windowStart: number; used: number }>();
  private readonly settings: RateLimitSettings | undefined;
  private readonly clock: SandboxClock;

  constructor(settings: RateLimitSettings | undefined, clock: SandboxClock) {
    if (settings && !(Number.isSafeInteger(settings.limit) && settings.limit > 0 && settings.windowSeconds > 0)) {
      throw new RangeError(`rate limit: limit must be a positive integer and windowSeconds above 0, not ${JSON.stringify(settings)}`);
    }
    this.settings = settings;
    this.clock = clock;
  }

  get limit(): number {
    return this.settings?.limit ?? DEFAULT_LIMIT;
  }

  count(token: string): RateLimitCount {
    const windowMs = (this.settings?.windowSeconds ?? 3600) * 1000;
    const limit = this.limit;
    const now = this.clock.now();
    let entry = this.usage.get(token);
    if (!entry || now >= entry.windowStart + windowMs) {
      // Windows start on a whole second, so x-ratelimit-reset (epoch seconds) is exactly when the
      // window ends and retry-after never exceeds the window.
      entry = { windowStart: Math.floor(now / 1000) * 1000, used: 0 };
      this.usage.set(token, entry);
    }
    entry.used++;
    const resetMs = entry.windowStart + windowMs;
    return {
      limit,
      used: Math.min(entry.used, limit),
      remaining: Math.max(0, limit - entry.used),
      reset: Math.ceil(resetMs / 1000),
      exceeded: this.settings !== undefined && entry.used > limit,
      retryAfter: Math.max(1, Math.ceil((resetMs - now) / 1000)),
    };
  }

  /** Gives one request back (a 304 costs nothing); answers what remains, or undefined for an unknown token. */
  refund(token: string): { remaining: number; used: number } | undefined {
    const entry = this.usage.get(token);
    if (!entry) return undefined;
    entry.used = Math.max(0, entry.used - 1);
    return { remaining: Math.max(0, this.limit - entry.used), used: Math.min(entry.used, this.limit) };
  }
}
