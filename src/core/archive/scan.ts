import { fileError } from '../../system-errors.js';
import { createHash, type Hash } from 'node:crypto';
import { closeSync, createReadStream, mkdirSync, openSync, writeSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { CliError, InterruptedError, UsageError } from '../../errors.js';
import { collectorForChunks } from '../../api/tuning.js';
import { type EntryHandler, type TarEntry, TarFormatError, TarReader } from './tar-reader.js';
import type { ArchiveProblem } from '../../archive-problem.js';

/** What the archive holds of one repository's git data (docs/service.md#archive). */
export interface GitDataScan {
  repository: string;
  /** Member path of the bare repository (`repositories/<owner>/<name>.git`). */
  path: string;
  files: number;
  bytes: number;
  hasHead: boolean;
  looseObjects: number;
  packs: number;
  /** Ref name → object id, from loose refs and packed-refs. */
  refs: Record<string, string>;
  /** Where the git data was extracted for the deep check, if it was. */
  extractedTo?: string;
}

interface MetadataFileScan {
  file: string;
  /** `issues` for `issues_000001.json`. */
  kind: string;
  /** Number of records, when the file holds a JSON array. */
  records?: number;
}

export interface ArchiveScan {
  path: string;
  /** Size of the .tar.gz. */
  bytes: number;
  entries: number;
  sha256?: string;
  /** The gzip and tar structure was read to the end-of-archive marker without a fault. */
  complete: boolean;
  metadataFiles: MetadataFileScan[];
  /** Organizations named in organizations_*.json. */
  organizations: string[];
  /** Repositories listed in repositories_*.json (owner/name). */
  repositories: string[];
  /** Records per metadata kind for each repository they belong to. */
  counts: Record<string, Record<string, number>>;
  gitData: Map<string, GitDataScan>;
  problems: ArchiveProblem[];
}

export interface ScanOptions {
  /** Extract each repository's git data below this directory (for `git fsck`). */
  extractTo?: string;
  sha256?: boolean;
  onProgress?(read: number, total: number): void;
  /** Ctrl-C: stops reading, and the scan throws InterruptedError. */
  signal?: AbortSignal | undefined;
}

/** A metadata file larger than this is not parsed (the service splits them far below it). */
const MAX_METADATA_BYTES = 256 << 20;
const MAX_SMALL_FILE = 1 << 20;
const GIT_MEMBER = /^repositories\/([^/]+)\/([^/]+)\.git(?:\/(.*))?$/;
/** Not extracted: git would run or follow them. Our own minimal config replaces the archive's. */
const NOT_EXTRACTED = /^(config|hooks\/.*|objects\/info\/(http-)?alternates)$/;

/**
 * Reads a migration archive once, streaming (`.tar.gz` → gunzip → tar), checking its structure
 * and member paths, parsing its metadata JSON and, if asked, extracting the git data of each
 * repository to a directory. Never throws for what is wrong inside the archive: that is a problem.
 */
export async function scanArchive(path: string, options: ScanOptions = {}): Promise<ArchiveScan> {
  const info = await stat(path).catch((error: NodeJS.ErrnoException) => {
    throw readError(path, error);
  });
  if (!info.isFile()) throw new UsageError(`${path} is not a file`, { hint: 'pass the path of a .tar.gz archive' });
  const scan: ArchiveScan = {
    path,
    bytes: info.size,
    entries: 0,
    complete: false,
    metadataFiles: [],
    organizations: [],
    repositories: [],
    counts: {},
    gitData: new Map(),
    problems: [],
  };
  const problem = (message: string, file?: string, repository?: string) =>
    scan.problems.push({ ...(repository ? { repository } : {}), ...(file ? { file } : {}), message });

  const tar = new TarReader((entry) => {
    scan.entries++;
    const name = entry.name.replace(/^(\.\/)+/, '');
    const unsafe = unsafePath(name, entry);
    if (unsafe) {
      problem(unsafe, name);
      return undefined;
    }
    if (entry.type === 'special') {
      problem('is a device or FIFO, which a migration archive never holds', name);
      return undefined;
    }
    const git = GIT_MEMBER.exec(name.replace(/\/$/, ''));
    if (git) return gitMember(git, name, entry);
    if (!name.includes('/') && name.endsWith('.json') && entry.type === 'file') return metadataMember(name, entry);
    return undefined;
  });

  function metadataMember(name: string, entry: TarEntry): EntryHandler {
    const kind = name.replace(/(_\d+)?\.json$/, '');
    const file: MetadataFileScan = { file: name, kind };
    scan.metadataFiles.push(file);
    if (entry.size > MAX_METADATA_BYTES) {
      problem(`is ${entry.size} bytes, too large to check (over ${MAX_METADATA_BYTES >> 20} MiB)`, name);
      return {};
    }
    const chunks: Buffer[] = [];
    return {
      data: (chunk) => chunks.push(Buffer.from(chunk)),
      end: () => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch (error) {
          problem(`is not valid JSON (${(error as Error).message})`, name);
          return;
        }
        if (Array.isArray(parsed)) {
          file.records = parsed.length;
          // Counted and dropped at once: only one metadata file is ever held in memory.
          recordMetadata(scan, kind, parsed);
        }
      },
    };
  }

  /** A member that cannot be placed because another took its path is the archive's fault; a full disk is not. */
  function conflict(error: NodeJS.ErrnoException, name: string, repository: string, path: string): void {
    if (error.code === 'ENOTDIR' || error.code === 'EEXIST' || error.code === 'EISDIR') {
      problem('clashes with another member of the same path (a file where a directory is, or the reverse)', name, repository);
      return;
    }
    throw extractError(path, error);
  }

  function gitMember(match: RegExpExecArray, name: string, entry: TarEntry): EntryHandler | undefined {
    const repository = `${match[1]}/${match[2]}`;
    const rest = match[3] ?? '';
    let repo = scan.gitData.get(repository);
    if (!repo) {
      repo = {
        repository,
        path: `repositories/${repository}.git`,
        files: 0,
        bytes: 0,
        hasHead: false,
        looseObjects: 0,
        packs: 0,
        refs: {},
        ...(options.extractTo ? { extractedTo: join(options.extractTo, String(scan.gitData.size)) } : {}),
      };
      scan.gitData.set(repository, repo);
      if (repo.extractedTo) mkdirSync(repo.extractedTo, { recursive: true, mode: 0o700 });
    }
    if (entry.type !== 'file') {
      if (entry.type === 'directory' && repo.extractedTo && rest) {
        try {
          mkdirSync(join(repo.extractedTo, rest), { recursive: true, mode: 0o700 });
        } catch (error) {
          conflict(error as NodeJS.ErrnoException, name, repository, join(repo.extractedTo, rest));
        }
      }
      return undefined;
    }
    repo.files++;
    repo.bytes += entry.size;
    if (rest === 'HEAD') repo.hasHead = true;
    if (/^objects\/[0-9a-f]{2}\/[0-9a-f]{38}([0-9a-f]{24})?$/.test(rest)) repo.looseObjects++;
    if (/^objects\/pack\/pack-[0-9a-f]+\.pack$/.test(rest)) repo.packs++;
    if (/^objects\/info\/(http-)?alternates$/.test(rest)) {
      problem('borrows objects from outside the archive (alternates), so the repository is not self-contained', name, repository);
    }
    const handlers: EntryHandler[] = [];
    const wantText = (rest.startsWith('refs/') || rest === 'packed-refs' || rest === 'config') && entry.size <= MAX_SMALL_FILE;
    if (wantText) {
      const chunks: Buffer[] = [];
      const target = repo;
      handlers.push({
        data: (chunk) => chunks.push(Buffer.from(chunk)),
        end: () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (rest === 'packed-refs') {
            for (const line of text.split('\n')) {
              const ref = /^([0-9a-f]{40,64}) (\S+)$/.exec(line);
              if (ref?.[1] && ref[2]) target.refs[ref[2]] ??= ref[1];
            }
          } else if (rest === 'config') {
            if (target.extractedTo) writeConfig(target.extractedTo, text);
          } else if (/^[0-9a-f]{40,64}$/.test(text.trim())) target.refs[rest] = text.trim();
        },
      });
    }
    if (repo.extractedTo && rest && !NOT_EXTRACTED.test(rest)) {
      const path = join(repo.extractedTo, rest);
      try {
        mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
        const fd = openSync(path, 'w', 0o600);
        handlers.push({
          data: (chunk) => {
            let done = 0;
            while (done < chunk.length) done += writeSync(fd, chunk, done);
          },
          end: () => closeSync(fd),
        });
      } catch (error) {
        conflict(error as NodeJS.ErrnoException, name, repository, path);
      }
    }
    if (handlers.length === 0) return undefined;
    return {
      data: (chunk) => handlers.forEach((handler) => handler.data?.(chunk)),
      end: () => handlers.forEach((handler) => handler.end?.()),
    };
  }

  const hash: Hash | undefined = options.sha256 ? createHash('sha256') : undefined;
  let read = 0;
  // As in a download: buffers read and inflated wait for a collection, which would otherwise let
  // a 1 GiB check hold tens of MB of them (api/tuning.ts).
  const collectGarbage = collectorForChunks();
  const count = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      read += chunk.length;
      collectGarbage(chunk.length);
      hash?.update(chunk);
      options.onProgress?.(read, info.size);
      done(null, chunk);
    },
  });
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      try {
        tar.push(chunk);
        done();
      } catch (error) {
        done(error as Error);
      }
    },
  });
  try {
    // Reads of 1 MiB and inflated chunks of 256 KiB, sixteen times the defaults: sixteen times fewer
    // trips through the tar reader, for little more than a MiB held.
    await pipeline(
      createReadStream(path, { highWaterMark: 1 << 20 }),
      count,
      createGunzip({ chunkSize: 256 << 10 }),
      sink,
      options.signal ? { signal: options.signal } : {},
    );
    tar.finish();
    scan.complete = true;
  } catch (error) {
    if (error instanceof CliError) throw error;
    if (options.signal?.aborted) throw new InterruptedError('archive check interrupted');
    const code = (error as NodeJS.ErrnoException).code;
    if (error instanceof TarFormatError) problem(`tar structure: ${error.message}`);
    else if (code === 'Z_BUF_ERROR' || /unexpected end/i.test((error as Error).message)) {
      problem('the gzip stream ends early: the archive is truncated');
    } else if (typeof code === 'string' && code.startsWith('Z_')) {
      problem(`the gzip stream is corrupt (${(error as Error).message}) after ${read} bytes`);
    } else if (typeof code === 'string' && code.startsWith('E')) {
      throw readError(path, error as NodeJS.ErrnoException);
    } else throw error;
  }
  if (hash) scan.sha256 = hash.digest('hex');

  return scan;
}

function recordMetadata(scan: ArchiveScan, kind: string, items: unknown[]): void {
  for (const item of items) {
    if (typeof item !== 'object' || item === null) continue;
    const record = item as Record<string, unknown>;
    if (kind === 'repositories') {
      const name = repositoryName(record);
      if (name && !scan.repositories.includes(name)) scan.repositories.push(name);
      continue;
    }
    if (kind === 'organizations') {
      const login = typeof record.login === 'string' ? record.login : lastSegment(record.url);
      if (login) scan.organizations.push(login);
      continue;
    }
    const owner = repositoryOf(record);
    if (!owner) continue;
    const counts = (scan.counts[owner] ??= {});
    counts[kind] = (counts[kind] ?? 0) + 1;
  }
}

/** owner/name of a repository record: its full_name, else its URL, else owner and name. */
function repositoryName(record: Record<string, unknown>): string | undefined {
  if (typeof record.full_name === 'string') return record.full_name;
  for (const key of ['html_url', 'url']) {
    const fromUrl = ownerAndName(record[key]);
    if (fromUrl) return fromUrl;
  }
  const owner = record.owner as Record<string, unknown> | string | undefined;
  const login = typeof owner === 'string' ? lastSegment(owner) : typeof owner?.login === 'string' ? owner.login : undefined;
  return login && typeof record.name === 'string' ? `${login}/${record.name}` : undefined;
}

/** The repository a metadata record belongs to (its `repository` field: a URL or an object). */
function repositoryOf(record: Record<string, unknown>): string | undefined {
  const value = record.repository;
  if (typeof value === 'string') return ownerAndName(value) ?? (/^[^/\s]+\/[^/\s]+$/.test(value) ? value : undefined);
  if (typeof value === 'object' && value !== null) return repositoryName(value as Record<string, unknown>);
  // Records without the field (comments, reviews) name it in their own URL: …/<owner>/<repo>/issues/1.
  const url = typeof record.url === 'string' ? record.url : undefined;
  const match = url ? /^https?:\/\/[^/]+\/([^/]+)\/([^/]+)\/(issues|pull|pulls|releases|milestones|commit|projects)\//.exec(url) : null;
  return match ? `${match[1]}/${match[2]}` : undefined;
}

function ownerAndName(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    const parts = new URL(value).pathname.split('/').filter(Boolean);
    const [owner, name] = parts[0] === 'repos' ? parts.slice(1) : parts.slice(-2);
    return owner && name ? `${owner}/${name.replace(/\.git$/, '')}` : undefined;
  } catch {
    return undefined;
  }
}

function lastSegment(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  return value.split('/').filter(Boolean).pop();
}

/** Why a member may not be extracted as it is: an absolute path, `..`, or a link leading outside. */
function unsafePath(name: string, entry: Pick<TarEntry, 'type' | 'linkName'>): string | undefined {
  const escapes = (path: string) => path.startsWith('/') || /^[A-Za-z]:[\\/]/.test(path) || path.startsWith('\\');
  const hasDotDot = (path: string) => path.split(/[\\/]/).includes('..');
  if (escapes(name)) return 'has an absolute path';
  if (hasDotDot(name)) return 'has a path with ".." that leads outside the archive';
  if (entry.type === 'symlink') {
    const target = entry.linkName;
    if (escapes(target)) return `is a symbolic link to an absolute path (${target})`;
    const resolved = posix.normalize(posix.join(posix.dirname(name), target));
    if (resolved === '..' || resolved.startsWith('../')) return `is a symbolic link pointing outside the archive (${target})`;
  }
  if (entry.type === 'hardlink') {
    const target = entry.linkName;
    if (escapes(target) || hasDotDot(target)) return `is a hard link pointing outside the archive (${target})`;
  }
  return undefined;
}

/** Our own config for the extracted copy: the archive's could make git run or read things. */
function writeConfig(dir: string, original: string): void {
  const sha256 = /objectformat\s*=\s*sha256/i.test(original);
  const config = sha256
    ? '[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectformat = sha256\n'
    : '[core]\n\trepositoryformatversion = 0\n\tbare = true\n';
  const fd = openSync(join(dir, 'config'), 'w', 0o600);
  writeSync(fd, config);
  closeSync(fd);
}

function readError(path: string, error: NodeJS.ErrnoException): CliError {
  if (error.code === 'ENOENT') {
    return new UsageError(`${path} does not exist`, { hint: 'pass the path of a downloaded .tar.gz archive' });
  }
  if (error.code === 'EACCES' || error.code === 'EPERM') {
    return new UsageError(`cannot read ${path}: permission denied`, { hint: 'check the file\'s permissions' });
  }
  if (error.code === 'EISDIR') return new UsageError(`${path} is a directory`, { hint: 'pass the path of a .tar.gz archive' });
  return fileError(error, { action: 'read', path });
}

function extractError(path: string, error: NodeJS.ErrnoException): CliError {
  return fileError(error, {
    action: 'extract git data for checking to',
    path,
    after: 'TMPDIR moves the temporary directory; --no-git-check skips the deep check',
  });
}
