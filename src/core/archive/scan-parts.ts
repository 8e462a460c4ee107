import { CliError, ExitCode } from '../../errors.js';
import { type FreeSpace, sized } from '../free-space.js';
import type { ThinRecord } from './metadata-records.js';

// What a scan records of the metadata it reads, and the room its copies of git data may take:
// both bounded, whatever the archive holds.

/** Distinct names kept (repositories listed, repositories counted, organizations): past it, not kept. */
const MAX_NAMES = 100_000;

interface MetadataTally {
  organizations: string[];
  repositories: string[];
  counts: Record<string, Record<string, number>>;
}

/** Adds one record of a metadata file of `kind` to the tally; `listed` mirrors `tally.repositories`. */
export function recordMetadata(tally: MetadataTally, listed: Set<string>, kind: string, record: ThinRecord): void {
  if (kind === 'repositories') {
    const name = repositoryName(record);
    if (name && !listed.has(name) && listed.size < MAX_NAMES) {
      listed.add(name);
      tally.repositories.push(name);
    }
    return;
  }
  if (kind === 'organizations') {
    const login = typeof record.login === 'string' ? record.login : lastSegment(record.url);
    if (login && tally.organizations.length < MAX_NAMES) tally.organizations.push(login);
    return;
  }
  const owner = repositoryOf(record);
  if (!owner) return;
  let counts = tally.counts[owner];
  if (!counts) {
    if (Object.keys(tally.counts).length >= MAX_NAMES) return;
    counts = tally.counts[owner] = {};
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
  const login = typeof owner === 'string' ? lastSegment(owner) : typeof owner?.login === 'string' ? owner.login : undefined;
  return login && typeof record.name === 'string' ? `${login}/${record.name}` : undefined;
}

/** The repository a metadata record belongs to (its `repository` field: a URL or an object). */
function repositoryOf(record: ThinRecord): string | undefined {
  const value = record.repository;
  if (typeof value === 'string') return ownerAndName(value) ?? (/^[^/\s]+\/[^/\s]+$/.test(value) ? value : undefined);
  if (value !== undefined) return repositoryName(value);
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

/**
 * The room the copies of git data may take: the free space of the temporary directory when the
 * check began, less a margin. Each member is counted by the size the archive declares for it before
 * a byte of it is written, so the check stops before the disk is full, not when it is.
 */
export class ExtractionBudget {
  private spent = 0;
  private readonly space: FreeSpace;

  constructor(space: FreeSpace) {
    this.space = space;
  }

  spend(bytes: number, path: string): void {
    this.spent += bytes;
    const room = Math.max(0, this.space.free - MARGIN);
    if (this.spent <= room) return;
    throw new CliError(
      `not enough free space in ${this.space.dir} to check the archive's git objects: they take more than the ${sized(room)} there (${sized(this.space.free)} free, ${sized(MARGIN)} kept free); stopped before ${path}`,
      ExitCode.Usage,
      { hint: 'set TMPDIR to a directory with more room, or add --no-git-check to skip the deep check (the archive is then not proven complete)' },
    );
  }
}
