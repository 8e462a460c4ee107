import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Migration } from '../../src/api/types.js';
import { Output } from '../../src/ui/output.js';
import { BIN, runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';
import { unless } from '../helpers/skip.js';

// Issue #35, point 10 (second round): every table and live line on a terminal fits its width.

const FAST = ['--interval', '0.05'];
const BOX = /[│┌┐└┘─]/;

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'svc-width-'));
}

function reposFile(count: number): string {
  const file = join(tempDir(), 'repos.txt');
  writeFileSync(file, `${Array.from({ length: count }, (_, i) => `repo-${String(i + 1).padStart(4, '0')}`).join('\n')}\n`);
  return file;
}

/** Every line no wider than the terminal, no borders, one line per row (rows start with their key). */
function expectFitted(stdout: string, columns: number, rowKey: RegExp, rows: number): string[] {
  const lines = stdout.trimEnd().split('\n');
  for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(columns);
  expect(stdout).not.toMatch(BOX);
  expect(lines.filter((line) => rowKey.test(line))).toHaveLength(rows);
  return lines;
}

describe('tables on a 40-column terminal: one line per row, cut with …', () => {
  it('the batched export\'s closing summary', async () => {
    const { env } = await testSandbox({ repositories: 12, exportSeconds: 0.1 });
    const args = ['export', '--repos-file', reposFile(12), '--output-dir', join(tempDir(), 'out'), '--batch-size', '4', '--lock', '--unlock', '--yes', '--no-color', ...FAST];
    const result = await runCli(args, { env, terminal: { columns: 40 } });
    expect(result.code, result.stderr).toBe(0);
    const lines = expectFitted(result.stdout, 40, /^[123] {2,}/, 3);
    expect(lines[0]).toMatch(/^BATCH +.*STATE/);
    // The key and the state are never cut.
    for (const row of lines.filter((line) => /^[123] /.test(line))) expect(row).toMatch(/ done /);
    expect(result.stdout).toMatch(/12\/12 repositories in verified archives/);
  }, 60_000);

  it('the --dry-run plan', async () => {
    const { env } = await testSandbox({ repositories: 12 });
    const args = ['export', '--repos-file', reposFile(12), '--output-dir', join(tempDir(), 'out'), '--batch-size', '4', '--dry-run', '--no-color'];
    const result = await runCli(args, { env, terminal: { columns: 40 } });
    expect(result.code, result.stderr).toBe(0);
    const table = result.stdout.split('\ndry run:')[0] ?? '';
    const lines = expectFitted(table, 40, /^[123] {2,}/, 3);
    for (const row of lines.slice(1)) expect(row).toMatch(/ pending /);
  });

  for (const columns of [40, 80, 100]) {
    it(`archive inspect at ${columns} columns: headers never cut, a long one wrapped at its spaces`, async () => {
      const { env } = await testSandbox({ exportSeconds: 0.1 });
      const output = join(tempDir(), 'a.tar.gz');
      const exported = await runCli(['export', 'widgets', 'Hello-World', 'docs.site', '-o', output, ...FAST], { env });
      expect(exported.code, exported.stderr).toBe(0);
      const result = await runCli(['archive', 'inspect', output, '--no-color'], { terminal: { columns } });
      expect(result.code, result.stderr).toBe(0);
      const table = result.stdout.split('\n').filter((line) => line && !/^\S+\.tar\.gz: |^metadata: /.test(line)).join('\n');
      const lines = expectFitted(table, columns, /^octo-org\//, 3);
      expect(lines[0]).toMatch(/^REPOSITORY /);
      const head = lines.slice(0, lines.findIndex((line) => line.startsWith('octo-org/')));
      // Every word of the header is a whole word of a column's name (no `PULL …`, no `MILEST`/`ONES`).
      const words = ['REPOSITORY', 'REFS', 'GIT', 'DATA', 'ISSUE', 'COMMENTS', 'EVENTS', 'ISSUES', 'MILESTONES', 'PULL', 'REQUEST', 'REQUESTS', 'REVIEW', 'REVIEWS', 'THREADS', 'RELEASES'];
      expect(head.join(' ')).not.toContain('…');
      for (const word of head.join(' ').split(/\s+/).filter(Boolean)) expect(words).toContain(word);
    }, 60_000);
  }
});

describe('list at 40 columns, as gh: the id and the state whole, dates shortened, then the rest cut', () => {
  it('keeps ID and STATE readable', async () => {
    // Exports that outlast the test: both lists see the same states.
    const { env } = await testSandbox({ exportSeconds: 600 });
    for (const extra of [['--lock'], []]) {
      const started = await runCli(['start', 'widgets', 'docs.site', 'Hello-World', '--json', ...extra], { env });
      expect(started.code, started.stderr).toBe(0);
    }
    const all = JSON.parse((await runCli(['list', '--json'], { env })).stdout) as Migration[];
    const list = await runCli(['list', '--no-color'], { env, terminal: { columns: 40 } });
    expect(list.code, list.stderr).toBe(0);
    const lines = expectFitted(list.stdout, 40, /^\d+ /, all.length);
    expect(lines[0]).toMatch(/^ID +STATE +/);
    for (const [index, migration] of all.entries()) {
      // The whole id and the whole state, then a date (no "expo…", no "2026…").
      expect(lines[index + 1]).toMatch(new RegExp(`^${migration.id} +${migration.state} `));
      expect(lines[index + 1]).toMatch(/(\d{4}-\d{2}-\d{2}|[A-Z][a-z]{2} \d{1,2})$/);
    }
  });
});

describe('archive inspect in a pipe', () => {
  it('stdout is the tab-separated rows only; the summary, the columns and the metadata go to stderr', async () => {
    const { env } = await testSandbox({ exportSeconds: 0.1 });
    const output = join(tempDir(), 'a.tar.gz');
    const exported = await runCli(['export', 'widgets', 'Hello-World', 'docs.site', '-o', output, ...FAST], { env });
    expect(exported.code, exported.stderr).toBe(0);
    const result = await runCli(['archive', 'inspect', output]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line).toMatch(/^octo-org\/[^\t]+\t/);
    expect(result.stderr).toMatch(/a\.tar\.gz: .*organization octo-org/);
    expect(result.stderr).toMatch(/^columns: REPOSITORY, REFS, GIT DATA, ISSUE COMMENTS, ISSUE EVENTS, ISSUES, /m);
    expect(result.stderr).toMatch(/^metadata: /m);
    // The header names the columns in the same order as the rows.
    const columns = /^columns: (.*)$/m.exec(result.stderr)?.[1]?.split(', ') ?? [];
    expect(lines[0]?.split('\t')).toHaveLength(columns.length);
  }, 60_000);
});

describe('repos shows a page and says so', () => {
  it('"showing 30 of 46 repositories (use --all)" on stderr; nothing with --all', async () => {
    const { env } = await testSandbox({ repositories: 60 });
    const started = await runCli(['start', '--repos-file', reposFile(46), '--json'], { env });
    expect(started.code, started.stderr).toBe(0);
    const { id } = JSON.parse(started.stdout) as Migration;
    const page = await runCli(['repos', String(id)], { env });
    expect(page.code, page.stderr).toBe(0);
    expect(page.stdout.trimEnd().split('\n')).toHaveLength(30);
    expect(page.stderr).toBe('showing 30 of 46 repositories (use --all)\n');
    const second = await runCli(['repos', String(id), '--page', '2', '--per-page', '10'], { env });
    expect(second.stderr).toBe('showing 10 of 46 repositories, page 2 (use --all)\n');
    const all = await runCli(['repos', String(id), '--all'], { env });
    expect(all.stdout.trimEnd().split('\n')).toHaveLength(46);
    expect(all.stderr).toBe('');
  });
});

class Screen extends Writable {
  text = '';
  isTTY = true;
  columns: number;
  constructor(columns: number) {
    super();
    this.columns = columns;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString('utf8');
    callback();
  }

  // What a tty.WriteStream has and ora calls.
  cursorTo(): boolean {
    this.text += '\r';
    return true;
  }

  clearLine(): boolean {
    this.text += '\u001b[2K';
    return true;
  }

  moveCursor(): boolean {
    return true;
  }
}

/** What each redraw leaves on the line: the text after the last clear of each write. */
function drawnLines(text: string): string[] {
  return text.split('\r\u001b[2K').map((piece) => piece.replace(/\n.*/s, '')).filter(Boolean);
}

describe('live lines leave room for the ^C a terminal echoes', () => {
  it('a progress line at 40 columns is at most 37 wide and keeps total, percentage and ETA (the bar gives way first)', () => {
    const stderr = new Screen(40);
    const out = new Output({ json: false, quiet: false, color: false, stdout: new Screen(40), stderr });
    const bar = out.progress();
    const GiB = 1024 ** 3;
    bar.update({ received: 1.8 * GiB, total: 3 * GiB, resumedFrom: 1.7 * GiB });
    bar.done();
    const [line] = drawnLines(stderr.text);
    expect(line).toBeDefined();
    expect(line?.length, line).toBeLessThanOrEqual(37);
    expect(line).toMatch(/1\.8 GiB +\/ 3\.0 GiB +60%/);
  });

  it('at 100 columns the bar is drawn whole, with every number', () => {
    const stderr = new Screen(100);
    const out = new Output({ json: false, quiet: false, color: false, stdout: new Screen(100), stderr });
    const bar = out.progress();
    bar.update({ received: 50, total: 100, resumedFrom: 0 });
    bar.done();
    const [line] = drawnLines(stderr.text);
    expect(line).toMatch(/^\[#{12}-{12}\] {2}50 B +\/ 100 B +50% .*B\/s$/);
  });

  it('a spinner\'s text is cut to the width less 3 columns', async () => {
    const stderr = new Screen(40);
    const out = new Output({ json: false, quiet: false, color: false, stdout: new Screen(40), stderr });
    const spinner = await out.spinner('waiting for migration 1001 exporting · 1m35s · last: 1001 pending → exporting at 11:23:05Z');
    spinner.stop();
    // With CI set, ora draws no frames but writes the line once, ended by a newline.
    const frames = stderr.text.split(/\r|\n|\u001b\[[?0-9;]*[A-Za-z]/).filter((piece) => piece.trim());
    expect(frames.length).toBeGreaterThan(0);
    for (const frame of frames) expect(frame.length, frame).toBeLessThanOrEqual(37);
  });
});

const hasTmux = spawnSync('tmux', ['-V'], { stdio: 'ignore' }).status === 0;

/** A private tmux server (its own socket): a 40-column terminal whose screen can be read as a person sees it. */
function tmux(socket: string, ...args: string[]): string {
  const result = spawnSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
  return result.stdout;
}

/**
 * Resolves once `check` holds, looked at again each time the pane writes (tmux pipes it to `log`);
 * the test's timeout is the ceiling.
 */
function untilWritten(log: string, check: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const watcher = watch(log, () => {
      if (!check()) return;
      watcher.close();
      resolve();
    });
    if (check()) {
      watcher.close();
      resolve();
    }
  });
}

describe.skipIf(!hasTmux)(`Ctrl-C during a download on a 40-column terminal${unless(hasTmux, 'tmux is not installed')}`, () => {
  it('leaves no piece of the progress line above the error', async () => {
    const { sandbox, env } = await testSandbox({ exportSeconds: 0.1, archivePadBytes: 5 * 1024 * 1024 });
    const started = await runCli(['start', 'widgets', '--wait', '--json', ...FAST], { env });
    expect(started.code, started.stderr).toBe(0);
    const { id } = JSON.parse(started.stdout) as Migration;
    sandbox.faults.set({ throttleBytesPerSecond: 200_000 });
    const output = join(tempDir(), 'big.tgz');
    const socket = `svc-width-${randomUUID()}`;
    const command = [
      'env',
      ...Object.entries({ ...env, TERM: 'xterm', CI: '' }).map(([key, value]) => `${key}=${value}`),
      process.execPath, BIN, 'download', String(id), '-o', output, '--no-color',
    ].map((part) => `'${part.replaceAll('\'', '\'\\\'\'')}'`).join(' ');
    try {
      tmux(socket, 'new-session', '-d', '-x', '40', '-y', '20', `${command}; echo EXIT=$?; sleep 30`);
      const screen = () => tmux(socket, 'capture-pane', '-p');
      const log = join(tempDir(), 'pane.log');
      writeFileSync(log, '');
      tmux(socket, 'pipe-pane', '-o', `cat >> '${log}'`);
      await untilWritten(log, () => /\d (KiB|MiB) /.test(screen()));
      tmux(socket, 'send-keys', 'C-c');
      await untilWritten(log, () => /EXIT=130/.test(screen()));
      const lines = screen().split('\n');
      const error = lines.findIndex((line) => line.startsWith('error: download interrupted'));
      expect(error, screen()).toBe(0);
    } finally {
      tmux(socket, 'kill-server');
    }
  }, 60_000);
});
