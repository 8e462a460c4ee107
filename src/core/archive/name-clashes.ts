import { detached } from './detached.js';

// Every member's path, and the directories it implies, kept as a tree whose keys are folded: two
// names that a case-insensitive or normalising file system (macOS's and Windows' defaults) takes for
// one are a problem, since extracting the second writes over the first, or through it. So are a
// name twice (an extractor keeps the last) and a file where another member needs a directory.

interface Directory {
  exact: string;
  /** By folded name: a directory, a file's name as written, or `true` for a file whose name is its folded one. */
  children: Map<string, Directory | string | true>;
}

/** Members whose names are kept: far more than a migration archive holds. */
const MAX_NAMES = 250_000;
/**
 * The memory the tree may take, in bytes as counted below: a name's part a byte a character (two
 * beyond Latin-1), a directory of the tree (an object and a Map) some 230 more, measured. Counting
 * characters alone let names of 2,000 one-letter parts make 16 million directories: 3.6 GB. Room
 * for MAX_NAMES names of some 150 characters: at 24 MB, 250,000 attachments of 70-character names
 * (`bench/verify.js`) were refused as more than an archive holds.
 */
const MAX_BYTES = 48_000_000;
const DIRECTORY_BYTES = 256;
const ENTRY_BYTES = 32;

const PLAIN = /^[\x20-\x7e]*$/;
const LATIN_1 = /^[\0-\xff]*$/;

/**
 * Characters HFS+ (macOS's file system before APFS) leaves out of a name, as git's core.protectHFS
 * knows: `hooks/post-upd\u200cate` is `hooks/post-update` there. The others it ignores (direction
 * marks, U+FEFF) are refused in any name (member-names.ts).
 */
export const HFS_IGNORED = /\u200c|\u200d|[\u206a-\u206f]/g;

/** The name a case-insensitive, normalising file system sees: Unicode case folding over NFD, without what HFS+ ignores. */
export function foldName(segment: string): string {
  return PLAIN.test(segment) ? segment.toLowerCase() : segment.replace(HFS_IGNORED, '').normalize('NFD').toUpperCase().toLowerCase().normalize('NFD');
}

export class NameClashes {
  private readonly root: Directory = { exact: '', children: new Map() };
  private names = 0;
  private bytes = 0;

  /** Past its bounds: the archive has failed, and names are no longer recorded. */
  get full(): boolean {
    return this.names > MAX_NAMES;
  }

  /**
   * Records a member's path (segments already checked to be plain: no "", "." or "..") and returns
   * why it cannot stand beside the members before it, or undefined.
   */
  add(path: string, isDirectory: boolean): string | undefined {
    if (this.names > MAX_NAMES) return undefined;
    if (++this.names > MAX_NAMES || this.bytes > MAX_BYTES) {
      this.names = MAX_NAMES + 1;
      return `the archive holds more member names than a migration archive does (over ${MAX_NAMES}, or over ${MAX_BYTES / 1e6} MB of them); the rest were not checked`;
    }
    const segments = path.split('/');
    // Folded whole, once: nothing folds to or from "/", and a name of 2,000 parts folded one by one
    // took 5 ms.
    const keys = foldName(path).split('/');
    let directory = this.root;
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i] as string;
      const last = i === segments.length - 1;
      const key = keys[i] as string;
      const found = directory.children.get(key);
      if (found === undefined) {
        // Strings of their own, not pieces of the member's name: 120 bytes a name instead of 180.
        const kept = detached(key);
        const characters = kept.length + (segment === key ? 0 : segment.length);
        this.bytes += (LATIN_1.test(segment) ? characters : 2 * characters) + (last && !isDirectory ? ENTRY_BYTES : DIRECTORY_BYTES);
        if (last && !isDirectory) {
          directory.children.set(kept, segment === key ? true : detached(segment));
          return undefined;
        }
        const made: Directory = { exact: segment === key ? kept : detached(segment), children: new Map() };
        directory.children.set(kept, made);
        directory = made;
        continue;
      }
      const exact = found === true ? key : typeof found === 'string' ? found : found.exact;
      // Only for a problem: joined for every part, it made a name of 2,000 parts take 2 million steps.
      const where = () => [...segments.slice(0, i), exact].join('/');
      if (exact !== segment) {
        const ignored = exact.normalize('NFD') === segment.normalize('NFD') ? 'Unicode normalisation' : exact.replace(HFS_IGNORED, '') === segment.replace(HFS_IGNORED, '') ? 'what HFS+ leaves out of names' : 'letter case';
        return `clashes with ${where()} when ${ignored} is ignored (one would be written over the other)`;
      }
      if (typeof found !== 'object') {
        if (!last) return `is inside ${where()}, which is a file in the archive`;
        return isDirectory ? 'is a directory where the archive has a file' : 'appears twice in the archive (an importer would keep only the last)';
      }
      if (last && !isDirectory) return 'is a file where the archive has a directory';
      directory = found;
    }
    return undefined;
  }
}
