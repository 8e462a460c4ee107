import type { IncomingMessage } from 'node:http';
import type { FaultSettings } from './faults.js';
import type { RateLimitSettings } from './ratelimit.js';
import type { SeedData } from './seed.js';
import type { SandboxClock } from './state.js';

// How a sandbox is started, and what it records of each request: apart from the server, so that
// the route modules the server imports can name them.

export interface SandboxOptions {
  /** API port on 127.0.0.1 (0 = any free port). */
  port?: number;
  /** Storage port on localhost (0 = any free port). */
  storagePort?: number;
  /** Both origins over HTTPS, with a certificate issued by an authority made at start (`Sandbox.ca`). */
  tls?: boolean;
  seed?: SeedData;
  /** Seconds from start to `exported` (default 2). */
  exportSeconds?: number;
  /** Seconds more per repository of the migration, so larger batches take longer (default 0). */
  exportSecondsPerRepository?: number;
  /** Adds `repo-0001` … `repo-N` to the first organization of the seed. */
  repositories?: number;
  /** Issues, and pull requests, in the metadata of every repository (default: what the seed says, else 3 and 3). */
  issues?: number;
  pullRequests?: number;
  /** Pads every archive with this many incompressible bytes. */
  archivePadBytes?: number;
  /** How long a signed archive URL stays valid (default 300 s). */
  archiveUrlTtlSeconds?: number;
  /**
   * Opt-in request limit per token and window. Beyond it: 429 with retry-after (secondary-limit
   * style), or with `status: 403`, 403 with x-ratelimit-remaining: 0 and no retry-after (primary).
   */
  rateLimit?: RateLimitSettings;
  /** Starts allowed per organization in a window before the "spammed" 422 (default 10 per 60 s). */
  spamLimit?: { starts: number; windowSeconds: number };
  /** Sends `x-poll-interval` (seconds) with unfinished migrations, as services that pace pollers do. */
  pollIntervalSeconds?: number;
  faults?: FaultSettings;
  /** How many requests `requests` (and `GET /_sandbox/requests`) keep, newest last (default 1000). */
  requestLogLimit?: number;
  /** How often the relay's streams are pinged (default 30 s, as smee.io; docs/sandbox.md#relay). */
  relayPingMs?: number;
  /** The clock it runs on; tests share one with the client so its waits move the sandbox's time. */
  clock?: SandboxClock;
}

export interface RecordedSandboxRequest {
  origin: 'api' | 'storage';
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  at: number;
  /** The status answered (also when the body was then cut); undefined for a connection dropped unanswered. */
  status?: number;
  /** The `x-ratelimit-reset` answered (epoch seconds), if any. */
  rateLimitReset?: number;
}
