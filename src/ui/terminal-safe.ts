// Text from outside (a payload, a header, a server's answer) must not drive the terminal: an
// escape sequence can set the window title, clear the screen or forge lines of our output.

/** DEL, the C1 controls (0x9b is CSI), and the bidirectional overrides and isolates. */
const DEL_C1_BIDI = '\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069';
/** Those and the C0 controls. */
const UNSAFE = new RegExp(`[\\u0000-\\u001f${DEL_C1_BIDI}]`);
const EVERY_UNSAFE = new RegExp(UNSAFE.source, 'g');

/** The text with every control character replaced by U+FFFD, so a line stays one line and inert. */
export function terminalSafe(text: string): string {
  return UNSAFE.test(text) ? text.replace(EVERY_UNSAFE, '\ufffd') : text;
}

/** What JSON.stringify leaves raw in strings though a terminal may act on it (it escapes C0 itself). */
const RAW_IN_JSON = new RegExp(`[${DEL_C1_BIDI}]`);
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
