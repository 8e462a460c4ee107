import { lstatSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError, VerificationError } from '../../errors.js';
import { makeDirectory } from '../../support/make-directory.js';
import { fileError } from '../../support/system-errors.js';
import { refsOf } from './kept-git.js';
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
  verify: VerifyReport;
}

/** `.<DIR>.extracting-XXXXXX`: where an extraction into DIR is made, beside it, on its file system. */
const workPrefix = (dir: string) => `.${basename(dir)}.extracting-`;

/**
 * Verifies the archive and writes it to `dir`: each repository `<owner>/<repo>.git` a bare
 * repository of git's making (its config, no hooks) holding the refs and objects git checked, every
 * other member at its path. All of it is made in a private directory beside `dir`, renamed into
 * place once the whole archive verified; a failure or Ctrl-C leaves nothing.
 */
export async function extractArchive(archive: string, directory: string, options: ExtractOptions = {}): Promise<ExtractReport> {
  const dir = resolve(directory);
  const into = destinationState(dir, options.force === true);
  const parent = dirname(dir);
  try {
    makeDirectory(parent);
  } catch (error) {
    throw fileError(error as NodeJS.ErrnoException, { action: 'create the directory', path: parent });
  }
  await removeAbandoned(parent, workPrefix(dir));
  const work = await mkdtemp(join(parent, workPrefix(dir))).catch((error: NodeJS.ErrnoException) => {
    throw fileError(error, { action: 'write in', path: parent, role: 'where the extraction is made before it is moved into place' });
  });
  try {
    // Whose it is: an extraction ended by kill -9 is removed by the next one beside it.
    await writeFile(join(work, 'pid'), String(process.pid), { mode: 0o600 });
    const reading = join(work, 'reading');
    await mkdir(reading, { mode: 0o700 });
    const { report, kept } = await verifiedReading(archive, reading, options);
    if (!report.ok) {
      throw new ArchiveVerificationError(report, { hint: `nothing was written to ${directory}; keep the service's copy of the archive, and download it again or report the problems above` });
    }
    const out = join(work, 'out');
    const files = await filesOf(kept.filesDir);
    if (files.length > 0) await rename(kept.filesDir, out);
    else await mkdir(out, { mode: 0o700 });
    const repositories: ExtractReport['repositories'] = [];
    for (const repo of kept.repositories) {
      const [owner, name] = repo.name.split('/') as [string, string];
      const path = `${owner}/${name}.git`;
      const refs = (await refsOf(repo.gitDir, kept.home, options.signal)).size;
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
    if (into === 'replace') await moveInto(out, dir, join(work, 'replaced'));
    else await rename(out, dir).catch((error: NodeJS.ErrnoException) => {
      throw error.code === 'ENOTEMPTY' || error.code === 'EEXIST'
        ? new UsageError(`${directory} was written to while the archive was extracted`, { hint: 'run this again, with --force to replace what the archive holds there' })
        : fileError(error, { action: 'move the extraction to', path: directory });
    });
    return { archive, directory, repositories, files, verify: report };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Whether the extraction is renamed to DIR ('rename': DIR is missing or empty) or moved into it ('replace'). */
function destinationState(dir: string, force: boolean): 'rename' | 'replace' {
  const info = lstatSync(dir, { throwIfNoEntry: false });
  if (!info) return 'rename';
  if (info.isSymbolicLink()) throw new UsageError(`${dir} is a symbolic link`, { hint: 'pass the directory it points to, or a new directory' });
  if (!info.isDirectory()) throw new UsageError(`${dir} is not a directory`, { hint: 'pass a new or empty directory to extract into' });
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (error) {
    throw fileError(error as NodeJS.ErrnoException, { action: 'read', path: dir });
  }
  if (entries.length === 0) return 'rename';
  if (!force) throw new UsageError(`${dir} is not empty`, { hint: 'pass a new or empty directory, or add --force to replace, in it, each path the archive holds (nothing else there is touched)' });
  return 'replace';
}

/**
 * Moves each entry of `from` to the same path in `to`: a directory into a directory already there,
 * anything else (a file, a repository) renamed in whole over what is there, which goes to `replaced`.
 */
async function moveInto(from: string, to: string, replaced: string): Promise<void> {
  await mkdir(replaced, { recursive: true, mode: 0o700 });
  let moved = 0;
  const walk = async (source: string, target: string): Promise<void> => {
    for (const entry of await readdir(source, { withFileTypes: true })) {
      const here = join(source, entry.name);
      const there = join(target, entry.name);
      const existing = lstatSync(there, { throwIfNoEntry: false });
      const repository = entry.isDirectory() && entry.name.endsWith('.git');
      if (existing?.isDirectory() && entry.isDirectory() && !repository) {
        await walk(here, there);
        continue;
      }
      if (existing) await rename(there, join(replaced, String(moved++)));
      await rename(here, there);
    }
  };
  await walk(from, to);
}

/** Paths of the files under `dir` (none when it was never made). */
async function filesOf(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1)).sort();
}

/** Removes extractions beside DIR whose process has ended (kill -9 ran no cleanup). */
async function removeAbandoned(parent: string, prefix: string): Promise<void> {
  const names = await readdir(parent).catch(() => []);
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(await readFile(join(parent, name, 'pid'), 'utf8').catch(() => ''));
    if (Number.isSafeInteger(pid) && pid > 0 && isRunning(pid)) continue;
    await rm(join(parent, name), { recursive: true, force: true });
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
