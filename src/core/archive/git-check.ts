import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InterruptedError } from '../../errors.js';
import { childEnvironment } from '../../settings/environment.js';

// git runs on a repository the tool made, with nothing of the user's or the system's git setup and
// every setting that could run a command turned off (docs/reliability.md#the-archive-check).

/** Settings given on every git command line: no file monitor, no hooks, no transport. */
const SAFE_SETTINGS = ['-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null', '-c', 'protocol.allow=never'];

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

/** What `git --version` said, by PATH: an org export checks hundreds of archives with the same git. */
const gitVersions = new Map<string | undefined, Promise<string | undefined>>();

/** The git on PATH, or undefined: the deep check needs it, and says so when it is missing. */
export function gitVersion(): Promise<string | undefined> {
  const env = gitEnvironment({});
  let version = gitVersions.get(env.PATH);
  if (!version) {
    version = new Promise((resolve) => {
      execFile('git', ['--version'], { env }, (error, stdout) => resolve(error ? undefined : stdout.trim()));
    });
    gitVersions.set(env.PATH, version);
  }
  return version;
}

interface GitRun {
  ok: boolean;
  lines: string[];
}

function runGit(args: string[], home: GitHome, signal: AbortSignal | undefined): Promise<GitRun> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...SAFE_SETTINGS, ...args],
      { env: home.env, cwd: home.dir, maxBuffer: 16 << 20, ...(signal ? { signal } : {}) },
      (error, stdout, stderr) => {
        if (signal?.aborted) return reject(new InterruptedError('archive check interrupted'));
        const lines = `${stderr}\n${stdout}`
          .split('\n')
          .map((line) => line.trim())
          .filter((line) => line && !/^(notice|warning: .*unborn|Checking|dangling)/i.test(line));
        resolve({ ok: !error, lines });
      },
    );
  });
}

/**
 * Makes `dir`, which holds only the copied refs, objects and packs, a bare repository of git's own
 * making (its config, no templates), then checks every object's content against its name, loose
 * and packed (`git fsck --full`).
 */
export async function checkRepository(
  dir: string,
  sha256Objects: boolean,
  home: GitHome,
  signal: AbortSignal | undefined,
): Promise<GitRun> {
  const init = await runGit(
    ['init', '--bare', '--quiet', '--template=', ...(sha256Objects ? ['--object-format=sha256'] : []), dir],
    home,
    signal,
  );
  if (!init.ok) return init;
  return runGit(['--git-dir', dir, 'fsck', '--full', '--no-dangling', '--no-progress'], home, signal);
}
