import { constants, lstatSync } from 'node:fs';
import { inflateSync, constants as zlib } from 'node:zlib';
import type { CliError } from '../../errors.js';
import { fileError } from '../../support/system-errors.js';

// The copies of a repository's members the check makes for git: what each kind of file must start
// with, and what the file system says when two members want one path.

/** Bytes of a member read before it is judged and its copy made. */
export const HEAD_BYTES = 512;

/** What each kind of copied git file starts with; anything else is not git data and is not copied on. */
export const SIGNATURES: [RegExp, (head: Buffer) => string | undefined][] = [
  [/\.pack$/, (head) => (head.toString('latin1', 0, 4) === 'PACK' ? undefined : 'is not a git pack (it does not start with "PACK")')],
  [/\.idx$/, (head) => (head.length >= 4 && head.readUInt32BE(0) === 0xff744f63 ? undefined : 'is not a git pack index')],
  [/multi-pack-index$/, (head) => (head.toString('latin1', 0, 4) === 'MIDX' ? undefined : 'is not a git multi-pack index')],
  [/(commit-graph|\.graph)$/, (head) => (head.toString('latin1', 0, 4) === 'CGPH' ? undefined : 'is not a git commit graph')],
  [/^objects\/[0-9a-f]{2}\//, looseObjectProblem],
];

/** git holds a commit, tree or tag whole in memory: none the service exports comes near this. */
const MAX_STRUCTURE_BYTES = 16 << 20;

/**
 * A loose object is a zlib stream of `<type> <size>\0<content>`: its first bytes say what it is and
 * how large it inflates, before any of it is written (a commit of a GiB of zeros is a few KiB here).
 */
function looseObjectProblem(head: Buffer): string | undefined {
  let start: Buffer;
  try {
    start = inflateSync(head, { finishFlush: zlib.Z_SYNC_FLUSH });
  } catch {
    return 'is not a git object (not zlib data)';
  }
  const header = /^(blob|tree|commit|tag) (\d{1,15})\0/.exec(start.toString('latin1', 0, 32));
  if (!header?.[1] || !header[2]) return 'is not a git object (no type and size at its start)';
  const size = Number(header[2]);
  if (header[1] !== 'blob' && size > MAX_STRUCTURE_BYTES) return `is a ${header[1]} of ${size} bytes, larger than git should hold in memory`;
  return undefined;
}

/** A file made new, never through a link or over another. */
export const NEW_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Why a copy could not be made where its member says, when another member is the reason: it took
 * the path, or is a file where a directory must be, or the reverse. An importer would extract one
 * of the two, or fail; which one is not for us to guess. Anything else is this machine's.
 */
export function clashProblem(error: unknown, path: string): string {
  const code = (error as NodeJS.ErrnoException).code;
  const directoryThere = code === 'EEXIST' && lstatSync(path, { throwIfNoEntry: false })?.isDirectory();
  if (code === 'EEXIST' && !directoryThere) return 'appears twice in the archive (an importer would keep only the last)';
  if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') {
    return 'clashes with another member of the same path (a file where a directory is, or the reverse)';
  }
  if (code === 'ENAMETOOLONG') return 'has a name too long to be a file';
  throw extractError(path, error as NodeJS.ErrnoException);
}

/** Paths that hold git data as directories: a file there keeps an importer from extracting it. */
export function isGitDataDirectory(rest: string): boolean {
  return /^(objects|objects\/info|objects\/pack|objects\/info\/commit-graphs|objects\/[0-9a-f]{2}|refs)$/.test(rest);
}

export function extractError(path: string, error: NodeJS.ErrnoException): CliError {
  return fileError(error, {
    action: 'extract git data for checking to',
    path,
    after: 'TMPDIR moves the temporary directory; --no-git-check skips the deep check',
  });
}
