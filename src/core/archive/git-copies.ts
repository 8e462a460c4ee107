import { closeSync, constants, lstatSync, mkdirSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { CliError } from '../../errors.js';
import { fileError } from '../../system-errors.js';
import type { TarMember } from './tar-members.js';

// Where the check puts a repository's members: copies of the allowed ones, for git, and the shape
// of all of them, where the file system finds members that repeat or clash.

/** What each kind of copied git file starts with; anything else is not git data and is not copied on. */
export const SIGNATURES: [RegExp, (head: Buffer) => boolean, string][] = [
  [/\.pack$/, (head) => head.toString('latin1', 0, 4) === 'PACK', 'is not a git pack (it does not start with "PACK")'],
  [/\.idx$/, (head) => head.readUInt32BE(0) === 0xff744f63, 'is not a git pack index'],
  [/\.rev$/, (head) => head.toString('latin1', 0, 4) === 'RIDX', 'is not a git reverse index'],
  [/\.bitmap$/, (head) => head.toString('latin1', 0, 4) === 'BITM', 'is not a git bitmap index'],
  [/multi-pack-index$/, (head) => head.toString('latin1', 0, 4) === 'MIDX', 'is not a git multi-pack index'],
  [/(commit-graph|\.graph)$/, (head) => head.toString('latin1', 0, 4) === 'CGPH', 'is not a git commit graph'],
  // A loose object is a zlib stream: its first two bytes name deflate and check each other.
  [/^objects\/[0-9a-f]{2}\//, (head) => ((head[0] as number) & 0x0f) === 8 && (((head[0] as number) << 8) | (head[1] as number)) % 31 === 0, 'is not a git object (not zlib data)'],
];

/** A file made new, never through a link or over another. */
export const NEW_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Lays out one member's shape (an empty file, or a directory) below `root`, or says why it cannot
 * be: another member took its path, or a file where it needs a directory, or the reverse. An
 * importer would extract one of the two, or fail; which one is not for us to guess.
 */
export function placeInLayout(root: string, rest: string, type: TarMember['type']): string | undefined {
  const path = join(root, rest);
  try {
    if (type === 'directory') {
      mkdirSync(path, { recursive: true, mode: 0o700 });
      return undefined;
    }
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    closeSync(openSync(path, NEW_FILE, 0o600));
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const directoryThere = code === 'EEXIST' && lstatSync(path, { throwIfNoEntry: false })?.isDirectory();
    if (code === 'EEXIST' && !directoryThere) return 'appears twice in the archive (an importer would keep only the last)';
    if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') {
      return 'clashes with another member of the same path (a file where a directory is, or the reverse)';
    }
    if (code === 'ENAMETOOLONG') return 'has a name too long to be a file';
    throw extractError(path, error as NodeJS.ErrnoException);
  }
}

export function extractError(path: string, error: NodeJS.ErrnoException): CliError {
  return fileError(error, {
    action: 'extract git data for checking to',
    path,
    after: 'TMPDIR moves the temporary directory; --no-git-check skips the deep check',
  });
}
