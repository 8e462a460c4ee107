import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InterruptedError, UsageError } from '../../errors.js';
import type { Clock } from '../../support/clock.js';
import { lfsPointers } from '../archive/kept-git.js';
import { makeWorkDirectory } from '../archive/work-directory.js';
import { ArchiveVerificationError, type KeptReading, verifiedReading, type VerifyOptions, type VerifyReport } from '../archive/verify.js';
import { lsRemote, makeFileTarget, push } from './git-remote.js';
import { RestoreJournalFile } from './journal.js';
import { parseTarget, type Target, urlOf } from './target.js';

// `archive restore`: every repository of a verified archive pushed to the user's git host, and
// each push proved by reading the remote's refs back (docs/reliability.md#extract-and-restore).

/** The service's pull-request refs, which hosts commonly refuse or keep for their own. */
const PULL_REFS = 'refs/pull/';
/** Where `--include-pull-refs` puts them on the remote. */
const PULL_NAMESPACE = 'refs/svc-migrate/pull/';

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

interface RefDifference {
  ref: string;
  /** What the archive has there (absent: the remote has a ref the archive does not). */
  archive?: string;
  /** What the remote has there (absent: the remote lacks it). */
  remote?: string;
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
  differences?: RefDifference[];
  refused?: { ref: string; reason: string }[];
  messages?: string[];
  error?: string;
  /** Git LFS pointer files in the history, whose content the archive does not hold. */
  lfs_pointers?: number;
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
    await journal?.write();
    await options.onVerified?.(report, chosen.length);
    const results: RepositoryRestore[] = [];
    let next = 0;
    const worker = async () => {
      while (next < chosen.length) {
        const repo = chosen[next++] as KeptReading['repositories'][number];
        options.onRepositoryStart?.(repo.name);
        const result = await restoreOne(repo, kept, target, journal, options);
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
      target: target.template,
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

/** The repositories named by `only` (owner/repo, or repo of any owner); an unknown name is a usage error. */
function choose(repositories: KeptReading['repositories'], only: string[] | undefined): KeptReading['repositories'] {
  if (!only || only.length === 0) return repositories;
  // A repository's wiki goes with it: `--only widgets` restores widgets.wiki too.
  const matches = (name: string, repo: string) => {
    const wanted = name.toLowerCase();
    const full = repo.toLowerCase().replace(/\.wiki$/, '');
    return full === wanted || full.split('/')[1] === wanted;
  };
  const unknown = only.filter((name) => !repositories.some((repo) => matches(name, repo.name)));
  if (unknown.length > 0) {
    throw new UsageError(`--only names ${unknown.map((name) => JSON.stringify(name)).join(', ')}, not in the archive; nothing was pushed`, {
      hint: '`svc-migrate archive inspect ARCHIVE` lists its repositories',
    });
  }
  return repositories.filter((repo) => only.some((name) => matches(name, repo.name)));
}

/** The archive's refs as the remote must have them: pull refs left out, or moved under PULL_NAMESPACE. */
function expectedRefs(refs: Map<string, string>, includePullRefs: boolean): Map<string, { source: string; id: string }> {
  const expected = new Map<string, { source: string; id: string }>();
  for (const [ref, id] of refs) {
    if (ref.startsWith(PULL_REFS)) {
      if (includePullRefs) expected.set(PULL_NAMESPACE + ref.slice(PULL_REFS.length), { source: ref, id });
    } else expected.set(ref, { source: ref, id });
  }
  return expected;
}

function differencesOf(expected: Map<string, { id: string }>, remote: Map<string, string>): RefDifference[] {
  const differences: RefDifference[] = [];
  for (const [ref, { id }] of expected) {
    const there = remote.get(ref);
    if (there !== id) differences.push({ ref, archive: id, ...(there ? { remote: there } : {}) });
  }
  for (const [ref, id] of remote) if (!expected.has(ref)) differences.push({ ref, remote: id });
  return differences.sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
}

async function restoreOne(
  repo: KeptReading['repositories'][number],
  kept: KeptReading,
  target: Target,
  journal: RestoreJournalFile | undefined,
  options: RestoreOptions,
): Promise<RepositoryRestore> {
  const { signal } = options;
  const address = urlOf(target, repo.name);
  if ('problem' in address) return { name: repo.name, url: '', state: 'failed', refs: 0, error: address.problem };
  const { url } = address;
  const expected = expectedRefs(repo.refs, options.includePullRefs);
  const result: RepositoryRestore = { name: repo.name, url, state: 'failed', refs: expected.size };
  const failed = (error: string) => ({ ...result, state: 'failed' as const, error });
  // An empty remote equals an empty list: a repository with history must have refs to prove.
  if (repo.refs.size === 0 && !repo.empty) return failed('git listed no ref of its verified copy');
  const lfs = await lfsPointers(repo.gitDir, kept.home, signal);
  if (lfs > 0) result.lfs_pointers = lfs;

  if (options.dryRun) return plan(result, expected, target, url, signal);
  if (journal?.state(target.template, repo.name) === 'proved') {
    const remote = await lsRemote(url, target.scheme, signal);
    if (!('problem' in remote) && differencesOf(expected, remote).length === 0) return { ...result, state: 'already proved' };
  }
  try {
    if (target.scheme === 'file' && (await makeFileTarget(url, await headBranch(repo.gitDir, expected), signal))) result.created = true;
  } catch (error) {
    if (error instanceof InterruptedError) throw error;
    return failed(`the repository could not be made there: ${(error as Error).message}`);
  }
  const refspecs = [...expected].map(([ref, { source }]) => `${options.force ? '+' : ''}${source}:${ref}`);
  if (options.force) {
    const before = await lsRemote(url, target.scheme, signal);
    if ('problem' in before) return failed(before.problem);
    for (const ref of before.keys()) if (!expected.has(ref)) refspecs.push(`:${ref}`);
  }
  const pushed = await push(repo.gitDir, url, refspecs, target.scheme, signal);
  result.pushed = pushed.pushed;
  if (pushed.refused.length > 0) result.refused = pushed.refused;
  if (pushed.messages.length > 0) result.messages = pushed.messages;
  if (pushed.problem) return failed(pushed.problem);

  const remote = await lsRemote(url, target.scheme, signal);
  if ('problem' in remote) return failed(`pushed, but its refs could not be read back: ${remote.problem}`);
  const differences = differencesOf(expected, remote);
  if (differences.length > 0) {
    const [first, ...others] = pushed.refused;
    const places = `${differences.length} place${differences.length === 1 ? '' : 's'}`;
    return {
      ...failed(first ? `the remote refused ${first.ref}${others.length ? ` and ${others.length} more` : ''} ${first.reason}` : `the remote's refs differ from the archive's in ${places}`),
      differences: differences.slice(0, MAX_DIFFERENCES),
    };
  }
  await journal?.record(target.template, repo.name, 'proved', options.clock.now());
  return { ...result, state: 'proved' };
}

/** --dry-run: what a push would send, and what the target holds now. */
async function plan(
  result: RepositoryRestore,
  expected: Map<string, { source: string; id: string }>,
  target: Target,
  url: string,
  signal: AbortSignal | undefined,
): Promise<RepositoryRestore> {
  const planned: RepositoryRestore = { ...result, state: 'planned', to_push: [...expected.keys()] };
  if (target.scheme === 'file' && !(await fileTargetExists(url))) return { ...planned, target: 'missing' };
  const remote = await lsRemote(url, target.scheme, signal);
  if ('problem' in remote) return { ...planned, target: 'unreachable', error: remote.problem };
  const differences = differencesOf(expected, remote);
  const toPush = [...expected].filter(([ref, { id }]) => remote.get(ref) !== id).map(([ref]) => ref);
  return {
    ...planned,
    to_push: toPush,
    target: remote.size === 0 ? 'empty' : differences.length === 0 ? 'equal' : 'differs',
    ...(remote.size > 0 && differences.length > 0 ? { differences: differences.slice(0, MAX_DIFFERENCES) } : {}),
  };
}

async function fileTargetExists(url: string): Promise<boolean> {
  const { existsSync } = await import('node:fs');
  const { fileURLToPath } = await import('node:url');
  return existsSync(fileURLToPath(url));
}

/** The branch the archive's HEAD names, when it is one of the refs pushed: a made target's default. */
async function headBranch(gitDir: string, expected: Map<string, unknown>): Promise<string | undefined> {
  const { readFile } = await import('node:fs/promises');
  const head = /^ref: (refs\/heads\/\S+)\s*$/.exec(await readFile(join(gitDir, 'HEAD'), 'utf8').catch(() => ''))?.[1];
  return head && expected.has(head) ? head.slice('refs/heads/'.length) : undefined;
}
