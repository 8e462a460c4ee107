import { spawn } from 'node:child_process';
import { InterruptedError } from '../../errors.js';
import { type GitHome, SAFE_SETTINGS } from './git-check.js';

// git on the repositories a verified reading kept (verify.ts's verifiedReading), as hardened as the
// check's: the private home, no hook, no transport. What it reads is what the check passed: its
// Git LFS pointers, which the archive holds none of the content of.

/** What git may print for a listing before it is stopped: far past a real repository's refs. */
const MAX_OUTPUT = 64 << 20;

/** A run of git that failed: its own words, for the caller to say which repository. */
class KeptGitError extends Error {}

/**
 * Runs git, hands each piece of its stdout to `onData` (or keeps it, to `maxBytes`), gives it
 * `input` on stdin, and resolves with what it kept once git ends well.
 */
function run(
  args: string[],
  home: GitHome,
  options: { signal?: AbortSignal | undefined; input?: string; onData?: (chunk: Buffer) => void },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', [...SAFE_SETTINGS, ...args], {
      env: home.env,
      cwd: home.dir,
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let stderr = '';
    let failure: Error | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      if (options.onData) return options.onData(chunk);
      keptBytes += chunk.length;
      if (keptBytes > MAX_OUTPUT) {
        failure ??= new KeptGitError(`git ${args.find((arg) => !arg.startsWith('-'))} said more than ${MAX_OUTPUT} bytes`);
        child.kill('SIGKILL');
        return;
      }
      kept.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString('utf8');
    });
    child.stdin.on('error', () => {});
    child.stdin.end(options.input ?? '');
    child.on('error', (error) => {
      failure ??= options.signal?.aborted ? new InterruptedError('interrupted') : error;
    });
    child.on('close', (code) => {
      if (options.signal?.aborted) return reject(new InterruptedError('interrupted'));
      if (failure) return reject(failure);
      if (code !== 0) return reject(new KeptGitError(stderr.trim().split('\n').slice(0, 3).join('; ') || `git exited with ${code}`));
      resolve(Buffer.concat(kept).toString('utf8'));
    });
  });
}

/** The first line of every Git LFS pointer file (github.com/git-lfs/git-lfs/blob/main/docs/spec.md). */
const LFS_POINTER = Buffer.from('version https://git-lfs.github.com/spec/v1\n');
/**
 * A pointer is its version line, `oid sha256:` and 64 hex digits, and `size` with at least one
 * digit, each line ended: 126 bytes at least; the spec bounds it at 1024.
 */
const LFS_POINTER_SIZES = { min: LFS_POINTER.length + 'oid sha256:\n'.length + 64 + 'size 0\n'.length, max: 1024 };

/**
 * Blobs of a kept repository that are Git LFS pointers: their content lives on an LFS server, which
 * the archive does not hold. Only blobs of a pointer's size are read, through one `cat-file --batch`.
 */
export async function lfsPointers(gitDir: string, home: GitHome, signal?: AbortSignal): Promise<number> {
  const candidates: string[] = [];
  await run(['--git-dir', gitDir, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname) %(objecttype) %(objectsize)'], home, {
    signal,
    onData: lines(([id, type, size]) => {
      const bytes = Number(size);
      if (id && type === 'blob' && bytes >= LFS_POINTER_SIZES.min && bytes <= LFS_POINTER_SIZES.max) candidates.push(id);
    }),
  });
  if (candidates.length === 0) return 0;
  let pointers = 0;
  // `<id> blob <size>\n<content>\n` for each: the content's start is all that is looked at.
  let pending = Buffer.alloc(0);
  await run(['--git-dir', gitDir, 'cat-file', '--batch'], home, {
    signal,
    input: `${candidates.join('\n')}\n`,
    onData: (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const newline = pending.indexOf(10);
        if (newline < 0) return;
        const size = Number(pending.toString('latin1', 0, newline).split(' ')[2]);
        if (!Number.isSafeInteger(size)) {
          // `<id> missing`: no content follows.
          pending = pending.subarray(newline + 1);
          continue;
        }
        if (pending.length < newline + 1 + size + 1) return;
        if (pending.subarray(newline + 1, newline + 1 + LFS_POINTER.length).equals(LFS_POINTER)) pointers++;
        pending = pending.subarray(newline + 1 + size + 1);
      }
    },
  });
  return pointers;
}

/** Hands each whole line of a stream, cut at spaces, to `onLine`. */
function lines(onLine: (fields: string[]) => void): (chunk: Buffer) => void {
  let rest = '';
  return (chunk) => {
    const text = rest + chunk.toString('latin1');
    const parts = text.split('\n');
    rest = parts.pop() ?? '';
    for (const line of parts) onLine(line.split(' '));
  };
}
