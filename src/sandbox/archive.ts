import { execFile, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { PassThrough, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { createGzip } from 'node:zlib';
import type { Migration, Owner, Repository } from '../api/types.js';
import { childEnvironment } from '../settings/environment.js';
import { TarWriter } from './tar.js';

const run = promisify(execFile);

export interface ArchiveInput {
  migration: Migration;
  organization: Owner;
  repositories: Repository[];
  /** Bytes of incompressible padding to add (benchmarks and resume tests). */
  padBytes: number;
}

export interface BuiltArchive {
  path: string;
  size: number;
  sha256: string;
}

let gitAvailable: boolean | undefined;
function hasGit(): boolean {
  gitAvailable ??= spawnSync('git', ['--version'], { stdio: 'ignore' }).status === 0;
  return gitAvailable;
}

const GIT_ENV = childEnvironment({
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Sandbox',
  GIT_AUTHOR_EMAIL: 'sandbox@localhost',
  GIT_COMMITTER_NAME: 'Sandbox',
  GIT_COMMITTER_EMAIL: 'sandbox@localhost',
  GIT_AUTHOR_DATE: '2024-01-01T00:00:00Z',
  GIT_COMMITTER_DATE: '2024-01-01T00:00:00Z',
});

/** A real bare repository with one commit when git is installed; a minimal synthetic layout otherwise. */
async function bareRepository(cacheDir: string, repo: Repository): Promise<string> {
  const dest = join(cacheDir, 'git', `${repo.full_name}.git`);
  if (await stat(dest).catch(() => undefined)) return dest;
  await mkdir(join(dest, '..'), { recursive: true });
  if (hasGit()) {
    const work = await mkdtemp(join(cacheDir, 'work-'));
    try {
      const git = (...args: string[]) => run('git', ['-C', work, ...args], { env: GIT_ENV });
      await git('init', '-q', '-b', repo.default_branch);
      await writeFile(join(work, 'README.md'), `# ${repo.name}\n\n${repo.description ?? ''}\n`);
      await git('add', 'README.md');
      await git('commit', '-q', '-m', 'Initial commit');
      await run('git', ['clone', '-q', '--bare', work, dest], { env: GIT_ENV });
    } finally {
      await rm(work, { recursive: true, force: true });
    }
    return dest;
  }
  await mkdir(join(dest, 'objects', 'info'), { recursive: true });
  await mkdir(join(dest, 'refs', 'heads'), { recursive: true });
  await writeFile(join(dest, 'HEAD'), `ref: refs/heads/${repo.default_branch}\n`);
  await writeFile(join(dest, 'config'), '[core]\n\trepositoryformatversion = 0\n\tbare = true\n');
  await writeFile(join(dest, 'description'), `${repo.full_name} (synthetic: git was not installed)\n`);
  return dest;
}

async function filesBelow(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

/**
 * Writes a migration archive shaped like the service's (schema.json, repositories_000001.json, …,
 * and the git data of each repository), honouring the exclude flags of docs/service.md#start-migration.
 */
export async function buildArchive(dir: string, input: ArchiveInput): Promise<BuiltArchive> {
  const { migration, repositories } = input;
  const path = join(dir, `${migration.guid}.tar.gz`);
  const mtime = Date.parse(migration.created_at);
  const hash = createHash('sha256');
  let size = 0;
  const measure = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  const tarStream = new PassThrough();
  // Padding is random data that gzip cannot shrink: store it rather than burn CPU trying.
  const gzip = createGzip({ level: input.padBytes > 0 ? 0 : 6 });
  const written = pipeline(tarStream, gzip, measure, createWriteStream(path));
  const tar = new TarWriter(tarStream, mtime);
  const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

  await tar.file('schema.json', json({ version: '1.2.0' }));
  await tar.file('organizations_000001.json', json([input.organization]));
  if (!migration.org_metadata_only) {
    if (!migration.exclude_metadata) {
      await tar.file('repositories_000001.json', json(repositories));
      if (!migration.exclude_releases) await tar.file('releases_000001.json', json([]));
      if (!migration.exclude_owner_projects) await tar.file('projects_000001.json', json([]));
      if (!migration.exclude_attachments) await tar.directory('attachments');
    }
    if (!migration.exclude_git_data) {
      for (const repo of repositories) {
        const bare = await bareRepository(dir, repo);
        const prefix = `repositories/${repo.full_name}.git`;
        for (const file of await filesBelow(bare)) {
          await tar.file(`${prefix}/${relative(bare, file)}`, await readFile(file));
        }
      }
    }
  }
  if (input.padBytes > 0) await tar.repeated('padding.bin', input.padBytes, randomBytes(1 << 20));
  await tar.end();
  tarStream.end();
  await written;
  return { path, size, sha256: hash.digest('hex') };
}
