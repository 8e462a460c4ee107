import type { Migration, Owner, Repository } from '../../api/types.js';
import type { SeedData, SeedOrganization, SeedRepository } from '../seed.js';
import type { TarWriter } from '../tar.js';
import { type ArchivedFile, attachmentsOf } from './attachments.js';
import { peopleOf, type RepoContext, repoContext } from './numbering.js';
import { issueCommentRecords, issueEventRecords, issueRecords } from './issues.js';
import { pullRequestRecords, reviewCommentRecords, reviewRecords, reviewThreadRecords } from './pulls.js';
import { milestoneRecords, organizationRecord, protectedBranchRecord, releasesOf, repositoryRecord, teamRecord, userRecord } from './repository.js';

// The metadata of a migration archive, kind after kind, each in files of at most 100 records
// (`issues_000001.json`, `issues_000002.json`, …) as GitHub's exporters write them. Records are
// made as the page they go in is filled and let go once it is written: an archive of 10,000
// issues is made holding one page at a time.

const PAGE_SIZE = 100;

export interface MetadataInput {
  migration: Migration;
  organization: Owner;
  repositories: Repository[];
  /** The seed's organization (its owners and members) and users (their ids). */
  seedOrganization: SeedOrganization;
  users: SeedData['users'];
  extrasOf: (repo: Repository) => SeedRepository | undefined;
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** Writes `records` as `<kind>_000001.json`, `<kind>_000002.json`, …; nothing when there are none. */
async function writePages(tar: TarWriter, kind: string, records: Iterable<unknown>): Promise<void> {
  let page: unknown[] = [];
  let pages = 0;
  const flush = async () => {
    pages++;
    await tar.file(`${kind}_${String(pages).padStart(6, '0')}.json`, json(page));
    page = [];
  };
  for (const record of records) {
    page.push(record);
    if (page.length === PAGE_SIZE) await flush();
  }
  if (page.length > 0) await flush();
}

/** The records `make` gives for each repository, one repository after the other. */
function* eachRepository<T>(contexts: RepoContext[], make: (ctx: RepoContext) => Iterable<T>): Generator<T> {
  for (const ctx of contexts) yield* make(ctx);
}

/** Files under `root/` (attachments, release assets), each in a directory of its own as the service keeps them. */
async function writeFiles(tar: TarWriter, root: string, files: Iterable<ArchivedFile>): Promise<void> {
  await tar.directory(root);
  for (const file of files) {
    await tar.directory(file.path.slice(0, file.path.lastIndexOf('/')));
    await tar.file(file.path, file.data);
  }
}

/**
 * `schema.json` and the metadata files, honouring the exclude flags
 * (docs/service.md#start-migration): the organization alone with `org_metadata_only` or
 * `exclude_metadata`; no releases (nor their assets) with `exclude_releases`; no attachments with
 * `exclude_attachments`, though bodies still link to where they were.
 */
export async function writeMetadata(tar: TarWriter, input: MetadataInput): Promise<void> {
  const { migration, organization } = input;
  const web = new URL(organization.html_url).origin;
  const people = peopleOf(input.seedOrganization, input.users, web);
  const owners = people.filter((person) => input.seedOrganization.owners.includes(person.login)).length;
  await tar.file('schema.json', json({ version: '1.2.0' }));
  await tar.file('organizations_000001.json', json([organizationRecord(organization, people, owners)]));
  if (migration.org_metadata_only || migration.exclude_metadata) return;

  const contexts = input.repositories.map((repo) => repoContext(repo, input.extrasOf(repo), people));
  const each = <T>(make: (ctx: RepoContext) => Iterable<T>) => eachRepository(contexts, make);
  await writePages(tar, 'users', people.map((person, index) => userRecord(person, index, web)));
  await writePages(tar, 'teams', [teamRecord(organization, people, contexts)]);
  await writePages(tar, 'repositories', each((ctx) => [repositoryRecord(ctx, Boolean(input.extrasOf(ctx.repo)?.wiki))]));
  await writePages(tar, 'milestones', each(milestoneRecords));
  await writePages(tar, 'issues', each(issueRecords));
  await writePages(tar, 'pull_requests', each(pullRequestRecords));
  await writePages(tar, 'issue_comments', each(issueCommentRecords));
  await writePages(tar, 'issue_events', each(issueEventRecords));
  await writePages(tar, 'pull_request_reviews', each(reviewRecords));
  await writePages(tar, 'pull_request_review_threads', each(reviewThreadRecords));
  await writePages(tar, 'pull_request_review_comments', each(reviewCommentRecords));
  // A repository never pushed to has no branch to protect and no tag to release.
  const pushed = contexts.filter((ctx) => ctx.repo.size !== 0);
  await writePages(tar, 'protected_branches', pushed.map(protectedBranchRecord));
  if (!migration.exclude_releases) await writePages(tar, 'releases', eachRepository(pushed, (ctx) => releasesOf(ctx).map((release) => release.record)));
  if (!migration.exclude_attachments) await writePages(tar, 'attachments', each((ctx) => attachmentsOf(ctx).map((attachment) => attachment.record)));
  if (!migration.exclude_owner_projects) await tar.file('projects_000001.json', json([]));
  if (!migration.exclude_attachments) await writeFiles(tar, 'attachments', each(attachmentsOf));
  if (!migration.exclude_releases && pushed.length > 0) {
    await writeFiles(tar, 'releases', eachRepository(pushed, (ctx) => releasesOf(ctx).flatMap((release) => release.files)));
  }
}
