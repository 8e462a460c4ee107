import type { SeedData } from './seed.js';

/** `repo-0001` … : wide enough that names sort in order up to 9,999, and beyond still unique. */
function scaleRepositoryName(index: number): string {
  return `repo-${String(index).padStart(4, '0')}`;
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
    const name = scaleRepositoryName(i);
    if (!taken.has(name)) added.push({ name, description: `Generated repository ${i}`, language: 'TypeScript' });
  }
  return { ...seed, organizations: [{ ...first, repositories: [...first.repositories, ...added] }, ...rest] };
}
