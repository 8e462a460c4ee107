import type { Command } from 'commander';
import { startMigration } from '../api/migrations.js';
import type { Migration } from '../api/types.js';
import type { Context, Invocation, Runner } from '../context.js';
import { migrationSummary, startedMessage } from '../ui/tables.js';
import {
  addStartOptions,
  addWaitOptions,
  checkRepositoryFlags,
  collectRepositories,
  refineInteractively,
  type StartFlags,
  startBody,
  type WaitFlags,
  type WaitSettings,
  waitSettings,
} from './common/flags.js';
import { failIfAnyFailed, waitThenFetch } from './common/wait.js';
import { commandLine, sandboxStopped } from './common/command-line.js';
import { examples } from './common/options.js';
import { startAsking } from './common/start.js';

interface StartFlagsGiven extends StartFlags, WaitFlags {
  wait?: boolean;
}

interface StartOptions {
  /** Repositories named as arguments. */
  args: string[];
  flags: StartFlags;
  /** With --wait: how. */
  wait?: WaitSettings;
}

function parseStartOptions(args: string[], flags: StartFlagsGiven, invocation: Invocation): StartOptions {
  checkRepositoryFlags(args, flags, invocation);
  return { args, flags, ...(flags.wait ? { wait: waitSettings(flags) } : {}) };
}

/** docs/service.md#start-migration: start an export; with --wait, also wait for it. */
async function start(context: Context, options: StartOptions): Promise<Migration> {
  const { repositories, asked } = await collectRepositories(context, options.args, options.flags);
  const body = await refineInteractively(context, startBody(repositories, options.flags), asked);
  const client = await context.api();
  const { out } = context;
  const send = (names: string[]) => startMigration(client, context.org(), { ...body, repositories: names });
  const migration = await startAsking(context, body.repositories, asked, send);
  // On a terminal stdout says what happened; with -q or in a pipe it carries just the id
  // (`id=$(svc-migrate start …)`), and the words go to stderr.
  const forHuman = !out.layout.plain && !out.quiet;
  if (!options.wait) {
    out.result(migration, (m) => (forHuman ? startedMessage(m, out.theme) : String(m.id)));
    if (!forHuman && !out.json) out.info(startedMessage(migration, out.theme));
    out.info(nextStep(context, migration, Boolean(body.lock_repositories)));
    return migration;
  }
  out.info(startedMessage(migration, out.theme));
  const [finished] = (await waitThenFetch(context, [migration.id], options.wait, options.flags.exclude === 'repositories')) as [Migration];
  out.result(finished, (m) => (forHuman ? migrationSummary(m, out.theme) : String(m.id)));
  failIfAnyFailed([finished]);
  if (body.lock_repositories) out.info(lockedNote(context, finished));
  return finished;
}

/** What to run next; with --sandbox, that nothing can be: the emulator stops with this command. */
function nextStep(context: Context, migration: Migration, locked: boolean): string {
  if (context.settings.sandbox) return `note: ${sandboxStopped(`migration ${migration.id}`)}`;
  const next = `next: ${commandLine(context.settings, `status ${migration.id} --wait`)}`;
  return locked ? `${next}\n${lockedNote(context, migration)}` : next;
}

/** A start with --lock leaves its repositories locked after this command: say so, and how to undo it. */
function lockedNote(context: Context, migration: Migration): string {
  const count = migration.repositories?.length;
  const what = count === undefined ? 'its repositories' : count === 1 ? 'its repository' : `its ${count} repositories`;
  if (context.settings.sandbox) return `migration ${migration.id} locked ${what} in the in-process sandbox, which stops with this command`;
  return `migration ${migration.id} keeps ${what} locked until \`${commandLine(context.settings, `unlock ${migration.id} --all`)}\``;
}

export function register(program: Command, run: Runner): void {
  const command = program
    .command('start')
    .description('start a migration export of repositories')
    .argument('[repos...]', 'repositories: name (of --org) or owner/name');
  addStartOptions(command).option('--wait', 'wait until the export is done');
  addWaitOptions(command)
    .addHelpText(
      'after',
      examples([
        'svc-migrate start widgets docs.site --lock',
        'svc-migrate start --repos-file repos.txt --exclude-releases --json',
        'grep -v archived all.txt | svc-migrate start --repos-file - --wait',
      ]),
    )
    .action((repos: string[], flags: StartFlagsGiven, cmd: Command) =>
      run(
        cmd,
        (invocation) => parseStartOptions(repos, flags, invocation),
        async (context, options) => {
          await start(context, options);
        },
      ),
    );
}
