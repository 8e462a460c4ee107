import type { SeedData, SeedRepository } from './seed.js';

/** `repo-0001` … : wide enough that names sort in order up to 9,999, and beyond still unique. */
function scaleRepositoryName(index: number): string {
  return `repo-${String(index).padStart(4, '0')}`;
}

/**
 * Generated repository `index`: every 25th never pushed to, and among the others some with a wiki
 * and some with pull-request refs, so that an export of a few dozen holds every kind of git data
 * (the first two stay plain). An empty repository has no pull request to keep refs of.
 */
function scaleRepository(index: number): SeedRepository {
  // Two issues and pull request 3, as thin as the metadata of a thousand repositories should be.
  const repo: SeedRepository = { name: scaleRepositoryName(index), description: `Generated repository ${index}`, language: 'TypeScript', issues: 2, pull_requests: 1 };
  const empty = index % 25 === 0;
  if (empty) repo.size = 0;
  if (index % 10 === 3) repo.wiki = true;
  if (index % 10 === 5 && !empty) repo.pull_refs = true;
  return repo;
}

/**
 * The seed with `count` more repositories in its first organization, for exports at the scale of a
 * whole organization. The given seed is left as it was.
 */
export function withRepositories(seed: SeedData, count: number): SeedData {
  if (count <= 0 || seed.organizations.length === 0) return seed;
  const [first, ...rest] = seed.organizations;
  if (!first) return seed;
  const taken = new Set(first.repositories.map((repo) => repo.name.toLowerCase()));
  const added = [];
  for (let i = 1; i <= count; i++) {
    if (!taken.has(scaleRepositoryName(i))) added.push(scaleRepository(i));
  }
  return { ...seed, organizations: [{ ...first, repositories: [...first.repositories, ...added] }, ...rest] };
}

/**
 * The seed with `issues` issues and `pullRequests` pull requests in every repository of every
 * organization (what a repository's own seed says is overridden), for archives of an
 * organization's whole history. The given seed is left as it was.
 */
export function withMetadata(seed: SeedData, counts: { issues?: number | undefined; pullRequests?: number | undefined }): SeedData {
  const { issues, pullRequests } = counts;
  if (issues === undefined && pullRequests === undefined) return seed;
  const scaled = (repo: SeedRepository): SeedRepository => ({
    ...repo,
    ...(issues === undefined ? {} : { issues }),
    ...(pullRequests === undefined ? {} : { pull_requests: pullRequests }),
  });
  return { ...seed, organizations: seed.organizations.map((org) => ({ ...org, repositories: org.repositories.map(scaled) })) };
}
