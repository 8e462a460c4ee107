// Makes the README's screenshots of the inspector page (docs/inspector-list.png,
// docs/inspector-detail.png) with the built binary and Debian's Chromium through playwright-core:
// `npm run build && node scripts/inspector-screenshots.js`. A receiver with two secrets forwards to
// a small app on 127.0.0.1 that refuses closed pull requests; a few published example deliveries
// are sent to it, one of them with a secret it does not know.
import { spawn, execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';

/* global document -- in the callback that runs in the page */

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = fileURLToPath(new URL('../bin/svc-migrate.js', import.meta.url));
const browserPath = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path));
if (!browserPath) throw new Error('no Chromium: apt-get install chromium');
const run = promisify(execFile);

const app = createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const closed = /"action":"closed"/.test(Buffer.concat(chunks).toString('utf8'));
    response.writeHead(closed ? 500 : 200, { 'content-type': 'application/json' });
    response.end(closed ? '{"error":"cannot handle closed pull requests yet"}' : '{"ok":true}');
  });
});
await new Promise((resolve) => app.listen(0, '127.0.0.1', resolve));
const appUrl = `http://127.0.0.1:${app.address().port}/webhooks`;

const listener = spawn(process.execPath, [bin, 'webhook', 'listen', '--port', '0', '--secret', 'old', '--secret', 'new', '--forward-to', appUrl, '--inspect'], {
  stdio: ['ignore', 'ignore', 'pipe'],
  env: { ...process.env, SVC_WEBHOOK_SECRET: '' },
});
let stderr = '';
const { receiver, page: pageUrl } = await new Promise((resolve, reject) => {
  listener.stderr.setEncoding('utf8').on('data', (chunk) => {
    stderr += chunk;
    const receiverUrl = /listening on (\S+?),/.exec(stderr)?.[1];
    const inspector = /inspector on (\S+)/.exec(stderr)?.[1];
    if (receiverUrl && inspector) resolve({ receiver: receiverUrl, page: inspector });
  });
  listener.once('exit', (code) => reject(new Error(`listen exited ${code}: ${stderr}`)));
});

const send = (event, ...args) => run(process.execPath, [bin, 'webhook', 'send', '--url', receiver, '--event', event, ...args]).catch(() => {});
const browser = await chromium.launch({ executablePath: browserPath });
try {
  const page = await browser.newPage({ viewport: { width: 1360, height: 420 }, deviceScaleFactor: 1 });
  await page.goto(pageUrl);
  await send('ping', '--secret', 'new');
  await send('push', '--secret', 'new');
  await send('issues', '--action', 'opened', '--secret', 'new');
  await send('pull_request', '--action', 'closed', '--secret', 'old');
  await send('issue_comment', '--action', 'created', '--secret', 'rotated-away');
  await send('workflow_run', '--action', 'completed', '--secret', 'new');
  await send('pull_request', '--action', 'opened', '--secret', 'new');
  await page.waitForFunction(() => {
    const cells = [...document.querySelectorAll('#rows td.forward')];
    return cells.length === 7 && cells.every((cell) => cell.textContent !== '…');
  });
  await page.waitForTimeout(300);
  await page.mouse.move(0, 0);
  await page.screenshot({ path: `${root}docs/inspector-list.png` });
  await page.setViewportSize({ width: 1360, height: 1500 });
  await page.click('#rows tr[data-event="pull_request"][data-action="closed"]');
  await page.waitForSelector('#detail .tree');
  await page.fill('#detail .search', 'merged');
  await page.waitForSelector('#detail .tree .match');
  await page.mouse.move(0, 0);
  await page.waitForTimeout(300);
  await page.screenshot({ path: `${root}docs/inspector-detail.png` });
} finally {
  await browser.close();
  listener.kill('SIGINT');
  app.close();
}
console.log('wrote docs/inspector-list.png and docs/inspector-detail.png');
