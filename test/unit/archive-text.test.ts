import { describe, expect, it } from 'vitest';
import { escapeControl } from '../../src/archive-problem.js';

describe('text from inside an archive, as printed', () => {
  it('shows control characters and bidirectional overrides instead of obeying them', () => {
    expect(escapeControl('repo\u001b]0;title\u0007')).toBe('repo\\x1b]0;title\\x07');
    expect(escapeControl('evil\u202ecod.exe')).toBe('evil\\u202ecod.exe');
    expect(escapeControl('\u2066x\u2069')).toBe('\\u2066x\\u2069');
    expect(escapeControl('plain/ünïcode name')).toBe('plain/ünïcode name');
  });
});
