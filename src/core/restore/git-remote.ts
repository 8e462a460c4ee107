import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { InterruptedError } from '../../errors.js';
import { childEnvironment } from '../../settings/environment.js';
import { makeDirectory } from '../../support/make-directory.js';
import type { Scheme } from './target.js';

// git pushing to and reading the user's remotes: the user's own git setup (credential helpers, ssh
// agent, url.insteadOf), as the issue asks that we handle no credential, but no hook of theirs
// runs on our repository, no transport but the template's is allowed, and nothing prompts: each
// git runs in a session of its own, without a terminal (docs/reliability.md#extract-and-restore).

/** What git may print before it is stopped: far past the refs of a real repository. */
const MAX_OUTPUT = 64 << 20;
/** The remote's own lines kept for one repository (a hook's message), and their length. */
const MAX_REMOTE_LINES = 40;
const MAX_LINE = 500;
/** Refspecs on one command line: a repository of 100,000 tags is pushed in pieces. */
const REFSPECS_PER_PUSH = 1000;

/** Variables that would point git at another repository than the one we name. */
const LOCATING = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_COMMON_DIR', 'GIT_NAMESPACE', 'GIT_CEILING_DIRECTORIES', 'GIT_REPLACE_REF_BASE', 'GIT_CONFIG_PARAMETERS', 'GIT_CONFIG_COUNT'];

function userEnvironment(): NodeJS.ProcessEnv {
  const env = childEnvironment({ GIT_TERMINAL_PROMPT: '0', GIT_NO_REPLACE_OBJECTS: '1', LC_ALL: 'C' });
  for (const key of Object.keys(env)) if (LOCATING.includes(key.toUpperCase()) || /^GIT_CONFIG_(KEY|VALUE)_/i.test(key)) delete env[key];
  return env;
}

interface GitEnd {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the user's git with `args`, in a session of its own; Ctrl-C ends it and whatever it started. */
function userGit(args: string[], scheme: Scheme, signal: AbortSignal | undefined): Promise<GitEnd> {
  const settings = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'protocol.allow=never', '-c', `protocol.${scheme}.allow=always`];
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    // detached: its own process group and session, so ssh finds no terminal to ask on, and a kill reaches its transports too.
    const child = spawn('git', [...settings, ...args], { env: userEnvironment(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const stop = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGTERM');
      } catch {
        // Already gone.
      }
    };
    signal?.addEventListener('abort', stop, { once: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdout.length < MAX_OUTPUT) stdout += chunk.toString('utf8');
      else stop();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 1 << 20) stderr += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => {
      signal?.removeEventListener('abort', stop);
      if (signal?.aborted) return reject(new InterruptedError('restore interrupted'));
      resolve({ code, stdout, stderr });
    });
  });
}

/** git's own word on a failure: its last `fatal:` or `error:` line, else its last line. */
function gitProblem(stderr: string): string {
  const lines = stderr.split('\n').map((line) => line.trim()).filter(Boolean);
  const said = [...lines].reverse().find((line) => /^(fatal|error):/.test(line)) ?? lines.at(-1) ?? 'git failed without a word';
  return said.slice(0, MAX_LINE);
}

/** The remote's refs under refs/ (HEAD and peeled `^{}` lines left out), or git's word on why not. */
export async function lsRemote(url: string, scheme: Scheme, signal?: AbortSignal): Promise<Map<string, string> | { problem: string }> {
  const end = await userGit(['ls-remote', '--', url], scheme, signal);
  if (end.code !== 0) return { problem: gitProblem(end.stderr) };
  const refs = new Map<string, string>();
  for (const line of end.stdout.split('\n')) {
    const [id, ref] = line.split('\t');
    if (id && ref?.startsWith('refs/') && !ref.endsWith('^{}')) refs.set(ref, id);
  }
  return refs;
}

export interface PushOutcome {
  /** Refs the remote took (new, updated, deleted) rather than had already. */
  pushed: number;
  /** Refs the remote or git refused, with the reason git gives. */
  refused: { ref: string; reason: string }[];
  /** The remote's own lines (`remote: …`): a hook's message. */
  messages: string[];
  /** git's word when the push failed as a whole (no such repository, no access). */
  problem?: string;
}

/** Pushes `refspecs` from `gitDir` to `url`, in pieces, and gathers what git and the remote said. */
export async function push(gitDir: string, url: string, refspecs: string[], scheme: Scheme, signal?: AbortSignal): Promise<PushOutcome> {
  const outcome: PushOutcome = { pushed: 0, refused: [], messages: [] };
  for (let at = 0; at < refspecs.length; at += REFSPECS_PER_PUSH) {
    const end = await userGit(['--git-dir', gitDir, 'push', '--porcelain', '--', url, ...refspecs.slice(at, at + REFSPECS_PER_PUSH)], scheme, signal);
    for (const line of end.stderr.split('\n')) {
      if (line.startsWith('remote: ') && outcome.messages.length < MAX_REMOTE_LINES) outcome.messages.push(line.slice(8).trimEnd().slice(0, MAX_LINE));
    }
    let reported = false;
    for (const line of end.stdout.split('\n')) {
      const status = /^([ +\-*!=])\t([^\t]*):([^\t]*)\t(.*)$/.exec(line);
      if (!status) continue;
      reported = true;
      const [, flag, , to = '', summary = ''] = status;
      if (flag === '!') outcome.refused.push({ ref: to, reason: summary.slice(0, MAX_LINE) });
      else if (flag !== '=') outcome.pushed++;
    }
    if (end.code !== 0 && !reported) return { ...outcome, problem: gitProblem(end.stderr) };
  }
  return outcome;
}

/**
 * A `file://` target that is not there is made: an empty bare repository of git's making, no hooks,
 * its HEAD at the archive's default branch. Any other transport needs the host to have it.
 */
export async function makeFileTarget(url: string, headBranch: string | undefined, signal?: AbortSignal): Promise<boolean> {
  const path = fileURLToPath(url);
  if (existsSync(path)) return false;
  makeDirectory(path);
  const branch = headBranch && /^[A-Za-z0-9._/-]+$/.test(headBranch) ? [`--initial-branch=${headBranch}`] : [];
  const end = await userGit(['init', '--bare', '--quiet', '--template=', ...branch, '--', path], 'file', signal);
  if (end.code !== 0) throw new Error(gitProblem(end.stderr));
  return true;
}
