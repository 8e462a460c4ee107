import { chmodSync, mkdirSync } from 'node:fs';
import { PACKAGE_NAME } from '../version.js';

/** What `auth login` and `config set` keep between runs. */
export interface StoredSettings {
  org?: string;
  baseUrl?: string;
  apiVersion?: string;
  token?: string;
}

export type ConfigKey = 'org' | 'baseUrl' | 'apiVersion';
export const CONFIG_KEYS: readonly ConfigKey[] = ['org', 'baseUrl', 'apiVersion'];

export interface SettingsStore {
  readonly path: string;
  read(): StoredSettings;
  set<K extends keyof StoredSettings>(key: K, value: StoredSettings[K]): void;
  delete(key: keyof StoredSettings): void;
}

/**
 * Opens the settings file (conf, loaded lazily so `--help` stays fast). The file holds a token,
 * so it is created 0600 in a 0700 directory.
 */
export async function openSettingsStore(configDir?: string): Promise<SettingsStore> {
  const { default: Conf } = await import('conf');
  if (configDir) {
    mkdirSync(configDir, { recursive: true, mode: 0o700 });
  }
  const conf = new Conf<StoredSettings>({
    projectName: PACKAGE_NAME,
    projectSuffix: '',
    ...(configDir ? { cwd: configDir } : {}),
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
