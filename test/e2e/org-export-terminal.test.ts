import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Journal } from '../../src/core/org-export/journal.js';
import { BIN, runCli } from '../helpers/run-cli.js';
import { testSandbox } from '../helpers/sandbox.js';
import type { SandboxOptions } from '../../src/sandbox/server.js';

// util-linux `script` gives the CLI a real pseudo-terminal; `stty cols` sets its width.
const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

/** Runs the built program on a terminal `columns` wide; Ctrl-C is typed at it once `interruptWhen` holds of the screen. */
function onTerminal(columns: number, args: string[], env: Record<string, string>, interruptWhen?: (screen: string) => boolean) {
  const quoted = [process.execPath, BIN, ...args].map((part) => `'${part.replaceAll('\'', '\'\\\'\'')}'`).join(' ');
  const child = spawn('script', ['-qfec', `stty cols ${columns} rows 40; ${quoted}`, '/dev/null'], {
    env: { ...process.env, ...env, CI: '', TERM: 'xterm' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let screen = '';
  let interrupted = false;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    screen += chunk;
    if (interrupted || !interruptWhen?.(screen)) return;
    interrupted = true;
    child.stdin.write('\x03');
  });
  return new Promise<{ code: number | null; screen: string }>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, screen });
    });
  });
}

async function setup(exportSeconds = 0.5, more: SandboxOptions = {}) {
  const { sandbox, env } = await testSandbox({ repositories: 6, exportSeconds, archivePadBytes: 512 * 1024, ...more });
  const dir = mkdtempSync(join(tmpdir(), 'svc-org-tty-'));
  writeFileSync(join(dir, 'repos.txt'), 'repo-0001\nrepo-0002\nrepo-0003\nrepo-0004\nrepo-0005\nrepo-0006\n');
  const args = ['export', '--repos-file', join(dir, 'repos.txt'), '--output-dir', join(dir, 'out'), '--batch-size', '2',
    '--parallel', '3', '--interval', '0.1'];
  return { sandbox, env, args };
}

describe.skipIf(!hasScript)('export --output-dir on a terminal', () => {
  it('redraws one line per running migration and an overall line in place', async () => {
    const { env, args } = await setup();
    const result = await onTerminal(100, args, env);
    expect(result.code, result.screen).toBe(0);
    // The board moves the cursor up over itself instead of scrolling new lines.
    expect(result.screen).toMatch(/\u001b\[\d+F/);
    expect(result.screen).toMatch(/batch \d migration \d+: (starting|waiting|exported|downloading|verifying)/);
    expect(result.screen).toMatch(/\d+\/6 repositories( · \d+ checked)? · \d\/3 archives · 0 errors · \d running/);
    expect(result.screen).toMatch(/6\/6 repositories in verified archives/);
  }, 60_000);

  it('starts its counters from the journal: a run that goes on after another shows what that one finished', async () => {
    const { env, args } = await setup();
    // A first run, in-process, stopped (Ctrl-C) once a batch is done.
    const stop = new AbortController();
    const first = await runCli([...args, '--parallel', '1'], {
      env,
      signal: stop.signal,
      onStderr: (text) => {
        if (/batch \d: done/.test(text)) stop.abort();
      },
    });
    expect(first.code, first.stderr).toBe(130);
    const journal = JSON.parse(readFileSync(join(args[4] as string, 'svc-migrate-journal.json'), 'utf8')) as Journal;
    const done = journal.batches.filter((b) => b.state === 'done').reduce((n, b) => n + b.repositories.length, 0);
    const archives = journal.batches.filter((b) => b.archive && ['downloaded', 'unlocked', 'done'].includes(b.state)).length;
    expect(done).toBeGreaterThan(0);

    const result = await onTerminal(100, args, env);
    expect(result.code, result.screen).toBe(0);
    expect(result.screen).toMatch(new RegExp(`resuming 6 repositories in 3 batches, ${done} already done, ${archives} archive${archives === 1 ? '' : 's'} saved`));
    // The first overall line drawn already counts what the journal holds.
    expect(/(\d+)\/6 repositories · (\d)\/3 archives/.exec(result.screen)?.slice(1)).toEqual([String(done), String(archives)]);
    expect(result.screen).toMatch(/6\/6 repositories( · \d+ checked)? · 3\/3 archives/);
  }, 60_000);

  it('counts the batches a resumed run waits for as running, with the state the service reports', async () => {
    // Migrations of an hour: a first run, in-process on the sandbox's clock, is stopped (Ctrl-C) once
    // all three are started, long before any is exported.
    const { sandbox, env, args } = await setup(3600);
    const stop = new AbortController();
    let said = '';
    const first = await runCli(args, {
      env,
      signal: stop.signal,
      onStderr: (text) => {
        said += text;
        if ((said.match(/started migration \d+/g) ?? []).length === 3) stop.abort();
      },
    });
    expect(first.code, first.stderr).toBe(130);
    const journal = JSON.parse(readFileSync(join(args[4] as string, 'svc-migrate-journal.json'), 'utf8')) as Journal;
    expect(journal.batches.map((b) => b.state)).toEqual(['started', 'started', 'started']);
    // Then the sandbox's clock moves past their first fifth, spent pending.
    sandbox.clock.advance(15 * 60_000);

    // The run that goes on waits for them: the board shows each, not "0 running". Ctrl-C once it has.
    const exporting = /batch \d migration \d+: waiting \(exporting\)/;
    const running = /0\/6 repositories · 0\/3 archives · 0 errors · 3 running/;
    const result = await onTerminal(100, args, env, (screen) => exporting.test(screen) && running.test(screen));
    expect(result.code, result.screen).toBe(130);
    expect(result.screen).toMatch(exporting);
    expect(result.screen).toMatch(running);

    // At 40 columns, the short form: each batch with its migration from the first frame, never "?".
    const ids = journal.batches.map((b) => b.migrationIds[0]);
    const narrow = await onTerminal(40, args, env, (screen) => ids.every((id) => new RegExp(`b\\d m${id}: wait`).test(screen)));
    expect(narrow.code, narrow.screen).toBe(130);
    expect(narrow.screen).not.toMatch(/m\?/);
  }, 60_000);

  it('shows a batch whose start the service refuses for now as waiting for it, at 100 and 40 columns', async () => {
    // Two starts a minute: the batch whose start arrives third waits (which one, the race of three
    // starts sent at once decides).
    const { env, args } = await setup(3600, { spamLimit: { starts: 2, windowSeconds: 60 } });
    const waiting = / {2}batch \d: waiting for the service to take new starts\u001b\[K/;
    const result = await onTerminal(100, args, env, (screen) => waiting.test(screen));
    expect(result.code, result.screen).toBe(130);
    expect(result.screen).toMatch(/warning: the service refuses new starts for now/);
    expect(result.screen).toMatch(/3 running/);
    const narrow = await onTerminal(40, args, env, (screen) => /b\d: waiting to start/.test(screen));
    expect(narrow.code, narrow.screen).toBe(130);
  }, 60_000);

  it('falls back to plain lines on a terminal too narrow for the board', async () => {
    const { env, args } = await setup();
    const result = await onTerminal(30, args, env);
    expect(result.code, result.screen).toBe(0);
    expect(result.screen).not.toMatch(/\u001b\[\d+F/);
    expect(result.screen).toMatch(/batch 1: started migration \d+/);
  }, 60_000);
});
