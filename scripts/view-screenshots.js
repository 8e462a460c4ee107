// Makes the README's screenshots of `archive view` (docs/screenshots/view-index.png,
// view-issue.png, view-pull.png) with the built binary and Debian's Chromium through playwright-core:
// `npm run build && node scripts/view-screenshots.js`. The archive is the sandbox's, exported by the
// binary itself (`export --sandbox`), so the pages show what the service's metadata holds: the
// index, the first issue (a table, code, a task list, an attachment, comments) and the first pull
// request (a review asking for changes, its thread on the diff, the approval). The bodies hold
// Japanese and emoji: without fonts for them (apt-get install fonts-noto-cjk fonts-noto-color-emoji)
// Chromium draws boxes.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = fileURLToPath(new URL('../bin/svc-migrate.js', import.meta.url));
const browserPath = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path));
if (!browserPath) throw new Error('no Chromium: apt-get install chromium');
const run = promisify(execFile);

const work = mkdtempSync(join(tmpdir(), 'svc-view-screenshots-'));
const archive = join(work, 'octo-org.tar.gz');
const site = join(work, 'site');
const shots = join(root, 'docs', 'screenshots');
mkdirSync(shots, { recursive: true });
const browser = await chromium.launch({ executablePath: browserPath });
try {
  await run(process.execPath, [bin, 'export', 'Hello-World', 'widgets', '--sandbox', '--yes', '--interval', '1', '--output', archive]);
  await run(process.execPath, [bin, 'archive', 'view', archive, '-o', site]);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  const shoot = async (path, name, fullPage) => {
    await page.goto(pathToFileURL(join(site, path)).href);
    await page.screenshot({ path: join(shots, name), fullPage });
  };
  await shoot('index.html', 'view-index.png', false);
  await shoot('octo-org/Hello-World/issues/1.html', 'view-issue.png', true);
  await shoot('octo-org/Hello-World/pulls/3.html', 'view-pull.png', true);
} finally {
  await browser.close();
  rmSync(work, { recursive: true, force: true });
}
console.log('wrote docs/screenshots/view-index.png, view-issue.png and view-pull.png');
