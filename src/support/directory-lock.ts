import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { link, lstat, open, readFile, rename, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { type CliError, UsageError } from '../errors.js';
import { fileError, isSystemError } from './system-errors.js';
import { isRunning } from './process-alive.js';

// A lock file in a directory: one run at a time per directory (an export's output directory,
// `webhook replay --failed`'s save directory). Created exclusively, never through a link, holding
// enough to tell whether its run still goes; one whose process is gone from this host is taken over.

/** What the lock file holds: enough to tell whether its run is still going, and to name it. */
export interface LockHolder {
  pid: number;
  host: string;
  startedAt: string;
  /**
   * When the holder's process started, in clock ticks since boot (Linux), so that its pid taken
   * later by another process is not mistaken for it. Absent where /proc is not there.
   */
  processStart?: number;
}

export interface DirectoryLock {
  readonly path: string;
  /** Removes the lock if it is still ours; safe to call more than once. */
  release(): Promise<void>;
}

/** Locks taken by this process, so a lock with our own pid that we do not hold is known to be stale. */
const heldHere = new Set<string>();

/** Attempts at taking a lock that keeps changing under us before giving up. */
const MAX_ATTEMPTS = 3;

export interface LockOptions {
  /** The lock's name inside the directory. */
  file: string;
  now: number;
  onNotice?: ((message: string) => void) | undefined;
  /** The error for a lock that may be live (its holder, when it could be read). */
  held(holder: LockHolder | undefined, path: string): CliError;
  /** What a failure to create, read or write the lock names the directory as (`--output-dir`, say). */
  role: string;
}

/**
 * Takes `<dir>/<file>`, created with O_EXCL. A lock whose process is gone from this host is taken
 * over, with `onNotice` told; a live one, or one from another host (whose process cannot be
 * checked from here), is the `held` error.
 */
export async function lockDirectory(dir: string, options: LockOptions): Promise<DirectoryLock> {
  const path = join(dir, options.file);
  const processStart = await processStartOf(process.pid);
  const holder: LockHolder = {
    pid: process.pid,
    host: hostname(),
    startedAt: new Date(options.now).toISOString(),
    ...(processStart === undefined ? {} : { processStart }),
  };
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const ours = await tryCreate(path, holder, options.role);
    if (ours) return ours;
    const found = await readLock(path, options.role);
    if (!found) continue; // Released between our create and our read: try again.
    const stale = await staleReason(found.holder, path);
    if (!stale) throw options.held(found.holder, path);
    if (await moveAsideIfSame(path, found.ino, options.role)) options.onNotice?.(`taking over ${path}: ${stale}`);
  }
  throw new UsageError(`cannot take the lock ${path}: it keeps changing`, {
    hint: 'another run is starting in the same directory; run again in a moment to be told which',
  });
}

async function tryCreate(path: string, holder: LockHolder, role: string): Promise<DirectoryLock | undefined> {
  let handle;
  try {
    handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw lockError('create', path, error, role);
  }
  let ino: number;
  try {
    await handle.writeFile(`${JSON.stringify(holder)}\n`);
    ino = (await handle.stat()).ino;
  } catch (error) {
    // A lock we could not write whole (a full disk) would read as someone else's: it goes.
    await handle.close().catch(() => {});
    await rm(path, { force: true });
    throw lockError('write', path, error, role);
  }
  await handle.close();
  heldHere.add(path);
  let released = false;
  return {
    path,
    async release() {
      if (released) return;
      released = true;
      heldHere.delete(path);
      try {
        // Only our own file: a lock someone took over after removing ours stays theirs.
        if ((await lstat(path)).ino === ino) await rm(path, { force: true });
      } catch {
        // Already gone.
      }
    },
  };
}

/** The lock as found, or undefined when it is gone. */
async function readLock(path: string, role: string): Promise<{ holder: LockHolder | undefined; ino: number } | undefined> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') {
      throw new UsageError(`${path} is a symbolic link, not a lock this program made`, {
        hint: `remove it (rm ${path}) and run the command again`,
      });
    }
    throw lockError('read', path, error, role);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile() || stats.size > 4096) return { holder: undefined, ino: stats.ino };
    return { holder: parseHolder(await handle.readFile('utf8')), ino: stats.ino };
  } finally {
    await handle.close();
  }
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    const start = value.processStart;
    if (
      Number.isSafeInteger(value.pid) && (value.pid as number) > 0 && typeof value.host === 'string' && typeof value.startedAt === 'string' &&
      (start === undefined || (Number.isSafeInteger(start) && start >= 0))
    ) {
      return value as LockHolder;
    }
  } catch {
    // Not ours, or still being written.
  }
  return undefined;
}

/** Why the lock is known to be left over from a run that ended, or undefined while it may be live. */
async function staleReason(holder: LockHolder | undefined, path: string): Promise<string | undefined> {
  if (!holder || holder.host !== hostname()) return undefined;
  const since = `since ${holder.startedAt}`;
  if (holder.pid === process.pid) {
    // Our pid, not taken by us: an earlier process had it (a container's pids start over).
    return heldHere.has(path) ? undefined : `it names this process's pid ${holder.pid} (${since}), left by an earlier run`;
  }
  const gone = `pid ${holder.pid} on ${holder.host}, which took it ${since}, is no longer running`;
  if (!isRunning(holder.pid)) return gone;
  // A process has the pid: the holder, or one that took the pid after it ended.
  const start = holder.processStart === undefined ? undefined : await processStartOf(holder.pid);
  if (start !== undefined && start !== holder.processStart) return `${gone}: pid ${holder.pid} now belongs to a process started at another time`;
  return undefined;
}

/**
 * When process `pid` started, in clock ticks since boot (field 22 of /proc/<pid>/stat, Linux), or
 * undefined where that cannot be read: then a lock's process is known by its pid alone.
 */
async function processStartOf(pid: number): Promise<number | undefined> {
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Field 2, the command's name in parentheses, may hold spaces and parentheses itself: fields 3
  // onwards follow its last parenthesis.
  const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[22 - 3]);
  return Number.isSafeInteger(ticks) ? ticks : undefined;
}

/**
 * Moves a stale lock out of the way, but only the one we read: if another run took it over in the
 * meantime, theirs is put back. Nothing can remove a file only if it is the one we looked at, so it
 * is renamed first and checked after.
 */
async function moveAsideIfSame(path: string, ino: number, role: string): Promise<boolean> {
  const aside = `${path}.${randomBytes(6).toString('hex')}.stale`;
  try {
    await rename(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw lockError('replace', path, error, role);
  }
  try {
    if ((await lstat(aside)).ino === ino) return true;
    await link(aside, path).catch(() => {});
    return false;
  } finally {
    await rm(aside, { force: true });
  }
}

function lockError(action: string, path: string, error: unknown, role: string): CliError {
  if (!isSystemError(error)) throw error;
  return fileError(error, { action, path, role, after: 'then run the same command again' });
}
