// Text from outside (a payload, a header, a server's answer) must not drive the terminal: an
// escape sequence can set the window title, clear the screen or forge lines of our output.

/** C0 and C1 control characters, DEL, and the bidirectional overrides and isolates. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const EVERY_UNSAFE = new RegExp(UNSAFE.source, 'g');

/** The text with every control character replaced by U+FFFD, so a line stays one line and inert. */
export function terminalSafe(text: string): string {
  return UNSAFE.test(text) ? text.replace(EVERY_UNSAFE, '\ufffd') : text;
}
