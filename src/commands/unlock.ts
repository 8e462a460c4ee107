import type { Command } from 'commander';
import type { Context, Runner } from '../context.js';
import {
  findLockingMigration,
  migrationRepositoryNames,
  type UnlockOutcome,
  unlockRepositories,
} from '../core/unlock.js';
import { CliError, ExitCode, NotFoundError, UsageError } from '../errors.js';
import { unlockMessage } from '../ui/tables.js';
import { examples, parseMigrationId } from './common/options.js';

interface UnlockOptions {
  all?: boolean;
  repo?: string;
}

/** docs/service.md#unlock-repository for one, many or all repositories; carries on past failures and reports each. */
async function unlock(
  context: Context,
  idArg: number | undefined,
  repos: string[],
  options: UnlockOptions,
): Promise<UnlockOutcome[]> {
  const client = await context.api();
  const org = context.org();
  let id = idArg;
  let names = [...repos];
  if (options.repo) {
    if (id === undefined) {
      const found = await findLockingMigration(client, org, options.repo);
      if (!found) {
        throw new NotFoundError(`no migration of ${org} locked ${options.repo}`, {
          hint: 'check the name, or give the migration id: `svc-migrate unlock <id> <repo>`',
        });
      }
      id = found.id;
      context.out.info(`${options.repo} was locked by migration ${id}`);
    }
    names.push(options.repo);
  }
  if (id === undefined) throw new UsageError('give a migration id, or --repo <name> to find it');
  if (options.all && names.length > 0) {
    throw new UsageError(`--all unlocks every repository of migration ${id}; do not also name ${names.join(', ')}`, {
      hint: `run \`svc-migrate unlock ${id} --all\`, or name the repositories without --all`,
    });
  }
  if (options.all) {
    names = await migrationRepositoryNames(client, org, id);
    if (names.length === 0) {
      context.out.result([], (list) => unlockMessage(list, context.out.theme));
      context.out.info(`migration ${id} has no repositories to unlock`);
      return [];
    }
  }
  if (names.length === 0) throw new UsageError('name the repositories to unlock, or pass --all');

  const outcomes = await unlockRepositories(client, org, id, names);
  context.out.result(outcomes, (list) => unlockMessage(list, context.out.theme));
  const failed = outcomes.filter((o) => !o.ok);
  if (failed.length > 0) {
    const notFound = failed.every((o) => o.exitCode === ExitCode.NotFound);
    throw new CliError(
      `${failed.length} of ${outcomes.length} repositories could not be unlocked`,
      failed[0]?.exitCode ?? ExitCode.Unavailable,
      {
        // A 404 is a name that is not in this migration (or not locked): retrying cannot help.
        hint: notFound
          ? `check the names with \`svc-migrate repos ${id}\`; only repositories of migration ${id} can be unlocked through it`
          : `retry with \`svc-migrate unlock ${id} ${failed.map((o) => o.repository).join(' ')}\``,
      },
    );
  }
  return outcomes;
}

export function register(program: Command, run: Runner): void {
  program
    .command('unlock')
    .description('unlock repositories that a migration locked')
    .argument('[migration-id]', 'the migration id (not needed with --repo)', parseMigrationId)
    .argument('[repos...]', 'repository names')
    .option('--all', 'every repository of the migration')
    .option('--repo <name>', 'unlock this repository in the most recent migration that locked it')
    .addHelpText(
      'after',
      examples([
        'svc-migrate unlock 4242 widgets docs.site',
        'svc-migrate unlock 4242 --all',
        'svc-migrate unlock --repo widgets',
      ]),
    )
    .action((id: number | undefined, repos: string[], options: UnlockOptions, cmd: Command) =>
      run(cmd, async (context) => {
        await unlock(context, id, repos, options);
      }),
    );
}
