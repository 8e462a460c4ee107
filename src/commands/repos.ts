import type { Command } from 'commander';
import { REPOSITORY_FIELDS, type Repository } from '../api/types.js';
import type { Context, Invocation, Runner } from '../context.js';
import { findMigrationRepositories } from '../core/migration-repositories.js';
import { checkFields } from '../ui/output.js';
import { repositoriesTable } from '../ui/tables.js';
import { addPagingOptions, showing } from './common/flags.js';
import { examples, parseMigrationId } from './common/options.js';

interface ReposFlags {
  perPage?: number;
  page?: number;
  all?: boolean;
}

interface ReposOptions extends ReposFlags {
  id: number;
}

function parseReposOptions(id: number, flags: ReposFlags, invocation: Invocation): ReposOptions {
  checkFields(invocation.fields, REPOSITORY_FIELDS, 'a repository');
  return { id, ...flags };
}

/** docs/service.md#migration-repositories */
async function repos(context: Context, { id, ...options }: ReposOptions): Promise<Repository[]> {
  let more: { total: number | undefined } | undefined;
  const notice = (message: string) => context.out.warn(message);
  const repositories = await findMigrationRepositories(await context.api(), context.org(), id, options, notice, (total) => {
    more = { total };
  });
  context.out.result(repositories, (list) => repositoriesTable(list, context.out.theme, context.out.layout));
  if (more) context.out.info(showing(repositories.length, more.total, 'repositories', options.page));
  return repositories;
}

export function register(program: Command, run: Runner): void {
  const command = program
    .command('repos')
    .description('list the repositories of a migration')
    .argument('<migration-id>', 'the migration id', parseMigrationId);
  addPagingOptions(command, 'repositories')
    .addHelpText('after', examples(['svc-migrate repos 4242', 'svc-migrate repos 4242 --all --json | jq -r \'.[].full_name\'', 'svc-migrate repos 4242 --json full_name,size']))
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
