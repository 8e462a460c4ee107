import type { ViewReport } from '../../src/core/view/site.js';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { untarred } from '../helpers/git-remotes.js';
import { chromiumPath } from '../helpers/inspector.js';
import { GIT_SETUP } from '../helpers/restore-archives.js';
import { BIN, leftIn, spawnCli } from '../helpers/run-cli.js';
import { archiveRecords, HOSTILE_TEXT, type HostileArchive, hostileViewArchive, PWNED, viewSandboxArchive } from '../helpers/view-archives.js';

// `archive view ARCHIVE -o DIR` (issue 47, docs/cli.md) read in headless Chromium (Debian's
// package, driven by playwright-core as the inspector's tests are), from file:// with no server:
// the sandbox's archive walked as a reader walks it, its counts held to the metadata read with the
// system's tar; then a hostile archive, every page of whose site must run no script of the archive,
// break no rule of its Content-Security-Policy, link nowhere but the web and the site, and leave
// nothing outside DIR.

// What the callbacks that run in the page see (this project compiles without the DOM's types).
declare const window: any;
declare const document: any;
declare const getComputedStyle: any;

type Json = Record<string, any>;

const CHROMIUM = chromiumPath();
const SKIPPED = CHROMIUM ? '' : ' (skipped: no Chromium on this machine; `apt-get install chromium`, as .ci/run does)';
const CSP = 'default-src \'none\'; script-src \'self\'; style-src \'self\'; img-src \'self\'; base-uri \'none\'; form-action \'none\'';
const RUN_CEILING_MS = 120_000;
/** Characters that must never reach a page raw: C0 controls but tab and newlines, DEL and C1, zero-width, direction marks and overrides. */
const UNSAFE_CHARACTERS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/u;

const view = (archive: string, dir: string, env: Record<string, string> = {}) =>
  spawnCli(['archive', 'view', archive, '-o', dir, '--json'], { env: { ...GIT_SETUP, ...env }, timeoutMs: RUN_CEILING_MS });

async function viewed(archive: string, dir: string): Promise<ViewReport> {
  const result = await view(archive, dir);
  if (result.code !== 0) throw new Error(`archive view exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as ViewReport;
}

/** Every file under `dir`, relative to it, sorted; `skip` leaves a subtree out. */
function filesUnder(dir: string, skip: (path: string) => boolean = () => false): string[] {
  const found: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (skip(relative(dir, path))) continue;
      if (statSync(path).isDirectory()) walk(path);
      else found.push(relative(dir, path));
    }
  };
  walk(dir);
  return found.sort();
}

/** The metadata of one repository, by its page's URL, and what the site must count of it. */
function countsOf(records: Map<string, Json[]>, repositoryUrl: string) {
  const of = (kind: string) => (records.get(kind) ?? []).filter((record) => record.repository === repositoryUrl);
  const issues = of('issues');
  const pulls = of('pull_requests');
  const pullUrls = new Set(pulls.map((pull) => pull.url as string));
  const issueUrls = new Set(issues.map((issue) => issue.url as string));
  const reviews = (records.get('pull_request_reviews') ?? []).filter((review) => pullUrls.has(review.pull_request as string));
  return {
    issues,
    pulls,
    issuesOpen: issues.filter((issue) => issue.closed_at === null).length,
    issuesClosed: issues.filter((issue) => issue.closed_at !== null).length,
    pullsOpen: pulls.filter((pull) => pull.closed_at === null).length,
    pullsMerged: pulls.filter((pull) => pull.merged_at !== null).length,
    pullsClosed: pulls.filter((pull) => pull.closed_at !== null && pull.merged_at === null).length,
    releases: of('releases').length,
    milestones: of('milestones').length,
    comments: (records.get('issue_comments') ?? []).filter((comment) => issueUrls.has(comment.issue as string) || pullUrls.has(comment.pull_request as string)).length,
    reviews: reviews.length,
    reviewComments: (records.get('pull_request_review_comments') ?? []).filter((comment) => pullUrls.has(comment.pull_request as string)).length,
  };
}

let browser: Browser;
const contexts: BrowserContext[] = [];

interface Watched {
  page: Page;
  dialogs: string[];
  /** Console messages and page errors that speak of the Content-Security-Policy. */
  cspMessages: string[];
  errors: string[];
}

/**
 * A page in a fresh context that records every dialog (dismissed), every CSP violation (the
 * `securitypolicyviolation` event, through an init script, which Playwright injects past the
 * page's CSP, as the inspector's tests do; and Chromium's console report of it) and every error.
 */
async function watchedPage(options: { javaScriptEnabled?: boolean } = {}): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true, ...options });
  contexts.push(context);
  await context.addInitScript(() => {
    const w = window as { violations: string[] };
    w.violations = [];
    document.addEventListener('securitypolicyviolation', (event: any) => w.violations.push(`${event.violatedDirective} ${event.blockedURI}`));
  });
  const page = await context.newPage();
  // What a page waits for is on it at once (the site is static): a missing element fails here, named, not at the test's ceiling.
  page.setDefaultTimeout(5_000);
  const watched: Watched = { page, dialogs: [], cspMessages: [], errors: [] };
  page.on('dialog', (dialog) => {
    watched.dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('console', (message) => {
    if (/Content.Security.Policy/i.test(message.text())) watched.cspMessages.push(message.text());
    else if (message.type() === 'error') watched.errors.push(message.text());
  });
  page.on('pageerror', (error) => watched.errors.push(error.message));
  return watched;
}

/** What the page ran or refused: the archive's global, the CSP violations it saw. */
const pageState = (page: Page) => page.evaluate((global) => ({ ran: global in window, violations: window.violations as string[] }), PWNED);

const fileUrl = (path: string) => pathToFileURL(path).href;
const pathOf = (url: string) => fileURLToPath(url.replace(/[?#].*$/, ''));

/** The visible rows of the page's list (the `<table>` with data attributes the script filters). */
const visibleRows = (page: Page) =>
  page.$$eval('table tbody tr', (rows) => rows.filter((row: any) => row.checkVisibility()).map((row: any) => row.textContent.replace(/\s+/g, ' ').trim() as string));

/** The numbers (`#12`) of rows as `visibleRows` gives them, in order. */
const visibleNumbers = (rows: string[]) => rows.map((row) => Number(/#(\d+)/.exec(row)?.[1])).sort((a, b) => a - b);

/** Each `<a href>` and `<img src>` of the page, resolved against it. */
const linksOf = (page: Page) =>
  page.evaluate(() => ({
    anchors: [...document.querySelectorAll('a[href]')].map((a: any) => ({ href: a.getAttribute('href') as string, resolved: a.href as string })),
    images: [...document.querySelectorAll('img')].map((img: any) => ({ src: img.getAttribute('src') as string, resolved: img.src as string })),
    scripts: [...document.querySelectorAll('script')].map((script: any) => ({ src: script.getAttribute('src') as string | null, text: script.textContent as string })),
    inlineHandlers: [...document.querySelectorAll('*')].flatMap((element: any) => [...element.attributes].filter((attribute: any) => /^on/i.test(attribute.name) || attribute.name === 'style').map((attribute: any) => `${element.tagName} ${attribute.name}`)),
    csp: document.querySelector('meta[http-equiv="Content-Security-Policy" i]')?.getAttribute('content') as string | undefined,
    referrer: document.querySelector('meta[name="referrer"]')?.getAttribute('content') as string | undefined,
  }));

/** Whether `resolved` is a file under `dir`. */
function fileInside(resolved: string, dir: string): boolean {
  try {
    return new URL(resolved).protocol === 'file:' && pathOf(resolved).startsWith(dir + sep);
  } catch {
    // fileURLToPath refuses an encoded slash: no file of the site is named so.
    return false;
  }
}

/** Whether a link goes to the web, to mail, or to a file inside `dir`: nowhere else. */
function allowedLink(resolved: string, dir: string): boolean {
  const { protocol } = new URL(resolved);
  return protocol === 'http:' || protocol === 'https:' || protocol === 'mailto:' || fileInside(resolved, dir);
}

describe.skipIf(!CHROMIUM)(`archive view in headless Chromium${SKIPPED}`, () => {
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM });
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
  });

  describe('the sandbox\'s archive', () => {
    let archive: string;
    let dir: string;
    let report: ViewReport;
    let records: Map<string, Json[]>;
    let members: string;
    const hello = 'https://sandbox.invalid/octo-org/Hello-World';

    beforeAll(async () => {
      archive = await viewSandboxArchive();
      records = await archiveRecords(archive);
      members = await untarred(archive);
      dir = join(mkdtempSync(join(tmpdir(), 'svc-view-browser-')), 'site');
      report = await viewed(archive, dir);
    }, RUN_CEILING_MS);

    it('counts on the index and in the report what the archive\'s metadata holds', async () => {
      const repositories = records.get('repositories')!;
      expect(repositories.map((repository) => repository.full_name).sort()).toEqual(['octo-org/Hello-World', 'octo-org/widgets']);
      expect(report.verified).toBe(true);
      const { page } = await watchedPage();
      await page.goto(fileUrl(join(dir, 'index.html')));
      for (const repository of repositories) {
        const counts = countsOf(records, repository.url as string);
        expect(counts.issues.length).toBeGreaterThan(0);
        expect(report.repositories.find((row) => row.name === repository.full_name)).toEqual({
          name: repository.full_name,
          issues: counts.issues.length,
          pull_requests: counts.pulls.length,
          releases: counts.releases,
          milestones: counts.milestones,
          comments: counts.comments,
          reviews: counts.reviews,
          review_comments: counts.reviewComments,
        });
        // The repository's row: its link, then its counts in the contract's order.
        const numbers = await page.$eval(`tr:has(a[href$="${repository.full_name as string}/index.html"])`, (row: any) =>
          [...row.cells].map((cell: any) => cell.textContent.trim()).filter((text: string) => /^\d+$/.test(text)).map(Number));
        const { issuesOpen, issuesClosed, pullsOpen, pullsMerged, pullsClosed, releases, milestones } = counts;
        expect(numbers).toEqual([issuesOpen, issuesClosed, pullsOpen, pullsMerged, pullsClosed, releases, milestones]);
      }
    });

    it('walks from the index to a repository, an issue, a pull request with its reviews, the releases and an asset', async () => {
      const { page, errors } = await watchedPage();
      const counts = countsOf(records, hello);
      await page.goto(fileUrl(join(dir, 'index.html')));
      await page.click('a[href$="octo-org/Hello-World/index.html"]');
      expect(pathOf(page.url())).toBe(join(dir, 'octo-org', 'Hello-World', 'index.html'));
      expect(await visibleRows(page)).toHaveLength(counts.issues.length);

      // Issue 1: the first issue, with everything a body holds.
      const issue = counts.issues.find((record) => record.url === `${hello}/issues/1`)!;
      await page.click('a[href$="issues/1.html"]');
      expect(pathOf(page.url())).toBe(join(dir, 'octo-org', 'Hello-World', 'issues', '1.html'));
      expect(await page.textContent('h1')).toContain(issue.title);
      expect(await page.locator('table').count()).toBeGreaterThan(0);
      expect(await page.textContent('pre code')).toContain('console.log(name.normalize(\'NFC\') === name); // true');
      // Its task list: the contract asks for the items, not for GitHub's check boxes.
      expect(await page.textContent('body')).toContain('reproduced on the last release');
      // Its comments in order, each whole.
      const comments = records.get('issue_comments')!.filter((comment) => comment.issue === issue.url);
      expect(comments.length).toBe(2);
      const text = (await page.textContent('body'))!;
      const places = comments.map((comment) => text.indexOf((comment.body as string).split('\n')[0]!.replace(/`/g, '')));
      expect(places.every((place) => place >= 0)).toBe(true);
      expect([...places].sort((a, b) => a - b)).toEqual(places);
      // Its labels and events on the timeline.
      expect(text).toContain('bug');
      // Its events and comments on one timeline, by time.
      const events = records.get('issue_events')!.filter((event) => event.issue === issue.url);
      expect(events.map((event) => event.event)).toEqual(expect.arrayContaining(['labeled', 'milestoned', 'assigned']));
      const times = new Set([...events, ...comments].map((record) => new Date(record.created_at as string).toISOString()));
      const shownTimes = (await page.$$eval('time[datetime]', (found: any[]) => found.map((time) => new Date(time.getAttribute('datetime')).toISOString())))
        .filter((time) => times.has(time));
      expect(new Set(shownTimes)).toEqual(times);
      expect([...shownTimes].sort()).toEqual(shownTimes);
      // The screenshot it shows is the archive's file, copied under files/.
      const attachment = records.get('attachments')!.find((record) => record.asset_name === 'screenshot.png' && record.issue === issue.url)!;
      const image = await page.$eval('img', (img: any) => img.src as string);
      expect(pathOf(image).startsWith(join(dir, 'files', 'attachments') + sep)).toBe(true);
      expect(readFileSync(pathOf(image))).toEqual(readFileSync(join(members, (attachment.asset_url as string).slice('tarball://root/'.length))));
      // The log linked from its first comment, too.
      const log = await page.$eval('a[href*="build-log.txt"]', (a: any) => a.href as string);
      expect(readFileSync(pathOf(log), 'utf8')).toContain('export of octo-org/Hello-World');
      // #2 and #3 lead to their pages.
      const links = await linksOf(page);
      expect(links.anchors.map((a) => a.resolved)).toContain(fileUrl(join(dir, 'octo-org', 'Hello-World', 'issues', '2.html')));
      expect(links.anchors.map((a) => a.resolved)).toContain(fileUrl(join(dir, 'octo-org', 'Hello-World', 'pulls', '3.html')));

      // Pull request 3, from the issue's reference: its reviews and review comments, each with its diff hunk.
      await page.click('a[href$="pulls/3.html"]');
      expect(pathOf(page.url())).toBe(join(dir, 'octo-org', 'Hello-World', 'pulls', '3.html'));
      const pull = counts.pulls.find((record) => record.url === `${hello}/pull/3`)!;
      expect(await page.textContent('h1')).toContain(pull.title);
      const pullText = (await page.textContent('body'))!;
      const reviews = records.get('pull_request_reviews')!.filter((review) => review.pull_request === pull.url);
      expect(reviews.length).toBe(2);
      for (const review of reviews) expect(pullText).toContain((review.body as string).split('\n')[0]!.replace(/@\S+/, '').trim());
      const reviewComments = records.get('pull_request_review_comments')!.filter((comment) => comment.pull_request === pull.url);
      expect(reviewComments.length).toBe(2);
      const question = pullText.indexOf('Should this quote the name?');
      const answer = pullText.indexOf('Done: the name is quoted now.');
      expect(question).toBeGreaterThanOrEqual(0);
      expect(answer).toBeGreaterThan(question);
      expect(pullText).toContain('src/index.js');
      const hunks = await page.$$eval('pre', (pres: any[]) =>
        pres.filter((pre) => pre.textContent.includes('@@ -0,0 +1,2 @@')).map((pre) =>
          [...pre.querySelectorAll('*')].filter((line: any) => line.textContent.startsWith('+')).map((line: any) => [line.className, line.textContent]),
        ));
      expect(hunks.length).toBeGreaterThanOrEqual(1);
      for (const lines of hunks) {
        expect(lines).toContainEqual([expect.stringMatching(/\S/), '+export const name = "Hello-World";']);
      }
      const reviewImage = await page.$$eval('img', (images: any[]) => images.map((img) => img.src as string));
      expect(reviewImage.some((src) => /files\/attachments\/.*review\.png$/.test(src) && existsSync(pathOf(src)))).toBe(true);
      expect(pullText).toMatch(/merged/i);

      // Back to the repository, its releases, and an asset: the archive's file.
      await page.click('a[href$="octo-org/Hello-World/index.html"]');
      await page.click('a[href$="releases.html"]');
      expect(pathOf(page.url())).toBe(join(dir, 'octo-org', 'Hello-World', 'releases.html'));
      const releases = records.get('releases')!.filter((release) => release.repository === hello);
      for (const release of releases) expect(await page.textContent('body')).toContain(release.name);
      const asset = (releases.find((release) => release.tag_name === 'v1.0.0')!.release_assets as Json[]).find((item) => item.name === 'checksums.txt')!;
      const href = await page.$eval('a[href$="checksums.txt"]', (a: any) => a.href as string);
      expect(pathOf(href).startsWith(join(dir, 'files', 'releases') + sep)).toBe(true);
      await page.click('a[href$="checksums.txt"]');
      expect(await page.textContent('body')).toBe(readFileSync(join(members, (asset.asset_url as string).slice('tarball://root/'.length)), 'utf8'));

      await page.goto(fileUrl(join(dir, 'octo-org', 'Hello-World', 'milestones.html')));
      for (const milestone of records.get('milestones')!.filter((record) => record.repository === hello)) {
        expect(await page.textContent('body')).toContain(milestone.title);
      }
      expect(errors).toEqual([]);
    });

    it('filters the lists by state and label and searches titles, with its one script; without it every row is there', async () => {
      const { page, errors, cspMessages } = await watchedPage();
      const counts = countsOf(records, hello);
      const list = fileUrl(join(dir, 'octo-org', 'Hello-World', 'index.html'));
      await page.goto(list);
      const { scripts } = await linksOf(page);
      expect(scripts).toEqual([{ src: expect.stringMatching(/(^|\/)assets\/site\.js$/), text: '' }]);
      const all = await visibleRows(page);
      expect(all).toHaveLength(counts.issues.length);

      const selectWith = (value: string) => page.locator(`select:has(option[value="${value}"])`).first();
      await selectWith('closed').selectOption('closed');
      expect(await visibleRows(page)).toHaveLength(counts.issuesClosed);
      await selectWith('closed').selectOption({ index: 0 });
      expect(await visibleRows(page)).toHaveLength(counts.issues.length);

      // Every label of the list, one at a time: the rows shown are those carrying it, a row with two labels too.
      const repositoryLabels = records.get('repositories')!.find((repository) => repository.url === hello)!.labels as Json[];
      const labelNames = new Map(repositoryLabels.map((label) => [label.url, label.name]));
      const namesOf = (item: Json) => (item.labels as string[]).map((url) => labelNames.get(url));
      const labelled = (items: Json[], name: string) => items.filter((item) => namesOf(item).includes(name));
      const numbersOf = (items: Json[]) => items.map((item) => Number(/\/(\d+)$/.exec(item.url as string)![1])).sort((a, b) => a - b);
      const used = [...new Set(counts.issues.flatMap((issue) => (issue.labels as string[]).map((url) => labelNames.get(url)!)))];
      expect(used.length).toBeGreaterThanOrEqual(3);
      const labelSelect = page.locator('select:has(option:text-is("bug"))').first();
      for (const name of used) {
        await labelSelect.selectOption({ label: name });
        expect({ name, shown: visibleNumbers(await visibleRows(page)) }).toEqual({ name, shown: numbersOf(labelled(counts.issues, name)) });
      }
      await labelSelect.selectOption({ index: 0 });
      // Each label a chip of its colour.
      for (const label of repositoryLabels.filter((item) => used.includes(item.name))) {
        const colours = await page.$$eval('table tbody *', (elements: any[], name: string) => elements
          .filter((element) => element.children.length === 0 && element.textContent.trim() === name)
          .map((element) => getComputedStyle(element).backgroundColor as string), label.name as string);
        const [r, g, b] = [0, 2, 4].map((at) => parseInt((label.color as string).slice(at, at + 2), 16));
        expect({ label: label.name, colours: [...new Set(colours)] }).toEqual({ label: label.name, colours: [`rgb(${r}, ${g}, ${b})`] });
      }

      const café = counts.issues.filter((issue) => (issue.title as string).toLowerCase().includes('café'));
      expect(café.length).toBeGreaterThan(0);
      await page.fill('input[type=search], input[type=text]', 'café');
      const found = await visibleRows(page);
      expect(found).toHaveLength(café.length);
      for (const issue of café) expect(found.some((row) => row.includes(issue.title))).toBe(true);

      await page.goto(fileUrl(join(dir, 'octo-org', 'Hello-World', 'pulls.html')));
      const pullStates: [string, Json[]][] = [
        ['open', counts.pulls.filter((pull) => pull.closed_at === null)],
        ['merged', counts.pulls.filter((pull) => pull.merged_at !== null)],
        ['closed', counts.pulls.filter((pull) => pull.closed_at !== null && pull.merged_at === null)],
      ];
      for (const [state, pulls] of pullStates) {
        await selectWith('merged').selectOption(state);
        expect({ state, shown: visibleNumbers(await visibleRows(page)) }).toEqual({ state, shown: numbersOf(pulls) });
      }
      expect(await pageState(page)).toEqual({ ran: false, violations: [] });
      expect(cspMessages).toEqual([]);
      expect(errors).toEqual([]);

      // Without the script the list is whole.
      const still = await watchedPage({ javaScriptEnabled: false });
      await still.page.goto(list);
      expect(await still.page.$$eval('table tbody tr', (rows) => rows.length)).toBe(counts.issues.length);
    });

    it('puts the policy on every page, links only to the web and the site, and breaks no rule of it', async () => {
      const pages = filesUnder(dir, (path) => path === 'files').filter((path) => path.endsWith('.html'));
      expect(pages).toEqual(expect.arrayContaining(['index.html', 'octo-org/Hello-World/index.html', 'octo-org/Hello-World/issues/1.html', 'octo-org/Hello-World/pulls/3.html']));
      for (const path of pages) {
        const { page, dialogs, cspMessages } = await watchedPage();
        await page.goto(fileUrl(join(dir, path)));
        const links = await linksOf(page);
        const charset = await page.evaluate<string>(() => document.characterSet);
        expect({ path, csp: links.csp, referrer: links.referrer, charset }).toEqual({ path, csp: CSP, referrer: 'no-referrer', charset: 'UTF-8' });
        expect({ path, outside: links.anchors.filter((a) => !allowedLink(a.resolved, dir)) }).toEqual({ path, outside: [] });
        const seen = { path, state: await pageState(page), cspMessages, dialogs };
        expect(seen).toEqual({ path, state: { ran: false, violations: [] }, cspMessages: [], dialogs: [] });
      }
    });
  });

  describe('a hostile archive', () => {
    let hostile: HostileArchive;
    let parent: string;
    let dir: string;
    let before: string[];
    /** The run's TMPDIR: whatever it spools there must be gone when it ends. */
    let temporary: string;
    let result: Awaited<ReturnType<typeof view>>;

    beforeAll(async () => {
      hostile = hostileViewArchive();
      parent = dirname(hostile.archive);
      dir = join(parent, 'site');
      before = filesUnder(parent);
      temporary = mkdtempSync(join(tmpdir(), 'svc-view-tmpdir-'));
      result = await view(hostile.archive, dir, { TMPDIR: temporary });
    }, RUN_CEILING_MS);

    it('is rendered, and nothing is written outside DIR', () => {
      expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
      expect(filesUnder(parent, (path) => path === 'site')).toEqual(before);
      expect(existsSync(hostile.absoluteName)).toBe(false);
      expect(leftIn(temporary)).toEqual([]);
      const written = filesUnder(dir);
      // Pages, the two assets, and copied files under files/: no name of the archive anywhere else.
      const stray = written.filter((path) => !/^(index\.html|assets\/site\.(js|css)|acme\/r\/[^/]+\.html|acme\/r\/(issues|pulls)\/\d+\.html|files\/.+)$/.test(path));
      expect(stray).toEqual([]);
      expect(written.filter((path) => path.split('/').includes('..'))).toEqual([]);
    });

    it('runs no script of the archive, breaks no rule of the policy, and links nowhere but the web and the site, on every page', async () => {
      const pages = filesUnder(dir, (path) => path === 'files').filter((path) => path.endsWith('.html'));
      expect(pages).toEqual(expect.arrayContaining(['index.html', 'acme/r/index.html', 'acme/r/pulls.html', 'acme/r/releases.html', 'acme/r/milestones.html', 'acme/r/issues/1.html', 'acme/r/pulls/3.html']));
      for (const path of pages) {
        const { page, dialogs, cspMessages, errors } = await watchedPage();
        await page.goto(fileUrl(join(dir, path)));
        const links = await linksOf(page);
        const text = await page.evaluate<string>(() => `${document.title}\n${document.body.innerText}`);
        expect({
          path,
          dialogs,
          cspMessages,
          errors,
          state: await pageState(page),
          csp: links.csp,
          outsideLinks: links.anchors.filter((a) => !allowedLink(a.resolved, dir)),
          outsideImages: links.images.filter((img) => !fileInside(img.resolved, join(dir, 'files'))),
          scripts: links.scripts.filter((script) => script.src === null || !/(^|\/)assets\/site\.js$/.test(script.src)),
          inlineHandlers: links.inlineHandlers,
          rawCharacters: UNSAFE_CHARACTERS.exec(text)?.[0],
        }).toEqual({
          path,
          dialogs: [],
          cspMessages: [],
          errors: [],
          state: { ran: false, violations: [] },
          csp: CSP,
          outsideLinks: [],
          outsideImages: [],
          scripts: [],
          inlineHandlers: [],
          rawCharacters: undefined,
        });
      }
    });

    it('shows the attacker\'s words as text', async () => {
      const { page } = await watchedPage();
      await page.goto(fileUrl(join(dir, 'acme', 'r', 'issues', '1.html')));
      const heading = (await page.textContent('h1'))!;
      expect(heading).toContain(HOSTILE_TEXT.title);
      const body = (await page.textContent('body'))!;
      expect(body).toContain(HOSTILE_TEXT.script);
      expect(body).toContain('javascript:');
      expect(await page.locator('script:not([src])').count()).toBe(0);
      expect(await page.locator('iframe, form, svg, meta[http-equiv=refresh], base, style').count()).toBe(0);
      // What the body refers to in the archive is linked in the site: #3 and the first issue's URL; #999 is in no archive.
      const anchors = (await linksOf(page)).anchors.map((a) => a.resolved);
      expect(anchors).toContain(fileUrl(join(dir, 'acme', 'r', 'pulls', '3.html')));
      expect(anchors).toContain(fileUrl(join(dir, 'acme', 'r', 'issues', '1.html')));
      expect(anchors.filter((href) => href.includes('999'))).toEqual([]);
    });

    it('copies no file that runs a script when opened from the site: an HTML page or an SVG drawing attached stays inert', async () => {
      const copied = filesUnder(join(dir, 'files'));
      expect(copied.length).toBeGreaterThan(0);
      const ran: { path: string; dialogs: string[]; ran: boolean }[] = [];
      for (const path of copied) {
        const { page, dialogs } = await watchedPage();
        await page.goto(fileUrl(join(dir, 'files', path)));
        const state = await pageState(page);
        if (state.ran || dialogs.length > 0) ran.push({ path, dialogs, ran: state.ran });
      }
      expect(ran).toEqual([]);
    });

    it('--serve serves it on 127.0.0.1 with the policy on every answer, an attached page or drawing as a download that runs nothing, until Ctrl-C (exit 0)', async () => {
      const served = join(mkdtempSync(join(tmpdir(), 'svc-view-serve-')), 'site');
      const child = spawn(process.execPath, [BIN, 'archive', 'view', hostile.archive, '-o', served, '--serve', '--json'], {
        env: { ...process.env, ...GIT_SETUP },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      try {
        const base = await new Promise<string>((resolve, reject) => {
          let printed = '';
          child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
            printed += chunk;
            const url = /"url":\s*"(http:\/\/127\.0\.0\.1:\d+\/)"/.exec(printed)?.[1];
            if (url) resolve(url);
          });
          void exited.then((code) => reject(new Error(`archive view --serve exited ${code} before printing its URL`)));
        });
        const at = (path: string) => new URL(path.split('/').map(encodeURIComponent).join('/'), base).href;
        const pages = filesUnder(served, (path) => path === 'files').filter((path) => path.endsWith('.html'));
        expect(pages).toContain('acme/r/issues/1.html');
        for (const path of pages) {
          const { page, dialogs, cspMessages } = await watchedPage();
          const answer = await page.goto(at(path));
          expect({ path, status: answer?.status(), csp: answer?.headers()['content-security-policy'] }).toEqual({ path, status: 200, csp: CSP });
          const seen = { path, dialogs, cspMessages, state: await pageState(page) };
          expect(seen).toEqual({ path, dialogs: [], cspMessages: [], state: { ran: false, violations: [] } });
        }
        // Copied under an inert name (`page.html.txt`), and served as a download all the same.
        expect(filesUnder(join(served, 'files')).filter((path) => /\.(html|svg)$/.test(path))).toEqual([]);
        const active = filesUnder(join(served, 'files')).filter((path) => /\.(html|svg)\.txt$/.test(path));
        expect(active).toHaveLength(2);
        for (const path of active) {
          const { page, dialogs } = await watchedPage();
          const [download] = await Promise.all([page.waitForEvent('download'), page.goto(at(`files/${path}`)).catch(() => undefined)]);
          expect({ path, file: download.suggestedFilename(), dialogs }).toEqual({ path, file: path.split('/').pop(), dialogs: [] });
        }
      } finally {
        child.kill('SIGINT');
      }
      expect(await exited).toBe(0);
    });
  });
});
