import type { ApiClient } from '../api/client.js';
import { header } from '../api/headers.js';
import { getMigration } from '../api/migrations.js';
import type { Migration, MigrationState } from '../api/types.js';
import type { Clock } from '../support/clock.js';
import { InterruptedError, UnavailableError, WaitTimeoutError } from '../errors.js';

export interface WaitEvent {
  id: number;
  state: MigrationState;
  previous: MigrationState | undefined;
  migration: Migration;
  /** Milliseconds since the wait began. */
  elapsedMs: number;
  /** True when the migration reached `exported` or `failed`. */
  finished: boolean;
}

export interface WaitOptions {
  org: string;
  ids: number[];
  /** Fixed interval between polls of one migration (`--interval`); default: the polite policy. */
  intervalMs?: number | undefined;
  timeoutMs?: number | undefined;
  clock: Clock;
  random?: () => number;
  signal?: AbortSignal | undefined;
  /** Every state seen for the first time, and every finish. */
  onEvent?: (event: WaitEvent) => void;
  /** Transient trouble and budget waits, for the user to know why nothing moves. */
  onNotice?: (message: string) => void;
}

export interface WaitResult {
  migrations: Migration[];
  exported: number[];
  failed: number[];
}

/**
 * The polite default: about 5 s during the first minute, then 30–60 s with jitter, so
 * many waits on one token never exhaust its hourly quota.
 */
export function defaultPollIntervalMs(elapsedMs: number, random: () => number): number {
  if (elapsedMs < 60_000) return 5_000;
  return 30_000 + Math.floor(random() * 30_000);
}

/**
 * How long migrations may go unchecked before a wait gives up (exit 8): trouble that lasts is not
 * passing, and the exports go on without us, ready for the wait to be run again.
 */
export const MAX_FAILING_MS = 15 * 60_000;

const FINISHED: ReadonlySet<MigrationState> = new Set(['exported', 'failed']);
/** Keep this many requests of the hourly budget in reserve for the rest of the job. */
const BUDGET_RESERVE = 10;

interface Tracked {
  id: number;
  nextAt: number;
  state: MigrationState | undefined;
  migration: Migration | undefined;
}

/** Polls migrations until each is `exported` or `failed`, one request per interval per migration. */
export async function waitForMigrations(client: ApiClient, options: WaitOptions): Promise<WaitResult> {
  const { clock } = options;
  const random = options.random ?? Math.random;
  const started = clock.now();
  const deadline = options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : started + options.timeoutMs;
  const pending: Tracked[] = options.ids.map((id) => ({ id, nextAt: started, state: undefined, migration: undefined }));
  const done: Tracked[] = [];
  const resumeHint = `run \`svc-migrate status ${options.ids.join(' ')} --wait\` to keep waiting`;
  let budgetUntil = 0;
  let failingSince: number | undefined;

  const sleepUntil = async (at: number) => {
    const ms = at - clock.now();
    if (ms <= 0) return;
    try {
      await clock.sleep(ms, options.signal);
    } catch (error) {
      if (options.signal?.aborted) throw new InterruptedError('stopped waiting', { hint: resumeHint });
      throw error;
    }
  };

  while (pending.length > 0) {
    pending.sort((a, b) => a.nextAt - b.nextAt);
    const next = pending[0] as Tracked;
    const at = Math.max(next.nextAt, budgetUntil);
    if (at > deadline) {
      await sleepUntil(deadline);
      const states = pending.map((t) => `${t.id} ${t.state ?? 'unknown'}`).join(', ');
      throw new WaitTimeoutError(`timed out waiting (${states})`, { hint: resumeHint });
    }
    await sleepUntil(at);

    const elapsed = clock.now() - started;
    const interval = options.intervalMs ?? defaultPollIntervalMs(elapsed, random);
    let response: Awaited<ReturnType<typeof getMigration>>;
    try {
      response = await getMigration(client, options.org, next.id, { excludeRepositories: true });
    } catch (error) {
      // Ctrl-C lands as often during a request as during a sleep: either way the user is told how to resume.
      if (options.signal?.aborted) throw new InterruptedError('stopped waiting', { hint: resumeHint });
      if (!(error instanceof UnavailableError)) throw error;
      // Passing trouble does not end a wait, but trouble that lasts does: the loop has an end.
      failingSince ??= clock.now();
      if (clock.now() - failingSince >= MAX_FAILING_MS) {
        throw new UnavailableError(`could not check migration ${next.id} for ${Math.round((clock.now() - failingSince) / 60_000)} minutes (${error.message})`, {
          hint: resumeHint,
        });
      }
      options.onNotice?.(`could not check migration ${next.id} (${error.message}); trying again`);
      next.nextAt = clock.now() + interval;
      continue;
    }
    failingSince = undefined;
    const pollHint = Number(header(response.headers, 'x-poll-interval'));
    next.nextAt = clock.now() + Math.max(interval, Number.isFinite(pollHint) ? pollHint * 1000 : 0);
    budgetUntil = budgetWait(response.headers, pending.length, clock.now(), options.onNotice);

    const migration = response.data;
    const previous = next.state;
    next.migration = migration;
    next.state = migration.state;
    const finished = FINISHED.has(migration.state);
    if (previous !== migration.state || finished) {
      options.onEvent?.({
        id: next.id,
        state: migration.state,
        previous,
        migration,
        elapsedMs: clock.now() - started,
        finished,
      });
    }
    if (finished) {
      pending.splice(pending.indexOf(next), 1);
      done.push(next);
    }
  }
  const migrations = done.map((t) => t.migration as Migration);
  return {
    migrations,
    exported: migrations.filter((m) => m.state === 'exported').map((m) => m.id),
    failed: migrations.filter((m) => m.state === 'failed').map((m) => m.id),
  };
}

/** When the remaining budget would not cover another round of polls, pause until the reset. */
function budgetWait(
  headers: Parameters<typeof header>[0],
  waiting: number,
  now: number,
  onNotice: WaitOptions['onNotice'],
): number {
  const remaining = Number(header(headers, 'x-ratelimit-remaining'));
  const reset = Number(header(headers, 'x-ratelimit-reset'));
  if (!Number.isFinite(remaining) || !Number.isFinite(reset) || remaining > waiting + BUDGET_RESERVE) return 0;
  const until = reset * 1000 + 1000;
  if (until > now) {
    onNotice?.(`rate-limit budget low (${remaining} left); pausing polls until ${new Date(until).toISOString()}`);
  }
  return until;
}
