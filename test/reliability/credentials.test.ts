import { execFileSync } from 'node:child_process';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';
import { type Handler, json, startScriptedServer, startScriptedTlsServer, type ScriptedServer } from '../helpers/scripted-server.js';
import { loopbackCertificate, sharedAuthority } from '../helpers/tls.js';
import { unless } from '../helpers/skip.js';

const TOKEN = 'svc_token_for_credentials_tests_1234';
const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function configDir(): string {
  return join(mkdtempSync(join(tmpdir(), 'svc-cred-')), 'config');
}

/** `auth login` checks the token against the service first: a stub that accepts it. */
async function login(dir: string) {
  const api = await startScriptedServer(json(200, []));
  closers.push(() => api.close());
  return runCli(['auth', 'login', '--with-token'], {
    env: { SVC_CONFIG_DIR: dir, SVC_BASE_URL: api.url, SVC_ORG: 'acme' },
    stdin: `${TOKEN}\n`,
  });
}

/** A login that must be refused: the planted file keeps its content and no token is written. */
async function expectLoginRefused(dir: string, reason: RegExp) {
  const result = await login(dir);
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr).toMatch(reason);
  expect(result.stderr).toMatch(/hint: .*chmod 700/);
  expect(result.stderr).not.toMatch(/bug/);
  return result;
}

describe('the config directory must be the user\'s own', () => {
  it('creates config.json 0600 in a 0700 directory on login', async () => {
    const dir = configDir();
    const result = await login(dir);
    expect(result.code, result.stderr).toBe(0);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'config.json')).mode & 0o777).toBe(0o600);
  });

  it('refuses to store a token in a directory others can write', async () => {
    const dir = configDir();
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    await expectLoginRefused(dir, /refusing to store settings: the config directory .* is writable by other users \(mode 0777\)/);
    expect(existsSync(join(dir, 'config.json'))).toBe(false);
  });

  it('refuses to write through a config.json that is a symbolic link', async () => {
    const dir = configDir();
    mkdirSync(dir, { mode: 0o700 });
    const elsewhere = join(dir, '..', 'someone-elses.json');
    writeFileSync(elsewhere, '{}');
    symlinkSync(elsewhere, join(dir, 'config.json'));
    await expectLoginRefused(dir, /config\.json is a symbolic link/);
    expect(readFileSync(elsewhere, 'utf8')).toBe('{}');
    expect(lstatSync(join(dir, 'config.json')).isSymbolicLink()).toBe(true);
  });

  it.skipIf(!isRoot)(`refuses a config.json planted by another user, and a directory another user owns${unless(isRoot, 'needs root')}`, async () => {
    const dir = configDir();
    mkdirSync(dir, { mode: 0o700 });
    const planted = join(dir, 'config.json');
    writeFileSync(planted, '{"org":"acme"}', { mode: 0o600 });
    chownSync(planted, NOBODY, NOBODY);
    await expectLoginRefused(dir, /config\.json is owned by another user \(uid 65534, you are 0\)/);
    expect(readFileSync(planted, 'utf8')).toBe('{"org":"acme"}');
    expect(statSync(planted).uid).toBe(NOBODY);

    const foreignDir = configDir();
    mkdirSync(foreignDir, { mode: 0o700 });
    chownSync(foreignDir, NOBODY, NOBODY);
    await expectLoginRefused(foreignDir, /the config directory .* is owned by another user/);
  });

  it('ignores, with a warning, settings others could have planted: their base URL never gets our token', async () => {
    const server = await startScriptedServer(json(200, []));
    closers.push(() => server.close());
    const dir = configDir();
    mkdirSync(dir);
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ baseUrl: server.url, org: 'acme' }));
    chmodSync(dir, 0o777);
    const result = await runCli(['list'], { env: { SVC_CONFIG_DIR: dir, SVC_TOKEN: TOKEN } });
    expect(result.stderr).toMatch(/warning: ignoring the stored settings: the config directory .* is writable by other users/);
    expect(result.code).toBe(2); // no base URL: the planted one was not used
    expect(server.requests).toHaveLength(0);
  });
});

/** An API stub: the migration is exported and its archive is at `location`. */
function archiveRedirect(location: string): Handler {
  return (request, response) => {
    if (request.url.endsWith('/archive')) {
      response.writeHead(302, { location }).end();
      return;
    }
    json(200, { id: 1, state: 'exported', lock_repositories: false, repositories: [], created_at: '2026-11-23T10:00:00Z', updated_at: '2026-11-23T10:00:00Z' })(request, response, undefined as never);
  };
}

async function apiStub(handler: Handler): Promise<ScriptedServer> {
  const server = await startScriptedServer(handler);
  closers.push(() => server.close());
  return server;
}

describe('the archive location the service sends', () => {
  for (const location of ['file:///etc/passwd', 'data:application/gzip;base64,H4sI', 'javascript:alert(1)', 'ftp://127.0.0.1/a.tar.gz']) {
    it(`refuses ${location.split(':')[0]}: at once, without retrying`, async () => {
      const api = await apiStub(archiveRedirect(location));
      const out = join(mkdtempSync(join(tmpdir(), 'svc-loc-')), 'a.tar.gz');
      const result = await runCli(['download', '1', '-o', out], { env: { SVC_BASE_URL: api.url, SVC_TOKEN: TOKEN, SVC_ORG: 'acme' } });
      expect(result.code, result.stderr).toBe(8);
      expect(result.stderr).toMatch(/refusing the archive location the service sent: a [a-z]+: URL, not HTTPS storage/);
      expect(result.stderr).not.toMatch(/resume|retrying/);
      expect(api.requests.filter((r) => r.url.endsWith('/archive'))).toHaveLength(1);
      expect(existsSync(out)).toBe(false);
    });
  }

  it('refuses plain-HTTP storage when the API is HTTPS', async () => {
    const storage = await apiStub((_request, response) => {
      response.writeHead(200, { 'content-length': '3' }).end('abc');
    });
    const authority = sharedAuthority();
    const api = await startScriptedTlsServer(loopbackCertificate(authority), archiveRedirect(`${storage.url}/archive.tar.gz?signature=s`));
    closers.push(() => api.close());
    const out = join(mkdtempSync(join(tmpdir(), 'svc-tls-')), 'a.tar.gz');
    const result = await runCli(['download', '1', '-o', out], {
      env: { SVC_BASE_URL: api.url, SVC_TOKEN: TOKEN, SVC_ORG: 'acme', SVC_CA_FILE: authority.file },
    });
    expect(result.code, result.stderr).toBe(8);
    expect(result.stderr).toMatch(/plain HTTP \(127\.0\.0\.1:\d+\) while the API uses HTTPS/);
    expect(api.requests.some((r) => r.url.endsWith('/archive'))).toBe(true);
    expect(storage.requests).toHaveLength(0);
  });
});

describe('the token on the wire', () => {
  it('rejects a token with a line break at once, before any request', async () => {
    const api = await apiStub(json(200, []));
    const result = await runCli(['list'], { env: { SVC_BASE_URL: api.url, SVC_TOKEN: `${TOKEN}\r\nX-Injected: 1`, SVC_ORG: 'acme' } });
    expect(result.code, result.stderr).toBe(3);
    expect(result.stderr).toMatch(/the token contains a line break/);
    expect(result.stderr).not.toContain(TOKEN);
    expect(api.requests).toHaveLength(0);
  });

  it('refuses to send the token over plain HTTP beyond loopback unless --insecure', async () => {
    // .invalid never resolves (RFC 2606): should the refusal regress, nothing leaves the machine.
    const env = { SVC_BASE_URL: 'http://svc-migrate-test.invalid', SVC_TOKEN: TOKEN, SVC_ORG: 'acme' };
    const refused = await runCli(['list'], { env });
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(/refusing to send the token in clear text to http:\/\/svc-migrate-test\.invalid/);
    expect(refused.stderr).toMatch(/hint: use an https:\/\/ base URL, or pass --insecure/);

    const allowed = await runCli(['list', '--insecure'], { env });
    expect(allowed.stderr).toMatch(/warning: --insecure: the token travels in clear text to http:\/\/svc-migrate-test\.invalid/);
    expect(allowed.code).toBe(8); // got as far as looking the host up

    const loopback = await apiStub(json(200, []));
    const local = await runCli(['list', '--json'], { env: { ...env, SVC_BASE_URL: loopback.url.replace('127.0.0.1', 'localhost') } });
    expect(local.code, local.stderr).toBe(0);
    expect(local.stderr).not.toMatch(/clear text/);
  });
});

describe('secrets given as flags', () => {
  const hasScript = spawnSync('script', ['--version']).status === 0;
  const onTerminal = (args: string) =>
    spawnSync('script', ['-qec', `${process.execPath} ${BIN} ${args}`, '/dev/null'], {
      encoding: 'utf8',
      env: { ...process.env, SVC_CONFIG_DIR: configDir() },
      timeout: 15_000,
    });

  it.skipIf(!hasScript)(`on a terminal, say once that the environment or a prompt is safer${unless(hasScript, 'util-linux `script` is not installed')}`, () => {
    const token = onTerminal('--token abc config path');
    expect(token.stdout).toMatch(/warning: --token on the command line is visible to other users of this machine \(ps\); SVC_TOKEN/);
    expect(token.stdout.match(/visible to other users/g)).toHaveLength(1);
    const secret = onTerminal('webhook verify --secret s3cret --signature sha256=00');
    expect(secret.stdout).toMatch(/warning: --secret on the command line is visible .*SVC_WEBHOOK_SECRET/);
  });

  it('stays quiet in a pipe, where no person is there to read it', async () => {
    const result = await runCli(['--token', 'abc', 'config', 'path'], { env: { SVC_CONFIG_DIR: configDir() } });
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(/visible to other users/);
  });
});

describe('files written beside the archive', () => {
  async function exportTo(out: string, extra: string[] = [], umask?: string) {
    const { env } = await testSandbox();
    const args = ['export', 'widgets', '-o', out, '--interval', '0.1', '--json', ...extra];
    if (umask === undefined) return runCli(args, { env });
    // The umask a user's shell gives the process; the sandbox answers from this process, so no spawnSync.
    const child = spawn('sh', ['-c', `umask ${umask}; exec "$0" "$@"`, process.execPath, BIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout.resume();
    const [code] = (await once(child, 'close')) as [number | null];
    return { code, stdout: '', stderr };
  }

  it('refuses a leftover .part that is a link, and leaves its target alone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-files-'));
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'precious');
    const out = join(dir, 'a.tar.gz');
    symlinkSync(victim, `${out}.part`);
    const result = await exportTo(out);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/a\.tar\.gz\.part is a symbolic link: refusing to write through it/);
    expect(result.stderr).not.toMatch(/bug/);
    expect(readFileSync(victim, 'utf8')).toBe('precious');
    expect(existsSync(out)).toBe(false);
  });

  it('a FIFO planted as the .part.json is passed over, not waited on (an open of one blocks until a writer comes, past any signal)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-files-'));
    const out = join(dir, 'a.tar.gz');
    execFileSync('mkfifo', [`${out}.part.json`]);
    const result = await exportTo(out);
    expect(result.code, result.stderr).toBe(0);
    expect(lstatSync(out).isFile()).toBe(true);
  });

  it('replaces links planted at the final name, .part.json and .sha256 instead of writing through them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-files-'));
    const out = join(dir, 'a.tar.gz');
    const victims = ['', '.part.json', '.sha256'].map((suffix) => {
      const victim = join(dir, `victim${suffix || '.tgz'}`);
      writeFileSync(victim, 'precious');
      symlinkSync(victim, `${out}${suffix}`);
      return victim;
    });
    const result = await exportTo(out, ['--force']);
    expect(result.code, result.stderr).toBe(0);
    for (const victim of victims) expect(readFileSync(victim, 'utf8'), victim).toBe('precious');
    for (const suffix of ['', '.sha256']) expect(lstatSync(`${out}${suffix}`).isFile()).toBe(true);
    expect(existsSync(`${out}.part.json`)).toBe(false);
  });

  it('creates the archive and its .sha256 with the user\'s umask', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-files-'));
    const out = join(dir, 'a.tar.gz');
    const result = await exportTo(out, [], '002');
    expect(result.code, result.stderr).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o664);
    expect(statSync(`${out}.sha256`).mode & 0o777).toBe(0o664);
  });
});
