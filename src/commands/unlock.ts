import type { Command } from 'commander';
import type { Context, Runner } from '../context.js';
import { resolveUnlockTargets, unlockFailure, type UnlockOutcome, unlockRepositories } from '../core/unlock.js';
import { unlockMessage } from '../ui/tables.js';
import { examples, parseMigrationId } from './common/options.js';

interface UnlockOptions {
  all?: boolean;
  repo?: string;
}

/** docs/service.md#unlock-repository for one, many or all repositories; carries on past failures and reports each. */
async function unlock(context: Context, id: number | undefined, names: string[], options: UnlockOptions): Promise<UnlockOutcome[]> {
  const client = await context.api();
  const org = context.org();
  const targets = await resolveUnlockTargets(client, org, { id, names, all: options.all, repo: options.repo });
  if (targets.foundFor) context.out.info(`${targets.foundFor} was locked by migration ${targets.id}`);
  const outcomes = await unlockRepositories(client, org, targets.id, targets.names);
  context.out.result(outcomes, (list) => unlockMessage(list, context.out.theme));
  if (targets.names.length === 0) context.out.info(`migration ${targets.id} has no repositories to unlock`);
  const failure = unlockFailure(outcomes, targets.id);
  if (failure) throw failure;
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
