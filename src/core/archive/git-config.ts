// A repository's `config` from the archive is never given to git as a repository's config: git's
// own parser reads a copy of it as a plain file (no includes), and only settings a repository the
// service makes could hold pass. Whoever opens the extracted archive later runs git with that config:
// one that runs a command, reads from elsewhere, or hides missing objects is a problem
// (docs/reliability.md#the-archive-check).

/** Sections a bare repository's config may hold. */
const SECTIONS = new Set(['core', 'extensions', 'pack', 'gc', 'repack', 'receive', 'transfer', 'fetch', 'uploadpack', 'remote', 'branch', 'index', 'fsck', 'user', 'init', 'advice']);

/** Settings of those sections that run a command, point git elsewhere, or change what it reads. */
const REFUSED = [
  /^core\.(fsmonitor|hookspath|pager|editor|sshcommand|askpass|gitproxy|alternaterefscommand|alternaterefsprefixes|worktree|attributesfile|excludesfile)$/,
  /^uploadpack\.packobjectshook$/,
  // git 2.42 and later runs it when gc or repack weighs unreachable objects (gc.auto=1 makes a push do so).
  /^gc\.recentobjectshook$/,
  /^remote\..*\.(uploadpack|receivepack|vcs|proxy)$/,
  /^receive\.procreceiverefs$/,
];

/** Extensions git reads with a repository format of 1; any other would make the extraction unreadable. */
const EXTENSIONS = new Set(['objectformat', 'preciousobjects']);

export interface ConfigVerdict {
  problems: string[];
  /** The repository's objects are named by SHA-256. */
  sha256Objects: boolean;
}

/** `git config --list --null` output (`key\nvalue\0`, or `key\0` for a bare key), as key → values. */
export function parseConfigList(output: string): [string, string | undefined][] {
  return output
    .split('\0')
    .filter((entry) => entry !== '')
    .map((entry) => {
      const newline = entry.indexOf('\n');
      return newline === -1 ? [entry, undefined] : [entry.slice(0, newline), entry.slice(newline + 1)];
    });
}

export function judgeConfig(entries: [string, string | undefined][]): ConfigVerdict {
  const problems: string[] = [];
  const last = new Map<string, string | undefined>();
  for (const [key, value] of entries) {
    last.set(key, value);
    const section = key.slice(0, key.indexOf('.')).toLowerCase();
    if (!SECTIONS.has(section) || REFUSED.some((pattern) => pattern.test(key.toLowerCase()))) {
      problems.push(`sets ${key}, which a repository the service makes never does (git would run or follow it)`);
    } else if (section === 'extensions' && !EXTENSIONS.has(key.slice(section.length + 1).toLowerCase())) {
      problems.push(`asks for ${key}, which changes what git reads (or git cannot read it)`);
    }
  }
  const version = last.get('core.repositoryformatversion') ?? '0';
  if (version !== '0' && version !== '1') problems.push(`has repository format ${version}, which git cannot read`);
  const format = last.get('extensions.objectformat')?.toLowerCase();
  if (format !== undefined && format !== 'sha1' && format !== 'sha256') problems.push(`asks for object format ${format}, which git does not know`);
  return { problems, sha256Objects: version === '1' && format === 'sha256' };
}
