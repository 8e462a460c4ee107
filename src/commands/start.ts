import type { Command } from 'commander';
import { startMigration } from '../api/migrations.js';
import type { Migration } from '../api/types.js';
import type { Context, Runner } from '../context.js';
import { migrationSummary, startedMessage } from '../ui/tables.js';
import {
  addStartOptions,
  addWaitOptions,
  collectRepositories,
  refineInteractively,
  type StartFlags,
  startBody,
  type WaitFlags,
} from './common/flags.js';
import { failIfAnyFailed, waitAndReport } from './common/wait.js';

interface StartOptions extends StartFlags, WaitFlags {
  wait?: boolean;
}

/** docs/service.md#start-migration: start an export; with --wait, also wait for it. */
async function start(context: Context, args: string[], options: StartOptions): Promise<Migration> {
  const { repositories, asked } = await collectRepositories(context, args, options);
  const body = await refineInteractively(context, startBody(repositories, options), asked);
  const client = await context.api();
  const migration = await startMigration(client, context.org(), body);
  if (!options.wait) {
    context.out.result(migration, (m) => startedMessage(m, context.out.theme));
    return migration;
  }
  context.out.info(startedMessage(migration, context.out.theme).split('\n')[0] ?? '');
  const [finished] = await waitAndReport(context, [migration.id], options);
  context.out.result(finished as Migration, (m) => migrationSummary(m, context.out.theme));
  failIfAnyFailed([finished as Migration]);
  return finished as Migration;
}

export function register(program: Command, run: Runner): void {
  const command = program
    .command('start')
    .description('start a migration export of repositories')
    .argument('[repos...]', 'repositories as <repo> (of --org) or <owner>/<repo>');
  addStartOptions(command).option('--wait', 'wait until the export is done');
  addWaitOptions(command)
    .addHelpText(
      'after',
      `
Examples:
  svc-migrate start widgets docs.site --lock
  svc-migrate start --repos-file repos.txt --exclude-releases --json
  grep -v archived all.txt | svc-migrate start --repos-file - --wait`,
    )
    .action((repos: string[], options: StartOptions, cmd: Command) =>
      run(cmd, async (context) => {
        await start(context, repos, options);
      }),
    );
}
