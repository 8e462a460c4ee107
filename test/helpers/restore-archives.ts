import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { expect } from 'vitest';
import type { CliResult } from './run-cli.js';
import { sandboxArchive } from './sandbox.js';

// The archive `archive extract` and `archive restore` are tested on end to end: the sandbox's export
// of 50 repositories, which holds an empty repository, wikis and pull-request refs.

const SCALE = 50;
const scaledNames = Array.from({ length: SCALE }, (_, i) => `repo-${String(i + 1).padStart(4, '0')}`);

/** The sandbox's archive of octo-org's `repo-0001` … `repo-0050`, in a file of its own. */
export function scaledArchive(): Promise<string> {
  return sandboxArchive(scaledNames, {}, { repositories: SCALE });
}

/** A copy of `archive` in a directory of its own: what a run leaves beside it (a journal) is that test's alone. */
export function archiveCopy(archive: string): string {
  const copy = join(mkdtempSync(join(tmpdir(), 'svc-restore-archive-')), basename(archive));
  copyFileSync(archive, copy);
  return copy;
}

/**
 * That the archive's refs (archiveRefs) hold the cases the commands must carry: every one of the 50
 * repositories, an empty one, a wiki (`owner/repo.wiki`) and pull-request refs.
 */
export function expectScaledShape(refs: Map<string, Map<string, string>>): void {
  for (const name of scaledNames) expect(refs.has(`octo-org/${name}`), `octo-org/${name} is in the archive`).toBe(true);
  const names = [...refs.keys()];
  expect(names.filter((name) => refs.get(name)?.size === 0), 'an empty repository').not.toEqual([]);
  expect(names.filter((name) => name.endsWith('.wiki')), 'a wiki').not.toEqual([]);
  expect(names.filter((name) => [...(refs.get(name)?.keys() ?? [])].some((ref) => ref.startsWith('refs/pull/'))), 'pull-request refs').not.toEqual([]);
}

/** The environment the built binary runs git in: the machine's system configuration left out (HOME is the tests' own). */
export const GIT_SETUP = { GIT_CONFIG_NOSYSTEM: '1' };

/** A run's --json report on stdout; failing, what the run said instead. */
export function reportOf<Report>(result: CliResult): Report {
  try {
    return JSON.parse(result.stdout) as Report;
  } catch {
    throw new Error(`no JSON report on stdout (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  }
}
