// One error family, one mapping to exit codes. A command may catch a CliError to reword it, but
// never prints it or exits: main.ts has the Output print it (`error:`/`hint:`, or one JSON line with
// --json) and returns its code. Any other error is a bug of ours: exit 1, "please report".

/** Exit codes of docs/cli.md, one table for the whole program. */
export const ExitCode = {
  Ok: 0,
  Unexpected: 1,
  Usage: 2,
  Auth: 3,
  NotFound: 4,
  Validation: 5,
  MigrationFailed: 6,
  Timeout: 7,
  Unavailable: 8,
  VerificationFailed: 9,
  /** `export --output-dir` finished what it could, but the service refused some repositories (skipped). */
  Partial: 10,
  Interrupted: 130,
  /** Ended by SIGHUP or SIGTERM, as Ctrl-C ends a run: 128 + the signal's number, as shells report it. */
  HungUp: 129,
  /** Stopped because the reader of stdout went away mid-run (EPIPE), as SIGPIPE would: 128 + 13. */
  PipeClosed: 141,
  Terminated: 143,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export interface ErrorDetails {
  hint?: string;
  cause?: unknown;
  /** HTTP status when the error came from an answer of the service. */
  status?: number;
}

/** Every error the user is meant to see; anything else is a bug. */
export class CliError extends Error {
  readonly exitCode: ExitCode;
  /** What to do next; the program restates the commands it names for the command line that ran (program.ts). */
  hint: string | undefined;
  readonly status: number | undefined;

  constructor(message: string, exitCode: ExitCode, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.exitCode = exitCode;
    this.hint = details.hint;
    this.status = details.status;
  }
}

export class UsageError extends CliError {
  constructor(message: string, details: ErrorDetails = {}) {
    super(message, ExitCode.Usage, details);
  }
}

export class AuthError extends CliError {
  constructor(message: string, details: ErrorDetails = {}) {
    super(message, ExitCode.Auth, details);
  }
}

export class NotFoundError extends CliError {
  constructor(message: string, details: ErrorDetails = {}) {
    super(message, ExitCode.NotFound, details);
  }
}

/** An entry of a 422's `errors[]` that names one item of an array field of the request (`repositories[3]`). */
export interface RejectedItem {
  field: string;
  index: number;
  value: unknown;
  /** The service's message, or its code when it gave none. */
  reason: string;
}

/**
 * 422 from the service; `messages` are its per-field validation messages, every one, `items` those
 * of its entries that name one item of the request (an org export skips those repositories), only
 * when every entry names one, and `repositories` the names it refused as not of the organization
 * (`--json` prints `messages` and `repositories`).
 */
export class ValidationError extends CliError {
  readonly messages: string[];
  readonly items: RejectedItem[];
  readonly repositories: string[];
  constructor(
    message: string,
    messages: string[],
    details: ErrorDetails & { items?: RejectedItem[] } = {},
    repositories: string[] = [],
  ) {
    const { items = [], ...rest } = details;
    super(message, ExitCode.Validation, rest);
    this.messages = messages;
    this.items = items;
    this.repositories = repositories;
  }
}

/** Network failure, server error or rate limit that outlasted retries and waits. */
export class UnavailableError extends CliError {
  constructor(message: string, details: ErrorDetails = {}) {
    super(message, ExitCode.Unavailable, details);
  }
}

/**
 * A TLS connection refused because of the peer's certificate (expired, for another name, from an
 * authority not trusted), or a handshake that cannot work: exit 8 as a network failure, but not an
 * `UnavailableError`, which downloads and waits treat as passing trouble: every try would fail alike.
 */
export class CertificateError extends CliError {
  constructor(message: string, details: ErrorDetails = {}) {
    super(message, ExitCode.Unavailable, details);
  }
}

export class MigrationFailedError extends CliError {
  constructor(message: string, details: ErrorDetails = {}) {
    super(message, ExitCode.MigrationFailed, details);
  }
}

export class WaitTimeoutError extends CliError {
  constructor(message: string, details: ErrorDetails = {}) {
    super(message, ExitCode.Timeout, details);
  }
}

export class InterruptedError extends CliError {
  constructor(message = 'interrupted', details: ErrorDetails = {}, exitCode: ExitCode = ExitCode.Interrupted) {
    super(message, exitCode, details);
  }
}

/** The archive failed verification: its structure, its content or its git objects. */
export class VerificationError extends CliError {
  constructor(message: string, details: ErrorDetails = {}) {
    super(message, ExitCode.VerificationFailed, details);
  }
}
