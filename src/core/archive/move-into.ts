import { accessSync, constants, lstatSync } from 'node:fs';
import { readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { UsageError } from '../../errors.js';
import { fileError } from '../../support/system-errors.js';

// The last step of an extraction into a directory that exists: each entry moved into it by a rename,
// all of them or none. DIR itself is never renamed over (it may be a mount point, the user's shell
// may be in it, its mode and owner are the user's), and a failure puts back what was there.

/** One rename of the move: `source` to `target`, what was at `target` first set aside beside it. */
interface Step {
  source: string;
  target: string;
  /** Where what was at `target` waits, in its own directory, until the move is over. */
  aside?: string;
}

/**
 * Moves each entry of `from` to the same path in `to`: a directory into a directory already there,
 * anything else (a file, or one of the `whole` paths: a repository) renamed in whole over what is there, which is removed once
 * all of it moved. Before any rename, refuses (exit 2) where a directory of `to` cannot be written,
 * and, without `force`, where anything of `to` would be replaced. A failure on the way moves each
 * entry back out and each replaced one back in, and is thrown: `to` is as it was.
 */
export async function moveInto(
  from: string,
  to: string,
  { force, shown, whole }: { force: boolean; shown: string; whole: ReadonlySet<string> },
): Promise<void> {
  const steps: Step[] = [];
  const targets = [to];
  const plan = async (source: string, target: string): Promise<void> => {
    const entries = await readdir(source, { withFileTypes: true });
    // In order of name: the same archive is moved the same way every time.
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const here = join(source, entry.name);
      const there = join(target, entry.name);
      const existing = lstatSync(there, { throwIfNoEntry: false });
      if (existing?.isDirectory() && entry.isDirectory() && !whole.has(relative(from, here))) {
        targets.push(there);
        await plan(here, there);
        continue;
      }
      if (existing && !force) {
        throw new UsageError(`${shown} was written to while the archive was extracted: ${there} is there now`, { hint: 'run this again, with --force to replace what the archive holds there' });
      }
      steps.push({ source: here, target: there, ...(existing ? { aside: asideName(there) } : {}) });
    }
  };
  await plan(from, to);
  for (const target of targets) {
    try {
      accessSync(target, constants.W_OK);
    } catch (error) {
      throw fileError(error as NodeJS.ErrnoException, { action: 'write in', path: target, after: `nothing was written to ${shown}` });
    }
  }
  /** What undoes each rename done, and what is left if it cannot. */
  const undo: { run: () => Promise<void>; stuck: string }[] = [];
  try {
    for (const { source, target, aside } of steps) {
      if (aside) {
        await rename(target, aside);
        undo.push({ run: () => rename(aside, target), stuck: `what was at ${target} is at ${aside}` });
      }
      await rename(source, target);
      undo.push({ run: () => rename(target, source), stuck: `${target} is the archive's` });
    }
  } catch (error) {
    const stuck: string[] = [];
    for (const { run, stuck: left } of undo.reverse()) await run().catch(() => stuck.push(left));
    throw fileError(error as NodeJS.ErrnoException, {
      action: 'move the extraction to',
      after: stuck.length === 0 ? `${shown} was left as it was` : `${shown} could not all be put back: ${stuck.join('; ')}`,
    });
  }
  for (const { aside } of steps) if (aside) await rm(aside, { recursive: true, force: true }).catch(() => {});
}

/** A free name beside `path` for what is there while the move runs. */
function asideName(path: string): string {
  for (let n = 0; ; n++) {
    const aside = join(dirname(path), `.${basename(path)}.replaced-${process.pid}-${n}`);
    if (!lstatSync(aside, { throwIfNoEntry: false })) return aside;
  }
}
