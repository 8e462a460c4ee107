import type { RestoreReport } from '../../src/core/restore/run.js';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { archiveRefs, bareRemotes, gitDaemon, lsRemote, refusingHook, runGit, smartHttp } from '../helpers/git-remotes.js';
import { everyHostileCase, filesOf, firstOfEachKind, metadata, type RealRepository, realRepository, repositoryMembers } from '../helpers/hostile-archives.js';
import { archiveCopy, expectScaledShape, GIT_SETUP, reportOf, scaledArchive } from '../helpers/restore-archives.js';
import { BIN, type CliResult, runCli, spawnCli, untilSaid } from '../helpers/run-cli.js';
import { member, tarGz } from '../helpers/tar-bytes.js';

// `archive restore` through the built binary, to real git remotes on loopback (file://, git daemon,
// smart HTTP through git http-backend), the sandbox's archive of 50 repositories. What the remotes
// hold is read by plain `git ls-remote` and held to the archive's refs as tar and for-each-ref read
// them (test/helpers/git-remotes.ts): nothing of the product judges its own work.

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-restore-test-'));
const RUN_CEILING_MS = 180_000;
const TEST_CEILING_MS = 400_000;

/** `file://ROOT/{owner}/{repo}.git`: a target that does not exist yet is made by the restore. */
const fileTemplate = (root: string) => `file://${root}/{owner}/{repo}.git`;

/** The template filled for `owner/repo`, as the contract fills it (a wiki's repo is `repo.wiki`). */
function urlOf(template: string, name: string): string {
  const slash = name.indexOf('/');
  return template.replaceAll('{owner}', name.slice(0, slash)).replaceAll('{repo}', name.slice(slash + 1));
}

/** What a remote must hold after a restore: the archive's refs less `refs/pull/*`, or those under `refs/svc-migrate/pull/`. */
function pushed(archived: Map<string, string>, pullRefs = false): Map<string, string> {
  const refs = new Map<string, string>();
  for (const [ref, id] of archived) {
    if (!ref.startsWith('refs/pull/')) refs.set(ref, id);
    else if (pullRefs) refs.set(ref.replace(/^refs\/pull\//, 'refs/svc-migrate/pull/'), id);
  }
  return refs;
}

const restore = (args: string[]) => spawnCli(['archive', 'restore', ...args], { env: GIT_SETUP, timeoutMs: RUN_CEILING_MS });

const byName = (report: RestoreReport, name: string) => report.repositories.find((repository) => repository.name === name);
const journalOf = (archive: string) => `${archive}.restore.json`;

describe('archive restore, end to end through the built binary', () => {
  let original: string;
  let refs: Map<string, Map<string, string>>;
  beforeAll(async () => {
    original = await scaledArchive();
    refs = await archiveRefs(original);
  }, 120_000);

  const names = () => [...refs.keys()];
  const remotesFor = (root: string) => bareRemotes(root, names().map((name) => `${name}.git`));

  /** Every repository of the archive on its remote, as `git ls-remote` lists it, equals its refs as pushed. */
  async function expectEveryRemoteEqual(template: string, options: { pullRefs?: boolean; except?: string[] } = {}): Promise<void> {
    for (const name of names().filter((name) => !options.except?.includes(name))) {
      expect(await lsRemote(urlOf(template, name)), `${name} at ${urlOf(template, name)}`).toEqual(pushed(refs.get(name) as Map<string, string>, options.pullRefs));
    }
  }

  function expectAllProved(report: RestoreReport, template: string, options: { pullRefs?: boolean } = {}): void {
    expect(report.failed, JSON.stringify(report.repositories.filter((r) => r.state === 'failed'))).toBe(0);
    expect(report.proved).toBe(refs.size);
    expect(report.repositories.map((repository) => repository.name).sort()).toEqual(names().sort());
    for (const repository of report.repositories) {
      expect(repository, repository.name).toMatchObject({
        url: urlOf(template, repository.name),
        refs: pushed(refs.get(repository.name) as Map<string, string>, options.pullRefs).size,
      });
      expect(['proved', 'already proved'], repository.name).toContain(repository.state);
    }
  }

  it('is given the sandbox\'s archive of 50 repositories, with an empty repository, a wiki and pull-request refs', () => {
    expectScaledShape(refs);
  });

  it('to file:// remotes: exit 0, every remote equal to the archive less refs/pull/*, a wiki at {repo}.wiki, the empty one empty; --json as the contract says', async () => {
    const archive = archiveCopy(original);
    const root = tempDir();
    const template = fileTemplate(root);
    const result = await restore([archive, '--to', template, '--json']);
    expect(result.code, result.stderr).toBe(0);
    const report = reportOf<RestoreReport>(result);
    expect(report).toMatchObject({ archive, target: template, dry_run: false });
    expectAllProved(report, template);
    expect(report.repositories.every((repository) => repository.state === 'proved')).toBe(true);
    await expectEveryRemoteEqual(template);

    const wiki = names().find((name) => name.endsWith('.wiki')) as string;
    expect(existsSync(join(root, `${wiki}.git`)), `${wiki} restored to ${wiki}.git`).toBe(true);
    const empty = names().find((name) => refs.get(name)?.size === 0) as string;
    expect(byName(report, empty)).toMatchObject({ state: 'proved', refs: 0 });
    expect(await lsRemote(urlOf(template, empty))).toEqual(new Map());
    // One line per repository on stderr off a terminal.
    for (const name of names()) expect(result.stderr).toContain(`${name} → ${urlOf(template, name)}: proved`);

    expect(statSync(journalOf(archive)).mode & 0o777).toBe(0o600);
  }, TEST_CEILING_MS);

  it('--include-pull-refs: refs/pull/3/head reaches the remote as refs/svc-migrate/pull/3/head, every remote equal', async () => {
    const archive = archiveCopy(original);
    const template = fileTemplate(tempDir());
    const result = await restore([archive, '--to', template, '--include-pull-refs', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expectAllProved(reportOf<RestoreReport>(result), template, { pullRefs: true });
    await expectEveryRemoteEqual(template, { pullRefs: true });

    const withPull = names().find((name) => refs.get(name)?.has('refs/pull/3/head'));
    expect(withPull, 'a repository with refs/pull/3/head').toBeDefined();
    const remote = await lsRemote(urlOf(template, withPull as string));
    expect(remote.get('refs/svc-migrate/pull/3/head')).toBe(refs.get(withPull as string)?.get('refs/pull/3/head'));
    expect([...remote.keys()].filter((ref) => ref.startsWith('refs/pull/'))).toEqual([]);
  }, TEST_CEILING_MS);

  it('to git daemon (git://, receive-pack enabled) on 127.0.0.1: every remote equal', async () => {
    const archive = archiveCopy(original);
    const root = tempDir();
    await remotesFor(root);
    const daemon = await gitDaemon(root);
    const template = `${daemon.url}{owner}/{repo}.git`;
    const result = await restore([archive, '--to', template, '--json']);
    expect(result.code, result.stderr).toBe(0);
    expectAllProved(reportOf<RestoreReport>(result), template);
    await expectEveryRemoteEqual(template);
  }, TEST_CEILING_MS);

  it('to smart HTTP through git http-backend: every remote equal', async () => {
    const archive = archiveCopy(original);
    const root = tempDir();
    await remotesFor(root);
    const http = await smartHttp(root);
    const template = `${http.url}{owner}/{repo}.git`;
    const result = await restore([archive, '--to', template, '--json']);
    expect(result.code, result.stderr).toBe(0);
    expectAllProved(reportOf<RestoreReport>(result), template);
    await expectEveryRemoteEqual(template);
    expect(http.requests.filter((request) => request.url.endsWith('/git-receive-pack')).length).toBeGreaterThan(0);
  }, TEST_CEILING_MS);

  it('a remote whose update hook refuses one ref: exit 10, that repository failed with the ref refused and the hook\'s message, its other refs and every other repository proved', async () => {
    const archive = archiveCopy(original);
    const root = tempDir();
    const template = fileTemplate(root);
    const name = 'octo-org/repo-0001';
    const ref = 'refs/tags/v1.0.0';
    expect(refs.get(name)?.has(ref), `${name} has ${ref}`).toBe(true);
    const [bare] = await bareRemotes(root, [`${name}.git`]);
    const message = 'tags here are made by the release team';
    refusingHook(bare as string, ref, message);

    const result = await restore([archive, '--to', template, '--json']);
    expect(result.code, result.stderr).toBe(10);
    const report = reportOf<RestoreReport>(result);
    expect(report).toMatchObject({ proved: refs.size - 1, failed: 1 });
    const refused = byName(report, name);
    expect(refused?.state).toBe('failed');
    expect(refused?.refused?.map((entry) => entry.ref)).toEqual([ref]);
    const said = [...(refused?.refused ?? []).map((entry) => entry.reason), ...(refused?.messages ?? [])].join('\n');
    expect(said).toContain(message);

    const expected = pushed(refs.get(name) as Map<string, string>);
    expected.delete(ref);
    expect(await lsRemote(urlOf(template, name))).toEqual(expected);
    await expectEveryRemoteEqual(template, { except: [name] });
    for (const repository of report.repositories.filter((r) => r.name !== name)) expect(repository.state, repository.name).toBe('proved');
  }, TEST_CEILING_MS);

  it('a target with other history: failed naming each differing ref, the remote unchanged; with --force, made equal and proved', async () => {
    const archive = archiveCopy(original);
    const root = tempDir();
    const template = fileTemplate(root);
    const name = 'octo-org/repo-0002';
    const archived = pushed(refs.get(name) as Map<string, string>);
    expect(archived.size).toBeGreaterThan(0);

    // Every ref of the archive on the remote at another commit, and a branch the archive has not.
    const work = join(tempDir(), 'work');
    await runGit(['init', '-q', work]);
    writeFileSync(join(work, 'other.txt'), 'another history\n');
    await runGit(['add', '.'], work);
    await runGit(['commit', '-q', '-m', 'another history'], work);
    const [bare] = await bareRemotes(root, [`${name}.git`]);
    await runGit(['push', '-q', `file://${bare}`, ...[...archived.keys(), 'refs/heads/elsewhere'].map((ref) => `HEAD:${ref}`)], work);
    const before = await lsRemote(urlOf(template, name));
    const other = before.get('refs/heads/elsewhere') as string;

    const refused = await restore([archive, '--to', template, '--json']);
    expect(refused.code, refused.stderr).toBe(10);
    const report = reportOf<RestoreReport>(refused);
    expect(report).toMatchObject({ proved: refs.size - 1, failed: 1 });
    const failed = byName(report, name);
    expect(failed?.state).toBe('failed');
    expect(failed?.differences).toEqual(expect.arrayContaining([
      ...[...archived].map(([ref, id]) => ({ ref, archive: id, remote: other })),
      { ref: 'refs/heads/elsewhere', remote: other },
    ]));
    expect(await lsRemote(urlOf(template, name))).toEqual(before);
    await expectEveryRemoteEqual(template, { except: [name] });

    const forced = await restore([archive, '--to', template, '--force', '--json']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(byName(reportOf<RestoreReport>(forced), name)?.state).toBe('proved');
    await expectEveryRemoteEqual(template);
  }, TEST_CEILING_MS);

  it('killed (SIGKILL) once its first repository is proved, then run again: exit 0, every remote equal, some already proved', async () => {
    const archive = archiveCopy(original);
    const template = fileTemplate(tempDir());
    const args = ['archive', 'restore', archive, '--to', template, '--parallel', '2'];
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...GIT_SETUP }, stdio: ['ignore', 'ignore', 'pipe'] });
    const closed = new Promise<NodeJS.Signals | null>((resolve) => child.once('close', (_code, signal) => resolve(signal)));
    await untilSaid(child, /: proved \(/);
    child.kill('SIGKILL');
    expect(await closed, 'the restore was still running when killed').toBe('SIGKILL');

    const rerun = await restore([archive, '--to', template, '--parallel', '2', '--json']);
    expect(rerun.code, rerun.stderr).toBe(0);
    const report = reportOf<RestoreReport>(rerun);
    expectAllProved(report, template);
    expect(report.repositories.filter((repository) => repository.state === 'already proved')).not.toEqual([]);
    await expectEveryRemoteEqual(template);
  }, TEST_CEILING_MS);

  it('--dry-run pushes nothing and writes no journal, and prints the plan: each repository, its URL and its refs', async () => {
    const archive = archiveCopy(original);
    const root = tempDir();
    await remotesFor(root);
    const template = fileTemplate(root);

    const result = await restore([archive, '--to', template, '--dry-run', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const report = reportOf<RestoreReport>(result);
    expect(report).toMatchObject({ archive, target: template, dry_run: true });
    expect(report.repositories.map((repository) => repository.name).sort()).toEqual(names().sort());
    for (const repository of report.repositories) {
      expect(repository, repository.name).toMatchObject({ state: 'planned', url: urlOf(template, repository.name), refs: pushed(refs.get(repository.name) as Map<string, string>).size });
    }

    const text = await restore([archive, '--to', template, '--dry-run']);
    expect(text.code, text.stderr).toBe(0);
    const printed = text.stdout + text.stderr;
    for (const name of names()) expect(printed).toContain(urlOf(template, name));
    for (const ref of pushed(refs.get('octo-org/repo-0001') as Map<string, string>).keys()) expect(printed).toContain(ref);

    for (const name of names()) expect(await lsRemote(urlOf(template, name)), name).toEqual(new Map());
    expect(existsSync(journalOf(archive))).toBe(false);
  }, TEST_CEILING_MS);

  it('--only octo-org/repo-0007 (or repo-0008) restores only that repository', async () => {
    const archive = archiveCopy(original);
    const root = tempDir();
    const template = fileTemplate(root);
    const result = await restore([archive, '--to', template, '--json', '--only', 'octo-org/repo-0007']);
    expect(result.code, result.stderr).toBe(0);
    const report = reportOf<RestoreReport>(result);
    expect(report.repositories).toEqual([expect.objectContaining({ name: 'octo-org/repo-0007', state: 'proved', url: urlOf(template, 'octo-org/repo-0007') })]);
    expect(readdirSync(root)).toEqual(['octo-org']);
    expect(readdirSync(join(root, 'octo-org'))).toEqual(['repo-0007.git']);
    expect(await lsRemote(urlOf(template, 'octo-org/repo-0007'))).toEqual(pushed(refs.get('octo-org/repo-0007') as Map<string, string>));

    // A bare name, and the words: a line on stderr, the summary table on stdout.
    const bareName = await restore([archiveCopy(original), '--to', fileTemplate(tempDir()), '--only', 'repo-0008']);
    expect(bareName.code, bareName.stderr).toBe(0);
    expect(bareName.stderr).toMatch(/octo-org\/repo-0008 → file:\/\/\S+\/octo-org\/repo-0008\.git: proved \(2 refs\b/);
    expect(bareName.stderr).not.toContain('repo-0007');
    expect(bareName.stdout).toMatch(/octo-org\/repo-0008.*proved/);
  }, TEST_CEILING_MS);

  it('--only a name the archive does not hold: exit 2 naming it, nothing pushed, no journal', async () => {
    const archive = archiveCopy(original);
    const root = tempDir();
    const result = await restore([archive, '--to', fileTemplate(root), '--only', 'octo-org/repo-0007', 'octo-org/no-such-repo']);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('octo-org/no-such-repo');
    expect(readdirSync(root)).toEqual([]);
    expect(existsSync(journalOf(archive))).toBe(false);
  }, TEST_CEILING_MS);

  it('a template without {repo}, or of a scheme git is not given here: exit 2, nothing pushed', async () => {
    const root = tempDir();
    for (const template of [`file://${root}/{owner}/all.git`, `ftp://127.0.0.1/{owner}/{repo}.git`, `${root}/{owner}/{repo}.git`]) {
      const result = await restore([archiveCopy(original), '--to', template]);
      expect(result.code, `${template}: ${result.stderr}`).toBe(2);
      expect(result.stderr, template).toMatch(/--to|template|\{repo\}/);
      expect(result.stderr).not.toMatch(/unknown (command|option)/);
    }
    expect(readdirSync(root)).toEqual([]);
  }, TEST_CEILING_MS);

  it('a repository name outside [A-Za-z0-9._-], or starting with "." or "-", is not pushed: failed and named; the others proved (exit 10)', async () => {
    const repository = realRepository();
    const odd = ['-x', '.x', 'x y', 'x:y', 'x%2fy', 'caf\u00e9'];
    const membersOf = (name: string) => repository.files
      .filter((file) => file.rest !== 'config' && !file.rest.startsWith('hooks/'))
      .map((file) => member({ name: `repositories/acme/${name}.git/${file.rest}` }, file.data));
    const listed = JSON.stringify(['r', ...odd].map((name) => ({ full_name: `acme/${name}` })));
    const archive = join(tempDir(), 'names.tar.gz');
    writeFileSync(archive, tarGz(member({ name: 'schema.json' }, '{"version":"1.2.0"}'), member({ name: 'repositories_000001.json' }, listed), ...['r', ...odd].flatMap(membersOf)));
    const root = tempDir();

    const result = await restore([archive, '--to', fileTemplate(root), '--json']);
    expect(result.code, result.stderr).toBe(10);
    const report = reportOf<RestoreReport>(result);
    expect(byName(report, 'acme/r')?.state).toBe('proved');
    for (const name of odd) {
      expect(byName(report, `acme/${name}`), name).toMatchObject({ state: 'failed', error: expect.stringMatching(/name/) });
    }
    expect(readdirSync(root)).toEqual(['acme']);
    expect(readdirSync(join(root, 'acme'))).toEqual(['r.git']);
  }, TEST_CEILING_MS);

  it('counts Git LFS pointers in the history per repository, with a warning: the archive carries no LFS objects', async () => {
    const dir = tempDir();
    const work = join(dir, 'work');
    await runGit(['init', '-q', work]);
    const pointer = (fill: string, size: number) => `version https://git-lfs.github.com/spec/v1\noid sha256:${fill.repeat(64)}\nsize ${size}\n`;
    writeFileSync(join(work, '.gitattributes'), '*.bin filter=lfs diff=lfs merge=lfs -text\n');
    writeFileSync(join(work, 'model.bin'), pointer('a', 1_000_000));
    await runGit(['add', '.'], work);
    await runGit(['commit', '-q', '-m', 'a model'], work);
    writeFileSync(join(work, 'model.bin'), pointer('b', 2_000_000));
    await runGit(['commit', '-q', '-am', 'a better model'], work);
    await runGit(['clone', '-q', '--bare', work, join(dir, 'r.git')]);
    const archive = join(dir, 'lfs.tar.gz');
    writeFileSync(archive, tarGz(...metadata(), ...repositoryMembers(filesOf(join(dir, 'r.git')))));

    const result = await restore([archive, '--to', fileTemplate(tempDir()), '--json']);
    const report = reportOf<RestoreReport>(result);
    expect(byName(report, 'acme/r')?.lfs_pointers, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/acme\/r.*LFS|LFS.*acme\/r/);
  }, TEST_CEILING_MS);
});

describe('archive restore of a hostile archive: exit 9, nothing pushed, no journal', () => {
  let loose: RealRepository;
  let packed: RealRepository;
  beforeAll(() => {
    loose = realRepository();
    packed = realRepository(true);
  });
  const cases = everyHostileCase(() => loose, () => packed);

  /** Restores `bytes` to file:// remotes under an empty root: the root and the archive's directory must stay as they were. */
  async function expectNothingPushed(bytes: Buffer, run: (args: string[]) => Promise<CliResult>): Promise<void> {
    const dir = tempDir();
    const archive = join(dir, 'a.tar.gz');
    writeFileSync(archive, bytes);
    const root = tempDir();
    const result = await run(['archive', 'restore', archive, '--to', fileTemplate(root), '--json']);
    expect(result.code, result.stderr).toBe(9);
    expect(readdirSync(root)).toEqual([]);
    expect(readdirSync(dir)).toEqual(['a.tar.gz']);
  }

  for (const [what, build] of cases) {
    it(what, () => expectNothingPushed(build(), (args) => runCli(args, { env: GIT_SETUP })), 60_000);
  }

  it('the first case of each kind through the built binary too', async () => {
    for (const [, build] of firstOfEachKind(() => loose, () => packed)) {
      await expectNothingPushed(build(), (args) => spawnCli(args, { env: GIT_SETUP, timeoutMs: 60_000 }));
    }
  }, 240_000);
});
