import { CliError, ExitCode } from '../../errors.js';
import type { BatchRecord } from './journal.js';
import type { Tally } from './plan.js';

// How an org export ends: the error that stopped it, and which exit code a finished one reports.

/**
 * A run that ended before its summary (Ctrl-C, a signal, a failure of this machine): `error` is
 * what ended it, `batches` where each stands, for the caller to name what is still locked.
 */
export class OrgExportStoppedError extends CliError {
  readonly error: CliError;
  readonly batches: BatchRecord[];
  constructor(error: CliError, batches: BatchRecord[]) {
    const status = error.status === undefined ? {} : { status: error.status };
    super(error.message, error.exitCode, { hint: error.hint, cause: error, ...status });
    this.error = error;
    this.batches = batches;
  }
}

/** A failure of this machine, not of the service: exit 2 without an HTTP status (a file, a disk, the journal). */
export function isLocal(error: CliError): boolean {
  return error.exitCode === ExitCode.Usage && error.status === undefined;
}

/** The error that ended the run, with the way to continue it. */
export function endedBy(fatal: unknown, journalPath: string): unknown {
  if (!(fatal instanceof CliError)) return fatal;
  const more = `the journal ${journalPath} says where each batch stopped; run the same command again to continue`;
  const hint = fatal.hint?.includes('run the same command again') ? fatal.hint : fatal.hint ? `${fatal.hint}; ${more}` : more;
  return new CliError(fatal.message, fatal.exitCode, { hint, cause: fatal });
}

/** Which of two exit codes to report: an interruption, then the service's verdicts, then the rest. */
export function worse(a: number, b: number): number {
  const rank = (code: number) => RANKS.get(code) ?? code;
  return rank(b) > rank(a) ? b : a;
}

const RANKS = new Map<number, number>([
  [ExitCode.Ok, 0], [ExitCode.Partial, 0.5], [ExitCode.VerificationFailed, 9], [ExitCode.MigrationFailed, 8], [ExitCode.Unexpected, 10],
]);

/**
 * The exit code of a finished run: 0 when every repository is in a verified archive (any archive
 * with --no-verify); 10 when some were skipped (refused, or at fault); 5 when all were; else the
 * worst failure's code.
 */
export function exitCodeOf(batches: BatchRecord[], counts: Tally, verify: boolean): number {
  const failures = batches.filter((b) => !FINISHED.has(b.state) || b.error);
  let exitCode: number = ExitCode.Ok;
  for (const batch of failures) exitCode = worse(exitCode, batch.error?.exitCode ?? ExitCode.Unexpected);
  // With --no-verify nothing is verified: an archive for every repository is the whole job.
  const safe = verify ? counts.verified : counts.archived;
  if (exitCode === ExitCode.Ok && safe < counts.total - counts.skipped.length) exitCode = ExitCode.VerificationFailed;
  // Every repository refused: nothing was exported, a refused request (exit 5), not a partial export.
  if (exitCode === ExitCode.Ok && counts.total > 0 && counts.skipped.length === counts.total) exitCode = ExitCode.Validation;
  if (exitCode === ExitCode.Ok && counts.skipped.length > 0) exitCode = ExitCode.Partial;
  return exitCode;
}

/** States a batch ends in with nothing more to do: a narrowed one's repositories are its halves'. */
const FINISHED = new Set<BatchRecord['state']>(['done', 'skipped', 'narrowed']);
