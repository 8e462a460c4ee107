import { describe, expect, it } from 'vitest';
import { inertBody, inertText } from '../../src/support/outside-text.js';

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

describe('a body from inside an archive, as a page shows it', () => {
  it('keeps tabs and line ends, and escapes every other control, bidi and zero-width character', () => {
    expect(inertBody('line one\r\n\tline two\n')).toBe('line one\r\n\tline two\n');
    expect(inertBody('a\u0007b\u001b[31m\u202eevil\u200b\u2028')).toBe('a\\x07b\\x1b[31m\\u202eevil\\u200b\\u2028');
    expect(inertBody('café 日本語 🎉')).toBe('café 日本語 🎉');
  });
});
