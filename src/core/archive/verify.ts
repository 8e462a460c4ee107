import { constants } from 'node:fs';
import { type FileHandle, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { UsageError, VerificationError } from '../../errors.js';
import { type ArchiveProblem, problemText } from './problem.js';
import { checkCopiedRepositories, type GitHome, GitTimeBudget, gitTimeBudgetMs, gitVersion, makeGitHome } from './git-check.js';
import { pushedTo, type RepositoryHistory } from './repository-history.js';
import { ExtractionBudget } from './scan-parts.js';
import { makeWorkDirectory } from './work-directory.js';

type GitCheck = 'passed' | 'failed' | 'skipped: git is not on PATH' | 'skipped: asked not to' | 'no git data';

interface RepositoryVerdict {
  name: string;
  /** The archive holds its git data. */
  git_data: boolean;
  /** How its objects are stored: loose files, packs, both, or none. */
  objects?: 'loose' | 'pack' | 'pack+loose' | 'none';
  /** Its git data names no ref (no branch, no tag): it holds no history. */
  empty?: true;
  git_check?: 'passed' | 'failed' | 'skipped';
}

export interface VerifyReport {
  path: string;
  ok: boolean;
  bytes: number;
  entries: number;
  metadata_files: number;
  repositories: RepositoryVerdict[];
  git_check: GitCheck;
  /** Present when `<archive>.sha256` lies beside the archive (or a digest was given). */
  sha256?: { expected: string; actual: string };
  /** With `--migration`: the migration the archive was compared with. */
  migration_id?: number;
  problems: ArchiveProblem[];
  /** Facts that are not problems (git data excluded, the deep check skipped). */
  notes: string[];
}

/** What the service says the archive must hold (`--migration`, or the export that made it). */
export interface ExpectedContent {
  migrationId: number;
  repositories: string[];
  /** What the service says of each one's history (size, pushed_at), by lower-case name. */
  histories?: Map<string, RepositoryHistory>;
  excludeGitData: boolean;
  excludeMetadata: boolean;
}

export interface VerifyOptions {
  /** Run `git fsck` on the git data when git is installed (default true). */
  gitCheck?: boolean;
  /** The time git may take for the whole archive (default: gitTimeBudgetMs of its size and repositories). */
  gitTimeMs?: number;
  expected?: ExpectedContent;
  /** Compare with this sha256 instead of `<archive>.sha256`. */
  sha256?: string;
  onProgress?: (read: number, total: number) => void;
  /** After the reading: repositories with git data whose check is over, of all of them (none when git does not run). */
  onGitProgress?: (progress: { checked: number; total: number }) => void;
  /** Ctrl-C: the check stops, its temporary files go, and it throws InterruptedError. */
  signal?: AbortSignal | undefined;
}

/** What a verified reading leaves in its directory (extract.ts): git's repositories of the copies, and the other members. */
export interface KeptReading {
  /** Each repository whose git data git checked and passed: a bare repository of git's making. */
  repositories: { name: string; gitDir: string; empty: boolean; refs: Map<string, string> }[];
  /** Every member outside `repositories/` that the service's archives hold there, at its path. */
  filesDir: string;
  /** The other files outside `repositories/`: not kept (the first few named). */
  leftOut: { count: number; first: string[] };
  /** The private home git ran with: what else runs on the copies runs as hardened. */
  home: GitHome;
}

/** Thrown when an archive failed verification; carries the report so it can be printed first. */
export class ArchiveVerificationError extends VerificationError {
  readonly report: VerifyReport;
  constructor(report: VerifyReport, details: { hint?: string } = {}) {
    const count = report.problems.length;
    const first = report.problems[0];
    super(
      `${report.path} failed verification: ${count} problem${count === 1 ? '' : 's'}${first ? ` (first: ${problemText(first)})` : ''}`,
      details,
    );
    this.report = report;
  }
}

/**
 * Checks a migration archive end to end (docs/service.md#archive): gzip and tar complete, every
 * member named in normal form, metadata JSON that parses, git data for every listed repository,
 * every git object intact (`git fsck` on a repository of git's own making that holds only copies of
 * the archive's refs, objects and packs, in a private temporary directory removed afterwards), and,
 * when the service was asked, every repository of the migration present.
 */
export async function verifyArchive(path: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  const git = options.gitCheck !== false ? await gitVersion() : undefined;
  // Named by pid: one a kill -9 left is removed by the next check (work-directory.ts).
  const workDir = git ? await makeWorkDirectory(tmpdir(), 'svc-migrate-verify-', 'the temporary directory (TMPDIR moves it)') : undefined;
  try {
    return (await readArchive(path, options, workDir, false)).report;
  } finally {
    if (workDir) await rm(workDir, { recursive: true, force: true });
  }
}

/**
 * The same check, whose copies are kept in `dir` (private, empty, the caller's to remove): every
 * repository git passed is left a bare repository of git's making, every other member at its path.
 * git must be on PATH: what is kept is only what git checked.
 */
export async function verifiedReading(
  path: string,
  dir: string,
  options: Omit<VerifyOptions, 'gitCheck'> & { roomHint?: string } = {},
): Promise<{ report: VerifyReport; kept: KeptReading }> {
  if (!(await gitVersion())) {
    throw new UsageError('git is not on PATH: an archive is extracted or restored only once git has checked every object', { hint: 'install git, then run this again' });
  }
  const { report, kept } = await readArchive(path, options, dir, true);
  return { report, kept: kept as KeptReading };
}

const KEPT_ROOM_HINT = 'set TMPDIR to a directory with more room';

/** The check, its copies in `workDir` (none without it, nor without git): kept there when `keep`. */
async function readArchive(
  path: string,
  options: VerifyOptions & { roomHint?: string },
  workDir: string | undefined,
  keep: boolean,
): Promise<{ report: VerifyReport; kept?: KeptReading }> {
  const wantGit = options.gitCheck !== false;
  const git = wantGit && workDir ? await gitVersion() : undefined;
  const home = workDir ? await makeGitHome(workDir) : undefined;
  const repositoriesDir = workDir ? join(workDir, 'repositories') : undefined;
  const filesDir = join(workDir ?? '', 'files');
  const expectedSha = options.sha256 ?? (await sidecarSha256(path));
  // Loaded here, not at start-up: the archive reader and the JSON tokenizer cost every command that never
  // reads an archive (test/e2e/cli.test.ts).
  const { scanArchive } = await import('./scan.js');
  const scan = await scanArchive(path, {
    ...(repositoriesDir ? { extractTo: repositoriesDir } : {}),
    // Kept copies are not the deep check's alone: --no-git-check is no way out of their room.
    ...(workDir ? { budget: ExtractionBudget.of(workDir, keep ? options.roomHint ?? KEPT_ROOM_HINT : undefined) } : {}),
    ...(keep ? { filesTo: filesDir } : {}),
    sha256: expectedSha !== undefined,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    signal: options.signal,
  });
  // The scan's list, added to: however many problems there are, 1,000 are listed, then a count.
  const problems = scan.problems;
  const notes: string[] = [];
  const expected = options.expected;

  if (expectedSha !== undefined && scan.sha256 !== undefined && expectedSha !== scan.sha256) {
    problems.add({ file: `${basename(path)}.sha256`, message: `sha256 is ${scan.sha256}, not ${expectedSha} as recorded` });
  }

  const withGit = [...scan.gitData.values()];
  // Names are matched without regard to case, as the service does, each in one look-up.
  const gitByName = new Map(withGit.map((repo) => [repo.repository.toLowerCase(), repo]));
  const gitOf = (name: string) => gitByName.get(name.toLowerCase());
  const listed = new Set(scan.repositories.map((name) => name.toLowerCase()));
  // Without the service's word, an archive with no git data at all is taken as exported without it.
  const gitExcluded = expected ? expected.excludeGitData : withGit.length === 0;
  if (scan.complete && gitExcluded && scan.repositories.length > 0) {
    notes.push('the archive holds no git data (the migration excluded it)');
  }
  if (scan.complete && !gitExcluded) {
    for (const name of scan.repositories) {
      if (!gitOf(name)) {
        problems.add({ repository: name, file: `repositories/${name}.git`, message: 'is listed in the metadata but its git data is missing' });
      }
    }
  }
  for (const repo of withGit) {
    if (!repo.hasHead) {
      problems.add({ repository: repo.repository, file: `${repo.path}/HEAD`, message: 'is missing: the git data is incomplete' });
    }
    // git reads a pack only through its index: one without the other holds nothing git sees.
    for (const file of repo.packFiles ?? []) {
      const other = file.endsWith('.pack') ? file.replace(/\.pack$/, '.idx') : file.replace(/\.idx$/, '.pack');
      if (repo.packFiles?.has(other)) continue;
      repo.damaged = true;
      problems.add({ repository: repo.repository, file: `${repo.path}/${file}`, message: `has no ${other.endsWith('.idx') ? 'index' : 'pack'} beside it: git cannot read its objects` });
    }
  }
  if (expected) {
    for (const name of expected.repositories) {
      const inMetadata = listed.has(name.toLowerCase());
      if (!expected.excludeMetadata && !inMetadata) {
        problems.add({ repository: name, message: `belongs to migration ${expected.migrationId} but is not in the archive's metadata` });
      }
      if (!expected.excludeGitData && scan.complete && !gitOf(name) && !inMetadata) {
        problems.add({ repository: name, file: `repositories/${name}.git`, message: `belongs to migration ${expected.migrationId} but its git data is missing` });
      }
    }
  }

  let gitCheck: GitCheck;
  const verdicts = new Map<string, RepositoryVerdict['git_check']>();
  /** Each kept repository's refs, as git listed them once it passed. */
  const refsOf = new Map<string, Map<string, string>>();
  /** Repositories whose refs, as the reading saw them, are none to git (a `.lock` file, a name starting with "."). */
  const noRefToGit = new Set<string>();
  if (withGit.length === 0) gitCheck = 'no git data';
  else if (!wantGit) gitCheck = 'skipped: asked not to';
  else if (!git || !workDir) {
    gitCheck = 'skipped: git is not on PATH';
    notes.push('git is not on PATH: git objects were NOT checked against their names (install git for the deep check)');
  } else if (!scan.complete) {
    // A truncated archive leaves partial git data behind; its fsck errors would only repeat that.
    gitCheck = 'failed';
  } else {
    gitCheck = 'passed';
    const budget = new GitTimeBudget(options.gitTimeMs ?? gitTimeBudgetMs(scan.bytes, withGit.length));
    const found = await checkCopiedRepositories(withGit, home, budget, { ...options, keepCopies: keep });
    let unchecked = 0;
    for (const [i, repo] of withGit.entries()) {
      const verdict = found[i];
      if (verdict === 'not given to git') {
        verdicts.set(repo.repository, 'failed');
        gitCheck = 'failed';
        continue;
      }
      if (verdict === 'out of time' || verdict === undefined) {
        unchecked++;
        continue;
      }
      verdicts.set(repo.repository, verdict.problems.length === 0 ? 'passed' : 'failed');
      if (verdict.refs) refsOf.set(repo.repository, verdict.refs);
      if (verdict.noRef) noRefToGit.add(repo.repository);
      if (verdict.problems.length > 0) {
        gitCheck = 'failed';
        for (const one of verdict.problems) problems.add(one);
      }
    }
    if (unchecked > 0) {
      gitCheck = 'failed';
      problems.add({
        message: `git ran out of the time it may take for the whole archive (${Math.round(budget.ms / 1000)} s): ${unchecked} of ${withGit.length} repositories with git data were not checked; \`svc-migrate archive verify --git-check-time <duration>\` gives it longer`,
      });
    }
  }

  // No ref, no history: right for a repository nothing was ever pushed to, and only for one.
  const noRef = withGit.filter((repo) => !repo.hasRefs || noRefToGit.has(repo.repository));
  const empty = new Set(scan.complete ? noRef.map((repo) => repo.repository) : []);
  for (const name of empty) {
    const serviceSays = pushedTo(expected?.histories?.get(name.toLowerCase()));
    const metadataSays = pushedTo(scan.histories.get(name.toLowerCase()));
    const says = serviceSays ? `the service lists it with ${serviceSays}` : metadataSays ? `the archive's metadata gives it ${metadataSays}` : undefined;
    if (says) problems.add({ repository: name, file: `repositories/${name}.git`, message: `names no branch or tag, yet ${says}: its history is missing` });
  }

  const names = [...new Set([...scan.repositories, ...withGit.map((repo) => repo.repository)])];
  const repositories: RepositoryVerdict[] = names.map((name) => {
    const data = gitOf(name);
    const verdict: RepositoryVerdict = { name, git_data: Boolean(data) };
    if (data) {
      verdict.objects = data.packs > 0 ? (data.looseObjects > 0 ? 'pack+loose' : 'pack') : data.looseObjects > 0 ? 'loose' : 'none';
      if (empty.has(data.repository)) verdict.empty = true;
      verdict.git_check = verdicts.get(data.repository) ?? 'skipped';
    }
    return verdict;
  });

  const report: VerifyReport = {
    path,
    ok: problems.size === 0,
    bytes: scan.bytes,
    entries: scan.entries,
    metadata_files: scan.metadataFiles.length,
    repositories,
    git_check: gitCheck,
    ...(expectedSha !== undefined && scan.sha256 !== undefined ? { sha256: { expected: expectedSha, actual: scan.sha256 } } : {}),
    ...(expected ? { migration_id: expected.migrationId } : {}),
    problems: problems.toList(),
    notes,
  };
  if (!keep || !home || !workDir) return { report };
  const passed = withGit.filter((repo) => verdicts.get(repo.repository) === 'passed' && repo.extractedTo);
  return {
    report,
    kept: {
      repositories: passed.map((repo) => ({
        name: repo.repository,
        gitDir: repo.extractedTo as string,
        empty: empty.has(repo.repository),
        refs: refsOf.get(repo.repository) ?? new Map<string, string>(),
      })),
      filesDir,
      leftOut: scan.leftOut ?? { count: 0, first: [] },
      home,
    },
  };
}

/**
 * The digest in `<archive>.sha256` (sha256sum format), if that is a small regular file: opened
 * without waiting (a FIFO there would hold the check forever) and never through a link.
 */
async function sidecarSha256(path: string): Promise<string | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(`${path}.sha256`, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile() || info.size > SIDECAR_BYTES) return undefined;
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(SIDECAR_BYTES), 0, SIDECAR_BYTES, 0);
    const match = /^([0-9a-f]{64})\b/i.exec(buffer.toString('utf8', 0, bytesRead).trim());
    return match?.[1]?.toLowerCase();
  } finally {
    await handle.close();
  }
}

/** `<digest>  <name>\n`: a name far longer than any archive's is not a sidecar. */
const SIDECAR_BYTES = 4096;
