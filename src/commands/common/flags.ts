import { type Command, Option } from 'commander';
import type { StartMigrationBody } from '../../api/types.js';
import type { Context, Invocation } from '../../context.js';
import { normalizeRepositories, parseReposFile, reposFileText, type RepositoryEntry } from '../../core/repo-list.js';
import { UsageError } from '../../errors.js';
import { parseDuration } from '../../settings/resolve.js';
import { promptRefused } from '../../ui/prompt.js';
import { INPUT_LIMITS, readInputFile, readStdin } from './input.js';
import { checkNotEmpty, parsePositiveInt, parseSeconds } from './options.js';

// Options and helpers that several commands share (start/export, status/download/export, list/repos).

export interface StartFlags {
  reposFile?: string;
  lock?: boolean;
  excludeMetadata?: boolean;
  excludeGitData?: boolean;
  excludeAttachments?: boolean;
  excludeReleases?: boolean;
  excludeOwnerProjects?: boolean;
  orgMetadataOnly?: boolean;
  exclude?: 'repositories';
}

export interface WaitFlags {
  interval?: number;
  timeout?: string;
}

/** The body flags of docs/service.md#start-migration, one to one. */
const BODY_FLAGS = [
  ['lock', 'lock_repositories', 'lock the repositories while migrating'],
  ['excludeMetadata', 'exclude_metadata', 'only git source, no metadata'],
  ['excludeGitData', 'exclude_git_data', 'no git data'],
  ['excludeAttachments', 'exclude_attachments', 'no attachments (smaller archive)'],
  ['excludeReleases', 'exclude_releases', 'no releases (smaller archive)'],
  ['excludeOwnerProjects', 'exclude_owner_projects', 'no projects owned by the organization or users'],
  ['orgMetadataOnly', 'org_metadata_only', 'only organization metadata (give no repositories)'],
] as const;

const flagName = (key: string) => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

export function addStartOptions(command: Command): Command {
  command.option('--repos-file <file>', 'repositories, one per line (# comments); - reads stdin');
  for (const [key, , description] of BODY_FLAGS) command.option(flagName(key), description);
  return command.addOption(new Option('--exclude <attr>', 'leave repositories out of the answer').choices(['repositories']));
}

/** The paging flags of a list endpoint (docs/service.md#limits); `what` names the items listed. */
export function addPagingOptions(command: Command, what: string): Command {
  return command
    .option('--per-page <n>', `${what} per page (1-100, default 30)`, parsePositiveInt)
    .option('--page <n>', 'page to show (default 1)', parsePositiveInt)
    .option('--all', 'follow Link: rel="next" and list every page');
}

/** gh's "Showing 30 of 31" (stderr, after a list): the page printed is not all there is. */
export function showing(count: number, total: number | undefined, what: string, page: number | undefined): string {
  const where = page !== undefined && page > 1 ? `, page ${page}` : '';
  const of = total === undefined ? ` ${what}; there are more` : ` of ${total} ${what}`;
  return `showing ${count}${of}${where} (use --all)`;
}

export function addWaitOptions(command: Command): Command {
  return command
    .option('--interval <seconds>', 'poll at this fixed pace (default: 5 s, then 30-60 s after a minute)', parseSeconds)
    .option('--timeout <duration>', 'give up waiting after e.g. 90m or 2h (exit 7)');
}

/** How a command waits for migrations, from its wait flags. */
export interface WaitSettings {
  intervalMs?: number;
  timeoutMs?: number;
}

/** The wait flags read, `--timeout` checked (a usage error for what is not a duration). */
export function waitSettings(flags: WaitFlags): WaitSettings {
  return {
    ...(flags.interval === undefined ? {} : { intervalMs: flags.interval * 1000 }),
    ...(flags.timeout === undefined ? {} : { timeoutMs: parseDuration(flags.timeout, '--timeout') }),
  };
}

/**
 * The checks of start's and export's repository flags that need nothing read: names that
 * --org-metadata-only refuses, and none given where none can be asked for (no terminal, no sandbox
 * to take a few from).
 */
export function checkRepositoryFlags(args: string[], flags: StartFlags, invocation: Invocation): void {
  checkNotEmpty(flags.reposFile, '--repos-file', 'name a file of repositories, or - for stdin');
  if (flags.orgMetadataOnly && args.length > 0) throw metadataOnlyNamed();
  const { interactive, sandbox } = invocation.settings;
  if (args.length === 0 && !flags.reposFile && !flags.orgMetadataOnly && !interactive && !sandbox) {
    throw promptRefused(REPOSITORIES_ASKED.what, REPOSITORIES_ASKED.flag);
  }
}

const metadataOnlyNamed = () =>
  new UsageError('--org-metadata-only exports no repositories; do not name any', { hint: 'drop the repository names, or drop --org-metadata-only' });

/** How the prompt for repositories names what it asks for, and the flags that give it instead. */
const REPOSITORIES_ASKED = { what: 'at least one repository', flag: 'repository names or --repos-file' };

/** Repositories from arguments and `--repos-file`, normalized and checked before any request. */
export async function collectRepositories(
  context: Context,
  args: string[],
  flags: StartFlags,
): Promise<{ repositories: string[]; asked: boolean }> {
  const entries: RepositoryEntry[] = args.map((name, index) => ({ name, source: `argument ${index + 1}` }));
  if (flags.reposFile) {
    const bytes =
      flags.reposFile === '-'
        ? await readStdin(context, INPUT_LIMITS.reposFile, 'a list of repositories')
        : await readInputFile(flags.reposFile, INPUT_LIMITS.reposFile, '--repos-file', context.signal);
    const fileName = flags.reposFile === '-' ? 'stdin' : flags.reposFile;
    entries.push(...parseReposFile(reposFileText(bytes, fileName), fileName));
  }
  const org = context.org();
  const repositories = normalizeRepositories(entries, org);
  if (flags.orgMetadataOnly) {
    // Named in the repos file (the arguments were checked with the flags).
    if (repositories.length > 0) throw metadataOnlyNamed();
    return { repositories: [], asked: false };
  }
  if (repositories.length > 0) return { repositories, asked: false };
  // `svc-migrate export --sandbox --yes` (the help's example) works without a terminal: a demo
  // exports a few of the sandbox's repositories.
  if (context.sandboxRepositories?.length && !context.settings.interactive) {
    const demo = normalizeRepositories(context.sandboxRepositories.map((name, index) => ({ name, source: `sandbox ${index + 1}` })), org);
    context.out.info(`no repositories given; exporting the sandbox's ${demo.join(', ')}`);
    return { repositories: demo, asked: false };
  }
  // None given: ask on a terminal (the prompter refuses with a usage error everywhere else).
  return { repositories: await askRepositories(context), asked: true };
}

/**
 * Repositories typed at the prompt, asked again while an answer names none or a name that cannot be
 * one; `typed` (full names) is on the line already, the organization's own by their name alone.
 */
export async function askRepositories(context: Context, typed: string[] = []): Promise<string[]> {
  const org = context.org();
  const chosen = (answer: string) => {
    const names = normalizeRepositories(
      answer
        .split(/[\s,]+/)
        .filter(Boolean)
        .map((name, index) => ({ name, source: `name ${index + 1}` })),
      org,
    );
    if (names.length === 0) throw new UsageError('no repositories given');
    return names;
  };
  const ours = `${org.toLowerCase()}/`;
  const line = typed.map((name) => (name.toLowerCase().startsWith(ours) ? name.slice(ours.length) : name)).join(' ');
  const answer = await context.prompt.input('Repositories to export (comma or space separated)', REPOSITORIES_ASKED.what, REPOSITORIES_ASKED.flag, chosen, line);
  return chosen(answer);
}

export function startBody(repositories: string[], flags: StartFlags): StartMigrationBody {
  const body: StartMigrationBody = { repositories };
  for (const [key, field] of BODY_FLAGS) if (flags[key]) body[field] = true;
  if (flags.exclude) body.exclude = [flags.exclude];
  return body;
}

/** The flags that give `body` (startBody's inverse): how to say the same start on a command line. */
export function startFlagsOf(body: Omit<StartMigrationBody, 'repositories'>): string[] {
  return [
    ...BODY_FLAGS.filter(([, field]) => body[field] === true).map(([key]) => flagName(key)),
    ...(body.exclude ?? []).flatMap((attribute) => ['--exclude', attribute]),
  ];
}

/**
 * On a TTY with nothing but repositories given: let the user tick options and confirm the request.
 * `followUp` asks what the command does after the export (given the options ticked) and says it
 * in words for the summary.
 */
export async function refineInteractively(
  context: Context,
  body: StartMigrationBody,
  asked: boolean,
  followUp?: (body: StartMigrationBody) => Promise<string[]>,
): Promise<StartMigrationBody> {
  if (!asked) return body;
  const chosen = await context.prompt.checkbox(
    'Options (space to tick, enter when done)',
    BODY_FLAGS.filter(([key]) => key !== 'orgMetadataOnly').map(([, field, description]) => ({
      value: field,
      name: sentence(description),
    })),
  );
  const refined: StartMigrationBody = { ...body };
  for (const field of chosen) refined[field] = true;
  const then = (await followUp?.(refined)) ?? [];
  context.out.info([exportSummary(refined), ...(then.length > 0 ? [`Then: ${then.join('; ')}`] : [])].join('\n'));
  // The user has just picked everything: Enter goes ahead.
  const ok = await context.prompt.confirm('Start this export?', 'a confirmation', 'the repositories as arguments', true);
  if (!ok) throw new UsageError('cancelled; nothing was started');
  return refined;
}

const sentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}`;

/** What is about to be asked of the service, in words. */
function exportSummary(body: StartMigrationBody): string {
  const options = BODY_FLAGS.filter(([, field]) => body[field]).map(([, , description]) => description);
  const count = body.repositories.length;
  return [
    `Export of ${count} ${count === 1 ? 'repository' : 'repositories'}: ${body.repositories.join(', ')}`,
    `Options: ${options.length > 0 ? options.join('; ') : 'none (everything is exported, nothing is locked)'}`,
  ].join('\n');
}
