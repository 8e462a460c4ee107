import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { InterruptedError } from '../../src/errors.js';
import { BIN, type CliResult, runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';
import { startScriptedServer } from '../helpers/scripted-server.js';
import { freePort } from '../helpers/api-client.js';
import { hasScript, onTerminal } from '../helpers/terminal.js';
import { unless } from '../helpers/skip.js';

// Ordinary mistakes and machine states, each through the built binary: the contract's exit code,
// a message naming the path or port, and never "this is a bug".

const busy: Server[] = [];
afterEach(async () => {
  await Promise.all(busy.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A port something else already listens on. */
async function busyPort(host = '127.0.0.1'): Promise<number> {
  const server = createServer();
  busy.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as { port: number }).port;
}

function expectNoBug(result: { stdout?: string; stderr?: string; screen?: string }): void {
  const all = `${result.stdout ?? ''}${result.stderr ?? ''}${result.screen ?? ''}`;
  expect(all).not.toMatch(/bug|unexpected error/i);
  expect(all).not.toMatch(/TypeError|RangeError|at .*\.js:\d+/);
}

function expectUsage(result: CliResult, message: RegExp, hint?: RegExp): void {
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr).toMatch(message);
  if (hint) expect(result.stderr).toMatch(hint);
  expectNoBug(result);
}

const root = process.getuid?.() === 0;
const hasSetpriv = spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status === 0;
// As root the test drops to `nobody`, who must be able to read the checkout: a clone inside a
// private (0700) temporary directory is not, and the tests that need it are then skipped.
const canDropPrivileges =
  !root ||
  (hasSetpriv &&
    spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, BIN, '--version'], {
      stdio: 'ignore',
    }).status === 0);

/** Runs as an unprivileged user when the tests run as root (root ignores file permissions). */
function runUnprivileged(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  if (!root) return runCli(args, { env });
  return new Promise((resolve, reject) => {
    const child = spawn(
      'setpriv',
      ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, BIN, ...args],
      { env: { ...process.env, HOME: tmpdir(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc-migrate ${args.join(' ')} did not finish\n${stderr}`));
    }, 15_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A directory nobody but root may write to, readable by the unprivileged user. */
function lockedDirectory(): string {
  const base = mkdtempSync(join(tmpdir(), 'svc-locked-'));
  chmodSync(base, 0o755);
  const dir = join(base, 'locked');
  mkdirSync(dir, { mode: 0o555 });
  chmodSync(dir, 0o555);
  return dir;
}

describe.skipIf(!hasScript)(`on a terminal${unless(hasScript, 'util-linux `script` is not installed')}`, () => {
  it('a 0-column terminal gets plain lines instead of a spinner that never ends', async () => {
    const { env } = await testSandbox({ exportSeconds: 0.5 });
    const output = join(mkdtempSync(join(tmpdir(), 'svc-cols-')), 'a.tar.gz');
    const result = await onTerminal(['export', 'Hello-World', '--yes', '-o', output, '--interval', '0.2'], {
      env,
      setup: 'stty cols 0',
      maxBytes: 64 * 1024,
    });
    expect(result.killed, result.screen.slice(0, 2000)).toBeUndefined();
    expect(result.code, result.screen).toBe(0);
    // A plain line per state (on a machine busy enough, the export may end before the first look).
    expect(result.screen).toMatch(/migration \d+: (\w+ → )?exported/);
    expect(result.screen).not.toContain('\x1b[1A');
    expect(existsSync(output)).toBe(true);
    expectNoBug(result);
  });

  it('status --wait on a 0-column terminal ends', async () => {
    const { env } = await testSandbox({ exportSeconds: 0.5 });
    const started = await runCli(['start', 'widgets', '--json'], { env });
    const id = JSON.parse(started.stdout).id as number;
    const result = await onTerminal(['status', String(id), '--wait', '--interval', '0.2'], {
      env,
      setup: 'stty cols 0',
      maxBytes: 64 * 1024,
    });
    expect(result.killed).toBeUndefined();
    expect(result.code, result.screen).toBe(0);
    expect(result.screen).not.toContain('\x1b[1A');
  });

  it('Ctrl-C at the repository prompt of start exits 130 quietly', async () => {
    const { sandbox, env } = await testSandbox();
    const result = await onTerminal(['start'], { env, steps: [[/Repositories to export/, '\x03']] });
    expect(result.code, result.screen).toBe(130);
    expectNoBug(result);
    expect(result.screen).not.toMatch(/error:/);
    expect(sandbox.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
  });

  it('Ctrl-C at the confirmation of delete-archive exits 130 and deletes nothing', async () => {
    const { sandbox, env } = await testSandbox();
    const result = await onTerminal(['delete-archive', '1000'], { env, steps: [[/Delete the archive/, '\x03']] });
    expect(result.code, result.screen).toBe(130);
    expectNoBug(result);
    expect(sandbox.requests.filter((r) => r.method === 'DELETE')).toHaveLength(0);
  });

  it('webhook listen --secret with no value asks for it on a terminal', async () => {
    const result = await onTerminal(['webhook', 'listen', '--port', '0', '--secret', '--max-deliveries', '1'], {
      steps: [
        [/Webhook secret/, 's3cret\r'],
        [/verifying X-Hub-Signature-256 with 1 secret/, '\x03'],
      ],
    });
    expect(result.screen).toMatch(/verifying X-Hub-Signature-256 with 1 secret/);
    expect(result.code, result.screen).toBe(130);
    expectNoBug(result);
  });

  it('webhook listen --secret answered with Enter alone is not a secret: it says so and asks again', async () => {
    const result = await onTerminal(['webhook', 'listen', '--port', '0', '--secret'], {
      steps: [
        [/Webhook secret/, '\r'],
        [/the secret entered is empty/, 's3cret\r'],
        [/verifying X-Hub-Signature-256 with 1 secret/, '\x03'],
      ],
    });
    expect(result.screen.indexOf('the secret entered is empty')).toBeLessThan(result.screen.indexOf('listening'));
    expect(result.code, result.screen).toBe(130);
    expectNoBug(result);
  });
});

describe('ports', () => {
  it('webhook listen --forward-to its own port and path is a usage error, not a loop', async () => {
    const held = await busyPort();
    await new Promise((resolve) => busy.pop()?.close(resolve));
    // By its port alone (localhost), or by any address of this machine.
    const targets: [string, string][] = [
      [String(held), `http://localhost:${held}/`],
      [`http://0.0.0.0:${held}/?x=1`, `http://0.0.0.0:${held}/?x=1`],
    ];
    for (const [target, shown] of targets) {
      const result = await runCli(['webhook', 'listen', '--port', String(held), '--no-dedupe', '--forward-to', target]);
      expectUsage(result, /is this receiver: each delivery would come back/, /forward to your app's port and path/);
      expect(result.stderr).toContain(`--forward-to ${shown} is this receiver`);
    }
  });

  it('export to a --base-url where nothing listens: one quick retry in all (pre-check and start), naming host and port', async () => {
    const port = await freePort();
    const output = join(mkdtempSync(join(tmpdir(), 'svc-refused-')), 'a.tar.gz');
    const result = await runCli(['export', 'widgets', '-o', output, '--yes', '--org', 'acme', '--token', 't0k3n', '--base-url', `http://127.0.0.1:${port}`]);
    expect(result.code).toBe(8);
    expect(result.stderr.match(/retrying/g) ?? []).toHaveLength(1);
    expect(result.stderr).toMatch(new RegExp(`error: nothing listens at 127\\.0\\.0\\.1:${port}: POST `));
    expect(result.stderr).toMatch(/hint: .*--base-url/);
    expectNoBug(result);
  });

  it('webhook listen on a busy port names the port and exits 2', async () => {
    const port = await busyPort();
    const result = await runCli(['webhook', 'listen', '--port', String(port)]);
    expectUsage(result, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use`), /choose another --port/);
  });

  it('sandbox on a busy port says so and ends instead of hanging', async () => {
    const port = await busyPort();
    expectUsage(await runCli(['sandbox', '--port', String(port)]), new RegExp(`port ${port} .*already in use`), /--port/);
  });

  it('sandbox on a busy storage port names --storage-port', async () => {
    const port = await busyPort();
    expectUsage(
      await runCli(['sandbox', '--storage-port', String(port)]),
      new RegExp(`port ${port} .*already in use`),
      /--storage-port/,
    );
  });

  it.skipIf(!canDropPrivileges)(`webhook listen on a privileged port without privileges says why${unless(canDropPrivileges, 'running as root without setpriv to become another user')}`, async () => {
    const result = await runUnprivileged(['webhook', 'listen', '--port', '80']);
    expectUsage(result, /not allowed to listen on 127\.0\.0\.1:80/, /above 1023/);
  });

  it('webhook listen exits 130 on Ctrl-C, after its summary', async () => {
    const controller = new AbortController();
    const result = await runCli(['webhook', 'listen', '--port', '0'], {
      env: { SVC_WEBHOOK_SECRET: '' },
      signal: controller.signal,
      onStderr: (text) => {
        if (/listening on/.test(text)) controller.abort(new InterruptedError());
      },
    });
    expect(result.code, result.stderr).toBe(130);
    expect(result.stderr).toMatch(/received 0/);
    expectNoBug(result);
  });
});

describe('webhook send --action with a --payload it cannot be set in', () => {
  it.each([
    ['not-json', /is not JSON, so --action cannot be set in it/],
    ['[1,2]', /is not a JSON object, so --action cannot be set in it/],
    ['"text"', /is not a JSON object/],
    ['null', /is not a JSON object/],
  ])('%s', async (content, message) => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-payload-')), 'payload.json');
    writeFileSync(file, content);
    expectUsage(await runCli(['webhook', 'send', '--url', '1', '--event', 'star', '--action', 'created', '--payload', file]), message);
  });
});

describe('Ctrl-C in the webhook commands that wait on a peer or on stdin', () => {
  /** A receiver that takes each request and never answers, and presses Ctrl-C at the first. */
  async function silentTarget() {
    const controller = new AbortController();
    const target = await startScriptedServer(() => controller.abort(new InterruptedError()));
    return { target, signal: controller.signal };
  }

  it('webhook replay stops at once with 130, sending no file after it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-replay-int-'));
    for (const n of [1, 2, 3]) {
      const head = `# svc-migrate delivery; received 2026-11-25T00:00:0${n}.000Z; sequence ${n}\r\nPOST / HTTP/1.1\r\ncontent-type: application/json\r\nx-service-event: ping`;
      writeFileSync(join(dir, `d${n}.http`), `${head}\r\n\r\n{}`);
    }
    // The first is answered; Ctrl-C comes while the second waits for its answer.
    const controller = new AbortController();
    const target = await startScriptedServer(
      (_request, response) => response.writeHead(200).end(),
      () => controller.abort(new InterruptedError()),
    );
    try {
      const result = await runCli(['webhook', 'replay', dir, '--url', target.url], { signal: controller.signal });
      expect(result.code, result.stderr).toBe(130);
      expect(target.requests).toHaveLength(2);
      // What was sent is said, so that a rerun's duplicates are no surprise.
      expect(result.stdout).toMatch(/^d1\.http: 200 in \d+ ms\n$/);
      expect(result.stderr).toMatch(/interrupted: 1 of 3 files were sent, and d2\.http was being sent \(its receiver may have it\)/);
      expectNoBug(result);
    } finally {
      await target.close();
    }
  });

  it('webhook send stops at once with 130, not "could not deliver"', async () => {
    const { target, signal } = await silentTarget();
    try {
      const result = await runCli(['webhook', 'send', '--url', target.url, '--event', 'ping'], { signal });
      expect(result.code, result.stderr).toBe(130);
      expect(result.stderr).not.toMatch(/could not deliver/);
    } finally {
      await target.close();
    }
  });

  it('webhook verify waiting for a body on stdin stops with 130', async () => {
    const controller = new AbortController();
    controller.abort(new InterruptedError());
    const result = await runCli(['webhook', 'verify', '--secret', 's', '--signature', 'sha256=00'], { signal: controller.signal, openStdin: true });
    expect(result.code, result.stderr).toBe(130);
  });
});

/** A migration of the test's sandbox that is exported and downloadable. */
async function exportedId(env: Record<string, string>): Promise<string> {
  const started = await runCli(['start', 'widgets', '--wait', '--interval', '0.1', '--json'], { env });
  expect(started.code, started.stderr).toBe(0);
  return String(JSON.parse(started.stdout).id);
}

describe('files', () => {
  it('start --repos-file with a missing file names it, without ENOENT', async () => {
    const { env } = await testSandbox();
    const result = await runCli(['start', '--repos-file', 'no-such-file.txt'], { env });
    expectUsage(result, /cannot read no-such-file\.txt \(--repos-file\): no such file/);
    expect(result.stderr).not.toMatch(/ENOENT/);
  });

  it('reads no more of a file or stdin than its input can hold: /dev/zero and endless stdin end at once', async () => {
    const { env } = await testSandbox();
    expectUsage(await runCli(['start', '--repos-file', '/dev/zero'], { env }), /--repos-file \/dev\/zero holds more than 16777216 bytes/);
    expectUsage(
      await runCli(['webhook', 'send', '--url', '127.0.0.1:9', '--event', 'push', '--payload', '/dev/zero']),
      /--payload \/dev\/zero holds more than 26214400 bytes; the service never delivers more than 25 MB/,
    );
    expectUsage(await runCli(['sandbox', '--seed', '/dev/zero']), /--seed \/dev\/zero holds more than/);
    expectUsage(await runCli(['auth', 'login', '--with-token'], { env, stdin: 'x'.repeat(70_000) }), /stdin holds more than 65536 bytes, more than a token can be/);
    expectUsage(await runCli(['start', '--repos-file', '-'], { env, stdin: 'a\n'.repeat(9_000_000) }), /stdin holds more than 16777216 bytes/);
  });

  it('a directory on stdin is refused, not read as an empty body', () => {
    // A real process: what Node makes of a directory as file descriptor 0 is the point.
    const dir = mkdtempSync(join(tmpdir(), 'svc-stdin-dir-'));
    const stdin = openSync(dir, 'r');
    try {
      const signature = 'sha256=f8b4a1d4c4c4f2e3b3b0f5e1c1d2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4';
      const result = spawnSync(process.execPath, [BIN, 'webhook', 'verify', '--secret', 's', '--signature', signature], {
        stdio: [stdin, 'pipe', 'pipe'],
        encoding: 'utf8',
      });
      expectUsage({ code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr }, /stdin is a directory, not a delivery/, /redirect a file/);
    } finally {
      closeSync(stdin);
    }
  });

  it('start --repos-file naming a directory says so', async () => {
    const { env } = await testSandbox();
    const dir = mkdtempSync(join(tmpdir(), 'svc-repos-dir-'));
    expectUsage(await runCli(['start', '--repos-file', dir], { env }), new RegExp(`cannot read ${dir} \\(--repos-file\\): ${dir} is a directory`));
  });

  it('start --repos-file naming a binary refuses it as not a text file, and quotes at most 80 characters of a bad line', async () => {
    const { env } = await testSandbox();
    const dir = mkdtempSync(join(tmpdir(), 'svc-repos-binary-'));
    const withNul = join(dir, 'with-nul');
    writeFileSync(withNul, Buffer.from('widgets\n\u0000\u0001ELF\n', 'utf8'));
    const latin1 = join(dir, 'latin1.txt');
    writeFileSync(latin1, Buffer.from('widgets\ncaf\xe9\n', 'latin1'));
    for (const path of [withNul, latin1]) {
      const result = await runCli(['start', '--repos-file', path], { env });
      expectUsage(result, new RegExp(`^error: ${path} is not a text file$`, 'm'));
    }
    const long = join(dir, 'long.txt');
    writeFileSync(long, `widgets\n${'x!'.repeat(5000)}\n`);
    const result = await runCli(['start', '--repos-file', long], { env });
    expectUsage(result, new RegExp(`^error: ${long}:2: "${'x!'.repeat(40)}…" is not a repository name$`, 'm'));
    expect(result.stderr.length).toBeLessThan(1000);
  });

  it('download -o <existing directory> saves migration-<id>.tar.gz inside it', async () => {
    const { env } = await testSandbox();
    const dir = mkdtempSync(join(tmpdir(), 'svc-dir-'));
    const id = await exportedId(env);
    const result = await runCli(['download', id, '-o', dir, '--force', '--json'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).path).toBe(join(dir, `migration-${id}.tar.gz`));
    expect(readdirSync(dir).sort()).toEqual([`migration-${id}.tar.gz`, `migration-${id}.tar.gz.sha256`]);
    expect(existsSync(`${dir}.part`)).toBe(false);
  });

  it('download -o into a directory that does not exist says so before downloading', async () => {
    const { env, sandbox } = await testSandbox();
    const result = await runCli(['download', await exportedId(env), '-o', '/nonexistent-svc-dir/a.tar.gz'], { env });
    expectUsage(result, /cannot write \/nonexistent-svc-dir\/a\.tar\.gz\.part: the directory \/nonexistent-svc-dir does not exist/, /mkdir -p/);
    expect(sandbox.requests.filter((r) => r.origin === 'storage' && r.method === 'GET')).toHaveLength(0);
  });

  it('download -o /proc/x.tgz does not claim the directory is missing', async () => {
    const { env } = await testSandbox();
    const result = await runCli(['download', await exportedId(env), '-o', '/proc/svc-x.tgz'], { env });
    expectUsage(result, /cannot write \/proc\/svc-x\.tgz\.part: \/proc does not allow creating it/);
    expect(result.stderr).not.toMatch(/does not exist|free some space/);
  });

  it.skipIf(!canDropPrivileges)(`download into a directory without write permission says permission denied${unless(canDropPrivileges, 'running as root without setpriv to become another user')}`, async () => {
    const { env } = await testSandbox();
    const dir = lockedDirectory();
    const result = await runUnprivileged(['download', await exportedId(env), '-o', join(dir, 'a.tar.gz')], env);
    expectUsage(result, new RegExp(`cannot write ${dir}/a\\.tar\\.gz\\.part: permission denied`), /check the permissions/);
    expect(result.stderr).not.toMatch(/free some space/);
  });

  it.skipIf(!canDropPrivileges)(`an unwritable config directory is named, with a hint${unless(canDropPrivileges, 'running as root without setpriv to become another user')}`, async () => {
    const dir = lockedDirectory();
    const result = await runUnprivileged(['config', 'set', 'org', 'acme'], { SVC_CONFIG_DIR: join(dir, 'cfg') });
    expectUsage(result, new RegExp(`cannot create the directory ${dir}/cfg .*permission denied`), /SVC_CONFIG_DIR|ls -ld/);
  });

  it('SVC_CONFIG_DIR on a file system that refuses directories ends at once', async () => {
    const result = await runCli(['config', 'set', 'org', 'acme'], { env: { SVC_CONFIG_DIR: '/proc/svc-x' } });
    expectUsage(result, /cannot create the directory \/proc\/svc-x/);
  });

  it('export --output-dir and webhook listen --save on a file system that refuses directories end at once', async () => {
    const { env } = await testSandbox();
    const list = join(mkdtempSync(join(tmpdir(), 'svc-list-')), 'repos.txt');
    writeFileSync(list, 'octo-org/widgets\n');
    const exported = await runCli(['export', '--repos-file', list, '--output-dir', '/proc/svc-x/out'], { env });
    expectUsage(exported, /cannot create the directory \/proc\/svc-x\/out \(--output-dir\)/);
    const listening = await runCli(['webhook', 'listen', '--port', '0', '--save', '/proc/svc-x/deliveries']);
    expectUsage(listening, /cannot create the directory \/proc\/svc-x\/deliveries \(--save\): /);
  });

  it('SVC_CONFIG_DIR under a regular file is named', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-file-')), 'plain');
    spawnSync('touch', [file]);
    const result = await runCli(['auth', 'logout'], { env: { SVC_CONFIG_DIR: join(file, 'cfg') } });
    expectUsage(result, /cannot create the directory .*plain\/cfg.*not a directory/);
  });
});

describe('environment and arguments', () => {
  it('a proxy variable that is not a URL is named', async () => {
    const { env } = await testSandbox();
    const result = await runCli(['list'], { env: { ...env, HTTPS_PROXY: 'notaurl', HTTP_PROXY: '' } });
    expectUsage(result, /HTTPS_PROXY is not a URL: "notaurl"/, /unset HTTPS_PROXY/);
  });

  it('auth status checks the token through the same client settings as every command (the proxy included)', async () => {
    const { env } = await testSandbox();
    const result = await runCli(['auth', 'status'], { env: { ...env, HTTPS_PROXY: 'notaurl', HTTP_PROXY: '' } });
    expectUsage(result, /HTTPS_PROXY is not a URL: "notaurl"/, /unset HTTPS_PROXY/);
  });

  it('a --base-url that answers with a web page, or a list endpoint answered by an object: said, exit 8, never "a bug"', async () => {
    const page = await startScriptedServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<html>a website</html>'));
    const notList = await startScriptedServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end('{"message":"hello"}'));
    try {
      const env = { SVC_TOKEN: 'ghp_test', SVC_ORG: 'acme' };
      for (const args of [['list'], ['status', '5'], ['repos', '5']]) {
        const result = await runCli(args, { env: { ...env, SVC_BASE_URL: page.url } });
        expect(result.code, result.stderr).toBe(8);
        expect(result.stderr).toMatch(/answered with text\/html, not JSON/);
        expect(result.stderr).toMatch(/hint: check --base-url/);
        expectNoBug(result);
      }
      for (const args of [['list'], ['repos', '5']]) {
        const result = await runCli(args, { env: { ...env, SVC_BASE_URL: notList.url } });
        expect(result.code, result.stderr).toBe(8);
        expect(result.stderr).toMatch(/answered with an object where a list was expected/);
        expectNoBug(result);
      }
    } finally {
      await Promise.all([page.close(), notList.close()]);
    }
  });

  it('webhook send --payload with a missing file names it', async () => {
    expectUsage(
      await runCli(['webhook', 'send', '--url', '127.0.0.1:9', '--event', 'push', '--payload', 'no-such.json']),
      /cannot read no-such\.json \(--payload\): no such file/,
    );
  });
});

describe.skipIf(!hasScript)(`a terminal shrunk to 0 columns mid-way${unless(hasScript, 'util-linux `script` is not installed')}`, () => {
  it('stops the spinner and ends with plain lines', async () => {
    // The export ends when the test moves the sandbox's clock: once the terminal has shrunk.
    const { sandbox, env } = await testSandbox({ exportSeconds: 600 });
    const started = await runCli(['start', 'widgets', '--json'], { env });
    const id = JSON.parse(started.stdout).id as number;
    let shrunk = false;
    const result = await onTerminal(['status', String(id), '--wait', '--interval', '0.2'], {
      env,
      setup: 'stty cols 120 rows 40',
      maxBytes: 256 * 1024,
      onScreen: (screen, pid) => {
        if (shrunk || !/waiting for migration/.test(screen)) return;
        shrunk = true;
        // The CLI's terminal, as the kernel sees it; resizing it sends SIGWINCH to the CLI.
        const tty = spawnSync('ps', ['--ppid', String(pid), '-o', 'tty='], { encoding: 'utf8' }).stdout.trim().split('\n')[0];
        spawnSync('stty', ['-F', `/dev/${tty}`, 'cols', '0']);
        sandbox.clock.advance(600_000);
      },
    });
    expect(shrunk).toBe(true);
    expect(result.killed, result.screen.slice(-500)).toBeUndefined();
    expect(result.code, result.screen.slice(-500)).toBe(0);
    expect(result.screen).toMatch(/migration \d+ exported after/);
  });
});
