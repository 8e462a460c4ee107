import { detached } from './detached.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { fileError } from '../../support/system-errors.js';
import { type StatsFs, statfsSync } from 'node:fs';
import { sized } from '../free-space.js';
import type { ThinRecord } from './metadata-records.js';
import { historyOf, type RepositoryHistory } from './repository-history.js';
import { createHash } from 'node:crypto';
import type { MemberHandler, TarMember } from './tar-members.js';

// What a scan records of the metadata it reads, and the room its copies of git data may take:
// both bounded, whatever the archive holds.

/** Distinct names kept (repositories listed, repositories counted, organizations): past it, not kept. */
const MAX_NAMES = 100_000;
/**
 * A name longer than this is not kept: longer than any owner/name (two parts of 255 bytes at most).
 * A URL's path, percent-encoded, made names of 18,000 characters, which V8 hashes by their length
 * alone: 30,000 of them made each look-up compare with all the others, for hours.
 */
const MAX_NAME_LENGTH = 512;
/**
 * The characters of all the names kept (metadata files' too), one beyond Latin-1 counted twice:
 * these, the tree of member names (name-clashes.ts) and the refs kept (git-refs.ts) together stay
 * within what keeps a check under 150 MB.
 */
const MAX_NAME_CHARACTERS = 4_000_000;

interface MetadataTally {
  organizations: string[];
  repositories: string[];
  /** What the records of `repositories` say of their history, by lower-case name. */
  histories: Map<string, RepositoryHistory>;
  counts: Record<string, Record<string, number>>;
  /** Repositories in `counts`. */
  countedRepositories: number;
}

/** The names a tally keeps, within their bounds; `listed` mirrors `tally.repositories`. */
export class KeptNames {
  readonly listed = new Set<string>();
  private characters = 0;

  /** `name` as a string of its own, counted; undefined when it is too long or the names kept are. */
  keep(name: string): string | undefined {
    // A character beyond Latin-1 takes two bytes, and counts as two.
    const cost = /^[\0-\xff]*$/.test(name) ? name.length : 2 * name.length;
    if (name.length > MAX_NAME_LENGTH || this.characters + cost > MAX_NAME_CHARACTERS) return undefined;
    this.characters += cost;
    return detached(name);
  }
}

/** Adds one record of a metadata file of `kind` to the tally. */
export function recordMetadata(tally: MetadataTally, names: KeptNames, kind: string, record: ThinRecord): void {
  if (kind === 'repositories') {
    const name = repositoryName(record);
    if (!name || name.length > MAX_NAME_LENGTH || names.listed.has(name) || names.listed.size >= MAX_NAMES) return;
    const kept = names.keep(name);
    if (kept === undefined) return;
    names.listed.add(kept);
    tally.repositories.push(kept);
    const history = historyOf(record);
    const key = history ? names.keep(kept.toLowerCase()) : undefined;
    if (history && key !== undefined) tally.histories.set(key, history);
    return;
  }
  if (kind === 'organizations') {
    const login = typeof record.login === 'string' ? record.login : lastSegment(record.url);
    const kept = login && tally.organizations.length < MAX_NAMES ? names.keep(login) : undefined;
    if (kept !== undefined) tally.organizations.push(kept);
    return;
  }
  const owner = repositoryOf(record);
  if (!owner || owner.length > MAX_NAME_LENGTH) return;
  let counts = tally.counts[owner];
  if (!counts) {
    if (tally.countedRepositories >= MAX_NAMES) return;
    const kept = names.keep(owner);
    if (kept === undefined) return;
    tally.countedRepositories++;
    // Without a prototype: a kind or owner named "constructor" or "__proto__" is a name like any other.
    counts = tally.counts[kept] = Object.create(null) as Record<string, number>;
  }
  counts[kind] = (counts[kind] ?? 0) + 1;
}

/** owner/name of a repository record: its full_name, else its URL, else owner and name. */
function repositoryName(record: ThinRecord): string | undefined {
  if (typeof record.full_name === 'string') return record.full_name;
  for (const key of ['html_url', 'url']) {
    const fromUrl = ownerAndName(record[key]);
    if (fromUrl) return fromUrl;
  }
  const owner = record.owner;
  const login = typeof owner === 'string' ? lastSegment(owner) : typeof owner === 'object' && typeof owner.login === 'string' ? owner.login : undefined;
  return login && typeof record.name === 'string' ? `${login}/${record.name}` : undefined;
}

/** The repository a metadata record belongs to (its `repository` field: a URL or an object). */
function repositoryOf(record: ThinRecord): string | undefined {
  const value = record.repository;
  if (typeof value === 'string') return ownerAndName(value) ?? (/^[^/\s]+\/[^/\s]+$/.test(value) ? value : undefined);
  if (typeof value === 'object') return repositoryName(value);
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

/** What the copies leave free: they last only as long as the check, so less than a download keeps. */
const MARGIN = 16 << 20;
const MARGIN_FILES = 1000;
/** A file takes at least a block, however small; a directory one too. */
const BLOCK = 4096;
/** Free space is looked at again after this much is written: other checks or writers share the disk. */
const LOOK_AGAIN = 16 << 20;

/**
 * The room the copies of git data may take: the free space (and free files) of the temporary
 * directory less a margin, looked at when the check begins and again as it writes. Each member is
 * counted by the size the archive declares for it, in whole blocks, before a byte of it is
 * written, so the check stops before the disk is full, not when it is.
 */
export class ExtractionBudget {
  private readonly dir: string;
  private room = 0;
  private files = 0;
  private countsFiles = false;
  private sinceLook = 0;
  private readonly hint: string;

  private constructor(dir: string, hint: string) {
    this.dir = dir;
    this.hint = hint;
  }

  /** The budget of `dir`, or undefined when its file system does not say how much is free. */
  static of(dir: string, hint = 'set TMPDIR to a directory with more room, or add --no-git-check to skip the deep check (the archive is then not proven complete)'): ExtractionBudget | undefined {
    const budget = new ExtractionBudget(dir, hint);
    return budget.look() ? budget : undefined;
  }

  spend(bytes: number, path: string): void {
    const cost = Math.ceil(Math.max(bytes, 1) / BLOCK) * BLOCK;
    this.sinceLook += cost;
    if (this.sinceLook > LOOK_AGAIN || cost > this.room) this.look();
    this.room -= cost;
    this.files -= 1;
    if (this.room >= 0 && (!this.countsFiles || this.files >= 0)) return;
    const what = this.room < 0 ? `more than the ${sized(Math.max(0, this.room + cost))} left there (${sized(MARGIN)} kept free)` : 'more files than the file system has left';
    throw new CliError(`not enough free space in ${this.dir} to check the archive's git objects: they take ${what}; stopped before ${path}`, ExitCode.Usage, { hint: this.hint });
  }

  private look(): boolean {
    let stats: StatsFs;
    try {
      stats = statfsSync(this.dir);
    } catch {
      return false;
    }
    if (stats.blocks <= 0 || stats.bsize <= 0) return false;
    this.room = stats.bavail * stats.bsize - MARGIN;
    // Some file systems make files as they go and report none free (btrfs): then only bytes count.
    this.countsFiles = stats.files > 0;
    this.files = stats.ffree - MARGIN_FILES;
    this.sinceLook = 0;
    return true;
  }
}

/** Names from the archive are cut short in reports past this length (no real one comes near it). */
const MAX_SHOWN_NAME = 512;

/** A name from the archive as a report shows it: cut short past a length no real one has. */
export function shortened(name: string): string {
  return name.length <= MAX_SHOWN_NAME ? name : `${name.slice(0, MAX_SHOWN_NAME)}… (${name.length} characters)`;
}

/** A member's text, handed over once whole (only for small members). */
export function textOf(use: (text: string) => void): MemberHandler {
  const chunks: Buffer[] = [];
  return {
    data: (chunk) => chunks.push(Buffer.from(chunk)),
    end: () => use(Buffer.concat(chunks).toString('utf8')),
  };
}

/** A member as the reading saw it: what any extractor must write of the archive. */
export interface ReadMember {
  name: string;
  type: TarMember['type'];
  size: number;
  /** Of a file's data. */
  sha256?: string;
}

/** Passes a member's data on to its handler while hashing it, and reports the member at its end. */
export function reportMember(member: TarMember, handler: MemberHandler | undefined, report: (member: ReadMember) => void): MemberHandler {
  const { name, type, size } = member;
  const hash = type === 'file' ? createHash('sha256') : undefined;
  return {
    data: (chunk) => {
      hash?.update(chunk);
      handler?.data?.(chunk);
    },
    end: () => {
      handler?.end?.();
      report({ name, type, size, ...(hash ? { sha256: hash.digest('hex') } : {}) });
    },
  };
}

/** A failure to read the archive itself: the user's path, said as such (exit 2). */
export function readError(path: string, error: NodeJS.ErrnoException): CliError {
  if (error.code === 'ENOENT') {
    return new UsageError(`${path} does not exist`, { hint: 'pass the path of a downloaded .tar.gz archive' });
  }
  if (error.code === 'EACCES' || error.code === 'EPERM') {
    return new UsageError(`cannot read ${path}: permission denied`, { hint: 'check the file\'s permissions' });
  }
  if (error.code === 'EISDIR') return new UsageError(`${path} is a directory`, { hint: 'pass the path of a .tar.gz archive' });
  return fileError(error, { action: 'read', path });
}
