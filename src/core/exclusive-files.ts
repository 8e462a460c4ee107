import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { UsageError } from '../errors.js';
import { shellWord } from '../support/shell-word.js';

// Files the download writes next to the user's archive are never reached through a link someone
// planted there (docs/reliability.md, "Credentials and files"): new files are created exclusively,
// existing ones opened without following links, and replaced files are renamed over, which replaces
// a link instead of writing through it. Modes follow the user's umask.

const NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

function plantedLink(path: string): UsageError {
  return new UsageError(`${path} is a symbolic link: refusing to write through it`, {
    hint: `remove it (rm ${path}) if you put it there, then run the command again`,
  });
}

/** What is at `path` instead of a file of its own, as `stats` (of the path itself, not followed) tell. */
function notOwnFile(path: string, stats: Stats): UsageError {
  const kind = stats.isDirectory() ? 'a directory' : stats.isFile() ? 'a hard link to another file' : 'a device, a FIFO or a socket';
  // `rm` alone refuses a directory.
  const remove = stats.isDirectory() ? `rm -r ${shellWord(path)}` : `rm ${shellWord(path)}`;
  return new UsageError(`${path} is not a regular file of its own (it is ${kind}): refusing to write to it`, {
    hint: `remove it (${remove}) and run the command again`,
  });
}

/** Checks an opened file is a plain file of its own (no device, no hard link to something else). */
async function ownFile(handle: FileHandle, path: string): Promise<FileHandle> {
  const stats = await handle.stat();
  if (stats.isFile() && stats.nlink === 1) return handle;
  await handle.close();
  throw notOwnFile(path, stats);
}

/**
 * The download's refusals of what it finds at `path`, made before anything is asked of the service.
 * A `.part` it appends to: absent, or a plain file of its own, never a link. A side file it
 * `renamesOver` (a link or a file there is replaced, never written through): anything but a
 * directory. System errors are the caller's to name.
 */
export async function checkLeftover(path: string, { renamesOver = false } = {}): Promise<void> {
  let stats;
  try {
    stats = await lstat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (renamesOver) {
    if (stats.isDirectory()) throw notOwnFile(path, stats);
    return;
  }
  if (stats.isSymbolicLink()) throw plantedLink(path);
  if (!stats.isFile() || stats.nlink !== 1) throw notOwnFile(path, stats);
}

/**
 * Opens `path` to write from the start (`fresh`) or to append to what it holds (`resume`), never
 * through a link: a leftover that is a link is refused. System errors are the caller's to name.
 */
export async function openOwnFile(path: string, mode: 'fresh' | 'resume'): Promise<FileHandle> {
  if (mode === 'fresh') {
    try {
      return await open(path, NEW, 0o666);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if ((await lstat(path)).isSymbolicLink()) throw plantedLink(path);
    }
  }
  try {
    const flags = mode === 'fresh' ? constants.O_WRONLY | constants.O_TRUNC : constants.O_RDWR;
    return await ownFile(await open(path, flags | constants.O_NOFOLLOW), path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw plantedLink(path);
    throw error;
  }
}

/**
 * Writes `data` to a fresh temporary file beside `path`, then renames it over `path`: whole or not
 * at all. `durable` also flushes the file before the rename and the directory after it, so a crash
 * at any instant leaves the old file or the new one, even across a reboot.
 */
export async function replaceFile(path: string, data: string, { mode = 0o666, durable = false } = {}): Promise<void> {
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temporary, NEW, mode);
    try {
      await handle.writeFile(data);
      if (durable) await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
    if (durable) {
      const directory = await open(dirname(path), 'r');
      try {
        await directory.sync();
      } finally {
        await directory.close();
      }
    }
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/**
 * A small side file of ours (a `.part.json`) as text, or undefined when it is not there or not
 * what we write: it is on disk for anyone to plant, so it is opened without following a link and
 * without waiting on a FIFO (an open for reading blocks until a writer comes, and no signal ends
 * it), and read only when it is a plain file of at most `maxBytes`.
 */
export async function readSideFile(path: string, maxBytes = 64 * 1024): Promise<string | undefined> {
  try {
    const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const stats = await handle.stat();
      if (!stats.isFile() || stats.size > maxBytes) return undefined;
      return await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
}
