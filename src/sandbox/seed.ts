import { createHash } from 'node:crypto';
import { API_VERSION, type Owner, type Repository, SIMPLE_REPOSITORY_FIELDS, type SimpleRepository, type WebhookOrganization } from '../api/types.js';
import { UsageError } from '../errors.js';

/** The kinds of credential docs/service.md#authentication names; only `classic` may use the migration endpoints. */
const TOKEN_KINDS = ['classic', 'fine-grained', 'app-user', 'installation'] as const;
type TokenKind = (typeof TOKEN_KINDS)[number];

export interface SeedToken {
  token: string;
  kind: TokenKind;
  /** The user the token acts as. */
  user: string;
  revoked?: boolean;
  /** What the token is for, printed by `svc-migrate sandbox`. */
  label: string;
}

/** A token as `svc-migrate sandbox` and `GET /_sandbox` show it. */
export function describeToken({ token, kind, user, revoked, label }: SeedToken) {
  return { token, kind, user, revoked: Boolean(revoked), label };
}

export interface SeedRepository {
  name: string;
  description?: string | null;
  language?: string | null;
  private?: boolean;
  topics?: string[];
  default_branch?: string;
  archived?: boolean;
  /** In KiB, as the service lists it; 0 is a repository never pushed to, whose git data holds no ref and no object. */
  size?: number;
  /** The archive also holds `<name>.wiki.git`: one commit of `Home.md` on `master`. */
  wiki?: boolean;
  /** The git data also holds `refs/pull/3/head` and `refs/pull/3/merge` (pull request 3 of the metadata). */
  pull_refs?: boolean;
  /** How many issues, and pull requests, its metadata holds (default 3 and 3; none of the latter when size is 0). */
  issues?: number;
  pull_requests?: number;
}

export interface SeedOrganization {
  login: string;
  id: number;
  owners: string[];
  members: string[];
  repositories: SeedRepository[];
  /** How many finished import migrations (not startable through the API) the list shows. */
  importMigrations?: number;
}

/** The shape `--seed file.json` loads. */
export interface SeedData {
  users: { login: string; id: number }[];
  organizations: SeedOrganization[];
  tokens: SeedToken[];
}

export const DEFAULT_SEED: SeedData = {
  users: [
    { login: 'octocat', id: 583231 },
    { login: 'hubot', id: 7 },
    { login: 'monalisa', id: 2 },
  ],
  organizations: [
    {
      login: 'octo-org',
      id: 9919,
      owners: ['octocat'],
      members: ['hubot', 'monalisa'],
      importMigrations: 1,
      repositories: [
        { name: 'Hello-World', description: 'My first repository', language: 'Ruby', topics: ['octocat', 'api'] },
        { name: 'widgets', description: 'Widget factory', language: 'TypeScript', private: true },
        { name: 'docs.site', description: 'The documentation site', language: 'HTML', default_branch: 'gh-pages' },
        { name: 'my_lib-2', description: null, language: 'Go' },
        { name: 'legacy-api', description: 'Retired API', language: 'Java', archived: true },
        // Any repository whose name contains "fail" drives its migration to `failed` (see docs/sandbox.md).
        { name: 'will-fail', description: 'Exports of this repository always fail', language: null },
      ],
    },
  ],
  tokens: [
    {
      token: 'svc_sandbox_owner_classic',
      kind: 'classic',
      user: 'octocat',
      label: 'organization owner\'s classic token',
    },
    {
      token: 'svc_sandbox_member_classic',
      kind: 'classic',
      user: 'hubot',
      label: 'organization member\'s classic token (not an owner)',
    },
    {
      token: 'svcfg_sandbox_fine_grained',
      kind: 'fine-grained',
      user: 'octocat',
      label: 'fine-grained personal token (rejected)',
    },
    { token: 'svcu_sandbox_app_user', kind: 'app-user', user: 'octocat', label: 'app user token (rejected)' },
    {
      token: 'svcs_sandbox_installation',
      kind: 'installation',
      user: 'octocat',
      label: 'app installation token (rejected)',
    },
    {
      token: 'svc_sandbox_revoked',
      kind: 'classic',
      user: 'octocat',
      revoked: true,
      label: 'revoked token (401 Bad Credentials)',
    },
  ],
};

/** The sandbox's public host names in URLs it hands out (not reachable; like the fixtures' github.com). */
export interface UrlBases {
  api: string;
  web: string;
}

export function nodeId(kind: string, id: number): string {
  return Buffer.from(`0${kind.length}:${kind}${id}`).toString('base64');
}

export function ownerObject(login: string, id: number, type: 'User' | 'Organization', bases: UrlBases): Owner {
  const api = `${bases.api}/${type === 'Organization' ? 'orgs' : 'users'}/${login}`;
  const user = `${bases.api}/users/${login}`;
  return {
    login,
    id,
    node_id: nodeId(type, id),
    url: api,
    repos_url: `${api}/repos`,
    events_url: `${api}/events{/privacy}`,
    avatar_url: `${bases.web}/avatars/${id}`,
    gravatar_id: '',
    html_url: `${bases.web}/${login}`,
    followers_url: `${user}/followers`,
    following_url: `${user}/following{/other_user}`,
    gists_url: `${user}/gists{/gist_id}`,
    starred_url: `${user}/starred{/owner}{/repo}`,
    subscriptions_url: `${user}/subscriptions`,
    organizations_url: `${user}/orgs`,
    received_events_url: `${user}/received_events`,
    type,
    site_admin: false,
  };
}

export function organizationObject(login: string, id: number, bases: UrlBases): WebhookOrganization {
  const api = `${bases.api}/orgs/${login}`;
  return {
    login,
    id,
    node_id: nodeId('Organization', id),
    url: api,
    repos_url: `${api}/repos`,
    events_url: `${api}/events`,
    hooks_url: `${api}/hooks`,
    issues_url: `${api}/issues`,
    members_url: `${api}/members{/member}`,
    public_members_url: `${api}/public_members{/member}`,
    avatar_url: `${bases.web}/avatars/${id}`,
    description: null,
  };
}

/** A stable id for a repository so the same seed always gives the same ids. */
function repositoryId(fullName: string): number {
  return createHash('sha1').update(fullName).digest().readUInt32BE(0) % 100_000_000;
}

/** Every field of docs/service.md#repository, URL templates included. */
export function repositoryObject(org: SeedOrganization, seed: SeedRepository, bases: UrlBases): Repository {
  const fullName = `${org.login}/${seed.name}`;
  const id = repositoryId(fullName);
  const api = `${bases.api}/repos/${fullName}`;
  const web = `${bases.web}/${fullName}`;
  const host = new URL(bases.web).host;
  const isPrivate = seed.private ?? false;
  const stamp = new Date(Date.UTC(2024, 0, 1) + (id % 300) * 86_400_000).toISOString().replace('.000Z', 'Z');
  return {
    id,
    node_id: nodeId('Repository', id),
    name: seed.name,
    full_name: fullName,
    owner: ownerObject(org.login, org.id, 'Organization', bases),
    private: isPrivate,
    html_url: web,
    description: seed.description ?? null,
    fork: false,
    url: api,
    archive_url: `${api}/{archive_format}{/ref}`,
    assignees_url: `${api}/assignees{/user}`,
    blobs_url: `${api}/git/blobs{/sha}`,
    branches_url: `${api}/branches{/branch}`,
    collaborators_url: `${api}/collaborators{/collaborator}`,
    comments_url: `${api}/comments{/number}`,
    commits_url: `${api}/commits{/sha}`,
    compare_url: `${api}/compare/{base}...{head}`,
    contents_url: `${api}/contents/{+path}`,
    contributors_url: `${api}/contributors`,
    deployments_url: `${api}/deployments`,
    downloads_url: `${api}/downloads`,
    events_url: `${api}/events`,
    forks_url: `${api}/forks`,
    git_commits_url: `${api}/git/commits{/sha}`,
    git_refs_url: `${api}/git/refs{/sha}`,
    git_tags_url: `${api}/git/tags{/sha}`,
    git_url: `git://${host}/${fullName}.git`,
    issue_comment_url: `${api}/issues/comments{/number}`,
    issue_events_url: `${api}/issues/events{/number}`,
    issues_url: `${api}/issues{/number}`,
    keys_url: `${api}/keys{/key_id}`,
    labels_url: `${api}/labels{/name}`,
    languages_url: `${api}/languages`,
    merges_url: `${api}/merges`,
    milestones_url: `${api}/milestones{/number}`,
    notifications_url: `${api}/notifications{?since,all,participating}`,
    pulls_url: `${api}/pulls{/number}`,
    releases_url: `${api}/releases{/id}`,
    ssh_url: `git@${host}:${fullName}.git`,
    stargazers_url: `${api}/stargazers`,
    statuses_url: `${api}/statuses/{sha}`,
    subscribers_url: `${api}/subscribers`,
    subscription_url: `${api}/subscription`,
    tags_url: `${api}/tags`,
    teams_url: `${api}/teams`,
    trees_url: `${api}/git/trees{/sha}`,
    clone_url: `${web}.git`,
    mirror_url: `git://mirror.${host}/${fullName}`,
    hooks_url: `${api}/hooks`,
    svn_url: `${web}`,
    homepage: `${bases.web}/${org.login}`,
    language: seed.language ?? null,
    forks_count: id % 17,
    stargazers_count: id % 211,
    watchers_count: id % 211,
    size: seed.size ?? 100 + (id % 900),
    default_branch: seed.default_branch ?? 'main',
    open_issues_count: id % 7,
    is_template: false,
    topics: seed.topics ?? [],
    has_issues: true,
    has_projects: true,
    has_wiki: true,
    has_pages: seed.default_branch === 'gh-pages',
    has_downloads: true,
    has_discussions: false,
    archived: seed.archived ?? false,
    disabled: false,
    visibility: isPrivate ? 'private' : 'public',
    pushed_at: stamp,
    created_at: stamp,
    updated_at: stamp,
    permissions: { admin: true, push: true, pull: true },
    allow_rebase_merge: true,
    allow_squash_merge: true,
    allow_auto_merge: false,
    delete_branch_on_merge: false,
    allow_merge_commit: true,
    template_repository: null,
    temp_clone_token: '<CLONE_TOKEN>',
    subscribers_count: id % 42,
    network_count: id % 17,
    forks: id % 17,
    open_issues: id % 7,
    watchers: id % 211,
    license: {
      key: 'mit',
      name: 'MIT License',
      url: `${bases.api}/licenses/mit`,
      spdx_id: 'MIT',
      node_id: 'MDc6TGljZW5zZW1pdA==',
      html_url: `${bases.web}/licenses/mit`,
    },
    security_and_analysis: {
      advanced_security: { status: 'enabled' },
      secret_scanning: { status: 'enabled' },
      secret_scanning_push_protection: { status: 'disabled' },
      secret_scanning_non_provider_patterns: { status: 'disabled' },
      secret_scanning_delegated_alert_dismissal: { status: 'disabled' },
    },
  };
}

/**
 * A repository as a migration embeds it (docs/service.md#versioning): under 2026-03-10 the
 * simple-repository shape; before it (no version header) the full object, less the two fields
 * docs/service.md#repository keeps to the migration repository list.
 */
export function embeddedRepository(repo: Repository, version: string | undefined): SimpleRepository {
  if (version === API_VERSION) {
    return Object.fromEntries(SIMPLE_REPOSITORY_FIELDS.map((field) => [field, repo[field]])) as SimpleRepository;
  }
  const { has_discussions: _discussions, security_and_analysis: _security, ...embedded } = repo;
  return embedded;
}

/** A repository of the migration repository list: under 2026-03-10 without `has_downloads`. */
export function listedRepository(repo: Repository, version: string | undefined): Partial<Repository> {
  if (version !== API_VERSION) return repo;
  const { has_downloads: _downloads, ...listed } = repo;
  return listed;
}

/** A `--seed` file's text as seed data, or a usage error saying what is wrong with it (docs/sandbox.md). */
export function parseSeed(text: string, source: string): SeedData {
  const hint = { hint: 'see docs/sandbox.md for the seed format' };
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`the seed file ${source} is not JSON: ${(error as Error).message}`, hint);
  }
  try {
    return validateSeed(data, source);
  } catch (error) {
    throw new UsageError((error as Error).message, hint);
  }
}

/** A repository's `issues` and `pull_requests`, when given, are whole numbers. */
function countProblems(repositories: Partial<SeedRepository>[], where: string): string[] {
  return repositories.flatMap((repo, index) =>
    (['issues', 'pull_requests'] as const)
      .filter((field) => repo?.[field] !== undefined && !(Number.isSafeInteger(repo[field]) && (repo[field] ?? 0) >= 0))
      .map((field) => `${where}.repositories[${index}].${field} must be a whole number`));
}

/** Checks a `--seed` file enough to give a clear message instead of a crash later. */
function validateSeed(data: unknown, source: string): SeedData {
  const problems: string[] = [];
  const seed = data as Partial<SeedData>;
  if (!seed || typeof seed !== 'object') problems.push('the top level must be an object');
  else {
    if (!Array.isArray(seed.users)) problems.push('"users" must be an array of {login, id}');
    if (!Array.isArray(seed.organizations) || seed.organizations.length === 0) {
      problems.push('"organizations" must be a non-empty array');
    } else {
      for (const [index, org] of seed.organizations.entries()) {
        if (typeof org.login !== 'string') problems.push(`organizations[${index}].login must be a string`);
        if (!Array.isArray(org.owners)) problems.push(`organizations[${index}].owners must be an array`);
        if (!Array.isArray(org.repositories)) problems.push(`organizations[${index}].repositories must be an array`);
        else problems.push(...countProblems(org.repositories, `organizations[${index}]`));
      }
    }
    if (!Array.isArray(seed.tokens)) problems.push('"tokens" must be an array of {token, kind, user, label}');
    else {
      for (const [index, token] of (seed.tokens as Partial<SeedToken>[]).entries()) {
        if (typeof token?.token !== 'string' || !token.token) problems.push(`tokens[${index}].token must be a non-empty string`);
        if (!TOKEN_KINDS.includes(token?.kind as TokenKind)) problems.push(`tokens[${index}].kind must be one of ${TOKEN_KINDS.join(', ')}`);
        if (typeof token?.user !== 'string') problems.push(`tokens[${index}].user must be a string`);
      }
    }
  }
  if (problems.length > 0) throw new Error(`${source}: ${problems.join('; ')}`);
  return {
    users: seed.users ?? [],
    organizations: (seed.organizations ?? []).map((org) => ({ ...org, members: org.members ?? [] })),
    tokens: seed.tokens ?? [],
  };
}
