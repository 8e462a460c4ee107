import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CliError, InterruptedError, UsageError } from '../../errors.js';
import { ProblemList } from './problem.js';
import { GIT_MEMBER, gitMemberUse, memberProblem } from './member-names.js';
import { MetadataFormatError, MetadataRecordReader } from './metadata-records.js';
import { type MemberHandler, type TarMember, TarFormatError, TarMemberReader } from './tar-members.js';
import { detached } from './detached.js';
import { GzipFormatError, gzipMember } from './gzip-member.js';
import { NameClashes } from './name-clashes.js';
import { type ExtractionBudget, KeptNames, type ReadMember, readError, recordMetadata, reportMember, shortened, textOf } from './scan-parts.js';
import { KeptRefs, looseRefId, packedRefsReader } from './git-refs.js';
import type { RepositoryHistory } from './repository-history.js';
import { isGitDataDirectory, SIGNATURES } from './git-copies.js';
import { MemberCopier } from './member-copier.js';
import { isMetadataFileName } from './service-names.js';

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
  /** A copy of the archive's config, apart from the repository, for git to read as a file (git-config.ts). */
  configCopy?: string;
  /** Ref name → object id, from loose refs and packed-refs. */
  refs: Record<string, string>;
  /** It names a ref (kept in `refs` or not, past their bound): a repository without one is empty. */
  hasRefs: boolean;
  /** Where its allowed members were copied for the deep check, if they were. */
  extractedTo?: string;
  /** A member of it could not be copied as it is (a problem was recorded): git is not run on it. */
  damaged?: boolean;
  /** The packs and pack indexes copied (each pack needs its index, and the reverse). */
  packFiles?: Set<string>;
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
  /** What their records say of their history (size, pushed_at), by lower-case name. */
  histories: Map<string, RepositoryHistory>;
  /** Records per metadata kind for each repository they belong to. */
  counts: Record<string, Record<string, number>>;
  countedRepositories: number;
  gitData: Map<string, GitDataScan>;
  problems: ProblemList;
  /** With `filesTo`: the files outside what the service's archives hold, not copied (the first few named). */
  leftOut?: { count: number; first: string[] };
}

export interface ScanOptions {
  /**
   * A private directory: each repository's allowed git members, and its directories, are copied to
   * `copies/<n>`, where the file system finds members that clash or repeat; its config to `configs/<n>`.
   */
  extractTo?: string;
  /**
   * A private directory: the members the service's archives hold outside `repositories/` (top-level
   * `*.json`, `attachments/…`) are copied there at their paths, for an extraction, and any other is
   * counted in `leftOut`; a problem stops nothing, the caller keeps none of it then.
   */
  filesTo?: string;
  /** Bytes the copies may take in all (free space less a margin); past it the scan stops. */
  budget?: ExtractionBudget;
  sha256?: boolean;
  onProgress?(read: number, total: number): void;
  /**
   * Each member as the reading saw it, with the sha256 of a file's data: what any extractor must
   * write of the archive (test/integrity/extractor-differential.test.ts holds GNU tar and bsdtar to it).
   */
  onMemberRead?: (member: ReadMember) => void;
  /** Ctrl-C: stops reading, and the scan throws InterruptedError. */
  signal?: AbortSignal | undefined;
}

/** Left-out files named in a scan's `leftOut`: the count says the rest. */
const SHOWN_LEFT_OUT = 5;

/**
 * What an extraction writes outside `repositories/`: only what the service's archives hold there. A
 * `.ssh/authorized_keys`, `.bashrc` or `.claude.json` passes every check of a name, and `--force`
 * into a home directory would write it.
 */
function isServiceFile(path: string, type: TarMember['type']): boolean {
  return isMetadataFileName(path) || /^(attachments|releases)\//.test(path) || ((path === 'attachments' || path === 'releases') && type === 'directory');
}

/** One member's data given to each handler in turn. */
function both(...handlers: MemberHandler[]): MemberHandler {
  return {
    data: (chunk) => handlers.forEach((handler) => handler.data?.(chunk)),
    end: () => handlers.forEach((handler) => handler.end?.()),
  };
}

/** Bounds on what a scan keeps, whatever the archive holds: past them, a problem says so. */
const MAX_REPOSITORIES = 10_000;
const MAX_METADATA_FILES = 100_000;
const MAX_PACK_FILES = 10_000;
/** A ref (or HEAD) is one object id or `ref: <name>`: far shorter than this. */
const MAX_REF = 4 << 10;
/** A bare repository's config is a few hundred bytes; one larger than this is not read. */
const MAX_CONFIG = 64 << 10;

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
    histories: new Map(),
    counts: Object.create(null) as ArchiveScan['counts'],
    countedRepositories: 0,
    gitData: new Map(),
    problems: new ProblemList(),
  };
  const problem = (message: string, file?: string, repository?: string) => {
    const where = { ...(repository ? { repository: shortened(repository) } : {}), ...(file ? { file: shortened(file) } : {}) };
    scan.problems.add({ ...where, message });
  };
  const keptNames = new KeptNames();
  /** Where each repository's copies and config go: `<extractTo>/{copies,configs}/<slot>`. */
  const slots = new Map<string, string>();
  const keptRefs = new KeptRefs();
  let packFiles = 0;
  let tooManyRepositories = false;
  let tooManyMetadataFiles = false;

  const names = new NameClashes();
  const copier = new MemberCopier(options.budget);

  const onMember = (member: TarMember): MemberHandler | undefined => {
    const handler = judgeMember(member);
    return options.onMemberRead ? reportMember(member, handler, options.onMemberRead) : handler;
  };

  const judgeMember = (member: TarMember): MemberHandler | undefined => {
    scan.entries++;
    const { name, type } = member;
    const wrong = memberProblem(member);
    if (wrong) return void problem(wrong, name);
    const path = type === 'directory' ? name.replace(/\/$/, '') : name;
    const git = GIT_MEMBER.exec(path);
    const clash = names.add(path, type === 'directory');
    if (clash) {
      const repo = git ? scan.gitData.get(`${git[1]}/${git[2]}`) : undefined;
      if (repo) repo.damaged = true;
      return void problem(clash, name, repo?.repository);
    }
    // Past the bound on names the archive has failed: the rest is read past, nothing more kept of it.
    if (names.full) return undefined;
    if (git) return gitMember(`${git[1]}/${git[2]}`, git[3] ?? '', member);
    const metadata = !path.includes('/') && path.endsWith('.json') ? metadataMember(path, type) : undefined;
    if (!options.filesTo || path === 'repositories' || path.startsWith('repositories/')) return metadata;
    if (isServiceFile(path, type)) return withCopy(metadata, path, member, options.filesTo);
    if (type === 'file') {
      const leftOut = (scan.leftOut ??= { count: 0, first: [] });
      if (leftOut.count++ < SHOWN_LEFT_OUT) leftOut.first.push(shortened(name));
    }
    return metadata;
  };

  /** `handler`, and a copy of the member at its path under `dir`. */
  function withCopy(handler: MemberHandler | undefined, path: string, member: TarMember, dir: string): MemberHandler | undefined {
    if (member.type === 'directory') {
      const clash = copier.placeDirectory(join(dir, path));
      return clash ? void problem(clash, member.name) : handler;
    }
    if (member.type !== 'file') return handler;
    const copy = copier.copy(member, join(dir, path), undefined, (message) => problem(message, member.name));
    return handler ? both(handler, copy) : copy;
  }

  function metadataMember(name: string, type: TarMember['type']): MemberHandler | undefined {
    if (type !== 'file') return void problem('is a directory where a metadata file belongs', name);
    // Their names count with the names kept: 100,000 files of names of 255 bytes took 100 MB.
    const kept = scan.metadataFiles.length < MAX_METADATA_FILES ? keptNames.keep(name) : undefined;
    const kind = kept === undefined ? undefined : keptNames.keep(kept.replace(/(_\d+)?\.json$/, ''));
    if (kept === undefined || kind === undefined) {
      // Said once; past the bound nothing more is kept, not even the names.
      if (!tooManyMetadataFiles) problem(`the archive holds more metadata files, or longer names of them, than a migration archive does (over ${MAX_METADATA_FILES}); the rest were not read`);
      tooManyMetadataFiles = true;
      return undefined;
    }
    const file: MetadataFileScan = { file: kept, kind };
    scan.metadataFiles.push(file);
    let reader: MetadataRecordReader | undefined = new MetadataRecordReader((record) => {
      if (record) recordMetadata(scan, keptNames, kind, record);
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
      // A string of its own: pieces of the member's name (4 KiB) would keep all of it.
      repository = detached(repository);
      repo = {
        repository,
        path: `repositories/${repository}.git`,
        files: 0,
        bytes: 0,
        hasHead: false,
        looseObjects: 0,
        packs: 0,
        refs: {},
        hasRefs: false,
        ...(options.extractTo ? { extractedTo: join(options.extractTo, 'copies', String(scan.gitData.size)) } : {}),
      };
      slots.set(repository, String(scan.gitData.size));
      scan.gitData.set(repository, repo);
    }
    const target = repo;
    const use = gitMemberUse(rest, member.type);
    if (use.use === 'refuse') {
      target.damaged = true;
      return void problem(use.reason, member.name, repository);
    }
    const copies = target.extractedTo;
    if (copies && rest) {
      // Directories where git data is copied are made in the copy as the archive has them, so a file
      // that later wants one of their paths, or the reverse, is found; a file where git data must be
      // a directory too. Others (info/, hooks/, branches/) would only be left empty in an extraction.
      const directory = member.type === 'directory' && /^(refs|objects|logs)(\/|$)/.test(rest);
      const clash = directory ? copier.placeDirectory(join(copies, rest)) : member.type !== 'directory' && isGitDataDirectory(rest) ? 'is a file where git data must be a directory' : undefined;
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
    if (/\.(pack|idx)$/.test(rest) && use.use === 'copy') {
      // Each is kept to be paired: 250,000 empty indexes took 210 MB.
      if (++packFiles > MAX_PACK_FILES) return void problem(`the archive holds more than ${MAX_PACK_FILES} packs and pack indexes; the rest were not checked`, member.name, repository);
      (target.packFiles ??= new Set()).add(rest);
    }
    if ((rest === 'HEAD' || rest.startsWith('refs/')) && member.size > MAX_REF) {
      target.damaged = true;
      return void problem(`is ${member.size} bytes, larger than a ref ever is`, member.name, repository);
    }

    if (rest === 'config' && options.extractTo) {
      // Never written into the repository: a copy beside it, which git reads as a plain file.
      if (member.size > MAX_CONFIG) {
        target.damaged = true;
        return void problem(`is ${member.size} bytes, more than the config of a repository the service makes`, member.name, repository);
      }
      target.configCopy = join(options.extractTo, 'configs', slots.get(repository) as string);
      return copyMember(target, rest, member, target.configCopy);
    }
    const handlers: MemberHandler[] = [];
    if (rest === 'packed-refs') handlers.push(packedRefsReader((ref, id) => recordRef(target, ref, id), (message) => problem(message, member.name, repository)));
    else if (rest.startsWith('refs/')) handlers.push(textOf((text) => recordRef(target, rest, looseRefId(text))));
    if (use.use === 'copy' && copies) handlers.push(copyMember(target, rest, member));
    return handlers.length === 0 ? undefined : both(...handlers);
  }

  /** A ref of a loose ref file or of packed-refs. */
  function recordRef(repo: GitDataScan, ref: string, id: string | undefined): void {
    if (!id) return;
    repo.hasRefs = true;
    keptRefs.keep(repo.refs, ref, id);
  }

  /** Copies an allowed member of a repository's git data, once its first bytes show it is what its name says. */
  function copyMember(repo: GitDataScan, rest: string, member: TarMember, path = join(repo.extractedTo as string, rest)): MemberHandler {
    const signature = SIGNATURES.find(([pattern]) => pattern.test(rest));
    return copier.copy(member, path, signature?.[1], (message) => {
      repo.damaged = true;
      problem(message, member.name, repo.repository);
    });
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
  const gzip = gzipMember();
  try {
    // Reads of 1 MiB; inflated chunks of 32 KiB (gzip-member.ts says why).
    await pipeline(
      createReadStream(path, { highWaterMark: 1 << 20 }),
      count,
      ...gzip.stages,
      new TarMemberReader(onMember),
      options.signal ? { signal: options.signal } : {},
    );
    gzip.check();
    scan.complete = true;
  } catch (error) {
    if (options.signal?.aborted) throw new InterruptedError('archive check interrupted');
    if (error instanceof CliError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (error instanceof TarFormatError) problem(`tar structure: ${error.message}`);
    else if (error instanceof GzipFormatError) problem(error.message);
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
