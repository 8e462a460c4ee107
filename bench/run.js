// `npm run bench`: runs every benchmark, prints a table and writes docs/benchmarks.md.
// Not part of `npm test`: it takes minutes and measures, it does not assert.
// `node bench/run.js [--node PATH] [suite…]`: what is measured runs on that Node (bench/lib.js).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { downloadBench } from './download.js';
import { forwardBench } from './forward.js';
import { measureOn, nodeVersion } from './lib.js';
import { listingBench } from './listing.js';
import { orgExportBench } from './org-export.js';
import { pollingBench } from './polling.js';
import { receiverBench } from './receiver.js';
import { restoreBench } from './restore.js';
import { startupBench } from './startup.js';
import { verifyBench } from './verify.js';
import { viewBench } from './view.js';

const suites = {
  startup: startupBench,
  download: downloadBench,
  receiver: receiverBench,
  forward: forwardBench,
  listing: listingBench,
  polling: pollingBench,
  verify: verifyBench,
  'org-export': orgExportBench,
  restore: restoreBench,
  view: viewBench,
};

// `node bench/run.js download startup` measures those suites again and replaces their rows for that
// Node; the page says when each suite was last measured, on which Node and under what load
// (bench/results.json keeps every suite's rows, by suite and Node).
const RESULTS = new URL('./results.json', import.meta.url);
const args = process.argv.slice(2);
const nodeFlag = args.indexOf('--node');
if (nodeFlag >= 0) {
  if (!args[nodeFlag + 1]) throw new Error('--node takes the path of a node binary');
  measureOn(args[nodeFlag + 1]);
  args.splice(nodeFlag, 2);
}
// `--render`: no suite runs; the page is written again from bench/results.json and NOTES.md.
const render = args.includes('--render');
const chosen = args.filter((arg) => arg !== '--render');
for (const name of chosen) if (!suites[name]) throw new Error(`no suite ${name}: ${Object.keys(suites).join(', ')}`);
const version = nodeVersion();
const major = Number(version.slice(1).split('.')[0]);
const machine = `${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'})`;

/** Results by `<suite> (Node <major>)`. */
const results = existsSync(RESULTS) ? JSON.parse(readFileSync(RESULTS, 'utf8')) : {};
for (const [name, bench] of Object.entries(suites)) {
  if (render || (chosen.length && !chosen.includes(name))) continue;
  process.stderr.write(`running ${name} on Node ${version}…\n`);
  const load = loadavg()[0].toFixed(1);
  results[`${name} (Node ${major})`] = { measured: new Date().toISOString().slice(0, 16).replace('T', ' '), machine, node: version, load, rows: await bench() };
}
const keyed = Object.keys(suites).flatMap((name) =>
  Object.keys(results)
    .filter((key) => key.startsWith(`${name} (Node `))
    .sort((a, b) => Number(/(\d+)\)$/.exec(a)[1]) - Number(/(\d+)\)$/.exec(b)[1])),
);
const rows = keyed.flatMap((key) => results[key].rows.map((row) => ({ ...row, node: results[key].node })));

const format = (value, unit) =>
  unit === 'requests' || unit === 'faults' ? String(Math.round(value)) : value.toFixed(unit === 'MB' ? 0 : Math.abs(value) < 1 ? 2 : 1);
const ratioOf = (row) => (row.ours === row.baseline ? 1 : row.ours / row.baseline);
function verdict(row, ratio) {
  if (row.target === undefined && !row.absolute) return '—';
  let met = row.target === undefined || (row.higherIsBetter ? ratio >= row.target : ratio <= row.target);
  if (row.absolute) met = met && row.absolute.value < row.absolute.limit;
  return met ? 'yes' : '**no**';
}
const header = '| benchmark | Node | ours | baseline | baseline value | ratio | target | met |\n|---|---|---|---|---|---|---|---|';
const lines = rows.map((row) => {
  // Equal figures are a ratio of 1, 0 ms against 0 ms included (latencies in whole ms).
  const ratio = ratioOf(row);
  const unit = row.unit ?? 'ms';
  const limit = row.absolute ? `< ${row.absolute.limit} ${unit}` : '';
  const target =
    row.target === undefined ? limit || '—' : `${row.higherIsBetter ? '≥' : '≤'} ${row.target}${limit ? `, and ${limit}` : ''}`;
  return `| ${row.name} | ${row.node.replace(/^v(\d+).*/, '$1')} | ${format(row.ours, unit)} ${unit} | \`${row.baselineName}\` | ${format(row.baseline, unit)} ${unit} | ${ratio.toFixed(2)} | ${target} | ${verdict(row, ratio)} |`;
});
const table = [header, ...lines].join('\n');
process.stdout.write(`${table}\n\n${machine}, Node ${version}\n`);

/** The range over the Nodes measured of the ratio (or `pick`) of the rows whose name matches, for the page's first lines. */
function range(pattern, pick = ratioOf) {
  const values = rows.filter((row) => pattern.test(row.name)).map(pick);
  if (values.length === 0) return '?';
  const digits = pick === ratioOf ? 2 : 0;
  const [low, high] = [Math.min(...values), Math.max(...values)].map((value) => value.toFixed(digits));
  return low === high ? low : `${low}–${high}`;
}
const downloads = keyed.filter((key) => key.startsWith('download ('));
const downloadNodes = downloads.map((key) => results[key].node).join(', ') || 'none yet';
const when = keyed.map((key) => `${key} ${results[key].measured}${results[key].load ? ` (load ${results[key].load})` : ''}`).join(', ');
const machines = [...new Set(keyed.map((key) => results[key].machine))].join(' and ');
const opening = [
  `- **Over HTTPS on loopback**, as every user's download goes: the sandbox serves the API and the archive storage with TLS, its authority trusted by file (\`SVC_CA_FILE\`), and curl (\`--cacert\`) and the Node floor download from the same server in the same run; rows marked *plain HTTP* are no user's path; the listing, polling, verify, receiver and org-export suites talk plain HTTP.`,
  `- **Node**: the download rows were measured on Node ${downloadNodes} (\`node bench/run.js --node PATH download\`: what is measured runs on that Node, the sandbox and the harness on one Node for all).`,
  `- **Machine**: a virtual machine with ${machines}, shared with other work: the load average when each suite ran is below; on two cores a second job moves a figure by up to 2×.`,
  '- **A row\'s ratio** is ours ÷ the baseline beside it, each a median of runs taken in the same minutes in a rotating order: below 1, svc-migrate took less time (or memory) than the baseline.',
  `- **What to expect**: a verified download over HTTPS takes ${range(/^download (?!64 MiB)\S+ \S+ over HTTPS, sha256 and verified$/)}× the time of \`curl && sha256sum && tar tzf\`, the bare transfer (\`--no-checksum --no-verify\`) ${range(/^download \S+ \S+ over HTTPS --no-checksum --no-verify$/)}× curl's, and its memory peaks at ${range(/^peak RSS .* over HTTPS/, (row) => row.ours)} MB for 1 GiB (${range(/^peak RSS .* over HTTPS/, (row) => row.baseline)} MB for 64 MiB).`,
];
// A shortened run (smaller archives, fewer rounds or seconds) checks that the suites work: its
// figures are not the page's.
if (process.env.BENCH_SIZE_MIB || process.env.BENCH_RUNS || process.env.BENCH_SECONDS) {
  process.stderr.write('a shortened run (BENCH_SIZE_MIB, BENCH_RUNS or BENCH_SECONDS): nothing written\n');
  process.exit(0);
}
writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
const notes = readFileSync(new URL('./NOTES.md', import.meta.url), 'utf8');
writeFileSync(
  new URL('../docs/benchmarks.md', import.meta.url),
  `# Benchmarks

${opening.join('\n')}

Written by \`npm run bench\`: each figure is a median of several runs. Suites measured: ${when} (UTC).

${table}

${notes}`,
);
