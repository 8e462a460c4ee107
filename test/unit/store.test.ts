import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configDirectory, openSettingsStore, readStoredSettings } from '../../src/settings/store.js';

describe('settings store', () => {
  it('writes the token file 0600 in a 0700 directory and reads it back without conf', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'svc-store-')), 'nested');
    const store = await openSettingsStore(dir);
    store.set('token', 'ghp_stored');
    store.set('org', 'acme');
    expect(statSync(store.path).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readStoredSettings(dir)).toEqual({ token: 'ghp_stored', org: 'acme' });
    store.delete('token');
    expect(readStoredSettings(dir)).toEqual({ org: 'acme' });
  });

  it('finds the config directory like conf does, SVC_CONFIG_DIR first', () => {
    expect(configDirectory({ SVC_CONFIG_DIR: '/x' })).toBe('/x');
    expect(configDirectory({ HOME: '/home/a' }, 'linux')).toBe('/home/a/.config/svc-migrate');
    expect(configDirectory({ HOME: '/home/a', XDG_CONFIG_HOME: '/cfg' }, 'linux')).toBe('/cfg/svc-migrate');
    expect(configDirectory({ HOME: '/Users/a' }, 'darwin')).toBe('/Users/a/Library/Preferences/svc-migrate');
  });

  it('treats a missing or corrupt file as empty', () => {
    expect(readStoredSettings(join(tmpdir(), 'does-not-exist-svc'))).toEqual({});
  });
});
