import { randomUUID } from 'node:crypto';
import { ARCHIVE_RETENTION_MS, type Migration, type MigrationState, type Repository, type StartMigrationBody } from '../api/types.js';
import {
  embeddedRepository,
  nodeId,
  ownerObject,
  repositoryObject,
  type SeedData,
  type SeedOrganization,
  type SeedRepository,
  type UrlBases,
} from './seed.js';

/** A clock tests can move forward (`POST /_sandbox/clock`), so seven days pass in a call. */
export class SandboxClock {
  private offsetMs = 0;
  now(): number {
    return Date.now() + this.offsetMs;
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

export interface StoredMigration {
  id: number;
  guid: string;
  org: SeedOrganization;
  kind: 'export' | 'import';
  body: Required<Omit<StartMigrationBody, 'exclude'>>;
  repositories: Repository[];
  createdAt: number;
  /** Names (lower case) of repositories still locked by this migration. */
  locked: Set<string>;
  archiveDeletedAt?: number;
}

export interface Timeline {
  state: MigrationState;
  /** When the current state began. */
  since: number;
  /** When the migration reached `exported`, if it has. */
  exportedAt?: number;
}

/** Any repository whose name contains "fail" drives its migration to `failed` (docs/sandbox.md). */
const FAILING_REPOSITORY = /fail/i;

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+00:00');

/** The migrations of every organization, and the state machine of docs/service.md#migration-states driven by the clock. */
interface RepositoryIndex {
  list: Repository[];
  byName: Map<string, Repository>;
  byFullName: Map<string, Repository>;
  seeds: Map<string, SeedRepository>;
}

export class MigrationStore {
  private readonly migrations: StoredMigration[] = [];
  private nextId = 1000;
  readonly seed: SeedData;
  readonly clock: SandboxClock;
  private readonly bases: UrlBases;
  /** Time from start to `exported`; the first fifth of it is spent `pending`. */
  private readonly exportMs: number;
  /** Added per repository: a larger migration takes longer, as on the service. */
  private readonly perRepositoryMs: number;

  constructor(seed: SeedData, clock: SandboxClock, bases: UrlBases, exportMs: number, perRepositoryMs = 0) {
    this.seed = seed;
    this.clock = clock;
    this.bases = bases;
    this.exportMs = exportMs;
    this.perRepositoryMs = perRepositoryMs;
    for (const org of seed.organizations) {
      for (let i = 0; i < (org.importMigrations ?? 0); i++) this.addImport(org);
    }
  }

  organization(login: string): SeedOrganization | undefined {
    const lower = login.toLowerCase();
    return this.seed.organizations.find((org) => org.login.toLowerCase() === lower);
  }

  /** Built once per organization: the seed never changes, and `--repositories 1000` makes each build dear. */
  private readonly repositoryIndex = new Map<SeedOrganization, RepositoryIndex>();

  private indexOf(org: SeedOrganization): RepositoryIndex {
    let index = this.repositoryIndex.get(org);
    if (!index) {
      const list = org.repositories.map((repo) => repositoryObject(org, repo, this.bases));
      const byName = new Map(list.map((repo) => [repo.name.toLowerCase(), repo]));
      const byFullName = new Map(list.map((repo) => [repo.full_name.toLowerCase(), repo]));
      const seeds = new Map(org.repositories.map((repo) => [repo.name.toLowerCase(), repo]));
      index = { list, byName, byFullName, seeds };
      this.repositoryIndex.set(org, index);
    }
    return index;
  }

  /** The organization's repositories, shared: nothing in the sandbox changes them. */
  repositoriesOf(org: SeedOrganization): readonly Repository[] {
    return this.indexOf(org).list;
  }

  /** A repository by its name (`widgets`) or, with `full`, its full name (`octo-org/widgets`), in any case. */
  repository(org: SeedOrganization, name: string, full = false): Repository | undefined {
    const { byName, byFullName } = this.indexOf(org);
    return (full ? byFullName : byName).get(name.toLowerCase());
  }

  /** What the seed says of a repository beyond its API object (its wiki, its pull-request refs). */
  seedRepository(org: SeedOrganization, repo: Repository): SeedRepository | undefined {
    return this.indexOf(org).seeds.get(repo.name.toLowerCase());
  }

  /** Newest first, as the service lists them. */
  list(org: SeedOrganization): StoredMigration[] {
    return this.migrations.filter((m) => m.org === org).sort((a, b) => b.createdAt - a.createdAt || b.id - a.id);
  }

  find(org: SeedOrganization, id: number): StoredMigration | undefined {
    return this.migrations.find((m) => m.org === org && m.id === id);
  }

  /** Starts within the last `windowMs`, for the "spammed" 422 of docs/service.md#start-migration. */
  recentStarts(org: SeedOrganization, windowMs: number): number {
    const since = this.clock.now() - windowMs;
    return this.migrations.filter((m) => m.org === org && m.kind === 'export' && m.createdAt >= since).length;
  }

  start(org: SeedOrganization, body: StoredMigration['body'], repositories: Repository[]): StoredMigration {
    const migration: StoredMigration = {
      id: this.nextId++,
      guid: randomUUID(),
      org,
      kind: 'export',
      body,
      repositories,
      createdAt: this.clock.now(),
      locked: new Set(body.lock_repositories ? repositories.map((r) => r.name.toLowerCase()) : []),
    };
    this.migrations.push(migration);
    return migration;
  }

  /** Adds `count` finished exports at once (pagination and listing benchmarks). */
  bulkExports(org: SeedOrganization, count: number): void {
    const repositories = this.repositoriesOf(org).slice(0, 1);
    // Backdated past the spam window so they never block a real start.
    const base = this.clock.now() - this.exportMs - 3_600_000 - count * 1000;
    for (let i = 0; i < count; i++) {
      const migration = this.start(org, defaultBody(repositories.map((r) => r.full_name)), repositories);
      migration.createdAt = base + i * 1000;
    }
  }

  timeline(migration: StoredMigration): Timeline {
    if (migration.kind === 'import') return { state: 'exported', since: migration.createdAt };
    const now = this.clock.now();
    const exportMs = this.exportMs + this.perRepositoryMs * migration.repositories.length;
    const exportingAt = migration.createdAt + Math.floor(exportMs / 5);
    const doneAt = migration.createdAt + exportMs;
    if (now < exportingAt) return { state: 'pending', since: migration.createdAt };
    if (now < doneAt) return { state: 'exporting', since: exportingAt };
    if (migration.repositories.some((r) => FAILING_REPOSITORY.test(r.name))) return { state: 'failed', since: doneAt };
    return { state: 'exported', since: doneAt, exportedAt: doneAt };
  }

  /** Whether the archive can be fetched now (exported, not deleted, not past retention). */
  archiveAvailable(migration: StoredMigration): boolean {
    const { exportedAt } = this.timeline(migration);
    if (migration.kind !== 'export' || exportedAt === undefined || migration.archiveDeletedAt !== undefined)
      return false;
    return this.clock.now() < exportedAt + ARCHIVE_RETENTION_MS;
  }

  /**
   * The Migration object as the service would answer it now, in the shape of the API version the
   * request named (docs/service.md#versioning). `asStarted` gives the answer to the start itself,
   * which is `pending` however short the export (docs/service.md#start-migration).
   */
  view(
    migration: StoredMigration,
    options: { excludeRepositories?: boolean; version?: string | undefined; asStarted?: boolean } = {},
  ): Migration {
    const { state, since } = options.asStarted
      ? { state: 'pending' as const, since: migration.createdAt }
      : this.timeline(migration);
    const { org, body } = migration;
    const view: Migration = {
      id: migration.id,
      node_id: nodeId('Migration', migration.id),
      owner: ownerObject(org.login, org.id, 'Organization', this.bases),
      guid: migration.guid,
      state,
      lock_repositories: body.lock_repositories,
      exclude_metadata: body.exclude_metadata,
      exclude_git_data: body.exclude_git_data,
      exclude_attachments: body.exclude_attachments,
      exclude_releases: body.exclude_releases,
      exclude_owner_projects: body.exclude_owner_projects,
      org_metadata_only: body.org_metadata_only,
      url: `${this.bases.api}/orgs/${org.login}/migrations/${migration.id}`,
      created_at: iso(migration.createdAt),
      updated_at: iso(since),
    };
    // docs/service.md#migration: repositories are returned only for exports, and not with exclude=repositories.
    if (migration.kind === 'export' && !options.excludeRepositories) {
      view.repositories = migration.repositories.map((repo) => embeddedRepository(repo, options.version));
    }
    return view;
  }

  private addImport(org: SeedOrganization): void {
    this.migrations.push({
      id: this.nextId++,
      guid: randomUUID(),
      org,
      kind: 'import',
      body: defaultBody([]),
      repositories: [],
      createdAt: Date.UTC(2025, 5, 1) + this.migrations.length * 60_000,
      locked: new Set(),
    });
  }
}

export function defaultBody(repositories: string[]): StoredMigration['body'] {
  return {
    repositories,
    lock_repositories: false,
    exclude_metadata: false,
    exclude_git_data: false,
    exclude_attachments: false,
    exclude_releases: false,
    exclude_owner_projects: false,
    org_metadata_only: false,
  };
}
