import { API_VERSION } from '../api/types.js';
import { UsageError } from '../errors.js';
import { configDirectory, type StoredSettings } from './store.js';

/** Global options as commander parsed them (docs/cli.md "Global options"). */
export interface GlobalFlags {
  org?: string;
  baseUrl?: string;
  token?: string;
  apiVersion?: string;
  sandbox?: boolean;
  json?: boolean;
  /** `--json id,state` (main.ts turns it into this hidden flag for the commands that take fields). */
  jsonFields?: string;
  color?: boolean;
  quiet?: boolean;
  debug?: boolean;
  input?: boolean;
  maxWait?: string;
  insecure?: boolean;
  caFile?: string;
}

export type Env = Record<string, string | undefined>;
export type Source = 'flag' | 'env' | 'config' | 'sandbox' | 'default';

interface Resolved<T> {
  value: T;
  source: Source;
}

/** Everything a run needs to know about where and how to talk, resolved once. */
export interface Settings {
  org: Resolved<string | undefined>;
  baseUrl: Resolved<string | undefined>;
  token: Resolved<string | undefined>;
  apiVersion: Resolved<string>;
  sandbox: boolean;
  json: boolean;
  quiet: boolean;
  debug: boolean;
  /** undefined: let the terminal decide; true/false: forced. */
  color: boolean | undefined;
  /** Prompts are allowed (TTY on stdin, not CI, no --no-input). */
  interactive: boolean;
  proxy: { httpProxy?: string; httpsProxy?: string; noProxy?: string };
  maxRateLimitWaitMs: number | undefined;
  /** `--insecure`: the token may travel over plain HTTP beyond loopback. */
  insecure: boolean;
  /** A file of certificate authorities trusted beyond Node's own (`--ca-file`, SVC_CA_FILE, caFile; with --sandbox, its own). */
  caFile: Resolved<string | undefined>;
  /** NODE_EXTRA_CA_CERTS: what Node added to its authorities at start-up (api/trust.ts needs its path on Node 20). */
  nodeExtraCaCerts: string | undefined;
  /** SVC_WEBHOOK_SECRET (an empty one is none): the webhook commands add it to their `--secret`. */
  webhookSecret: string | undefined;
  /** Where the config file lives (SVC_CONFIG_DIR, or the platform's place). */
  configDir: string;
}

function pick<T>(flag: T | undefined, env: T | undefined, stored: T | undefined): Resolved<T | undefined> {
  if (flag !== undefined && flag !== '') return { value: flag, source: 'flag' };
  if (env !== undefined && env !== '') return { value: env, source: 'env' };
  if (stored !== undefined && stored !== '') return { value: stored, source: 'config' };
  return { value: undefined, source: 'default' };
}

const truthy = (value: string | undefined) => value !== undefined && value !== '' && value !== '0' && value !== 'false';

/** Precedence of docs/cli.md: flag > environment > stored config > default. Pure given its inputs and the home directory. */
export function resolveSettings(
  flags: GlobalFlags,
  env: Env,
  stored: StoredSettings,
  terminal: { stdinIsTty: boolean },
): Settings {
  const apiVersion = pick(flags.apiVersion, env.SVC_API_VERSION, stored.apiVersion);
  const color = colorChoice(flags.color, env);

  return {
    org: pick(flags.org, env.SVC_ORG, stored.org),
    baseUrl: pick(flags.baseUrl, env.SVC_BASE_URL, stored.baseUrl),
    token: pick(flags.token, env.SVC_TOKEN, stored.token),
    apiVersion:
      apiVersion.value === undefined ? { value: API_VERSION, source: 'default' } : (apiVersion as Resolved<string>),
    sandbox: Boolean(flags.sandbox) || truthy(env.SVC_SANDBOX),
    json: Boolean(flags.json),
    quiet: Boolean(flags.quiet),
    debug: Boolean(flags.debug) || truthy(env.SVC_DEBUG),
    color,
    interactive: flags.input !== false && terminal.stdinIsTty && !truthy(env.CI),
    proxy: {
      ...optional('httpProxy', env.HTTP_PROXY ?? env.http_proxy),
      ...optional('httpsProxy', env.HTTPS_PROXY ?? env.https_proxy),
      ...optional('noProxy', env.NO_PROXY ?? env.no_proxy),
    },
    maxRateLimitWaitMs: flags.maxWait === undefined ? undefined : parseDuration(flags.maxWait, '--max-wait'),
    insecure: Boolean(flags.insecure),
    caFile: pick(flags.caFile, env.SVC_CA_FILE, stored.caFile),
    nodeExtraCaCerts: env.NODE_EXTRA_CA_CERTS || undefined,
    webhookSecret: env.SVC_WEBHOOK_SECRET || undefined,
    configDir: configDirectory(env),
  };
}

/** --no-color and NO_COLOR turn colour off, FORCE_COLOR on; otherwise the terminal decides (chalk's conventions). */
export function colorChoice(flag: boolean | undefined, env: Env): boolean | undefined {
  if (flag === false || (env.NO_COLOR !== undefined && env.NO_COLOR !== '')) return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== '') return force !== '0' && force !== 'false';
  return undefined;
}

function optional<K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> {
  return value ? ({ [key]: value } as Record<K, string>) : {};
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `90m`, `2h`, `30s`, `1h30m`, or a bare number of seconds. */
export function parseDuration(text: string, flag: string): number {
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000;
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== trimmed) {
    throw new UsageError(`${flag} takes a duration such as 30s, 5m, 90m or 2h, not "${text}"`);
  }
  return parts.reduce((sum, [, amount, unit]) => sum + Number(amount) * (UNIT_MS[unit ?? 's'] ?? 1000), 0);
}
