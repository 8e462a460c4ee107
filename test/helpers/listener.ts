import { type ChildProcess, spawn } from 'node:child_process';
import { request } from 'node:http';
import { createInterface } from 'node:readline';
import { InterruptedError } from '../../src/errors.js';
import { BIN, runCli } from './run-cli.js';

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
  lines: Record<string, any>[];
  stderr: () => string;
  exited: Promise<number | null>;
  /** Resolves once `count` deliveries were printed. */
  waitFor(count: number): Promise<void>;
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
  const lines: Record<string, any>[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
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
        if (line) lines.push(JSON.parse(line));
      }
      for (const waiter of waiters.filter((w) => lines.length >= w.count)) waiter.resolve();
    },
    onStderr: (text) => {
      stderr += text;
      const match = /listening on (http:\/\/\S+?)(,|\s|$)/.exec(stderr);
      if (match?.[1]) announce(match[1]);
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
    stderr: () => stderr,
    exited,
    waitFor: (count) =>
      new Promise((resolve) => {
        if (lines.length >= count) resolve();
        else waiters.push({ count, resolve });
      }),
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
  const lines: Record<string, any>[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(JSON.parse(line));
    for (const waiter of waiters.filter((w) => lines.length >= w.count)) waiter.resolve();
  });
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const match = /listening on (http:\/\/\S+?)(,|\s|$)/.exec(stderr);
      if (match?.[1]) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`listen exited ${code}: ${stderr}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    url,
    pid: child.pid ?? 0,
    lines,
    stderr: () => stderr,
    exited,
    waitFor: (count) =>
      new Promise((resolve) => {
        if (lines.length >= count) resolve();
        else waiters.push({ count, resolve });
      }),
    stop: () => {
      child.kill('SIGINT');
      return exited;
    },
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
