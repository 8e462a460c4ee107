import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, type Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Migration, Owner, Repository } from '../api/types.js';
import { writeMetadata } from './metadata/write.js';
import { paddedArchive } from './padded-archive.js';
import { bareRepository, type GitExtras, type RepoMember, wikiRepository } from './repository-git.js';
import type { SeedData, SeedOrganization, SeedRepository } from './seed.js';
import { TarWriter } from './tar.js';

export interface ArchiveInput {
  migration: Migration;
  organization: Owner;
  repositories: Repository[];
  /** The seed's organization (its owners and members) and users: the people of the metadata. */
  seedOrganization: SeedOrganization;
  users: SeedData['users'];
  /** What the seed says of each one beyond its API object: its git data (a wiki, pull-request refs), its issues and pull requests. */
  extrasOf: (repo: Repository) => SeedRepository | undefined;
  /** Bytes of incompressible padding to add (benchmarks and resume tests). */
  padBytes: number;
}

export interface BuiltArchive {
  size: number;
  sha256: string;
  /** Bytes `start` to `end` (inclusive) of the .tar.gz. */
  open(start: number, end: number): Readable;
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
  await writeMetadata(tar, input);
  if (migration.org_metadata_only) return;
  if (!migration.exclude_git_data) {
    // Every other repository is packed, so an archive of two or more holds both kinds of storage.
    // A wiki is stored the other way, so that wikis of both kinds appear as well.
    for (const [index, repo] of repositories.entries()) {
      const extras: GitExtras = input.extrasOf(repo) ?? {};
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
