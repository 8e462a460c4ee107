import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileError } from '../../support/system-errors.js';

// The private directory a reading that keeps its copies works in (extract, restore): made with the
// pid of its process in it, so that one left by a kill -9, which runs no cleanup, is removed by the
// next run that makes one beside it.

/** A new private directory `<parent>/<prefix>XXXXXX`; those of ended processes beside it are removed first. */
export async function makeWorkDirectory(parent: string, prefix: string, role: string): Promise<string> {
  await removeAbandoned(parent, prefix);
  const work = await mkdtemp(join(parent, prefix)).catch((error: NodeJS.ErrnoException) => {
    throw fileError(error, { action: 'write in', path: parent, role });
  });
  await writeFile(join(work, 'pid'), String(process.pid), { mode: 0o600 });
  return work;
}

async function removeAbandoned(parent: string, prefix: string): Promise<void> {
  const names = await readdir(parent).catch(() => []);
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(await readFile(join(parent, name, 'pid'), 'utf8').catch(() => ''));
    // No pid yet: a run between its mkdtemp and its first write, or one killed there; left alone.
    if (!Number.isSafeInteger(pid) || pid <= 0 || isRunning(pid)) continue;
    // Another user's is theirs to remove.
    await rm(join(parent, name), { recursive: true, force: true }).catch(() => {});
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
