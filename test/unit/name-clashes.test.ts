import { describe, expect, it } from 'vitest';
import { foldName, NameClashes } from '../../src/core/archive/name-clashes.js';

// Names a case-insensitive or normalising disk takes for one: the second is a problem, named with
// the first; whatever an archive holds, what is kept to find them is bounded.

describe('names that fold to one', () => {
  it('letter case, Unicode case folding and NFC against NFD', () => {
    expect(foldName('CONFIG')).toBe(foldName('config'));
    expect(foldName('Straße')).toBe(foldName('STRASSE'));
    expect(foldName('caf\u00e9')).toBe(foldName('cafe\u0301'));
    expect(foldName('\u212a')).toBe(foldName('k'));
  });

  it('names the member the second clashes with, and why', () => {
    const names = new NameClashes();
    expect(names.add('r.git/config', false)).toBeUndefined();
    expect(names.add('r.git/CONFIG', false)).toBe('clashes with r.git/config when letter case is ignored (one would be written over the other)');
    expect(names.add('caf\u00e9.json', false)).toBeUndefined();
    expect(names.add('cafe\u0301.json', false)).toMatch(/^clashes with caf\u00e9\.json when Unicode normalisation is ignored/);
    // Directories implied by a name clash too: `A/x` and `a/y` are one directory on macOS.
    expect(names.add('A/x', false)).toBeUndefined();
    expect(names.add('a/y', false)).toBe('clashes with A when letter case is ignored (one would be written over the other)');
  });

  it('a name twice, a member inside a file, a file where a directory is', () => {
    const names = new NameClashes();
    expect(names.add('dir', true)).toBeUndefined();
    expect(names.add('dir', true)).toBeUndefined();
    expect(names.add('dir', false)).toBe('is a file where the archive has a directory');
    expect(names.add('f', false)).toBeUndefined();
    expect(names.add('f', false)).toBe('appears twice in the archive (an importer would keep only the last)');
    expect(names.add('f/x', false)).toBe('is inside f, which is a file in the archive');
    expect(names.add('f', true)).toBe('is a directory where the archive has a file');
  });

  it('stops keeping names past its bound, said once', () => {
    const names = new NameClashes();
    const said: string[] = [];
    for (let i = 0; i <= 250_001; i++) {
      const problem = names.add(`d${i % 100}/${i}`, false);
      if (problem) said.push(problem);
    }
    expect(said).toEqual([expect.stringMatching(/^the archive holds more member names than a migration archive does \(over 250000, or over 48 MB of them\)/)]);
  });

  it('counts the memory of long names: 48 MB of them is its bound before 250,000 members', () => {
    const names = new NameClashes();
    let added = 0;
    while (!names.add(`${'語'.repeat(100)}-${added}`, false)) added++;
    // Some 240 bytes each (two a character, and the entry's own cost).
    expect(added).toBeGreaterThan(160_000);
    expect(added).toBeLessThan(240_000);
  });

  it('keeps 250,000 names of 70 characters, as many attachments as bench/verify.js holds', () => {
    const names = new NameClashes();
    for (let i = 0; i < 250_000; i++) {
      expect(names.add(`attachments/d${i % 1000}/${'x'.repeat(60)}-${String(i).padStart(7, '0')}.png`, false)).toBeUndefined();
    }
  });
});
