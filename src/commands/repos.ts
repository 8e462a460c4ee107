import type { Command } from 'commander';
import { REPOSITORY_FIELDS, type Repository } from '../api/types.js';
import type { Context, Runner } from '../context.js';
import { findMigrationRepositories } from '../core/migration-repositories.js';
import { repositoriesTable } from '../ui/tables.js';
import { addPagingOptions, showing } from './common/flags.js';
import { examples, parseMigrationId } from './common/options.js';

interface ReposOptions {
  perPage?: number;
  page?: number;
  all?: boolean;
}

/** docs/service.md#migration-repositories */
async function repos(context: Context, id: number, options: ReposOptions): Promise<Repository[]> {
  context.out.selectable(REPOSITORY_FIELDS, 'a repository');
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
    .action((id: number, options: ReposOptions, cmd: Command) =>
      run(cmd, async (context) => {
        await repos(context, id, options);
      }),
    );
}
