import { type Command, Option } from 'commander';
import { MIGRATION_FIELDS, type Migration } from '../api/types.js';
import type { Context, Runner } from '../context.js';
import { UsageError } from '../errors.js';
import { migrationSummary } from '../ui/tables.js';
import { examples, parseMigrationId } from './common/options.js';
import { currentMigrations, unfinishedMigrationIds } from '../core/status.js';
import { failIfAnyFailed, waitThenFetch } from './common/wait.js';
import { addWaitOptions, type WaitFlags } from './common/flags.js';

interface StatusOptions extends WaitFlags {
  wait?: boolean;
  allPending?: boolean;
  exclude?: 'repositories';
}

/** docs/service.md#migration-status: one or several migrations' state, optionally waiting until each is done. */
async function status(context: Context, ids: number[], options: StatusOptions): Promise<Migration[]> {
  context.out.selectable(MIGRATION_FIELDS, 'a migration');
  const client = await context.api();
  const org = context.org();
  const wanted = [...new Set(ids)];
  if (options.allPending) {
    for (const id of await unfinishedMigrationIds(client, org)) if (!wanted.includes(id)) wanted.push(id);
    if (wanted.length === 0) context.out.info('no pending or exporting migrations');
  } else if (wanted.length === 0) {
    throw new UsageError('give at least one migration id, or --all-pending');
  }
  const migrations = options.wait
    ? await waitThenFetch(context, wanted, options)
    : await currentMigrations(client, org, wanted, { excludeRepositories: options.exclude === 'repositories' });
  const single = wanted.length === 1 && !options.allPending;
  const theme = context.out.theme;
  if (single) context.out.result(migrations[0] as Migration, (m) => migrationSummary(m, theme));
  else context.out.result(migrations, (list) => list.map((m) => migrationSummary(m, theme)).join('\n\n'));
  if (options.wait) failIfAnyFailed(migrations);
  return migrations;
}

export function register(program: Command, run: Runner): void {
  const command = program
    .command('status')
    .description('show the state of migrations, or wait until they are exported')
    .argument('[migration-id...]', 'migration ids (positive integers)', (value: string, previous: number[] = []) => [
      ...previous,
      parseMigrationId(value),
    ])
    .option('--wait', 'poll until each is exported or failed (exit 6 if one failed, 7 on --timeout)')
    .option('--all-pending', 'every pending or exporting migration of the organization')
    .addOption(new Option('--exclude <attr>', 'leave repositories out of the answer').choices(['repositories']));
  addWaitOptions(command)
    .addHelpText(
      'after',
      examples([
        'svc-migrate status 4242',
        'svc-migrate status 4242 --wait --timeout 2h',
        'svc-migrate status --all-pending --wait --json',
      ]),
    )
    .action((ids: number[] | undefined, options: StatusOptions, cmd: Command) =>
      run(cmd, async (context) => {
        await status(context, ids ?? [], options);
      }),
    );
}
