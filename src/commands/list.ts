import { type Command, Option } from 'commander';
import { MIGRATION_FIELDS, MIGRATION_STATES, type Migration, type MigrationState } from '../api/types.js';
import type { Context, Invocation, Runner } from '../context.js';
import { findMigrations } from '../core/list-migrations.js';
import { checkFields } from '../ui/output.js';
import { migrationsTable } from '../ui/tables.js';
import { addPagingOptions, showing } from './common/flags.js';
import { examples } from './common/options.js';

interface ListFlags {
  perPage?: number;
  page?: number;
  all?: boolean;
  state?: MigrationState;
  exclude?: 'repositories';
}

type ListOptions = Omit<ListFlags, 'exclude'> & { excludeRepositories: boolean };

function parseListOptions({ exclude, ...flags }: ListFlags, invocation: Invocation): ListOptions {
  checkFields(invocation.fields, MIGRATION_FIELDS, 'a migration');
  return { ...flags, excludeRepositories: exclude === 'repositories' };
}

/** The organization's most recent migrations (core/list-migrations.ts), as a table or JSON. */
async function list(context: Context, options: ListOptions): Promise<Migration[]> {
  const { excludeRepositories } = options;
  const query = { perPage: options.perPage, page: options.page, all: options.all, state: options.state, excludeRepositories };
  let more: { total: number | undefined } | undefined;
  const migrations = await findMigrations(await context.api(), context.org(), query, (message) => context.out.warn(message), (total) => {
    more = { total };
  });
  if (options.state && options.page !== undefined) {
    context.out.info(`only page ${options.page} was searched for ${options.state} migrations; drop --page to search them all`);
  }
  context.out.result(migrations, (data) => migrationsTable(data, context.out.theme, excludeRepositories, context.out.layout));
  if (more) context.out.info(showing(migrations.length, more.total, 'migrations', options.page));
  return migrations;
}

export function register(program: Command, run: Runner): void {
  const command = program.command('list').description('list the organization\'s migrations, newest first');
  addPagingOptions(command, 'migrations')
    .addOption(new Option('--state <state>', 'only migrations in this state (searches every page)').choices(MIGRATION_STATES))
    .addOption(new Option('--exclude <attr>', 'leave repositories out of the answer (faster)').choices(['repositories']))
    .addHelpText('after', examples(['svc-migrate list --org acme', 'svc-migrate list --all --state exported --json', 'svc-migrate list --json id,state,created_at']))
    .action((flags: ListFlags, command: Command) =>
      run(
        command,
        (invocation) => parseListOptions(flags, invocation),
        (context, options) => list(context, options).then(() => {}),
      ),
    );
}
