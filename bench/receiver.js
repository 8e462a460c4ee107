// Benchmark 2: `webhook listen --secret` against a receiver on @octokit/webhooks, both loaded by
// autocannon with a signed push payload of about 8 KB, 50 connections, 10 s each. Every request
// carries a delivery id of its own, as the service sends them: one id for all would send every
// request but the first down our duplicate path, while Octokit does full work on each.
// Then both again at a steady 50 deliveries per second, more than a developer's receiver sees:
// latency and the receiver's CPU, what a user feels when the receiver is not saturated.
import { execFileSync, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request as httpRequest } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { buildDelivery } from '../dist/webhook/delivery.js';
import { samplePayload } from '../dist/webhook/samples.js';
import { BIN, median, NODE } from './lib.js';

const SECRET = 'bench-secret';

function startProcess(args, readAddress) {
  // Whatever else it prints goes to /dev/null, as it would to a log file: a pipe read by this
  // process would make autocannon share its thread with reading ours' per-delivery lines.
  const stdio = readAddress === 'stdout' ? ['ignore', 'pipe', 'ignore'] : ['ignore', 'ignore', 'pipe'];
  const child = spawn(NODE, args, { stdio });
  const lines = [];
  const address = new Promise((resolve, reject) => {
    createInterface({ input: readAddress === 'stdout' ? child.stdout : child.stderr }).on('line', (line) => {
      lines.push(line);
      const match = /(?:listening on (http:\/\/\S+?)(?:,|$))|^(\d+)$/.exec(line);
      if (match) resolve(match[1] ?? `http://127.0.0.1:${match[2]}/`);
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
  return { child, address, lines };
}

const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

/**
 * Where the delivery id goes in each request's headers: autocannon's own ways to vary a request
 * (`setupRequest`, `idReplacement`) rebuild and re-encode all 8 KB of it every time, which on two
 * cores takes CPU from the receiver measured and brings every receiver down towards the load
 * generator's own rate. Instead each request is a copy of the built bytes with a fresh GUID
 * written over this placeholder: the generator costs about what it costs with one id for all.
 */
export const ID_PLACEHOLDER = '00000000-0000-4000-8000-000000000000';
const PLACEHOLDER = Buffer.from(ID_PLACEHOLDER, 'latin1');
const runPrefix = randomUUID().slice(0, 19); // 8-4-4-4 random digits, then a counter of 12
let counter = 0;
const nextId = () => `${runPrefix}-${(counter++).toString(16).padStart(12, '0')}`;
const placeholderAt = new WeakMap();
const HttpClient = createRequire(import.meta.url)('autocannon/lib/httpClient.js');
const builtRequest = HttpClient.prototype.getRequestBuffer;
HttpClient.prototype.getRequestBuffer = function uniqueIdRequest() {
  const built = builtRequest.call(this);
  let offsets = placeholderAt.get(built);
  if (!offsets) {
    offsets = [];
    for (let at = built.indexOf(PLACEHOLDER); at >= 0; at = built.indexOf(PLACEHOLDER, at + 1)) offsets.push(at);
    placeholderAt.set(built, offsets);
  }
  if (offsets.length === 0) return built;
  const request = Buffer.from(built);
  const id = nextId();
  for (const at of offsets) request.write(id, at, 'latin1');
  return request;
};
export const sentIds = () => counter;

/** Saturation: autocannon, 50 connections, as fast as the receiver answers. */
function load(url, { 'content-length': _length, ...headers }, body) {
  // autocannon sets content-length itself; a second one would make every request a 400.
  return new Promise((resolve, reject) => {
    autocannon({ url, method: 'POST', headers, body, connections: 50, duration: DURATION }, (error, result) =>
      error ? reject(error) : resolve(result),
    );
  });
}

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);

/**
 * A steady rate, measured by a client of our own. autocannon's `overallRate` does not suit it: each
 * connection sends its share of a second back to back when the second starts (a burst of 10 on each
 * of 5 connections every second, then nothing), and its histogram records whole milliseconds, where
 * an unloaded receiver answers in a fraction of one. Here one request leaves every 20 ms, on a
 * schedule that does not drift, over up to 5 keep-alive connections used in turn, each timed with
 * hrtime from the request's start to its answer's end. One second at the rate first, not counted,
 * warms the receiver up; then the receiver's CPU time (utime + stime of /proc/<pid>/stat) over the
 * measured wall time gives its share of one core.
 */
const PACED_RATE = 50;
const PACED_CONNECTIONS = 5;
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
const cpuSeconds = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS; // utime, stime: fields 14 and 15
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

async function paced(url, headers, body, pid) {
  const agent = new Agent({ keepAlive: true, maxSockets: PACED_CONNECTIONS, scheduling: 'fifo' });
  const idAt = Object.keys(headers).filter((name) => headers[name] === ID_PLACEHOLDER);
  const send = () =>
    new Promise((resolve, reject) => {
      const id = nextId();
      const started = process.hrtime.bigint();
      const request = httpRequest(url, { method: 'POST', agent, headers: { ...headers, ...Object.fromEntries(idAt.map((name) => [name, id])) } }, (response) => {
        response.resume();
        response.on('end', () => {
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          if (response.statusCode >= 200 && response.statusCode < 300) resolve(ms);
          else reject(new Error(`${url}: HTTP ${response.statusCode} at ${PACED_RATE} deliveries/s`));
        });
      });
      request.on('error', reject);
      request.end(body);
    });
  const atRate = async (count) => {
    const interval = 1000 / PACED_RATE;
    const start = performance.now();
    const answers = [];
    let lag = 0;
    for (let i = 0; i < count; i++) {
      await sleep(start + i * interval - performance.now());
      lag = Math.max(lag, performance.now() - (start + i * interval));
      answers.push(send());
    }
    return { latencies: await Promise.all(answers), lag };
  };
  try {
    await Promise.all(Array.from({ length: PACED_CONNECTIONS }, send)); // opens every connection
    await atRate(PACED_RATE);
    const cpuBefore = cpuSeconds(pid);
    const wallBefore = process.hrtime.bigint();
    const { latencies, lag } = await atRate(PACED_RATE * DURATION);
    const wall = Number(process.hrtime.bigint() - wallBefore) / 1e9;
    const cpu = ((cpuSeconds(pid) - cpuBefore) / wall) * 100;
    const sorted = latencies.sort((a, b) => a - b);
    const sent = PACED_CONNECTIONS + PACED_RATE + latencies.length;
    return { '2xx': sent, non2xx: 0, errors: 0, p50: percentile(sorted, 50), p99: percentile(sorted, 99), cpu, lag, rate: latencies.length / wall };
  } finally {
    agent.destroy();
  }
}

async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGINT');
  await once(child, 'exit');
}

/**
 * `listen --inspect`: a page follows the list as a browser tab would, its event stream read by curl
 * in a process of its own (not this one, which runs the load generator).
 */
async function followPage(receiver) {
  // Printed on the line after the receiver's address.
  let line;
  for (let waited = 0; !(line = receiver.lines.find((text) => text.startsWith('inspector on '))); waited += 10) {
    if (waited > 5000) throw new Error('listen --inspect printed no inspector address');
    await sleep(10);
  }
  const page = new URL(line.slice('inspector on '.length));
  const follower = spawn('curl', ['-sN', `${page.origin}/events${page.search}`], { stdio: ['ignore', 'ignore', 'ignore'] });
  // Its first bytes are the stream's start: from then on each delivery is written to it.
  await sleep(500);
  return follower;
}

/** One receiver under `drive` (saturation by default); `readAddress` is where it prints its address. */
async function measureReceiver(args, readAddress, headers, body, drive = load) {
  const receiver = startProcess(args, readAddress);
  let follower;
  try {
    const url = await receiver.address;
    if (args.includes('--inspect')) follower = await followPage(receiver);
    const result = await drive(url, headers, body, receiver.child.pid);
    if (result.non2xx > 0 || result.errors > 0 || result['2xx'] === 0) {
      throw new Error(`${args.join(' ')}: ${result['2xx']} 2xx, ${result.non2xx} non-2xx answers, ${result.errors} errors`);
    }
    await stop(receiver.child);
    // Ours says what it received: every request must have been a new delivery, none a duplicate.
    const summary = receiver.lines.map((line) => /received (\d+), verified \d+, rejected (\d+), duplicates (\d+)/.exec(line)).find(Boolean);
    if (summary && (Number(summary[3]) > 0 || Number(summary[2]) > 0 || Number(summary[1]) < result['2xx'])) {
      throw new Error(`${args.join(' ')}: ${summary[0]} for ${result['2xx']} answers: the delivery ids were not all new`);
    }
    return result;
  } finally {
    follower?.kill();
    await stop(receiver.child);
  }
}

async function bigPayload() {
  const ours = startProcess([BIN, 'webhook', 'listen', '--port', '0', '--secret', SECRET], 'stderr');
  const url = await ours.address;
  const before = rssMb(ours.child.pid);
  const big = buildDelivery({ event: 'push', payload: { ...samplePayload('push'), padding: 'x'.repeat(25 * 1000 * 1000 - 9000) }, contentType: 'json', secret: SECRET });
  const { 'content-length': _length, ...headers } = big.headers; // fetch sets it itself
  const answer = await fetch(url, { method: 'POST', headers, body: big.body });
  const after = rssMb(ours.child.pid);
  await stop(ours.child);
  return { status: answer.status, before, after };
}

export async function receiverBench() {
  const delivery = buildDelivery({ event: 'push', payload: samplePayload('push'), contentType: 'json', secret: SECRET, id: ID_PLACEHOLDER });
  const githubHeaders = {
    ...delivery.headers,
    'x-github-event': 'push',
    'x-github-delivery': ID_PLACEHOLDER,
    'x-github-hook-id': '1',
  };
  const saveDir = mkdtempSync(join(tmpdir(), 'svc-bench-save-'));
  const receivers = {
    ours: [[BIN, 'webhook', 'listen', '--port', '0', '--secret', SECRET], 'stderr', delivery.headers],
    octokit: [[fileURLToPath(new URL('./octokit-receiver.js', import.meta.url)), SECRET], 'stdout', githubHeaders],
    floor: [[fileURLToPath(new URL('./floor-receiver.js', import.meta.url))], 'stdout', delivery.headers],
    // The least any receiver that verifies and parses each delivery must do, on node:http.
    floorChecked: [[fileURLToPath(new URL('./floor-receiver.js', import.meta.url)), SECRET], 'stdout', delivery.headers],
    // Each delivery written, fsync'd and renamed, the directory fsync'd, before its 200.
    save: [[BIN, 'webhook', 'listen', '--port', '0', '--secret', SECRET, '--save', saveDir], 'stderr', delivery.headers],
    // The inspector's page served, and followed: each delivery kept and sent down its event stream.
    inspect: [[BIN, 'webhook', 'listen', '--port', '0', '--secret', SECRET, '--inspect'], 'stderr', delivery.headers],
  };
  const only = process.env.BENCH_RECEIVERS?.split(',');
  const results = { ours: [], octokit: [], floor: [], floorChecked: [], save: [], inspect: [], oursPaced: [], octokitPaced: [] };
  // Interleaved, so a slow spell of the machine does not fall on one receiver only.
  for (let i = 0; i < RUNS; i++) {
    for (const [name, [args, readAddress, headers]] of Object.entries(receivers)) {
      if (only && !only.includes(name)) continue;
      results[name].push(await measureReceiver(args, readAddress, headers, delivery.body));
      if (name === 'save') {
        rmSync(saveDir, { recursive: true, force: true });
      }
    }
    // The same two receivers at a steady rate, each in a fresh process.
    for (const name of ['ours', 'octokit']) {
      if (only && !only.includes(`${name}Paced`)) continue;
      const [args, readAddress, headers] = receivers[name];
      results[`${name}Paced`].push(await measureReceiver(args, readAddress, headers, delivery.body, paced));
    }
  }
  rmSync(saveDir, { recursive: true, force: true });
  // Each round's figures, for the notes: on a shared machine the spread says more than a median.
  for (const [name, list] of Object.entries(results)) {
    if (list.length && !name.endsWith('Paced')) process.stderr.write(`receiver ${name}: ${list.map((r) => Math.round(r.requests.average)).join(' ')} req/s\n`);
  }
  const perRound = (name) => results[name].map((r, i) => (results.octokit[i] ? (r.requests.average / results.octokit[i].requests.average).toFixed(2) : '-'));
  if (results.ours.length) process.stderr.write(`receiver ours/octokit per round: ${perRound('ours').join(' ')}\n`);
  if (results.floorChecked.length) process.stderr.write(`receiver floorChecked/octokit per round: ${perRound('floorChecked').join(' ')}\n`);
  if (results.save.length) process.stderr.write(`receiver save/octokit per round: ${perRound('save').join(' ')}\n`);
  if (results.inspect.length && results.ours.length) {
    const againstOurs = results.inspect.map((r, i) => (r.requests.average / results.ours[i].requests.average).toFixed(2));
    process.stderr.write(`receiver inspect/ours per round: ${againstOurs.join(' ')}\n`);
  }
  for (const name of ['oursPaced', 'octokitPaced']) {
    const list = results[name].map((r) => `p50 ${r.p50.toFixed(3)} p99 ${r.p99.toFixed(3)} ms, CPU ${r.cpu.toFixed(1)}%, ${r.rate.toFixed(1)}/s, timer lag ≤ ${r.lag.toFixed(1)} ms`);
    if (list.length) process.stderr.write(`receiver ${name} at ${PACED_RATE}/s: ${list.join('; ')}\n`);
  }
  if (only) return [];
  const rate = (name) => median(results[name].map((result) => result.requests.average));
  const p99 = (name) => median(results[name].map((result) => result.latency.p99));
  const atRate = (name, figure) => median(results[name].map((result) => result[figure]));
  const big = await bigPayload();
  return [
    {
      name: `webhook receiver, requests/s (push of ${delivery.body.length} B, a unique X-Service-Delivery per request, 50 connections, ${DURATION} s)`,
      ours: rate('ours'),
      baseline: rate('octokit'),
      baselineName: '@octokit/webhooks createNodeMiddleware',
      target: 1.1,
      higherIsBetter: true,
      unit: 'req/s',
    },
    {
      name: 'webhook receiver with --save (each delivery written and fsync\'d before its 200), requests/s',
      ours: rate('save'),
      baseline: rate('octokit'),
      baselineName: '@octokit/webhooks createNodeMiddleware (saves nothing)',
      target: undefined,
      higherIsBetter: true,
      unit: 'req/s',
    },
    {
      name: 'webhook receiver with --inspect, its page following the list (each delivery kept and streamed), requests/s',
      ours: rate('inspect'),
      baseline: rate('ours'),
      baselineName: 'webhook listen without --inspect',
      target: 0.9,
      higherIsBetter: true,
      unit: 'req/s',
    },
    {
      name: 'webhook receiver, requests/s against the node:http floor',
      ours: rate('ours'),
      baseline: rate('floor'),
      baselineName: 'node:http reading the body and answering, nothing verified',
      target: undefined,
      unit: 'req/s',
    },
    {
      name: 'node:http with an HMAC check and JSON.parse per delivery (the least a verifying receiver does), requests/s',
      ours: rate('floorChecked'),
      baseline: rate('octokit'),
      baselineName: '@octokit/webhooks createNodeMiddleware',
      target: undefined,
      higherIsBetter: true,
      unit: 'req/s',
    },
    {
      name: 'webhook receiver at saturation (as above), p99 latency (ms; autocannon records whole ms)',
      ours: p99('ours'),
      baseline: p99('octokit'),
      baselineName: '@octokit/webhooks createNodeMiddleware',
      target: 1.0,
      higherIsBetter: false,
      unit: 'ms',
    },
    ...[
      ['p50 latency (ms)', 'p50', 'ms'],
      ['p99 latency (ms)', 'p99', 'ms'],
      ['CPU (% of one core)', 'cpu', '%'],
    ].map(([what, figure, unit]) => ({
      name: `webhook receiver at ${PACED_RATE} deliveries/s: ${what}`,
      ours: atRate('oursPaced', figure),
      baseline: atRate('octokitPaced', figure),
      baselineName: '@octokit/webhooks createNodeMiddleware',
      target: undefined,
      higherIsBetter: false,
      unit,
    })),
    {
      name: `one 25 MB payload: HTTP ${big.status}, RSS growth of the receiver (MB)`,
      ours: big.after - big.before,
      baseline: big.before,
      baselineName: 'RSS before it',
      target: undefined,
      unit: 'MB',
    },
  ];
}
