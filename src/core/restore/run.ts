import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InterruptedError, UsageError } from '../../errors.js';
import type { Clock } from '../../support/clock.js';
import { lfsPointers } from '../archive/kept-git.js';
import { makeWorkDirectory } from '../archive/work-directory.js';
import { ArchiveVerificationError, type KeptReading, verifiedReading, type VerifyOptions, type VerifyReport } from '../archive/verify.js';
import { fileTargetMissing, lsRemote, makeFileTarget, push, type RemoteRefs } from './git-remote.js';
import { RestoreJournalFile } from './journal.js';
import { differencesOf, type ExpectedRefs, expectedRefs, type RefDifference, refspecsOf } from './refs.js';
import { parseTarget, type Target, urlOf } from './target.js';

// `archive restore`: every repository of a verified archive pushed to the user's git host, and
// each push proved by reading the remote's refs back (docs/reliability.md#extract-and-restore).

export interface RestoreOptions extends Pick<VerifyOptions, 'gitTimeMs' | 'onProgress' | 'onGitProgress' | 'signal'> {
  template: string;
  journalPath: string;
  only?: string[];
  parallel: number;
  dryRun: boolean;
  force: boolean;
  includePullRefs: boolean;
  clock: Clock;
  /** The archive verified: pushes start. */
  onVerified?: (report: VerifyReport, repositories: number) => void | Promise<void>;
  onRepositoryStart?: (name: string) => void;
  onRepository?: (result: RepositoryRestore) => void;
}

export interface RepositoryRestore {
  name: string;
  url: string;
  state: 'proved' | 'already proved' | 'failed' | 'planned';
  /** Refs the remote must have. */
  refs: number;
  /** Refs the remote took in this run. */
  pushed?: number;
  /** The file:// repository was made by this run. */
  created?: true;
  /** The first MAX_DIFFERENCES refs that differ, and how many do. */
  differences?: RefDifference[];
  differences_total?: number;
  refused?: { ref: string; reason: string }[];
  messages?: string[];
  error?: string;
  /** Git LFS pointer files in the history, whose content the archive does not hold. */
  lfs_pointers?: number;
  /** The service's pull-request refs not pushed (without --include-pull-refs). */
  pull_refs_left_out?: number;
  /** The remote's HEAD names another branch than the archive's: its default branch is to be set on the host. */
  head?: { archive: string; remote: string };
  /** --dry-run --force: the remote's refs a push would delete. */
  to_delete?: string[];
  /** --dry-run: the refs a push would send, and whether the target is there yet. */
  to_push?: string[];
  target?: 'missing' | 'empty' | 'equal' | 'differs' | 'unreachable';
}

export interface RestoreReport {
  archive: string;
  target: string;
  dry_run: boolean;
  proved: number;
  failed: number;
  repositories: RepositoryRestore[];
  verify: VerifyReport;
}

/** What `head.remote` says when the remote's HEAD names a branch it does not have. */
const UNBORN_HEAD = '(a branch it does not have)';

/** Differences listed for one repository; past it, a count. */
const MAX_DIFFERENCES = 200;

/**
 * Verifies the archive into a private temporary directory, then pushes every repository (or the
 * `only` ones) `parallel` at a time and proves each with ls-remote; nothing is pushed unless all of
 * the archive verified. Throws ArchiveVerificationError (exit 9) for an archive that fails.
 */
export async function restoreArchive(archive: string, options: RestoreOptions): Promise<RestoreReport> {
  const target = parseTarget(options.template);
  const journal = options.dryRun ? undefined : await RestoreJournalFile.open(options.journalPath);
  const work = await makeWorkDirectory(tmpdir(), 'svc-migrate-restore-', 'the temporary directory (TMPDIR moves it)');
  try {
    const { report, kept } = await verifiedReading(archive, work, options);
    if (!report.ok) throw new ArchiveVerificationError(report, { hint: 'nothing was pushed; keep the service\'s copy of the archive, and download it again or report the problems above' });
    const chosen = choose(kept.repositories, options.only);
    const urls = urlsOf(chosen, target);
    await journal?.write();
    await options.onVerified?.(report, chosen.length);
    const results: RepositoryRestore[] = [];
    let next = 0;
    const worker = async () => {
      while (next < chosen.length) {
        const repo = chosen[next++] as KeptReading['repositories'][number];
        options.onRepositoryStart?.(repo.name);
        const address = urls.get(repo.name) as ReturnType<typeof urlOf>;
        const result = hideSecrets(
          'problem' in address
            ? { name: repo.name, url: '', state: 'failed' as const, refs: 0, error: address.problem }
            : await restoreOne(repo, address.url, kept.home, target, journal, options),
          target.shown,
        );
        results.push(result);
        options.onRepository?.(result);
      }
    };
    const ends = await Promise.allSettled(Array.from({ length: Math.min(options.parallel, chosen.length) }, worker));
    const failure = ends.find((end) => end.status === 'rejected');
    if (failure) throw options.signal?.aborted ? new InterruptedError('restore interrupted') : failure.reason;
    results.sort((a, b) => a.name.localeCompare(b.name));
    return {
      archive,
      target: target.shown(target.template),
      dry_run: options.dryRun,
      proved: results.filter((result) => result.state === 'proved' || result.state === 'already proved').length,
      failed: results.filter((result) => result.state === 'failed').length,
      repositories: results,
      verify: report,
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** A result as it is shown: what git said may quote the URL with its token (`could not read Password for 'https://TOKEN@…'`). */
function hideSecrets(result: RepositoryRestore, shown: (text: string) => string): RepositoryRestore {
  return {
    ...result,
    url: shown(result.url),
    ...(result.error ? { error: shown(result.error) } : {}),
    ...(result.messages ? { messages: result.messages.map(shown) } : {}),
    ...(result.refused ? { refused: result.refused.map(({ ref, reason }) => ({ ref, reason: shown(reason) })) } : {}),
  };
}

/**
 * Each repository's URL, or why its name is not put in one. Two repositories the template sends to
 * one URL (`{repo}` alone, and two owners with a repository of one name) are refused before any push:
 * the second would be proved over the first.
 */
function urlsOf(repositories: KeptReading['repositories'], target: Target): Map<string, ReturnType<typeof urlOf>> {
  const urls = new Map(repositories.map((repo) => [repo.name, urlOf(target, repo.name)]));
  const byUrl = new Map<string, string>();
  for (const [name, address] of urls) {
    if ('problem' in address) continue;
    // Hosts take `r` and `r.git`, and names in any case, for one repository.
    const key = address.url.toLowerCase().replace(/\.git$/, '');
    const other = byUrl.get(key);
    if (other) {
      throw new UsageError(`--to sends ${other} and ${name} to the same place, ${target.shown(address.url)}; nothing was pushed`, {
        hint: 'put {owner} in the template, or restore each owner with --only and its own --to',
      });
    }
    byUrl.set(key, name);
  }
  return urls;
}

/** The repositories named by `only` (owner/repo, or repo of any owner); an unknown name is a usage error. */
function choose(repositories: KeptReading['repositories'], only: string[] | undefined): KeptReading['repositories'] {
  if (!only || only.length === 0) return repositories;
  // A repository's wiki goes with it: `--only widgets` restores widgets.wiki too.
  const matches = (name: string, repo: string) => {
    const wanted = name.toLowerCase();
    const [exact, base] = [repo.toLowerCase(), repo.toLowerCase().replace(/\.wiki$/, '')];
    return [exact, base].some((full) => full === wanted || full.split('/')[1] === wanted);
  };
  const unknown = only.filter((name) => !repositories.some((repo) => matches(name, repo.name)));
  if (unknown.length > 0) {
    throw new UsageError(`--only names ${unknown.map((name) => JSON.stringify(name)).join(', ')}, not in the archive; nothing was pushed`, {
      hint: '`svc-migrate archive inspect ARCHIVE` lists its repositories',
    });
  }
  return repositories.filter((repo) => only.some((name) => matches(name, repo.name)));
}

async function restoreOne(
  repo: KeptReading['repositories'][number],
  url: string,
  home: KeptReading['home'],
  target: Target,
  journal: RestoreJournalFile | undefined,
  options: RestoreOptions,
): Promise<RepositoryRestore> {
  const { signal } = options;
  const { expected, pullRefsLeftOut, clash } = expectedRefs(repo.refs, options.includePullRefs);
  const result: RepositoryRestore = { name: repo.name, url, state: 'failed', refs: expected.size };
  if (pullRefsLeftOut > 0) result.pull_refs_left_out = pullRefsLeftOut;
  const failed = (error: string) => ({ ...result, state: 'failed' as const, error });
  // An empty remote equals an empty list: a repository with history must have refs to prove.
  if (repo.refs.size === 0 && !repo.empty) return failed('git listed no ref of its verified copy');
  if (clash) return failed(`it already has ${clash}, where --include-pull-refs puts its pull-request refs: one would hide the other (restore it without --include-pull-refs)`);
  if (expected.size === 0 && pullRefsLeftOut > 0) return failed(`its only refs are ${pullRefsLeftOut} pull-request refs, left out: --include-pull-refs pushes them`);
  // Node hands git its arguments as UTF-8: a ref name of other bytes cannot be named in a refspec.
  if ([...repo.refs.keys()].some((ref) => ref.includes('\uFFFD'))) {
    return failed('it has ref names that are not UTF-8, which this command cannot name to git: `archive extract`, then `git push --mirror` from the repository extracted');
  }
  const lfs = await lfsPointers(repo.gitDir, home, signal);
  if (lfs > 0) result.lfs_pointers = lfs;
  const archiveHead = await headRef(repo.gitDir);

  if (options.dryRun) return plan(result, expected, target, url, options.force, signal);
  if (journal?.state(target.shown(target.template), repo.name) === 'proved') {
    const remote = await lsRemote(url, signal);
    if (!('problem' in remote) && differencesOf(expected, remote).length === 0) return { ...result, state: 'already proved' };
  }
  try {
    // The config is ours (git-check.ts): it names SHA-256 when the archive's objects are.
    const sha256 = /objectformat = sha256/.test(await readFile(join(repo.gitDir, 'config'), 'utf8').catch(() => ''));
    const made = { headBranch: archiveHead && expected.has(archiveHead) ? archiveHead.slice('refs/heads/'.length) : undefined, sha256 };
    if (target.scheme === 'file' && (await makeFileTarget(url, made, signal))) result.created = true;
  } catch (error) {
    if (error instanceof InterruptedError) throw error;
    return failed(`the repository could not be made there: ${(error as Error).message}`);
  }
  let before: RemoteRefs | undefined;
  if (options.force) {
    const read = await lsRemote(url, signal);
    if ('problem' in read) return failed(read.problem);
    before = read;
  }
  const pushed = await push(repo.gitDir, url, refspecsOf(expected, options.force, before), signal);
  result.pushed = pushed.pushed;
  if (pushed.refused.length > 0) result.refused = pushed.refused;
  if (pushed.messages.length > 0) result.messages = pushed.messages;
  if (pushed.problem) return failed(pushed.problem);

  const remote = await lsRemote(url, signal);
  if ('problem' in remote) return failed(`pushed, but its refs could not be read back: ${remote.problem}`);
  // A host sets its default branch itself (its settings, not a push): said, not a failure. A HEAD
  // naming a branch the remote does not have is not listed at all (an empty repository made on `master`).
  if (archiveHead && expected.has(archiveHead) && remote.head !== archiveHead) {
    result.head = { archive: archiveHead, remote: remote.head ?? UNBORN_HEAD };
  }
  const differences = differencesOf(expected, remote);
  // A refusal fails the repository even where ls-remote then reads the archive's refs: with a
  // pushInsteadOf, the push went elsewhere than the refs read back.
  if (differences.length > 0 || pushed.refused.length > 0) {
    const [first, ...others] = pushed.refused;
    const places = `${differences.length} place${differences.length === 1 ? '' : 's'}`;
    return {
      ...failed(first ? `the remote refused ${first.ref}${others.length ? ` and ${others.length} more` : ''} ${first.reason}` : `the remote's refs differ from the archive's in ${places}`),
      differences: differences.slice(0, MAX_DIFFERENCES),
      differences_total: differences.length,
    };
  }
  await journal?.record(target.shown(target.template), repo.name, 'proved', options.clock.now());
  return { ...result, state: 'proved' };
}

/** --dry-run: what a push would send (and with --force delete), and what the target holds now. */
async function plan(
  result: RepositoryRestore,
  expected: ExpectedRefs,
  target: Target,
  url: string,
  force: boolean,
  signal: AbortSignal | undefined,
): Promise<RepositoryRestore> {
  const planned: RepositoryRestore = { ...result, state: 'planned', to_push: [...expected.keys()] };
  if (target.scheme === 'file' && (await fileTargetMissing(url))) return { ...planned, target: 'missing' };
  const remote = await lsRemote(url, signal);
  if ('problem' in remote) return { ...planned, target: 'unreachable', error: remote.problem };
  const differences = differencesOf(expected, remote);
  const deletions = force ? refspecsOf(expected, true, remote).filter((refspec) => refspec.startsWith(':')) : [];
  const toDelete = deletions.map((refspec) => refspec.slice(1));
  return {
    ...planned,
    to_push: [...expected].filter(([ref, { id }]) => remote.refs.get(ref) !== id).map(([ref]) => ref),
    ...(toDelete.length > 0 ? { to_delete: toDelete } : {}),
    target: remote.refs.size === 0 ? 'empty' : differences.length === 0 ? 'equal' : 'differs',
    ...(remote.refs.size > 0 && differences.length > 0
      ? { differences: differences.slice(0, MAX_DIFFERENCES), differences_total: differences.length }
      : {}),
  };
}

/** The ref the archive's HEAD names (`ref: refs/heads/main`), read from the verified copy. */
async function headRef(gitDir: string): Promise<string | undefined> {
  return /^ref: (refs\/heads\/\S+)\s*$/.exec(await readFile(join(gitDir, 'HEAD'), 'utf8').catch(() => ''))?.[1];
}
