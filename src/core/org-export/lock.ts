import { hostname } from 'node:os';
import { type CliError, UsageError } from '../../errors.js';
import { type DirectoryLock, type LockHolder, lockDirectory as lockWith } from '../../support/directory-lock.js';

// One run per output directory. Two runs of one export at once would each write the journal over
// the other's and fetch the same archives into the same files; the second is refused instead.

/** The lock's name inside the output directory. */
const LOCK_FILE = 'svc-migrate.lock';

/**
 * Takes `<dir>/svc-migrate.lock` (support/directory-lock.ts); a live one is a usage error naming
 * it, with a hint for the command taking it (`unlock --output-dir` has no other directory to go to:
 * it waits).
 */
export function lockDirectory(
  dir: string,
  options: { now: number; onNotice?: (message: string) => void; command?: 'export' | 'unlock' },
): Promise<DirectoryLock> {
  return lockWith(dir, {
    file: LOCK_FILE,
    now: options.now,
    onNotice: options.onNotice,
    role: '--output-dir',
    held: (holder, path) => heldError(dir, path, holder, options.command ?? 'export'),
  });
}

function heldError(dir: string, path: string, holder: LockHolder | undefined, command: 'export' | 'unlock'): CliError {
  const elsewhere = command === 'export' ? ', or use another --output-dir' : '';
  if (!holder) {
    return new UsageError(`${dir} is locked by another run: ${path} exists but does not say which`, {
      hint: `if no export runs in ${dir}, remove ${path} and run again`,
    });
  }
  const who = `pid ${holder.pid} on ${holder.host}, since ${holder.startedAt}`;
  if (holder.host !== hostname()) {
    return new UsageError(`${dir} is in use by another export (${who}); that host is not this one, so whether it still runs cannot be checked from here`, {
      hint: `if no export runs there any more, remove ${path} and run again; otherwise wait for it${elsewhere}`,
    });
  }
  return new UsageError(`${dir} is in use by another export (${who})`, {
    hint: command === 'export'
      ? `wait for it to finish or stop it (kill ${holder.pid}), or use another --output-dir: two runs in one directory would write over each other's journal and archives`
      : `wait for it to finish or stop it (kill ${holder.pid}), then run the command again: the export may be starting or unlocking batches`,
  });
}
