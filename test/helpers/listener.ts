import { type ChildProcess, spawn } from 'node:child_process';
import { request } from 'node:http';
import { createInterface } from 'node:readline';
import { InterruptedError } from '../../src/errors.js';
import { BIN, runCli } from './run-cli.js';
import { changes } from './until.js';

const children: ChildProcess[] = [];
const inProcess: AbortController[] = [];

/** Ends every listener a test left running (after each test: test/helpers/cleanup.ts). */
export function stopListeners(): void {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const controller of inProcess.splice(0)) controller.abort(new InterruptedError());
}

export interface Listener {
  url: string;
  pid: number;
  /** The deliveries' lines. */
  lines: Record<string, any>[];
  /** The `forward` object of each forward's line (docs/cli.md#webhook-listen), in order. */
  forwards: Record<string, any>[];
  stderr: () => string;
  exited: Promise<number | null>;
  /** Resolves once `count` deliveries were printed. */
  waitFor(count: number): Promise<void>;
  /** Resolves once a forward's line passes `test`. */
  waitForForward(test: (forward: Record<string, any>) => boolean): Promise<void>;
  /** Resolves once `ready()` holds, looked at again whenever the listener writes; rejects if it exits first. */
  until(ready: () => boolean): Promise<void>;
  stop(): Promise<number | null>;
}

/**
 * Starts `webhook listen --json --port 0 …` in-process and collects its NDJSON lines; `stop()` is
 * Ctrl-C. `{ spawn: true }` runs the built binary instead, for what needs a process of its own.
 */
export async function listen(args: string[], options: { spawn?: boolean } = {}): Promise<Listener> {
  if (options.spawn) return spawnListener(args);
  const controller = new AbortController();
  inProcess.push(controller);
  const { lines, forwards, take, waitFor, waitForForward, changed, until } = collector();
  let stdout = '';
  let stderr = '';
  let announce: (url: string) => void = () => {};
  const announced = new Promise<string>((resolve) => {
    announce = resolve;
  });
  const exited = runCli(['webhook', 'listen', '--port', '0', '--json', ...args], {
    env: { SVC_WEBHOOK_SECRET: '' },
    signal: controller.signal,
    onStdout: (text) => {
      stdout += text;
      let end: number;
      while ((end = stdout.indexOf('\n')) >= 0) {
        const line = stdout.slice(0, end);
        stdout = stdout.slice(end + 1);
        if (line) take(line);
      }
    },
    onStderr: (text) => {
      stderr += text;
      const match = /listening on (http:\/\/\S+?)(,|\s|$)/.exec(stderr);
      if (match?.[1]) announce(match[1]);
      changed();
    },
  }).then((result) => result.code);
  const url = await Promise.race([
    announced,
    exited.then((code) => Promise.reject(new Error(`listen exited ${code}: ${stderr}`))),
  ]);
  return {
    url,
    pid: process.pid,
    lines,
    forwards,
    stderr: () => stderr,
    exited,
    waitFor,
    waitForForward,
    until: (ready) => untilBeforeExit(until, ready, exited, () => stderr),
    stop: () => {
      controller.abort(new InterruptedError());
      return exited;
    },
  };
}

async function spawnListener(args: string[]): Promise<Listener> {
  const child = spawn(process.execPath, [BIN, 'webhook', 'listen', '--port', '0', '--json', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SVC_WEBHOOK_SECRET: '' },
  });
  children.push(child);
  const { lines, forwards, take, waitFor, waitForForward, changed, until } = collector();
  createInterface({ input: child.stdout }).on('line', take);
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const match = /listening on (http:\/\/\S+?)(,|\s|$)/.exec(stderr);
      if (match?.[1]) resolve(match[1]);
      changed();
    });
    void exited.then((code) => reject(new Error(`listen exited ${code}: ${stderr}`)));
  });
  return {
    url,
    pid: child.pid ?? 0,
    lines,
    forwards,
    stderr: () => stderr,
    exited,
    waitFor,
    waitForForward,
    until: (ready) => untilBeforeExit(until, ready, exited, () => stderr),
    stop: () => {
      child.kill('SIGINT');
      return exited;
    },
  };
}

/** `until(ready)`, or a failure saying what the listener wrote if it exits before `ready()` holds. */
function untilBeforeExit(
  until: (ready: () => boolean) => Promise<void>,
  ready: () => boolean,
  exited: Promise<unknown>,
  stderr: () => string,
): Promise<void> {
  const gone = exited.then(() => (ready() ? undefined : Promise.reject(new Error(`listen exited: ${stderr()}`))));
  return Promise.race([until(ready), gone]);
}

/** The NDJSON lines of `listen --json`, deliveries and forwards apart, and waits on them. */
function collector() {
  const lines: Record<string, any>[] = [];
  const forwards: Record<string, any>[] = [];
  const { changed, until } = changes();
  const take = (line: string) => {
    const parsed = JSON.parse(line) as Record<string, any>;
    if (parsed.forward !== undefined && parsed.delivery === undefined) forwards.push(parsed.forward);
    else lines.push(parsed);
    changed();
  };
  return {
    lines,
    forwards,
    take,
    changed,
    until,
    waitFor: (count: number) => until(() => lines.length >= count),
    waitForForward: (test: (forward: Record<string, any>) => boolean) => until(() => forwards.some(test)),
  };
}

/** Posts raw bytes with exact headers; resolves with the status and answer. */
export function post(url: string, headers: Record<string, string | string[]>, body: Buffer | string, method = 'POST') {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(url, { method, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8').on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
