import { linkSync, mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JOURNAL_NAME, type JournalEntry, JournalError, MAX_JOURNAL_BYTES, MAX_JOURNAL_LINE_BYTES, openJournal, readJournal } from '../../src/webhook/forward-journal.js';

// DIR/forwards.jsonl (docs/reliability.md#forward-journal): written 0600, created exclusively, never
// through a link, in bounded lines; read back as hostile input.

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-journal-'));
const entry = (file: string, outcome: JournalEntry['outcome'], status: number | null = outcome === 'delivered' ? 200 : 500): JournalEntry => ({
  file,
  delivery: file.replace(/\.http$/, ''),
  outcome,
  status,
  at: '2026-11-28T02:00:00.000Z',
  target: 'http://localhost:3000/hooks',
});
const noError = (error: Error) => {
  throw error;
};

describe('writing the journal', () => {
  it('creates it 0600 and appends one line per record, each file\'s last record read back in order', async () => {
    const dir = tempDir();
    const journal = await openJournal(dir, noError);
    journal.append(entry('a.http', 'failed'));
    journal.append(entry('b.http', 'delivered'));
    journal.append(entry('c.http', 'not_forwarded', null));
    journal.append(entry('a.http', 'delivered'));
    await journal.close();
    const path = join(dir, JOURNAL_NAME);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8').split('\n')).toHaveLength(5);
    // A second session appends to it: the first's lines stay.
    const again = await openJournal(dir, noError);
    again.append(entry('c.http', 'failed'));
    await again.close();
    const reading = await readJournal(dir);
    expect(reading?.bad).toBe(0);
    expect([...(reading?.last.values() ?? [])].map(({ file, outcome }) => [file, outcome])).toEqual([
      ['b.http', 'delivered'],
      ['a.http', 'delivered'],
      ['c.http', 'failed'],
    ]);
  });

  it('keeps a line bounded whatever a sender put in its delivery id', async () => {
    const dir = tempDir();
    const journal = await openJournal(dir, noError);
    journal.append({ ...entry('x~0123.http', 'failed'), delivery: '\u0001'.repeat(100_000) });
    await journal.close();
    const text = readFileSync(join(dir, JOURNAL_NAME), 'utf8');
    expect(Buffer.byteLength(text)).toBeLessThan(MAX_JOURNAL_LINE_BYTES);
    expect((await readJournal(dir))?.last.get('x~0123.http')?.outcome).toBe('failed');
  });

  it('never writes through a link planted under its name, nor to a file with a second name', async () => {
    const dir = tempDir();
    const elsewhere = join(tempDir(), 'victim');
    writeFileSync(elsewhere, 'keep me\n');
    symlinkSync(elsewhere, join(dir, JOURNAL_NAME));
    await expect(openJournal(dir, noError)).rejects.toThrow(/forwards\.jsonl: it is a symbolic link/);
    expect(readFileSync(elsewhere, 'utf8')).toBe('keep me\n');

    const linked = tempDir();
    linkSync(elsewhere, join(linked, JOURNAL_NAME));
    await expect(openJournal(linked, noError)).rejects.toThrow(/it has another name \(a hard link\)/);
    expect(readFileSync(elsewhere, 'utf8')).toBe('keep me\n');
  });

  it('refuses what is not a regular file, and makes an existing journal open to others 0600', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, JOURNAL_NAME));
    await expect(openJournal(dir, noError)).rejects.toThrow(JournalError);
    await expect(readJournal(dir)).rejects.toThrow(/it is not a regular file|directory/);
    const open = tempDir();
    writeFileSync(join(open, JOURNAL_NAME), '', { mode: 0o644 });
    await (await openJournal(open, noError)).close();
    expect(statSync(join(open, JOURNAL_NAME)).mode & 0o777).toBe(0o600);
  });
});

describe('reading the journal as hostile input', () => {
  it('none: undefined; larger than 64 MiB, or a link: refused', async () => {
    expect(await readJournal(tempDir())).toBeUndefined();
    const big = tempDir();
    writeFileSync(join(big, JOURNAL_NAME), '');
    truncateSync(join(big, JOURNAL_NAME), MAX_JOURNAL_BYTES + 1);
    await expect(readJournal(big)).rejects.toThrow(/more than 67108864/);
    const linked = tempDir();
    symlinkSync('/etc/passwd', join(linked, JOURNAL_NAME));
    await expect(readJournal(linked)).rejects.toThrow(/it is a symbolic link/);
  });

  it('counts and names every line that is not exactly a record, and never takes a path for a file', async () => {
    const dir = tempDir();
    const good = JSON.stringify(entry('good.http', 'failed'));
    const lines = [
      good,
      'not json',
      JSON.stringify({ ...entry('../outside.http', 'failed') }),
      JSON.stringify({ ...entry('sub/inner.http', 'failed') }),
      JSON.stringify({ ...entry('/etc/x.http', 'failed') }),
      JSON.stringify({ ...entry('notes.txt', 'failed') }),
      JSON.stringify({ ...entry('.hidden.http', 'failed') }),
      JSON.stringify({ ...entry('y.http', 'failed'), extra: 1 }),
      JSON.stringify({ ...entry('y.http', 'lost' as JournalEntry['outcome']) }),
      JSON.stringify({ ...entry('y.http', 'failed'), status: '500' }),
      JSON.stringify({ ...entry('y.http', 'failed'), at: 'yesterday' }),
      JSON.stringify([entry('y.http', 'failed')]),
      JSON.stringify({ ...entry('y.http', 'failed'), delivery: 'x'.repeat(MAX_JOURNAL_LINE_BYTES) }),
      '',
      JSON.stringify(entry('last.http', 'not_forwarded', null)),
    ];
    writeFileSync(join(dir, JOURNAL_NAME), lines.join('\n'));
    const reading = await readJournal(dir);
    expect([...(reading?.last.keys() ?? [])]).toEqual(['good.http', 'last.http']);
    expect(reading?.bad).toBe(12);
    expect(reading?.badLines).toEqual([2, 3, 4, 5, 6]);
  });
});
