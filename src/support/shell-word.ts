// A word of a command a hint or message prints, as a POSIX shell reads it back unchanged: bare when
// it is plain, else in single quotes. Like errors.ts, it imports nothing, so every layer may use it.

export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll('\'', '\'\\\'\'')}'`;
}
