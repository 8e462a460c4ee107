// The one wording of an archive problem: the error core throws and the report ui draws say it alike.
import { inertText } from '../../support/outside-text.js';

/** One thing wrong with an archive, named as precisely as the archive allows. */
export interface ArchiveProblem {
  repository?: string;
  file?: string;
  message: string;
}

/** Problems a report lists; the rest are counted: an archive can make millions of them. */
const MAX_LISTED = 1000;

/** An archive's problems: the first 1,000 kept, the rest counted. */
export class ProblemList {
  private readonly listed: ArchiveProblem[] = [];
  private unlisted = 0;

  add(problem: ArchiveProblem): void {
    if (this.listed.length < MAX_LISTED) this.listed.push(problem);
    else this.unlisted++;
  }

  get size(): number {
    return this.listed.length + this.unlisted;
  }

  /** As a report lists them: the first 1,000, then how many more there are. */
  toList(): ArchiveProblem[] {
    return this.unlisted > 0 ? [...this.listed, { message: `and ${this.unlisted} more problems, not listed` }] : [...this.listed];
  }
}

/**
 * One line naming the problem, with the names as the archive has them: for an error's message,
 * which Output shows inert to a human and escapes in JSON, so a script reads the names as they are.
 */
export function problemText(problem: ArchiveProblem): string {
  const where = [problem.repository, problem.file].filter(Boolean).join(': ');
  return where ? `${where}: ${problem.message}` : problem.message;
}

/** One line naming the problem; control characters from the archive are shown escaped, never obeyed. */
export function describeProblem(problem: ArchiveProblem): string {
  return inertText(problemText(problem));
}
