import { chmodSync, lstatSync, readFileSync, type Stats, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { makeDirectory } from '../support/make-directory.js';
import { fileError, isSystemError } from '../support/system-errors.js';
import { readCaFile } from './ca-file.js';

/** What `auth login` and `config set` keep between runs. */
export interface StoredSettings {
  org?: string;
  baseUrl?: string;
  apiVersion?: string;
  /** An absolute path: a run from another directory finds the same file. */
  caFile?: string;
  token?: string;
}

export type ConfigKey = 'org' | 'baseUrl' | 'apiVersion' | 'caFile';
export const CONFIG_KEYS: readonly ConfigKey[] = ['org', 'baseUrl', 'apiVersion', 'caFile'];

/** A value for a config key, or a usage error saying what is wrong with it. */
export function checkedConfigValue(key: ConfigKey, value: string): string {
  if (key === 'baseUrl') {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new UsageError(`baseUrl must be an absolute URL such as https://api.example.com, not "${value}"`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UsageError(`baseUrl must be http(s), not ${url.protocol}`);
    return value.replace(/\/+$/, '');
  }
  if (key === 'apiVersion' && !/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    throw new UsageError(`apiVersion is a date such as 2026-03-10, not "${value}"`);
  }
  if (key === 'org' && !/^[A-Za-z0-9][A-Za-z0-9-]*$/.test(value)) throw new UsageError(`"${value}" is not an organization name`);
  if (key === 'caFile') {
    // Checked now as every run would check it, and kept absolute.
    readCaFile(value, 'caFile');
    return resolve(value);
  }
  return value;
}

const CONFIG_FILE = 'config.json';

/** `SVC_CONFIG_DIR`, else the platform's config directory (what conf would pick), for `svc-migrate`. */
export function configDirectory(env: Record<string, string | undefined>, platform = process.platform): string {
  if (env.SVC_CONFIG_DIR) return env.SVC_CONFIG_DIR;
  const home = env.HOME || homedir();
  if (platform === 'win32') return join(env.APPDATA || join(home, 'AppData', 'Roaming'), 'svc-migrate', 'Config');
  if (platform === 'darwin') return join(home, 'Library', 'Preferences', 'svc-migrate');
  return join(env.XDG_CONFIG_HOME || join(home, '.config'), 'svc-migrate');
}

/**
 * Why the settings in `dir` cannot be trusted with a token, or undefined when they can. Like ssh
 * with ~/.ssh: another user who owns or can write the directory or the file could read the token we
 * store there, or plant a base URL that sends our token to them. A link in place of the file is
 * refused too, since writing through it would land in someone else's file.
 */
function configProblem(dir: string, uid: number | undefined = process.getuid?.()): string | undefined {
  if (uid === undefined) return undefined; // Windows: ownership is a matter of ACLs, not modes.
  const file = join(dir, CONFIG_FILE);
  const directory = statIfExists(() => statSync(dir));
  if (directory) {
    if (!directory.isDirectory()) return `${dir} is not a directory`;
    const problem = ownershipProblem(directory, uid);
    if (problem) return `the config directory ${dir} ${problem}`;
  }
  const stats = statIfExists(() => lstatSync(file));
  if (stats) {
    if (stats.isSymbolicLink()) return `${file} is a symbolic link`;
    if (!stats.isFile()) return `${file} is not a regular file`;
    const problem = ownershipProblem(stats, uid);
    if (problem) return `${file} ${problem}`;
  }
  return undefined;
}

function ownershipProblem(stats: Stats, uid: number): string | undefined {
  if (stats.uid !== uid) return `is owned by another user (uid ${stats.uid}, you are ${uid})`;
  if (stats.mode & 0o022) return `is writable by other users (mode ${(stats.mode & 0o777).toString(8).padStart(4, '0')})`;
  return undefined;
}

function statIfExists(stat: () => Stats): Stats | undefined {
  try {
    return stat();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function configHint(dir: string): string {
  return `make ${dir} and the config.json in it yours and private (chown, then chmod 700 ${dir} and chmod 600 ${join(dir, CONFIG_FILE)}), remove them, or point SVC_CONFIG_DIR at a directory of your own`;
}

/**
 * What is wrong with the text of a settings file, or undefined when it holds settings: a JSON object
 * whose known keys are strings. A file damaged by hand or by a crash elsewhere is the user's to look
 * at: read as empty, it would look as if nothing was stored; written over, it would be lost.
 */
function contentProblem(text: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    return `it is not valid JSON (${error.message})`;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return `it holds ${Array.isArray(parsed) ? 'a list' : parsed === null ? 'null' : `a ${typeof parsed}`}, not an object of settings`;
  }
  const wrong = [...CONFIG_KEYS, 'token'].filter((key) => key in parsed && typeof (parsed as Record<string, unknown>)[key] !== 'string');
  return wrong.length > 0 ? `${wrong.join(' and ')} ${wrong.length === 1 ? 'is not a string' : 'are not strings'}` : undefined;
}

function damagedHint(file: string): string {
  return `fix it, or remove it (rm '${file}'; it holds the token, if any) and store the settings again with \`svc-migrate config set\` and \`svc-migrate auth login\``;
}

/** The settings file's text, or undefined when there is none. */
function readConfigText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if (isSystemError(error) && error.code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Reads the settings file without loading conf. Every command reads it; only `auth` and `config`
 * write it. conf pulls in when-exit, which re-raises SIGINT and would cut our Ctrl-C handling short.
 * A file that cannot be trusted (configProblem), or that holds no settings (contentProblem), is
 * ignored, and `onIgnored` told why, as ssh ignores a key file others can write: a command that
 * needs no setting still runs.
 */
export function readStoredSettings(dir: string, onIgnored?: (reason: string, hint: string) => void): StoredSettings {
  let problem: string | undefined;
  try {
    problem = configProblem(dir);
  } catch {
    return {};
  }
  if (problem) {
    onIgnored?.(problem, configHint(dir));
    return {};
  }
  const file = join(dir, CONFIG_FILE);
  let text: string | undefined;
  try {
    text = readConfigText(file);
  } catch {
    return {};
  }
  if (text === undefined) return {};
  const damage = contentProblem(text);
  if (damage) {
    onIgnored?.(`${file}: ${damage}`, damagedHint(file));
    return {};
  }
  return JSON.parse(text) as StoredSettings;
}

export interface SettingsStore {
  readonly path: string;
  read(): StoredSettings;
  set<K extends keyof StoredSettings>(key: K, value: StoredSettings[K]): void;
  delete(key: keyof StoredSettings): void;
}

/**
 * Opens the settings file for writing with conf. It holds a token: 0600 in a 0700 directory that is
 * ours alone (checked first), so conf's replace-by-rename keeps the file ours.
 */
export async function openSettingsStore(dir: string): Promise<SettingsStore> {
  const file = join(dir, CONFIG_FILE);
  // Every failure names the file and says what to do: an unwritable directory is not a bug.
  const guard = <T>(action: string, path: string, work: () => T): T => {
    try {
      return work();
    } catch (error) {
      if (isSystemError(error)) throw fileError(error, { action, path, role: 'the settings file; SVC_CONFIG_DIR moves it' });
      throw error;
    }
  };
  guard('create the directory', dir, () => makeDirectory(dir));
  const problem = guard('check', dir, () => configProblem(dir));
  if (problem) throw new UsageError(`refusing to store settings: ${problem}`, { hint: configHint(dir) });
  const text = guard('read', file, () => readConfigText(file));
  const damage = text === undefined ? undefined : contentProblem(text);
  // conf would read such a file as empty, or as an object made of it, and write that over it.
  if (damage) throw new UsageError(`refusing to change ${file}: ${damage}; nothing was changed`, { hint: damagedHint(file) });
  const { default: Conf } = await import('conf');
  const conf = guard('read', file, () =>
    new Conf<StoredSettings>({
      projectName: 'svc-migrate',
      cwd: dir,
      configName: CONFIG_FILE.replace(/\.json$/, ''),
      configFileMode: 0o600,
      accessPropertiesByDotNotation: false,
    }),
  );
  return {
    path: conf.path,
    read: () => ({ ...conf.store }),
    set(key, value) {
      guard('write', conf.path, () => {
        conf.set(key, value);
        chmodSync(conf.path, 0o600);
      });
    },
    delete: (key) => guard('write', conf.path, () => conf.delete(key)),
  };
}
