// Benchmark 2 (issue 8): `webhook listen --secret` against a receiver on @octokit/webhooks, both
// loaded by autocannon with a signed push payload of about 8 KB, 50 connections, 10 s each.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { buildDelivery } from '../dist/webhook/delivery.js';
import { samplePayload } from '../dist/webhook/samples.js';
import { BIN } from './lib.js';

const SECRET = 'bench-secret';

function startProcess(args, readAddress) {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const address = new Promise((resolve, reject) => {
    const stream = readAddress === 'stdout' ? child.stdout : child.stderr;
    createInterface({ input: stream }).on('line', (line) => {
      const match = /(?:listening on (http:\/\/\S+?)(?:,|$))|^(\d+)$/.exec(line);
      if (match) resolve(match[1] ?? `http://127.0.0.1:${match[2]}/`);
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
  // Whatever else it prints goes nowhere, as it would to a log file.
  (readAddress === 'stdout' ? child.stderr : child.stdout).resume();
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

export async function receiverBench() {
  const delivery = buildDelivery({ event: 'push', payload: samplePayload('push'), contentType: 'json', secret: SECRET });
  const githubHeaders = {
    ...delivery.headers,
    'x-github-event': 'push',
    'x-github-delivery': delivery.id,
    'x-github-hook-id': '1',
  };

  const ours = startProcess([BIN, 'webhook', 'listen', '--port', '0', '--secret', SECRET], 'stderr');
  const oursUrl = await ours.address;
  const oursResult = await load(oursUrl, delivery.headers, delivery.body);
  // One 25 MB payload: accepted, verified, and what it cost in memory.
  const before = rssMb(ours.child.pid);
  const big = buildDelivery({ event: 'push', payload: { ...samplePayload('push'), padding: 'x'.repeat(25 * 1000 * 1000 - 9000) }, contentType: 'json', secret: SECRET });
  const { 'content-length': _length, ...bigHeaders } = big.headers; // fetch sets it itself
  const bigAnswer = await fetch(oursUrl, { method: 'POST', headers: bigHeaders, body: big.body });
  const after = rssMb(ours.child.pid);
  ours.child.kill('SIGINT');

  const octokit = startProcess([fileURLToPath(new URL('./octokit-receiver.js', import.meta.url)), SECRET], 'stdout');
  const octokitResult = await load(await octokit.address, githubHeaders, delivery.body);
  octokit.child.kill();

  for (const [name, result] of [['ours', oursResult], ['octokit', octokitResult]]) {
    if (result.non2xx > 0 || result.errors > 0 || result['2xx'] === 0) {
      throw new Error(`${name}: ${result['2xx']} 2xx, ${result.non2xx} non-2xx answers, ${result.errors} errors`);
    }
  }
  return [
    {
      name: `webhook receiver, requests/s (push of ${delivery.body.length} B, 50 connections, 10 s)`,
      ours: oursResult.requests.average,
      baseline: octokitResult.requests.average,
      baselineName: '@octokit/webhooks createNodeMiddleware',
      target: 1.5,
      higherIsBetter: true,
      unit: 'req/s',
    },
    {
      name: 'webhook receiver, p99 latency (ms)',
      ours: oursResult.latency.p99,
      baseline: octokitResult.latency.p99,
      baselineName: '@octokit/webhooks createNodeMiddleware',
      target: undefined,
      unit: 'ms',
    },
    {
      name: `one 25 MB payload: HTTP ${bigAnswer.status}, RSS growth of the receiver (MB)`,
      ours: after - before,
      baseline: before,
      baselineName: 'RSS before it',
      target: undefined,
      unit: 'MB',
    },
  ];
}
