import type { Command } from 'commander';
import { REPOSITORY_FIELDS, type Repository } from '../api/types.js';
import type { Context, Invocation, Runner } from '../context.js';
import { findMigrationRepositories } from '../core/migration-repositories.js';
import { checkFields } from '../ui/output.js';
import { repositoriesTable } from '../ui/tables.js';
import { addPagingOptions, showing } from './common/flags.js';
import { examples, parseMigrationId } from './common/options.js';
import { UsageError } from '../errors.js';

interface ReposFlags {
  perPage?: number;
  page?: number;
  all?: boolean;
  /** One full name a line, nothing else: a list `export --repos-file` reads. */
  names?: boolean;
}

interface ReposOptions extends ReposFlags {
  id: number;
}

function parseReposOptions(id: number, flags: ReposFlags, invocation: Invocation): ReposOptions {
  checkFields(invocation.fields, REPOSITORY_FIELDS, 'a repository');
  if (flags.names && invocation.settings.json) {
    throw new UsageError('--names and --json do not go together', { hint: '--names prints one name a line; --json full_name prints them as JSON' });
  }
  return { id, ...flags };
}

/** docs/service.md#migration-repositories */
async function repos(context: Context, { id, names, ...options }: ReposOptions): Promise<Repository[]> {
  let more: { total: number | undefined } | undefined;
  const notice = (message: string) => context.out.warn(message);
  const repositories = await findMigrationRepositories(await context.api(), context.org(), id, options, notice, (total) => {
    more = { total };
  });
  context.out.result(repositories, (list) =>
    names ? list.map((repo) => repo.full_name).join('\n') : repositoriesTable(list, context.out.theme, context.out.layout));
  if (more) context.out.info(showing(repositories.length, more.total, 'repositories', options.page));
  return repositories;
}

export function register(program: Command, run: Runner): void {
  const command = program
    .command('repos')
    .description('list the repositories of a migration')
    .argument('<migration-id>', 'the migration id', parseMigrationId);
  addPagingOptions(command, 'repositories')
    .option('--names', 'print each repository\'s full name alone, one a line (a list for --repos-file)')
    .addHelpText('after', examples(['svc-migrate repos 4242', 'svc-migrate repos 4242 --all --names > repos.txt', 'svc-migrate repos 4242 --json full_name,size']))
    .action((id: number, flags: ReposFlags, cmd: Command) =>
      run(
        cmd,
        (invocation) => parseReposOptions(id, flags, invocation),
        async (context, options) => {
          await repos(context, options);
        },
      ),
    );
}
