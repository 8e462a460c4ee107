import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { PassThrough, Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Clock } from '../../src/support/clock.js';
import { defaultFactory, type Factory } from '../../src/context.js';
import { run } from '../../src/main.js';
import { startSandbox } from '../../src/sandbox/server.js';
import { SandboxClock } from '../../src/sandbox/state.js';
import { sandboxAt } from './sandbox.js';

export const BIN = fileURLToPath(new URL('../../bin/svc-migrate.js', import.meta.url));

/**
 * What a run of the built binary left in `dir`, its TMPDIR. Node 22 and later keep their compile
 * cache there (node-compile-cache, bin/svc-migrate.js): it is not the program's to remove.
 */
export function leftIn(dir: string): string[] {
  return readdirSync(dir).filter((name) => name !== 'node-compile-cache');
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  stdin?: string;
  timeoutMs?: number;
}

export interface InProcessOptions extends CliOptions {
  /** Aborting it is Ctrl-C. */
  signal?: AbortSignal;
  /** stdin stays open, a pipe that never ends (instead of `stdin`). */
  openStdin?: boolean;
  /** Called with each piece the program writes, to await a message instead of sleeping. */
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
  /** stdout claims to be a terminal (the program sees `isTTY`), as behind `cmd` typed at a prompt. */
  stdoutIsTTY?: boolean;
  /** stderr is a terminal this wide: progress lines are drawn on it. */
  stderrColumns?: number;
  /** stdout and stderr are a terminal this many columns wide (isTTY and columns, as Node sets them). */
  terminal?: { columns: number };
}

/**
 * A program clock that moves the sandbox's clock: every wait (poll interval, backoff, rate-limit
 * reset) advances the sandbox's time and returns at once, so an export that takes the sandbox a
 * minute takes the test a few milliseconds, and nothing depends on the machine's load.
 */
function followingClock(sandboxClock: SandboxClock): Clock {
  return {
    now: () => sandboxClock.now(),
    sleep: (ms, signal) =>
      new Promise((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason as Error);
        sandboxClock.advance(ms);
        setImmediate(resolve);
      }),
  };
}

/** The factory of an in-process run: real client and prompter, a clock shared with the sandbox. */
function testFactory(sandboxClock: SandboxClock): Factory {
  return {
    ...defaultFactory,
    clock: followingClock(sandboxClock),
    sandbox: (options) => startSandbox({ ...options, clock: sandboxClock }),
  };
}

class Capture extends Writable {
  readonly chunks: Buffer[] = [];
  isTTY = false;
  columns: number | undefined;
  private readonly onText?: (text: string) => void;
  constructor(onText?: (text: string) => void) {
    super();
    this.onText = onText;
  }

  override _write(chunk: Buffer | string, encoding: BufferEncoding, callback: () => void): void {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, encoding);
    this.chunks.push(buffer);
    this.onText?.(buffer.toString('utf8'));
    callback();
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }

  text(): string {
    return this.bytes().toString('utf8');
  }
}

/**
 * Runs the program in-process from `src` (what a user would see, without spawning the build): the
 * environment and stdin it is given, stdout and stderr captured, no TTY. When the environment points
 * at a test sandbox, the program's clock is that sandbox's clock.
 */
export async function runCli(args: string[], options: InProcessOptions = {}): Promise<CliResult & { stdoutBytes: Buffer }> {
  const env = { ...process.env, ...options.env };
  const sandbox = sandboxAt(env.SVC_BASE_URL);
  const stdout = new Capture(options.onStdout);
  stdout.isTTY = Boolean(options.stdoutIsTTY);
  const stderr = new Capture(options.onStderr);
  if (options.stderrColumns !== undefined) Object.assign(stderr, { isTTY: true, columns: options.stderrColumns });
  if (options.terminal) {
    for (const stream of [stdout, stderr]) {
      stream.isTTY = true;
      stream.columns = options.terminal.columns;
    }
  }
  const stdin = options.openStdin ? new PassThrough() : Readable.from(options.stdin ? [Buffer.from(options.stdin)] : []);
  const code = await run(args, { stdin, stdout, stderr, env }, options.signal, testFactory(sandbox?.clock ?? new SandboxClock()));
  return { code, stdout: stdout.text(), stderr: stderr.text(), stdoutBytes: stdout.bytes() };
}

/** A factory that makes nothing: a command's options step must need none of it. */
const NOTHING_MADE: Factory = {
  clock: {
    now: () => {
      throw new Error('the options step read the clock');
    },
    sleep: () => Promise.reject(new Error('the options step waited')),
  },
  prompter: () => {
    throw new Error('the options step made a prompter');
  },
  apiClient: () => Promise.reject(new Error('the options step made an API client')),
  sandbox: () => Promise.reject(new Error('the options step started a sandbox')),
};

export interface ParseOptions {
  env?: Record<string, string | undefined>;
  stdinIsTTY?: boolean;
  stdoutIsTTY?: boolean;
}

export interface ParsedCli extends CliResult {
  /** The command whose options were read (`webhook listen`), when they passed. */
  command?: string;
  /** What its options step returned: what the command would have run with. */
  options?: unknown;
}

/**
 * Runs the program in-process up to each command's options step (the seam of src/context.ts) and
 * returns what it read, in place of running the command: no Context, no request, no sandbox, no
 * prompt. A usage error comes back as the user sees it (exit 2, stderr). `stdinIsTTY` makes
 * prompts possible (unless `--no-input` or CI); `stdoutIsTTY` puts stdout on a terminal.
 */
export async function parseCli(args: string[], options: ParseOptions = {}): Promise<ParsedCli> {
  const stdout = new Capture();
  stdout.isTTY = Boolean(options.stdoutIsTTY);
  const stderr = new Capture();
  const stdin = Object.assign(Readable.from([]), { isTTY: Boolean(options.stdinIsTTY) });
  // CI set in the test's own environment would forbid prompts: only the test says whether it is CI.
  const env = { ...process.env, CI: '', ...options.env };
  const parsed: { command?: string; options?: unknown } = {};
  const code = await run(args, { stdin, stdout, stderr, env }, new AbortController().signal, NOTHING_MADE, (command, read) => {
    parsed.command = command;
    parsed.options = read;
  });
  return { code, stdout: stdout.text(), stderr: stderr.text(), ...parsed };
}

/** Spawns the built binary the way a user's shell would (no TTY): only for what needs a process. */
export function spawnCli(args: string[], options: CliOptions & { nodeArgs?: string[]; cwd?: string } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), BIN, ...args], {
      env: { ...process.env, ...options.env },
      ...(options.cwd ? { cwd: options.cwd } : {}),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc-migrate ${args.join(' ')} did not finish in time\n${stderr}`));
    }, options.timeoutMs ?? 15_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.stdin ?? '');
  });
}

/** Resolves with what a spawned child has said on stderr once it has said `pattern`; rejects if it ends first. */
export function untilSaid(child: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let said = '';
    const onData = (chunk: string) => {
      said += chunk;
      if (!pattern.test(said)) return;
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
      resolve(said);
    };
    const onExit = (code: number | null) => reject(new Error(`the command ended (${code}) before saying ${pattern}\n${said}`));
    child.stderr?.setEncoding('utf8').on('data', onData);
    child.once('exit', onExit);
  });
}
