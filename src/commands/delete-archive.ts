import type { Command } from 'commander';
import { deleteArchive } from '../api/migrations.js';
import type { Context, Runner } from '../context.js';
import { checkConfirmable, confirmDeletion } from './common/confirm.js';
import { examples, parseMigrationId } from './common/options.js';

interface DeleteArchiveFlags {
  yes?: boolean;
}

interface DeleteArchiveOptions extends DeleteArchiveFlags {
  id: number;
}

/** docs/service.md#delete-archive */
async function removeArchive(context: Context, { id, ...options }: DeleteArchiveOptions): Promise<void> {
  await confirmDeletion(
    context,
    `Delete the archive of migration ${id} from the service? It cannot be downloaded again.`,
    options.yes,
  );
  const client = await context.api();
  await deleteArchive(client, context.org(), id);
  context.out.result({ migration_id: id, archive_deleted: true }, () => `deleted the archive of migration ${id}`);
}

export function register(program: Command, run: Runner): void {
  program
    .command('delete-archive')
    .description('delete a migration\'s archive from the service (asks first on a terminal)')
    .argument('<migration-id>', 'the migration id', parseMigrationId)
    .option('-y, --yes', 'do not ask (required without a terminal)')
    .addHelpText('after', examples(['svc-migrate delete-archive 4242', 'svc-migrate delete-archive 4242 --yes']))
    .action((id: number, flags: DeleteArchiveFlags, cmd: Command) =>
      run(
        cmd,
        (invocation) => {
          checkConfirmable(flags.yes, invocation);
          return { id, ...flags };
        },
        removeArchive,
      ),
    );
}
