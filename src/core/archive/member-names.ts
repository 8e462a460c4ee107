import type { MemberType } from './tar-members.js';

// The one place where a member's name is judged, on the name exactly as the tar library reports it
// (docs/reliability.md#the-archive-check). Nothing is normalised: a name that is not already in
// normal form is a problem, so what is checked is what any importer extracts.

/** Why a member's name is not a plain relative path in normal form, or undefined. */
export function memberNameProblem(name: string, type: MemberType): string | undefined {
  if (name.includes('\uFFFD')) return 'has a name that is not valid UTF-8';
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'has a control character in its name';
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return 'has an absolute path';
  if (name.includes('\\')) return 'has a backslash in its name, which some systems read as a directory separator';
  if (name.endsWith('/') && type !== 'directory') return 'ends with "/" but is not a directory';
  const segments = (type === 'directory' ? name.replace(/\/$/, '') : name).split('/');
  if (segments.includes('..')) return 'has a path with ".." that leads outside the archive';
  if (segments.includes('.')) return 'has a "." segment in its path (not in normal form)';
  if (segments.includes('')) return 'has an empty segment ("//") in its path (not in normal form)';
  return undefined;
}

/** Why a link's target reaches outside the archive, or undefined. */
export function linkTargetProblem(name: string, type: 'symlink' | 'hardlink', target: string): string | undefined {
  const kind = type === 'symlink' ? 'symbolic link' : 'hard link';
  if (target.startsWith('/') || /^[A-Za-z]:/.test(target) || target.startsWith('\\')) return `is a ${kind} to an absolute path (${target})`;
  // A hard link names another member; a symbolic link is resolved from the link's own directory.
  const base = type === 'symlink' ? name.split('/').slice(0, -1) : [];
  const resolved: string[] = [...base];
  for (const segment of target.split(/[\\/]/)) {
    if (segment === '..') {
      if (resolved.length === 0) return `is a ${kind} pointing outside the archive (${target})`;
      resolved.pop();
    } else if (segment !== '.' && segment !== '') resolved.push(segment);
  }
  return undefined;
}

/** A member of a repository's git data: `repositories/<owner>/<name>.git/<rest>`. */
export const GIT_MEMBER = /^repositories\/([^/]+)\/([^/]+)\.git(?:\/(.*))?$/;

/** What the check does with a member of a bare repository, by its path inside the repository. */
export type GitMemberUse = { use: 'copy' } | { use: 'skip' } | { use: 'refuse'; reason: string };

/** The only files copied into the repository git checks: refs, loose objects, packs and their indexes. */
const COPIED = [
  /^HEAD$/,
  /^packed-refs$/,
  /^refs\/[^/]+(?:\/[^/]+)*$/,
  /^objects\/[0-9a-f]{2}\/(?:[0-9a-f]{38}|[0-9a-f]{62})$/,
  /^objects\/pack\/pack-(?:[0-9a-f]{40}|[0-9a-f]{64})\.(?:pack|idx)$/,
];

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
];

/** Whether a git member is copied into the checked repository, read past, or a problem. */
export function gitMemberUse(rest: string, type: MemberType): GitMemberUse {
  for (const [pattern, reason] of REFUSED) if (pattern.test(rest)) return { use: 'refuse', reason };
  if (type === 'symlink' || type === 'hardlink') return { use: 'refuse', reason: 'is a link, which a repository the service makes never holds' };
  if (type === 'file' && COPIED.some((pattern) => pattern.test(rest))) return { use: 'copy' };
  // config, description, hooks, info/exclude, logs, directories: read past, never written.
  return { use: 'skip' };
}
