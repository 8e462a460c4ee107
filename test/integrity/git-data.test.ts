import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDeflate } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { spawnCli } from '../helpers/run-cli.js';
import { startStorageStub } from '../helpers/storage-stub.js';
import { filesOf, type RepoFile } from '../helpers/hostile-archives.js';
import { member, tarGz } from '../helpers/tar-bytes.js';

// What a repository's git data may hold, judged on what an extraction of it does next: `git log`
// shows what the history is, a push runs no hook of the archive's, a repository stripped of its
// history is not taken for an empty one, and the check's time is the archive's, not each
// repository's (docs/reliability.md#the-archive-check). Each through the built binary.

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-git-data-'));
const git = (args: string[], cwd?: string) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@e', '-c', 'init.defaultBranch=main', ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: cwd ?? tmpdir(), GIT_CONFIG_NOSYSTEM: '1' },
    encoding: 'utf8',
  });

/** A bare repository of two commits made by git (with the sample hooks its templates install), as files. */
function realRepository(): { files: RepoFile[]; first: string; second: string; dir: string } {
  const dir = tempDir();
  git(['init', '-q', 'work'], dir);
  const work = join(dir, 'work');
  writeFileSync(join(work, 'README.md'), '# r\n');
  git(['add', 'README.md'], work);
  git(['commit', '-q', '-m', 'first'], work);
  writeFileSync(join(work, 'README.md'), '# r, second\n');
  git(['commit', '-q', '-am', 'second'], work);
  git(['clone', '-q', '--bare', 'work', 'r.git'], dir);
  const [second, first] = git(['rev-list', 'main'], work).trim().split('\n') as [string, string];
  return { files: filesOf(join(dir, 'r.git')), first, second, dir };
}

const repositoryMembers = (files: RepoFile[], name = 'acme/r') =>
  files.map((file) => member({ name: `repositories/${name}.git/${file.rest}` }, file.data));

const metadata = (records: object[] = [{ full_name: 'acme/r' }]) => [
  member({ name: 'schema.json' }, '{"version":"1.2.0"}'),
  member({ name: 'repositories_000001.json' }, JSON.stringify(records)),
];

function writeArchive(bytes: Buffer): string {
  const file = join(tempDir(), 'a.tar.gz');
  writeFileSync(file, bytes);
  return file;
}

type Problem = { repository?: string; file?: string; message: string };
type Report = { ok: boolean; git_check: string; problems: Problem[]; repositories: { name: string; empty?: true; git_check?: string }[] };

const verify = (file: string, extra: string[] = [], env: Record<string, string> = {}) =>
  spawnCli(['archive', 'verify', file, ...extra], { env, timeoutMs: 60_000 });

/** Exit 9, one problem in --json, and the one line on stderr that names it. */
async function failsWith(file: string, message: RegExp, extra: string[] = []): Promise<Problem[]> {
  const result = await verify(file, ['--json', ...extra]);
  expect(result.code, result.stdout + result.stderr).toBe(9);
  const report = JSON.parse(result.stdout) as Report;
  expect(report.problems.map((problem) => problem.message).join('\n')).toMatch(message);
  const error = result.stderr.split('\n').filter((line) => line.startsWith('{'));
  expect(error).toHaveLength(1);
  expect(error[0]).toMatch(/failed verification: \d+ problems? \(first: /);
  return report.problems;
}

describe('a replace ref is a problem: git log in the extraction would show a forged commit', () => {
  let repo: ReturnType<typeof realRepository>;
  /** A forged commit with the first one's place in history, and the ref that puts it there. */
  let forged: string;
  beforeAll(() => {
    repo = realRepository();
    const bare = join(repo.dir, 'r.git');
    const tree = git(['--git-dir', bare, 'rev-parse', `${repo.first}^{tree}`]).trim();
    forged = git(['--git-dir', bare, 'commit-tree', tree, '-m', 'a forged message'], repo.dir).trim();
    git(['--git-dir', bare, 'replace', repo.first, forged]);
    // What the attack does: an extraction's log shows the forgery in the real commit's place.
    expect(git(['--git-dir', bare, 'log', '--format=%s', 'main'])).toContain('a forged message');
  });

  it('as a loose ref (git replace writes one): exit 9', async () => {
    const files = filesOf(join(repo.dir, 'r.git'));
    expect(files.map((file) => file.rest)).toContain(`refs/replace/${repo.first}`);
    const problems = await failsWith(writeArchive(tarGz(...metadata(), ...repositoryMembers(files))), /is a replace ref: git shows the object it names in place of the one it replaces/);
    expect(problems).toEqual([expect.objectContaining({ repository: 'acme/r', file: `repositories/acme/r.git/refs/replace/${repo.first}` })]);
  });

  it('as a loose ref whatever the case of its letters (a case-insensitive disk reads them alike): exit 9', async () => {
    const plain = repo.files.filter((file) => !file.rest.startsWith('refs/replace'));
    for (const name of [`refs/REPLACE/${repo.first}`, `REFS/Replace/${repo.first}`]) {
      const archive = writeArchive(tarGz(...metadata(), ...repositoryMembers(plain), member({ name: `repositories/acme/r.git/${name}` }, `${forged}\n`)));
      const problems = await failsWith(archive, /is a replace ref/);
      expect(problems.map((problem) => problem.file)).toEqual([`repositories/acme/r.git/${name}`]);
    }
  });

  it('as a line of packed-refs, in any case, however far into a packed-refs of any size: exit 9', async () => {
    const files = filesOf(join(repo.dir, 'r.git')).filter((file) => !file.rest.startsWith('refs/replace'));
    const padding = Array.from({ length: 30_000 }, (_, i) => `${repo.second} refs/tags/t${i}`).join('\n');
    for (const packed of [`${forged} refs/replace/${repo.first}\n`, `${padding}\n${forged} refs/Replace/${repo.first}\n`]) {
      const members = [...repositoryMembers(files.filter((file) => file.rest !== 'packed-refs')), member({ name: 'repositories/acme/r.git/packed-refs' }, `# pack-refs with: peeled fully-peeled sorted\n${packed}`)];
      const problems = await failsWith(writeArchive(tarGz(...metadata(), ...members)), /names a replace ref \(refs\/replace\/[0-9a-f]{40}\): git shows the object/i);
      expect(problems).toEqual([expect.objectContaining({ repository: 'acme/r', file: 'repositories/acme/r.git/packed-refs' })]);
    }
    // Two checks of the built binary, one with 30,000 refs: a ceiling for a hang, met under load.
  }, 60_000);

  it('refs of other kinds pass, loose and packed', async () => {
    const files = filesOf(join(repo.dir, 'r.git')).filter((file) => !file.rest.startsWith('refs/replace'));
    const packed = member({ name: 'repositories/acme/r.git/packed-refs' }, `# pack-refs with: peeled\n${repo.first} refs/tags/v1\n${repo.second} refs/notes/replace/x\n`);
    const result = await verify(writeArchive(tarGz(...metadata(), ...repositoryMembers(files.filter((file) => file.rest !== 'packed-refs')), packed)));
    expect(result.code, result.stdout + result.stderr).toBe(0);
  });
});

describe('a hook is a problem: a push into the extracted repository would run it', () => {
  let repo: ReturnType<typeof realRepository>;
  beforeAll(() => {
    repo = realRepository();
  });
  const withHook = (name: string, mode = '0000755') =>
    writeArchive(tarGz(...metadata(), ...repositoryMembers(repo.files), member({ name: `repositories/acme/r.git/${name}`, patch: [[100, `${mode}\0`]] }, '#!/bin/sh\ntouch /tmp/hooked\n')));

  for (const name of ['hooks/post-update', 'hooks/POST-UPDATE', 'HOOKS/post-update', 'hooks/pre-receive', 'hooks/x.sample', 'hooks/pre-commit.SAMPLE', 'hooks/sub/post-update']) {
    it(`${name}: exit 9`, async () => {
      // HOOKS/ and .SAMPLE beside git's own samples also clash with them when letter case is ignored.
      const problems = await failsWith(withHook(name), /is a hook, which git runs when someone commits in, pushes to or fetches into the extracted repository|clashes with .* when letter case is ignored/);
      expect(problems.map((problem) => problem.file)).toEqual([`repositories/acme/r.git/${name}`]);
    });
  }

  it('a file git opens by name, spelled in other letter case (alone, so nothing clashes), is a problem: exit 9', async () => {
    const ref = repo.files.find((file) => file.rest === 'packed-refs' || file.rest.startsWith('refs/heads/')) as RepoFile;
    // On macOS's and Windows' default disks git reads each as its own, though the check never copied it.
    for (const rest of ['REFS/heads/evil', 'CONFIG', `objects/AB/${'C'.repeat(38)}`, 'Packed-Refs']) {
      const others = repo.files.filter((file) => file.rest.toLowerCase() !== rest.toLowerCase());
      const archive = writeArchive(tarGz(...metadata(), ...repositoryMembers(others), member({ name: `repositories/acme/r.git/${rest}` }, rest === 'CONFIG' ? '[core]\n\tpager = touch /tmp/x\n' : ref.data)));
      const problems = await failsWith(archive, /is a file git opens by its name, spelled in other letter case/);
      expect(problems.map((problem) => problem.file), rest).toContain(`repositories/acme/r.git/${rest}`);
    }
  });

  it('a hook that is not executable is one all the same (an importer may set the mode): exit 9', async () => {
    await failsWith(withHook('hooks/post-receive', '0000644'), /is a hook/);
  });

  it('git\'s own sample hooks pass, as its templates install them', async () => {
    const samples = repo.files.filter((file) => file.rest.startsWith('hooks/')).map((file) => file.rest);
    expect(samples).toEqual(expect.arrayContaining(['hooks/pre-commit.sample', 'hooks/post-update.sample', 'hooks/pre-receive.sample', 'hooks/update.sample']));
    const result = await verify(writeArchive(tarGz(...metadata(), ...repositoryMembers(repo.files))), ['--json']);
    expect(result.code, result.stdout + result.stderr).toBe(0);
  });
});

describe('a reflog is checked, as git fsck in the extraction checks it', () => {
  let repo: ReturnType<typeof realRepository>;
  beforeAll(() => {
    repo = realRepository();
  });
  const withReflog = (line: string) =>
    writeArchive(tarGz(...metadata(), ...repositoryMembers(repo.files), member({ name: 'repositories/acme/r.git/logs/refs/heads/main' }, `${line}\n`)));
  const entry = (from: string, to: string) => `${from} ${to} t <t@e> 1700000000 +0000\tcommit: a message`;

  it('one naming an object the archive lacks (git fsck in the extraction fails on it): exit 9', async () => {
    const extracted = join(tempDir(), 'r.git');
    execFileSync('cp', ['-r', join(repo.dir, 'r.git'), extracted]);
    execFileSync('mkdir', ['-p', join(extracted, 'logs', 'refs', 'heads')]);
    writeFileSync(join(extracted, 'logs', 'refs', 'heads', 'main'), `${entry(repo.first, 'b'.repeat(40))}\n`);
    expect(() => git(['--git-dir', extracted, 'fsck', '--full'])).toThrow(/invalid reflog entry/);
    await failsWith(withReflog(entry(repo.first, 'b'.repeat(40))), /git fsck found corrupt or missing objects: error: refs\/heads\/main: invalid reflog entry b{40}/);
  });

  it('one naming the archive\'s own commits passes', async () => {
    const result = await verify(withReflog(entry(repo.first, repo.second)));
    expect(result.code, result.stdout + result.stderr).toBe(0);
  });
});

describe('a repository with no ref is named empty, and is a problem where it was pushed to', () => {
  let repo: ReturnType<typeof realRepository>;
  beforeAll(() => {
    repo = realRepository();
  });
  /** The git data of `name` reduced to HEAD: no ref, no object. */
  const stripped = (name: string) => member({ name: `repositories/${name}.git/HEAD` }, 'ref: refs/heads/main\n');
  const created = '2024-01-01T00:00:00Z';

  it('an archive whose metadata gives a stripped repository a size: exit 9', async () => {
    const archive = writeArchive(tarGz(...metadata([{ full_name: 'acme/r', size: 120, created_at: created, pushed_at: created }]), stripped('acme/r')));
    const problems = await failsWith(archive, /names no branch or tag, yet the archive's metadata gives it a size of 120 KiB: its history is missing/);
    expect(problems).toEqual([expect.objectContaining({ repository: 'acme/r', file: 'repositories/acme/r.git' })]);
  });

  it('an archive whose metadata says it was pushed to after its creation: exit 9', async () => {
    const archive = writeArchive(tarGz(...metadata([{ full_name: 'acme/r', size: 0, created_at: created, pushed_at: '2024-03-01T10:00:00Z' }]), stripped('acme/r')));
    await failsWith(archive, /yet the archive's metadata gives it a push at 2024-03-01T10:00:00Z, after its creation at 2024-01-01T00:00:00Z/);
  });

  it('refs git never reads (a .lock file, a name starting with ".") are none: exit 9 where it was pushed to, named empty where not', async () => {
    for (const ref of ['refs/heads/main.lock', 'refs/heads/.main']) {
      const ignored = member({ name: `repositories/acme/r.git/${ref}` }, `${'a'.repeat(40)}\n`);
      const pushed = writeArchive(tarGz(...metadata([{ full_name: 'acme/r', size: 120, created_at: created, pushed_at: created }]), stripped('acme/r'), ignored));
      await failsWith(pushed, /names no branch or tag, yet the archive's metadata gives it a size of 120 KiB: its history is missing/);
      const never = await verify(writeArchive(tarGz(...metadata(), stripped('acme/r'), ignored)), ['--json']);
      expect(never.code, never.stdout).toBe(0);
      expect((JSON.parse(never.stdout) as Report).repositories).toEqual([{ name: 'acme/r', git_data: true, objects: 'none', empty: true, git_check: 'passed' }]);
    }
  });

  it('an archive whose every repository was stripped so: exit 9 naming each', async () => {
    const records = ['acme/a', 'acme/b'].map((full_name) => ({ full_name, size: 3, created_at: created, pushed_at: created }));
    const result = await verify(writeArchive(tarGz(...metadata(records), stripped('acme/a'), stripped('acme/b'))), ['--json']);
    expect(result.code).toBe(9);
    expect((JSON.parse(result.stdout) as Report).problems.map((problem) => problem.repository)).toEqual(['acme/a', 'acme/b']);
  });

  it('a repository never pushed to passes, named in the summary and in --json', async () => {
    const records = [{ full_name: 'acme/r' }, ...['acme/e', 'acme/f'].map((full_name) => ({ full_name, size: 0, created_at: created, pushed_at: created }))];
    const archive = writeArchive(tarGz(...metadata(records), ...repositoryMembers(repo.files), stripped('acme/e'), stripped('acme/f')));
    const human = await verify(archive);
    expect(human.code, human.stdout + human.stderr).toBe(0);
    expect(human.stdout).toMatch(/is intact: 3 repositories/);
    expect(human.stdout).toContain('  2 empty repositories (no branch or tag): acme/e, acme/f');
    const report = JSON.parse((await verify(archive, ['--json'])).stdout) as Report;
    expect(report.repositories).toEqual([
      { name: 'acme/r', git_data: true, objects: 'loose', git_check: 'passed' },
      { name: 'acme/e', git_data: true, objects: 'none', empty: true, git_check: 'passed' },
      { name: 'acme/f', git_data: true, objects: 'none', empty: true, git_check: 'passed' },
    ]);
  });

  it('the service\'s word decides where the metadata says nothing (GitHub\'s has no size): --migration and download, exit 9', async () => {
    const archive = tarGz(...metadata([{ full_name: 'acme/r' }]), stripped('acme/r'));
    const { env } = await startStorageStub(
      (_request, response) => response.writeHead(200, { 'content-length': String(archive.length), etag: '"a"' }).end(archive),
      (request, response) => {
        if (!request.url?.startsWith('/orgs/acme/migrations/7/repositories')) return false;
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify([{ full_name: 'acme/r', name: 'r', size: 2048, created_at: created, pushed_at: created }]));
        return true;
      },
    );
    const file = writeArchive(archive);
    expect((await verify(file)).code).toBe(0);
    const checked = await verify(file, ['--json', '--migration', '7'], env);
    expect(checked.code, checked.stderr).toBe(9);
    expect((JSON.parse(checked.stdout) as Report).problems).toEqual([
      { repository: 'acme/r', file: 'repositories/acme/r.git', message: 'names no branch or tag, yet the service lists it with a size of 2048 KiB: its history is missing' },
    ]);
    const output = join(tempDir(), 'out.tar.gz');
    const downloaded = await spawnCli(['download', '7', '-o', output], { env, timeoutMs: 60_000 });
    expect(downloaded.code, downloaded.stderr).toBe(9);
    expect(downloaded.stderr).toMatch(/^error: .*failed verification: 1 problem \(first: acme\/r: repositories\/acme\/r\.git: names no branch or tag, yet the service lists it/m);
  });
});

/** A loose blob of `size` zeros: a few KiB per MiB it inflates to, named by its true id. */
async function zerosBlob(size: number): Promise<{ id: string; data: Buffer }> {
  const header = Buffer.from(`blob ${size}\0`);
  const hash = createHash('sha1').update(header);
  const deflate = createDeflate({ level: 9 });
  const out: Buffer[] = [];
  deflate.on('data', (chunk: Buffer) => out.push(chunk));
  const done = new Promise((resolve) => deflate.on('end', resolve));
  deflate.write(header);
  const zeros = Buffer.alloc(1 << 20);
  for (let left = size; left > 0; left -= zeros.length) {
    const piece = zeros.subarray(0, Math.min(left, zeros.length));
    hash.update(piece);
    if (!deflate.write(piece)) await new Promise((resolve) => deflate.once('drain', resolve));
  }
  deflate.end();
  await done;
  return { id: hash.digest('hex'), data: Buffer.concat(out) };
}

describe('git has one time for the whole archive, shared by its repositories', () => {
  it('when it runs out, the repositories left are counted, unchecked: exit 9 (a budget of 1 s)', async () => {
    // Each holds a blob of 512 MiB of zeros: git takes seconds to hash one, the archive holds a few KiB of each.
    const blob = await zerosBlob(512 << 20);
    const repository = (name: string) => [
      member({ name: `repositories/acme/${name}.git/HEAD` }, 'ref: refs/heads/main\n'),
      member({ name: `repositories/acme/${name}.git/objects/${blob.id.slice(0, 2)}/${blob.id.slice(2)}` }, blob.data),
      member({ name: `repositories/acme/${name}.git/refs/tags/zeros` }, `${blob.id}\n`),
    ];
    const names = ['z1', 'z2', 'z3'];
    const archive = writeArchive(tarGz(...metadata(names.map((name) => ({ full_name: `acme/${name}` }))), ...names.flatMap(repository)));
    const problems = await failsWith(archive, /^git ran out of the time it may take for the whole archive \(1 s\): 3 of 3 repositories with git data were not checked; `svc-migrate archive verify --git-check-time <duration>` gives it longer$/m, ['--git-check-time', '1s']);
    expect(problems).toHaveLength(1);
    const report = JSON.parse((await verify(archive, ['--json', '--git-check-time', '1s'])).stdout) as Report;
    expect(report.git_check).toBe('failed');
    expect(report.repositories.map((repo) => repo.git_check)).toEqual(['skipped', 'skipped', 'skipped']);
  }, 60_000);

  it('--git-check-time takes a duration above 0', async () => {
    const result = await spawnCli(['archive', 'verify', writeArchive(tarGz(...metadata())), '--git-check-time', '0']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--git-check-time takes a duration above 0/);
  });
});
