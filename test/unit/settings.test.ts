import { describe, expect, it } from 'vitest';
import { parseDuration, resolveSettings } from '../../src/settings/resolve.js';

const tty = { stdinIsTty: true };

describe('resolveSettings: flag > env > config > default', () => {
  it('takes each value from the strongest source that has it', () => {
    const settings = resolveSettings(
      { org: 'flag-org' },
      { SVC_ORG: 'env-org', SVC_BASE_URL: 'https://env.example.com', SVC_TOKEN: 'env-token' },
      { org: 'stored-org', baseUrl: 'https://stored.example.com', token: 'stored-token', apiVersion: '2025-01-01' },
      tty,
    );
    expect(settings.org).toEqual({ value: 'flag-org', source: 'flag' });
    expect(settings.baseUrl).toEqual({ value: 'https://env.example.com', source: 'env' });
    expect(settings.token).toEqual({ value: 'env-token', source: 'env' });
    expect(settings.apiVersion).toEqual({ value: '2025-01-01', source: 'config' });
  });

  it('defaults the API version to 2026-03-10 and treats empty values as unset', () => {
    const settings = resolveSettings({}, { SVC_ORG: '' }, {}, tty);
    expect(settings.apiVersion).toEqual({ value: '2026-03-10', source: 'default' });
    expect(settings.org.value).toBeUndefined();
  });

  it('never prompts in CI, without a TTY or with --no-input', () => {
    expect(resolveSettings({}, {}, {}, tty).interactive).toBe(true);
    expect(resolveSettings({}, { CI: 'true' }, {}, tty).interactive).toBe(false);
    expect(resolveSettings({}, {}, {}, { stdinIsTty: false }).interactive).toBe(false);
    expect(resolveSettings({ input: false }, {}, {}, tty).interactive).toBe(false);
  });

  it('reads proxies, colour and debug from the environment', () => {
    const settings = resolveSettings(
      {},
      { HTTPS_PROXY: 'http://proxy:3128', NO_PROXY: 'localhost', NO_COLOR: '1', SVC_DEBUG: '1' },
      {},
      tty,
    );
    expect(settings.proxy).toEqual({ httpsProxy: 'http://proxy:3128', noProxy: 'localhost' });
    expect(settings.color).toBe(false);
    expect(settings.debug).toBe(true);
    expect(resolveSettings({}, { FORCE_COLOR: '1' }, {}, tty).color).toBe(true);
  });
});

describe('parseDuration', () => {
  it('reads the forms users type', () => {
    expect(parseDuration('90m', '--timeout')).toBe(90 * 60_000);
    expect(parseDuration('2h', '--timeout')).toBe(7_200_000);
    expect(parseDuration('1h30m', '--timeout')).toBe(5_400_000);
    expect(parseDuration('45', '--timeout')).toBe(45_000);
    expect(() => parseDuration('soon', '--timeout')).toThrow(/--timeout takes a duration/);
  });
});
