import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Migration } from '../../src/api/types.js';
import { untilInDirectory } from '../helpers/fs-events.js';
import { BIN, runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';
import { hasScript, onTerminal } from '../helpers/terminal.js';
import { unless } from '../helpers/skip.js';

// Issue #35, points 8 (the download's Ctrl-C hint), 9 (an archive never floods a terminal) and 11
// (storage slow to send its first byte: a waiting line, and a Ctrl-C there says how to go on).

const FAST = ['--interval', '0.1'];
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-dl-term-'));
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

async function exported(options: Parameters<typeof testSandbox>[0] = {}) {
  const box = await testSandbox({ exportSeconds: 0.2, ...options });
  const started = await runCli(['start', 'widgets', '--wait', '--json', ...FAST], { env: box.env });
  expect(started.code, started.stderr).toBe(0);
  const { id } = JSON.parse(started.stdout) as Migration;
  box.sandbox.requests.length = 0;
  return { ...box, id };
}

/** The command a hint names between backticks. */
function hinted(stderr: string): string {
  const command = /^hint: .*?`(svc-migrate download [^`]*)`/m.exec(stderr)?.[1];
  expect(command, stderr).toBeDefined();
  return command as string;
}

/** Runs a hinted command as a shell (bash) would read it, `svc-migrate` being the built binary. */
function runHinted(command: string, env: Record<string, string>): Promise<{ status: number | null; stderr: string }> {
  const script = `svc-migrate() { "${process.execPath}" "${BIN}" "$@"; }; ${command}`;
  // Not spawnSync: the sandbox answering it lives in this process's event loop.
  const child = spawn('bash', ['-c', script], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stderr })));
}

describe('-o - when stdout is a terminal (point 9)', () => {
  it('into a pipe the summary says "written to stdout", not "saved -"', async () => {
    const { env, id } = await exported();
    const result = await runCli(['download', String(id), '-o', '-'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdoutBytes.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect(result.stderr).toMatch(new RegExp(`^written to stdout \\(.*, ${result.stdoutBytes.length} bytes\\)$`, 'm'));
    expect(result.stderr).not.toMatch(/saved -/);
  });

  it.skipIf(!hasScript)(`on a real terminal (the built binary): exit 2 and no gzip on the screen${unless(hasScript, 'util-linux `script` is not installed')}`, async () => {
    const { env, id } = await exported();
    const result = await onTerminal(['download', String(id), '-o', '-'], { env, setup: 'stty cols 100 rows 40' });
    expect(result.code).toBe(2);
    expect(result.screen).toMatch(/pipe it or use -o FILE/);
    expect(result.screen).not.toContain('\x1f\x8b');
  });
});

describe('a Ctrl-C during a download names the command that resumes it (point 8)', () => {
  it('with -o and the flags that matter; following it resumes from the .part', async () => {
    const { sandbox, env, id, fetch } = await exported({ archivePadBytes: 4 * 1024 * 1024 });
    const head = await fetch(`${sandbox.baseUrl}/orgs/octo-org/migrations/${id}/archive`, {
      headers: { authorization: `Bearer ${sandbox.ownerToken}` },
    });
    const etag = (head.headers.get('etag') ?? '').replaceAll('"', '');
    await head.arrayBuffer();
    sandbox.faults.set({ throttleBytesPerSecond: 2 * 1024 * 1024 });
    const dir = join(tempDir(), 'my archives');
    mkdirSync(dir);
    const output = join(dir, 'big.tgz');
    const args = ['download', String(id), '-o', output, '--org', 'octo-org', '--no-checksum', '--no-verify'];
    const controller = new AbortController();
    // Ctrl-C once the first bytes are in the .part file.
    const partStarted = untilInDirectory(dir, () => existsSync(`${output}.part`) && statSync(`${output}.part`).size > 0, controller.signal);
    partStarted.then(() => controller.abort(), () => {});
    const stopped = await runCli(args, { env, signal: controller.signal });
    expect(stopped.code, stopped.stderr).toBe(130);
    const command = hinted(stopped.stderr);
    expect(command).toBe(`svc-migrate download ${id} -o '${output}' --org octo-org --no-checksum --no-verify`);
    expect(stopped.stderr).toMatch(/bytes are kept in .*big\.tgz\.part; `svc-migrate download .*` resumes from there/);
    const kept = statSync(`${output}.part`).size;

    sandbox.faults.clear();
    sandbox.requests.length = 0;
    const resumed = await runHinted(command, env);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/resuming .*big\.tgz from/);
    const ranges = sandbox.requests.filter((r) => r.origin === 'storage').map((r) => r.headers.range);
    expect(ranges[0]).toBe(`bytes=${kept}-`);
    expect(sha256(readFileSync(output))).toBe(etag);
    // --no-checksum came along: no .sha256 beside it.
    expect(existsSync(`${output}.sha256`)).toBe(false);
  }, 60_000);
});

describe('storage slow to send its first byte (point 11)', () => {
  it('a terminal shows "waiting for storage"; a Ctrl-C there gives the resume command', async () => {
    const { sandbox, env, id } = await exported();
    sandbox.faults.set({ storageStallMs: 5_000 });
    const output = join(tempDir(), 'slow.tgz');
    const controller = new AbortController();
    const result = await runCli(['download', String(id), '-o', output, '--no-verify'], {
      env,
      signal: controller.signal,
      stderrColumns: 100,
      onStderr: (text) => {
        if (text.includes('waiting for storage')) controller.abort();
      },
    });
    expect(result.code).toBe(130);
    expect(result.stderr).toMatch(/\r\x1b\[2Kwaiting for storage… \d+s · Ctrl-C stops; the same command resumes/);
    expect(result.stderr).toMatch(/(^|\x1b\[2K)error: download interrupted while waiting for storage$/m);
    expect(hinted(result.stderr)).toBe(`svc-migrate download ${id} -o ${output} --no-verify`);
    expect(existsSync(output)).toBe(false);
  }, 30_000);

  it('off a terminal and with --json nothing extra is printed while waiting', async () => {
    const { sandbox, env, id } = await exported();
    sandbox.faults.set({ storageStallMs: 700 });
    for (const extra of [[], ['--json']]) {
      const output = join(tempDir(), 'slow.tgz');
      const result = await runCli(['download', String(id), '-o', output, ...extra], { env });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).not.toMatch(/waiting/);
    }
  }, 30_000);

  it.skipIf(!hasScript)(`through the built binary on a terminal: Ctrl-C in the gap, exit 130 and the hint${unless(hasScript, 'util-linux `script` is not installed')}`, async () => {
    const { sandbox, env, id } = await exported();
    sandbox.faults.set({ storageStallMs: 10_000 });
    const output = join(tempDir(), 'slow.tgz');
    const result = await onTerminal(['download', String(id), '-o', output], {
      env,
      setup: 'stty cols 100 rows 40',
      steps: [[/waiting for storage/, '\x03']],
    });
    expect(result.code).toBe(130);
    expect(result.screen).toMatch(/download interrupted while waiting for storage/);
    expect(result.screen).toContain(`run \`svc-migrate download ${id} -o ${output}\` to start again`);
  }, 30_000);
});
