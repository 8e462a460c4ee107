import { describe, expect, it } from 'vitest';
import { inertText } from '../../src/support/outside-text.js';

describe('text from inside an archive, as printed', () => {
  it('shows control characters and bidirectional overrides instead of obeying them', () => {
    expect(inertText('repo\u001b]0;title\u0007')).toBe('repo\\x1b]0;title\\x07');
    expect(inertText('evil\u202ecod.exe')).toBe('evil\\u202ecod.exe');
    expect(inertText('\u2066x\u2069')).toBe('\\u2066x\\u2069');
    expect(inertText('plain/ünïcode name')).toBe('plain/ünïcode name');
  });
});
