import { fstatSync } from 'node:fs';
import { constants } from 'node:os';
import { Readable } from 'node:stream';
import { CommanderError } from 'commander';
import type { Factory, RunInstead } from './context.js';
import { CliError, ExitCode, InterruptedError, UsageError } from './errors.js';
import type { Io } from './io.js';
import { buildProgram } from './program.js';
import { colorChoice } from './settings/resolve.js';
import { fileError, fromSystemError } from './support/system-errors.js';
import { Output } from './ui/output.js';

// The entry point. run() takes argv and an Io and returns an exit code without touching the
// process, so tests run the whole program in-process (test/helpers/run-cli.ts) as the binary runs
// it; main() alone wires the process's signals and streams to it and sets exitCode.

/** Runs one invocation and returns its exit code; never exits the process itself. */
export async function run(
  argv: string[],
  io: Io,
  signal: AbortSignal = new AbortController().signal,
  factory?: Factory,
  /** Receives each command's checked options in place of running it (tests; see context.ts). */
  runInstead?: RunInstead,
): Promise<number> {
  argv = withJsonFields(argv);
  const json = argv.includes('--json');
  const program = buildProgram(io, signal, { json, ...(runInstead ? { runInstead } : {}) }, factory);
  if (argv.length === 0) {
    program.outputHelp();
    return ExitCode.Ok;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return ExitCode.Ok;
  } catch (error) {
    // A refused command line is a UsageError by now (buildProgram); what is left is help and version.
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return ExitCode.Ok;
      // `svc-migrate webhook` alone: its help is on stderr, or with --json this one JSON line.
      if (json) errorOutput(argv, io).error(new UsageError('a subcommand is required (run with --help for usage)'), { debug: false });
      return ExitCode.Usage;
    }
    // A system error nobody caught (a path, a port) is the user's machine, not a bug.
    const mapped = fromSystemError(error);
    let failure = signal.aborted && !(mapped instanceof CliError) ? new InterruptedError() : mapped;
    // Ended by SIGTERM or SIGHUP rather than Ctrl-C: the interruption's code says which (main).
    const reason: unknown = signal.reason;
    // A command may have wrapped the interruption in its own message (what stays locked): same rule.
    const byAnotherSignal = reason instanceof InterruptedError && reason.exitCode !== ExitCode.Interrupted;
    if (failure instanceof CliError && failure.exitCode === ExitCode.Interrupted && byAnotherSignal) {
      const options = { ...(failure.hint ? { hint: failure.hint } : {}), cause: failure };
      failure = new InterruptedError(failure.message, options, reason.exitCode);
    }
    // Stopped by a closed stdout with nothing to tell (no hint, no locks named): quiet, as after SIGPIPE.
    const quiet = failure instanceof CliError && failure.message === PIPE_CLOSED && !failure.hint;
    if (!quiet) errorOutput(argv, io).error(failure, { debug: argv.includes('--debug') || Boolean(io.env.SVC_DEBUG) });
    return failure instanceof CliError ? failure.exitCode : ExitCode.Unexpected;
  }
}

/** The commands whose `--json` may name fields (gh's `--json id,state`). */
const FIELD_COMMANDS = ['list', 'status', 'repos'];
/** Global options that take a value: their value is not the command's name. */
const VALUED = ['--org', '--base-url', '--token', '--api-version', '--max-wait', '--ca-file'];
/** A field list: lower-case names and underscores, comma-separated (never a migration id). */
const FIELD_LIST = /^[a-z_]+(,[a-z_]+)*$/;

/**
 * `list --json id,state` (or `--json=id,state`) as commander reads it: `--json --json-fields
 * id,state`. Only for the commands that take fields, and only a value shaped as a field list, so
 * `status --json 4242` keeps its id.
 */
function withJsonFields(argv: string[]): string[] {
  const command = argv.find((arg, i) => !arg.startsWith('-') && !VALUED.includes(argv[i - 1] ?? ''));
  if (!command || !FIELD_COMMANDS.includes(command)) return argv;
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      out.push(...argv.slice(i));
      break;
    }
    const inline = /^--json=(.*)$/s.exec(arg);
    if (inline) out.push('--json', '--json-fields', inline[1] as string);
    else if (arg === '--json' && FIELD_LIST.test(argv[i + 1] ?? '')) out.push('--json', '--json-fields', argv[++i] as string);
    else out.push(arg);
  }
  return out;
}

/** Errors can happen before settings exist, so the error printer reads the few flags it needs itself. */
function errorOutput(argv: string[], io: Io): Output {
  return new Output({
    json: argv.includes('--json'),
    quiet: false,
    color: colorChoice(argv.includes('--no-color') ? false : undefined, io.env),
    stdout: io.stdout,
    stderr: io.stderr,
  });
}

const PIPE_CLOSED = 'stdout was closed';

/** The process entry point (bin/svc-migrate.js). */
export async function main(proc: NodeJS.Process): Promise<void> {
  const controller = new AbortController();
  // SIGTERM (kill, timeout, docker stop, systemctl stop) and SIGHUP (the terminal closed) end a run
  // as Ctrl-C does, cleaning up as it does, and exit 128 + the signal's number as shells report it;
  // the second of any of them ends it at once.
  const codes = { SIGINT: ExitCode.Interrupted, SIGTERM: ExitCode.Terminated, SIGHUP: ExitCode.HungUp } as const;
  const onSignal = (signal: keyof typeof codes) => {
    if (controller.signal.aborted) proc.exit(codes[signal]);
    controller.abort(new InterruptedError('interrupted', {}, codes[signal]));
  };
  const signals = Object.keys(codes) as (keyof typeof codes)[];
  for (const signal of signals) proc.on(signal, onSignal);
  let running = true;
  for (const [stream, name] of [
    [proc.stdout, 'stdout'],
    [proc.stderr, 'stderr'],
  ] as const) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') {
        // A reader that stops early (`svc-migrate list | head`) ends a finished run quietly, as with
        // any shell tool. A run still going stops as on a signal, so that it cleans up and says on
        // stderr what it leaves (locked repositories, a part to resume): exit 141, as after SIGPIPE.
        if (running && name === 'stdout' && !controller.signal.aborted) {
          controller.abort(new InterruptedError(PIPE_CLOSED, {}, ExitCode.PipeClosed));
          return;
        }
        if (!running || name === 'stderr') proc.exit(proc.exitCode ?? ExitCode.Ok);
        return;
      }
      // One that cannot be written (a full disk, /dev/full) is the machine's: said on stderr if
      // stderr is not the one failing, exit 2.
      if (name === 'stdout') {
        const failure = fileError(error, { action: 'write to', path: 'stdout' });
        errorOutput(proc.argv, proc).error(new CliError(failure.message, ExitCode.Usage, { hint: 'send stdout elsewhere, or free the disk it fills' }), { debug: false });
      }
      proc.exit(ExitCode.Usage);
    });
  }
  const code = await run(proc.argv.slice(2), processIo(proc), controller.signal);
  running = false;
  for (const signal of signals) proc.off(signal, onSignal);
  proc.exitCode = code;
}

/**
 * The process's streams. Node reads a directory on stdin (`… < dir`) as an empty stream, which
 * would pass for an empty input: reading it fails instead, as reading a directory does.
 */
function processIo(proc: NodeJS.Process): Io {
  let directory = false;
  try {
    directory = fstatSync(0).isDirectory();
  } catch {
    // No stdin at all (closed): reading it ends at once, as Node has it.
  }
  if (!directory) return proc;
  const stdin = new Readable({
    read() {
      this.destroy(Object.assign(new Error('EISDIR: illegal operation on a directory, read'), { code: 'EISDIR', syscall: 'read', errno: -constants.errno.EISDIR }));
    },
  });
  return { stdin, stdout: proc.stdout, stderr: proc.stderr, env: proc.env };
}
