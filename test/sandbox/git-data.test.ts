import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startMigration } from '../../src/api/migrations.js';
import { expectedContentOf } from '../../src/core/archive/expected.js';
import { scanArchive } from '../../src/core/archive/scan.js';
import { verifyArchive } from '../../src/core/archive/verify.js';
import { downloadArchive } from '../../src/core/download.js';
import { withRepositories } from '../../src/sandbox/scale.js';
import { DEFAULT_SEED } from '../../src/sandbox/seed.js';
import { coreSandbox } from '../helpers/core-sandbox.js';
import { unless } from '../helpers/skip.js';

// Issue 46 restores archives of every kind of git data the service exports: the sandbox's scaled
// repositories include one never pushed to (no object, no ref), wikis (`<repo>.wiki.git`, branch
// master) and pull-request refs (refs/pull/3/head and /merge). Real tar and real git read them here,
// apart from our reader, and must find what our reader finds.

const REPOSITORIES = 50;
const hasGit = spawnSync('git', ['--version']).status === 0;
const hasTar = spawnSync('tar', ['--version']).status === 0;

function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' } });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return result.stdout;
}

/** Ref name → object id, as git itself lists them. */
function gitRefs(gitDir: string): Record<string, string> {
  const lines = run('git', ['--git-dir', gitDir, 'for-each-ref', '--format=%(refname) %(objectname)']).split('\n').filter(Boolean);
  return Object.fromEntries(lines.map((line) => line.split(' ') as [string, string]));
}

/** The archive of an export of these scaled repositories, downloaded. */
async function exportOf(names: string[]) {
  const { sandbox, api, clock, org } = await coreSandbox({ exportSeconds: 0, repositories: REPOSITORIES });
  const migration = await startMigration(api, org, { repositories: names.map((name) => `${org}/${name}`) });
  sandbox.clock.advance(1000);
  const dir = mkdtempSync(join(tmpdir(), 'svc-sandbox-git-data-'));
  const path = join(dir, 'archive.tar.gz');
  const target = { path, force: false };
  await downloadArchive(api, { org, id: migration.id, target, checksum: true, verify: false, clock: clock.program });
  return { api, org, dir, path, migrationId: migration.id };
}

/** `tar xzf` of the archive: where each repository's git data is, by name. */
function extract(dir: string, path: string, org: string): (name: string) => string {
  const extracted = join(dir, 'extracted');
  mkdirSync(extracted);
  run('tar', ['xzf', path, '-C', extracted]);
  return (name) => join(extracted, 'repositories', org, `${name}.git`);
}

describe('the scaled sandbox seed', () => {
  it('leaves the default seed as it is, and repo-0001 and repo-0002 plain', () => {
    expect(withRepositories(DEFAULT_SEED, 0)).toBe(DEFAULT_SEED);
    const seeded = DEFAULT_SEED.organizations[0]!.repositories.length;
    const added = withRepositories(DEFAULT_SEED, REPOSITORIES).organizations[0]!.repositories.slice(seeded);
    expect(added.slice(0, 2)).toEqual([
      { name: 'repo-0001', description: 'Generated repository 1', language: 'TypeScript', issues: 2, pull_requests: 1 },
      { name: 'repo-0002', description: 'Generated repository 2', language: 'TypeScript', issues: 2, pull_requests: 1 },
    ]);
    expect(added.filter((repo) => repo.size === 0).map((repo) => repo.name)).toEqual(['repo-0025', 'repo-0050']);
    expect(added.filter((repo) => repo.wiki).map((repo) => repo.name)).toEqual(['repo-0003', 'repo-0013', 'repo-0023', 'repo-0033', 'repo-0043']);
    // repo-0025 is empty: no pull request's refs to keep.
    expect(added.filter((repo) => repo.pull_refs).map((repo) => repo.name)).toEqual(['repo-0005', 'repo-0015', 'repo-0035', 'repo-0045']);
  });
});

describe(`an export of ${REPOSITORIES} scaled sandbox repositories`, () => {
  const why = unless(hasGit && hasTar, 'git or tar is not on PATH');
  it(`passes the archive check, and real tar and git read the empty repository, the wiki and the pull refs as our reader does${why}`, async () => {
    if (!hasGit || !hasTar) return;
    const { api, org, dir, path, migrationId } = await exportOf(Array.from({ length: REPOSITORIES }, (_, i) => `repo-${String(i + 1).padStart(4, '0')}`));

    // With the service's word on each repository's history: the empty one must be one never pushed to.
    const report = await verifyArchive(path, { expected: await expectedContentOf(api, org, migrationId) });
    expect(report.problems).toEqual([]);
    expect(report).toMatchObject({ ok: true, git_check: 'passed' });
    const verdict = (name: string) => report.repositories.find((repo) => repo.name === `${org}/${name}`);
    expect(verdict('repo-0025')).toEqual({ name: `${org}/repo-0025`, git_data: true, objects: 'none', empty: true, git_check: 'passed' });
    expect(verdict('repo-0003.wiki')).toMatchObject({ git_data: true, git_check: 'passed' });
    expect(verdict('repo-0003.wiki')?.empty).toBeUndefined();
    expect(report.repositories).toHaveLength(REPOSITORIES + 5);

    const scan = await scanArchive(path);
    const ours = (name: string) => scan.gitData.get(`${org}/${name}`)?.refs;
    expect(ours('repo-0025')).toEqual({});
    expect(scan.gitData.get(`${org}/repo-0025`)?.hasRefs).toBe(false);
    expect(Object.keys(ours('repo-0003.wiki') ?? {})).toEqual(['refs/heads/master']);
    expect(Object.keys(ours('repo-0005') ?? {}).sort()).toEqual(['refs/heads/main', 'refs/pull/3/head', 'refs/pull/3/merge', 'refs/tags/v1.0.0']);

    const gitDir = extract(dir, path, org);
    for (const repository of scan.gitData.values()) {
      const name = repository.repository.slice(org.length + 1);
      run('git', ['--git-dir', gitDir(name), 'fsck', '--full', '--strict', '--no-dangling']);
      expect(gitRefs(gitDir(name)), name).toEqual(repository.refs);
    }
    expect(scan.gitData.size).toBe(REPOSITORIES + 5);

    expect(gitRefs(gitDir('repo-0025'))).toEqual({});
    expect(run('git', ['--git-dir', gitDir('repo-0025'), 'count-objects', '-v'])).toMatch(/^count: 0\n(.|\n)*in-pack: 0\n/);
    expect(run('git', ['--git-dir', gitDir('repo-0025'), 'symbolic-ref', 'HEAD']).trim()).toBe('refs/heads/main');

    expect(run('git', ['--git-dir', gitDir('repo-0003.wiki'), 'symbolic-ref', 'HEAD']).trim()).toBe('refs/heads/master');
    expect(run('git', ['--git-dir', gitDir('repo-0003.wiki'), 'ls-tree', '--name-only', 'master']).trim()).toBe('Home.md');

    const pull = gitRefs(gitDir('repo-0005'));
    expect(pull['refs/pull/3/head']).toBe(pull['refs/heads/main']);
    const [merge, ...parents] = run('git', ['--git-dir', gitDir('repo-0005'), 'rev-list', '--parents', '-n', '1', 'refs/pull/3/merge']).trim().split(' ');
    expect(merge).toBe(pull['refs/pull/3/merge']);
    expect(parents).toEqual([pull['refs/tags/v1.0.0'], pull['refs/heads/main']]);
    // A plain repository keeps no pull refs.
    expect(Object.keys(gitRefs(gitDir('repo-0001'))).sort()).toEqual(['refs/heads/main', 'refs/tags/v1.0.0']);
  }, 120_000);

  it(`stores pull refs loose in a loose repository, and its wiki packed${why}`, async () => {
    if (!hasGit || !hasTar) return;
    // The second, fourth, … repository of a migration is stored loose; its wiki the other way.
    const { org, dir, path } = await exportOf(['repo-0001', 'repo-0005', 'repo-0002', 'repo-0013']);
    const report = await verifyArchive(path);
    expect(report.problems).toEqual([]);
    const objects = Object.fromEntries(report.repositories.map((repo) => [repo.name.slice(org.length + 1), repo.objects]));
    expect(objects).toEqual({ 'repo-0001': 'pack', 'repo-0005': 'loose', 'repo-0002': 'pack', 'repo-0013': 'loose', 'repo-0013.wiki': 'pack' });

    const gitDir = extract(dir, path, org);
    run('git', ['--git-dir', gitDir('repo-0005'), 'fsck', '--full', '--strict', '--no-dangling']);
    run('git', ['--git-dir', gitDir('repo-0013.wiki'), 'fsck', '--full', '--strict', '--no-dangling']);
    const scan = await scanArchive(path);
    expect(gitRefs(gitDir('repo-0005'))).toEqual(scan.gitData.get(`${org}/repo-0005`)?.refs);
    expect(Object.keys(gitRefs(gitDir('repo-0005'))).sort()).toEqual(['refs/heads/main', 'refs/pull/3/head', 'refs/pull/3/merge', 'refs/tags/v1.0.0']);
    expect(gitRefs(gitDir('repo-0013.wiki'))).toEqual(scan.gitData.get(`${org}/repo-0013.wiki`)?.refs);
    expect(Object.keys(gitRefs(gitDir('repo-0013.wiki')))).toEqual(['refs/heads/master']);
  }, 60_000);
});
