import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SEED } from '../../src/sandbox/seed.js';
import { BIN, runCli } from '../helpers/run-cli.js';
import { sandboxArchive } from '../helpers/sandbox.js';
import { unless } from '../helpers/skip.js';

// The metadata of the sandbox's archives, shaped as GitHub's migration archives are
// (docs/sandbox.md#archive-metadata): every kind of record, in pages of at most 100, each naming the records
// it belongs to by URL; attachments and release assets as files of the archive; counts as the
// seed or the scale options say; and the 10,000-issue archive made in bounded memory.

type Json = Record<string, unknown>;

interface Read {
  /** Records by kind (`issues` for issues_000001.json, issues_000002.json, …). */
  kinds: Map<string, Json[]>;
  /** Pages by kind, in order, with their record counts. */
  pages: Map<string, { file: string; records: number }[]>;
  files: Map<string, Buffer>;
}

function readArchive(file: string): Read {
  const read: Read = { kinds: new Map(), pages: new Map(), files: new Map() };
  const parser = new Parser({ strict: true });
  parser.on('entry', (entry: ReadEntry) => {
    const chunks: Buffer[] = [];
    entry.on('data', (chunk: Buffer) => chunks.push(Buffer.from(chunk)));
    entry.on('end', () => {
      if (entry.type !== 'File') return;
      const data = Buffer.concat(chunks);
      read.files.set(entry.path, data);
      const page = /^([a-z_]+)_(\d{6})\.json$/.exec(entry.path);
      if (!page?.[1]) return;
      const records = JSON.parse(data.toString('utf8')) as Json[];
      read.kinds.set(page[1], [...(read.kinds.get(page[1]) ?? []), ...records]);
      read.pages.set(page[1], [...(read.pages.get(page[1]) ?? []), { file: entry.path, records: records.length }]);
    });
  });
  parser.end(gunzipSync(readFileSync(file)));
  return read;
}

const KINDS: Record<string, string> = {
  users: 'user',
  organizations: 'organization',
  teams: 'team',
  repositories: 'repository',
  milestones: 'milestone',
  issues: 'issue',
  pull_requests: 'pull_request',
  issue_comments: 'issue_comment',
  issue_events: 'issue_event',
  pull_request_reviews: 'pull_request_review',
  pull_request_review_threads: 'pull_request_review_thread',
  pull_request_review_comments: 'pull_request_review_comment',
  protected_branches: 'protected_branch',
  releases: 'release',
  attachments: 'attachment',
};

/** The fields that name another record, and the type that record must have. */
const REFERENCES: Record<string, string> = {
  repository: 'repository',
  repository_url: 'repository',
  issue: 'issue',
  pull_request: 'pull_request',
  user: 'user',
  actor: 'user',
  subject: 'user',
  creator_url: 'user',
  resolver: 'user',
  assignee: 'user',
  milestone: 'milestone',
  label: 'label',
  issue_comment: 'issue_comment',
  pull_request_review: 'pull_request_review',
  pull_request_review_thread: 'pull_request_review_thread',
  in_reply_to: 'pull_request_review_comment',
  organization: 'organization',
  owner: 'organization',
};

/** Every record by its URL, the labels inside repositories as records of type `label`. */
function byUrl(read: Read): Map<string, string> {
  const types = new Map<string, string>();
  for (const records of read.kinds.values()) {
    for (const record of records) {
      if (typeof record.url === 'string' && record.type !== 'attachment') types.set(record.url, record.type as string);
      for (const label of (record.labels as Json[] | undefined) ?? []) if (typeof label === 'object') types.set(label.url as string, 'label');
    }
  }
  return types;
}

/** Each reference of every record that does not lead to a record of the right type. */
function danglingReferences(read: Read): string[] {
  const types = byUrl(read);
  const wrong: string[] = [];
  const expect = (url: unknown, type: string, where: string) => {
    if (url === null || url === undefined) return;
    if (types.get(url as string) !== type) wrong.push(`${where}: ${JSON.stringify(url)} is not a ${type}`);
  };
  for (const [kind, records] of read.kinds) {
    for (const record of records) {
      const where = `${kind} ${String(record.url)}`;
      for (const [field, type] of Object.entries(REFERENCES)) if (field in record && !(kind === 'users' && field === 'user')) expect(record[field], type, `${where} .${field}`);
      for (const field of ['assignees'] as const) for (const url of (record[field] as unknown[] | undefined) ?? []) expect(url, 'user', `${where} .${field}`);
      if (kind === 'issues' || kind === 'pull_requests') for (const url of record.labels as unknown[]) expect(url, 'label', `${where} .labels`);
      for (const member of (record.members as Json[] | undefined) ?? []) expect(member.user, 'user', `${where} .members`);
      for (const permission of (record.permissions as Json[] | undefined) ?? []) expect(permission.repository, 'repository', `${where} .permissions`);
      for (const side of ['base', 'head'] as const) if (record[side]) expect((record[side] as Json).repo, 'repository', `${where} .${side}.repo`);
    }
  }
  return wrong;
}

/** Every `tarball://root/…` a record names, and whether the archive holds that file. */
function tarballFiles(read: Read): { url: string; present: boolean }[] {
  const urls = [...read.files.entries()]
    .filter(([name]) => name.endsWith('.json'))
    .flatMap(([, data]) => data.toString('utf8').match(/tarball:\/\/root\/[^"]+/g) ?? [])
    .filter((url) => !url.startsWith('tarball://root/repositories/'));
  return urls.map((url) => ({ url, present: read.files.has(url.slice('tarball://root/'.length)) }));
}

const count = (read: Read, kind: string) => read.kinds.get(kind)?.length ?? 0;
const ALL = ['Hello-World', 'widgets', 'docs.site', 'my_lib-2', 'legacy-api', 'will-fail'];

describe('the sandbox\'s archive metadata', () => {
  it('of the default seed: every kind, in pages, each record typed and its references resolved; files for what records name', async () => {
    const archive = await sandboxArchive(ALL);
    const read = readArchive(archive);
    for (const [kind, type] of Object.entries(KINDS)) {
      expect(count(read, kind), kind).toBeGreaterThan(0);
      for (const record of read.kinds.get(kind) ?? []) {
        expect(record.type, kind).toBe(type);
        expect(typeof record.url, kind).toBe('string');
      }
      const urls = (read.kinds.get(kind) ?? []).map((record) => record.url);
      expect(new Set(urls).size, `${kind}: one record per URL`).toBe(urls.length);
    }
    expect(JSON.parse(read.files.get('schema.json')?.toString() ?? '{}')).toEqual({ version: '1.2.0' });
    expect(danglingReferences(read)).toEqual([]);

    // Six repositories of 3 issues and 3 pull requests each.
    expect(count(read, 'repositories')).toBe(6);
    expect(count(read, 'issues')).toBe(18);
    expect(count(read, 'pull_requests')).toBe(18);
    expect(count(read, 'attachments')).toBe(18);
    expect(count(read, 'releases')).toBe(12);

    const files = tarballFiles(read);
    expect(files.length).toBeGreaterThanOrEqual(18 + 12);
    expect(files.filter((file) => !file.present)).toEqual([]);
    expect(read.files.get(files.find((file) => file.url.endsWith('.png'))!.url.slice(15))!.subarray(1, 4).toString()).toBe('PNG');
    // The image a body shows is an attachment of the archive.
    const attachments = new Set((read.kinds.get('attachments') ?? []).map((record) => record.url));
    const shown = (read.kinds.get('issues') ?? []).flatMap((issue) => [...String(issue.body).matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)].map((match) => match[1]));
    expect(shown.length).toBeGreaterThan(0);
    for (const url of shown) expect(attachments.has(url)).toBe(true);
    const verified = await runCli(['archive', 'verify', archive, '--json']);
    expect(verified.code, verified.stdout).toBe(0);
  });

  it('holds open, closed and merged states, reviews with threads and diff hunks, events, and Markdown of every kind', async () => {
    const read = readArchive(await sandboxArchive(['Hello-World']));
    const issues = read.kinds.get('issues') ?? [];
    const pulls = read.kinds.get('pull_requests') ?? [];
    expect(issues.some((issue) => issue.closed_at === null)).toBe(true);
    expect(issues.some((issue) => issue.closed_at !== null)).toBe(true);
    expect(pulls.some((pull) => pull.merged_at !== null)).toBe(true);
    expect(pulls.some((pull) => pull.closed_at === null)).toBe(true);
    expect(pulls.some((pull) => pull.closed_at !== null && pull.merged_at === null)).toBe(true);
    expect(new Set((read.kinds.get('pull_request_reviews') ?? []).map((review) => review.state))).toEqual(new Set([1, 30, 40]));
    const events = new Set((read.kinds.get('issue_events') ?? []).map((event) => event.event));
    for (const event of ['closed', 'reopened', 'merged', 'labeled', 'milestoned', 'assigned', 'review_requested']) expect(events, event).toContain(event);
    for (const thread of read.kinds.get('pull_request_review_threads') ?? []) {
      expect(thread.diff_hunk).toMatch(/^@@ -\d+,\d+ \+\d+,\d+ @@\n/);
      expect(thread).toMatchObject({ path: expect.any(String), position: expect.any(Number), line: expect.any(Number) });
    }
    const comments = read.kinds.get('pull_request_review_comments') ?? [];
    expect(comments.some((comment) => comment.in_reply_to !== null)).toBe(true);
    // Numbers are one sequence: pull request 3 is the one the seed's pull_refs name.
    expect(pulls[0]?.url).toBe('https://sandbox.invalid/octo-org/Hello-World/pull/3');

    const text = [...issues, ...pulls, ...(read.kinds.get('issue_comments') ?? [])].map((record) => String(record.body)).join('\n');
    for (const mark of ['```ts', '| --- |', '- [x] ', '- [ ] ', '](https://', '![', '@octocat', '#2', 'é', '日本語', '🎉']) expect(text, mark).toContain(mark);
    const [repository] = read.kinds.get('repositories') ?? [];
    expect((repository?.labels as Json[]).map((label) => label.name)).toContain('priorité: haute');
  });

  it('is the same for the same seed, whenever it is exported', async () => {
    const metadata = (read: Read) => [...read.files].filter(([name]) => !name.startsWith('repositories/'));
    const first = readArchive(await sandboxArchive(['widgets', 'docs.site']));
    const second = readArchive(await sandboxArchive(['widgets', 'docs.site']));
    expect(metadata(second)).toEqual(metadata(first));
  });

  it('at scale: the counts asked for, in pages of 100; archive verify passes', async () => {
    const archive = await sandboxArchive(['Hello-World', 'widgets'], {}, { issues: 250, pullRequests: 120 });
    const read = readArchive(archive);
    expect(count(read, 'issues')).toBe(500);
    expect(count(read, 'pull_requests')).toBe(240);
    expect(read.pages.get('issues')).toEqual([1, 2, 3, 4, 5].map((page) => ({ file: `issues_00000${page}.json`, records: 100 })));
    expect(read.pages.get('pull_requests')?.map((page) => page.records)).toEqual([100, 100, 40]);
    const numbers = (read.kinds.get('issues') ?? []).concat(read.kinds.get('pull_requests') ?? [])
      .filter((record) => String(record.repository).endsWith('/widgets'))
      .map((record) => Number(/\/(\d+)$/.exec(String(record.url))?.[1]));
    expect(numbers.sort((a, b) => a - b)).toEqual(Array.from({ length: 370 }, (_, i) => i + 1));
    expect(danglingReferences(read)).toEqual([]);
    const verified = await runCli(['archive', 'verify', archive, '--json']);
    expect(verified.code, verified.stdout).toBe(0);
    const inspected = JSON.parse((await runCli(['archive', 'inspect', archive, '--json'])).stdout) as { repositories: { counts: Record<string, number> }[] };
    expect(inspected.repositories[0]?.counts).toMatchObject({ issues: 250, pull_requests: 120 });
  });

  it('follows a repository\'s own counts in the seed, gives one never pushed to no pull request or release, and leaves out what is excluded', async () => {
    const seed = structuredClone(DEFAULT_SEED);
    Object.assign(seed.organizations[0]!.repositories.find((repo) => repo.name === 'widgets')!, { issues: 0, pull_requests: 4 });
    const archive = await sandboxArchive(['widgets', 'repo-0025'], { exclude_attachments: true, exclude_releases: true }, { seed, repositories: 25 });
    const read = readArchive(archive);
    const of = (kind: string, name: string) => (read.kinds.get(kind) ?? []).filter((record) => String(record.repository ?? record.repository_url).endsWith(`/${name}`));
    expect([of('issues', 'widgets').length, of('pull_requests', 'widgets').length]).toEqual([0, 4]);
    expect(of('pull_requests', 'widgets').map((pull) => pull.url)).toEqual([1, 2, 3, 4].map((n) => `https://sandbox.invalid/octo-org/widgets/pull/${n}`));
    // repo-0025 is empty ("size": 0): its issues, and nothing that needs a branch or a tag.
    expect([of('issues', 'repo-0025').length, of('pull_requests', 'repo-0025').length, of('protected_branches', 'repo-0025').length]).toEqual([2, 0, 0]);
    expect([...read.files.keys()].filter((name) => /^(attachments|releases)[_/]/.test(name))).toEqual([]);
    // Bodies still link to where the attachments were.
    expect(String(of('pull_requests', 'widgets')[0]?.body) + String((read.kinds.get('issues') ?? [])[0]?.body)).toContain('/user-attachments/assets/');
    expect(danglingReferences(read)).toEqual([]);
    expect((await runCli(['archive', 'verify', archive])).code).toBe(0);
  });

  const proc = existsSync('/proc/self/status');
  it(`10,000 issues and 2,000 pull requests, made by \`svc-migrate sandbox\` in bounded memory${unless(proc, 'no /proc to read peak memory from')}`, async () => {
    if (!proc) return;
    const server = spawn(process.execPath, [BIN, 'sandbox', '--json', '--issues', '10000', '--pull-requests', '2000', '--export-seconds', '0'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const info = await new Promise<{ base_url: string; token: string; org: string }>((resolve, reject) => {
        let text = '';
        server.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk;
          if (text.includes('\n')) resolve(JSON.parse(text.slice(0, text.indexOf('\n'))) as never);
        });
        server.once('exit', () => reject(new Error('the sandbox exited')));
      });
      const peak = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))?.[1]) * 1024;
      const before = peak();
      const output = join(mkdtempSync(join(tmpdir(), 'svc-metadata-')), 'big.tar.gz');
      const env = { SVC_BASE_URL: info.base_url, SVC_TOKEN: info.token, SVC_ORG: info.org };
      const exported = await runCli(['export', 'Hello-World', '-o', output, '--interval', '0.1', '--json'], { env, timeoutMs: 240_000 });
      expect(exported.code, exported.stderr).toBe(0);
      const grown = peak() - before;
      const inspected = JSON.parse((await runCli(['archive', 'inspect', output, '--json'])).stdout) as { repositories: { counts: Record<string, number> }[] };
      expect(inspected.repositories[0]?.counts).toMatchObject({ issues: 10_000, pull_requests: 2_000 });
      // Made a page at a time, the sandbox grew by 35 MB (Node 20: the tar and gzip streams, the
      // garbage of the records made); holding each kind's records whole before writing took 99 MB.
      expect(grown).toBeLessThan(64 * 1024 * 1024);
    } finally {
      server.kill('SIGINT');
    }
  }, 300_000);
});
