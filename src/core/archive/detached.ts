/** A string of its own: a piece of a larger one (a name, a file's text) would keep all of it alive. */
export function detached(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}
