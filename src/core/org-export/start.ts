import type { ApiClient } from '../../api/client.js';
import { startMigration } from '../../api/migrations.js';
import { type Migration, START_FLAGS, type StartMigrationBody } from '../../api/types.js';
import type { Clock } from '../../support/clock.js';
import { CliError, InterruptedError, UnavailableError, ValidationError } from '../../errors.js';
import { existedAt, findStarted, migrationsBefore, type StartRecord } from '../started-lookup.js';
import { refusedRepositories } from '../refused-repositories.js';
import type { BatchRecord, BatchState, OrgExportEvent } from './journal.js';

/** Waits for the service to take starts again ("spammed") before the batch is reported as refused. */
const MAX_SPAM_WAITS = 20;

export interface StartContext {
  client: ApiClient;
  org: string;
  body: Omit<StartMigrationBody, 'repositories'>;
  clock: Clock;
  signal: AbortSignal;
  /** Migrations some batch already owns: never adopted by another. */
  claimed: Set<number>;
  /**
   * The waits for a "spammed" service already told, by round: the limit is the organization's, so
   * every batch starting meets it at once, and one line a round says it for all of them.
   */
  spamWaitsTold: { rounds: number };
  save(): Promise<void>;
  step(batch: BatchRecord, next: BatchState, message: string, migrationId?: number): Promise<void>;
  emit(event: OrgExportEvent): void;
}

/**
 * Starts the batch's migration. A start the last run sent without hearing back is looked up with
 * the list first (the migration may exist), and so is one whose answer was lost now; a "spammed"
 * refusal started nothing and is asked again after a wait, at most MAX_SPAM_WAITS times. Gives
 * the state the service told of the migration, none when nothing was started (all refused).
 */
export async function startBatch(context: StartContext, batch: BatchRecord): Promise<string | undefined> {
  const { client, org, clock, claimed } = context;
  const record = (): StartRecord => ({
    repositories: batch.repositories,
    flags: context.body,
    startingAt: batch.startingAt,
    existed: batch.existed,
  });
  /** A refusal started nothing: the journal must not send the next run looking for it. */
  const nothingStarted = async () => {
    batch.state = 'pending';
    await context.save();
  };
  if (batch.state === 'starting') {
    const found = await findStarted(client, org, record(), claimed, clock.now());
    if (found) return started(context, batch, found, `found migration ${found.id}, started by an earlier run`);
  } else {
    batch.attempts++;
  }
  for (let spamWaits = 0; ; spamWaits++) {
    // What exists before the start is never taken for what it made (started-lookup.ts).
    const startingAt = clock.now();
    const listed = await migrationsBefore(client, org, startingAt);
    batch.state = 'starting';
    batch.startingAt = startingAt;
    batch.existed = existedAt(listed, startingAt);
    batch.startFlags = START_FLAGS.filter((flag) => context.body[flag] === true);
    await context.save();
    let migration: Migration;
    let lostAnswer = false;
    try {
      migration = await startMigration(client, org, { ...context.body, repositories: batch.repositories });
    } catch (error) {
      // First: a refusal of named repositories is not "spammed", whatever their names say.
      const refused = error instanceof ValidationError ? refusedRepositories(error, batch.repositories) : undefined;
      if (refused) {
        // docs/service.md#start-migration: a 422 started nothing; the batch goes on without what it names.
        await nothingStarted();
        const names = new Set(refused.map((r) => r.name));
        batch.repositories = batch.repositories.filter((name) => !names.has(name));
        batch.skipped = [...(batch.skipped ?? []), ...refused];
        const shown = refused.slice(0, 3).map((r) => `${r.name}: ${r.reason}`).join('; ');
        const more = refused.length > 3 ? `; … and ${refused.length - 3} more` : '';
        const n = refused.length;
        if (batch.repositories.length === 0) {
          await context.step(batch, 'skipped', `the service refused ${n === 1 ? 'the only repository' : `all ${n} repositories`} of the batch, so nothing was started (${shown}${more})`);
          return undefined;
        }
        context.emit({
          type: 'notice',
          message: `batch ${batch.index}: the service refused ${n} repositor${n === 1 ? 'y' : 'ies'} (${shown}${more}); starting the batch without ${n === 1 ? 'it' : 'them'}`,
        });
        spamWaits--;
        continue;
      }
      if (error instanceof ValidationError && /spam|too many/i.test(error.message) && spamWaits < MAX_SPAM_WAITS) {
        // docs/service.md#start-migration: a refused start started nothing; wait and ask again.
        const waitMs = Math.min(60_000, 5_000 * 2 ** Math.min(spamWaits, 4));
        if (spamWaits === 0) context.emit({ type: 'step', batch: batch.index, step: 'waiting-to-start' });
        if (spamWaits >= context.spamWaitsTold.rounds) {
          context.spamWaitsTold.rounds = spamWaits + 1;
          context.emit({
            type: 'notice',
            message: `the service refuses new starts for now; batches wait ${waitMs / 1000} s before asking again (wait ${spamWaits + 1} of at most ${MAX_SPAM_WAITS})`,
          });
        }
        // Not left `starting` while it waits: a Ctrl-C now would send the next run looking for it.
        await nothingStarted();
        await clock.sleep(waitMs, context.signal);
        continue;
      }
      if (error instanceof UnavailableError) {
        // The answer was lost, not necessarily the start: look before starting again.
        const found = await findStarted(client, org, record(), claimed, clock.now());
        if (!found) throw error;
        migration = found;
        lostAnswer = true;
      } else {
        // A clear refusal started nothing; a start cut short (Ctrl-C) may have, and stays `starting`.
        if (error instanceof CliError && !(error instanceof InterruptedError)) await nothingStarted();
        throw error;
      }
    }
    const said = lostAnswer ? `the answer to the start was lost; found migration ${migration.id}, which it started` : `started migration ${migration.id}`;
    return started(context, batch, migration, said);
  }
}

/**
 * The batch's migration, started or found: its state on the service is told at once, not from the
 * first round of the poller, which may be a while off when other batches set its pace.
 */
async function started(context: StartContext, batch: BatchRecord, migration: Migration, message: string): Promise<string> {
  batch.migrationIds.push(migration.id);
  context.claimed.add(migration.id);
  await context.step(batch, 'started', message, migration.id);
  context.emit({ type: 'migration', batch: batch.index, migrationId: migration.id, state: migration.state });
  return migration.state;
}
