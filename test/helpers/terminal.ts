import { spawn, spawnSync } from 'node:child_process';
import { BIN } from './run-cli.js';

/** util-linux `script` gives the CLI a real pseudo-terminal. */
export const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

const quote = (part: string) => `'${part.replaceAll('\'', '\'\\\'\'')}'`;

export interface TerminalOptions {
  env?: Record<string, string | undefined>;
  /** Shell commands run on the terminal first, e.g. `stty cols 0`. */
  setup?: string;
  /** Wait for a text on screen, then type keys (or send a signal to the CLI's process group). */
  steps?: [RegExp, string][];
  /** Killed after this long: a hang fails the test instead of stalling the run. */
  timeoutMs?: number;
  /** Stop reading (and kill) once the screen holds this many bytes: an endless redraw is a failure. */
  maxBytes?: number;
  /** Called with the screen so far and the pid of `script` after each chunk of output. */
  onScreen?(screen: string, pid: number): void;
}

export interface TerminalResult {
  code: number | null;
  screen: string;
  /** Why it was killed, if it was. */
  killed?: 'timeout' | 'too much output';
}

/** Runs the built CLI on a pseudo-terminal and returns what the terminal showed and the exit code. */
export function onTerminal(args: string[], options: TerminalOptions = {}): Promise<TerminalResult> {
  const command = [options.setup, [process.execPath, BIN, ...args].map(quote).join(' ')].filter(Boolean).join('; ');
  // As on a developer's terminal: ora draws nothing where CI is set at all, even empty.
  const env: Record<string, string | undefined> = { ...process.env, TERM: 'xterm', ...options.env };
  delete env.CI;
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const steps = options.steps ?? [];
  const maxBytes = options.maxBytes ?? 1 << 20;
  let screen = '';
  let step = 0;
  let killed: TerminalResult['killed'];
  const kill = (why: TerminalResult['killed']) => {
    killed ??= why;
    try {
      // The whole group: script and the CLI under it.
      process.kill(-(child.pid as number), 'SIGKILL');
    } catch {
      // already gone
    }
  };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    screen += chunk;
    if (screen.length > maxBytes) kill('too much output');
    options.onScreen?.(screen, child.pid as number);
    while (step < steps.length && (steps[step] as [RegExp, string])[0].test(screen)) {
      child.stdin.write((steps[step] as [RegExp, string])[1]);
      step++;
    }
  });
  return new Promise((resolve) => {
    const timer = setTimeout(() => kill('timeout'), options.timeoutMs ?? 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, screen, ...(killed ? { killed } : {}) });
    });
  });
}
