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

export function expectedRefs(
  refs: Map<string, string>,
  includePullRefs: boolean,
): { expected: ExpectedRefs; pullRefsLeftOut: number; clash?: string } {
  const expected: ExpectedRefs = new Map();
  let pullRefsLeftOut = 0;
  let clash: string | undefined;
  for (const [ref, id] of refs) {
    if (!ref.startsWith(PULL_REFS)) expected.set(ref, { source: ref, id });
    else if (includePullRefs) {
      const name = PULL_NAMESPACE + ref.slice(PULL_REFS.length);
      // An archive of a repository restored with pull refs once already holds that name: one would hide the other.
      if (refs.has(name)) clash ??= name;
      expected.set(name, { source: ref, id });
    } else pullRefsLeftOut++;
  }
  return { expected, pullRefsLeftOut, ...(clash ? { clash } : {}) };
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
 * Text as it is shown and recorded, with the secrets of `template` out of it: anything before `@` in
 * an http(s) URL (a token is often given as the user), a password in any URL, a query's values;
 * and each of them wherever else git repeated it (`could not read Password for 'https://TOKEN@…'`).
 */
export function redactor(template: string): (text: string) => string {
  const secrets = new Set<string>();
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/]*)@/i.exec(template)?.[1];
  if (authority) {
    const colon = authority.indexOf(':');
    const password = colon >= 0 ? authority.slice(colon + 1) : '';
    // Over http(s) a user of some length is a token (`https://TOKEN@host`); `ssh://git@host` is a user.
    const user = colon >= 0 ? authority.slice(0, colon) : authority;
    if (password.length >= 3) secrets.add(password).add(safeDecode(password));
    if (/^https?:/i.test(template) && user.length >= 8) secrets.add(user).add(safeDecode(user));
  }
  const query = /\?([^#]*)/.exec(template)?.[1];
  for (const pair of query?.split('&') ?? []) {
    const value = pair.slice(pair.indexOf('=') + 1);
    if (pair.includes('=') && value.length >= 3) secrets.add(value).add(safeDecode(value));
  }
  return (text) => {
    let shown = text;
    for (const secret of secrets) shown = shown.replaceAll(secret, '***');
    return shown;
  };
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
