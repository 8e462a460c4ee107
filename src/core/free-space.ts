import { statfs } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { formatBytes } from '../support/byte-size.js';
import { CliError, ExitCode } from '../errors.js';

// Room for an archive before its bytes come: a download that cannot fit stops before it fills the
// disk. Not enough room is the machine's state, to fix there (exit 2), not a fault of the service.

/** The room in the directory a `.part` file lives in. */
export interface FreeSpace {
  /** The directory, absolute: what the messages name. */
  dir: string;
  /** Bytes an unprivileged user may still write (statfs: bavail × bsize; root's reserve is not ours). */
  free: number;
  /** Bytes a body without an announced length must leave free (see marginOf). */
  margin: number;
}

const MiB = 1024 ** 2;

/**
 * What a body of unknown length leaves free: at least 64 MiB, for the side files, the `.sha256`,
 * logs and whatever else runs on the machine; 1% of a larger file system, whose other users write
 * more; at most 1 GiB, so that a large volume does not turn away an archive to keep tens of
 * gigabytes free. An announced length needs no margin: it is known to fit, or refused at once.
 */
function marginOf(size: number): number {
  return Math.min(1024 * MiB, Math.max(64 * MiB, Math.floor(size / 100)));
}

/**
 * The room where `file` goes, or undefined when its file system does not say (statfs unsupported,
 * or no blocks reported, as some FUSE and network mounts do): then only a full disk stops a write.
 */
export async function freeSpaceFor(file: string): Promise<FreeSpace | undefined> {
  const dir = dirname(resolve(file));
  const stats = await statfs(dir).catch(() => undefined);
  if (!stats || stats.blocks <= 0 || stats.bsize <= 0) return undefined;
  return { dir, free: stats.bavail * stats.bsize, margin: marginOf(stats.blocks * stats.bsize) };
}

/** The most bytes a body without an announced length may bring: what is free less the margin. */
export function roomWithoutLength(space: FreeSpace): number {
  return Math.max(0, space.free - space.margin);
}

/** A download stopped, or never begun, for want of room. */
export class NoRoomError extends CliError {
  constructor(message: string, dir: string, after: string) {
    super(message, ExitCode.Usage, { hint: `free some space in ${dir}, or save the archive on a disk with more room; ${after}` });
  }
}

/**
 * Why the `needed` bytes still to come do not fit, or undefined when they do. `kept` bytes of the
 * archive are already in the `.part` (a resume): they stay there for the next run.
 */
export function announcedTooLarge(space: FreeSpace, id: number, needed: number, kept: number): NoRoomError | undefined {
  if (needed <= space.free) return undefined;
  const still = kept > 0 ? ' still' : '';
  return new NoRoomError(
    `not enough free space in ${space.dir} for migration ${id}'s archive: ${sized(needed)}${still} needed, ${sized(space.free)} free`,
    space.dir,
    kept > 0 ? `the ${sized(kept)} already downloaded are kept for resuming` : 'nothing was written',
  );
}

/** A body without an announced length that reached `roomWithoutLength`. */
export function unannouncedTooLarge(space: FreeSpace, id: number, received: number): NoRoomError {
  return new NoRoomError(
    `not enough free space in ${space.dir} for migration ${id}'s archive: storage announced no length and sent ${sized(received)}, with ${sized(space.free)} free; stopped to keep ${formatBytes(space.margin)} free`,
    space.dir,
    'nothing was kept',
  );
}

/** A size for a message: in bytes when small, else in binary units with the exact bytes after. */
export function sized(bytes: number): string {
  return bytes < 1024 ? `${bytes} bytes` : `${formatBytes(bytes)} (${bytes} bytes)`;
}
