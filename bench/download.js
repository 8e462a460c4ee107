// Benchmark 1: archive download over HTTPS on loopback, redirect included, against curl --cacert on
// the same TLS server in the same run; then the bare transfer again over plain HTTP, marked so.
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, median, NODE, run, sandboxWithExport } from './lib.js';

const MiB = 1024 * 1024;
const FLOOR = fileURLToPath(new URL('./floor-download.js', import.meta.url));
const out = (name) => join(tmpdir(), `svc-bench-${process.pid}-${name}`);
/** BENCH_SIZE_MIB and BENCH_RUNS shorten the suite to check that it works (the page's figures are 1 GiB, 7 runs). */
const BIG = Number(process.env.BENCH_SIZE_MIB ?? 1024) * MiB;
const RUNS = Number(process.env.BENCH_RUNS ?? 7);

/**
 * Every timed command starts from the same state. curl leaves its file to be written back after it
 * exits, we fsync ours: `sync` first, so neither pays for the other's writes. Then both outputs go:
 * `curl -o` truncates its file as it starts and so writes into the memory it just freed, while we
 * write a `.part` file and free the old output only when we rename over it. On this virtual machine,
 * memory freed a few seconds ago is handed back to the host, and taking it again is slow (`dd` of
 * 1 GiB: 0.2 s of kernel time just after a delete, 1.75–3.4 s on returned memory): that, not the
 * tools, often decided which command was slow.
 */
async function timed(script, env) {
  await run(`sync && rm -f ${out('o')} ${out('c')}`);
  return run(script, env);
}

/**
 * The commands of one comparison, timed in rotation. `groups` run one after the other, each in its
 * own rotation: a verified download and `tar tzf` read and inflate the whole archive, and the memory
 * that churns through must not fall on the unverified lines' rounds (see `timed`).
 */
async function measure(size, runs, groups, { tls }) {
  const { sandbox, id, location, env, caFile } = await sandboxWithExport({ archivePadBytes: size, tls });
  // curl takes the same way as ours: the API's archive URL with the token, then its 302 to storage
  // on another origin, where curl (7.58+) no longer sends the Authorization header. Over HTTPS it
  // trusts the sandbox's authority as we do, by its file.
  const trust = tls ? `--cacert ${caFile} ` : '';
  const curl = `curl ${trust}-sSL -H "Authorization: Bearer $SVC_TOKEN" -o ${out('c')} '${env.SVC_BASE_URL}/orgs/octo-org/migrations/${id}/archive'`;
  const ours = `'${NODE}' ${BIN} download ${id} -o ${out('o')} --force`;
  const commands = {
    // A download is verified (`archive verify`) before it takes its name; the baseline checks as a
    // careful script would: the checksum, then the archive read through with tar.
    ours: [ours, env],
    curlShaTar: [`${curl} && sha256sum ${out('c')} > /dev/null && tar tzf ${out('c')} > /dev/null`, env],
    oursUnverified: [`${ours} --no-verify`, env],
    oursNoChecksum: [`${ours} --no-checksum --no-verify`, env],
    curlSha: [`${curl} && sha256sum ${out('c')} > /dev/null`, env],
    curl: [curl, env],
    curlSync: [`${curl} && sync ${out('c')}`, env],
    // The floor is given the storage URL: no API call, no redirect.
    floor: [`'${NODE}' ${FLOOR} '${location}' ${out('c')}${tls ? ` ${caFile}` : ''}`],
  };
  const times = {};
  const rss = {};
  const faults = {};
  try {
    for (const names of groups) {
      for (let i = 0; i < runs; i++) {
        // A different order each round: what one command leaves behind (pages to write back, a busy
        // disk) must not always fall on the same next one.
        for (const name of [...names.slice(i % names.length), ...names.slice(0, i % names.length)]) {
          const result = await timed(...commands[name]);
          (times[name] ??= []).push(result.ms);
          (rss[name] ??= []).push(result.rssMb);
          (faults[name] ??= []).push(result.faults);
          process.stderr.write(`  ${tls ? 'HTTPS' : 'plain HTTP'}, ${size / MiB} MiB, ${name}: ${result.ms.toFixed(0)} ms, ${result.rssMb.toFixed(0)} MB\n`);
        }
      }
    }
  } finally {
    for (const name of ['c', 'o']) rmSync(out(name), { force: true });
    await sandbox.close();
  }
  const medians = (results) => Object.fromEntries(Object.entries(results).map(([key, values]) => [key, median(values)]));
  return { ...medians(times), rss: medians(rss), faults: medians(faults) };
}

const VERIFIED = ['ours', 'curlShaTar'];
const UNVERIFIED = ['oursUnverified', 'oursNoChecksum', 'curlSha', 'curl', 'curlSync', 'floor'];
const CURL = 'curl --cacert ca.pem -sSL -H "Authorization: …" -o f';

export async function downloadBench() {
  const small = await measure(64 * MiB, 3, [VERIFIED], { tls: true });
  // Loopback disk writes on this machine vary by a factor of two between runs: more runs for 1 GiB.
  const big = await measure(BIG, RUNS, [UNVERIFIED, VERIFIED], { tls: true });
  const plain = await measure(BIG, Math.max(3, RUNS - 2), [['oursNoChecksum', 'curl']], { tls: false });
  const label = BIG >= 1024 * MiB ? `${BIG / (1024 * MiB)} GiB` : `${BIG / MiB} MiB`;
  return [
    { name: `download ${label} over HTTPS, sha256 and verified`, ours: big.ours, baseline: big.curlShaTar, baselineName: `${CURL} && sha256sum f && tar tzf f`, target: 0.75 },
    { name: `download ${label} over HTTPS with sha256 (--no-verify)`, ours: big.oursUnverified, baseline: big.curlSha, baselineName: `${CURL} && sha256sum f`, target: 0.75 },
    { name: `download ${label} over HTTPS --no-checksum --no-verify`, ours: big.oursNoChecksum, baseline: big.curl, baselineName: CURL, target: 1.15 },
    // Ours fsyncs before it renames the file into place; this baseline is as durable (informational).
    { name: `download ${label} over HTTPS --no-checksum --no-verify, against a curl as durable`, ours: big.oursNoChecksum, baseline: big.curlSync, baselineName: `${CURL} && sync f`, target: undefined },
    { name: `download ${label} over HTTPS --no-checksum --no-verify, against the Node.js floor`, ours: big.oursNoChecksum, baseline: big.floor, baselineName: 'undici stream to a file over HTTPS, nothing else', target: undefined },
    // Each page fault takes memory the kernel may have to get back from the host (docs/benchmarks.md).
    { name: `download ${label} over HTTPS --no-checksum --no-verify, minor page faults`, ours: big.faults.oursNoChecksum, baseline: big.faults.curl, baselineName: CURL, target: undefined, unit: 'faults' },
    { name: 'download 64 MiB over HTTPS, sha256 and verified', ours: small.ours, baseline: small.curlShaTar, baselineName: `${CURL} && sha256sum f && tar tzf f`, target: undefined },
    { name: `peak RSS (MB), ${label} vs 64 MiB download over HTTPS, verified`, ours: big.rss.ours, baseline: small.rss.ours, baselineName: 'same, 64 MiB', target: 1.2, unit: 'MB', absolute: { limit: 128, value: big.rss.ours } },
    // No user's download takes this path: storage is HTTPS (docs/service.md); for reading the rows above.
    { name: `download ${label} --no-checksum --no-verify over plain HTTP (no user's path)`, ours: plain.oursNoChecksum, baseline: plain.curl, baselineName: 'curl -sSL -H "Authorization: …" -o f', target: undefined },
  ];
}
