import { lstatSync, readdirSync } from 'node:fs';
import { UsageError } from '../../errors.js';
import { fileError } from '../../support/system-errors.js';

// The DIR that `archive extract` and `archive view` write: new, or empty (but for what a run of
// theirs killed with -9 left in it, removed when the next one starts), or anything with --force.

/** Whether DIR is there already; refused (exit 2) when it is not a directory, or not empty without `force`. */
export function outputDirectoryExists(dir: string, { force, leftover, what }: { force: boolean; leftover: string; what: string }): boolean {
  const info = lstatSync(dir, { throwIfNoEntry: false });
  if (!info) return false;
  if (info.isSymbolicLink()) throw new UsageError(`${dir} is a symbolic link`, { hint: 'pass the directory it points to, or a new directory' });
  if (!info.isDirectory()) throw new UsageError(`${dir} is not a directory`, { hint: `pass a new or empty directory ${what.startsWith('for') ? what : `to ${what}`}` });
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (error) {
    throw fileError(error as NodeJS.ErrnoException, { action: 'read', path: dir });
  }
  if (force || entries.every((name) => name.startsWith(leftover))) return true;
  throw new UsageError(`${dir} is not empty`, {
    hint: `pass a new or empty directory, or add --force to replace, in it, ${what === 'extract into' ? 'each path the archive holds' : 'the site\'s own files'} (nothing else there is touched)`,
  });
}
