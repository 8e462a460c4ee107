// Text from outside (a payload, a header, a server's answer, a name inside an archive) must not
// drive the terminal: an escape sequence can set the window title, clear the screen or forge lines
// of our output, a bidi override can reorder what a line says, and a character of no width can make
// `a\u200cb` read as `ab`. Every such character is shown as an escape, never obeyed, never hidden.

/**
 * DEL and the C1 controls (0x9b is CSI), every format character (zero-width and direction marks,
 * bidi overrides and isolates, the soft hyphen, invisible operators, the byte order mark, the tag
 * characters of U+E0000 that spell hidden ASCII), the line and paragraph separators; U+2065,
 * unassigned among the invisible operators, goes with them.
 */
const BEYOND_C0 = '\\u007f-\\u009f\\p{Cf}\\p{Zl}\\p{Zp}\\u2065';
/** Those and the C0 controls. */
const UNSAFE = new RegExp(`[\\u0000-\\u001f${BEYOND_C0}]`, 'u');
const EVERY_UNSAFE = new RegExp(UNSAFE.source, 'gu');

function escaped(character: string): string {
  const code = character.codePointAt(0) ?? 0;
  if (code <= 0xff) return `\\x${code.toString(16).padStart(2, '0')}`;
  return code <= 0xffff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\u{${code.toString(16)}}`;
}

/** The text with every such character written as `\xNN`, `\uNNNN` or `\u{NNNNN}`, so a line stays one line, inert and readable. */
export function inertText(text: string): string {
  return UNSAFE.test(text) ? text.replace(EVERY_UNSAFE, escaped) : text;
}

/** Those less tab, line feed and carriage return: a body of several lines (Markdown) stays as written, inert. */
const UNSAFE_IN_BODY = new RegExp(`[\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f${BEYOND_C0}]`, 'gu');

/** The text with every such character but tab and line ends escaped, as inertText does: for Markdown bodies shown on a page. */
export function inertBody(text: string): string {
  return text.replace(UNSAFE_IN_BODY, escaped);
}

/** What JSON.stringify leaves raw in strings though a terminal acts on it or hides it (it escapes C0 itself). */
const RAW_IN_JSON = new RegExp(`[${BEYOND_C0}]`, 'u');
const EVERY_RAW_IN_JSON = new RegExp(RAW_IN_JSON.source, 'gu');

/** `\uNNNN` for each UTF-16 unit: JSON's only escape, a pair of them for a character beyond U+FFFF. */
const jsonEscaped = (character: string) =>
  character
    .split('')
    .map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .join('');

/**
 * JSON text with those characters written as \u escapes: the same value for a script, inert on a
 * terminal. JSON.stringify escapes C0 in strings itself, and outside strings JSON holds none of
 * these, so each one found is in a string.
 */
export function inertJson(json: string): string {
  return RAW_IN_JSON.test(json) ? json.replace(EVERY_RAW_IN_JSON, jsonEscaped) : json;
}
