import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';

const configDir = () => join(mkdtempSync(join(tmpdir(), 'svc-auth-')), 'config');

describe('config', () => {
  it('sets, gets, lists, unsets and locates settings', async () => {
    const env = { SVC_CONFIG_DIR: configDir() };
    expect((await runCli(['config', 'set', 'org', 'acme'], { env })).code).toBe(0);
    expect((await runCli(['config', 'set', 'baseUrl', 'https://api.example.com/'], { env })).code).toBe(0);
    expect((await runCli(['config', 'get', 'org'], { env })).stdout.trim()).toBe('acme');
    expect(JSON.parse((await runCli(['config', 'list', '--json'], { env })).stdout)).toEqual({ org: 'acme', base_url: 'https://api.example.com' });
    expect((await runCli(['config', 'unset', 'org'], { env })).code).toBe(0);
    expect((await runCli(['config', 'get', 'org'], { env })).code).toBe(2);
    expect((await runCli(['config', 'path'], { env })).stdout.trim()).toBe(join(env.SVC_CONFIG_DIR, 'config.json'));
  });

  it('leaves a damaged config file as it is and says what to do, instead of failing as a bug', async () => {
    const dir = configDir();
    expect((await runCli(['config', 'set', 'org', 'acme'], { env: { SVC_CONFIG_DIR: dir } })).code).toBe(0);
    writeFileSync(join(dir, 'config.json'), '{not json');
    const result = await runCli(['config', 'set', 'org', 'other'], { env: { SVC_CONFIG_DIR: dir } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/refusing to change .*config\.json: it is not valid JSON .*; nothing was changed/);
    expect(result.stderr).not.toMatch(/bug|unexpected/);
    expect(readFileSync(join(dir, 'config.json'), 'utf8')).toBe('{not json');
  });

  it.each([
    ['{not json', /it is not valid JSON/],
    ['[1, 2]', /it holds a list, not an object of settings/],
    ['{"org": 5}', /org is not a string/],
  ])('says once that a damaged config file (%s) is ignored, and runs a command that needs no setting', async (text, why) => {
    const dir = configDir();
    expect((await runCli(['config', 'set', 'org', 'acme'], { env: { SVC_CONFIG_DIR: dir } })).code).toBe(0);
    const file = join(dir, 'config.json');
    writeFileSync(file, text);
    const result = await runCli(['webhook', 'events', '--json'], { env: { SVC_CONFIG_DIR: dir } });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toBeInstanceOf(Array);
    const warnings = result.stderr.split('\n').filter(Boolean);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`ignoring the stored settings: ${file}: `);
    expect(warnings[0]).toMatch(why);
    expect(warnings[0]).toMatch(/fix it, or remove it \(rm .*\) and store the settings again with `svc-migrate config set`/);
    // A command that writes refuses, and leaves the file for its owner to look at.
    const written = await runCli(['config', 'set', 'org', 'other'], { env: { SVC_CONFIG_DIR: dir } });
    expect(written.code).toBe(2);
    expect(written.stderr).toMatch(/error: refusing to change .*config\.json: .*nothing was changed/);
    expect(readFileSync(file, 'utf8')).toBe(text);
  });
});

describe('auth', () => {
  it('logs in from stdin after checking the token, stores it 0600, reports its source, and logs out', async () => {
    const { sandbox, env } = await testSandbox();
    const dir = configDir();
    const base = { SVC_CONFIG_DIR: dir, SVC_BASE_URL: env.SVC_BASE_URL, SVC_ORG: env.SVC_ORG, SVC_CA_FILE: env.SVC_CA_FILE };
    const login = await runCli(['auth', 'login', '--with-token'], { env: base, stdin: `${sandbox.ownerToken}\n` });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stderr).toMatch(/owner access to octo-org/);
    const file = join(dir, 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8')).token).toBe(sandbox.ownerToken);

    const stored = await runCli(['auth', 'status', '--json'], { env: base });
    expect(JSON.parse(stored.stdout)).toMatchObject({ logged_in: true, source: 'config', token: 'svc_…' });
    const fromEnv = await runCli(['auth', 'status'], { env: { ...base, SVC_TOKEN: 'env_token_123456' } });
    expect(fromEnv.stdout).toMatch(/from SVC_TOKEN/);
    for (const output of [login, stored, fromEnv]) {
      expect(output.stdout + output.stderr).not.toContain(sandbox.ownerToken);
      expect(output.stdout + output.stderr).not.toContain('env_token_123456');
    }
    expect((await runCli(['list', '--json'], { env: base })).code).toBe(0);

    expect((await runCli(['auth', 'logout'], { env: base })).code).toBe(0);
    const after = await runCli(['auth', 'status'], { env: base });
    expect(after.code).toBe(3);
    expect(after.stdout).toMatch(/no token/);
  });

  it.each([
    [{ SVC_ORG: 'acme' }, /no API base URL to check the token against/],
    [{ SVC_BASE_URL: 'https://api.example.com' }, /no organization to check the token against/],
  ])('says what is missing (%o) before it asks for the token', async (given, message) => {
    // stdin stays open: a login that waited for the token first would never end.
    const result = await runCli(['auth', 'login', '--with-token'], { env: { SVC_CONFIG_DIR: configDir(), ...given }, openStdin: true });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });

  it.each([
    ['svc_sandbox_revoked', /revoked/],
    ['svcfg_sandbox_fine_grained', /classic token/],
  ])('refuses to store %s, saying what is wrong', async (token, message) => {
    const { env } = await testSandbox();
    const dir = configDir();
    const result = await runCli(['auth', 'login', '--with-token'], {
      env: { SVC_CONFIG_DIR: dir, SVC_BASE_URL: env.SVC_BASE_URL, SVC_ORG: env.SVC_ORG, SVC_CA_FILE: env.SVC_CA_FILE },
      stdin: token,
    });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(message);
    expect(() => statSync(join(dir, 'config.json'))).toThrow();
  });
});

describe('colour and quiet', () => {
  it('colours errors only when asked for, and --quiet keeps errors', async () => {
    const plain = await runCli(['status', '1'], { env: { NO_COLOR: '', FORCE_COLOR: '' } });
    expect(plain.stderr).not.toContain('\u001b[');
    const forced = await runCli(['status', '1'], { env: { NO_COLOR: '', FORCE_COLOR: '1' } });
    expect(forced.stderr).toContain('\u001b[31merror:');
    const noColor = await runCli(['status', '1', '--no-color'], { env: { NO_COLOR: '', FORCE_COLOR: '1' } });
    expect(noColor.stderr).not.toContain('\u001b[');
    const quiet = await runCli(['list', '--sandbox', '--quiet', '--json']);
    expect(quiet.stderr).toBe('');
    expect(JSON.parse(quiet.stdout).length).toBeGreaterThan(0);
  });
});
