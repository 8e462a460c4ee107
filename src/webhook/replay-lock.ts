import { stat } from 'node:fs/promises';
import { UsageError } from '../errors.js';
import { lockDirectory } from '../support/directory-lock.js';
import { readingReason } from '../support/system-errors.js';

// One `webhook replay --failed DIR` at a time per DIR: two would each read the same failed
// deliveries from its journal and send every one of them twice.

const LOCK_NAME = '.replay-failed.lock';

/**
 * Takes `<dir>/.replay-failed.lock` (support/directory-lock.ts) and resolves with its release. A
 * lock whose process no longer runs is taken over (`onNotice` told); a live one is a usage error
 * naming its pid and file.
 */
export async function lockFailedReplay(dir: string, onNotice: (message: string) => void): Promise<() => Promise<void>> {
  await stat(dir).catch((error: unknown) => {
    throw new UsageError(`cannot read deliveries from ${dir}: ${readingReason(error)}`);
  });
  const lock = await lockDirectory(dir, {
    file: LOCK_NAME,
    now: Date.now(),
    onNotice,
    role: '--failed',
    held: (holder, path) =>
      holder === undefined
        ? new UsageError(`${dir} is locked: ${path} exists but names no process`, {
            hint: `if no \`webhook replay --failed\` runs on ${dir}, remove ${path} and run again`,
          })
        : new UsageError(`another \`webhook replay --failed\` (pid ${holder.pid}) is sending the deliveries of ${dir}: ${path}`, {
            hint: `wait for it to end, or stop it (kill ${holder.pid}): two at once would send the same deliveries twice`,
          }),
  });
  return () => lock.release();
}
