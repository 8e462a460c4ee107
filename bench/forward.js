// Benchmark: `webhook listen --forward-to` keeping up with a burst (issue 48). 2,000 signed
// deliveries of about 2 KB are sent 50 at a time over HTTP/1.1 keep-alive (as the service's
// hookshot sends them) to `listen --secret … --forward-to` a healthy node:http app on loopback
// that answers 200 at once, in a process of its own. Every delivery must reach the app (counted
// there); the row is the time from the first send to the last forward's arrival at the app, over
// the time the receiver took to answer all 2,000 in the same run (≤ 2: forwards keep up).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request as httpRequest } from 'node:http';
import { createInterface } from 'node:readline';
import { buildDelivery } from '../dist/webhook/delivery.js';
import { samplePayload } from '../dist/webhook/samples.js';
import { BIN, median, NODE } from './lib.js';

const SECRET = 'bench-secret';
const TOTAL = Number(process.env.BENCH_FORWARDS ?? 2000);
const AT_ONCE = 50;
const RUNS = Number(process.env.BENCH_RUNS ?? 5);

/** Epoch milliseconds, sub-millisecond, comparable between processes of this machine. */
const now = () => performance.timeOrigin + performance.now();

/**
 * The app: answers 200 at once, counts what arrives, and when its stdin closes prints how many
 * deliveries came and when the last one did. Its own process, so that neither the sender nor the
 * receiver shares its thread.
 */
const APP = `
const { createServer } = require('node:http');
const ids = new Set();
let count = 0;
let last = 0;
const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    last = performance.timeOrigin + performance.now();
    count++;
    ids.add(request.headers['x-service-delivery']);
  });
});
process.stdin.resume().on('end', () => {
  console.log(JSON.stringify({ last, count, distinct: ids.size }));
  process.exit(0);
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

function lines(stream) {
  const reader = createInterface({ input: stream });
  const queue = [];
  let wake = () => {};
  reader.on('line', (line) => {
    queue.push(line);
    wake();
  });
  return async (test, what) => {
    for (;;) {
      const found = queue.find(test);
      if (found !== undefined) return found;
      await new Promise((resolve, reject) => {
        wake = resolve;
        reader.once('close', () => reject(new Error(`ended before ${what}`)));
      });
    }
  };
}

async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGINT');
  await once(child, 'exit');
}

async function measureOnce() {
  const app = spawn(NODE, ['-e', APP], { stdio: ['pipe', 'pipe', 'inherit'] });
  const appLine = lines(app.stdout);
  const appPort = Number(await appLine((line) => /^\d+$/.test(line), 'the app\'s port'));
  // Its lines go to /dev/null, as to a log file; the address is read from stderr.
  // The default flags, as a user runs it (BENCH_FORWARD_ARGS adds some, to compare).
  const extra = (process.env.BENCH_FORWARD_ARGS ?? '').split(' ').filter(Boolean);
  const args = ['webhook', 'listen', '--port', '0', '--secret', SECRET, '--forward-to', `${appPort}/hooks`, '--max-deliveries', String(TOTAL), ...extra];
  const receiver = spawn(NODE, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  const receiverLine = lines(receiver.stderr);
  // Its last lines, to say why it failed if it does.
  const tail = [];
  createInterface({ input: receiver.stderr }).on('line', (line) => {
    if (!line.startsWith('  → ')) tail.push(line);
    if (tail.length > 8) tail.shift();
  });
  const agent = new Agent({ keepAlive: true, maxSockets: AT_ONCE });
  try {
    const url = /listening on (http:\/\/\S+?),/.exec(await receiverLine((line) => line.startsWith('listening on '), 'listening on'))[1];
    const deliveries = Array.from({ length: TOTAL }, (_, n) =>
      buildDelivery({ event: 'issues', payload: { ...samplePayload('issues', 'opened'), n }, contentType: 'json', secret: SECRET }),
    );
    const send = ({ headers, body }) =>
      new Promise((resolve, reject) => {
        const request = httpRequest(url, { method: 'POST', agent, headers }, (response) => {
          response.resume();
          response.on('end', () => (response.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${response.statusCode}`))));
        });
        request.on('error', reject);
        request.end(body);
      });
    let next = 0;
    const started = now();
    await Promise.all(
      Array.from({ length: AT_ONCE }, async () => {
        while (next < TOTAL) await send(deliveries[next++]);
      }),
    );
    const answered = now();
    // With --max-deliveries it ends once every forward is done.
    const [code] = await once(receiver, 'exit');
    app.stdin.end();
    const arrived = JSON.parse(await appLine((line) => line.startsWith('{'), 'the app\'s count'));
    if (arrived.distinct !== TOTAL || code !== 0) {
      throw new Error(`${arrived.distinct} of ${TOTAL} deliveries forwarded; listen exited ${code}: ${tail.join('\n')}`);
    }
    return { answerMs: answered - started, forwardMs: arrived.last - started };
  } finally {
    agent.destroy();
    await stop(receiver);
    await stop(app);
  }
}

export async function forwardBench() {
  const runs = [];
  for (let i = 0; i < RUNS; i++) runs.push(await measureOnce());
  const forwardMs = median(runs.map((run) => run.forwardMs));
  const answerMs = median(runs.map((run) => run.answerMs));
  return [
    {
      name: `listen --forward-to: ${TOTAL.toLocaleString('en-US')} signed deliveries, ${AT_ONCE} at a time, to a healthy app; first send → last forward at the app`,
      ours: forwardMs,
      baselineName: 'the same receiver answering all of them (same run)',
      baseline: answerMs,
      target: 2,
    },
  ];
}

// `node bench/forward.js`: one run, its figures printed.
if (import.meta.url === `file://${process.argv[1]}`) {
  const run = await measureOnce();
  process.stdout.write(`${JSON.stringify(run)} ratio ${(run.forwardMs / run.answerMs).toFixed(2)}\n`);
}
