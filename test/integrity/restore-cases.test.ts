import type { RestoreReport } from '../../src/core/restore/run.js';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitDirRefs, lsRemote } from '../helpers/git-remotes.js';
import { filesOf, git, realRepository, type RepoFile } from '../helpers/hostile-archives.js';
import { GIT_SETUP, reportOf } from '../helpers/restore-archives.js';
import { type CliResult, runCli, spawnCli } from '../helpers/run-cli.js';
import { member, tarGz } from '../helpers/tar-bytes.js';

// `archive restore` held to what a tester found (the fixes of "Restore, after a tester's findings"):
// small archives of real git repositories, restored in-process to file:// remotes (and a closed
// http port), what the remotes hold read back by plain git (test/helpers/git-remotes.ts).

const TEST_CEILING_MS = 60_000;
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-restore-cases-'));
const fileTemplate = (root: string) => `file://${root}/{owner}/{repo}.git`;
const journalOf = (archive: string) => `${archive}.restore.json`;
const byName = (report: RestoreReport, name: string) => report.repositories.find((repository) => repository.name === name);

const restore = (archive: string, template: string, ...flags: string[]): Promise<CliResult> =>
  runCli(['archive', 'restore', archive, '--to', template, '--json', ...flags], { env: GIT_SETUP });

/** A repository's files as an archive holds them: its config and hooks are not (the check writes its own config). */
const withoutConfig = (files: RepoFile[]) => files.filter((file) => file.rest !== 'config' && !file.rest.startsWith('hooks/'));

/** An archive of `repositories` (by `owner/repo`), each listed in the metadata as the service lists it. */
function archiveOf(repositories: Record<string, RepoFile[]>): string {
  const listed = JSON.stringify(Object.keys(repositories).map((name) => ({ full_name: name })));
  const members = Object.entries(repositories).flatMap(([name, files]) => files.map((file) => member({ name: `repositories/${name}.git/${file.rest}` }, file.data)));
  const path = join(tempDir(), 'a.tar.gz');
  writeFileSync(path, tarGz(member({ name: 'schema.json' }, '{"version":"1.2.0"}'), member({ name: 'repositories_000001.json' }, listed), ...members));
  return path;
}

/** A real bare repository of one commit on main: its files for an archive, its path, its commit. */
function oneCommit(): { files: RepoFile[]; bare: string; commit: string } {
  const repository = realRepository();
  const bare = dirname(repository.objects);
  return { files: withoutConfig(repository.files), bare, commit: git(['--git-dir', bare, 'rev-parse', 'refs/heads/main']).toString().trim() };
}

/** The files with their refs replaced by one packed-refs file of these bytes. */
const withPackedRefs = (files: RepoFile[], packedRefs: Buffer) => [
  ...files.filter((file) => file.rest !== 'packed-refs' && !file.rest.startsWith('refs/')),
  { rest: 'packed-refs', data: packedRefs },
];

/** What a path holds, for "unchanged": its kind, mode, size and (for a file or link) its bytes. */
function snapshot(path: string): string {
  const stats = lstatSync(path);
  const content = stats.isSymbolicLink() ? `-> ${readlinkSync(path)}` : stats.isFile() && stats.size < 1 << 20 ? readFileSync(path).toString('base64') : '';
  return JSON.stringify({ mode: stats.mode, size: stats.size, link: stats.isSymbolicLink(), content });
}

/** A port on 127.0.0.1 that nothing listened on a moment ago. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

describe('archive restore, the cases a tester found', () => {
  it('two owners with a repository of one name sent by --to to one URL: exit 2 naming both and the URL, nothing pushed, no journal', async () => {
    const { files } = oneCommit();
    const archive = archiveOf({ 'acme/r': files, 'other/r': files });
    const root = join(tempDir(), 'remotes');
    const template = `file://${root}/{repo}.git`;

    const result = await restore(archive, template);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('acme/r');
    expect(result.stderr).toContain('other/r');
    expect(result.stderr).toContain(`file://${root}/r.git`);
    expect(existsSync(root) ? readdirSync(root) : [], 'nothing pushed').toEqual([]);
    expect(existsSync(journalOf(archive)), 'no journal').toBe(false);
  }, TEST_CEILING_MS);

  it('a repository whose only refs are pull-request refs: failed saying so (exit 10); with --include-pull-refs proved, the remote holding refs/svc-migrate/pull/1/head', async () => {
    const { files, commit } = oneCommit();
    // HEAD names refs/heads/main, which the archive does not hold: only refs/pull/1/head.
    const archive = archiveOf({ 'acme/r': withPackedRefs(files, Buffer.from(`# pack-refs with: peeled fully-peeled sorted \n${commit} refs/pull/1/head\n`)) });
    const root = tempDir();

    const without = await restore(archive, fileTemplate(root));
    expect(without.code, without.stderr).toBe(10);
    expect(byName(reportOf<RestoreReport>(without), 'acme/r')).toMatchObject({ state: 'failed', error: expect.stringMatching(/only refs are .*pull-request refs/) });

    const withPulls = await restore(archive, fileTemplate(root), '--include-pull-refs');
    expect(withPulls.code, withPulls.stderr).toBe(0);
    expect(byName(reportOf<RestoreReport>(withPulls), 'acme/r')?.state).toBe('proved');
    expect(await lsRemote(`file://${root}/acme/r.git`)).toEqual(new Map([['refs/svc-migrate/pull/1/head', commit]]));
  }, TEST_CEILING_MS);

  it('a SHA-256 repository: the target made is SHA-256, and proved (exit 0)', async () => {
    const dir = tempDir();
    git(['init', '-q', '--object-format=sha256', 'work'], dir);
    writeFileSync(join(dir, 'work', 'README.md'), '# r\n');
    git(['add', 'README.md'], join(dir, 'work'));
    git(['commit', '-q', '-m', 'first'], join(dir, 'work'));
    git(['clone', '-q', '--bare', 'work', 'r.git'], dir);
    const bare = join(dir, 'r.git');
    const config = { rest: 'config', data: Buffer.from('[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectformat = sha256\n') };
    const archive = archiveOf({ 'acme/r': [...withoutConfig(filesOf(bare)), config] });
    const root = tempDir();

    const result = await restore(archive, fileTemplate(root));
    expect(result.code, result.stderr).toBe(0);
    expect(byName(reportOf<RestoreReport>(result), 'acme/r')?.state).toBe('proved');
    const target = join(root, 'acme', 'r.git');
    expect(git(['--git-dir', target, 'rev-parse', '--show-object-format']).toString().trim()).toBe('sha256');
    expect(await gitDirRefs(target)).toEqual(await gitDirRefs(bare));
  }, TEST_CEILING_MS);

  it('--force never deletes a symbolic ref on the remote (that deletes main): failed naming it, main kept; again the same', async () => {
    const { files, bare, commit } = oneCommit();
    const archive = archiveOf({ 'acme/r': files });
    const root = tempDir();
    const remote = join(root, 'acme', 'r.git');
    git(['clone', '-q', '--bare', bare, remote]);
    git(['--git-dir', remote, 'symbolic-ref', 'refs/heads/alias', 'refs/heads/main']);

    for (const run of ['first', 'second']) {
      const result = await restore(archive, fileTemplate(root), '--force');
      expect(result.code, `${run}: ${result.stderr}`).toBe(10);
      const repository = byName(reportOf<RestoreReport>(result), 'acme/r');
      expect(repository?.state, run).toBe('failed');
      expect(repository?.differences, run).toEqual([{ ref: 'refs/heads/alias', remote: commit, symbolic_to: 'refs/heads/main' }]);
      expect((await gitDirRefs(remote)).get('refs/heads/main'), `${run}: main is still on the remote`).toBe(commit);
      expect(git(['--git-dir', remote, 'symbolic-ref', 'refs/heads/alias']).toString().trim(), run).toBe('refs/heads/main');
    }
  }, TEST_CEILING_MS);

  it('a target that is an empty directory is made a repository and proved (exit 0); the directories made have the umask\'s modes', async () => {
    const { files, commit } = oneCommit();
    const archive = archiveOf({ 'acme/r': files, 'other/s': files });
    const root = tempDir();
    // What an interrupted run, or the user, leaves: the repository's directory, empty.
    mkdirSync(join(root, 'acme', 'r.git'), { recursive: true });

    const result = await restore(archive, fileTemplate(root));
    expect(result.code, result.stderr).toBe(0);
    const report = reportOf<RestoreReport>(result);
    for (const name of ['acme/r', 'other/s']) {
      expect(byName(report, name)?.state, name).toBe('proved');
      expect(await lsRemote(`file://${root}/${name}.git`), name).toEqual(new Map([['refs/heads/main', commit]]));
    }

    const umask = process.umask();
    const modes = 0o777 & ~umask;
    // Under a umask of 077 the modes asked for would be private anyway: this test could not fail there.
    expect(modes, `the tests run under a umask (${umask.toString(8)}) that lets others read`).not.toBe(0o700);
    for (const made of [join(root, 'other'), join(root, 'other', 's.git'), join(root, 'acme', 'r.git')]) {
      expect((statSync(made).mode & 0o777).toString(8), made).toBe(modes.toString(8));
    }
  }, TEST_CEILING_MS);

  /** Restores main (and `others`) to a target pre-made with HEAD at `remoteHead`: proved, `head` in --json and a warning naming both. */
  /** `said`: what --json gives as the remote's HEAD (an unborn one is not listed by the remote at all). */
  async function expectHeadWarned(remoteHead: string, others: string[], said = `refs/heads/${remoteHead}`): Promise<void> {
    const { bare, commit } = oneCommit();
    for (const branch of others) git(['--git-dir', bare, 'branch', branch, 'main']);
    const archive = archiveOf({ 'acme/r': withoutConfig(filesOf(bare)) });
    const root = tempDir();
    const remote = join(root, 'acme', 'r.git');
    git(['init', '-q', '--bare', `--initial-branch=${remoteHead}`, remote]);

    const result = await restore(archive, fileTemplate(root));
    expect(result.code, result.stderr).toBe(0);
    expect(byName(reportOf<RestoreReport>(result), 'acme/r')).toMatchObject({ state: 'proved', head: { archive: 'refs/heads/main', remote: said } });
    const shown = said.replace(/[()]/g, '\\$&');
    expect(result.stderr).toMatch(new RegExp(`${shown}.*refs/heads/main|refs/heads/main.*${shown}`));
    expect(await gitDirRefs(remote)).toEqual(new Map(['main', ...others].map((branch) => [`refs/heads/${branch}`, commit])));
  }

  it('a target whose HEAD names another branch of the archive (dev, the archive\'s main): proved, with head in --json and a warning naming both', async () => {
    await expectHeadWarned('dev', ['dev']);
  }, TEST_CEILING_MS);

  // The remote's HEAD names master, which the archive lacks, so master is unborn there: `git
  // ls-remote --symref` lists no HEAD for it. The common case: a host's empty repository made with master.
  it('a target whose HEAD names master, the archive\'s main only: proved, with head in --json and a warning', async () => {
    await expectHeadWarned('master', [], '(a branch it does not have)');
  }, TEST_CEILING_MS);

  describe('--journal at a path that holds anything but a journal: exit 2, left as it was, nothing pushed', () => {
    const cases: [string, (dir: string, archive: string) => string][] = [
      ['the archive itself', (_dir, archive) => archive],
      [
        'a symbolic link to a file',
        (dir) => {
          writeFileSync(join(dir, 'notes.txt'), 'mine\n');
          symlinkSync(join(dir, 'notes.txt'), join(dir, 'link.json'));
          return join(dir, 'link.json');
        },
      ],
      [
        'a directory',
        (dir) => {
          mkdirSync(join(dir, 'journal.json'));
          writeFileSync(join(dir, 'journal.json', 'inside'), 'x');
          return join(dir, 'journal.json');
        },
      ],
      [
        'a file of 17 MiB',
        (dir) => {
          writeFileSync(join(dir, 'big.json'), '');
          truncateSync(join(dir, 'big.json'), 17 << 20);
          return join(dir, 'big.json');
        },
      ],
    ];

    for (const [what, make] of cases) {
      it(what, async () => {
        const { files } = oneCommit();
        const archive = archiveOf({ 'acme/r': files });
        const dir = tempDir();
        const journal = make(dir, archive);
        const before = readdirSync(dir).map((name) => [name, snapshot(join(dir, name))]);
        const archiveBefore = readFileSync(archive);
        const root = tempDir();

        const result = await restore(archive, fileTemplate(root), '--journal', journal);
        expect(result.code, result.stderr).toBe(2);
        expect(result.stderr).toContain(journal);
        expect(readdirSync(dir).map((name) => [name, snapshot(join(dir, name))])).toEqual(before);
        expect(readFileSync(archive).equals(archiveBefore), 'the archive unchanged').toBe(true);
        expect(readdirSync(root), 'nothing pushed').toEqual([]);
      }, TEST_CEILING_MS);
    }
  });

  it('ref names that are not UTF-8: that repository failed saying so and what to do instead, nothing of it called proved', async () => {
    const { files, commit } = oneCommit();
    const packedRefs = Buffer.concat([
      Buffer.from(`# pack-refs with: peeled fully-peeled sorted \n${commit} refs/heads/caf`),
      Buffer.from([0xe8]),
      Buffer.from(`\n${commit} refs/heads/main\n${commit} refs/tags/`),
      Buffer.from([0xe9]),
      Buffer.from('t\n'),
    ]);
    const archive = archiveOf({ 'acme/bytes': withPackedRefs(files, packedRefs), 'acme/good': files });
    const root = tempDir();

    const result = await restore(archive, fileTemplate(root));
    expect(result.code, result.stderr).toBe(10);
    const report = reportOf<RestoreReport>(result);
    expect(byName(report, 'acme/good')?.state).toBe('proved');
    const bytes = byName(report, 'acme/bytes');
    expect(bytes?.state).toBe('failed');
    expect(bytes?.error).toMatch(/not UTF-8.*archive extract.*git push --mirror/);
    const journal = JSON.parse(readFileSync(journalOf(archive), 'utf8')) as { targets: Record<string, Record<string, unknown>> };
    expect(Object.keys(journal.targets[fileTemplate(root)] ?? {}), 'only the good one recorded as proved').toEqual(['acme/good']);
  }, TEST_CEILING_MS);

  // Node's fileURLToPath (the target made) and git (the URL pushed to) read them apart.
  it.each(['100%25', 'q?x=1', 'f#x'])('a file:// template holding %s: exit 2 before any work, nothing made, no journal', async (part) => {
    const { files } = oneCommit();
    const archive = archiveOf({ 'acme/r': files });
    const root = tempDir();

    const result = await restore(archive, `file://${root}/${part}/{owner}/{repo}.git`);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('--to');
    expect(readdirSync(root), 'nothing made').toEqual([]);
    expect(existsSync(journalOf(archive)), 'no journal').toBe(false);
  }, TEST_CEILING_MS);

  it('a password in the --to URL: shown and recorded as ***, never as itself (stdout, stderr, journal)', async () => {
    const { files } = oneCommit();
    const archive = archiveOf({ 'acme/r': files, 'acme/s': files });
    const port = await closedPort();
    const template = `http://user:s3cret@127.0.0.1:${port}/{owner}/{repo}.git`;

    const result = await restore(archive, template);
    expect(result.code, result.stderr).toBe(10);
    const report = reportOf<RestoreReport>(result);
    expect(report.target).toBe(`http://user:***@127.0.0.1:${port}/{owner}/{repo}.git`);
    expect(report.repositories.map((repository) => [repository.state, repository.url])).toEqual([
      ['failed', `http://user:***@127.0.0.1:${port}/acme/r.git`],
      ['failed', `http://user:***@127.0.0.1:${port}/acme/s.git`],
    ]);
    expect(result.stdout).not.toContain('s3cret');
    expect(result.stderr).not.toContain('s3cret');
    expect(result.stderr).toContain('***');
    expect(readFileSync(journalOf(archive), 'utf8')).not.toContain('s3cret');
  }, TEST_CEILING_MS);
});

describe('archive restore, the cases a second tester found', () => {
  it('--include-pull-refs where the archive already holds refs/svc-migrate/pull/1/head: failed saying so, never proved with one ref hidden', async () => {
    const { files, commit } = oneCommit();
    const refs = `# pack-refs with: peeled fully-peeled sorted \n${commit} refs/heads/main\n${commit} refs/pull/1/head\n${commit} refs/svc-migrate/pull/1/head\n`;
    const archive = archiveOf({ 'acme/r': withPackedRefs(files, Buffer.from(refs)) });
    const result = await restore(archive, fileTemplate(tempDir()), '--include-pull-refs');
    expect(result.code, result.stderr).toBe(10);
    expect(byName(reportOf<RestoreReport>(result), 'acme/r')).toMatchObject({ state: 'failed', error: expect.stringMatching(/already has refs\/svc-migrate\/pull\/1\/head/) });
  }, TEST_CEILING_MS);

  it('a token given as the URL\'s user, which git quotes when the host refuses it: never shown', async () => {
    const { files } = oneCommit();
    const archive = archiveOf({ 'acme/r': files });
    const server = createHttpServer((_request, response) => {
      response.writeHead(401, { 'www-authenticate': 'Basic realm="x"' }).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as { port: number };
      const result = await restore(archive, `http://tokSECRETvalue@127.0.0.1:${port}/{owner}/{repo}.git`);
      expect(result.code, result.stderr).toBe(10);
      expect(`${result.stdout}${result.stderr}`).not.toContain('tokSECRETvalue');
      expect(byName(reportOf<RestoreReport>(result), 'acme/r')?.error).toMatch(/\*\*\*/);
    } finally {
      server.close();
    }
  }, TEST_CEILING_MS);

  it('a template refused for its form never quotes its token', async () => {
    const result = await restore(archiveOf({ 'acme/r': oneCommit().files }), 'https://tokSECRETvalue@host/x.git');
    expect(result.code).toBe(2);
    expect(result.stderr).not.toContain('tokSECRETvalue');
  });

  it.each(['file:///srv/nx/../t/{repo}.git', 'file:///srv/./t/{repo}.git', 'file:///srv/t/{repo}/..', 'file:///srv/b\\x/{repo}.git'])('a file:// template %s: exit 2 (Node and git would read two places)', async (template) => {
    const result = await restore(archiveOf({ 'acme/r': oneCommit().files }), template);
    expect(result.code, result.stderr).toBe(2);
  });

  it('ext:: never runs, even where GIT_ALLOW_PROTOCOL allows it and insteadOf leads there', async () => {
    const { files } = oneCommit();
    const archive = archiveOf({ 'acme/r': files });
    const home = tempDir();
    const proof = join(tempDir(), 'ran');
    git(['config', '--file', join(home, '.gitconfig'), `url.ext::touch ${proof} .insteadOf`, 'https://evil.example/']);
    // The built binary: git inherits the process's own environment, which an in-process run does not set.
    const result = await spawnCli(['archive', 'restore', archive, '--to', 'https://evil.example/{owner}/{repo}', '--dry-run', '--json'], {
      env: { ...GIT_SETUP, HOME: home, XDG_CONFIG_HOME: home, GIT_ALLOW_PROTOCOL: 'ext:https' },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(proof), 'ext:: ran').toBe(false);
  }, TEST_CEILING_MS);

  it('a file:// target that is an empty directory of the admin\'s (setgid, 2770) is made a repository in place: its mode kept', async () => {
    const { files } = oneCommit();
    const root = tempDir();
    const target = join(root, 'acme', 'r.git');
    mkdirSync(target, { recursive: true });
    chmodSync(target, 0o2770);
    const result = await restore(archiveOf({ 'acme/r': files }), fileTemplate(root));
    expect(result.code, result.stderr).toBe(0);
    expect(statSync(target).mode & 0o7777).toBe(0o2770);
    expect(readdirSync(target).filter((name) => name.startsWith('.'))).toEqual([]);
  }, TEST_CEILING_MS);

  it('a file:// target left half made (git\'s skeleton without HEAD, a building directory of ours): made again and proved', async () => {
    const { files, commit } = oneCommit();
    const root = tempDir();
    const target = join(root, 'acme', 'r.git');
    mkdirSync(join(target, 'objects', 'pack'), { recursive: true });
    mkdirSync(join(target, 'refs', 'heads'), { recursive: true });
    mkdirSync(join(target, '.svc-migrate-init-1-abcd'), { recursive: true });
    writeFileSync(join(target, 'config'), '[core]\n\tbare = true\n');
    const result = await restore(archiveOf({ 'acme/r': files }), fileTemplate(root));
    expect(result.code, result.stderr).toBe(0);
    expect(await gitDirRefs(target)).toEqual(new Map([['refs/heads/main', commit]]));
  }, TEST_CEILING_MS);

  it('--force with protocol v0 in the user\'s config and a symbolic ref on the remote: main is never lost, run after run', async () => {
    const { files, bare, commit } = oneCommit();
    const root = tempDir();
    const target = join(root, 'acme', 'r.git');
    git(['clone', '-q', '--bare', bare, target]);
    git(['--git-dir', target, 'symbolic-ref', 'refs/heads/alias', 'refs/heads/main']);
    const home = tempDir();
    git(['config', '--file', join(home, '.gitconfig'), 'protocol.version', '0']);
    const archive = archiveOf({ 'acme/r': files });
    for (let run = 1; run <= 2; run++) {
      const result = await spawnCli(['archive', 'restore', archive, '--to', fileTemplate(root), '--force', '--json'], { env: { ...GIT_SETUP, HOME: home, XDG_CONFIG_HOME: home } });
      expect([0, 10], result.stderr).toContain(result.code);
      expect((await gitDirRefs(target)).get('refs/heads/main'), `main after run ${run}`).toBe(commit);
    }
  }, TEST_CEILING_MS);

  it('a push refused where pushInsteadOf sends it, while the URL read back already equals the archive: failed, not proved', async () => {
    const { files, bare } = oneCommit();
    const root = tempDir();
    const readBack = join(root, 'y', 'acme', 'r.git');
    const pushedTo = join(root, 'x', 'acme', 'r.git');
    git(['clone', '-q', '--bare', bare, readBack]);
    git(['init', '-q', '--bare', pushedTo]);
    writeFileSync(join(pushedTo, 'hooks', 'update'), '#!/bin/sh\necho "no pushes here" >&2\nexit 1\n', { mode: 0o755 });
    const home = tempDir();
    git(['config', '--file', join(home, '.gitconfig'), `url.file://${root}/x/.pushInsteadOf`, `file://${root}/y/`]);
    const result = await spawnCli(['archive', 'restore', archiveOf({ 'acme/r': files }), '--to', `file://${root}/y/{owner}/{repo}.git`, '--json'], {
      env: { ...GIT_SETUP, HOME: home, XDG_CONFIG_HOME: home },
    });
    expect(result.code, result.stderr).toBe(10);
    expect(byName(reportOf<RestoreReport>(result), 'acme/r')).toMatchObject({ state: 'failed', refused: [expect.objectContaining({ ref: 'refs/heads/main' })] });
  }, TEST_CEILING_MS);

  it('--only names a wiki as it is listed', async () => {
    const { files } = oneCommit();
    const root = tempDir();
    const result = await restore(archiveOf({ 'acme/r': files, 'acme/r.wiki': files }), fileTemplate(root), '--only', 'acme/r.wiki');
    expect(result.code, result.stderr).toBe(0);
    expect(reportOf<RestoreReport>(result).repositories.map((repository) => repository.name)).toEqual(['acme/r.wiki']);
  }, TEST_CEILING_MS);
});
