import { type Command, Option } from 'commander';
import { MIGRATION_FIELDS, type Migration } from '../api/types.js';
import type { Context, Invocation, Runner } from '../context.js';
import { UsageError } from '../errors.js';
import { checkFields } from '../ui/output.js';
import { migrationSummary } from '../ui/tables.js';
import { examples, parseMigrationId } from './common/options.js';
import { currentMigrations, unfinishedMigrationIds } from '../core/status.js';
import { failIfAnyFailed, waitThenFetch } from './common/wait.js';
import { addWaitOptions, type WaitFlags, type WaitSettings, waitSettings } from './common/flags.js';

interface StatusFlags extends WaitFlags {
  wait?: boolean;
  allPending?: boolean;
  exclude?: 'repositories';
}

interface StatusOptions {
  /** Each once, in the order given. */
  ids: number[];
  allPending: boolean;
  excludeRepositories: boolean;
  /** With --wait: how. */
  wait?: WaitSettings;
}

function parseStatusOptions(ids: number[], flags: StatusFlags, invocation: Invocation): StatusOptions {
  checkFields(invocation.fields, MIGRATION_FIELDS, 'a migration');
  if (ids.length === 0 && !flags.allPending) throw new UsageError('give at least one migration id, or --all-pending');
  return {
    ids: [...new Set(ids)],
    allPending: Boolean(flags.allPending),
    excludeRepositories: flags.exclude === 'repositories',
    ...(flags.wait ? { wait: waitSettings(flags) } : {}),
  };
}

/** docs/service.md#migration-status: one or several migrations' state, optionally waiting until each is done. */
async function status(context: Context, options: StatusOptions): Promise<Migration[]> {
  const client = await context.api();
  const org = context.org();
  const wanted = [...options.ids];
  if (options.allPending) {
    for (const id of await unfinishedMigrationIds(client, org)) if (!wanted.includes(id)) wanted.push(id);
    if (wanted.length === 0) context.out.info('no pending or exporting migrations');
  }
  const { excludeRepositories } = options;
  const migrations = options.wait
    ? await waitThenFetch(context, wanted, options.wait, excludeRepositories)
    : await currentMigrations(client, org, wanted, { excludeRepositories });
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
    .action((ids: number[] | undefined, flags: StatusFlags, cmd: Command) =>
      run(
        cmd,
        (invocation) => parseStatusOptions(ids ?? [], flags, invocation),
        async (context, options) => {
          await status(context, options);
        },
      ),
    );
}
