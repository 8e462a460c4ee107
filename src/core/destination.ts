import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CliError, UsageError } from '../errors.js';
import { fileError } from '../support/system-errors.js';
import { checkLeftover } from './exclusive-files.js';
import { freeSpaceFor, NoRoomError, sized } from './free-space.js';

// Where an archive will be written, judged before anything is asked of the service: an export that
// locks repositories must not find out after the lock that it cannot keep what it asked for.

export interface Destination {
  /** The directory the archive (and its `.part`) goes in. */
  dir: string;
  /** The archive's own path, when it is known before the migration id is (`-o FILE`). */
  file?: string | undefined;
  /** `--force`: an existing file may be replaced. */
  force: boolean;
}

/** What a refusal before the first request adds to its hint. */
const NOTHING_STARTED = 'nothing was asked of the service';

/** The refusal of a file that is there already, the same whenever it is found (FileSink.open too). */
export function existingFileError(path: string): UsageError {
  return new UsageError(`${path} already exists`, { hint: 'pass --force to overwrite it, or choose another --output' });
}

/**
 * The checks `download` makes of where it writes, made up front: the file free (or `--force`), its
 * directory there, a directory, one this user can create files in (tried, not guessed from the mode:
 * root, read-only mounts and /proc answer only to a try), and not full where the file system says.
 */
export async function checkDestination(destination: Destination): Promise<void> {
  const { dir, file, force } = destination;
  // What the user will read: the file written first (the `.part` of the one named, or of the name
  // it will have), as a failure to write it later would name it.
  const shown = `${file ?? join(dir, 'migration-<id>.tar.gz')}.part`;
  if (file !== undefined && !force && (await stat(file).catch(() => undefined))) throw existingFileError(file);
  if (file !== undefined) {
    // What a download left there is written to, or renamed over: one that would be refused then is
    // refused now, before a start locks anything.
    try {
      await checkLeftover(`${file}.part`);
      await checkLeftover(`${file}.part.json`, { renamesOver: true });
    } catch (error) {
      if (error instanceof CliError) throw error;
      throw fileError(error as NodeJS.ErrnoException, { action: 'read', path: shown, after: NOTHING_STARTED });
    }
  }
  const stats = await stat(dir).catch((error: NodeJS.ErrnoException) => {
    throw fileError(error, { action: 'write', path: shown, after: NOTHING_STARTED });
  });
  if (!stats.isDirectory()) {
    throw new UsageError(`cannot write ${shown}: ${dir} is not a directory`, { hint: `choose another path; ${NOTHING_STARTED}` });
  }
  const probe = join(dir, `.svc-migrate-probe-${randomBytes(6).toString('hex')}`);
  try {
    const handle = await open(probe, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    await handle.close();
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw fileError(error as NodeJS.ErrnoException, { action: 'write', path: shown, after: NOTHING_STARTED });
  } finally {
    await rm(probe, { force: true }).catch(() => undefined);
  }
  // The archive's size is known only once the export is done; a file system with no room at all
  // can be judged now.
  const space = await freeSpaceFor(join(dir, 'x'));
  if (space && space.free === 0) {
    throw new NoRoomError(`not enough free space in ${space.dir} for an archive: ${sized(0)} free`, space.dir, NOTHING_STARTED);
  }
}
