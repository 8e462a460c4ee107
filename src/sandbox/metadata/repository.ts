import type { Owner } from '../../api/types.js';
import { PNG, type ArchivedFile } from './attachments.js';
import { at, type Person, type RepoContext, shaOf, uuidOf } from './numbering.js';

// The records of the organization and of each repository as a whole: users, the organization, a
// team, the repository with its labels, milestones, releases with their assets, the protected
// default branch. Field names as GitHub's migration archives have them (docs/sandbox.md#archive-metadata).

const LABELS = [
  { name: 'bug', color: 'd73a4a', description: 'Something isn\'t working' },
  { name: 'enhancement', color: 'a2eeef', description: 'New feature or request' },
  { name: 'good first issue', color: '7057ff', description: 'Good for newcomers' },
  { name: 'documentation', color: '0075ca', description: 'Improvements or additions to documentation' },
  { name: 'priorité: haute', color: 'b60205', description: 'À traiter en premier' },
  { name: '日本語', color: 'fbca04', description: '翻訳 🌐' },
];

/** The labels of issue or pull request `index`: none, one, or two. */
const LABEL_SETS = [[0], [1, 2], [], [4], [5, 0]];

export interface LabelRef {
  url: string;
  name: string;
  color: string;
}

export function labelsOf(ctx: RepoContext, index: number): LabelRef[] {
  return (LABEL_SETS[index % LABEL_SETS.length] as number[]).map((which) => {
    const label = LABELS[which] as (typeof LABELS)[number];
    return { url: `${ctx.url}/labels/${encodeURIComponent(label.name)}`, name: label.name, color: label.color };
  });
}

const MILESTONES = [
  { title: 'v1.0', description: 'The first release.', closed: true },
  { title: 'v2.0 — 日本語対応', description: 'Names beyond ASCII, everywhere. ✨', closed: false },
];

/** The milestone of issue or pull request `index`: the first, the second, or none. */
export function milestoneOf(ctx: RepoContext, index: number): { url: string; title: string } | undefined {
  const which = index % 3;
  const milestone = MILESTONES[which];
  return milestone && { url: `${ctx.url}/milestones/${which + 1}`, title: milestone.title };
}

export function userRecord(person: Person, index: number, web: string): Record<string, unknown> {
  const names = ['Mona Lisa Octocat', 'Zoë Ångström', '山田 太郎', 'Hubot 🤖'];
  return {
    type: 'user',
    url: person.url,
    avatar_url: `${web}/avatars/u/${person.id}`,
    login: person.login,
    name: names[index % names.length],
    bio: index % 2 === 0 ? 'Ships archives. 📦' : '',
    company: null,
    website: null,
    location: index % 3 === 2 ? '東京' : null,
    emails: [{ address: `${person.id}+${person.login}@users.noreply.${new URL(web).host}`, primary: true, verified: true }],
    billing_plan: null,
    created_at: at(Date.UTC(2020, 0, 1) + (person.id % 1000) * 86_400_000),
  };
}

export function organizationRecord(org: Owner, people: Person[], owners: number): Record<string, unknown> {
  return {
    type: 'organization',
    url: org.html_url,
    login: org.login,
    name: org.login,
    description: 'Where the sandbox keeps its repositories',
    website: null,
    location: null,
    email: null,
    members: people.map((person, index) => ({ user: person.url, role: index < owners ? 'admin' : 'direct_member', state: 'active' })),
  };
}

export function teamRecord(org: Owner, people: Person[], repositories: RepoContext[]): Record<string, unknown> {
  return {
    type: 'team',
    url: `${new URL(org.html_url).origin}/orgs/${org.login}/teams/maintainers`,
    organization: org.html_url,
    name: 'Maintainers',
    description: 'Review and merge',
    privacy: 'closed',
    permissions: repositories.map((ctx) => ({ repository: ctx.url, access: 'push' })),
    members: people.map((person, index) => ({ user: person.url, role: index === 0 ? 'maintainer' : 'member' })),
    created_at: at(Date.UTC(2023, 0, 1)),
  };
}

/**
 * A repository as GitHub's archives have it, and three fields of the service's own: `full_name`,
 * `size` and `pushed_at`, which the archive check reads to tell a repository never pushed to
 * (docs/reliability.md#the-archive-check).
 */
export function repositoryRecord(ctx: RepoContext, wiki: boolean): Record<string, unknown> {
  const { repo } = ctx;
  const git = `tarball://root/repositories/${repo.full_name}`;
  return {
    type: 'repository',
    url: ctx.url,
    owner: repo.owner.html_url,
    name: repo.name,
    full_name: repo.full_name,
    description: repo.description,
    website: null,
    private: repo.private,
    has_issues: repo.has_issues,
    has_wiki: repo.has_wiki,
    has_downloads: repo.has_downloads,
    is_archived: repo.archived,
    labels: LABELS.map((label) => ({ url: `${ctx.url}/labels/${encodeURIComponent(label.name)}`, ...label, created_at: repo.created_at })),
    collaborators: [],
    created_at: repo.created_at,
    pushed_at: repo.pushed_at,
    size: repo.size,
    git_url: `${git}.git`,
    wiki_url: wiki ? `${git}.wiki.git` : null,
    default_branch: repo.default_branch,
    webhooks: [],
    public_keys: [],
    repository_topics: repo.topics,
  };
}

export function milestoneRecords(ctx: RepoContext): Record<string, unknown>[] {
  return MILESTONES.map((milestone, which) => ({
    type: 'milestone',
    url: `${ctx.url}/milestones/${which + 1}`,
    repository: ctx.url,
    user: ctx.people[0]?.url,
    title: milestone.title,
    description: milestone.description,
    state: milestone.closed ? 'closed' : 'open',
    due_on: at(ctx.base + (which + 1) * 30 * 86_400_000),
    created_at: at(ctx.base),
    updated_at: at(ctx.base + 86_400_000),
    closed_at: milestone.closed ? at(ctx.base + 86_400_000) : null,
  }));
}

export interface ReleaseFiles {
  record: Record<string, unknown>;
  files: ArchivedFile[];
}

/**
 * Two releases: v1.0.0 (the git data's tag) with two assets, and a draft pre-release without.
 * Assets are kept at `tarball://root/releases/<guid>/<name>`, where GitHub's exporter keeps them.
 */
export function releasesOf(ctx: RepoContext): ReleaseFiles[] {
  const author = ctx.people[0]?.url;
  const checksums = Buffer.from(`${shaOf(`${ctx.repo.full_name}@v1.0.0`)}  ${ctx.repo.name}-1.0.0.tar.gz\n`);
  const assets = [
    { name: 'checksums.txt', content_type: 'text/plain', data: checksums, label: 'SHA-256 sums' },
    { name: 'logo.png', content_type: 'image/png', data: PNG, label: 'Logo' },
  ].map((asset) => ({ ...asset, guid: uuidOf(`${ctx.repo.full_name}/releases/v1.0.0/${asset.name}`) }));
  const files = assets.map((asset) => ({ path: `releases/${asset.guid}/${asset.name}`, data: asset.data }));
  const published = {
    type: 'release',
    url: `${ctx.url}/releases/tag/v1.0.0`,
    repository: ctx.url,
    user: author,
    name: 'v1.0.0 — première version',
    tag_name: 'v1.0.0',
    body: '## What\'s new\n\n- Names beyond ASCII: café, 日本語 🎉\n- Fixes #2\n\n**Full changelog**: v0.9.0...v1.0.0',
    state: 'published',
    pending_tag: 'v1.0.0',
    prerelease: false,
    target_commitish: ctx.repo.default_branch,
    release_assets: assets.map((asset) => ({
      user: author,
      name: asset.name,
      content_type: asset.content_type,
      size: asset.data.length,
      guid: asset.guid,
      state: 'uploaded',
      label: asset.label,
      asset_url: `tarball://root/releases/${asset.guid}/${asset.name}`,
    })),
    reactions: [],
    published_at: at(ctx.base + 2 * 86_400_000),
    created_at: at(ctx.base + 2 * 86_400_000),
  };
  const draft = {
    ...published,
    url: `${ctx.url}/releases/tag/v1.1.0-beta`,
    name: 'v1.1.0 beta',
    tag_name: 'v1.1.0-beta',
    body: 'Not published yet: テスト中。',
    state: 'draft',
    pending_tag: 'v1.1.0-beta',
    prerelease: true,
    release_assets: [],
    published_at: null,
    created_at: at(ctx.base + 3 * 86_400_000),
  };
  return [{ record: published, files }, { record: draft, files: [] }];
}

export function protectedBranchRecord(ctx: RepoContext): Record<string, unknown> {
  const branch = ctx.repo.default_branch;
  return {
    type: 'protected_branch',
    name: branch,
    url: `${ctx.url}/protected_branches/${branch}`,
    creator_url: ctx.people[0]?.url,
    repository_url: ctx.url,
    admin_enforced: true,
    block_deletions_enforcement_level: 2,
    block_force_pushes_enforcement_level: 2,
    dismiss_stale_reviews_on_push: false,
    pull_request_reviews_enforcement_level: 'non_admins',
    require_code_owner_review: false,
    required_status_checks_enforcement_level: 'off',
    strict_required_status_checks_policy: false,
    authorized_actors_only: false,
    authorized_user_urls: [],
    authorized_team_urls: [],
    dismissal_restricted_user_urls: [],
    dismissal_restricted_team_urls: [],
    required_status_checks: [],
  };
}
