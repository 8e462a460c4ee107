// Text from outside (a payload, a header, a server's answer, a name inside an archive) must not
// drive the terminal: an escape sequence can set the window title, clear the screen or forge lines
// of our output, a bidi override can reorder what a line says, and a character of no width can make
// `a\u200cb` read as `ab`. Every such character is shown as an escape, never obeyed, never hidden.

/**
 * DEL, the C1 controls (0x9b is CSI), the Arabic letter mark, zero-width and direction marks, the
 * line and paragraph separators, bidi overrides and isolates, invisible operators, the byte order mark.
 */
const BEYOND_C0 = '\\u007f-\\u009f\\u061c\\u200b-\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060-\\u206f\\ufeff';
/** Those and the C0 controls. */
const UNSAFE = new RegExp(`[\\u0000-\\u001f${BEYOND_C0}]`);
const EVERY_UNSAFE = new RegExp(UNSAFE.source, 'g');

function escaped(character: string): string {
  const code = character.charCodeAt(0);
  return code > 0xff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\x${code.toString(16).padStart(2, '0')}`;
}

/** The text with every such character written as `\xNN` or `\uNNNN`, so a line stays one line, inert and readable. */
export function inertText(text: string): string {
  return UNSAFE.test(text) ? text.replace(EVERY_UNSAFE, escaped) : text;
}

/** What JSON.stringify leaves raw in strings though a terminal acts on it or hides it (it escapes C0 itself). */
const RAW_IN_JSON = new RegExp(`[${BEYOND_C0}]`);
const EVERY_RAW_IN_JSON = new RegExp(RAW_IN_JSON.source, 'g');

/**
 * JSON text with those characters written as \u escapes: the same value for a script, inert on a
 * terminal. JSON.stringify escapes C0 in strings itself, and outside strings JSON holds none of
 * these, so each one found is in a string.
 */
export function inertJson(json: string): string {
  return RAW_IN_JSON.test(json)
    ? json.replace(EVERY_RAW_IN_JSON, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`)
    : json;
}
