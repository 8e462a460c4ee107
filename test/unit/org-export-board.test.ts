import { EventEmitter } from 'node:events';
import stringWidth from 'string-width';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type BatchRecord, type OrgExportEvent, resumedEvents } from '../../src/core/org-export/journal.js';
import { createOrgExportReporter } from '../../src/ui/org-export.js';
import { Output } from '../../src/ui/output.js';

// The org export's progress as a human and a script see it, fed the events runOrgExport tells: the
// live board at 100 and 40 columns (its last frame, as the terminal shows it), the plain lines off a
// terminal, and the --json lines. Timers are vi's, so the board's redraw and its speeds are exact.

/** A stream that keeps what is written; a terminal of `columns` when given (it tells a resize as a TTY does). */
function stream(columns?: number) {
  const writes: string[] = [];
  return Object.assign(new EventEmitter(), {
    writes,
    isTTY: columns !== undefined,
    columns,
    write: (text: string) => (writes.push(text), true),
  });
}

/**
 * What a terminal `columns` wide shows after `writes`, as xterm and tmux do: text wraps at the
 * width (a wide character takes two columns), `ESC[nF` goes up n rows to the first column, `ESC[0J`
 * clears from the cursor to the end, `ESC[K` to the end of its row. Rows never scroll away.
 */
function screen(writes: string[], columns: number): string[] {
  const rows: string[][] = [[]];
  let row = 0;
  let col = 0;
  const at = (r: number) => (rows[r] ??= []);
  for (const token of writes.join('').match(/\u001b\[\d*[A-Za-z]|\n|[^\u001b\n]/gu) ?? []) {
    const sequence = /^\u001b\[(\d*)([A-Za-z])$/.exec(token);
    if (sequence) {
      const [, n, code] = sequence;
      if (code === 'F') [row, col] = [Math.max(0, row - Number(n || 1)), 0];
      if (code === 'J') {
        rows.splice(row + 1);
        at(row).splice(col);
      }
      if (code === 'K') at(row).splice(col);
    } else if (token === '\n') {
      [row, col] = [row + 1, 0];
      at(row);
    } else {
      const width = stringWidth(token);
      if (col + width > columns) [row, col] = [row + 1, 0];
      at(row)[col] = token;
      if (width === 2) at(row)[col + 1] = '';
      col += width;
    }
  }
  const lines = rows.map((cells) => Array.from(cells, (cell) => cell ?? ' ').join('').trimEnd());
  while (lines.at(-1) === '') lines.pop();
  return lines;
}

function reporterOn(columns: number | undefined, json = false) {
  const stdout = stream();
  const stderr = stream(columns);
  const out = new Output({ json, quiet: false, color: false, stdout, stderr });
  return { reporter: createOrgExportReporter(out, stderr as never), stdout, stderr, out };
}

/** The board's lines as last drawn: the last write that draws it, without its cursor moves. */
function board(writes: string[]): string[] {
  const frame = writes.findLast((text) => text.endsWith('\n\u001b[0J')) ?? '';
  return frame.replace(/^\u001b\[\d+F/, '').replace(/\n\u001b\[0J$/, '').split('\u001b[K\n').map((line) => line.replace(/\u001b\[K$/, ''));
}

const plan: OrgExportEvent = { type: 'plan', batches: 9, repositories: 402, resumed: true, journal: '/x/journal.json', done: 100, archives: 2 };
const resumed = (batch: number, state: 'started' | 'exported' | 'downloaded', migrationId: number): OrgExportEvent => ({
  type: 'batch', batch, state, migrationId, repositories: 50, message: `resuming migration ${migrationId}: ${state}`, resumed: true,
});

/** A resumed run: batch 3 waits on the service, 4 downloads, 5 is checked by git, 6 is being unlocked. */
function resumedRun(reporter: { onEvent(event: OrgExportEvent): void }) {
  reporter.onEvent(plan);
  reporter.onEvent(resumed(3, 'started', 103));
  reporter.onEvent(resumed(4, 'exported', 104));
  reporter.onEvent(resumed(5, 'exported', 105));
  reporter.onEvent(resumed(6, 'downloaded', 106));
  vi.advanceTimersByTime(200);
}

function moveOn(reporter: { onEvent(event: OrgExportEvent): void }) {
  reporter.onEvent({ type: 'migration', batch: 3, migrationId: 103, state: 'exporting' });
  reporter.onEvent({ type: 'step', batch: 4, migrationId: 104, step: 'downloading' });
  reporter.onEvent({ type: 'step', batch: 5, migrationId: 105, step: 'verifying' });
  reporter.onEvent({ type: 'verify', batch: 5, migrationId: 105, stage: 'git', done: 20, total: 50 });
  reporter.onEvent({ type: 'step', batch: 6, migrationId: 106, step: 'unlocking' });
  // A resumed download: its first 4 MiB were in the .part, and count in no speed.
  reporter.onEvent({ type: 'download', batch: 4, migrationId: 104, received: 4 << 20, total: 12 << 20 });
  vi.advanceTimersByTime(2000);
  reporter.onEvent({ type: 'download', batch: 4, migrationId: 104, received: 6 << 20, total: 12 << 20 });
  vi.advanceTimersByTime(200);
}

beforeEach(() => {
  vi.useFakeTimers({ now: Date.parse('2026-06-01T00:00:00Z') });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the live board', () => {
  it('at 100 columns shows a resumed run\'s batches at once, each with its migration and step; the totals move as git checks', () => {
    const { reporter, stderr } = reporterOn(100);
    resumedRun(reporter);
    expect(board(stderr.writes)).toEqual([
      '  batch 3 migration 103: waiting',
      '  batch 4 migration 104: exported',
      '  batch 5 migration 105: exported',
      '  batch 6 migration 106: saved',
      '100/402 repositories · 2/9 archives · 0 errors · 4 running',
    ]);
    moveOn(reporter);
    expect(board(stderr.writes)).toEqual([
      '  batch 3 migration 103: waiting (exporting)',
      '  batch 4 migration 104: downloading 6.0 MiB/12.0 MiB 1.0 MiB/s ETA 6s',
      '  batch 5 migration 105: verifying: git checked 20/50 repositories',
      '  batch 6 migration 106: unlocking',
      '100/402 repositories · 20 checked · 2/9 archives · 0 errors · 4 running',
    ]);
    reporter.onEvent({ type: 'step', batch: 5, migrationId: 105, step: 'verified' });
    reporter.onEvent({ type: 'batch', batch: 5, state: 'downloaded', migrationId: 105, repositories: 50, message: 'saved' });
    vi.advanceTimersByTime(200);
    expect(board(stderr.writes).slice(2)).toEqual([
      '  batch 5 migration 105: saved',
      '  batch 6 migration 106: unlocking',
      '100/402 repositories · 50 checked · 3/9 archives · 0 errors · 4 running',
    ]);
    reporter.stop();
  });

  it('at 40 columns keeps each batch\'s migration and step in a short form, within the width', () => {
    const { reporter, stderr } = reporterOn(40);
    resumedRun(reporter);
    moveOn(reporter);
    // A batch first heard of through its download (no resumed event) knows its migration too.
    reporter.onEvent({ type: 'download', batch: 7, migrationId: 107, received: 1 << 20, total: 4 << 20 });
    vi.advanceTimersByTime(200);
    const lines = board(stderr.writes);
    expect(lines).toEqual([
      'b3 m103: wait (exporting)',
      'b4 m104: dl 50% 930.9 KiB/s 7s',
      'b5 m105: verify 20/50 repos',
      'b6 m106: unlocking',
      // Under a second of it: no speed yet.
      'b7 m107: dl 25%',
      // What git checked so far is the part dropped first, whole: the batches running stay.
      '100/402 · 2/9 arch · 5 run',
    ]);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(37);
    reporter.stop();
  });

  it('at 40 columns the totals keep the errors and the batches running, dropping parts whole, never cutting a word', () => {
    const { reporter, stderr } = reporterOn(40);
    reporter.onEvent({ type: 'plan', batches: 24, repositories: 120, resumed: true, journal: '/x/journal.json', done: 50, archives: 10 });
    reporter.onEvent(resumed(3, 'started', 103));
    reporter.onEvent(resumed(4, 'exported', 104));
    reporter.onEvent({ type: 'verify', batch: 5, migrationId: 105, stage: 'git', done: 50, total: 50 });
    reporter.onEvent({ type: 'error', batch: 9, migrationId: 109, message: 'failed', exitCode: 6 });
    vi.advanceTimersByTime(200);
    expect(board(stderr.writes).at(-1)).toBe('50/120 · 10/24 arch · 1 err · 3 run');
    // Narrowed since, the batches running go next, then the archives; the errors last of all.
    for (const [columns, totals] of [[33, '50/120 · 10/24 arch · 1 err'], [24, '50/120 · 1 err']] as const) {
      stderr.columns = columns;
      stderr.emit('resize');
      expect(board(stderr.writes).at(-1)).toBe(totals);
    }
    reporter.stop();
  });
});

describe('the live board as the terminal shows it', () => {
  /** Three batches under git's check, at `columns`. */
  function checking(columns: number) {
    const on = reporterOn(columns);
    on.reporter.onEvent({ type: 'plan', batches: 8, repositories: 200, resumed: false, journal: '/x/journal.json', done: 0, archives: 0 });
    for (const batch of [1, 2, 3]) {
      on.reporter.onEvent({ type: 'batch', batch, state: 'started', migrationId: 1035 + batch, repositories: 25, message: `started migration ${1035 + batch}` });
      on.reporter.onEvent({ type: 'verify', batch, migrationId: 1035 + batch, stage: 'git', done: 0, total: 25 });
    }
    vi.advanceTimersByTime(200);
    return on;
  }
  const spammed = 'the service refuses new starts for now; batches wait 5 s before asking again (wait 1 of at most 20)';
  const retrying = 'retrying POST https://api.example.com/orgs/octo-org/migrations in 1.0 s (connection refused; attempt 2)…';

  for (const columns of [100, 40]) {
    it(`at ${columns} columns leaves no line of the board behind when a warning wraps, the board's own or any other message on stderr`, () => {
      const { reporter, stderr, out } = checking(columns);
      reporter.onEvent({ type: 'notice', message: spammed });
      // Written past the board (the client's retry, a rate limit waited on): above it, whole.
      out.info(retrying);
      reporter.onEvent({ type: 'verify', batch: 1, migrationId: 1036, stage: 'git', done: 10, total: 25 });
      vi.advanceTimersByTime(200);
      reporter.onEvent({ type: 'batch', batch: 1, state: 'done', migrationId: 1036, repositories: 25, message: 'done' });
      reporter.onEvent({ type: 'batch', batch: 2, state: 'done', migrationId: 1037, repositories: 25, message: 'done' });
      vi.advanceTimersByTime(200);
      const shown = screen(stderr.writes, columns).join('\n');
      expect(shown).not.toMatch(/(batch|b)1 m(igration )?1036|(batch|b)2 m(igration )?1037/);
      // Whole, wrapped where the terminal wraps it.
      const flat = (text: string) => text.replace(/\s+/g, '');
      expect(flat(shown)).toContain(flat(`warning: ${spammed}`));
      expect(flat(shown)).toContain(flat(retrying));
      expect(shown).toMatch(/✓ batch 1: done\n✓ batch 2: done\n( {2}batch 3 migration |b3 m)1038: /);
      reporter.stop();
      expect(screen(stderr.writes, columns).join('\n')).not.toMatch(/1038/);
    });
  }

  it('measures a line as the terminal does: a state of wide characters is cut to the width, not wrapped', () => {
    const { reporter, stderr } = checking(40);
    reporter.onEvent({ type: 'migration', batch: 3, migrationId: 1038, state: '导出中'.repeat(8) });
    vi.advanceTimersByTime(200);
    for (const line of board(stderr.writes)) expect(stringWidth(line)).toBeLessThanOrEqual(37);
    reporter.onEvent({ type: 'batch', batch: 3, state: 'done', migrationId: 1038, repositories: 25, message: 'done' });
    vi.advanceTimersByTime(200);
    expect(screen(stderr.writes, 40).join('\n')).not.toMatch(/导出中/);
    reporter.stop();
  });

  it('redraws at once when the terminal is resized, first going up every row the old lines wrap to at the new width', () => {
    const { reporter, stderr } = checking(100);
    const before = board(stderr.writes);
    stderr.columns = 40;
    stderr.emit('resize');
    // Lines of 66 columns take 2 rows each at 40 (the terminal rewraps them), the totals one.
    const rows = before.reduce((n, line) => n + Math.max(1, Math.ceil(stringWidth(line) / 40)), 0);
    expect(rows).toBeGreaterThan(before.length);
    expect(stderr.writes.at(-1)).toMatch(new RegExp(`^\\u001b\\[${rows}F`));
    expect(board(stderr.writes)).toEqual(['b1 m1036: verify 0/25 repos', 'b2 m1037: verify 0/25 repos', 'b3 m1038: verify 0/25 repos', '0/200 · 0/8 arch · 3 run']);
    reporter.stop();
    stderr.emit('resize');
    expect(stderr.writes.at(-1)).not.toMatch(/verify/);
  });
});

describe('batches before their migration', () => {
  const starting = (reporter: { onEvent(event: OrgExportEvent): void }) => {
    reporter.onEvent({ type: 'plan', batches: 8, repositories: 200, resumed: false, journal: '/x/journal.json', done: 0, archives: 0 });
    reporter.onEvent({ type: 'batch', batch: 1, state: 'starting', repositories: 25, message: 'starting' });
    reporter.onEvent({ type: 'batch', batch: 2, state: 'starting', repositories: 25, message: 'starting' });
    vi.advanceTimersByTime(200);
  };
  // The service's start limit: whichever batch meets a round of waits first says it for all.
  const refused = (reporter: { onEvent(event: OrgExportEvent): void }) => {
    reporter.onEvent({ type: 'step', batch: 1, step: 'waiting-to-start' });
    reporter.onEvent({ type: 'notice', message: 'the service refuses new starts for now; batches wait 5 s before asking again (wait 1 of at most 20)' });
    reporter.onEvent({ type: 'step', batch: 2, step: 'waiting-to-start' });
    vi.advanceTimersByTime(200);
  };

  it('on the board: each starting, then waiting for the service to take new starts, counted as running, without a migration "?"', () => {
    const { reporter, stderr } = reporterOn(100);
    starting(reporter);
    expect(board(stderr.writes)).toEqual(['  batch 1: starting', '  batch 2: starting', '0/200 repositories · 0/8 archives · 0 errors · 2 running']);
    refused(reporter);
    expect(board(stderr.writes)).toEqual([
      '  batch 1: waiting for the service to take new starts',
      '  batch 2: waiting for the service to take new starts',
      '0/200 repositories · 0/8 archives · 0 errors · 2 running',
    ]);
    reporter.onEvent({ type: 'batch', batch: 1, state: 'started', migrationId: 1036, repositories: 25, message: 'started migration 1036' });
    vi.advanceTimersByTime(200);
    expect(board(stderr.writes).slice(0, 2)).toEqual(['  batch 1 migration 1036: waiting', '  batch 2: waiting for the service to take new starts']);
    reporter.stop();
  });

  it('at 40 columns, in the short form', () => {
    const { reporter, stderr } = reporterOn(40);
    starting(reporter);
    refused(reporter);
    expect(board(stderr.writes)).toEqual(['b1: waiting to start', 'b2: waiting to start', '0/200 · 0/8 arch · 2 run']);
    reporter.stop();
  });

  it('off a terminal: a line each, once', () => {
    const { reporter, stderr } = reporterOn(undefined);
    starting(reporter);
    refused(reporter);
    expect(stderr.writes.join('').split('\n').filter(Boolean).slice(1)).toEqual([
      'batch 1: starting',
      'batch 2: starting',
      'batch 1: waiting for the service to take new starts',
      'warning: the service refuses new starts for now; batches wait 5 s before asking again (wait 1 of at most 20)',
      'batch 2: waiting for the service to take new starts',
    ]);
  });
});

describe('off a terminal', () => {
  it('one line per step change: resumed batches, the service\'s states while waiting once each (its end is the batch\'s line), verifying and its end, no progress', () => {
    const { reporter, stderr } = reporterOn(undefined);
    resumedRun(reporter);
    moveOn(reporter);
    reporter.onEvent({ type: 'migration', batch: 3, migrationId: 103, state: 'exporting' });
    reporter.onEvent({ type: 'verify', batch: 5, migrationId: 105, stage: 'git', done: 30, total: 50 });
    reporter.onEvent({ type: 'step', batch: 5, migrationId: 105, step: 'verified' });
    reporter.onEvent({ type: 'migration', batch: 3, migrationId: 103, state: 'exported' });
    reporter.stop();
    expect(stderr.writes.join('').split('\n').filter(Boolean)).toEqual([
      'resuming 402 repositories in 9 batches, 100 already done, 2 archives saved (journal: /x/journal.json)',
      'batch 3: resuming migration 103: started',
      'batch 4: resuming migration 104: exported',
      'batch 5: resuming migration 105: exported',
      'batch 6: resuming migration 106: downloaded',
      'batch 3 (migration 103): exporting on the service',
      'batch 4 (migration 104): downloading',
      'batch 5 (migration 105): verifying',
      'batch 6 (migration 106): unlocking',
      'batch 5 (migration 105): verified',
    ]);
  });
});

describe('a rerun', () => {
  it('says "resuming" only of batches an earlier run left under way: not of one it narrowed, skipped or finished', () => {
    const batch = (index: number, state: BatchRecord['state'], migrationIds: number[]): BatchRecord => ({ index, repositories: ['a'], state, migrationIds, attempts: 1 });
    const { reporter, stderr } = reporterOn(undefined);
    const journal = [batch(1, 'narrowed', [1004]), batch(2, 'skipped', [1005]), batch(3, 'done', [1006]), batch(4, 'started', [1007]), batch(5, 'pending', []), batch(6, 'starting', [])];
    for (const event of resumedEvents(journal)) reporter.onEvent(event);
    expect(stderr.writes.join('').split('\n').filter(Boolean)).toEqual(['batch 4: resuming migration 1007: started', 'batch 6: resuming: starting']);
  });
});

describe('--json', () => {
  it('prints each event with snake_case keys; the release says whether it unlocked; the archive is a field; no progress lines', () => {
    const { reporter, stdout } = reporterOn(undefined, true);
    const events: OrgExportEvent[] = [
      { type: 'batch', batch: 1, state: 'started', migrationId: 7, repositories: 2, message: 'started migration 7' },
      { type: 'migration', batch: 1, migrationId: 7, state: 'exported' },
      { type: 'step', batch: 1, migrationId: 7, step: 'verifying' },
      { type: 'download', batch: 1, migrationId: 7, received: 10, total: 20 },
      { type: 'verify', batch: 1, migrationId: 7, stage: 'reading', done: 10, total: 20 },
      { type: 'batch', batch: 1, state: 'downloaded', migrationId: 7, repositories: 2, message: 'saved', archive: '/x/migration-7.tar.gz' },
      { type: 'batch', batch: 1, state: 'unlocked', migrationId: 7, repositories: 2, message: 'kept locked', repositoriesUnlocked: false },
      { type: 'error', batch: 2, migrationId: 8, message: 'failed', exitCode: 6, hint: 'run it again' },
    ];
    for (const event of events) reporter.onEvent(event);
    const lines = stdout.writes.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([
      { type: 'batch', batch: 1, state: 'started', migration_id: 7, repositories: 2, message: 'started migration 7' },
      { type: 'migration', batch: 1, migration_id: 7, state: 'exported' },
      { type: 'step', batch: 1, migration_id: 7, step: 'verifying' },
      { type: 'batch', batch: 1, state: 'downloaded', migration_id: 7, repositories: 2, message: 'saved', archive: '/x/migration-7.tar.gz' },
      { type: 'batch', batch: 1, state: 'released', migration_id: 7, repositories: 2, message: 'kept locked', repositories_unlocked: false },
      { type: 'error', batch: 2, migration_id: 8, message: 'failed', exit_code: 6, hint: 'run it again' },
    ]);
    for (const line of lines) for (const key of Object.keys(line)) expect(key).toMatch(/^[a-z_]+$/);
  });
});
