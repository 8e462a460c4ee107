import { accessSync, constants, lstatSync } from 'node:fs';
import { mkdir, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError, VerificationError } from '../../errors.js';
import { makeDirectory } from '../../support/make-directory.js';
import { fileError } from '../../support/system-errors.js';
import { moveInto } from './move-into.js';
import { makeWorkDirectory } from './work-directory.js';
import { outputDirectoryExists } from './output-directory.js';
import { isServiceName } from './service-names.js';
import { inertText } from '../../support/outside-text.js';
import { ArchiveVerificationError, verifiedReading, type VerifyOptions, type VerifyReport } from './verify.js';

// `archive extract`: the repositories and files of an archive, written from the reading that
// verified it, and only once all of it verified (docs/reliability.md#extract-and-restore).

export interface ExtractOptions extends Pick<VerifyOptions, 'gitTimeMs' | 'onProgress' | 'onGitProgress' | 'signal'> {
  /** DIR may hold files already: each path the archive holds replaces the same path there. */
  force?: boolean;
}

export interface ExtractReport {
  archive: string;
  directory: string;
  repositories: { name: string; path: string; refs: number; empty?: true }[];
  /** Every other member written, by its path under the directory. */
  files: string[];
  /** Files outside `repositories/` the service's archives never hold (not `*.json` nor `attachments/…`): not written. */
  left_out: { count: number; first: string[] };
  verify: VerifyReport;
}

/** `.<DIR>.extracting-XXXXXX`: where an extraction into a new DIR is made, beside it, on its file system. */
const workPrefix = (dir: string) => `.${basename(dir)}.extracting-`;
/** `DIR/.extracting-XXXXXX`: where an extraction into a DIR that exists is made. */
const INSIDE_PREFIX = '.extracting-';

/**
 * Verifies the archive and writes it to `dir`: each repository `<owner>/<repo>.git` a bare
 * repository of git's making (its config, no hooks) holding the refs and objects git checked, the
 * service's other members (`*.json`, `attachments/…`) at their paths. All of it is made in a private
 * directory on DIR's file system, then renamed to DIR (new) or moved into it (there already), once
 * the whole archive verified; a failure or Ctrl-C leaves nothing, not even the parents it made.
 */
export async function extractArchive(archive: string, directory: string, options: ExtractOptions = {}): Promise<ExtractReport> {
  const dir = resolve(directory);
  const exists = outputDirectoryExists(dir, { force: options.force === true, leftover: INSIDE_PREFIX, what: 'extract into' });
  const parent = dirname(dir);
  const madeParents = missingDirectories(parent);
  try {
    makeDirectory(parent);
  } catch (error) {
    throw fileError(error as NodeJS.ErrnoException, { action: 'create the directory', path: parent });
  }
  try {
    if (exists) checkWritable(dir, directory);
    // A DIR that exists is worked in, so every rename stays on its file system, whatever is mounted
    // there (a mount point, a bind mount of the same device); a new one is made beside.
    const inside = exists;
    const work = await makeWorkDirectory(inside ? dir : parent, inside ? INSIDE_PREFIX : workPrefix(dir), 'where the extraction is made before it is moved into place');
    try {
      return await extractIn(work, archive, directory, exists, options);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  } catch (error) {
    // Deepest first; one another process wrote in meanwhile is not empty, and stays.
    for (const made of madeParents.reverse()) await rmdir(made).catch(() => {});
    throw error;
  }
}

/** The extraction made in `work`, then put in place: DIR renamed into being, or moved into when it `exists`. */
async function extractIn(
  work: string,
  archive: string,
  directory: string,
  exists: boolean,
  options: ExtractOptions,
): Promise<ExtractReport> {
  const reading = join(work, 'reading');
  await mkdir(reading, { mode: 0o700 });
  const { report, kept } = await verifiedReading(archive, reading, { ...options, roomHint: 'free some space there, or extract to another disk' });
  if (!report.ok) {
    throw new ArchiveVerificationError(report, { hint: `nothing was written to ${directory}; keep the service's copy of the archive, and download it again or report the problems above` });
  }
  const out = join(work, 'out');
  const files = await filesOf(kept.filesDir);
  if (files.length > 0) await rename(kept.filesDir, out);
  else await mkdir(out, { mode: 0o700 });
  const repositories: ExtractReport['repositories'] = [];
  // Its owner and name become directories of the user's: `.ssh`, `.bashrc` or `..` never do.
  const misnamed = kept.repositories.find((repo) => !repo.name.split('/').every(isServiceName));
  if (misnamed) {
    throw new VerificationError(`${archive} cannot be extracted: ${inertText(misnamed.name)} is not a name the service gives (letters, digits, ".", "_" and "-", not "." or "-" first)`, {
      hint: `nothing was written to ${directory}`,
    });
  }
  for (const repo of kept.repositories) {
    const [owner, name] = repo.name.split('/') as [string, string];
    const path = `${owner}/${name}.git`;
    const refs = repo.refs.size;
    try {
      await mkdir(join(out, owner), { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST' || !lstatSync(join(out, owner)).isDirectory()) throw error;
      });
      await rename(repo.gitDir, join(out, path));
    } catch {
      throw new VerificationError(`${archive} cannot be extracted: ${path} would be where the archive holds a file of the same name`, {
        hint: `nothing was written to ${directory}`,
      });
    }
    repositories.push({ name: repo.name, path, refs, ...(repo.empty ? { empty: true as const } : {}) });
  }
  options.signal?.throwIfAborted();
  const dir = resolve(directory);
  const whole = new Set(repositories.map((repo) => repo.path));
  if (exists) await moveInto(out, dir, { force: options.force === true, shown: directory, whole });
  else await rename(out, dir).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ENOTEMPTY' || error.code === 'EEXIST'
      ? new UsageError(`${directory} was written to while the archive was extracted`, { hint: 'run this again, with --force to replace what the archive holds there' })
      : fileError(error, { action: 'move the extraction to', path: directory });
  });
  return { archive, directory, repositories, files, left_out: kept.leftOut, verify: report };
}

/** DIR that exists must take new entries: said before the archive is read, not after. */
function checkWritable(dir: string, shown: string): void {
  try {
    accessSync(dir, constants.W_OK);
  } catch (error) {
    throw fileError(error as NodeJS.ErrnoException, { action: 'write in', path: shown });
  }
}

/** The directories `mkdir -p dir` would make, outermost first. */
function missingDirectories(dir: string): string[] {
  const missing: string[] = [];
  for (let at = dir; !lstatSync(at, { throwIfNoEntry: false }); at = dirname(at)) {
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  return missing;
}

/** Paths of the files under `dir` (none when it was never made). */
async function filesOf(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1)).sort();
}
