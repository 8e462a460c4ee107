import { type Command, Option } from 'commander';
import { listAllMigrations, listMigrations } from '../api/migrations.js';
import { MIGRATION_STATES, type Migration, type MigrationState } from '../api/types.js';
import type { Context, Runner } from '../context.js';
import { migrationsTable } from '../ui/tables.js';
import { addPagingOptions } from './common/flags.js';
import { examples } from './common/options.js';

interface ListOptions {
  perPage?: number;
  page?: number;
  all?: boolean;
  state?: MigrationState;
  exclude?: 'repositories';
}

/** docs/service.md#list-migrations: the organization's most recent migrations, one page or all of them. */
async function list(context: Context, options: ListOptions): Promise<Migration[]> {
  const client = await context.api();
  const org = context.org();
  const query = {
    perPage: options.perPage,
    page: options.page,
    excludeRepositories: options.exclude === 'repositories',
  };
  const notice = (message: string) => context.out.warn(message);
  let migrations: Migration[] = [];
  if (options.state && options.page === undefined) {
    // A filter searches every page: an older failure must not be missed because it is on page 3.
    // Without --all it stops once it has a page's worth of matches.
    const limit = options.all ? Infinity : (options.perPage ?? 30);
    for await (const page of listAllMigrations(client, org, query, notice)) {
      migrations.push(...page.filter((m) => m.state === options.state));
      if (migrations.length >= limit) break;
    }
    migrations = migrations.slice(0, limit);
  } else if (options.all) {
    for await (const page of listAllMigrations(client, org, query, notice)) migrations.push(...page);
  } else {
    migrations = (await listMigrations(client, org, query, notice)).data;
  }
  if (options.state && options.page !== undefined) {
    migrations = migrations.filter((m) => m.state === options.state);
    context.out.info(`only page ${options.page} was searched for ${options.state} migrations; drop --page to search them all`);
  }
  context.out.result(migrations, (data) => migrationsTable(data, context.out.theme, query.excludeRepositories, context.out.layout));
  return migrations;
}

export function register(program: Command, run: Runner): void {
  const command = program.command('list').description('list the organization\'s migrations, newest first');
  addPagingOptions(command, 'migrations')
    .addOption(new Option('--state <state>', 'only migrations in this state (searches every page)').choices(MIGRATION_STATES))
    .addOption(new Option('--exclude <attr>', 'leave repositories out of the answer (faster)').choices(['repositories']))
    .addHelpText('after', examples(['svc-migrate list --org acme', 'svc-migrate list --all --state exported --json']))
    .action((options: ListOptions, command: Command) =>
      run(command, (context) => list(context, options).then(() => {})),
    );
}
