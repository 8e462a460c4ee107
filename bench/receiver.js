// Benchmark 2: `webhook listen --secret` against a receiver on @octokit/webhooks, both
// loaded by autocannon with a signed push payload of about 8 KB, 50 connections, 10 s each.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { buildDelivery } from '../dist/webhook/delivery.js';
import { samplePayload } from '../dist/webhook/samples.js';
import { BIN, median } from './lib.js';

const SECRET = 'bench-secret';

function startProcess(args, readAddress) {
  // Whatever else it prints goes to /dev/null, as it would to a log file: a pipe read by this
  // process would make autocannon share its thread with reading ours' per-delivery lines.
  const stdio = readAddress === 'stdout' ? ['ignore', 'pipe', 'ignore'] : ['ignore', 'ignore', 'pipe'];
  const child = spawn(process.execPath, args, { stdio });
  const address = new Promise((resolve, reject) => {
    createInterface({ input: readAddress === 'stdout' ? child.stdout : child.stderr }).on('line', (line) => {
      const match = /(?:listening on (http:\/\/\S+?)(?:,|$))|^(\d+)$/.exec(line);
      if (match) resolve(match[1] ?? `http://127.0.0.1:${match[2]}/`);
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
  return { child, address };
}

const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

function load(url, { 'content-length': _length, ...headers }, body) {
  // autocannon sets content-length itself; a second one would make every request a 400.
  return new Promise((resolve, reject) => {
    autocannon({ url, method: 'POST', headers, body, connections: 50, duration: 10 }, (error, result) =>
      error ? reject(error) : resolve(result),
    );
  });
}

const RUNS = 5;

async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGINT');
  await once(child, 'exit');
}

/** Requests/s and p99 of one receiver under load; `readAddress` is where it prints its address. */
async function measureReceiver(args, readAddress, headers, body) {
  const receiver = startProcess(args, readAddress);
  try {
    const result = await load(await receiver.address, headers, body);
    if (result.non2xx > 0 || result.errors > 0 || result['2xx'] === 0) {
      throw new Error(`${args.join(' ')}: ${result['2xx']} 2xx, ${result.non2xx} non-2xx answers, ${result.errors} errors`);
    }
    return result;
  } finally {
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
  const delivery = buildDelivery({ event: 'push', payload: samplePayload('push'), contentType: 'json', secret: SECRET });
  const githubHeaders = {
    ...delivery.headers,
    'x-github-event': 'push',
    'x-github-delivery': delivery.id,
    'x-github-hook-id': '1',
  };
  const receivers = {
    ours: [[BIN, 'webhook', 'listen', '--port', '0', '--secret', SECRET], 'stderr', delivery.headers],
    octokit: [[fileURLToPath(new URL('./octokit-receiver.js', import.meta.url)), SECRET], 'stdout', githubHeaders],
    floor: [[fileURLToPath(new URL('./floor-receiver.js', import.meta.url))], 'stdout', delivery.headers],
  };
  const results = { ours: [], octokit: [], floor: [] };
  // Interleaved, so a slow spell of the machine does not fall on one receiver only.
  for (let i = 0; i < RUNS; i++) {
    for (const [name, [args, readAddress, headers]] of Object.entries(receivers)) {
      results[name].push(await measureReceiver(args, readAddress, headers, delivery.body));
    }
  }
  const rate = (name) => median(results[name].map((result) => result.requests.average));
  const p99 = (name) => median(results[name].map((result) => result.latency.p99));
  const big = await bigPayload();
  return [
    {
      name: `webhook receiver, requests/s (push of ${delivery.body.length} B, 50 connections, 10 s)`,
      ours: rate('ours'),
      baseline: rate('octokit'),
      baselineName: '@octokit/webhooks createNodeMiddleware',
      target: 1.5,
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
      name: 'webhook receiver, p99 latency (ms)',
      ours: p99('ours'),
      baseline: p99('octokit'),
      baselineName: '@octokit/webhooks createNodeMiddleware',
      target: undefined,
      unit: 'ms',
    },
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
