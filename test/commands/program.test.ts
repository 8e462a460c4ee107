import { describe, expect, it } from 'vitest';
import { jsonRefusal, NO_PROMPT, options, refused } from '../helpers/command-options.js';
import { parseCli } from '../helpers/run-cli.js';

// The seam itself (src/context.ts), the global options, and the options of the commands that work
// on this machine: archive, auth, config, completion and sandbox. Nothing is read, stored or started.

describe('the seam', () => {
  it('hands each command\'s options, by its path below the program, in place of running it', async () => {
    expect(await parseCli(['list'])).toMatchObject({ code: 0, command: 'list', stdout: '', stderr: '' });
    expect(await parseCli(['webhook', 'listen'])).toMatchObject({ code: 0, command: 'webhook listen' });
    expect(await parseCli(['config', 'path'])).toMatchObject({ code: 0, command: 'config path' });
  });

  it('builds nothing before the body: --sandbox starts no emulator, and the prompter is never made', async () => {
    // parseCli's factory throws at any use: a Context, a client, a sandbox or a prompt would fail the run.
    expect(await parseCli(['export', 'widgets', '--sandbox', '--yes', '--lock'])).toMatchObject({ code: 0, command: 'export' });
    expect(await parseCli(['delete-archive', '1'], { stdinIsTTY: true })).toMatchObject({ code: 0, command: 'delete-archive' });
  });

  it('a usage error of the options step is as any: exit 2 with error and hint lines, or one JSON line with --json', async () => {
    await refused(['delete-archive', '1'], 'confirmation is required', `pass --yes ${NO_PROMPT}`);
    expect(await jsonRefusal(['delete-archive', '1', '--json'])).toBe('confirmation is required');
  });
});

describe('global options', () => {
  it('--max-wait takes a duration, checked before the command\'s own options', async () => {
    expect((await parseCli(['list', '--max-wait', '90s'])).code).toBe(0);
    await refused(['status', '--max-wait', '10 minutes'], '--max-wait takes a duration such as 30s, 5m, 90m or 2h, not "10 minutes"');
  });

  it('the parser\'s refusals read as error and hint, the hint naming the command\'s help; one JSON line with --json', async () => {
    await refused(['status', 'abc'], '<migration-id>: a migration id is a positive integer, not "abc"', 'see `svc-migrate status --help`');
    await refused(['list', 'extra'], 'too many arguments: svc-migrate list takes none, 1 given', 'see `svc-migrate list --help`');
    await refused(['download', '12', 'more'], 'too many arguments: svc-migrate download takes at most 1, 2 given', 'see `svc-migrate download --help`');
    await refused(['export', '--output-dir', 'd', '--batch-size', 'x'], '--batch-size: expected a positive integer, not "x"', 'see `svc-migrate export --help`');
    await refused(['list', '--bogus'], 'unknown option \'--bogus\'', 'see `svc-migrate list --help`');
    await refused(['webhook', 'bogus'], 'unknown command \'bogus\'', 'see `svc-migrate webhook --help`');
    for (const args of [['status', 'abc'], ['list', 'extra'], ['list', '--bogus']]) {
      expect(await jsonRefusal([...args, '--json'])).not.toMatch(/command-argument|Expected \d|\(run with --help/);
    }
  });

  it('a misspelt command is refused with the nearest one; an unknown option too', async () => {
    await refused(['lsit'], 'unknown command \'lsit\'', 'did you mean list? see `svc-migrate --help`');
    await refused(['list', '--al'], 'unknown option \'--al\'', 'did you mean --all? see `svc-migrate list --help`');
  });
});

describe('archive', () => {
  it('verify: the git check on by default, its time a duration above 0, --migration an id', async () => {
    expect(await options(['archive', 'verify', 'a.tgz'])).toEqual({ file: 'a.tgz', gitCheck: true });
    expect(await options(['archive', 'verify', 'a.tgz', '--no-git-check'])).toEqual({ file: 'a.tgz', gitCheck: false });
    expect(await options(['archive', 'verify', 'a.tgz', '--git-check-time', '5m', '--migration', '4242'])).toEqual({
      file: 'a.tgz',
      gitCheck: true,
      gitTimeMs: 300_000,
      migration: 4242,
    });
    await refused(['archive', 'verify', 'a.tgz', '--git-check-time', '0'], '--git-check-time takes a duration above 0 (`--no-git-check` skips the check)');
    await refused(['archive', 'verify', 'a.tgz', '--git-check-time', 'long'], '--git-check-time takes a duration such as 30s, 5m, 90m or 2h, not "long"');
    await refused(['archive', 'verify', 'a.tgz', '--migration', 'latest'], /a migration id is a positive integer, not "latest"/);
    await refused(['archive', 'verify'], 'missing the <file> argument', 'see `svc-migrate archive verify --help`');
  });

  it('inspect: the file', async () => {
    expect(await options(['archive', 'inspect', 'a.tgz'])).toEqual({ file: 'a.tgz' });
    await refused(['archive', 'inspect'], 'missing the <file> argument');
  });
});

describe('auth', () => {
  it('login: --with-token, or a terminal to ask on', async () => {
    expect(await options(['auth', 'login', '--with-token'])).toEqual({ withToken: true });
    expect(await options(['auth', 'login'], { stdinIsTTY: true })).toEqual({ withToken: false });
    const hint = `pass --with-token (reads the token from stdin) ${NO_PROMPT}`;
    await refused(['auth', 'login'], 'a token is required', hint);
    await refused(['auth', 'login', '--no-input'], 'a token is required', hint, { stdinIsTTY: true });
  });

  it('login: --org and --base-url, which it stores, are checked as config set checks them', async () => {
    expect(await options(['auth', 'login', '--with-token', '--org', 'acme', '--base-url', 'https://api.example.com/'])).toEqual({
      withToken: true,
      baseUrl: 'https://api.example.com',
    });
    await refused(['auth', 'login', '--with-token', '--org', 'acme corp'], '"acme corp" is not an organization name');
    await refused(['auth', 'login', '--with-token', '--base-url', 'api.example.com'], 'baseUrl must be an absolute URL such as https://api.example.com, not "api.example.com"');
    await refused(['auth', 'login', '--with-token', '--org', 'octo-org', '--base-url', 'ftp://example.test'], 'baseUrl must be http(s), not ftp:');
    // From the environment they are not stored, so not checked as stored values.
    expect(await options(['auth', 'login', '--with-token'], { env: { SVC_ORG: 'acme corp' } })).toEqual({ withToken: true });
  });

  it('status and logout take nothing', async () => {
    expect(await options(['auth', 'status'])).toEqual({});
    expect(await options(['auth', 'logout'])).toEqual({});
  });
});

describe('config', () => {
  it('get, unset: one of the keys', async () => {
    expect(await options(['config', 'get', 'org'])).toEqual({ key: 'org' });
    expect(await options(['config', 'unset', 'caFile'])).toEqual({ key: 'caFile' });
    await refused(['config', 'get', 'token'], '<key> must be one of org, baseUrl, apiVersion, caFile, not "token"', 'see `svc-migrate config get --help`');
    await refused(['config', 'unset'], 'missing the <key> argument');
  });

  it('set: each value checked as it will be used; a CA file is read when the command runs', async () => {
    expect(await options(['config', 'set', 'org', 'acme'])).toEqual({ key: 'org', value: 'acme' });
    expect(await options(['config', 'set', 'baseUrl', 'https://api.example.com//'])).toEqual({ key: 'baseUrl', value: 'https://api.example.com' });
    expect(await options(['config', 'set', 'apiVersion', '2026-03-10'])).toEqual({ key: 'apiVersion', value: '2026-03-10' });
    expect(await options(['config', 'set', 'caFile', 'no-such-ca.pem'])).toEqual({ key: 'caFile', value: 'no-such-ca.pem' });
    await refused(['config', 'set', 'apiVersion', 'latest'], 'apiVersion is a date such as 2026-03-10, not "latest"');
    await refused(['config', 'set', 'baseUrl', 'ftp://example.com'], 'baseUrl must be http(s), not ftp:');
    await refused(['config', 'set', 'org', '--', '-acme'], '"-acme" is not an organization name');
    await refused(['config', 'set', 'token', 'x'], /<key> must be one of .*, not "token"/);
    await refused(['config', 'set', 'org'], 'missing the <value> argument');
  });

  it('list and path take nothing', async () => {
    expect(await options(['config', 'list'])).toEqual({});
    expect(await options(['config', 'path'])).toEqual({});
  });
});

describe('completion', () => {
  it('bash, zsh or fish', async () => {
    for (const shell of ['bash', 'zsh', 'fish']) expect(await options(['completion', shell])).toEqual({ shell });
    await refused(['completion', 'tcsh'], '<shell> must be one of bash, zsh, fish, not "tcsh"');
    await refused(['completion'], 'missing the <shell> argument');
  });
});

describe('sandbox', () => {
  it('takes ports, seconds, counts and sizes as numbers', async () => {
    expect(await options(['sandbox'])).toEqual({});
    const args = ['--tls', '--port', '8080', '--storage-port', '0', '--export-seconds', '1.5', '--export-seconds-per-repo', '0', '--repositories', '10', '--issues', '10000', '--pull-requests', '0', '--archive-size', '1024', '--rate-limit', '5', '--seed', 'org.json'];
    expect(await options(['sandbox', ...args])).toEqual({
      tls: true,
      port: 8080,
      storagePort: 0,
      exportSeconds: 1.5,
      exportSecondsPerRepo: 0,
      repositories: 10,
      issues: 10000,
      pullRequests: 0,
      archiveSize: 1024,
      rateLimit: 5,
      seed: 'org.json',
    });
  });

  it.each([
    [['--seed', ''], '--seed is empty'],
    [['--rate-limit', 'abc'], /expected a positive integer, not "abc"/],
    [['--rate-limit', '0'], /expected a positive integer, not "0"/],
    [['--port', '99999'], /a port is a whole number from 0 to 65535/],
    [['--storage-port', 'x'], /a port is a whole number from 0 to 65535/],
    [['--export-seconds', 'soon'], /expected a number, not "soon"/],
    [['--repositories', '1.5'], /expected a whole number, not "1\.5"/],
    [['--archive-size', '1G'], /expected a whole number, not "1G"/],
    [['--issues', '-1'], /expected a whole number, not "-1"/],
    [['--pull-requests', 'many'], /expected a whole number, not "many"/],
  ])('refuses %j', async (args, message) => {
    await refused(['sandbox', ...args], message);
  });
});
