import { REPLACE_REF, REPLACE_REF_PROBLEM } from './git-refs.js';
import { foldName, HFS_IGNORED } from './name-clashes.js';
import type { MemberType, TarMember } from './tar-members.js';

// The one place where a member's name is judged, on the name exactly as the reading reports it
// (docs/reliability.md#the-archive-check). Nothing is normalised: a name that is not already in
// normal form is a problem, so what is checked is what any importer extracts.

/** A member of a repository's git data: `repositories/<owner>/<name>.git/<rest>`. */
export const GIT_MEMBER = /^repositories\/([^/]+)\/([^/]+)\.git(?:\/(.*))?$/;

/** The longest path Linux opens (PATH_MAX), and the longest name of one entry (NAME_MAX): longer can be extracted nowhere. */
const MAX_PATH = 4096;
const MAX_SEGMENT = 255;

/** Characters that change how a name prints or is cut apart: controls, line separators, bidi marks. */
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/;

/**
 * Whether a name's part is `folded` on a case-insensitive disk. Folded only when its length can
 * match: folding each of thousands of parts of every name cost a second for a few hundred names.
 */
function foldsTo(segment: string, folded: string): boolean {
  if (segment.length < folded.length) return false;
  const bare = segment.replace(HFS_IGNORED, '');
  return bare.length === folded.length && foldName(bare) === folded;
}

/** Why a member's name is not a plain relative path in normal form, or undefined. */
function nameProblem(name: string, type: MemberType): string | undefined {
  if (Buffer.byteLength(name) > MAX_PATH) return `has a name of ${Buffer.byteLength(name)} bytes, longer than a path may be`;
  if (name.includes('\uFFFD')) return 'has a name that is not valid UTF-8';
  if (INVISIBLE.test(name)) return 'has a control, line-separator or direction character in its name';
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return 'has an absolute path';
  if (name.includes('\\')) return 'has a backslash in its name, which some systems read as a directory separator';
  if (name.endsWith('/') && type !== 'directory') return 'ends with "/" but is not a directory';
  const segments = (type === 'directory' ? name.replace(/\/$/, '') : name).split('/');
  if (segments.includes('..')) return 'has a path with ".." that leads outside the archive';
  if (segments.includes('.')) return 'has a "." segment in its path (not in normal form)';
  if (segments.includes('')) return 'has an empty segment ("//") in its path (not in normal form)';
  // Windows leaves them out: `config.` is `config` there, `hooks./x` is `hooks/x`.
  if (segments.some((segment) => /[. ]$/.test(segment))) return 'has a part ending with "." or " ", which Windows leaves out (there it names another file)';
  const long = segments.find((segment) => Buffer.byteLength(segment) > MAX_SEGMENT);
  if (long !== undefined) return `has a part of ${Buffer.byteLength(long)} bytes in its name, longer than file systems allow (${MAX_SEGMENT})`;
  // git takes a `.git` below where it runs for the repository, before the directory itself.
  if (segments.some((segment) => foldsTo(segment, '.git'))) return 'has a ".git" segment in its path, which git would take for a repository';
  // Beside objects/ and refs/, a HEAD makes its directory a repository git finds from anywhere below
  // it, and obeys its config there (core.pager runs on `git branch`). Only a repository's own is one.
  if (type === 'file' && foldsTo(segments.at(-1) ?? '', 'head') && !name.startsWith('repositories/')) {
    return 'is a file named HEAD, which makes its directory a git repository whose config git obeys when run there';
  }
  return undefined;
}

/** Under repositories/ the service keeps owners' directories holding bare repositories, nothing else. */
function layoutProblem(name: string, type: MemberType): string | undefined {
  const path = type === 'directory' ? name.replace(/\/$/, '') : name;
  if (path !== 'repositories' && !path.startsWith('repositories/')) return undefined;
  const depth = path.split('/').length;
  if (depth <= 2) return type === 'directory' ? undefined : 'is a file where the service keeps a directory';
  if (!GIT_MEMBER.test(path)) return 'is not a repository\'s git data, the only thing the service keeps under repositories/';
  if (depth === 3 && type !== 'directory') return 'is a file where a repository\'s git data must be a directory';
  return undefined;
}

/**
 * Why a member may not be in a migration archive, whatever it is for: its name, where it lies, what
 * kind of member it is. Links are refused outright: the service writes none, and an importer
 * extracting one would write later members through it, wherever it points.
 */
export function memberProblem(member: Pick<TarMember, 'name' | 'type' | 'mode'>): string | undefined {
  const { name, type } = member;
  const wrong = nameProblem(name, type) ?? layoutProblem(name, type);
  if (wrong) return wrong;
  if (type === 'symlink') return 'is a symbolic link, which a migration archive never holds (an importer would write through it)';
  if (type === 'hardlink') return 'is a hard link, which a migration archive never holds';
  if (type === 'special') return 'is a device or FIFO, which a migration archive never holds';
  if ((member.mode & 0o6000) !== 0) return 'has set-user-ID or set-group-ID permission, which an importer running as root would keep';
  return undefined;
}

/** What the check does with a member of a bare repository, by its path inside the repository. */
export type GitMemberUse = { use: 'copy' } | { use: 'skip' } | { use: 'refuse'; reason: string };

/**
 * The only files copied into the repository git checks: refs, loose objects, packs and their indexes.
 * A pack's reverse index (`.rev`) and bitmap are read past: git fsck may not check them (git 2.39
 * passed a .rev with its entries permuted, and the extraction could then not be cloned), and git
 * makes them again when it wants them.
 */
const COPIED = [
  /^HEAD$/,
  /^packed-refs$/,
  /^refs\/[^/]+(?:\/[^/]+)*$/,
  /^objects\/[0-9a-f]{2}\/(?:[0-9a-f]{38}|[0-9a-f]{62})$/,
  /^objects\/pack\/pack-(?:[0-9a-f]{40}|[0-9a-f]{64})\.(?:pack|idx)$/,
  // What git reads beside the objects to find them faster; git fsck checks them when they are there.
  /^objects\/pack\/multi-pack-index$/,
  /^objects\/info\/commit-graph$/,
  /^objects\/info\/commit-graphs\/(?:commit-graph-chain|graph-[0-9a-f]{40,64}\.graph)$/,
  // Reflogs: git fsck in the extraction checks that every object they name is there.
  /^logs\/(?:HEAD|refs\/[^/]+(?:\/[^/]+)*)$/,
];

/** What git opens by name, in any letter case: `REFS/heads/x` or `OBJECTS/ab/…` is read as git's own on macOS. */
const OPENED_BY_NAME = [...COPIED, /^config$/].map((pattern) => new RegExp(pattern.source, 'i'));

/**
 * Files a bare repository the service makes never has, which change what git reads when it opens
 * one: they could make git run a command, read another directory or hide missing history. Matched
 * without regard to case: a case-insensitive file system reads `INDEX` as `index`.
 */
const REFUSED: [RegExp, string][] = [
  [/^index$/i, 'is a git index, which a bare repository never has (git reads it, and with it settings that run commands)'],
  [/^(commondir|gitdir|config\.worktree)$/i, 'points git at another directory or configuration'],
  [/^objects\/info\/(http-)?alternates$/i, 'borrows objects from outside the archive (alternates), so the repository is not self-contained'],
  [/^(worktrees|modules)(\/|$)/i, 'holds the data of another repository or working tree, which a bare repository never has'],
  [/^shallow$/i, 'marks the history as cut short (shallow), so missing commits would not be noticed'],
  [/^info\/grafts$/i, 'rewrites the history git reads (grafts)'],
  [/\.promisor$/i, 'marks objects as fetched on demand, so missing ones would not be noticed'],
  [REPLACE_REF, REPLACE_REF_PROBLEM],
];

/**
 * The hooks git's templates have installed (any version): named `.sample`, so git never runs them.
 * Any other file under hooks/ runs when someone commits in, pushes to or fetches into the extraction.
 */
const SAMPLE_HOOKS = new Set(
  [
    'applypatch-msg', 'commit-msg', 'fsmonitor-watchman', 'post-commit', 'post-receive', 'post-update', 'pre-applypatch', 'pre-commit',
    'pre-merge-commit', 'pre-push', 'pre-rebase', 'pre-receive', 'prepare-commit-msg', 'push-to-checkout', 'query-fsmonitor',
    'sendemail-validate', 'update',
  ].map((name) => `hooks/${name}.sample`),
);

/** Matched without regard to case, as REFUSED: `HOOKS/Post-Update` is `hooks/post-update` on such a disk. */
function hookProblem(rest: string, type: MemberType): string | undefined {
  if (!/^hooks(\/|$)/i.test(rest) || (type === 'directory' && /^hooks$/i.test(rest))) return undefined;
  if (type === 'file' && SAMPLE_HOOKS.has(rest)) return undefined;
  return 'is a hook, which git runs when someone commits in, pushes to or fetches into the extracted repository (only git\'s own .sample files are allowed)';
}

/** Whether a git member is copied into the checked repository, read past, or a problem. */
export function gitMemberUse(rest: string, type: MemberType): GitMemberUse {
  if (rest.replace(HFS_IGNORED, '') !== rest) {
    return { use: 'refuse', reason: 'has a character HFS+ leaves out of names: on such a disk it is another file of the repository than the check saw' };
  }
  for (const [pattern, reason] of REFUSED) if (pattern.test(rest)) return { use: 'refuse', reason };
  const hook = hookProblem(rest, type);
  if (hook) return { use: 'refuse', reason: hook };
  if (type === 'file' && COPIED.some((pattern) => pattern.test(rest))) return { use: 'copy' };
  if (type === 'file' && rest !== 'config' && OPENED_BY_NAME.some((pattern) => pattern.test(rest))) {
    return { use: 'refuse', reason: 'is a file git opens by its name, spelled in other letter case: a case-insensitive disk gives it to git unchecked' };
  }
  if (type === 'file' && foldsTo(rest.split('/').at(-1) ?? '', 'head') && !/^(logs\/)?refs\/|^logs\/HEAD$/.test(rest)) {
    return { use: 'refuse', reason: 'is a HEAD other than the repository\'s own, which makes its directory a repository of its own' };
  }
  // config, description, git's sample hooks, info/exclude, directories: read past, never written.
  return { use: 'skip' };
}
