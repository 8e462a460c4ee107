import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InterruptedError } from '../../errors.js';
import { childEnvironment } from '../../settings/environment.js';

// git pushing to and reading the user's remotes: the user's own git setup (credential helpers, ssh
// agent, url.insteadOf, redirects), as the issue asks that we handle no credential, but no hook of
// theirs runs on our repository, `ext::` never runs, and nothing prompts: each git runs in a session
// of its own, without a terminal (docs/reliability.md#extract-and-restore).

/** What git may print before it is stopped: far past the refs of a real repository. */
const MAX_OUTPUT = 64 << 20;
/** The remote's own lines kept for one repository (a hook's message), and their length. */
const MAX_REMOTE_LINES = 40;
const MAX_LINE = 500;
/**
 * How long a git may go without a word before it is stopped: a remote that accepts the connection
 * and then says nothing would hold the restore for ever. A push reports its progress (--progress),
 * so only a remote that stopped answering is silent this long.
 */
const SILENCE_MS = 5 * 60_000;
/** Refspecs on one command line, and their bytes: a repository of 100,000 tags is pushed in pieces. */
const REFSPECS_PER_PUSH = 1000;
const REFSPEC_BYTES_PER_PUSH = 64 << 10;
/** What is kept of a git's stderr: its start (a hook's words come first) and its end (git's verdict). */
const STDERR_KEPT = 256 << 10;

/** git's progress lines, its own and the remote's: they say nothing a report needs. */
const PROGRESS = /^(remote: )?(Counting|Compressing|Writing|Enumerating|Total|Delta|Resolving|Unpacking)/;

/** Variables that would point git at another repository than the one we name. */
const LOCATING = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_COMMON_DIR', 'GIT_NAMESPACE', 'GIT_CEILING_DIRECTORIES', 'GIT_REPLACE_REF_BASE', 'GIT_CONFIG_PARAMETERS', 'GIT_CONFIG_COUNT'];

function userEnvironment(): NodeJS.ProcessEnv {
  const env = childEnvironment({ GIT_TERMINAL_PROMPT: '0', GIT_NO_REPLACE_OBJECTS: '1', LC_ALL: 'C' });
  for (const key of Object.keys(env)) if (LOCATING.includes(key.toUpperCase()) || /^GIT_CONFIG_(KEY|VALUE)_/i.test(key)) delete env[key];
  // The user's list of transports wins over any setting: `ext` is taken out of it, whatever it says.
  if (env.GIT_ALLOW_PROTOCOL !== undefined) env.GIT_ALLOW_PROTOCOL = env.GIT_ALLOW_PROTOCOL.split(':').filter((name) => name !== 'ext').join(':');
  return env;
}

interface GitEnd {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the user's git with `args`, in a session of its own; Ctrl-C ends it and whatever it started. */
function userGit(args: string[], signal: AbortSignal | undefined): Promise<GitEnd> {
  // git's own policy for the transports of the URL the user wrote (and their insteadOf), but never a
  // command as a transport, whatever their configuration says.
  const settings = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'protocol.ext.allow=never'];
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
    let silent = false;
    let silence: NodeJS.Timeout | undefined;
    const heard = () => {
      clearTimeout(silence);
      silence = setTimeout(() => {
        silent = true;
        stop();
      }, SILENCE_MS);
    };
    heard();
    let stdout = '';
    let stderr = '';
    let stderrEnd = '';
    child.stdout.on('data', (chunk: Buffer) => {
      heard();
      if (stdout.length < MAX_OUTPUT) stdout += chunk.toString('utf8');
      else stop();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      heard();
      const text = chunk.toString('utf8');
      if (stderr.length < STDERR_KEPT) stderr += text;
      else stderrEnd = (stderrEnd + text).slice(-STDERR_KEPT);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(silence);
      signal?.removeEventListener('abort', stop);
      if (signal?.aborted) return reject(new InterruptedError('restore interrupted'));
      stderr += stderrEnd;
      if (silent) stderr += `fatal: the remote said nothing for ${SILENCE_MS / 60_000} minutes; stopped\n`;
      resolve({ code: silent ? null : code, stdout, stderr });
    });
  });
}

/** What git adds to every failure over ssh or git://, whatever went wrong: the reason is the line before. */
const BOILERPLATE = /^(fatal: Could not read from remote repository\.|Please make sure you have the correct access rights|and the repository exists\.)/;

/** git's own word on a failure: its last `fatal:` or `error:` line (and the one before it over ssh). */
function gitProblem(stderr: string): string {
  const lines = stderr.split(/[\r\n]/).map((line) => line.trim()).filter((line) => line && !PROGRESS.test(line));
  const said = lines.filter((line) => !BOILERPLATE.test(line));
  const last = [...said].reverse().find((line) => /^(fatal|error):/.test(line)) ?? said.at(-1) ?? lines.at(-1) ?? 'git failed without a word';
  return last.slice(0, MAX_LINE);
}

/** What ls-remote says of a remote: its refs under refs/ (peeled `^{}` lines left out), its symbolic refs, its HEAD. */
export interface RemoteRefs {
  refs: Map<string, string>;
  /** Refs that name another (`refs/heads/alias` → `refs/heads/main`): deleting one deletes what it names. */
  symbolic: Map<string, string>;
  /** The branch the remote's HEAD names, when it says. */
  head?: string;
}

export async function lsRemote(url: string, signal?: AbortSignal): Promise<RemoteRefs | { problem: string }> {
  const end = await userGit(['ls-remote', '--symref', '--', url], signal);
  if (end.code !== 0) return { problem: gitProblem(end.stderr) };
  const remote: RemoteRefs = { refs: new Map(), symbolic: new Map() };
  for (const line of end.stdout.split('\n')) {
    const [id, ref] = line.split('\t');
    if (!id || !ref) continue;
    if (id.startsWith('ref: ')) {
      if (ref === 'HEAD') remote.head = id.slice(5);
      else remote.symbolic.set(ref, id.slice(5));
    } else if (ref.startsWith('refs/') && !ref.endsWith('^{}')) remote.refs.set(ref, id);
  }
  return remote;
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

/**
 * Pushes `refspecs` from `gitDir` to `url`, in pieces, and gathers what git and the remote said.
 * Deletions (`:ref`) go first, alone: deleting a symbolic ref the remote did not say was one (over
 * protocol v0) deletes the ref it names, which the pushes after them then put back.
 */
export async function push(gitDir: string, url: string, refspecs: string[], signal?: AbortSignal): Promise<PushOutcome> {
  const outcome: PushOutcome = { pushed: 0, refused: [], messages: [] };
  const deletions = refspecs.filter((refspec) => refspec.startsWith(':'));
  const updates = refspecs.filter((refspec) => !refspec.startsWith(':'));
  for (const piece of [...pieces(deletions), ...pieces(updates)]) {
    const end = await userGit(['--git-dir', gitDir, 'push', '--porcelain', '--progress', '--', url, ...piece], signal);
    for (const line of end.stderr.split(/[\r\n]/)) {
      if (PROGRESS.test(line)) continue;
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

/** Refspecs in pieces that fit a command line: at most REFSPECS_PER_PUSH of them, REFSPEC_BYTES_PER_PUSH bytes. */
function pieces(refspecs: string[]): string[][] {
  const all: string[][] = [];
  let piece: string[] = [];
  let bytes = 0;
  for (const refspec of refspecs) {
    const size = Buffer.byteLength(refspec) + 1;
    if (piece.length > 0 && (piece.length >= REFSPECS_PER_PUSH || bytes + size > REFSPEC_BYTES_PER_PUSH)) {
      all.push(piece);
      piece = [];
      bytes = 0;
    }
    piece.push(refspec);
    bytes += size;
  }
  if (piece.length > 0) all.push(piece);
  return all;
}

/** Where a `file://` target is made, inside its own directory, before its files are moved up. */
const BUILDING = '.svc-migrate-init-';
/** What `git init --bare --template=` makes, but HEAD: without HEAD, git sees no repository there. */
const SKELETON = new Set(['config', 'objects', 'refs']);

/**
 * A `file://` target that is not there, is an empty directory, or holds only what an interrupted
 * making of ours left (no HEAD yet): one restore makes.
 */
export async function fileTargetMissing(url: string): Promise<boolean> {
  const path = fileURLToPath(url);
  const entries = await readdir(path).catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? [] : undefined));
  if (entries === undefined) return false;
  if (!entries.every((name) => name.startsWith(BUILDING) || SKELETON.has(name))) return false;
  return !(await holdsFiles(join(path, 'objects'))) && !(await holdsFiles(join(path, 'refs')));
}

/** Whether a directory holds a file anywhere below it (an object, a ref: then it is no skeleton). */
async function holdsFiles(dir: string): Promise<boolean> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.some((entry) => !entry.isDirectory());
}

/**
 * Makes a `file://` target that is missing (fileTargetMissing) an empty bare repository of git's
 * making: no hooks, the archive's object format, HEAD at its default branch. It is made in a
 * directory inside its place (so on its file system, whatever is mounted there), then its files
 * are moved up, HEAD last: an interruption leaves what the next run makes again. The directory
 * itself, when it was there, keeps its owner, mode and group; one made has the umask's.
 */
export async function makeFileTarget(
  url: string,
  made: { headBranch: string | undefined; sha256: boolean },
  signal?: AbortSignal,
): Promise<boolean> {
  if (!(await fileTargetMissing(url))) return false;
  const path = fileURLToPath(url);
  await mkdir(path, { recursive: true });
  for (const name of await readdir(path)) await rm(join(path, name), { recursive: true, force: true });
  const building = join(path, `${BUILDING}${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    const branch = made.headBranch && /^[A-Za-z0-9._/-]+$/.test(made.headBranch) ? [`--initial-branch=${made.headBranch}`] : [];
    const format = made.sha256 ? ['--object-format=sha256'] : [];
    const end = await userGit(['init', '--bare', '--quiet', '--template=', ...branch, ...format, '--', building], signal);
    if (end.code !== 0) throw new Error(gitProblem(end.stderr));
    const entries = (await readdir(building)).sort((a, b) => Number(a === 'HEAD') - Number(b === 'HEAD'));
    for (const name of entries) await rename(join(building, name), join(path, name));
    return true;
  } finally {
    await rm(building, { recursive: true, force: true });
  }
}
