import type { Command } from 'commander';
import type { Context, Runner } from '../context.js';
import { unlockExportDirectory } from '../core/journal-locks.js';
import {
  checkUnlockRequest,
  type MigrationReport,
  resolveUnlockTargets,
  unlockFailure,
  unlockMigrationIds,
  type UnlockOutcome,
  unlockRepositories,
  type UnlockRequest,
} from '../core/unlock.js';
import { UsageError } from '../errors.js';
import { shellWord } from '../support/shell-word.js';
import { unlockMessage } from '../ui/tables.js';
import { unlockMigrationsMessage } from '../ui/unlock.js';
import { commandLine } from './common/command-line.js';
import { checkNotEmpty, examples, parseMigrationId } from './common/options.js';

interface UnlockFlags {
  all?: boolean;
  repo?: string;
  outputDir?: string;
}

type UnlockCommand =
  | { kind: 'one'; request: UnlockRequest }
  /** Several migrations whole: ids given with --all, or every one the journal of --output-dir names. */
  | { kind: 'many'; ids: number[] }
  | { kind: 'output-dir'; dir: string };

function parseUnlock(id: number | undefined, names: string[], flags: UnlockFlags): UnlockCommand {
  checkNotEmpty(flags.outputDir, '--output-dir', 'name the directory an `export --output-dir` wrote into');
  if (flags.outputDir !== undefined) {
    if (id !== undefined || names.length > 0 || flags.repo !== undefined) {
      throw new UsageError('--output-dir unlocks what the export in that directory locked: give no migration id, repository or --repo with it');
    }
    return { kind: 'output-dir', dir: flags.outputDir };
  }
  // `unlock 1 2 3 --all`: with --all no repository may be named, so numbers after the id are ids.
  if (id !== undefined && flags.all && names.length > 0 && names.every((name) => /^\d+$/.test(name))) {
    const bad = names.find((name) => !Number.isSafeInteger(Number(name)) || Number(name) < 1);
    if (bad !== undefined) throw new UsageError(`a migration id is a positive integer, not "${bad}"`);
    return { kind: 'many', ids: [...new Set([id, ...names.map(Number)])] };
  }
  const request: UnlockRequest = { id, names, all: flags.all, repo: flags.repo };
  checkUnlockRequest(request);
  return { kind: 'one', request };
}

/** docs/service.md#unlock-repository for one, many or all repositories; carries on past failures and reports each. */
async function unlockOne(context: Context, request: UnlockRequest): Promise<UnlockOutcome[]> {
  const client = await context.api();
  const org = context.org();
  const targets = await resolveUnlockTargets(client, org, request);
  if (targets.foundFor) context.out.info(`${targets.foundFor} was locked by migration ${targets.id}`);
  const outcomes = await unlockRepositories(client, org, targets.id, targets.names);
  context.out.result(outcomes, (list) => unlockMessage(list, context.out.theme));
  if (targets.names.length === 0) context.out.info(`migration ${targets.id} has no repositories to unlock`);
  const failure = unlockFailure(outcomes, targets.id);
  if (failure) throw failure;
  return outcomes;
}

/** Each migration whole; with `--output-dir`, every one its journal names, recorded once given back. */
async function unlockMany(context: Context, command: Exclude<UnlockCommand, { kind: 'one' }>): Promise<MigrationReport[]> {
  const client = await context.api();
  const org = context.org();
  const list = `\`${commandLine(context.settings, 'list')}\``;
  const render = (reports: MigrationReport[]) => unlockMigrationsMessage(reports, org, context.out.theme);
  if (command.kind === 'many') {
    const { migrations, failure } = await unlockMigrationIds(client, org, command.ids, {
      retry: (ids) => `\`${commandLine(context.settings, `unlock ${ids.join(' ')} --all`)}\``,
      list,
    });
    context.out.result({ migrations }, (data) => render(data.migrations));
    if (failure) throw failure;
    return migrations;
  }
  const { dir } = command;
  const again = `\`${commandLine(context.settings, `unlock --output-dir ${shellWord(dir)}`)}\``;
  const { migrations, failure } = await unlockExportDirectory(client, org, dir, {
    clock: context.clock,
    onNotice: (message) => context.out.warn(message),
    commands: { retry: () => again, list },
  });
  context.out.result({ output_dir: dir, migrations }, (data) => render(data.migrations));
  if (failure) throw failure;
  return migrations;
}

export function register(program: Command, run: Runner): void {
  program
    .command('unlock')
    .description('unlock repositories that a migration locked, or every one an `export --output-dir` locked')
    .argument('[migration-id]', 'the migration id (not needed with --repo or --output-dir)', parseMigrationId)
    .argument('[repos...]', 'repository names; with --all, more migration ids')
    .option('--all', 'every repository of the migration (of each migration given)')
    .option('--repo <name>', 'unlock this repository in the most recent migration that locked it (with --all: every repository of that migration)')
    .option('--output-dir <dir>', 'every repository the export in DIR locked and has not unlocked (read from its journal)')
    .addHelpText(
      'after',
      examples([
        'svc-migrate unlock 4242 widgets docs.site',
        'svc-migrate unlock 4242 4243 4250 --all',
        'svc-migrate unlock --repo widgets',
        'svc-migrate unlock --output-dir backup',
      ]),
    )
    .action((id: number | undefined, names: string[], flags: UnlockFlags, cmd: Command) =>
      run(
        cmd,
        () => parseUnlock(id, names, flags),
        async (context, command) => {
          if (command.kind === 'one') await unlockOne(context, command.request);
          else await unlockMany(context, command);
        },
      ),
    );
}
