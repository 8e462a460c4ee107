import type { ApiClient } from '../../api/client.js';
import { CliError } from '../../errors.js';
import { unlockFailure, unlockRepositories } from '../unlock.js';
import type { BatchRecord, BatchState, OrgExportEvent } from './journal.js';

/** A migration of one repository that failed is started again this many times before the repository is named at fault. */
const RETRIES_ALONE = 1;

export interface NarrowContext {
  client: ApiClient;
  org: string;
  /** `--lock` with `--unlock`: what a failed migration locked is given back at once, as a single export does. */
  release: boolean;
  /** Every batch of the run: halves are added at its end. */
  batches: BatchRecord[];
  step(batch: BatchRecord, next: BatchState, message: string, migrationId?: number): Promise<void>;
  emit(event: OrgExportEvent): void;
  /** Runs a batch added by the split. */
  launch(batch: BatchRecord): void;
}

/**
 * A batch whose migration failed on the service (docs/service.md#migration-states says no more of
 * why) is split in two halves, each a new batch, recursively, until a batch of one repository fails
 * alone: that repository is at fault and skipped, named with the migration that failed, as one the
 * service refuses is. The rest of the batch is exported.
 *
 * Bounded: each split halves the repositories, so a batch of n holding k repositories at fault
 * starts at most 2·k·⌈log2 n⌉ migrations more, and a lone repository is started 1 + RETRIES_ALONE
 * times (a failure of a moment is not blamed on it). Nothing of a narrowed batch is started again
 * by a later run: the journal keeps it `narrowed`, its halves where they stand, and a repository at
 * fault `skipped`.
 *
 * With `release`, the repositories of every failed migration are unlocked as soon as it failed
 * (each migration started for the batch locked them), so nothing stays locked; the journal records
 * it (`released`) and no later run names those migrations in its unlock commands.
 */
export async function narrowFailed(context: NarrowContext, batch: BatchRecord, failedId: number): Promise<void> {
  const [first, ...others] = batch.repositories;
  if (others.length === 0 && batch.attempts <= RETRIES_ALONE) {
    await context.step(batch, 'pending', `migration ${failedId} failed on the service; starting it again`, failedId);
    return;
  }
  if (context.release) {
    await unlockThrough(context.client, context.org, batch.migrationIds, batch.repositories);
    batch.released = true;
  }
  if (others.length === 0 && first !== undefined) {
    const tries = batch.attempts === 1 ? 'once' : `${batch.attempts} times`;
    batch.skipped = [...(batch.skipped ?? []), {
      name: first,
      reason: `its migration failed on the service with this repository alone (migration ${failedId}, tried ${tries})`,
      migrationId: failedId,
    }];
    batch.repositories = [];
    await context.step(batch, 'skipped', `${first} is at fault: migration ${failedId} failed on the service with it alone; it is skipped`, failedId);
    return;
  }
  const middle = Math.ceil(batch.repositories.length / 2);
  const halves = [batch.repositories.slice(0, middle), batch.repositories.slice(middle)].map((repositories, i): BatchRecord => ({
    index: context.batches.length + 1 + i,
    repositories,
    state: 'pending',
    migrationIds: [],
    attempts: 0,
  }));
  context.batches.push(...halves);
  // One write holds the batch narrowed and its halves planned: a crash leaves both or neither.
  const numbers = halves.map((h) => h.index).join(' and ');
  await context.step(
    batch,
    'narrowed',
    `migration ${failedId} failed on the service; its ${batch.repositories.length} repositories go on as batches ${numbers}, to find the one at fault`,
    failedId,
  );
  for (const half of halves) context.launch(half);
}

/**
 * Unlocks `names` through each of `ids`: every migration started for a batch locked them
 * (docs/service.md#repository-locks: the service never unlocks by itself). A refusal is thrown
 * with why (the first; the others are alike as a rule) and the command that tries again.
 */
export async function unlockThrough(client: ApiClient, org: string, ids: number[], names: string[]): Promise<void> {
  for (const id of ids) {
    const outcomes = await unlockRepositories(client, org, id, names);
    const failed = outcomes.filter((o) => !o.ok);
    const failure = unlockFailure(outcomes, id);
    if (failure && failed[0]) {
      const why = `${failed[0].repository}: ${failed[0].error}`;
      throw new CliError(`could not unlock ${failed.map((o) => o.repository).join(', ')} (${why})`, failure.exitCode, { hint: failure.hint });
    }
  }
}
