import { Command, Option } from 'commander';
import { register as registerArchive } from './commands/archive/index.js';
import { register as registerAuth } from './commands/auth.js';
import { register as registerCompletion } from './commands/completion.js';
import { register as registerConfig } from './commands/config.js';
import { register as registerDeleteArchive } from './commands/delete-archive.js';
import { register as registerDownload } from './commands/download.js';
import { register as registerExport } from './commands/export.js';
import { register as registerList } from './commands/list.js';
import { register as registerRepos } from './commands/repos.js';
import { register as registerSandbox } from './commands/sandbox.js';
import { register as registerStart } from './commands/start.js';
import { register as registerStatus } from './commands/status.js';
import { register as registerUnlock } from './commands/unlock.js';
import { register as registerWebhook } from './commands/webhook/index.js';
import { restateFailure } from './commands/common/command-line.js';
import { commandLineError } from './commands/common/usage-errors.js';
import { createContext, defaultFactory, type Factory, type Runner, type RunInstead } from './context.js';
import type { Io } from './io.js';
import { type GlobalFlags, resolveSettings } from './settings/resolve.js';
import { VERSION } from './support/version.js';

// The commander tree: global options, grouped help, and one register() per command module. The
// Runner here gives each command its Context and restates every error's hint for this command line
// (commands/common/command-line.ts), so the commands a hint names reach the same service.

const WORKFLOW = `
Typical workflow:
  svc-migrate start repo-a repo-b --lock     start an export of two repositories
  svc-migrate status <id> --wait             wait until it is exported
  svc-migrate download <id>                  stream the archive to disk (resumable, sha256)
  svc-migrate unlock <id> --all              unlock the repositories again
  svc-migrate delete-archive <id> --yes      delete the archive from the service
or all of it at once:
  svc-migrate export repo-a repo-b --lock --unlock --delete-archive

Try it without an account: svc-migrate export --sandbox --yes --output sandbox-demo.tar.gz --force
`;

/** `--token` / `--secret` given with a value on the command line, where `ps` shows it to every local user. */
function secretsOnCommandLine(command: Command): string[] {
  const values = command.optsWithGlobals<Record<string, unknown>>();
  return ['token', 'secret'].filter((key) => {
    if (command.getOptionValueSourceWithGlobals(key) !== 'cli') return false;
    const value = values[key];
    return Array.isArray(value) ? value.some((v) => typeof v === 'string') : typeof value === 'string';
  });
}

/** `webhook listen`: a subcommand's names below the program. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let at: Command | null = command; at?.parent; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}

/**
 * The program. `runInstead`, when given, receives each command's checked options in place of
 * running it (the seam described in context.ts): no Context, no request, no sandbox.
 */
export function buildProgram(
  io: Io,
  signal: AbortSignal,
  options: { json?: boolean; runInstead?: RunInstead } = {},
  factory: Factory = defaultFactory,
): Command {
  const program = new Command('svc-migrate');
  // Before any subcommand is added, so they inherit it (commander copies settings on creation).
  program.exitOverride();
  program.configureOutput({
    writeOut: (text) => io.stdout.write(text),
    // With --json nothing of commander's reaches stderr: a usage error is one JSON line (main.ts).
    writeErr: (text) => (options.json ? true : io.stderr.write(text)),
    // Its errors are said by main.ts as every error is (commandLineError below).
    outputError: () => {},
  });
  program
    .description('Move an organization\'s repositories out of the service, and receive its webhooks locally.')
    .version(VERSION, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .showSuggestionAfterError(true)
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .option('--org <org>', 'organization (env SVC_ORG)')
    .option('--base-url <url>', 'API root, e.g. https://api.example.com (env SVC_BASE_URL)')
    .option('--token <token>', 'bearer token (env SVC_TOKEN; or `auth login`)')
    .option('--api-version <version>', 'X-Service-Api-Version to send (env SVC_API_VERSION)')
    .option('--sandbox', 'run against an in-process emulator of the service (env SVC_SANDBOX=1)')
    .option('--json', 'machine output on stdout; messages on stderr (list, status, repos: --json id,state for those fields)')
    .addOption(new Option('--json-fields <fields>').hideHelp())
    .option('--no-color', 'no colour (also NO_COLOR)')
    .option('-q, --quiet', 'less output: results, warnings and errors only')
    .option('--debug', 'HTTP trace on stderr with credentials redacted (env SVC_DEBUG=1)')
    .option('--no-input', 'never prompt; a missing value is a usage error (also when CI is set)')
    .addOption(new Option('--max-wait <duration>', 'longest rate-limit wait to sit through (default 5m)'))
    .option('--ca-file <file>', 'also trust the certificate authorities of this PEM file, for the API and its archive storage (env SVC_CA_FILE)')
    .option('--insecure', 'allow sending the token over plain HTTP to a host beyond loopback (certificates are always checked)')
    .addHelpText('after', WORKFLOW);

  const run: Runner = async (command, parse, body) => {
    const flags = command.optsWithGlobals<GlobalFlags>();
    const settings = resolveSettings(flags, io.env, {}, { stdinIsTty: Boolean(io.stdin.isTTY) });
    let parsed;
    try {
      parsed = parse({ settings, fields: flags.jsonFields?.split(','), stdoutIsTTY: Boolean(io.stdout.isTTY) });
    } catch (error) {
      // Restated as the body's failures are: what a hint needs of the settings is on the command line.
      restateFailure(error, settings);
      throw error;
    }
    if (options.runInstead) return options.runInstead(commandPath(command), parsed);
    const context = await createContext(flags, io, signal, secretsOnCommandLine(command), factory);
    try {
      await body(context, parsed);
    } catch (error) {
      // The command a hint names must work as printed: with this run's flags, and never pointing at
      // the in-process sandbox that stops with this run.
      restateFailure(error, context.settings);
      throw error;
    } finally {
      await context.dispose();
    }
  };

  for (const register of [
    registerStart,
    registerStatus,
    registerList,
    registerRepos,
    registerDownload,
    registerDeleteArchive,
    registerUnlock,
    registerExport,
    registerArchive,
    registerWebhook,
    registerAuth,
    registerConfig,
    registerCompletion,
    registerSandbox,
  ]) {
    register(program, run);
  }
  // A refused command line becomes a usage error that points at the help of the command that refused it.
  const refuseAs = (command: Command) =>
    command.exitOverride((error) => {
      if (error.exitCode === 0 || error.code === 'commander.help') throw error;
      throw commandLineError(error, commandPath(command));
    });
  const everyCommand = (command: Command): Command[] => [command, ...command.commands.flatMap(everyCommand)];
  everyCommand(program).forEach(refuseAs);
  return program;
}
