import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { RequestInit, Response } from 'undici';
import { BIN } from './run-cli.js';
import { changes } from './until.js';

// `webhook listen --relay` as a user runs it: the built binary in a process of its own, reading a
// relay channel (the sandbox's, or a stub's), its stdout's lines and stderr collected, waited on as
// they come. And the sandbox relay's channel and admin calls, which tests wait on instead of sleeping.

/** A fetch that reaches the relay (the test sandbox's, which trusts its authority). */
export type RelayFetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

export interface RelayListener {
  pid: number;
  /** Every line of stdout parsed as JSON (with --json), in order. */
  records: Record<string, any>[];
  /** The deliveries' records. */
  deliveries: Record<string, any>[];
  /** The `forward` object of each forward's record. */
  forwards: Record<string, any>[];
  /** The `gap` object of each gap's record. */
  gaps: Record<string, any>[];
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code (null and the signal if killed). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once `ready()` holds, looked at again whenever the process writes; rejects if it exits first. */
  until(ready: () => boolean): Promise<void>;
  /** Ctrl-C: SIGINT, as a terminal sends it. */
  interrupt(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The process's peak resident memory (VmHWM of /proc/<pid>/status), in bytes; undefined once it exited. */
  peakRss(): number | undefined;
}

const children: ChildProcess[] = [];

/** Kills every listener a test left running: each test file calls it after each test. */
export function stopRelayListeners(): void {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/**
 * Spawns `svc-migrate webhook listen …args` (the built binary; add `--relay URL` and `--json` as the
 * test needs), with `env` over the test's own environment and SVC_WEBHOOK_SECRET cleared.
 */
export function relayListen(args: string[], options: { env?: Record<string, string>; cwd?: string } = {}): RelayListener {
  const child = spawn(process.execPath, [BIN, 'webhook', 'listen', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SVC_WEBHOOK_SECRET: '', ...options.env },
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  children.push(child);
  const records: Record<string, any>[] = [];
  const deliveries: Record<string, any>[] = [];
  const forwards: Record<string, any>[] = [];
  const gaps: Record<string, any>[] = [];
  const { changed, until } = changes();
  let stdout = '';
  let stderr = '';
  createInterface({ input: child.stdout }).on('line', (line) => {
    stdout += `${line}\n`;
    if (line.startsWith('{')) {
      const record = JSON.parse(line) as Record<string, any>;
      records.push(record);
      if (record.gap !== undefined) gaps.push(record.gap as Record<string, any>);
      else if (record.forward !== undefined && record.delivery === undefined) forwards.push(record.forward as Record<string, any>);
      else if (record.delivery !== undefined) deliveries.push(record);
    }
    changed();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    changed();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('close', (code, signal) => {
      changed();
      resolve({ code, signal });
    });
  });
  let ended = false;
  void exited.then(() => (ended = true));
  const untilAlive = (ready: () => boolean) =>
    Promise.race([
      until(ready),
      exited.then((end) => (ready() ? undefined : Promise.reject(new Error(`listen exited ${end.code ?? end.signal}\nstderr: ${stderr}\nstdout: ${stdout.slice(0, 4000)}`)))),
    ]);
  return {
    pid: child.pid ?? 0,
    records,
    deliveries,
    forwards,
    gaps,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    until: untilAlive,
    interrupt: () => {
      child.kill('SIGINT');
      return exited;
    },
    peakRss: () => (ended ? undefined : peakRssOf(child.pid ?? 0)),
  };
}

function peakRssOf(pid: number): number | undefined {
  try {
    const kilobytes = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kilobytes === undefined ? undefined : Number(kilobytes) * 1024;
  } catch {
    return undefined;
  }
}

/** A new channel of the relay at `relay` (`<sandbox>/relay`): `/new` answers a 307 to it. `raw` asks for gosmee's `bodyB`. */
export async function newChannel(fetch: RelayFetch, relay: string, options: { raw?: boolean } = {}): Promise<string> {
  const answer = await fetch(`${relay}/new${options.raw ? '?raw=1' : ''}`, { redirect: 'manual' });
  const location = answer.headers.get('location');
  if (answer.status !== 307 || !location) throw new Error(`${relay}/new answered ${answer.status} without a channel (location ${location})`);
  return new URL(location, relay).href;
}

/** The channel's name: the last segment of its URL. */
export function channelName(channel: string): string {
  return new URL(channel).pathname.split('/').pop() ?? '';
}

/** Streams of the channel open at the sandbox now (its admin call). */
async function listenerCount(fetch: RelayFetch, origin: string, channel: string): Promise<number> {
  const answer = await fetch(`${origin}/_sandbox/relay/${channelName(channel)}`);
  if (answer.status !== 200) throw new Error(`the sandbox's relay admin answered ${answer.status}`);
  return ((await answer.json()) as { listeners: number }).listeners;
}

/**
 * Resolves once the channel has `count` readers, asking the sandbox again after each answer (the
 * relay keeps no history: a delivery posted before the listener reads the channel is lost).
 * `giveUp` ends it early (the listener exited); the test's own timeout is the ceiling.
 */
export async function untilListeners(
  fetch: RelayFetch,
  origin: string,
  channel: string,
  count: number,
  giveUp?: Promise<unknown>,
): Promise<void> {
  let stopped = false;
  void giveUp?.then(() => (stopped = true));
  while ((await listenerCount(fetch, origin, channel)) < count) {
    if (stopped) throw new Error(`the channel never had ${count} reader(s): the listener exited`);
    // The next look after the sandbox's event loop turned: a reader connecting is what it waits for.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** Posts to the channel as the service posts a delivery: these exact headers and bytes. */
export async function postToChannel(
  fetch: RelayFetch,
  channel: string,
  headers: Record<string, string>,
  body: Buffer | string,
  query = '',
): Promise<number> {
  const { 'content-length': _length, host: _host, ...sent } = headers;
  const answer = await fetch(`${channel}${query}`, { method: 'POST', headers: sent, body });
  await answer.arrayBuffer();
  return answer.status;
}
