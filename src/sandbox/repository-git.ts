import type { Repository } from '../api/types.js';
import { commit, type GitObject, gitObject, looseObject, pack, tree } from './git.js';
import type { SeedRepository } from './seed.js';

/** One member of a bare repository: a file, or a directory git needs even when empty. */
export type RepoMember = { path: string; data: Buffer | string } | { path: string; directory: true };

/** What the seed adds to a repository's git data beyond its branch and tag. */
export type GitExtras = Pick<SeedRepository, 'wiki' | 'pull_refs'>;

/** The files and directories `git init --bare` makes: all an empty repository has. */
function skeleton(headBranch: string, description: string): RepoMember[] {
  return [
    { path: 'HEAD', data: `ref: refs/heads/${headBranch}\n` },
    { path: 'config', data: '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n' },
    { path: 'description', data: `${description}\n` },
    { path: 'info', directory: true },
    { path: 'info/exclude', data: '# git ls-files --others --exclude-from=.git/info/exclude\n' },
    { path: 'objects', directory: true },
    { path: 'objects/info', directory: true },
    { path: 'objects/pack', directory: true },
    { path: 'refs', directory: true },
    { path: 'refs/heads', directory: true },
    { path: 'refs/tags', directory: true },
  ];
}

/**
 * Objects and refs stored as the service stores them: one pack with its index and `packed-refs`,
 * or loose files (the service's archives hold both kinds, and the check must read both).
 */
function storage(objects: GitObject[], refs: [name: string, id: string][], packed: boolean): RepoMember[] {
  if (packed) {
    const built = pack(objects);
    const sorted = [...refs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return [
      { path: built.packPath, data: built.pack },
      { path: built.idxPath, data: built.idx },
      { path: 'packed-refs', data: `# pack-refs with: peeled fully-peeled sorted \n${sorted.map(([name, id]) => `${id} ${name}\n`).join('')}` },
    ];
  }
  return [
    ...objects.map((object) => looseObject(object)),
    ...refs.map(([name, id]): RepoMember => ({ path: name, data: `${id}\n` })),
  ];
}

/**
 * A real bare repository written without git: two commits, a branch and a tag v1.0.0; with
 * `pull_refs`, pull request 3's head (the second commit) and merge (a merge commit of both); with a
 * size of 0, one never pushed to: no object and no ref, as the service exports it.
 */
export function bareRepository(repo: Repository, extras: GitExtras, packed: boolean, time: number): RepoMember[] {
  const members = skeleton(repo.default_branch, repo.full_name);
  if (repo.size === 0) return members;
  const readme = gitObject('blob', `# ${repo.name}\n\n${repo.description ?? ''}\n`);
  const code = gitObject('blob', `// ${repo.full_name}\nexport const name = ${JSON.stringify(repo.name)};\n`);
  const firstTree = tree([{ name: 'README.md', mode: '100644', id: readme.id }]);
  const first = commit({ tree: firstTree.id, parents: [], message: 'Initial commit', time });
  const src = tree([{ name: 'index.js', mode: '100644', id: code.id }]);
  const secondTree = tree([
    { name: 'README.md', mode: '100644', id: readme.id },
    { name: 'src', mode: '40000', id: src.id },
  ]);
  const second = commit({ tree: secondTree.id, parents: [first.id], message: 'Add the code', time: time + 60_000 });
  const objects = [readme, code, firstTree, first, src, secondTree, second];
  const refs: [string, string][] = [
    [`refs/heads/${repo.default_branch}`, second.id],
    ['refs/tags/v1.0.0', first.id],
  ];
  if (extras.pull_refs) {
    const merge = commit({ tree: secondTree.id, parents: [first.id, second.id], message: 'Merge pull request #3', time: time + 120_000 });
    objects.push(merge);
    refs.push(['refs/pull/3/head', second.id], ['refs/pull/3/merge', merge.id]);
  }
  return [...members, ...storage(objects, refs, packed)];
}

/** A repository's wiki as the service keeps it: a bare repository of one commit of `Home.md` on `master`. */
export function wikiRepository(repo: Repository, packed: boolean, time: number): RepoMember[] {
  const home = gitObject('blob', `# ${repo.name} wiki\n\nWelcome to the ${repo.full_name} wiki.\n`);
  const pages = tree([{ name: 'Home.md', mode: '100644', id: home.id }]);
  const first = commit({ tree: pages.id, parents: [], message: 'Initial Home page', time });
  return [...skeleton('master', `${repo.full_name}.wiki`), ...storage([home, pages, first], [['refs/heads/master', first.id]], packed)];
}
