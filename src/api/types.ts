// Resource shapes of docs/service.md (#migration, #repository, #owner), defined once and shared by the client, the sandbox and the UI.

export type MigrationState = 'pending' | 'exporting' | 'exported' | 'failed';
export const MIGRATION_STATES: readonly MigrationState[] = ['pending', 'exporting', 'exported', 'failed'];

/** docs/service.md#owner */
export interface Owner {
  login: string;
  id: number;
  node_id: string;
  url: string;
  repos_url: string;
  events_url: string;
  avatar_url: string;
  gravatar_id: string;
  html_url: string;
  followers_url: string;
  following_url: string;
  gists_url: string;
  starred_url: string;
  subscriptions_url: string;
  organizations_url: string;
  received_events_url: string;
  type: string;
  site_admin: boolean;
}

export const REPOSITORY_URL_FIELDS = [
  'url',
  'html_url',
  'archive_url',
  'assignees_url',
  'blobs_url',
  'branches_url',
  'collaborators_url',
  'comments_url',
  'commits_url',
  'compare_url',
  'contents_url',
  'contributors_url',
  'deployments_url',
  'downloads_url',
  'events_url',
  'forks_url',
  'git_commits_url',
  'git_refs_url',
  'git_tags_url',
  'git_url',
  'issue_comment_url',
  'issue_events_url',
  'issues_url',
  'keys_url',
  'labels_url',
  'languages_url',
  'merges_url',
  'milestones_url',
  'notifications_url',
  'pulls_url',
  'releases_url',
  'ssh_url',
  'stargazers_url',
  'statuses_url',
  'subscribers_url',
  'subscription_url',
  'tags_url',
  'teams_url',
  'trees_url',
  'clone_url',
  'mirror_url',
  'hooks_url',
  'svn_url',
] as const;
type RepositoryUrlField = (typeof REPOSITORY_URL_FIELDS)[number];
type RepositoryUrls = Record<RepositoryUrlField, string>;

/** The URLs to clone from, which the simple-repository shape (SIMPLE_REPOSITORY_FIELDS) leaves out. */
const CLONE_URL_FIELDS = ['git_url', 'ssh_url', 'clone_url', 'mirror_url', 'svn_url'] as const satisfies readonly RepositoryUrlField[];
type CloneUrlField = (typeof CLONE_URL_FIELDS)[number];
const isCloneUrl = (field: RepositoryUrlField): field is CloneUrlField => (CLONE_URL_FIELDS as readonly string[]).includes(field);

interface SecurityFeatureStatus {
  status: string;
}

/** docs/service.md#repository; fields marked "migration repository list only" are optional here. */
export interface Repository extends RepositoryUrls {
  id: number;
  node_id: string;
  name: string;
  full_name: string;
  default_branch: string;
  visibility: string;
  homepage: string;
  temp_clone_token: string;
  owner: Owner;
  private: boolean;
  fork: boolean;
  is_template: boolean;
  archived: boolean;
  disabled: boolean;
  has_issues: boolean;
  has_projects: boolean;
  has_wiki: boolean;
  has_pages: boolean;
  has_downloads: boolean;
  allow_rebase_merge: boolean;
  allow_squash_merge: boolean;
  allow_auto_merge: boolean;
  delete_branch_on_merge: boolean;
  allow_merge_commit: boolean;
  has_discussions?: boolean;
  description: string | null;
  language: string | null;
  template_repository: Record<string, unknown> | null;
  topics: string[];
  forks_count: number;
  stargazers_count: number;
  watchers_count: number;
  size: number;
  open_issues_count: number;
  subscribers_count: number;
  network_count: number;
  forks: number;
  open_issues: number;
  watchers: number;
  pushed_at: string;
  created_at: string;
  updated_at: string;
  permissions: { admin: boolean; push: boolean; pull: boolean };
  license: {
    key: string;
    name: string;
    url: string;
    spdx_id: string;
    node_id: string;
    html_url: string;
  };
  security_and_analysis?: Record<
    | 'advanced_security'
    | 'secret_scanning'
    | 'secret_scanning_push_protection'
    | 'secret_scanning_non_provider_patterns'
    | 'secret_scanning_delegated_alert_dismissal',
    SecurityFeatureStatus
  >;
}

/**
 * The fields a migration's `repositories` items keep under API version 2026-03-10
 * (docs/service.md#versioning): the simple-repository shape, 46 fields, in the service's order (every
 * URL but the clone URLs). Older versions embed the full repository object, which has all of these.
 */
export const SIMPLE_REPOSITORY_FIELDS = [
  'id',
  'node_id',
  'name',
  'full_name',
  'owner',
  'private',
  'description',
  'fork',
  ...REPOSITORY_URL_FIELDS.filter((field): field is Exclude<RepositoryUrlField, CloneUrlField> => !isCloneUrl(field)),
] as const;
export type SimpleRepository = Pick<Repository, (typeof SIMPLE_REPOSITORY_FIELDS)[number]>;

/** docs/service.md#migration. `repositories` is present only on exports, and absent with `exclude=repositories`. */
export interface Migration {
  id: number;
  node_id: string;
  owner: Owner;
  guid: string;
  state: MigrationState;
  lock_repositories: boolean;
  exclude_metadata?: boolean;
  exclude_git_data?: boolean;
  exclude_attachments: boolean;
  exclude_releases: boolean;
  exclude_owner_projects: boolean;
  org_metadata_only?: boolean;
  repositories?: SimpleRepository[];
  url: string;
  created_at: string;
  updated_at: string;
}

/** The flags a migration is started with (docs/service.md#start-migration), each true or false. */
export const START_FLAGS = [
  'lock_repositories',
  'exclude_metadata',
  'exclude_git_data',
  'exclude_attachments',
  'exclude_releases',
  'exclude_owner_projects',
  'org_metadata_only',
] as const;

/** One of START_FLAGS. */
export type StartFlag = (typeof START_FLAGS)[number];

/** Every field of a migration (docs/service.md#migration): what `--json <fields>` may select. */
export const MIGRATION_FIELDS = [
  'id',
  'node_id',
  'owner',
  'guid',
  'state',
  ...START_FLAGS,
  'repositories',
  'url',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof Migration)[];

/** Every field of a repository (docs/service.md#repository): what `repos --json <fields>` may select. */
export const REPOSITORY_FIELDS = [
  'id',
  'node_id',
  'name',
  'full_name',
  'owner',
  'private',
  'description',
  'fork',
  'homepage',
  'language',
  'forks_count',
  'stargazers_count',
  'watchers_count',
  'size',
  'default_branch',
  'open_issues_count',
  'is_template',
  'topics',
  'has_issues',
  'has_projects',
  'has_wiki',
  'has_pages',
  'has_downloads',
  'has_discussions',
  'archived',
  'disabled',
  'visibility',
  'pushed_at',
  'created_at',
  'updated_at',
  'permissions',
  'allow_rebase_merge',
  'template_repository',
  'temp_clone_token',
  'allow_squash_merge',
  'allow_auto_merge',
  'delete_branch_on_merge',
  'allow_merge_commit',
  'subscribers_count',
  'network_count',
  'license',
  'forks',
  'open_issues',
  'watchers',
  'security_and_analysis',
  ...REPOSITORY_URL_FIELDS,
] as const satisfies readonly (keyof Repository)[];
// Each list holds every field of its type (a field added to the type and not here fails to compile).
type Unlisted<T, L extends readonly unknown[]> = Exclude<keyof T, L[number]>;
type Complete = [Unlisted<Migration, typeof MIGRATION_FIELDS>, Unlisted<Repository, typeof REPOSITORY_FIELDS>];
type FieldListsComplete = Complete extends [never, never] ? true : never;
const fieldListsComplete: FieldListsComplete = true;
void fieldListsComplete;

/** Body of docs/service.md#start-migration (start an organization migration). */
export interface StartMigrationBody {
  repositories: string[];
  lock_repositories?: boolean;
  exclude_metadata?: boolean;
  exclude_git_data?: boolean;
  exclude_attachments?: boolean;
  exclude_releases?: boolean;
  exclude_owner_projects?: boolean;
  org_metadata_only?: boolean;
  exclude?: 'repositories'[];
}

/** The error body the service sends with 4xx answers (GitHub's basic-error / validation-error). */
export interface ServiceErrorBody {
  message?: string;
  documentation_url?: string;
  errors?: Array<string | { resource?: string; field?: string; code?: string; message?: string; index?: number; value?: unknown }>;
}

/** Headers of an outgoing webhook delivery, docs/service.md#delivery-headers. */
export const DELIVERY_HEADERS = {
  hookId: 'x-service-hook-id',
  event: 'x-service-event',
  delivery: 'x-service-delivery',
  signature: 'x-hub-signature',
  signature256: 'x-hub-signature-256',
  userAgent: 'user-agent',
  targetType: 'x-service-hook-installation-target-type',
  targetId: 'x-service-hook-installation-target-id',
  contentType: 'content-type',
  contentLength: 'content-length',
} as const;
export const HOOKSHOT_USER_AGENT_PREFIX = 'Service-Hookshot/';

/** docs/service.md#archive and #limits: archives are deleted automatically seven days after export. */
export const ARCHIVE_RETENTION_MS = 7 * 24 * 3_600_000;

export const API_VERSION = '2026-03-10';
export const API_MEDIA_TYPE = 'application/vnd.service+json';

/**
 * An organization as webhook payloads carry it (`organization`): the fields of GitHub's published
 * organization-simple schema, which docs/service.md#webhook-envelope leaves undescribed (the sandbox sends it).
 */
export interface WebhookOrganization {
  login: string;
  id: number;
  node_id: string;
  url: string;
  repos_url: string;
  events_url: string;
  hooks_url: string;
  issues_url: string;
  members_url: string;
  public_members_url: string;
  avatar_url: string;
  description: string | null;
}
