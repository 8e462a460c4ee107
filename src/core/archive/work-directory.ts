import { mkdtemp, opendir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isRunning } from '../../support/process-alive.js';
import { fileError } from '../../support/system-errors.js';

// The private directory a reading that keeps its copies works in (extract, restore): its name holds
// the pid of its process, so that one left by a kill -9, which runs no cleanup, is removed by the
// next run that makes one beside it.

/** A new private directory `<parent>/<prefix><pid>-XXXXXX`; those of ended processes beside it are removed first. */
export async function makeWorkDirectory(parent: string, prefix: string, role: string): Promise<string> {
  await removeAbandoned(parent, prefix);
  return mkdtemp(join(parent, `${prefix}${process.pid}-`)).catch((error: NodeJS.ErrnoException) => {
    throw fileError(error, { action: 'write in', path: parent, role });
  });
}

async function removeAbandoned(parent: string, prefix: string): Promise<void> {
  // Read entry by entry: a TMPDIR of 50,000 names read whole took 6 MB of the check's memory.
  const directory = await opendir(parent).catch(() => undefined);
  if (!directory) return;
  for await (const { name } of directory) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(/^(\d+)-/.exec(name.slice(prefix.length))?.[1]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || isRunning(pid)) continue;
    // Another user's is theirs to remove.
    await rm(join(parent, name), { recursive: true, force: true }).catch(() => {});
  }
}
