import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { delimiter, join } from 'node:path';
import type { ArchiveProblem } from './problem.js';
import { InterruptedError } from '../../errors.js';
import { childEnvironment } from '../../settings/environment.js';
import { judgeConfig, parseConfigList } from './git-config.js';
import type { GitDataScan } from './scan.js';

// git runs on a repository the tool made, with nothing of the user's or the system's git setup and
// every setting that could run a command turned off (docs/reliability.md#the-archive-check).

/** Settings given on every git command line: no file monitor, no hooks, no transport. */
export const SAFE_SETTINGS = ['-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null', '-c', 'protocol.allow=never'];

/** A private home for git: an empty global config, and HOME and XDG_CONFIG_HOME pointing there. */
export interface GitHome {
  dir: string;
  env: NodeJS.ProcessEnv;
}

/** Makes the home inside `workDir` (a private temporary directory). */
export async function makeGitHome(workDir: string): Promise<GitHome> {
  const dir = join(workDir, 'home');
  await mkdir(dir, { mode: 0o700 });
  const globalConfig = join(dir, 'gitconfig');
  await writeFile(globalConfig, '', { mode: 0o600 });
  return { dir, env: gitEnvironment({ HOME: dir, XDG_CONFIG_HOME: dir, GIT_CONFIG_GLOBAL: globalConfig }) };
}

/** The environment without any inherited GIT_* variable (GIT_DIR, GIT_CONFIG_*, GIT_EXEC_PATH…). */
function gitEnvironment(home: Record<string, string>): NodeJS.ProcessEnv {
  const env = childEnvironment({});
  for (const key of Object.keys(env)) if (key.toUpperCase().startsWith('GIT_')) delete env[key];
  return {
    ...env,
    ...home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_OPTIONAL_LOCKS: '0',
    LC_ALL: 'C',
  };
}

/**
 * Whether a directory of PATH holds an executable of that name: where none does, no process is
 * started to find out. Windows, with its PATHEXT, and a PATH not set at all, which execvp searches
 * in a default list of its own (/bin:/usr/bin), are left to execFile.
 */
function isOnPath(command: string, path: string | undefined): boolean {
  if (process.platform === 'win32' || path === undefined) return true;
  return path.split(delimiter).some((directory) => {
    try {
      accessSync(join(directory || '.', command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** What `git --version` said, by PATH: an org export checks hundreds of archives with the same git. */
const gitVersions = new Map<string | undefined, Promise<string | undefined>>();

/** The git on PATH, or undefined: the deep check needs it, and says so when it is missing. */
export function gitVersion(): Promise<string | undefined> {
  const env = gitEnvironment({});
  let version = gitVersions.get(env.PATH);
  if (!version) {
    version = isOnPath('git', env.PATH)
      ? new Promise((resolve) => {
          execFile('git', ['--version'], { env }, (error, stdout) => resolve(error ? undefined : stdout.trim()));
        })
      : Promise.resolve(undefined);
    gitVersions.set(env.PATH, version);
  }
  return version;
}

interface GitRun {
  ok: boolean;
  lines: string[];
  stdout: string;
  /** The check's time ran out before git was done (or before it started). */
  outOfTime?: boolean;
}

/** The longest a Node timer waits (2^31 - 1 ms); a longer timeout would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The time git may take to check one archive, shared by all its repositories: what one repository
 * takes is not left for the others, so however many repositories an archive holds to keep git
 * busy, the check ends when this time does (docs/reliability.md#the-archive-check).
 */
export class GitTimeBudget {
  readonly ms: number;
  private readonly end: number;

  constructor(ms: number) {
    this.ms = ms;
    this.end = performance.now() + ms;
  }

  /** Milliseconds left, 0 once it has run out. */
  left(): number {
    return Math.max(0, Math.min(MAX_TIMER_MS, Math.floor(this.end - performance.now())));
  }
}

/**
 * How long git may take for an archive of `bytes` holding the git data of `repositories`: two
 * minutes, a second per MiB and a tenth of a second per repository. Honest data takes a fifth of
 * that or less (git.git's 473 MiB pack: 90 s; 300 repositories of one commit: 10 s, on a busy
 * machine of two cores); data built to keep git busy is stopped there, whatever its size inflates to.
 */
export function gitTimeBudgetMs(bytes: number, repositories: number): number {
  return 120_000 + Math.ceil(bytes / (1 << 20)) * 1_000 + repositories * 100;
}

function runGit(
  args: string[],
  home: GitHome,
  signal: AbortSignal | undefined,
  budget?: GitTimeBudget,
  maxBuffer = 1 << 20,
): Promise<GitRun> {
  const timeout = budget?.left();
  if (timeout === 0) return Promise.resolve({ ok: false, stdout: '', lines: [], outOfTime: true });
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...SAFE_SETTINGS, ...args],
      // What git says past 1 MiB is never shown (a problem shows five lines), and held whole it is
      // memory: 9,000 broken refs of 1 KiB made 10 MB of fsck errors, held twice over.
      { env: home.env, cwd: home.dir, maxBuffer, timeout: timeout ?? 0, killSignal: 'SIGKILL', ...(signal ? { signal } : {}) },
      (error, stdout, stderr) => {
        if (signal?.aborted) return reject(new InterruptedError('archive check interrupted'));
        // Killed for saying too much (that error has no `killed`), git has failed: only the timeout's kill is time.
        if (error?.killed && timeout !== undefined) return resolve({ ok: false, stdout: '', lines: [], outOfTime: true });
        const lines = `${stderr}\n${stdout}`
          .split('\n')
          .map((line) => line.trim())
          .filter((line) => line && !/^(notice|warning: .*unborn|Checking|dangling)/i.test(line));
        resolve({ ok: !error, lines, stdout });
      },
    );
  });
}

/** A copy of an archive's config, read by git's own parser as a plain file: no includes followed. */
function readConfigFile(file: string, home: GitHome, signal: AbortSignal | undefined, budget: GitTimeBudget): Promise<GitRun> {
  return runGit(['config', '--file', file, '--no-includes', '--list', '--null'], home, signal, budget);
}

/**
 * Makes `dir`, which holds only the copied refs, objects and packs, a bare repository with a config
 * of ours (what `git init --bare --template=` would write there, less a process per repository:
 * nothing of the archive's, no hooks), then checks every object's content against its name, loose
 * and packed (`git fsck --full`).
 */
async function checkRepository(
  repo: { dir: string; sha256Objects: boolean },
  home: GitHome,
  signal: AbortSignal | undefined,
  budget: GitTimeBudget,
): Promise<GitRun> {
  try {
    // git takes a directory for a repository when it holds HEAD (the caller saw it), objects/ and refs/.
    await mkdir(join(repo.dir, 'objects'), { recursive: true, mode: 0o700 });
    await mkdir(join(repo.dir, 'refs'), { recursive: true, mode: 0o700 });
    await writeFile(join(repo.dir, 'config'), repo.sha256Objects ? SHA256_CONFIG : CONFIG, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    return { ok: false, stdout: '', lines: [`the copy cannot be made a repository: ${(error as Error).message}`] };
  }
  // Blobs over 16 MiB are hashed as they are read, not held whole in git's memory.
  const fsck = ['-c', 'core.bigFileThreshold=16m', '--git-dir', repo.dir, 'fsck', '--full', '--no-dangling', '--no-progress'];
  return runGit(fsck, home, signal, budget);
}

const CONFIG = '[core]\n\trepositoryformatversion = 0\n\tbare = true\n';
const SHA256_CONFIG = '[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectformat = sha256\n';

/** What git found in one repository: its problems, and whether it reads any ref there. */
export interface GitVerdict {
  problems: ArchiveProblem[];
  /** git reads no ref (`refs/heads/x.lock` or `refs/heads/.x` is none to git), so the repository holds no history. */
  noRef?: true;
  /** A kept copy's refs as git reads them: name → object id. */
  refs?: Map<string, string>;
}

/** What git may list of one kept repository's refs: 100,000 refs of 600 characters. */
const MAX_REF_LISTING = 64 << 20;

function refMap(listing: string): Map<string, string> {
  const refs = new Map<string, string>();
  for (const line of listing.split('\n')) {
    const space = line.indexOf(' ');
    if (space > 0) refs.set(line.slice(space + 1), line.slice(0, space));
  }
  return refs;
}

/**
 * git's verdict on one repository's copies: its config (git-config.ts), then every object, then its
 * refs as git reads them. Returns 'out of time' when the budget ran out before git was done with it.
 */
async function checkCopiedRepository(
  repo: GitDataScan & { extractedTo: string },
  home: GitHome,
  signal: AbortSignal | undefined,
  budget: GitTimeBudget,
  keep: boolean,
  configs: Map<string, Promise<GitRun>>,
): Promise<GitVerdict | 'out of time'> {
  const problem = (file: string, message: string): ArchiveProblem => ({ repository: repo.repository, file, message });
  let sha256Objects = false;
  if (repo.configCopy) {
    // Read by git once per content: an archive's repositories mostly share one config, byte for byte.
    const key = createHash('sha256').update(await readFile(repo.configCopy)).digest('hex');
    let reading = configs.get(key);
    if (!reading) configs.set(key, (reading = readConfigFile(repo.configCopy, home, signal, budget)));
    const read = await reading;
    if (read.outOfTime) return 'out of time';
    if (!read.ok) return { problems: [problem(`${repo.path}/config`, 'is not a config git can read')] };
    const verdict = judgeConfig(parseConfigList(read.stdout));
    if (verdict.problems.length > 0) return { problems: verdict.problems.map((message) => problem(`${repo.path}/config`, message)) };
    sha256Objects = verdict.sha256Objects;
  }
  const result = await checkRepository({ dir: repo.extractedTo, sha256Objects }, home, signal, budget);
  if (result.outOfTime) return 'out of time';
  if (result.ok) {
    // Objects that no ref reaches are history nobody can get back: fsck does not mind them. Kept
    // copies are listed whole: what git reads there is what is pushed and proved (restore).
    const list = keep ? ['--format=%(objectname) %(refname)'] : ['--count=1', '--format=%(refname)'];
    const listed = await runGit(['--git-dir', repo.extractedTo, 'for-each-ref', ...list], home, signal, budget, keep ? MAX_REF_LISTING : undefined);
    if (listed.outOfTime) return 'out of time';
    const noRef = listed.ok && listed.stdout.trim() === '';
    const anyObjects = repo.looseObjects + repo.packs > 0;
    if (noRef && anyObjects) return { problems: [problem(repo.path, 'holds objects but no ref: no branch or tag reaches its history')] };
    if (keep && !listed.ok) return { problems: [problem(repo.path, `git cannot list its refs: ${listed.lines.slice(0, 2).join('; ')}`)] };
    return { problems: [], ...(noRef ? { noRef } : {}), ...(keep ? { refs: refMap(listed.stdout) } : {}) };
  }
  const shown = result.lines.slice(0, 5).map((line) => line.replaceAll(repo.extractedTo, repo.path));
  const more = result.lines.length > 5 ? ` (+${result.lines.length - 5} more)` : '';
  return { problems: [problem(repo.path, `git fsck found corrupt or missing objects: ${shown.join('; ') || 'no details'}${more}`)] };
}

/**
 * git's processes at once for one archive: as many as the cores, at most 4. Each repository is its
 * own `git fsck`, mostly one core each, and an archive of hundreds waits on them one by one
 * otherwise. At most 4, as git's own memory is not bounded by the check (a packed object is held
 * whole): four at once can take four times what one does.
 */
const GIT_PROCESSES = Math.max(1, Math.min(4, availableParallelism()));

/**
 * Every repository's verdict, in their order, checked GIT_PROCESSES at a time: 'not given to git'
 * for one with a refused, clashing or foreign member or without HEAD (a problem already names it,
 * git never runs on what could not be copied as it is), 'out of time' for one the budget left
 * unchecked. Once the time is out no git starts again; each copy is removed as soon as git is done
 * with it (unless kept); a failure (Ctrl-C) stops the others and is thrown once every git has ended, so nothing
 * runs on in the temporary directory its caller removes.
 */
export async function checkCopiedRepositories(
  repositories: GitDataScan[],
  home: GitHome | undefined,
  budget: GitTimeBudget,
  options: {
    signal?: AbortSignal | undefined;
    onGitProgress?: ((progress: { checked: number; total: number }) => void) | undefined;
    /** Leave each copy where it is, made a repository by git (an extraction keeps them); else each goes once git is done. */
    keepCopies?: boolean;
  },
): Promise<(GitVerdict | 'out of time' | 'not given to git')[]> {
  const verdicts: (GitVerdict | 'out of time' | 'not given to git')[] = [];
  const configs = new Map<string, Promise<GitRun>>();
  const total = repositories.length;
  let next = 0;
  let checked = 0;
  let outOfTime = false;
  let failed = false;
  options.onGitProgress?.({ checked: 0, total });
  const worker = async () => {
    while (next < total && !failed) {
      const i = next++;
      const repo = repositories[i] as GitDataScan;
      const { extractedTo } = repo;
      if (!extractedTo || !repo.hasHead || repo.damaged || !home || !existsSync(extractedTo)) {
        verdicts[i] = 'not given to git';
      } else {
        options.signal?.throwIfAborted();
        verdicts[i] = outOfTime ? 'out of time' : await checkCopiedRepository({ ...repo, extractedTo }, home, options.signal, budget, options.keepCopies === true, configs);
        if (verdicts[i] === 'out of time') outOfTime = true;
        if (!options.keepCopies) await rm(extractedTo, { recursive: true, force: true });
      }
      options.onGitProgress?.({ checked: ++checked, total });
    }
  };
  const ends = await Promise.allSettled(Array.from({ length: Math.min(GIT_PROCESSES, total) }, () => worker().catch((error: unknown) => {
    failed = true;
    throw error;
  })));
  const failure = ends.find((end) => end.status === 'rejected');
  if (failure) throw options.signal?.aborted ? new InterruptedError('archive check interrupted') : failure.reason;
  return verdicts;
}
