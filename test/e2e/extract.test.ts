import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { untilChildWrites } from '../helpers/fs-events.js';
import { archiveRefs, gitDirRefs, runGit, untarred } from '../helpers/git-remotes.js';
import { everyHostileCase, firstOfEachKind, type RealRepository, realRepository } from '../helpers/hostile-archives.js';
import { expectScaledShape, GIT_SETUP, reportOf, scaledArchive } from '../helpers/restore-archives.js';
import { BIN, type CliResult, runCli, spawnCli } from '../helpers/run-cli.js';

// `archive extract ARCHIVE DIR` through the built binary, on the sandbox's archive of 50
// repositories: every repository a bare repository git accepts, with the archive's refs as tar and
// for-each-ref read them (test/helpers/git-remotes.ts), git's own config and no hooks; the metadata
// beside them; and nothing at DIR, or beside it, unless the whole archive verified and the run ended.

interface ExtractReport {
  archive: string;
  directory: string;
  repositories: { name: string; path: string; refs: number; empty?: boolean }[];
  files: string[];
  left_out: { count: number; first: string[] };
  verify: { ok: boolean };
}

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-extract-test-'));
const RUN_CEILING_MS = 180_000;
const TEST_CEILING_MS = 400_000;
const PRIVATE_DIRECTORY = /^\.out\.extracting-/;
/** What `git init --bare --template=` writes in a config, on any system: nothing else may be there. */
/** What a repository of the extraction holds: what git needs, nothing else. */
const GIT_NEEDS = new Set(['HEAD', 'config', 'packed-refs', 'refs', 'objects', 'logs']);
const GIT_INIT_KEYS = new Set(['core.repositoryformatversion', 'core.filemode', 'core.bare', 'core.logallrefupdates', 'core.ignorecase', 'core.precomposeunicode', 'core.symlinks']);

const extract = (args: string[], env: Record<string, string> = {}) =>
  spawnCli(['archive', 'extract', ...args], { env: { ...GIT_SETUP, ...env }, timeoutMs: RUN_CEILING_MS });

/** Every file under `dir` (not directories), by its path relative to `dir`. */
function filesUnder(dir: string, skip: (path: string) => boolean = () => false): string[] {
  const found: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (skip(relative(dir, path))) continue;
      if (statSync(path).isDirectory()) walk(path);
      else found.push(relative(dir, path));
    }
  };
  walk(dir);
  return found.sort();
}

/** Paths under `dir` (itself included) that its group or others may read, write or enter. */
function openToOthers(dir: string): string[] {
  const open: string[] = [];
  const walk = (path: string) => {
    const stat = statSync(path);
    if ((stat.mode & 0o077) !== 0) open.push(`${relative(dir, path) || '.'} ${(stat.mode & 0o777).toString(8)}`);
    if (stat.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(dir);
  return open;
}

describe('archive extract, end to end through the built binary', () => {
  let original: string;
  let refs: Map<string, Map<string, string>>;
  /** The archive as GNU tar extracts it: what the extraction's files and HEADs are held to. */
  let tree: string;
  let metadataFiles: string[];
  beforeAll(async () => {
    original = await scaledArchive();
    refs = await archiveRefs(original);
    tree = await untarred(original);
    metadataFiles = filesUnder(tree, (path) => path === 'repositories');
  }, 120_000);

  const names = () => [...refs.keys()];

  /** Every repository under `dir` a bare repository with the archive's refs and HEAD, git's config, no hooks, that git fsck accepts. */
  async function expectRepositoriesAsArchived(dir: string): Promise<void> {
    for (const name of names()) {
      const repository = join(dir, `${name}.git`);
      const archived = join(tree, 'repositories', `${name}.git`);
      expect(await gitDirRefs(repository), name).toEqual(refs.get(name));
      expect(readFileSync(join(repository, 'HEAD'), 'utf8'), name).toBe(readFileSync(join(archived, 'HEAD'), 'utf8'));
      await runGit(['--git-dir', repository, 'fsck', '--no-progress']);
      const config = (await runGit(['config', '--file', join(repository, 'config'), '--list'])).trim().split('\n');
      expect(config, name).toContain('core.bare=true');
      expect(config.map((line) => line.split('=')[0] as string).filter((key) => !GIT_INIT_KEYS.has(key)), `${name}: config keys git init does not write`).toEqual([]);
      const hooks = join(repository, 'hooks');
      expect(existsSync(hooks) ? readdirSync(hooks) : [], `${name}: hooks`).toEqual([]);
      // Nothing of the archive's description, info/ or branches/, not even an empty directory.
      expect(readdirSync(repository).filter((entry) => !GIT_NEEDS.has(entry)), `${name}: what git does not need`).toEqual([]);
    }
  }

  it('is given the sandbox\'s archive of 50 repositories, with an empty repository, a wiki and pull-request refs', () => {
    expectScaledShape(refs);
  });

  it('writes DIR/<owner>/<repo>.git for each repository (a wiki as <repo>.wiki.git), bare, as archived, git\'s config, no hooks; the metadata beside them; 0700/0600; --json lists them', async () => {
    const parent = tempDir();
    const dir = join(parent, 'out');
    const result = await extract([original, dir, '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(readdirSync(parent)).toEqual(['out']);
    await expectRepositoriesAsArchived(dir);

    for (const file of metadataFiles) expect(readFileSync(join(dir, file)), file).toEqual(readFileSync(join(tree, file)));
    expect(metadataFiles).toContain('schema.json');
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const file of metadataFiles) expect(statSync(join(dir, file)).mode & 0o777, file).toBe(0o600);
    expect(openToOthers(dir)).toEqual([]);

    const report = reportOf<ExtractReport>(result);
    expect(report).toMatchObject({ archive: original, directory: dir, verify: expect.objectContaining({ ok: true }) });
    expect(report.files).toEqual(expect.arrayContaining(metadataFiles));
    expect(report.left_out).toEqual({ count: 0, first: [] });
    expect(report.repositories.map((repository) => repository.name).sort()).toEqual(names().sort());
    for (const repository of report.repositories) {
      const size = refs.get(repository.name)?.size ?? -1;
      expect(repository, repository.name).toMatchObject({ path: `${repository.name}.git`, refs: size });
      expect(Boolean(repository.empty), repository.name).toBe(size === 0);
    }
  }, TEST_CEILING_MS);

  it('an empty DIR is used; a DIR not empty is refused (exit 2) and left as it was; --force replaces each repository and file in whole and touches nothing else', async () => {
    const parent = tempDir();
    const dir = join(parent, 'out');
    mkdirSync(dir);
    const first = await extract([original, dir]);
    expect(first.code, first.stderr).toBe(0);

    writeFileSync(join(dir, 'notes.txt'), 'mine\n');
    const name = 'octo-org/repo-0001';
    const repository = join(dir, `${name}.git`);
    const branch = [...(refs.get(name)?.keys() ?? [])].find((ref) => ref.startsWith('refs/heads/')) as string;
    await runGit(['--git-dir', repository, 'update-ref', 'refs/heads/junk', branch]);
    writeFileSync(join(dir, 'schema.json'), '{"changed":true}\n');
    const before = filesUnder(dir).map((file) => `${file} ${readFileSync(join(dir, file)).toString('base64')}`);

    const refused = await extract([original, dir]);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(dir);
    expect(filesUnder(dir).map((file) => `${file} ${readFileSync(join(dir, file)).toString('base64')}`)).toEqual(before);

    const forced = await extract([original, dir, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('mine\n');
    expect(readFileSync(join(dir, 'schema.json'))).toEqual(readFileSync(join(tree, 'schema.json')));
    await expectRepositoriesAsArchived(dir);
    expect(readdirSync(parent)).toEqual(['out']);
  }, TEST_CEILING_MS);

  it('a DIR that is a file: exit 2, the file as it was', async () => {
    const parent = tempDir();
    const file = join(parent, 'out');
    writeFileSync(file, 'a file\n');
    const result = await extract([original, file]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(file);
    expect(result.stderr).not.toMatch(/unknown (command|option)/);
    expect(readFileSync(file, 'utf8')).toBe('a file\n');
    expect(readdirSync(parent)).toEqual(['out']);
  }, TEST_CEILING_MS);

  it('without git on PATH: exit 2, nothing written', async () => {
    const parent = tempDir();
    const result = await extract([original, join(parent, 'out')], { PATH: tempDir() });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/git/);
    expect(readdirSync(parent)).toEqual([]);
  }, TEST_CEILING_MS);

  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    it(`${signal} in the middle of an extract: exit ${code}, nothing at DIR and nothing beside it`, async () => {
      const parent = tempDir();
      const child = spawn(process.execPath, [BIN, 'archive', 'extract', original, join(parent, 'out')], {
        env: { ...process.env, ...GIT_SETUP },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
      await untilChildWrites(() => readdirSync(parent).some((name) => PRIVATE_DIRECTORY.test(name)), parent, child, 'its private directory');
      child.kill(signal);
      expect(await closed).toBe(code);
      expect(readdirSync(parent)).toEqual([]);
    }, TEST_CEILING_MS);
  }

  it('killed (SIGKILL) in the middle: the next extract beside it removes the private directory left, and extracts', async () => {
    const parent = tempDir();
    const dir = join(parent, 'out');
    const child = spawn(process.execPath, [BIN, 'archive', 'extract', original, dir], { env: { ...process.env, ...GIT_SETUP }, stdio: ['ignore', 'ignore', 'pipe'] });
    const closed = new Promise<NodeJS.Signals | null>((resolve) => child.once('close', (_code, signal) => resolve(signal)));
    await untilChildWrites(() => readdirSync(parent).some((name) => PRIVATE_DIRECTORY.test(name)), parent, child, 'its private directory');
    child.kill('SIGKILL');
    expect(await closed, 'the extract was still running when killed').toBe('SIGKILL');
    expect(existsSync(dir)).toBe(false);
    expect(readdirSync(parent).filter((name) => PRIVATE_DIRECTORY.test(name)), 'what kill -9 left').toHaveLength(1);

    const result = await extract([original, dir]);
    expect(result.code, result.stderr).toBe(0);
    expect(readdirSync(parent)).toEqual(['out']);
    await expectRepositoriesAsArchived(dir);
  }, TEST_CEILING_MS);
});

describe('archive extract of a hostile archive: exit 9, nothing at DIR and nothing beside it', () => {
  let loose: RealRepository;
  let packed: RealRepository;
  beforeAll(() => {
    loose = realRepository();
    packed = realRepository(true);
  });

  async function expectNothingWritten(bytes: Buffer, run: (args: string[]) => Promise<CliResult>): Promise<void> {
    const archive = join(tempDir(), 'a.tar.gz');
    writeFileSync(archive, bytes);
    const parent = tempDir();
    const result = await run(['archive', 'extract', archive, join(parent, 'out'), '--json']);
    expect(result.code, result.stderr).toBe(9);
    expect(readdirSync(parent)).toEqual([]);
  }

  for (const [what, build] of everyHostileCase(() => loose, () => packed)) {
    it(what, () => expectNothingWritten(build(), (args) => runCli(args, { env: GIT_SETUP })), 60_000);
  }

  it('the first case of each kind through the built binary too', async () => {
    for (const [, build] of firstOfEachKind(() => loose, () => packed)) {
      await expectNothingWritten(build(), (args) => spawnCli(args, { env: GIT_SETUP, timeoutMs: 60_000 }));
    }
  }, 240_000);
});
