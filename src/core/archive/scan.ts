import { fileError } from '../../system-errors.js';
import { createHash, type Hash } from 'node:crypto';
import { closeSync, constants, createReadStream, lstatSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { CliError, InterruptedError, UsageError } from '../../errors.js';
import type { ArchiveProblem } from '../../archive-problem.js';
import { GIT_MEMBER, gitMemberUse, linkTargetProblem, memberNameProblem } from './member-names.js';
import { MetadataFormatError, MetadataRecordReader } from './metadata-records.js';
import { type MemberHandler, type TarMember, TarFormatError, TarMemberReader } from './tar-members.js';
import { type ExtractionBudget, recordMetadata } from './scan-parts.js';

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
  /** The archive's config asks for SHA-256 object names. */
  sha256Objects: boolean;
  /** Ref name → object id, from loose refs and packed-refs. */
  refs: Record<string, string>;
  /** Where its allowed members were copied for the deep check, if they were. */
  extractedTo?: string;
  /** A member of it could not be copied as it is (a problem was recorded): git is not run on it. */
  damaged?: boolean;
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
  /**
   * A private directory: each repository's allowed git members are copied to `copies/<n>`, and
   * the shape of all its members (empty files and directories) laid out in `layout/<n>`, where the
   * file system finds members that clash or repeat, whatever the check does with them.
   */
  extractTo?: string;
  /** Bytes the copies may take in all (free space less a margin); past it the scan stops. */
  budget?: ExtractionBudget;
  sha256?: boolean;
  onProgress?(read: number, total: number): void;
  /** Ctrl-C: stops reading, and the scan throws InterruptedError. */
  signal?: AbortSignal | undefined;
}

/** Bounds on what a scan keeps, whatever the archive holds: past them, a problem says so. */
const MAX_REPOSITORIES = 10_000;
const MAX_METADATA_FILES = 100_000;
const MAX_REFS = 100_000;
/** Refs and the config are read as text only up to this size. */
const MAX_SMALL_FILE = 1 << 20;

/** What each kind of copied git file starts with; anything else is not git data and is not copied on. */
const SIGNATURES: [RegExp, (head: Buffer) => boolean, string][] = [
  [/\.pack$/, (head) => head.toString('latin1', 0, 4) === 'PACK', 'is not a git pack (it does not start with "PACK")'],
  [/\.idx$/, (head) => head.readUInt32BE(0) === 0xff744f63, 'is not a git pack index'],
  // A loose object is a zlib stream: its first two bytes name deflate and check each other.
  [/^objects\/[0-9a-f]{2}\//, (head) => ((head[0] as number) & 0x0f) === 8 && (((head[0] as number) << 8) | (head[1] as number)) % 31 === 0, 'is not a git object (not zlib data)'],
];

/**
 * Reads a migration archive once, streaming (`.tar.gz` → gunzip → tar), checking its structure and
 * every member's name, reading its metadata JSON as it streams and, if asked, copying each
 * repository's allowed git members to a directory. Never throws for what is wrong inside the
 * archive: that is a problem.
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
  const listed = new Set<string>();
  const metadataNames = new Set<string>();
  const layouts = new Map<string, string>();
  let refs = 0;
  let tooManyRepositories = false;

  const onMember = (member: TarMember): MemberHandler | undefined => {
    scan.entries++;
    const { name, type } = member;
    const wrong = memberNameProblem(name, type);
    if (wrong) return void problem(wrong, name);
    if (type === 'symlink' || type === 'hardlink') {
      const outside = linkTargetProblem(name, type, member.linkName);
      if (outside) return void problem(outside, name);
    }
    if (type === 'special') return void problem('is a device or FIFO, which a migration archive never holds', name);
    const git = GIT_MEMBER.exec(type === 'directory' ? name.slice(0, -1) : name);
    if (git) return gitMember(`${git[1]}/${git[2]}`, git[3] ?? '', member);
    if (!name.includes('/') && name.endsWith('.json') && type === 'file') return metadataMember(name);
    return undefined;
  };

  function metadataMember(name: string): MemberHandler | undefined {
    if (metadataNames.has(name)) return void problem('appears twice in the archive (an importer would keep only the last)', name);
    if (metadataNames.size >= MAX_METADATA_FILES) {
      if (metadataNames.size === MAX_METADATA_FILES) problem(`the archive holds more than ${MAX_METADATA_FILES} metadata files; the rest were not read`);
      metadataNames.add(name);
      return undefined;
    }
    metadataNames.add(name);
    const kind = name.replace(/(_\d+)?\.json$/, '');
    const file: MetadataFileScan = { file: name, kind };
    scan.metadataFiles.push(file);
    let reader: MetadataRecordReader | undefined = new MetadataRecordReader((record) => {
      if (record) recordMetadata(scan, listed, kind, record);
    });
    const fault = (error: unknown) => {
      if (!(error instanceof MetadataFormatError)) throw error;
      problem(/^(holds|is nested|starts)/.test(error.message) ? error.message : `is not valid JSON (${error.message})`, name);
      reader = undefined;
    };
    return {
      data: (chunk) => {
        try {
          reader?.write(chunk);
        } catch (error) {
          fault(error);
        }
      },
      end: () => {
        try {
          reader?.end();
          if (reader?.records !== undefined) file.records = reader.records;
        } catch (error) {
          fault(error);
        }
      },
    };
  }

  function gitMember(repository: string, rest: string, member: TarMember): MemberHandler | undefined {
    let repo = scan.gitData.get(repository);
    if (!repo) {
      if (scan.gitData.size >= MAX_REPOSITORIES) {
        if (!tooManyRepositories) problem(`the archive holds the git data of more than ${MAX_REPOSITORIES} repositories; the rest were not checked`);
        tooManyRepositories = true;
        return undefined;
      }
      repo = {
        repository,
        path: `repositories/${repository}.git`,
        files: 0,
        bytes: 0,
        hasHead: false,
        looseObjects: 0,
        packs: 0,
        sha256Objects: false,
        refs: {},
        ...(options.extractTo ? { extractedTo: join(options.extractTo, 'copies', String(scan.gitData.size)) } : {}),
      };
      if (options.extractTo) layouts.set(repository, join(options.extractTo, 'layout', String(scan.gitData.size)));
      scan.gitData.set(repository, repo);
    }
    const target = repo;
    const use = gitMemberUse(rest, member.type);
    if (use.use === 'refuse') {
      target.damaged = true;
      return void problem(use.reason, member.name, repository);
    }
    if (target.extractedTo && rest) {
      const clash = placeInLayout(layouts.get(repository) as string, rest, member.type);
      if (clash) {
        target.damaged = true;
        return void problem(clash, member.name, repository);
      }
    }
    if (member.type !== 'file') return undefined;
    target.files++;
    target.bytes += member.size;
    if (rest === 'HEAD') target.hasHead = true;
    if (/^objects\/[0-9a-f]{2}\//.test(rest) && use.use === 'copy') target.looseObjects++;
    if (/\.pack$/.test(rest) && use.use === 'copy') target.packs++;

    const handlers: MemberHandler[] = [];
    if ((rest.startsWith('refs/') || rest === 'packed-refs' || rest === 'config') && member.size <= MAX_SMALL_FILE) {
      handlers.push(textOf((text) => {
        if (rest === 'config') {
          // Read past, never written: only whether it asks for SHA-256 object names is taken from it.
          target.sha256Objects = /^\s*objectformat\s*=\s*sha256\s*$/im.test(text);
          return;
        }
        const found = rest === 'packed-refs'
          ? text.split('\n').map((line) => /^([0-9a-f]{40}|[0-9a-f]{64}) (refs\/\S+)$/.exec(line)).filter((m) => m !== null).map((m) => [m[2], m[1]])
          : /^[0-9a-f]{40}$|^[0-9a-f]{64}$/.test(text.trim()) ? [[rest, text.trim()]] : [];
        for (const [ref, id] of found) {
          if (refs >= MAX_REFS || !ref || !id || ref in target.refs) continue;
          target.refs[ref] = id;
          refs++;
        }
      }));
    }
    if (use.use === 'copy' && target.extractedTo) handlers.push(copyMember(target, rest, member));
    if (handlers.length === 0) return undefined;
    return {
      data: (chunk) => handlers.forEach((handler) => handler.data?.(chunk)),
      end: () => handlers.forEach((handler) => handler.end?.()),
    };
  }

  /**
   * Writes one allowed member into the repository's copy: a new file only, never through a link,
   * and only once its first bytes show it is what its name says and the room it declares is there.
   */
  function copyMember(repo: GitDataScan, rest: string, member: TarMember): MemberHandler {
    const path = join(repo.extractedTo as string, rest);
    const signature = SIGNATURES.find(([pattern]) => pattern.test(rest));
    let head: Buffer | undefined = Buffer.alloc(0);
    let fd: number | undefined;
    let refused = false;
    const write = (chunk: Buffer) => {
      try {
        let done = 0;
        while (done < chunk.length) done += writeSync(fd as number, chunk, done);
      } catch (error) {
        throw extractError(path, error as NodeJS.ErrnoException);
      }
    };
    /** Judges the first bytes, then makes the file and writes them. */
    const start = (first: Buffer) => {
      head = undefined;
      if (signature && !signature[1](Buffer.concat([first, Buffer.alloc(4)]))) {
        refused = true;
        repo.damaged = true;
        return problem(signature[2], member.name, repo.repository);
      }
      options.budget?.spend(member.size, path);
      try {
        mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
        fd = openSync(path, NEW_FILE, 0o600);
      } catch (error) {
        // The layout already refused clashes and repeats: what is left is the machine's.
        throw extractError(path, error as NodeJS.ErrnoException);
      }
      write(first);
    };
    return {
      data: (chunk) => {
        if (refused) return;
        if (head) {
          head = Buffer.concat([head, chunk]);
          if (head.length >= 4) start(head);
          return;
        }
        write(chunk);
      },
      end: () => {
        if (head) start(head);
        if (fd !== undefined) closeSync(fd);
      },
    };
  }

  const hash: Hash | undefined = options.sha256 ? createHash('sha256') : undefined;
  let read = 0;
  const count = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      read += chunk.length;
      hash?.update(chunk);
      options.onProgress?.(read, info.size);
      done(null, chunk);
    },
  });
  try {
    // Reads of 1 MiB; inflated chunks of 32 KiB, twice the default. A chunk lives until its slowest
    // reader (the tokenizer of a metadata file) is done with it, and one that outlives two
    // young-generation collections waits for a full one: with 256 KiB chunks a metadata file of
    // empty objects held 150 MB of them, with 32 KiB 90 MB; 1 GiB takes 2 s, where tar tzf takes 5.
    await pipeline(
      createReadStream(path, { highWaterMark: 1 << 20 }),
      count,
      createGunzip({ chunkSize: 32 << 10 }),
      new TarMemberReader(onMember),
      options.signal ? { signal: options.signal } : {},
    );
    scan.complete = true;
  } catch (error) {
    if (options.signal?.aborted) throw new InterruptedError('archive check interrupted');
    if (error instanceof CliError) throw error;
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
  if (hash && scan.complete) scan.sha256 = hash.digest('hex');
  return scan;
}

const NEW_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Lays out one member's shape (an empty file, or a directory) below `root`, or says why it cannot
 * be: another member took its path, or a file where it needs a directory, or the reverse. An
 * importer would extract one of the two, or fail; which one is not for us to guess.
 */
function placeInLayout(root: string, rest: string, type: TarMember['type']): string | undefined {
  const path = join(root, rest);
  try {
    if (type === 'directory') {
      mkdirSync(path, { recursive: true, mode: 0o700 });
      return undefined;
    }
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    closeSync(openSync(path, NEW_FILE, 0o600));
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const directoryThere = code === 'EEXIST' && lstatSync(path, { throwIfNoEntry: false })?.isDirectory();
    if (code === 'EEXIST' && !directoryThere) return 'appears twice in the archive (an importer would keep only the last)';
    if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') {
      return 'clashes with another member of the same path (a file where a directory is, or the reverse)';
    }
    if (code === 'ENAMETOOLONG') return 'has a name too long to be a file';
    throw extractError(path, error as NodeJS.ErrnoException);
  }
}

/** A member's text, handed over once whole (only for small members). */
function textOf(use: (text: string) => void): MemberHandler {
  const chunks: Buffer[] = [];
  return {
    data: (chunk) => chunks.push(Buffer.from(chunk)),
    end: () => use(Buffer.concat(chunks).toString('utf8')),
  };
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
