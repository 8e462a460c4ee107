import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RestoreJournalFile } from '../../src/core/restore/journal.js';
import { parseTarget, urlOf } from '../../src/core/restore/target.js';
import { UsageError } from '../../src/errors.js';

// The parts of `archive restore` that read what others wrote: the names an archive puts in a URL,
// and the journal a rerun goes on from.

describe('a repository URL', () => {
  const target = parseTarget('ssh://git@git.example.com/{owner}/{repo}.git');

  it('is the template with the names put in, a wiki as <repo>.wiki', () => {
    expect(urlOf(target, 'octo-org/widgets')).toEqual({ url: 'ssh://git@git.example.com/octo-org/widgets.git' });
    expect(urlOf(target, 'octo-org/widgets.wiki')).toEqual({ url: 'ssh://git@git.example.com/octo-org/widgets.wiki.git' });
  });

  it.each(['octo-org/../x', 'octo-org/-x', 'octo-org/.x', 'octo-org/a b', 'octo-org/a:b', 'octo-org/a@b', 'octo-org/a?b', 'octo-org/a#b', 'octo-org/a%2fb', '-o/x', 'octo-org/wídgets', 'octo-org/'])(
    'refuses to put %j in a URL',
    (name) => {
      expect(urlOf(target, name)).toEqual({ problem: expect.stringMatching(/never has, so it is not put in a URL/) as unknown });
    },
  );
});

describe('the restore journal', () => {
  const dir = () => mkdtempSync(join(tmpdir(), 'svc-restore-journal-'));

  it('records each repository proved, by template, private, and reads it back', async () => {
    const path = join(dir(), 'a.tgz.restore.json');
    const journal = await RestoreJournalFile.open(path);
    // Records made while one is written share the next write: every one is in the file at the end.
    await Promise.all(['a/x', 'a/y', 'a/z'].map((name, i) => journal.record('file:///t/{repo}', name, 'proved', Date.UTC(2026, 10, 27, 0, 0, i))));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const again = await RestoreJournalFile.open(path);
    expect(['a/x', 'a/y', 'a/z'].map((name) => again.state('file:///t/{repo}', name))).toEqual(['proved', 'proved', 'proved']);
    expect(again.state('ssh://other/{repo}', 'a/x')).toBeUndefined();
    expect(again.state('__proto__', 'a/x')).toBeUndefined();
    expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ version: 1, targets: { 'file:///t/{repo}': { 'a/x': { state: 'proved', at: '2026-11-27T00:00:00.000Z' } } } });
  });

  it.each([
    ['not JSON', 'nope'],
    ['another version', '{"version":2,"targets":{}}'],
    ['a state it never writes', '{"version":1,"targets":{"t":{"a/x":{"state":"pushed","at":"x"}}}}'],
    ['targets as a list', '{"version":1,"targets":[]}'],
  ])('refuses a journal it did not write: %s', async (_what, text) => {
    const path = join(dir(), 'j.json');
    writeFileSync(path, text);
    await expect(RestoreJournalFile.open(path)).rejects.toThrow(UsageError);
  });
});
