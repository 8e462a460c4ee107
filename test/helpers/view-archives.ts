import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Attachment, attachmentsOf } from '../../src/sandbox/metadata/attachments.js';
import { issueCommentRecords, issueEventRecords, issueRecords } from '../../src/sandbox/metadata/issues.js';
import { type Person, repoContext, uuidOf } from '../../src/sandbox/metadata/numbering.js';
import { pullRequestRecords, reviewCommentRecords, reviewRecords, reviewThreadRecords } from '../../src/sandbox/metadata/pulls.js';
import { milestoneRecords, organizationRecord, releasesOf, repositoryRecord, userRecord } from '../../src/sandbox/metadata/repository.js';
import { repositoryObject, type SeedOrganization } from '../../src/sandbox/seed.js';
import { untarred } from './git-remotes.js';
import { realRepository, repositoryMembers } from './hostile-archives.js';
import { sandboxArchive } from './sandbox.js';
import { member, tarGz } from './tar-bytes.js';

// Archives for `archive view` (issue 47): the sandbox's own, as the service writes its metadata,
// and a hostile one made of the same record shapes (the sandbox's builders) whose every text an
// attacker wrote: titles, bodies, labels, logins, file names. The hostile archive passes
// `archive verify`: what it tries is in its metadata, never in the names of its members.

type Json = Record<string, any>;

/** The sandbox's archive of two repositories of octo-org, each with 3 issues and 3 pull requests. */
export const viewSandboxArchive = () => sandboxArchive(['Hello-World', 'widgets']);

/** Every record of the archive's metadata files, by kind (`issues`, `pull_requests`, …), read with the system's tar, not the product. */
export async function archiveRecords(archive: string): Promise<Map<string, Json[]>> {
  const dir = await untarred(archive);
  const kinds = new Map<string, Json[]>();
  for (const name of readdirSync(dir).sort()) {
    const kind = /^([a-z_]+)_\d{6}\.json$/.exec(name)?.[1];
    if (!kind) continue;
    kinds.set(kind, [...(kinds.get(kind) ?? []), ...(JSON.parse(readFileSync(join(dir, name), 'utf8')) as Json[])]);
  }
  return kinds;
}

/** A global the archive's scripts would set, were any of them run: the page must never have it. */
export const PWNED = 'pwned';
const RUN = `window.${PWNED}=1;alert(1)`;

export const HOSTILE_TEXT = {
  script: `<script>${RUN}</script>`,
  attribute: `"><img src=x onerror="${RUN}">`,
  title: `</title><script>${RUN}</script>`,
  bidi: 'invoice\u202Egnp.exe',
  control: 'bell\u0007 escape\u001b[31mred\u001b[0m backspace\u0008 nul\u0000',
  zeroWidth: 'zero\u200Dwidth\u200Bspace\u2060joiner',
};

/** Markdown trying everything the renderer must refuse: raw HTML, links to scripts, paths out of the site. */
const HOSTILE_MARKDOWN = [
  'Hostile body. See #3, #999 and https://sandbox.invalid/acme/r/issues/1.',
  '',
  `[x](javascript:${RUN}) [X](JaVaScRiPt:${RUN}) [tab](java\tscript:${RUN}) [entity](&#106;avascript:${RUN})`,
  `[y](data:text/html,<script>${RUN}</script>) [v](vbscript:msgbox(1)) [f](file:///etc/passwd)`,
  '[t](tarball://root/../../x) [up](../../../../../../../../etc/passwd) [abs](/etc/passwd) [self](//evil.example/x)',
  `![i](javascript:${RUN}) ![d](data:image/svg+xml,<svg onload="${RUN}">) ![outside](tarball://root/attachments/../../evil.html)`,
  `<javascript:${RUN}>`,
  '',
  `<script>${RUN}</script>`,
  '',
  `<div onmouseover="${RUN}">a raw HTML block</div>`,
  '',
  `<img src=x onerror="${RUN}"> <svg onload="${RUN}"></svg> <iframe src="javascript:${RUN}"></iframe>`,
  '',
  `<a href="javascript:${RUN}">a raw link</a> <form action="https://evil.example/"><button>go</button></form>`,
  '',
  `<meta http-equiv="refresh" content="0;url=javascript:${RUN}"> <base href="https://evil.example/"> <style>body{display:none}</style>`,
  '',
  `${HOSTILE_TEXT.title} ${HOSTILE_TEXT.attribute} ${HOSTILE_TEXT.bidi} ${HOSTILE_TEXT.control} ${HOSTILE_TEXT.zeroWidth}`,
].join('\n');

const WEB = 'https://sandbox.invalid';
const LOGINS = [HOSTILE_TEXT.script, HOSTILE_TEXT.attribute, `mona${HOSTILE_TEXT.bidi}`, `hu${HOSTILE_TEXT.zeroWidth}bot`];
const { script, attribute, bidi, zeroWidth, control, title } = HOSTILE_TEXT;
const LABEL_NAMES = [script, attribute, bidi, zeroWidth, control, title];
const LABEL_COLORS = [
  '"><script>window.pwned=1</script>',
  'd73a4a;background-image:url(https://evil.example/x)',
  'red" onmouseover="alert(1)',
  'zzzzzz',
  '',
  '0075ca',
];

/** What a hostile archive holds besides its bytes: where its path-like names point, to look there after. */
export interface HostileArchive {
  archive: string;
  /** An absolute path (in the archive's directory) a record names as a file's name: nothing may be written there. */
  absoluteName: string;
}

/**
 * The hostile archive, in a directory of its own: acme/r (a real repository) with 3 issues and 2
 * pull requests made by the sandbox's builders, every text replaced by an attacker's, attachments
 * and release assets whose records name them `../../…` and by an absolute path, and an attachment
 * that is an HTML page, and one an SVG drawing, with a script in it.
 */
export function hostileViewArchive(): HostileArchive {
  const dir = mkdtempSync(join(tmpdir(), 'svc-view-hostile-'));
  const absoluteName = join(dir, 'absolute-escape.html');
  const bases = { api: 'https://api.sandbox.invalid', web: WEB };
  const org: SeedOrganization = { login: 'acme', id: 1, owners: [], members: [], repositories: [] };
  const seed = { name: 'r', issues: 3, pull_requests: 2 };
  const repo = repositoryObject(org, seed, bases);
  const people: Person[] = LOGINS.map((login, index) => ({ login, id: index + 1, url: `${WEB}/${login}` }));
  const ctx = repoContext(repo, seed, people);

  const repository = repositoryRecord(ctx, false);
  const labelUrls = new Map<string, { url: string; name: string }>();
  repository.labels = (repository.labels as Json[]).map((label, index) => {
    const name = LABEL_NAMES[index % LABEL_NAMES.length]!;
    const renamed = { url: `${ctx.url}/labels/${name}`, name };
    labelUrls.set(label.url as string, renamed);
    return { ...label, ...renamed, color: LABEL_COLORS[index % LABEL_COLORS.length], description: HOSTILE_TEXT.script };
  });
  repository.description = HOSTILE_TEXT.attribute;
  const relabel = (urls: string[]) => urls.map((url) => labelUrls.get(url)?.url ?? url);
  const hostileBody = (record: Json) => ({ ...record, body: `${HOSTILE_MARKDOWN}\n\n${(record.body as string | undefined) ?? ''}` });
  const titles = [HOSTILE_TEXT.title, HOSTILE_TEXT.script, HOSTILE_TEXT.attribute, HOSTILE_TEXT.bidi];
  const titled = (record: Json, index: number) => ({
    ...hostileBody(record),
    title: titles[index % titles.length],
    labels: relabel(record.labels as string[]),
  });
  const hunk = `@@ -0,0 +1,3 @@\n+<script>${RUN}</script>\n-</pre><img src=x onerror="${RUN}">\n+${HOSTILE_TEXT.bidi}`;
  const placed = (record: Json) => ({ ...hostileBody(record), diff_hunk: hunk, path: `../../${HOSTILE_TEXT.attribute}.js` });

  const attachments = attachmentsOf(ctx).map((attachment, index) => named(attachment, index === 0 ? '../../../../../../evil.html' : absoluteName));
  const page = activeAttachment(ctx.url, `${ctx.url}/issues/1`, 'page.html', 'text/html', `<!doctype html><title>page</title><script>${RUN}</script><p>an HTML attachment</p>\n`);
  const drawing = activeAttachment(ctx.url, `${ctx.url}/issues/1`, 'drawing.svg', 'image/svg+xml', `<svg xmlns="http://www.w3.org/2000/svg" onload="${RUN}"><script>${RUN}</script></svg>\n`);
  attachments.push(page, drawing);

  const releases = releasesOf(ctx).map(({ record, files }) => ({
    record: {
      ...record,
      name: HOSTILE_TEXT.title,
      tag_name: HOSTILE_TEXT.attribute,
      body: HOSTILE_MARKDOWN,
      release_assets: (record.release_assets as Json[]).map((asset, index) => ({
        ...asset,
        name: index === 0 ? '../../../../../../evil.html' : absoluteName,
        label: HOSTILE_TEXT.script,
        asset_url: index === 0 ? `tarball://root/releases/${asset.guid as string}/../../../../../evil.html` : `tarball://root${absoluteName}`,
      })),
    },
    files,
  }));

  const kinds: [string, Json[]][] = [
    ['users', people.map((person, index) => ({ ...userRecord(person, index, WEB), name: HOSTILE_TEXT.title, bio: HOSTILE_MARKDOWN }))],
    ['organizations', [{ ...organizationRecord(repo.owner, people, 1), description: HOSTILE_TEXT.script }]],
    ['repositories', [repository]],
    ['milestones', milestoneRecords(ctx).map((milestone) => ({ ...milestone, title: HOSTILE_TEXT.title, description: HOSTILE_MARKDOWN }))],
    // The first issue links the HTML attachment, as a body links what was attached to it.
    ['issues', [...issueRecords(ctx)].map(titled).map((issue, index) => (index === 0 ? { ...issue, body: `${issue.body}\n\n[the page](${page.record.url as string}) ![a drawing](${drawing.record.url as string})` } : issue))],
    ['pull_requests', [...pullRequestRecords(ctx)].map((record, index) => ({ ...titled(record, index + 1), head: { ...(record.head as Json), ref: HOSTILE_TEXT.attribute } }))],
    ['issue_comments', [...issueCommentRecords(ctx)].map(hostileBody)],
    ['issue_events', [...issueEventRecords(ctx)].map((event) => {
      const label = labelUrls.get(event.label as string);
      return label ? { ...event, label: label.url, label_name: label.name, label_color: LABEL_COLORS[0] } : event.event === 'renamed' ? { ...event, title_was: HOSTILE_TEXT.script } : event;
    })],
    ['pull_request_reviews', [...reviewRecords(ctx)].map(hostileBody)],
    ['pull_request_review_threads', [...reviewThreadRecords(ctx)].map(placed)],
    ['pull_request_review_comments', [...reviewCommentRecords(ctx)].map(placed)],
    ['releases', releases.map((release) => release.record)],
    ['attachments', attachments.map((attachment) => attachment.record)],
  ];
  const git = realRepository();
  const bytes = tarGz(
    member({ name: 'schema.json' }, '{"version":"1.2.0"}'),
    ...kinds.map(([kind, records]) => member({ name: `${kind}_000001.json` }, `${JSON.stringify(records, null, 2)}\n`)),
    ...repositoryMembers(git.files),
    ...attachments.map((attachment) => member({ name: attachment.path }, attachment.data)),
    ...releases.flatMap((release) => release.files.map((file) => member({ name: file.path }, file.data))),
  );
  const archive = join(dir, 'hostile.tar.gz');
  writeFileSync(archive, bytes);
  return { archive, absoluteName };
}

/** The attachment with its record naming it `name` (its member keeps its safe path) and its `asset_url` pointing there. */
function named(attachment: Attachment, name: string): Attachment {
  const directory = attachment.path.slice(0, attachment.path.lastIndexOf('/'));
  const assetUrl = name.startsWith('/') ? `tarball://root${name}` : `tarball://root/${directory}/${name}`;
  return { ...attachment, record: { ...attachment.record, asset_name: name, asset_url: assetUrl } };
}

/** An attachment whose file runs a script when a browser opens it (HTML, SVG): opened from the site, it must not run. */
function activeAttachment(repositoryUrl: string, issueUrl: string, name: string, contentType: string, content: string): Attachment {
  const uuid = uuidOf(`${repositoryUrl}/${name}`);
  const path = `attachments/${uuid}/${name}`;
  return {
    path,
    data: Buffer.from(content),
    record: {
      type: 'attachment',
      url: `${WEB}/user-attachments/assets/${uuid}`,
      issue: issueUrl,
      user: `${WEB}/${LOGINS[0]!}`,
      asset_name: name,
      asset_content_type: contentType,
      asset_url: `tarball://root/${path}`,
      created_at: '2024-01-01T00:00:00Z',
    },
  };
}
