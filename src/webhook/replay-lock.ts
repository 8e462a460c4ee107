import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, link, lstat, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { UsageError } from '../errors.js';
import { isRunning } from '../support/process-alive.js';
import { readingReason } from '../support/system-errors.js';

// One `webhook replay --failed DIR` at a time per DIR: two would each read the same failed
// deliveries from its journal and send every one of them twice.

const LOCK_NAME = '.replay-failed.lock';
/** Takes of a lock that keeps changing under us before giving up. */
const MAX_ATTEMPTS = 3;

/**
 * Takes `<dir>/.replay-failed.lock` (created O_EXCL|O_NOFOLLOW, 0600, holding our pid) and resolves
 * with its release. A lock whose pid no longer runs is taken over (`onNotice` told); a live one is a
 * usage error naming its pid and file.
 */
export async function lockFailedReplay(dir: string, onNotice: (message: string) => void): Promise<() => Promise<void>> {
  const path = join(dir, LOCK_NAME);
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    let handle: FileHandle;
    try {
      handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new UsageError(`cannot read deliveries from ${dir}: ${readingReason(error)}`);
      if (code !== 'EEXIST') throw new UsageError(`cannot take the lock ${path}: ${readingReason(error)}`);
      const found = await holderOf(path);
      if (found === undefined) continue; // Released since: try again.
      const { pid, ino } = found;
      if (pid === undefined) {
        throw new UsageError(`${dir} is locked: ${path} exists but names no process`, {
          hint: `if no \`webhook replay --failed\` runs on ${dir}, remove ${path} and run again`,
        });
      }
      // Our own pid in a lock we did not take: an earlier process had it (a container's pids start over).
      if (pid !== process.pid && isRunning(pid)) {
        throw new UsageError(`another \`webhook replay --failed\` (pid ${pid}) is sending the deliveries of ${dir}: ${path}`, {
          hint: `wait for it to end, or stop it (kill ${pid}): two at once would send the same deliveries twice`,
        });
      }
      if (await moveAsideIfSame(path, ino)) onNotice(`taking over ${path}: pid ${pid}, which took it, is no longer running`);
      continue;
    }
    let ino: number;
    try {
      await handle.writeFile(`${process.pid}\n`);
      ino = (await handle.stat()).ino;
    } catch (error) {
      // A lock not written whole would read as naming no process: it goes.
      await handle.close().catch(() => {});
      await rm(path, { force: true });
      throw new UsageError(`cannot write the lock ${path}: ${readingReason(error)}`);
    }
    await handle.close();
    return async () => {
      // Only our own: a lock someone took over after ours was moved aside stays theirs.
      const now = await lstat(path).catch(() => undefined);
      if (now?.ino === ino) await rm(path, { force: true });
    };
  }
  throw new UsageError(`cannot take the lock ${path}: it keeps changing`, { hint: 'another `webhook replay --failed` is starting on the same directory; run again in a moment' });
}

/** The pid a lock names (undefined when it names none), and its inode; undefined when it is gone. */
async function holderOf(path: string): Promise<{ pid: number | undefined; ino: number } | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw new UsageError(`${path} is a symbolic link, not a lock this program made`, { hint: `remove it (rm ${path}) and run again` });
    throw new UsageError(`cannot read the lock ${path}: ${readingReason(error)}`);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile() || info.size > 32) return { pid: undefined, ino: info.ino };
    const text = await handle.readFile('utf8');
    const pid = /^([1-9]\d{0,9})\n$/.exec(text)?.[1];
    return { pid: pid === undefined ? undefined : Number(pid), ino: info.ino };
  } finally {
    await handle.close();
  }
}

/**
 * Moves a stale lock aside, but only the one looked at: if another run took it over meanwhile,
 * theirs is put back. No call removes a file only if it is a given one, so it is renamed first.
 */
async function moveAsideIfSame(path: string, ino: number): Promise<boolean> {
  const aside = `${path}.${randomBytes(6).toString('hex')}.stale`;
  try {
    await rename(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new UsageError(`cannot replace the lock ${path}: ${readingReason(error)}`);
  }
  try {
    if ((await lstat(aside)).ino === ino) return true;
    await link(aside, path).catch(() => {});
    return false;
  } finally {
    await rm(aside, { force: true });
  }
}
