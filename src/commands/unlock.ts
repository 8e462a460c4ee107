import type { Command } from 'commander';
import type { Context, Runner } from '../context.js';
import { checkUnlockRequest, resolveUnlockTargets, unlockFailure, type UnlockOutcome, unlockRepositories, type UnlockRequest } from '../core/unlock.js';
import { unlockMessage } from '../ui/tables.js';
import { examples, parseMigrationId } from './common/options.js';

interface UnlockFlags {
  all?: boolean;
  repo?: string;
}

/** docs/service.md#unlock-repository for one, many or all repositories; carries on past failures and reports each. */
async function unlock(context: Context, request: UnlockRequest): Promise<UnlockOutcome[]> {
  const client = await context.api();
  const org = context.org();
  const targets = await resolveUnlockTargets(client, org, request);
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
    .action((id: number | undefined, names: string[], flags: UnlockFlags, cmd: Command) =>
      run(
        cmd,
        () => {
          const request: UnlockRequest = { id, names, all: flags.all, repo: flags.repo };
          checkUnlockRequest(request);
          return request;
        },
        async (context, request) => {
          await unlock(context, request);
        },
      ),
    );
}
