import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';
import { unless } from '../helpers/skip.js';

// util-linux `script` gives the CLI a real pseudo-terminal, so prompts run as a user sees them.
const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

/** Runs the CLI on a pseudo-terminal; `steps` wait for a text on screen, then type keys. */
function onTerminal(args: string[], env: Record<string, string>, steps: [RegExp, string][]) {
  const command = [process.execPath, BIN, ...args].map((part) => `'${part.replaceAll('\'', '\'\\\'\'')}'`).join(' ');
  // A real terminal's size: `script` without one reports 0 columns, where decorations are off.
  const sized = `stty cols 120 rows 40; ${command}`;
  const child = spawn('script', ['-qfec', sized, '/dev/null'], {
    env: { ...process.env, ...env, CI: '', TERM: 'xterm', COLUMNS: '120' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let screen = '';
  let step = 0;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    screen += chunk;
    while (step < steps.length && (steps[step] as [RegExp, string])[0].test(screen)) {
      child.stdin.write((steps[step] as [RegExp, string])[1]);
      step++;
    }
  });
  return new Promise<{ code: number | null; screen: string }>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, screen });
    });
  });
}

describe.skipIf(!hasScript)(`interactive start on a terminal${unless(hasScript, 'util-linux `script` is not installed')}`, () => {
  it('asks for repositories, options and a confirmation, then starts the export', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 60 });
    const result = await onTerminal(['start'], env, [
      [/Repositories to export/, 'widgets docs.site\r'],
      [/Options/, ' \r'],
      [/Start this export\?/, 'y\r'],
    ]);
    expect(result.code, result.screen).toBe(0);
    expect(result.screen).toMatch(/started migration \d+/);
    const [migration] = sandbox.store.list(sandbox.store.organization('octo-org')!).filter((m) => m.kind === 'export');
    expect(migration?.repositories.map((r) => r.name)).toEqual(['widgets', 'docs.site']);
    expect(migration?.body.lock_repositories).toBe(true);
  });

  it('asks again after an answer that names no repository, or a name that cannot be one', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 60 });
    const result = await onTerminal(['start'], env, [
      [/Repositories to export/, 'widgets b@d\r'],
      // The typed line stays for correcting: Ctrl-U clears it.
      [/name 2: "b@d" is not a repository name/, '\x15 , \r'],
      [/no repositories given/, '\x15widgets\r'],
      [/Options/, '\r'],
      [/Start this export\?/, 'y\r'],
    ]);
    expect(result.code, result.screen).toBe(0);
    expect(result.screen).toMatch(/started migration \d+/);
    const [migration] = sandbox.store.list(sandbox.store.organization('octo-org')!).filter((m) => m.kind === 'export');
    expect(migration?.repositories.map((r) => r.name)).toEqual(['widgets']);
  });

  it('start asks again, the accepted names typed already, when the service refuses names typed at the prompt', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 60 });
    const result = await onTerminal(['start'], env, [
      [/Repositories to export/, 'widgets nope/x bad..name\r'],
      [/Options/, '\r'],
      [/Start this export\?/, 'y\r'],
      // The line holds the name the service took: Enter starts it.
      [/nothing was started[\s\S]*Repositories to export[^\n]*widgets/, '\r'],
    ]);
    expect(result.code, result.screen).toBe(0);
    expect(result.screen).toMatch(/the service refused 2 of the 3 repositories, so nothing was started \(nope\/x: nope\/x is not a repository of octo-org; octo-org\/bad\.\.name: octo-org\/bad\.\.name is not a repository of octo-org\)/);
    expect(result.screen).toMatch(/started migration \d+/);
    expect(sandbox.requests.filter((r) => r.method === 'POST')).toHaveLength(2);
    const exports = sandbox.store.list(sandbox.store.organization('octo-org')!).filter((m) => m.kind === 'export');
    expect(exports.map((m) => m.repositories.map((r) => r.name))).toEqual([['widgets']]);
  });

  it('export asks again when the service refuses every name typed, then exports the ones typed next', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 1 });
    const output = join(mkdtempSync(join(tmpdir(), 'svc-tty-')), 'r.tar.gz');
    const result = await onTerminal(['export', '-o', output, '--interval', '0.2'], env, [
      [/Repositories to export/, 'nope\r'],
      [/Options/, ' \r'],
      [/Unlock the repositories/, '\r'],
      [/Delete the archive from the service/, '\r'],
      [/Start this export\?/, '\r'],
      [/nothing was started[\s\S]*Repositories to export/, 'docs.site\r'],
    ]);
    expect(result.code, result.screen).toBe(0);
    expect(result.screen).toMatch(/the service refused the repository, so nothing was started \(octo-org\/nope: octo-org\/nope is not a repository of octo-org\)/);
    expect(result.screen).toMatch(/export of migration \d+ complete/);
    const exports = sandbox.store.list(sandbox.store.organization('octo-org')!).filter((m) => m.kind === 'export');
    expect(exports.map((m) => m.repositories.map((r) => r.name))).toEqual([['docs.site']]);
    expect(exports[0]?.body.lock_repositories).toBe(true);
    expect(exports[0]?.locked.size).toBe(0);
  });

  it('Ctrl-C at the prompt asked again ends the command (exit 130), nothing started', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 60 });
    const result = await onTerminal(['start'], env, [
      [/Repositories to export/, 'nope\r'],
      [/Options/, '\r'],
      [/Start this export\?/, 'y\r'],
      [/nothing was started[\s\S]*Repositories to export/, '\x03'],
    ]);
    expect(result.code, result.screen).toBe(130);
    expect(sandbox.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(sandbox.store.list(sandbox.store.organization('octo-org')!).filter((m) => m.kind === 'export')).toHaveLength(0);
  });

  it('names given as arguments are not asked again on a terminal: a refusal is exit 5', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 60 });
    const result = await onTerminal(['start', 'widgets', 'nope/x'], env, []);
    expect(result.code, result.screen).toBe(5);
    expect(result.screen).toMatch(/rejected the request: 1 repository is not in octo-org: nope\/x/);
    expect(result.screen).not.toMatch(/Repositories to export/);
    expect(sandbox.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('auth login asks again for a token after Enter alone, then checks and stores the one typed', async () => {
    const { sandbox, env } = await testSandbox();
    const configDir = mkdtempSync(join(tmpdir(), 'svc-tty-config-'));
    const result = await onTerminal(['auth', 'login'], { ...env, SVC_TOKEN: '', SVC_CONFIG_DIR: configDir }, [
      [/Token \(classic token/, '\r'],
      [/no token given/, `${sandbox.ownerToken}\r`],
    ]);
    expect(result.code, result.screen).toBe(0);
    expect(result.screen).toMatch(/checked \(owner access to octo-org's migrations\) and stored/);
    expect(result.screen).not.toContain(sandbox.ownerToken);
  });

  it('export asks, after the options, whether to unlock (Enter: yes) and to delete the archive (Enter: no)', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 1 });
    const output = join(mkdtempSync(join(tmpdir(), 'svc-tty-')), 'i.tar.gz');
    const result = await onTerminal(['export', '-o', output, '--interval', '0.2'], env, [
      [/Repositories to export/, 'widgets\r'],
      [/Options/, ' \r'],
      [/Unlock the repositories once the archive is saved and verified\? \(Y\/n\)/, '\r'],
      [/Delete the archive from the service once it is saved and verified\? \(y\/N\)/, '\r'],
      [/Start this export\?/, '\r'],
    ]);
    expect(result.code, result.screen).toBe(0);
    expect(result.screen).toMatch(/Then: unlock the repositories; keep the archive on the service/);
    const [migration] = sandbox.store.list(sandbox.store.organization('octo-org')!).filter((m) => m.kind === 'export');
    expect(migration?.body.lock_repositories).toBe(true);
    expect(migration?.locked.size).toBe(0);
    expect(migration?.archiveDeletedAt).toBeUndefined();
    expect(result.screen).not.toMatch(/still locked/);
  });

  it('shows a spinner while waiting and a progress bar while downloading', async () => {
    const { env } = await testSandbox({ exportSeconds: 1, archivePadBytes: 256 * 1024 });
    const output = join(mkdtempSync(join(tmpdir(), 'svc-tty-')), 'a.tar.gz');
    const result = await onTerminal(['export', 'widgets', '-o', output, '--interval', '0.2'], env, []);
    expect(result.code, result.screen).toBe(0);
    expect(result.screen).toMatch(/migration \d+ exported after/);
    expect(result.screen).toMatch(/\[#+-*\]\s+[\d.]+ KiB/);
    expect(result.screen).toMatch(/\d+%/);
  });

  it('deletes nothing when the confirmation is refused', async () => {
    const { sandbox, env } = await testSandbox();
    const result = await onTerminal(['delete-archive', '1000'], env, [[/Delete the archive/, 'n\r']]);
    expect(result.code).toBe(2);
    expect(result.screen).toMatch(/cancelled/);
    expect(sandbox.requests.filter((r) => r.method === 'DELETE')).toHaveLength(0);
  });
});

describe('a refusal without a terminal', () => {
  it.each([
    ['start', ['start', 'widgets', 'nope/x']],
    ['export', ['export', 'widgets', 'nope/x', '-o', '-']],
  ])('%s ends with exit 5 and the service\'s reason, nothing started', async (_name, args) => {
    const { sandbox, env } = await testSandbox();
    const result = await runCli(args, { env });
    expect(result.code, result.stderr).toBe(5);
    expect(result.stderr).toMatch(/error: the service rejected the request: 1 repository is not in octo-org: nope\/x\n/);
    expect(sandbox.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(sandbox.store.list(sandbox.store.organization('octo-org')!).filter((m) => m.kind === 'export')).toHaveLength(0);
  });
});
