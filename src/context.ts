import type { Command } from 'commander';
import type { ApiClient, ClientOptions } from './api/client.js';
import type { ExtraTrust } from './api/trust.js';
import { type Clock, systemClock } from './support/clock.js';
import { UsageError } from './errors.js';
import type { Io } from './io.js';
import { readCaFile } from './settings/ca-file.js';
import { type GlobalFlags, resolveSettings, type Settings, type Source } from './settings/resolve.js';
import { configDirectory, readStoredSettings } from './settings/store.js';
import { Output } from './ui/output.js';
import { Prompter } from './ui/prompt.js';
import type { Sandbox, SandboxOptions } from './sandbox/server.js';
import { USER_AGENT } from './support/version.js';

// What every command needs (Context, the Runner that hands it over, the Factory it is made from)
// sits here, below the commands, rather than in program.ts: commands import nothing above them, and
// no import circle runs through the program (test/unit/import-cycles.test.ts).

/**
 * What a command's dependencies are made from, injected from the top (as the GitHub CLI's Factory):
 * the process entry point uses the real ones, the in-process test harness swaps in a movable clock.
 */
export interface Factory {
  clock: Clock;
  prompter(interactive: boolean, signal: AbortSignal, color?: boolean): Prompter;
  apiClient(options: ClientOptions): Promise<ApiClient>;
  /** `--sandbox`: the emulator started in-process. */
  sandbox(options: SandboxOptions): Promise<Sandbox>;
}

export const defaultFactory: Factory = {
  clock: systemClock,
  prompter: (interactive, signal, color) => new Prompter(interactive, signal, color),
  async apiClient(options) {
    const { ApiClient } = await import('./api/client.js');
    return new ApiClient(options);
  },
  async sandbox(options) {
    const { startSandbox } = await import('./sandbox/server.js');
    return startSandbox(options);
  },
};

// The seam between reading a command's options and running it (the GitHub CLI's `NewCmdX(f, runF)`).
// Every command's action hands the Runner two functions: `parse`, which turns what commander read
// into the command's typed options and makes every check of them that needs no I/O (no network, no
// file, no prompt, no Context: a usage error is found before anything starts), and `body`, which runs
// with those options and a Context. The Runner (program.ts) calls `parse`, then builds the Context and
// calls `body`; given `runInstead` (buildProgram, `run` in main.ts) it hands the options to that
// instead, which is how test/commands/ checks each command's flags and usage errors in-process.

/** What a command's `parse` may check options against besides its own flags: known without I/O. */
export interface Invocation {
  /** From the command line and the environment only: the config file is read once the command runs. */
  settings: Settings;
  /** `--json id,state`: the fields named. */
  fields: string[] | undefined;
  /** stdout is a terminal. */
  stdoutIsTTY: boolean;
}

/** Runs a command: `parse` first, then `body` with a freshly built Context, which it always disposes. */
export type Runner = <O>(
  command: Command,
  parse: (invocation: Invocation) => O,
  body: (context: Context, options: O) => Promise<void>,
) => Promise<void>;

/** What runs in place of a command's body: the command (`webhook listen`) and the options its `parse` returned. */
export type RunInstead = (command: string, options: unknown) => Promise<void> | void;

/** What every command gets: resolved settings, the output service and a lazily built API client. */
export interface Context {
  settings: Settings;
  out: Output;
  io: Io;
  /** Aborted on Ctrl-C. */
  signal: AbortSignal;
  clock: Clock;
  prompt: Prompter;
  factory: Factory;
  /** The organization, or a usage error saying how to give one. */
  org(): string;
  api(): Promise<ApiClient>;
  /** With --sandbox: repositories of its organization that export cleanly (what a demo exports by default). */
  sandboxRepositories?: string[];
  /** Registers cleanup that runs when the command ends, whatever the outcome. */
  defer(cleanup: () => Promise<void> | void): void;
  /** Runs the registered cleanups, last first. */
  dispose(): Promise<void>;
}

const SAFER_WAY: Record<string, string> = {
  token: 'SVC_TOKEN or `svc-migrate auth login`',
  secret: 'SVC_WEBHOOK_SECRET or the prompt (`--secret` with no value)',
};

/**
 * @param secretFlags secret-carrying flags given with a value on the command line: on a terminal,
 * the user is told once that other local users can read them in `ps`.
 */
export async function createContext(
  flags: GlobalFlags,
  io: Io,
  signal: AbortSignal,
  secretFlags: readonly string[] = [],
  factory: Factory = defaultFactory,
): Promise<Context> {
  let ignored: string | undefined;
  const stored = readStoredSettings(configDirectory(io.env), (reason, hint) => {
    ignored = `ignoring the stored settings: ${reason}; ${hint}`;
  });
  let settings = resolveSettings(flags, io.env, stored, { stdinIsTty: Boolean(io.stdin.isTTY) });
  const out = new Output({
    json: settings.json,
    fields: flags.jsonFields?.split(','),
    quiet: settings.quiet,
    color: settings.color,
    stdout: io.stdout,
    stderr: io.stderr,
  });
  if (ignored) out.warn(ignored);
  if (io.stderr.isTTY) {
    for (const flag of secretFlags) {
      out.warn(`--${flag} on the command line is visible to other users of this machine (ps); ${SAFER_WAY[flag] ?? 'the environment'} keeps it private`);
    }
  }
  const cleanups: Array<() => Promise<void> | void> = [];
  let client: Promise<ApiClient> | undefined;
  let sandboxRepositories: string[] | undefined;
  if (settings.sandbox) ({ settings, repositories: sandboxRepositories } = await useSandbox(settings, out, cleanups, factory));

  const context: Context = {
    settings,
    out,
    io,
    signal,
    clock: factory.clock,
    prompt: factory.prompter(settings.interactive, signal, settings.color),
    factory,
    ...(sandboxRepositories ? { sandboxRepositories } : {}),
    org() {
      const org = settings.org.value;
      if (!org) {
        throw new UsageError('no organization given', {
          hint: 'pass --org <org>, set SVC_ORG, or run `svc-migrate config set org <org>`',
        });
      }
      return org;
    },
    api() {
      client ??= buildClient(context, cleanups);
      return client;
    },
    defer(cleanup) {
      cleanups.push(cleanup);
    },
    async dispose() {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    },
  };
  return context;
}

/** `--sandbox`: start the emulator in-process and point the client at it, no token needed. */
async function useSandbox(
  settings: Settings,
  out: Output,
  cleanups: Array<() => Promise<void> | void>,
  factory: Factory,
): Promise<{ settings: Settings; repositories: string[] }> {
  // Over HTTPS, as a service is reached: the client trusts the authority the sandbox made.
  const sandbox = await factory.sandbox({ exportSeconds: 2, tls: true });
  cleanups.push(() => sandbox.close());
  const org = settings.org.value ?? sandbox.org;
  out.info(`using the in-process sandbox at ${sandbox.baseUrl} (organization ${org})`);
  const seeded = sandbox.store.organization(org)?.repositories ?? [];
  const repositories = seeded.filter((repo) => !/fail/i.test(repo.name) && !repo.archived).slice(0, 3).map((repo) => repo.name);
  return {
    settings: {
      ...settings,
      baseUrl: { value: sandbox.baseUrl, source: 'sandbox' },
      token: { value: sandbox.ownerToken, source: 'sandbox' },
      caFile: { value: sandbox.ca?.file, source: 'sandbox' },
      org: settings.org.value ? settings.org : { value: org, source: 'sandbox' },
    },
    repositories,
  };
}

/** How every API client of a run is built: the user's settings, proxy, limits and the run's hooks. */
export function clientOptions(context: Context, baseUrl: string, token: string | undefined): ClientOptions {
  const { settings, out } = context;
  return {
    baseUrl,
    token,
    apiVersion: settings.apiVersion.value,
    userAgent: USER_AGENT,
    proxy: settings.proxy,
    maxRateLimitWaitMs: settings.maxRateLimitWaitMs,
    insecure: settings.insecure,
    trust: extraTrust(settings),
    signal: context.signal,
    clock: context.clock,
    hooks: {
      onTrace: settings.debug ? (line) => out.trace(line) : undefined,
      // A refused connection or a 503 is retried for seconds: say so rather than sit silent.
      onRetry: (retry) =>
        out.info(`retrying ${retry.method} ${retry.url} in ${(retry.delayMs / 1000).toFixed(1)} s (${retry.reason}; attempt ${retry.attempt})…`),
      onRateLimitWait: (wait) =>
        out.warn(
          // In UTC, ISO 8601, as every other time the tool prints (never the machine's local 12-hour clock).
          `rate limited (${wait.kind}); waiting ${Math.ceil(wait.ms / 1000)} s until ${new Date(wait.until).toISOString().replace(/\.\d{3}Z$/, 'Z')} before retrying`,
        ),
    },
  };
}

/** Where the CA file came from, as the user named it. */
const CA_FILE_ROLE: Record<Source, string> = {
  flag: '--ca-file',
  env: 'SVC_CA_FILE',
  config: 'the stored caFile',
  sandbox: 'the sandbox\'s CA',
  default: '--ca-file',
};

/** The authorities to trust beyond Node's own, read and checked before any request (exit 2 if the file is not one). */
export function extraTrust(settings: Settings): ExtraTrust | undefined {
  const { value, source } = settings.caFile;
  if (value === undefined) return undefined;
  return { certificates: readCaFile(value, CA_FILE_ROLE[source]), nodeExtraCaCerts: settings.nodeExtraCaCerts };
}

async function buildClient(context: Context, cleanups: Array<() => Promise<void> | void>): Promise<ApiClient> {
  const { settings, out } = context;
  const baseUrl = settings.baseUrl.value;
  if (!baseUrl) {
    throw new UsageError('no API base URL given', {
      hint: 'pass --base-url <url>, set SVC_BASE_URL, run `svc-migrate config set baseUrl <url>`, or try --sandbox',
    });
  }
  const { isClearTextRemote } = await import('./api/transport-policy.js');
  const client = await context.factory.apiClient(clientOptions(context, baseUrl, settings.token.value));
  cleanups.push(() => client.close());
  if (settings.insecure && isClearTextRemote(client.baseUrl) && settings.token.value) {
    out.warn(`--insecure: the token travels in clear text to ${client.baseUrl.origin}`);
  }
  // curl's --insecure turns certificate checks off; this one never does: say so where it does nothing.
  if (settings.insecure && client.baseUrl.protocol === 'https:') {
    out.warn('--insecure changes nothing over HTTPS: certificates are always checked (--ca-file adds an authority to trust)');
  }
  return client;
}
