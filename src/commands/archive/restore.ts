import type { Command } from 'commander';
import type { Context, Runner } from '../../context.js';
import { ArchiveVerificationError } from '../../core/archive/verify.js';
import type { RestoreReport } from '../../core/restore/run.js';
import { isLoopbackUrl, parseTarget } from '../../core/restore/target.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { inertText } from '../../support/outside-text.js';
import { verifyMessage } from '../../ui/archive.js';
import { restoreLines, restoreMessage } from '../../ui/restore.js';
import { archiveReading } from '../common/archive-reading.js';
import { examples, GIT_CHECK_TIME, gitCheckTime, parsePositiveInt } from '../common/options.js';

interface RestoreFlags {
  to?: string;
  only?: string[];
  parallel?: number;
  dryRun?: boolean;
  force?: boolean;
  includePullRefs?: boolean;
  journal?: string;
  gitCheckTime?: string;
}

interface RestoreOptions {
  file: string;
  template: string;
  only?: string[];
  parallel: number;
  dryRun: boolean;
  force: boolean;
  includePullRefs: boolean;
  journalPath: string;
  gitTimeMs?: number;
}

/** Pushes at once: each is mostly waiting on the network or on git's processes. */
const DEFAULT_PARALLEL = 4;
const MAX_PARALLEL = 32;

function parseRestoreOptions(file: string, flags: RestoreFlags): RestoreOptions {
  if (flags.to === undefined) throw new UsageError('archive restore needs --to TEMPLATE: where each repository goes', { hint: 'for example --to \'ssh://git@git.example.com/{owner}/{repo}.git\'' });
  parseTarget(flags.to);
  if (flags.journal === '') throw new UsageError('--journal takes a file path', { hint: `leave it out to keep the journal in ${file}.restore.json` });
  const parallel = flags.parallel ?? DEFAULT_PARALLEL;
  if (parallel > MAX_PARALLEL) throw new UsageError(`--parallel is at most ${MAX_PARALLEL}`, { hint: 'hosts limit how many pushes they take at once' });
  const gitTimeMs = gitCheckTime(flags.gitCheckTime);
  return {
    file,
    template: flags.to,
    ...(flags.only ? { only: flags.only } : {}),
    parallel,
    dryRun: flags.dryRun === true,
    force: flags.force === true,
    includePullRefs: flags.includePullRefs === true,
    journalPath: flags.journal ?? `${file}.restore.json`,
    ...(gitTimeMs === undefined ? {} : { gitTimeMs }),
  };
}

async function restore(context: Context, options: RestoreOptions): Promise<RestoreReport> {
  const { out } = context;
  if (/^http:\/\//i.test(options.template) && !isLoopbackUrl(options.template.replaceAll(/\{(owner|repo)\}/g, 'x'))) {
    out.warn('--to is plain http: the host\'s credentials and your history cross the network unencrypted (use https://)');
  }
  const reading = archiveReading(out);
  let spinner: Awaited<ReturnType<typeof out.spinner>> | undefined;
  let total = 0;
  let ended = 0;
  const running = new Set<string>();
  const tell = () => spinner?.text(`restoring: ${ended}/${total} done${running.size ? `, pushing ${[...running].slice(0, 3).map(inertText).join(', ')}${running.size > 3 ? ` and ${running.size - 3} more` : ''}` : ''}`);
  let report: RestoreReport;
  try {
    // Loaded here, not at start-up: every other command would carry it (test/e2e/cli.test.ts).
    const { restoreArchive } = await import('../../core/restore/run.js');
    report = await restoreArchive(options.file, {
      ...options,
      clock: context.clock,
      signal: context.signal,
      onProgress: reading.onProgress,
      onGitProgress: reading.onGitProgress,
      onVerified: async (verified, count) => {
        await reading.done();
        out.info(verifyMessage(verified, out.theme).split('\n')[0] ?? '');
        total = count;
        // The progress bar had the line while the archive was read; the spinner has it while pushes run.
        spinner = await out.spinner('restoring');
        tell();
      },
      onRepositoryStart: (name) => {
        running.add(name);
        tell();
      },
      onRepository: (result) => {
        running.delete(result.name);
        ended++;
        // On a terminal the spinner counts and the table ends the run: a line there is for a failure or a warning.
        if (!out.decorated || result.state === 'failed' || result.head || result.lfs_pointers) out.info(restoreLines(result, out.theme));
        tell();
      },
    });
    spinner?.stop();
  } catch (error) {
    await reading.done();
    spinner?.stop();
    if (error instanceof ArchiveVerificationError) out.result(error.report, (data) => verifyMessage(data, out.theme));
    throw error;
  }
  out.result(report, (data) => restoreMessage(data, out.theme, out.layout));
  if (report.failed > 0) {
    throw new CliError(`${report.failed} of ${report.repositories.length} repositories were not proved equal on the remote`, ExitCode.Partial, {
      hint: 'fix what is said above for each, then run the same command again: repositories proved are checked, not pushed again',
    });
  }
  return report;
}

export function register(archive: Command, run: Runner): void {
  archive
    .command('restore')
    .description('push every repository of a verified archive to a git host, each proved with git ls-remote (exit 10 if some are not, 9 if the archive fails)')
    .argument('<file>', 'the .tar.gz archive')
    .option('--to <template>', 'where each repository goes: a git URL with {repo} and {owner}, e.g. ssh://git@git.example.com/{owner}/{repo}.git')
    .option('--only <names...>', 'restore only these repositories (owner/repo, or repo)')
    .option('--parallel <n>', `pushes at once (default ${DEFAULT_PARALLEL})`, parsePositiveInt)
    .option('--dry-run', 'verify, read each target, and print what would be pushed; push nothing')
    .option('--force', 'make each remote equal to the archive: force-update refs that differ and delete refs the archive does not have')
    .option('--include-pull-refs', 'also push the service\'s pull-request refs (refs/pull/*), as refs/svc-migrate/pull/*')
    .option('--journal <file>', 'where the restore records its progress (default: ARCHIVE.restore.json)')
    .option('--git-check-time <duration>', GIT_CHECK_TIME)
    .addHelpText(
      'after',
      examples([
        'svc-migrate archive restore acme.tar.gz --to \'ssh://git@git.example.com/{owner}/{repo}.git\'',
        'svc-migrate archive restore acme.tar.gz --to \'file:///srv/git/{repo}.git\' --dry-run',
        'svc-migrate archive restore acme.tar.gz --to \'https://git.example.com/{owner}/{repo}.git\' --only widgets --json',
      ]),
    )
    .action((file: string, flags: RestoreFlags, cmd: Command) =>
      run(
        cmd,
        () => parseRestoreOptions(file, flags),
        async (context, options) => {
          await restore(context, options);
        },
      ),
    );
}
