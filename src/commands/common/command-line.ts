import { CliError } from '../../errors.js';
import type { Settings } from '../../settings/resolve.js';
import { shellWord } from '../../support/shell-word.js';

// The commands a hint tells the user to run must work as printed: reach the same service and
// organization as the command that printed them, and with --sandbox, not send anyone to an
// emulator that stopped with the command.

/** Subcommands that talk to the service, and so need its flags. */
const SERVICE_COMMANDS = ['start', 'status', 'list', 'repos', 'download', 'delete-archive', 'unlock', 'export'];

/** Of those, the ones that act on what an earlier run left there (a migration, its archive, its locks). */
const LATER_COMMANDS = new Set(['status', 'list', 'repos', 'download', 'delete-archive', 'unlock']);

const QUOTED_COMMAND = /`svc-migrate ([a-z-]+)([^`]*)`/g;

/**
 * The global flags of this command line that a later command needs to reach the same service as
 * the same organization. Never the token: a hint is no place for it (SVC_TOKEN or `auth login`).
 */
function serviceFlags(settings: Settings): [flag: string, value?: string][] {
  const flags: [string, string?][] = [];
  if (settings.baseUrl.source === 'flag' && settings.baseUrl.value) flags.push(['--base-url', settings.baseUrl.value]);
  if (settings.org.source === 'flag' && settings.org.value) flags.push(['--org', settings.org.value]);
  if (settings.apiVersion.source === 'flag') flags.push(['--api-version', settings.apiVersion.value]);
  if (settings.caFile.source === 'flag' && settings.caFile.value) flags.push(['--ca-file', settings.caFile.value]);
  if (settings.insecure && settings.baseUrl.source === 'flag') flags.push(['--insecure']);
  return flags;
}

/** `args` (a subcommand and its arguments, already quoted) with the flags that are not in it yet. */
function withServiceFlags(args: string, settings: Settings): string {
  const words = args.split(/\s+/);
  const missing = serviceFlags(settings).filter(([flag]) => !words.includes(flag) && !words.some((word) => word.startsWith(`${flag}=`)));
  return [args.trimEnd(), ...missing.map(([flag, value]) => (value === undefined ? flag : `${flag} ${shellWord(value)}`))].join(' ');
}

/** The command line that runs `args` against the same service and organization as this run. */
export function commandLine(settings: Settings, args: string): string {
  return `svc-migrate ${withServiceFlags(args, settings)}`;
}

/** With --sandbox: what stands in for a command that would look for `what` (this run's migrations). */
export function sandboxStopped(what?: string): string {
  const stopped = what === undefined ? 'the in-process sandbox lives as long as one command' : `the in-process sandbox has stopped, and ${what} with it`;
  return `${stopped}; each --sandbox command starts a new one. For a sandbox that stays, run \`svc-migrate sandbox\` in another terminal and use the variables it prints`;
}

/**
 * A hint (or a notice naming commands) as this command line needs it: each quoted `svc-migrate …` that talks to the service gets
 * the flags this run reached the service with. With --sandbox, a clause of the hint that sends the
 * user back to this run's migrations cannot work: it says so instead, and the other clauses stay.
 */
export function restateHint(hint: string, settings: Settings): string {
  const namesLater = (clause: string) => [...clause.matchAll(QUOTED_COMMAND)].some((match) => LATER_COMMANDS.has(match[1] ?? ''));
  const withFlags = (clause: string) =>
    clause.replace(QUOTED_COMMAND, (whole, command: string, rest: string) =>
      SERVICE_COMMANDS.includes(command) ? `\`${commandLine(settings, `${command}${rest}`)}\`` : whole,
    );
  const clauses = hint.split('; ');
  if (!settings.sandbox || !clauses.some(namesLater)) {
    const restated = clauses.map(withFlags).join('; ');
    // The token is never repeated in a hint: a command it names needs it from elsewhere.
    const needsToken = settings.token.source === 'flag' && [...hint.matchAll(QUOTED_COMMAND)].some((match) => SERVICE_COMMANDS.includes(match[1] ?? ''));
    return needsToken ? `${restated} (with your token in SVC_TOKEN, or --token as this command had it)` : restated;
  }
  const later = clauses.filter(namesLater).join('; ');
  const ids = [...new Set([...later.matchAll(/`svc-migrate [a-z-]+ (\d+)/g)].map((match) => match[1]))];
  return [sandboxStopped(ids.length === 0 ? undefined : `migration ${ids.join(', ')}`), ...clauses.filter((clause) => !namesLater(clause)).map(withFlags)].join('; ');
}

/** A failure's hint restated for this command line (restateHint). */
export function restateFailure(error: unknown, settings: Settings): void {
  if (error instanceof CliError && error.hint) error.hint = restateHint(error.hint, settings);
}
