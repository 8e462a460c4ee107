import type { Command } from 'commander';
import { getMigration } from '../api/migrations.js';
import type { Migration } from '../api/types.js';
import type { Context } from '../context.js';
import type { Runner } from '../program.js';
import { migrationSummary } from '../ui/tables.js';
import { parseExclude, parseMigrationId } from './options.js';

export interface StatusOptions {
  exclude?: 'repositories';
}

/** spec §4.3: one migration's state. */
export async function status(context: Context, id: number, options: StatusOptions): Promise<Migration> {
  const client = await context.api();
  const { data } = await getMigration(client, context.org(), id, {
    excludeRepositories: options.exclude === 'repositories',
  });
  context.out.result(data, (migration) => migrationSummary(migration, context.out.theme));
  return data;
}

export function register(program: Command, run: Runner): void {
  program
    .command('status')
    .description('show the state of a migration')
    .argument('<migration-id>', 'the migration id (a positive integer)', parseMigrationId)
    .option('--exclude <attr>', 'leave repositories out of the answer', parseExclude)
    .addHelpText(
      'after',
      `
Examples:
  svc-migrate status 4242 --org acme
  svc-migrate status 4242 --json | jq -r .state`,
    )
    .action((id: number, options: StatusOptions, command: Command) =>
      run(command, (context) => status(context, id, options).then(() => {})),
    );
}
