import type { ViewReport } from '../../src/core/view/site.js';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { get } from 'node:http';
import { dirname, join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { untilInDirectory } from '../helpers/fs-events.js';
import { untarred } from '../helpers/git-remotes.js';
import { GIT_SETUP } from '../helpers/restore-archives.js';
import { runCli } from '../helpers/run-cli.js';
import { sandboxArchive } from '../helpers/sandbox.js';

// `archive view ARCHIVE -o DIR` in-process on the sandbox's archives: the site's pages against the
// metadata read independently (tar, then JSON.parse of every file), hostile text shown escaped, the
// banner of --no-verify, and nothing written for an archive that fails verification.

type Json = Record<string, any>;

/** An attachment's name of markup and URL syntax (`<`, `"`, `#`, `?`, `%`): the archive check lets it through. */
const ATTACHMENT_NAME = '<img src=x onerror=alert(1)> "q" #?%.png';
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-view-test-'));
const view = (args: string[], signal?: AbortSignal) => runCli(['archive', 'view', ...args], { env: GIT_SETUP, ...(signal ? { signal } : {}) });

/** Every record of a kind in an untarred archive, read with JSON.parse, file by file. */
function records(tree: string, kind: string): Json[] {
  return readdirSync(tree).filter((name) => name.startsWith(`${kind}_`) && name.endsWith('.json')).sort()
    .flatMap((name) => JSON.parse(readFileSync(join(tree, name), 'utf8')) as Json[]);
}

function filesUnder(dir: string): string[] {
  const found: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else found.push(relative(dir, path));
    }
  };
  walk(dir);
  return found.sort();
}

/** `owner/repo` and number of a record URL. */
function placeOf(url: string): { repository: string; number: number } {
  const [owner, name, , number] = new URL(url).pathname.split('/').slice(1);
  return { repository: `${owner}/${name}`, number: Number(number) };
}

/** An archive with its metadata changed by `change`, packed again by GNU tar. */
async function changedArchive(archive: string, change: (tree: string) => void): Promise<string> {
  const tree = await untarred(archive);
  change(tree);
  const out = join(tempDir(), 'changed.tar.gz');
  execFileSync('tar', ['czf', out, '-C', tree, ...readdirSync(tree)]);
  return out;
}

/** The status of GET `url` sent with this Host (fetch sends its own, whatever it is given). */
function statusWithHost(url: string, host: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { host } }, (response) => {
      response.resume();
      resolve(response.statusCode);
    }).on('error', reject);
  });
}

function rewrite(tree: string, kind: string, change: (records: Json[]) => void): void {
  const name = readdirSync(tree).find((file) => file.startsWith(`${kind}_`)) as string;
  const list = JSON.parse(readFileSync(join(tree, name), 'utf8')) as Json[];
  change(list);
  writeFileSync(join(tree, name), JSON.stringify(list));
}

describe('archive view', () => {
  let archive: string;
  let tree: string;
  let site: string;
  let report: ViewReport;
  beforeAll(async () => {
    archive = await sandboxArchive(['widgets', 'Hello-World']);
    tree = await untarred(archive);
    site = join(tempDir(), 'site');
    const result = await view([archive, '-o', site, '--json']);
    expect(result.code, result.stderr).toBe(0);
    report = JSON.parse(result.stdout) as ViewReport;
  }, 120_000);

  it('writes every page, with the counts of the metadata\'s records', () => {
    const issues = records(tree, 'issues');
    const pulls = records(tree, 'pull_requests');
    expect(report.verified).toBe(true);
    expect(report.repositories.map((repo) => repo.name).sort()).toEqual(records(tree, 'repositories').map((repo) => repo.full_name).sort());
    const pages = new Set(filesUnder(site).filter((path) => path.endsWith('.html')));
    expect(pages.has('index.html')).toBe(true);
    for (const repo of report.repositories) {
      const of = (list: Json[], field = 'repository') => list.filter((record) => placeOf(record[field] ?? record.url).repository === repo.name);
      const ofItem = (list: Json[]) => list.filter((record) => placeOf(record.pull_request ?? record.issue).repository === repo.name);
      expect(repo.issues, repo.name).toBe(of(issues).length);
      expect(repo.pull_requests, repo.name).toBe(of(pulls).length);
      expect(repo.releases, repo.name).toBe(of(records(tree, 'releases')).length);
      expect(repo.milestones, repo.name).toBe(of(records(tree, 'milestones')).length);
      expect(repo.comments, repo.name).toBe(ofItem(records(tree, 'issue_comments')).length);
      expect(repo.reviews, repo.name).toBe(ofItem(records(tree, 'pull_request_reviews')).length);
      expect(repo.review_comments, repo.name).toBe(ofItem(records(tree, 'pull_request_review_comments')).length);
      for (const list of ['index.html', 'pulls.html', 'releases.html', 'milestones.html']) expect(pages.has(`${repo.name}/${list}`), list).toBe(true);
      for (const issue of of(issues)) expect(pages.has(`${repo.name}/issues/${placeOf(issue.url).number}.html`)).toBe(true);
      for (const pull of of(pulls)) expect(pages.has(`${repo.name}/pulls/${placeOf(pull.url).number}.html`)).toBe(true);

      // The index's counts, as a reader sees them.
      const index = readFileSync(join(site, 'index.html'), 'utf8');
      const row = new RegExp(`<tr data-repository="${repo.name}">(.*?)</tr>`).exec(index)?.[1] ?? '';
      const cell = (kind: string) => Number(new RegExp(`data-count="${kind}"><a [^>]*>(\\d+)<`).exec(row)?.[1]);
      expect(cell('issues-open') + cell('issues-closed')).toBe(repo.issues);
      expect(cell('pulls-open')).toBe(of(pulls).filter((pull) => !pull.closed_at).length);
      expect(cell('pulls-merged')).toBe(of(pulls).filter((pull) => pull.merged_at).length);
      expect(cell('pulls-open') + cell('pulls-merged') + cell('pulls-closed')).toBe(repo.pull_requests);
      expect(cell('releases')).toBe(repo.releases);
      expect(cell('milestones')).toBe(repo.milestones);
    }
    expect(report.pages).toBe(pages.size);
  });

  it('shows each comment, review comment and diff hunk on its page, in order, and links #123 and attachments', () => {
    const html = (path: string) => readFileSync(join(site, path), 'utf8');
    const escaped = (text: string) => text.replace(/&/g, '&#38;').replace(/</g, '&#60;').replace(/>/g, '&#62;').replace(/"/g, '&#34;').replace(/'/g, '&#39;');
    const comment = records(tree, 'issue_comments').find((one) => one.body.startsWith('Merci'))!;
    const { repository, number } = placeOf(comment.issue ?? comment.pull_request);
    expect(html(`${repository}/issues/${number}.html`)).toContain('Merci ! Ça marche maintenant.');

    const reviewComment = records(tree, 'pull_request_review_comments')[0]!;
    const at = placeOf(reviewComment.pull_request);
    const pullPage = html(`${at.repository}/pulls/${at.number}.html`);
    expect(pullPage).toContain(escaped(reviewComment.body.split('\n')[0]));
    for (const line of String(reviewComment.diff_hunk).split('\n')) expect(pullPage).toContain(escaped(line));
    expect(pullPage).toMatch(/<pre class="diff"><span class="hunk">@@/);

    const first = html('octo-org/widgets/issues/1.html');
    expect(first).toContain('<a href="../../../octo-org/widgets/pulls/3.html">#3</a>');
    expect(first).toContain('<a href="../../../octo-org/widgets/issues/2.html">#2</a>');
    const image = /<img src="([^"]+)" alt="screenshot of the archive">/.exec(first)?.[1];
    expect(image).toMatch(/^\.\.\/\.\.\/\.\.\/files\/attachments\/[0-9a-f-]+\/screenshot\.png$/);
    const copied = join(site, 'octo-org/widgets/issues', image!);
    expect(readFileSync(copied).subarray(1, 4).toString()).toBe('PNG');
    const releases = html('octo-org/widgets/releases.html');
    const asset = /<a href="(\.\.\/\.\.\/files\/releases\/[^"]+\/logo\.png)">logo\.png<\/a>/.exec(releases)?.[1];
    expect(asset && existsSync(join(site, 'octo-org/widgets', asset))).toBe(true);
  });

  it('carries the policy on every page and runs no inline script nor style', () => {
    for (const path of filesUnder(site).filter((file) => file.endsWith('.html'))) {
      const html = readFileSync(join(site, path), 'utf8');
      expect(html, path).toContain('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; script-src \'self\'; style-src \'self\'; img-src \'self\'; base-uri \'none\'; form-action \'none\'">');
      expect(html, path).not.toMatch(/<script(?![^>]*\bsrc=)/);
      expect(html, path).not.toMatch(/\sstyle=|\son[a-z]+=/i);
      expect(html, path).not.toContain('NOT verified');
    }
    expect(existsSync(join(site, 'assets/site.js'))).toBe(true);
    expect(readFileSync(join(site, 'assets/site.css'), 'utf8')).toContain('.c-d73a4a');
  });

  it('shows hostile titles, bodies, labels and logins as text', async () => {
    const hostile = await changedArchive(archive, (at) => {
      rewrite(at, 'issues', (list) => {
        list[0]!.title = '<script>alert(1)</script>';
        const screenshot = /!\[screenshot of the archive\]\([^)]+\)/.exec(list[0]!.body)![0];
        list[0]!.body = screenshot + ' [x](javascript:alert(1)) <img src=x onerror=alert(2)> [d](data:text/html,hi) \u202eevil';
      });
      rewrite(at, 'repositories', (list) => {
        for (const repo of list) for (const label of repo.labels) if (label.name === 'bug') label.name = '</title><script>alert(3)</script>';
      });
      rewrite(at, 'users', (list) => {
        list[0]!.login = '<b onmouseover=alert(4)>x</b>';
      });
      // A comment of an issue the archive does not hold, and one whose URL names a repository `..`.
      rewrite(at, 'issue_comments', (list) => {
        const [last, before] = [list.at(-1)!, list.at(-2)!];
        last.issue = 'https://sandbox.invalid/octo-org/widgets/issues/99999';
        delete last.pull_request;
        before.issue = 'https://sandbox.invalid/octo-org/%2e%2e/issues/1';
        delete before.pull_request;
      });
      // The screenshot of the first issue, renamed to a name of markup and URL syntax.
      rewrite(at, 'attachments', (list) => {
        const shot = list.find((one) => one.asset_name === 'screenshot.png')!;
        const old = String(shot.asset_url).slice('tarball://root/'.length);
        const renamed = `${dirname(old)}/${ATTACHMENT_NAME}`;
        renameSync(join(at, old), join(at, renamed));
        shot.asset_url = `tarball://root/${renamed}`;
      });
    });
    const out = join(tempDir(), 'site');
    const result = await view([hostile, '-o', out]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('warning: 2 records of the metadata name no repository, issue or pull request the archive holds');
    expect(filesUnder(out).filter((path) => !/^(index\.html|assets\/site\.(js|css)|files\/(attachments|releases)\/[\w-]+\/[^/]+|octo-org\/(widgets|Hello-World)\/([a-z]+\.html|(issues|pulls)\/\d+\.html))$/.test(path))).toEqual([]);
    const title = '&#60;script&#62;alert(1)&#60;/script&#62;';
    for (const path of filesUnder(out).filter((file) => file.endsWith('.html'))) {
      const html = readFileSync(join(out, path), 'utf8');
      expect(html, path).not.toMatch(/<script(?![^>]*\bsrc=)|<img src=x|<[a-z][^>]*\son[a-z]+=|href="(?:javascript|data):/i);
      expect(html.match(/<\/title>/g), path).toHaveLength(1);
    }
    const page = readFileSync(join(out, 'octo-org/widgets/issues/1.html'), 'utf8');
    expect(page).toContain(`<title>${title} · #1 · octo-org/widgets</title>`);
    expect(page).toContain('[x](javascript:alert(1))');
    expect(page).toContain('&lt;img src=x onerror=alert(2)&gt;');
    expect(page).toContain('\\u202eevil');
    expect(page).toContain('&#60;/title&#62;&#60;script&#62;alert(3)&#60;/script&#62;');
    expect(page).toContain('&#60;b onmouseover=alert(4)&#62;x&#60;/b&#62;');
    const image = /<img src="([^"]+)" alt="screenshot of the archive">/.exec(readFileSync(join(out, 'octo-org/widgets/issues/1.html'), 'utf8'))?.[1];
    expect(image).toMatch(/\/%3Cimg%20src%3Dx%20onerror%3Dalert\(1\)%3E%20%22q%22%20%23%3F%25\.png$/);
    expect(readFileSync(join(out, 'octo-org/widgets/issues', decodeURIComponent(image!))).subarray(1, 4).toString()).toBe('PNG');
  }, 120_000);

  it('--no-verify: every page says the archive was NOT verified', async () => {
    const out = join(tempDir(), 'site');
    const result = await view([archive, '-o', out, '--no-verify', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as ViewReport).verified).toBe(false);
    for (const path of filesUnder(out).filter((file) => file.endsWith('.html'))) {
      expect(readFileSync(join(out, path), 'utf8'), path).toContain('<p class="banner" role="alert">this archive was NOT verified');
    }
  }, 120_000);

  it('exit 9 for an archive that fails verification, and nothing written', async () => {
    const bytes = readFileSync(archive);
    const parent = tempDir();
    const damaged = join(tempDir(), 'damaged.tar.gz');
    writeFileSync(damaged, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const result = await view([damaged, '-o', join(parent, 'site')]);
    expect(result.code, result.stderr).toBe(9);
    expect(result.stderr).toContain('failed verification');
    expect(readdirSync(parent)).toEqual([]);

    // Read anyway with --no-verify: what could be read, every page saying it was not verified.
    const anyway = await view([damaged, '-o', join(parent, 'site'), '--no-verify', '--json']);
    expect(anyway.code, anyway.stderr).toBe(0);
    expect(JSON.parse(anyway.stdout).verified).toBe(false);
    expect(readFileSync(join(parent, 'site/index.html'), 'utf8')).toContain('this archive was NOT verified');
  }, 120_000);

  it('a metadata file cut short: exit 9, and with --no-verify its records before the cut shown, the file named', async () => {
    let first: Json | undefined;
    const cut = await changedArchive(archive, (at) => {
      const name = readdirSync(at).find((file) => file.startsWith('issue_comments_'))!;
      const list = JSON.parse(readFileSync(join(at, name), 'utf8')) as Json[];
      first = list[0];
      const text = JSON.stringify(list);
      writeFileSync(join(at, name), text.slice(0, JSON.stringify(list[0]).length + 40));
    });
    const parent = tempDir();
    expect((await view([cut, '-o', join(parent, 'site')])).code).toBe(9);
    expect(readdirSync(parent)).toEqual([]);
    const anyway = await view([cut, '-o', join(parent, 'site'), '--no-verify']);
    expect(anyway.code, anyway.stderr).toBe(0);
    expect(anyway.stderr).toMatch(/warning: issue_comments_000001\.json was read only in part/);
    const { repository, number } = placeOf(first!.issue ?? first!.pull_request);
    const page = readFileSync(join(parent, 'site', repository, first!.issue ? 'issues' : 'pulls', `${number}.html`), 'utf8');
    // The longest run of its first line that Markdown leaves as it is.
    const plain = String(first!.body).split('\n')[0]!.split(/#\d+|[`*[\]()<>&'"]/).sort((a, b) => b.length - a.length)[0]!.trim();
    expect(plain.length).toBeGreaterThan(5);
    expect(page).toContain(plain);
  }, 120_000);

  it('exit 9 for a record over 1 MiB (two values of 600 KiB: each one within what verify reads), and nothing written', async () => {
    const large = await changedArchive(archive, (at) => rewrite(at, 'issue_comments', (list) => {
      list[0]!.body = 'a'.repeat(600 << 10);
      list[0]!.extra = 'b'.repeat(600 << 10);
    }));
    const parent = tempDir();
    const result = await view([large, '-o', join(parent, 'site')]);
    expect(result.code, result.stderr).toBe(9);
    expect(result.stderr).toContain('holds a record over 1 MiB long');
    expect(readdirSync(parent)).toEqual([]);
  }, 120_000);

  it('Ctrl-C once the work has begun: exit 130, and nothing left in or beside DIR', async () => {
    const parent = tempDir();
    const stop = new AbortController();
    const begun = untilInDirectory(parent, () => readdirSync(parent).some((name) => name.startsWith('.site.viewing-')));
    const running = view([archive, '-o', join(parent, 'site')], stop.signal);
    await begun;
    stop.abort();
    expect((await running).code).toBe(130);
    expect(readdirSync(parent)).toEqual([]);
  }, 120_000);

  it('refuses a DIR that is not empty (exit 2), and --force writes the site there, leaving the rest', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'mine.txt'), 'keep');
    const refused = await view([archive, '-o', dir]);
    expect(refused.code).toBe(2);
    expect(readdirSync(dir)).toEqual(['mine.txt']);
    const forced = await view([archive, '-o', dir, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(join(dir, 'mine.txt'), 'utf8')).toBe('keep');
    expect(existsSync(join(dir, 'octo-org/widgets/pulls/3.html'))).toBe(true);
    expect(readdirSync(dir).filter((name) => name.startsWith('.'))).toEqual([]);
  }, 120_000);

  it('--serve: the site on 127.0.0.1 with the policy as a header, only files under DIR, until Ctrl-C (exit 0)', async () => {
    const out = join(tempDir(), 'site');
    const stop = new AbortController();
    let url: (value: string) => void;
    const served = new Promise<string>((resolve) => (url = resolve));
    const running = runCli(['archive', 'view', archive, '-o', out, '--serve', '--json'], {
      env: GIT_SETUP,
      signal: stop.signal,
      onStdout: (text) => {
        const found = /"url":"(http:\/\/127\.0\.0\.1:\d+\/)"/.exec(text)?.[1];
        if (found) url(found);
      },
    });
    const base = await served;
    const page = await fetch(`${base}octo-org/widgets/pulls/3.html`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe('default-src \'none\'; script-src \'self\'; style-src \'self\'; img-src \'self\'; base-uri \'none\'; form-action \'none\'');
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await page.text()).toContain('<pre class="diff">');
    expect((await fetch(base)).status).toBe(200);
    for (const path of ['..%2f..%2fetc%2fpasswd', '%2e%2e/x', 'octo-org/', 'nothing.html']) expect((await fetch(`${base}${path}`)).status, path).toBe(404);
    const image = /src="\.\.\/\.\.\/\.\.\/(files\/attachments\/[^"]+\.png)"/.exec(await (await fetch(`${base}octo-org/widgets/issues/1.html`)).text())?.[1];
    expect((await fetch(`${base}${image}`)).headers.get('content-type')).toBe('image/png');
    const log = await fetch(`${base}${readdirSync(join(out, 'files/attachments')).map((id) => `files/attachments/${id}/build-log.txt`).find((path) => existsSync(join(out, path)))}`);
    expect(log.headers.get('content-type')).toBe('application/octet-stream');
    expect(log.headers.get('content-disposition')).toBe('attachment');
    expect(await statusWithHost(base, 'evil.example')).toBe(403);
    expect(await statusWithHost(base, 'localhost')).toBe(200);
    stop.abort();
    expect((await running).code).toBe(0);
  }, 120_000);
});
