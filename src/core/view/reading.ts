import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { ItemEntry, ItemKind, Label, Milestone, RepositoryIndex, Row, SiteIndex, SlimAsset, SlimRecord } from './model.js';
import { MetadataFormatError } from '../archive/metadata-records.js';
import { type JsonRecord, RecordTooLargeError, wholeRecords } from './record-stream.js';
import { placeOf } from './record-urls.js';
import type { Spool } from './spool.js';

// The archive's metadata files read kind by kind, each record as it streams: the look-ups first
// (users, repositories and their labels, milestones, attachments), then issues and pull requests
// (a row each in memory, the record in its spool file), then what belongs to them, appended to
// their spool files. Nothing of a file is held but the record being read.

/** The kinds read, in this order: what later kinds are looked up in comes first. */
const KINDS = [
  'organizations', 'users', 'repositories', 'milestones', 'attachments', 'issues', 'pull_requests', 'issue_comments',
  'issue_events', 'pull_request_reviews', 'pull_request_review_threads', 'pull_request_review_comments', 'releases',
] as const;
type Kind = (typeof KINDS)[number];

/** What each kind of record that belongs to an issue or pull request is in its spool file. */
const BELONGING: Partial<Record<Kind, ItemEntry['k']>> = {
  issue_comments: 'comment',
  issue_events: 'event',
  pull_request_reviews: 'review',
  pull_request_review_threads: 'thread',
  pull_request_review_comments: 'review_comment',
};

/** Longer strings are cut: a page is for reading, and the service caps bodies at 65,536 characters. */
const MAX_TEXT = 256 << 10;
const MAX_NAME = 1024;

/**
 * Reads every metadata file in `filesDir`. A file that is not JSON, or holds a record over 1 MiB,
 * throws; with `onUnreadable` (an archive read without verification) the rest of that file is
 * passed over instead, and its name handed to it.
 */
type Unreadable = (file: string, reason: string) => void;

export async function readMetadata(filesDir: string, spool: Spool, onUnreadable?: Unreadable, signal?: AbortSignal): Promise<SiteIndex> {
  const index: SiteIndex = {
    organization: undefined, repositories: new Map(), users: new Map(), attachments: new Map(), files: new Set(), passedOver: 0,
  };
  const files = await metadataFiles(filesDir);
  const reader = new MetadataIndexer(index, spool);
  for (const kind of KINDS) {
    for (const file of files.get(kind) ?? []) {
      try {
        let read = 0;
        for await (const record of wholeRecords(join(filesDir, file))) {
          // Ctrl-C is heard between records: a metadata file of 200,000 is read for a while.
          if (++read % 1024 === 0) signal?.throwIfAborted();
          await reader.add(kind, record);
        }
      } catch (error) {
        if (!onUnreadable || !(error instanceof MetadataFormatError || error instanceof RecordTooLargeError)) throw error;
        onUnreadable(file, error.message);
      }
    }
  }
  await spool.flush();
  return index;
}

/** `<kind>_NNNNNN.json` at the top of the reading, by kind, in page order. */
async function metadataFiles(dir: string): Promise<Map<string, string[]>> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const byKind = new Map<string, string[]>();
  for (const entry of entries) {
    const kind = /^([a-z][a-z_]*)_\d{6}\.json$/.exec(entry.name)?.[1];
    if (!kind || !entry.isFile()) continue;
    const list = byKind.get(kind) ?? [];
    list.push(entry.name);
    byKind.set(kind, list);
  }
  for (const list of byKind.values()) list.sort();
  return byKind;
}

class MetadataIndexer {
  private readonly index: SiteIndex;
  private readonly spool: Spool;

  constructor(index: SiteIndex, spool: Spool) {
    this.index = index;
    this.spool = spool;
  }

  async add(kind: Kind, record: JsonRecord): Promise<void> {
    switch (kind) {
      case 'organizations':
        this.index.organization ??= text(record.login, MAX_NAME);
        return;
      case 'users': {
        const login = text(record.login, MAX_NAME);
        if (typeof record.url === 'string' && login) this.index.users.set(record.url, login);
        return;
      }
      case 'repositories':
        this.repository(record);
        return;
      case 'milestones':
        this.milestone(record);
        return;
      case 'attachments': {
        const asset = archivePath(record.asset_url);
        if (typeof record.url === 'string' && asset) this.index.attachments.set(record.url, asset);
        return;
      }
      case 'issues':
      case 'pull_requests':
        await this.item(kind === 'issues' ? 'issue' : 'pull', record);
        return;
      case 'releases': {
        const repository = this.repositoryOf(record.repository);
        if (!repository) return;
        repository.releases++;
        await this.spool.append(repository.releaseFile, slim(record));
        return;
      }
      default:
        await this.belonging(kind, record);
    }
  }

  private repositoryOf(url: unknown, make = false): RepositoryIndex | undefined {
    const place = placeOf(url);
    if (!place) {
      this.index.passedOver++;
      return undefined;
    }
    const key = place.repository.toLowerCase();
    let repository = this.index.repositories.get(key);
    if (!repository && make) {
      repository = {
        name: place.repository, labels: new Map(), issues: new Map(), pulls: new Map(), milestones: [],
        releases: 0, releaseFile: this.spool.open(), comments: 0, reviews: 0, review_comments: 0,
      };
      this.index.repositories.set(key, repository);
    }
    if (!repository) this.index.passedOver++;
    return repository;
  }

  private repository(record: JsonRecord): void {
    const repository = this.repositoryOf(record.url, true);
    if (!repository || !Array.isArray(record.labels)) return;
    for (const label of record.labels as unknown[]) {
      if (!isRecord(label) || typeof label.url !== 'string') continue;
      const name = text(label.name, MAX_NAME) ?? '';
      const color = typeof label.color === 'string' && /^[0-9a-f]{6}$/i.test(label.color) ? label.color.toLowerCase() : undefined;
      repository.labels.set(label.url, { name, color } satisfies Label);
    }
  }

  private milestone(record: JsonRecord): void {
    const repository = this.repositoryOf(record.repository, true);
    if (!repository || typeof record.url !== 'string') return;
    const milestone: Milestone = {
      url: record.url,
      title: text(record.title, MAX_NAME) ?? '',
      state: text(record.state, 32) ?? '',
      description: text(record.description, MAX_TEXT) ?? '',
      due_on: text(record.due_on, 64),
      closed_at: text(record.closed_at, 64),
    };
    repository.milestones.push(milestone);
  }

  private async item(kind: ItemKind, record: JsonRecord): Promise<void> {
    const place = placeOf(record.url);
    const repository = this.repositoryOf(record.repository ?? record.url, true);
    if (!repository || place?.item?.kind !== kind || place.repository.toLowerCase() !== repository.name.toLowerCase()) {
      if (repository) this.index.passedOver++;
      return;
    }
    const rows = kind === 'issue' ? repository.issues : repository.pulls;
    const number = place.item.number;
    // Numbers are one sequence per repository: a second record of one number is not shown twice.
    if (repository.issues.has(number) || repository.pulls.has(number)) {
      this.index.passedOver++;
      return;
    }
    const mergedAt = text(record.merged_at, 64);
    const closedAt = text(record.closed_at, 64);
    const row: Row = {
      number,
      title: text(record.title, MAX_NAME) ?? '',
      state: mergedAt ? 'merged' : closedAt ? 'closed' : 'open',
      labels: Array.isArray(record.labels) ? (record.labels as unknown[]).filter((label) => typeof label === 'string').slice(0, 100) : [],
      author: text(record.user, 2048),
      created_at: text(record.created_at, 64),
      closed_at: closedAt,
      merged_at: mergedAt,
      milestone: text(record.milestone, 2048),
      file: this.spool.open(),
    };
    rows.set(number, row);
    await this.spool.append(row.file, { k: 'record', r: slim(record) } satisfies ItemEntry);
  }

  /** A comment, event, review, thread or review comment: to the spool file of what it belongs to. */
  private async belonging(kind: Kind, record: JsonRecord): Promise<void> {
    const place = placeOf(record.pull_request ?? record.issue);
    const repository = place ? this.index.repositories.get(place.repository.toLowerCase()) : undefined;
    const item = place?.item;
    const row = item && repository ? repository.issues.get(item.number) ?? repository.pulls.get(item.number) : undefined;
    if (!repository || !row) {
      this.index.passedOver++;
      return;
    }
    const k = BELONGING[kind];
    if (!k) return;
    if (k === 'comment') repository.comments++;
    if (k === 'review') repository.reviews++;
    if (k === 'review_comment') repository.review_comments++;
    await this.spool.append(row.file, { k, r: slim(record) } satisfies ItemEntry);
  }
}

/** `tarball://root/<path>` → `<path>`, when it is a plain relative path. */
export function archivePath(url: unknown): string | undefined {
  if (typeof url !== 'string' || !url.startsWith('tarball://root/')) return undefined;
  const path = url.slice('tarball://root/'.length);
  const parts = path.split('/');
  if (path.length > 1024 || parts.some((part) => part === '' || part === '.' || part === '..' || part.includes('\\'))) return undefined;
  return path;
}

function text(value: unknown, max: number): string | undefined {
  return typeof value === 'string' ? value.slice(0, max) : undefined;
}

function isRecord(value: unknown): value is JsonRecord {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The top-level strings (cut), numbers, booleans and lists of strings of a record, and its release assets. */
function slim(record: JsonRecord): SlimRecord {
  const kept: SlimRecord = {};
  for (const [key, value] of Object.entries(record)) {
    if (typeof value === 'string') kept[key] = value.slice(0, MAX_TEXT);
    else if (typeof value === 'number' || typeof value === 'boolean' || value === null) kept[key] = value;
    else if (Array.isArray(value) && value.every((one) => typeof one === 'string')) kept[key] = (value).slice(0, 100);
  }
  for (const side of ['base', 'head'] as const) {
    const ref = isRecord(record[side]) ? record[side].ref : undefined;
    if (typeof ref === 'string') kept[`${side}_ref`] = ref.slice(0, MAX_NAME);
  }
  if (Array.isArray(record.release_assets)) {
    kept.release_assets = (record.release_assets as unknown[]).filter(isRecord).slice(0, 1000).map((asset): SlimAsset => ({
      name: text(asset.name, MAX_NAME) ?? '',
      size: typeof asset.size === 'number' ? asset.size : undefined,
      label: text(asset.label, MAX_NAME),
      asset_url: text(asset.asset_url, 2048) ?? '',
    }));
  }
  return kept;
}
