import { join } from 'node:path';
import { UsageError } from '../../errors.js';
import { type BatchRecord, type Journal, JOURNAL_FILE, planBatches } from './journal.js';
import { readJournal } from './journal-read.js';

export interface PlanOptions {
  org: string;
  dir: string;
  /** The repositories wanted now, duplicates dropped. */
  repositories: string[];
  batchSize: number;
  /** Identifies the export apart from its repository list; an existing journal with another is refused unless `restart`. */
  fingerprint: string;
  /** Also accepted (and replaced by `fingerprint`): what an earlier version wrote for this very command. */
  legacyFingerprint?: string | undefined;
  command: string;
  restart: boolean;
  now: number;
}

export interface Plan {
  journal: Journal;
  journalPath: string;
  /** An existing journal was read. */
  resumed: boolean;
  /** Batches of the journal kept, batches planned in this run, done batches dropped (none of their repositories wanted). */
  kept: number;
  added: number;
  dropped: number;
}

/**
 * The export's plan: the journal in `dir` reconciled with the repositories wanted now, or a new
 * plan. A batch that reached the service is kept while it is under way, or, once done, while it
 * holds a repository still wanted; a batch that never reached it (or whose every repository the
 * service refused) keeps those of its repositories still wanted. Wanted repositories in no kept
 * batch are split into new batches. So a list that shrank or grew costs only what it added, and
 * nothing started is dropped half-way (its locks would stay). A repository found at fault (see
 * narrow.ts) stays skipped with its reason; one the service refused is asked about again.
 */
export async function planExport(options: PlanOptions): Promise<Plan> {
  const journalPath = join(options.dir, JOURNAL_FILE);
  const read = options.restart ? undefined : await readJournal(options.dir);
  if (read && read.fingerprint !== options.fingerprint && read.fingerprint !== options.legacyFingerprint) {
    throw new UsageError(`${journalPath} belongs to another export: \`${read.command}\``, {
      hint: 'run that command again to continue it, use another --output-dir, or add --restart to plan this one anew (archives already saved stay)',
    });
  }
  const now = new Date(options.now).toISOString();
  const { batches, kept, dropped } = reconcile(read?.batches ?? [], options.repositories);
  const covered = new Set(batches.flatMap((b) => b.repositories.map(key)));
  const added = planBatches(options.repositories.filter((name) => !covered.has(key(name))), options.batchSize);
  const all = [...batches, ...added];
  all.forEach((batch, i) => (batch.index = i + 1));
  const journal: Journal = {
    version: 1,
    fingerprint: options.fingerprint,
    command: options.command,
    org: options.org,
    createdAt: read?.createdAt ?? now,
    updatedAt: now,
    batches: all,
  };
  return { journal, journalPath, resumed: read !== undefined, kept, added: added.length, dropped };
}

function reconcile(previous: BatchRecord[], wanted: string[]): { batches: BatchRecord[]; kept: number; dropped: number } {
  const wantedKeys = new Set(wanted.map(key));
  const batches: BatchRecord[] = [];
  const covered = new Set<string>();
  let dropped = 0;
  for (const batch of previous) {
    const reachedService = batch.migrationIds.length > 0 || (batch.state !== 'pending' && batch.state !== 'skipped');
    if (!reachedService) {
      // Nothing sent for it yet (or the service refused all of it): it stays as planned, with what
      // is still wanted, the refused asked about again (they may exist now).
      const names = [...batch.repositories, ...(batch.skipped ?? []).map((s) => s.name)]
        .filter((name) => wantedKeys.has(key(name)) && !covered.has(key(name)));
      delete batch.skipped;
      if (names.length === 0) continue;
      Object.assign(batch, { repositories: names, state: 'pending' });
    } else {
      // Refused before: asked again in a new batch if still wanted. A repository found at fault (its
      // migration failed with it alone) stays skipped: asking again would fail again.
      const atFault = (batch.skipped ?? []).filter((s) => s.migrationId !== undefined);
      if (atFault.length > 0) batch.skipped = atFault;
      else delete batch.skipped;
      if (batch.state === 'done' && !batch.repositories.some((name) => wantedKeys.has(key(name)))) {
        dropped++;
        continue;
      }
      for (const skipped of atFault) covered.add(key(skipped.name));
    }
    // A narrowed batch's repositories are the batches split from it: they are theirs to cover.
    if (batch.state !== 'narrowed') for (const name of batch.repositories) covered.add(key(name));
    batches.push(batch);
  }
  return { batches, kept: batches.length, dropped };
}

/** Repository names compare as the service compares them, without regard to case. */
function key(name: string): string {
  return name.toLowerCase();
}

export interface Tally {
  /** Repositories wanted. */
  total: number;
  /** Wanted repositories in a verified archive, and in any archive of a finished batch. */
  verified: number;
  archived: number;
  /** Refused by the service, or at fault: `migrationId` failed with it alone (narrow.ts). */
  skipped: { batch: number; name: string; reason: string; migrationId?: number }[];
}

/**
 * What the run achieved for the repositories wanted (and only those: a kept batch may hold some no
 * longer wanted, and an edited journal cannot make a count grow).
 */
export function tally(batches: BatchRecord[], wanted: string[]): Tally {
  const wantedKeys = new Set(wanted.map(key));
  const count = (filter: (b: BatchRecord) => boolean) =>
    new Set(batches.filter(filter).flatMap((b) => b.repositories.map(key).filter((name) => wantedKeys.has(name)))).size;
  const skipped = batches.flatMap((b) =>
    (b.skipped ?? []).filter((s) => wantedKeys.has(key(s.name))).map((s) => ({
      batch: b.index,
      name: s.name,
      reason: s.reason,
      ...(s.migrationId === undefined ? {} : { migrationId: s.migrationId }),
    })),
  );
  return {
    total: wantedKeys.size,
    verified: count((b) => b.archive?.verified === true),
    archived: count((b) => b.state === 'done' && b.archive !== undefined),
    skipped,
  };
}

/** What a resumed run changed in the journal's plan to fit the repositories wanted now. */
export function replanned(plan: Plan, dir: string): string {
  const added = plan.journal.batches.slice(plan.kept);
  const count = added.reduce((n, b) => n + b.repositories.length, 0);
  const parts = [`kept ${plan.kept} batch${plan.kept === 1 ? '' : 'es'} of the journal`];
  if (added.length > 0) parts.push(`planned ${added.length} new for ${count} repositor${count === 1 ? 'y' : 'ies'} in none of them`);
  if (plan.dropped > 0) {
    parts.push(`${plan.dropped} finished batch${plan.dropped === 1 ? ' holds' : 'es hold'} no repository of the list now (${plan.dropped === 1 ? 'its archive stays' : 'their archives stay'} in ${dir})`);
  }
  return parts.join('; ');
}
