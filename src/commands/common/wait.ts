import type { Migration } from '../../api/types.js';
import type { Context } from '../../context.js';
import { currentMigrations } from '../../core/status.js';
import { waitForMigrations } from '../../core/wait.js';
import { MigrationFailedError } from '../../errors.js';
import { createWaitReporter } from '../../ui/wait.js';
import type { WaitSettings } from './flags.js';

/** Waits for migrations to finish and returns them; reports each as it finishes. */
export async function waitAndReport(context: Context, ids: number[], wait: WaitSettings): Promise<Migration[]> {
  const client = await context.api();
  const reporter = await createWaitReporter(context.out, ids);
  try {
    const result = await waitForMigrations(client, {
      org: context.org(),
      ids,
      ...wait,
      clock: context.clock,
      signal: context.signal,
      onEvent: (event) => reporter.onEvent(event),
      onNotice: (message) => reporter.onNotice(message),
    });
    return ids.map((id) => result.migrations.find((m) => m.id === id) as Migration);
  } finally {
    reporter.stop();
  }
}

/**
 * Waits for migrations, then fetches each whole: the wait polls without repositories, and what is
 * printed is the service's object (without repositories with `--exclude repositories`).
 */
export async function waitThenFetch(
  context: Context,
  ids: number[],
  wait: WaitSettings,
  excludeRepositories: boolean,
): Promise<Migration[]> {
  await waitAndReport(context, ids, wait);
  return currentMigrations(await context.api(), context.org(), ids, { excludeRepositories });
}

/** Ends with exit 6 when any of them failed (after their objects were printed). */
export function failIfAnyFailed(migrations: Migration[]): void {
  const failed = migrations.filter((m) => m.state === 'failed').map((m) => m.id);
  if (failed.length > 0) {
    throw new MigrationFailedError(`migration ${failed.join(', ')} failed`, {
      hint: 'start a new export; the service says no more about why',
    });
  }
}
