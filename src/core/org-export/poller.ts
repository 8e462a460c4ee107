import type { ApiClient } from '../../api/client.js';
import { getMigration, listMigrations } from '../../api/migrations.js';
import type { Migration } from '../../api/types.js';
import type { Clock } from '../../support/clock.js';
import { InterruptedError, UnavailableError, WaitTimeoutError } from '../../errors.js';
import { defaultPollIntervalMs, MAX_FAILING_MS } from '../wait.js';

/** Pages of the list read per round before the ids still missing are asked one by one. */
const MAX_LIST_PAGES = 3;

export interface PollerOptions {
  org: string;
  clock: Clock;
  /** Fixed pace (`--interval`); default: the polite policy of a single wait. */
  intervalMs?: number | undefined;
  /** `--timeout`: a migration waited for this long is given up (exit 7), the others waited for still. */
  timeoutMs?: number | undefined;
  random?: () => number;
  signal?: AbortSignal | undefined;
  onState?(migration: Migration): void;
  onNotice?(message: string): void;
}

interface Watcher {
  since: number;
  state: string | undefined;
  resolve(migration: Migration): void;
  reject(error: unknown): void;
}

/**
 * One polling loop for every running migration: each round reads the newest page of
 * docs/service.md#list-migrations, which answers for many ids at once, so the request count follows
 * the clock, not the number of migrations in flight.
 */
export class MigrationPoller {
  private readonly watchers = new Map<number, Watcher>();
  private loop: Promise<void> | undefined;
  /** Requests this poller sent (for the summary). */
  requests = 0;

  private readonly client: ApiClient;
  private readonly options: PollerOptions;

  constructor(client: ApiClient, options: PollerOptions) {
    this.client = client;
    this.options = options;
  }

  /**
   * Resolves with the migration once it is `exported` or `failed`. `state`: the one already told
   * (the start's answer), not reported again until it changes.
   */
  watch(id: number, state?: string): Promise<Migration> {
    if (this.options.signal?.aborted) return Promise.reject(new InterruptedError('stopped waiting'));
    return new Promise<Migration>((resolve, reject) => {
      this.watchers.set(id, { since: this.options.clock.now(), state, resolve, reject });
      this.ensureLoop();
    });
  }

  /** A newly watched migration joins the next round of the running loop, or starts one. */
  private ensureLoop(): void {
    if (this.loop) return;
    this.loop = this.run().finally(() => {
      this.loop = undefined;
      if (this.watchers.size > 0) this.ensureLoop();
    });
  }

  private async run(): Promise<void> {
    const { clock, signal } = this.options;
    const random = this.options.random ?? Math.random;
    let failingSince: number | undefined;
    while (this.watchers.size > 0) {
      try {
        await this.round();
        failingSince = undefined;
      } catch (error) {
        if (!(error instanceof UnavailableError)) {
          this.rejectAll(error);
          return;
        }
        // Passing trouble does not end a wait, but trouble that lasts does: the loop has an end.
        failingSince ??= clock.now();
        if (clock.now() - failingSince >= MAX_FAILING_MS) {
          this.rejectAll(
            new UnavailableError(`could not check the migrations for ${formatMinutes(clock.now() - failingSince)} (${error.message})`, {
              hint: 'the migrations go on on the service; run the same command again to go on waiting for them',
            }),
          );
          return;
        }
        this.options.onNotice?.(`could not check the migrations (${error.message}); trying again`);
      }
      this.expire();
      if (this.watchers.size === 0) return;
      // The youngest migration sets the pace: quick checks early in its life, slower later.
      const youngest = Math.max(...[...this.watchers.values()].map((w) => w.since));
      const interval = this.options.intervalMs ?? defaultPollIntervalMs(clock.now() - youngest, random);
      // A wait that times out before the next round is given up when it does, not a round later.
      const firstDeadline = Math.min(...[...this.watchers.values()].map((w) => w.since + (this.options.timeoutMs ?? Infinity)));
      try {
        await clock.sleep(Math.max(0, Math.min(interval, firstDeadline - clock.now())), signal);
      } catch (error) {
        if (signal?.aborted) {
          this.rejectAll(new InterruptedError('stopped waiting'));
          return;
        }
        throw error;
      }
    }
  }

  private async round(): Promise<void> {
    const missing = new Set(this.watchers.keys());
    for (let page = 1; page <= MAX_LIST_PAGES && missing.size > 0; page++) {
      this.requests++;
      const response = await listMigrations(this.client, this.options.org, {
        perPage: 100,
        page,
        excludeRepositories: true,
      });
      for (const migration of response.data) {
        if (missing.delete(migration.id)) this.settle(migration);
      }
      if (response.data.length < 100) break;
    }
    // Old migrations fall off the newest pages; those few are asked for by id.
    for (const id of missing) {
      this.requests++;
      const response = await getMigration(this.client, this.options.org, id, { excludeRepositories: true });
      this.settle(response.data);
    }
  }

  private settle(migration: Migration): void {
    const watcher = this.watchers.get(migration.id);
    if (!watcher) return;
    if (watcher.state !== migration.state) {
      watcher.state = migration.state;
      this.options.onState?.(migration);
    }
    if (migration.state === 'exported' || migration.state === 'failed') {
      this.watchers.delete(migration.id);
      watcher.resolve(migration);
    }
  }

  /** Gives up each migration waited for `timeoutMs` or longer. */
  private expire(): void {
    const { timeoutMs, clock } = this.options;
    if (timeoutMs === undefined) return;
    for (const [id, watcher] of this.watchers) {
      if (clock.now() - watcher.since < timeoutMs) continue;
      this.watchers.delete(id);
      watcher.reject(
        new WaitTimeoutError(`timed out waiting for migration ${id} after ${formatMinutes(clock.now() - watcher.since)} (${watcher.state ?? 'state unknown'})`, {
          hint: 'the migration goes on on the service; run the same command again to go on waiting for it',
        }),
      );
    }
  }

  private rejectAll(error: unknown): void {
    for (const [id, watcher] of this.watchers) {
      this.watchers.delete(id);
      watcher.reject(error);
    }
  }
}

function formatMinutes(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  const minutes = Math.round(ms / 60_000);
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}
