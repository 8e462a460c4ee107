import { CommanderError } from 'commander';
import { CliError, ExitCode, InterruptedError } from './errors.js';
import type { Factory } from './context.js';
import type { Io } from './io.js';
import { buildProgram } from './program.js';
import { tuneRuntime } from './runtime.js';
import { colorChoice } from './settings/resolve.js';
import { Output } from './ui/output.js';

/** Runs one invocation and returns its exit code; never exits the process itself. */
export async function run(
  argv: string[],
  io: Io,
  signal: AbortSignal = new AbortController().signal,
  factory?: Factory,
): Promise<number> {
  const program = buildProgram(io, signal, factory);
  if (argv.length === 0) {
    program.outputHelp();
    return ExitCode.Ok;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return ExitCode.Ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are successes; every other parse failure is a usage error.
      return error.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage;
    }
    const failure = signal.aborted && !(error instanceof CliError) ? new InterruptedError() : error;
    errorOutput(argv, io).error(failure, { debug: argv.includes('--debug') || Boolean(io.env.SVC_DEBUG) });
    return failure instanceof CliError ? failure.exitCode : ExitCode.Unexpected;
  }
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

/** The process entry point (bin/svc-migrate.js). */
export async function main(proc: NodeJS.Process): Promise<void> {
  tuneRuntime();
  const controller = new AbortController();
  const onSigint = () => {
    if (controller.signal.aborted) proc.exit(ExitCode.Interrupted);
    controller.abort(new InterruptedError());
  };
  proc.on('SIGINT', onSigint);
  // A reader that stops early (`svc-migrate list | head`) ends the run quietly, as with any shell tool.
  for (const stream of [proc.stdout, proc.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      proc.exit(proc.exitCode ?? ExitCode.Ok);
    });
  }
  const code = await run(proc.argv.slice(2), proc, controller.signal);
  proc.off('SIGINT', onSigint);
  proc.exitCode = code;
}
