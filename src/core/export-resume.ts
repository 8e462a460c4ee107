import { lstat } from 'node:fs/promises';
import type { ApiClient } from '../api/client.js';
import { startMigration } from '../api/migrations.js';
import type { Migration, StartMigrationBody } from '../api/types.js';
import { CliError, InterruptedError, UnavailableError } from '../errors.js';
import { readPartMeta } from './download-sinks.js';
import { existedAt, exportsExactly, findStarted, migrationsBefore, sameFlags } from './started-lookup.js';

// What a single `export` finds before it starts anything: a migration of exactly its repositories
// that an earlier run (killed, stopped, cut) left under way. It continues that one instead of
// locking the repositories a second time and throwing away a half download:
//
// - pending or exporting, with the same start flags: continued (at worst a wait; no second lock);
// - exported, with the same start flags, only when its download is half done where this export
//   writes (`<file>.part`, whose side file names that migration): an exported migration with no
//   `.part` here may be yesterday's export of the same list, and today's export must be today's.
//
// `--new` starts a fresh one regardless. Whatever is not continued is named in a warning before the
// start, with the commands that save its archive and give back its repositories.

/**
 * The migrations the service lists before this export starts (started-lookup.ts): none is what a
 * start of this export makes, and those of exactly these repositories not failed are what an
 * earlier run of the same export may have left. Undefined when the list cannot be had.
 */
async function migrationsListed(client: ApiClient, org: string, startingAt: number): Promise<Migration[] | undefined> {
  try {
    return await migrationsBefore(client, org, startingAt, true);
  } catch (error) {
    // Only advice: what the start itself meets (a wrong organization, a network down) is said there.
    if (error instanceof InterruptedError || !(error instanceof CliError)) throw error;
    return undefined;
  }
}

/**
 * The migration this export continues, if any: the newest one whose download is half done where
 * this export writes (`partPath(id)`, undefined for `-o -`), else the newest pending or exporting one.
 */
async function continuableExport(
  earlier: Migration[],
  body: StartMigrationBody,
  partPath: (id: number) => string | undefined,
): Promise<{ migration: Migration; part?: string } | undefined> {
  const ours = earlier.filter((migration) => sameFlags(migration, body));
  for (const migration of ours) {
    const part = partPath(migration.id);
    if (part !== undefined && (await partOf(part)) === migration.guid) return { migration, part };
  }
  const running = ours.find((migration) => migration.state === 'pending' || migration.state === 'exporting');
  return running && { migration: running };
}

/**
 * The guid of the migration whose bytes `<part>` holds, as its side file says, when both are there
 * and plain (the side file is anyone's text: readPartMeta).
 */
async function partOf(part: string): Promise<string | undefined> {
  const stats = await lstat(part).catch(() => undefined);
  if (!stats?.isFile()) return undefined;
  const meta = await readPartMeta(`${part}.json`);
  return typeof meta?.guid === 'string' ? meta.guid : undefined;
}

/** What an earlier export not continued leaves: the command that saves its archive, and the one that gives its locks back. */
function whatItLeaves(earlier: Migration): string {
  const unlock = earlier.lock_repositories ? `; \`svc-migrate unlock ${earlier.id} --all\` gives back the repositories it locked` : '';
  return `\`svc-migrate download ${earlier.id} --wait --output migration-${earlier.id}.tar.gz\` saves that one's archive${unlock}`;
}

/** The warning about an earlier export of the same repositories that this one does not continue. */
function earlierExportNotice(earlier: Migration): string {
  const lock = earlier.lock_repositories ? ', lock requested' : '';
  return `migration ${earlier.id} (${earlier.state}${lock}) exports the same repositories, perhaps from a run that was stopped; this export starts another. ${whatItLeaves(earlier)}`;
}

/** The warning, with --new, about the half-done download of an earlier export of the same repositories. */
function halfDoneNotice(earlier: Migration, part: string, fresh: boolean): string {
  const lock = earlier.lock_repositories ? ', which locked its repositories' : '';
  const why = fresh ? '--new starts another instead of continuing it' : 'it was started with other flags, so another is started and the .part started over';
  return `${part} holds the half-done download of migration ${earlier.id} (${earlier.state}${lock}), an earlier export of these repositories; ${why}. ${whatItLeaves(earlier)}`;
}

export interface Begun {
  migration: Migration;
  /** Left by an earlier run, not started by this one. */
  continued: boolean;
  /** What the start step says: started, continued, or found after a lost answer. */
  step: string;
}

/**
 * The migration this export goes on with: one an earlier run left (continuableExport; not with
 * `fresh`), else a new one. A start whose answer was lost is looked for in the list before
 * anything is said (the org export's batches do the same); not found, the error names what may now
 * be locked and the command that gives it back.
 */
export async function startOrContinue(
  client: ApiClient,
  org: string,
  options: {
    body: StartMigrationBody;
    fresh: boolean;
    partPath: (id: number) => string | undefined;
    now: () => number;
    onNotice?: ((message: string) => void) | undefined;
  },
): Promise<Begun> {
  const { body } = options;
  const startingAt = options.now();
  const listed = await migrationsListed(client, org, startingAt);
  const wanted = fullNames(body, org);
  const earlier = (listed ?? []).filter((migration) => migration.state !== 'failed' && exportsExactly(migration, wanted));
  const continued = options.fresh ? undefined : await continuableExport(earlier, body, options.partPath);
  // Said before anything starts: the owner may rather save or unlock those.
  for (const other of earlier) {
    if (other === continued?.migration) continue;
    if (other.state === 'pending' || other.state === 'exporting') {
      options.onNotice?.(earlierExportNotice(other));
    } else {
      // A half-done download not continued (`--new`, or other flags): that migration would
      // otherwise be heard of only after the start, when the download starts its .part over.
      const part = options.partPath(other.id);
      if (part !== undefined && (await partOf(part)) === other.guid) options.onNotice?.(halfDoneNotice(other, part, options.fresh));
    }
  }
  if (continued) {
    const { migration, part } = continued;
    // A .part names the migration it holds; without one, an export of the same repositories and
    // flags may be this one's earlier run or another's, and the line says no more than is known.
    const why = part
      ? `started by an earlier run: its download is half done in ${part}`
      : 'started earlier with exactly these repositories and flags (by an earlier run, or another export of them)';
    return { migration, continued: true, step: `continuing migration ${migration.id} (${migration.state}), ${why}; --new starts another instead` };
  }
  try {
    const migration = await startMigration(client, org, body);
    return { migration, continued: false, step: `started migration ${migration.id} (${migration.state})` };
  } catch (error) {
    if (!(error instanceof UnavailableError)) throw error;
    // The answer was lost, not necessarily the start.
    let found: Migration | undefined;
    let lookedUp = false;
    try {
      // Without the list from before the start, what the list shows now cannot be told apart from it.
      const start = { repositories: wanted, flags: body, startingAt, existed: listed && existedAt(listed, startingAt) };
      if (listed) {
        found = await findStarted(client, org, start, new Set(), options.now());
        lookedUp = true;
      }
    } catch (lookup) {
      // The list cannot be had either: what is said is the same, the start may have happened.
      if (!(lookup instanceof CliError) || lookup instanceof InterruptedError) throw lookup;
    }
    if (found) return { migration: found, continued: false, step: `the answer to the start was lost; found migration ${found.id} (${found.state}), which it started` };
    throw lostStart(error, body, lookedUp, startingAt);
  }
}

/**
 * A start that may have happened unseen: what may be locked, and how to find and give it back. The
 * hint names no command that picks a migration by itself (`unlock --repo` takes the latest of any
 * export): the owner tells this one by its repositories and time in the list, then unlocks it by id.
 */
function lostStart(error: UnavailableError, body: StartMigrationBody, lookedUp: boolean, startingAt: number): CliError {
  const names = body.repositories.map((name) => name.slice(name.indexOf('/') + 1));
  const shown = names.length > 10 ? `${names.slice(0, 10).join(', ')} and ${names.length - 10} more` : names.join(', ');
  const locked = body.lock_repositories
    ? `; if it did, ${names.length === 1 ? 'its repository' : `its ${names.length} repositories`} (${shown}) ${names.length === 1 ? 'is' : 'are'} locked`
    : '';
  const looked = lookedUp ? 'no migration of these repositories made since the start is in the list yet' : 'the list of migrations could not be read to look for it';
  const which = `\`svc-migrate list\` shows it once it appears: exactly these repositories, created about ${new Date(startingAt).toISOString()}`;
  return new CliError(`${error.message}: ${looked}${locked}`, error.exitCode, {
    hint: body.lock_repositories
      ? `${which}; \`svc-migrate unlock <its id> --all\` gives them back`
      : `${which}; run the same export again to continue it rather than start another`,
    cause: error,
    ...(error.status === undefined ? {} : { status: error.status }),
  });
}

function fullNames(body: StartMigrationBody, org: string): string[] {
  return body.repositories.map((name) => (name.includes('/') ? name : `${org}/${name}`));
}
