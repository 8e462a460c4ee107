import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { clashProblem, extractError, HEAD_BYTES, NEW_FILE } from './git-copies.js';
import type { ExtractionBudget } from './scan-parts.js';
import type { MemberHandler, TarMember } from './tar-members.js';

// How the reading writes a member it copies: a new file only, never through a link or over another,
// its directories made as the archive has them, the room it declares counted before a byte of it is
// written. Where two members want one path, the file system says so, and that is a problem.

export class MemberCopier {
  private readonly budget: ExtractionBudget | undefined;

  constructor(budget: ExtractionBudget | undefined) {
    this.budget = budget;
  }

  /** Makes a directory of the copy, counted against the room; a file already there is a clash. */
  placeDirectory(path: string): string | undefined {
    this.budget?.spend(0, path);
    try {
      mkdirSync(path, { recursive: true, mode: 0o700 });
      return undefined;
    } catch (error) {
      return clashProblem(error, path);
    }
  }

  /**
   * Writes one member to `path`, once its first bytes pass `judge` (what its name says it is): a
   * member judged wrong, or whose path another member took, goes to `refuse` and is not written.
   */
  copy(
    member: TarMember,
    path: string,
    judge: ((head: Buffer) => string | undefined) | undefined,
    refuse: (message: string) => void,
  ): MemberHandler {
    let head: Buffer | undefined = Buffer.alloc(0);
    let fd: number | undefined;
    let refused = false;
    const stop = (message: string) => {
      refused = true;
      refuse(message);
    };
    const write = (chunk: Buffer) => {
      try {
        let done = 0;
        while (done < chunk.length) done += writeSync(fd as number, chunk, done);
      } catch (error) {
        throw extractError(path, error as NodeJS.ErrnoException);
      }
    };
    /** Judges the first bytes, then makes the file and writes them. */
    const start = (first: Buffer) => {
      head = undefined;
      const wrong = judge?.(first);
      if (wrong) return stop(wrong);
      this.budget?.spend(member.size, path);
      try {
        mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
        fd = openSync(path, NEW_FILE, 0o600);
      } catch (error) {
        return stop(clashProblem(error, path));
      }
      write(first);
    };
    return {
      data: (chunk) => {
        if (refused) return;
        if (head) {
          head = Buffer.concat([head, chunk]);
          if (head.length >= HEAD_BYTES) start(head);
          return;
        }
        write(chunk);
      },
      end: () => {
        if (head) start(head);
        if (fd !== undefined) closeSync(fd);
      },
    };
  }
}
