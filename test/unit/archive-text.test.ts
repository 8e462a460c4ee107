import { describe, expect, it } from 'vitest';
import { inertText } from '../../src/support/outside-text.js';

describe('text from inside an archive, as printed', () => {
  it('shows control characters and bidirectional overrides instead of obeying them', () => {
    expect(inertText('repo\u001b]0;title\u0007')).toBe('repo\\x1b]0;title\\x07');
    expect(inertText('evil\u202ecod.exe')).toBe('evil\\u202ecod.exe');
    expect(inertText('\u2066x\u2069')).toBe('\\u2066x\\u2069');
    expect(inertText('plain/ünïcode name')).toBe('plain/ünïcode name');
  });

  it('shows every invisible format character too: a soft hyphen, the tags that spell hidden ASCII, a Mongolian vowel separator', () => {
    // `acme/wid\u00adgets` reads as `acme/widgets`; U+E0041 is a tag "A", of no width at all.
    expect(inertText('acme/wid\u00adgets\u{e0041}\u180e')).toBe('acme/wid\\xadgets\\u{e0041}\\u180e');
    expect(inertText('\ufff9note\ufffb\u2065')).toBe('\\ufff9note\\ufffb\\u2065');
    // What is drawn (an emoji, a letter with its accent) stays as it is.
    expect(inertText('🎉 e\u0301')).toBe('🎉 e\u0301');
  });
});
