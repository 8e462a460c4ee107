import { UsageError } from '../errors.js';

export interface RepositoryEntry {
  name: string;
  /** Where the name came from, for error messages: `argument 2`, `repos.txt:7`. */
  source: string;
}

/**
 * A repos file's bytes as text. A binary named by mistake (`--repos-file /bin/ls`) is refused whole
 * rather than read as lines of names, each a message full of escaped bytes.
 */
export function reposFileText(bytes: Uint8Array, fileName: string): string {
  const notText = () =>
    new UsageError(`${fileName} is not a text file`, { hint: 'give a text file with one repository name per line' });
  if (bytes.includes(0)) throw notText();
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw notText();
  }
}

/** One repository per line; blank lines and `#` comments (whole-line or trailing) are ignored. */
export function parseReposFile(text: string, fileName: string): RepositoryEntry[] {
  const entries: RepositoryEntry[] = [];
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    const name = line.replace(/#.*$/, '').trim();
    if (name) entries.push({ name, source: `${fileName}:${index + 1}` });
  }
  return entries;
}

const NAME = /^[A-Za-z0-9_.-]+$/;

/** The most of a line a message quotes: a line of a file may be any length. */
const QUOTED_CHARS = 80;

function quoted(line: string): string {
  // By code point: a cut between the halves of a surrogate pair would quote half a character.
  const characters = [...line];
  return characters.length > QUOTED_CHARS ? `${characters.slice(0, QUOTED_CHARS).join('')}…` : line;
}

/**
 * `<owner>/<repo>` names for the start body (docs/service.md#start-migration): a bare name gets the organization,
 * duplicates (case-insensitive) are dropped, and anything else is a usage error naming its source.
 */
export function normalizeRepositories(entries: RepositoryEntry[], org: string): string[] {
  const seen = new Set<string>();
  const names: string[] = [];
  for (const { name, source } of entries) {
    const parts = name.split('/');
    const [owner, repo] = parts.length === 1 ? [org, parts[0]] : parts;
    const valid =
      parts.length <= 2 && owner && repo && NAME.test(owner) && NAME.test(repo) && ![owner, repo].some((part) => part === '.' || part === '..');
    if (!valid) {
      throw new UsageError(`${source}: "${quoted(name)}" is not a repository name`, {
        hint: 'give names as <repo> or <owner>/<repo>, one per line in a repos file',
      });
    }
    const full = `${owner}/${repo}`;
    if (seen.has(full.toLowerCase())) continue;
    seen.add(full.toLowerCase());
    names.push(full);
  }
  return names;
}
