import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, type Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Migration, Owner, Repository } from '../api/types.js';
import { paddedArchive } from './padded-archive.js';
import { bareRepository, type GitExtras, type RepoMember, wikiRepository } from './repository-git.js';
import { TarWriter } from './tar.js';

export interface ArchiveInput {
  migration: Migration;
  organization: Owner;
  repositories: Repository[];
  /** What the seed adds to each one's git data (a wiki, pull-request refs). */
  extrasOf: (repo: Repository) => GitExtras | undefined;
  /** Bytes of incompressible padding to add (benchmarks and resume tests). */
  padBytes: number;
}

export interface BuiltArchive {
  size: number;
  sha256: string;
  /** Bytes `start` to `end` (inclusive) of the .tar.gz. */
  open(start: number, end: number): Readable;
}

/** The metadata records of each kind, shaped like the service's: each names its repository by URL. */
function metadataRecords(input: ArchiveInput, time: string) {
  const user = input.organization.html_url;
  const per = <T>(make: (repo: Repository) => T[]) => input.repositories.flatMap((repo) => make(repo));
  return {
    users: [{ type: 'user', url: user, login: input.organization.login, created_at: time }],
    issues: per((repo) =>
      [1, 2].map((number) => ({
        type: 'issue',
        url: `${repo.html_url}/issues/${number}`,
        repository: repo.html_url,
        user,
        title: `Issue ${number} of ${repo.name}`,
        body: 'Found in the sandbox.',
        created_at: time,
      })),
    ),
    issue_comments: per((repo) => [
      {
        type: 'issue_comment',
        url: `${repo.html_url}/issues/1#issuecomment-1`,
        issue: `${repo.html_url}/issues/1`,
        repository: repo.html_url,
        user,
        body: 'Confirmed.',
        created_at: time,
      },
    ]),
    pull_requests: per((repo) => [
      {
        type: 'pull_request',
        url: `${repo.html_url}/pull/3`,
        repository: repo.html_url,
        user,
        title: 'Add the code',
        base: { ref: repo.default_branch },
        created_at: time,
      },
    ]),
    milestones: per((repo) => [
      { type: 'milestone', url: `${repo.html_url}/milestones/1`, repository: repo.html_url, title: 'v1.0', state: 'open', created_at: time },
    ]),
    protected_branches: per((repo) => [
      {
        type: 'protected_branch',
        url: `${repo.html_url}/protected_branches/${repo.default_branch}`,
        repository: repo.html_url,
        name: repo.default_branch,
        created_at: time,
      },
    ]),
    releases: per((repo) => [
      { type: 'release', url: `${repo.html_url}/releases/v1.0.0`, repository: repo.html_url, tag_name: 'v1.0.0', created_at: time },
    ]),
  };
}

async function writeRepository(tar: TarWriter, prefix: string, members: RepoMember[]): Promise<void> {
  await tar.directory(prefix);
  for (const member of members) {
    if ('directory' in member) await tar.directory(`${prefix}/${member.path}`);
    else await tar.file(`${prefix}/${member.path}`, member.data);
  }
}

/** The members of a migration archive, in the service's order, less what the exclude flags leave out. */
async function writeMembers(tar: TarWriter, input: ArchiveInput, mtime: number): Promise<void> {
  const { migration, repositories } = input;
  const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

  await tar.file('schema.json', json({ version: '1.2.0' }));
  await tar.file('organizations_000001.json', json([input.organization]));
  if (migration.org_metadata_only) return;
  if (!migration.exclude_metadata) {
    const records = metadataRecords(input, migration.created_at);
    await tar.file('users_000001.json', json(records.users));
    await tar.file('repositories_000001.json', json(repositories));
    await tar.file('issues_000001.json', json(records.issues));
    await tar.file('issue_comments_000001.json', json(records.issue_comments));
    await tar.file('pull_requests_000001.json', json(records.pull_requests));
    await tar.file('milestones_000001.json', json(records.milestones));
    await tar.file('protected_branches_000001.json', json(records.protected_branches));
    if (!migration.exclude_releases) await tar.file('releases_000001.json', json(records.releases));
    if (!migration.exclude_owner_projects) await tar.file('projects_000001.json', json([]));
    if (!migration.exclude_attachments) await tar.directory('attachments');
  }
  if (!migration.exclude_git_data) {
    // Every other repository is packed, so an archive of two or more holds both kinds of storage.
    // A wiki is stored the other way, so that wikis of both kinds appear as well.
    for (const [index, repo] of repositories.entries()) {
      const extras = input.extrasOf(repo) ?? {};
      const packed = index % 2 === 0;
      await writeRepository(tar, `repositories/${repo.full_name}.git`, bareRepository(repo, extras, packed, mtime));
      if (extras.wiki) await writeRepository(tar, `repositories/${repo.full_name}.wiki.git`, wikiRepository(repo, !packed, mtime));
    }
  }
}

/** A writable that keeps what it is given, for the small parts of a padded archive's tar. */
class Collect extends Writable {
  private readonly chunks: Buffer[] = [];
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.chunks.push(chunk);
    done();
  }

  take(): Buffer {
    return Buffer.concat(this.chunks.splice(0));
  }
}

/**
 * Writes a migration archive shaped like the service's (schema.json, repositories_000001.json, …,
 * and the git data of each repository, real git objects), honouring the exclude flags
 * (docs/service.md#start-migration). With padding (`--archive-size`), nothing is written: the
 * archive is made as it is served (padded-archive.ts), its size and sha256 known in one pass.
 */
export async function buildArchive(dir: string, input: ArchiveInput): Promise<BuiltArchive> {
  const { migration } = input;
  const mtime = Date.parse(migration.created_at);
  if (input.padBytes > 0) {
    const collect = new Collect();
    const tar = new TarWriter(collect, mtime);
    await writeMembers(tar, input, mtime);
    await tar.fileHeader('padding.bin', input.padBytes);
    const head = collect.take();
    await tar.pad(input.padBytes);
    await tar.end();
    return paddedArchive({ head, block: randomBytes(1 << 20), padBytes: input.padBytes, tail: collect.take() });
  }
  const path = join(dir, `${migration.guid}.tar.gz`);
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
  const tar = new TarWriter(tarStream, mtime);
  // Both at once, so that a file that cannot be written fails the build instead of going unheard.
  await Promise.all([
    pipeline(tarStream, createGzip({ level: 6 }), measure, createWriteStream(path)),
    (async () => {
      await writeMembers(tar, input, mtime);
      await tar.end();
      tarStream.end();
    })(),
  ]);
  return {
    size,
    sha256: hash.digest('hex'),
    // Read in 1 MiB pieces, as storage services send: with the default 64 KiB, serving 1 GiB cost
    // the sandbox a whole second of CPU, taken from the client it shares the machine with.
    open: (start, end) => {
      const stream = createReadStream(path, { start, end, highWaterMark: 1 << 20 });
      // A read destroyed while it opens still reports the open's failure afterwards, when whoever
      // read it has let go: a download cut as the sandbox closes (its directory removed) would end
      // the host process with an uncaught ENOENT. The reader's own pipeline hears errors as before.
      stream.on('error', () => {});
      return stream;
    },
  };
}
