import { detached } from './detached.js';
import type { MemberHandler } from './tar-members.js';

// The refs of a repository's git data as the scan reads them: loose ref files and packed-refs, the
// latter line by line as it streams, whatever its size (docs/reliability.md#the-archive-check).

/**
 * A replace ref: git shows the object it names wherever the one it replaces is asked for, so `git
 * log` in an extraction shows a forged commit and a mirror push carries the replacement on. Matched
 * without regard to case: a case-insensitive disk reads `refs/REPLACE/x` as `refs/replace/x`.
 */
export const REPLACE_REF = /^refs\/replace\/./i;

const REPLACING = 'git shows the object it names in place of the one it replaces, so the history read from the extraction would not be the archive\'s';

export const REPLACE_REF_PROBLEM = `is a replace ref: ${REPLACING}`;

/** A ref is one object id: of SHA-1 or SHA-256. */
const OBJECT_ID = /^[0-9a-f]{40}$|^[0-9a-f]{64}$/;

/** `<id> <ref>`: a line of packed-refs naming a ref (not the header, nor a peeled `^<id>` line). */
const PACKED_REF = /^([0-9a-f]{40}|[0-9a-f]{64}) (refs\/\S{1,1024})$/;

/** A line that names a replace ref, whatever its length and the case of its letters. */
const PACKED_REPLACE_REF = /^(?:[0-9a-f]{40}|[0-9a-f]{64}) (refs\/replace\/.)/i;

/** Bytes of a packed-refs line kept: an object id, a space and a name of 1024 characters of up to four bytes. */
const MAX_LINE = 64 + 1 + 4 * 1024;

/** Refs kept for the report, of all repositories: 100,000 refs of 1,000 characters held 300 MB. */
const MAX_REFS = 100_000;
const MAX_REF_CHARACTERS = 4_000_000;

/** The refs a scan keeps, within their bounds, as strings of their own (never views of the text). */
export class KeptRefs {
  private count = 0;
  private characters = 0;

  /** Adds `ref` to `refs` unless it is there already or the bounds are reached. */
  keep(refs: Record<string, string>, ref: string, id: string): void {
    if (this.count >= MAX_REFS || this.characters + ref.length > MAX_REF_CHARACTERS || ref in refs) return;
    refs[detached(ref)] = detached(id);
    this.count++;
    this.characters += ref.length;
  }
}

/** The object id a loose ref file holds, or undefined (a symbolic ref, or anything else). */
export function looseRefId(text: string): string | undefined {
  const id = text.trim();
  return OBJECT_ID.test(id) ? id : undefined;
}

/**
 * Reads packed-refs as it streams: each ref line's name and id to `onRef`, and a problem naming the
 * first replace ref to `onProblem`. Only the start of a line longer than a ref's is kept, which is
 * enough to tell a replace ref; such a line names no ref that is kept.
 */
export function packedRefsReader(onRef: (ref: string, id: string) => void, onProblem: (message: string) => void): MemberHandler {
  let replaceFound = false;
  return lineReader(MAX_LINE, (line, whole) => {
    if (!replaceFound && PACKED_REPLACE_REF.test(line)) {
      replaceFound = true;
      const name = line.slice(line.indexOf(' ') + 1);
      onProblem(`names a replace ref (${name.length > 200 ? `${name.slice(0, 200)}…` : name}): ${REPLACING}`);
    }
    const ref = whole ? PACKED_REF.exec(line) : null;
    if (ref?.[1] && ref[2]) onRef(ref[2], ref[1]);
  });
}

/** Hands over each line of a member, without its line feed, cut to its first `maxBytes` bytes. */
function lineReader(maxBytes: number, onLine: (line: string, whole: boolean) => void): MemberHandler {
  let kept: Buffer[] = [];
  let keptBytes = 0;
  let whole = true;
  const keep = (piece: Buffer) => {
    if (piece.length === 0) return;
    const room = maxBytes - keptBytes;
    if (piece.length > room) whole = false;
    if (room <= 0) return;
    // A copy: a view would keep the whole chunk alive.
    const part = Buffer.from(piece.subarray(0, room));
    kept.push(part);
    keptBytes += part.length;
  };
  const endLine = () => {
    onLine(Buffer.concat(kept).toString('utf8'), whole);
    kept = [];
    keptBytes = 0;
    whole = true;
  };
  return {
    data: (chunk) => {
      let at = 0;
      for (let end = chunk.indexOf(10, at); end !== -1; end = chunk.indexOf(10, at)) {
        keep(chunk.subarray(at, end));
        endLine();
        at = end + 1;
      }
      keep(chunk.subarray(at));
    },
    end: () => {
      if (keptBytes > 0 || !whole) endLine();
    },
  };
}
