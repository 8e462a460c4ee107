// Benchmark 1 (issue 8): archive download over loopback, redirect included, against curl.
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, median, run, sandboxWithExport } from './lib.js';

const MiB = 1024 * 1024;
const out = (name) => join(tmpdir(), `svc-bench-${process.pid}-${name}`);

/**
 * curl leaves its file to be written back after it exits, we fsync ours: each timed command starts
 * with nothing of the previous one still being written to disk, so neither pays for the other.
 */
async function timed(script, env) {
  await run('sync');
  return run(script, env);
}

async function measure(size, runs) {
  const { sandbox, id, location, env } = await sandboxWithExport({ archivePadBytes: size });
  const results = { ours: [], curlSha: [], oursNoChecksum: [], curl: [], rss: [], rssNoChecksum: [] };
  const url = `'${location}'`;
  try {
    for (let i = 0; i < runs; i++) {
      results.curlSha.push((await timed(`curl -sSL -o ${out('c')} ${url} && sha256sum ${out('c')} > /dev/null`)).ms);
      const ours = await timed(`node ${BIN} download ${id} -o ${out('o')} --force`, env);
      results.ours.push(ours.ms);
      results.rss.push(ours.rssMb);
      results.curl.push((await timed(`curl -sSL -o ${out('c')} ${url}`)).ms);
      const plain = await timed(`node ${BIN} download ${id} -o ${out('o')} --force --no-checksum`, env);
      results.oursNoChecksum.push(plain.ms);
      results.rssNoChecksum.push(plain.rssMb);
    }
  } finally {
    for (const name of ['c', 'o']) rmSync(out(name), { force: true });
    await sandbox.close();
  }
  return Object.fromEntries(Object.entries(results).map(([key, values]) => [key, median(values)]));
}

export async function downloadBench() {
  const small = await measure(64 * MiB, 3);
  // Loopback disk writes on this machine vary by a factor of two between runs: more runs for 1 GiB.
  const big = await measure(1024 * MiB, 5);
  return [
    { name: 'download 1 GiB with sha256', ours: big.ours, baseline: big.curlSha, baselineName: 'curl -sSL -o f && sha256sum f', target: 0.75 },
    { name: 'download 1 GiB --no-checksum', ours: big.oursNoChecksum, baseline: big.curl, baselineName: 'curl -sSL -o f', target: 1.1 },
    { name: 'download 64 MiB with sha256', ours: small.ours, baseline: small.curlSha, baselineName: 'curl -sSL -o f && sha256sum f', target: undefined },
    { name: 'peak RSS (MB), 1 GiB vs 64 MiB download', ours: big.rss, baseline: small.rss, baselineName: 'same, 64 MiB', target: 1.2, unit: 'MB', absolute: { limit: 100, value: big.rss } },
  ];
}
