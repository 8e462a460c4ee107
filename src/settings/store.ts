import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** What `auth login` and `config set` keep between runs. */
export interface StoredSettings {
  org?: string;
  baseUrl?: string;
  apiVersion?: string;
  token?: string;
}

export type ConfigKey = 'org' | 'baseUrl' | 'apiVersion';
export const CONFIG_KEYS: readonly ConfigKey[] = ['org', 'baseUrl', 'apiVersion'];
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
 * Reads the settings file without loading conf. Every command reads it; only `auth` and `config`
 * write it. conf pulls in when-exit, which re-raises SIGINT and would cut our Ctrl-C handling short.
 */
export function readStoredSettings(dir: string): StoredSettings {
  let text: string;
  try {
    text = readFileSync(join(dir, CONFIG_FILE), 'utf8');
  } catch {
    return {};
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as StoredSettings) : {};
  } catch {
    return {};
  }
}

export interface SettingsStore {
  readonly path: string;
  read(): StoredSettings;
  set<K extends keyof StoredSettings>(key: K, value: StoredSettings[K]): void;
  delete(key: keyof StoredSettings): void;
}

/** Opens the settings file for writing with conf. It holds a token: 0600 in a 0700 directory. */
export async function openSettingsStore(dir: string): Promise<SettingsStore> {
  const { default: Conf } = await import('conf');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const conf = new Conf<StoredSettings>({
    projectName: 'svc-migrate',
    cwd: dir,
    configName: CONFIG_FILE.replace(/\.json$/, ''),
    configFileMode: 0o600,
    accessPropertiesByDotNotation: false,
  });
  return {
    path: conf.path,
    read: () => ({ ...conf.store }),
    set(key, value) {
      conf.set(key, value);
      chmodSync(conf.path, 0o600);
    },
    delete: (key) => conf.delete(key),
  };
}
