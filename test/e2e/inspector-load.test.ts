import { Agent, request } from 'node:http';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sign } from '../../src/webhook/signature.js';
import { chromiumPath, startTarget, type Target, untilPage } from '../helpers/inspector.js';
import { listen, type Listener } from '../helpers/listener.js';

// The inspector's page under load, in headless Chromium: no main-thread task over 200 ms (the Long
// Tasks API, observed from before the page's script runs) while 2,000 deliveries stream in, nor
// while a 5 MiB payload is opened, searched and expanded. The listener is the built binary: the
// page's server is not sharing this process with the sender.

declare const window: any;

const CHROMIUM = chromiumPath();
const SKIPPED = CHROMIUM ? '' : ' (skipped: no Chromium on this machine; `apt-get install chromium`, as .ci/run does)';
const SECRET = 'load-secret';
/** The longest main-thread task the page may run: above it, a click or a key waits visibly. */
const LONGEST_TASK_MS = 200;

let browser: Browser;
const contexts: BrowserContext[] = [];

async function openPage(url: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  contexts.push(context);
  // Installed before the page's own script: every long task of the page is seen, buffered ones too.
  await context.addInitScript(() => {
    window.longTasks = [];
    const record = (entries: any[]) => {
      for (const entry of entries) window.longTasks.push({ start: entry.startTime, ms: entry.duration });
    };
    window.longTaskObserver = new window.PerformanceObserver((list: any) => record(list.getEntries()));
    window.longTaskObserver.observe({ type: 'longtask', buffered: true });
    window.recordLongTasks = () => record(window.longTaskObserver.takeRecords());
  });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  (page as Page & { errors: string[] }).errors = errors;
  await page.goto(url);
  return page;
}

/**
 * The page's long tasks since the last call (the list is emptied): after the next frame, so the task
 * that ended last is reported, and with the observer's queued entries taken at once.
 */
const takeLongTasks = (page: Page) =>
  page.evaluate(async () => {
    await new Promise((resolve) =>
      window.requestAnimationFrame(() => {
        const channel = new window.MessageChannel();
        channel.port1.onmessage = resolve;
        channel.port2.postMessage(null);
      }));
    window.recordLongTasks();
    return window.longTasks.splice(0) as { start: number; ms: number }[];
  });
const longest = (tasks: { ms: number }[]) => Math.round(Math.max(0, ...tasks.map((task) => task.ms)));

interface LongTask {
  start: number;
  ms: number;
}

/**
 * `work` with Chromium's trace recording the page's main thread: what `cpuOf(task)` says is the
 * thread time of the task a long task was (the longest task of that thread overlapping it), the
 * work of the page itself. On a machine this busy, a task is also stretched by the time the system
 * does not run the page: that stretch is not the page's, and a task is the page's fault only when
 * it is long in the thread's own time too.
 */
async function traced<T>(page: Page, work: () => Promise<T>): Promise<{ result: T; cpuOf: (task: LongTask) => number }> {
  await browser.startTracing(page, { categories: ['toplevel', 'blink.user_timing'] });
  let trace: any;
  let result: T;
  try {
    const markedAt = await page.evaluate(() => window.performance.mark('svc-traced').startTime as number);
    result = await work();
    trace = { markedAt };
  } finally {
    const events = JSON.parse((await browser.stopTracing()).toString('utf8'));
    trace = { ...trace, events: Array.isArray(events) ? events : events.traceEvents };
  }
  const mark = trace.events.find((event: any) => event.name === 'svc-traced');
  expect(mark).toBeDefined();
  // Trace times are microseconds on the clock of performance.now(), from another origin.
  const offset = mark.ts - trace.markedAt * 1000;
  const onItsThread = (event: any) => event.pid === mark.pid && event.tid === mark.tid;
  const tasks = trace.events.filter((event: any) => onItsThread(event) && event.ph === 'X' && typeof event.tdur === 'number');
  return {
    result,
    cpuOf: (task) => {
      const from = task.start * 1000 + offset;
      const to = from + task.ms * 1000;
      const overlapping = tasks.filter((event: any) => event.ts < to && event.ts + event.dur > from);
      return overlapping.length === 0 ? Number.POSITIVE_INFINITY : Math.max(...overlapping.map((event: any) => event.tdur)) / 1000;
    },
  };
}

/** The long tasks over the bound in the page's own time too (see `traced`). */
const pagesOwn = (tasks: LongTask[], cpuOf: (task: LongTask) => number) =>
  tasks
    .filter((task) => task.ms > LONGEST_TASK_MS && cpuOf(task) > LONGEST_TASK_MS)
    .map((task) => ({ ms: Math.round(task.ms), cpuMs: Math.round(cpuOf(task)) }));
const describeTasks = (tasks: LongTask[], cpuOf: (task: LongTask) => number) => {
  const worst = tasks.reduce<LongTask | undefined>((a, b) => (a === undefined || b.ms > a.ms ? b : a), undefined);
  return `${tasks.length}, the longest ${longest(tasks)} ms (its thread time ${worst === undefined ? 0 : Math.round(cpuOf(worst))} ms)`;
};

const agent = new Agent({ keepAlive: true, maxSockets: 50 });

function deliver(url: string, id: string, body: Buffer, event = 'issues'): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers = {
      'content-type': 'application/json',
      'x-service-event': event,
      'x-service-delivery': id,
      'x-hub-signature-256': sign(body, SECRET),
      'content-length': String(body.length),
    };
    const req = request(url, { method: 'POST', headers, agent }, (response) => {
      response.resume().once('end', () => resolve(response.statusCode ?? 0));
    });
    req.once('error', reject);
    req.end(body);
  });
}

/** 2,000 signed deliveries, 50 at a time, as the service sends a burst. */
async function burst(url: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let start = 0; start < count; start += 50) {
    const batch = Array.from({ length: Math.min(50, count - start) }, (_, i) => {
      const n = start + i + 1;
      const body = Buffer.from(JSON.stringify({ action: n % 3 === 0 ? 'closed' : 'opened', issue: { number: n, title: `issue ${n}` }, repository: { full_name: 'acme/widgets' } }));
      return deliver(url, `load-${n}`, body);
    });
    statuses.push(...(await Promise.all(batch)));
  }
  return statuses;
}

/** A payload of about 5 MiB shaped like a large real one: thousands of objects, long strings, one rare word. */
function bigPayload(): Buffer {
  const commits = Array.from({ length: 13_500 }, (_, i) => ({
    id: i.toString(16).padStart(40, '0'),
    message: `Commit ${i}: ${'fix the widget and its tests '.repeat(4)}`,
    author: { name: `Author ${i % 97}`, email: `author${i % 97}@example.test`, username: `author${i % 97}` },
    added: [`src/file-${i}.ts`],
    modified: i === 9_876 ? ['src/needle-in-the-haystack.ts'] : [`src/other-${i}.ts`, 'README.md'],
    distinct: i % 2 === 0,
  }));
  const body = Buffer.from(JSON.stringify({ action: 'big', ref: 'refs/heads/main', commits, readme: 'x'.repeat(200_000) }));
  expect(body.length).toBeGreaterThan(4.5 * 1024 * 1024);
  expect(body.length).toBeLessThan(6 * 1024 * 1024);
  return body;
}

describe.skipIf(!CHROMIUM)(`the inspector under load, in headless Chromium${SKIPPED}`, () => {
  let listener: Listener;
  let page: Page;
  let app: Target | undefined;

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM });
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    agent.destroy();
  });
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
    await listener?.stop();
    await app?.close();
    app = undefined;
  });

  it('runs no task over 200 ms while 2,000 deliveries stream in, 50 at a time', async () => {
    // A healthy app behind: each forward's end updates its row too.
    app = await startTarget();
    // Every one of them kept in the page: a list of 2,000 rows, each changing once more when forwarded.
    listener = await listen(['--inspect', '--inspect-keep', '2000', '--secret', SECRET, '--forward-to', app.url], { spawn: true });
    await listener.until(() => /inspector on (http:\S+)/.test(listener.stderr()));
    page = await openPage(/inspector on (http:\S+)/.exec(listener.stderr())![1]!);
    await untilPage(page, `document.getElementById('status').textContent === 'live'`);
    await takeLongTasks(page);
    const { result: tasks, cpuOf } = await traced(page, async () => {
      const statuses = await burst(listener.url, 2_000);
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      // The newest on top, all of them listed.
      await untilPage(page, `document.querySelector('#rows tr')?.dataset.n === '2000' && document.getElementById('count').textContent === '2000 deliveries'`);
      // Every forward's end reached its row (the forwarder may give some up: that is not the page's to judge).
      await untilPage(page, `document.querySelectorAll('#rows tr[data-forward-ok="1"], #rows tr[data-forward="not_forwarded"], #rows tr[data-forward="failed"]').length === 2000`);
      return takeLongTasks(page);
    });
    expect(await page.$$eval('#rows tr', (rows) => rows.length)).toBe(2000);
    expect(await page.isHidden('#dropped')).toBe(true);
    console.log(`long tasks while 2,000 deliveries streamed in: ${describeTasks(tasks, cpuOf)}`);
    expect(pagesOwn(tasks, cpuOf)).toEqual([]);
    expect((page as Page & { errors: string[] }).errors).toEqual([]);
  }, 60_000);

  it('runs no task over 200 ms while a 5 MiB payload is opened, searched and expanded', async () => {
    listener = await listen(['--inspect', '--secret', SECRET], { spawn: true });
    await listener.until(() => /inspector on (http:\S+)/.test(listener.stderr()));
    page = await openPage(/inspector on (http:\S+)/.exec(listener.stderr())![1]!);
    await untilPage(page, `document.getElementById('status').textContent === 'live'`);
    expect(await deliver(listener.url, 'big-1', bigPayload(), 'push')).toBe(200);
    await untilPage(page, `document.querySelectorAll('#rows tr').length === 1`);
    await takeLongTasks(page);
    const phases: Record<string, LongTask[]> = {};
    const phase = async (name: string, work: () => Promise<void>) => {
      await work();
      phases[name] = await takeLongTasks(page);
    };
    const { cpuOf } = await traced(page, async () => {
      await phase('open', async () => {
        await page.click('#rows tr');
        await page.waitForSelector('#detail .tree');
      });
      await phase('search for a rare word', async () => {
        await page.fill('#detail .search', 'needle-in-the');
        await untilPage(page, `document.querySelector('#detail .matches')?.textContent === '1 match'`);
        await untilPage(page, `document.querySelector('#detail .tree .value.match')?.textContent === '"src/needle-in-the-haystack.ts"'`);
      });
      await phase('search for a common word', async () => {
        await page.fill('#detail .search', 'author');
        await untilPage(page, `/^500\\+ matches$/.test(document.querySelector('#detail .matches')?.textContent ?? '')`);
      });
      await phase('expand all', async () => {
        await page.fill('#detail .search', '');
        await untilPage(page, `document.querySelector('#detail .matches')?.textContent === ''`);
        await page.click('#detail button:text("Expand all")');
        await untilPage(page, `/^expanded/.test(document.querySelector('#detail .tree-note')?.textContent ?? '')`);
      });
    });
    const report = Object.entries(phases).map(([name, tasks]) => `${name}: ${describeTasks(tasks, cpuOf)}`);
    console.log(`long tasks of a 5 MiB payload: ${report.join('; ')}`);
    for (const [name, tasks] of Object.entries(phases)) expect({ name, tasks: pagesOwn(tasks, cpuOf) }).toEqual({ name, tasks: [] });
    // Expanded, but bounded: the tree holds a few thousand nodes, not the payload's hundred thousand.
    const drawn = await page.$$eval('#detail .tree .leaf, #detail .tree details', (nodes) => nodes.length);
    expect(drawn).toBeGreaterThan(1000);
    expect(drawn).toBeLessThan(20_000);
    expect((page as Page & { errors: string[] }).errors).toEqual([]);
  }, 60_000);
});
