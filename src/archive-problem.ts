// The one wording of an archive problem and the one escaping of text from inside an archive: the
// error core throws and the report ui draws say it alike. Like errors.ts, it imports nothing, so
// every layer may use it.

/** One thing wrong with an archive, named as precisely as the archive allows. */
export interface ArchiveProblem {
  repository?: string;
  file?: string;
  message: string;
}

/** One line naming the problem; control characters from the archive are shown escaped, never obeyed. */
export function describeProblem(problem: ArchiveProblem): string {
  const where = [problem.repository, problem.file].filter(Boolean).join(': ');
  return escapeControl(where ? `${where}: ${problem.message}` : problem.message);
}

/**
 * Text from inside an archive may hold anything: control characters (and bidi overrides) are shown,
 * never obeyed; characters of no width are shown too, or `a\u200cb` would read as `ab`.
 */
export function escapeControl(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u206f\ufeff]/g, (c) => {
    const code = c.charCodeAt(0);
    return code > 0xff ? `\\u${code.toString(16)}` : `\\x${code.toString(16).padStart(2, '0')}`;
  });
}
