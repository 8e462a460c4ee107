import type { RemoteRefs } from './git-remote.js';

// The refs a remote must have once a repository is restored, and how the remote's differ.

/** The service's pull-request refs, which hosts commonly refuse or keep for their own. */
const PULL_REFS = 'refs/pull/';
/** Where `--include-pull-refs` puts them on the remote. */
const PULL_NAMESPACE = 'refs/svc-migrate/pull/';

export interface RefDifference {
  ref: string;
  /** What the archive has there (absent: the remote has a ref the archive does not). */
  archive?: string;
  /** What the remote has there (absent: the remote lacks it). */
  remote?: string;
  /** The remote's ref names another ref: it is never deleted (that would delete what it names). */
  symbolic_to?: string;
}

/** Remote name → the archive's ref and id: pull refs left out, or moved under PULL_NAMESPACE. */
export type ExpectedRefs = Map<string, { source: string; id: string }>;

export function expectedRefs(refs: Map<string, string>, includePullRefs: boolean): { expected: ExpectedRefs; pullRefsLeftOut: number } {
  const expected: ExpectedRefs = new Map();
  let pullRefsLeftOut = 0;
  for (const [ref, id] of refs) {
    if (!ref.startsWith(PULL_REFS)) expected.set(ref, { source: ref, id });
    else if (includePullRefs) expected.set(PULL_NAMESPACE + ref.slice(PULL_REFS.length), { source: ref, id });
    else pullRefsLeftOut++;
  }
  return { expected, pullRefsLeftOut };
}

/** Every ref where the remote is not the archive, sorted by name. */
export function differencesOf(expected: ExpectedRefs, remote: RemoteRefs): RefDifference[] {
  const differences: RefDifference[] = [];
  for (const [ref, { id }] of expected) {
    const there = remote.refs.get(ref);
    if (there !== id) differences.push({ ref, archive: id, ...(there ? { remote: there } : {}) });
  }
  for (const [ref, id] of remote.refs) {
    if (expected.has(ref)) continue;
    const to = remote.symbolic.get(ref);
    differences.push({ ref, remote: id, ...(to ? { symbolic_to: to } : {}) });
  }
  return differences.sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
}

/**
 * The refspecs that make the remote the archive: every ref, forced with `force`, and then the
 * remote's others deleted (never a symbolic one).
 */
export function refspecsOf(expected: ExpectedRefs, force: boolean, remote?: RemoteRefs): string[] {
  const refspecs = [...expected].map(([ref, { source }]) => `${force ? '+' : ''}${source}:${ref}`);
  if (force && remote) for (const ref of remote.refs.keys()) if (!expected.has(ref) && !remote.symbolic.has(ref)) refspecs.push(`:${ref}`);
  return refspecs;
}

/**
 * A URL as it is shown and recorded: a password in it, or over http(s) anything before `@` (a
 * token is often given as the user), replaced by `***`. `ssh://git@host` keeps its user.
 */
export function shownUrl(url: string): string {
  return url.replace(/^(https?:\/\/)[^/@]*@/i, '$1***@').replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*):[^/@]*@/i, '$1:***@');
}
